// Loss modules and functionals (nn/loss.h) against PyTorch 2.x's values and
// gradients (tests/nn/activation_loss_ref.h, float64): every reduction, class
// weights, ignore_index, label smoothing, kinks of the hinges hit exactly;
// buffers, printing, and errors naming the op.
#include <brisk/nn.h>

#include <cmath>
#include <functional>

#include "autograd/grad_util.h"
#include "nn/activation_loss_ref.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace nn = brisk::nn;
namespace F = brisk::nn::functional;

namespace {

Tensor pt(const std::string& key, IntArrayRef shape) {
  const auto& m = activation_loss_ref::values();
  auto it = m.find(key);
  if (it == m.end()) {
    ADD_FAILURE() << "no reference value '" << key << "'";
    return zeros(shape, kDouble);
  }
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  EXPECT_EQ(n, static_cast<int64_t>(it->second.size())) << key;
  return tensor(it->second, shape, kDouble);
}
Tensor labels(const std::string& key, IntArrayRef shape) { return pt(key, shape).to(kInt64); }

nn::Reduction reduction_of(const std::string& r) {
  if (r == "none") return nn::kNone;
  if (r == "sum") return nn::kSum;
  if (r == "batchmean") return nn::kBatchMean;
  return nn::kMean;
}

using LossFn = std::function<Tensor(const TensorList&, nn::Reduction)>;

struct Case {
  std::string key;
  TensorList inputs;
  LossFn fn;
  std::vector<size_t> grad_of = {0};
  std::vector<std::string> reductions = {"none", "mean", "sum"};
};

/// Checks every reduction's value, and the gradients of the second reduction
/// listed (the mean) with respect to the inputs in grad_of.
void check_case(const Case& c) {
  SCOPED_TRACE(c.key);
  for (size_t k = 0; k < c.reductions.size(); ++k) {
    const std::string& r = c.reductions[k];
    SCOPED_TRACE(r);
    TensorList ins;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const bool grad = k == 1 && std::find(c.grad_of.begin(), c.grad_of.end(), i) != c.grad_of.end();
      ins.push_back(grad ? c.inputs[i].clone().requires_grad_() : c.inputs[i]);
    }
    Tensor out = c.fn(ins, reduction_of(r));
    EXPECT_TRUE(close(out, pt(c.key + "." + r, out.sizes()), 1e-10, 1e-12));
    if (k != 1) continue;
    out.backward(ones_like(out));
    for (size_t i : c.grad_of) {
      SCOPED_TRACE("gradient of input " + std::to_string(i));
      ASSERT_TRUE(ins[i].grad().defined());
      EXPECT_TRUE(close(ins[i].grad(), pt(c.key + "." + r + ".d" + std::to_string(i), ins[i].sizes()), 1e-10, 1e-12));
    }
  }
}

}  // namespace

class LossModules : public ::testing::Test {
 protected:
  void SetUp() override { set_num_threads(1); }
};

TEST_F(LossModules, RegressionLossesMatchPyTorch) {
  const Tensor x = pt("reg.x", {4, 5}), y = pt("reg.y", {4, 5});
  const std::vector<Case> cases = {
      {"mse", {x, y}, [](const TensorList& t, nn::Reduction r) { return nn::MSELoss(r)(t[0], t[1]); }, {0, 1}},
      {"l1", {x, y}, [](const TensorList& t, nn::Reduction r) { return nn::L1Loss(nn::L1LossOptions(r))(t[0], t[1]); },
       {0, 1}},
      {"smooth_l1", {x, y},
       [](const TensorList& t, nn::Reduction r) { return nn::SmoothL1Loss(r)(t[0], t[1]); }, {0, 1}},
      {"smooth_l1.b0.5", {x, y},
       [](const TensorList& t, nn::Reduction r) {
         return nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.5).reduction(r))(t[0], t[1]);
       }},
      {"huber", {x, y}, [](const TensorList& t, nn::Reduction r) { return nn::HuberLoss(r)(t[0], t[1]); }, {0, 1}},
      {"huber.d2", {x, y},
       [](const TensorList& t, nn::Reduction r) {
         return nn::HuberLoss(nn::HuberLossOptions().delta(2).reduction(r))->forward(t[0], t[1]);
       }},
  };
  for (const auto& c : cases) check_case(c);
}

