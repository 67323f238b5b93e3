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
  optim::OneCycleLR s(f.opt, 1.0, 10, optim::OneCycleLROptions().cycle_momentum(false));
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
  // without cycle_momentum the momentum is left alone
  EXPECT_EQ(static_cast<const optim::SGDOptions&>(f.opt.param_groups()[0].options()).momentum(), 0.0);
}

// LinearLR warm-up for 3 steps then cosine decay, as PyTorch's SequentialLR.
TEST(LRScheduler, SequentialWarmupThenDecay) {
  SchedFixture f;
  auto warm = std::make_shared<optim::LinearLR>(f.opt, 0.1, 1.0, 3);
  auto decay = std::make_shared<optim::ExponentialLR>(f.opt, 0.5);
  optim::SequentialLR s(f.opt, {warm, decay}, {3});
  expect_seq(run_sched(f, s, 7), {0.01, 0.04, 0.07, 0.1, 0.05, 0.025, 0.0125});
}


// ---- schedulers as PyTorch 2.15 ----------------------------------------------------------
// Expected values: torch 2.15.0's doubles, printed by
// tests/optim/make_lr_scheduler_reference.py (repr: they read back exactly).
// step() chains from the groups' current lr (PyTorch's get_lr), step(epoch)
// uses the closed form; OneCycleLR also cycles the momentum.

using Seq = std::vector<std::vector<double>>;  // [group][step]
using GroupValue = std::function<double(const optim::OptimizerParamGroup&)>;

double lr_of(const optim::OptimizerParamGroup& g) { return g.lr(); }
/// The option OneCycleLR cycles: beta1 (Adam, AdamW) or momentum (SGD, RMSprop).
double momentum_of(const optim::OptimizerParamGroup& g) {
  double m = -1;
  for (const auto& [name, v] : g.options().values())
    if (name == "beta1" || (name == "momentum" && m < 0)) m = v;
  return m;
}

/// An optimizer with two groups of one parameter each, lr 0.1 and 0.05.
template <class Opt, class Options>
std::unique_ptr<optim::Optimizer> two_groups(const Options& defaults) {
  Options a = defaults, b = defaults;
  a.lr(0.1);
  b.lr(0.05);
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{ones({1}).requires_grad_()}, std::make_unique<Options>(a));
  groups.emplace_back(std::vector<Tensor>{ones({1}).requires_grad_()}, std::make_unique<Options>(b));
  return std::make_unique<Opt>(std::move(groups), defaults);
}
std::unique_ptr<optim::Optimizer> two_sgd() { return two_groups<optim::SGD>(optim::SGDOptions(0.1)); }

/// Each group's value now and after each of n - 1 calls of step(i).
Seq record(const optim::Optimizer& opt, int n, const std::function<void(int)>& step, const GroupValue& get = lr_of) {
  Seq r(opt.param_groups().size());
  for (int i = 0; i < n; ++i) {
    if (i > 0) step(i);
    for (size_t g = 0; g < r.size(); ++g) r[g].push_back(get(opt.param_groups()[g]));
  }
  return r;
}
Seq record(optim::LRScheduler& s, const optim::Optimizer& opt, int n, const GroupValue& get = lr_of) {
  return record(opt, n, [&](int) { s.step(); }, get);
}

/// Equal to PyTorch's doubles within 4 ulps (EXPECT_DOUBLE_EQ).
void expect_torch(const Seq& got, const Seq& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t g = 0; g < got.size(); ++g) {
    ASSERT_EQ(got[g].size(), want[g].size()) << "group " << g;
    for (size_t i = 0; i < got[g].size(); ++i)
      EXPECT_DOUBLE_EQ(got[g][i], want[g][i]) << "group " << g << " step " << i;
  }
}

