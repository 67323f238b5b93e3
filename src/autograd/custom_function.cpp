// Custom autograd functions (autograd::Function<T>, libtorch's CppNode): the
// node a call records, its context, and the wrapping of forward's outputs.
#include <cxxabi.h>

#include <cstdlib>
#include <sstream>

#include "autograd/function.h"

namespace brisk {

// ---- IValue ---------------------------------------------------------------------
namespace {
const char* tag_name(IValue::Tag t) {
  switch (t) {
    case IValue::Tag::None: return "None";
    case IValue::Tag::Tensor: return "Tensor";
    case IValue::Tag::Double: return "Double";
    case IValue::Tag::Int: return "Int";
    case IValue::Tag::Bool: return "Bool";
    case IValue::Tag::String: return "String";
    case IValue::Tag::IntList: return "IntList";
    case IValue::Tag::DoubleList: return "DoubleList";
    case IValue::Tag::BoolList: return "BoolList";
    case IValue::Tag::TensorList: return "TensorList";
    case IValue::Tag::StringList: return "StringList";
  }
  return "?";
}
}  // namespace

IValue::IValue(const Scalar& s) {
  if (s.is_bool())
    v_ = s.to<bool>();
  else if (s.is_floating_point())
    v_ = s.to<double>();
  else
    v_ = s.to<int64_t>();
}

std::string IValue::tagKind() const { return tag_name(tag()); }

Scalar IValue::toScalar() const {
  switch (tag()) {
    case Tag::Double: return Scalar(toDouble());
    case Tag::Int: return Scalar(toInt());
    case Tag::Bool: return Scalar(toBool());
    default: wrong_tag(Tag::Double);
  }
}

void IValue::wrong_tag(Tag wanted) const {
  BRISK_FAIL("IValue", "expected ", tag_name(wanted), " but got ", tag_name(tag()));
}

namespace autograd {

// ---- the node ---------------------------------------------------------------------

/// The node of one call of a custom Function (libtorch's CppNode<T>): holds
/// the context and calls T::backward through a plain function pointer.
class CustomFunctionNode final : public Node {
 public:
  /// `name` outlives the node (Function<T>::apply's static).
  CustomFunctionNode(const std::string& name, fn_detail::CustomBackward backward, std::vector<bool> is_tensor_arg)
      : name_(name), backward_(backward), is_tensor_arg_(std::move(is_tensor_arg)) {
    ctx_.node_ = this;
  }
  std::string name() const override { return name_; }

  TensorList apply(TensorList&& grads) override {
    variable_list out = backward_(&ctx_, std::move(grads));
    const size_t expected = is_tensor_arg_.size();
    if (out.size() > expected) {
      // Trailing undefined gradients are allowed (libtorch drops them).
      bool extra_defined = false;
      for (size_t i = expected; i < out.size(); ++i) extra_defined = extra_defined || out[i].defined();
      if (!extra_defined) out.resize(expected);
    }
    BRISK_CHECK(out.size() == expected, name_.c_str(), "function ", name_,
                " returned an incorrect number of gradients (expected ", expected, ", got ", out.size(),
                "): backward must return one gradient per argument of forward, an undefined Tensor() for "
                "arguments that are not tensors");
    TensorList result;
    result.reserve(next_edges_.size());
    for (size_t i = 0; i < expected; ++i) {
      if (!is_tensor_arg_[i]) {
        BRISK_CHECK(!out[i].defined(), name_.c_str(), "function ", name_, " returned a defined gradient at position ", i,
                    ", but the corresponding argument of forward is not a tensor");
        continue;
      }
      result.push_back(std::move(out[i]));
    }
    return result;
  }

  void release_variables() override {
    for (SavedTensor& s : saved_) s.release();
    released_ = true;
  }

  void set_materialize(bool v) { materialize_grads_ = v; }

  AutogradContext ctx_;
  std::vector<SavedTensor> saved_;
  bool released_ = false;

