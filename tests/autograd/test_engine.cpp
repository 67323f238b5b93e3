// The autograd engine and its semantics: leaves and accumulation, graph
// freeing, version counters, grad modes, inference mode, hooks, grad(),
// double backward, anomaly mode. Formulas of single ops are tested in the
// test_grad_* files.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/grad_util.h"
#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;
using brisk::testing::leaf_noncontig;

TEST(Engine, MulAddBackward) {
  Tensor x = tensor({1.0, 2.0, 3.0});
  Tensor w = tensor({4.0, 5.0, 6.0}).requires_grad_();
  Tensor b = tensor({0.5}).requires_grad_();
  Tensor y = x * w + b;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(w.is_leaf());
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "AddBackward0");
  ASSERT_EQ(y.grad_fn()->next_edges().size(), 2u);
  EXPECT_EQ(y.grad_fn()->next_edges()[0].function->name(), "MulBackward0");
  y.backward(ones_like(y));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
  // b was broadcast: its gradient is summed back to its shape
  EXPECT_EQ(b.grad().sizes(), IntArrayRef({1}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{3}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(x.requires_grad());
}

TEST(Engine, GradcheckArithmetic) {
  Tensor a = leaf({2, 3}), b = leaf_noncontig({2, 3}), c = leaf({3});
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0] * t[1] + t[2]; }, {a, b, c}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0] / t[1] - t[2] * 2; }, {a, leaf({2, 3}, 0.5, 2), c}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].pow(t[1]); }, {leaf({2, 3}, 0.5, 2), b}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].pow(3) + t[0].pow(0.5) * 2; }, {leaf({4}, 0.5, 2)}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return 2.0 / t[0] + (1.0 - t[0]) + pow(2.0, t[0]); },
                           {leaf({4}, 0.5, 2)}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return maximum(t[0], t[1]) + minimum(t[0], t[1]) * 3; },
                           {a, b}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return atan2(t[0], t[1]); }, {a, leaf({2, 3}, 0.5, 2)}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].lerp(t[1], 0.3) + t[0].lerp(t[1], t[2]); },
                           {a, b, leaf({2, 3})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].addcmul(t[1], t[2], 0.5) + t[0].addcdiv(t[1], t[2], 2); },
                           {a, b, leaf({2, 3}, 0.5, 2)}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].clamp(-0.5, 0.5) + t[0].clamp(t[1], t[2]); },
                           {leaf({3, 4}), leaf({3, 4}, -1, -0.2), leaf({3, 4}, 0.2, 1)}));
  Tensor cond = rand({2, 3}) > 0.5;
  EXPECT_TRUE(gradcheck_ok([&](const TensorList& t) { return where(cond, t[0], t[1]) + where(cond, t[0], 2.0); },
                           {a, leaf({3})}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return remainder(t[0], 0.7) + fmod(t[0], t[1]); },
                           {leaf({4}, 0.1, 3), leaf({4}, 2, 4)}));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0].clone() * 2 + t[0].contiguous(); }, {b}));
  // to(dtype) casts the gradient back to the input's dtype
  Tensor x = leaf({3});
  Tensor y = x.to(kFloat);
  EXPECT_EQ(y.grad_fn()->name(), "ToCopyBackward0");
  y.backward(full({3}, 0.5, kFloat));
  EXPECT_EQ(x.grad().dtype(), kDouble);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0.5, 0.5, 0.5}));
}

TEST(Engine, GradcheckDetectsWrongFormula) {
  autograd::GradcheckOptions o;
  o.raise_exception = false;
  // detach() cuts the graph: the analytical Jacobian misses the first term
  EXPECT_FALSE(autograd::gradcheck([](const TensorList& t) { return t[0].detach() * 2 + t[0]; }, {leaf({3})}, o));
  expect_error([] { autograd::gradcheck([](const TensorList& t) { return t[0] * 1; }, {leaf({3}).to(kFloat)}); },
               {"[gradcheck]", "float64"});
}

