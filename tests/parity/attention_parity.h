// scaled_dot_product_attention and MultiheadAttention against libtorch 1.13.
//
// - Values: at::_scaled_dot_product_attention, the op behind PyTorch 2's
//   F.scaled_dot_product_attention (1.13 has no `scale` argument: a custom
//   scale is folded into the query on the torch side).
// - Gradients: at::_scaled_dot_product_attention_math, the differentiable
//   composite (1.13 has no derivative for the fused op).
// - MultiheadAttention: at::_native_multi_head_attention for values (it
//   takes batch-first query, key and value of one shape), and PyTorch's
//   multi_head_attention_forward written with at:: ops for values and the
//   gradient of every parameter.
// Masks keep at least one key per query: where every key is masked 1.13
// gives NaN and brisk zeros (as PyTorch >= 2.5; see docs/design/attention.md).
#pragma once
#include <brisk/nn.h>

#include <cmath>

#include "parity.h"

namespace parity {
namespace {

namespace BF = brisk::nn::functional;

/// A bool mask that keeps key 0 in every row (last dim = keys).
BT keep_first_key(const BT& m) { return m.logical_or(brisk::arange(m.size(-1)).eq(0)); }
TT keep_first_key(const TT& m) { return m.logical_or(at::arange(m.size(-1)).eq(0)); }

TT torch_sdpa(const TT& q, const TT& k, const TT& v, const c10::optional<TT>& mask = {}, bool causal = false) {
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v, mask, 0.0, false, causal));
}
TT torch_sdpa_math(const TT& q, const TT& k, const TT& v, const c10::optional<TT>& mask = {}, bool causal = false) {
  return std::get<0>(at::_scaled_dot_product_attention_math(q, k, v, mask, 0.0, false, causal));
}

std::vector<Case> sdpa_cases() {
  using brisk::kDouble;
  std::vector<Case> c;
  const Tol t32 = tol(1e-5, 1e-6), t64 = tol(1e-12, 1e-13);
  for (auto dt : {brisk::kFloat, kDouble}) {
    const std::string s = short_name(dt);
    const Tol t = dt == kDouble ? t64 : t32;
    auto plain = [](const BList& x) { return BF::scaled_dot_product_attention(x[0], x[1], x[2]); };
    auto tplain = [](const TList& x) { return torch_sdpa(x[0], x[1], x[2]); };
    c.push_back(pair("sdpa.plain_" + s, {in({2, 3, 4, 8}, dt), in({2, 3, 6, 8}, dt), in({2, 3, 6, 5}, dt)}, plain, tplain, t));
    c.push_back(pair("sdpa.3d_" + s, {in({3, 7, 4}, dt), in({3, 2, 4}, dt), in({3, 2, 6}, dt)}, plain, tplain, t));
    c.push_back(pair("sdpa.long_rows_" + s, {in({1, 2, 5, 16}, dt), in({1, 2, 300, 16}, dt), in({1, 2, 300, 3}, dt)},
                     plain, tplain, t));
    c.push_back(pair("sdpa.broadcast_" + s, {in({2, 3, 4, 8}, dt), in({1, 3, 6, 8}, dt), in({2, 1, 6, 5}, dt)}, plain,
                     tplain, t));
    c.push_back(pair("sdpa.noncontig_" + s, {in({2, 3, 4, 8}, dt).T(), in({2, 3, 6, 8}, dt).S(), in({2, 3, 6, 5}, dt).O()},
                     plain, tplain, t));
    for (std::vector<int64_t> ms : {std::vector<int64_t>{4, 6}, {2, 1, 4, 6}, {2, 3, 4, 6}}) {
      std::string shape = shape_str(ms);
      c.push_back(pair(
          "sdpa.bool_mask_" + s + shape, {in({2, 3, 4, 8}, dt), in({2, 3, 6, 8}, dt), in({2, 3, 6, 5}, dt), mask(ms)},
          [](const BList& x) { return BF::scaled_dot_product_attention(x[0], x[1], x[2], keep_first_key(x[3])); },
          [](const TList& x) { return torch_sdpa(x[0], x[1], x[2], keep_first_key(x[3])); }, t));
      c.push_back(pair(
          "sdpa.float_mask_" + s + shape, {in({2, 3, 4, 8}, dt), in({2, 3, 6, 8}, dt), in({2, 3, 6, 5}, dt), in(ms, dt)},
          [](const BList& x) { return BF::scaled_dot_product_attention(x[0], x[1], x[2], x[3]); },
          [](const TList& x) { return torch_sdpa(x[0], x[1], x[2], x[3]); }, t));
    }
    for (auto [L, S] : {std::pair<int64_t, int64_t>{5, 5}, {3, 7}, {7, 3}}) {
      c.push_back(pair(
          "sdpa.causal_" + s + "_L" + std::to_string(L) + "_S" + std::to_string(S),
          {in({2, 2, L, 4}, dt), in({2, 2, S, 4}, dt), in({2, 2, S, 3}, dt)},
          [](const BList& x) { return BF::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, true); },
          [](const TList& x) { return torch_sdpa(x[0], x[1], x[2], {}, true); }, t));
    }
    // scale: 1.13 always uses 1/sqrt(E); scaling q by scale * sqrt(E) is the same thing
    c.push_back(pair(
        "sdpa.scale_" + s, {in({2, 4, 8}, dt), in({2, 6, 8}, dt), in({2, 6, 5}, dt)},
        [](const BList& x) { return BF::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, false, 0.3); },
        [](const TList& x) { return torch_sdpa(x[0] * (0.3 * std::sqrt(8.0)), x[1], x[2]); }, t));
    // the composite version too
    c.push_back(pair(
        "sdpa.math_" + s, {in({2, 3, 4, 8}, dt), in({3, 6, 8}, dt), in({2, 3, 6, 5}, dt), mask({4, 6})},
        [](const BList& x) { return BF::scaled_dot_product_attention_math(x[0], x[1], x[2], keep_first_key(x[3])); },
        [](const TList& x) { return torch_sdpa(x[0], x[1], x[2], keep_first_key(x[3])); }, t));
  }
  return c;
}

