// Recurrent layers of brisk::nn (RNN, LSTM, GRU, cells) and PackedSequence
// utilities, composed of brisk ops. See docs/design/rnn.md.
#include "brisk/nn/rnn.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "brisk/autograd.h"
#include "brisk/nn/init.h"
#include "brisk/ops.h"

namespace brisk::nn {

namespace {

using detail::RNNMode;

int64_t gate_count(RNNMode mode) {
  switch (mode) {
    case RNNMode::LSTM: return 4;
    case RNNMode::GRU: return 3;
    default: return 1;
  }
}

RNNMode rnn_mode(const RNNOptions::nonlinearity_t& nl) {
  return std::holds_alternative<enumtype::kReLU>(nl) ? RNNMode::RNNReLU : RNNMode::RNNTanh;
}

// The recurrent weights of one layer and direction, in the form the step uses.
struct StepWeights {
  Tensor w_hh_t;  // (Hout, G*H): weight_hh transposed (a view)
  Tensor b_hh;    // (G*H) GRU only (the other modes fold it into the input projection)
  Tensor w_hr_t;  // (H, P) LSTM with projections, else undefined
};

// One time step. xp: (b, G*H) the input projection of this step (with both
// biases for RNN and LSTM, with bias_ih only for GRU); h: (b, Hout); c: (b, H).
// Returns the new (h, c) (c undefined except for LSTM).
std::pair<Tensor, Tensor> step(RNNMode mode, const Tensor& xp, const Tensor& h, const Tensor& c,
                               const StepWeights& w) {
  switch (mode) {
    case RNNMode::RNNTanh: return {addmm(xp, h, w.w_hh_t).tanh(), {}};
    case RNNMode::RNNReLU: return {addmm(xp, h, w.w_hh_t).relu(), {}};
    case RNNMode::LSTM: {
      // One split of the gates (its backward is one cat), not a narrow per
      // gate (each narrow's backward would fill a zero gradient of all gates).
      auto gates = addmm(xp, h, w.w_hh_t).chunk(4, 1);  // (b, H) each: i, f, g, o
      Tensor c_new = addcmul(gates[1].sigmoid() * c, gates[0].sigmoid(), gates[2].tanh());
      Tensor h_new = gates[3].sigmoid() * c_new.tanh();
      if (w.w_hr_t.defined()) h_new = h_new.mm(w.w_hr_t);
      return {h_new, c_new};
    }
    case RNNMode::GRU: {
      auto hp = (w.b_hh.defined() ? addmm(w.b_hh, h, w.w_hh_t) : h.mm(w.w_hh_t)).chunk(3, 1);  // r, z, n
      auto xs = xp.chunk(3, 1);
      Tensor r = (xs[0] + hp[0]).sigmoid();
      Tensor z = (xs[1] + hp[1]).sigmoid();
      Tensor n = addcmul(xs[2], r, hp[2]).tanh();
      return {addcmul(n, z, h - n), {}};  // (1 - z) n + z h
    }
  }
  return {};
}

// Runs one direction of one layer over a packed (time-major) batch.
// x: (N, in) with batch_sizes[t] rows at step t (non-increasing);
// h0: (B, Hout), c0: (B, H) (LSTM). Returns out (N, Hout), h_n (B, Hout), c_n.
std::tuple<Tensor, Tensor, Tensor> run_direction(RNNMode mode, const Tensor& x, const std::vector<int64_t>& bs,
                                                 const Tensor& h0,
                                                 const Tensor& c0, const Tensor* w, bool has_bias, bool has_proj,
                                                 bool reverse) {
  const Tensor& w_ih = w[0];
  StepWeights sw;
  sw.w_hh_t = w[1].t();
  Tensor bias;
  if (has_bias) {
    if (mode == RNNMode::GRU) {
      bias = w[2];
      sw.b_hh = w[3];
    } else {
      bias = w[2] + w[3];
    }
  }
  if (has_proj) sw.w_hr_t = w[has_bias ? 4 : 2].t();
  // Input projection of the whole sequence at once: (N, G*H).
  // Input projection of the whole sequence at once, split into steps (one
  // split: its backward is one cat, where a narrow per step would fill a
  // zero gradient of the whole projection at every step).
  const std::vector<Tensor> xps = nn::functional::linear(x, w_ih, bias).split(IntArrayRef(bs), 0);
  const bool lstm = mode == RNNMode::LSTM;
  const int64_t T = static_cast<int64_t>(bs.size());
  std::vector<Tensor> outs(static_cast<size_t>(T));
  Tensor h, c;
  if (!reverse) {
    h = h0;
    c = c0;
    std::vector<Tensor> h_done, c_done;  // rows of sequences that ended, last ended first at the end
    for (int64_t t = 0; t < T; ++t) {
      const int64_t b = bs[size_t(t)];
      if (b < h.size(0)) {
        auto hs = h.split(IntArrayRef({b, h.size(0) - b}), 0);
        h_done.push_back(hs[1]);
        h = hs[0];
        if (lstm) {
          auto cs = c.split(IntArrayRef({b, c.size(0) - b}), 0);
          c_done.push_back(cs[1]);
          c = cs[0];
        }
      }
      std::tie(h, c) = step(mode, xps[size_t(t)], h, c, sw);
      outs[size_t(t)] = h;
    }
    if (!h_done.empty()) {
      h_done.push_back(h);
      std::reverse(h_done.begin(), h_done.end());
      h = cat(h_done, 0);
      if (lstm) {
        c_done.push_back(c);
        std::reverse(c_done.begin(), c_done.end());
        c = cat(c_done, 0);
      }
    }
  } else {
    const int64_t b_last = bs.back();
    h = b_last < h0.size(0) ? h0.narrow(0, 0, b_last) : h0;
    if (lstm) c = b_last < c0.size(0) ? c0.narrow(0, 0, b_last) : c0;
    for (int64_t t = T - 1; t >= 0; --t) {
      const int64_t b = bs[size_t(t)];
      if (b > h.size(0)) {  // sequences that start (from their end) at this step
        const int64_t k = h.size(0);
        h = cat({h, h0.narrow(0, k, b - k)}, 0);
        if (lstm) c = cat({c, c0.narrow(0, k, b - k)}, 0);
      }
      std::tie(h, c) = step(mode, xps[size_t(t)], h, c, sw);
      outs[size_t(t)] = h;
    }
  }
  Tensor out = T == 1 ? outs[0] : cat(outs, 0);
  return {out, h, c};
}

}  // namespace

// ---- RNNImplBase ----------------------------------------------------------------------

namespace detail {

RNNImplBase::RNNImplBase(std::string type_name, const RNNOptionsBase& options)
    : Module(std::move(type_name)), options_base(options) {
  const char* op = name().c_str();
  const auto& o = options_base;
  BRISK_CHECK(o.input_size >= 0 && o.hidden_size > 0, op, "input_size must be non-negative and hidden_size positive, got ",
              o.input_size, " and ", o.hidden_size);
  BRISK_CHECK(o.num_layers > 0, op, "num_layers must be positive, got ", o.num_layers);
  BRISK_CHECK(o.dropout >= 0.0 && o.dropout <= 1.0, op,
              "dropout should be a number in range [0, 1] representing the probability of an element being zeroed, got ",
              o.dropout);
  BRISK_CHECK(o.proj_size >= 0, op, "proj_size should be a non-negative integer, got ", o.proj_size);
  BRISK_CHECK(o.proj_size < o.hidden_size, op, "proj_size has to be smaller than hidden_size, got proj_size ",
              o.proj_size, " and hidden_size ", o.hidden_size);
  BRISK_CHECK(o.proj_size == 0 || o.mode == RNNMode::LSTM, op, "proj_size is supported by LSTM only");
  reset();
}

void RNNImplBase::reset() {
  const auto& o = options_base;
  const int64_t G = gate_count(o.mode), H = o.hidden_size;
  const int64_t Hout = o.proj_size > 0 ? o.proj_size : H;
  const int64_t D = o.bidirectional ? 2 : 1;
  flat_weights_.clear();
  own_parameters().clear();
  for (int64_t l = 0; l < o.num_layers; ++l) {
    const int64_t in = l == 0 ? o.input_size : Hout * D;
    for (int64_t d = 0; d < D; ++d) {
      const std::string sfx = "_l" + std::to_string(l) + (d == 1 ? "_reverse" : "");
      flat_weights_.push_back(register_parameter("weight_ih" + sfx, empty({G * H, in})));
      flat_weights_.push_back(register_parameter("weight_hh" + sfx, empty({G * H, Hout})));
      if (o.bias) {
        flat_weights_.push_back(register_parameter("bias_ih" + sfx, empty({G * H})));
        flat_weights_.push_back(register_parameter("bias_hh" + sfx, empty({G * H})));
      }
      if (o.proj_size > 0) flat_weights_.push_back(register_parameter("weight_hr" + sfx, empty({o.proj_size, H})));
    }
  }
  reset_parameters();
}

void RNNImplBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(options_base.hidden_size));
  for (auto& p : parameters(false)) init::uniform_(p, -bound, bound);
}

