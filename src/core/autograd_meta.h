// Per-tensor autograd state, allocated only for tensors that take part in
// autograd (see Note [AutogradMeta]). TensorImpl::requires_grad mirrors
// "requires grad" so that op front ends test it without touching this.
#pragma once
#include <memory>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/tensor.h"

namespace brisk {

// Note [AutogradMeta]
// A leaf that requires grad has `leaf_requires_grad` and, once a backward
// reached it, an AccumulateGrad node held weakly here (the node holds the
// leaf). A result of a recorded op has `grad_fn` and `output_nr`. A view's
// root base is in TensorImpl::view_base (Note [View tracking]).
struct AutogradMeta {
  bool leaf_requires_grad = false;
  bool retains_grad = false;
  uint32_t output_nr = 0;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;
  std::weak_ptr<autograd::Node> grad_accumulator;
  /// Hooks of a leaf (run by its AccumulateGrad before accumulating).
  struct Hook {
    unsigned id;
    autograd::GradHook fn;
  };
  std::vector<Hook> leaf_hooks;
  /// Hooks of a leaf run by its AccumulateGrad after accumulating, with the
  /// leaf (register_post_accumulate_grad_hook).
  struct PostHook {
    unsigned id;
    std::function<void(const Tensor&)> fn;
  };
  std::vector<PostHook> post_accumulate_hooks;
  /// Where a retained non-leaf gradient is written (shared with the hook).
  std::shared_ptr<Tensor> retained_grad;
};

namespace autograd {
/// The tensor's AutogradMeta, created on first use.
inline AutogradMeta& meta_of(const Tensor& t) {
  TensorImpl* impl = t.impl();
  if (!impl->autograd) impl->autograd = new AutogradMeta();
  return *impl->autograd;
}
}  // namespace autograd
}  // namespace brisk
