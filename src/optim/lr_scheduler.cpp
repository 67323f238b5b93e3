// Learning-rate schedulers, in closed form (PyTorch's _get_closed_form_lr).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "brisk/optim.h"

namespace brisk::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  // PyTorch: group.setdefault("initial_lr", group["lr"]); base_lrs = initial lrs.
  for (OptimizerParamGroup& g : optimizer_.param_groups()) {
    if (g.initial_lr() < 0) g.set_initial_lr(g.lr());
    base_lrs_.push_back(g.initial_lr());
  }
}

void LRScheduler::initial_step() {
  last_epoch_ = 0;
  apply();
}

void LRScheduler::apply() {
  auto& groups = optimizer_.param_groups();
  last_lr_.resize(groups.size());
  for (size_t g = 0; g < groups.size() && g < base_lrs_.size(); ++g) {
    last_lr_[g] = lr_at(g, last_epoch_);
    groups[g].set_lr(last_lr_[g]);
  }
}

void LRScheduler::step() {
  ++last_epoch_;
  apply();
}

void LRScheduler::step(int64_t epoch) {
  last_epoch_ = epoch;
  apply();
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  BRISK_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size);
  initial_step();
}
double StepLR::lr_at(size_t g, int64_t epoch) const {
  return base_lrs_[g] * std::pow(gamma_, double(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  BRISK_CHECK(std::is_sorted(milestones_.begin(), milestones_.end()), "MultiStepLR",
              "milestones must be increasing");
  initial_step();
}
double MultiStepLR::lr_at(size_t g, int64_t epoch) const {
  const auto k = std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return base_lrs_[g] * std::pow(gamma_, double(k));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}
double ExponentialLR::lr_at(size_t g, int64_t epoch) const { return base_lrs_[g] * std::pow(gamma_, double(epoch)); }

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  BRISK_CHECK(T_max > 0, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
  initial_step();
}
double CosineAnnealingLR::lr_at(size_t g, int64_t epoch) const {
  return eta_min_ + (base_lrs_[g] - eta_min_) * (1 + std::cos(std::numbers::pi * double(epoch) / double(T_max_))) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  BRISK_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR",
              "start_factor must be in (0, 1], got ", start_factor);
  BRISK_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR", "end_factor must be in [0, 1], got ", end_factor);
  BRISK_CHECK(total_iters > 0, "LinearLR", "total_iters must be positive, got ", total_iters);
  initial_step();
}
double LinearLR::lr_at(size_t g, int64_t epoch) const {
  return base_lrs_[g] * (start_factor_ + (end_factor_ - start_factor_) * double(std::min(total_iters_, epoch)) /
                                             double(total_iters_));
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, OneCycleLROptions options)
    : LRScheduler(optimizer), max_lr_(max_lr), total_steps_(total_steps), options_(options) {
  BRISK_CHECK(total_steps > 0, "OneCycleLR", "total_steps must be positive, got ", total_steps);
  BRISK_CHECK(options.pct_start() >= 0 && options.pct_start() <= 1, "OneCycleLR",
              "pct_start must be in [0, 1], got ", options.pct_start());
  const double T = double(total_steps), pct = options.pct_start();
  if (options.three_phase())
    phases_ = {{pct * T - 1, 0, 1}, {2 * pct * T - 2, 1, 0}, {T - 1, 0, 2}};
  else
    phases_ = {{pct * T - 1, 0, 1}, {T - 1, 1, 2}};
  // The schedule starts at max_lr / div_factor: that is the groups' initial lr.
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    base_lrs_[g] = max_lr / options.div_factor();
    optimizer.param_groups()[g].set_initial_lr(base_lrs_[g]);
  }
  initial_step();
}
double OneCycleLR::lr_at(size_t g, int64_t epoch) const {
  BRISK_CHECK(epoch <= total_steps_, "OneCycleLR", "tried to step ", epoch, " times; total_steps is ",
              total_steps_);
  const double initial = base_lrs_[g];
  const double lrs[3] = {initial, max_lr_, initial / options_.final_div_factor()};
  double start_step = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (double(epoch) <= ph.end_step || i + 1 == phases_.size()) {
      const double pct = (double(epoch) - start_step) / (ph.end_step - start_step);
      const double a = lrs[ph.start], b = lrs[ph.end];
      return options_.anneal_cos() ? b + (a - b) / 2 * (std::cos(std::numbers::pi * pct) + 1) : (b - a) * pct + a;
    }
    start_step = ph.end_step;
  }
  return initial;
}

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  BRISK_CHECK(!schedulers_.empty(), "SequentialLR", "needs at least one scheduler");
  BRISK_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR", "expected ", schedulers_.size() - 1,
              " milestones for ", schedulers_.size(), " schedulers, got ", milestones_.size());
  for (const auto& s : schedulers_)
    BRISK_CHECK(s && &s->optimizer_ == &optimizer, "SequentialLR",
                "every scheduler must belong to the SequentialLR's optimizer");
  initial_step();
}
double SequentialLR::lr_at(size_t g, int64_t epoch) const {
  const size_t k = size_t(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin());
  const int64_t local = k == 0 ? epoch : epoch - milestones_[k - 1];
  schedulers_[k]->last_epoch_ = local;
  return schedulers_[k]->lr_at(g, local);
}

}  // namespace brisk::optim
