// nn::Module: registration, traversal, conversion, state dicts, printing.
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <ostream>
#include <sstream>

#include "brisk/autograd.h"
#include "brisk/nn/module.h"
#include "brisk/ops.h"
#include "core/autograd_meta.h"
#include "profiler/record.h"

namespace brisk::nn {

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}
Module::Module() = default;

namespace {
std::string demangle(const char* mangled);
std::string class_name(const std::type_info& type) {
  std::string name = demangle(type.name());
  if (auto lt = name.find('<'); lt != std::string::npos) name.resize(lt);  // templates: the name without arguments
  if (auto colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  if (name.size() > 4 && name.ends_with("Impl")) name.resize(name.size() - 4);
  return name;
}
}  // namespace

const std::string& Module::name() const {
  // Named modules set type_name_ in the constructor; the others are named
  // after their dynamic type, which is only known after construction.
  std::call_once(type_name_once_, [this] {
    if (type_name_.empty()) type_name_ = class_name(typeid(*this));
  });
  return type_name_;
}
Module::~Module() = default;

Tensor Module::forward(const Tensor&) {
  BRISK_FAIL("forward", name(), " does not implement forward(const Tensor&)");
}

// ---- registration ---------------------------------------------------------------

void Module::check_new_name(const char* op, const std::string& name) const {
  BRISK_CHECK(!name.empty(), op, "the name must not be empty");
  BRISK_CHECK(name.find('.') == std::string::npos, op, "the name '", name, "' must not contain '.'");
  BRISK_CHECK(!params_.contains(name) && !buffers_.contains(name) && !children_.contains(name), op, "'", name,
              "' is already registered in ", this->name());
}

Tensor Module::register_parameter(std::string name, Tensor t, bool requires_grad) {
  check_new_name("register_parameter", name);
  BRISK_CHECK(t.defined(), "register_parameter", "parameter '", name, "' is undefined");
  BRISK_CHECK(!requires_grad || t.is_floating_point(), "register_parameter", "parameter '", name,
              "' requires grad but has dtype ", t.dtype(), " (only floating point tensors can)");
  if (!t.is_leaf()) t = t.detach();
  t.requires_grad_(requires_grad);
  return params_.insert(std::move(name), t);
}

Tensor Module::register_buffer(std::string name, Tensor t) {
  check_new_name("register_buffer", name);
  BRISK_CHECK(t.defined(), "register_buffer", "buffer '", name, "' is undefined");
  return buffers_.insert(std::move(name), t);
}

void Module::register_module_impl(std::string name, ModulePtr module) {
  check_new_name("register_module", name);
  BRISK_CHECK(module != nullptr, "register_module", "module '", name, "' is null");
  BRISK_CHECK(module.get() != this, "register_module", "a module cannot be its own child ('", name, "')");
  children_.insert(std::move(name), std::move(module));
}

ModulePtr Module::unregister_module(const std::string& name) {
  BRISK_CHECK(children_.contains(name), "unregister_module", "no child module named '", name, "' in ", this->name());
  return children_.pop(name);
}

void Module::replace_module_impl(const std::string& name, ModulePtr module) {
  BRISK_CHECK(children_.contains(name), "replace_module", "no child module named '", name, "' in ", this->name());
  BRISK_CHECK(module != nullptr, "replace_module", "module '", name, "' is null");
  BRISK_CHECK(module.get() != this, "replace_module", "a module cannot be its own child ('", name, "')");
  children_.insert_or_assign(name, std::move(module));
}

// ---- traversal -------------------------------------------------------------------

static std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

void Module::collect_named(bool params, bool recurse, const std::string& prefix, OrderedDict<std::string, Tensor>& out,
                           std::vector<const TensorImpl*>& seen) const {
  for (const auto& [name, t] : params ? params_ : buffers_) {
    if (std::find(seen.begin(), seen.end(), t.impl()) != seen.end()) continue;
    seen.push_back(t.impl());
    out.insert(join(prefix, name), t);
  }
  if (recurse)
    for (const auto& [name, child] : children_) child->collect_named(params, true, join(prefix, name), out, seen);
}

OrderedDict<std::string, Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  std::vector<const TensorImpl*> seen;
  collect_named(true, recurse, "", out, seen);
  return out;
}
std::vector<Tensor> Module::parameters(bool recurse) const { return named_parameters(recurse).values(); }