TEST_F(LossModules, ClassificationLossesMatchPyTorch) {
  const Tensor x = pt("cls.x", {4, 5}), t = labels("cls.t", {4}), w = pt("cls.w", {5});
  const Tensor p = pt("cls.p", {4, 5}), lp = pt("cls.logp", {4, 5});
  auto ce = [](nn::CrossEntropyLossOptions o) {
    return [o](const TensorList& a, nn::Reduction r) mutable { return nn::CrossEntropyLoss(o.reduction(r))(a[0], a[1]); };
  };
  auto nll = [](nn::NLLLossOptions o) {
    return [o](const TensorList& a, nn::Reduction r) mutable { return nn::NLLLoss(o.reduction(r))(a[0], a[1]); };
  };
  const std::vector<Case> cases = {
      {"ce", {x, t}, ce({})},
      {"ce.w", {x, t}, ce(nn::CrossEntropyLossOptions().weight(w))},
      {"ce.ignore2", {x, t}, ce(nn::CrossEntropyLossOptions().ignore_index(2))},
      {"ce.ls", {x, t}, ce(nn::CrossEntropyLossOptions().label_smoothing(0.1))},
      {"ce.w.ls.ignore2", {x, t}, ce(nn::CrossEntropyLossOptions().weight(w).ignore_index(2).label_smoothing(0.2))},
      {"ce.prob", {x, p}, ce({})},
      {"nll", {lp, t}, nll({})},
      {"nll.w.ignore0", {lp, t}, nll(nn::NLLLossOptions().weight(w).ignore_index(0))},
  };
  for (const auto& c : cases) check_case(c);
}

TEST_F(LossModules, BinaryAndDivergenceLossesMatchPyTorch) {
  const Tensor x = pt("bin.x", {4, 5}), t = pt("bin.t", {4, 5}), p = pt("bin.p", {4, 5});
  const Tensor w = pt("bin.w", {5}), pw = pt("bin.pw", {5});
  const Tensor lp = pt("cls.logp", {4, 5}), tk = pt("kl.t", {4, 5}), tkl = pt("kl.logt.t", {4, 5});
  const std::vector<Case> cases = {
      {"bce", {p, t}, [](const TensorList& a, nn::Reduction r) { return nn::BCELoss(r)(a[0], a[1]); }},
      {"bce.w", {p, t},
       [w](const TensorList& a, nn::Reduction r) {
         return nn::BCELoss(nn::BCELossOptions().weight(w).reduction(r))(a[0], a[1]);
       }},
      {"bcel", {x, t}, [](const TensorList& a, nn::Reduction r) { return nn::BCEWithLogitsLoss(r)(a[0], a[1]); }},
      {"bcel.w.pw", {x, t},
       [w, pw](const TensorList& a, nn::Reduction r) {
         return nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().weight(w).pos_weight(pw).reduction(r))(a[0], a[1]);
       }},
      {"kl", {lp, tk}, [](const TensorList& a, nn::Reduction r) { return nn::KLDivLoss(r)(a[0], a[1]); }, {0},
       {"none", "batchmean", "sum", "mean"}},
      {"kl.logt", {lp, tkl},
       [](const TensorList& a, nn::Reduction r) {
         return nn::KLDivLoss(nn::KLDivLossOptions().log_target(true).reduction(r))(a[0], a[1]);
       },
       {0}, {"none", "batchmean"}},
  };
  for (const auto& c : cases) check_case(c);
}

