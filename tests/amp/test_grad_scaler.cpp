// brisk::amp::GradScaler against PyTorch's semantics (torch.amp.GradScaler):
// the scale state machine with injected inf and NaN, unscaling, skipped
// steps, clipping after unscale_, gradient accumulation, the state dict, and
// the errors of a misused scaler.
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <cmath>
#include <limits>

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
