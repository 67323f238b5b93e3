// Optimizers: the three implementations agree, real problems converge,
// state dicts round-trip, bad options throw; LR schedulers' sequences.
#include <brisk/optim.h>

#include <cmath>
#include <functional>
#include <numbers>

#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
namespace optim = brisk::optim;

namespace {

using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, optim::Impl)>;

/// Leaves of assorted sizes (one large enough for the parallel path).
std::vector<Tensor> make_params(ScalarType dt) {
  manual_seed(7);
  std::vector<Tensor> ps;
  for (auto shape : std::vector<std::vector<int64_t>>{{3}, {17, 5}, {1}, {34000}, {2, 3, 4}})
    ps.push_back(randn(shape, dt).requires_grad_());
  return ps;
}

std::vector<Tensor> clone_params(const std::vector<Tensor>& ps) {
  std::vector<Tensor> r;
  for (const Tensor& p : ps) r.push_back(p.detach().clone().requires_grad_());
  return r;
}

/// Runs 100 steps of the three implementations on identical params and
/// gradients (gradient of parameter 2 left undefined every third step) and
/// compares the parameters and state.
void check_impls_agree(const char* what, const MakeOpt& make, ScalarType dt = kFloat) {
  SCOPED_TRACE(what);
  const std::vector<Tensor> init = make_params(dt);
  const optim::Impl impls[] = {optim::Impl::ForLoop, optim::Impl::Foreach, optim::Impl::Fused};
  std::vector<std::vector<Tensor>> params;
  std::vector<std::unique_ptr<optim::Optimizer>> opts;
  for (optim::Impl impl : impls) {
    params.push_back(clone_params(init));
    opts.push_back(make(params.back(), impl));
  }
  manual_seed(11);
  for (int step = 0; step < 100; ++step) {
    for (size_t k = 0; k < init.size(); ++k) {
      Tensor g = randn(init[k].sizes(), dt);
      for (auto& ps : params) ps[k].mutable_grad() = (k == 2 && step % 3 == 0) ? Tensor() : g.clone();
    }
    for (auto& o : opts) o->step();
  }
  const double rtol = dt == kFloat ? 2e-4 : 1e-10, atol = dt == kFloat ? 2e-5 : 1e-12;
  for (size_t i = 1; i < 3; ++i)
    for (size_t k = 0; k < init.size(); ++k) {
      EXPECT_TRUE(close(params[i][k], params[0][k], rtol, atol))
          << optim::impl_name(impls[i]) << " vs ForLoop, parameter " << k;
      EXPECT_FALSE(params[i][k].allclose(init[k])) << "parameter " << k << " did not move";
    }
  // step counts: parameter 2 skipped a third of the steps
  EXPECT_EQ(opts[2]->state(params[2][2]).step(), opts[0]->state(params[0][2]).step());
}

TEST(Optim, SGDImplsAgree) {
  for (ScalarType dt : {kFloat, kDouble}) {
    auto sgd = [](optim::SGDOptions o) {
      return [o](std::vector<Tensor> ps, optim::Impl impl) -> std::unique_ptr<optim::Optimizer> {
        auto oo = o;
        return std::make_unique<optim::SGD>(ps, oo.impl(impl));
      };
    };
    check_impls_agree("sgd", sgd(optim::SGDOptions(0.01)), dt);
    check_impls_agree("sgd momentum", sgd(optim::SGDOptions(0.01).momentum(0.9).dampening(0.1)), dt);
    check_impls_agree("sgd nesterov wd", sgd(optim::SGDOptions(0.01).momentum(0.9).nesterov(true).weight_decay(1e-2)),
                      dt);
    check_impls_agree("sgd maximize", sgd(optim::SGDOptions(0.01).momentum(0.5).maximize(true)), dt);
  }
}

