// The Optimizer base: param groups, zero_grad, step, state dicts; and the
// options' name/value tables.
#include <cstdlib>
#include <unordered_set>

#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
#include "core/profile_hooks.h"
#include "profiler/record.h"

namespace brisk::optim {

const char* impl_name(Impl impl) {
  switch (impl) {
    case Impl::ForLoop: return "ForLoop";
    case Impl::Foreach: return "Foreach";
    case Impl::Fused: return "Fused";
  }
  return "?";
}

namespace {
Impl impl_of(const char* op, double v) {
  BRISK_CHECK(v == 0 || v == 1 || v == 2, op, "invalid impl value ", v);
  return static_cast<Impl>(int(v));
}
}  // namespace

// ---- the options as (name, value) ----------------------------------------------------

std::vector<std::pair<std::string, double>> SGDOptions::values() const {
  return {{"lr", lr_}, {"momentum", momentum_}, {"dampening", dampening_}, {"weight_decay", weight_decay_},
          {"nesterov", nesterov_}, {"maximize", maximize_}, {"impl", double(int(impl_))}};
}
void SGDOptions::set_value(const std::string& n, double v) {
  if (n == "lr") lr_ = v;
  else if (n == "momentum") momentum_ = v;
  else if (n == "dampening") dampening_ = v;
  else if (n == "weight_decay") weight_decay_ = v;
  else if (n == "nesterov") nesterov_ = v != 0;
  else if (n == "maximize") maximize_ = v != 0;
  else if (n == "impl") impl_ = impl_of("SGD", v);
  else BRISK_FAIL("SGD", "unknown option '", n, "'");
}

namespace {
template <class O>
std::vector<std::pair<std::string, double>> adam_values(const O& o) {
  return {{"lr", o.lr()}, {"beta1", std::get<0>(o.betas())}, {"beta2", std::get<1>(o.betas())}, {"eps", o.eps()},
          {"weight_decay", o.weight_decay()}, {"amsgrad", o.amsgrad()}, {"maximize", o.maximize()},
          {"impl", double(int(o.impl()))}, {"capturable", o.capturable()}};
}
template <class O>
void adam_set_value(O& o, const char* op, const std::string& n, double v) {
  if (n == "lr") o.lr(v);
  else if (n == "beta1") o.betas(Betas(v, std::get<1>(o.betas())));
  else if (n == "beta2") o.betas(Betas(std::get<0>(o.betas()), v));
  else if (n == "eps") o.eps(v);
  else if (n == "weight_decay") o.weight_decay(v);
  else if (n == "amsgrad") o.amsgrad(v != 0);
  else if (n == "maximize") o.maximize(v != 0);
  else if (n == "impl") o.impl(impl_of(op, v));
  else if (n == "capturable") o.capturable(v != 0);
  else BRISK_FAIL(op, "unknown option '", n, "'");
}
}  // namespace

std::vector<std::pair<std::string, double>> AdamOptions::values() const { return adam_values(*this); }
void AdamOptions::set_value(const std::string& n, double v) { adam_set_value(*this, "Adam", n, v); }
std::vector<std::pair<std::string, double>> AdamWOptions::values() const { return adam_values(*this); }
void AdamWOptions::set_value(const std::string& n, double v) { adam_set_value(*this, "AdamW", n, v); }

std::vector<std::pair<std::string, double>> RMSpropOptions::values() const {
  return {{"lr", lr_}, {"alpha", alpha_}, {"eps", eps_}, {"weight_decay", weight_decay_},
          {"momentum", momentum_}, {"centered", centered_}, {"maximize", maximize_}, {"impl", double(int(impl_))}};
}
void RMSpropOptions::set_value(const std::string& n, double v) {
  if (n == "lr") lr_ = v;
  else if (n == "alpha") alpha_ = v;
  else if (n == "eps") eps_ = v;
  else if (n == "weight_decay") weight_decay_ = v;
  else if (n == "momentum") momentum_ = v;
  else if (n == "centered") centered_ = v != 0;
  else if (n == "maximize") maximize_ = v != 0;
  else if (n == "impl") impl_ = impl_of("RMSprop", v);
  else BRISK_FAIL("RMSprop", "unknown option '", n, "'");
}

std::vector<std::pair<std::string, double>> AdagradOptions::values() const {
  return {{"lr", lr_}, {"lr_decay", lr_decay_}, {"weight_decay", weight_decay_},
          {"initial_accumulator_value", initial_accumulator_value_}, {"eps", eps_}, {"maximize", maximize_},
          {"impl", double(int(impl_))}};
}
void AdagradOptions::set_value(const std::string& n, double v) {
  if (n == "lr") lr_ = v;
  else if (n == "lr_decay") lr_decay_ = v;
  else if (n == "weight_decay") weight_decay_ = v;
  else if (n == "initial_accumulator_value") initial_accumulator_value_ = v;
  else if (n == "eps") eps_ = v;
  else if (n == "maximize") maximize_ = v != 0;
  else if (n == "impl") impl_ = impl_of("Adagrad", v);
  else BRISK_FAIL("Adagrad", "unknown option '", n, "'");
}

std::vector<std::pair<std::string, double>> LBFGSOptions::values() const {
  return {{"lr", lr_},
          {"max_iter", double(max_iter_)},
          {"max_eval", max_eval_ ? double(*max_eval_) : -1.0},
          {"tolerance_grad", tolerance_grad_},
          {"tolerance_change", tolerance_change_},
          {"history_size", double(history_size_)},
          {"line_search_fn", line_search_fn_ ? (*line_search_fn_ == "strong_wolfe" ? 1.0 : 2.0) : 0.0},
          {"maximize", maximize_}};
}
void LBFGSOptions::set_value(const std::string& n, double v) {
  if (n == "lr") lr_ = v;
  else if (n == "max_iter") max_iter_ = int64_t(v);
  else if (n == "max_eval") max_eval_ = v < 0 ? std::nullopt : std::optional<int64_t>(int64_t(v));
  else if (n == "tolerance_grad") tolerance_grad_ = v;
  else if (n == "tolerance_change") tolerance_change_ = v;
  else if (n == "history_size") history_size_ = int64_t(v);
  else if (n == "line_search_fn") {
    BRISK_CHECK(v == 0 || v == 1, "LBFGS", "invalid line_search_fn value ", v, " (0: none, 1: strong_wolfe)");
    line_search_fn_ = v == 1 ? std::optional<std::string>("strong_wolfe") : std::nullopt;
  } else if (n == "maximize") maximize_ = v != 0;
  else BRISK_FAIL("LBFGS", "unknown option '", n, "'");
}

// ---- Optimizer ------------------------------------------------------------------------

void Optimizer::init(const std::vector<OptimizerParamGroup>& groups) {
  check_options(*defaults_);
  for (const OptimizerParamGroup& g : groups) add_param_group(g);
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  OptimizerParamGroup g(group);
  if (!g.has_options()) g.set_options(defaults_->clone());
  check_options(g.options());
  const size_t gi = groups_.size();
  std::unordered_set<const TensorImpl*> seen;
  for (const OptimizerParamGroup& other : groups_)
    for (const Tensor& p : other.params()) seen.insert(p.impl());
  for (size_t i = 0; i < g.params().size(); ++i) {
    const Tensor& p = g.params()[i];
    BRISK_CHECK(p.defined(), name_, "parameter ", i, " of group ", gi, " is undefined");
    BRISK_CHECK(p.is_floating_point(), name_, "parameter ", i, " of group ", gi,
                " is not floating point (dtype ", p.dtype(), ")");
    BRISK_CHECK(p.requires_grad(), name_, "parameter ", i, " of group ", gi, " (shape ", p.sizes(),
                ") does not require grad");
    BRISK_CHECK(p.is_leaf(), name_, "can't optimize a non-leaf tensor (parameter ", i, " of group ", gi, ")");
    BRISK_CHECK(seen.insert(p.impl()).second, name_, "parameter ", i, " of group ", gi,
                " appears more than once in the optimizer's groups");
  }
  groups_.push_back(std::move(g));
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> r;
  for (const OptimizerParamGroup& g : groups_) r.insert(r.end(), g.params().begin(), g.params().end());
  return r;
}

size_t Optimizer::size() const {
  size_t n = 0;
  for (const OptimizerParamGroup& g : groups_) n += g.params().size();
  return n;
}

void Optimizer::zero_grad(bool set_to_none) {
  profiler::detail::ScopedEvent event(profiler::EventKind::UserScope, "Optimizer.zero_grad",
                                      set_to_none ? "set_to_none=true" : "set_to_none=false");
  for (OptimizerParamGroup& g : groups_)
    for (const Tensor& p : g.params()) {
      Tensor& grad = p.mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        grad = Tensor();
      } else {
        if (grad.grad_fn()) grad = grad.detach();
        NoGradGuard ng;
        grad.zero_();
      }
    }
}