TEST_F(LossModules, MarginLossesMatchPyTorch) {
  const Tensor x1 = pt("mr.x1", {6}), x2 = pt("mr.x2", {6}), ym = pt("mr.y", {6});
  const Tensor xh = pt("he.x", {6}), yh = pt("he.y", {6});
  const Tensor xs = pt("sm.x", {4, 5}), ys = pt("sm.y", {4, 5});
  const Tensor xc = pt("cls.x", {4, 5}), yml = pt("mlsm.y", {4, 5}), w = pt("cls.w", {5}), t = labels("cls.t", {4});
  const Tensor xml = pt("mlm.x", {3, 4}), tml = labels("mlm.t", {3, 4});
  const Tensor xmm = pt("mm.x", {4, 5});
  const std::vector<Case> cases = {
      {"mr", {x1, x2, ym},
       [](const TensorList& a, nn::Reduction r) { return nn::MarginRankingLoss(r)(a[0], a[1], a[2]); }, {0, 1}},
      {"mr.m0.5", {x1, x2, ym},
       [](const TensorList& a, nn::Reduction r) {
         return F::margin_ranking_loss(a[0], a[1], a[2], F::MarginRankingLossFuncOptions().margin(0.5).reduction(r));
       },
       {0, 1}},
      {"he", {xh, yh}, [](const TensorList& a, nn::Reduction r) { return nn::HingeEmbeddingLoss(r)(a[0], a[1]); }},
      {"he.m2", {xh, yh},
       [](const TensorList& a, nn::Reduction r) {
         return nn::HingeEmbeddingLoss(nn::HingeEmbeddingLossOptions().margin(2).reduction(r))(a[0], a[1]);
       }},
      {"sm", {xs, ys}, [](const TensorList& a, nn::Reduction r) { return nn::SoftMarginLoss(r)(a[0], a[1]); }},
      {"mlsm", {xc, yml},
       [](const TensorList& a, nn::Reduction r) { return nn::MultiLabelSoftMarginLoss(r)(a[0], a[1]); }},
      {"mlsm.w", {xc, yml},
       [w](const TensorList& a, nn::Reduction r) {
         return nn::MultiLabelSoftMarginLoss(nn::MultiLabelSoftMarginLossOptions().weight(w).reduction(r))(a[0], a[1]);
       }},
      {"mlm", {xml, tml}, [](const TensorList& a, nn::Reduction r) { return nn::MultiLabelMarginLoss(r)(a[0], a[1]); }},
      {"mlm.1d", {xml[1], tml[1]},
       [](const TensorList& a, nn::Reduction r) { return F::multilabel_margin_loss(a[0], a[1], r); }},
      {"mm", {xmm, t}, [](const TensorList& a, nn::Reduction r) { return nn::MultiMarginLoss(r)(a[0], a[1]); }},
      {"mm.p2.m0.5.w", {xmm, t},
       [w](const TensorList& a, nn::Reduction r) {
         return nn::MultiMarginLoss(nn::MultiMarginLossOptions().p(2).margin(0.5).weight(w).reduction(r))(a[0], a[1]);
       }},
      {"mm.1d", {xmm[2], t[2]},
       [](const TensorList& a, nn::Reduction r) { return F::multi_margin_loss(a[0], a[1], r); }},
  };
  for (const auto& c : cases) check_case(c);
}

TEST_F(LossModules, EmbeddingAndTripletLossesMatchPyTorch) {
  const Tensor c1 = pt("ce2.x1", {4, 3}), c2 = pt("ce2.x2", {4, 3}), yc = pt("ce2.y", {4});
  const Tensor a = pt("tr.a", {4, 3}), p = pt("tr.p", {4, 3}), n = pt("tr.n", {4, 3});
  EXPECT_TRUE(close(F::cosine_similarity(c1, c2), pt("cos_sim", {4}), 1e-12, 1e-13));
  {
    // tiny vectors: PyTorch 2 normalizes each by max(|x|, eps) first, so two
    // equal vectors of norm 1e-5 have similarity 1 (not 1e-10 / 1e-8)
    Tensor tiny = zeros({1, 2}, kDouble);
    tiny.select(1, 0).fill_(1e-5);
    EXPECT_NEAR(F::cosine_similarity(tiny, tiny).item<double>(), 1.0, 1e-12);
  }
  EXPECT_TRUE(close(F::pairwise_distance(c1, c2), pt("pdist", {4}), 1e-12, 1e-13));
  EXPECT_TRUE(close(F::pairwise_distance(c1, c2, F::PairwiseDistanceFuncOptions().p(1)), pt("pdist.p1", {4}), 1e-12,
                    1e-13));
  auto cos_distance = [](const Tensor& u, const Tensor& v) { return 1.0 - F::cosine_similarity(u, v); };
  const std::vector<Case> cases = {
      {"cosemb", {c1, c2, yc},
       [](const TensorList& t, nn::Reduction r) { return nn::CosineEmbeddingLoss(r)(t[0], t[1], t[2]); }, {0, 1}},
      {"cosemb.m0.2", {c1, c2, yc},
       [](const TensorList& t, nn::Reduction r) {
         return nn::CosineEmbeddingLoss(nn::CosineEmbeddingLossOptions().margin(0.2).reduction(r))(t[0], t[1], t[2]);
       },
       {0, 1}},
      {"tr", {a, p, n},
       [](const TensorList& t, nn::Reduction r) { return nn::TripletMarginLoss(r)(t[0], t[1], t[2]); }, {0, 1, 2}},
      {"tr.p1.swap", {a, p, n},
       [](const TensorList& t, nn::Reduction r) {
         return nn::TripletMarginLoss(nn::TripletMarginLossOptions().p(1).swap(true).margin(2).reduction(r))(
             t[0], t[1], t[2]);
       },
       {0, 1, 2}},
      {"trd", {a, p, n},
       [](const TensorList& t, nn::Reduction r) { return nn::TripletMarginWithDistanceLoss(r)(t[0], t[1], t[2]); },
       {0, 1, 2}},
      {"trd.cos.swap", {a, p, n},
       [cos_distance](const TensorList& t, nn::Reduction r) {
         return F::triplet_margin_with_distance_loss(t[0], t[1], t[2],
                                                     F::TripletMarginWithDistanceLossFuncOptions()
                                                         .distance_function(cos_distance)
                                                         .swap(true)
                                                         .margin(0.5)
                                                         .reduction(r));
       },
       {0, 1, 2}},
  };
  for (const auto& c : cases) check_case(c);
}

