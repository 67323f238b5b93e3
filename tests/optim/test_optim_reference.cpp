// Adagrad and LBFGS against PyTorch's trajectories (float64 numbers from
// tests/optim/make_optim_reference.py, PyTorch 2.15), and the libtorch
// optimizer API a ported program calls (param_groups, options casts,
// add_param_group, zero_grad, state, step(closure)).
#include <brisk/brisk.h>

#include <cmath>

#include "optim/optim_reference.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
namespace optim = brisk::optim;
namespace ref = optim_reference;

namespace {

Tensor from(const std::vector<double>& v, IntArrayRef shape) { return tensor(v, kDouble).view(shape); }

/// The values of `traj` after step `k` (`per_step` values per step).
Tensor slice_of(const std::vector<double>& traj, size_t k, size_t per_step) {
  std::vector<double> v(traj.begin() + long(k * per_step), traj.begin() + long((k + 1) * per_step));
  return tensor(v, kDouble);
}

// ---- Adagrad ------------------------------------------------------------------------

void run_adagrad(const char* name, optim::AdagradOptions o, bool maximize, const std::vector<double>& traj,
                 const std::vector<double>& sums, double step) {
  SCOPED_TRACE(name);
  const Tensor X = from(ref::kX, {8, 3}), Y = from(ref::kY, {8});
  for (optim::Impl impl : {optim::Impl::ForLoop, optim::Impl::Foreach, optim::Impl::Fused}) {
    SCOPED_TRACE(optim::impl_name(impl));
    Tensor w = from(ref::kW0, {3}).requires_grad_(), b = from(ref::kB0, {1}).requires_grad_();
    optim::Adagrad opt({w, b}, optim::AdagradOptions(o).maximize(maximize).impl(impl));
    // The state exists from construction on, as in PyTorch.
    ASSERT_TRUE(opt.has_state(w));
    EXPECT_TRUE(close(opt.state(w).sum(), full({3}, o.initial_accumulator_value(), kDouble)));
    const size_t steps = traj.size() / 4;
    for (size_t k = 0; k < steps; ++k) {
      opt.zero_grad();
      Tensor loss = ((X.matmul(w) + b - Y).pow(2)).mean() * (maximize ? -1.0 : 1.0);
      loss.backward();
      opt.step();
      Tensor got = cat({w.detach(), b.detach()});
      ASSERT_TRUE(close(got, slice_of(traj, k, 4), 1e-12, 1e-14)) << "after step " << k + 1;
    }
    EXPECT_TRUE(close(cat({opt.state(w).sum(), opt.state(b).sum()}), tensor(sums, kDouble), 1e-12, 1e-14));
    EXPECT_EQ(double(opt.state(w).step()), step);
  }
}

TEST(Adagrad, MatchesPyTorch) {
  run_adagrad("defaults", optim::AdagradOptions(), false, ref::kAdagrad_defaults, ref::kAdagrad_defaults_sum,
              ref::kAdagrad_defaults_step);
  run_adagrad("all_options",
              optim::AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.1).initial_accumulator_value(0.5).eps(1e-6),
              false, ref::kAdagrad_all_options, ref::kAdagrad_all_options_sum, ref::kAdagrad_all_options_step);
  run_adagrad("maximize", optim::AdagradOptions(0.05).weight_decay(0.01), true, ref::kAdagrad_maximize,
              ref::kAdagrad_maximize_sum, ref::kAdagrad_maximize_step);
}

TEST(Adagrad, DefaultsAndErrors) {
  optim::AdagradOptions o;
  EXPECT_EQ(o.lr(), 1e-2);
  EXPECT_EQ(o.lr_decay(), 0.0);
  EXPECT_EQ(o.weight_decay(), 0.0);
  EXPECT_EQ(o.initial_accumulator_value(), 0.0);
  EXPECT_EQ(o.eps(), 1e-10);
  Tensor p = ones({2}, kDouble).requires_grad_();
  expect_error([&] { optim::Adagrad({p}, optim::AdagradOptions(0.1).lr_decay(-1)); }, {"Adagrad", "lr_decay"});
  expect_error([&] { optim::Adagrad({p}, optim::AdagradOptions(-0.1)); }, {"Adagrad", "learning rate"});
  expect_error([&] { optim::Adagrad({p}, optim::AdagradOptions().initial_accumulator_value(-1)); },
               {"Adagrad", "initial_accumulator_value"});
}