TEST(ParityAttention, SdpaValues) {
  for (const Case& c : sdpa_cases()) {
    if (!selected(c.name)) continue;
    SCOPED_TRACE("case " + c.name);
    run_case(c);
  }
}

TEST(ParityAttention, SdpaGradients) {
  using brisk::kDouble;
  using brisk::kFloat;
  // A weighted sum of the output, so that every element's gradient differs.
  const Tol t64 = tol(1e-10, 1e-12), t32 = tol(1e-4, 1e-5);
  for (auto dt : {kFloat, kDouble}) {
    const std::string s = short_name(dt);
    const Tol t = dt == kDouble ? t64 : t32;
    check_gradients(
        "sdpa_grad.plain_" + s, {in({2, 3, 4, 8}, dt), in({2, 3, 6, 8}, dt), in({2, 3, 6, 5}, dt)}, {in({2, 3, 4, 5}, dt)},
        3, [](auto& p, auto& d) { return (BF::scaled_dot_product_attention(p[0], p[1], p[2]) * d[0]).sum(); },
        [](auto& p, auto& d) { return (torch_sdpa_math(p[0], p[1], p[2]) * d[0]).sum(); }, t, "value");
    check_gradients(
        "sdpa_grad.bool_mask_" + s, {in({2, 4, 8}, dt), in({2, 6, 8}, dt), in({2, 6, 5}, dt)},
        {in({2, 4, 5}, dt), mask({2, 4, 6})}, 3,
        [](auto& p, auto& d) {
          return (BF::scaled_dot_product_attention(p[0], p[1], p[2], keep_first_key(d[1])) * d[0]).sum();
        },
        [](auto& p, auto& d) { return (torch_sdpa_math(p[0], p[1], p[2], keep_first_key(d[1])) * d[0]).sum(); }, t,
        "value");
    // a float mask that requires grad (broadcast over the batch)
    check_gradients(
        "sdpa_grad.float_mask_" + s, {in({2, 4, 8}, dt), in({2, 6, 8}, dt), in({2, 6, 5}, dt), in({4, 6}, dt)},
        {in({2, 4, 5}, dt)}, 3,
        [](auto& p, auto& d) { return (BF::scaled_dot_product_attention(p[0], p[1], p[2], p[3]) * d[0]).sum(); },
        [](auto& p, auto& d) { return (torch_sdpa_math(p[0], p[1], p[2], p[3]) * d[0]).sum(); }, t, "value");
    check_gradients(
        "sdpa_grad.causal_" + s, {in({2, 7, 4}, dt), in({2, 5, 4}, dt), in({2, 5, 3}, dt)}, {in({2, 7, 3}, dt)}, 3,
        [](auto& p, auto& d) {
          return (BF::scaled_dot_product_attention(p[0], p[1], p[2], {}, 0.0, true) * d[0]).sum();
        },
        [](auto& p, auto& d) { return (torch_sdpa_math(p[0], p[1], p[2], {}, true) * d[0]).sum(); }, t, "value");
    // key and value shared over the heads: their gradients sum over them
    check_gradients(
        "sdpa_grad.broadcast_" + s, {in({2, 3, 4, 8}, dt), in({2, 1, 6, 8}, dt), in({1, 3, 6, 5}, dt)},
        {in({2, 3, 4, 5}, dt)}, 3,
        [](auto& p, auto& d) { return (BF::scaled_dot_product_attention(p[0], p[1], p[2]) * d[0]).sum(); },
        [](auto& p, auto& d) { return (torch_sdpa_math(p[0], p[1], p[2]) * d[0]).sum(); }, t, "value");
  }
}

