// The graph: nodes, saved tensors, leaves' gradient accumulation, history
// of in-place ops and views, and Tensor's autograd methods.
#include <algorithm>
#include <atomic>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/function.h"
#include "core/tensor_create.h"
#include "ops/strided.h"

namespace brisk {
namespace autograd {

namespace {
thread_local uint64_t t_next_seq BRISK_TLS_FAST = 0;
std::atomic<unsigned> g_next_hook_id{1};

std::string describe(const Tensor& t) {
  std::ostringstream o;
  o << t.dtype() << " tensor of shape " << t.sizes();
  return o.str();
}
}  // namespace

Node::Node() : seq_(t_next_seq++) {}
Node::~Node() = default;

bool Node::remove_pre_hook(uint32_t id) {
  auto it = std::find_if(pre_hooks_.begin(), pre_hooks_.end(), [id](const PreHook& h) { return h.id == id; });
  if (it == pre_hooks_.end()) return false;
  pre_hooks_.erase(it);
  return true;
}

GradHook Node::take_pre_hook(uint32_t nr, uint32_t id) {
  auto it = std::find_if(pre_hooks_.begin(), pre_hooks_.end(),
                         [nr, id](const PreHook& h) { return h.id == id && h.output_nr == nr; });
  if (it == pre_hooks_.end()) return {};
  GradHook h = std::move(it->fn);
  pre_hooks_.erase(it);
  return h;
}

void Node::run_pre_hooks(TensorList& grads) const {
  // User hooks in registration order; retain_grad hooks (id 0) see the final gradient.
  for (int pass = 0; pass < 2; ++pass)
    for (const PreHook& h : pre_hooks_) {
      if ((h.id == 0) != (pass == 1) || h.output_nr >= grads.size() || !grads[h.output_nr].defined()) continue;
      Tensor r = h.fn(grads[h.output_nr]);
      if (r.defined()) grads[h.output_nr] = std::move(r);
    }
}

// ---- saved tensors ------------------------------------------------------------
SavedTensor::SavedTensor(const Tensor& t, bool is_output, const char* node_name) {
  if (!t.defined()) return;
  BRISK_CHECK(!t.is_inference() || InferenceMode::is_enabled(), node_name,
              "Inference tensors cannot be saved for backward. To work around you can make a clone to get a "
              "normal tensor and use it in autograd (",
              describe(t), ")");
  version_ = t._raw_version();
  requires_grad_ = t.requires_grad();
  is_output_ = is_output;
  if (is_output) {
    // No history: the output's grad_fn is the node that saves it.
    output_nr_ = t.output_nr();
    data_ = brisk::detail::make_view(t, t.sizes(), t.strides(), t.storage_offset());
    data_.impl()->view_base.reset();
  } else {
    was_leaf_ = t.is_leaf();
    data_ = t;
  }
}

Tensor SavedTensor::unpack(Node& owner, size_t index) const {
  if (released_)
    BRISK_FAIL("backward",
               "Trying to backward through the graph a second time (or directly access saved tensors after they "
               "have already been freed). Saved intermediate values of the graph are freed when you call "
               "backward() or autograd::grad(). Specify retain_graph=true if you need to backward through the "
               "graph a second time or if you need to access saved tensors after calling backward (node ",
               owner.name(), ")");
  if (!data_.defined()) return Tensor();
  const uint32_t now = data_._raw_version();
  if (now != version_) {
    // The versions as _version() counts them (Note [Version counters]).
    const uint32_t base = data_.impl()->storage->version_base;
    auto visible_version = [base](uint32_t v) { return static_cast<int64_t>(static_cast<int32_t>(v - base)); };
    std::string what;
    if (is_output_)
      what = "output " + std::to_string(output_nr_) + " of " + owner.name();
    else if (data_.grad_fn())
      what = "output " + std::to_string(data_.output_nr()) + " of " + data_.grad_fn()->name();
    else
      what = was_leaf_ ? "a leaf tensor" : "a tensor outside the graph";
    BRISK_FAIL("backward",
               "one of the tensors needed for gradient computation has been modified by an inplace operation: ",
               describe(data_), ", which is ", what, ", saved by ", owner.name(), " (saved tensor ", index,
               "), is at version ", visible_version(now), "; expected version ", visible_version(version_),
               " instead. Hint: the in-place op ran between the forward op and backward; use its out-of-place "
               "form or clone() the tensor before changing it.");
  }
  if (is_output_ && requires_grad_ && GradMode::is_enabled()) {
    // create_graph: give the output back its history for double backward.
    Tensor t = brisk::detail::make_view(data_, data_.sizes(), data_.strides(), data_.storage_offset());
    t.impl()->view_base.reset();
    AutogradMeta& m = meta_of(t);
    m.grad_fn = owner.shared_from_this();
    m.output_nr = output_nr_;
    t.impl()->requires_grad = true;
    return t;
  }
  return data_;
}

// ---- leaves ---------------------------------------------------------------------
// Note [Gradient layout]
// A leaf's .grad() has the leaf's layout (PyTorch's gradient layout
// contract): an optimizer then updates parameter and gradient in one pass in
// the same memory order. Formulas help by producing gradients in the input's
// layout where it is free (mm_in_layout_of in ops/linalg.cpp computes the
// gradient of a transposed weight as a transposed product); otherwise the
// first gradient is copied into the leaf's layout instead of stolen.
namespace {
/// True when nothing but `g` reaches its memory. A view keeps the root of
/// its chain of views alive (Note [View tracking]): that root counts as
/// part of g when g holds the only reference to it.
bool exclusively_owned(const Tensor& g) {
  if (g.use_count() != 1) return false;
  const TensorImpl* impl = g.impl();
  const int32_t owners = impl->storage.use_count();
  if (owners == 1) return true;
  // ... and when g spans that memory: a slice of a bigger buffer is copied
  // rather than kept alive as a gradient.
  const TensorImpl* base = impl->view_base.get();
  return owners == 2 && base && impl->view_base.use_count() == 1 && base->storage.get() == impl->storage.get() &&
         static_cast<size_t>(g.numel()) * element_size(g.dtype()) == impl->storage->nbytes;
}

/// The node that accumulates a leaf's gradient into its .grad().
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
    seq_ = UINT64_MAX;  // runs as soon as it is ready, freeing its input
    out_meta_.push_back({to_dims(variable_.sizes()), variable_.dtype(), variable_.device()});
  }
  std::string name() const override { return "AccumulateGrad"; }
  TensorList apply(TensorList&& grads) override {
    Tensor g = std::move(grads[0]);
    if (!g.defined()) return {};
    AutogradMeta& m = meta_of(variable_);
    for (const auto& h : m.leaf_hooks) {
      Tensor r = h.fn(g);
      if (r.defined()) g = std::move(r);
    }
    accumulate(m.grad, std::move(g), &variable_);
    run_post_accumulate_hooks(variable_);
    return {};
  }
  /// Adds `g` into `dst` (PyTorch's AccumulateGrad::accumulateGrad): the
  /// first gradient is stolen when nothing else holds it and it has the
  /// leaf's layout (Note [Gradient layout]); later ones add in place unless
  /// the graph of the gradient is being recorded.
  static void accumulate(Tensor& dst, Tensor&& g, const Tensor* like = nullptr) {
    const bool recording = GradMode::is_enabled();
    if (!dst.defined()) {
      const bool same_layout = like ? g.strides() == like->strides() || (g.is_contiguous() && like->is_contiguous())
                                    : g.is_contiguous();
      const bool stealable = !recording && same_layout && exclusively_owned(g) && !g.is_inference();
      if (stealable || (recording && g.requires_grad())) {
        dst = std::move(g);
      } else if (like && like->is_contiguous()) {
        Tensor c = g.contiguous();
        dst = c.is_same(g) ? g.clone() : std::move(c);
      } else {
        dst = g.clone();
      }
    } else if (!recording) {
      dst.add_(g);
    } else {
      dst = dst + g;
    }
  }
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& m = meta_of(leaf);
  if (auto acc = m.grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(Tensor(Ref<TensorImpl>::borrow(leaf.impl())));
  m.grad_accumulator = acc;
  return acc;
}
}  // namespace

void accumulate_into(Tensor& dst, Tensor&& g) { AccumulateGrad::accumulate(dst, std::move(g)); }
void run_post_accumulate_hooks(const Tensor& leaf) {
  AutogradMeta* m = leaf.impl()->autograd;
  if (!m) return;
  for (size_t k = 0; k < m->post_accumulate_hooks.size(); ++k) m->post_accumulate_hooks[k].fn(leaf);
}

Edge gradient_edge(const Tensor& t) {
  if (BRISK_UNLIKELY(t.impl()->view_base)) refresh_view(t);
  AutogradMeta* m = t.impl()->autograd;
  if (!m || !t.impl()->requires_grad) return {};
  if (m->grad_fn) return {m->grad_fn, m->output_nr};
  return {grad_accumulator(t), 0};
}

// ---- history ----------------------------------------------------------------------
// Note [View + in-place]
// PyTorch's semantics for views and in-place ops, in three rules.
// 1. An in-place op that records on a view rewrites the history of the
//    view's root (CopySlices: the root's gradient with the view's window
//    replaced by what the op's backward makes of it) and gives the view a
//    fresh history from the root (AsStridedBackward0).
// 2. A view remembers the storage version its history matches
//    (TensorImpl::view_version). All views of a storage share its version
//    counter, so an in-place op on the root or on any view of it leaves the
//    other views' histories stale; a stale history is regenerated, as rule
//    1's AsStridedBackward0 from the root's current history, when the view
//    is next used by a recording op, asked for grad_fn()/requires_grad(), or
//    changed in place. The test sits behind `requires_grad` or the root's
//    `requires_grad`, so ops outside autograd never pay for it.
// 3. Where PyTorch refuses to rewrite a history, so does brisk: a view made
//    with grad mode off, or one of several views made by one op (split,
//    chunk, unbind), may not be changed in place by a recording op, nor
//    used in autograd after its root was changed in place.
// Gradients move between a view's geometry and its root's through
// strided_transfer (src/ops/strided.h): any strides, non-contiguous roots,
// overlapping views (expand). The root itself must not overlap itself.
void set_history(const Tensor& out, const std::shared_ptr<Node>& node, uint32_t nr) {
  AutogradMeta& m = meta_of(out);
  if (BRISK_UNLIKELY(m.retains_grad) && m.grad_fn && (m.grad_fn != node || m.output_nr != nr)) {
    // A retained gradient is the gradient of the tensor's current value
    // (PyTorch 2's rule): the hook follows the tensor to its new node.
    if (GradHook h = m.grad_fn->take_pre_hook(m.output_nr, 0)) node->add_pre_hook(nr, std::move(h), 0);
  }
  m.grad_fn = node;
  m.output_nr = nr;
  TensorImpl* impl = out.impl();
  impl->requires_grad = true;
  if (impl->view_base) {
    impl->view_version = impl->storage->version.load(std::memory_order_relaxed);
    impl->view_creation = static_cast<uint8_t>(ViewCreation::Default);
  }
}

namespace {
using detail::Geom;
using detail::geom_of;

/// A view's history from its root's (regenerated or after an in-place op on
/// the view): the gradient of the window, placed in the root's geometry.
class AsStridedBackward final : public Node {
 public:
  AsStridedBackward(Geom root, Geom view) : root_(std::move(root)), view_(std::move(view)) {}
  std::string name() const override { return "AsStridedBackward0"; }
  TensorList apply(TensorList&& grads) override {
    return {detail::strided_transfer("AsStridedBackwardBackward0", grads[0], view_, root_)};
  }