TEST(Optim, AdamImplsAgree) {
  for (ScalarType dt : {kFloat, kDouble}) {
    auto adam = [](optim::AdamOptions o, bool w) {
      return [o, w](std::vector<Tensor> ps, optim::Impl impl) -> std::unique_ptr<optim::Optimizer> {
        auto oo = o;
        oo.impl(impl);
        if (w) {
          optim::AdamWOptions wo;
          for (const auto& [k, v] : oo.values()) wo.set_value(k, v);
          return std::make_unique<optim::AdamW>(ps, wo);
        }
        return std::make_unique<optim::Adam>(ps, oo);
      };
    };
    for (bool w : {false, true}) {
      check_impls_agree(w ? "adamw" : "adam", adam(optim::AdamOptions(1e-2), w), dt);
      check_impls_agree("amsgrad wd", adam(optim::AdamOptions(1e-2).amsgrad(true).weight_decay(0.1), w), dt);
      check_impls_agree("maximize betas",
                        adam(optim::AdamOptions(1e-2).maximize(true).betas({0.8, 0.99}).eps(1e-6), w), dt);
    }
  }
}

// Note [Capturable Adam]: with capturable(true) the step counts are float32
// tensors on the parameters' devices and the kernels compute the bias
// corrections from them: the fused step gives the bits of the host-count
// fused step, the for-loop and foreach steps agree with the reference, and
// the counts (parameter 2 skips a third of the steps) are the host counts.
TEST(Optim, CapturableAdamMatchesTheHostCount) {
  for (ScalarType dt : {kFloat, kDouble})
    for (bool w : {false, true})
      for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE(std::string(w ? "adamw " : "adam ") + std::string(dtype_name(dt)) + " variant " + std::to_string(variant));
        optim::AdamOptions o(1e-2);
        if (variant == 1) o.amsgrad(true).weight_decay(0.1);
        if (variant == 2) o.maximize(true).betas({0.8, 0.99}).eps(1e-6);
        auto make = [&](std::vector<Tensor> ps, optim::Impl impl, bool capturable) -> std::unique_ptr<optim::Optimizer> {
          auto oo = o;
          oo.impl(impl).capturable(capturable);
          if (w) {
            optim::AdamWOptions wo;
            for (const auto& [k, v] : oo.values()) wo.set_value(k, v);
            return std::make_unique<optim::AdamW>(ps, wo);
          }
          return std::make_unique<optim::Adam>(ps, oo);
        };
        const std::vector<Tensor> init = make_params(dt);
        struct Run {
          optim::Impl impl;
          bool capturable;
        };
        const Run runs[] = {{optim::Impl::Fused, false},
                            {optim::Impl::Fused, true},
                            {optim::Impl::ForLoop, false},
                            {optim::Impl::ForLoop, true},
                            {optim::Impl::Foreach, true}};
        std::vector<std::vector<Tensor>> params;
        std::vector<std::unique_ptr<optim::Optimizer>> opts;
        for (const Run& r : runs) {
          params.push_back(clone_params(init));
          opts.push_back(make(params.back(), r.impl, r.capturable));
        }
        manual_seed(11);
        for (int step = 0; step < 30; ++step) {
          for (size_t k = 0; k < init.size(); ++k) {
            Tensor g = randn(init[k].sizes(), dt);
            for (auto& ps : params) ps[k].mutable_grad() = (k == 2 && step % 3 == 0) ? Tensor() : g.clone();
          }
          for (auto& op : opts) op->step();
        }
        const double rtol = dt == kFloat ? 2e-4 : 1e-10, atol = dt == kFloat ? 2e-5 : 1e-12;
        for (size_t k = 0; k < init.size(); ++k) {
          EXPECT_TRUE(params[1][k].equal(params[0][k])) << "fused capturable vs fused, parameter " << k;
          EXPECT_TRUE(close(params[3][k], params[2][k], rtol, atol)) << "for-loop capturable, parameter " << k;
          EXPECT_TRUE(close(params[4][k], params[2][k], rtol, atol)) << "foreach capturable, parameter " << k;
          EXPECT_FALSE(params[1][k].allclose(init[k])) << "parameter " << k << " did not move";
          const int64_t host = opts[0]->state(params[0][k]).step();
          EXPECT_EQ(host, k == 2 ? 20 : 30);
          for (size_t r : {1, 3, 4}) {
            const Tensor& t = opts[r]->state(params[r][k]).step_tensor();
            ASSERT_TRUE(t.defined());
            EXPECT_EQ(t.dtype(), kFloat);
            EXPECT_EQ(t.dim(), 0);
            EXPECT_EQ(t.item<float>(), float(host)) << "run " << r << ", parameter " << k;
          }
        }
        // the state dict holds the device count; loading it into a host-count Adam continues alike
        optim::StateDict sd = opts[1]->state_dict();
        EXPECT_EQ(sd.at("state.2.step").item<double>(), 20.0);
        EXPECT_EQ(sd.at("param_groups.0.capturable").item<double>(), 1.0);
        std::vector<Tensor> p5 = clone_params(params[1]);
        auto reloaded = make(p5, optim::Impl::Fused, true);
        reloaded->load_state_dict(sd);
        for (size_t k = 0; k < init.size(); ++k) {
          Tensor g = randn(init[k].sizes(), dt);
          params[1][k].mutable_grad() = g.clone();
          p5[k].mutable_grad() = g.clone();
        }
        opts[1]->step();
        reloaded->step();
        for (size_t k = 0; k < init.size(); ++k) EXPECT_TRUE(p5[k].equal(params[1][k])) << "reloaded, parameter " << k;
      }
}

