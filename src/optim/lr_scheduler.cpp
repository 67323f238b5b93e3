// Learning-rate schedulers, as torch.optim.lr_scheduler (PyTorch 2.x): step()
// uses each scheduler's chainable get_lr (from the groups' current lr),
// step(epoch) the closed form (_get_closed_form_lr) from the initial lrs.
// The arithmetic follows PyTorch's expressions in the same order, so the
// sequences match its doubles.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "brisk/optim.h"

namespace brisk::optim {

namespace {
// Python's a // b for b > 0.
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && (a < 0)); }
}  // namespace

// ---- LRScheduler ----------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  // PyTorch: group.setdefault("initial_lr", group["lr"]); base_lrs = initial lrs.
  for (OptimizerParamGroup& g : optimizer_.param_groups()) {
    if (g.initial_lr() < 0) g.set_initial_lr(g.lr());
    base_lrs_.push_back(g.initial_lr());
  }
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  struct Initial {
    bool& flag;
    explicit Initial(bool& f) : flag(f) { flag = true; }
    ~Initial() { flag = false; }
  } initial(is_initial_);
  step();
}

std::vector<double> LRScheduler::group_lrs() const {
  std::vector<double> r;
  for (const OptimizerParamGroup& g : optimizer_.param_groups()) r.push_back(g.lr());
  return r;
}

std::vector<double> LRScheduler::get_lr() {
  std::vector<double> r;
  const size_t n = std::min(optimizer_.param_groups().size(), base_lrs_.size());
  for (size_t g = 0; g < n; ++g) r.push_back(lr_at(g, last_epoch_));
  return r;
}

void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<double> values;
  if (!epoch) {
    ++last_epoch_;
    values = get_lr();
  } else {
    last_epoch_ = *epoch;
    if (has_closed_form()) {
      const size_t n = std::min(optimizer_.param_groups().size(), base_lrs_.size());
      for (size_t g = 0; g < n; ++g) values.push_back(lr_at(g, last_epoch_));
    } else {
      values = get_lr();
    }
  }
  auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size() && g < values.size(); ++g) groups[g].set_lr(values[g]);
  last_lr_ = group_lrs();
}

void LRScheduler::step() {
  ++step_count_;
  update_lr(std::nullopt);
}

void LRScheduler::step(int64_t epoch) {
  ++step_count_;
  update_lr(epoch);
}

// ---- StepLR ------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  BRISK_CHECK(step_size > 0, "StepLR", "step_size must be positive, got ", step_size);
  initial_step();
}
double StepLR::lr_at(size_t g, int64_t epoch) const {
  return base_lrs_[g] * std::pow(gamma_, double(floor_div(epoch, step_size_)));
}
std::vector<double> StepLR::get_lr() {
  std::vector<double> r = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return r;
  for (double& lr : r) lr = lr * gamma_;
  return r;
}

// ---- MultiStepLR -------------------------------------------------------------------------

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
std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> r = group_lrs();
  const auto k = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (k == 0) return r;
  for (double& lr : r) lr = lr * std::pow(gamma_, double(k));
  return r;
}

// ---- ExponentialLR -------------------------------------------------------------------------

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}
double ExponentialLR::lr_at(size_t g, int64_t epoch) const { return base_lrs_[g] * std::pow(gamma_, double(epoch)); }
std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> r = group_lrs();
  if (is_initial_) return r;
  for (double& lr : r) lr = lr * gamma_;
  return r;
}

// ---- CosineAnnealingLR ---------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  BRISK_CHECK(T_max > 0, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
  initial_step();
}
double CosineAnnealingLR::lr_at(size_t g, int64_t epoch) const {
  return eta_min_ + (base_lrs_[g] - eta_min_) * (1 + std::cos(std::numbers::pi * double(epoch) / double(T_max_))) / 2;
}
std::vector<double> CosineAnnealingLR::get_lr() {
  constexpr double pi = std::numbers::pi;
  std::vector<double> r = group_lrs();
  if (is_initial_) return r;
  const double t = double(last_epoch_), T = double(T_max_);
  const bool first_resumed = step_count_ == 1 && last_epoch_ > 0;
  const bool restart = (last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0;  // (zero as Python's %)
  if (first_resumed || restart)
    BRISK_CHECK(r.size() == base_lrs_.size(), "CosineAnnealingLR", "the optimizer has ", r.size(),
                " param groups, the scheduler was made for ", base_lrs_.size());
  for (size_t g = 0; g < r.size(); ++g) {
    if (first_resumed)  // PyTorch's path for the first step of a resumed scheduler
      r[g] = eta_min_ + (base_lrs_[g] - eta_min_) * (1 + std::cos(t * pi / T)) / 2;
    else if (restart)  // the ratio below would divide by 1 + cos(pi) = 0
      r[g] = r[g] + (base_lrs_[g] - eta_min_) * (1 - std::cos(pi / T)) / 2;
    else
      r[g] = (1 + std::cos(pi * t / T)) / (1 + std::cos(pi * (t - 1) / T)) * (r[g] - eta_min_) + eta_min_;
  }
  return r;
}

// ---- LinearLR ----------------------------------------------------------------------------

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
std::vector<double> LinearLR::get_lr() {
  std::vector<double> r = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : r) lr = lr * start_factor_;
    return r;
  }
  if (is_initial_ || last_epoch_ > total_iters_) return r;
  const double d = end_factor_ - start_factor_;
  const double ratio = 1.0 + d / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d);
  for (double& lr : r) lr = lr * ratio;
  return r;
}

// ---- OneCycleLR ----------------------------------------------------------------------------

