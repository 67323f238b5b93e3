// Containers (Sequential, ModuleList, ModuleDict) and layers of brisk::nn.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "brisk/nn/activation.h"
#include "brisk/nn/functional.h"
#include "brisk/nn/module.h"

namespace brisk::nn {

// ---- containers ------------------------------------------------------------------

/// Children named "0", "1", ... (or the names given); forward(x) feeds x
/// through each in order. libtorch's spellings:
///
///   nn::Sequential seq(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));
///   nn::Sequential named({{"fc1", nn::Linear(3, 4)}, {"act", nn::Functional(brisk::relu)}});
///   seq->push_back(nn::Dropout(0.5));
///   seq[0]; seq->ptr<nn::LinearImpl>(0); seq->at<nn::LinearImpl>(0).weight;
///
/// Each child's own forward(const Tensor&) (or forward(Tensor)) is called,
/// through AnyModule: a child without a one-tensor forward raises
/// brisk::Error when the sequence runs.
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  /// Modules (holders, shared pointers or AnyModules) named by position.
  template <class... Modules>
    requires(sizeof...(Modules) > 0)
  explicit SequentialImpl(Modules&&... modules) : Module("Sequential") {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  /// Named modules, in order.
  explicit SequentialImpl(OrderedDict<std::string, AnyModule> named_modules);
  SequentialImpl(std::initializer_list<std::pair<std::string, AnyModule>> named_modules);
  /// brisk's earlier form: `Sequential(std::initializer_list<ModulePtr>{...})`.
  SequentialImpl(std::initializer_list<ModulePtr> modules);

  /// Appends a module named by its position.
  void push_back(AnyModule m);
  /// Appends a module under `name` (as an OrderedDict-built nn.Sequential).
  void push_back(std::string name, AnyModule m);
  /// Appends every module of `other` (shared, not copied).
  void extend(const SequentialImpl& other);
  Tensor forward(const Tensor& x) override;
  size_t size() const noexcept { return modules_.size(); }
  bool is_empty() const noexcept { return modules_.empty(); }
  bool empty() const noexcept { return modules_.empty(); }
  /// The i-th module; throws brisk::Error when out of range.
  const ModulePtr& operator[](size_t i) const { return ptr(i); }
  const ModulePtr& ptr(size_t i) const;
  template <class T>
  auto ptr(size_t i) const {
    check_index(i);
    return modules_[i].ptr<T>();
  }
  template <class T>
  auto& at(size_t i) const {
    return *ptr<T>(i);
  }
  /// Iterates over the AnyModules (`m.ptr()` is the module).
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  void check_index(size_t i) const;
  std::vector<AnyModule> modules_;
};

/// The holder of SequentialImpl, with libtorch's named form:
/// `nn::Sequential seq({{"fc", nn::Linear(3, 4)}, {"act", nn::ReLU()}})`.
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  using Impl [[maybe_unused]] = SequentialImpl;
  Sequential() : ModuleHolder<SequentialImpl>() {}
  Sequential(std::initializer_list<std::pair<std::string, AnyModule>> named_modules)
      : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>(named_modules)) {}
};

/// A list of registered modules (children "0", "1", ...). No forward.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <class... Modules>
    requires(sizeof...(Modules) > 0)
  explicit ModuleListImpl(Modules&&... modules) : Module("ModuleList") {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  ModuleListImpl(std::initializer_list<ModulePtr> modules);
  void push_back(ModulePtr m);
  template <class M>
  void push_back(const ModuleHolder<M>& m) {
    push_back(ModulePtr(m.ptr()));
  }
  void extend(const ModuleListImpl& other);
  /// Inserts before position `index` (renumbering the children after it).
  void insert(size_t index, ModulePtr m);
  template <class M>
  void insert(size_t index, const ModuleHolder<M>& m) {
    insert(index, ModulePtr(m.ptr()));
  }
  size_t size() const noexcept { return order_.size(); }
  bool is_empty() const noexcept { return order_.empty(); }
  bool empty() const noexcept { return order_.empty(); }
  const ModulePtr& operator[](size_t i) const { return ptr(i); }
  const ModulePtr& ptr(size_t i) const;
  template <class T>
  auto ptr(size_t i) const {
    auto p = std::dynamic_pointer_cast<module_type_t<T>>(ptr(i));
    BRISK_CHECK(p != nullptr, "ModuleList", "module ", i, " is a ", ptr(i)->name(), ", not the requested type");
    return p;
  }
  template <class T>
  auto& at(size_t i) const {
    return *ptr<T>(i);
  }
  auto begin() const { return order_.begin(); }
  auto end() const { return order_.end(); }

 private:
  void renumber();
  std::vector<ModulePtr> order_;
};
BRISK_MODULE(ModuleList);