 private:
  const std::string& name_;
  fn_detail::CustomBackward backward_;
  std::vector<bool> is_tensor_arg_;
};

// ---- the context --------------------------------------------------------------------

void AutogradContext::save_for_backward(variable_list to_save) {
  to_save_ = std::move(to_save);
  saved_called_ = true;
}

void AutogradContext::mark_dirty(const variable_list& inputs) {
  dirty_.clear();
  dirty_tensors_.clear();
  for (const Tensor& t : inputs) {
    if (!t.defined()) continue;
    dirty_.insert(t.impl());
    dirty_tensors_.push_back(t);
  }
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  non_differentiable_.clear();
  for (const Tensor& t : outputs)
    if (t.defined()) non_differentiable_.insert(t.impl());
}

variable_list AutogradContext::get_saved_variables() const {
  const CustomFunctionNode& n = *node_;
  if (n.released_)
    BRISK_FAIL(n.name().c_str(),
               "Trying to backward through the graph a second time (or directly access saved tensors after they "
               "have already been freed). Saved intermediate values of the graph are freed when you call "
               "backward() or autograd::grad(). Specify retain_graph=true if you need to backward through the "
               "graph a second time or if you need to access saved tensors after calling backward (node ",
               n.name(), ")");
  if (n.saved_.empty() && !to_save_.empty()) return to_save_;  // not recorded (no input required grad)
  variable_list r;
  r.reserve(n.saved_.size());
  for (size_t i = 0; i < n.saved_.size(); ++i) r.push_back(n.saved_[i].unpack(*node_, i));
  return r;
}

bool AutogradContext::needs_input_grad(size_t index) const { return node_->needs_input_grad(index); }

// ---- one call of apply --------------------------------------------------------------------

namespace fn_detail {

std::string demangle(const char* mangled) {
  int status = 0;
  char* s = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  if (status != 0 || !s) return mangled;
  std::string r(s);
  std::free(s);
  return r;
}

CustomFunctionCall::CustomFunctionCall(const std::string& name, CustomBackward backward,
                                       std::vector<bool> is_tensor_arg, variable_list inputs)
    : node_(std::make_shared<CustomFunctionNode>(name, backward, std::move(is_tensor_arg))) {
  // Edges before forward: ctx->needs_input_grad answers in forward, and an
  // input that forward changes in place keeps its old history as the edge.
  bool executable = false;
  if (GradMode::is_enabled())
    for (const Tensor& in : inputs) executable = executable || needs_grad(in);
  auto& edges = node_->mutable_next_edges();
  edges.reserve(inputs.size());
  for (const Tensor& in : inputs) edges.push_back(executable && needs_grad(in) ? gradient_edge(in) : Edge{});
  executable_ = executable;
  inputs_ = std::move(inputs);
}

CustomFunctionCall::~CustomFunctionCall() = default;

AutogradContext* CustomFunctionCall::ctx() { return &node_->ctx_; }

namespace {
bool same_impl(const Tensor& a, const Tensor& b) { return a.defined() && b.defined() && a.is_same(b); }
}  // namespace

variable_list CustomFunctionCall::finish(variable_list outputs) {
  CustomFunctionNode& node = *node_;
  AutogradContext& ctx = node.ctx_;
  const std::string name_str = node.name();
  const char* name = name_str.c_str();
  // Dirty inputs: forward changed them in place (under no-grad its ops
  // already bumped the version; one more marks the call itself, as PyTorch).
  for (const Tensor& t : ctx.dirty_tensors_) {
    bool is_input = false;
    for (const Tensor& in : inputs_) is_input = is_input || same_impl(in, t);
    BRISK_CHECK(is_input, name, "mark_dirty() was given a tensor that is not an input of forward (",
                t.dtype(), " tensor of shape ", t.sizes(), "); only inputs changed in place are marked dirty");
    bool returned = false;
    for (const Tensor& o : outputs) returned = returned || same_impl(o, t);
    BRISK_CHECK(returned, name, "an input marked dirty (changed in place) must be returned by forward as an output");
    t.bump_version();
  }
  const bool executable = executable_ && GradMode::is_enabled();
  auto& meta = node.mutable_output_meta();
  meta.reserve(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    const uint32_t nr = static_cast<uint32_t>(i);
    if (executable) {
      if (out.defined())
        meta.push_back({to_dims(out.sizes()), out.dtype(), out.device()});
      else
        meta.push_back({});
    }
    if (!out.defined()) continue;
    bool is_input = false;
    for (const Tensor& in : inputs_) is_input = is_input || same_impl(in, out);
    const bool dirty = ctx.dirty_.count(out.impl()) != 0;
    const bool differentiable =
        executable && !ctx.non_differentiable_.count(out.impl()) && is_floating_point(out.dtype());
    if (!differentiable) {
      // Inputs come back as aliases without history; other outputs leave the graph.
      if (is_input && !dirty)
        out = out.detach();
      else if (is_input && out.requires_grad())
        out = out.detach();
      else if (out.requires_grad() && !out._is_view())
        out.detach_();
      continue;
    }
    if (dirty) {
      BRISK_CHECK(!(out.is_leaf() && out.requires_grad()), name, "a leaf Variable that requires grad (",
                  out.dtype(), " tensor of shape ", out.sizes(),
                  ") has been used in an in-place operation (marked dirty by ", name,
                  "); clone() it before passing it, or call the function under NoGradGuard");
      if (out._is_view()) {
        BRISK_CHECK(outputs.size() == 1, name,
                    "a Function that modifies in place an input that is a view of another tensor cannot return more "
                    "than one tensor; clone() the input first, or split the function in two");
        BRISK_CHECK(!inputs_.empty() && same_impl(inputs_[0], out), name,
                    "a Function that modifies in place an input that is a view of another tensor must take that "
                    "view as its first tensor argument");
        // Rewrites the root's history (CopySlices), as an in-place op on a view
        // does; attach() records the output's meta itself.
        meta.pop_back();
        attach(node_, TensorList{out}, TensorList{}, /*inplace=*/true);
        continue;
      }
      set_history(out, node_, nr);
      continue;
    }
    if (is_input) out = out.detach();  // an input returned as is: an alias with this call's history
    set_history(out, node_, nr);
    // A view of an input made by forward (under no-grad) may not be changed
    // in place later: its history is this call, not a view op's.
    if (out._is_view()) out.impl()->view_creation = static_cast<uint8_t>(ViewCreation::NoGradMode);
  }
  // The dirty tensors are outputs whose grad_fn is this node: holding them in
  // the node's context would be a reference cycle (node -> tensor -> node).
  ctx.dirty_tensors_.clear();
  if (executable) {
    node.set_materialize(ctx.materialize_grads_);
    node.saved_.reserve(ctx.to_save_.size());
    for (const Tensor& t : ctx.to_save_) {
      const bool is_output = t.defined() && t.impl()->autograd && t.impl()->autograd->grad_fn == node_;
      node.saved_.emplace_back(t, is_output, name);
    }
    ctx.to_save_.clear();
  }
  return outputs;
}

}  // namespace fn_detail
}  // namespace autograd
}  // namespace brisk
