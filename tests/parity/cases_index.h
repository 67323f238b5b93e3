// Parity cases: Python-style indexing (slices, None, Ellipsis, integer and
// boolean tensors), index_put_, gather/scatter, index_select, masked ops,
// nonzero; and the error family (both libraries must throw).
#pragma once
#include "parity.h"

namespace parity {

inline std::vector<Case> index_cases() {
  using namespace brisk;
  std::vector<Case> v;
  // ---- basic indexing: views ------------------------------------------------------------
  v.push_back(view_case("index.int", {in({4, 5})}, FN(t[0].index({1}))));
  v.push_back(view_case("index.neg_int", {in({4, 5})}, FN(t[0].index({-1, 2}))));
  v.push_back(view_case("index.slice_from", {in({4, 5})}, FN(t[0].index({L::Slice(1, L::None)}))));
  v.push_back(view_case("index.slice_step", {in({9, 5})}, FN(t[0].index({L::Slice(L::None, L::None, 2)}))));
  v.push_back(view_case("index.slice_neg_bounds", {in({9, 5})}, FN(t[0].index({L::Slice(-4, -1), L::Slice(1, 3)}))));
  v.push_back(view_case("index.slice_out_of_range_clamps", {in({4, 5})}, FN(t[0].index({L::Slice(2, 100)}))));
  v.push_back(view_case("index.none_front", {in({4, 5})}, FN(t[0].index({L::None}))));
  v.push_back(view_case("index.slice_none_int", {in({4, 5})}, FN(t[0].index({L::Slice(), L::None, 1}))));
  v.push_back(view_case("index.ellipsis_int", {in({2, 3, 4})}, FN(t[0].index({L::Ellipsis, 0}))));
  v.push_back(view_case("index.ellipsis_none", {in({2, 3, 4})}, FN(t[0].index({L::Ellipsis, L::None}))));
  v.push_back(view_case("index.int_ellipsis_slice", {in({2, 3, 4})},
                        FN(t[0].index({1, L::Ellipsis, L::Slice(1, L::None, 2)}))));
  v.push_back(view_case("index.ellipsis_matches_nothing", {in({2, 3})}, FN(t[0].index({1, L::Ellipsis, 2}))));
  v.push_back(view_case("index.bool_true_adds_dim", {in({2, 3})}, FN(t[0].index({true}))));
  v.push_back(view_case("index.bool_false_empties", {in({2, 3})}, FN(t[0].index({L::Slice(), false}))));
  v.push_back(view_case("index.on_transposed", {in({5, 4}).T()}, FN(t[0].index({L::Slice(1, 3), -2}))));
  v.push_back(view_case("index.0dim_ellipsis", {in({})}, FN(t[0].index({L::Ellipsis}))));
  v.push_back(view_case("index.0dim_none", {in({})}, FN(t[0].index({L::None}))));
  // ---- advanced indexing: copies ---------------------------------------------------------
  v.push_back(same("index.tensor_1d", {in({5, 3}), range({4}, 0, 5)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.tensor_neg_values", {in({5, 3}), range({6}, -5, 5)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.tensor_2d", {in({5, 3}), range({2, 4}, 0, 5)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.two_tensors_bcast", {in({5, 6}), range({3, 1}, 0, 5), range({4}, 0, 6)},
                   FN(t[0].index({t[1], t[2]}))));
  v.push_back(same("index.slice_then_tensor", {in({3, 6, 2}), range({4}, 0, 6)},
                   FN(t[0].index({L::Slice(), t[1]}))));
  // Advanced indices separated by a slice: their dims go first (numpy rule).
  v.push_back(same("index.separated_tensors", {in({4, 3, 5}), range({2}, 0, 4), range({2}, 0, 5)},
                   FN(t[0].index({t[1], L::Slice(), t[2]}))));
  v.push_back(same("index.adjacent_tensors_in_middle", {in({2, 4, 5, 3}), range({6}, 0, 4), range({6}, 0, 5)},
                   FN(t[0].index({L::Slice(), t[1], t[2]}))));
  v.push_back(same("index.tensor_and_int", {in({4, 5, 3}), range({2}, 0, 5)}, FN(t[0].index({1, t[1]}))));
  v.push_back(same("index.none_and_tensor", {in({4, 5}), range({3}, 0, 4)}, FN(t[0].index({L::None, t[1]}))));
  v.push_back(same("index.ellipsis_and_tensor", {in({2, 3, 4}), range({5}, 0, 4)},
                   FN(t[0].index({L::Ellipsis, t[1]}))));
  v.push_back(same("index.tensor_0dim", {in({4, 5}), range({}, 0, 4)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.tensor_empty", {in({4, 5}), range({0}, 0, 4)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.on_noncontig", {in({5, 4}).T(), range({3}, 0, 4)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.int_dtypes", {in({4, 5}, kInt64), range({3}, 0, 4)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.bool_input", {in({4, 5}, kBool), range({3}, 0, 4)}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.mask_full", {in({3, 4}), mask({3, 4})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.mask_rows", {in({5, 3}), mask({5})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.slice_mask", {in({3, 5}), mask({5})}, FN(t[0].index({L::Slice(), t[1]}))));
  v.push_back(same("index.mask_partial_dims", {in({3, 4, 2}), mask({3, 4})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.mask_all_false", {in({3, 4}), vals({3}, kBool, {0, 0, 0})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.mask_and_tensor", {in({3, 4}), mask({3}), range({1}, 0, 4)},
                   FN(t[0].index({t[1], t[2]}))));
  v.push_back(same("index.mask_0dim_true", {in({3}), vals({}, kBool, {1})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.uint8_mask", {in({3, 4}), range({3}, 0, 2, kUInt8)}, FN(t[0].index({t[1]}))));
  // By design: int32 index tensors are accepted, as in PyTorch 2.x (1.13 says
  // "tensors used as indices must be long, byte or bool tensors"); the
  // reference is torch with the index converted to int64.
  v.push_back(pair("index.int32_index", {in({3, 4}), range({2}, 0, 3, kInt32)}, FN(t[0].index({t[1]})),
                   FN(t[0].index({t[1].to(at::kLong)}))));
  v.push_back(same("index.out_of_bounds_throws", {in({3, 4}), vals({2}, kInt64, {0, 3})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.neg_out_of_bounds_throws", {in({3, 4}), vals({2}, kInt64, {0, -4})},
                   FN(t[0].index({t[1]}))));
  v.push_back(same("index.float_index_throws", {in({3, 4}), vals({2}, kFloat, {0, 1})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.mask_shape_mismatch_throws", {in({3, 4}), mask({4})}, FN(t[0].index({t[1]}))));
  v.push_back(same("index.too_many_indices_throws", {in({3, 4})}, FN(t[0].index({0, 1, 2}))));
  v.push_back(same("index.int_out_of_range_throws", {in({3, 4})}, FN(t[0].index({3}))));
  // ---- index_put_ -------------------------------------------------------------------------
  v.push_back(same("index_put.tensor_index_tensor_value", {in({5, 3}), vals({3}, kInt64, {4, 0, 2}), in({3, 3})},
                   [](const auto& t) {
                     auto x = t[0].clone();
                     x.index_put_({t[1]}, t[2]);
                     return x;
                   }));
  v.push_back(same("index_put.bcast_value", {in({5, 3}), vals({2}, kInt64, {1, -1}), in({3})}, [](const auto& t) {
    auto x = t[0].clone();
    x.index_put_({t[1]}, t[2]);
    return x;
  }));
  v.push_back(same("index_put.scalar_value", {in({5, 3}, kInt32), vals({2}, kInt64, {1, 3})}, [](const auto& t) {
    auto x = t[0].clone();
    x.index_put_({t[1], 1}, int64_t(9));
    return x;
  }));
  v.push_back(same("index_put.mask", {in({3, 4}), mask({3, 4})}, [](const auto& t) {
    auto x = t[0].clone();
    x.index_put_({t[1]}, 0.5);
    return x;
  }));
  v.push_back(same("index_put.slice_is_a_view_write", {in({4, 5}), in({2, 5})}, [](const auto& t) {
    using L = LibOf<decltype(t)>;
    auto x = t[0].clone();
    x.index_put_({L::Slice(1, 3)}, t[1]);
    return x;
  }));
  v.push_back(same("index_put.slice_and_tensor", {in({4, 5}), vals({2}, kInt64, {4, 0})}, [](const auto& t) {
    using L = LibOf<decltype(t)>;
    auto x = t[0].clone();
    x.index_put_({L::Slice(), t[1]}, -1.0);
    return x;
  }));
  // By design: brisk converts the value to the destination dtype (Python
  // assignment semantics); libtorch 1.13's C++ index_put_ throws. Both sides
  // get the converted value here, so the case compares the results.
  v.push_back(same("index_put.value_dtype_converted", {in({4}, kInt64), vals({2}, kInt64, {0, 2}), in({2}, kDouble)},
                   [](const auto& t) {
                     auto x = t[0].clone();
                     x.index_put_({t[1]}, t[2].to(x.scalar_type()));
                     return x;
                   }));
  v.push_back(same("index_put.out_of_bounds_throws", {in({4}), vals({2}, kInt64, {0, 4})}, [](const auto& t) {
    auto x = t[0].clone();
    x.index_put_({t[1]}, 1.0);
    return x;
  }));
  // ---- gather, scatter, scatter_add, index_add_ ------------------------------------------
  for (auto dt : kAllDtypes) {
    const std::string s = short_name(dt);
    v.push_back(same("gather.dim1_" + s, {in({3, 5}, dt), range({3, 4}, 0, 5)}, FN(t[0].gather(1, t[1]))));
    v.push_back(same("index_select.dim0_" + s, {in({5, 3}, dt), range({4}, 0, 5)},
                     FN(t[0].index_select(0, t[1]))));
    v.push_back(same("masked_select.bcast_" + s, {in({3, 4}, dt), mask({4})}, FN(t[0].masked_select(t[1]))));
    v.push_back(same("nonzero." + s, {range({3, 4}, 0, 2, dt)}, FN(t[0].nonzero())));
  }
  v.push_back(same("gather.dim0_smaller_index", {in({4, 5}), range({2, 3}, 0, 4)}, FN(gather(t[0], 0, t[1]))));
  v.push_back(same("gather.neg_dim_3d", {in({2, 3, 4}), range({2, 3, 6}, 0, 4)}, FN(t[0].gather(-1, t[1]))));
  v.push_back(same("gather.noncontig", {in({5, 3}).T(), range({3, 2}, 0, 5).S()}, FN(t[0].gather(1, t[1]))));
  v.push_back(same("gather.empty_index", {in({3, 5}), range({3, 0}, 0, 5)}, FN(t[0].gather(1, t[1]))));
  v.push_back(same("gather.out_of_bounds_throws", {in({3, 5}), vals({1, 2}, kInt64, {0, 5})}, FN(t[0].gather(1, t[1]))));
  v.push_back(same("gather.neg_index_throws", {in({3, 5}), vals({1, 2}, kInt64, {0, -1})}, FN(t[0].gather(1, t[1]))));
  v.push_back(same("gather.int32_index_throws", {in({3, 5}), range({3, 2}, 0, 5, kInt32)}, FN(t[0].gather(1, t[1]))));
  v.push_back(same("gather.index_too_big_throws", {in({3, 5}), range({4, 2}, 0, 5)}, FN(t[0].gather(1, t[1]))));
  // scatter: unique targets per column (duplicates make the result order-dependent).
  const std::vector<double> perm_idx = {2, 0, 1, 3, 1, 3, 0, 2, 0, 2, 3, 1};  // (3, 4): rows of dim-0 targets
  v.push_back(same("scatter.dim0", {in({4, 4}), vals({3, 4}, kInt64, perm_idx), in({3, 4})},
                   FN(t[0].scatter(0, t[1], t[2]))));
  v.push_back(same("scatter.dim1_src_bigger", {in({3, 5}), vals({3, 2}, kInt64, {4, 0, 1, 2, 3, 4}), in({3, 4})},
                   FN(scatter(t[0], 1, t[1], t[2]))));
  v.push_back(same("scatter.scalar_value", {in({4, 4}, kInt32), vals({3, 4}, kInt64, perm_idx)},
                   FN(t[0].scatter(0, t[1], int64_t(-7)))));
  v.push_back(same("scatter.inplace", {in({4, 4}, kDouble), vals({3, 4}, kInt64, perm_idx), in({3, 4}, kDouble)},
                   [](const auto& t) {
                     auto x = t[0].clone();
                     x.scatter_(0, t[1], t[2]);
                     return x;
                   }));
  v.push_back(same("scatter.out_of_bounds_throws", {in({4, 4}), vals({1, 1}, kInt64, {4}), in({1, 1})},
                   FN(t[0].scatter(0, t[1], t[2]))));
  v.push_back(same("scatter.dtype_mismatch_throws", {in({4, 4}), vals({1, 1}, kInt64, {1}), in({1, 1}, kDouble)},
                   FN(t[0].scatter(0, t[1], t[2]))));
  v.push_back(same("scatter_add.dup_int", {in({4, 3}, kInt64), range({6, 3}, 0, 4), in({6, 3}, kInt64)},
                   FN(t[0].scatter_add(0, t[1], t[2]))));
  v.push_back(same("scatter_add.dup_f32", {in({4, 3}), range({6, 3}, 0, 4), in({6, 3})},
                   FN(scatter_add(t[0], 0, t[1], t[2])), tol(1e-5, 1e-5)));
  v.push_back(same("scatter_add.dim1_f64", {in({3, 4}, kDouble), range({3, 7}, 0, 4), in({3, 7}, kDouble)},
                   FN(t[0].scatter_add(1, t[1], t[2]))));
  v.push_back(same("scatter_add.inplace_noncontig", {in({4, 3}).T(), range({3, 5}, 0, 4), in({3, 5})},
                   [](const auto& t) {
                     auto x = t[0].clone();
                     x.scatter_add_(1, t[1], t[2]);
                     return x;
                   }, tol(1e-5, 1e-5)));
  v.push_back(same("scatter_add.out_of_bounds_throws", {in({4, 3}), vals({1, 1}, kInt64, {-1}), in({1, 1})},
                   FN(t[0].scatter_add(0, t[1], t[2]))));
  v.push_back(same("index_add.dup_alpha", {in({5, 3}), range({6}, 0, 5), in({6, 3})}, [](const auto& t) {
    auto x = t[0].clone();
    x.index_add_(0, t[1], t[2], 2.0);
    return x;
  }, tol(1e-5, 1e-5)));
  v.push_back(same("index_add.dim1_int", {in({3, 5}, kInt32), range({4}, 0, 5), in({3, 4}, kInt32)}, [](const auto& t) {
    auto x = t[0].clone();
    x.index_add_(1, t[1], t[2]);
    return x;
  }));
  v.push_back(same("index_add.out_of_bounds_throws", {in({3, 5}), vals({1}, kInt64, {5}), in({3, 1})},
                   [](const auto& t) {
                     auto x = t[0].clone();
                     x.index_add_(1, t[1], t[2]);
                     return x;
                   }));
  // index_select
  v.push_back(same("index_select.dim1_int32_index", {in({3, 5}), range({4}, 0, 5, kInt32)},
                   FN(index_select(t[0], 1, t[1]))));
  v.push_back(same("index_select.neg_dim_noncontig", {in({5, 4}).T(), range({6}, 0, 4)},
                   FN(t[0].index_select(-1, t[1]))));
  v.push_back(same("index_select.empty_index", {in({3, 5}), range({0}, 0, 5)}, FN(t[0].index_select(1, t[1]))));
  v.push_back(same("index_select.0dim_index", {in({3, 5}), range({}, 0, 5)}, FN(t[0].index_select(1, t[1]))));
  v.push_back(same("index_select.out_of_bounds_throws", {in({3, 5}), vals({2}, kInt64, {1, 5})},
                   FN(t[0].index_select(1, t[1]))));
  v.push_back(same("index_select.2d_index_throws", {in({3, 5}), range({2, 2}, 0, 3)},
                   FN(t[0].index_select(0, t[1]))));
  v.push_back(same("index_select.large", {in({1000, 16}), range({3000}, 0, 1000)}, FN(t[0].index_select(0, t[1]))));
  // masked_select, masked_fill
  v.push_back(same("masked_select.same_shape", {in({3, 4}), mask({3, 4})}, FN(masked_select(t[0], t[1]))));
  v.push_back(same("masked_select.mask_bcasts_input", {in({4}), mask({3, 4})}, FN(t[0].masked_select(t[1]))));
  v.push_back(same("masked_select.noncontig", {in({4, 3}).T(), mask({3, 4}).S()}, FN(t[0].masked_select(t[1]))));
  v.push_back(same("masked_select.all_false", {in({3, 4}), vals({4}, kBool, {0, 0, 0, 0})},
                   FN(t[0].masked_select(t[1]))));
  v.push_back(same("masked_select.float_mask_throws", {in({3, 4}), in({3, 4})}, FN(t[0].masked_select(t[1]))));
  v.push_back(same("masked_fill.scalar", {in({3, 4}), mask({3, 4})}, FN(t[0].masked_fill(t[1], -1.5))));
  v.push_back(same("masked_fill.bcast_mask_int", {in({3, 4}, kInt64), mask({3, 1})}, FN(t[0].masked_fill(t[1], 7))));
  v.push_back(same("masked_fill.inplace_noncontig", {in({4, 3}).T(), mask({4})}, [](const auto& t) {
    auto x = t[0].clone();
    x.masked_fill_(t[1], 0.0);
    return x;
  }));
  v.push_back(same("masked_fill.mask_bigger_throws", {in({4}), mask({3, 4})}, [](const auto& t) {
    auto x = t[0].clone();
    x.masked_fill_(t[1], 0.0);
    return x;
  }));
  // nonzero, where(cond)
  v.push_back(same("nonzero.3d", {range({2, 3, 4}, 0, 2, kInt32)}, FN(t[0].nonzero())));
  v.push_back(same("nonzero.special_floats", {in({22}, kFloat, Gen::Special)}, FN(nonzero(t[0]))));
  v.push_back(same("nonzero.noncontig", {range({4, 3}, 0, 2, kBool).T()}, FN(t[0].nonzero())));
  v.push_back(same("nonzero.zero_size", {in({0, 3})}, FN(t[0].nonzero())));
  v.push_back(same("nonzero.0dim", {vals({}, kFloat, {2})}, FN(t[0].nonzero())));
  v.push_back(same("nonzero.large", {range({300, 301}, 0, 2, kBool)}, FN(t[0].nonzero())));
  v.push_back(same("where_cond.2d", {mask({3, 4})}, FN(where(t[0]))));
  v.push_back(same("where_cond.float", {range({5}, 0, 2, kFloat)}, FN(where(t[0]))));
  return v;
}

/// Both libraries must reject these inputs; brisk's message starts with
/// "[op]" and names the offending values (pieces).
inline std::vector<ErrorCase> error_cases() {
  using namespace brisk;
  std::vector<ErrorCase> v;
  // shape mismatches
  v.push_back(both_throw("shape.add_not_broadcastable", {in({2, 3}), in({4})}, {"[add]", "[2, 3]", "[4]"},
                         FN(t[0] + t[1])));
  v.push_back(both_throw("shape.mul_not_broadcastable", {in({2, 3}), in({3, 2})}, {"[mul]"}, FN(t[0] * t[1])));
  v.push_back(both_throw("shape.where_not_broadcastable", {mask({2}), in({3}), in({3})}, {"[where]"},
                         FN(where(t[0], t[1], t[2]))));
  v.push_back(both_throw("shape.matmul_inner", {in({2, 3}), in({4, 5})}, {"[matmul]", "3", "4"},
                         FN(t[0].matmul(t[1]))));
  v.push_back(both_throw("shape.matmul_batch", {in({2, 3, 4}), in({3, 4, 5})}, {"[matmul]"}, FN(t[0].matmul(t[1]))));
  v.push_back(both_throw("shape.mm_not_2d", {in({2, 3, 4}), in({4, 5})}, {"[mm]"}, FN(t[0].mm(t[1]))));
  v.push_back(both_throw("shape.bmm_batch", {in({2, 3, 4}), in({3, 4, 5})}, {"[bmm]"}, FN(t[0].bmm(t[1]))));
  v.push_back(both_throw("shape.mv", {in({2, 3}), in({4})}, {"[mv]"}, FN(t[0].mv(t[1]))));
  v.push_back(both_throw("shape.dot_sizes", {in({3}), in({4})}, {"[dot]"}, FN(t[0].dot(t[1]))));
  v.push_back(both_throw("shape.dot_2d", {in({3, 1}), in({3})}, {"[dot]"}, FN(t[0].dot(t[1]))));
  v.push_back(both_throw("shape.addmm_self", {in({3, 3}), in({2, 4}), in({4, 3})}, {"[addmm]"},
                         FN(t[0].addmm(t[1], t[2]))));
  v.push_back(both_throw("shape.cat_sizes", {in({2, 3}), in({2, 4})}, {"[cat]"}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(both_throw("shape.cat_empty_list", {}, {"[cat]"},
                         [](const auto& t) { return cat(std::vector<typename std::decay_t<decltype(t)>::value_type>{}, 0); }));
  v.push_back(both_throw("shape.stack_sizes", {in({2, 3}), in({2, 4})}, {"[stack]"},
                         FN(stack(std::vector{t[0], t[1]}, 0))));
  v.push_back(both_throw("shape.view_numel", {in({2, 3})}, {"[view]", "[4]", "6"}, FN(t[0].view({4}))));
  v.push_back(both_throw("shape.view_strides", {in({3, 2}).T()}, {"[view]"}, FN(t[0].view({6}))));
  v.push_back(both_throw("shape.reshape_numel", {in({2, 3})}, {"[reshape]"}, FN(t[0].reshape({4, 2}))));
  v.push_back(both_throw("shape.expand_size", {in({2, 3})}, {"[expand]"}, FN(t[0].expand({2, 4}))));
  v.push_back(both_throw("shape.expand_fewer_dims", {in({2, 3})}, {"[expand]"}, FN(t[0].expand({3}))));
  v.push_back(both_throw("shape.repeat_fewer_dims", {in({2, 3})}, {"[repeat]"}, FN(t[0].repeat({2}))));
  v.push_back(both_throw("shape.pad_odd", {in({2, 3})}, {"[pad]"}, FN(L::pad(t[0], {1}, 0))));
  v.push_back(both_throw("shape.unflatten_sizes", {in({2, 6})}, {"[unflatten]"}, FN(t[0].unflatten(1, {4, 2}))));
  v.push_back(both_throw("shape.split_sizes", {in({5})}, {"[split"}, FN(t[0].split({2, 2}))));
  v.push_back(both_throw("shape.roll_mismatch", {in({3, 4})}, {"[roll]"}, FN(t[0].roll({1, 2}, {0}))));
  v.push_back(both_throw("shape.tril_1d", {in({3})}, {"[tril]"}, FN(t[0].tril())));
  v.push_back(both_throw("shape.masked_fill_mask", {in({3, 4}), mask({2, 4})}, {"[masked_fill"},
                         FN(t[0].masked_fill(t[1], 0.0))));
  // By design (include/brisk/ops.h): an out= tensor that is neither empty nor of
  // the result's shape is an error in brisk; libtorch resizes it with a warning.
  v.push_back(brisk_throws("shape.add_out_wrong_shape", {in({2, 3}), in({2, 3})}, {"[add", "[3, 2]"},
                           [](const auto& t) {
                             using L = LibOf<decltype(t)>;
                             auto o = L::empty({3, 2}, kFloat);
                             add_out(o, t[0], t[1]);
                             return o;
                           }));
  v.push_back(both_throw("shape.einsum_operand_count", {in({2, 3})}, {"[einsum]"},
                         [](const auto& t) { return einsum("ij,jk->ik", t); }));
  v.push_back(both_throw("shape.einsum_dim_mismatch", {in({2, 3}), in({4, 5})}, {"[einsum]"},
                         [](const auto& t) { return einsum("ij,jk->ik", t); }));
  v.push_back(both_throw("shape.einsum_bad_equation", {in({2, 3})}, {"[einsum]"},
                         [](const auto& t) { return einsum("ij->k", t); }));
  // dims out of range
  v.push_back(both_throw("dim.sum", {in({2, 3})}, {"[sum]", "2"}, FN(t[0].sum(2))));
  v.push_back(both_throw("dim.sum_neg", {in({2, 3})}, {"[sum]", "-3"}, FN(t[0].sum(-3))));
  v.push_back(both_throw("dim.sum_repeated", {in({2, 3})}, {"[sum]"}, FN(t[0].sum(D{1, -1}))));
  v.push_back(both_throw("dim.amax", {in({2, 3})}, {"[amax]"}, FN(t[0].amax(5))));
  v.push_back(both_throw("dim.argmax", {in({2, 3})}, {"[argmax]"}, FN(t[0].argmax(2))));
  v.push_back(both_throw("dim.max", {in({2, 3})}, {"[max]"}, FN(std::get<0>(t[0].max(2)))));
  v.push_back(both_throw("dim.softmax", {in({2, 3})}, {"[softmax]"}, FN(t[0].softmax(2))));
  v.push_back(both_throw("dim.log_softmax", {in({2, 3})}, {"[log_softmax]"}, FN(t[0].log_softmax(-3))));
  v.push_back(both_throw("dim.cumsum", {in({2, 3})}, {"[cumsum]"}, FN(t[0].cumsum(3))));
  v.push_back(both_throw("dim.sort", {in({2, 3})}, {"[sort]"}, FN(std::get<0>(L::sort(t[0], 2, false)))));
  v.push_back(both_throw("dim.topk", {in({2, 3})}, {"[topk]"}, FN(std::get<0>(t[0].topk(1, 2)))));
  v.push_back(both_throw("dim.transpose", {in({2, 3})}, {"[transpose]"}, FN(t[0].transpose(0, 2))));
  v.push_back(both_throw("dim.permute_repeat", {in({2, 3})}, {"[permute]"}, FN(t[0].permute({1, 1}))));
  v.push_back(both_throw("dim.permute_count", {in({2, 3})}, {"[permute]"}, FN(t[0].permute({0}))));
  v.push_back(both_throw("dim.unsqueeze", {in({2, 3})}, {"[unsqueeze]"}, FN(t[0].unsqueeze(4))));
  v.push_back(both_throw("dim.squeeze", {in({2, 3})}, {"[squeeze]"}, FN(t[0].squeeze(2))));
  v.push_back(both_throw("dim.cat", {in({2, 3}), in({2, 3})}, {"[cat]"}, FN(cat(std::vector{t[0], t[1]}, 2))));
  v.push_back(both_throw("dim.stack", {in({2, 3}), in({2, 3})}, {"[stack]"}, FN(stack(std::vector{t[0], t[1]}, 4))));
  v.push_back(both_throw("dim.flip", {in({2, 3})}, {"[flip]"}, FN(t[0].flip({2}))));
  v.push_back(both_throw("dim.gather", {in({2, 3}), range({2, 3}, 0, 2)}, {"[gather]"}, FN(t[0].gather(2, t[1]))));
  v.push_back(both_throw("dim.index_select", {in({2, 3}), range({2}, 0, 2)}, {"[index_select]"},
                         FN(t[0].index_select(2, t[1]))));
  v.push_back(both_throw("dim.narrow", {in({2, 3})}, {"[narrow]"}, FN(t[0].narrow(2, 0, 1))));
  v.push_back(both_throw("dim.select", {in({2, 3})}, {"[select]"}, FN(t[0].select(2, 0))));
  v.push_back(both_throw("dim.diagonal_same_dims", {in({2, 3})}, {"[diagonal]"}, FN(t[0].diagonal(0, 1, 1))));
  v.push_back(both_throw("dim.flatten_order", {in({2, 3, 4})}, {"[flatten]"}, FN(t[0].flatten(2, 1))));
  v.push_back(both_throw("dim.var", {in({2, 3})}, {"[var]"}, FN(L::var(t[0], std::vector<int64_t>{3}, 1, false))));
  v.push_back(both_throw("dim.norm", {in({2, 3})}, {"[norm]"}, FN(L::norm(t[0], 2, {2}, false))));
  v.push_back(both_throw("dim.logsumexp", {in({2, 3})}, {"[logsumexp]"}, FN(t[0].logsumexp(2))));
  v.push_back(both_throw("dim.unbind", {in({2, 3})}, {"[unbind]"}, FN(t[0].unbind(2))));
  v.push_back(both_throw("dim.chunk_zero", {in({2, 3})}, {"[chunk]"}, FN(t[0].chunk(0))));
  // indices out of bounds
  v.push_back(both_throw("bounds.select", {in({2, 3})}, {"[select]", "5"}, FN(t[0].select(1, 5))));
  v.push_back(both_throw("bounds.select_neg", {in({2, 3})}, {"[select]", "-4"}, FN(t[0].select(1, -4))));
  v.push_back(both_throw("bounds.narrow", {in({2, 3})}, {"[narrow]"}, FN(t[0].narrow(1, 2, 2))));
  v.push_back(both_throw("bounds.index_int", {in({2, 3})}, {"[index]"}, FN(t[0].index({2}))));
  v.push_back(both_throw("bounds.index_tensor", {in({2, 3}), vals({2}, kInt64, {0, 7})}, {"7"},
                         FN(t[0].index({t[1]}))));
  v.push_back(both_throw("bounds.index_tensor_neg", {in({2, 3}), vals({1}, kInt64, {-3})}, {"-3"},
                         FN(t[0].index({t[1]}))));
  v.push_back(both_throw("bounds.index_put", {in({2, 3}), vals({1}, kInt64, {2})}, {"2"}, [](const auto& t) {
    auto x = t[0];  // in place on the input: it must stay unchanged
    x.index_put_({t[1]}, 1.0);
    return x;
  }));
  v.push_back(both_throw("bounds.index_select", {in({2, 3}), vals({2}, kInt64, {0, 3})}, {"[index_select]", "3"},
                         FN(t[0].index_select(1, t[1]))));
  v.push_back(both_throw("bounds.gather", {in({2, 3}), vals({1, 1}, kInt64, {3})}, {"[gather]", "3"},
                         FN(t[0].gather(1, t[1]))));
  v.push_back(both_throw("bounds.scatter", {in({2, 3}), vals({1, 2}, kInt64, {1, 9}), in({1, 2})},
                         {"[scatter]", "9"}, [](const auto& t) {
                           auto x = t[0];
                           x.scatter_(1, t[1], t[2]);
                           return x;
                         }));
  v.push_back(both_throw("bounds.scatter_add", {in({2, 3}), vals({1, 2}, kInt64, {1, -1}), in({1, 2})},
                         {"[scatter_add]", "-1"}, [](const auto& t) {
                           auto x = t[0];
                           x.scatter_add_(1, t[1], t[2]);
                           return x;
                         }));
  v.push_back(both_throw("bounds.index_add", {in({2, 3}), vals({2}, kInt64, {0, 2}), in({2, 3})},
                         {"[index_add"}, [](const auto& t) {
                           auto x = t[0];
                           x.index_add_(0, t[1], t[2]);
                           return x;
                         }));
  v.push_back(both_throw("bounds.topk_k", {in({2, 3})}, {"[topk]"}, FN(std::get<0>(t[0].topk(4)))));
  // dtypes
  v.push_back(both_throw("dtype.bitwise_float", {in({3}), in({3})}, {"[bitwise_and]"}, FN(t[0].bitwise_and(t[1]))));
  v.push_back(both_throw("dtype.bitwise_not_float", {in({3})}, {"[bitwise_not]"}, FN(t[0].bitwise_not())));
  v.push_back(both_throw("dtype.inplace_int_from_float", {in({3}, kInt32), in({3})}, {"[add"}, [](const auto& t) {
    auto x = t[0];  // in place on the input: it must stay unchanged
    x.add_(t[1]);
    return x;
  }));
  v.push_back(both_throw("dtype.gather_float_index", {in({2, 3}), in({2, 3})}, {"[gather]"}, FN(t[0].gather(1, t[1]))));
  v.push_back(both_throw("dtype.index_select_float_index", {in({2, 3}), in({2})}, {"[index_select]"},
                         FN(t[0].index_select(0, t[1]))));
  v.push_back(both_throw("dtype.masked_select_float_mask", {in({2, 3}), in({2, 3})}, {"[masked_select]"},
                         FN(t[0].masked_select(t[1]))));
  v.push_back(both_throw("dtype.mean_int", {in({2, 3}, kInt64)}, {"[mean]"}, FN(t[0].mean())));
  v.push_back(both_throw("dtype.var_int", {in({2, 3}, kInt64)}, {"[var]"}, FN(L::var(t[0], std::nullopt, 1, false))));
  v.push_back(both_throw("dtype.mm_mixed", {in({2, 3}), in({3, 2}, kDouble)}, {"[mm]"}, FN(t[0].mm(t[1]))));
  v.push_back(both_throw("dtype.dot_mixed", {in({3}), in({3}, kInt64)}, {"[dot]"}, FN(t[0].dot(t[1]))));
  v.push_back(both_throw("dtype.lerp_int", {in({3}, kInt64), in({3}, kInt64)}, {"[lerp]"}, FN(t[0].lerp(t[1], 0.5))));
  v.push_back(both_throw("dtype.sub_bool", {in({3}, kBool), in({3}, kBool)}, {"[sub]"}, FN(t[0] - t[1])));
  v.push_back(both_throw("dtype.neg_bool", {in({3}, kBool)}, {"[neg]"}, FN(-t[0])));
  v.push_back(both_throw("dtype.item_multi_element", {in({2})}, {"[item]"}, FN(t[0].item())));
  v.push_back(both_throw("dtype.scatter_src_dtype", {in({2, 3}), vals({1, 1}, kInt64, {0}), in({1, 1}, kDouble)},
                         {"[scatter]"}, FN(t[0].scatter(1, t[1], t[2]))));
  return v;
}

}  // namespace parity