std::vector<Tensor> RNNImplBase::all_weights() const {
  // The registry, not flat_weights_: to() may have replaced the handles' data
  // in place, and the registry is what load_state_dict writes.
  return parameters(false);
}

std::string RNNImplBase::extra_repr() const {
  const auto& o = options_base;
  std::ostringstream os;
  os << "input_size=" << o.input_size << ", hidden_size=" << o.hidden_size << ", num_layers=" << o.num_layers
     << ", bias=" << (o.bias ? "true" : "false") << ", batch_first=" << (o.batch_first ? "true" : "false")
     << ", dropout=" << o.dropout << ", bidirectional=" << (o.bidirectional ? "true" : "false");
  if (o.mode == RNNMode::RNNReLU) os << ", nonlinearity=relu";
  if (o.proj_size > 0) os << ", proj_size=" << o.proj_size;
  return os.str();
}

void RNNImplBase::check_state(const Tensor& state, const Tensor& input, int64_t batch, int64_t size, bool unbatched,
                              const char* what) const {
  const char* op = name().c_str();
  const int64_t LD = options_base.num_layers * (options_base.bidirectional ? 2 : 1);
  std::vector<int64_t> want = unbatched ? std::vector<int64_t>{LD, size} : std::vector<int64_t>{LD, batch, size};
  BRISK_CHECK(state.sizes() == IntArrayRef(want), op, "Expected ", what, " size ", IntArrayRef(want), ", got ",
              state.sizes());
  BRISK_CHECK(state.dtype() == input.dtype() && state.device() == input.device(), op, what, " has dtype ",
              state.dtype(), " on ", state.device(), " but the input has dtype ", input.dtype(), " on ",
              input.device());
}

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::run_layers(const Tensor& x, const std::vector<int64_t>& bs,
                                                           const Tensor& h0, const Tensor& c0) {
  // x: (N, in) packed time-major; h0: (L*D, B, Hout); c0: (L*D, B, H) or undefined.
  const auto& o = options_base;
  const bool lstm = o.mode == RNNMode::LSTM;
  const int64_t D = o.bidirectional ? 2 : 1;
  const size_t per = flat_weights_.size() / size_t(o.num_layers * D);
  const auto weights = parameters(false);  // the registry's handles (see all_weights)
  const std::vector<Tensor> h0s = h0.unbind(0);
  const std::vector<Tensor> c0s = lstm ? c0.unbind(0) : std::vector<Tensor>();
  std::vector<Tensor> h_n, c_n;
  Tensor layer_in = x;
  for (int64_t l = 0; l < o.num_layers; ++l) {
    std::vector<Tensor> dir_out;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t idx = l * D + d;
      auto [out, h, c] = run_direction(o.mode, layer_in, bs, h0s[size_t(idx)],
                                       lstm ? c0s[size_t(idx)] : Tensor(), &weights[size_t(idx) * per], o.bias,
                                       o.proj_size > 0, d == 1);
      dir_out.push_back(out);
      h_n.push_back(h);
      if (lstm) c_n.push_back(c);
    }
    layer_in = D == 1 ? dir_out[0] : cat(dir_out, 1);
    if (o.dropout > 0.0 && is_training() && l + 1 < o.num_layers)
      layer_in = nn::functional::dropout(layer_in, o.dropout, true);
  }
  return {layer_in, stack(h_n, 0), lstm ? stack(c_n, 0) : Tensor()};
}

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::run_padded(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  const char* op = name().c_str();
  const auto& o = options_base;
  BRISK_CHECK(input.defined(), op, "the input is undefined");
  BRISK_CHECK(input.dim() == 2 || input.dim() == 3, op, "Expected input to be 2-D (unbatched) or 3-D, got ",
              input.dim(), "-D input of shape ", input.sizes());
  BRISK_CHECK(input.size(-1) == o.input_size, op, "input.size(-1) must be equal to input_size. Expected ",
              o.input_size, ", got ", input.size(-1));
  const auto& w0 = flat_weights_[0];
  BRISK_CHECK(input.dtype() == w0.dtype() && input.device() == w0.device(), op, "input has dtype ", input.dtype(),
              " on ", input.device(), " but the parameters have dtype ", w0.dtype(), " on ", w0.device());
  const bool unbatched = input.dim() == 2;
  Tensor x = unbatched ? input.unsqueeze(1) : (o.batch_first ? input.transpose(0, 1) : input);  // (T, B, in)
  const int64_t T = x.size(0), B = x.size(1);
  BRISK_CHECK(T > 0, op, "the input has no time steps (shape ", input.sizes(), ")");
  const int64_t D = o.bidirectional ? 2 : 1, LD = o.num_layers * D;
  const int64_t Hout = o.proj_size > 0 ? o.proj_size : o.hidden_size;
  const bool lstm = o.mode == RNNMode::LSTM;
  Tensor h, c;
  if (h0.defined()) {
    check_state(h0, input, B, Hout, unbatched, lstm ? "hidden[0]" : "hidden");
    h = unbatched ? h0.unsqueeze(1) : h0;
  } else {
    h = zeros({LD, B, Hout}, input.options());
  }
  if (lstm) {
    if (c0.defined()) {
      check_state(c0, input, B, o.hidden_size, unbatched, "hidden[1]");
      c = unbatched ? c0.unsqueeze(1) : c0;
    } else {
      c = zeros({LD, B, o.hidden_size}, input.options());
    }
  }
  std::vector<int64_t> bs(static_cast<size_t>(T), B);
  auto [out, h_n, c_n] = run_layers(x.contiguous().view({T * B, o.input_size}), bs, h, c);
  out = out.view({T, B, D * Hout});
  if (unbatched) {
    out = out.squeeze(1);
    h_n = h_n.squeeze(1);
    if (lstm) c_n = c_n.squeeze(1);
  } else if (o.batch_first) {
    out = out.transpose(0, 1);
  }
  return {out, h_n, c_n};
}

