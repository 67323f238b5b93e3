// brisk::nn::Module: the base of every layer, with registered parameters,
// buffers and child modules (PyTorch's torch.nn.Module). See docs/design/nn.md.
#pragma once
#include <concepts>
#include <cstddef>
#include <functional>
#include <type_traits>
#include <typeinfo>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "brisk/io.h"
#include "brisk/ordered_dict.h"
#include "brisk/tensor.h"

namespace brisk::nn {

/// Parameters and buffers by dotted name: the same type brisk::save writes
/// and brisk::load returns (include/brisk/io.h).
using StateDict = ::brisk::StateDict;

class Module;
using ModulePtr = std::shared_ptr<Module>;
template <class Contained>
class ModuleHolder;

/// The module class of `T`: T itself, or the class a holder holds
/// (module_type_t<nn::Linear> is nn::LinearImpl).
template <class T>
struct module_type {
  using type = T;
};
template <class T>
  requires requires { typename T::ContainedType; }
struct module_type<T> {
  using type = typename T::ContainedType;
};
template <class T>
using module_type_t = typename module_type<T>::type;

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
  explicit Module(std::string type_name);
  /// A module named after its class, as libtorch's: `struct NetImpl :
  /// nn::Module` prints as "Net" (the namespace and an "Impl" suffix dropped).
  Module();
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// The name printing shows: the one given to the constructor, else the
  /// class name (computed once, on first use).
  const std::string& name() const;

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
  /// libtorch's form: `fc1 = register_module("fc1", nn::Linear(3, 4))`
  /// (the holder member `fc1` and the registry share the module).
  template <class M>
  std::shared_ptr<M> register_module(std::string name, const ModuleHolder<M>& module) {
    register_module_impl(std::move(name), module.ptr());
    return module.ptr();
  }

  /// Removes the child `name` and returns it; throws brisk::Error when absent.
  ModulePtr unregister_module(const std::string& name);
  /// Replaces the child `name` with `module` (keeping its place) and returns it.
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> module) {
    replace_module_impl(name, module);
    return module;
  }
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, const ModuleHolder<M>& module) {
    replace_module_impl(name, module.ptr());
    return module.ptr();
  }

  // ---- traversal ----------------------------------------------------------
  /// All parameters (each shared tensor once), this module's first, then the
  /// children's in registration order.
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<std::string, Tensor> named_buffers(bool recurse = true) const;
  /// Direct children.
  std::vector<ModulePtr> children() const;
  const OrderedDict<std::string, ModulePtr>& named_children() const { return children_; }
  /// This module and all descendants in pre-order (each module once).
  std::vector<ModulePtr> modules();
  /// As modules(), with dotted names; this module's name is "".
  OrderedDict<std::string, ModulePtr> named_modules();
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
  /// libtorch's signatures (`non_blocking` is accepted; copies to and from
  /// CUDA are ordered on the current stream either way).
  void to(ScalarType dtype, bool /*non_blocking*/) { to(dtype); }
  void to(Device device, bool /*non_blocking*/) { to(device); }
  void to(Device device, ScalarType dtype, bool /*non_blocking*/) { to(device, dtype); }
  /// Converts every 4-d parameter and buffer (and its gradient) to `fmt`, in
  /// place: `model->to(brisk::MemoryFormat::ChannelsLast)` keeps convolution
  /// weights NHWC, so channels_last inputs stay channels_last through the
  /// model (PyTorch's `model.to(memory_format=torch.channels_last)`).
  void to(MemoryFormat fmt);

  /// This module as `T` (a module class or its holder), or null when it is
  /// not one: `if (auto* lin = m->as<nn::Linear>()) ...`.
  template <class T>
  auto* as() noexcept {
    return dynamic_cast<module_type_t<T>*>(this);
  }
  template <class T>
  const auto* as() const noexcept {
    return const_cast<Module*>(this)->as<T>();
  }
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
  /// Removes every child (containers that renumber them).
  void clear_children() { children_.clear(); }
  OrderedDict<std::string, Tensor>& own_parameters() { return params_; }
  OrderedDict<std::string, Tensor>& own_buffers() { return buffers_; }

 private:
  void register_module_impl(std::string name, ModulePtr module);
  void replace_module_impl(const std::string& name, ModulePtr module);
  void check_new_name(const char* op, const std::string& name) const;
  void collect_modules(const std::string& prefix, OrderedDict<std::string, ModulePtr>& out, std::vector<const Module*>& seen);
  void collect_named(bool params, bool recurse, const std::string& prefix, OrderedDict<std::string, Tensor>& out,
                     std::vector<const TensorImpl*>& seen) const;
  void collect_state(const std::string& prefix, StateDict& out) const;
  void convert(const std::function<Tensor(const Tensor&)>& fn);

  mutable std::string type_name_;
  mutable std::once_flag type_name_once_;
  bool training_ = true;
  OrderedDict<std::string, Tensor> params_;
  OrderedDict<std::string, Tensor> buffers_;
  OrderedDict<std::string, ModulePtr> children_;
};