TEST(Adagrad, EveryGroupStartsAtTheDefaultsAccumulator) {
  // torch.optim.Adagrad (and libtorch) fill every group's sum with the constructor's
  // initial_accumulator_value; a group's own value is not used. torch 2.15, p = q = ones(1):
  //   Adagrad([{'params': [p], 'initial_accumulator_value': 5.}, {'params': [q]}], lr=0.1,
  //           initial_accumulator_value=d); (p.sum() + q.sum()).backward(); step()
  //   d = 0: p, q = 0.8999999761581421; d = 5: p, q = 0.959175169467926
  for (double d : {0.0, 5.0}) {
    Tensor p = ones({1}).requires_grad_(), q = ones({1}).requires_grad_();
    std::vector<optim::OptimizerParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{p},
                        std::make_unique<optim::AdagradOptions>(optim::AdagradOptions(0.1).initial_accumulator_value(5.0)));
    groups.emplace_back(std::vector<Tensor>{q});
    optim::Adagrad opt(std::move(groups), optim::AdagradOptions(0.1).initial_accumulator_value(d));
    (p.sum() + q.sum()).backward();
    opt.step();
    const double want = d == 0 ? 0.8999999761581421 : 0.959175169467926;
    EXPECT_EQ(p.item<double>(), want) << d;
    EXPECT_EQ(q.item<double>(), want) << d;
  }
}

TEST(Adagrad, StateDictRoundTripContinuesTheTrajectory) {
  const Tensor X = from(ref::kX, {8, 3}), Y = from(ref::kY, {8});
  auto loss_of = [&](const Tensor& w, const Tensor& b) { return ((X.matmul(w) + b - Y).pow(2)).mean(); };
  const auto o = optim::AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.1).initial_accumulator_value(0.5).eps(1e-6);
  Tensor w = from(ref::kW0, {3}).requires_grad_(), b = from(ref::kB0, {1}).requires_grad_();
  optim::Adagrad a({w, b}, o);
  for (int k = 0; k < 3; ++k) {
    a.zero_grad();
    loss_of(w, b).backward();
    a.step();
  }
  optim::StateDict sd = a.state_dict();
  EXPECT_TRUE(sd.count("state.0.sum"));
  EXPECT_EQ(sd.at("state.0.step").item<double>(), 3.0);
  EXPECT_EQ(sd.at("param_groups.0.lr_decay").item<double>(), 0.05);
  // A fresh optimizer on copies of the parameters, loaded, continues as PyTorch's did.
  Tensor w2 = w.detach().clone().requires_grad_(), b2 = b.detach().clone().requires_grad_();
  optim::Adagrad c({w2, b2}, optim::AdagradOptions());
  c.load_state_dict(sd);
  EXPECT_EQ(static_cast<optim::AdagradOptions&>(c.param_groups()[0].options()).initial_accumulator_value(), 0.5);
  for (size_t k = 3; k < 8; ++k) {
    c.zero_grad();
    loss_of(w2, b2).backward();
    c.step();
    ASSERT_TRUE(close(cat({w2.detach(), b2.detach()}), slice_of(ref::kAdagrad_all_options, k, 4), 1e-12, 1e-14));
  }
}

// ---- LBFGS --------------------------------------------------------------------------

Tensor rosenbrock(const Tensor& x) {
  Tensor a = 1 - x[0], b = x[1] - x[0] * x[0];
  return a * a + 100 * b * b;
}

void run_rosen(const char* name, optim::LBFGSOptions o, const std::vector<double>& traj,
               const std::vector<double>& losses, const std::vector<double>& func_evals,
               const std::vector<double>& n_iter) {
  SCOPED_TRACE(name);
  Tensor x = tensor({-1.5, 2.0}, kDouble).requires_grad_();
  optim::LBFGS opt({x}, o);
  for (size_t k = 0; k < losses.size(); ++k) {
    Tensor loss = opt.step([&] {
      opt.zero_grad();
      Tensor f = rosenbrock(x);
      f.backward();
      return f;
    });
    // 1e-6, not 1e-9: the strong-Wolfe line search amplifies last-bit
    // differences (the ASan build does not contract a * b + c into FMA, the
    // release build does: 2.5e-9 apart after three steps).
    EXPECT_NEAR(loss.item<double>(), losses[k], 1e-6 * std::abs(losses[k]) + 1e-12) << "step " << k + 1;
    ASSERT_TRUE(close(x.detach(), slice_of(traj, k, 2), 1e-6, 1e-9)) << "after step " << k + 1;
    EXPECT_EQ(double(opt.lbfgs_state().func_evals), func_evals[k]) << "step " << k + 1;
    EXPECT_EQ(double(opt.lbfgs_state().n_iter), n_iter[k]) << "step " << k + 1;
  }
}

