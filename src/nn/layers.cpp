// Containers and layers of brisk::nn (forwards delegate to nn::functional).
#include <cmath>
#include <sstream>

#include "brisk/autograd.h"
#include "brisk/nn/functional.h"
#include "brisk/nn/init.h"
#include "brisk/nn/layers.h"
#include "brisk/ops.h"

namespace brisk::nn {

// ---- containers -----------------------------------------------------------------

Sequential::Sequential(std::initializer_list<ModulePtr> modules) : Module("Sequential") {
  for (const auto& m : modules) push_back(m);
}
void Sequential::push_back(ModulePtr m) { push_back(std::to_string(order_.size()), std::move(m)); }
void Sequential::push_back(std::string name, ModulePtr m) {
  register_module(std::move(name), m);
  order_.push_back(std::move(m));
}
Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& m : order_) y = m->forward(y);
  return y;
}
const ModulePtr& Sequential::operator[](size_t i) const {
  BRISK_CHECK(i < order_.size(), "Sequential", "index ", i, " is out of range for ", order_.size(), " modules");
  return order_[i];
}

ModuleList::ModuleList(std::initializer_list<ModulePtr> modules) : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}
void ModuleList::push_back(ModulePtr m) {
  register_module(std::to_string(order_.size()), m);
  order_.push_back(std::move(m));
}
const ModulePtr& ModuleList::operator[](size_t i) const {
  BRISK_CHECK(i < order_.size(), "ModuleList", "index ", i, " is out of range for ", order_.size(), " modules");
  return order_[i];
}

ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, ModulePtr>> modules) : Module("ModuleDict") {
  for (const auto& [name, m] : modules) insert(name, m);
}
void ModuleDict::insert(std::string name, ModulePtr m) { register_module(std::move(name), std::move(m)); }
const ModulePtr& ModuleDict::operator[](const std::string& name) const {
  const ModulePtr* m = named_children().find(name);
  BRISK_CHECK(m, "ModuleDict", "no module named '", name, "'");
  return *m;
}

// ---- Linear, Bilinear ------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, bool with_bias, TensorOptions opts)
    : Module("Linear"), in_features(in), out_features(out) {
  BRISK_CHECK(in >= 0 && out >= 0, "Linear", "feature counts must be non-negative, got ", in, " and ", out);
  weight = register_parameter("weight", empty({out, in}, opts));
  if (with_bias) bias = register_parameter("bias", empty({out}, opts));
  reset_parameters();
}
void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}
Tensor Linear::forward(const Tensor& x) { return F::linear(x, weight, bias); }
std::string Linear::extra_repr() const {
  std::ostringstream os;
  os << "in_features=" << in_features << ", out_features=" << out_features
     << ", bias=" << (bias.defined() ? "true" : "false");
  return os.str();
}

Bilinear::Bilinear(int64_t in1, int64_t in2, int64_t out, bool with_bias, TensorOptions opts)
    : Module("Bilinear"), in1_features(in1), in2_features(in2), out_features(out) {
  weight = register_parameter("weight", empty({out, in1, in2}, opts));
  if (with_bias) bias = register_parameter("bias", empty({out}, opts));
  const double bound = in1 > 0 ? 1.0 / std::sqrt(static_cast<double>(in1)) : 0.0;
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}
Tensor Bilinear::forward(const Tensor& x1, const Tensor& x2) { return F::bilinear(x1, x2, weight, bias); }
std::string Bilinear::extra_repr() const {
  std::ostringstream os;
  os << "in1_features=" << in1_features << ", in2_features=" << in2_features << ", out_features=" << out_features
     << ", bias=" << (bias.defined() ? "true" : "false");
  return os.str();
}

// ---- activations and shape ---------------------------------------------------------------

Tensor ReLU::forward(const Tensor& x) { return F::relu(x); }
GELU::GELU(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
  BRISK_CHECK(approximate == "none" || approximate == "tanh", "GELU", "approximate must be 'none' or 'tanh', got '",
              approximate, "'");
}
Tensor GELU::forward(const Tensor& x) { return F::gelu(x, approximate); }
std::string GELU::extra_repr() const { return approximate == "none" ? "" : "approximate='" + approximate + "'"; }
Tensor SiLU::forward(const Tensor& x) { return F::silu(x); }
Tensor Mish::forward(const Tensor& x) { return F::mish(x, inplace); }
std::string Mish::extra_repr() const { return inplace ? "inplace=True" : ""; }
Tensor Tanh::forward(const Tensor& x) { return x.tanh(); }
Tensor Sigmoid::forward(const Tensor& x) { return x.sigmoid(); }
Tensor Softmax::forward(const Tensor& x) { return F::softmax(x, dim); }
std::string Softmax::extra_repr() const { return "dim=" + std::to_string(dim); }
Tensor LogSoftmax::forward(const Tensor& x) { return F::log_softmax(x, dim); }
std::string LogSoftmax::extra_repr() const { return "dim=" + std::to_string(dim); }
Tensor Flatten::forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }
std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

Dropout::Dropout(double p) : Module("Dropout"), p(p) {
  BRISK_CHECK(p >= 0.0 && p <= 1.0, "Dropout", "p must be in [0, 1], got ", p);
}
Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p, is_training()); }
std::string Dropout::extra_repr() const {
  std::ostringstream os;
  os << "p=" << p;
  return os.str();
}

// ---- Embedding, LayerNorm ------------------------------------------------------------------

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> pad, TensorOptions opts)
    : Module("Embedding"), num_embeddings(num), embedding_dim(dim) {
  BRISK_CHECK(num >= 0 && dim >= 0, "Embedding", "sizes must be non-negative, got ", num, " and ", dim);
  if (pad) {
    BRISK_CHECK(*pad >= -num && *pad < num, "Embedding", "padding_idx ", *pad, " is out of range for ", num,
                " embeddings");
    padding_idx = *pad < 0 ? *pad + num : *pad;
  }
  weight = register_parameter("weight", empty({num, dim}, opts));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}
Tensor Embedding::forward(const Tensor& indices) { return F::embedding(indices, weight, padding_idx); }
std::string Embedding::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  return s;
}

LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps, bool affine, TensorOptions opts)
    : LayerNorm(std::move(shape), eps, affine, true, opts) {}
LayerNorm::LayerNorm(std::vector<int64_t> shape, double eps, bool affine, bool with_bias, TensorOptions opts)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(eps), elementwise_affine(affine) {
  BRISK_CHECK(!normalized_shape.empty(), "LayerNorm", "normalized_shape must not be empty");
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape, opts));
    if (with_bias) bias = register_parameter("bias", zeros(normalized_shape, opts));
  }
}
Tensor LayerNorm::forward(const Tensor& x) { return F::layer_norm(x, normalized_shape, weight, bias, eps); }
std::string LayerNorm::extra_repr() const {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < normalized_shape.size(); ++i) os << (i ? ", " : "") << normalized_shape[i];
  os << (normalized_shape.size() == 1 ? ",)" : ")") << ", eps=" << eps
     << ", elementwise_affine=" << (elementwise_affine ? "true" : "false");
  return os.str();
}

}  // namespace brisk::nn