TEST(Optim, RMSpropImplsAgree) {
  for (ScalarType dt : {kFloat, kDouble}) {
    auto rms = [](optim::RMSpropOptions o) {
      return [o](std::vector<Tensor> ps, optim::Impl impl) -> std::unique_ptr<optim::Optimizer> {
        auto oo = o;
        return std::make_unique<optim::RMSprop>(ps, oo.impl(impl));
      };
    };
    check_impls_agree("rmsprop", rms(optim::RMSpropOptions(1e-3)), dt);
    check_impls_agree("rmsprop centered momentum wd",
                      rms(optim::RMSpropOptions(1e-3).centered(true).momentum(0.9).weight_decay(1e-2)), dt);
    check_impls_agree("rmsprop maximize", rms(optim::RMSpropOptions(1e-3).maximize(true).alpha(0.9)), dt);
  }
}

// One hand-checked Adam step: t = 1, so m_hat = g and v_hat = g^2, and the
// update is lr * g / (|g| + eps).
TEST(Optim, AdamFirstStepValue) {
  for (optim::Impl impl : {optim::Impl::ForLoop, optim::Impl::Foreach, optim::Impl::Fused}) {
    Tensor p = tensor({1.0, -2.0}, kDouble).requires_grad_();
    p.mutable_grad() = tensor({0.5, -4.0}, kDouble);
    optim::Adam opt({p}, optim::AdamOptions(0.1).impl(impl));
    opt.step();
    EXPECT_TRUE(close(p, tensor({1.0 - 0.1 * 0.5 / (0.5 + 1e-8), -2.0 + 0.1 * 4.0 / (4.0 + 1e-8)}, kDouble), 1e-12,
                      1e-12));
  }
}

// Least squares with autograd: min |A x - b|^2 converges to the solution.
TEST(Optim, LeastSquaresConverges) {
  manual_seed(3);
  Tensor A = randn({32, 4});
  Tensor x_true = tensor({1.f, -2.f, 0.5f, 3.f});
  Tensor b = A.matmul(x_true);
  auto run = [&](auto make) {
    Tensor x = zeros({4}).requires_grad_();
    auto opt = make(std::vector<Tensor>{x});
    for (int i = 0; i < 1000; ++i) {
      opt->zero_grad();
      Tensor loss = (A.matmul(x) - b).square().mean();
      loss.backward();
      opt->step();
    }
    return x.detach();
  };
  for (optim::Impl impl : {optim::Impl::ForLoop, optim::Impl::Foreach, optim::Impl::Fused}) {
    SCOPED_TRACE(optim::impl_name(impl));
    EXPECT_TRUE(close(run([&](auto ps) { return std::make_unique<optim::Adam>(ps, optim::AdamOptions(0.05).impl(impl)); }),
                      x_true, 1e-3, 1e-3));
    EXPECT_TRUE(close(run([&](auto ps) {
                        return std::make_unique<optim::SGD>(ps, optim::SGDOptions(0.05).momentum(0.9).impl(impl));
                      }),
                      x_true, 1e-3, 1e-3));
    EXPECT_TRUE(close(run([&](auto ps) {
                        return std::make_unique<optim::RMSprop>(ps, optim::RMSpropOptions(0.01).impl(impl));
                      }),
                      x_true, 2e-2, 2e-2));
  }
}

