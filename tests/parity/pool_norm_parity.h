// Pooling and normalization against libtorch on identical inputs:
// at::max_pool2d_with_indices (values and indices), at::avg_pool2d,
// at::adaptive_avg_pool2d, the 1-D forms, at::batch_norm (with the running
// statistics it leaves behind) and at::group_norm; forward values, the
// gradient of every parameter, both memory layouts (the layout of the
// outputs too), float32 / float64 / bfloat16, and the errors.
#pragma once
#include <brisk/nn.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parity.h"

namespace parity {
namespace {

namespace pn_nn = brisk::nn;
namespace PF = brisk::nn::functional;

/// Runs fb (brisk) and ft (torch) on the same inputs (params require grad on
/// both sides); compares every output (and its strides when `strides`), then
/// the gradient of sum(output0 * r), r random, for every parameter.
void pn_check(const std::string& name, const std::vector<In>& params, const std::vector<In>& data,
              const std::function<BList(const BList&, const BList&)>& fb,
              const std::function<TList(const TList&, const TList&)>& ft, Tol t, bool strides = false) {
  SCOPED_TRACE("case " + name);
  if (!selected(name)) return;
  BList bp, bd;
  TList tp, td;
  uint64_t seed = hash_name(name, 11);
  for (const In& s : params) {
    BT b;
    TT x;
    make_input(s, seed++, b, x);
    bp.push_back(b.requires_grad_());
    tp.push_back(x.requires_grad_());
  }
  for (const In& s : data) {
    BT b;
    TT x;
    make_input(s, seed++, b, x);
    bd.push_back(b);
    td.push_back(x);
  }
  const BList bo = fb(bp, bd);
  const TList to = ft(tp, td);
  ASSERT_EQ(bo.size(), to.size());
  for (size_t k = 0; k < bo.size(); ++k)
    EXPECT_TRUE(compare(bo[k], to[k], t, strides, "output " + std::to_string(k)));
  if (params.empty()) return;
  BT br;
  TT tr;
  make_input(in(std::vector<int64_t>(bo[0].sizes().begin(), bo[0].sizes().end()), bo[0].dtype()), seed++, br, tr);
  (bo[0] * br).sum().backward();
  (to[0] * tr).sum().backward();
  for (size_t i = 0; i < bp.size(); ++i) {
    ASSERT_TRUE(bp[i].grad().defined()) << "parameter " << i << " got no gradient";
    EXPECT_TRUE(compare(bp[i].grad(), tp[i].grad(), t, false, "grad of parameter " + std::to_string(i)));
  }
}

BT to_cl(const BT& x) { return x.contiguous(brisk::kChannelsLast); }
TT to_cl(const TT& x) { return x.contiguous(at::MemoryFormat::ChannelsLast); }

struct PoolCfg {
  std::string tag;
  std::vector<int64_t> k, s, p, d;
  bool ceil;
};

/// Tolerances by dtype (reductions in a different order differ in the last bits).
Tol pn_tol(ScalarType dt) {
  if (dt == brisk::kDouble) return tol(1e-10, 1e-12);
  if (dt == brisk::kBFloat16) return tol(2e-2, 2e-2);
  return tol(1e-5, 1e-5);
}

TEST(ParityPoolNorm, MaxPool2d) {
  const std::vector<PoolCfg> cfgs = {
      {"k2", {2, 2}, {2, 2}, {0, 0}, {1, 1}, false},       {"k3s2p1", {3, 3}, {2, 2}, {1, 1}, {1, 1}, false},
      {"k3s1p1", {3, 3}, {1, 1}, {1, 1}, {1, 1}, false},   {"k3x2_dil_ceil", {3, 2}, {2, 1}, {1, 0}, {2, 1}, true},
      {"k2s1d2_ceil", {2, 2}, {1, 1}, {0, 0}, {2, 2}, true}, {"k3s3_ceil", {3, 3}, {3, 3}, {1, 1}, {1, 1}, true},
  };
  for (const PoolCfg& c : cfgs)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble, brisk::kBFloat16})
      for (int layout = 0; layout < 3; ++layout) {  // NCHW, channels_last, unbatched
        const std::string name = "max_pool2d." + c.tag + "." + short_name(dt) + (layout == 1 ? ".cl" : layout == 2 ? ".unbatched" : "");
        const std::vector<int64_t> shape = layout == 2 ? std::vector<int64_t>{3, 9, 10} : std::vector<int64_t>{2, 3, 9, 10};
        pn_check(
            name, {in(shape, dt)}, {},
            [&](const BList& p, const BList&) {
              const BT x = layout == 1 ? to_cl(p[0]) : p[0];
              auto [y, i] = PF::max_pool2d_with_indices(
                  x, PF::MaxPool2dFuncOptions({c.k[0], c.k[1]}).stride({c.s[0], c.s[1]}).padding({c.p[0], c.p[1]})
                         .dilation({c.d[0], c.d[1]}).ceil_mode(c.ceil));
              return BList{y, i};
            },
            [&](const TList& p, const TList&) {
              const TT x = layout == 1 ? to_cl(p[0]) : p[0];
              auto [y, i] = at::max_pool2d_with_indices(x, c.k, c.s, c.p, c.d, c.ceil);
              return TList{y, i};
            },
            pn_tol(dt), /*strides=*/layout == 1);
      }
}

