// Parity cases: dtype conversions (to), factories (dtype inference, lengths),
// in-place writes through views, closeness ops; and the promotion functions
// (promote_types, result_type, can_cast) over every dtype pair.
#pragma once
#include "parity.h"

namespace parity {

/// x.to(dtype) for every pair, and copy_ between dtypes and layouts.
inline std::vector<Case> cast_cases() {
  using namespace brisk;
  std::vector<Case> v;
  for (auto from : kAllDtypes)
    for (auto to : kAllDtypes) {
      // Negative or fractional floats to uint8 are undefined behaviour in C++
      // (and differ between libraries); keep float -> uint8 in range.
      const Gen g = (to == kUInt8 && is_floating_point(from)) ? Gen::Positive : Gen::Normal;
      v.push_back(same(std::string("to.") + short_name(from) + "_" + short_name(to), {in({3, 5}, from, g)},
                       [to](const auto& t) {
                         using L = LibOf<decltype(t)>;
                         return t[0].to(L::dtype(to));
                       }));
    }
  v.push_back(same("to.f32_to_f16_overflow_and_subnormal",
                   {vals({6}, kFloat, {70000, -70000, 65504, 1e-7, 6e-8, 3e-8})}, FN(t[0].to(L::kHalf))));
  v.push_back(same("to.f32_to_bf16_rounding", {vals({5}, kFloat, {1.00390625, 1.01171875, 3.4e38, 1e-40, -0.0})},
                   FN(t[0].to(L::kBFloat16))));
  v.push_back(same("to.f64_to_i64_truncates", {vals({6}, kDouble, {2.9, -2.9, 0.5, -0.5, 1e15, -1e15})},
                   FN(t[0].to(L::kLong))));
  v.push_back(same("to.f32_to_bool_nan_is_true", {vals({4}, kFloat, {NAN, 0.0, -0.0, 1e-30})}, FN(t[0].to(L::kBool))));
  v.push_back(same("to.i64_to_i32_wraps", {vals({3}, kInt64, {4294967297.0, -4294967297.0, 2147483648.0})},
                   FN(t[0].to(L::kInt))));
  v.push_back(same("to.i32_to_u8_wraps", {vals({4}, kInt32, {256, 257, -1, -255})}, FN(t[0].to(L::kUInt8))));
  v.push_back(same("to.special_f64_to_f32", {in({22}, kDouble, Gen::Special)}, FN(t[0].to(L::kFloat))));
  v.push_back(same("to.noncontig", {in({5, 3}).T()}, FN(t[0].to(L::kDouble))));
  v.push_back(same("to.expanded", {in({3, 4}, kInt32).X()}, FN(t[0].to(L::kHalf))));
  v.push_back(same("copy_.bcast_and_convert", {in({3, 4}, kDouble), in({4}, kInt64)}, [](const auto& t) {
    auto x = t[0].clone();
    x.copy_(t[1]);
    return x;
  }));
  v.push_back(same("copy_.into_transposed_view", {in({3, 4}), in({4, 3}, kHalf)}, [](const auto& t) {
    auto x = t[0].clone();
    x.t().copy_(t[1]);
    return x;
  }));
  v.push_back(same("copy_.bad_shape_throws", {in({3, 4}), in({3})}, [](const auto& t) {
    auto x = t[0].clone();
    x.copy_(t[1]);
    return x;
  }));
  return v;
}

/// Factories: no tensor inputs, so separate lambdas; what is compared is the
/// dtype inference and the element count (arange's length rounding).
inline std::vector<Case> factory_cases() {
  using namespace brisk;
  std::vector<Case> v;
#define FACTORY(name, expr_brisk, expr_torch)                                                      \
  v.push_back(pair(name, {}, [](const BList&) { return expr_brisk; }, [](const TList&) { return expr_torch; }))
  FACTORY("arange.int_end", brisk::arange(5), at::arange(5));
  FACTORY("arange.int_step", brisk::arange(1, 10, 3), at::arange(1, 10, 3));
  FACTORY("arange.negative_step", brisk::arange(10, 0, -3), at::arange(10, 0, -3));
  FACTORY("arange.float_step", brisk::arange(0, 1, 0.1), at::arange(0, 1, 0.1));
  FACTORY("arange.float_end", brisk::arange(2.5), at::arange(2.5));
  FACTORY("arange.length_rounding", brisk::arange(0.0, 0.3, 0.1), at::arange(0.0, 0.3, 0.1));
  FACTORY("arange.dtype_given", brisk::arange(0, 5, 1, kDouble), at::arange(0, 5, 1, at::kDouble));
  FACTORY("arange.empty", brisk::arange(3, 3), at::arange(3, 3));
  FACTORY("arange.zero_step_throws", brisk::arange(0, 3, 0), at::arange(0, 3, 0));
  FACTORY("arange.wrong_sign_throws", brisk::arange(0, 3, -1), at::arange(0, 3, -1));
  FACTORY("linspace.basic", brisk::linspace(0, 1, 5), at::linspace(0, 1, 5));
  FACTORY("linspace.one_step", brisk::linspace(2, 7, 1), at::linspace(2, 7, 1));
  FACTORY("linspace.zero_steps", brisk::linspace(2, 7, 0), at::linspace(2, 7, 0));
  FACTORY("linspace.descending", brisk::linspace(3, -3, 7), at::linspace(3, -3, 7));
  FACTORY("linspace.f64", brisk::linspace(0, 1, 11, kDouble), at::linspace(0, 1, 11, at::kDouble));
  FACTORY("linspace.int_dtype", brisk::linspace(0, 10, 4, kInt64), at::linspace(0, 10, 4, at::kLong));
  FACTORY("eye.square", brisk::eye(3), at::eye(3));
  FACTORY("eye.rect", brisk::eye(2, 4, kInt32), at::eye(2, 4, at::kInt));
  FACTORY("full.float_value", brisk::full({2, 3}, 1.5), at::full({2, 3}, 1.5));
  FACTORY("full.int_value_is_int64", brisk::full({2, 3}, 7), at::full({2, 3}, 7));
  FACTORY("full.bool_value_is_bool", brisk::full({2}, true), at::full({2}, true));
  FACTORY("full.dtype_given", brisk::full({2}, 2.7, kInt32), at::full({2}, 2.7, at::kInt));
  FACTORY("zeros.default_dtype", brisk::zeros({2, 0, 3}), at::zeros({2, 0, 3}));
  FACTORY("ones.dtype", brisk::ones({4}, kBFloat16), at::ones({4}, at::kBFloat16));
  FACTORY("scalar_tensor.double", brisk::scalar_tensor(2.5), at::scalar_tensor(2.5));
  // brisk::tensor follows torch::tensor (the C++ frontend, Python's rule):
  // integers give int64, floating values the default dtype. at::tensor keeps
  // the C++ type, so the reference converts as torch::tensor would.
  FACTORY("tensor.ints", brisk::tensor({1, 2, 3}), at::tensor({1, 2, 3}).to(at::kLong));
  FACTORY("tensor.floats", brisk::tensor({1.5f, 2.5f}), at::tensor({1.5f, 2.5f}));
  FACTORY("tensor.doubles", brisk::tensor({1.5, 2.5}), at::tensor({1.5, 2.5}).to(at::kFloat));
  FACTORY("tensor.nested", brisk::tensor({{1, 2}, {3, 4}}), at::tensor({1, 2, 3, 4}).view({2, 2}).to(at::kLong));
  FACTORY("tensor.bools", brisk::tensor({true, false}), at::tensor({1, 0}).to(at::kBool));  // at::tensor lacks bool
#undef FACTORY
  v.push_back(same("like.zeros_ones_full", {in({2, 3}, kHalf).T()},
                   FN(std::vector{zeros_like(t[0]), ones_like(t[0]), full_like(t[0], 2.5)})));
  v.push_back(same("like.dtype_override", {in({2, 3}, kInt32)},
                   [](const auto& t) {
                     using L = LibOf<decltype(t)>;
                     return full_like(t[0], 3, L::dtype(kDouble));
                   }));
  return v;
}

/// In-place ops through views write into the base tensor.
inline std::vector<Case> write_through_cases() {
  using namespace brisk;
  std::vector<Case> v;
  auto through = [&](std::string name, std::vector<In> ins, auto f) {
    v.push_back(same(std::move(name), std::move(ins), [f](const auto& t) {
      auto base = t[0].clone();
      f(base, t);
      return base;
    }));
  };
  through("inplace_view.select_mul", {in({3, 4})}, [](auto& b, const auto&) { b.select(1, 2).mul_(2); });
  through("inplace_view.transpose_add", {in({3, 4}), in({4, 3})}, [](auto& b, const auto& t) { b.t().add_(t[1]); });
  through("inplace_view.diagonal_fill", {in({4, 4}, kInt64)}, [](auto& b, const auto&) { b.diagonal().fill_(0); });
  through("inplace_view.slice_step_zero", {in({6, 3})}, [](auto& b, const auto&) { b.slice(0, 1, 6, 2).zero_(); });
  through("inplace_view.index_slice_neg", {in({4, 5})}, [](auto& b, const auto& t) {
    using L = LibOf<decltype(t)>;
    b.index({L::Slice(1, 3), L::Slice(L::None, L::None, 2)}).neg_();
  });
  through("inplace_view.unsqueeze_expand_src", {in({3, 4}), in({4})},
          [](auto& b, const auto& t) { b.unsqueeze(0).add_(t[1]); });
  through("inplace_view.masked_fill_transposed", {in({3, 4}), mask({4, 3})},
          [](auto& b, const auto& t) { b.t().masked_fill_(t[1], 9.0); });
  through("inplace_view.clamp_narrow", {in({5, 4})}, [](auto& b, const auto&) { b.narrow(0, 1, 3).clamp_(-0.1, 0.1); });
  through("inplace_view.copy_into_unfold", {in({8}), in({3, 2})}, [](auto& b, const auto& t) {
    b.unfold(0, 2, 3).copy_(t[1]);  // windows do not overlap (step 3 > size 2)
  });
  through("inplace_view.index_put_on_view", {in({4, 5}), vals({2}, kInt64, {0, 3})}, [](auto& b, const auto& t) {
    auto row = b.select(0, 1);
    row.index_put_({t[1]}, 5.0);
  });
  return v;
}

inline std::vector<Case> closeness_cases() {
  using namespace brisk;
  std::vector<Case> v;
  auto pert = [](ScalarType dt) {
    return vals({8}, dt, {1.0, 1.0 + 1e-6, 1.0 + 1e-4, NAN, INFINITY, -INFINITY, 0.0, 1e-9});
  };
  auto base = [](ScalarType dt) { return vals({8}, dt, {1.0, 1.0, 1.0, NAN, INFINITY, INFINITY, 1e-9, 0.0}); };
  for (auto dt : {kFloat, kDouble, kHalf}) {
    const std::string s = short_name(dt);
    v.push_back(same("isclose.default_" + s, {pert(dt), base(dt)}, FN(isclose(t[0], t[1]))));
    v.push_back(same("isclose.equal_nan_" + s, {pert(dt), base(dt)}, FN(isclose(t[0], t[1], 1e-3, 1e-8, true))));
  }
  v.push_back(same("isclose.int", {range({6}, 0, 3, kInt64), range({6}, 0, 3, kInt64)}, FN(isclose(t[0], t[1]))));
  v.push_back(same("isclose.bcast", {in({3, 4}), in({4})}, FN(isclose(t[0], t[1], 10.0, 0.5))));
  v.push_back(same("isclose.mixed_dtypes_throws", {in({3}), in({3}, kDouble)}, FN(isclose(t[0], t[1]))));
  // equal / allclose return bool: wrapped in a bool 0-dim tensor for comparison.
  auto as_tensor = [](bool b, const auto& like) {
    using L = LibOf<std::vector<std::decay_t<decltype(like)>>>;
    return L::scalar_tensor(b ? 1.0 : 0.0, kBool);
  };
  v.push_back(same("equal.same_values_other_strides", {in({3, 4}, kInt32), in({3, 4}, kInt32)}, [as_tensor](const auto& t) {
    auto c = t[0].t().contiguous().t();
    return std::vector{as_tensor(t[0].equal(c), t[0]), as_tensor(t[0].equal(t[1]), t[0])};
  }));
  v.push_back(same("equal.shape_differs", {in({3, 4}), in({4, 3})},
                   [as_tensor](const auto& t) { return as_tensor(t[0].equal(t[1]), t[0]); }));
  v.push_back(same("allclose.close_and_not", {in({3, 4})}, [as_tensor](const auto& t) {
    auto y = t[0] + 1e-7;
    auto z = t[0] + 1e-3;
    return std::vector{as_tensor(t[0].allclose(y), t[0]), as_tensor(t[0].allclose(z), t[0])};
  }));
  return v;
}

}  // namespace parity
