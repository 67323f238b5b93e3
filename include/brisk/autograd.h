// Reverse-mode automatic differentiation: grad modes, the graph's nodes,
// backward/grad, gradcheck. Tensor's autograd methods (requires_grad_,
// backward, grad, grad_fn, register_hook, ...) are declared in tensor.h.
#pragma once
#include <concepts>
#include <cstdint>
#include <typeinfo>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "brisk/ivalue.h"
#include "brisk/tensor.h"

namespace brisk {

namespace autograd {
namespace tls {
// Note [Grad mode state]: two thread-local flags read by every op front end.
// Inference mode implies grad mode off, so an op checks one flag to decide
// whether it records.
inline thread_local bool t_grad_enabled BRISK_TLS_FAST = true;
inline thread_local bool t_inference_mode BRISK_TLS_FAST = false;
inline thread_local bool t_anomaly_mode BRISK_TLS_FAST = false;
inline thread_local bool t_anomaly_check_nan BRISK_TLS_FAST = true;
}  // namespace tls
}  // namespace autograd

/// Whether ops record the graph on this thread (default: true).
struct GradMode {
  static bool is_enabled() { return autograd::tls::t_grad_enabled; }
  static void set_enabled(bool on) { autograd::tls::t_grad_enabled = on; }
};

/// Sets grad mode for a scope and restores the previous mode.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::is_enabled()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};

/// No graph is recorded in this scope; version counters still count.
struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};
/// Records the graph in this scope even inside a NoGradGuard.
struct EnableGradGuard : AutoGradMode {
  EnableGradGuard() : AutoGradMode(true) {}
};

/// Inference mode: no graph, and tensors created here are inference tensors
/// (no version counter, no view tracking). Saving an inference tensor for
/// backward, or changing one in place outside inference mode, throws.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true)
      : prev_grad_(autograd::tls::t_grad_enabled), prev_inf_(autograd::tls::t_inference_mode) {
    autograd::tls::t_inference_mode = enabled;
    autograd::tls::t_grad_enabled = enabled ? false : prev_grad_;
  }
  ~InferenceMode() {
    autograd::tls::t_grad_enabled = prev_grad_;
    autograd::tls::t_inference_mode = prev_inf_;
  }
  static bool is_enabled() { return autograd::tls::t_inference_mode; }
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;

 private:
  bool prev_grad_, prev_inf_;
};

namespace autograd {

class Node;

/// A gradient flowing into input `input_nr` of `function`.
struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool valid() const { return function != nullptr; }
};

/// Shape, dtype and device of one forward output of a node: the gradient
/// arriving for it is summed to this shape and cast to this dtype.
struct OutputMeta {
  DimVector sizes;
  ScalarType dtype = kFloat;
  Device device;
};

/// Hook on a tensor's gradient: returns a replacement, or an undefined
/// tensor to keep the gradient as it is.
using GradHook = std::function<Tensor(const Tensor&)>;

/// One backward function of the graph (PyTorch's grad_fn).
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  /// "MulBackward0", "AccumulateGrad", ...
  virtual std::string name() const = 0;
  /// Where this node's input gradients go, one edge per forward input
  /// (invalid where that input needs no gradient).
  const std::vector<Edge>& next_edges() const { return next_edges_; }
  /// Number of forward outputs (gradients this node takes).
  size_t num_outputs() const { return out_meta_.size(); }
  const OutputMeta& output_meta(size_t i) const { return out_meta_[i]; }
  /// Order of creation: later nodes run first in backward.
  uint64_t sequence_nr() const { return seq_; }

  // ---- used by the engine and the op front ends -------------------------
  /// Gradients of the inputs (one per next edge) from the gradients of the
  /// outputs (one per output; undefined where none flowed).
  virtual TensorList apply(TensorList&& grads) = 0;
  /// Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}
  /// Whether input i needs a gradient.
  bool needs_input_grad(size_t i) const { return i < next_edges_.size() && next_edges_[i].valid(); }
  std::vector<Edge>& mutable_next_edges() { return next_edges_; }
  std::vector<OutputMeta>& mutable_output_meta() { return out_meta_; }
  /// Hooks run on the gradient of output `nr` before apply (tensor hooks of non-leaf tensors).
  void add_pre_hook(uint32_t nr, GradHook h, uint32_t id) { pre_hooks_.push_back({nr, id, std::move(h)}); }
  bool remove_pre_hook(uint32_t id);
  /// Removes the hook `id` of output `nr` and returns it (empty if none).
  GradHook take_pre_hook(uint32_t nr, uint32_t id);
  /// Runs the pre-hooks of each output on `grads`.
  void run_pre_hooks(TensorList& grads) const;
  bool has_pre_hooks() const { return !pre_hooks_.empty(); }
  /// Whether the engine replaces the undefined gradients of this node's
  /// outputs by zeros before apply (true but for custom functions that
  /// called ctx->set_materialize_grads(false)).
  bool materialize_grads() const { return materialize_grads_; }

 protected:
  bool materialize_grads_ = true;
  std::vector<Edge> next_edges_;
  std::vector<OutputMeta> out_meta_;
  uint64_t seq_;
  struct PreHook {
    uint32_t output_nr, id;
    GradHook fn;
  };
  std::vector<PreHook> pre_hooks_;
};