TEST(LRScheduler, EachAloneAsTorch) {
  {
    auto opt = two_sgd();
    optim::StepLR s(*opt, 3, 0.5);
    // torch StepLR(opt, 3, 0.5)
    expect_torch(record(s, *opt, 12), Seq{{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125}, {0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625, 0.00625}});
  }
  {
    auto opt = two_sgd();
    optim::MultiStepLR s(*opt, {2, 5, 5, 9}, 0.3);  // 5 twice: gamma^2 there
    // torch MultiStepLR(opt, [2, 5, 5, 9], 0.3)
    expect_torch(record(s, *opt, 12), Seq{{0.1, 0.1, 0.03, 0.03, 0.03, 0.0026999999999999997, 0.0026999999999999997, 0.0026999999999999997, 0.0026999999999999997, 0.0008099999999999998, 0.0008099999999999998, 0.0008099999999999998}, {0.05, 0.05, 0.015, 0.015, 0.015, 0.0013499999999999999, 0.0013499999999999999, 0.0013499999999999999, 0.0013499999999999999, 0.0004049999999999999, 0.0004049999999999999, 0.0004049999999999999}});
  }
  {
    auto opt = two_sgd();
    optim::ExponentialLR s(*opt, 0.9);
    // torch ExponentialLR(opt, 0.9): lr * 0.9 each step (not base * 0.9^t)
    expect_torch(record(s, *opt, 12), Seq{{0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002, 0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024, 0.03874204890000002, 0.03486784401000002, 0.03138105960900001}, {0.05, 0.045000000000000005, 0.04050000000000001, 0.03645000000000001, 0.03280500000000001, 0.02952450000000001, 0.02657205000000001, 0.02391484500000001, 0.021523360500000012, 0.01937102445000001, 0.01743392200500001, 0.015690529804500006}});
    EXPECT_DOUBLE_EQ(s.get_last_lr()[1], 0.015690529804500006);
  }
  {
    auto opt = two_sgd();
    optim::CosineAnnealingLR s(*opt, 5, 0.001);
    // torch CosineAnnealingLR(opt, 5, 0.001): the recursive form, past T_max too
    // (step 6 = T_max + 1 is its special case)
    expect_torch(record(s, *opt, 12), Seq{{0.1, 0.0905463412215599, 0.06579634122155989, 0.035203658778440096, 0.010453658778440105, 0.001, 0.010453658778440102, 0.03520365877844012, 0.06579634122155993, 0.09054634122155995, 0.10000000000000005, 0.09054634122155998}, {0.05, 0.045320916362186214, 0.03307091636218621, 0.017929083637813786, 0.005679083637813789, 0.001, 0.005679083637813788, 0.017929083637813797, 0.03307091636218623, 0.04532091636218624, 0.05000000000000003, 0.045320916362186256}});
  }
  {
    auto opt = two_sgd();
    optim::LinearLR s(*opt, 0.25, 1.0, 4);
    // torch LinearLR(opt, 0.25, 1.0, 4): the ratio form (0.1 ends as 0.10000000000000002)
    expect_torch(record(s, *opt, 12), Seq{{0.025, 0.043750000000000004, 0.06250000000000001, 0.08125000000000002, 0.10000000000000002, 0.10000000000000002, 0.10000000000000002, 0.10000000000000002, 0.10000000000000002, 0.10000000000000002, 0.10000000000000002, 0.10000000000000002}, {0.0125, 0.021875000000000002, 0.03125000000000001, 0.04062500000000001, 0.05000000000000001, 0.05000000000000001, 0.05000000000000001, 0.05000000000000001, 0.05000000000000001, 0.05000000000000001, 0.05000000000000001, 0.05000000000000001}});
  }
  {
    auto opt = two_sgd();
    optim::LinearLR s(*opt, 1.0, 0.1, 5);
    // torch LinearLR(opt, 1.0, 0.1, 5)
    expect_torch(record(s, *opt, 12), Seq{{0.1, 0.08200000000000002, 0.06400000000000002, 0.04600000000000001, 0.02800000000000001, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002}, {0.05, 0.04100000000000001, 0.03200000000000001, 0.023000000000000007, 0.014000000000000005, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001, 0.005000000000000001}});
  }
}

