// foreach ops against the per-tensor brisk ops they replace.
#include <brisk/foreach.h>

#include <cmath>
#include <limits>

#include "optim/multi_tensor.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

// Sizes chosen so that the list spans several pieces and the parallel path.
TensorList make_list(ScalarType dt, uint64_t seed, bool positive = false) {
  manual_seed(seed);
  TensorList l;
  for (int64_t n : {1, 7, 100, 16385, 40000, 0, 3}) {
    Tensor t = randn({n}, dt);
    l.push_back(positive ? t.abs().add_(0.5) : t);
  }
  l.push_back(randn({5, 6}, dt).t());  // non-contiguous: the fallback path
  return l;
}

TensorList clone_list(const TensorList& l) {
  TensorList r;
  for (const Tensor& t : l) r.push_back(t.clone());
  return r;
}

void expect_lists_close(const TensorList& got, const TensorList& want, double rtol = 1e-6, double atol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(close(got[i], want[i], rtol, atol)) << "tensor " << i;
}

class Foreach : public ::testing::TestWithParam<ScalarType> {};

TEST_P(Foreach, MatchesPerTensorOps) {
  const ScalarType dt = GetParam();
  const TensorList a = make_list(dt, 1), b = make_list(dt, 2), c = make_list(dt, 3, true);
  auto check = [&](const char* what, auto foreach_fn, auto per_tensor_fn) {
    SCOPED_TRACE(what);
    TensorList x = clone_list(a), y = clone_list(a);
    foreach_fn(x);
    for (size_t i = 0; i < y.size(); ++i) per_tensor_fn(y[i], i);
    expect_lists_close(x, y);
  };
  check("add_ scalar", [&](TensorList& x) { foreach_add_(x, 0.5); }, [&](Tensor& t, size_t) { t.add_(0.5); });
  ScalarList s;
  for (size_t i = 0; i < a.size(); ++i) s.push_back(0.25 + double(i));
  check("add_ scalars", [&](TensorList& x) { foreach_add_(x, s); }, [&](Tensor& t, size_t i) { t.add_(s[i]); });
  check("add_ list", [&](TensorList& x) { foreach_add_(x, b, -0.3); },
        [&](Tensor& t, size_t i) { t.add_(b[i], -0.3); });
  check("mul_ scalar", [&](TensorList& x) { foreach_mul_(x, 0.9); }, [&](Tensor& t, size_t) { t.mul_(0.9); });
  check("mul_ scalars", [&](TensorList& x) { foreach_mul_(x, s); }, [&](Tensor& t, size_t i) { t.mul_(s[i]); });
  check("mul_ list", [&](TensorList& x) { foreach_mul_(x, b); }, [&](Tensor& t, size_t i) { t.mul_(b[i]); });
  check("div_ scalars", [&](TensorList& x) { foreach_div_(x, s); }, [&](Tensor& t, size_t i) { t.div_(s[i]); });
  check("addcmul_", [&](TensorList& x) { foreach_addcmul_(x, b, c, 0.1); },
        [&](Tensor& t, size_t i) { t.addcmul_(b[i], c[i], 0.1); });
  check("addcdiv_", [&](TensorList& x) { foreach_addcdiv_(x, b, c, -0.2); },
        [&](Tensor& t, size_t i) { t.addcdiv_(b[i], c[i], -0.2); });
  check("addcdiv_ scalars", [&](TensorList& x) { foreach_addcdiv_(x, b, c, s); },
        [&](Tensor& t, size_t i) { t.addcdiv_(b[i], c[i], s[i]); });
  check("lerp_", [&](TensorList& x) { foreach_lerp_(x, b, 0.1); }, [&](Tensor& t, size_t i) { t.lerp_(b[i], 0.1); });
  check("lerp_ w>0.5", [&](TensorList& x) { foreach_lerp_(x, b, 0.7); },
        [&](Tensor& t, size_t i) { t.lerp_(b[i], 0.7); });
  check("maximum_", [&](TensorList& x) { foreach_maximum_(x, b); },
        [&](Tensor& t, size_t i) { t.copy_(maximum(t, b[i])); });
  check("zero_", [&](TensorList& x) { foreach_zero_(x); }, [&](Tensor& t, size_t) { t.zero_(); });
  {
    TensorList x = clone_list(c);
    foreach_sqrt_(x);
    TensorList y = foreach_sqrt(c);
    for (size_t i = 0; i < c.size(); ++i) {
      EXPECT_TRUE(close(x[i], c[i].sqrt()));
      EXPECT_TRUE(close(y[i], c[i].sqrt()));
    }
  }
  {
    TensorList y = foreach_add(a, b, 2.0), z = foreach_mul(a, -1.0);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(close(y[i], a[i].add(b[i], 2.0)));
      EXPECT_TRUE(close(z[i], a[i].neg()));
    }
  }
}

TEST_P(Foreach, Norm) {
  const ScalarType dt = GetParam();
  const TensorList a = make_list(dt, 4);
  for (double ord : {1.0, 2.0, std::numeric_limits<double>::infinity(), 3.0}) {
    if (std::isinf(ord)) {
      // no identity for the empty tensor of the list (torch 2.x's _foreach_norm raises too)
      expect_error([&] { foreach_norm(a, ord); }, {"[foreach_norm]", "empty tensor"});
      TensorList nonempty;
      for (const Tensor& t : a)
        if (t.numel() != 0) nonempty.push_back(t);
      TensorList n = foreach_norm(nonempty, ord);
      for (size_t i = 0; i < nonempty.size(); ++i) EXPECT_TRUE(close(n[i], nonempty[i].norm(ord), 1e-5, 1e-6));
      continue;
    }
    TensorList n = foreach_norm(a, ord);
    ASSERT_EQ(n.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(n[i].dim(), 0);
      EXPECT_EQ(n[i].dtype(), dt);
      EXPECT_TRUE(close(n[i], a[i].norm(ord), 1e-5, 1e-6)) << "ord " << ord << " tensor " << i;
    }
  }
}