TEST(ParityPoolNorm, AvgPool2d) {
  struct AvgCfg {
    std::string tag;
    std::vector<int64_t> k, s, p;
    bool ceil, count_pad;
    std::optional<int64_t> div;
  };
  const std::vector<AvgCfg> cfgs = {
      {"k2", {2, 2}, {2, 2}, {0, 0}, false, true, std::nullopt},
      {"k3s2p1", {3, 3}, {2, 2}, {1, 1}, false, true, std::nullopt},
      {"k3s2p1_nopad", {3, 3}, {2, 2}, {1, 1}, false, false, std::nullopt},
      {"k3x2_ceil", {3, 2}, {2, 3}, {1, 1}, true, true, std::nullopt},
      {"k3x2_ceil_nopad", {3, 2}, {2, 3}, {1, 1}, true, false, std::nullopt},
      {"k3s1_div7", {3, 3}, {1, 1}, {1, 1}, false, true, 7},
  };
  for (const AvgCfg& c : cfgs)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble, brisk::kBFloat16})
      for (int layout = 0; layout < 3; ++layout) {
        const std::string name = "avg_pool2d." + c.tag + "." + short_name(dt) + (layout == 1 ? ".cl" : layout == 2 ? ".unbatched" : "");
        const std::vector<int64_t> shape = layout == 2 ? std::vector<int64_t>{3, 9, 10} : std::vector<int64_t>{2, 3, 9, 10};
        pn_check(
            name, {in(shape, dt)}, {},
            [&](const BList& p, const BList&) {
              const BT x = layout == 1 ? to_cl(p[0]) : p[0];
              return BList{PF::avg_pool2d(x, {c.k[0], c.k[1]}, brisk::nn::ExpandingInts<2>({c.s[0], c.s[1]}),
                                          {c.p[0], c.p[1]}, c.ceil, c.count_pad, c.div)};
            },
            [&](const TList& p, const TList&) {
              const TT x = layout == 1 ? to_cl(p[0]) : p[0];
              return TList{at::avg_pool2d(x, c.k, c.s, c.p, c.ceil, c.count_pad,
                                          c.div ? c10::optional<int64_t>(*c.div) : c10::nullopt)};
            },
            pn_tol(dt), layout == 1);
      }
}

TEST(ParityPoolNorm, AdaptiveAvgPool2d) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 3, 9, 10}, {1, 1}}, {{2, 3, 9, 10}, {3, 4}}, {{2, 3, 9, 10}, {5, 7}}, {{2, 4, 7, 5}, {3, 3}},
      {{2, 4, 6, 6}, {3, 2}},  {{3, 7, 5}, {4, 6}}};
  for (const auto& [shape, os] : cases)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
      for (bool cl : {false, true}) {
        if (cl && shape.size() != 4) continue;
        const std::string name = "adaptive_avg_pool2d." + shape_str(shape) + "_to_" + shape_str(os) + "." +
                                 short_name(dt) + (cl ? ".cl" : "");
        pn_check(
            name, {in(shape, dt)}, {},
            [&](const BList& p, const BList&) {
              return BList{PF::adaptive_avg_pool2d(cl ? to_cl(p[0]) : p[0], {os[0], os[1]})};
            },
            [&](const TList& p, const TList&) { return TList{at::adaptive_avg_pool2d(cl ? to_cl(p[0]) : p[0], os)}; },
            pn_tol(dt), cl && os[0] * os[1] > 1);
      }
}

