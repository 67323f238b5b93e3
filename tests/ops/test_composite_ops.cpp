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


TEST(CompositeOps, TakeAlongDim) {
  // torch: x = arange(1., 7.).view(2, 3); take_along_dim(x, [[2, 0], [1, 1]], 1) = [[3, 1], [5, 5]];
  // no dim: take_along_dim(x, [5, 0, 2]) = [6, 1, 3]; broadcast: (x, [[0], [2]], 1) = [[1], [6]],
  // (x, [[1, 0, 1]], 0) = [[4, 2, 6]]; the gradient of the first, summed: [[1, 0, 1], [0, 2, 0]]
  Tensor x = x23();
  Tensor y = take_along_dim(x, tensor<int64_t>({2, 0, 1, 1}).view({2, 2}), 1);
  EXPECT_TRUE(equal_values(y, {3, 1, 5, 5}));
  y.sum().backward();
  EXPECT_TRUE(equal_values(x.grad(), {1, 0, 1, 0, 2, 0}));
  EXPECT_TRUE(equal_values(x23().take_along_dim(tensor<int64_t>({5, 0, 2})), {6, 1, 3}));
  EXPECT_TRUE(equal_values(take_along_dim(x23(), tensor<int64_t>({0, 2}).view({2, 1}), 1), {1, 6}));
  const Tensor b = take_along_dim(x23(), tensor<int64_t>({1, 0, 1}).view({1, 3}), 0);
  EXPECT_EQ(b.sizes(), IntArrayRef({1, 3}));
  EXPECT_TRUE(equal_values(b, {4, 2, 6}));
  expect_error([] { take_along_dim(x23(), tensor<int64_t>({0}).view({1, 1}).to(kInt32), 1); }, {"[take_along_dim]", "int64"});
  expect_error([] { take_along_dim(x23(), tensor<int64_t>({0}), 1); }, {"[take_along_dim]", "number of dimensions"});
  expect_error([] { take_along_dim(scalar_tensor(5.0), scalar_tensor(0, kInt64), 0); }, {"[take_along_dim]", "no dimensions"});
  // torch 2.x takes the indices modulo the dim: take_along_dim([[1, 2, 3]], [[-1]], 1) = [[3]], [[5]] gives 3 too
  EXPECT_TRUE(equal_values(take_along_dim(tensor<float>({1, 2, 3}).view({1, 3}), tensor<int64_t>({-1, 5, -4}).view({1, 3}), 1),
                           {3, 3, 3}));
}

TEST(CompositeOps, Diff) {
  // torch: diff([1, 4, 9, 16]) = [3, 5, 7], n=2: [2, 2]; 2-D dim 0: [[3, 3, 3]]; prepend [[0], [0]] and
  // append [[10], [20]] on dim -1: [[1, 1, 1, 7], [4, 1, 1, 14]]; bool: xor [True, False, True];
  // int64 stays int64; n past the length gives an empty tensor
  const Tensor v = tensor<float>({1, 4, 9, 16});
  EXPECT_TRUE(equal_values(diff(v), {3, 5, 7}));
  EXPECT_TRUE(equal_values(v.diff(2), {2, 2}));
  EXPECT_TRUE(equal_values(diff(x23(), 1, 0), {3, 3, 3}));
  EXPECT_TRUE(equal_values(diff(x23(), 1, -1, tensor<float>({0, 0}).view({2, 1}), tensor<float>({10, 20}).view({2, 1})),
                           {1, 1, 1, 7, 4, 1, 1, 14}));
  const Tensor bd = diff(tensor<bool>({true, false, false, true}));
  EXPECT_EQ(bd.dtype(), kBool);
  EXPECT_TRUE(equal_values(bd, {1, 0, 1}));
  EXPECT_EQ(diff(tensor<int64_t>({1, 5, 2})).dtype(), kInt64);
  EXPECT_EQ(diff(tensor<float>({1, 2}), 3).numel(), 0);
  expect_error([] { diff(scalar_tensor(1.0)); }, {"[diff]", "one-dimensional"});
  // torch: diff([1, 2, 4], n=0, prepend=[0.5]) = [1, 2, 4] (int64, a copy); a prepend of other dims raises
  const Tensor i3 = tensor<int64_t>({1, 2, 4});
  const Tensor d0 = diff(i3, 0, -1, tensor<float>({0.5}));
  EXPECT_EQ(d0.dtype(), kInt64);
  EXPECT_TRUE(equal_values(d0, {1, 2, 4}));
  EXPECT_NE(d0.data_ptr(), i3.data_ptr());
  expect_error([] { diff(ones({2, 3}), 1, -1, scalar_tensor(1.0)); }, {"[diff]", "same dimension"});
}

