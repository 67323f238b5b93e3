// Parity cases: reductions, scans, softmax, sort and topk.
#pragma once
#include "parity.h"

namespace parity {

inline std::vector<Case> reduce_cases() {
  using namespace brisk;
  std::vector<Case> v;
  const Tol sum_tol = tol(1e-5, 1e-4);  // accumulation order differs between libraries

  // ---- sum, mean, prod: every dtype, dims, keepdim, dtype= ------------------------------
  for (auto dt : kAllDtypes) {
    const std::string s = short_name(dt);
    v.push_back(same("sum.all_" + s, {in({3, 4, 5}, dt)}, FN(t[0].sum()), sum_tol));
    v.push_back(same("sum.dim1_" + s, {in({3, 4, 5}, dt)}, FN(t[0].sum(1)), sum_tol));
    v.push_back(same("sum.dims02_keepdim_" + s, {in({3, 4, 5}, dt)}, FN(t[0].sum(D{0, 2}, true)), sum_tol));
    v.push_back(same("mean.all_" + s, {in({3, 4, 5}, dt)}, FN(t[0].mean()), sum_tol));
    v.push_back(same("mean.dim_neg1_" + s, {in({3, 4, 5}, dt)}, FN(t[0].mean(-1)), sum_tol));
    v.push_back(same("prod.all_" + s, {in({3, 4}, dt, Gen::Unit)}, FN(t[0].prod()), sum_tol));
    v.push_back(same("prod.dim0_keepdim_" + s, {in({3, 4}, dt)}, FN(t[0].prod(0, true)), sum_tol));
  }
  v.push_back(same("sum.dtype_f64", {in({3, 4})}, FN(t[0].sum(L::kDouble))));
  v.push_back(same("sum.dtype_i32_from_bool", {in({3, 4}, kBool)}, FN(t[0].sum(L::kInt))));
  v.push_back(same("sum.dim_dtype_f32_from_f16", {in({8, 33}, kHalf)}, FN(t[0].sum(1, false, L::kFloat)), sum_tol));
  v.push_back(same("sum.empty_dim_list_is_all", {in({3, 4})}, FN(t[0].sum(std::vector<int64_t>{})), sum_tol));
  v.push_back(same("sum.neg_dims", {in({2, 3, 4, 5})}, FN(t[0].sum(D{-1, -3}, true)), sum_tol));
  v.push_back(same("sum.transposed", {in({6, 7}).T()}, FN(t[0].sum(0)), sum_tol));
  v.push_back(same("sum.strided", {in({6, 7}).S()}, FN(t[0].sum(1)), sum_tol));
  v.push_back(same("sum.expanded", {in({5, 7}).X()}, FN(t[0].sum(0)), sum_tol));
  v.push_back(same("sum.large_inner", {in({3, 5000})}, FN(t[0].sum(1)), tol(1e-5, 1e-3)));
  v.push_back(same("sum.large_outer", {in({5000, 3})}, FN(t[0].sum(0)), tol(1e-5, 1e-3)));
  v.push_back(same("sum.large_all_f32", {in({300, 301})}, FN(t[0].sum()), tol(1e-5, 1e-2)));
  v.push_back(same("sum.large_bf16", {in({64, 513}, kBFloat16)}, FN(t[0].sum(1)), tol(2e-2, 1e-1)));
  v.push_back(same("sum.middle_dim", {in({7, 300, 9})}, FN(t[0].sum(1)), tol(1e-5, 1e-4)));
  v.push_back(same("sum.zero_size_dim", {in({0, 3})}, FN(t[0].sum(0))));
  v.push_back(same("sum.zero_size_all", {in({0}, kInt32)}, FN(t[0].sum())));
  v.push_back(same("sum.0dim", {in({})}, FN(t[0].sum())));
  v.push_back(same("sum.0dim_dim0", {in({})}, FN(t[0].sum(0))));
  v.push_back(same("sum.int_overflow_wraps_i64", {vals({3}, kInt64, {9.2e18, 9.2e18, 1})}, FN(t[0].sum())));
  v.push_back(same("sum.special", {in({22}, kFloat, Gen::Special)}, FN(t[0].sum())));
  v.push_back(same("sum.out", {in({3, 4, 5})}, [](const auto& t) {
    using L = LibOf<decltype(t)>;
    auto o = L::empty({0}, kFloat);
    sum_out(o, t[0], {1}, true);
    return o;
  }, sum_tol));
  v.push_back(same("mean.dtype_f64_from_i32", {in({3, 4}, kInt32)}, FN(t[0].mean(L::kDouble))));
  v.push_back(same("mean.dims_keepdim", {in({3, 4, 5}, kDouble)}, FN(t[0].mean(D{0, 2}, true))));
  v.push_back(same("mean.zero_size_is_nan", {in({0, 3})}, FN(t[0].mean(0))));
  v.push_back(same("mean.transposed_bf16", {in({6, 7}, kBFloat16).T()}, FN(t[0].mean(1))));
  v.push_back(same("prod.dtype_f64", {in({3, 4}, kFloat, Gen::Unit)}, FN(t[0].prod(L::kDouble))));
  v.push_back(same("prod.zero_size_is_one", {in({0, 3})}, FN(t[0].prod(0))));
  v.push_back(same("prod.with_zero_and_nan", {in({22}, kDouble, Gen::Special)}, FN(t[0].prod())));
  v.push_back(same("prod.int_dim_strided", {range({3, 6}, -3, 4, kInt32).S()}, FN(t[0].prod(1))));

  // ---- max/min (values and indices), amax/amin, argmax/argmin ----------------------------
  for (auto dt : kAllDtypes) {
    const std::string s = short_name(dt);
    const Gen g = dt == kBool ? Gen::Normal : Gen::Distinct;
    v.push_back(same("max.all_" + s, {in({3, 4}, dt, g)}, FN(t[0].max())));
    v.push_back(same("min.all_" + s, {in({3, 4}, dt, g)}, FN(t[0].min())));
    v.push_back(same("max.dim_" + s, {in({3, 4, 5}, dt, g)}, FN(t[0].max(1))));
    v.push_back(same("min.dim_keepdim_" + s, {in({3, 4, 5}, dt, g)}, FN(t[0].min(-1, true))));
    v.push_back(same("amax.dims_" + s, {in({3, 4, 5}, dt)}, FN(t[0].amax(D{0, 2}))));
    v.push_back(same("amin.dim_keepdim_" + s, {in({3, 4, 5}, dt)}, FN(t[0].amin(1, true))));
    v.push_back(same("argmax.all_" + s, {in({3, 4, 5}, dt, g)}, FN(t[0].argmax())));
    v.push_back(same("argmax.dim_" + s, {in({3, 4, 5}, dt, g)}, FN(t[0].argmax(1))));
    v.push_back(same("argmin.dim_keepdim_" + s, {in({3, 4, 5}, dt, g)}, FN(t[0].argmin(2, true))));
  }
  v.push_back(same("amax.all_empty_dims", {in({3, 4})}, FN(t[0].amax())));
  v.push_back(same("amax.nan_propagates", {in({22}, kFloat, Gen::Special)}, FN(t[0].amax())));
  v.push_back(same("amin.nan_propagates_dim", {in({2, 11}, kFloat, Gen::Special)}, FN(t[0].amin(1))));
  v.push_back(same("max.nan_with_index", {vals({2, 3}, kFloat, {1, NAN, 3, 4, 5, 6})}, FN(t[0].max(1))));
  v.push_back(same("amax.zero_size_throws", {in({0, 3})}, FN(t[0].amax(0))));
  v.push_back(same("amax.zero_size_other_dim", {in({0, 3})}, FN(t[0].amax(1))));
  v.push_back(same("max.zero_size_all_throws", {in({0})}, FN(t[0].max())));
  v.push_back(same("amax.transposed", {in({5, 6}).T()}, FN(t[0].amax(0))));
  v.push_back(same("amax.large", {in({7, 3000})}, FN(t[0].amax(1))));
  v.push_back(same("argmax.ties_first_index", {vals({2, 5}, kFloat, {1, 3, 3, 0, 3, 2, 2, 2, 2, 2})},
                   FN(std::vector{t[0].argmax(1), t[0].argmin(1), t[0].argmax()})));
  v.push_back(same("argmax.ties_int", {vals({6}, kInt64, {4, 1, 4, 1, 4, 1})},
                   FN(std::vector{t[0].argmax(), t[0].argmin()})));
  v.push_back(same("max.ties_index_first", {vals({2, 4}, kInt32, {7, 7, 1, 7, 0, 0, 0, 0})}, FN(t[0].max(1))));
  v.push_back(same("argmax.nan_wins", {vals({5}, kFloat, {1, NAN, 3, NAN, 2})},
                   FN(std::vector{t[0].argmax(), t[0].argmin()})));
  v.push_back(same("argmax.zero_size_throws", {in({0})}, FN(t[0].argmax())));
  v.push_back(same("argmax.strided", {in({4, 6}, kFloat, Gen::Distinct).S()}, FN(t[0].argmax(0, true))));
  v.push_back(same("argmax.0dim", {in({})}, FN(t[0].argmax())));

  // ---- var, std, var_mean --------------------------------------------------------------
  for (auto dt : {kFloat, kDouble, kHalf, kBFloat16, kInt32}) {
    const std::string s = short_name(dt);
    v.push_back(same("var.all_" + s, {in({3, 4, 5}, dt)}, FN(L::var(t[0], std::nullopt, 1, false)), sum_tol));
    v.push_back(same("var.dim1_" + s, {in({3, 4, 5}, dt)},
                     FN(L::var(t[0], std::vector<int64_t>{1}, 1, false)), sum_tol));
    v.push_back(same("std.dims02_keepdim_" + s, {in({3, 4, 5}, dt)},
                     FN(L::std(t[0], std::vector<int64_t>{0, 2}, 1, true)), sum_tol));
  }
  for (int64_t corr : {0, 2}) {
    const std::string s = std::to_string(corr);
    v.push_back(same("var.correction" + s, {in({4, 6})},
                     [corr](const auto& t) { return LibOf<decltype(t)>::var(t[0], std::vector<int64_t>{1}, corr, false); },
                     sum_tol));
    v.push_back(same("std.correction" + s, {in({4, 6})},
                     [corr](const auto& t) { return LibOf<decltype(t)>::std(t[0], std::nullopt, corr, true); },
                     sum_tol));
  }
  v.push_back(same("var.single_element_is_nan", {in({3, 1})},
                   FN(L::var(t[0], std::vector<int64_t>{1}, 1, false))));
  v.push_back(same("var.correction_exceeds_n", {in({3, 2})},
                   FN(L::var(t[0], std::vector<int64_t>{1}, 2, false))));
  v.push_back(same("var.large_offset_stable", {vals({4}, kFloat, {1e4 + 1, 1e4 + 2, 1e4 + 3, 1e4 + 4})},
                   FN(L::var(t[0], std::nullopt, 1, false)), tol(1e-4, 1e-4)));
  v.push_back(same("var.transposed", {in({5, 6}).T()}, FN(L::var(t[0], std::vector<int64_t>{0}, 1, true)), sum_tol));
  v.push_back(same("var.large", {in({4, 4000})}, FN(L::var(t[0], std::vector<int64_t>{1}, 1, false)), tol(1e-4, 1e-4)));
  v.push_back(same("var.zero_size", {in({0, 3})}, FN(L::var(t[0], std::vector<int64_t>{0}, 1, false))));
  v.push_back(same("var_mean.dim", {in({3, 4, 5})}, FN(L::var_mean(t[0], std::vector<int64_t>{1}, 1, true)), sum_tol));
  v.push_back(same("var_mean.all_f64", {in({3, 4}, kDouble)}, FN(L::var_mean(t[0], std::nullopt, 0, false))));

  // ---- norm, logsumexp ------------------------------------------------------------------
  for (double p : {2.0, 1.0, 3.0, 0.0, 0.5, double(INFINITY), -double(INFINITY)}) {
    std::string s = std::isinf(p) ? (p > 0 ? "inf" : "neginf") : std::to_string(int(p * 10));
    v.push_back(same("norm.p" + s + "_all", {in({3, 4})},
                     [p](const auto& t) { return LibOf<decltype(t)>::norm(t[0], p, {0, 1}, false); }, sum_tol));
    v.push_back(same("norm.p" + s + "_dim", {in({3, 4, 5}, kDouble)},
                     [p](const auto& t) { return LibOf<decltype(t)>::norm(t[0], p, {1}, true); }, sum_tol));
  }
  for (auto dt : {kHalf, kBFloat16, kInt64})
    v.push_back(same(std::string("norm.") + short_name(dt), {in({3, 4}, dt)}, FN(L::norm(t[0], 2, {1}, false)),
                     sum_tol));
  v.push_back(same("norm.method_default", {in({3, 4})}, FN(t[0].norm()), sum_tol));
  v.push_back(same("norm.empty_dims_is_all", {in({3, 4})}, FN(L::norm(t[0], 2, {}, false)), sum_tol));
  v.push_back(same("norm.large", {in({3, 5000})}, FN(L::norm(t[0], 2, {1}, false)), tol(1e-5, 1e-3)));
  v.push_back(same("norm.zero_size", {in({0, 3})}, FN(L::norm(t[0], 2, {0}, false))));
  v.push_back(same("norm.special", {in({22}, kFloat, Gen::Special)}, FN(L::norm(t[0], 2, {0}, false))));
  for (auto dt : kFloatDtypes)
    v.push_back(same(std::string("logsumexp.") + short_name(dt), {in({3, 4, 5}, dt)}, FN(t[0].logsumexp(1)),
                     sum_tol));
  v.push_back(same("logsumexp.dims_keepdim", {in({3, 4, 5})}, FN(t[0].logsumexp(D{0, 2}, true)), sum_tol));
  v.push_back(same("logsumexp.large_values", {vals({2, 3}, kFloat, {1000, 1000, 999, -1000, -1001, -1000})},
                   FN(t[0].logsumexp(1))));
  v.push_back(same("logsumexp.inf_rows", {vals({3, 2}, kFloat, {-INFINITY, -INFINITY, INFINITY, 1, INFINITY, INFINITY})},
                   FN(t[0].logsumexp(1))));
  v.push_back(same("logsumexp.int_input", {in({3, 4}, kInt64)}, FN(t[0].logsumexp(1))));
  v.push_back(same("logsumexp.zero_size", {in({0, 3})}, FN(t[0].logsumexp(0))));

  // ---- softmax, log_softmax -------------------------------------------------------------
  for (auto dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64}) {
    const std::string s = short_name(dt);
    v.push_back(same("softmax.last_" + s, {in({3, 4, 5}, dt)}, FN(t[0].softmax(-1))));
    v.push_back(same("softmax.dim0_" + s, {in({3, 4, 5}, dt)}, FN(t[0].softmax(0))));
    v.push_back(same("log_softmax.last_" + s, {in({3, 4, 5}, dt)}, FN(t[0].log_softmax(-1))));
    v.push_back(same("log_softmax.dim1_" + s, {in({3, 4, 5}, dt)}, FN(t[0].log_softmax(1))));
  }
  v.push_back(same("softmax.dtype_f64", {in({3, 4})}, FN(t[0].softmax(1, L::kDouble))));
  v.push_back(same("softmax.dtype_f32_from_f16", {in({3, 4}, kHalf)}, FN(t[0].softmax(1, L::kFloat))));
  v.push_back(same("log_softmax.dtype_f32_from_bf16", {in({3, 4}, kBFloat16)}, FN(t[0].log_softmax(0, L::kFloat))));
  v.push_back(same("softmax.large_values_stable", {vals({2, 3}, kFloat, {1000, 1001, 1002, -1000, -1000, -1e30})},
                   FN(std::vector{t[0].softmax(1), t[0].log_softmax(1)})));
  v.push_back(same("softmax.neg_inf_entries", {vals({2, 3}, kFloat, {-INFINITY, 0, 1, -INFINITY, -INFINITY, 2})},
                   FN(std::vector{t[0].softmax(1), t[0].log_softmax(1)})));
  v.push_back(same("softmax.all_neg_inf_row_is_nan", {vals({1, 3}, kFloat, {-INFINITY, -INFINITY, -INFINITY})},
                   FN(t[0].softmax(1))));
  v.push_back(same("softmax.transposed", {in({5, 6}).T()}, FN(std::vector{t[0].softmax(1), t[0].log_softmax(0)})));
  v.push_back(same("softmax.long_rows", {in({4, 3000})}, FN(std::vector{t[0].softmax(1), t[0].log_softmax(1)}),
                   tol(1e-5, 1e-5)));
  v.push_back(same("softmax.0dim", {in({})}, FN(t[0].softmax(0))));
  v.push_back(same("softmax.zero_size", {in({0, 4})}, FN(t[0].softmax(1))));

