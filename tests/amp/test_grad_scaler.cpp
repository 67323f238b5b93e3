// brisk::amp::GradScaler against PyTorch's semantics (torch.amp.GradScaler):
// the scale state machine with injected inf and NaN, unscaling, skipped
// steps, clipping after unscale_, gradient accumulation, the state dict, and
// the errors of a misused scaler.
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <tuple>

#include "test_util.h"

namespace brisk {
namespace {

using testing::expect_error;

class GradScalerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_num_threads(1);
    manual_seed(0);
  }
};

// A parameter w with loss = sum(w * x): its gradient is x (times the scale).
struct Model {
  Tensor w = tensor(std::vector<float>{1, 2, 3}).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{w}, optim::SGDOptions(0.1)};
  void backward(amp::GradScaler& s, const Tensor& x) { s.scale((w * x).sum()).backward(); }
};

TEST_F(GradScalerTest, ScalesTheLossAndUnscalesTheGradients) {
  Model m;
  amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(1024));
  EXPECT_EQ(scaler.get_scale(), 1024.0);
  Tensor loss = (m.w * 2).sum();
  Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.item<float>(), loss.item<float>() * 1024);
  EXPECT_EQ(scaled.dtype(), kFloat);
  scaled.backward();
  EXPECT_TRUE(m.w.grad().equal(full({3}, 2048.0)));
  scaler.unscale_(m.opt);
  EXPECT_TRUE(m.w.grad().equal(full({3}, 2.0)));
  scaler.step(m.opt);  // no second unscale
  EXPECT_TRUE(m.w.detach().allclose(tensor(std::vector<float>{0.8f, 1.8f, 2.8f})));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1024.0);  // one good step of 2000
  EXPECT_EQ(scaler.get_growth_tracker(), 1);
  // type promotion as PyTorch's (checked against torch 2.15): a 0-dim 16-bit
  // loss times the 0-dim float32 scale is float32, a 16-bit tensor stays 16-bit
  EXPECT_EQ(scaler.scale(full({}, 2.0, TensorOptions(kBFloat16))).dtype(), kFloat);
  EXPECT_EQ(scaler.scale(full({2}, 2.0, TensorOptions(kBFloat16))).dtype(), kBFloat16);
}

TEST_F(GradScalerTest, InfOrNanSkipsTheStepAndBacksOff) {
  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    Model m;
    amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(8).set_growth_interval(3));
    Tensor before = m.w.detach().clone();
    m.backward(scaler, tensor(std::vector<float>{1, bad, 1}));
    EXPECT_FALSE(scaler.step(m.opt).defined());
    EXPECT_TRUE(m.w.detach().equal(before)) << "the step was skipped";
    scaler.update();
    EXPECT_EQ(scaler.get_scale(), 4.0);
    EXPECT_EQ(scaler.get_growth_tracker(), 0);
  }
}

// (the expected sequences are torch.amp.GradScaler("cpu")'s on the same steps, torch 2.15)
TEST_F(GradScalerTest, GrowsAfterTheIntervalAndNotPastFloatMax) {
  Model m;
  amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(2).set_growth_interval(3).set_growth_factor(4));
  std::vector<double> scales;
  std::vector<int64_t> trackers;
  for (int i = 0; i < 7; ++i) {
    m.opt.zero_grad();
    m.backward(scaler, tensor(std::vector<float>{1, 1, 1}));
    scaler.step(m.opt);
    scaler.update();
    scales.push_back(scaler.get_scale());
    trackers.push_back(scaler.get_growth_tracker());
  }
  EXPECT_EQ(scales, (std::vector<double>{2, 2, 8, 8, 8, 32, 32}));
  EXPECT_EQ(trackers, (std::vector<int64_t>{1, 2, 0, 1, 2, 0, 1}));
  // an inf in between resets the run
  m.opt.zero_grad();
  m.backward(scaler, tensor(std::vector<float>{NAN, 1, 1}));
  scaler.step(m.opt);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 16.0);
  EXPECT_EQ(scaler.get_growth_tracker(), 0);
  // growth that would overflow float32 keeps the scale (PyTorch's isfinite check)
  amp::GradScaler big(amp::GradScalerOptions().set_init_scale(3e38).set_growth_interval(1));
  Model m2;
  m2.backward(big, tensor(std::vector<float>{1e-30f, 0, 0}));
  big.step(m2.opt);
  big.update();
  EXPECT_EQ(big.get_scale(), static_cast<double>(3e38f));
  EXPECT_EQ(big.get_growth_tracker(), 0);
  // update(new_scale) sets it
  big.update(256.0);
  EXPECT_EQ(big.get_scale(), 256.0);
}