 private:
  Geom root_, view_;
};

/// The history of a root after an in-place op on one of its views
/// (PyTorch's CopySlices): the root's gradient, with the view's window
/// replaced by what the op's backward makes of it.
class CopySlices final : public Node {
 public:
  CopySlices(Geom root, Geom view, std::shared_ptr<Node> fn)
      : root_(std::move(root)), view_(std::move(view)), fn_(std::move(fn)) {}
  std::string name() const override { return "CopySlices"; }
  TensorList apply(TensorList&& grads) override {
    // root_ and view_ over one buffer laid out as the root's storage (the
    // root does not overlap itself, so writing g through it is exact; under
    // create_graph these in-place ops record like any other).
    const Tensor& g = grads[0];
    const int64_t extent = detail::geom_numel(root_) ? detail::geom_extent(root_) + 1 : 0;
    Tensor buf = zeros({extent}, g.options());
    Tensor result = buf.as_strided(root_.sizes, root_.strides, 0);
    result.copy_(g);
    Tensor window = buf.as_strided(view_.sizes, view_.strides, view_.offset - root_.offset);
    TensorList fg = fn_->apply({window.clone()});
    if (!fg.empty() && fg[0].defined())
      window.copy_(fg[0]);
    else
      window.zero_();
    TensorList out(next_edges_.size());
    out[0] = std::move(result);
    for (size_t i = 1; i < out.size() && i < fg.size(); ++i) out[i] = std::move(fg[i]);
    return out;
  }
  void release_variables() override { fn_->release_variables(); }