// The fused check-and-unscale (GradScaler's unscale_): the products bit for
// bit equal to x * float(inv), found_inf exactly when an element is inf or
// NaN, on the kernel path (contiguous lists) and the fallback (a transposed
// tensor, bfloat16), on one and two threads.
TEST_P(Foreach, AmpCheckAndUnscale) {
  const ScalarType dt = GetParam();
  const Tensor inv = tensor({0.0009765625f * 3.0f});
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (bool contiguous : {true, false}) {
      for (int inject = 0; inject < 3; ++inject) {
        TensorList l = make_list(dt, 11);
        if (contiguous) l.pop_back();
        if (inject == 1) l[4][12345] = std::numeric_limits<double>::infinity();
        if (inject == 2) l[3][16384] = std::numeric_limits<double>::quiet_NaN();
        TensorList want = clone_list(l);
        for (Tensor& w : want) w = w * static_cast<double>(inv.item<float>());
        Tensor found = zeros({1});
        amp_foreach_non_finite_check_and_unscale_(l, found, inv);
        EXPECT_EQ(found.item<float>(), inject == 0 ? 0.0f : 1.0f) << inject;
        for (size_t i = 0; i < l.size(); ++i) EXPECT_TRUE(equal(l[i].isnan(), want[i].isnan())) << i;
        for (size_t i = 0; i < l.size(); ++i)
          EXPECT_TRUE(equal(l[i].nan_to_num(0.0), want[i].nan_to_num(0.0))) << "tensor " << i << " inject " << inject;
        // found_inf keeps a 1 it already had (several dtype groups share it)
        TensorList clean = make_list(dt, 12);
        amp_foreach_non_finite_check_and_unscale_(clean, found, inv);
        EXPECT_EQ(found.item<float>(), inject == 0 ? 0.0f : 1.0f);
      }
    }
  }
  set_num_threads(1);
  // 16-bit gradients: one multi-tensor pass too, in float and rounded once,
  // bit-equal to the per-tensor multiply (a non-contiguous list takes that path)
  for (ScalarType h : {kBFloat16, kHalf}) {
    SCOPED_TRACE(::testing::Message() << h);
    for (bool contiguous : {true, false}) {
      TensorList l;
      for (int64_t n : {100, 40000, 0, 7}) l.push_back((randn({n}) * 100.0).to(h));
      if (!contiguous) l.push_back((randn({5, 6}) * 100.0).to(h).t());
      l[1][39999] = std::numeric_limits<double>::infinity();
      TensorList want = clone_list(l);
      for (Tensor& w : want) w = w * static_cast<double>(inv.item<float>());
      Tensor found = zeros({1});
      EXPECT_EQ(detail::foreach_eligible(OpId::amp_unscale, {&l}), contiguous);
      amp_foreach_non_finite_check_and_unscale_(l, found, inv);
      EXPECT_EQ(found.item<float>(), 1.0f);
      for (size_t i = 0; i < l.size(); ++i) EXPECT_TRUE(equal(l[i], want[i])) << i;
      TensorList clean{(randn({33}) * 100.0).to(h)};
      Tensor found2 = zeros({1});
      detail::amp_foreach_non_finite_check_(clean, found2);
      EXPECT_EQ(found2.item<float>(), 0.0f);
      detail::amp_foreach_non_finite_check_(l, found2);
      EXPECT_EQ(found2.item<float>(), 1.0f);
    }
  }
  TensorList bf{randn({100}).to(kBFloat16)};
  Tensor found = zeros({1});
  expect_error([&] { amp_foreach_non_finite_check_and_unscale_(bf, found, tensor({1.0, 2.0})); }, {"inv_scale"});
}

INSTANTIATE_TEST_SUITE_P(Dtypes, Foreach, ::testing::Values(kFloat, kDouble));

TEST(ForeachErrors, LengthsAndUndefined) {
  TensorList a = {zeros({3}), zeros({3})}, b = {ones({3})};
  expect_error([&] { foreach_add_(a, b); }, {"[foreach_add_]", "same length", "2", "1"});
  expect_error([&] { foreach_addcdiv_(a, a, b, 1.0); }, {"[foreach_addcdiv_]", "same length"});
  expect_error([&] { foreach_mul_(a, ScalarList{1.0}); }, {"[foreach_mul_]", "2 scalars"});
  TensorList u = {zeros({3}), Tensor()};
  expect_error([&] { foreach_zero_(u); }, {"[foreach_zero_]", "undefined"});
}

TEST(Foreach, BumpsVersionsWithoutAutograd) {
  Tensor p = randn({10}).requires_grad_();
  TensorList l = {p};
  const uint32_t v = p._version();
  {
    NoGradGuard g;
    foreach_mul_(l, 2.0);
    foreach_add_(l, TensorList{ones({10})}, 1.0);
  }
  EXPECT_EQ(p._version(), v + 2);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_FALSE(p.grad_fn());
}

TEST(Foreach, EmptyList) {
  TensorList e;
  foreach_add_(e, e, 1.0);
  foreach_zero_(e);
  EXPECT_TRUE(foreach_norm(e).empty());
}

TEST(Foreach, Int64FallsBack) {
  TensorList l = {arange(5)};
  foreach_mul_(l, 3);
  EXPECT_EQ(l[0].to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 9, 12}));
}

}  // namespace