/// Computes gradients of `outputs` and accumulates them into the `.grad()`
/// of the leaves (PyTorch's torch.autograd.backward). `grad_outputs` may be
/// empty for scalar outputs. retain_graph defaults to create_graph.
void backward(const TensorList& outputs, const TensorList& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const TensorList& inputs = {});

/// Returns the gradients of `outputs` with respect to `inputs` without
/// touching `.grad()` (torch.autograd.grad). With allow_unused, an input not
/// reached by the graph gets an undefined tensor; otherwise that is an error.
TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs = {},
                std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                bool allow_unused = false);

/// Runs `fn` when the backward pass the caller is inside has finished
/// (every node run, the leaves' gradients accumulated): PyTorch's
/// Variable._execution_engine.queue_callback. Call it from a tensor hook or
/// a custom function's backward; a brisk::Error outside a backward pass.
void queue_callback(std::function<void()> fn);

// ---- custom functions (libtorch's torch::autograd::Function<T>) -------------------

/// libtorch's names for a tensor in autograd code and for lists of them.
using Variable = Tensor;
using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;

class CustomFunctionNode;
namespace fn_detail {
class CustomFunctionCall;
}

/// What forward() of a custom Function tells its backward() (libtorch's
/// AutogradContext): tensors to save (version-checked on use), other data,
/// which inputs were changed in place and which outputs carry no gradient.
/// One context per call of apply(), owned by the call's node.
class AutogradContext {
 public:
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  /// Non-tensor state for backward (save tensors with save_for_backward:
  /// tensors stored here get no in-place check and may keep the graph alive).
  std::unordered_map<std::string, IValue> saved_data;

  /// Saves tensors (inputs, outputs or intermediates) for backward. Call
  /// once, in forward.
  void save_for_backward(variable_list to_save);
  /// Marks inputs that forward changed in place: they are returned as
  /// outputs, their version is bumped and their history becomes this call.
  void mark_dirty(const variable_list& inputs);
  /// Marks outputs that are not differentiable (indices, masks): they do not
  /// require grad and backward gets zeros (or undefined) for them.
  void mark_non_differentiable(const variable_list& outputs);
  /// With false, backward gets undefined tensors for outputs whose gradient
  /// did not flow, instead of zeros (default true).
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  /// The tensors saved by save_for_backward, in order. Throws if one of them
  /// was changed in place since it was saved, or after the graph was freed.
  variable_list get_saved_variables() const;
  /// Whether the tensor input `index` (counting tensor arguments only, as in
  /// libtorch) needs a gradient. Valid in forward and in backward.
  bool needs_input_grad(size_t index) const;

  const std::unordered_set<const TensorImpl*>& get_non_differentiable() const { return non_differentiable_; }
  const std::unordered_set<const TensorImpl*>& get_dirty() const { return dirty_; }

 private:
  friend class CustomFunctionNode;
  friend class fn_detail::CustomFunctionCall;
  CustomFunctionNode* node_ = nullptr;
  variable_list to_save_;
  bool saved_called_ = false;
  bool materialize_grads_ = true;
  std::unordered_set<const TensorImpl*> non_differentiable_, dirty_;
  std::vector<Tensor> dirty_tensors_;
};

namespace fn_detail {
using CustomBackward = variable_list (*)(AutogradContext*, variable_list);

/// "MyFn" from typeid(T).name() (demangled).
std::string demangle(const char* mangled);

/// One call of Function<T>::apply (non-template part, custom_function.cpp):
/// the node is made before forward (so ctx->needs_input_grad works there),
/// then finish() gives the outputs their history.
class CustomFunctionCall {
 public:
  /// `name` must outlive the call's node (a static).
  CustomFunctionCall(const std::string& name, CustomBackward backward, std::vector<bool> is_tensor_arg,
                     variable_list inputs);
  ~CustomFunctionCall();
  CustomFunctionCall(const CustomFunctionCall&) = delete;
  CustomFunctionCall& operator=(const CustomFunctionCall&) = delete;
  AutogradContext* ctx();
  /// Wraps forward's outputs: history, dirty inputs, non-differentiable
  /// outputs, saved tensors.
  variable_list finish(variable_list outputs);