namespace {
// The implementation an optimizer step runs (the event's detail): the first
// group's, or "mixed" when the groups differ.
const char* step_impl_detail(const std::vector<OptimizerParamGroup>& groups) {
  const char* r = nullptr;
  for (const OptimizerParamGroup& g : groups) {
    const char* d = "for-loop";
    for (const auto& [k, v] : g.options().values())
      if (k == "impl") d = v == double(int(Impl::Fused)) ? "fused" : v == double(int(Impl::Foreach)) ? "foreach" : "for-loop";
    if (r && std::string_view(r) != d) return "mixed";
    r = d;
  }
  return r ? r : "";
}
}  // namespace

void Optimizer::set_amp_scaling(Tensor grad_scale, Tensor found_inf) {
  BRISK_CHECK(supports_amp_scaling(), name_,
              "set_amp_scaling: this optimizer's step cannot apply a grad scale on the device (fused SGD, or fused "
              "Adam/AdamW with capturable = true, can)");
  for (const Tensor* t : {&grad_scale, &found_inf})
    BRISK_CHECK(!t->defined() || (t->dtype() == kFloat && t->numel() == 1), name_,
                "set_amp_scaling: expected one-element float32 tensors, got ", t->dtype(), " of ", t->numel(),
                " elements");
  BRISK_CHECK(found_inf.defined(), name_, "set_amp_scaling: found_inf is undefined");
  amp_grad_scale_ = std::move(grad_scale);
  amp_found_inf_ = std::move(found_inf);
}

