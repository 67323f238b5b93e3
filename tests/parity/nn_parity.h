// brisk::nn::functional against libtorch on identical inputs: every loss
// (reductions, weights, ignore_index, label smoothing, probability targets)
// and an Embedding -> Linear -> LayerNorm -> GELU -> Linear stack, forward
// values and the gradient of every parameter.
//
// The torch side calls the ATen functions that torch::nn::functional wraps
// (at::cross_entropy_loss, at::layer_norm, ...): the same kernels, without
// pulling torch/nn headers into the parity translation unit. kl_div's
// "batchmean" is Python-level in PyTorch (sum / batch size) and is written
// the same way here.
#pragma once
#include <ATen/core/Reduction.h>

#include <brisk/nn.h>

#include <functional>

#include "parity.h"

namespace parity {
namespace {

namespace bnn = brisk::nn;
namespace BF = brisk::nn::functional;

struct NnCase {
  std::vector<In> params;  ///< leaves that require grad on both sides
  std::vector<In> data;    ///< inputs that do not
};

/// Runs fb (brisk) and ft (torch) on the same inputs; compares the scalar
/// output and the gradient of every parameter.
void check_nn(const std::string& name, const NnCase& c, const std::function<BT(const BList&, const BList&)>& fb,
              const std::function<TT(const TList&, const TList&)>& ft, Tol tol) {
  check_gradients(name, c.params, c.data, 7, fb, ft, tol, "value");
}

constexpr int64_t kTMean = at::Reduction::Mean, kTSum = at::Reduction::Sum, kTNone = at::Reduction::None;

TEST(ParityNn, RegressionLosses) {
  const NnCase c{{in({4, 6})}, {in({4, 6})}};
  const Tol t = tol(1e-5, 1e-6);
  for (auto [r, tr, rn] : {std::tuple{bnn::kMean, kTMean, "mean"}, std::tuple{bnn::kSum, kTSum, "sum"}}) {
    const std::string s = rn;
    check_nn("mse." + s, c, [r = r](auto& p, auto& d) { return BF::mse_loss(p[0], d[0], r); },
             [tr = tr](auto& p, auto& d) { return at::mse_loss(p[0], d[0], tr); }, t);
    check_nn("l1." + s, c, [r = r](auto& p, auto& d) { return BF::l1_loss(p[0], d[0], r); },
             [tr = tr](auto& p, auto& d) { return at::l1_loss(p[0], d[0], tr); }, t);
    check_nn("smooth_l1." + s, c,
             [r = r](auto& p, auto& d) { return BF::smooth_l1_loss(p[0], d[0], BF::SmoothL1LossFuncOptions(r).beta(0.5)); },
             [tr = tr](auto& p, auto& d) { return at::smooth_l1_loss(p[0], d[0], tr, 0.5); }, t);
    check_nn("huber." + s, c,
             [r = r](auto& p, auto& d) { return BF::huber_loss(p[0], d[0], BF::HuberLossFuncOptions(r).delta(0.7)); },
             [tr = tr](auto& p, auto& d) { return at::huber_loss(p[0], d[0], tr, 0.7); }, t);
  }
  // reduction none, summed with weights so every element's gradient differs
  const NnCase cw{{in({4, 6})}, {in({4, 6}), in({4, 6})}};
  check_nn("mse.none", cw, [](auto& p, auto& d) { return (BF::mse_loss(p[0], d[0], bnn::kNone) * d[1]).sum(); },
           [](auto& p, auto& d) { return (at::mse_loss(p[0], d[0], kTNone) * d[1]).sum(); }, t);
}

TEST(ParityNn, ClassificationLosses) {
  const Tol t = tol(1e-5, 1e-6);
  // (N, C) logits with targets in [0, C), and (N, C, d) logits
  const NnCase c2{{in({8, 5})}, {range({8}, 0, 5), in({5}, brisk::kFloat, Gen::Positive)}};
  const NnCase c3{{in({3, 5, 4})}, {range({3, 4}, 0, 5), in({5}, brisk::kFloat, Gen::Positive)}};
  for (const auto* cc : {&c2, &c3}) {
    const std::string s = cc == &c2 ? "2d" : "3d";
    check_nn("cross_entropy." + s, *cc, [](auto& p, auto& d) { return BF::cross_entropy(p[0], d[0]); },
             [](auto& p, auto& d) { return at::cross_entropy_loss(p[0], d[0]); }, t);
    check_nn(
        "cross_entropy.weight_ignore." + s, *cc,
        [](auto& p, auto& d) {
          return BF::cross_entropy(p[0], d[0], BF::CrossEntropyFuncOptions().weight(d[1]).ignore_index(2));
        },
        [](auto& p, auto& d) { return at::cross_entropy_loss(p[0], d[0], d[1], kTMean, 2); }, t);
    check_nn(
        "cross_entropy.smoothing." + s, *cc,
        [](auto& p, auto& d) { return BF::cross_entropy(p[0], d[0], BF::CrossEntropyFuncOptions().label_smoothing(0.2)); },
        [](auto& p, auto& d) { return at::cross_entropy_loss(p[0], d[0], {}, kTMean, -100, 0.2); }, t);
    check_nn(
        "cross_entropy.smoothing_weight_sum." + s, *cc,
        [](auto& p, auto& d) {
          return BF::cross_entropy(p[0], d[0],
                                   BF::CrossEntropyFuncOptions(bnn::kSum).weight(d[1]).ignore_index(0).label_smoothing(0.1));
        },
        [](auto& p, auto& d) { return at::cross_entropy_loss(p[0], d[0], d[1], kTSum, 0, 0.1); }, t);
    check_nn(
        "cross_entropy.smoothing_weight_mean." + s, *cc,
        [](auto& p, auto& d) {
          return BF::cross_entropy(p[0], d[0], BF::CrossEntropyFuncOptions().weight(d[1]).ignore_index(0).label_smoothing(0.1));
        },
        [](auto& p, auto& d) { return at::cross_entropy_loss(p[0], d[0], d[1], kTMean, 0, 0.1); }, t);
    check_nn(
        "cross_entropy.smoothing_ignore_mean." + s, *cc,
        [](auto& p, auto& d) {
          return BF::cross_entropy(p[0], d[0], BF::CrossEntropyFuncOptions().ignore_index(1).label_smoothing(0.2));
        },
        [](auto& p, auto& d) { return at::cross_entropy_loss(p[0], d[0], {}, kTMean, 1, 0.2); }, t);
    check_nn(
        "nll.weight_ignore." + s, *cc,
        [](auto& p, auto& d) {
          return BF::nll_loss(p[0].log_softmax(1), d[0], BF::NLLLossFuncOptions().weight(d[1]).ignore_index(1));
        },
        [](auto& p, auto& d) { return at::nll_loss_nd(p[0].log_softmax(1), d[0], d[1], kTMean, 1); }, t);
  }
  // probability targets (made from the same random logits on both sides)
  const NnCase cp{{in({6, 4})}, {in({6, 4}), in({4}, brisk::kFloat, Gen::Positive)}};
  check_nn(
      "cross_entropy.probs", cp,
      [](auto& p, auto& d) {
        return BF::cross_entropy(p[0], d[0].softmax(1), BF::CrossEntropyFuncOptions().weight(d[1]).label_smoothing(0.1));
      },
      [](auto& p, auto& d) { return at::cross_entropy_loss(p[0], d[0].softmax(1), d[1], kTMean, -100, 0.1); }, t);
}

TEST(ParityNn, BinaryAndKlLosses) {
  const Tol t = tol(1e-5, 1e-6);
  const NnCase c{{in({5, 3})}, {in({5, 3}), in({3}, brisk::kFloat, Gen::Positive), in({5, 3}, brisk::kFloat, Gen::Positive)}};
  check_nn(
      "bce", c,
      [](auto& p, auto& d) {
        return BF::binary_cross_entropy(p[0].sigmoid(), d[0].sigmoid(), BF::BinaryCrossEntropyFuncOptions().weight(d[2]));
      },
      [](auto& p, auto& d) { return at::binary_cross_entropy(p[0].sigmoid(), d[0].sigmoid(), d[2], kTMean); }, t);
  check_nn(
      "bce_with_logits", c,
      [](auto& p, auto& d) {
        return BF::binary_cross_entropy_with_logits(
            p[0] * 5, d[0].sigmoid(), BF::BinaryCrossEntropyWithLogitsFuncOptions(bnn::kSum).weight(d[2]).pos_weight(d[1]));
      },
      [](auto& p, auto& d) {
        return at::binary_cross_entropy_with_logits(p[0] * 5, d[0].sigmoid(), d[2], d[1], kTSum);
      },
      t);
  check_nn(
      "kl_div.batchmean", c,
      [](auto& p, auto& d) { return BF::kl_div(p[0].log_softmax(1), d[0].softmax(1), bnn::kBatchMean); },
      [](auto& p, auto& d) { return at::kl_div(p[0].log_softmax(1), d[0].softmax(1), kTSum) / 5.0; }, t);
  check_nn(
      "kl_div.log_target", c,
      [](auto& p, auto& d) {
        return BF::kl_div(p[0].log_softmax(1), d[0].log_softmax(1), BF::KLDivFuncOptions(bnn::kMean).log_target(true));
      },
      [](auto& p, auto& d) { return at::kl_div(p[0].log_softmax(1), d[0].log_softmax(1), kTMean, true); }, t);
}

// Embedding -> Linear -> LayerNorm -> GELU -> Linear -> cross entropy,
// parameters: E (10, 16), W1 (32, 16), b1, gamma, beta, W2 (8, 32), b2.
inline NnCase stack_case(brisk::ScalarType dt) {
  return {{in({10, 16}, dt), in({32, 16}, dt), in({32}, dt), in({32}, dt), in({32}, dt), in({8, 32}, dt), in({8}, dt)},
          {range({4, 5}, 0, 10), range({20}, 0, 8)}};
}

TEST(ParityNn, EmbeddingLinearLayerNormStack) {
  auto fb = [](const BList& p, const BList& d) {
    BT x = BF::embedding(d[0], p[0]);                      // (4, 5, 16)
    BT h = BF::linear(x, p[1], p[2]);                      // (4, 5, 32)
    h = BF::gelu(BF::layer_norm(h, {32}, p[3], p[4]));
    BT logits = BF::linear(h, p[5], p[6]).reshape({20, 8});
    return BF::cross_entropy(logits, d[1]);
  };
  auto ft = [](const TList& p, const TList& d) {
    TT x = at::embedding(p[0], d[0]);
    TT h = at::linear(x, p[1], p[2]);
    h = at::gelu(at::layer_norm(h, {32}, p[3], p[4]));
    TT logits = at::linear(h, p[5], p[6]).reshape({20, 8});
    return at::cross_entropy_loss(logits, d[1]);
  };
  check_nn("stack.f32", stack_case(brisk::kFloat), fb, ft, tol(1e-4, 1e-5));
  check_nn("stack.f64", stack_case(brisk::kDouble), fb, ft, tol(1e-10, 1e-12));
}

}  // namespace
}  // namespace parity