 private:
  std::shared_ptr<CustomFunctionNode> node_;
  variable_list inputs_;
  bool executable_ = false;
};

template <class A>
void collect_arg(std::vector<bool>& is_tensor, variable_list& tensors, const A& a) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, Tensor>) {
    is_tensor.push_back(true);
    tensors.push_back(a);
  } else if constexpr (std::is_same_v<D, std::optional<Tensor>>) {
    is_tensor.push_back(true);
    tensors.push_back(a ? *a : Tensor());
  } else if constexpr (std::is_same_v<D, variable_list>) {
    for (const Tensor& t : a) {
      is_tensor.push_back(true);
      tensors.push_back(t);
    }
  } else {
    is_tensor.push_back(false);
  }
}

template <class T>
concept HasStaticName = requires {
  { T::name } -> std::convertible_to<const char*>;
};
template <class T>
std::string custom_function_name() {
  if constexpr (HasStaticName<T>)
    return std::string(T::name);
  else
    return demangle(typeid(T).name());
}
}  // namespace fn_detail

/// A differentiable function with a hand-written backward (libtorch's
/// torch::autograd::Function<T>):
///
///   struct MulConst : autograd::Function<MulConst> {
///     static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
///       ctx->saved_data["k"] = k;
///       return x * k;
///     }
///     static variable_list backward(AutogradContext* ctx, variable_list g) {
///       return {g[0] * ctx->saved_data["k"].toDouble(), Tensor()};
///     }
///   };
///   Tensor y = MulConst::apply(x, 2.0);
///
/// forward runs with grad mode off and returns a Tensor or a variable_list;
/// backward gets one gradient per output and returns one per forward
/// argument (an undefined tensor for non-tensor arguments and inputs that
/// need none; a variable_list argument counts as one per tensor). Under
/// create_graph, backward's ops record, so double backward works when they
/// are differentiable. The node is named after T (or T::name when T has a
/// `static constexpr const char* name`) in profiles, anomaly reports and errors.
template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    using Out = decltype(T::forward(static_cast<AutogradContext*>(nullptr), std::forward<Args>(args)...));
    static_assert(std::is_same_v<std::decay_t<Out>, Tensor> || std::is_same_v<std::decay_t<Out>, variable_list>,
                  "Function<T>::forward must return a Tensor or a variable_list");
    static const std::string fn_name = fn_detail::custom_function_name<T>();
    std::vector<bool> is_tensor;
    variable_list inputs;
    is_tensor.reserve(sizeof...(Args));
    (fn_detail::collect_arg(is_tensor, inputs, args), ...);
    fn_detail::CustomFunctionCall call(
        fn_name, +[](AutogradContext* ctx, variable_list grads) -> variable_list {
          return T::backward(ctx, std::move(grads));
        },
        std::move(is_tensor), std::move(inputs));
    std::decay_t<Out> out;
    {
      AutoGradMode no_grad(false);
      out = T::forward(call.ctx(), std::forward<Args>(args)...);
    }
    if constexpr (std::is_same_v<std::decay_t<Out>, Tensor>) {
      return call.finish({std::move(out)})[0];
    } else {
      return call.finish(std::move(out));
    }
  }
};

/// Anomaly mode: backward checks every node's output gradients for NaN and
/// names the node that produced one (with check_nan false it checks nothing:
/// brisk records no forward stack traces). Per thread.
struct AnomalyMode {
  static bool is_enabled() { return tls::t_anomaly_mode; }
  static bool should_check_nan() { return tls::t_anomaly_check_nan; }
  static void set_enabled(bool enabled, bool check_nan = true) {
    tls::t_anomaly_mode = enabled;
    tls::t_anomaly_check_nan = check_nan;
  }
};
/// Turns anomaly mode on for a scope (libtorch's DetectAnomalyGuard).
class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool check_nan = true)
      : prev_(AnomalyMode::is_enabled()), prev_check_nan_(AnomalyMode::should_check_nan()) {
    AnomalyMode::set_enabled(true, check_nan);
  }
  ~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_, prev_check_nan_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_, prev_check_nan_;
};

/// libtorch also spells the grad-mode guards inside torch::autograd.
using brisk::AutoGradMode;
using brisk::EnableGradGuard;
using brisk::GradMode;
using brisk::InferenceMode;
using brisk::NoGradGuard;

/// Options of gradcheck (PyTorch's defaults).
struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  /// Also check second derivatives (gradgradcheck): the backward pass,
  /// recorded with create_graph, is checked against finite differences.
  bool check_grad_grad = false;
  /// Throw a brisk::Error describing the first mismatch (else return false).
  bool raise_exception = true;
};

/// Compares the analytical Jacobian of `fn` (from backward) with a central
/// finite-difference one, for every input that requires grad. Inputs should
/// be float64. Non-contiguous and broadcast inputs are fine.
bool gradcheck(const std::function<TensorList(const TensorList&)>& fn, const TensorList& inputs,
               const GradcheckOptions& opts = {});
/// gradcheck of a function with one output.
bool gradcheck(const std::function<Tensor(const TensorList&)>& fn, const TensorList& inputs,
               const GradcheckOptions& opts = {});

}  // namespace autograd
}  // namespace brisk