TEST_F(LossModules, LikelihoodLossesMatchPyTorch) {
  const Tensor x = pt("pn.x", {4, 5}), t = pt("pn.t", {4, 5}), xpos = pt("pn.xpos", {4, 5});
  const Tensor gi = pt("gn.x", {4, 3}), gt = pt("gn.t", {4, 3}), gv = pt("gn.v", {4, 3});
  const Tensor gv1 = pt("gn.v1", {4}), gv2 = pt("gn.v2", {4, 1});
  auto gn = [](nn::GaussianNLLLossOptions o) {
    return [o](const TensorList& a, nn::Reduction r) mutable { return nn::GaussianNLLLoss(o.reduction(r))(a[0], a[1], a[2]); };
  };
  const std::vector<Case> cases = {
      {"pn", {x, t}, [](const TensorList& a, nn::Reduction r) { return nn::PoissonNLLLoss(r)(a[0], a[1]); }},
      {"pn.full", {x, t},
       [](const TensorList& a, nn::Reduction r) {
         return nn::PoissonNLLLoss(nn::PoissonNLLLossOptions().full(true).reduction(r))(a[0], a[1]);
       }},
      {"pn.lin", {xpos, t},
       [](const TensorList& a, nn::Reduction r) {
         return F::poisson_nll_loss(a[0], a[1], F::PoissonNLLLossFuncOptions().log_input(false).reduction(r));
       }},
      {"gn", {gi, gt, gv}, gn({}), {0, 2}},
      {"gn.full", {gi, gt, gv}, gn(nn::GaussianNLLLossOptions().full(true)), {0, 2}},
      {"gn.v1", {gi, gt, gv1}, gn({}), {0, 2}},
      {"gn.v2", {gi, gt, gv2}, gn({}), {0, 2}},
  };
  for (const auto& c : cases) check_case(c);
}