std::tuple<utils::rnn::PackedSequence, Tensor, Tensor> RNNImplBase::run_packed(
    const utils::rnn::PackedSequence& input, const Tensor& h0, const Tensor& c0) {
  const char* op = name().c_str();
  const auto& o = options_base;
  const Tensor& data = input.data();
  BRISK_CHECK(data.defined() && data.dim() == 2, op, "Expected packed data of 2 dims (N, input_size), got ",
              data.defined() ? data.sizes() : IntArrayRef{});
  BRISK_CHECK(data.size(1) == o.input_size, op, "input.size(-1) must be equal to input_size. Expected ",
              o.input_size, ", got ", data.size(1));
  const auto& w0 = flat_weights_[0];
  BRISK_CHECK(data.dtype() == w0.dtype() && data.device() == w0.device(), op, "input has dtype ", data.dtype(),
              " on ", data.device(), " but the parameters have dtype ", w0.dtype(), " on ", w0.device());
  const std::vector<int64_t> bs = input.batch_sizes().cpu().to_vector<int64_t>();
  BRISK_CHECK(!bs.empty(), op, "the packed sequence has no time steps");
  int64_t total = 0;
  for (size_t t = 0; t < bs.size(); ++t) {
    BRISK_CHECK(bs[t] > 0 && (t == 0 || bs[t] <= bs[t - 1]), op,
                "batch_sizes must be positive and non-increasing, got ", input.batch_sizes().sizes());
    total += bs[t];
  }
  BRISK_CHECK(total == data.size(0), op, "batch_sizes sum to ", total, " but the packed data has ", data.size(0),
              " rows");
  const int64_t B = bs[0], D = o.bidirectional ? 2 : 1, LD = o.num_layers * D;
  const int64_t Hout = o.proj_size > 0 ? o.proj_size : o.hidden_size;
  const bool lstm = o.mode == RNNMode::LSTM;
  const Tensor& sorted = input.sorted_indices();
  // Initial states come in the caller's batch order: permute them to the packed order.
  auto permute_in = [&](const Tensor& s) { return sorted.defined() ? s.index_select(1, sorted) : s; };
  auto permute_out = [&](const Tensor& s) {
    return input.unsorted_indices().defined() ? s.index_select(1, input.unsorted_indices()) : s;
  };
  Tensor h, c;
  if (h0.defined()) {
    check_state(h0, data, B, Hout, false, lstm ? "hidden[0]" : "hidden");
    h = permute_in(h0);
  } else {
    h = zeros({LD, B, Hout}, data.options());
  }
  if (lstm) {
    if (c0.defined()) {
      check_state(c0, data, B, o.hidden_size, false, "hidden[1]");
      c = permute_in(c0);
    } else {
      c = zeros({LD, B, o.hidden_size}, data.options());
    }
  }
  auto [out, h_n, c_n] = run_layers(data, bs, h, c);
  utils::rnn::PackedSequence packed(out, input.batch_sizes(), input.sorted_indices(), input.unsorted_indices());
  return {packed, permute_out(h_n), lstm ? permute_out(c_n) : Tensor()};
}

}  // namespace detail

