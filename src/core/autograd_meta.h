// Per-tensor autograd state (filled in by the autograd layer).
#pragma once
#include "brisk/tensor.h"

namespace brisk {
struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
};
}  // namespace brisk