// ---- MultiheadAttention ------------------------------------------------------------------

/// PyTorch's multi_head_attention_forward (need_weights path) with at:: ops,
/// in (L, N, E) layout. w_in: (3E, E) packed or {Wq, Wk, Wv}; masks in MHA's
/// convention (bool true = masked out). Returns {output, head-averaged weights}.
std::pair<TT, TT> torch_mha(const TT& query, const TT& key, const TT& value, int64_t H, const TList& w_in,
                            const TT& b_in, const TT& w_out, const TT& b_out, const TT& kpm, const TT& attn_mask) {
  const int64_t L = query.size(0), N = query.size(1), E = query.size(2), S = key.size(0), hd = E / H;
  TT Wq = w_in.size() == 1 ? w_in[0].narrow(0, 0, E) : w_in[0];
  TT Wk = w_in.size() == 1 ? w_in[0].narrow(0, E, E) : w_in[1];
  TT Wv = w_in.size() == 1 ? w_in[0].narrow(0, 2 * E, E) : w_in[2];
  TT q = at::linear(query, Wq, b_in.narrow(0, 0, E));
  TT k = at::linear(key, Wk, b_in.narrow(0, E, E));
  TT v = at::linear(value, Wv, b_in.narrow(0, 2 * E, E));
  q = q.contiguous().view({L, N * H, hd}).transpose(0, 1);
  k = k.contiguous().view({S, N * H, hd}).transpose(0, 1);
  v = v.contiguous().view({S, N * H, hd}).transpose(0, 1);
  auto additive = [&](const TT& m) {
    if (!m.defined() || m.scalar_type() != at::kBool) return m;
    return at::zeros(m.sizes(), query.options()).masked_fill(m, -std::numeric_limits<double>::infinity());
  };
  TT mask = additive(attn_mask);
  if (mask.defined() && mask.dim() == 2) mask = mask.unsqueeze(0);
  if (kpm.defined()) {
    TT kp = additive(kpm).view({N, 1, 1, S}).expand({-1, H, -1, -1}).reshape({N * H, 1, S});
    mask = mask.defined() ? mask + kp : kp;
  }
  TT qs = q * (1.0 / std::sqrt(double(hd)));
  TT w = mask.defined() ? at::baddbmm(mask, qs, k.transpose(-2, -1)) : at::bmm(qs, k.transpose(-2, -1));
  w = at::softmax(w, -1);
  TT out = at::bmm(w, v).transpose(0, 1).contiguous().view({L * N, E});
  out = at::linear(out, w_out, b_out).view({L, N, E});
  return {out, w.view({N, H, L, S}).mean(1)};
}