TEST_F(GradScalerTest, ClippingAfterUnscaleSeesTrueGradients) {
  Model m;
  amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(4096));
  m.backward(scaler, tensor(std::vector<float>{3, 4, 0}));
  scaler.unscale_(m.opt);
  const double norm = nn::utils::clip_grad_norm_({m.w}, 1.0);
  EXPECT_NEAR(norm, 5.0, 1e-6);  // the unscaled norm
  scaler.step(m.opt);
  EXPECT_TRUE(m.w.detach().allclose(tensor(std::vector<float>{1 - 0.1f * 0.6f, 2 - 0.1f * 0.8f, 3})));
  scaler.update();
}

TEST_F(GradScalerTest, GradientAccumulationUnscalesOnce) {
  Model m;
  amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(512));
  for (int micro = 0; micro < 3; ++micro) m.backward(scaler, tensor(std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(m.w.grad().equal(tensor(std::vector<float>{3 * 512, 6 * 512, 9 * 512})));
  scaler.step(m.opt);
  EXPECT_TRUE(m.w.detach().allclose(tensor(std::vector<float>{0.7f, 1.4f, 2.1f})));
  scaler.update();
}

TEST_F(GradScalerTest, TrainsLikeUnscaledTrainingWithPowerOfTwoScales) {
  // scaling by 2^k and back is exact in float32: the same parameters as without a scaler
  auto run = [](bool scaled) {
    manual_seed(3);
    nn::Linear lin(8, 4);
    optim::Adam opt(lin->parameters(), optim::AdamOptions(1e-2));
    amp::GradScaler scaler(amp::GradScalerOptions().set_enabled(scaled).set_growth_interval(2));
    for (int i = 0; i < 6; ++i) {
      Tensor x = randn({16, 8}), y = randn({16, 4});
      opt.zero_grad();
      scaler.scale(nn::functional::mse_loss(lin(x), y)).backward();
      scaler.step(opt);
      scaler.update();
    }
    return lin->weight.detach().clone();
  };
  EXPECT_TRUE(run(true).equal(run(false)));
}

TEST_F(GradScalerTest, BFloat16GradientsAndSeveralOptimizers) {
  Tensor a = full({4}, 1.0, TensorOptions(kBFloat16)).requires_grad_();
  Tensor b = full({4}, 1.0).requires_grad_();
  optim::SGD oa({a}, optim::SGDOptions(1.0)), ob({b}, optim::SGDOptions(1.0));
  amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(256));
  scaler.scale((a * 0.5).sum().to(kFloat) + (b * 0.25).sum()).backward();
  EXPECT_EQ(a.grad().dtype(), kBFloat16);
  scaler.step(oa);
  scaler.step(ob);
  EXPECT_TRUE(a.detach().to(kFloat).equal(full({4}, 0.5)));
  EXPECT_TRUE(b.detach().equal(full({4}, 0.75)));
  scaler.update();
  EXPECT_EQ(scaler.get_growth_tracker(), 1);  // one update for both
}

TEST_F(GradScalerTest, InfOrNanInBFloat16AndDoubleGradients) {
  for (ScalarType dt : {kBFloat16, kDouble})
    for (double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
      Tensor w = zeros({5}, TensorOptions(dt)).requires_grad_(), v = zeros({2}).requires_grad_();
      optim::SGD opt({w, v}, optim::SGDOptions(1.0));
      amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(4));
      Tensor x = tensor(std::vector<double>{1, 2, bad, 3, 4}).to(dt);
      scaler.scale((w * x).sum().to(kFloat) + v.sum()).backward();
      EXPECT_FALSE(scaler.step(opt).defined()) << dtype_name(dt) << " " << bad;
      EXPECT_TRUE(v.detach().equal(zeros({2}))) << "the whole step is skipped";
      scaler.update();
      EXPECT_EQ(scaler.get_scale(), 2.0);
    }
}

