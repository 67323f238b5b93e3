// nn::TransformerEncoderLayer and nn::TransformerEncoder (PyTorch's).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "brisk/nn/attention.h"
#include "brisk/nn/layers.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

/// Options of TransformerEncoderLayer (PyTorch's constructor arguments).
struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  BRISK_ARG(int64_t, d_model);
  BRISK_ARG(int64_t, nhead);
  BRISK_ARG(int64_t, dim_feedforward) = 2048;
  BRISK_ARG(double, dropout) = 0.1;
  /// "relu" or "gelu" (exact), as PyTorch's string argument; `activation_fn`,
  /// when set, replaces it (PyTorch's callable).
  BRISK_ARG(std::string, activation) = "relu";
  BRISK_ARG(std::function<Tensor(const Tensor&)>, activation_fn);
  BRISK_ARG(double, layer_norm_eps) = 1e-5;
  BRISK_ARG(bool, batch_first) = false;  ///< (N, S, E) instead of (S, N, E)
  BRISK_ARG(bool, norm_first) = false;   ///< pre-norm: x + sa(norm1(x)), x + ff(norm2(x))
  BRISK_ARG(bool, bias) = true;          ///< biases of the Linear, attention and LayerNorm layers
};

/// PyTorch's nn.TransformerEncoderLayer: self-attention then a feed-forward
/// block, each with dropout, a residual connection and a LayerNorm (after,
/// or before with norm_first). Children and parameters carry PyTorch's names
/// (self_attn.in_proj_weight, linear1.weight, norm1.weight, ...), so state
/// dicts carry over. The attention runs without weights, so on the CPU it is
/// the fused flash-attention kernel when dropout is off (eval() or p = 0).
class TransformerEncoderLayerImpl : public Module {
 public:
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options, TensorOptions opts = {});
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048, double dropout = 0.1,
                          TensorOptions opts = {});

  /// src (S, N, E), (N, S, E) with batch_first, or unbatched (S, E);
  /// src_mask (S, S) or (N * nhead, S, S), bool (true = not allowed) or
  /// additive; src_key_padding_mask (N, S) or (S), bool (true = ignore that
  /// key) or additive; is_causal: a hint that src_mask is the causal mask
  /// (as in PyTorch; without src_mask it applies a causal mask).
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, Tensor(), Tensor(), false); }
  Tensor operator()(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                    bool is_causal = false) {
    return forward(src, src_mask, src_key_padding_mask, is_causal);
  }
  using Module::operator();
  std::string extra_repr() const override;

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  Tensor activate(const Tensor& x) const;
  Tensor sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm, bool is_causal);
  Tensor ff_block(const Tensor& x);
};
BRISK_MODULE(TransformerEncoderLayer);

/// PyTorch's nn.TransformerEncoder: num_layers deep copies of `layer`
/// (children "layers.0", "layers.1", ...; fresh parameters initialized as
/// the layer's constructor does), then an optional final `norm`.
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayerOptions& layer_options, int64_t num_layers,
                     LayerNorm norm = nullptr, TensorOptions opts = {});
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, Tensor(), Tensor(), false); }
  Tensor operator()(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                    bool is_causal = false) {
    return forward(src, mask, src_key_padding_mask, is_causal);
  }
  using Module::operator();

  std::vector<TransformerEncoderLayer> layers;
  LayerNorm norm{nullptr};
};
BRISK_MODULE(TransformerEncoder);

}  // namespace brisk::nn