TEST(Optim, ZeroGradSetsToNone) {
  Tensor p = randn({3}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  p.sum().backward();
  ASSERT_TRUE(p.grad().defined());
  opt.zero_grad(false);
  ASSERT_TRUE(p.grad().defined());
  EXPECT_TRUE(close(p.grad(), zeros({3})));
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
  opt.step();  // no gradient: nothing moves, no state
  EXPECT_FALSE(opt.has_state(p));
}

TEST(Optim, ParamGroupsAndLr) {
  Tensor a = ones({2}).requires_grad_(), b = ones({2}).requires_grad_();
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(1.0));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.1);
  EXPECT_DOUBLE_EQ(opt.param_groups()[1].lr(), 1.0);
  a.mutable_grad() = ones({2});
  b.mutable_grad() = ones({2});
  opt.step();
  EXPECT_TRUE(close(a, full({2}, 0.9)));
  EXPECT_TRUE(close(b, zeros({2})));
  Tensor c = ones({1}).requires_grad_();
  opt.add_param_group(optim::OptimizerParamGroup({c}));
  EXPECT_EQ(opt.size(), 3u);
  EXPECT_DOUBLE_EQ(opt.param_groups()[2].lr(), 0.1);
}

TEST(Optim, StateDictRoundTrip) {
  for (optim::Impl impl : {optim::Impl::ForLoop, optim::Impl::Fused}) {
    const std::vector<Tensor> init = make_params(kFloat);
    std::vector<Tensor> pa = clone_params(init), pb = clone_params(init);
    optim::Adam a(pa, optim::AdamOptions(1e-2).amsgrad(true).impl(impl));
    manual_seed(5);
    auto grads = [&](std::vector<Tensor>& ps) {
      for (Tensor& p : ps) p.mutable_grad() = randn(p.sizes());
    };
    for (int i = 0; i < 5; ++i) {
      grads(pa);
      a.step();
    }
    optim::StateDict sd = a.state_dict();
    EXPECT_TRUE(sd.count("state.0.exp_avg"));
    EXPECT_TRUE(sd.count("state.3.max_exp_avg_sq"));
    EXPECT_EQ(sd.at("state.1.step").item<double>(), 5.0);
    EXPECT_DOUBLE_EQ(sd.at("param_groups.0.lr").item<double>(), 1e-2);
    for (size_t k = 0; k < pa.size(); ++k) pb[k].detach().copy_(pa[k].detach());
    optim::Adam b(pb, optim::AdamOptions(0.5));
    b.load_state_dict(sd);
    EXPECT_DOUBLE_EQ(b.param_groups()[0].lr(), 1e-2);
    for (int i = 0; i < 5; ++i) {
      manual_seed(100 + i);
      grads(pa);
      manual_seed(100 + i);
      grads(pb);
      a.step();
      b.step();
    }
    for (size_t k = 0; k < pa.size(); ++k) EXPECT_TRUE(pa[k].equal(pb[k])) << "parameter " << k;
    // a mismatched optimizer is refused
    optim::Adam c(std::vector<Tensor>{pb[0]}, optim::AdamOptions());
    expect_error([&] { c.load_state_dict(sd); }, {"[Adam]", "load_state_dict", "parameters"});
  }
}

TEST(Optim, Errors) {
  Tensor p = randn({2}).requires_grad_();
  expect_error([&] { optim::Adam({p}, optim::AdamOptions(-1)); }, {"[Adam]", "learning rate", "-1"});
  expect_error([&] { optim::Adam({p}, optim::AdamOptions().betas({0.9, 1.0})); }, {"[Adam]", "beta2", "[0, 1)"});
  expect_error([&] { optim::AdamW({p}, optim::AdamWOptions().eps(-1e-8)); }, {"[AdamW]", "epsilon"});
  expect_error([&] { optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)); }, {"[SGD]", "nesterov"});
  expect_error([&] { optim::RMSprop({p}, optim::RMSpropOptions().momentum(-0.5)); }, {"[RMSprop]", "momentum"});
  Tensor q = randn({2});
  expect_error([&] { optim::SGD({p, q}, optim::SGDOptions(0.1)); },
               {"[SGD]", "parameter 1", "does not require grad"});
  expect_error([&] { optim::SGD({p, p}, optim::SGDOptions(0.1)); }, {"[SGD]", "more than once"});
  Tensor nl = p * 2;
  expect_error([&] { optim::SGD({nl}, optim::SGDOptions(0.1)); }, {"[SGD]", "non-leaf"});
  optim::Adam ok({p});
  p.mutable_grad() = randn({3});
  expect_error([&] { ok.step(); }, {"[Adam]", "gradient", "shape"});
}

