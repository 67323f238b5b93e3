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

SequentialImpl::SequentialImpl(OrderedDict<std::string, AnyModule> named_modules) : Module("Sequential") {
  for (auto& it : named_modules) push_back(it.key(), it.value());
}
SequentialImpl::SequentialImpl(std::initializer_list<std::pair<std::string, AnyModule>> named_modules)
    : Module("Sequential") {
  for (const auto& [name, m] : named_modules) push_back(name, m);
}
SequentialImpl::SequentialImpl(std::initializer_list<ModulePtr> modules) : Module("Sequential") {
  for (const auto& m : modules) push_back(AnyModule(m));
}
void SequentialImpl::push_back(AnyModule m) { push_back(std::to_string(modules_.size()), std::move(m)); }
void SequentialImpl::push_back(std::string name, AnyModule m) {
  BRISK_CHECK(!m.is_empty(), "Sequential", "module '", name, "' is empty");
  register_module(std::move(name), m.ptr());
  modules_.push_back(std::move(m));
}
void SequentialImpl::extend(const SequentialImpl& other) {
  BRISK_CHECK(&other != this, "Sequential", "extend() with itself");
  for (const auto& m : other.modules_) push_back(m);
}
Tensor SequentialImpl::forward(const Tensor& x) {
  BRISK_CHECK(!modules_.empty(), "Sequential", "forward() of an empty Sequential");
  Tensor y = modules_[0].forward(x);
  for (size_t i = 1; i < modules_.size(); ++i) y = modules_[i].forward(y);
  return y;
}
void SequentialImpl::check_index(size_t i) const {
  BRISK_CHECK(i < modules_.size(), "Sequential", "index ", i, " is out of range for ", modules_.size(), " modules");
}
const ModulePtr& SequentialImpl::ptr(size_t i) const {
  check_index(i);
  return modules_[i].ptr();
}

ModuleListImpl::ModuleListImpl(std::initializer_list<ModulePtr> modules) : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}
void ModuleListImpl::push_back(ModulePtr m) {
  BRISK_CHECK(m != nullptr, "ModuleList", "push_back() of a null module");
  register_module(std::to_string(order_.size()), m);
  order_.push_back(std::move(m));
}
void ModuleListImpl::extend(const ModuleListImpl& other) {
  BRISK_CHECK(&other != this, "ModuleList", "extend() with itself");
  for (const auto& m : other.order_) push_back(m);
}
void ModuleListImpl::insert(size_t index, ModulePtr m) {
  BRISK_CHECK(index <= order_.size(), "ModuleList", "insert index ", index, " is out of range for ", order_.size(),
              " modules");
  BRISK_CHECK(m != nullptr, "ModuleList", "insert() of a null module");
  order_.insert(order_.begin() + static_cast<std::ptrdiff_t>(index), std::move(m));
  renumber();
}
void ModuleListImpl::renumber() {
  std::vector<ModulePtr> order = std::move(order_);
  order_.clear();
  clear_children();
  for (auto& m : order) push_back(std::move(m));
}
const ModulePtr& ModuleListImpl::ptr(size_t i) const {
  BRISK_CHECK(i < order_.size(), "ModuleList", "index ", i, " is out of range for ", order_.size(), " modules");
  return order_[i];
}

ModuleDictImpl::ModuleDictImpl(std::initializer_list<std::pair<std::string, ModulePtr>> modules) : Module("ModuleDict") {
  for (const auto& [name, m] : modules) insert(name, m);
}
ModuleDictImpl::ModuleDictImpl(const std::vector<std::pair<std::string, ModulePtr>>& modules) : Module("ModuleDict") {
  for (const auto& [name, m] : modules) insert(name, m);
}
ModuleDictImpl::ModuleDictImpl(const OrderedDict<std::string, ModulePtr>& modules) : Module("ModuleDict") {
  for (const auto& it : modules) insert(it.key(), it.value());
}
void ModuleDictImpl::insert(std::string name, ModulePtr m) {
  BRISK_CHECK(m != nullptr, "ModuleDict", "module '", name, "' is null");
  register_module(std::move(name), std::move(m));
}
void ModuleDictImpl::update(const ModuleDictImpl& other) {
  BRISK_CHECK(&other != this, "ModuleDict", "update() with itself");
  for (const auto& [name, m] : other.named_children()) {
    if (contains(name)) replace_module(name, m);
    else insert(name, m);
  }
}
ModulePtr ModuleDictImpl::pop(const std::string& name) {
  BRISK_CHECK(contains(name), "ModuleDict", "no module named '", name, "'");
  return unregister_module(name);
}
void ModuleDictImpl::clear() { clear_children(); }
const ModulePtr& ModuleDictImpl::operator[](const std::string& name) const {
  const ModulePtr* m = named_children().find(name);
  BRISK_CHECK(m, "ModuleDict", "no module named '", name, "'");
  return *m;
}

