// A double rounded to a dtype's precision, as PyTorch's Scalar::to<T> (double
// to float first for the 16-bit types): the scalars PyTorch's kernels read in
// the tensor's dtype (norms, bounds, lambdas).
#pragma once
#include "brisk/dtype.h"
#include "brisk/half.h"

namespace brisk::detail {

inline double round_to(ScalarType dt, double v) {
  switch (dt) {
    case kHalf: return static_cast<float>(Half(static_cast<float>(v)));
    case kBFloat16: return static_cast<float>(BFloat16(static_cast<float>(v)));
    case kFloat: return static_cast<float>(v);
    default: return v;
  }
}

}  // namespace brisk::detail