TEST(Engine, DoubleBackwardArithmetic) {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = x * x * x;
  TensorList g = autograd::grad({y}, {x}, {ones_like(y)}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(g[0].requires_grad());
  EXPECT_TRUE(close(g[0], tensor({3.0, 12.0, 27.0})));
  TensorList g2 = autograd::grad({g[0]}, {x}, {ones_like(x)});
  EXPECT_TRUE(close(g2[0], tensor({6.0, 12.0, 18.0})));
  EXPECT_FALSE(x.grad().defined());  // grad() leaves .grad() alone
  EXPECT_TRUE(gradcheck_ok([](const TensorList& t) { return t[0] * t[1] / t[2]; },
                           {leaf({2, 3}), leaf({2, 3}), leaf({2, 3}, 0.5, 2)}, /*grad_grad=*/true));
}

TEST(Engine, AccumulationStealsFirstAndAddsInPlace) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  void* incoming = nullptr;
  x.register_hook([&](const Tensor& g) { incoming = g.data_ptr(); });
  (x * 2).backward(ones({2}, kDouble));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().data_ptr(), incoming);  // stolen, not copied
  void* first = x.grad().data_ptr();
  (x * 3).backward(ones({2}, kDouble));
  EXPECT_EQ(x.grad().data_ptr(), first);  // added in place
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{5, 5}));
  // "set to none": the next backward creates the gradient fresh
  x.mutable_grad() = Tensor();
  EXPECT_FALSE(x.grad().defined());
  (x * 4).backward(ones({2}, kDouble));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{4, 4}));
  // a gradient the caller still holds is copied, not stolen
  x.mutable_grad() = Tensor();
  Tensor g = ones({2}, kDouble);
  (x + 0).backward(g);
  EXPECT_NE(x.grad().data_ptr(), g.data_ptr());
  x.mutable_grad().add_(1);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 1}));
}

TEST(Engine, FreedGraphAndRetainGraph) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * x;
  y.backward(ones_like(y), /*retain_graph=*/true);
  y.backward(ones_like(y));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{4, 8}));
  expect_error([&] { y.backward(ones_like(y)); }, {"[backward]", "backward through the graph a second time",
                                                   "retain_graph=true", "MulBackward0"});
}

TEST(Engine, GraphMemoryIsReleased) {
  Tensor w = randn({256, 256}, kFloat).requires_grad_();
  const int64_t base = cpu::memory_allocated();
  {
    Tensor loss;
    for (int i = 0; i < 4; ++i) loss = ((w * w) * w) * w;  // each graph saves two 256x256 intermediates
    const int64_t held = cpu::memory_allocated() - base;
    EXPECT_GE(held, 3 * 256 * 256 * 4);  // the live graph's saved tensors and output
    loss.backward(ones_like(loss));
    // After backward the saved tensors are freed even though loss is alive.
    const int64_t after = cpu::memory_allocated() - base;
    EXPECT_LT(after, held);
    EXPECT_LE(after, 2 * 256 * 256 * 4);  // loss itself and w.grad
  }
  w.mutable_grad() = Tensor();
  EXPECT_EQ(cpu::memory_allocated(), base);
  // Storing losses that require grad keeps every graph alive; storing item() does not.
  std::vector<Tensor> kept;
  for (int i = 0; i < 4; ++i) kept.push_back((w * w) * w);  // output + saved w*w
  const int64_t with_graphs = cpu::memory_allocated() - base;
  EXPECT_GE(with_graphs, 4 * 2 * 256 * 256 * 4);
  kept.clear();
  std::vector<double> values;
  for (int i = 0; i < 4; ++i) values.push_back(((w * w) * w).sum().item<double>());
  EXPECT_EQ(cpu::memory_allocated(), base);
}

TEST(Engine, VersionCounterError) {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor a = x * 1;
  Tensor y = a * a;  // saves a at version 0
  a.add_(1);
  EXPECT_EQ(a._version(), 1u);
  expect_error([&] { y.backward(ones_like(y)); },
               {"[backward]", "modified by an inplace operation", "float32", "[3]", "output 0 of AddBackward1",
                "saved by MulBackward0", "is at version 1", "expected version 0"});
  // views share the counter
  Tensor b = x * 1;
  Tensor v = b.view({3});
  EXPECT_EQ(v._version(), b._version());
}