TEST(LBFGS, RosenbrockMatchesPyTorch) {
  run_rosen("fixed step", optim::LBFGSOptions(0.05).max_iter(20), ref::kLBFGS_rosen_fixed,
            ref::kLBFGS_rosen_fixed_loss, ref::kLBFGS_rosen_fixed_func_evals, ref::kLBFGS_rosen_fixed_n_iter);
  run_rosen("strong_wolfe", optim::LBFGSOptions(1).max_iter(20).line_search_fn("strong_wolfe"),
            ref::kLBFGS_rosen_wolfe, ref::kLBFGS_rosen_wolfe_loss, ref::kLBFGS_rosen_wolfe_func_evals,
            ref::kLBFGS_rosen_wolfe_n_iter);
  run_rosen("strong_wolfe, history 3", optim::LBFGSOptions(1).max_iter(10).history_size(3).line_search_fn("strong_wolfe"),
            ref::kLBFGS_rosen_wolfe_small_history, ref::kLBFGS_rosen_wolfe_small_history_loss,
            ref::kLBFGS_rosen_wolfe_small_history_func_evals, ref::kLBFGS_rosen_wolfe_small_history_n_iter);
  run_rosen("strong_wolfe, max_eval 9", optim::LBFGSOptions(1).max_iter(15).max_eval(9).line_search_fn("strong_wolfe"),
            ref::kLBFGS_rosen_wolfe_max_eval, ref::kLBFGS_rosen_wolfe_max_eval_loss,
            ref::kLBFGS_rosen_wolfe_max_eval_func_evals, ref::kLBFGS_rosen_wolfe_max_eval_n_iter);
}

void run_lsq(bool wolfe, const std::vector<double>& traj, const std::vector<double>& losses, double func_evals,
             double n_iter) {
  SCOPED_TRACE(wolfe ? "strong_wolfe" : "fixed step");
  const Tensor A = from(ref::kA, {5, 3}), T = from(ref::kT, {5, 2});
  Tensor W = tensor({0.1, -0.2, 0.3, 0.0, -0.1, 0.2}, kDouble).view({3, 2}).requires_grad_();
  Tensor c = tensor({0.0, 0.1}, kDouble).requires_grad_();
  auto o = optim::LBFGSOptions(wolfe ? 1.0 : 0.2).max_iter(5).history_size(4);
  if (wolfe) o.line_search_fn("strong_wolfe");
  optim::LBFGS opt({W, c}, o);
  auto closure = [&] {
    opt.zero_grad();
    Tensor f = (A.matmul(W) + c - T).pow(2).sum() + 0.1 * W.pow(2).sum();
    f.backward();
    return f;
  };
  for (size_t k = 0; k < losses.size(); ++k) {
    Tensor loss = opt.step(closure);
    EXPECT_NEAR(loss.item<double>(), losses[k], 1e-10 * std::abs(losses[k]));
    ASSERT_TRUE(close(cat({W.detach().flatten(), c.detach()}), slice_of(traj, k, 8), 1e-10, 1e-12))
        << "after step " << k + 1;
  }
  EXPECT_EQ(double(opt.lbfgs_state().func_evals), func_evals);
  EXPECT_EQ(double(opt.lbfgs_state().n_iter), n_iter);
}

TEST(LBFGS, TwoParametersMatchPyTorch) {
  run_lsq(false, ref::kLBFGS_lsq_fixed, ref::kLBFGS_lsq_fixed_loss, ref::kLBFGS_lsq_fixed_func_evals,
          ref::kLBFGS_lsq_fixed_n_iter);
  run_lsq(true, ref::kLBFGS_lsq_wolfe, ref::kLBFGS_lsq_wolfe_loss, ref::kLBFGS_lsq_wolfe_func_evals,
          ref::kLBFGS_lsq_wolfe_n_iter);
}