 private:
  Geom root_, view_;
  std::shared_ptr<Node> fn_;
};

std::string view_description(const Tensor& view) {
  const AutogradMeta* m = view.impl()->autograd;
  if (m && m->grad_fn) return "output " + std::to_string(m->output_nr) + " of " + m->grad_fn->name();
  return describe(view);
}

/// Refuses to rewrite the history of a view made in no-grad mode or by a
/// multi-output op (rule 3). `op`: the in-place op changing the view, or
/// null when the view is used after its root was changed (`indirect`).
void check_rebase(const Tensor& view, const char* op) {
  const auto how = static_cast<ViewCreation>(view.impl()->view_creation);
  if (BRISK_LIKELY(how == ViewCreation::Default)) return;
  const char* where = op ? op : "autograd";
  const char* what = op ? "is being modified in place with grad mode enabled"
                        : "is used after its base or another view of its base was modified in place";
  if (how == ViewCreation::NoGradMode)
    BRISK_FAIL(where, "a view (", view_description(view), ") was created in no_grad mode and ", what,
               ". This is ambiguous and forbidden: make the view and the in-place op either both inside the "
               "no_grad block (if the update must not be recorded) or both outside it (if it must)");
  BRISK_FAIL(where, "a view (", view_description(view), ") made by a function that returns several views (split, ",
             "chunk, unbind) ", what, ". Such views cannot be modified in place while autograd records: use the "
             "out-of-place op, or clone() the outputs of that function");
}

/// Checks that an in-place op on `view` can rewrite its root's history.
Geom checked_root_geometry(const Tensor& root, const Tensor& view, const char* node) {
  Geom rg = geom_of(root);
  BRISK_CHECK(detail::geom_non_overlapping(rg), node,
              "an in-place op on a view of a tensor whose elements overlap in memory (sizes ", root.sizes(),
              ", strides ", root.strides(), ") cannot be differentiated; clone() that tensor first");
  const bool inside = view.numel() == 0 ||
                      (view.storage_offset() >= root.storage_offset() &&
                       view.storage_offset() + detail::geom_extent(geom_of(view)) <=
                           root.storage_offset() + (root.numel() ? detail::geom_extent(rg) : -1));
  BRISK_CHECK(inside, node, "an in-place op on a view (sizes ", view.sizes(), ", strides ", view.strides(),
              ", offset ", view.storage_offset(), ") that reaches outside its base (sizes ", root.sizes(),
              ", strides ", root.strides(), ", offset ", root.storage_offset(), ") cannot be differentiated");
  BRISK_CHECK(!root.requires_grad() || !root.is_leaf(), node,
              "a view of a leaf tensor that requires grad is being used in an in-place operation (", describe(view),
              "); wrap the update in a NoGradGuard, or clone() the leaf first");
  return rg;
}
}  // namespace

bool refresh_view(const Tensor& view) {
  TensorImpl* impl = view.impl();
  TensorImpl* root = impl->view_base.get();
  if (!root) return impl->requires_grad;
  AutogradMeta* m = impl->autograd;
  const bool has_history = m && m->grad_fn;
  if (!has_history && (!root->requires_grad || (m && m->leaf_requires_grad))) return impl->requires_grad;
  const uint32_t now = impl->storage->version.load(std::memory_order_relaxed);
  if (now == impl->view_version) return impl->requires_grad;
  check_rebase(view, nullptr);
  if (!root->requires_grad) {
    // The root left the graph (detach_()): so does the view.
    m->grad_fn.reset();
    m->output_nr = 0;
    impl->requires_grad = false;
    impl->view_version = now;
    return false;
  }
  const Tensor base(impl->view_base);
  auto node = std::make_shared<AsStridedBackward>(geom_of(base), geom_of(view));
  node->mutable_next_edges().push_back(gradient_edge(base));
  node->mutable_output_meta().push_back({to_dims(view.sizes()), view.dtype(), view.device()});
  set_history(view, node, 0);
  return true;
}

template <class List>
static void attach_impl(const std::shared_ptr<Node>& node, const List& outputs, const List& inputs, bool inplace) {
  auto& edges = node->mutable_next_edges();
  edges.reserve(inputs.size());
  for (const Tensor& in : inputs) edges.push_back(needs_grad(in) ? gradient_edge(in) : Edge{});
  auto& om = node->mutable_output_meta();
  om.reserve(outputs.size());
  for (const Tensor& out : outputs) om.push_back({to_dims(out.sizes()), out.dtype(), out.device()});
  if (inplace) {
    const Tensor& self = *outputs.begin();
    if (self.impl()->view_base) {
      // Rule 1 of Note [View + in-place].
      check_rebase(self, node->name().c_str());
      const Tensor root(self.impl()->view_base);
      Geom rg = checked_root_geometry(root, self, node->name().c_str());
      auto cs = std::make_shared<CopySlices>(rg, geom_of(self), node);
      auto& ce = cs->mutable_next_edges();
      ce.push_back(needs_grad(root) ? gradient_edge(root) : Edge{});
      for (size_t i = 1; i < edges.size(); ++i) ce.push_back(edges[i]);
      // The op's backward gets the view's old history as input 0 (needed or not).
      cs->mutable_output_meta().push_back({to_dims(root.sizes()), root.dtype(), root.device()});
      set_history(root, cs, 0);
      auto vb = std::make_shared<AsStridedBackward>(std::move(rg), geom_of(self));
      vb->mutable_next_edges().push_back({cs, 0});
      vb->mutable_output_meta().push_back({to_dims(self.sizes()), self.dtype(), self.device()});
      set_history(self, vb, 0);
      return;
    }
  }
  uint32_t nr = 0;
  for (const Tensor& out : outputs) set_history(out, node, nr++);
}

void attach(const std::shared_ptr<Node>& node, std::initializer_list<Tensor> outputs,
            std::initializer_list<Tensor> inputs, bool inplace) {
  attach_impl(node, outputs, inputs, inplace);
}
void attach(const std::shared_ptr<Node>& node, const TensorList& outputs, const TensorList& inputs, bool inplace) {
  attach_impl(node, outputs, inputs, inplace);
}

void mark_view(const Tensor& view, const Tensor& base) {
  // make_view already links every view to its root (Note [View tracking]);
  // this checks that a recorded view op really produced a view of `base`.
  BRISK_ASSERT(base.is_inference() || view.impl()->view_base);
  // A view an op made under its own NoGradGuard is the op's, not the user's
  // no-grad view (Note [View + in-place], rule 3); it inherits what its base
  // was made as (a view of an output of split is one too).
  const TensorImpl* b = base.impl();
  view.impl()->view_creation =
      b->view_base ? b->view_creation : static_cast<uint8_t>(ViewCreation::Default);
}

void mark_multi_output_views(const std::vector<Tensor>& views) {
  if (!GradMode::is_enabled()) return;  // made in no-grad mode: marked so already
  for (const Tensor& v : views)
    if (v.impl()->view_base) v.impl()->view_creation = static_cast<uint8_t>(ViewCreation::MultiOutput);
}

void check_inplace_slow(const Tensor& self, const char* op) {
  if (self.is_inference() && !InferenceMode::is_enabled())
    BRISK_FAIL(op, "Inplace update to inference tensor outside InferenceMode is not allowed. You can make a clone "
                   "to get a normal tensor before doing inplace update (",
               describe(self), ")");
  if (!GradMode::is_enabled()) return;
  const TensorImpl* base = self.impl()->view_base.get();
  if (base) {
    refresh_view(self);
    // As in PyTorch, a view made in no-grad mode of a root that requires grad
    // counts as requiring grad here.
    if (self.impl()->requires_grad || base->requires_grad) check_rebase(self, op);
  }
  if (!self.impl()->requires_grad) return;
  AutogradMeta* m = self.impl()->autograd;
  if (m && !m->grad_fn && m->leaf_requires_grad)
    BRISK_FAIL(op, "a leaf tensor that requires grad is being used in an in-place operation (", describe(self),
               "); wrap the update in a NoGradGuard, or clone() the leaf first");
  // PyTorch's rule: a view that requires grad of a root without history. The
  // root need not require grad itself: in `x = arange(6).reshape({3, 2})
  // .requires_grad_(); x[0].fill_(1)` the root is arange's tensor and the
  // leaf that requires grad is the view x.
  if (base && (!base->autograd || !base->autograd->grad_fn))
    BRISK_FAIL(op, "a view of a leaf tensor that requires grad is being used in an in-place operation (",
               describe(self), "); wrap the update in a NoGradGuard, or clone() the leaf first");
}

Tensor sum_to(const Tensor& g, IntArrayRef sizes) {
  if (g.sizes() == sizes) return g;
  const int64_t lead = g.dim() - static_cast<int64_t>(sizes.size());
  BRISK_CHECK(lead >= 0, "backward", "gradient of shape ", g.sizes(), " cannot be summed to shape ", sizes);
  DimVector dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t gs = g.size(lead + static_cast<int64_t>(i));
    if (sizes[i] == 1 && gs != 1)
      dims.push_back(lead + static_cast<int64_t>(i));
    else
      BRISK_CHECK(sizes[i] == gs, "backward", "gradient of shape ", g.sizes(), " cannot be summed to shape ", sizes);
  }
  Tensor r = dims.empty() ? g : g.sum(IntArrayRef(dims), true);
  if (lead > 0) r = r.view(sizes);
  return r;
}

}  // namespace autograd