  // ---- cumsum, cumprod ------------------------------------------------------------------
  for (auto dt : kAllDtypes) {
    const std::string s = short_name(dt);
    v.push_back(same("cumsum.dim1_" + s, {in({3, 6}, dt)}, FN(t[0].cumsum(1)), sum_tol));
    v.push_back(same("cumprod.dim0_" + s, {in({5, 3}, dt, Gen::Unit)}, FN(t[0].cumprod(0)), sum_tol));
  }
  v.push_back(same("cumsum.dtype_f64", {in({3, 6})}, FN(t[0].cumsum(1, L::kDouble))));
  v.push_back(same("cumsum.dtype_i32_from_bool", {in({3, 6}, kBool)}, FN(t[0].cumsum(1, L::kInt))));
  v.push_back(same("cumsum.neg_dim_3d", {in({2, 3, 4})}, FN(t[0].cumsum(-2)), sum_tol));
  v.push_back(same("cumsum.transposed", {in({5, 6}).T()}, FN(t[0].cumsum(1)), sum_tol));
  v.push_back(same("cumsum.long", {in({2, 4000})}, FN(t[0].cumsum(1)), tol(1e-4, 1e-3)));
  v.push_back(same("cumsum.0dim", {in({})}, FN(t[0].cumsum(0))));
  v.push_back(same("cumsum.zero_size", {in({0, 3})}, FN(t[0].cumsum(0))));
  v.push_back(same("cumsum.special", {in({22}, kFloat, Gen::Special)}, FN(t[0].cumsum(0))));
  v.push_back(same("cumprod.with_zeros", {vals({6}, kFloat, {2, 3, 0, 4, 5, 6})}, FN(t[0].cumprod(0))));
  v.push_back(same("cumprod.dtype_f64", {in({3, 4}, kFloat, Gen::Unit)}, FN(t[0].cumprod(1, L::kDouble))));