TEST(LBFGS, StateDictRoundTripContinuesTheTrajectory) {
  auto o = optim::LBFGSOptions(1).max_iter(10).history_size(3).line_search_fn("strong_wolfe");
  Tensor x = tensor({-1.5, 2.0}, kDouble).requires_grad_();
  optim::LBFGS a({x}, o);
  auto closure_for = [](optim::Optimizer& opt, const Tensor& p) {
    return [&opt, p] {
      opt.zero_grad();
      Tensor f = rosenbrock(p);
      f.backward();
      return f;
    };
  };
  a.step(closure_for(a, x));
  optim::StateDict sd = a.state_dict();
  EXPECT_EQ(sd.at("state.0.func_evals").item<double>(), 12.0);
  EXPECT_TRUE(sd.count("state.0.old_dirs.2"));
  EXPECT_EQ(sd.at("param_groups.0.line_search_fn").item<double>(), 1.0);
  EXPECT_EQ(sd.at("param_groups.0.max_eval").item<double>(), 12.0) << "max_iter * 5 / 4, fixed at construction";
  Tensor x2 = x.detach().clone().requires_grad_();
  optim::LBFGS b({x2}, optim::LBFGSOptions());
  b.load_state_dict(sd);
  EXPECT_EQ(static_cast<optim::LBFGSOptions&>(b.param_groups()[0].options()).line_search_fn(), "strong_wolfe");
  for (size_t k = 1; k < 3; ++k) {
    b.step(closure_for(b, x2));
    ASSERT_TRUE(close(x2.detach(), slice_of(ref::kLBFGS_rosen_wolfe_small_history, k, 2), 1e-6, 1e-9));
  }
  EXPECT_EQ(b.lbfgs_state().func_evals, 36);
  // A state dict from another parameter count is refused before anything changes.
  Tensor y = zeros({3}, kDouble).requires_grad_();
  optim::LBFGS c({y}, optim::LBFGSOptions());
  expect_error([&] { c.load_state_dict(sd); }, {"LBFGS", "load_state_dict"});
  EXPECT_EQ(c.lbfgs_state().func_evals, 0);
}