bool Optimizer::all_params_with_grad(const std::function<bool(const OptimizerParamGroup&, const Tensor&)>& ok) const {
  for (const OptimizerParamGroup& g : groups_)
    for (const Tensor& p : g.params())
      if (p.grad().defined() && !ok(g, p)) return false;
  return true;
}

Tensor Optimizer::step(LossClosure closure) {
  // set_amp_scaling's tensors serve this step only, whatever happens in it
  struct ClearAmp {
    Optimizer* o;
    ~ClearAmp() {
      o->amp_grad_scale_ = Tensor();
      o->amp_found_inf_ = Tensor();
    }
  } clear_amp{this};
  if (BRISK_UNLIKELY(brisk::detail::thread_capturing())) {
    const char* why = capture_hazard();
    BRISK_CHECK(why == nullptr, name_, "step() in a CUDA graph capture: ", why,
                ", so every replay would repeat the captured step's values. Capture an SGD or RMSprop step, or "
                "call step() outside the graph");
  }
  auto event = profiler::detail::ScopedEvent::lazy(
      profiler::EventKind::OptimizerStep, [this] { return std::string(name_) + ".step"; },
      [this] { return step_impl_detail(groups_); });
  Tensor loss;
  if (closure) {
    EnableGradGuard eg;
    loss = closure();
  }
  NoGradGuard ng;
  std::vector<Tensor> with_grad;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    OptimizerParamGroup& g = groups_[gi];
    with_grad.clear();
    for (size_t i = 0; i < g.params().size(); ++i) {
      const Tensor& p = g.params()[i];
      const Tensor& grad = p.grad();
      if (!grad.defined()) continue;
      BRISK_CHECK(grad.sizes() == p.sizes(), name_, "gradient of parameter ", i, " of group ", gi, " has shape ",
                  grad.sizes(), " but the parameter has shape ", p.sizes());
      with_grad.push_back(p);
    }
    if (!with_grad.empty()) step_group(g, with_grad);
  }
  return loss;
}

ParamState& Optimizer::state(const Tensor& param) {
  std::unique_ptr<OptimizerParamState>& s = state_[param.impl()];
  if (!s) s = std::make_unique<ParamState>();
  return static_cast<ParamState&>(*s);
}

// ---- state dicts ------------------------------------------------------------------------

namespace {
struct StateField {
  const char* name;
  Tensor& (ParamState::*member)();
};
constexpr StateField kStateFields[] = {
    {"exp_avg", &ParamState::exp_avg},
    {"exp_avg_sq", &ParamState::exp_avg_sq},
    {"max_exp_avg_sq", &ParamState::max_exp_avg_sq},
    {"momentum_buffer", &ParamState::momentum_buffer},
    {"square_avg", &ParamState::square_avg},
    {"grad_avg", &ParamState::grad_avg},
    {"sum", &ParamState::sum},
};
}  // namespace