// step(epoch) is PyTorch's closed form from the initial lrs (after two step()s).
TEST(LRScheduler, StepEpochClosedFormAsTorch) {
  const std::vector<int64_t> epochs{3, 7, 2, 10};
  auto jump = [&](optim::LRScheduler& s, const optim::Optimizer& opt) {
    s.step();
    s.step();
    return record(opt, 5, [&](int i) { s.step(epochs[size_t(i - 1)]); });
  };
  auto drop_first = [](Seq s) {
    for (auto& v : s) v.erase(v.begin());
    return s;
  };
  {
    auto opt = two_sgd();
    optim::StepLR s(*opt, 3, 0.5);
    // torch StepLR(opt, 3, 0.5); step(); step(); step(3), step(7), step(2), step(10)
    expect_torch(drop_first(jump(s, *opt)), Seq{{0.05, 0.025, 0.1, 0.0125}, {0.025, 0.0125, 0.05, 0.00625}});
  }
  {
    auto opt = two_sgd();
    optim::MultiStepLR s(*opt, {2, 5, 5, 9}, 0.3);
    // torch MultiStepLR(opt, [2, 5, 5, 9], 0.3), same steps
    expect_torch(drop_first(jump(s, *opt)), Seq{{0.03, 0.0026999999999999997, 0.03, 0.00081}, {0.015, 0.0013499999999999999, 0.015, 0.000405}});
  }
  {
    auto opt = two_sgd();
    optim::ExponentialLR s(*opt, 0.9);
    // torch ExponentialLR(opt, 0.9), same steps
    expect_torch(drop_first(jump(s, *opt)), Seq{{0.0729, 0.04782969000000001, 0.08100000000000002, 0.03486784401000001}, {0.03645, 0.023914845000000004, 0.04050000000000001, 0.017433922005000005}});
  }
  {
    auto opt = two_sgd();
    optim::CosineAnnealingLR s(*opt, 5, 0.001);
    // torch CosineAnnealingLR(opt, 5, 0.001), same steps
    expect_torch(drop_first(jump(s, *opt)), Seq{{0.03520365877844011, 0.035203658778440096, 0.0657963412215599, 0.1}, {0.017929083637813793, 0.017929083637813786, 0.03307091636218622, 0.05}});
    EXPECT_EQ(s.last_epoch(), 10);
  }
  {
    auto opt = two_sgd();
    optim::LinearLR s(*opt, 0.25, 1.0, 4);
    // torch LinearLR(opt, 0.25, 1.0, 4), same steps
    expect_torch(drop_first(jump(s, *opt)), Seq{{0.08125, 0.1, 0.0625, 0.1}, {0.040625, 0.05, 0.03125, 0.05}});
  }
}

// Two schedulers stepped each epoch compose, as in PyTorch (brisk used to
// give 1, 0.1, 0.1, 0.01, ...: the last one stepped won).
TEST(LRScheduler, ChainedAsTorch) {
  {
    Tensor p = ones({1}).requires_grad_();
    optim::SGD opt({p}, optim::SGDOptions(1.0));
    optim::ExponentialLR a(opt, 0.9);
    optim::StepLR b(opt, 2, 0.1);
    // torch: ExponentialLR(opt, 0.9), StepLR(opt, 2, 0.1), a.step(); b.step() each epoch
    expect_torch(record(opt, 8, [&](int) { a.step(); b.step(); }), Seq{{1.0, 0.9, 0.08100000000000002, 0.07290000000000002, 0.006561000000000002, 0.005904900000000002, 0.0005314410000000002, 0.0004782969000000002}});
    EXPECT_DOUBLE_EQ(a.get_last_lr()[0], 0.0004782969000000002);  // b's lr after a's step
    EXPECT_DOUBLE_EQ(b.get_last_lr()[0], 0.0004782969000000002);
  }
  {
    auto opt = two_sgd();
    optim::LinearLR a(*opt, 0.5, 1.0, 3);
    optim::CosineAnnealingLR b(*opt, 8);  // its step 0 keeps LinearLR's 0.05
    // torch: LinearLR(opt, 0.5, 1.0, 3), CosineAnnealingLR(opt, 8), both stepped
    expect_torch(record(*opt, 12, [&](int) { a.step(); b.step(); }), Seq{{0.05, 0.06412931775037622, 0.07112944921610614, 0.06913417161825448, 0.04999999999999999, 0.030865828381745508, 0.014644660940672623, 0.0038060233744356626, 0.0, 0.0038060233744356634, 0.014644660940672639, 0.030865828381745536}, {0.025, 0.03206465887518811, 0.03556472460805307, 0.03456708580912724, 0.024999999999999994, 0.015432914190872754, 0.007322330470336312, 0.0019030116872178313, 0.0, 0.0019030116872178317, 0.0073223304703363195, 0.015432914190872768}});
  }
}