// ---- RNN, LSTM, GRU -----------------------------------------------------------------------

namespace {
detail::RNNOptionsBase base_of(const RNNOptions& o) {
  return {rnn_mode(o.nonlinearity()), o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(),
          o.dropout(), o.bidirectional(), 0};
}
detail::RNNOptionsBase base_of(const LSTMOptions& o) {
  return {RNNMode::LSTM, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(),
          o.dropout(), o.bidirectional(), o.proj_size()};
}
detail::RNNOptionsBase base_of(const GRUOptions& o) {
  return {RNNMode::GRU, o.input_size(), o.hidden_size(), o.num_layers(), o.bias(), o.batch_first(),
          o.dropout(), o.bidirectional(), 0};
}
}  // namespace

RNNImpl::RNNImpl(const RNNOptions& opts) : RNNImplBase("RNN", base_of(opts)), options(opts) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  auto [out, h, c] = run_padded(input, hx, {});
  return {out, h};
}

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& input, Tensor hx) {
  auto [out, h, c] = run_packed(input, hx, {});
  return {out, h};
}

LSTMImpl::LSTMImpl(const LSTMOptions& opts) : RNNImplBase("LSTM", base_of(opts)), options(opts) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor h0, c0;
  if (hx_opt) std::tie(h0, c0) = *hx_opt;
  BRISK_CHECK(h0.defined() == c0.defined(), "LSTM", "hx must hold both h_0 and c_0, or be absent");
  auto [out, h, c] = run_padded(input, h0, c0);
  return {out, {h, c}};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor h0, c0;
  if (hx_opt) std::tie(h0, c0) = *hx_opt;
  BRISK_CHECK(h0.defined() == c0.defined(), "LSTM", "hx must hold both h_0 and c_0, or be absent");
  auto [out, h, c] = run_packed(input, h0, c0);
  return {out, {h, c}};
}