TEST(Optim, ClosureAndVersion) {
  Tensor p = ones({2}).requires_grad_();
  optim::SGD opt({p}, optim::SGDOptions(0.5));
  const uint32_t v = p._version();
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = p.square().sum();
    l.backward();
    return l;
  });
  EXPECT_DOUBLE_EQ(loss.item<double>(), 2.0);
  EXPECT_TRUE(close(p, zeros({2})));
  EXPECT_GT(p._version(), v);
}

// ---- schedulers -------------------------------------------------------------------------

struct SchedFixture {
  Tensor p = ones({1}).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{p}, optim::SGDOptions(0.1)};
  double lr() { return opt.param_groups()[0].lr(); }
};

std::vector<double> run_sched(SchedFixture& f, optim::LRScheduler& s, int n) {
  std::vector<double> r{f.lr()};
  for (int i = 1; i < n; ++i) {
    s.step();
    r.push_back(f.lr());
  }
  return r;
}

void expect_seq(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "step " << i;
}

TEST(LRScheduler, StepMultiStepExponential) {
  {
    SchedFixture f;
    optim::StepLR s(f.opt, 2, 0.5);
    expect_seq(run_sched(f, s, 6), {0.1, 0.1, 0.05, 0.05, 0.025, 0.025});
  }
  {
    SchedFixture f;
    optim::MultiStepLR s(f.opt, {1, 3}, 0.1);
    expect_seq(run_sched(f, s, 5), {0.1, 0.01, 0.01, 0.001, 0.001});
  }
  {
    SchedFixture f;
    optim::ExponentialLR s(f.opt, 0.9);
    expect_seq(run_sched(f, s, 4), {0.1, 0.09, 0.081, 0.0729});
    EXPECT_NEAR(s.get_last_lr()[0], 0.0729, 1e-12);
  }
}

TEST(LRScheduler, CosineAndLinear) {
  {
    SchedFixture f;
    optim::CosineAnnealingLR s(f.opt, 4, 0.0);
    std::vector<double> want;
    for (int e = 0; e < 6; ++e) want.push_back(0.05 * (1 + std::cos(std::numbers::pi * e / 4)));
    expect_seq(run_sched(f, s, 6), want);
  }
  {
    SchedFixture f;
    optim::LinearLR s(f.opt, 0.25, 1.0, 3);
    expect_seq(run_sched(f, s, 5), {0.025, 0.05, 0.075, 0.1, 0.1});
  }
}

// Values from torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0,
// total_steps=10, cycle_momentum=False) (pct_start 0.3: warm-up ends at step 2).
TEST(LRScheduler, OneCycle) {
  SchedFixture f;
  optim::OneCycleLR s(f.opt, 1.0, 10);
  auto got = run_sched(f, s, 11);
  const double init = 1.0 / 25, minlr = init / 1e4;
  std::vector<double> want;
  auto cos_anneal = [](double a, double b, double pct) { return b + (a - b) / 2 * (std::cos(std::numbers::pi * pct) + 1); };
  for (int e = 0; e <= 10; ++e) {
    if (e <= 2) want.push_back(cos_anneal(init, 1.0, e / 2.0));
    else want.push_back(cos_anneal(1.0, minlr, (e - 2) / 7.0));
  }
  expect_seq(got, want);
  EXPECT_NEAR(got[0], 0.04, 1e-12);
  EXPECT_NEAR(got[2], 1.0, 1e-12);
  EXPECT_NEAR(got[9], 4e-6, 1e-12);
  expect_error([&] { s.step(); }, {"[OneCycleLR]", "total_steps"});
}

// LinearLR warm-up for 3 steps then cosine decay, as PyTorch's SequentialLR.
TEST(LRScheduler, SequentialWarmupThenDecay) {
  SchedFixture f;
  auto warm = std::make_shared<optim::LinearLR>(f.opt, 0.1, 1.0, 3);
  auto decay = std::make_shared<optim::ExponentialLR>(f.opt, 0.5);
  optim::SequentialLR s(f.opt, {warm, decay}, {3});
  expect_seq(run_sched(f, s, 7), {0.01, 0.04, 0.07, 0.1, 0.05, 0.025, 0.0125});
}

}  // namespace