// An lr set by hand between steps is kept (scaled on from there), as in PyTorch.
TEST(LRScheduler, ManualLrChangeKeptAsTorch) {
  auto run = [](optim::Optimizer& opt, optim::LRScheduler& s) {
    return record(opt, 10, [&](int i) {
      s.step();
      if (i == 3)
        for (auto& g : opt.param_groups()) g.set_lr(g.lr() * 2);
    });
  };
  {
    auto opt = two_sgd();
    optim::ExponentialLR s(*opt, 0.9);
    // torch ExponentialLR(opt, 0.9); every group's lr doubled after step 3
    expect_torch(run(*opt, s), Seq{{0.1, 0.09000000000000001, 0.08100000000000002, 0.14580000000000004, 0.13122000000000003, 0.11809800000000004, 0.10628820000000004, 0.09565938000000004, 0.08609344200000005, 0.07748409780000004}, {0.05, 0.045000000000000005, 0.04050000000000001, 0.07290000000000002, 0.06561000000000002, 0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024, 0.03874204890000002}});
  }
  {
    auto opt = two_sgd();
    optim::CosineAnnealingLR s(*opt, 6);
    // torch CosineAnnealingLR(opt, 6); doubled after step 3
    expect_torch(run(*opt, s), Seq{{0.1, 0.09330127018922195, 0.07500000000000001, 0.1, 0.050000000000000024, 0.01339745962155613, 0.0, 0.006698729810778065, 0.025, 0.05000000000000004}, {0.05, 0.046650635094610975, 0.037500000000000006, 0.05, 0.025000000000000012, 0.006698729810778065, 0.0, 0.0033493649053890325, 0.0125, 0.02500000000000002}});
  }
  {
    auto opt = two_sgd();
    optim::LinearLR s(*opt, 0.5, 1.0, 4);
    // torch LinearLR(opt, 0.5, 1.0, 4); doubled after step 3
    expect_torch(run(*opt, s), Seq{{0.05, 0.0625, 0.075, 0.17500000000000002, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}, {0.025, 0.03125, 0.0375, 0.08750000000000001, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1}});
  }
  {
    auto opt = two_sgd();
    optim::StepLR s(*opt, 2, 0.5);
    // torch StepLR(opt, 2, 0.5); doubled after step 3
    expect_torch(run(*opt, s), Seq{{0.1, 0.1, 0.05, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125, 0.0125}, {0.05, 0.05, 0.025, 0.05, 0.025, 0.025, 0.0125, 0.0125, 0.00625, 0.00625}});
  }
  {
    auto opt = two_sgd();
    optim::MultiStepLR s(*opt, {4, 6}, 0.1);
    // torch MultiStepLR(opt, [4, 6], 0.1); doubled after step 3
    expect_torch(run(*opt, s), Seq{{0.1, 0.1, 0.1, 0.2, 0.020000000000000004, 0.020000000000000004, 0.0020000000000000005, 0.0020000000000000005, 0.0020000000000000005, 0.0020000000000000005}, {0.05, 0.05, 0.05, 0.1, 0.010000000000000002, 0.010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002, 0.0010000000000000002}});
  }
}