TEST(Engine, InPlaceOnNonLeafRecords) {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor a = x * 1;
  a.mul_(2).add_(x);  // a = 2x + x
  EXPECT_EQ(a.grad_fn()->name(), "AddBackward0");
  a.backward(ones_like(a));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3, 3, 3}));
  // in-place with the other operand requiring grad needs the old value of self
  Tensor w = tensor({2.0, 2.0, 2.0}).requires_grad_();
  Tensor c = x.detach() * 1;
  c.mul_(w);
  c.backward(ones_like(c));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1, 2, 3}));
}

TEST(Engine, LeafInPlaceIsRefused) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  const uint32_t v0 = x._version();
  expect_error([&] { x.add_(1); }, {"[add_]", "leaf tensor that requires grad", "in-place"});
  expect_error([&] { x.mul_(2); }, {"[mul_]", "leaf"});
  expect_error([&] { x.fill_(0); }, {"[fill_]", "leaf"});
  {
    NoGradGuard g;
    x.add_(1);  // fine without grad mode (optimizer updates)
  }
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{2, 3}));
  EXPECT_EQ(x._version(), v0 + 1);  // the refused calls changed nothing
}

TEST(Engine, OutArgumentsRefuseGrad) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor out = empty({2}, kDouble);
  expect_error([&] { add_out(out, x, x); }, {"[add_out]", "don't support automatic differentiation"});
  NoGradGuard g;
  add_out(out, x, x);
  EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{2, 4}));
}

TEST(Engine, GradModes) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_();
  {
    NoGradGuard g;
    EXPECT_FALSE(GradMode::is_enabled());
    Tensor y = w * 2;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_FALSE(y.grad_fn());
    {
      EnableGradGuard e;
      EXPECT_TRUE((w * 2).requires_grad());
    }
    EXPECT_FALSE((w * 2).requires_grad());
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_TRUE((w * 2).requires_grad());
}

TEST(Engine, InferenceMode) {
  Tensor w = tensor({1.0, 2.0}).requires_grad_();
  Tensor t, y;
  {
    InferenceMode im;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(GradMode::is_enabled());
    t = ones({2}, kDouble);
    y = w * 2;
    EXPECT_TRUE(t.is_inference());
    EXPECT_TRUE(y.is_inference());
    EXPECT_FALSE(y.requires_grad());
    uint32_t v = t._version();
    t.add_(1);  // allowed inside; no version counting
    EXPECT_EQ(t._version(), v);
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_FALSE(ones({2}).is_inference());
  expect_error([&] { t.add_(1); }, {"[add_]", "Inplace update to inference tensor outside InferenceMode"});
  expect_error([&] { Tensor z = t * w; }, {"Inference tensors cannot be saved for backward", "clone"});
  // an inference tensor that is not saved can take part: w + t saves nothing
  Tensor z = w + t;
  z.backward(ones_like(z));
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{1, 1}));
  // clone() gives a normal tensor
  Tensor n = t.clone();
  EXPECT_FALSE(n.is_inference());
  n.add_(1);
  expect_error([&] { t.requires_grad_(); }, {"[requires_grad_]", "inference tensor"});
}

TEST(Engine, HooksAndRetainGrad) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 3;
  y.retain_grad();
  EXPECT_TRUE(y.retains_grad());
  unsigned h = y.register_hook([](const Tensor& g) { return g * 10; });
  std::vector<double> seen;
  x.register_hook([&](const Tensor& g) { seen = g.to_vector<double>(); });
  Tensor z = y * y;
  z.backward(ones_like(z), true);
  // dz/dy = 2y = (6, 12), doubled by the hook x10 -> retained grad sees the hooked value
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{60, 120}));
  EXPECT_EQ(seen, (std::vector<double>{180, 360}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{180, 360}));
  y.remove_hook(h);
  x.mutable_grad() = Tensor();
  y.mutable_grad() = Tensor();
  z.backward(ones_like(z));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{18, 36}));
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{6, 12}));
  expect_error([] { ones({2}).register_hook([](const Tensor& g) { return g; }); },
               {"[register_hook]", "doesn't require gradient"});
  expect_error([] { ones({2}).retain_grad(); }, {"[retain_grad]"});
}

