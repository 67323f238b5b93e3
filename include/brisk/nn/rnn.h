// Recurrent layers of brisk::nn with libtorch's API: RNN (tanh or ReLU),
// LSTM (with proj_size), GRU, their cells, and PackedSequence with
// nn::utils::rnn::{pack_padded_sequence, pad_packed_sequence, pack_sequence,
// pad_sequence}.
//
//   nn::LSTM lstm(nn::LSTMOptions(64, 128).num_layers(2).batch_first(true));
//   auto [out, state] = lstm(x);              // x: (N, T, 64) -> out: (N, T, 128)
//   auto [h_n, c_n] = state;                   // (2, N, 128) each
//   auto packed = nn::utils::rnn::pack_padded_sequence(x, lengths, true, false);
//   auto [pout, pstate] = lstm->forward_with_packed_input(packed);
//
// Inputs are (T, N, in) (or (N, T, in) with batch_first) or unbatched (T, in);
// parameters are named, shaped, ordered and initialized as PyTorch's
// (weight_ih_l0, weight_hh_l0, bias_ih_l0, bias_hh_l0, weight_hr_l0,
// ..._reverse). The time loop is written with brisk ops (one GEMM for the
// input projection of the whole sequence, then one GEMM and a few pointwise
// ops per step), so autograd and every device work. See docs/design/rnn.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "brisk/nn/enumtype.h"
#include "brisk/nn/functional.h"  // BRISK_ARG
#include "brisk/nn/module.h"

namespace brisk::nn {

namespace utils::rnn {

/// A batch of variable-length sequences packed time step by time step
/// (libtorch's PackedSequence): `data` holds, for t = 0, 1, ..., the rows of
/// the batch_sizes[t] sequences still running at step t (longest first);
/// `batch_sizes` is an int64 CPU tensor; `sorted_indices` (int64, on the data's
/// device, or undefined when the batch was given sorted) maps packed batch
/// position -> original batch index, and `unsorted_indices` is its inverse.
class PackedSequence {
 public:
  PackedSequence() = default;
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {},
                          Tensor unsorted_indices = {});

  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }

  /// data (and the indices) converted; batch_sizes stays on the CPU.
  PackedSequence to(TensorOptions options) const;
  PackedSequence cuda() const { return to(TensorOptions().device(Device(kCUDA))); }
  PackedSequence cpu() const { return to(TensorOptions().device(Device(kCPU))); }
  bool is_cuda() const { return data_.device().is_cuda(); }
  bool is_pinned() const { return data_.is_pinned(); }
  /// data in pinned host memory (CPU data only), for non-blocking copies to a GPU.
  PackedSequence pin_memory() const {
    PackedSequence p = *this;
    p.data_ = data_.pin_memory();
    return p;
  }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

/// Packs a padded batch: input (T, B, *) (or (B, T, *) with batch_first),
/// lengths (B) integers in [1, T] (a tensor on any device, read on the host).
/// With enforce_sorted the lengths must be non-increasing; otherwise the
/// batch is sorted (stably, longest first) and the permutation is kept in
/// the result. Differentiable in input.
PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false,
                                    bool enforce_sorted = true);

/// The inverse of pack_padded_sequence: (padded (T', B, *) or (B, T', *),
/// lengths (B) int64 on the CPU), in the original batch order. T' is the
/// longest length, or total_length (which must not be shorter). Padded
/// positions hold padding_value. Differentiable in the packed data.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);

/// Stacks sequences (L_i, *) into (max L, B, *) (or (B, max L, *) with
/// batch_first), filling with padding_value on the right (padding_side
/// "right") or the left ("left").
Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first = false, double padding_value = 0.0,
                    const std::string& padding_side = "right");

/// pack_padded_sequence(pad_sequence(sequences), lengths, false, enforce_sorted).
PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted = true);

}  // namespace utils::rnn

// ---- options ------------------------------------------------------------------------

