// How op front ends record the graph: should_record() decides, record()
// builds a node from a backward lambda written next to the forward.
//
//   Tensor r = ...forward...;
//   if (autograd::should_record(a, b))
//     autograd::record("MulBackward0", {r}, {a, b}, {save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
//       const Tensor& g = c.grad(0);
//       return {c.needs(0) ? g * c.saved(1) : Tensor(), c.needs(1) ? g * c.saved(0) : Tensor()};
//     });
//
// The lambda returns one gradient per input (undefined where not needed).
// Gradients may keep the broadcast shape or the compute dtype: the engine sums
// them to each input's shape and casts them to its dtype.
#pragma once
#include <initializer_list>
#include <optional>
#include <utility>

#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "core/autograd_meta.h"

namespace brisk::autograd {

inline DimVector to_dims(IntArrayRef a) { return DimVector(a.begin(), a.end()); }

// ---- deciding -------------------------------------------------------------
/// For a view whose root requires grad: regenerates the view's history if
/// the root (or another view of it) was changed in place since the history
/// was set (Note [View + in-place]); returns whether the view requires grad.
bool refresh_view(const Tensor& view);
BRISK_ALWAYS_INLINE bool needs_grad(const Tensor& t) {
  if (!t.defined()) return false;
  const TensorImpl* impl = t.impl();
  if (impl->requires_grad) return true;
  // A view made before its root required grad joins the graph once the root
  // was changed in place (buf.narrow(...).copy_(x) with x requiring grad).
  return BRISK_UNLIKELY(impl->view_base && impl->view_base->requires_grad) && refresh_view(t);
}
BRISK_ALWAYS_INLINE bool needs_grad(const Scalar&) { return false; }
inline bool needs_grad(const std::optional<Tensor>& t) { return t && needs_grad(*t); }
inline bool needs_grad(const TensorList& ts) {
  for (const Tensor& t : ts)
    if (needs_grad(t)) return true;
  return false;
}
/// True when grad mode is on and an argument requires grad.
template <class... Ts>
BRISK_ALWAYS_INLINE bool should_record(const Ts&... ts) {
  return GradMode::is_enabled() && (needs_grad(ts) || ...);
}

/// Before an in-place op on `self`: refuses leaves that require grad (in
/// grad mode), views whose history cannot be rewritten (made in no-grad mode
/// or by a multi-output op) and inference tensors outside inference mode.
void check_inplace_slow(const Tensor& self, const char* op);
BRISK_ALWAYS_INLINE void check_inplace(const Tensor& self, const char* op) {
  const TensorImpl* impl = self.impl();
  if (BRISK_UNLIKELY(impl->requires_grad || impl->is_inference || impl->view_base)) check_inplace_slow(self, op);
}
/// out= variants do not record: refuse when an input requires grad (in grad mode).
template <class... Ts>
inline void check_out(const char* op, const Ts&... ts) {
  if (BRISK_UNLIKELY(should_record(ts...)))
    BRISK_FAIL(op, "out= arguments don't support automatic differentiation, but one of the arguments requires grad");
}

/// An op that records a node but computes in a dtype that cannot carry
/// gradients (sum(x, dtype=int64) of an x that requires grad) is refused, as
/// PyTorch 2.x does; call it in no-grad mode or convert explicitly (to() is
/// allowed and cuts the graph). Call only when should_record() holds.
inline void check_differentiable_dtype(const char* op, ScalarType dtype) {
  BRISK_CHECK(is_floating_point(dtype), op, "Autograd not support dtype: ", dtype,
              " (the input requires grad; call it under NoGradGuard or convert the result with to())");
}

// ---- saved tensors ----------------------------------------------------------
/// A tensor saved for backward, with the version it had when saved.
class SavedTensor {
 public:
  SavedTensor() = default;
  /// `is_output`: t is an output of `owner` (stored without its history to
  /// avoid a reference cycle, re-attached on unpack).
  SavedTensor(const Tensor& t, bool is_output, const char* node_name);
  /// The tensor; throws if it was freed (graph released) or modified in place.
  Tensor unpack(Node& owner, size_t index) const;
  void release() {
    data_.reset();
    released_ = true;
  }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool released_ = false;
  bool requires_grad_ = false;
  bool was_leaf_ = false;
};

struct SaveSpec {
  const Tensor* t;
  bool is_output;
};
inline SaveSpec save(const Tensor& t) { return {&t, false}; }
/// Saves an output of the op being recorded (e.g. exp saves its result).
inline SaveSpec save_output(const Tensor& t) { return {&t, true}; }

// ---- nodes ------------------------------------------------------------------
class BackwardCtx {
 public:
  BackwardCtx(Node& node, TensorList& grads, std::vector<SavedTensor>& saved)
      : node_(node), grads_(grads), saved_(saved) {}
  /// Gradient of output i (zeros when none flowed into it but another did).
  const Tensor& grad(size_t i = 0) const { return grads_[i]; }
  /// Saved tensor i, in the order given to record().
  Tensor saved(size_t i) const { return saved_[i].unpack(node_, i); }
  /// Whether input i needs its gradient.
  bool needs(size_t i) const { return node_.needs_input_grad(i); }