/// PyTorch's format, with parameter counts:
///   Sequential(  # 1290 parameters
///     (0): Linear(in_features=128, out_features=10, bias=true)  # 1290 parameters
///     (1): ReLU()
///   )
std::ostream& operator<<(std::ostream& os, const Module& m);
std::string to_string(const Module& m);

// ---- holders ------------------------------------------------------------------------

/// Internal: the error of an empty holder, out of line.
[[noreturn]] void throw_empty_module_holder(const char* mangled_type);

/// A shared, copyable handle to a module (libtorch's ModuleHolder): what
/// `nn::Linear` is, around the module class `nn::LinearImpl`.
///
///   nn::Linear lin(3, 4);          // makes a LinearImpl
///   nn::Linear same = lin;         // copies the handle: one module
///   lin->weight; lin(x); lin->forward(x);
///   nn::Linear later = nullptr;    // empty; using it throws brisk::Error
///
/// `lin(x)` is `lin->forward(x)`, inline: no extra cost. A holder converts to
/// `std::shared_ptr<LinearImpl>` (ptr()) wherever one is expected. Declare
/// one for a module of your own with BRISK_MODULE (or TORCH_MODULE):
///
///   struct NetImpl : brisk::nn::Module { ... };
///   BRISK_MODULE(Net);             // Net is ModuleHolder<NetImpl>
template <class Contained>
class ModuleHolder {
 public:
  using ContainedType = Contained;

  /// Constructs the module with its default arguments. A module without a
  /// default constructor must be given arguments, or `nullptr` for an empty
  /// holder (`nn::Linear lin = nullptr;`).
  ModuleHolder() : impl_(default_construct()) {}
  /// The empty holder.
  ModuleHolder(std::nullptr_t) noexcept {}  // NOLINT: implicit, as libtorch
  /// Shares an existing module.
  ModuleHolder(std::shared_ptr<Contained> module) noexcept : impl_(std::move(module)) {}  // NOLINT
  /// Constructs the module from `args` (`nn::Linear(3, 4)`,
  /// `nn::Conv2d(nn::Conv2dOptions(1, 8, 3).padding(1))`).
  template <class Head, class... Tail>
    requires(!(sizeof...(Tail) == 0 &&
               (std::is_base_of_v<ModuleHolder, std::decay_t<Head>> ||
                std::is_convertible_v<Head&&, std::shared_ptr<Contained>> ||
                std::is_same_v<std::decay_t<Head>, std::nullptr_t>)) &&
             std::is_constructible_v<Contained, Head&&, Tail&&...>)
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}

  Contained* operator->() { return get(); }
  const Contained* operator->() const { return get(); }
  Contained& operator*() { return *get(); }
  const Contained& operator*() const { return *get(); }
  /// The module; throws brisk::Error when the holder is empty.
  Contained* get() const {
    if (!impl_) [[unlikely]]
      throw_empty_module_holder(typeid(Contained).name());
    return impl_.get();
  }
  /// The shared pointer (null when empty; does not throw).
  const std::shared_ptr<Contained>& ptr() const noexcept { return impl_; }
  operator std::shared_ptr<Contained>() const noexcept { return impl_; }  // NOLINT: implicit, as libtorch
  bool is_empty() const noexcept { return impl_ == nullptr; }
  explicit operator bool() const noexcept { return impl_ != nullptr; }

  /// `module(args...)` is `module->forward(args...)`.
  template <class... Args>
  decltype(auto) operator()(Args&&... args) {
    return get()->forward(std::forward<Args>(args)...);
  }
  /// Indexing of containers: `seq[0]`, `dict["fc"]`.
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

 private:
  static std::shared_ptr<Contained> default_construct() {
    static_assert(std::is_default_constructible_v<Contained>,
                  "this module needs constructor arguments: pass them, or initialize the holder with nullptr "
                  "(`nn::Linear lin = nullptr;`) and assign it later");
    return std::make_shared<Contained>();
  }
  std::shared_ptr<Contained> impl_;
};