// ---- Tensor's autograd methods ---------------------------------------------------------
using autograd::meta_of;

Tensor& Tensor::requires_grad_(bool r) const {
  AutogradMeta* m = impl_->autograd;
  if (m && m->grad_fn) {
    BRISK_CHECK(r, "requires_grad_",
                "you can only change requires_grad flags of leaf tensors. If you want to use a computed tensor in "
                "a subgraph that doesn't require differentiation use detach()");
    return const_cast<Tensor&>(*this);
  }
  if (r) {
    BRISK_CHECK(is_floating_point(), "requires_grad_",
                "only tensors of floating point dtype can require gradients, got ", dtype());
    BRISK_CHECK(!is_inference() || InferenceMode::is_enabled(), "requires_grad_",
                "Setting requires_grad=true on an inference tensor outside InferenceMode is not allowed");
  }
  if (!r && !m) return const_cast<Tensor&>(*this);
  meta_of(*this).leaf_requires_grad = r;
  impl_->requires_grad = r;
  return const_cast<Tensor&>(*this);
}

namespace {
const Tensor& undefined_tensor() {
  static const Tensor t;
  return t;
}
}  // namespace

const Tensor& Tensor::grad() const {
  const AutogradMeta* m = impl_->autograd;
  if (!m) return undefined_tensor();
  if (m->retained_grad) return *m->retained_grad;
  return m->grad;
}