StateDict Optimizer::state_dict() const {
  StateDict d;
  int64_t index = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const OptimizerParamGroup& g = groups_[gi];
    const std::string gp = "param_groups." + std::to_string(gi) + ".";
    for (const auto& [k, v] : g.options().values()) d[gp + k] = scalar_tensor(v, kDouble);
    std::vector<int64_t> idx;
    for (const Tensor& p : g.params()) {
      idx.push_back(index);
      auto it = state_.find(p.impl());
      if (it != state_.end()) {
        auto& s = static_cast<ParamState&>(*it->second);
        const std::string sp = "state." + std::to_string(index) + ".";
        // (a capturable Adam's count is on the device: a read, as PyTorch's state_dict)
        d[sp + "step"] = s.step_tensor().defined() ? s.step_tensor().detach().to(kCPU).to(kDouble)
                                                   : scalar_tensor(double(s.step()), kDouble);
        for (const StateField& f : kStateFields) {
          const Tensor& t = (s.*f.member)();
          if (t.defined()) d[sp + f.name] = t.detach().clone();
        }
      }
      ++index;
    }
    d[gp + "params"] = idx.empty() ? empty({0}, kInt64) : tensor(idx, kInt64);
  }
  return d;
}

void Optimizer::load_state_dict(const StateDict& dict) {
  // Group structure first: every check before anything changes.
  size_t ngroups = 0;
  while (dict.count("param_groups." + std::to_string(ngroups) + ".params")) ++ngroups;
  BRISK_CHECK(ngroups == groups_.size(), name_, "load_state_dict: the state dict has ", ngroups,
              " parameter groups but the optimizer has ", groups_.size());
  for (size_t gi = 0; gi < ngroups; ++gi) {
    const Tensor& idx = dict.at("param_groups." + std::to_string(gi) + ".params");
    BRISK_CHECK(size_t(idx.numel()) == groups_[gi].params().size(), name_, "load_state_dict: group ", gi, " has ",
                idx.numel(), " parameters in the state dict but ", groups_[gi].params().size(), " in the optimizer");
  }
  std::vector<Tensor> params = parameters();
  std::unordered_map<void*, ParamState> state;
  for (const auto& [key, t] : dict) {
    if (key.rfind("state.", 0) != 0) continue;
    const size_t dot = key.find('.', 6);
    BRISK_CHECK(dot != std::string::npos, name_, "load_state_dict: malformed key '", key, "'");
    char* end = nullptr;
    const long long i = std::strtoll(key.c_str() + 6, &end, 10);
    BRISK_CHECK(end == key.c_str() + dot && i >= 0 && size_t(i) < params.size(), name_,
                "load_state_dict: key '", key, "' names no parameter (the optimizer has ", params.size(), ")");
    const std::string field = key.substr(dot + 1);
    const Tensor& p = params[size_t(i)];
    ParamState& s = state[p.impl()];
    if (field == "step") {
      s.step() = int64_t(t.item<double>());
      continue;
    }
    bool known = false;
    for (const StateField& f : kStateFields) {
      if (field != f.name) continue;
      BRISK_CHECK(t.sizes() == p.sizes(), name_, "load_state_dict: '", key, "' has shape ", t.sizes(),
                  " but parameter ", i, " has shape ", p.sizes());
      (s.*f.member)() = t.to(p.device(), p.dtype(), false, true).contiguous();
      known = true;
    }
    BRISK_CHECK(known, name_, "load_state_dict: unknown state field in '", key, "'");
  }
  // Options of each group (checked with a copy first).
  std::vector<std::unique_ptr<OptimizerOptions>> opts;
  for (size_t gi = 0; gi < ngroups; ++gi) {
    auto o = groups_[gi].options().clone();
    const std::string gp = "param_groups." + std::to_string(gi) + ".";
    for (const auto& [key, t] : dict)
      if (key.rfind(gp, 0) == 0 && key != gp + "params") o->set_value(key.substr(gp.size()), t.item<double>());
    check_options(*o);
    opts.push_back(std::move(o));
  }
  for (size_t gi = 0; gi < ngroups; ++gi) groups_[gi].set_options(std::move(opts[gi]));
  ParamStateMap states;
  for (auto& [key, s] : state) states.emplace(key, std::make_unique<ParamState>(std::move(s)));
  state_ = std::move(states);
}

}  // namespace brisk::optim
