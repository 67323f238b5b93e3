// The backward engine (engine.cpp) and helpers it shares with autograd.cpp.
#pragma once
#include "brisk/autograd.h"

namespace brisk::autograd {
/// Adds a gradient into a leaf's .grad() (steal first, add in place after).
void accumulate_into(Tensor& dst, Tensor&& g);
/// Runs the leaf's post-accumulate-grad hooks (register_post_accumulate_grad_hook).
void run_post_accumulate_hooks(const Tensor& leaf);
}  // namespace brisk::autograd