// PyTorch's register_post_accumulate_grad_hook: runs after .grad() holds the
// accumulated gradient (old + new), with the leaf; leaves only; removable.
TEST(Engine, PostAccumulateGradHooks) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  std::vector<std::vector<double>> seen;
  unsigned h = x.register_post_accumulate_grad_hook([&](const Tensor& leaf) {
    EXPECT_TRUE(leaf.is_same(x));
    seen.push_back(leaf.grad().to_vector<double>());
  });
  (x * x).sum().backward();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{2, 4}));
  (x * 3).sum().backward();  // accumulates: the hook sees the sum
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], (std::vector<double>{5, 7}));
  // x used twice in one graph: one accumulation, one call
  (x * x + x).sum().backward();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2], (std::vector<double>{5 + 3, 7 + 5}));
  // backward(inputs=...) accumulates into the leaf too
  x.mutable_grad() = Tensor();
  Tensor y = (x * 2).sum();
  autograd::backward({y}, {}, std::nullopt, false, {x});
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3], (std::vector<double>{2, 2}));
  // the hook may modify the gradient in place (an optimizer in the backward)
  x.remove_hook(h);
  x.register_post_accumulate_grad_hook([](const Tensor& leaf) { leaf.grad().mul_(0.5); });
  x.mutable_grad() = Tensor();
  (x * 4).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 2}));
  EXPECT_EQ(seen.size(), 4u);  // removed
  Tensor nonleaf = x * 2;
  expect_error([&] { nonleaf.register_post_accumulate_grad_hook([](const Tensor&) {}); },
               {"[register_post_accumulate_grad_hook]", "non-leaf"});
  expect_error([] { ones({2}).register_post_accumulate_grad_hook([](const Tensor&) {}); },
               {"[register_post_accumulate_grad_hook]", "doesn't require gradient"});
}

TEST(Engine, GradFunction) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor u = tensor({3.0}).requires_grad_();
  Tensor y = x * x;
  TensorList g = autograd::grad({y}, {x}, {ones_like(y)}, /*retain_graph=*/true);
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{2, 4}));
  EXPECT_FALSE(g[0].requires_grad());
  EXPECT_FALSE(x.grad().defined());
  expect_error([&] { autograd::grad({y}, {x, u}, {ones_like(y)}, true); }, {"[grad]", "not have been used", "allow_unused"});
  TensorList g2 = autograd::grad({y}, {x, u}, {ones_like(y)}, true, false, /*allow_unused=*/true);
  EXPECT_FALSE(g2[1].defined());
  expect_error([&] { autograd::grad({y}, {ones({2})}, {ones_like(y)}); }, {"[grad]", "does not require grad"});
  // grad with respect to an intermediate
  Tensor a = x * 2;
  Tensor b = a * a;
  TensorList ga = autograd::grad({b}, {a}, {ones_like(b)});
  EXPECT_EQ(ga[0].to_vector<double>(), (std::vector<double>{4, 8}));
  // backward(inputs=) accumulates only into the given leaves
  Tensor c = x * u;
  c.backward(ones_like(c), std::nullopt, false, {u});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EQ(u.grad().to_vector<double>(), (std::vector<double>{3}));
}

TEST(Engine, BackwardErrors) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  expect_error([&] { (x * 2).backward(); }, {"[backward]", "implicitly created only for scalar outputs"});
  expect_error([] { ones({1}).backward(); }, {"[backward]", "does not require grad"});
  expect_error([&] { (x * 2).backward(ones({3}, kDouble)); }, {"[backward]", "Mismatch in shape"});
  expect_error([] { ones({2}, kInt64).requires_grad_(); }, {"[requires_grad_]", "floating point"});
  Tensor y = x * 2;
  expect_error([&] { y.requires_grad_(false); }, {"[requires_grad_]", "leaf"});
}