TEST(CompositeOps, KronCrossBlockDiagCartesianProd) {
  // torch: kron([[1, 2], [3, 4]], [[0, 1], [1, 0]]) = [[0, 1, 0, 2], [1, 0, 2, 0], [0, 3, 0, 4], [3, 0, 4, 0]];
  // kron([1., 2.], [[1, 10], [100, 1000]]) = [[1, 10, 2, 20], [100, 1000, 200, 2000]]; int with float: float32
  EXPECT_TRUE(equal_values(kron(tensor<int64_t>({1, 2, 3, 4}).view({2, 2}), tensor<int64_t>({0, 1, 1, 0}).view({2, 2})),
                           {0, 1, 0, 2, 1, 0, 2, 0, 0, 3, 0, 4, 3, 0, 4, 0}));
  const Tensor k = kron(tensor<float>({1, 2}), tensor<float>({1, 10, 100, 1000}).view({2, 2}));
  EXPECT_EQ(k.sizes(), IntArrayRef({2, 4}));
  EXPECT_TRUE(equal_values(k, {1, 10, 2, 20, 100, 1000, 200, 2000}));
  EXPECT_EQ(kron(tensor<int64_t>({1, 2}), tensor<float>({0.5})).dtype(), kFloat);
  // cross([[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [1, 0, -1]], dim=1) = [[-6, 12, -6], [-5, 10, -5]] (also linalg.cross)
  const Tensor a = tensor<float>({1, 2, 3, 4, 5, 6}).view({2, 3}), b = tensor<float>({7, 8, 9, 1, 0, -1}).view({2, 3});
  EXPECT_TRUE(equal_values(cross(a, b, 1), {-6, 12, -6, -5, 10, -5}));
  EXPECT_TRUE(equal_values(linalg_cross(a, b), {-6, 12, -6, -5, 10, -5}));
  // without a dim: the first dim of size 3 (dim 0 of a 3x2 input; torch: cross(at, bt) = cross(..., dim=0))
  const Tensor at = a.t().contiguous(), bt = b.t().contiguous();
  EXPECT_TRUE(equal_values(at.cross(bt), {-6, -5, 12, 10, -6, -5}));
  // and it broadcasts (torch.cross(ones(1, 3), ones(4, 3)) has shape (4, 3))
  EXPECT_EQ(cross(ones({1, 3}), ones({4, 3})).sizes(), IntArrayRef({4, 3}));
  expect_error([&] { linalg_cross(a.view({3, 2}), b.view({3, 2})); }, {"[linalg_cross]", "size 3"});
  expect_error([&] { linalg_cross(a.to(kInt64), b); }, {"[linalg_cross]", "dtype"});
  expect_error([] { linalg_cross(scalar_tensor(1.0), scalar_tensor(1.0), 0); }, {"[linalg_cross]"});
  // block_diag([[1, 2], [3, 4]], [5.], 7) = [[1, 2, 0, 0], [3, 4, 0, 0], [0, 0, 5, 0], [0, 0, 0, 7]] (float32);
  // block_diag(zeros(0, 2), ones(1, 1)) = [[0, 0, 1]]; block_diag() has shape (1, 0)
  const Tensor bd = block_diag({tensor<int64_t>({1, 2, 3, 4}).view({2, 2}), tensor<float>({5}), scalar_tensor(7, kInt64)});
  EXPECT_EQ(bd.dtype(), kFloat);
  EXPECT_TRUE(equal_values(bd, {1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 5, 0, 0, 0, 0, 7}));
  EXPECT_TRUE(equal_values(block_diag({zeros({0, 2}), ones({1, 1})}), {0, 0, 1}));
  EXPECT_EQ(block_diag({}).sizes(), IntArrayRef({1, 0}));
  // torch's result_type: a 0-dim float64 with a float32 vector gives float32; bool with int64 gives int64
  EXPECT_EQ(block_diag({scalar_tensor(2.0, kDouble), tensor<float>({1.5})}).dtype(), kFloat);
  EXPECT_EQ(block_diag({tensor<bool>({true}), tensor<int64_t>({2})}).dtype(), kInt64);
  Tensor m = tensor<float>({1, 2}).requires_grad_();
  block_diag({m, m * 3}).sum().backward();
  EXPECT_TRUE(equal_values(m.grad(), {4, 4}));
  // cartesian_prod([1, 2], [3, 4, 5]) = [[1, 3], [1, 4], [1, 5], [2, 3], [2, 4], [2, 5]]; one input: itself
  EXPECT_TRUE(equal_values(cartesian_prod({tensor<int64_t>({1, 2}), tensor<int64_t>({3, 4, 5})}),
                           {1, 3, 1, 4, 1, 5, 2, 3, 2, 4, 2, 5}));
  EXPECT_TRUE(equal_values(cartesian_prod({tensor<int64_t>({1, 2})}), {1, 2}));
}

