// Parity cases: the matmul family and einsum, shape ops (cat, stack, flip,
// roll, tril/triu, pad, repeat, tile, ...) and views (values, strides and
// storage offsets).
#pragma once
#include "parity.h"

namespace parity {

inline std::vector<Case> linalg_cases() {
  using namespace brisk;
  std::vector<Case> v;
  const Tol mm_tol = tol(1e-5, 1e-4);  // sums of 5..64 products, summed in different orders
  // matmul shapes: (a, b) in numpy/PyTorch semantics.
  const std::vector<std::tuple<const char*, std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {"dot", {5}, {5}},
      {"mv", {3, 5}, {5}},
      {"vm", {5}, {5, 4}},
      {"mm", {3, 5}, {5, 4}},
      {"bmm_2d", {2, 3, 5}, {5, 4}},
      {"2d_bmm", {3, 5}, {2, 5, 4}},
      {"bcast_4d", {2, 1, 3, 5}, {4, 5, 2}},
      {"vec_batched", {5}, {2, 5, 4}},
      {"batched_vec", {2, 3, 5}, {5}},
      {"zero_rows", {0, 5}, {5, 4}},
      {"zero_inner", {3, 0}, {0, 4}},
      {"zero_batch", {0, 3, 5}, {5, 4}},
      {"k1", {3, 1}, {1, 4}},
      {"wide", {7, 64}, {64, 33}},
  };
  for (auto dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64, kInt32}) {
    const Tol tl = dt == kBFloat16 ? tol(2e-2, 2e-2) : dt == kHalf ? tol(2e-3, 1e-3) : mm_tol;
    for (auto& [name, a, b] : shapes)
      v.push_back(same(std::string("matmul.") + name + "_" + short_name(dt), {in(a, dt), in(b, dt)},
                       FN(t[0].matmul(t[1])), tl));
  }
  v.push_back(same("matmul.a_transposed", {in({5, 3}).T(), in({5, 4})}, FN(t[0].matmul(t[1])), mm_tol));
  v.push_back(same("matmul.b_transposed", {in({3, 5}), in({4, 5}).T()}, FN(t[0].matmul(t[1])), mm_tol));
  v.push_back(same("matmul.both_strided", {in({3, 5}).S(), in({5, 4}).S()}, FN(t[0].matmul(t[1])), mm_tol));
  v.push_back(same("matmul.batch_expanded", {in({3, 3, 5}).X(), in({3, 5, 4}).O()}, FN(t[0].matmul(t[1])), mm_tol));
  v.push_back(same("matmul.batch_transposed", {in({2, 5, 3}).T(), in({2, 4, 5}).T()}, FN(t[0].matmul(t[1])), mm_tol));
  v.push_back(same("matmul.mixed_dtypes_throws", {in({3, 5}), in({5, 4}, kDouble)}, FN(t[0].matmul(t[1]))));
  v.push_back(same("matmul.0dim_throws", {in({}), in({5})}, FN(t[0].matmul(t[1]))));
  v.push_back(same("matmul.large", {in({65, 130}), in({130, 67})}, FN(t[0].matmul(t[1])), tol(1e-4, 1e-4)));
  v.push_back(same("matmul.special", {in({2, 11}, kFloat, Gen::Special), in({11, 2})}, FN(t[0].matmul(t[1]))));
  v.push_back(same("matmul.out", {in({2, 3, 5}), in({5, 4})}, [](const auto& t) {
    using L = LibOf<decltype(t)>;
    auto o = L::empty({0}, kFloat);
    matmul_out(o, t[0], t[1]);
    return o;
  }, mm_tol));
  for (auto dt : {kFloat, kDouble, kHalf, kBFloat16, kInt64}) {
    const std::string s = short_name(dt);
    const Tol tl = dt == kBFloat16 ? tol(2e-2, 2e-2) : dt == kHalf ? tol(2e-3, 1e-3) : mm_tol;
    v.push_back(same("mm." + s, {in({4, 6}, dt), in({6, 3}, dt)}, FN(t[0].mm(t[1])), tl));
    v.push_back(same("bmm." + s, {in({2, 4, 6}, dt), in({2, 6, 3}, dt)}, FN(t[0].bmm(t[1])), tl));
    v.push_back(same("addmm." + s, {in({4, 3}, dt), in({4, 6}, dt), in({6, 3}, dt)}, FN(t[0].addmm(t[1], t[2])), tl));
    v.push_back(same("mv." + s, {in({4, 6}, dt), in({6}, dt)}, FN(t[0].mv(t[1])), tl));
    v.push_back(same("dot." + s, {in({7}, dt), in({7}, dt)}, FN(t[0].dot(t[1])), tl));
    v.push_back(same("outer." + s, {in({4}, dt), in({3}, dt)}, FN(t[0].outer(t[1])), tl));
  }
  v.push_back(same("mm.transposed_operands", {in({6, 4}).T(), in({3, 6}).T()}, FN(t[0].mm(t[1])), mm_tol));
  v.push_back(same("mm.zero_inner", {in({4, 0}), in({0, 3})}, FN(t[0].mm(t[1]))));
  v.push_back(same("mm.out", {in({4, 6}), in({6, 3})}, [](const auto& t) {
    using L = LibOf<decltype(t)>;
    auto o = L::empty({4, 3}, kFloat);
    mm_out(o, t[0], t[1]);
    return o;
  }, mm_tol));
  v.push_back(same("bmm.strided_batch", {in({3, 4, 6}).S(), in({3, 6, 3}).T()}, FN(t[0].bmm(t[1])), mm_tol));
  v.push_back(same("bmm.zero_batch", {in({0, 4, 6}), in({0, 6, 3})}, FN(t[0].bmm(t[1]))));
  v.push_back(same("addmm.beta_alpha", {in({4, 3}), in({4, 6}), in({6, 3})}, FN(t[0].addmm(t[1], t[2], 0.5, -2.0)),
                   mm_tol));
  v.push_back(same("addmm.bias_row_bcast", {in({3}), in({4, 6}), in({6, 3})}, FN(addmm(t[0], t[1], t[2])), mm_tol));
  v.push_back(same("addmm.bias_col_bcast", {in({4, 1}), in({4, 6}), in({6, 3})}, FN(addmm(t[0], t[1], t[2], 2, 1)),
                   mm_tol));
  // beta = 0: self is ignored, so nan/inf in it do not propagate.
  v.push_back(same("addmm.beta0_ignores_nan", {vals({2, 2}, kFloat, {NAN, INFINITY, 1, 2}), in({2, 3}), in({3, 2})},
                   FN(addmm(t[0], t[1], t[2], 0, 1)), mm_tol));
  v.push_back(same("addmm.int_beta_alpha", {in({4, 3}, kInt64), in({4, 6}, kInt64), in({6, 3}, kInt64)},
                   FN(addmm(t[0], t[1], t[2], int64_t(2), int64_t(3)))));
  v.push_back(same("mv.transposed", {in({6, 4}).T(), in({6}).S()}, FN(t[0].mv(t[1])), mm_tol));
  v.push_back(same("dot.strided", {in({7}).S(), in({7}).O()}, FN(t[0].dot(t[1])), mm_tol));
  v.push_back(same("dot.mixed_dtypes_throws", {in({7}), in({7}, kDouble)}, FN(t[0].dot(t[1]))));
  v.push_back(same("dot.empty", {in({0}), in({0})}, FN(t[0].dot(t[1]))));
  v.push_back(same("outer.promote_i64_f32", {in({4}, kInt64), in({3})}, FN(outer(t[0], t[1]))));
  v.push_back(same("outer.bool", {in({4}, kBool), in({3}, kBool)}, FN(outer(t[0], t[1]))));

  // einsum: equations through brisk's permute/reshape/bmm lowering.
  const std::vector<std::tuple<const char*, const char*, std::vector<std::vector<int64_t>>>> eqs = {
      {"mm", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bmm", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"dot", "i,i->", {{6}, {6}}},
      {"transpose", "ij->ji", {{3, 4}}},
      {"diag", "ii->i", {{4, 4}}},
      {"trace", "ii->", {{4, 4}}},
      {"sum_all", "ij->", {{3, 4}}},
      {"sum_dim", "ij->j", {{3, 4}}},
      {"hadamard", "ij,ij->ij", {{3, 4}, {3, 4}}},
      {"outer", "i,j->ij", {{3}, {4}}},
      {"attention", "bhqd,bhkd->bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}},
      {"ellipsis_mm", "...ij,...jk->...ik", {{2, 3, 4}, {2, 4, 5}}},
      {"implicit_mm", "ij,jk", {{3, 4}, {4, 5}}},
      {"implicit_sorted", "ba", {{3, 4}}},
      {"mm_transposed", "ij,kj->ik", {{3, 4}, {5, 4}}},
      {"permute3", "ijk->kji", {{2, 3, 4}}},
      {"three_operands", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 5}}},
      {"bilinear", "bn,anm,bm->ba", {{2, 3}, {4, 3, 5}, {2, 5}}},
      {"batch_diag", "bii->bi", {{2, 3, 3}}},
      {"repeated_in_two", "ij,ij->", {{3, 4}, {3, 4}}},
      {"broadcast_ellipsis", "...i,i->...", {{2, 3, 4}, {4}}},
      {"spaces", " ij , jk -> ik ", {{3, 4}, {4, 5}}},
  };
  for (auto& [name, eq, ins] : eqs) {
    std::vector<In> inputs;
    for (auto& s : ins) inputs.push_back(in(s));
    const std::string e = eq;
    v.push_back(same(std::string("einsum.") + name, inputs, [e](const auto& t) { return einsum(e, t); }, mm_tol));
  }
  v.push_back(same("einsum.f64_noncontig", {in({4, 3}, kDouble).T(), in({4, 5}, kDouble).S()},
                   [](const auto& t) { return einsum("ij,jk->ik", t); }));
  v.push_back(same("einsum.int64", {in({3, 4}, kInt64), in({4, 2}, kInt64)},
                   [](const auto& t) { return einsum("ij,jk->ik", t); }));
  v.push_back(same("einsum.mixed_dtypes", {in({3, 4}), in({4, 2}, kDouble)},
                   [](const auto& t) { return einsum("ij,jk->ik", t); }));
  return v;
}