template <class M>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<M>& h) {
  return os << *h;
}
template <class M>
std::string to_string(const ModuleHolder<M>& h) {
  return to_string(static_cast<const Module&>(*h));
}

/// A module behind one interface, `Tensor forward(const Tensor&)`, called on
/// the module's own type (so a user module whose forward takes `Tensor` by
/// value works as well as one overriding Module::forward). What Sequential
/// holds (libtorch's AnyModule, for the one-tensor signature).
class AnyModule {
 public:
  AnyModule() = default;
  template <class M>
    requires std::is_base_of_v<Module, M>
  AnyModule(std::shared_ptr<M> module) : module_(std::move(module)) {  // NOLINT: implicit, as libtorch
    BRISK_CHECK(module_ != nullptr, "AnyModule", "the module is null");
    if constexpr (requires(M & m, const Tensor& x) {
                    { m.forward(x) } -> std::convertible_to<Tensor>;
                  })
      forward_ = [](Module* m, const Tensor& x) -> Tensor { return static_cast<M*>(m)->forward(x); };
  }
  template <class M>
  AnyModule(const ModuleHolder<M>& holder) : AnyModule(holder.ptr()) {}  // NOLINT: implicit, as libtorch

  /// Runs the module; throws brisk::Error when its forward does not take one
  /// tensor and return one.
  Tensor forward(const Tensor& x) const;
  bool is_empty() const noexcept { return module_ == nullptr; }
  const ModulePtr& ptr() const noexcept { return module_; }
  /// The module as `T` (a module class or holder); throws when it is another type.
  template <class T>
  auto ptr() const {
    auto p = std::dynamic_pointer_cast<module_type_t<T>>(module_);
    BRISK_CHECK(p != nullptr, "AnyModule", "the module is a ", module_ ? module_->name() : std::string("null"),
                ", not the requested type");
    return p;
  }
  template <class T>
  auto& get() const {
    return *ptr<T>();
  }

 private:
  ModulePtr module_;
  Tensor (*forward_)(Module*, const Tensor&) = nullptr;
};

}  // namespace brisk::nn

/// Declares `Name` as the holder of `ImplType` (libtorch's TORCH_MODULE_IMPL).
#define BRISK_MODULE_IMPL(Name, ImplType)                                  \
  class Name : public ::brisk::nn::ModuleHolder<ImplType> {               \
   public:                                                                \
    using ::brisk::nn::ModuleHolder<ImplType>::ModuleHolder;              \
    using Impl [[maybe_unused]] = ImplType;                               \
  }
/// Declares `Name` as the holder of `Name##Impl` (libtorch's TORCH_MODULE).
#define BRISK_MODULE(Name) BRISK_MODULE_IMPL(Name, Name##Impl)

// libtorch's spellings, so that code ports by renaming the namespace (not
// defined when libtorch's own headers came first).
#ifndef TORCH_MODULE
#define TORCH_MODULE(Name) BRISK_MODULE(Name)
#define TORCH_MODULE_IMPL(Name, ImplType) BRISK_MODULE_IMPL(Name, ImplType)
#endif