TEST(LRScheduler, SequentialAsTorch) {
  {
    auto opt = two_sgd();
    auto warm = std::make_shared<optim::LinearLR>(*opt, 0.1, 1.0, 3);
    auto cos = std::make_shared<optim::CosineAnnealingLR>(*opt, 6, 0.001);
    optim::SequentialLR s(*opt, {warm, cos}, {3});
    // torch SequentialLR(opt, [LinearLR(opt, 0.1, 1.0, 3), CosineAnnealingLR(opt, 6, 0.001)], [3])
    expect_torch(record(s, *opt, 14), Seq{{0.010000000000000002, 0.04, 0.07, 0.1, 0.09336825748732973, 0.07525000000000001, 0.0505, 0.025750000000000012, 0.007631742512670284, 0.001, 0.007631742512670284, 0.025750000000000002, 0.05050000000000004, 0.07525000000000008}, {0.005000000000000001, 0.02, 0.035, 0.05, 0.046717622392718754, 0.037750000000000006, 0.025500000000000002, 0.013250000000000005, 0.004282377607281252, 0.001, 0.004282377607281252, 0.013250000000000001, 0.02550000000000002, 0.03775000000000004}});
    // torch: last_epoch 2, 10, 13
    EXPECT_EQ(warm->last_epoch(), 2);
    EXPECT_EQ(cos->last_epoch(), 10);
    EXPECT_EQ(s.last_epoch(), 13);
    EXPECT_DOUBLE_EQ(s.get_last_lr()[0], 0.07525000000000008);
  }
  {
    auto opt = two_sgd();
    auto a = std::make_shared<optim::ExponentialLR>(*opt, 0.8);
    auto b = std::make_shared<optim::StepLR>(*opt, 2, 0.5);
    auto c = std::make_shared<optim::LinearLR>(*opt, 0.5, 1.0, 2);
    optim::SequentialLR s(*opt, {a, b, c}, {3, 7});
    // torch SequentialLR(opt, [ExponentialLR(opt, 0.8), StepLR(opt, 2, 0.5), LinearLR(opt, 0.5, 1.0, 2)], [3, 7])
    expect_torch(record(s, *opt, 12), Seq{{0.1, 0.08000000000000002, 0.06400000000000002, 0.1, 0.1, 0.05, 0.05, 0.05, 0.07500000000000001, 0.1, 0.1, 0.1}, {0.05, 0.04000000000000001, 0.03200000000000001, 0.05, 0.05, 0.025, 0.025, 0.025, 0.037500000000000006, 0.05, 0.05, 0.05}});
  }
  {
    auto opt = two_sgd();
    auto a = std::make_shared<optim::LinearLR>(*opt, 0.2, 1.0, 2);
    auto b = std::make_shared<optim::ExponentialLR>(*opt, 0.7);
    auto inner = std::make_shared<optim::SequentialLR>(*opt, std::vector<std::shared_ptr<optim::LRScheduler>>{a, b},
                                                       std::vector<int64_t>{2});
    auto c = std::make_shared<optim::CosineAnnealingLR>(*opt, 4);
    optim::SequentialLR s(*opt, {inner, c}, {5});
    // torch: SequentialLR(opt, [SequentialLR(opt, [LinearLR(opt, 0.2, 1.0, 2),
    // ExponentialLR(opt, 0.7)], [2]), CosineAnnealingLR(opt, 4)], [5]) (PyTorch's
    // nesting: the inner one starts one step ahead, at its ExponentialLR)
    expect_torch(record(s, *opt, 12), Seq{{0.020000000000000004, 0.1, 0.06999999999999999, 0.048999999999999995, 0.0343, 0.1, 0.08535533905932738, 0.05, 0.014644660940672627, 0.0, 0.014644660940672622, 0.05000000000000001}, {0.010000000000000002, 0.05, 0.034999999999999996, 0.024499999999999997, 0.01715, 0.05, 0.04267766952966369, 0.025, 0.0073223304703363135, 0.0, 0.007322330470336311, 0.025000000000000005}});
  }
}

