// nn::TransformerEncoderLayer and nn::TransformerEncoder, as PyTorch's
// (torch/nn/modules/transformer.py): the same children, parameter names,
// initialization and order of operations. Composites of MultiheadAttention,
// Linear, Dropout and LayerNorm: every op they run goes through dispatch.
#include "brisk/nn/transformer.h"

#include <sstream>

#include "brisk/autograd.h"
#include "brisk/error.h"
#include "brisk/nn/functional.h"
#include "brisk/ops.h"

namespace brisk::nn {
namespace {
constexpr const char* kLayer = "TransformerEncoderLayer";
}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward,
                                                 double dropout_p, TensorOptions opts)
    : TransformerEncoderLayerImpl(
          TransformerEncoderLayerOptions(d_model, nhead).dim_feedforward(dim_feedforward).dropout(dropout_p), opts) {}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& o, TensorOptions opts)
    : Module(kLayer), options(o) {
  BRISK_CHECK(o.d_model() > 0 && o.nhead() > 0, kLayer, "d_model and nhead must be positive, got ", o.d_model(),
              " and ", o.nhead());
  BRISK_CHECK(o.dim_feedforward() > 0, kLayer, "dim_feedforward must be positive, got ", o.dim_feedforward());
  BRISK_CHECK(o.activation_fn() || o.activation() == "relu" || o.activation() == "gelu", kLayer,
              "activation should be relu/gelu, not ", o.activation());
  // Children in PyTorch's order (state dict keys and parameters() follow it).
  self_attn = register_module(
      "self_attn", MultiheadAttention(MultiheadAttentionOptions(o.d_model(), o.nhead())
                                                            .dropout(o.dropout())
                                                            .bias(o.bias())
                                                            .batch_first(o.batch_first()),
                                                        opts));
  linear1 = register_module("linear1", Linear(o.d_model(), o.dim_feedforward(), o.bias(), opts));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(o.dim_feedforward(), o.d_model(), o.bias(), opts));
  norm1 = register_module("norm1", LayerNorm(std::vector<int64_t>{o.d_model()}, o.layer_norm_eps(),
                                                               true, o.bias(), opts));
  norm2 = register_module("norm2", LayerNorm(std::vector<int64_t>{o.d_model()}, o.layer_norm_eps(),
                                                               true, o.bias(), opts));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
}

Tensor TransformerEncoderLayerImpl::activate(const Tensor& x) const {
  if (options.activation_fn()) return options.activation_fn()(x);
  return options.activation() == "gelu" ? gelu(x) : relu(x);
}

Tensor TransformerEncoderLayerImpl::sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm, bool is_causal) {
  auto [out, weights] = self_attn->forward(x, x, x, kpm, /*need_weights=*/false, mask, true, is_causal);
  return dropout1->forward(out);
}

Tensor TransformerEncoderLayerImpl::ff_block(const Tensor& x) {
  return dropout2->forward(linear2->forward(dropout->forward(activate(linear1->forward(x)))));
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask,
                                        bool is_causal) {
  BRISK_CHECK(src.defined(), kLayer, "src is an undefined tensor");
  BRISK_CHECK(src.dim() == 2 || src.dim() == 3, kLayer, "expected src of 2 (unbatched) or 3 dimensions, got shape ",
              src.sizes());
  BRISK_CHECK(src.size(-1) == options.d_model(), kLayer, "src has ", src.size(-1), " features, expected d_model = ",
              options.d_model());
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa_block(norm1->forward(x), src_mask, src_key_padding_mask, is_causal);
    x = x + ff_block(norm2->forward(x));
  } else {
    x = norm1->forward(x + sa_block(x, src_mask, src_key_padding_mask, is_causal));
    x = norm2->forward(x + ff_block(x));
  }
  return x;
}

std::string TransformerEncoderLayerImpl::extra_repr() const {
  std::ostringstream os;
  os << "d_model=" << options.d_model() << ", nhead=" << options.nhead()
     << ", dim_feedforward=" << options.dim_feedforward() << ", dropout=" << options.dropout()
     << ", activation=" << (options.activation_fn() ? "<function>" : options.activation());
  if (options.batch_first()) os << ", batch_first=true";
  if (options.norm_first()) os << ", norm_first=true";
  return os.str();
}

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayerOptions& layer_options, int64_t num_layers,
                                       LayerNorm final_norm, TensorOptions opts)
    : Module("TransformerEncoder") {
  BRISK_CHECK(num_layers >= 1, "TransformerEncoder", "num_layers must be at least 1, got ", num_layers);
  // PyTorch deep-copies one layer: every layer starts from the same values.
  auto list = register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers; ++i) {
    TransformerEncoderLayer layer(layer_options, opts);
    if (i > 0) {
      NoGradGuard ng;
      layer->load_state_dict(layers.front()->state_dict());
    }
    layers.push_back(layer);
    list->push_back(layer);
  }
  if (!final_norm.is_empty()) norm = register_module("norm", std::move(final_norm));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask,
                                   bool is_causal) {
  Tensor x = src;
  for (auto& layer : layers) x = layer->forward(x, mask, src_key_padding_mask, is_causal);
  return norm.is_empty() ? x : norm->forward(x);
}

}  // namespace brisk::nn