/// RNNOptions(input_size, hidden_size).num_layers(2).nonlinearity(brisk::kReLU)
///     .bias(true).batch_first(false).dropout(0.0).bidirectional(false)
struct RNNOptions {
  using nonlinearity_t = std::variant<enumtype::kTanh, enumtype::kReLU>;
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  BRISK_ARG(int64_t, input_size);
  BRISK_ARG(int64_t, hidden_size);
  BRISK_ARG(int64_t, num_layers) = 1;
  BRISK_ARG(nonlinearity_t, nonlinearity) = enumtype::kTanh();
  BRISK_ARG(bool, bias) = true;
  BRISK_ARG(bool, batch_first) = false;
  /// Dropout on the outputs of each layer but the last, in training mode.
  BRISK_ARG(double, dropout) = 0.0;
  BRISK_ARG(bool, bidirectional) = false;
};

/// As RNNOptions, without nonlinearity, plus proj_size: when > 0 the hidden
/// state is projected to proj_size by weight_hr (PyTorch's LSTM projections).
struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  BRISK_ARG(int64_t, input_size);
  BRISK_ARG(int64_t, hidden_size);
  BRISK_ARG(int64_t, num_layers) = 1;
  BRISK_ARG(bool, bias) = true;
  BRISK_ARG(bool, batch_first) = false;
  BRISK_ARG(double, dropout) = 0.0;
  BRISK_ARG(bool, bidirectional) = false;
  BRISK_ARG(int64_t, proj_size) = 0;
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  BRISK_ARG(int64_t, input_size);
  BRISK_ARG(int64_t, hidden_size);
  BRISK_ARG(int64_t, num_layers) = 1;
  BRISK_ARG(bool, bias) = true;
  BRISK_ARG(bool, batch_first) = false;
  BRISK_ARG(double, dropout) = 0.0;
  BRISK_ARG(bool, bidirectional) = false;
};

struct RNNCellOptions {
  using nonlinearity_t = std::variant<enumtype::kTanh, enumtype::kReLU>;
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  BRISK_ARG(int64_t, input_size);
  BRISK_ARG(int64_t, hidden_size);
  BRISK_ARG(bool, bias) = true;
  BRISK_ARG(nonlinearity_t, nonlinearity) = enumtype::kTanh();
};

struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  BRISK_ARG(int64_t, input_size);
  BRISK_ARG(int64_t, hidden_size);
  BRISK_ARG(bool, bias) = true;
};

struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  BRISK_ARG(int64_t, input_size);
  BRISK_ARG(int64_t, hidden_size);
  BRISK_ARG(bool, bias) = true;
};

namespace detail {

/// Which recurrence a layer runs.
enum class RNNMode : int8_t { RNNTanh, RNNReLU, LSTM, GRU };

/// The options every recurrent layer shares (libtorch's RNNOptionsBase).
struct RNNOptionsBase {
  RNNMode mode = RNNMode::LSTM;
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0.0;
  bool bidirectional = false;
  int64_t proj_size = 0;
};

/// The parameters and the time loop shared by RNN, LSTM and GRU.
class RNNImplBase : public Module {
 public:
  RNNImplBase(std::string type_name, const RNNOptionsBase& options);

  /// Registers fresh parameters (PyTorch's names and order) and initializes them.
  void reset();
  /// Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch.
  void reset_parameters();
  /// A no-op: brisk keeps no flattened (cuDNN) copy of the weights.
  void flatten_parameters() {}
  /// The parameters in PyTorch's order (layer, direction, then w_ih, w_hh,
  /// b_ih, b_hh, w_hr).
  std::vector<Tensor> all_weights() const;
  std::string extra_repr() const override;

  RNNOptionsBase options_base;