inline std::vector<Case> shape_cases() {
  using namespace brisk;
  std::vector<Case> v;
  // cat / stack
  v.push_back(same("cat.dim0", {in({2, 3}), in({4, 3})}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(same("cat.dim1_three", {in({2, 3}), in({2, 1}), in({2, 4})}, FN(cat(std::vector{t[0], t[1], t[2]}, 1))));
  v.push_back(same("cat.neg_dim", {in({2, 3, 4}), in({2, 3, 2})}, FN(cat(std::vector{t[0], t[1]}, -1))));
  v.push_back(same("cat.noncontig", {in({3, 2}).T(), in({2, 5}).S(), in({2, 3}).X()},
                   FN(cat(std::vector{t[0], t[1], t[2]}, 1))));
  v.push_back(same("cat.promote_i32_f32", {in({2, 3}, kInt32), in({1, 3})}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(same("cat.promote_bool_u8", {in({2}, kBool), in({3}, kUInt8)}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(same("cat.promote_f16_bf16", {in({2}, kHalf), in({3}, kBFloat16)}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(same("cat.zero_size_part", {in({0, 3}), in({2, 3})}, FN(cat(std::vector{t[0], t[1]}, 0))));
  // Legacy rule kept by PyTorch: 1-D empty tensors are skipped whatever the other shapes.
  v.push_back(same("cat.legacy_empty_1d_skipped", {in({2, 3}), in({0})}, FN(cat(std::vector{t[0], t[1]}, 1))));
  v.push_back(same("cat.single", {in({2, 3}, kInt64)}, FN(cat(std::vector{t[0]}, 1))));
  v.push_back(same("cat.all_dtypes_i64", {in({2}, kInt64), in({2}, kInt64)}, FN(cat(std::vector{t[0], t[1]}))));
  v.push_back(same("cat.shape_mismatch_throws", {in({2, 3}), in({2, 4})}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(same("cat.rank_mismatch_throws", {in({2, 3}), in({3})}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(same("cat.0dim_throws", {in({}), in({})}, FN(cat(std::vector{t[0], t[1]}, 0))));
  v.push_back(same("cat.out", {in({2, 3}), in({1, 3})}, [](const auto& t) {
    using L = LibOf<decltype(t)>;
    auto o = L::empty({0}, kFloat);
    cat_out(o, std::vector{t[0], t[1]}, 0);
    return o;
  }));
  v.push_back(same("stack.dim0", {in({2, 3}), in({2, 3}), in({2, 3})}, FN(stack(std::vector{t[0], t[1], t[2]}, 0))));
  v.push_back(same("stack.dim_last", {in({2, 3}), in({2, 3})}, FN(stack(std::vector{t[0], t[1]}, 2))));
  v.push_back(same("stack.neg_dim", {in({2, 3}, kInt32), in({2, 3}, kInt32)}, FN(stack(std::vector{t[0], t[1]}, -2))));
  v.push_back(same("stack.0dim", {in({}), in({})}, FN(stack(std::vector{t[0], t[1]}))));
  v.push_back(same("stack.noncontig", {in({3, 2}).T(), in({2, 3}).S()}, FN(stack(std::vector{t[0], t[1]}, 1))));
  v.push_back(same("stack.promote", {in({2}, kInt64), in({2}, kDouble)}, FN(stack(std::vector{t[0], t[1]}))));
  v.push_back(same("stack.shape_mismatch_throws", {in({2, 3}), in({3, 2})}, FN(stack(std::vector{t[0], t[1]}))));
  v.push_back(same("hstack.1d", {in({2}), in({3})}, FN(hstack(std::vector{t[0], t[1]}))));
  v.push_back(same("hstack.2d", {in({2, 2}), in({2, 3})}, FN(hstack(std::vector{t[0], t[1]}))));
  v.push_back(same("vstack.1d", {in({3}), in({3})}, FN(vstack(std::vector{t[0], t[1]}))));
  v.push_back(same("vstack.2d", {in({2, 3}), in({1, 3})}, FN(vstack(std::vector{t[0], t[1]}))));
  v.push_back(same("dstack.1d", {in({3}), in({3})}, FN(dstack(std::vector{t[0], t[1]}))));
  v.push_back(same("dstack.2d", {in({2, 3}), in({2, 3})}, FN(dstack(std::vector{t[0], t[1]}))));
  // flip, roll
  for (auto dt : kAllDtypes) {
    const std::string s = short_name(dt);
    v.push_back(same("flip.dim0_" + s, {in({3, 4}, dt)}, FN(t[0].flip({0}))));
    v.push_back(same("roll.dims_" + s, {in({3, 4}, dt)}, FN(t[0].roll({1, -2}, {0, 1}))));
    v.push_back(same("tril.k0_" + s, {in({4, 4}, dt)}, FN(t[0].tril())));
    v.push_back(same("triu.k0_" + s, {in({4, 4}, dt)}, FN(t[0].triu())));
  }
  v.push_back(same("flip.all_dims", {in({2, 3, 4})}, FN(t[0].flip({0, 1, 2}))));
  v.push_back(same("flip.neg_dims", {in({2, 3, 4})}, FN(t[0].flip({-1, -3}))));
  v.push_back(same("flip.noncontig", {in({4, 3}).T()}, FN(t[0].flip({1}))));
  v.push_back(same("flip.0dim", {in({})}, FN(t[0].flip(std::vector<int64_t>{}))));
  v.push_back(same("flip.empty_dims", {in({2, 3})}, FN(t[0].flip(std::vector<int64_t>{}))));
  v.push_back(same("flip.zero_size", {in({0, 3})}, FN(t[0].flip({0}))));
  v.push_back(same("flip.repeated_dim_throws", {in({2, 3})}, FN(t[0].flip({0, 0}))));
  v.push_back(same("roll.flat", {in({3, 4})}, FN(t[0].roll({5}))));
  v.push_back(same("roll.flat_negative", {in({3, 4}, kInt64)}, FN(t[0].roll({-14}))));
  v.push_back(same("roll.shift_larger_than_size", {in({3, 4})}, FN(t[0].roll({7}, {1}))));
  v.push_back(same("roll.same_dim_twice", {in({3, 4})}, FN(t[0].roll({1, 2}, {1, 1}))));
  v.push_back(same("roll.noncontig", {in({4, 3}).T()}, FN(t[0].roll({1}, {0}))));
  v.push_back(same("roll.zero_size", {in({0, 3})}, FN(t[0].roll({1}, {0}))));
  v.push_back(same("roll.mismatch_throws", {in({3, 4})}, FN(t[0].roll({1, 2}, {0}))));
  // tril / triu
  for (int64_t k : {-5, -1, 1, 2, 5}) {
    const std::string s = k < 0 ? "m" + std::to_string(-k) : std::to_string(k);
    v.push_back(same("tril.k" + s, {in({4, 6})}, [k](const auto& t) { return t[0].tril(k); }));
    v.push_back(same("triu.k" + s, {in({6, 4})}, [k](const auto& t) { return t[0].triu(k); }));
  }
  v.push_back(same("tril.batched", {in({2, 3, 4})}, FN(t[0].tril(1))));
  v.push_back(same("triu.batched_noncontig", {in({2, 4, 3}).T()}, FN(t[0].triu(-1))));
  v.push_back(same("tril.zero_size", {in({0, 3})}, FN(t[0].tril())));
  v.push_back(same("tril.1d_throws", {in({3})}, FN(t[0].tril())));
  v.push_back(same("tril.inplace", {in({4, 4})}, [](const auto& t) {
    auto x = t[0].clone();
    x.tril_(-1);
    return x;
  }));
  v.push_back(same("triu.inplace_transposed", {in({4, 5}).T()}, [](const auto& t) {
    auto x = t[0].clone();
    x.triu_(1);
    return x;
  }));
  // pad (constant)
  v.push_back(same("pad.last_dim", {in({2, 3})}, FN(L::pad(t[0], {1, 2}, 0))));
  v.push_back(same("pad.two_dims_value", {in({2, 3})}, FN(L::pad(t[0], {1, 1, 2, 0}, 1.5))));
  v.push_back(same("pad.three_dims", {in({2, 3, 4}, kInt64)}, FN(L::pad(t[0], {0, 1, 1, 0, 2, 2}, 7))));
  v.push_back(same("pad.negative_crops", {in({3, 5})}, FN(L::pad(t[0], {-1, 2, 0, -2}, 0))));
  v.push_back(same("pad.noncontig", {in({4, 3}).T()}, FN(L::pad(t[0], {2, 0}, -1))));
  v.push_back(same("pad.zero_size", {in({0, 3})}, FN(L::pad(t[0], {1, 1, 1, 1}, 0))));
  v.push_back(same("pad.bool", {in({2, 2}, kBool)}, FN(L::pad(t[0], {1, 1}, 1))));
  v.push_back(same("pad.odd_length_throws", {in({2, 3})}, FN(L::pad(t[0], {1, 2, 3}, 0))));
  v.push_back(same("pad.too_long_throws", {in({3})}, FN(L::pad(t[0], {1, 1, 1, 1}, 0))));
  // repeat, tile
  v.push_back(same("repeat.same_rank", {in({2, 3})}, FN(t[0].repeat({2, 3}))));
  v.push_back(same("repeat.more_dims", {in({2, 3}, kInt32)}, FN(t[0].repeat({2, 1, 3}))));
  v.push_back(same("repeat.zero", {in({2, 3})}, FN(t[0].repeat({0, 2}))));
  v.push_back(same("repeat.noncontig", {in({3, 2}).T()}, FN(t[0].repeat({1, 2}))));
  v.push_back(same("repeat.0dim", {in({})}, FN(t[0].repeat({3}))));
  v.push_back(same("repeat.fewer_dims_throws", {in({2, 3})}, FN(t[0].repeat({2}))));
  v.push_back(same("tile.fewer_reps", {in({2, 3})}, FN(t[0].tile({2}))));
  v.push_back(same("tile.more_reps", {in({2, 3}, kBool)}, FN(t[0].tile({2, 1, 2}))));
  v.push_back(same("tile.same_rank", {in({2, 3})}, FN(t[0].tile({3, 2}))));
  // meshgrid, broadcast_to, broadcast_tensors
  v.push_back(same("meshgrid.ij", {in({3}), in({4}, kInt64)}, FN(meshgrid(std::vector{t[0], t[1]}, "ij"))));
  v.push_back(same("meshgrid.xy", {in({3}), in({4})}, FN(meshgrid(std::vector{t[0], t[1]}, "xy"))));
  v.push_back(same("meshgrid.three", {in({2}), in({3}), in({4})}, FN(meshgrid(std::vector{t[0], t[1], t[2]}, "ij"))));
  v.push_back(view_case("broadcast_to.basic", {in({3, 1})}, FN(broadcast_to(t[0], {2, 3, 4}))));
  v.push_back(view_case("broadcast_to.minus_one", {in({3, 1})}, FN(broadcast_to(t[0], {-1, 5}))));
  v.push_back(same("broadcast_to.bad_throws", {in({3, 2})}, FN(broadcast_to(t[0], {3, 4}))));
  v.push_back(view_case("broadcast_tensors.three", {in({3, 1}), in({4}), in({2, 1, 1})},
                        FN(broadcast_tensors(std::vector{t[0], t[1], t[2]}))));
  return v;
}

/// Views: values, and strides and storage offsets equal to libtorch's.
inline std::vector<Case> view_cases() {
  using namespace brisk;
  std::vector<Case> v;
  v.push_back(view_case("view.flat", {in({2, 3, 4})}, FN(t[0].view({-1}))));
  v.push_back(view_case("view.split_dim", {in({2, 12})}, FN(t[0].view({2, 3, -1}))));
  v.push_back(view_case("view.merge_of_noncontig_compatible", {in({4, 6}).S()}, FN(t[0].view({2, 2, 6}))));
  v.push_back(same("view.incompatible_strides_throws", {in({4, 3}).T()}, FN(t[0].view({-1}))));
  v.push_back(view_case("view.0dim_to_1", {in({})}, FN(t[0].view({1, 1}))));
  v.push_back(view_case("view.zero_size", {in({0, 3})}, FN(t[0].view({3, 0, -1}))));
  v.push_back(view_case("view_as", {in({2, 6}), in({3, 4})}, FN(t[0].view_as(t[1]))));
  v.push_back(view_case("reshape.contig_is_view", {in({2, 3, 4})}, FN(t[0].reshape({6, 4}))));
  v.push_back(view_case("reshape.noncontig_copies", {in({4, 3}).T()}, FN(t[0].reshape({12}))));
  v.push_back(view_case("reshape.offset_view", {in({3, 4}).O()}, FN(t[0].reshape({2, 6}))));
  v.push_back(same("reshape.bad_numel_throws", {in({3, 4})}, FN(t[0].reshape({5, -1}))));
  v.push_back(same("reshape.two_minus_one_throws", {in({3, 4})}, FN(t[0].reshape({-1, -1}))));
  v.push_back(view_case("flatten.all", {in({2, 3, 4})}, FN(t[0].flatten())));
  v.push_back(view_case("flatten.middle", {in({2, 3, 4, 5})}, FN(t[0].flatten(1, 2))));
  v.push_back(view_case("flatten.0dim", {in({})}, FN(t[0].flatten())));
  v.push_back(view_case("flatten.noncontig_copies", {in({4, 3}).T()}, FN(t[0].flatten())));
  v.push_back(view_case("unflatten.basic", {in({2, 12})}, FN(t[0].unflatten(1, {3, 4}))));
  v.push_back(view_case("unflatten.minus_one", {in({2, 12})}, FN(t[0].unflatten(-1, {2, -1}))));
  v.push_back(view_case("squeeze.all", {in({1, 3, 1, 4})}, FN(t[0].squeeze())));
  v.push_back(view_case("squeeze.dim", {in({1, 3, 1, 4})}, FN(t[0].squeeze(2))));
  v.push_back(view_case("squeeze.non_one_is_noop", {in({2, 3})}, FN(t[0].squeeze(1))));
  v.push_back(view_case("unsqueeze.front", {in({2, 3})}, FN(t[0].unsqueeze(0))));
  v.push_back(view_case("unsqueeze.back_neg", {in({2, 3}).T()}, FN(t[0].unsqueeze(-1))));
  v.push_back(view_case("unsqueeze.middle_strided", {in({2, 3}).S()}, FN(t[0].unsqueeze(1))));
  v.push_back(view_case("transpose.basic", {in({2, 3, 4})}, FN(t[0].transpose(0, 2))));
  v.push_back(view_case("transpose.neg", {in({2, 3, 4})}, FN(t[0].transpose(-1, -2))));
  v.push_back(view_case("transpose.0dim", {in({})}, FN(t[0].transpose(0, -1))));
  v.push_back(view_case("t.2d", {in({2, 3})}, FN(t[0].t())));
  v.push_back(view_case("t.1d", {in({3})}, FN(t[0].t())));
  v.push_back(view_case("mT.batched", {in({2, 3, 4})}, FN(t[0].mT())));
  v.push_back(view_case("permute.basic", {in({2, 3, 4})}, FN(t[0].permute({2, 0, 1}))));
  v.push_back(view_case("permute.neg", {in({2, 3, 4}).T()}, FN(t[0].permute({-1, 0, -2}))));
  v.push_back(same("permute.repeated_throws", {in({2, 3})}, FN(t[0].permute({0, 0}))));
  v.push_back(view_case("movedim.basic", {in({2, 3, 4})}, FN(t[0].movedim(0, -1))));
  v.push_back(view_case("expand.basic", {in({3, 1})}, FN(t[0].expand({2, 3, 4}))));
  v.push_back(view_case("expand.minus_one", {in({3, 1})}, FN(t[0].expand({-1, 5}))));
  v.push_back(view_case("expand_as", {in({1, 4}), in({3, 4})}, FN(t[0].expand_as(t[1]))));
  v.push_back(same("expand.bad_throws", {in({3, 2})}, FN(t[0].expand({3, 4}))));
  v.push_back(view_case("as_strided.window", {in({4, 5})}, FN(t[0].as_strided({3, 3}, {5, 1}))));
  v.push_back(view_case("as_strided.offset", {in({4, 5})}, FN(t[0].as_strided({2, 2}, {1, 5}, 3))));
  v.push_back(view_case("narrow.basic", {in({4, 5})}, FN(t[0].narrow(1, 1, 3))));
  v.push_back(view_case("narrow.neg_start", {in({4, 5})}, FN(t[0].narrow(0, -2, 2))));
  v.push_back(view_case("select.basic", {in({4, 5})}, FN(t[0].select(1, 2))));
  v.push_back(view_case("select.neg_index", {in({4, 5}).T()}, FN(t[0].select(0, -1))));
  v.push_back(view_case("select.operator_brackets", {in({4, 5})}, FN(t[0][2])));
  v.push_back(view_case("slice.step", {in({10, 3})}, FN(t[0].slice(0, 1, 8, 3))));
  v.push_back(view_case("slice.neg_bounds", {in({10, 3})}, FN(t[0].slice(0, -4, -1))));
  v.push_back(view_case("slice.clamped_bounds", {in({10, 3})}, FN(t[0].slice(0, -100, 100))));
  v.push_back(view_case("slice.empty_range", {in({10, 3})}, FN(t[0].slice(0, 7, 3))));
  v.push_back(view_case("slice.defaults", {in({10, 3})}, FN(t[0].slice(1, L::nullopt, L::nullopt, 2))));
  v.push_back(view_case("split.size", {in({7, 3})}, FN(t[0].split(3))));
  v.push_back(view_case("split.sizes", {in({7, 3})}, FN(t[0].split({2, 5}, 0))));
  v.push_back(view_case("split.dim1", {in({3, 7})}, FN(t[0].split(2, 1))));
  v.push_back(same("split.sizes_mismatch_throws", {in({7, 3})}, FN(t[0].split({2, 4}, 0))));
  v.push_back(view_case("chunk.even", {in({6, 3})}, FN(t[0].chunk(3))));
  v.push_back(view_case("chunk.uneven", {in({7, 3})}, FN(t[0].chunk(3))));
  v.push_back(view_case("chunk.more_than_size", {in({2, 3})}, FN(t[0].chunk(5, 1))));
  v.push_back(view_case("unbind.dim1", {in({2, 3})}, FN(t[0].unbind(1))));
  v.push_back(view_case("diagonal.main", {in({4, 5})}, FN(t[0].diagonal())));
  v.push_back(view_case("diagonal.offset_pos", {in({4, 5})}, FN(t[0].diagonal(2))));
  v.push_back(view_case("diagonal.offset_neg", {in({4, 5})}, FN(t[0].diagonal(-1))));
  v.push_back(view_case("diagonal.offset_past_end", {in({4, 5})}, FN(t[0].diagonal(7))));
  v.push_back(view_case("diagonal.dims", {in({2, 3, 4})}, FN(t[0].diagonal(0, 2, 0))));
  v.push_back(view_case("unfold.basic", {in({2, 7})}, FN(t[0].unfold(1, 3, 2))));
  v.push_back(view_case("unfold.dim0", {in({8})}, FN(t[0].unfold(0, 4, 4))));
  v.push_back(view_case("chain.permute_slice_select", {in({3, 4, 5})},
                        FN(t[0].permute({2, 0, 1}).slice(0, 1, 5, 2).select(2, 1))));
  // Values after contiguous() / clone(): copies of views.
  v.push_back(same("contiguous.of_permute", {in({2, 3, 4}, kHalf)}, FN(t[0].permute({2, 0, 1}).contiguous())));
  v.push_back(same("contiguous.of_expand", {in({3, 1}, kInt32)}, FN(t[0].expand({2, 3, 4}).contiguous())));
  v.push_back(same("contiguous.of_diagonal", {in({4, 4}, kBool)}, FN(t[0].diagonal().contiguous())));
  v.push_back(view_case("clone.preserves_strides", {in({4, 3}).T()}, FN(t[0].clone())));
  v.push_back(view_case("clone.of_slice_is_dense", {in({4, 6}).S()}, FN(t[0].clone())));
  return v;
}

}  // namespace parity
