// The ops of src/ops/composite.cpp against PyTorch 2.15's values (printed by
// torch for the same inputs; each case names the call), their gradients,
// dtypes and errors.
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <cmath>
#include <limits>
#include <vector>

#include "test_util.h"

namespace brisk {
namespace {

using testing::equal_values;
using testing::expect_error;

const double kNan = std::numeric_limits<double>::quiet_NaN();


Tensor x23() { return tensor<float>({1, 2, 3, 4, 5, 6}).view({2, 3}).requires_grad_(); }

TEST(CompositeOps, RepeatInterleave) {
  // torch: x.repeat_interleave(tensor([2, 0, 3]), dim=1), backward(arange(1, 11).view(2, 5))
  Tensor x = x23();
  Tensor y = x.repeat_interleave(tensor<int64_t>({2, 0, 3}), 1);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 5}));
  EXPECT_TRUE(equal_values(y, {1, 1, 3, 3, 3, 4, 4, 6, 6, 6}));
  y.backward(arange(1, 11, 1, kFloat).view({2, 5}));
  EXPECT_TRUE(equal_values(x.grad(), {3, 0, 12, 13, 0, 27}));
  // no dim: flattened; backward(arange(1, 13))
  Tensor x2 = x23();
  Tensor y2 = x2.repeat_interleave(2);
  EXPECT_EQ(y2.sizes(), IntArrayRef({12}));
  y2.backward(arange(1, 13, 1, kFloat));
  EXPECT_TRUE(equal_values(x2.grad(), {3, 7, 11, 15, 19, 23}));
  // one count for every slice, a 0-dim input, output_size, the repeats alone
  EXPECT_TRUE(equal_values(x23().repeat_interleave(tensor<int64_t>({2}), 0), {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
  EXPECT_TRUE(equal_values(scalar_tensor(5.0).repeat_interleave(3), {5, 5, 5}));
  EXPECT_EQ(x23().repeat_interleave(tensor<int64_t>({1, 2}), 0, 3).sizes(), IntArrayRef({3, 3}));
  Tensor idx = repeat_interleave(tensor<int64_t>({2, 0, 1}));
  EXPECT_EQ(idx.dtype(), kInt64);
  EXPECT_TRUE(equal_values(idx, {0, 0, 2}));
  expect_error([] { x23().repeat_interleave(tensor<int64_t>({1, 2, 3}), 0); },
               {"[repeat_interleave]", "same size as input along dim", "= 3", "= 2"});
  expect_error([] { x23().repeat_interleave(-1); }, {"[repeat_interleave]", "non-negative"});
  expect_error([] { x23().repeat_interleave(tensor<int64_t>({1, -1}), 0); }, {"[repeat_interleave]", "negative"});
  expect_error([] { x23().repeat_interleave(tensor<float>({1, 2}), 0); }, {"[repeat_interleave]", "int64", "float32"});
  expect_error([] { x23().repeat_interleave(tensor<int64_t>({1, 2}).view({1, 2}), 0); },
               {"[repeat_interleave]", "0-dim or 1-dim"});
  expect_error([] { x23().repeat_interleave(tensor<int64_t>({1, 2}), 0, 4); }, {"[repeat_interleave]", "output_size"});
  expect_error([] { x23().repeat_interleave(2, 2); }, {"[repeat_interleave]"});
  expect_error([] { scalar_tensor(2.0).repeat_interleave(2, 0); }, {"[repeat_interleave]", "0-dim"});
}

TEST(CompositeOps, DiagDiagEmbedAndTrace) {
  // torch.diag(tensor([1, 2]), 1), torch.diag(arange(6).view(2, 3), -1)
  Tensor d1 = diag(tensor<int64_t>({1, 2}), 1);
  EXPECT_EQ(d1.dtype(), kInt64);
  EXPECT_TRUE(equal_values(d1, {0, 1, 0, 0, 0, 2, 0, 0, 0}));
  EXPECT_TRUE(equal_values(diag(arange(6).view({2, 3}), -1), {3}));
  expect_error([] { diag(arange(8).view({2, 2, 2})); }, {"[diag]", "1-D or 2-D"});
  // torch.diag_embed(x, 1, 0, 2) (shape [4, 2, 4]) and its gradient for backward(arange(1, 33))
  Tensor x = x23();
  Tensor e = diag_embed(x, 1, 0, 2);
  EXPECT_EQ(e.sizes(), IntArrayRef({4, 2, 4}));
  EXPECT_TRUE(equal_values(e, {0, 1, 0, 0, 0, 4, 0, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 0, 3, 0, 0, 0, 6,
                               0, 0, 0, 0, 0, 0, 0, 0}));
  e.backward(arange(1, 33, 1, kFloat).view({4, 2, 4}));
  EXPECT_TRUE(equal_values(x.grad(), {2, 11, 20, 6, 15, 24}));
  expect_error([] { diag_embed(ones({2}), 0, 0, 0); }, {"[diag_embed]", "identical"});
  // trace: int32 -> int64; float32 accumulated in double (1e8 + 1 - 1e8 = 1), bfloat16 in
  // float32 (0), as torch's CPU kernel; the gradient is the identity's
  Tensor ti = trace(arange(6).view({2, 3}).to(kInt32));
  EXPECT_EQ(ti.dtype(), kInt64);
  EXPECT_EQ(ti.item<int64_t>(), 4);
  const Tensor big = diag(tensor<float>({1e8f, 1, -1e8f}));
  EXPECT_EQ(trace(big).item<float>(), 1.0f);
  EXPECT_EQ(trace(big.to(kBFloat16)).to(kFloat).item<float>(), 0.0f);
  Tensor x2 = x23();
  x2.trace().backward();
  EXPECT_TRUE(equal_values(x2.grad(), {1, 0, 0, 0, 1, 0}));
  // an empty diagonal: 0, and still a function of the input (torch: requires_grad)
  Tensor e0 = ones({0, 3}).requires_grad_();
  Tensor te = trace(e0);
  EXPECT_TRUE(te.requires_grad());
  EXPECT_EQ(te.item<float>(), 0.0f);
  expect_error([] { trace(ones({2, 2, 2})); }, {"[trace]", "matrix"});
  expect_error([] { trace(ones({2, 2}, kBool)); }, {"[trace]", "bool"});
}

TEST(CompositeOps, TrilAndTriuIndices) {
  // torch.tril_indices(4, 3, 1), torch.triu_indices(3, 3, -1)
  Tensor l = tril_indices(4, 3, 1);
  EXPECT_EQ(l.dtype(), kInt64);
  EXPECT_EQ(l.sizes(), IntArrayRef({2, 11}));
  EXPECT_TRUE(equal_values(l, {0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 0, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_TRUE(equal_values(triu_indices(3, 3, -1), {0, 0, 0, 1, 1, 1, 2, 2, 0, 1, 2, 0, 1, 2, 1, 2}));
  EXPECT_EQ(tril_indices(0, 3).sizes(), IntArrayRef({2, 0}));
  EXPECT_EQ(triu_indices(2, 2, 5).sizes(), IntArrayRef({2, 0}));
  EXPECT_EQ(tril_indices(3, 3, 0, TensorOptions(kInt32)).dtype(), kInt32);
  expect_error([] { tril_indices(-1, 3); }, {"[tril_indices]", "row must be non-negative"});
}

TEST(CompositeOps, NansumNanmeanAndCountNonzero) {
  // torch: v = [[1, nan, 3], [nan, nan, 2]]; nansum(v, 1), nanmean(v, 1), the gradient of
  // their sum; nansum(v), nanmean(v)
  Tensor v = tensor<double>({1, kNan, 3, kNan, kNan, 2}).to(kFloat).view({2, 3}).requires_grad_();
  Tensor s = nansum(v, {1}), m = nanmean(v, {1});
  EXPECT_TRUE(equal_values(s, {4, 2}));
  EXPECT_TRUE(equal_values(m, {2, 2}));
  (s.sum() + m.sum()).backward();
  EXPECT_TRUE(equal_values(v.grad(), {1.5, 0, 1.5, 0, 0, 2}));
  // the gradient is PyTorch's grad * ~isnan(x), a multiply: an infinite incoming gradient is NaN
  // at the NaNs (torch: backward(inf) of nansum([1, nan, 2]) -> [inf, nan, inf])
  Tensor w = tensor<double>({1, kNan, 2}).to(kFloat).requires_grad_();
  (nansum(w) * std::numeric_limits<double>::infinity()).backward();
  EXPECT_TRUE(equal_values(w.grad(), {std::numeric_limits<double>::infinity(), kNan,
                                      std::numeric_limits<double>::infinity()}));
  EXPECT_TRUE(equal_values(v.nansum(), {6}));
  // a 0-dim input over dim 0 (the fuzzer's seed 661 case 1322 crashed here)
  Tensor s0 = scalar_tensor(1.0, kFloat).requires_grad_();
  Tensor r0 = nansum(s0, {0});
  r0.backward();
  EXPECT_TRUE(equal_values(s0.grad(), {1}));
  EXPECT_TRUE(equal_values(v.nanmean(), {2}));
  EXPECT_EQ(v.nanmean({0, 1}, true).sizes(), IntArrayRef({1, 1}));
  EXPECT_TRUE(equal_values(nanmean(tensor<double>({kNan, kNan}).to(kFloat)), {kNan}));
  EXPECT_EQ(nansum(tensor<int64_t>({1, 2})).item<int64_t>(), 3);
  expect_error([] { nanmean(tensor<int64_t>({1, 2})); }, {"[nanmean]", "floating point", "int64"});
  // count_nonzero: a NaN is nonzero; int64 results
  const Tensor c = tensor<double>({0, 1, 2, kNan}).view({2, 2});
  Tensor n = count_nonzero(c);
  EXPECT_EQ(n.dtype(), kInt64);
  EXPECT_EQ(n.item<int64_t>(), 3);
  EXPECT_TRUE(equal_values(c.count_nonzero(0), {1, 2}));
  EXPECT_TRUE(equal_values(count_nonzero(tensor<double>({0, 1, 2, 0}).view({2, 2}), {0, 1}), {2}));
}

TEST(CompositeOps, FlipsRotationsAndOtherNames) {
  // torch.rot90(arange(6).view(2, 3), k) for k = 1, 2, -1; rot90(..., 3, [1, 0]); and a 3-D
  // rotation in dims [2, 0]
  const Tensor a = arange(6).view({2, 3});
  Tensor r1 = rot90(a);
  EXPECT_EQ(r1.sizes(), IntArrayRef({3, 2}));
  EXPECT_TRUE(equal_values(r1, {2, 5, 1, 4, 0, 3}));
  EXPECT_TRUE(equal_values(rot90(a, 2), {5, 4, 3, 2, 1, 0}));
  EXPECT_TRUE(equal_values(rot90(a, -1), {3, 0, 4, 1, 5, 2}));
  EXPECT_TRUE(equal_values(a.rot90(3, {1, 0}), {2, 5, 1, 4, 0, 3}));
  Tensor r3 = rot90(arange(24).view({2, 3, 4}), 1, {2, 0});
  EXPECT_EQ(r3.sizes(), IntArrayRef({4, 3, 2}));
  EXPECT_TRUE(equal_values(r3, {12, 0, 16, 4, 20, 8, 13, 1, 17, 5, 21, 9, 14, 2, 18, 6, 22, 10, 15, 3, 19, 7, 23, 11}));
  EXPECT_TRUE(equal_values(rot90(a, 4), {0, 1, 2, 3, 4, 5}));
  expect_error([&] { rot90(a, 1, {0, 0}); }, {"[rot90]", "different"});
  expect_error([] { rot90(arange(6)); }, {"[rot90]", "total dims >= 2"});
  EXPECT_TRUE(equal_values(fliplr(a), {2, 1, 0, 5, 4, 3}));
  EXPECT_TRUE(equal_values(a.flipud(), {3, 4, 5, 0, 1, 2}));
  expect_error([] { fliplr(arange(6)); }, {"[fliplr]", ">= 2-d"});
  expect_error([] { flipud(scalar_tensor(1.0)); }, {"[flipud]", ">= 1-d"});
  // transpose's other names, sgn
  const Tensor z = zeros({2, 3, 4});
  EXPECT_EQ(swapdims(z, 0, 2).sizes(), IntArrayRef({4, 3, 2}));
  EXPECT_EQ(z.swapaxes(1, 2).sizes(), IntArrayRef({2, 4, 3}));
  EXPECT_EQ(z.adjoint().sizes(), IntArrayRef({2, 4, 3}));
  EXPECT_TRUE(equal_values(sgn(tensor<int64_t>({-2, 0, 3})), {-1, 0, 1}));
  EXPECT_EQ(tensor<int64_t>({-2, 0, 3}).sgn().dtype(), kInt64);
}

}  // namespace
}  // namespace brisk