FunctionalImpl::FunctionalImpl(Function function) : Module("Functional"), function_(std::move(function)) {
  BRISK_CHECK(function_ != nullptr, "Functional", "the function is empty");
}
Tensor FunctionalImpl::forward(const Tensor& x) { return function_(x); }

// ---- Linear, Bilinear ------------------------------------------------------------------

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias, TensorOptions opts)
    : Module("Linear"), in_features(in), out_features(out) {
  BRISK_CHECK(in >= 0 && out >= 0, "Linear", "feature counts must be non-negative, got ", in, " and ", out);
  weight = register_parameter("weight", empty({out, in}, opts));
  if (with_bias) bias = register_parameter("bias", empty({out}, opts));
  reset_parameters();
}
void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}
Tensor LinearImpl::forward(const Tensor& x) { return F::linear(x, weight, bias); }
std::string LinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "in_features=" << in_features << ", out_features=" << out_features
     << ", bias=" << (bias.defined() ? "true" : "false");
  return os.str();
}

BilinearImpl::BilinearImpl(int64_t in1, int64_t in2, int64_t out, bool with_bias, TensorOptions opts)
    : Module("Bilinear"), in1_features(in1), in2_features(in2), out_features(out) {
  weight = register_parameter("weight", empty({out, in1, in2}, opts));
  if (with_bias) bias = register_parameter("bias", empty({out}, opts));
  const double bound = in1 > 0 ? 1.0 / std::sqrt(static_cast<double>(in1)) : 0.0;
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}
Tensor BilinearImpl::forward(const Tensor& x1, const Tensor& x2) { return F::bilinear(x1, x2, weight, bias); }
std::string BilinearImpl::extra_repr() const {
  std::ostringstream os;
  os << "in1_features=" << in1_features << ", in2_features=" << in2_features << ", out_features=" << out_features
     << ", bias=" << (bias.defined() ? "true" : "false");
  return os.str();
}

// ---- activations and shape ---------------------------------------------------------------

Tensor FlattenImpl::forward(const Tensor& x) { return x.flatten(start_dim, end_dim); }
std::string FlattenImpl::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

DropoutImpl::DropoutImpl(double p) : Module("Dropout"), p(p) {
  BRISK_CHECK(p >= 0.0 && p <= 1.0, "Dropout", "p must be in [0, 1], got ", p);
}
DropoutImpl::DropoutImpl(const DropoutOptions& o) : DropoutImpl(o.p()) { inplace = o.inplace(); }
Tensor DropoutImpl::forward(const Tensor& x) {
  Tensor y = F::dropout(x, p, is_training());
  if (!inplace || !is_training()) return y;
  Tensor out = x;
  out.copy_(y);
  return out;
}
std::string DropoutImpl::extra_repr() const {
  std::ostringstream os;
  os << "p=" << p;
  if (inplace) os << ", inplace=true";  // brisk's earlier printing otherwise (PyTorch always adds inplace=False)
  return os.str();
}

// ---- Embedding, LayerNorm ------------------------------------------------------------------

namespace {
void check_embedding_options(const char* name, bool scale_grad_by_freq, bool sparse) {
  BRISK_CHECK(!scale_grad_by_freq, name, "scale_grad_by_freq=true is not supported by brisk");
  BRISK_CHECK(!sparse, name, "sparse=true is not supported by brisk (no sparse gradients)");
}
}  // namespace
EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim, std::optional<int64_t> pad, TensorOptions opts)
    : EmbeddingImpl(EmbeddingOptions(num, dim).padding_idx(pad), opts) {}
EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& o, TensorOptions opts)
    : Module("Embedding"), num_embeddings(o.num_embeddings()), embedding_dim(o.embedding_dim()) {
  const int64_t num = num_embeddings, dim = embedding_dim;
  BRISK_CHECK(num >= 0 && dim >= 0, "Embedding", "sizes must be non-negative, got ", num, " and ", dim);
  check_embedding_options("Embedding", o.scale_grad_by_freq(), o.sparse());
  if (const auto pad = o.padding_idx()) {
    BRISK_CHECK(*pad >= -num && *pad < num, "Embedding", "padding_idx ", *pad, " is out of range for ", num,
                " embeddings");
    padding_idx = *pad < 0 ? *pad + num : *pad;
  }
  max_norm = o.max_norm();
  norm_type = o.norm_type();
  if (o._weight().defined()) {  // used as is (PyTorch does not zero the padding row of a given weight)
    BRISK_CHECK(o._weight().dim() == 2 && o._weight().size(0) == num && o._weight().size(1) == dim, "Embedding",
                "_weight must have shape [", num, ", ", dim, "], got ", o._weight().sizes());
    weight = register_parameter("weight", o._weight());
  } else {
    weight = register_parameter("weight", empty({num, dim}, opts));
    reset_parameters();
  }
}
void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).zero_();
  }
}
Tensor EmbeddingImpl::forward(const Tensor& indices) {
  if (!max_norm) return F::embedding(indices, weight, padding_idx);
  return F::embedding(indices, weight,
                      F::EmbeddingFuncOptions().padding_idx(padding_idx).max_norm(max_norm).norm_type(norm_type));
}
std::string EmbeddingImpl::extra_repr() const {
  std::ostringstream os;
  os << num_embeddings << ", " << embedding_dim;
  if (padding_idx) os << ", padding_idx=" << *padding_idx;
  if (max_norm) os << ", max_norm=" << *max_norm;
  if (max_norm && norm_type != 2.0) os << ", norm_type=" << norm_type;
  return os.str();
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& o) {
  BRISK_CHECK(embeddings.defined() && embeddings.dim() == 2, "Embedding::from_pretrained",
              "expected a 2-D embeddings tensor, got ", embeddings.defined() ? embeddings.sizes() : IntArrayRef{});
  Embedding e(EmbeddingOptions(embeddings.size(0), embeddings.size(1))
                  .padding_idx(o.padding_idx())
                  .max_norm(o.max_norm())
                  .norm_type(o.norm_type())
                  .scale_grad_by_freq(o.scale_grad_by_freq())
                  .sparse(o.sparse())
                  ._weight(embeddings),
              TensorOptions(embeddings.dtype()).device(embeddings.device()));
  e->weight.requires_grad_(!o.freeze());
  return e;
}

namespace functional {
Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& o) {
  check_embedding_options("embedding", o.scale_grad_by_freq(), o.sparse());
  std::optional<int64_t> pad = o.padding_idx();
  if (pad && weight.defined() && weight.dim() == 2) {
    const int64_t n = weight.size(0);
    BRISK_CHECK(*pad >= -n && *pad < n, "embedding", "padding_idx ", *pad, " is out of range for ", n, " embeddings");
    if (*pad < 0) pad = *pad + n;
  }
  if (o.max_norm() && indices.defined() && weight.defined() && indices.numel() > 0) {
    BRISK_CHECK(*o.max_norm() > 0, "embedding", "max_norm must be positive, got ", *o.max_norm());
    NoGradGuard no_grad;
    const Tensor flat = indices.reshape({-1}).to(kInt64);
    const Tensor rows = weight.index_select(0, flat);
    const Tensor norms = brisk::norm(rows, o.norm_type(), {1}, true);
    const Tensor scale = where(brisk::gt(norms, *o.max_norm()), brisk::reciprocal(norms + 1e-7) * *o.max_norm(), 1.0);
    Tensor w = weight;
    w.index_put_({flat}, rows * scale);
  }
  return embedding(indices, weight, pad);
}
}  // namespace functional

LayerNormImpl::LayerNormImpl(std::vector<int64_t> shape, double eps, bool affine, TensorOptions opts)
    : LayerNormImpl(std::move(shape), eps, affine, true, opts) {}
LayerNormImpl::LayerNormImpl(std::vector<int64_t> shape, double eps, bool affine, bool with_bias, TensorOptions opts)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(eps), elementwise_affine(affine) {
  BRISK_CHECK(!normalized_shape.empty(), "LayerNorm", "normalized_shape must not be empty");
  if (affine) {
    weight = register_parameter("weight", ones(normalized_shape, opts));
    if (with_bias) bias = register_parameter("bias", zeros(normalized_shape, opts));
  }
}
Tensor LayerNormImpl::forward(const Tensor& x) { return F::layer_norm(x, normalized_shape, weight, bias, eps); }
std::string LayerNormImpl::extra_repr() const {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < normalized_shape.size(); ++i) os << (i ? ", " : "") << normalized_shape[i];
  os << (normalized_shape.size() == 1 ? ",)" : ")") << ", eps=" << eps
     << ", elementwise_affine=" << (elementwise_affine ? "true" : "false");
  return os.str();
}

}  // namespace brisk::nn
