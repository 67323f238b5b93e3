// Optimizers in brisk and libtorch from the same parameters and gradients:
// 20 steps, then the parameters are compared.
#pragma once
#include <torch/optim.h>

#include <brisk/optim.h>

#include "parity.h"

namespace parity {
namespace {

/// Runs 20 steps of `make_b` (brisk) and `make_t` (libtorch) on identical
/// parameters and gradients and compares the parameters after each step.
template <class MB, class MT>
void check_optimizer(const char* name, MB make_b, MT make_t, Tol t) {
  std::vector<BT> bp;
  std::vector<TT> tp;
  uint64_t seed = hash_name(name, 7);
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{5, 3}, {7}, {2, 2, 2}}) {
    BT b;
    TT x;
    make_input(in(shape), seed++, b, x);
    bp.push_back(b.detach().clone().requires_grad_());
    tp.push_back(x.detach().clone().requires_grad_());
  }
  auto bopt = make_b(bp);
  auto topt = make_t(tp);
  for (int step = 0; step < 20; ++step) {
    for (size_t k = 0; k < bp.size(); ++k) {
      BT g;
      TT h;
      make_input(in(std::vector<int64_t>(bp[k].sizes().begin(), bp[k].sizes().end())), seed++, g, h);
      bp[k].mutable_grad() = g;
      tp[k].mutable_grad() = h;
    }
    bopt->step();
    topt->step();
  }
  for (size_t k = 0; k < bp.size(); ++k)
    EXPECT_TRUE(compare(bp[k].detach(), tp[k].detach(), t, false,
                        std::string(name) + " parameter " + std::to_string(k)));
}

TEST(ParityOptim, Optimizers) {
  namespace bo = brisk::optim;
  namespace to = torch::optim;
  const Tol t = tol(1e-4, 1e-5);
  for (bo::Impl impl : {bo::Impl::ForLoop, bo::Impl::Foreach, bo::Impl::Fused}) {
    SCOPED_TRACE(bo::impl_name(impl));
    check_optimizer(
        "sgd_momentum",
        [&](std::vector<BT> p) { return std::make_unique<bo::SGD>(p, bo::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(1e-2).impl(impl)); },
        [](std::vector<TT> p) { return std::make_unique<to::SGD>(p, to::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(1e-2)); },
        t);
    check_optimizer(
        "sgd_nesterov",
        [&](std::vector<BT> p) { return std::make_unique<bo::SGD>(p, bo::SGDOptions(0.1).momentum(0.9).nesterov(true).impl(impl)); },
        [](std::vector<TT> p) { return std::make_unique<to::SGD>(p, to::SGDOptions(0.1).momentum(0.9).nesterov(true)); },
        t);
    for (bool ams : {false, true}) {
      check_optimizer(
          ams ? "adam_amsgrad" : "adam",
          [&](std::vector<BT> p) { return std::make_unique<bo::Adam>(p, bo::AdamOptions(1e-2).weight_decay(0.1).amsgrad(ams).impl(impl)); },
          [&](std::vector<TT> p) { return std::make_unique<to::Adam>(p, to::AdamOptions(1e-2).weight_decay(0.1).amsgrad(ams)); },
          t);
      check_optimizer(
          ams ? "adamw_amsgrad" : "adamw",
          [&](std::vector<BT> p) { return std::make_unique<bo::AdamW>(p, bo::AdamWOptions(1e-2).betas({0.8, 0.99}).amsgrad(ams).impl(impl)); },
          [&](std::vector<TT> p) { return std::make_unique<to::AdamW>(p, to::AdamWOptions(1e-2).betas({0.8, 0.99}).amsgrad(ams)); },
          t);
    }
    check_optimizer(
        "rmsprop",
        [&](std::vector<BT> p) { return std::make_unique<bo::RMSprop>(p, bo::RMSpropOptions(1e-2).impl(impl)); },
        [](std::vector<TT> p) { return std::make_unique<to::RMSprop>(p, to::RMSpropOptions(1e-2)); },
        t);
    check_optimizer(
        "rmsprop_centered_momentum",
        [&](std::vector<BT> p) { return std::make_unique<bo::RMSprop>(p, bo::RMSpropOptions(1e-2).centered(true).momentum(0.9).weight_decay(1e-2).impl(impl)); },
        [](std::vector<TT> p) { return std::make_unique<to::RMSprop>(p, to::RMSpropOptions(1e-2).centered(true).momentum(0.9).weight_decay(1e-2)); },
        t);
  }
}

}  // namespace
}  // namespace parity
