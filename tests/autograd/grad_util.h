// Helpers for the gradient tests: float64 leaves in several layouts and a
// gradcheck assertion with a readable failure.
#pragma once
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <functional>
#include <string>

namespace brisk::testing {

/// A float64 leaf of `sizes` that requires grad, values in [lo, hi).
inline Tensor leaf(IntArrayRef sizes, double lo = -1.0, double hi = 1.0) {
  Tensor t = rand(sizes, kDouble) * (hi - lo) + lo;
  return t.detach().requires_grad_();
}
/// The same values as a non-contiguous leaf (a transposed buffer) when the
/// tensor has two or more dims; a strided slice for 1-D.
inline Tensor leaf_noncontig(IntArrayRef sizes, double lo = -1.0, double hi = 1.0) {
  if (sizes.size() >= 2) {
    std::vector<int64_t> s(sizes.begin(), sizes.end());
    std::swap(s[0], s[1]);
    Tensor buf = rand(IntArrayRef(s), kDouble) * (hi - lo) + lo;
    Tensor t = buf.transpose(0, 1);
    EXPECT_FALSE(t.is_contiguous() && t.numel() > 1);
    return t.detach().requires_grad_();
  }
  const int64_t n = sizes.empty() ? 1 : sizes[0];
  Tensor buf = rand({2 * n}, kDouble) * (hi - lo) + lo;
  Tensor t = sizes.empty() ? buf[0] : buf.slice(0, 0, 2 * n, 2);
  return t.detach().requires_grad_();
}

/// gradcheck as a gtest assertion (the message says which Jacobian entry differs).
inline ::testing::AssertionResult gradcheck_ok(const std::function<Tensor(const TensorList&)>& fn,
                                               const TensorList& inputs, bool grad_grad = false, double atol = 1e-5,
                                               double rtol = 1e-3) {
  autograd::GradcheckOptions o;
  o.check_grad_grad = grad_grad;
  o.atol = atol;
  o.rtol = rtol;
  try {
    autograd::gradcheck(fn, inputs, o);
  } catch (const brisk::Error& e) {
    return ::testing::AssertionFailure() << e.what();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace brisk::testing