OrderedDict<std::string, Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<std::string, Tensor> out;
  std::vector<const TensorImpl*> seen;
  collect_named(false, recurse, "", out, seen);
  return out;
}
std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<ModulePtr> Module::children() const { return children_.values(); }

void Module::collect_modules(const std::string& prefix, OrderedDict<std::string, ModulePtr>& out,
                             std::vector<const Module*>& seen) {
  for (const auto& [name, child] : children_) {
    if (std::find(seen.begin(), seen.end(), child.get()) != seen.end()) continue;
    seen.push_back(child.get());
    const std::string full = join(prefix, name);
    out.insert(full, child);
    child->collect_modules(full, out, seen);
  }
}

OrderedDict<std::string, ModulePtr> Module::named_modules() {
  OrderedDict<std::string, ModulePtr> out;
  // A module held by a shared_ptr hands out a shared reference to itself; one
  // on the stack (a plain member) gets a non-owning pointer.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  out.insert("", self);
  std::vector<const Module*> seen{this};
  collect_modules("", out, seen);
  return out;
}
std::vector<ModulePtr> Module::modules() { return named_modules().values(); }

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& [name, child] : children_) child->apply(fn);
  fn(*this);
}

// ---- mode, conversion, gradients ---------------------------------------------------

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

namespace {
// Gives `dst` the data of `src` in place (PyTorch's set_data): every handle
// sharing dst's TensorImpl (module members, optimizers) sees the new data.
// dst is a leaf (parameters are made leaves; buffers take no gradient).
void set_data(const Tensor& dst, const Tensor& src) {
  TensorImpl* d = dst.impl();
  TensorImpl* s = src.impl();
  d->storage = s->storage;
  d->storage_offset = s->storage_offset;
  d->sizes = s->sizes;
  d->strides = s->strides;
  d->numel = s->numel;
  d->dtype = s->dtype;
  d->device = s->device;
  d->is_contiguous = s->is_contiguous;
  // A cached gradient accumulator recorded the old dtype and device.
  if (d->autograd) d->autograd->grad_accumulator.reset();
}
}  // namespace

void Module::convert(const std::function<Tensor(const Tensor&)>& fn) {
  // Convert everything first, then install: a failure leaves the module as it was.
  struct Job {
    Tensor dst, data, grad;
  };
  std::vector<Job> jobs;
  {
    NoGradGuard no_grad;
    std::vector<const TensorImpl*> seen;
    for (const auto& [name, m] : named_modules()) {
      for (auto* dict : {&m->params_, &m->buffers_}) {
        for (const auto& [n, t] : *dict) {
          if (std::find(seen.begin(), seen.end(), t.impl()) != seen.end()) continue;
          seen.push_back(t.impl());
          Tensor data = fn(t);
          if (data.is_same(t)) continue;
          Tensor grad = t.grad().defined() ? fn(t.grad()) : Tensor();
          jobs.push_back({t, data, grad});
        }
      }
    }
  }
  for (auto& j : jobs) {
    set_data(j.dst, j.data);
    if (j.grad.defined()) j.dst.mutable_grad() = j.grad;
  }
}

void Module::to(ScalarType dtype) {
  BRISK_CHECK(is_floating_point(dtype), "Module::to", "expected a floating point dtype, got ", dtype);
  convert([dtype](const Tensor& t) { return t.is_floating_point() ? t.to(dtype) : t; });
}
void Module::to(Device device) {
  convert([device](const Tensor& t) { return t.to(device); });
}
void Module::to(Device device, ScalarType dtype) {
  BRISK_CHECK(is_floating_point(dtype), "Module::to", "expected a floating point dtype, got ", dtype);
  convert([device, dtype](const Tensor& t) { return t.is_floating_point() ? t.to(device, dtype) : t.to(device); });
}

void Module::to(MemoryFormat fmt) {
  BRISK_CHECK(fmt != MemoryFormat::Preserve, "Module::to", "expected Contiguous or ChannelsLast, got Preserve");
  convert([fmt](const Tensor& t) { return t.dim() == 4 ? t.contiguous(fmt) : t; });
}

void Module::zero_grad(bool set_to_none) {
  profiler::detail::ScopedEvent event(profiler::EventKind::UserScope, "Module.zero_grad",
                                      set_to_none ? "set_to_none=true" : "set_to_none=false");
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.mutable_grad() = Tensor();
    } else {
      if (p.grad().grad_fn()) p.mutable_grad() = p.grad().detach();
      NoGradGuard no_grad;
      p.mutable_grad().zero_();
    }
  }
}