TEST(CompositeOps, AtLeastColumnStackClip) {
  // torch: atleast_1d(0-dim) (1); atleast_2d([1, 2]) (1, 2); atleast_3d([1, 2]) (1, 2, 1), (2, 3) -> (2, 3, 1),
  // 0-dim -> (1, 1, 1); atleast_2d of 3 dims unchanged
  EXPECT_EQ(atleast_1d(scalar_tensor(1.0)).sizes(), IntArrayRef({1}));
  EXPECT_EQ(atleast_2d(tensor<float>({1, 2})).sizes(), IntArrayRef({1, 2}));
  EXPECT_EQ(atleast_3d(tensor<float>({1, 2})).sizes(), IntArrayRef({1, 2, 1}));
  EXPECT_EQ(atleast_3d(ones({2, 3})).sizes(), IntArrayRef({2, 3, 1}));
  EXPECT_EQ(atleast_3d(scalar_tensor(1.0)).sizes(), IntArrayRef({1, 1, 1}));
  EXPECT_EQ(atleast_2d(ones({2, 3, 4})).sizes(), IntArrayRef({2, 3, 4}));
  // column_stack([1, 2], [[3, 4], [5, 6]], [7, 8]) = [[1, 3, 4, 7], [2, 5, 6, 8]]
  EXPECT_TRUE(equal_values(column_stack({tensor<int64_t>({1, 2}), tensor<int64_t>({3, 4, 5, 6}).view({2, 2}),
                                         tensor<int64_t>({7, 8})}),
                           {1, 3, 4, 7, 2, 5, 6, 8}));
  // clip([-2, 0.5, 3], -1, 1) = [-1, 0.5, 1]
  EXPECT_TRUE(equal_values(clip(tensor<float>({-2, 0.5, 3}), -1, 1), {-1, 0.5, 1}));
  Tensor c = tensor<float>({-2, 0.5, 3});
  c.clip_(std::nullopt, 1);
  EXPECT_TRUE(equal_values(c, {-2, 0.5, 1}));
}

}  // namespace
}  // namespace brisk