TEST_F(GradScalerTest, EmptyAndLargeGradientsInTheCheck) {
  // an empty gradient has nothing to check; float32 maxima are finite (no overflow in the check)
  Tensor e = zeros({0}).requires_grad_(), w = zeros({3}).requires_grad_();
  optim::SGD opt({e, w}, optim::SGDOptions(1.0));
  amp::GradScaler scaler(amp::GradScalerOptions().set_init_scale(1));
  scaler.scale((e.sum() + (w * tensor(std::vector<float>{3e38f, -3e38f, 3e38f})).sum())).backward();
  scaler.step(opt);
  scaler.update();
  EXPECT_EQ(scaler.get_growth_tracker(), 1) << "not skipped";
  EXPECT_EQ(w.detach().to_vector<float>(), (std::vector<float>{-3e38f, 3e38f, -3e38f}));
}

TEST_F(GradScalerTest, StateDictRoundTrip) {
  amp::GradScaler a(amp::GradScalerOptions().set_init_scale(32).set_growth_interval(5).set_backoff_factor(0.25));
  Model m;
  m.backward(a, tensor(std::vector<float>{1, 1, 1}));
  a.step(m.opt);
  a.update();
  optim::StateDict sd = a.state_dict();
  for (const char* k : {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"})
    EXPECT_TRUE(sd.count(k)) << k;
  EXPECT_EQ(sd.at("scale").item<double>(), 32.0);
  EXPECT_EQ(sd.at("_growth_tracker").item<double>(), 1.0);
  amp::GradScaler b;  // loads before its first scale()
  b.load_state_dict(sd);
  EXPECT_EQ(b.get_scale(), 32.0);
  EXPECT_EQ(b.get_growth_tracker(), 1);
  EXPECT_EQ(b.get_growth_interval(), 5);
  EXPECT_EQ(b.get_backoff_factor(), 0.25);
  Model m2;
  m2.backward(b, tensor(std::vector<float>{NAN, 1, 1}));
  b.step(m2.opt);
  b.update();
  EXPECT_EQ(b.get_scale(), 8.0);  // backoff 0.25 kept
  amp::GradScaler off(amp::GradScalerOptions().set_enabled(false));
  EXPECT_TRUE(off.state_dict().empty());
  expect_error([&] { b.load_state_dict(off.state_dict()); }, {"GradScaler", "empty"});
}

TEST_F(GradScalerTest, DisabledPassesThrough) {
  Model m;
  amp::GradScaler scaler(amp::GradScalerOptions().set_enabled(false));
  Tensor loss = (m.w * 2).sum();
  EXPECT_TRUE(scaler.scale(loss).is_same(loss));
  loss.backward();
  scaler.unscale_(m.opt);
  scaler.step(m.opt);
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_TRUE(m.w.detach().allclose(tensor(std::vector<float>{0.8f, 1.8f, 2.8f})));
}

// Note [Sync-free GradScaler step]: fused SGD and fused capturable Adam/AdamW
// take the scale and the inf flag into their kernels; the others take the
// host-read path. The two give the same training: the same parameters, step
// counts and scales over steps where the first and a later step are skipped
// (and with unscale_ called before step, as gradient clipping does).
TEST_F(GradScalerTest, SyncFreeStepsTrainAsTheHostReadPath) {
  using optim::Impl;
  auto sgd = [](Impl impl, double damp) {
    return [impl, damp](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
      return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9).dampening(damp).impl(impl));
    };
  };
  auto adamw = [](Impl impl, bool capturable) {
    return [impl, capturable](std::vector<Tensor> ps) -> std::unique_ptr<optim::Optimizer> {
      return std::make_unique<optim::AdamW>(ps, optim::AdamWOptions(1e-2).impl(impl).capturable(capturable));
    };
  };
  using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
  struct Case {
    const char* what;
    Make sync_free, host;
    bool exact;  // the same kernel on both paths
  };
  const Case cases[] = {
      {"fused sgd vs for-loop sgd", sgd(Impl::Fused, 0), sgd(Impl::ForLoop, 0), false},
      {"fused capturable adamw vs fused adamw", adamw(Impl::Fused, true), adamw(Impl::Fused, false), true},
      {"fused capturable adamw vs for-loop adamw", adamw(Impl::Fused, true), adamw(Impl::ForLoop, false), false},
  };
  for (const Case& c : cases)
    for (bool unscale_first : {false, true}) {
      SCOPED_TRACE(std::string(c.what) + (unscale_first ? ", unscale_ first" : ""));
      manual_seed(5);
      std::vector<Tensor> init = {randn({7}), randn({3, 40})};
      auto clone = [&] {
        std::vector<Tensor> r;
        for (const Tensor& t : init) r.push_back(t.clone().requires_grad_());
        return r;
      };
      std::vector<Tensor> pa = clone(), pb = clone();
      auto oa = c.sync_free(pa), ob = c.host(pb);
      amp::GradScaler sa(amp::GradScalerOptions().set_init_scale(256).set_growth_interval(2));
      amp::GradScaler sb(amp::GradScalerOptions().set_init_scale(256).set_growth_interval(2));
      int skipped = 0;
      for (int step = 0; step < 9; ++step) {
        const bool bad = step == 0 || step == 5;  // the very first step, and a later one
        skipped += bad;
        Tensor x = randn({7}), y = randn({3, 40});
        if (bad) x[2].fill_(std::numeric_limits<float>::infinity());
        for (auto [ps, opt, sc] : {std::tuple{&pa, oa.get(), &sa}, std::tuple{&pb, ob.get(), &sb}}) {
          opt->zero_grad();
          sc->scale(((*ps)[0] * x).sum() + ((*ps)[1] * y).square().sum()).backward();
          if (unscale_first) sc->unscale_(*opt);
          sc->step(*opt);
          sc->update();
        }
        EXPECT_EQ(sa.get_scale(), sb.get_scale()) << "step " << step;
      }
      EXPECT_EQ(sa.get_scale(), 256.0 * 0.5 * 2 * 2 * 0.5 * 2);  // backoff, grow, grow, backoff, grow
      EXPECT_TRUE(oa->supports_amp_scaling());  // (with the gradients of the last step)
      EXPECT_FALSE(ob->supports_amp_scaling());
      for (size_t k = 0; k < init.size(); ++k) {
        if (c.exact)
          EXPECT_TRUE(pa[k].equal(pb[k])) << "parameter " << k;
        else
          EXPECT_TRUE(pa[k].allclose(pb[k], 1e-5, 1e-6)) << "parameter " << k;
        EXPECT_FALSE(pa[k].allclose(init[k])) << "parameter " << k << " did not move";
        const optim::ParamState& st = oa->state(pa[k]);
        if (st.step_tensor().defined()) EXPECT_EQ(st.step_tensor().item<float>(), float(9 - skipped));
        // after a good step the gradients are unscaled on both paths
        EXPECT_TRUE(pa[k].grad().allclose(pb[k].grad(), 1e-5, 1e-6)) << "gradient " << k;
      }
    }
}