GRUImpl::GRUImpl(const GRUOptions& opts) : RNNImplBase("GRU", base_of(opts)), options(opts) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  auto [out, h, c] = run_padded(input, hx, {});
  return {out, h};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& input, Tensor hx) {
  auto [out, h, c] = run_packed(input, hx, {});
  return {out, h};
}

// ---- cells ----------------------------------------------------------------------------------

namespace detail {

RNNCellImplBase::RNNCellImplBase(std::string type_name, RNNMode mode, int64_t input_size, int64_t hidden_size,
                                 bool bias)
    : Module(std::move(type_name)), mode_(mode), input_size_(input_size), hidden_size_(hidden_size), bias_(bias) {
  BRISK_CHECK(input_size >= 0 && hidden_size > 0, name().c_str(),
              "input_size must be non-negative and hidden_size positive, got ", input_size, " and ", hidden_size);
  reset();
}

void RNNCellImplBase::reset() {
  own_parameters().clear();
  const int64_t G = gate_count(mode_);
  weight_ih = register_parameter("weight_ih", empty({G * hidden_size_, input_size_}));
  weight_hh = register_parameter("weight_hh", empty({G * hidden_size_, hidden_size_}));
  if (bias_) {
    bias_ih = register_parameter("bias_ih", empty({G * hidden_size_}));
    bias_hh = register_parameter("bias_hh", empty({G * hidden_size_}));
  } else {
    bias_ih = bias_hh = Tensor();
  }
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size_));
  for (auto& p : parameters(false)) init::uniform_(p, -bound, bound);
}