  // ---- all, any --------------------------------------------------------------------------
  for (auto dt : kAllDtypes) {
    const std::string s = short_name(dt);
    // Range 0..2 gives zeros and ones for every dtype; a bool tensor of random bits.
    v.push_back(same("all.all_" + s, {range({3, 4}, 0, 2, dt)}, FN(t[0].all())));
    v.push_back(same("any.all_" + s, {range({3, 4}, 0, 2, dt)}, FN(t[0].any())));
    v.push_back(same("all.dim_" + s, {range({3, 4}, 0, 2, dt)}, FN(t[0].all(1))));
    v.push_back(same("any.dim_keepdim_" + s, {range({3, 4}, 0, 2, dt)}, FN(t[0].any(0, true))));
  }
  v.push_back(same("all.all_true", {in({3, 4}, kFloat, Gen::Positive)}, FN(std::vector{t[0].all(), t[0].any()})));
  v.push_back(same("all.zero_size", {in({0, 3}, kBool)}, FN(std::vector{t[0].all(), t[0].any(), t[0].all(0)})));
  v.push_back(same("all.nan_is_true", {vals({2}, kFloat, {NAN, 1})}, FN(t[0].all())));
  v.push_back(same("any.strided", {range({4, 6}, 0, 2, kBool).S()}, FN(t[0].any(1))));
  v.push_back(same("any.large", {range({3, 5000}, 0, 2, kBool)}, FN(t[0].any(1))));
  return v;
}