/// Registered modules by name, in insertion order. No forward.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  ModuleDictImpl(std::initializer_list<std::pair<std::string, ModulePtr>> modules);
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, ModulePtr>>& modules);
  explicit ModuleDictImpl(const OrderedDict<std::string, ModulePtr>& modules);
  /// Adds `name`; throws brisk::Error when it is already present.
  void insert(std::string name, ModulePtr m);
  template <class M>
  void insert(std::string name, const ModuleHolder<M>& m) {
    insert(std::move(name), ModulePtr(m.ptr()));
  }
  /// Adds or replaces every module of `other`.
  void update(const ModuleDictImpl& other);
  /// Removes `name` and returns its module.
  ModulePtr pop(const std::string& name);
  void clear();
  bool contains(const std::string& name) const { return named_children().contains(name); }
  /// Throws brisk::Error naming the key when absent.
  const ModulePtr& operator[](const std::string& name) const;
  template <class T>
  auto at(const std::string& name) const {
    auto p = std::dynamic_pointer_cast<module_type_t<T>>((*this)[name]);
    BRISK_CHECK(p != nullptr, "ModuleDict", "module '", name, "' is a ", (*this)[name]->name(),
                ", not the requested type");
    return p;
  }
  std::vector<std::string> keys() const { return named_children().keys(); }
  std::vector<ModulePtr> values() const { return named_children().values(); }
  const auto& items() const { return named_children().items(); }
  size_t size() const { return named_children().size(); }
  bool is_empty() const { return named_children().empty(); }
  bool empty() const { return named_children().empty(); }
  auto begin() const { return named_children().begin(); }
  auto end() const { return named_children().end(); }
};
BRISK_MODULE(ModuleDict);

/// A function as a module (libtorch's Functional): `nn::Functional(brisk::relu)`,
/// or with trailing arguments bound, `nn::Functional(brisk::leaky_relu, 0.2)`.
class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;
  explicit FunctionalImpl(Function function);
  template <class F, class A, class... Rest>
  explicit FunctionalImpl(F function, A&& arg, Rest&&... rest)
      : FunctionalImpl(Function([function, arg = std::decay_t<A>(std::forward<A>(arg)),
                                 ... rest = std::decay_t<Rest>(std::forward<Rest>(rest))](Tensor x) {
          return function(std::move(x), arg, rest...);
        })) {}
  Tensor forward(const Tensor& x) override;
  /// Functional is not serializable: it has no state.
 private:
  Function function_;
};
BRISK_MODULE(Functional);

// ---- layers ----------------------------------------------------------------------

/// Options of Linear: `nn::Linear(nn::LinearOptions(3, 4).bias(false))`.
struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features) : in_features_(in_features), out_features_(out_features) {}
  BRISK_ARG(int64_t, in_features);
  BRISK_ARG(int64_t, out_features);
  BRISK_ARG(bool, bias) = true;
};

/// y = x W^T + b with W: (out, in), b: (out). PyTorch's init:
/// kaiming_uniform_(W, a=sqrt(5)), b ~ U(-1/sqrt(in), 1/sqrt(in)).
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true, TensorOptions opts = {});
  explicit LinearImpl(const LinearOptions& options, TensorOptions opts = {})
      : LinearImpl(options.in_features(), options.out_features(), options.bias(), opts) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  int64_t in_features, out_features;
  Tensor weight;  ///< (out, in)
  Tensor bias;    ///< (out), undefined without bias
};
BRISK_MODULE(Linear);

/// Options of Bilinear: `nn::Bilinear(nn::BilinearOptions(3, 4, 5).bias(false))`.
struct BilinearOptions {
  BilinearOptions(int64_t in1_features, int64_t in2_features, int64_t out_features)
      : in1_features_(in1_features), in2_features_(in2_features), out_features_(out_features) {}
  BRISK_ARG(int64_t, in1_features);
  BRISK_ARG(int64_t, in2_features);
  BRISK_ARG(int64_t, out_features);
  BRISK_ARG(bool, bias) = true;
};

/// y = x1^T A x2 + b with A: (out, in1, in2). Init U(-1/sqrt(in1), 1/sqrt(in1)).
class BilinearImpl : public Module {
 public:
  explicit BilinearImpl(const BilinearOptions& options, TensorOptions opts = {})
      : BilinearImpl(options.in1_features(), options.in2_features(), options.out_features(), options.bias(), opts) {}
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true,
           TensorOptions opts = {});
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  std::string extra_repr() const override;
  int64_t in1_features, in2_features, out_features;
  Tensor weight;  ///< (out, in1, in2)
  Tensor bias;    ///< (out)
};
BRISK_MODULE(Bilinear);

class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};
BRISK_MODULE(Identity);