std::string RNNCellImplBase::extra_repr() const {
  std::ostringstream os;
  os << "input_size=" << input_size_ << ", hidden_size=" << hidden_size_ << ", bias=" << (bias_ ? "true" : "false");
  if (mode_ == RNNMode::RNNReLU) os << ", nonlinearity=relu";
  return os.str();
}

std::tuple<Tensor, Tensor, bool> RNNCellImplBase::prepare(const Tensor& input, const Tensor& state,
                                                          const char* what) const {
  const char* op = name().c_str();
  BRISK_CHECK(input.defined(), op, "the input is undefined");
  BRISK_CHECK(input.dim() == 1 || input.dim() == 2, op, "Expected input to be 1D or 2D, got ", input.dim(),
              "D instead");
  BRISK_CHECK(input.size(-1) == input_size_, op, "input has inconsistent input_size: got ", input.size(-1),
              " expected ", input_size_);
  BRISK_CHECK(input.dtype() == weight_ih.dtype() && input.device() == weight_ih.device(), op, "input has dtype ",
              input.dtype(), " on ", input.device(), " but the parameters have dtype ", weight_ih.dtype(), " on ",
              weight_ih.device());
  const bool unbatched = input.dim() == 1;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  const int64_t B = x.size(0);
  Tensor s;
  if (state.defined()) {
    std::vector<int64_t> want = unbatched ? std::vector<int64_t>{hidden_size_} : std::vector<int64_t>{B, hidden_size_};
    BRISK_CHECK(state.sizes() == IntArrayRef(want), op, "Expected ", what, " size ", IntArrayRef(want), ", got ",
                state.sizes());
    BRISK_CHECK(state.dtype() == input.dtype() && state.device() == input.device(), op, what, " has dtype ",
                state.dtype(), " on ", state.device(), " but the input has dtype ", input.dtype(), " on ",
                input.device());
    s = unbatched ? state.unsqueeze(0) : state;
  } else {
    s = zeros({B, hidden_size_}, input.options());
  }
  return {x, s, unbatched};
}

}  // namespace detail

namespace {
// The input projection and recurrent weights of a cell, as the sequence path uses them.
std::pair<Tensor, StepWeights> cell_projection(RNNMode mode, const Tensor& x, const Tensor& w_ih, const Tensor& w_hh,
                                               const Tensor& b_ih, const Tensor& b_hh) {
  StepWeights sw;
  sw.w_hh_t = w_hh.t();
  Tensor bias;
  if (b_ih.defined()) {
    if (mode == RNNMode::GRU) {
      bias = b_ih;
      sw.b_hh = b_hh;
    } else {
      bias = b_ih + b_hh;
    }
  }
  return {nn::functional::linear(x, w_ih, bias), sw};
}
}  // namespace

RNNCellImpl::RNNCellImpl(const RNNCellOptions& o)
    : RNNCellImplBase("RNNCell", rnn_mode(o.nonlinearity()), o.input_size(), o.hidden_size(), o.bias()), options(o) {}

Tensor RNNCellImpl::forward(const Tensor& input, Tensor hx) {
  auto [x, h, unbatched] = prepare(input, hx, "hx");
  auto [xp, sw] = cell_projection(mode_, x, weight_ih, weight_hh, bias_ih, bias_hh);
  Tensor out = step(mode_, xp, h, {}, sw).first;
  return unbatched ? out.squeeze(0) : out;
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& o)
    : RNNCellImplBase("LSTMCell", RNNMode::LSTM, o.input_size(), o.hidden_size(), o.bias()), options(o) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor h0, c0;
  if (hx_opt) std::tie(h0, c0) = *hx_opt;
  BRISK_CHECK(h0.defined() == c0.defined(), "LSTMCell", "hx must hold both h_0 and c_0, or be absent");
  auto [x, h, unbatched] = prepare(input, h0, "hx[0]");
  Tensor c = std::get<1>(prepare(input, c0, "hx[1]"));
  auto [xp, sw] = cell_projection(mode_, x, weight_ih, weight_hh, bias_ih, bias_hh);
  auto [h1, c1] = step(mode_, xp, h, c, sw);
  if (unbatched) return {h1.squeeze(0), c1.squeeze(0)};
  return {h1, c1};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& o)
    : RNNCellImplBase("GRUCell", RNNMode::GRU, o.input_size(), o.hidden_size(), o.bias()), options(o) {}