TEST(LRScheduler, OneCycleMomentumAsTorch) {
  {
    auto opt = two_groups<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9));
    optim::OneCycleLR s(*opt, 1.0, 12);
    // torch OneCycleLR(SGD(momentum=0.9), max_lr=1.0, total_steps=12): lr, then momentum
    // (0.95 -> 0.85 over the warm-up, back to 0.95 at step 11)
    const Seq lr = Seq{{0.040000000000000036, 0.3497896542195831, 0.8792851591221287, 0.9944154354509117, 0.9330129698414117, 0.811745653949763, 0.6473789976951033, 0.46263710266697505, 0.28306099820869923, 0.1334775301888306, 0.03456698742539522, 4e-06, 0.034566987425395164}, {0.040000000000000036, 0.3497896542195831, 0.8792851591221287, 0.9944154354509117, 0.9330129698414117, 0.811745653949763, 0.6473789976951033, 0.46263710266697505, 0.28306099820869923, 0.1334775301888306, 0.03456698742539522, 4e-06, 0.034566987425395164}};
    const Seq momentum = Seq{{0.95, 0.9177302443521267, 0.8625744625914449, 0.8505584586887436, 0.856698729810778, 0.8688255099070633, 0.8852622412794547, 0.9037365046793212, 0.9216941869558779, 0.9366525935914912, 0.9465436874322102, 0.95, 0.9465436874322102}, {0.95, 0.9177302443521267, 0.8625744625914449, 0.8505584586887436, 0.856698729810778, 0.8688255099070633, 0.8852622412794547, 0.9037365046793212, 0.9216941869558779, 0.9366525935914912, 0.9465436874322102, 0.95, 0.9465436874322102}};
    auto opt2 = two_groups<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9));
    optim::OneCycleLR s2(*opt2, 1.0, 12);
    expect_torch(record(s, *opt, 13), lr);
    expect_torch(record(s2, *opt2, 13, momentum_of), momentum);
    expect_error([&] { s.step(); }, {"[OneCycleLR]", "total_steps"});
  }
  {
    auto opt = two_groups<optim::Adam>(optim::AdamOptions(0.1).betas({0.9, 0.99}));
    auto opt2 = two_groups<optim::Adam>(optim::AdamOptions(0.1).betas({0.9, 0.99}));
    const auto o = optim::OneCycleLROptions().pct_start(0.25).three_phase(true);
    optim::OneCycleLR s(*opt, 0.5, 12, o), s2(*opt2, 0.5, 12, o);
    // torch OneCycleLR(Adam(betas=(0.9, 0.99)), max_lr=0.5, total_steps=12,
    // pct_start=0.25, three_phase=True): lr, then betas[0]; betas[1] stays 0.99
    expect_torch(record(s, *opt, 13), Seq{{0.020000000000000018, 0.26, 0.5, 0.26, 0.02, 0.019009787710156288, 0.016235274528785478, 0.012225986818629188, 0.007776013181370814, 0.0037667254712145243, 0.0009922122898437123, 2e-06, 0.000992212289843711}, {0.020000000000000018, 0.26, 0.5, 0.26, 0.02, 0.019009787710156288, 0.016235274528785478, 0.012225986818629188, 0.007776013181370814, 0.0037667254712145243, 0.0009922122898437123, 2e-06, 0.000992212289843711}});
    expect_torch(record(s2, *opt2, 13, momentum_of), Seq{{0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}, {0.95, 0.8999999999999999, 0.85, 0.8999999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95}});
    for (const auto& g : opt2->param_groups())
      EXPECT_EQ(std::get<1>(static_cast<const optim::AdamOptions&>(g.options()).betas()), 0.99);
  }
  {
    auto opt = two_groups<optim::AdamW>(optim::AdamWOptions(0.1));
    auto opt2 = two_groups<optim::AdamW>(optim::AdamWOptions(0.1));
    const auto o = optim::OneCycleLROptions()
                       .anneal_cos(false)
                       .base_momentum(0.8)
                       .max_momentum(0.9)
                       .div_factor(10)
                       .final_div_factor(100);
    optim::OneCycleLR s(*opt, 2.0, 10, o), s2(*opt2, 2.0, 10, o);
    // torch OneCycleLR(AdamW, max_lr=2.0, total_steps=10, anneal_strategy="linear",
    // base_momentum=0.8, max_momentum=0.9, div_factor=10, final_div_factor=100): lr, betas[0]
    expect_torch(record(s, *opt, 11), Seq{{0.2, 1.1, 2.0, 1.7145714285714286, 1.4291428571428573, 1.1437142857142857, 0.8582857142857143, 0.5728571428571427, 0.2874285714285716, 0.0020000000000000018, -0.28342857142857136}, {0.2, 1.1, 2.0, 1.7145714285714286, 1.4291428571428573, 1.1437142857142857, 0.8582857142857143, 0.5728571428571427, 0.2874285714285716, 0.0020000000000000018, -0.28342857142857136}});
    expect_torch(record(s2, *opt2, 11, momentum_of), Seq{{0.9, 0.8500000000000001, 0.8, 0.8142857142857143, 0.8285714285714286, 0.8428571428571429, 0.8571428571428572, 0.8714285714285714, 0.8857142857142857, 0.9, 0.9142857142857143}, {0.9, 0.8500000000000001, 0.8, 0.8142857142857143, 0.8285714285714286, 0.8428571428571429, 0.8571428571428572, 0.8714285714285714, 0.8857142857142857, 0.9, 0.9142857142857143}});
  }
  {
    auto make = [] {
      return std::make_unique<optim::RMSprop>(std::vector<Tensor>{ones({1}).requires_grad_()},
                                              optim::RMSpropOptions(0.1));
    };
    auto opt = make(), opt2 = make();
    optim::OneCycleLR s(*opt, 0.3, 8), s2(*opt2, 0.3, 8);
    // torch OneCycleLR(RMSprop(lr=0.1), max_lr=0.3, total_steps=8): lr, momentum
    expect_torch(record(s, *opt, 9), Seq{{0.01200000000000001, 0.2457825314676576, 0.29158253321625693, 0.24352369618492892, 0.1667952042368105, 0.08491829946260977, 0.02299247815027692, 1.2e-06, 0.022992478150276902}});
    expect_torch(record(s2, *opt2, 9, momentum_of), Seq{{0.95, 0.8688255099070633, 0.8528058334845816, 0.8688255099070633, 0.8944017761948346, 0.9216941869558779, 0.9423362099614142, 0.95, 0.9423362099614142}});
  }
  {
    auto make = [] {
      return std::make_unique<optim::SGD>(std::vector<Tensor>{ones({1}).requires_grad_()},
                                          optim::SGDOptions(0.1).momentum(0.5));
    };
    auto opt = make(), opt2 = make();
    auto seq = [](optim::Optimizer& o) {
      auto w = std::make_shared<optim::LinearLR>(o, 0.5, 1.0, 2);
      auto c = std::make_shared<optim::OneCycleLR>(o, 1.0, 6);
      return std::make_unique<optim::SequentialLR>(o, std::vector<std::shared_ptr<optim::LRScheduler>>{w, c},
                                                   std::vector<int64_t>{3});
    };
    auto s = seq(*opt), s2 = seq(*opt2);
    // torch SequentialLR(SGD(lr=0.1, momentum=0.5), [LinearLR(opt, 0.5, 1.0, 2),
    // OneCycleLR(opt, max_lr=1.0, total_steps=6)], [3]): OneCycleLR made the
    // initial lr 0.04 and the momentum 0.95 before the warm-up; lr, momentum
    expect_torch(record(*s, *opt, 10), Seq{{0.02, 0.03, 0.039999999999999994, 0.040000000000000036, 0.9944154354509117, 0.811745653949763, 0.46263710266697505, 0.1334775301888306, 4e-06, 0.13347753018883055}});
    expect_torch(record(*s2, *opt2, 10, momentum_of), Seq{{0.95, 0.95, 0.95, 0.95, 0.8505584586887436, 0.8688255099070633, 0.9037365046793212, 0.9366525935914912, 0.95, 0.9366525935914912}});
  }
  {
    // torch: ValueError "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
    Tensor p = ones({1}).requires_grad_();
    optim::Adagrad opt({p}, optim::AdagradOptions(0.1));
    expect_error([&] { optim::OneCycleLR s(opt, 1.0, 10); }, {"[OneCycleLR]", "Adagrad", "momentum or beta1"});
    optim::OneCycleLR s(opt, 1.0, 10, optim::OneCycleLROptions().cycle_momentum(false));  // fine without
    EXPECT_DOUBLE_EQ(opt.param_groups()[0].lr(), 0.040000000000000036);
  }
}

}  // namespace
