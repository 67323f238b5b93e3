// Containers (Sequential, ModuleList, ModuleDict) and layers of brisk::nn.
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "brisk/nn/module.h"

namespace brisk::nn {

// ---- containers ------------------------------------------------------------------

/// Children named "0", "1", ...; forward(x) feeds x through each in order
/// (every child must implement forward(const Tensor&)).
class Sequential : public Module {
 public:
  Sequential() : Module("Sequential") {}
  Sequential(std::initializer_list<ModulePtr> modules);
  /// Appends a module named by its position.
  void push_back(ModulePtr m);
  /// Appends a module under `name` (as an OrderedDict-built nn.Sequential).
  void push_back(std::string name, ModulePtr m);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }
  const ModulePtr& operator[](size_t i) const;
  auto begin() const { return order_.begin(); }
  auto end() const { return order_.end(); }

 private:
  std::vector<ModulePtr> order_;
};

/// A list of registered modules (children "0", "1", ...). No forward.
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  ModuleList(std::initializer_list<ModulePtr> modules);
  void push_back(ModulePtr m);
  size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }
  const ModulePtr& operator[](size_t i) const;
  auto begin() const { return order_.begin(); }
  auto end() const { return order_.end(); }

 private:
  std::vector<ModulePtr> order_;
};

/// Registered modules by name, in insertion order. No forward.
class ModuleDict : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  ModuleDict(std::initializer_list<std::pair<std::string, ModulePtr>> modules);
  void insert(std::string name, ModulePtr m);
  bool contains(const std::string& name) const { return named_children().contains(name); }
  /// Throws brisk::Error naming the key when absent.
  const ModulePtr& operator[](const std::string& name) const;
  size_t size() const { return named_children().size(); }
  auto begin() const { return named_children().begin(); }
  auto end() const { return named_children().end(); }
};

// ---- layers ----------------------------------------------------------------------

/// y = x W^T + b with W: (out, in), b: (out). PyTorch's init:
/// kaiming_uniform_(W, a=sqrt(5)), b ~ U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, TensorOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  void reset_parameters();
  int64_t in_features, out_features;
  Tensor weight;  ///< (out, in)
  Tensor bias;    ///< (out), undefined without bias
};

/// y = x1^T A x2 + b with A: (out, in1, in2). Init U(-1/sqrt(in1), 1/sqrt(in1)).
class Bilinear : public Module {
 public:
  Bilinear(int64_t in1_features, int64_t in2_features, int64_t out_features, bool bias = true,
           TensorOptions opts = {});
  Tensor forward(const Tensor& x1, const Tensor& x2);
  Tensor operator()(const Tensor& x1, const Tensor& x2) { return forward(x1, x2); }
  std::string extra_repr() const override;
  int64_t in1_features, in2_features, out_features;
  Tensor weight;  ///< (out, in1, in2)
  Tensor bias;    ///< (out)
};

class Identity : public Module {
 public:
  Identity() : Module("Identity") {}
  Tensor forward(const Tensor& x) override { return x; }
};

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& x) override;
};

/// approximate: "none" (erf) or "tanh".
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string approximate;
};

class SiLU : public Module {
 public:
  SiLU() : Module("SiLU") {}
  Tensor forward(const Tensor& x) override;
};

/// x * tanh(softplus(x)) (torch.nn.Mish).
class Mish : public Module {
 public:
  explicit Mish(bool inplace = false) : Module("Mish"), inplace(inplace) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  bool inplace;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& x) override;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim) : Module("Softmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};

class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(int64_t dim) : Module("LogSoftmax"), dim(dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim;
};

/// Flattens dims start_dim..end_dim (default: all but the batch dim).
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t start_dim, end_dim;
};

/// Zeroes each element with probability p in training mode and scales the
/// rest by 1/(1-p); the identity in eval mode.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
};

/// A lookup table: forward(indices) -> indices.shape + [embedding_dim].
/// Init N(0, 1); the padding_idx row starts at zero and gets no gradient.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt,
            TensorOptions opts = {});
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
  Tensor weight;  ///< (num_embeddings, embedding_dim)
};

/// Normalizes over the trailing dims `normalized_shape` (biased variance),
/// then weight * x + bias (ones and zeros at init) when elementwise_affine.
class LayerNorm : public Module {
 public:
  LayerNorm(std::vector<int64_t> normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
            TensorOptions opts = {});
  /// PyTorch's bias=False: an affine weight without a bias.
  LayerNorm(std::vector<int64_t> normalized_shape, double eps, bool elementwise_affine, bool bias,
            TensorOptions opts = {});
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};

}  // namespace brisk::nn