TEST_F(GradScalerTest, WhichOptimizersStepWithoutAHostRead) {
  Tensor p = randn({4}).requires_grad_();
  p.mutable_grad() = ones({4});
  using optim::Impl;
  EXPECT_TRUE(optim::SGD({p}, optim::SGDOptions(0.1)).supports_amp_scaling());
  EXPECT_TRUE(optim::SGD({p}, optim::SGDOptions(0.1).momentum(0.9)).supports_amp_scaling());
  EXPECT_FALSE(optim::SGD({p}, optim::SGDOptions(0.1).impl(Impl::ForLoop)).supports_amp_scaling());
  EXPECT_FALSE(optim::SGD({p}, optim::SGDOptions(0.1).impl(Impl::Foreach)).supports_amp_scaling());
  // dampening: not before the momentum buffers exist (a skipped first step would change them)
  optim::SGD damp({p}, optim::SGDOptions(0.1).momentum(0.9).dampening(0.5));
  EXPECT_FALSE(damp.supports_amp_scaling());
  damp.step();
  EXPECT_TRUE(damp.supports_amp_scaling());
  EXPECT_FALSE(optim::Adam({p}, optim::AdamOptions()).supports_amp_scaling());
  EXPECT_TRUE(optim::Adam({p}, optim::AdamOptions().capturable(true)).supports_amp_scaling());
  EXPECT_FALSE(optim::Adam({p}, optim::AdamOptions().capturable(true).impl(Impl::Foreach)).supports_amp_scaling());
  EXPECT_TRUE(optim::AdamW({p}, optim::AdamWOptions().capturable(true)).supports_amp_scaling());
  EXPECT_FALSE(optim::RMSprop({p}, optim::RMSpropOptions()).supports_amp_scaling());
  optim::Adam plain({p}, optim::AdamOptions());
  expect_error([&] { plain.set_amp_scaling(Tensor(), zeros({1})); }, {"Adam", "set_amp_scaling", "capturable"});
  // a skipped sync-free step leaves everything as it was, the gradients still scaled
  optim::Adam cap({p}, optim::AdamOptions(0.1).capturable(true));
  const Tensor before = p.detach().clone();
  p.mutable_grad() = full({4}, 8.0);
  cap.set_amp_scaling(full({1}, 8.0), ones({1}));
  cap.step();
  EXPECT_TRUE(p.detach().equal(before));
  EXPECT_TRUE(p.grad().equal(full({4}, 8.0)));
  EXPECT_EQ(cap.state(p).step_tensor().item<float>(), 0.0f);
  // a good one unscales them (and the scaling was for that step only)
  cap.set_amp_scaling(full({1}, 8.0), zeros({1}));
  cap.step();
  EXPECT_TRUE(p.grad().equal(ones({4})));
  EXPECT_EQ(cap.state(p).step_tensor().item<float>(), 1.0f);
  EXPECT_TRUE(p.detach().allclose(before - 0.1, 1e-6, 1e-6));  // Adam's first step: lr * sign(g)
  cap.step();  // no scale now: the gradients are taken as they are
  EXPECT_EQ(cap.state(p).step_tensor().item<float>(), 2.0f);
}