TEST_F(LossModules, CTCLossMatchesPyTorch) {
  // Gradients with respect to the logits before log_softmax (Note [CTC as a composite]).
  const Tensor x = pt("ctc.x", {12, 3, 5}), t = labels("ctc.t", {3, 4});
  const Tensor il = labels("ctc.il", {3}), tl = labels("ctc.tl", {3});
  const Tensor tb = labels("ctc.tb", {3, 4}), tlb = labels("ctc.tlb", {3});
  const Tensor concat = tensor(std::vector<int64_t>{1, 1, 2, 3, 2, 4}, {6}, kInt64);
  const std::vector<Case> cases = {
      {"ctc", {x, t},
       [&](const TensorList& a, nn::Reduction r) { return nn::CTCLoss(r)(a[0].log_softmax(2), a[1], il, tl); }},
      {"ctc.concat", {x, concat},
       [&](const TensorList& a, nn::Reduction r) { return F::ctc_loss(a[0].log_softmax(2), a[1], il, tl, r); }},
      {"ctc.blank4.zinf", {x, tb},
       [&](const TensorList& a, nn::Reduction r) {
         return nn::CTCLoss(nn::CTCLossOptions().blank(4).zero_infinity(true).reduction(r))(
             a[0].log_softmax(2), a[1], tensor(std::vector<int64_t>{12, 9, 3}, {3}, kInt64), tlb);
       }},
      {"ctc.unbatched", {x.select(1, 0), t[0].narrow(0, 0, 3)},
       [&](const TensorList& a, nn::Reduction r) {
         return F::ctc_loss(a[0].log_softmax(1), a[1], full({1}, 10, kInt64), full({1}, 3, kInt64), r);
       }},
  };
  for (const auto& c : cases) check_case(c);
  // too short an input without zero_infinity: an infinite loss
  Tensor inf_loss = F::ctc_loss(x.log_softmax(2), tb, tensor(std::vector<int64_t>{12, 9, 3}, {3}, kInt64), tlb,
                                nn::kNone);
  EXPECT_TRUE(std::isinf(inf_loss[2].item<double>()));
  EXPECT_EQ(nn::to_string(*nn::CTCLoss()), "CTCLoss()");
  expect_error([&] { F::ctc_loss(x, t, il, tensor(std::vector<int64_t>{5, 2, 0}, {3}, kInt64)); },
               {"ctc_loss", "target length 5"});
  expect_error([&] { F::ctc_loss(x, t * 9, il, tl); }, {"ctc_loss", "out of bounds for 5 classes"});
  expect_error([&] { F::ctc_loss(x, t, tensor(std::vector<int64_t>{13, 1, 1}, {3}, kInt64), tl); },
               {"ctc_loss", "input length 13"});
  expect_error([&] { F::ctc_loss(x, t, il, tl, F::CTCLossFuncOptions().blank(5)); }, {"ctc_loss", "blank 5"});
}

TEST_F(LossModules, CTCLossGradientOfALeafLogProbsIsTorchs) {
  // PyTorch's kernel gives exp(lp) - posterior for log_probs (Note [CTC as a composite]), which a
  // leaf log_probs shows (PyTorch's documentation's example). torch 2.15:
  //   lp = linspace(-2, 0.5, 40, float64).reshape(5, 2, 4).log_softmax(2) (a leaf)
  //   F.ctc_loss(lp, [[1, 2], [3, 0]], [5, 3], [2, 1], reduction=r); grad(loss, lp)
  //   and with input lengths [5, 0], zero_infinity=True, reduction='sum'
  const Tensor lp0 = linspace(-2, 0.5, 40, kDouble).reshape({5, 2, 4}).log_softmax(2);
  const Tensor tg = tensor(std::vector<int64_t>{1, 2, 3, 0}, {2, 2}, kInt64);
  const Tensor tl = tensor(std::vector<int64_t>{2, 1}, {2}, kInt64);
  struct Want {
    nn::Reduction r;
    std::vector<int64_t> il;
    bool zero_infinity;
    double loss;
    std::vector<double> grad;
  };
  const std::vector<Want> wants = {
      {nn::kSum, {5, 3}, false, 5.888867763957492, {-0.1849737691932275, -0.34703368384169975, 0.257480884314052, 0.27452656872087483, -0.23947812246766625, 0.24149358692692938, 0.257480884314052, -0.25949634877331523, -0.07150321151381495, -0.3364776196837742, 0.13345426247671346, 0.27452656872087483, -0.06364474292826, 0.24149358692692938, 0.257480884314052, -0.4353297283127215, -0.06768415959162194, -0.09938451205856305, -0.10745789707069003, 0.27452656872087483, -0.23947812246766625, 0.24149358692692938, 0.257480884314052, -0.25949634877331523, -0.063991262342045, 0.12969934223498597, -0.3402346486138158, 0.27452656872087483, 0.0, 0.0, 0.0, 0.0, -0.1849737691932275, 0.24149358692692938, -0.33104638645457696, 0.27452656872087483, 0.0, 0.0, 0.0, 0.0}},
      {nn::kMean, {5, 3}, false, 2.0552696790908476, {-0.046243442298306875, -0.08675842096042494, 0.064370221078513, 0.06863164218021871, -0.11973906123383313, 0.12074679346346469, 0.128740442157026, -0.12974817438665762, -0.017875802878453736, -0.08411940492094355, 0.033363565619178366, 0.06863164218021871, -0.03182237146413, 0.12074679346346469, 0.128740442157026, -0.21766486415636074, -0.016921039897905485, -0.024846128014640763, -0.02686447426767251, 0.06863164218021871, -0.11973906123383313, 0.12074679346346469, 0.128740442157026, -0.12974817438665762, -0.01599781558551125, 0.03242483555874649, -0.08505866215345395, 0.06863164218021871, 0.0, 0.0, 0.0, 0.0, -0.046243442298306875, 0.060373396731732344, -0.08276159661364424, 0.06863164218021871, 0.0, 0.0, 0.0, 0.0}},
      {nn::kSum, {5, 0}, true, 3.556656811551595, {-0.1849737691932275, -0.34703368384169975, 0.257480884314052, 0.27452656872087483, 0.0, 0.0, 0.0, 0.0, -0.07150321151381495, -0.3364776196837742, 0.13345426247671346, 0.27452656872087483, 0.0, 0.0, 0.0, 0.0, -0.06768415959162194, -0.09938451205856305, -0.10745789707069003, 0.27452656872087483, 0.0, 0.0, 0.0, 0.0, -0.063991262342045, 0.12969934223498597, -0.3402346486138158, 0.27452656872087483, 0.0, 0.0, 0.0, 0.0, -0.1849737691932275, 0.24149358692692938, -0.33104638645457696, 0.27452656872087483, 0.0, 0.0, 0.0, 0.0}},
  };
  for (const Want& w : wants) {
    Tensor lp = lp0.detach().requires_grad_();
    Tensor loss = F::ctc_loss(lp, tg, tensor(w.il, {2}, kInt64), tl,
                              F::CTCLossFuncOptions().reduction(w.r).zero_infinity(w.zero_infinity));
    EXPECT_NEAR(loss.item<double>(), w.loss, 1e-12);
    Tensor g = autograd::grad({loss}, {lp})[0];
    EXPECT_TRUE(close(g.reshape({-1}), tensor(w.grad, {40}, kDouble), 1e-12, 1e-12)) << g;
  }
}

