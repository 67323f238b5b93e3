// Attention: nn::functional::scaled_dot_product_attention and
// nn::MultiheadAttention, with PyTorch 2.x's semantics. See
// docs/design/attention.md.
#pragma once
#include <memory>
#include <optional>
#include <tuple>

#include "brisk/nn/functional.h"
#include "brisk/nn/layers.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

namespace functional {

/// softmax(query @ key^T * scale + mask) @ value, PyTorch's
/// F.scaled_dot_product_attention.
///
/// query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev);
/// the batch dims (...) broadcast against each other and against the mask's.
/// attn_mask broadcasts to (..., L, S): a bool mask says which positions
/// *take part* (true = attend), a floating mask is added to the scores.
/// is_causal masks key j > query i (top-left aligned, as PyTorch; an
/// explicit attn_mask may not be given with it). scale defaults to
/// 1/sqrt(E). dropout_p zeroes attention probabilities with brisk's
/// generator (deterministic under manual_seed) and scales the rest by
/// 1/(1-p); it applies whenever dropout_p > 0 (pass 0 in eval mode).
///
/// A query row whose keys are all masked gets zero probabilities (an output
/// of zeros), as PyTorch >= 2.5's math backend, not NaN.
///
/// enable_gqa: grouped-query attention, query (..., Hq, L, E) with key and
/// value (..., Hkv, S, *), Hq a multiple of Hkv; query head h uses key/value
/// head h / (Hq / Hkv) (PyTorch 2.5+).
///
/// On the CPU (float32/float64; float16 and bfloat16 compute in float32) a
/// call without dropout runs the fused flash-attention kernel
/// (OpId::attention_fused: blocks of scores, online softmax and the value
/// product per block, no (L, S) buffer; one backward node,
/// ScaledDotProductFlashAttentionBackward0, that recomputes the scores per
/// block). With dropout, or a floating attn_mask that requires grad (its
/// gradient is computed too), the (L, S) probabilities are materialized
/// between two batched GEMMs (ScaledDotProductAttentionBackward0). Devices
/// without the fused kernel run the composite.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt, bool enable_gqa = false);

/// The same function written with differentiable brisk ops only (matmul,
/// where, softmax, ...): slower, runs on any device, and serves as the
/// reference of the fused version (and as its double backward).
Tensor scaled_dot_product_attention_math(const Tensor& query, const Tensor& key, const Tensor& value,
                                         const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                         bool is_causal = false, std::optional<double> scale = std::nullopt,
                                         bool enable_gqa = false);

}  // namespace functional

/// Options of MultiheadAttention (libtorch's MultiheadAttentionOptions, plus
/// batch_first from PyTorch's Python module).
struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  BRISK_ARG(int64_t, embed_dim);
  BRISK_ARG(int64_t, num_heads);
  BRISK_ARG(double, dropout) = 0.0;               ///< on the attention probabilities, training only
  BRISK_ARG(bool, bias) = true;                   ///< in_proj_bias and out_proj.bias
  BRISK_ARG(bool, add_bias_kv) = false;           ///< learned bias_k, bias_v appended to the key/value sequence
  BRISK_ARG(bool, add_zero_attn) = false;         ///< a zero key/value appended after the head split
  BRISK_ARG(std::optional<int64_t>, kdim);        ///< key features (default embed_dim)
  BRISK_ARG(std::optional<int64_t>, vdim);        ///< value features (default embed_dim)
  BRISK_ARG(bool, batch_first) = false;           ///< (N, L, E) instead of (L, N, E)
};

/// PyTorch's nn.MultiheadAttention.
///
/// Parameters (PyTorch's names, so state dicts carry over): in_proj_weight
/// (3E, E) and in_proj_bias (3E) when kdim == vdim == embed_dim; otherwise
/// q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim)
/// and in_proj_bias (3E); bias_k, bias_v (1, 1, E) with add_bias_kv; and
/// the child out_proj (a Linear: out_proj.weight, out_proj.bias). Init as
/// PyTorch: xavier_uniform_ on the input projections, zero biases, Linear's
/// init for out_proj.weight, xavier_normal_ for bias_k / bias_v.
class MultiheadAttentionImpl : public Module {
 public:
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options, TensorOptions opts = {});
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool add_bias_kv = false, bool add_zero_attn = false, std::optional<int64_t> kdim = std::nullopt,
                     std::optional<int64_t> vdim = std::nullopt, bool batch_first = false, TensorOptions opts = {});

  /// query (L, N, E), key (S, N, kdim), value (S, N, vdim) ((N, L, E) ... with
  /// batch_first), or unbatched (L, E), (S, kdim), (S, vdim).
  /// key_padding_mask (N, S) or (S): bool with true = *ignore* that key
  /// (PyTorch's MHA convention, the opposite of scaled_dot_product_attention's),
  /// or floating, added to the scores. attn_mask (L, S) or (N * num_heads, L, S):
  /// bool with true = not allowed, or floating, added. is_causal applies a
  /// causal mask; when attn_mask is given too, attn_mask is used (PyTorch's
  /// "hint" semantics). Returns {output (L, N, E) or (N, L, E) or (L, E),
  /// weights}: the attention probabilities (after dropout), averaged over heads
  /// (N, L, S) or per head (N, num_heads, L, S) (unbatched: without N), or an
  /// undefined tensor when need_weights is false.
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     bool is_causal = false);
  std::tuple<Tensor, Tensor> operator()(const Tensor& query, const Tensor& key, const Tensor& value,
                                        const Tensor& key_padding_mask = {}, bool need_weights = true,
                                        const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                        bool is_causal = false) {
    return forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights, is_causal);
  }
  using Module::operator();
  /// Self-attention without masks: forward(x, x, x) without weights (so the
  /// module can sit in a Sequential).
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();

  MultiheadAttentionOptions options;
  int64_t embed_dim, kdim, vdim, num_heads, head_dim;
  bool qkv_same_embed_dim;
  Tensor in_proj_weight;                               ///< (3E, E), or undefined
  Tensor q_proj_weight, k_proj_weight, v_proj_weight;  ///< when kdim or vdim differ from E
  Tensor in_proj_bias;                                 ///< (3E), or undefined without bias
  Tensor bias_k, bias_v;                               ///< (1, 1, E) with add_bias_kv
  Linear out_proj{nullptr};
};
BRISK_MODULE(MultiheadAttention);

}  // namespace brisk::nn