// The activations (ReLU, GELU, Softmax, ...) are in brisk/nn/activation.h.

/// Flattens dims start_dim..end_dim (default: all but the batch dim).
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};
BRISK_MODULE(Flatten);

/// Options of Dropout, Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout:
/// `nn::Dropout(nn::DropoutOptions().p(0.2))`, `nn::Dropout2d(0.3)`.
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}  // NOLINT: implicit, as libtorch
  BRISK_ARG(double, p);
  /// Overwrite the input (training mode) instead of returning a new tensor.
  BRISK_ARG(bool, inplace) = false;
};

/// Zeroes each element with probability p in training mode and scales the
/// rest by 1/(1-p); the identity in eval mode.
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  explicit DropoutImpl(const DropoutOptions& options);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
  bool inplace = false;
};
BRISK_MODULE(Dropout);

/// Options of Embedding (libtorch's EmbeddingOptions).
struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  BRISK_ARG(int64_t, num_embeddings);
  BRISK_ARG(int64_t, embedding_dim);
  /// This row starts at zero and gets no gradient (negative: from the end).
  BRISK_ARG(std::optional<int64_t>, padding_idx);
  /// Rows looked up whose norm_type-norm exceeds max_norm are renormalized
  /// in place to max_norm (as PyTorch: before the lookup, without gradient).
  BRISK_ARG(std::optional<double>, max_norm);
  BRISK_ARG(double, norm_type) = 2.0;
  /// Not supported: brisk refuses true.
  BRISK_ARG(bool, scale_grad_by_freq) = false;
  /// Not supported (brisk has no sparse gradients): brisk refuses true.
  BRISK_ARG(bool, sparse) = false;
  /// The initial weight (num_embeddings, embedding_dim), used as is.
  BRISK_ARG(Tensor, _weight);
};

/// Options of Embedding::from_pretrained.
struct EmbeddingFromPretrainedOptions {
  /// Keep the weight fixed (requires_grad false).
  BRISK_ARG(bool, freeze) = true;
  BRISK_ARG(std::optional<int64_t>, padding_idx);
  BRISK_ARG(std::optional<double>, max_norm);
  BRISK_ARG(double, norm_type) = 2.0;
  BRISK_ARG(bool, scale_grad_by_freq) = false;
  BRISK_ARG(bool, sparse) = false;
};

namespace functional {
/// Options of F::embedding(input, weight, options).
struct EmbeddingFuncOptions {
  BRISK_ARG(std::optional<int64_t>, padding_idx);
  BRISK_ARG(std::optional<double>, max_norm);
  BRISK_ARG(double, norm_type) = 2.0;
  BRISK_ARG(bool, scale_grad_by_freq) = false;
  BRISK_ARG(bool, sparse) = false;
};
/// embedding with libtorch's options; max_norm renormalizes the looked-up
/// rows of `weight` in place first.
Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& options);
}  // namespace functional

/// A lookup table: forward(indices) -> indices.shape + [embedding_dim].
/// Init N(0, 1); the padding_idx row starts at zero and gets no gradient.
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            TensorOptions opts = {});
  explicit EmbeddingImpl(const EmbeddingOptions& options, TensorOptions opts = {});
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  void reset_parameters();
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  std::optional<double> max_norm;
  double norm_type = 2.0;
  Tensor weight;  ///< (num_embeddings, embedding_dim)
};

/// The holder of EmbeddingImpl, with libtorch's static
/// `nn::Embedding::from_pretrained(weights, EmbeddingFromPretrainedOptions().freeze(false))`.
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  using Impl [[maybe_unused]] = EmbeddingImpl;
  /// An Embedding whose weight is `embeddings` (2-D), shared, not copied.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

/// Normalizes over the trailing dims `normalized_shape` (biased variance),
/// then weight * x + bias (ones and zeros at init) when elementwise_affine.
/// Options of LayerNorm: `nn::LayerNorm(nn::LayerNormOptions({8}).eps(1e-6))`.
struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  BRISK_ARG(std::vector<int64_t>, normalized_shape);
  BRISK_ARG(double, eps) = 1e-5;
  BRISK_ARG(bool, elementwise_affine) = true;
  /// PyTorch's bias=False (a weight without a bias) when false.
  BRISK_ARG(bool, bias) = true;
};

class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options, TensorOptions opts = {})
      : LayerNormImpl(options.normalized_shape(), options.eps(), options.elementwise_affine(), options.bias(), opts) {}
  LayerNormImpl(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
            TensorOptions opts = {});
  /// PyTorch's bias=False: an affine weight without a bias.
  LayerNormImpl(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine, bool bias,
            TensorOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};
BRISK_MODULE(LayerNorm);

}  // namespace brisk::nn