TEST(ParityPoolNorm, Pool1d) {
  for (ScalarType dt : {brisk::kFloat, brisk::kDouble}) {
    pn_check(
        std::string("max_pool1d.k3s2p1d2_ceil.") + short_name(dt), {in({2, 3, 11}, dt)}, {},
        [](const BList& p, const BList&) {
          auto [y, i] = PF::max_pool1d_with_indices(p[0], PF::MaxPool1dFuncOptions(3).stride(2).padding(1).dilation(2).ceil_mode(true));
          return BList{y, i};
        },
        [](const TList& p, const TList&) {
          auto [y, i] = at::max_pool1d_with_indices(p[0], {3}, {2}, {1}, {2}, true);
          return TList{y, i};
        },
        pn_tol(dt));
    pn_check(
        std::string("avg_pool1d.k4s3p2_nopad.") + short_name(dt), {in({2, 3, 11}, dt)}, {},
        [](const BList& p, const BList&) { return BList{PF::avg_pool1d(p[0], 4, 3, 2, true, false)}; },
        [](const TList& p, const TList&) { return TList{at::avg_pool1d(p[0], {4}, {3}, {2}, true, false)}; },
        pn_tol(dt));
  }
}

// batch_norm: params x, weight, bias; data running_mean, running_var
// (returned after the call, so the update is compared too).
TEST(ParityPoolNorm, BatchNorm) {
  const std::vector<std::vector<int64_t>> shapes = {{8, 5}, {4, 3, 7}, {3, 4, 5, 6}, {2, 3, 2, 3, 4}};
  for (const auto& shape : shapes)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
      for (bool training : {true, false})
        for (bool affine : {true, false})
          for (bool cl : {false, true}) {
            if (cl && shape.size() != 4) continue;
            const int64_t C = shape[1];
            const std::string name = "batch_norm." + shape_str(shape) + "." + short_name(dt) +
                                     (training ? ".train" : ".eval") + (affine ? "" : ".no_affine") + (cl ? ".cl" : "");
            std::vector<In> params = {in(shape, dt)};
            if (affine) params.insert(params.end(), {in({C}, dt, Gen::Positive), in({C}, dt)});
            pn_check(
                name, params, {in({C}, dt), in({C}, dt, Gen::Positive)},
                [&](const BList& p, const BList& d) {
                  const BT x = cl ? to_cl(p[0]) : p[0];
                  const BT y = PF::batch_norm(x, d[0], d[1], affine ? p[1] : BT(), affine ? p[2] : BT(), training, 0.2, 1e-4);
                  return BList{y, d[0].clone(), d[1].clone()};
                },
                [&](const TList& p, const TList& d) {
                  const TT x = cl ? to_cl(p[0]) : p[0];
                  const TT y = at::batch_norm(x, affine ? p[1] : TT(), affine ? p[2] : TT(), d[0], d[1], training, 0.2,
                                              1e-4, false);
                  return TList{y, d[0].clone(), d[1].clone()};
                },
                dt == brisk::kDouble ? tol(1e-10, 1e-12) : tol(1e-4, 1e-5), cl);
          }
  // no running statistics (batch statistics only)
  pn_check(
      "batch_norm.no_running_stats", {in({6, 4, 3}), in({4}), in({4})}, {},
      [](const BList& p, const BList&) { return BList{PF::batch_norm(p[0], {}, {}, p[1], p[2], true)}; },
      [](const TList& p, const TList&) { return TList{at::batch_norm(p[0], p[1], p[2], {}, {}, true, 0.1, 1e-5, false)}; },
      tol(1e-4, 1e-5));
  // the module: two training steps then eval, against the same calls in torch
  pn_check(
      "batch_norm.module_steps", {in({4, 3, 5, 5})}, {in({4, 3, 5, 5})},
      [](const BList& p, const BList& d) {
        pn_nn::BatchNorm2d bn(3);
        bn->forward(d[0]);
        bn->forward(d[0] * 2 + 1);
        bn->eval();
        return BList{bn->forward(p[0]), bn->running_mean.clone(), bn->running_var.clone(),
                     bn->num_batches_tracked.clone()};
      },
      [](const TList& p, const TList& d) {
        TT rm = at::zeros({3}), rv = at::ones({3});
        at::batch_norm(d[0], {}, {}, rm, rv, true, 0.1, 1e-5, false);
        at::batch_norm(d[0] * 2 + 1, {}, {}, rm, rv, true, 0.1, 1e-5, false);
        return TList{at::batch_norm(p[0], at::ones({3}), at::zeros({3}), rm, rv, false, 0.1, 1e-5, false), rm, rv,
                     at::scalar_tensor(2, at::kLong)};
      },
      tol(1e-4, 1e-5));
}