TEST(Engine, DetachAndPrinting) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(y));
  EXPECT_EQ(d.data_ptr(), y.data_ptr());
  d.add_(1);
  EXPECT_EQ(y._version(), d._version());  // shared version counter
  Tensor z = x * 3;
  z.detach_();
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  std::ostringstream o1, o2;
  o1 << x;
  o2 << x * 2;
  EXPECT_NE(o1.str().find("requires_grad=True"), std::string::npos) << o1.str();
  EXPECT_NE(o2.str().find("grad_fn=<MulBackward1>"), std::string::npos) << o2.str();
}

TEST(Engine, AnomalyModeNamesTheNode) {
  Tensor a = tensor({0.0, 1.0}).requires_grad_();
  Tensor b = tensor({0.0, 1.0}).requires_grad_();
  Tensor y = a / b;  // 0/0: the backward of div yields nan
  {
    autograd::DetectAnomalyGuard g;
    expect_error([&] { y.backward(ones_like(y), true); }, {"[backward]", "DivBackward0", "nan"});
  }
  y.backward(ones_like(y));  // without anomaly mode: no check
  EXPECT_TRUE(std::isnan(b.grad().to_vector<double>()[0]));
}

TEST(Engine, InPlaceOnViewOfPlainTensor) {
  // Filling slices of a buffer that does not require grad with tensors that
  // do gives the buffer a history (every view knows its base).
  Tensor a = tensor({1.0, 2.0}).requires_grad_();
  Tensor b = tensor({3.0, 4.0, 5.0}).requires_grad_();
  Tensor buf = zeros({2, 3}, kDouble);
  EXPECT_FALSE(buf.requires_grad());
  buf.select(0, 0).narrow(0, 0, 2).copy_(a * 2);
  buf.select(0, 1).copy_(b);
  EXPECT_TRUE(buf.requires_grad());
  EXPECT_EQ(buf.grad_fn()->name(), "CopySlices");
  Tensor w = tensor({{1.0, 10.0, 100.0}, {1000.0, 10000.0, 100000.0}}, kDouble);
  (buf * w).backward(ones({2, 3}, kDouble));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{2, 20}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1000, 10000, 100000}));
  // overwriting a slice cuts the gradient of what was there
  Tensor c = tensor({1.0, 1.0, 1.0}).requires_grad_();
  Tensor d = c * 1;
  d.narrow(0, 1, 1).fill_(7);
  d.backward(ones({3}, kDouble));
  EXPECT_EQ(c.grad().to_vector<double>(), (std::vector<double>{1, 0, 1}));
  // views of plain tensors know their base; detached aliases do not
  Tensor p = ones({4});
  EXPECT_TRUE(p.t()._is_view());
  EXPECT_TRUE(p.view({2, 2})[1]._base().is_same(p));
  EXPECT_FALSE(p.detach()._is_view());
  EXPECT_FALSE(p._is_view());
}

// Note [Gradient layout]: the first gradient of a leaf is stolen, not
// copied, when it has the leaf's layout and nothing else holds it — also
// when it is a view (the bias gradient is sum(...).view(...)) and when the
// weight enters linear transposed.
TEST(Engine, FirstGradientsAreStolenNotCopied) {
  Tensor w = randn({4, 3}).requires_grad_(), b = randn({4}).requires_grad_();
  Tensor x = randn({5, 3});
  profiler::profile p;
  nn::functional::linear(x, w, b).relu().sum().backward();
  p.stop();
  const auto& ev = p.result().events;
  int accumulate = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].name != "AccumulateGrad") continue;
    ++accumulate;
    for (const auto& e : ev)
      if (e.parent == static_cast<int32_t>(i)) ADD_FAILURE() << "AccumulateGrad ran " << e.name;
  }
  EXPECT_EQ(accumulate, 2);
  EXPECT_TRUE(w.grad().is_contiguous());
  // the values are still right: d/dw sum(relu(x w^T + b)) = mask^T x
  Tensor mask = (x.matmul(w.detach().t()) + b.detach()).gt(0).to(kFloat);
  EXPECT_TRUE(brisk::testing::close(w.grad(), mask.t().matmul(x), 1e-5, 1e-5));
  EXPECT_TRUE(brisk::testing::close(b.grad(), mask.sum(0), 1e-5, 1e-5));
}