Tensor& Tensor::mutable_grad() const {
  AutogradMeta& m = meta_of(*this);
  return m.retained_grad ? *m.retained_grad : m.grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const TensorList& inputs) const {
  TensorList gs;
  if (gradient.defined()) gs.push_back(gradient);
  autograd::backward({*this}, gs, retain_graph, create_graph, inputs);
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  if (impl_->view_base) autograd::refresh_view(*this);  // Note [View + in-place]
  const AutogradMeta* m = impl_->autograd;
  return m ? m->grad_fn : none;
}

bool Tensor::is_leaf() const { return !grad_fn(); }
uint32_t Tensor::output_nr() const {
  if (impl_->view_base) autograd::refresh_view(*this);
  return impl_->autograd ? impl_->autograd->output_nr : 0;
}

void Tensor::retain_grad() const {
  BRISK_CHECK(requires_grad(), "retain_grad", "can't retain_grad on a tensor that has requires_grad=false");
  if (is_leaf()) return;  // leaves keep their gradient anyway (is_leaf refreshed a view's history)
  AutogradMeta& m = meta_of(*this);
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.retained_grad = std::make_shared<Tensor>();
  std::weak_ptr<Tensor> slot = m.retained_grad;
  m.grad_fn->add_pre_hook(m.output_nr,
                          [slot](const Tensor& g) {
                            if (auto s = slot.lock()) {
                              if (!s->defined())
                                *s = g.detach().clone();
                              else
                                *s = *s + g.detach();
                            }
                            return Tensor();
                          },
                          0);
}