TEST(ParityPoolNorm, GroupNorm) {
  // Groups of 3 or more values: with 2 the input gradient is a difference of
  // nearly equal terms (exactly zero without eps), float32 noise in both libraries.
  const std::vector<std::pair<std::vector<int64_t>, int64_t>> cases = {
      {{3, 6, 5, 4}, 3}, {{2, 8, 7}, 2}, {{4, 6}, 2}, {{2, 4, 3, 3}, 1}, {{2, 4, 3, 3}, 4}, {{2, 6, 2, 2, 3}, 2}};
  for (const auto& [shape, G] : cases)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
      for (bool affine : {true, false})
        for (bool cl : {false, true}) {
          if (cl && shape.size() != 4) continue;
          const int64_t C = shape[1];
          const std::string name = "group_norm." + shape_str(shape) + ".G" + std::to_string(G) + "." + short_name(dt) +
                                   (affine ? "" : ".no_affine") + (cl ? ".cl" : "");
          std::vector<In> params = {in(shape, dt)};
          if (affine) params.insert(params.end(), {in({C}, dt, Gen::Positive), in({C}, dt)});
          pn_check(
              name, params, {},
              [&](const BList& p, const BList&) {
                return BList{PF::group_norm(cl ? to_cl(p[0]) : p[0], G, affine ? p[1] : BT(), affine ? p[2] : BT(), 1e-5)};
              },
              [&](const TList& p, const TList&) {
                return TList{at::group_norm(cl ? to_cl(p[0]) : p[0], G, affine ? p[1] : TT(), affine ? p[2] : TT(), 1e-5,
                                            false)};
              },
              dt == brisk::kDouble ? tol(1e-10, 1e-12) : tol(1e-4, 1e-5), cl);
        }
}

/// brisk and torch both refuse: the message names the op and the problem.
void pn_error(const std::string& name, In input, std::vector<std::string> pieces, std::function<void(const BT&)> fb,
              std::function<void(const TT&)> ft) {
  ErrorCase c;
  c.name = name;
  c.inputs = {std::move(input)};
  c.brisk_fn = [fb](const BList& x) { fb(x[0]); };
  c.torch_fn = [ft](const TList& x) { ft(x[0]); };
  c.pieces = std::move(pieces);
  SCOPED_TRACE("case " + name);
  run_error_case(c);
}

TEST(ParityPoolNorm, Errors) {
  pn_error("max_pool2d.kernel_too_large", in({1, 2, 2, 2}), {"[max_pool2d]", "too small"},
           [](const BT& x) { PF::max_pool2d(x, 3); }, [](const TT& x) { at::max_pool2d(x, {3, 3}); });
  pn_error("max_pool2d.padding_over_half", in({1, 2, 6, 6}), {"[max_pool2d]", "at most half"},
           [](const BT& x) { PF::max_pool2d(x, 3, 1, 2); }, [](const TT& x) { at::max_pool2d(x, {3, 3}, {1, 1}, {2, 2}); });
  pn_error("max_pool2d.zero_stride", in({1, 2, 6, 6}), {"[max_pool2d]", "stride"},
           [](const BT& x) { PF::max_pool2d(x, 2, 0); }, [](const TT& x) { at::max_pool2d(x, {2, 2}, {0, 0}); });
  pn_error("max_pool2d.2d_input", in({6, 6}), {"[max_pool2d]", "4-D"}, [](const BT& x) { PF::max_pool2d(x, 2); },
           [](const TT& x) { at::max_pool2d(x, {2, 2}); });
  pn_error("avg_pool2d.kernel_too_large", in({1, 2, 2, 2}), {"[avg_pool2d]", "too small"},
           [](const BT& x) { PF::avg_pool2d(x, 3); }, [](const TT& x) { at::avg_pool2d(x, {3, 3}); });
  pn_error("avg_pool2d.divisor_zero", in({1, 2, 4, 4}), {"[avg_pool2d]", "divisor_override"},
           [](const BT& x) { PF::avg_pool2d(x, 2, 2, 0, false, true, 0); },
           [](const TT& x) { at::avg_pool2d(x, {2, 2}, {2, 2}, {0, 0}, false, true, 0); });
  pn_error("group_norm.groups_do_not_divide", in({2, 6, 3}), {"[group_norm]", "not divisible"},
           [](const BT& x) { PF::group_norm(x, 4); }, [](const TT& x) { at::group_norm(x, 4); });
  pn_error("batch_norm.weight_size", in({2, 6, 3}), {"[batch_norm]", "weight of shape [6]"},
           [](const BT& x) { PF::batch_norm(x, {}, {}, brisk::ones({5}), {}, true); },
           [](const TT& x) { at::batch_norm(x, at::ones({5}), {}, {}, {}, true, 0.1, 1e-5, false); });
}

}  // namespace
}  // namespace parity
