// The backward engine (engine.cpp) and helpers it shares with autograd.cpp.
#pragma once
#include "brisk/autograd.h"

namespace brisk::autograd {
/// Adds a gradient into a leaf's .grad() (steal first, add in place after).
void accumulate_into(Tensor& dst, Tensor&& g);
}  // namespace brisk::autograd