/// Tensors made identically on both sides (values from parity's generator).
struct Both {
  BT b;
  TT t;
};
Both make(const In& spec, uint64_t seed) {
  Both x;
  make_input(spec, seed, x.b, x.t);
  return x;
}

TEST(ParityAttention, MultiheadAttentionMathForm) {
  using brisk::kDouble;
  using brisk::kFloat;
  for (auto dt : {kFloat, kDouble}) {
    for (bool packed : {true, false}) {
      const std::string name = std::string("mha.") + short_name(dt) + (packed ? ".packed" : ".kdim_vdim");
      if (!selected(name)) continue;
      SCOPED_TRACE(name);
      const int64_t E = 8, H = 2, L = 4, S = 5, N = 3, kdim = packed ? E : 6, vdim = packed ? E : 3;
      const Tol t = dt == kDouble ? tol(1e-10, 1e-12) : tol(1e-4, 1e-5);
      uint64_t seed = hash_name(name, 11);
      std::vector<Both> w;  // in_proj weights, in_proj_bias, out_proj.weight, out_proj.bias
      if (packed) {
        w.push_back(make(in({3 * E, E}, dt), seed++));
      } else {
        w.push_back(make(in({E, E}, dt), seed++));
        w.push_back(make(in({E, kdim}, dt), seed++));
        w.push_back(make(in({E, vdim}, dt), seed++));
      }
      w.push_back(make(in({3 * E}, dt), seed++));
      w.push_back(make(in({E, E}, dt), seed++));
      w.push_back(make(in({E}, dt), seed++));
      Both q = make(in({L, N, E}, dt), seed++), k = make(in({S, N, kdim}, dt), seed++),
           v = make(in({S, N, vdim}, dt), seed++), am = make(in({L, S}, dt), seed++),
           g = make(in({L, N, E}, dt), seed++), gw = make(in({N, L, S}, dt), seed++);
      Both kpm = make(mask({N, S}), seed++);
      kpm.b = kpm.b.logical_and(brisk::arange(S).ne(0));  // true = ignored: keep key 0
      kpm.t = kpm.t.logical_and(at::arange(S).ne(0));

      brisk::nn::MultiheadAttention m(brisk::nn::MultiheadAttentionOptions(E, H).kdim(kdim).vdim(vdim), dt);
      brisk::StateDict sd;
      const size_t nw = packed ? 1 : 3;
      if (packed) {
        sd.insert("in_proj_weight", w[0].b);
      } else {
        sd.insert("q_proj_weight", w[0].b);
        sd.insert("k_proj_weight", w[1].b);
        sd.insert("v_proj_weight", w[2].b);
      }
      sd.insert("in_proj_bias", w[nw].b);
      sd.insert("out_proj.weight", w[nw + 1].b);
      sd.insert("out_proj.bias", w[nw + 2].b);
      m->load_state_dict(sd);

      BT qb = q.b.clone().requires_grad_();
      auto [ob, wb] = m(qb, k.b, v.b, kpm.b, true, am.b);
      BT lb = (ob * g.b).sum() + (wb * gw.b).sum();
      lb.backward();

      TList tw;
      for (auto& x : w) tw.push_back(x.t.clone().requires_grad_());
      TT qt = q.t.clone().requires_grad_();
      TList w_in(tw.begin(), tw.begin() + long(nw));
      auto [ot, wt] = torch_mha(qt, k.t, v.t, H, w_in, tw[nw], tw[nw + 1], tw[nw + 2], kpm.t, am.t);
      TT lt = (ot * g.t).sum() + (wt * gw.t).sum();
      lt.backward();

      EXPECT_TRUE(compare(ob, ot, t, false, "output"));
      EXPECT_TRUE(compare(wb, wt, t, false, "weights"));
      EXPECT_TRUE(compare(qb.grad(), qt.grad(), t, false, "grad of query"));
      const auto params = m->named_parameters();
      const std::vector<std::string> names = params.keys();
      ASSERT_EQ(names.size(), tw.size());
      for (size_t i = 0; i < tw.size(); ++i) {
        const BT& p = params[names[i]];
        ASSERT_TRUE(p.grad().defined()) << names[i];
        EXPECT_TRUE(compare(p.grad(), tw[i].grad(), t, false, "grad of " + names[i]));
      }
    }
  }
}