inline std::vector<Case> sort_cases() {
  using namespace brisk;
  std::vector<Case> v;
  for (auto dt : kNumericDtypes) {
    const std::string s = short_name(dt);
    v.push_back(same("sort.last_" + s, {in({3, 7}, dt, Gen::Distinct)}, FN(L::sort(t[0], -1, false))));
    v.push_back(same("sort.dim0_desc_" + s, {in({7, 3}, dt, Gen::Distinct)}, FN(L::sort(t[0], 0, true))));
    v.push_back(same("topk.k3_" + s, {in({4, 9}, dt, Gen::Distinct)}, FN(t[0].topk(3))));
    v.push_back(same("topk.smallest_dim0_" + s, {in({9, 4}, dt, Gen::Distinct)}, FN(t[0].topk(2, 0, false))));
  }
  v.push_back(same("sort.bool", {in({10}, kBool)}, FN(L::sort(t[0], 0, false))));
  // Ties: brisk's sort is stable; torch's stable sort is the reference.
  v.push_back(same("sort.ties_stable", {range({4, 12}, 0, 3, kInt64)}, FN(L::sort(t[0], 1, false))));
  v.push_back(same("sort.ties_stable_desc", {range({4, 12}, 0, 3, kFloat)}, FN(L::sort(t[0], 1, true))));
  v.push_back(same("sort.nan_last", {in({22}, kFloat, Gen::Special)}, FN(std::get<0>(L::sort(t[0], 0, false)))));
  v.push_back(same("sort.nan_first_desc", {in({22}, kDouble, Gen::Special)}, FN(std::get<0>(L::sort(t[0], 0, true)))));
  v.push_back(same("sort.transposed", {in({6, 5}, kFloat, Gen::Distinct).T()}, FN(L::sort(t[0], 1, false))));
  v.push_back(same("sort.strided", {in({5, 6}, kFloat, Gen::Distinct).S()}, FN(L::sort(t[0], 0, true))));
  v.push_back(same("sort.long_rows", {in({3, 2000}, kFloat, Gen::Distinct)}, FN(L::sort(t[0], 1, false))));
  v.push_back(same("sort.3d_middle", {in({2, 9, 3}, kInt32, Gen::Distinct)}, FN(L::sort(t[0], 1, true))));
  v.push_back(same("sort.0dim", {in({})}, FN(L::sort(t[0], 0, false))));
  v.push_back(same("sort.zero_size", {in({0, 4})}, FN(L::sort(t[0], 1, false))));
  v.push_back(pair("argsort.stable", {range({3, 10}, 0, 4, kFloat)}, FN(t[0].argsort(1)),
                   FN(at::argsort(t[0], /*stable=*/true, 1, false))));
  v.push_back(pair("argsort.desc_stable", {range({10, 3}, 0, 4, kInt32)}, FN(t[0].argsort(0, true)),
                   FN(at::argsort(t[0], /*stable=*/true, 0, true))));
  v.push_back(same("topk.k_equals_size", {in({3, 5}, kFloat, Gen::Distinct)}, FN(t[0].topk(5))));
  v.push_back(same("topk.k_zero", {in({3, 5})}, FN(t[0].topk(0))));
  v.push_back(same("topk.k_too_big_throws", {in({3, 5})}, FN(t[0].topk(6))));
  v.push_back(same("topk.long_rows", {in({3, 3000}, kFloat, Gen::Distinct)}, FN(t[0].topk(10))));
  v.push_back(same("topk.transposed", {in({6, 5}, kDouble, Gen::Distinct).T()}, FN(t[0].topk(2, 0))));
  v.push_back(same("topk.nan_is_largest", {vals({5}, kFloat, {1, NAN, 3, 2, 0})}, FN(std::get<0>(t[0].topk(2)))));
  // Unsorted topk: the order is unspecified; compare the selected values after sorting.
  v.push_back(same("topk.unsorted_values", {in({4, 30}, kFloat, Gen::Distinct)},
                   FN(std::get<0>(L::sort(std::get<0>(t[0].topk(7, 1, true, false)), 1, false)))));
  return v;
}

}  // namespace parity