TEST_F(LossModules, GradcheckOfTheNewLosses) {
  manual_seed(11);
  auto x = [](IntArrayRef s) { return (rand(s, kDouble) * 2 - 1).requires_grad_(); };
  const Tensor y = tensor({1.0, -1.0, -1.0, 1.0}, kDouble);
  const Tensor t = tensor(std::vector<int64_t>{2, 0, 1, 3}, {4}, kInt64);
  EXPECT_TRUE(gradcheck_ok([&](const TensorList& a) { return F::soft_margin_loss(a[0], y); }, {x({4})}, true));
  EXPECT_TRUE(gradcheck_ok([&](const TensorList& a) { return F::multi_margin_loss(a[0], t); }, {x({4, 5})}));
  EXPECT_TRUE(gradcheck_ok(
      [&](const TensorList& a) { return F::cosine_embedding_loss(a[0], a[1], y, F::CosineEmbeddingLossFuncOptions().margin(-1)); },
      {x({4, 3}), x({4, 3})}));
  EXPECT_TRUE(gradcheck_ok([&](const TensorList& a) { return F::triplet_margin_loss(a[0], a[1], a[2], nn::kSum); },
                           {x({4, 3}), x({4, 3}), x({4, 3})}));
  EXPECT_TRUE(gradcheck_ok(
      [&](const TensorList& a) { return F::gaussian_nll_loss(a[0], a[1], a[2].abs() + 0.1, nn::kSum); },
      {x({4, 2}), x({4, 2}), x({4, 2})}, true));
  EXPECT_TRUE(gradcheck_ok([&](const TensorList& a) { return F::poisson_nll_loss(a[0], a[1].abs() * 3); },
                           {x({3, 2}), x({3, 2})}, true));
}

TEST_F(LossModules, WeightsAreBuffers) {
  const Tensor w = tensor({1.0f, 2.0f, 3.0f});
  nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().weight(w).ignore_index(-1).reduction(nn::kSum));
  EXPECT_EQ(ce->named_buffers().keys(), (std::vector<std::string>{"weight"}));
  EXPECT_EQ(ce->options.ignore_index(), -1);
  EXPECT_EQ(ce->options.reduction(), nn::kSum);
  EXPECT_TRUE(ce->parameters().empty());
  ce->to(kDouble);
  EXPECT_EQ(ce->options.weight().dtype(), kDouble);  // the options hold the registered buffer
  nn::BCEWithLogitsLoss bl(nn::BCEWithLogitsLossOptions().pos_weight(w));
  EXPECT_EQ(bl->state_dict().keys(), (std::vector<std::string>{"pos_weight"}));
  nn::MSELoss plain;
  EXPECT_TRUE(plain->state_dict().empty());
}