bool Tensor::retains_grad() const { return impl_->autograd && impl_->autograd->retains_grad; }

Tensor Tensor::detach() const {
  Tensor d = detail::make_view(*this, sizes(), strides(), storage_offset());
  d.impl()->view_base.reset();  // not a view for autograd: in-place ops on it never reach this history
  return d;
}

Tensor& Tensor::detach_() const {
  AutogradMeta* m = impl_->autograd;
  if (!m) return const_cast<Tensor&>(*this);
  BRISK_CHECK(!impl_->view_base, "detach_", "Can't detach views in-place. Use detach() instead");
  m->grad_fn.reset();
  m->output_nr = 0;
  m->leaf_requires_grad = false;
  impl_->requires_grad = false;
  return const_cast<Tensor&>(*this);
}

bool Tensor::_is_view() const { return static_cast<bool>(impl_->view_base); }
Tensor Tensor::_base() const { return impl_->view_base ? Tensor(impl_->view_base) : Tensor(); }

unsigned Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  BRISK_CHECK(requires_grad(), "register_hook", "cannot register a hook on a tensor that doesn't require gradient");
  const unsigned id = autograd::g_next_hook_id.fetch_add(1, std::memory_order_relaxed);
  AutogradMeta& m = meta_of(*this);
  if (m.grad_fn)
    m.grad_fn->add_pre_hook(m.output_nr, std::move(hook), id);
  else
    m.leaf_hooks.push_back({id, std::move(hook)});
  return id;
}

unsigned Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  const char* op = "register_post_accumulate_grad_hook";
  BRISK_CHECK(requires_grad(), op, "cannot register a hook on a tensor that doesn't require gradient");
  BRISK_CHECK(is_leaf(), op, "post accumulate grad hooks cannot be registered on non-leaf tensors");
  BRISK_CHECK(hook != nullptr, op, "the hook is empty");
  const unsigned id = autograd::g_next_hook_id.fetch_add(1, std::memory_order_relaxed);
  meta_of(*this).post_accumulate_hooks.push_back({id, std::move(hook)});
  return id;
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* m = impl_->autograd;
  if (!m) return;
  if (m->grad_fn && m->grad_fn->remove_pre_hook(handle)) return;
  auto& hs = m->leaf_hooks;
  hs.erase(std::remove_if(hs.begin(), hs.end(), [handle](const auto& h) { return h.id == handle; }), hs.end());
  auto& ps = m->post_accumulate_hooks;
  ps.erase(std::remove_if(ps.begin(), ps.end(), [handle](const auto& h) { return h.id == handle; }), ps.end());
}

}  // namespace brisk