 private:
  Node& node_;
  TensorList& grads_;
  std::vector<SavedTensor>& saved_;
};

/// A node whose backward is a lambda with its non-tensor state captured.
template <class F>
class FunctionNode final : public Node {
 public:
  FunctionNode(const char* name, F&& f) : name_(name), fn_(std::forward<F>(f)) {}
  std::string name() const override { return name_; }
  TensorList apply(TensorList&& grads) override {
    BackwardCtx ctx(*this, grads, saved_);
    return fn_(ctx);
  }
  void release_variables() override {
    for (auto& s : saved_) s.release();
  }
  std::vector<SavedTensor> saved_;

 private:
  const char* name_;
  std::decay_t<F> fn_;
};

/// Edge to the node that receives t's gradient (its grad_fn, or the
/// AccumulateGrad of a leaf); invalid when t does not require grad.
Edge gradient_edge(const Tensor& t);
/// Makes `node` (its output `nr`) the history of `out`; a retained
/// gradient's hook follows the tensor to the new node.
void set_history(const Tensor& out, const std::shared_ptr<Node>& node, uint32_t nr);
/// Connects `node` to `inputs` and makes it the grad_fn of `outputs`. An
/// output that is also an input (in-place op) gets its history rewritten;
/// an in-place op on a view also rewrites the view's base (CopySlices).
void attach(const std::shared_ptr<Node>& node, std::initializer_list<Tensor> outputs,
            std::initializer_list<Tensor> inputs, bool inplace);
void attach(const std::shared_ptr<Node>& node, const TensorList& outputs, const TensorList& inputs, bool inplace);

template <class F, class Outs, class Ins>
std::shared_ptr<Node> record_impl(const char* name, const Outs& outputs, const Ins& inputs,
                                  std::initializer_list<SaveSpec> saved, F&& fn, bool inplace) {
  auto node = std::make_shared<FunctionNode<F>>(name, std::forward<F>(fn));
  attach(node, outputs, inputs, inplace);
  // After attach: a saved output knows its output_nr and post-op version.
  node->saved_.reserve(saved.size());
  for (const SaveSpec& s : saved) node->saved_.emplace_back(*s.t, s.is_output, name);
  return node;
}

/// Records an op: `fn(BackwardCtx&) -> TensorList` gives one gradient per input.
template <class F>
std::shared_ptr<Node> record(const char* name, std::initializer_list<Tensor> outputs,
                             std::initializer_list<Tensor> inputs, std::initializer_list<SaveSpec> saved, F&& fn) {
  return record_impl(name, outputs, inputs, saved, std::forward<F>(fn), false);
}
template <class F>
std::shared_ptr<Node> record(const char* name, const TensorList& outputs, const TensorList& inputs,
                             std::initializer_list<SaveSpec> saved, F&& fn) {
  return record_impl(name, outputs, inputs, saved, std::forward<F>(fn), false);
}
/// Records an in-place op on `self` (already modified, version bumped):
/// `self` must be the first input. Save what the formula needs of self's old
/// value as a clone taken before the op.
template <class F>
std::shared_ptr<Node> record_inplace(const char* name, const Tensor& self, std::initializer_list<Tensor> inputs,
                                     std::initializer_list<SaveSpec> saved, F&& fn) {
  // An integer or bool tensor never takes part in autograd, whatever was
  // written into it (x_int.copy_(y_float_requiring_grad), as in PyTorch).
  if (!is_floating_point(self.dtype())) return nullptr;
  return record_impl(name, std::initializer_list<Tensor>{self}, inputs, saved, std::forward<F>(fn), true);
}

/// Marks `view` (a new view of `base` made by a recorded view op) as a view
/// for in-place handling. Call after record().
void mark_view(const Tensor& view, const Tensor& base);
/// Marks the outputs of an op that returns several views of one input
/// (split, chunk, unbind): in grad mode they may not be changed in place
/// while their history is recorded, as in PyTorch. Call after record().
void mark_multi_output_views(const std::vector<Tensor>& views);

// ---- helpers for formulas ------------------------------------------------------
/// Sums `g` down to `sizes` (undoes broadcasting).
Tensor sum_to(const Tensor& g, IntArrayRef sizes);
/// sign(x) for use inside backward formulas where PyTorch's formula has
/// x.sgn() (abs, ...): its own derivative is a structural zero (Note
/// [Structural zeros], src/autograd/engine.cpp), so a second derivative that
/// meets an infinite factor behind it stays 0 as in PyTorch, not NaN. The
/// public sign() keeps an ordinary zero derivative, as PyTorch's sign does.
Tensor sgn(const Tensor& x);

}  // namespace brisk::autograd