Tensor GRUCellImpl::forward(const Tensor& input, Tensor hx) {
  auto [x, h, unbatched] = prepare(input, hx, "hx");
  auto [xp, sw] = cell_projection(mode_, x, weight_ih, weight_hh, bias_ih, bias_hh);
  Tensor out = step(mode_, xp, h, {}, sw).first;
  return unbatched ? out.squeeze(0) : out;
}

// ---- PackedSequence and its functions -----------------------------------------------------

namespace utils::rnn {

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  if (sorted_indices_.defined() && !unsorted_indices_.defined()) {
    // The inverse permutation: unsorted[sorted[i]] = i.
    unsorted_indices_ = empty_like(sorted_indices_).scatter_(
        0, sorted_indices_, arange(sorted_indices_.size(0), sorted_indices_.options()));
  }
}

PackedSequence PackedSequence::to(TensorOptions options) const {
  PackedSequence p = *this;
  if (!options.has_device_) options = options.device(data_.device());  // a dtype alone keeps the device
  p.data_ = data_.to(options);
  if (options.has_device_) {
    if (sorted_indices_.defined()) p.sorted_indices_ = sorted_indices_.to(options.device_);
    if (unsorted_indices_.defined()) p.unsorted_indices_ = unsorted_indices_.to(options.device_);
  }
  return p;
}

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first, bool enforce_sorted) {
  const char* op = "pack_padded_sequence";
  BRISK_CHECK(input.defined() && input.dim() >= 2, op, "expected an input of at least 2 dims, got ",
              input.defined() ? input.sizes() : IntArrayRef{});
  BRISK_CHECK(lengths.defined() && lengths.dim() == 1, op, "expected 1-D lengths, got ",
              lengths.defined() ? lengths.sizes() : IntArrayRef{});
  Tensor x = batch_first ? input.transpose(0, 1) : input;  // (T, B, *)
  const int64_t T = x.size(0), B = x.size(1);
  std::vector<int64_t> len = lengths.cpu().to_vector<int64_t>();
  BRISK_CHECK(int64_t(len.size()) == B, op, "expected ", B, " lengths (the batch size), got ", len.size());
  for (int64_t l : len)
    BRISK_CHECK(l > 0 && l <= T, op, "every length must be in [1, ", T, "] (the padded length), got ", l);
  Tensor sorted, unsorted;
  if (enforce_sorted) {
    BRISK_CHECK(std::is_sorted(len.begin(), len.end(), std::greater<>()), op,
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is true; pass "
                "enforce_sorted=false to pack an unsorted batch");
  } else {
    std::vector<int64_t> order(static_cast<size_t>(B));
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return len[size_t(a)] > len[size_t(b)]; });
    std::vector<int64_t> sorted_len(static_cast<size_t>(B));
    for (size_t i = 0; i < size_t(B); ++i) sorted_len[i] = len[size_t(order[i])];
    len = sorted_len;
    sorted = brisk::tensor(order, kInt64).to(input.device());
    x = x.index_select(1, sorted);
  }
  const int64_t T_max = len[0];
  std::vector<int64_t> bs(static_cast<size_t>(T_max));
  std::vector<Tensor> rows;
  rows.reserve(size_t(T_max));
  for (int64_t t = 0; t < T_max; ++t) {
    bs[size_t(t)] = std::count_if(len.begin(), len.end(), [t](int64_t l) { return l > t; });
    rows.push_back(x.select(0, t).narrow(0, 0, bs[size_t(t)]));
  }
  return PackedSequence(cat(rows, 0), brisk::tensor(bs, kInt64), sorted);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  const char* op = "pad_packed_sequence";
  const Tensor& data = sequence.data();
  BRISK_CHECK(data.defined() && data.dim() >= 1 && sequence.batch_sizes().defined(), op,
              "the packed sequence is empty");
  const std::vector<int64_t> bs = sequence.batch_sizes().cpu().to_vector<int64_t>();
  BRISK_CHECK(!bs.empty(), op, "the packed sequence has no time steps");
  const int64_t T = int64_t(bs.size()), B = bs[0];
  const int64_t T_out = total_length.value_or(T);
  BRISK_CHECK(T_out >= T, op, "Expected total_length to be at least the length of the longest sequence (", T,
              "), got ", T_out);
  std::vector<int64_t> row_shape(data.sizes().begin(), data.sizes().end());
  std::vector<Tensor> steps;
  steps.reserve(size_t(T_out));
  int64_t offset = 0;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t b = bs[size_t(t)];
    BRISK_CHECK(b > 0 && b <= B && offset + b <= data.size(0), op, "batch_sizes do not match the packed data");
    Tensor piece = data.narrow(0, offset, b);
    offset += b;
    if (b < B) {
      row_shape[0] = B - b;
      piece = cat({piece, full(row_shape, padding_value, data.options())}, 0);
    }
    steps.push_back(piece);
  }
  BRISK_CHECK(offset == data.size(0), op, "batch_sizes sum to ", offset, " but the packed data has ", data.size(0),
              " rows");
  if (T_out > T) {
    std::vector<int64_t> pad_shape(data.sizes().begin(), data.sizes().end());
    pad_shape[0] = B;
    Tensor pad_rows = full(pad_shape, padding_value, data.options());
    for (int64_t t = T; t < T_out; ++t) steps.push_back(pad_rows);
  }
  Tensor padded = stack(steps, 0);  // (T_out, B, *)
  std::vector<int64_t> len(static_cast<size_t>(B));
  for (int64_t i = 0; i < B; ++i)
    len[size_t(i)] = std::count_if(bs.begin(), bs.end(), [i](int64_t b) { return b > i; });
  Tensor lengths = brisk::tensor(len, kInt64);
  if (sequence.unsorted_indices().defined()) {
    padded = padded.index_select(1, sequence.unsorted_indices());
    lengths = lengths.index_select(0, sequence.unsorted_indices().cpu());
  }
  if (batch_first) padded = padded.transpose(0, 1);
  return {padded, lengths};
}

