// Helpers shared by the tests: naive references and tensor comparisons.
#pragma once
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <string>
#include <vector>

/// Skips the test (with the reason) where no CUDA device can be used.
#define REQUIRE_CUDA()                                \
  if (!::brisk::cuda::is_available()) GTEST_SKIP() << "no CUDA device: " << ::brisk::cuda::unavailable_reason()

namespace brisk::testing {

/// Asserts that `fn` throws brisk::Error whose message contains every piece.
template <class F>
void expect_error(F&& fn, std::initializer_list<std::string> pieces) {
  try {
    fn();
    ADD_FAILURE() << "expected brisk::Error";
  } catch (const brisk::Error& e) {
    std::string msg = e.what();
    for (auto& p : pieces) EXPECT_NE(msg.find(p), std::string::npos) << "message '" << msg << "' lacks '" << p << "'";
  }
}

/// Each element (flattened, as float64) equal to the expected value, NaN
/// matching NaN: for values PyTorch printed.
inline ::testing::AssertionResult equal_values(const Tensor& got, const std::vector<double>& want) {
  const Tensor d = got.to(kDouble).contiguous();
  if (d.numel() != static_cast<int64_t>(want.size()))
    return ::testing::AssertionFailure() << "size " << d.numel() << " vs " << want.size();
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = d.data_ptr<double>()[i];
    if (!(g != g && want[i] != want[i]) && g != want[i])
      return ::testing::AssertionFailure() << "element " << i << ": got " << g << ", expected " << want[i];
  }
  return ::testing::AssertionSuccess();
}

/// Element-wise closeness with a readable failure (converts both to float64).
inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, double rtol = 1e-5,
                                        double atol = 1e-6, bool equal_nan = true) {
  if (!(got.sizes() == want.sizes()))
    return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs expected " << want.sizes();
  Tensor g = got.to(kDouble).contiguous(), w = want.to(kDouble).contiguous();
  const double* a = g.data_ptr<double>();
  const double* b = w.data_ptr<double>();
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (equal_nan && a[i] != a[i] && b[i] != b[i]) continue;
    if (a[i] == b[i]) continue;
    if (!(std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i])))
      return ::testing::AssertionFailure() << "element " << i << ": got " << a[i] << ", expected " << b[i];
  }
  return ::testing::AssertionSuccess();
}

}  // namespace brisk::testing