TEST(LBFGS, DefaultsAndErrors) {
  optim::LBFGSOptions o;
  EXPECT_EQ(o.lr(), 1.0);
  EXPECT_EQ(o.max_iter(), 20);
  EXPECT_FALSE(o.max_eval().has_value());
  EXPECT_EQ(o.tolerance_grad(), 1e-7);
  EXPECT_EQ(o.tolerance_change(), 1e-9);
  EXPECT_EQ(o.history_size(), 100);
  EXPECT_FALSE(o.line_search_fn().has_value());
  Tensor p = ones({2}, kDouble).requires_grad_(), q = ones({2}, kDouble).requires_grad_();
  optim::LBFGS opt({p});
  EXPECT_EQ(*static_cast<optim::LBFGSOptions&>(opt.param_groups()[0].options()).max_eval(), 25);
  expect_error([&] { opt.step(nullptr); }, {"LBFGS", "closure"});
  expect_error([&] { optim::LBFGS({p}, optim::LBFGSOptions().line_search_fn("backtracking")); },
               {"LBFGS", "backtracking", "strong_wolfe"});
  std::vector<optim::OptimizerParamGroup> groups{optim::OptimizerParamGroup({p}), optim::OptimizerParamGroup({q})};
  expect_error([&] { optim::LBFGS l(groups); }, {"LBFGS", "parameter groups"});
  // A gradient that is already small: one evaluation, no update.
  Tensor z = zeros({2}, kDouble).requires_grad_();
  optim::LBFGS lz({z});
  int evals = 0;
  lz.step([&] {
    ++evals;
    lz.zero_grad();
    Tensor f = (z * z).sum();
    f.backward();
    return f;
  });
  EXPECT_EQ(evals, 1);
  EXPECT_EQ(z.to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST(LBFGS, ProfilerSeesOneStepEvent) {
  Tensor x = tensor({-1.5, 2.0}, kDouble).requires_grad_();
  optim::LBFGS opt({x}, optim::LBFGSOptions(1).max_iter(5));
  profiler::profile p;
  opt.step([&] {
    opt.zero_grad();
    Tensor f = rosenbrock(x);
    f.backward();
    return f;
  });
  int steps = 0;
  for (const auto& e : p.result().events)
    if (e.kind == profiler::EventKind::OptimizerStep) {
      ++steps;
      EXPECT_EQ(e.name, "LBFGS.step");
      EXPECT_NE(e.detail, "for-loop");
    }
  EXPECT_EQ(steps, 1);
}

TEST(LBFGS, Float32Converges) {
  Tensor x = tensor({-1.5f, 2.0f}).requires_grad_();
  optim::LBFGS opt({x}, optim::LBFGSOptions(1).max_iter(50).line_search_fn("strong_wolfe"));
  for (int k = 0; k < 4; ++k)
    opt.step([&] {
      opt.zero_grad();
      Tensor f = rosenbrock(x);
      f.backward();
      return f;
    });
  EXPECT_TRUE(close(x.detach(), ones({2}), 1e-3, 1e-3));
}

// ---- libtorch's optimizer API ----------------------------------------------------------

TEST(OptimizerApi, LibtorchCalls) {
  Tensor w = ones({2, 2}).requires_grad_(), b = zeros({2}).requires_grad_();
  optim::SGD opt({w}, optim::SGDOptions(0.5).momentum(0.9));
  // param_groups()[i].options() cast to the optimizer's options, set in place.
  ASSERT_EQ(opt.param_groups().size(), 1u);
  static_cast<optim::SGDOptions&>(opt.param_groups()[0].options()).lr(0.1);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);
  EXPECT_EQ(static_cast<optim::SGDOptions&>(opt.param_groups()[0].options()).momentum(), 0.9);
  // add_param_group without options takes the defaults; with options, its own.
  opt.add_param_group(optim::OptimizerParamGroup({b}, std::make_unique<optim::SGDOptions>(0.01)));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.01);
  EXPECT_EQ(static_cast<optim::SGDOptions&>(opt.defaults()).lr(), 0.5);
  static_cast<optim::SGDOptions&>(opt.defaults()).lr(0.25);
  Tensor c = zeros({1}).requires_grad_();
  opt.add_param_group(optim::OptimizerParamGroup({c}));
  EXPECT_EQ(opt.param_groups()[2].options().get_lr(), 0.25);
  // step(closure) returns the closure's loss; the update used the new lr.
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = w.sum() + b.sum();
    l.backward();
    return l;
  });
  EXPECT_EQ(loss.item<float>(), 4.0f);
  EXPECT_TRUE(close(w.detach(), full({2, 2}, 0.9f)));
  EXPECT_TRUE(close(b.detach(), full({2}, -0.01f)));
  EXPECT_TRUE(opt.state(w).momentum_buffer().defined());
  // optimizer.state(): libtorch's map from p.unsafeGetTensorImpl() (brisk: p.impl()) to the state.
  auto& sw = static_cast<optim::SGDParamState&>(*opt.state()[w.impl()]);
  EXPECT_TRUE(close(sw.momentum_buffer(), full({2, 2}, 1.0f)));
  EXPECT_EQ(opt.state().size(), 2u) << "c had no gradient: no state";
  Tensor q = ones({3}, kDouble).requires_grad_();
  optim::Adam adam({q}, optim::AdamOptions(0.1));
  (q * q).sum().backward();
  adam.step();
  auto& sq = static_cast<optim::AdamParamState&>(*adam.state().at(q.impl()));
  EXPECT_EQ(sq.step(), 1);
  EXPECT_TRUE(close(sq.exp_avg(), full({3}, 0.2, kDouble)));  // (1 - 0.9) * 2
  sq.step(5);  // libtorch's setter
  EXPECT_EQ(adam.state(q).step(), 5);
  std::unique_ptr<optim::OptimizerParamState> copy = sq.clone();
  EXPECT_EQ(static_cast<optim::AdamParamState&>(*copy).step(), 5);
  // zero_grad(): to none (PyTorch 2's and libtorch 2's default), or zeros.
  opt.zero_grad(false);
  EXPECT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().abs().sum().item<float>(), 0.0f);
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(OptimizerApi, StepWithClosureForEveryOptimizer) {
  auto run = [](optim::Optimizer& opt, const Tensor& p) {
    Tensor loss = opt.step([&] {
      opt.zero_grad();
      Tensor l = (p * p).sum();
      l.backward();
      return l;
    });
    EXPECT_EQ(loss.item<double>(), 2.0) << opt.name();
    EXPECT_LT((p * p).sum().item<double>(), 2.0) << opt.name() << " did not descend";
  };
  auto fresh = [] { return ones({2}, kDouble).requires_grad_(); };
  Tensor p1 = fresh(), p2 = fresh(), p3 = fresh(), p4 = fresh(), p5 = fresh(), p6 = fresh(), p7 = fresh();
  optim::SGD sgd({p1}, 0.1);
  optim::Adam adam({p2});
  optim::AdamW adamw({p3});
  optim::RMSprop rms({p4});
  optim::Adagrad ada({p5});
  optim::LBFGS lbfgs({p6}, optim::LBFGSOptions(0.1));
  for (auto [o, p] : std::vector<std::pair<optim::Optimizer*, Tensor>>{
           {&sgd, p1}, {&adam, p2}, {&adamw, p3}, {&rms, p4}, {&ada, p5}, {&lbfgs, p6}})
    run(*o, p);
  // Through a base-class pointer, as a generic training loop holds it.
  std::unique_ptr<optim::Optimizer> base = std::make_unique<optim::Adagrad>(std::vector<Tensor>{p7});
  run(*base, p7);
}

}  // namespace