TEST(ParityAttention, MultiheadAttentionNative) {
  // at::_native_multi_head_attention: batch-first, query/key/value of one
  // shape; mask_type 1 = key padding mask (N, S), true = ignored.
  const int64_t E = 8, H = 2, N = 3, L = 5;
  for (int variant = 0; variant < 3; ++variant) {
    const std::string name = variant == 0 ? "mha_native.self" : variant == 1 ? "mha_native.cross" : "mha_native.kpm";
    if (!selected(name)) continue;
    SCOPED_TRACE(name);
    uint64_t seed = hash_name(name, 5);
    Both w_in = make(in({3 * E, E}), seed++), b_in = make(in({3 * E}), seed++), w_out = make(in({E, E}), seed++),
         b_out = make(in({E}), seed++), x = make(in({N, L, E}), seed++), y = make(in({N, L, E}), seed++),
         kpm = make(mask({N, L}), seed++);
    kpm.b = kpm.b.logical_and(brisk::arange(L).ne(0));
    kpm.t = kpm.t.logical_and(at::arange(L).ne(0));
    brisk::nn::MultiheadAttention m(brisk::nn::MultiheadAttentionOptions(E, H).batch_first(true));
    m->load_state_dict(brisk::StateDict{
        {"in_proj_weight", w_in.b}, {"in_proj_bias", b_in.b}, {"out_proj.weight", w_out.b}, {"out_proj.bias", b_out.b}});
    m->eval();
    brisk::NoGradGuard ng;
    at::NoGradGuard tng;
    const BT& kb = variant == 1 ? y.b : x.b;
    const TT& kt = variant == 1 ? y.t : x.t;
    auto [ob, wb] = variant == 2 ? m(x.b, x.b, x.b, kpm.b) : m(x.b, kb, kb);
    auto r = variant == 2 ? at::_native_multi_head_attention(x.t, x.t, x.t, E, H, w_in.t, b_in.t, w_out.t, b_out.t,
                                                             kpm.t, true, true, 1)
                          : at::_native_multi_head_attention(x.t, kt, kt, E, H, w_in.t, b_in.t, w_out.t, b_out.t, {},
                                                             true, true, c10::nullopt);
    // Outputs reach |8| while some elements are differences of such terms,
    // so float32 rounding (of brisk's composite and of torch's fused kernel
    // alike) reaches 2e-6 there: brisk is checked against torch in float64
    // (with which brisk in float64 agrees to 1e-12) with an absolute
    // tolerance on that scale, and against torch's float32 result loosely.
    auto d = [](const TT& t) { return t.defined() ? t.to(at::kDouble) : t; };
    auto r64 = variant == 2 ? at::_native_multi_head_attention(d(x.t), d(x.t), d(x.t), E, H, d(w_in.t), d(b_in.t),
                                                               d(w_out.t), d(b_out.t), kpm.t, true, true, 1)
                            : at::_native_multi_head_attention(d(x.t), d(kt), d(kt), E, H, d(w_in.t), d(b_in.t),
                                                               d(w_out.t), d(b_out.t), {}, true, true, c10::nullopt);
    EXPECT_TRUE(compare(ob, std::get<0>(r64).to(at::kFloat), tol(1e-5, 1e-5), false, "output vs float64"));
    EXPECT_TRUE(compare(wb, std::get<1>(r64).to(at::kFloat), tol(1e-5, 1e-6), false, "weights vs float64"));
    EXPECT_TRUE(compare(ob, std::get<0>(r), tol(1e-4, 1e-5), false, "output"));
    EXPECT_TRUE(compare(wb, std::get<1>(r), tol(1e-4, 1e-5), false, "weights"));
  }
}

}  // namespace
}  // namespace parity