Tensor pad_sequence(const std::vector<Tensor>& sequences, bool batch_first, double padding_value,
                    const std::string& padding_side) {
  const char* op = "pad_sequence";
  BRISK_CHECK(!sequences.empty(), op, "received an empty list of sequences");
  BRISK_CHECK(padding_side == "right" || padding_side == "left", op,
              "Expected padding_side to be one of left or right, but got ", padding_side);
  const Tensor& first = sequences[0];
  BRISK_CHECK(first.defined() && first.dim() >= 1, op, "sequence 0 must have at least 1 dim");
  int64_t T = 0;
  for (size_t i = 0; i < sequences.size(); ++i) {
    const Tensor& s = sequences[i];
    BRISK_CHECK(s.defined() && s.dim() == first.dim() &&
                    std::equal(s.sizes().begin() + 1, s.sizes().end(), first.sizes().begin() + 1), op,
                "sequence ", i, " has shape ", s.defined() ? s.sizes() : IntArrayRef{},
                " but the trailing dims of sequence 0 are those of ", first.sizes());
    BRISK_CHECK(s.dtype() == first.dtype() && s.device() == first.device(), op, "sequence ", i,
                " has another dtype or device than sequence 0");
    T = std::max(T, s.size(0));
  }
  std::vector<Tensor> padded;
  padded.reserve(sequences.size());
  for (const Tensor& s : sequences) {
    if (s.size(0) == T) {
      padded.push_back(s);
      continue;
    }
    std::vector<int64_t> shape(s.sizes().begin(), s.sizes().end());
    shape[0] = T - s.size(0);
    Tensor fill = full(shape, padding_value, s.options());
    padded.push_back(padding_side == "right" ? cat({s, fill}, 0) : cat({fill, s}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(const std::vector<Tensor>& sequences, bool enforce_sorted) {
  std::vector<int64_t> len;
  len.reserve(sequences.size());
  for (const Tensor& s : sequences) {
    BRISK_CHECK(s.defined() && s.dim() >= 1, "pack_sequence", "every sequence needs at least 1 dim");
    len.push_back(s.size(0));
  }
  return pack_padded_sequence(pad_sequence(sequences), brisk::tensor(len, kInt64), false, enforce_sorted);
}

}  // namespace utils::rnn

}  // namespace brisk::nn