TEST_F(GradScalerTest, MisuseIsAClearError) {
  Model m;
  amp::GradScaler scaler;
  expect_error([&] { scaler.step(m.opt); }, {"GradScaler", "scale(loss)"});
  expect_error([&] { scaler.update(); }, {"GradScaler", "scale(loss)"});
  m.backward(scaler, tensor(std::vector<float>{1, 1, 1}));
  scaler.unscale_(m.opt);
  expect_error([&] { scaler.unscale_(m.opt); }, {"GradScaler", "already been called"});
  scaler.step(m.opt);
  expect_error([&] { scaler.step(m.opt); }, {"GradScaler", "already been called since the last update"});
  expect_error([&] { scaler.unscale_(m.opt); }, {"GradScaler", "after step"});
  scaler.update();
  expect_error([&] { scaler.update(); }, {"GradScaler", "no inf checks"});
  Tensor h = full({2}, 1.0, TensorOptions(kHalf)).requires_grad_();
  optim::SGD oh({h}, optim::SGDOptions(0.1));
  scaler.scale(h.sum().to(kFloat)).backward();
  expect_error([&] { scaler.unscale_(oh); }, {"GradScaler", "float16 gradients"});
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().set_growth_factor(0.9)); }, {"GradScaler", "growth factor"});
  expect_error([] { amp::GradScaler(amp::GradScalerOptions().set_backoff_factor(1.5)); }, {"GradScaler", "backoff"});
}

}  // namespace
}  // namespace brisk
