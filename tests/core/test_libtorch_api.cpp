// libtorch's small tensor API as ported code uses it (issue 14): bool
// indices copy, new tensors start at version 0, x.to(kCPU), assignment into
// views, in-place methods on const tensors, tensor() of nested braces and
// scalars, arange/linspace with options, resize_, the reduction enums and
// the free functions of brisk/functions.h, c10:: spellings. Expected values
// come from PyTorch 2.15 (printed by torch.* with the same arguments).
#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"

namespace brisk {
namespace {

using testing::close;
using testing::expect_error;

std::vector<float> fvals(const Tensor& t) { return t.to_vector<float>(); }

// ---- 1a: bool indices are advanced indices (copies) ----------------------------------

TEST(LibtorchApi, BoolIndexCopies) {
  Tensor a = ones({2, 3});
  Tensor b = a.index({true});
  EXPECT_EQ(b.sizes().vec(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(b.is_alias_of(a));
  b.fill_(5);
  EXPECT_EQ(a.sum().item<double>(), 6.0);

  Tensor c = a.index({Slice(), true});
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_FALSE(c.is_alias_of(a));
  c.fill_(5);
  EXPECT_EQ(a.sum().item<double>(), 6.0);

  Tensor d = a.index({scalar_tensor(true)});  // a 0-dim bool tensor
  EXPECT_EQ(d.sizes().vec(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(d.is_alias_of(a));
  d.fill_(5);
  EXPECT_EQ(a.sum().item<double>(), 6.0);

  // False: a new dim of size 0
  EXPECT_EQ(a.index({false}).sizes().vec(), (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(a.index({Slice(), false}).sizes().vec(), (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(a.index({scalar_tensor(false)}).sizes().vec(), (std::vector<int64_t>{0, 2, 3}));
  // the copy is a fresh tensor
  EXPECT_EQ(b._version(), 1u);  // its fill_
  EXPECT_EQ(a.index({true})._version(), 0u);
}

TEST(LibtorchApi, BoolIndexGradient) {
  Tensor a = arange(6, kFloat).reshape({2, 3}).requires_grad_();
  Tensor y = a.index({Slice(), true});
  (y * y).sum().backward();
  EXPECT_TRUE(close(a.grad(), a.detach() * 2));
}

// ---- 1b: version counters -----------------------------------------------------------------

TEST(LibtorchApi, NewTensorsStartAtVersionZero) {
  Tensor x = randn({3, 4});
  Tensor i = tensor({0, 2});
  Tensor z = zeros({1, 4}, kInt64);
  namespace F = nn::functional;
  const std::vector<std::pair<const char*, Tensor>> cases = {
      {"ones", ones({3})},
      {"zeros", zeros({3})},
      {"full", full({3}, 2.0)},
      {"empty", empty({3})},
      {"eye", eye(3)},
      {"eye(n, m)", eye(3, 4)},
      {"arange", arange(5)},
      {"arange float", arange(0.0, 1.0, 0.1)},
      {"linspace", linspace(0, 1, 5)},
      {"rand", rand({3})},
      {"randn", randn({3})},
      {"randint", randint(0, 5, {3})},
      {"randperm", randperm(5)},
      {"tensor", tensor({1, 2})},
      {"tensor float", tensor({1.f, 2.f})},
      {"tensor 2-D", tensor({{1, 2}, {3, 4}})},
      {"tensor 3-D", tensor({{{1, 2}}, {{3, 4}}})},
      {"tensor scalar", tensor(3.5)},
      {"tensor vector", tensor(std::vector<float>{1, 2})},
      {"scalar_tensor", scalar_tensor(3)},
      {"zeros_like", zeros_like(x)},
      {"ones_like", ones_like(x)},
      {"full_like", full_like(x, 3)},
      {"rand_like", rand_like(x)},
      {"randn_like", randn_like(x)},
      {"empty_like", empty_like(x)},
      {"from_blob", from_blob(x.data_ptr(), {12})},
      {"clone", x.clone()},
      {"contiguous", x.t().contiguous()},
      {"to", x.to(kDouble)},
      {"to copy", x.to(kCPU, kFloat, false, true)},
      {"add", x + 1},
      {"index_select", x.index_select(0, i)},
      {"index", x.index({i})},
      {"masked_fill", x.masked_fill(x > 0, 1)},
      {"scatter", x.scatter(0, z, 1.0)},
      {"scatter_add", x.scatter_add(0, z, x.slice(0, 0, 1))},
      {"index_put", x.index_put({i}, scalar_tensor(1.f))},
      {"pad", pad(x, {1, 1})},
      {"cat", cat({x, x})},
      {"stack", stack({x, x})},
      {"hstack", hstack({x, x})},
      {"vstack", vstack({x, x})},
      {"repeat", x.repeat({2, 1})},
      {"tile", x.tile({2})},
      {"flip", x.flip({0})},
      {"roll", x.roll({1}, {0})},
      {"tril", x.tril()},
      {"nonzero", x.nonzero()},
      {"sort", std::get<0>(x.sort())},
      {"cumsum", x.cumsum(0)},
      {"sum", x.sum()},
      {"logsumexp", x.logsumexp(0)},
      {"matmul", x.matmul(x.t())},
      {"bmm", x.unsqueeze(0).bmm(x.t().unsqueeze(0))},
      {"addmm", zeros({3, 3}).addmm(x, x.t())},
      {"einsum", einsum("ij,kj->ik", {x, x})},
      {"nan_to_num", x.nan_to_num()},
      {"where", where(x > 0, x, 0.0)},
      {"bernoulli", bernoulli(rand({3}))},
      {"embedding", F::embedding(i, x)},
      {"dropout", F::dropout(x, 0.5)},
      {"linear", F::linear(x, x)},
      {"cross_entropy", F::cross_entropy(x, tensor({0, 1, 2}))},
      {"layer_norm", F::layer_norm(x, {4})},
      {"max_pool2d", max_pool2d(x.view({1, 1, 3, 4}), {2})},
      {"conv2d", conv2d(x.view({1, 1, 3, 4}), ones({1, 1, 2, 2}))},
  };
  for (const auto& [name, t] : cases) EXPECT_EQ(t._version(), 0u) << name;
}

TEST(LibtorchApi, InPlaceOpsBumpTheVersionByOne) {
  Tensor a = ones({3});
  a.add_(1);
  EXPECT_EQ(a._version(), 1u);
  a.zero_();
  EXPECT_EQ(a._version(), 2u);
  a.copy_(full({3}, 2.0));
  EXPECT_EQ(a._version(), 3u);
  a[0] = 5;  // x[i] = v (Note [Assignment to a tensor])
  EXPECT_EQ(a._version(), 4u);
  a.index_put_({tensor({0})}, scalar_tensor(1.f));
  EXPECT_EQ(a._version(), 5u);
  a.resize_({5});
  EXPECT_EQ(a._version(), 6u);
  a.resize_({5});  // same size: nothing happens (torch)
  EXPECT_EQ(a._version(), 6u);
  Tensor v = a.view({5});  // views share the counter
  v.mul_(2);
  EXPECT_EQ(a._version(), 7u);
  Tensor d = a.detach();
  d.add_(1);
  EXPECT_EQ(a._version(), 8u);
  Tensor e = eye(3);
  e.uniform_();
  EXPECT_EQ(e._version(), 1u);
  Tensor m = ones({3, 3});
  m.index_put_({true}, 1.0);
  EXPECT_EQ(m._version(), 1u);
  m.index_put_({false}, 1.0);  // torch: x[False] = v changes nothing
  EXPECT_EQ(m._version(), 1u);
}

TEST(LibtorchApi, VersionChecksStillCatchModifiedSavedTensors) {
  // A result made with in-place ops inside (cat) and saved by the next op:
  // changing it in place is still detected, and the message counts from 0.
  Tensor w = ones({2}, TensorOptions(kFloat).requires_grad(true));
  Tensor c = cat({w, w});
  Tensor y = c.exp();  // saves its output
  EXPECT_EQ(y._version(), 0u);
  y.add_(1);
  expect_error([&] { y.sum().backward(); }, {"modified by an inplace operation", "is at version 1",
                                             "expected version 0"});
  // and an unmodified one passes
  Tensor c2 = cat({w, w});
  c2.exp().sum().backward();
  EXPECT_TRUE(close(w.grad(), full({2}, 2 * std::exp(1.0))));
}

// ---- 1c: to(device), to(device, dtype), to(tensor) --------------------------------------

TEST(LibtorchApi, ToDeviceType) {
  Tensor x = arange(4, kFloat);
  Tensor a = x.to(kCPU);
  EXPECT_TRUE(a.is_same(x));  // nothing to do: the same tensor, as torch
  Tensor b = x.to(kCPU, kDouble);
  EXPECT_EQ(b.dtype(), kDouble);
  EXPECT_TRUE(b.is_cpu());
  Tensor c = x.to(brisk::kCPU, kFloat, /*non_blocking=*/false, /*copy=*/true);
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_TRUE(c.equal(x));
  Tensor d = x.to(Device(kCPU), kInt64);
  EXPECT_EQ(d.dtype(), kInt64);
  Tensor e = x.to(kCPU, /*non_blocking=*/true);
  EXPECT_TRUE(e.is_same(x));
  Tensor other = zeros({1}, kInt32);
  Tensor f = x.to(other);
  EXPECT_EQ(f.dtype(), kInt32);
  EXPECT_EQ(f.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(x.to(x).is_same(x));
  EXPECT_EQ(x.toType(kDouble).dtype(), kDouble);
  EXPECT_EQ(x.type_as(other).dtype(), kInt32);
  if (cuda::is_available()) {
    Tensor g = x.to(kCUDA);
    EXPECT_TRUE(g.is_cuda());
    EXPECT_TRUE(g.to(kCPU).equal(x));
  } else {
    expect_error([&] { x.to(kCUDA); }, {"to", "cuda"});
  }
}

// ---- 5: assignment into a temporary writes into the tensor -------------------------------

TEST(LibtorchApi, AssignmentToTemporariesWritesThrough) {
  Tensor x = zeros({3, 2});
  x[1] = 5;  // fill_
  EXPECT_EQ(fvals(x), (std::vector<float>{0, 0, 5, 5, 0, 0}));
  x.index({0}) = tensor({1.f, 2.f});  // copy_
  EXPECT_EQ(fvals(x), (std::vector<float>{1, 2, 5, 5, 0, 0}));
  x.select(0, 2) = x[0];  // copy_ from another view
  EXPECT_EQ(fvals(x), (std::vector<float>{1, 2, 5, 5, 1, 2}));
  x.index({Slice(), 1}) = tensor(7);  // broadcast, converted from int64
  EXPECT_EQ(fvals(x), (std::vector<float>{1, 7, 5, 7, 1, 7}));
  Tensor y = x[0];
  x[0][1] = 9;
  EXPECT_EQ(y[1].item<float>(), 9.f);

  // Lvalue assignment still rebinds the handle.
  Tensor a = ones({2});
  Tensor b = zeros({2});
  Tensor keep = a;
  a = b;
  EXPECT_TRUE(a.is_same(b));
  EXPECT_EQ(fvals(keep), (std::vector<float>{1, 1}));
  a = Tensor();
  EXPECT_FALSE(a.defined());
  EXPECT_EQ(fvals(b), (std::vector<float>{0, 0}));
  expect_error([&] { x[0] = ones({3}); }, {"copy_"});  // shapes that do not broadcast
}

TEST(LibtorchApi, AssignmentToTemporariesIsDifferentiable) {
  // y = x.clone(); y[1] = w * 3; gradient of sum(y * c): x gets c except
  // row 1, w gets 3 * sum(c[1]) (torch).
  Tensor x = arange(6, kFloat).reshape({3, 2}).clone().requires_grad_();
  Tensor w = full({2}, 2.0, TensorOptions(kFloat).requires_grad(true));
  Tensor c = arange(6, kFloat).reshape({3, 2}) + 1;
  Tensor y = x.clone();
  y[1] = w * 3;
  y.index({2}) = 0.5;
  EXPECT_EQ(fvals(y), (std::vector<float>{0, 1, 6, 6, 0.5, 0.5}));
  (y * c).sum().backward();
  EXPECT_EQ(fvals(x.grad()), (std::vector<float>{1, 2, 0, 0, 0, 0}));
  EXPECT_EQ(fvals(w.grad()), (std::vector<float>{9, 12}));
  // writing into a leaf that requires grad is refused as copy_ is
  expect_error([&] { x[0] = 1; }, {"fill_"});
}

// ---- 7: in-place methods on const tensors ----------------------------------------------------

void mutate(const Tensor& t, const Tensor& src) {
  t.add_(1);
  t.mul_(2);
  t.sub_(src);
  t.div_(2);
  t.clamp_(-10, 10);
  t.exp_();
  t.log_();
  t.relu_();
  t.copy_(t * 1);
  t.index_put_({0}, 3.0);
  t.masked_fill_(t > 100, 0);
  t.fill_(2);
  t.zero_();
  t.add_(src, 0.5);
  t.uniform_(0, 1);
  t.zero_();
  t.add_(1);
}

TEST(LibtorchApi, InPlaceMethodsOnConstTensors) {
  Tensor t = zeros({3});
  const Tensor& ref = t;
  mutate(ref, full({3}, 2.0));
  EXPECT_EQ(fvals(t), (std::vector<float>{1, 1, 1}));
  const Tensor leaf = ones({2});
  leaf.requires_grad_();
  EXPECT_TRUE(leaf.requires_grad());
  leaf.set_requires_grad(false);
  EXPECT_FALSE(leaf.requires_grad());
  const Tensor r = ones({4});
  r.resize_({2});
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2}));
  Tensor& back = r.zero_();  // libtorch returns Tensor& from a const method
  EXPECT_TRUE(back.is_same(r));
}

// ---- 2: tensor(...) of nested braces, mixed literals and scalars -------------------------------

TEST(LibtorchApi, TensorFromNestedBraces) {
  Tensor a = tensor({{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}});
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 2, 2}));
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  Tensor b = tensor({{{{1.5}}, {{2.5}}}});
  EXPECT_EQ(b.sizes().vec(), (std::vector<int64_t>{1, 2, 1, 1}));
  EXPECT_EQ(b.dtype(), kFloat);  // torch.tensor([[[[1.5]], [[2.5]]]]).dtype
  Tensor c = tensor({{{1, 2}, {3, 4}}}, kDouble);
  EXPECT_EQ(c.dtype(), kDouble);
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{1, 2, 3, 4}));

  // mixed literal types promote as Python's do
  Tensor m = tensor({1, 2.5});
  EXPECT_EQ(m.dtype(), kFloat);
  EXPECT_EQ(fvals(m), (std::vector<float>{1, 2.5}));
  EXPECT_EQ(tensor({true, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({{1, 2}, {3.5, 4}}).dtype(), kFloat);
  Tensor bl = tensor({true, false});
  EXPECT_EQ(bl.dtype(), kBool);
  EXPECT_EQ(bl.to_vector<bool>(), (std::vector<bool>{true, false}));
  // big integers stay exact
  EXPECT_EQ(tensor({{int64_t{1} << 60, 1}}).to_vector<int64_t>()[0], int64_t{1} << 60);

  // ragged nesting
  expect_error([] { tensor({{1, 2}, {3}}); }, {"tensor", "ragged"});
  expect_error([] { tensor({{{1, 2}}, {{3, 4}, {5, 6}}}); }, {"tensor", "ragged"});
  expect_error([] { tensor({{1, 2}, 3.5}); }, {"tensor", "ragged"});
}

TEST(LibtorchApi, TensorFromScalar) {
  Tensor a = tensor(3.5);
  EXPECT_EQ(a.dim(), 0);
  EXPECT_EQ(a.dtype(), kFloat);
  EXPECT_EQ(a.item<double>(), 3.5);
  Tensor b = tensor(3);
  EXPECT_EQ(b.dim(), 0);
  EXPECT_EQ(b.dtype(), kInt64);
  EXPECT_EQ(b.item<int64_t>(), 3);
  EXPECT_EQ(tensor(true).dtype(), kBool);
  EXPECT_EQ(tensor(2.5f).dtype(), kFloat);
  Tensor c = tensor(3.5, kDouble);
  EXPECT_EQ(c.dtype(), kDouble);
  Tensor d = tensor(1.5, TensorOptions(kFloat).requires_grad(true));
  EXPECT_TRUE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  expect_error([] { tensor(3, TensorOptions(kInt64).requires_grad(true)); }, {"requires_grad", "floating"});
}

// ---- 3: arange and linspace with options ---------------------------------------------------------

TEST(LibtorchApi, ArangeWithOptions) {
  Tensor a = arange(0, 5, kFloat);  // torch.arange(0, 5, dtype=torch.float32)
  EXPECT_EQ(a.dtype(), kFloat);
  EXPECT_EQ(fvals(a), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(0, 5).dtype(), kInt64);
  EXPECT_EQ(arange(0.0, 5).dtype(), kFloat);
  EXPECT_EQ(arange(5, dtype(kDouble)).dtype(), kDouble);
  Tensor b = arange(0, 5, 2, TensorOptions(kDouble));
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{0, 2, 4}));
  Tensor c = arange(1, 3, TensorOptions(kFloat).requires_grad(true));
  EXPECT_TRUE(c.requires_grad());
  Tensor l = linspace(0, 1, 5, kDouble);
  EXPECT_EQ(l.dtype(), kDouble);
  EXPECT_EQ(l.to_vector<double>(), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
}

// ---- 4: resize_ ------------------------------------------------------------------------------------------

TEST(LibtorchApi, Resize) {
  Tensor a = arange(6, kFloat);
  const void* p = a.data_ptr();
  a.resize_({2, 2});  // shrinking keeps the leading elements in place
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(a.strides().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(a.data_ptr(), p);
  EXPECT_EQ(fvals(a), (std::vector<float>{0, 1, 2, 3}));
  a.resize_({2, 3});  // within the storage: the old elements are back
  EXPECT_EQ(a.data_ptr(), p);
  EXPECT_EQ(fvals(a), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  a.resize_({3, 3});  // grows: the old bytes move along
  EXPECT_EQ(a.numel(), 9);
  EXPECT_EQ(fvals(a.flatten().slice(0, 0, 6)), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  a.resize_({0});
  EXPECT_EQ(a.numel(), 0);

  // an offset view resizes from its offset (torch: arange(6)[1:].resize_(2, 2))
  Tensor v = arange(6, kFloat).slice(0, 1);
  v.resize_({2, 2});
  EXPECT_EQ(v.storage_offset(), 1);
  EXPECT_EQ(fvals(v), (std::vector<float>{1, 2, 3, 4}));
  // growing a view grows the storage every view shares (torch)
  Tensor base = ones({4});
  Tensor head = base.slice(0, 0, 2);
  head.resize_({8});
  EXPECT_EQ(head.data_ptr(), base.data_ptr());
  EXPECT_EQ(fvals(base), (std::vector<float>{1, 1, 1, 1}));
  // a non-contiguous tensor of the same sizes is left alone
  Tensor t = arange(6, kFloat).view({2, 3}).t();
  t.resize_({3, 2});
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 3}));

  expect_error([] { ones({2}, TensorOptions(kFloat).requires_grad(true)).resize_({3}); },
               {"resize_", "require grad"});
  float buf[4] = {1, 2, 3, 4};
  Tensor blob = from_blob(buf, {4});
  blob.resize_({2});  // shrinking foreign memory is fine
  EXPECT_EQ(fvals(blob), (std::vector<float>{1, 2}));
  expect_error([&] { blob.resize_({8}); }, {"resize_", "not resizable"});
  expect_error([] { ones({2}).resize_({-1}); }, {"resize_", "negative"});
}

// ---- 8: reduction enums in the top namespace ----------------------------------------------------------

TEST(LibtorchApi, ReductionEnums) {
  static_assert(std::is_same_v<Reduction, nn::Reduction>);
  static_assert(kSum == Reduction::Sum && nn::kSum == kSum && kMean == nn::kMean && kNone == nn::kNone);
  Tensor a = tensor({0.f, 1.f, 3.f}), b = tensor({0.5f, -1.f, 3.2f});
  EXPECT_NEAR(nn::functional::mse_loss(a, b, kSum).item<double>(), 4.29, 1e-5);
  EXPECT_NEAR(mse_loss(a, b, Reduction::Sum).item<double>(), 4.29, 1e-5);
  EXPECT_EQ(mse_loss(a, b, kNone).numel(), 3);
}

// ---- 9: free functions with ATen's signatures --------------------------------------------------------------

TEST(LibtorchApi, PoolingFreeFunctions) {
  Tensor x = arange(16, kFloat).reshape({1, 1, 4, 4}) / 7 - 1;
  // torch.max_pool2d(x, [2], [1], [0], [1], False)
  EXPECT_TRUE(close(max_pool2d(x, {2}, {1}).flatten(),
                    tensor({-0.2857142686843872, -0.1428571343421936, 0.0, 0.2857142686843872, 0.4285714626312256,
                            0.5714285373687744, 0.8571428060531616, 1.0, 1.1428570747375488})));
  Tensor m2 = max_pool2d(x, {3, 2}, {1, 2}, {1, 0}, 1, true);
  EXPECT_EQ(m2.sizes().vec(), (std::vector<int64_t>{1, 1, 4, 2}));
  EXPECT_TRUE(close(m2.flatten(), tensor({-0.2857142686843872, 0.0, 0.2857142686843872, 0.5714285373687744,
                                          0.8571428060531616, 1.1428570747375488, 0.8571428060531616,
                                          1.1428570747375488})));
  EXPECT_TRUE(max_pool2d(x, 2).equal(max_pool2d(x, {2, 2}, {2, 2})));  // empty stride = kernel
  // torch._C._nn.avg_pool2d(x, [2], [2], [1], False, False)
  EXPECT_TRUE(close(avg_pool2d(x, {2}, {2}, {1}, false, false).flatten(),
                    tensor({-1.0, -0.7857142686843872, -0.5714285373687744, -0.14285710453987122, 0.071428582072258,
                            0.2857142686843872, 0.7142857313156128, 0.9285714030265808, 1.1428570747375488})));
  EXPECT_TRUE(close(adaptive_avg_pool2d(x, {3, 2}).flatten(),
                    tensor({-0.6428571939468384, -0.3571428656578064, -0.07142855226993561, 0.2142857164144516, 0.5,
                            0.7857142686843872})));
  EXPECT_TRUE(close(max_pool1d(x[0][0], {2}, {1}).flatten(),
                    tensor({-0.8571428656578064, -0.7142857313156128, -0.5714285373687744, -0.2857142686843872,
                            -0.1428571343421936, 0.0, 0.2857142686843872, 0.4285714626312256, 0.5714285373687744,
                            0.8571428060531616, 1.0, 1.1428570747375488})));
  auto [v, idx] = max_pool2d_with_indices(x, {2});
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{5, 7, 13, 15}));
  expect_error([&] { max_pool2d(x, {2, 2, 2}); }, {"max_pool2d", "kernel_size"});
}

TEST(LibtorchApi, LossFreeFunctions) {
  Tensor lp = arange(12, kFloat).reshape({3, 4}).sin().log_softmax(1);
  Tensor w = tensor({1.f, 2.f, 3.f, 4.f});
  // torch._C._nn.nll_loss(lp, t, w, 2, -100) and friends
  EXPECT_NEAR(nll_loss(lp, tensor({0, 3, -100}), w, Reduction::Sum).item<double>(), 4.365226745605469, 1e-5);
  EXPECT_NEAR(nll_loss(lp, tensor({0, 3, -100})).item<double>(), 1.272892713546753, 1e-5);
  EXPECT_TRUE(close(nll_loss(lp, tensor({0, 3, 1}), {}, kNone),
                    tensor({1.939305067062378, 0.6064804792404175, 1.2264536619186401})));
  EXPECT_NEAR(nll_loss(lp, tensor({0, 3, 7}), {}, kMean, 7).item<double>(), 1.272892713546753, 1e-5);
  Tensor logits = arange(12, kFloat).reshape({3, 4}).cos();
  EXPECT_NEAR(cross_entropy_loss(logits, tensor({1, 2, 0}), w, kMean, -100, 0.1).item<double>(), 1.1327637434005737,
              1e-5);
  Tensor p = tensor({0.2f, 0.7f, 0.9f}), y = tensor({0.f, 1.f, 1.f}), bw = tensor({1.f, 2.f, 0.5f});
  EXPECT_NEAR(binary_cross_entropy(p, y, bw, kSum).item<double>(), 0.9891737699508667, 1e-5);
  EXPECT_NEAR(binary_cross_entropy_with_logits(tensor({-1.f, 0.5f, 2.f}), y, bw, tensor({3.f}), kMean).item<double>(),
              1.1160385608673096, 1e-5);
  Tensor a = tensor({0.f, 1.f, 3.f}), b = tensor({0.5f, -1.f, 3.2f});
  EXPECT_NEAR(l1_loss(a, b).item<double>(), 0.9000000357627869, 1e-6);
  EXPECT_NEAR(smooth_l1_loss(a, b, kMean, 0.6).item<double>(), 0.6472222208976746, 1e-6);
  EXPECT_NEAR(huber_loss(a, b, kSum, 0.7).item<double>(), 1.2999999523162842, 1e-6);
  Tensor lq = tensor({1.f, 2.f, 3.f}).log_softmax(0), tq = tensor({0.2f, 0.3f, 0.5f});
  EXPECT_NEAR(kl_div(lq, tq, kSum).item<double>(), 0.07795289158821106, 1e-6);
  EXPECT_NEAR(kl_div(lq, tq.log(), kMean, true).item<double>(), 0.02598429284989834, 1e-6);
}

TEST(LibtorchApi, LayerFreeFunctions) {
  Tensor xi = arange(2 * 2 * 4 * 4, kFloat).reshape({2, 2, 4, 4}).sin();
  Tensor wc = arange(3 * 2 * 3 * 3, kFloat).reshape({3, 2, 3, 3}).cos();
  Tensor bc = tensor({0.1f, -0.2f, 0.3f});
  Tensor c = conv2d(xi, wc, bc, {2, 1}, {1});
  EXPECT_EQ(c.sizes().vec(), (std::vector<int64_t>{2, 3, 2, 4}));
  EXPECT_NEAR(c.sum().item<double>(), 6.988655090332031, 1e-4);
  EXPECT_TRUE(close(conv2d(xi, wc), nn::functional::conv2d(xi, wc)));
  Tensor x1 = arange(2 * 2 * 6, kFloat).reshape({2, 2, 6}).sin();
  Tensor w1 = arange(4 * 2 * 3, kFloat).reshape({4, 2, 3}).cos();
  Tensor c1 = conv1d(x1, w1, {}, 2, 1);
  EXPECT_EQ(c1.sizes().vec(), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_NEAR(c1.sum().item<double>(), 0.3215138912200928, 1e-5);
  // ATen's order: weight, bias, running_mean, running_var
  Tensor rm = zeros({2}), rv = ones({2});
  Tensor bn = batch_norm(xi, tensor({1.f, 2.f}), tensor({0.f, 1.f}), rm, rv, true, 0.2, 1e-5, false);
  EXPECT_NEAR(bn.sum().item<double>(), 32.0, 1e-4);
  EXPECT_NEAR((bn * bn).sum().item<double>(), 191.99664306640625, 1e-3);
  EXPECT_TRUE(close(rm, tensor({0.024655839428305626, -0.024052176624536514})));
  EXPECT_TRUE(close(rv, tensor({0.8982608914375305, 0.898590087890625})));
  Tensor ln = layer_norm(xi, {4, 4}, full({4, 4}, 2.0));
  EXPECT_NEAR((ln * ln).sum().item<double>(), 255.99462890625, 1e-2);
  Tensor ew = arange(12, kFloat).reshape({4, 3});
  EXPECT_EQ(fvals(embedding(ew, tensor({{0, 3}, {1, 1}})).flatten()),
            (std::vector<float>{0, 1, 2, 9, 10, 11, 3, 4, 5, 3, 4, 5}));
  expect_error([&] { embedding(ew, tensor({0}), -1, true); }, {"embedding", "scale_grad_by_freq"});
  EXPECT_EQ(fvals(linear(tensor({{1.f, 2.f}}), tensor({{1.f, 0.f}, {2.f, 3.f}}), tensor({1.f, 1.f}))),
            (std::vector<float>{2, 9}));
  EXPECT_TRUE(close(group_norm(xi, 2), nn::functional::group_norm(xi, 2)));
}

TEST(LibtorchApi, ActivationAndShapeFreeFunctions) {
  Tensor x = tensor({-1.f, 2.f});
  Tensor y = x.clone();
  relu_(y);
  EXPECT_EQ(fvals(y), (std::vector<float>{0, 2}));
  Tensor z = x.clone();
  EXPECT_TRUE(sigmoid_(z).is_same(z));
  EXPECT_TRUE(close(z, x.sigmoid()));
  Tensor g = x.clone();
  gelu_(g, "tanh");
  EXPECT_TRUE(close(g, x.gelu("tanh")));
  EXPECT_TRUE(close(relu(x), x.relu()));
  EXPECT_TRUE(close(softmax(x, 0, kDouble), x.to(kDouble).softmax(0)));

  Tensor a = arange(24).reshape({2, 3, 4});
  EXPECT_EQ(reshape(a, {6, 4}).sizes().vec(), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(flatten(a, 1).sizes().vec(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(transpose(a, 0, 2).sizes().vec(), (std::vector<int64_t>{4, 3, 2}));
  EXPECT_EQ(permute(a, {2, 0, 1}).sizes().vec(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(unsqueeze(a, 0).dim(), 4);
  EXPECT_EQ(squeeze(unsqueeze(a, 0), 0).dim(), 3);
  EXPECT_EQ(narrow(a, 2, 1, 2).sizes().vec(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(select(a, 1, 2).sizes().vec(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(chunk(a, 2, 2).size(), 2u);
  EXPECT_EQ(numel(a), 24);
  EXPECT_EQ(cat({a, a}, 1).size(1), 6);
  EXPECT_EQ(stack({a, a}).size(0), 2);
  EXPECT_TRUE(close(matmul(eye(3), ones({3, 2})), ones({3, 2})));
}

TEST(LibtorchApi, DropoutFreeFunctions) {
  manual_seed(0);
  Tensor x = ones({200, 8, 3});
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
  Tensor d = dropout(x, 0.25, true);
  Tensor kept = d.ne(0);
  EXPECT_TRUE(close(d.masked_select(kept), full({kept.sum().item<int64_t>()}, 1.0 / 0.75)));
  Tensor f = feature_dropout(x, 0.5, true);
  // whole channels: each (n, c) row of 3 is all zero or all 2
  Tensor rows = f.sum(2);
  EXPECT_TRUE(rows.eq(0).logical_or(rows.eq(6)).all().item<bool>());
  const double frac = rows.eq(0).to(kDouble).mean().item<double>();
  EXPECT_GT(frac, 0.4);
  EXPECT_LT(frac, 0.6);
  EXPECT_TRUE(feature_dropout(x, 0.5, false).is_same(x));
  EXPECT_EQ(feature_dropout(x, 1.0, true).abs().sum().item<double>(), 0.0);
  expect_error([&] { feature_dropout(ones({3}), 0.5, true); }, {"feature_dropout", "2 or more dims"});
}

TEST(LibtorchApi, Str) {
  EXPECT_EQ(str("shape ", IntArrayRef({2, 3}), " has ", 6, " elements"), "shape [2, 3] has 6 elements");
  EXPECT_EQ(str(), "");
  EXPECT_EQ(c10::str("a", 1), "a1");
}

// ---- 6: Device's libtorch accessors ----------------------------------------------------------------------------

TEST(LibtorchApi, DeviceAccessors) {
  Device c(kCUDA, 1);
  EXPECT_EQ(c.type(), kCUDA);
  EXPECT_EQ(c.index(), 1);
  EXPECT_TRUE(c.has_index());
  EXPECT_TRUE(c.is_cuda());
  EXPECT_FALSE(c.is_cpu());
  // brisk's field spelling reads and writes the same values
  EXPECT_EQ(c.type, kCUDA);
  EXPECT_EQ(c.index, 1);
  c.index = 0;
  EXPECT_EQ(c.index(), 0);
  Device p("cuda:0");
  EXPECT_EQ(p.type(), DeviceType::CUDA);
  EXPECT_EQ(p.index(), 0);
  EXPECT_EQ(p, c);
  Device cpu = Device(kCPU);
  EXPECT_EQ(cpu.type(), kCPU);
  EXPECT_EQ(cpu.index(), -1);
  EXPECT_FALSE(cpu.has_index());
  EXPECT_EQ(sizeof(Device), 2u);
  switch (cpu.type()) {
    case DeviceType::CPU: break;
    default: ADD_FAILURE();
  }
  EXPECT_EQ(str(c.type, ":", c.index), "cuda:0");  // the fields print as their values
  EXPECT_EQ(ones({2}).device().type(), kCPU);
  EXPECT_EQ(static_cast<int>(c.type), 1);
}

// ---- 10: c10:: spellings -------------------------------------------------------------------------------------

int64_t count(c10::IntArrayRef sizes) { return multiply(sizes); }

TEST(LibtorchApi, C10Spellings) {
  c10::optional<int64_t> none = c10::nullopt;
  EXPECT_FALSE(none.has_value());
  c10::optional<Tensor> t = ones({2});
  EXPECT_TRUE(t.has_value());
  EXPECT_EQ(count({2, 3, 4}), 24);
  c10::Device d(c10::kCPU);
  EXPECT_TRUE(d.is_cpu());
}

TEST(LibtorchApi, SmallIntegerLiteralsKeepTheirDtype) {
  // libtorch's TensorDataContainer: int and long -> int64, the 8- and 16-bit
  // types keep theirs (kByte, kChar, kShort)
  EXPECT_EQ(tensor({int8_t(1), int8_t(-2)}).dtype(), kInt8);
  EXPECT_EQ(tensor(std::vector<int16_t>{1, 2}).dtype(), kInt16);
  EXPECT_EQ(tensor({uint8_t(1)}).dtype(), kUInt8);
  EXPECT_EQ(tensor({1, 2}).dtype(), kInt64);
  EXPECT_EQ(tensor({int8_t(-3), int8_t(4)}).to_vector<int8_t>(), (std::vector<int8_t>{-3, 4}));
}

}  // namespace
}  // namespace brisk