// ---- state dict ------------------------------------------------------------------------

void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const auto& [name, t] : params_) out.insert(join(prefix, name), t);
  for (const auto& [name, t] : buffers_) out.insert(join(prefix, name), t);
  for (const auto& [name, child] : children_) child->collect_state(join(prefix, name), out);
}

StateDict Module::state_dict() const {
  StateDict out;
  collect_state("", out);
  return out;
}

namespace {
std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
std::string quoted_list(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", '" : "'") + keys[i] + "'";
  return s;
}
}  // namespace

LoadStateDictResult Module::load_state_dict(const StateDict& dict, bool strict) {
  const StateDict own = state_dict();
  LoadStateDictResult r;
  for (const auto& [name, t] : own)
    if (!dict.contains(name)) r.missing_keys.push_back(name);
  for (const auto& [name, t] : dict)
    if (!own.contains(name)) r.unexpected_keys.push_back(name);
  if (strict && (!r.missing_keys.empty() || !r.unexpected_keys.empty())) {
    std::string msg = "Error(s) loading the state dict of " + name() + ":";
    if (!r.missing_keys.empty()) msg += " missing keys: " + quoted_list(r.missing_keys) + ".";
    if (!r.unexpected_keys.empty()) msg += " unexpected keys: " + quoted_list(r.unexpected_keys) + ".";
    BRISK_FAIL("load_state_dict", msg);
  }
  for (const auto& [name, t] : own) {
    const Tensor* src = dict.find(name);
    if (!src) continue;
    BRISK_CHECK(src->defined(), "load_state_dict", "the value of '", name, "' is undefined");
    BRISK_CHECK(src->sizes() == t.sizes(), "load_state_dict", "size mismatch for '", name,
                "': the state dict has shape ", shape_str(src->sizes()), ", the module has shape ",
                shape_str(t.sizes()));
  }
  NoGradGuard no_grad;
  for (const auto& [name, t] : own) {
    const Tensor* src = dict.find(name);
    if (!src || src->is_same(t)) continue;
    Tensor dst = t;
    dst.copy_(*src);
  }
  return r;
}

// ---- printing ----------------------------------------------------------------------------

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

namespace {
void print_module(std::ostream& os, const Module& m, int indent) {
  const int64_t n = m.num_parameters();
  const std::string count = n > 0 ? "  # " + std::to_string(n) + " parameters" : "";
  const auto& children = m.named_children();
  os << m.name() << '(';
  if (children.empty()) {
    os << m.extra_repr() << ')' << count;
    return;
  }
  os << count << '\n';
  const std::string pad(static_cast<size_t>(indent + 2), ' ');
  const std::string extra = m.extra_repr();
  if (!extra.empty()) os << pad << extra << '\n';
  for (const auto& [name, child] : children) {
    os << pad << '(' << name << "): ";
    print_module(os, *child, indent + 2);
    os << '\n';
  }
  os << std::string(static_cast<size_t>(indent), ' ') << ')';
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const Module& m) {
  print_module(os, m, 0);
  return os;
}

std::string to_string(const Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

// ---- holders ------------------------------------------------------------------------

namespace {
std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : mangled;
  std::free(d);
  return out;
}

}  // namespace

void throw_empty_module_holder(const char* mangled_type) {
  std::string type = demangle(mangled_type);
  if (auto colon = type.rfind("::"); colon != std::string::npos) type = type.substr(colon + 2);
  const std::string holder = type.size() > 4 && type.ends_with("Impl") ? type.substr(0, type.size() - 4) : type;
  throw Error(std::string("ModuleHolder: the ") + holder + " holder is empty (made from nullptr or default-constructed " +
              "without a module); assign it a module first, e.g. `x = " + holder + "(...)`");
}

Tensor AnyModule::forward(const Tensor& x) const {
  BRISK_CHECK(module_ != nullptr, "AnyModule", "forward() on an empty AnyModule");
  if (forward_) return forward_(module_.get(), x);
  BRISK_CHECK(false, "AnyModule", module_->name(),
              "'s forward does not take one tensor and return a tensor, so it cannot be chained in a Sequential");
  return {};
}

}  // namespace brisk::nn