 protected:
  /// Output, h_n and (LSTM) c_n of the padded input (T, B, in) or (B, T, in)
  /// or unbatched (T, in), with initial states h0/c0 (undefined: zeros).
  std::tuple<Tensor, Tensor, Tensor> run_padded(const Tensor& input, const Tensor& h0, const Tensor& c0);
  /// The same on a packed batch; h0/c0 are in the original batch order.
  std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> run_packed(const utils::rnn::PackedSequence& input,
                                                                     const Tensor& h0, const Tensor& c0);

 private:
  std::tuple<Tensor, Tensor, Tensor> run_layers(const Tensor& x, const std::vector<int64_t>& batch_sizes,
                                                const Tensor& h0, const Tensor& c0);
  void check_state(const Tensor& state, const Tensor& input, int64_t batch, int64_t size, bool unbatched,
                   const char* what) const;

  std::vector<Tensor> flat_weights_;  // 4 or 5 (with proj) per layer and direction, or 2 without bias
};

}  // namespace detail

// ---- modules -------------------------------------------------------------------------

/// Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).
class RNNImpl : public detail::RNNImplBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  /// (output, h_n): output (T, B, D*H) (batch_first: (B, T, D*H)), h_n
  /// (num_layers*D, B, H); hx as h_n (zeros when undefined). Unbatched
  /// input (T, in) takes hx (num_layers*D, H) and drops the batch dims.
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  /// A packed batch: (packed output, h_n); hx and h_n in the original batch order.
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                           Tensor hx = {});
  RNNOptions options;
};
BRISK_MODULE(RNN);

/// LSTM with gates (i, f, g, o) as PyTorch; with proj_size P > 0 the hidden
/// state and output are h_t W_hr^T of size P.
class LSTMImpl : public detail::RNNImplBase {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  /// (output, (h_n, c_n)): output (T, B, D*Hout), h_n (num_layers*D, B, Hout),
  /// c_n (num_layers*D, B, H), Hout = proj_size or hidden_size.
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  LSTMOptions options;
};
BRISK_MODULE(LSTM);

/// GRU with gates (r, z, n) as PyTorch: n = tanh(W_in x + b_in + r * (W_hn h + b_hn)).
class GRUImpl : public detail::RNNImplBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& input,
                                                                           Tensor hx = {});
  GRUOptions options;
};
BRISK_MODULE(GRU);

// ---- cells ------------------------------------------------------------------------------

namespace detail {
/// weight_ih (G*H, in), weight_hh (G*H, H), bias_ih, bias_hh (G*H), G = 1, 4, 3.
class RNNCellImplBase : public Module {
 public:
  RNNCellImplBase(std::string type_name, RNNMode mode, int64_t input_size, int64_t hidden_size, bool bias);
  void reset();
  /// U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch.
  void reset_parameters();
  std::string extra_repr() const override;

  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  /// Checks input (B, in) or (in) and the state (B, H) or (H) (undefined: zeros);
  /// returns (input, state) 2-d and whether the input was unbatched.
  std::tuple<Tensor, Tensor, bool> prepare(const Tensor& input, const Tensor& state, const char* what) const;
  RNNMode mode_;
  int64_t input_size_, hidden_size_;
  bool bias_;
};
}  // namespace detail

class RNNCellImpl : public detail::RNNCellImplBase {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  /// h' (B, H) from input (B, in) and hx (B, H) (zeros when undefined); 1-d when unbatched.
  Tensor forward(const Tensor& input, Tensor hx = {});
  RNNCellOptions options;
};
BRISK_MODULE(RNNCell);

class LSTMCellImpl : public detail::RNNCellImplBase {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  /// (h', c') from input and (h, c) (zeros when absent).
  std::tuple<Tensor, Tensor> forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});
  LSTMCellOptions options;
};
BRISK_MODULE(LSTMCell);

class GRUCellImpl : public detail::RNNCellImplBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);
  Tensor forward(const Tensor& input, Tensor hx = {});
  GRUCellOptions options;
};
BRISK_MODULE(GRUCell);

}  // namespace brisk::nn
