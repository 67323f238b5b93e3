// brisk::nn::Module: the base of every layer, with registered parameters,
// buffers and child modules (PyTorch's torch.nn.Module). See docs/design/nn.md.
#pragma once
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brisk/io.h"
#include "brisk/tensor.h"

namespace brisk::nn {

/// A map that remembers insertion order (libtorch's OrderedDict): the type of
/// named_parameters(), named_buffers(), state_dict(). Iterating yields
/// `std::pair<std::string, V>`, so `for (auto& [name, t] : m.named_parameters())`.
template <class V>
class OrderedDict {
 public:
  using Item = std::pair<std::string, V>;
  OrderedDict() = default;
  OrderedDict(std::initializer_list<Item> items) {
    for (const auto& it : items) insert(it.first, it.second);
  }

  /// Adds `key`, or replaces its value when it is already present.
  V& insert(std::string key, V value) {
    auto f = index_.find(key);
    if (f != index_.end()) return items_[f->second].second = std::move(value);
    index_.emplace(key, items_.size());
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().second;
  }
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  /// The value of `key`, or null.
  const V* find(const std::string& key) const {
    auto f = index_.find(key);
    return f == index_.end() ? nullptr : &items_[f->second].second;
  }
  V* find(const std::string& key) {
    auto f = index_.find(key);
    return f == index_.end() ? nullptr : &items_[f->second].second;
  }
  /// The value of `key`; throws brisk::Error naming the key when absent.
  const V& at(const std::string& key) const {
    const V* v = find(key);
    BRISK_CHECK(v, "OrderedDict", "key '", key, "' not found");
    return *v;
  }
  V& at(const std::string& key) { return const_cast<V&>(std::as_const(*this).at(key)); }
  const V& operator[](const std::string& key) const { return at(key); }
  V& operator[](const std::string& key) { return at(key); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    k.reserve(items_.size());
    for (const auto& it : items_) k.push_back(it.first);
    return k;
  }
  std::vector<V> values() const {
    std::vector<V> v;
    v.reserve(items_.size());
    for (const auto& it : items_) v.push_back(it.second);
    return v;
  }
  const std::vector<Item>& items() const { return items_; }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

/// Parameters and buffers by dotted name ("fc1.weight", "0.bias").
/// Parameters and buffers by dotted name: the same type brisk::save writes
/// and brisk::load returns (include/brisk/io.h).
using StateDict = ::brisk::StateDict;

class Module;
using ModulePtr = std::shared_ptr<Module>;

/// What a non-strict load_state_dict did not match.
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;     ///< in the module, not in the dict
  std::vector<std::string> unexpected_keys;  ///< in the dict, not in the module
};

/// The base of all layers. Modules are held by std::shared_ptr and are not
/// copyable (parameters are shared handles).
///
/// Registration rule: only what goes through register_parameter,
/// register_buffer and register_module is seen by parameters(), to(),
/// state_dict(), train()/eval() and printing. A layer kept in a plain
/// std::vector member (or a Tensor member never registered) is invisible to
/// all of them: use ModuleList / ModuleDict / Sequential instead.
///
/// Single-input modules override `Tensor forward(const Tensor&)`; that is the
/// interface Sequential chains. Modules with other signatures define their
/// own `forward` (and leave this one throwing).
class Module : public std::enable_shared_from_this<Module> {
 public:
  /// `type_name` is what printing shows ("Linear").
  explicit Module(std::string type_name = "Module");
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return type_name_; }

  /// The forward of a module that takes and returns one tensor. The default
  /// throws: modules with another signature do not override it.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // ---- registration -------------------------------------------------------
  /// Registers `t` as a parameter (a leaf; detached when it has history) and
  /// returns the registered handle: `weight = register_parameter("weight", w)`.
  /// The member and the registry then share one tensor.
  Tensor register_parameter(std::string name, Tensor t, bool requires_grad = true);
  /// Registers a buffer (state that is not trained: saved in state_dict,
  /// converted by to()).
  Tensor register_buffer(std::string name, Tensor t);
  /// Registers a child module and returns it (`fc1 = register_module("fc1", fc1)`).
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    register_module_impl(std::move(name), module);
    return module;
  }

  // ---- traversal ----------------------------------------------------------
  /// All parameters (each shared tensor once), this module's first, then the
  /// children's in registration order.
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  /// Direct children.
  std::vector<ModulePtr> children() const;
  const OrderedDict<ModulePtr>& named_children() const { return children_; }
  /// This module and all descendants in pre-order (each module once).
  std::vector<ModulePtr> modules();
  /// As modules(), with dotted names; this module's name is "".
  OrderedDict<ModulePtr> named_modules();
  /// Runs fn on every descendant and then on this module (PyTorch's order).
  void apply(const std::function<void(Module&)>& fn);

  // ---- mode, conversion, gradients -----------------------------------------
  /// Sets training mode here and in all descendants.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  /// Converts floating point parameters and buffers (and their gradients) in
  /// place: handles held elsewhere (members, optimizers) see the new data.
  void to(ScalarType dtype);
  /// Moves all parameters and buffers; throws brisk::Error (leaving the
  /// module unchanged) when brisk cannot use the device.
  void to(Device device);
  void to(Device device, ScalarType dtype);
  /// Sets every parameter's gradient to none (the default) or to zero.
  void zero_grad(bool set_to_none = true);

  // ---- serialization --------------------------------------------------------
  /// Parameters then buffers of this module, then each child's, by dotted
  /// name. The tensors are the module's own (not copies).
  StateDict state_dict() const;
  /// Copies values into the module's tensors (dtype converted, shapes must
  /// match). strict: throws brisk::Error naming every missing and unexpected
  /// key. A shape mismatch always throws, naming the key and both shapes.
  /// Nothing is copied unless every check passes.
  LoadStateDictResult load_state_dict(const StateDict& dict, bool strict = true);

  // ---- printing ---------------------------------------------------------------
  /// The text inside the parentheses: "in_features=3, out_features=4, bias=true".
  virtual std::string extra_repr() const { return ""; }
  /// Number of parameter elements (recursive, shared tensors once).
  int64_t num_parameters() const;

 protected:
  OrderedDict<Tensor>& own_parameters() { return params_; }
  OrderedDict<Tensor>& own_buffers() { return buffers_; }

 private:
  void register_module_impl(std::string name, ModulePtr module);
  void check_new_name(const char* op, const std::string& name) const;
  void collect_modules(const std::string& prefix, OrderedDict<ModulePtr>& out, std::vector<const Module*>& seen);
  void collect_named(bool params, bool recurse, const std::string& prefix, OrderedDict<Tensor>& out,
                     std::vector<const TensorImpl*>& seen) const;
  void collect_state(const std::string& prefix, StateDict& out) const;
  void convert(const std::function<Tensor(const Tensor&)>& fn);

  std::string type_name_;
  bool training_ = true;
  OrderedDict<Tensor> params_;
  OrderedDict<Tensor> buffers_;
  OrderedDict<ModulePtr> children_;
};

/// PyTorch's format, with parameter counts:
///   Sequential(  # 1290 parameters
///     (0): Linear(in_features=128, out_features=10, bias=true)  # 1290 parameters
///     (1): ReLU()
///   )
std::ostream& operator<<(std::ostream& os, const Module& m);
std::string to_string(const Module& m);

}  // namespace brisk::nn