OneCycleLR::OneCycleLR(Optimizer& optimizer, double max_lr, int64_t total_steps, OneCycleLROptions options)
    : LRScheduler(optimizer), max_lr_(max_lr), total_steps_(total_steps), options_(options) {
  BRISK_CHECK(total_steps > 0, "OneCycleLR", "total_steps must be positive, got ", total_steps);
  BRISK_CHECK(options.pct_start() >= 0 && options.pct_start() <= 1, "OneCycleLR",
              "pct_start must be in [0, 1], got ", options.pct_start());
  const double T = double(total_steps), pct = options.pct_start();
  if (options.three_phase())
    phases_ = {{pct * T - 1, 0, 1, 0, 1}, {2 * pct * T - 2, 1, 0, 1, 0}, {T - 1, 0, 2, 0, 0}};
  else
    phases_ = {{pct * T - 1, 0, 1, 0, 1}, {T - 1, 1, 2, 1, 0}};
  // The schedule starts at max_lr / div_factor: that is the groups' initial lr.
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    base_lrs_[g] = max_lr / options.div_factor();
    optimizer.param_groups()[g].set_initial_lr(base_lrs_[g]);
  }
  if (options.cycle_momentum()) {
    // PyTorch looks for "betas" first, then "momentum", in the optimizer's defaults.
    for (const auto& [name, v] : optimizer.defaults().values()) {
      if (name == "beta1") momentum_name_ = name;
      else if (name == "momentum" && momentum_name_.empty()) momentum_name_ = name;
    }
    BRISK_CHECK(!momentum_name_.empty(), "OneCycleLR", "optimizer ", optimizer.name(),
                " must support momentum or beta1 with the cycle_momentum option enabled");
    for (OptimizerParamGroup& g : optimizer.param_groups())
      g.options().set_value(momentum_name_, options.max_momentum());
  }
  initial_step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_cos()) return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
  return (end - start) * pct + start;
}

std::pair<const OneCycleLR::Phase*, double> OneCycleLR::phase_at(int64_t epoch) const {
  BRISK_CHECK(epoch <= total_steps_, "OneCycleLR", "tried to step ", epoch, " times; total_steps is ",
              total_steps_);
  double start_step = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& ph = phases_[i];
    if (double(epoch) <= ph.end_step || i + 1 == phases_.size())
      return {&ph, (double(epoch) - start_step) / (ph.end_step - start_step)};
    start_step = ph.end_step;
  }
  return {&phases_.back(), 1.0};  // not reached
}

double OneCycleLR::lr_at(size_t g, int64_t epoch) const {
  const auto [ph, pct] = phase_at(epoch);
  const double initial = base_lrs_[g];
  const double lrs[3] = {initial, max_lr_, initial / options_.final_div_factor()};
  return anneal(lrs[ph->start], lrs[ph->end], pct);
}

std::vector<double> OneCycleLR::get_lr() {
  const auto [ph, pct] = phase_at(last_epoch_);
  auto& groups = optimizer_.param_groups();
  std::vector<double> r;
  for (size_t g = 0; g < groups.size() && g < base_lrs_.size(); ++g) {
    const double initial = base_lrs_[g];
    const double lrs[3] = {initial, max_lr_, initial / options_.final_div_factor()};
    r.push_back(anneal(lrs[ph->start], lrs[ph->end], pct));
    if (!momentum_name_.empty()) {
      const double ms[2] = {options_.max_momentum(), options_.base_momentum()};
      groups[g].options().set_value(momentum_name_, anneal(ms[ph->start_momentum], ms[ph->end_momentum], pct));
    }
  }
  return r;
}

// ---- SequentialLR ----------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  BRISK_CHECK(!schedulers_.empty(), "SequentialLR", "needs at least one scheduler");
  for (const auto& s : schedulers_)
    BRISK_CHECK(s && &s->optimizer_ == &optimizer, "SequentialLR",
                "every scheduler must belong to the SequentialLR's optimizer");
  BRISK_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR", "expected ", schedulers_.size() - 1,
              " milestones for ", schedulers_.size(), " schedulers, got ", milestones_.size());
  // PyTorch: reset the lrs to the initial ones, undo the schedulers' step 0
  // and redo only that of the scheduler of step 0.
  last_epoch_ = 0;
  for (OptimizerParamGroup& g : optimizer.param_groups()) g.set_lr(g.initial_lr());
  recursive_undo(*this);
  const size_t idx = index_at(0);
  schedulers_[idx]->initial_step();
  last_lr_ = schedulers_[idx]->get_last_lr();
}

size_t SequentialLR::index_at(int64_t epoch) const {
  return size_t(std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin());
}

void SequentialLR::recursive_undo(LRScheduler& s) {
  // As PyTorch: a nested SequentialLR's schedulers are undone, not the SequentialLR itself.
  if (auto* seq = dynamic_cast<SequentialLR*>(&s)) {
    for (const auto& c : seq->schedulers_) recursive_undo(*c);
  } else {
    --s.last_epoch_;
  }
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = index_at(last_epoch_);
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s.update_lr(0);
  else
    s.step();
  last_lr_ = s.get_last_lr();
}

void SequentialLR::step(int64_t epoch) {
  last_epoch_ = epoch;
  const size_t idx = index_at(epoch);
  LRScheduler& s = *schedulers_[idx];
  s.step(idx == 0 ? epoch : epoch - milestones_[idx - 1]);
  last_lr_ = s.get_last_lr();
}

double SequentialLR::lr_at(size_t g, int64_t epoch) const {
  const size_t idx = index_at(epoch);
  return schedulers_[idx]->lr_at(g, idx == 0 ? epoch : epoch - milestones_[idx - 1]);
}

}  // namespace brisk::optim