TEST_F(LossModules, PrintAsPyTorch) {
  EXPECT_EQ(nn::to_string(*nn::MSELoss()), "MSELoss()");
  EXPECT_EQ(nn::to_string(*nn::CrossEntropyLoss()), "CrossEntropyLoss()");
  EXPECT_EQ(nn::to_string(*nn::BCEWithLogitsLoss()), "BCEWithLogitsLoss()");
  EXPECT_EQ(nn::to_string(*nn::TripletMarginWithDistanceLoss()), "TripletMarginWithDistanceLoss()");
  EXPECT_EQ(nn::to_string(*nn::GaussianNLLLoss()), "GaussianNLLLoss()");
}

TEST_F(LossModules, ErrorsNameTheOp) {
  const Tensor x = ones({4, 5}), t = tensor(std::vector<int64_t>{0, 1, 2, 3}, {4}, kInt64);
  expect_error([&] { nn::MultiMarginLoss()(x, tensor(std::vector<int64_t>{0, 1, 5, 3}, {4}, kInt64)); },
               {"multi_margin_loss", "target 5", "5 classes"});
  expect_error([&] { F::multi_margin_loss(x, t, F::MultiMarginLossFuncOptions().p(3)); },
               {"multi_margin_loss", "p == 1"});
  expect_error([&] { F::multi_margin_loss(x, ones({3}, kInt64)); }, {"multi_margin_loss", "target of shape (4)"});
  expect_error([&] { F::multi_margin_loss(ones({2, 3, 4}), t); }, {"multi_margin_loss", "(N, C) or (C)"});
  expect_error([&] { F::multilabel_margin_loss(x, ones({4, 5}, kInt64) * 7); }, {"multilabel_margin_loss", "target 7"});
  expect_error([&] { F::multilabel_margin_loss(x, t); }, {"multilabel_margin_loss", "target shape"});
  expect_error([&] { nn::HingeEmbeddingLoss()(x, ones({5})); }, {"hinge_embedding_loss", "[4, 5]", "[5]"});
  expect_error([&] { nn::SoftMarginLoss()(x, ones({4})); }, {"soft_margin_loss", "differ"});
  expect_error([&] { nn::MarginRankingLoss()(ones({3}), ones({3}), ones({3, 1})); },
               {"margin_ranking_loss", "same number of dims"});
  expect_error([&] { nn::CosineEmbeddingLoss()(ones({4, 3}), ones({4, 3}), ones({3})); },
               {"cosine_embedding_loss", "target"});
  expect_error([&] { nn::CosineEmbeddingLoss()(ones({2, 4, 3}), ones({2, 4, 3}), ones({2})); },
               {"cosine_embedding_loss", "(N, D) or (D)"});
  expect_error([&] { nn::TripletMarginLoss()(ones({4, 3}), ones({3}), ones({4, 3})); },
               {"triplet_margin_loss", "same number of dims"});
  expect_error([&] {
    nn::TripletMarginWithDistanceLoss(nn::TripletMarginWithDistanceLossOptions().margin(0))(ones({2}), ones({2}),
                                                                                               ones({2}));
  }, {"triplet_margin_with_distance_loss", "margin"});
  expect_error([&] { nn::GaussianNLLLoss()(ones({4, 3}), ones({4, 3}), ones({3, 3})); },
               {"gaussian_nll_loss", "var is of incorrect size"});
  expect_error([&] { nn::GaussianNLLLoss()(ones({4, 3}), ones({4, 3}), -ones({4, 3})); },
               {"gaussian_nll_loss", "negative"});
  expect_error([&] { nn::PoissonNLLLoss()(x, ones({5})); }, {"poisson_nll_loss", "differ"});
  expect_error([&] { nn::MSELoss(nn::kBatchMean)(x, x); }, {"mse_loss", "batchmean"});
  expect_error([&] { nn::SoftMarginLoss(nn::kBatchMean)(x, x); }, {"soft_margin_loss", "batchmean"});
  expect_error([&] { nn::MultiLabelSoftMarginLoss()(ones({4, 5}, kInt64), x); },
               {"multilabel_soft_margin_loss", "floating point"});
}
