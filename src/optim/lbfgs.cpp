// L-BFGS (torch.optim.LBFGS): limited-memory BFGS over all parameters seen
// as one flat vector, with a fixed step or a strong-Wolfe line search. The
// scalars of the recurrences (step length, curvature y.s, the two-loop
// coefficients) are doubles on the host, as PyTorch's are Python floats or
// 0-dim tensors; the vectors are tensors of the parameters' dtype.
#include <algorithm>
#include <cmath>

#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "brisk/optim.h"
#include "profiler/record.h"

namespace brisk::optim {
namespace {

double dotv(const Tensor& a, const Tensor& b) { return a.dot(b).item<double>(); }
double abs_max(const Tensor& t) { return t.abs().max().item<double>(); }

/// The minimizer of the cubic through (x1, f1) and (x2, f2) with slopes g1
/// and g2, clamped to [lo, hi] (the points themselves when no bounds are
/// given); the middle of the bounds when the cubic has no minimizer.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  const double lo = bounds ? bounds->first : std::min(x1, x2);
  const double hi = bounds ? bounds->second : std::max(x1, x2);
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2;
}

/// The loss and flat gradient at x + t * d (the parameters are put back to x after).
struct Evaluation {
  double f;
  Tensor g;
};

struct LineSearchResult {
  double f;
  Tensor g;
  double t;
  int64_t evals;
};

/// A step t along d satisfying the strong Wolfe conditions (sufficient
/// decrease c1, curvature c2): bracketing, then zoom by cubic interpolation
/// (PyTorch's _strong_wolfe). f, g, gtd: loss, gradient and slope at t = 0.
template <class Eval>
LineSearchResult strong_wolfe(const Eval& eval, double t, const Tensor& d, double f, const Tensor& g, double gtd,
                              double c1 = 1e-4, double c2 = 0.9, double tolerance_change = 1e-9,
                              int64_t max_ls = 25) {
  const double d_norm = abs_max(d);
  Evaluation e = eval(t);
  int64_t evals = 1;
  double gtd_new = dotv(e.g, d);
  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g.clone();
  bool done = false;
  int64_t ls_iter = 0;
  // The bracket: one point (done) or two.
  std::vector<double> bt, bf, bgtd;
  std::vector<Tensor> bg;
  while (ls_iter < max_ls) {
    const bool no_decrease = e.f > f + c1 * t * gtd || (ls_iter > 1 && e.f >= f_prev);
    if (!no_decrease && std::abs(gtd_new) <= -c2 * gtd) {
      bt = {t};
      bf = {e.f};
      bg = {e.g};
      done = true;
      break;
    }
    if (no_decrease || gtd_new >= 0) {  // a minimum lies in [t_prev, t]
      bt = {t_prev, t};
      bf = {f_prev, e.f};
      bg = {g_prev, e.g.clone()};
      bgtd = {gtd_prev, gtd_new};
      break;
    }
    // Extrapolate between 1.01 t - 0.01 t_prev and 10 t.
    const double min_step = t + 0.01 * (t - t_prev);
    const double max_step = t * 10;
    const double tmp = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, e.f, gtd_new, std::make_pair(min_step, max_step));
    t_prev = tmp;
    f_prev = e.f;
    g_prev = e.g.clone();
    gtd_prev = gtd_new;
    e = eval(t);
    ++evals;
    gtd_new = dotv(e.g, d);
    ++ls_iter;
  }
  if (ls_iter == max_ls || bt.empty()) {
    bt = {0, t};
    bf = {f, e.f};
    bg = {g, e.g};
  }
  // Zoom: shrink the bracket until a point satisfies the conditions.
  bool insuf_progress = false;
  size_t low = bf[0] <= bf.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bt[1] - bt[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bt[0], bf[0], bgtd[0], bt[1], bf[1], bgtd[1]);
    // Keep t away from the bracket's ends (at least 10% of its width in).
    const double bmax = std::max(bt[0], bt[1]), bmin = std::min(bt[0], bt[1]);
    const double eps = 0.1 * (bmax - bmin);
    if (std::min(bmax - t, t - bmin) < eps) {
      if (insuf_progress || t >= bmax || t <= bmin) {
        t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    e = eval(t);
    ++evals;
    gtd_new = dotv(e.g, d);
    ++ls_iter;
    if (e.f > f + c1 * t * gtd || e.f >= bf[low]) {
      bt[high] = t;
      bf[high] = e.f;
      bg[high] = e.g.clone();
      bgtd[high] = gtd_new;
      low = bf[0] <= bf[1] ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bt[high] - bt[low]) >= 0) {
        bt[high] = bt[low];
        bf[high] = bf[low];
        bg[high] = bg[low];
        bgtd[high] = bgtd[low];
      }
      bt[low] = t;
      bf[low] = e.f;
      bg[low] = e.g.clone();
      bgtd[low] = gtd_new;
    }
  }
  return {bf[low], bg[low], bt[low], evals};
}

}  // namespace

LBFGS::LBFGS(std::vector<OptimizerParamGroup> groups, LBFGSOptions defaults)
    : Optimizer("LBFGS", std::make_unique<LBFGSOptions>(defaults)) {
  init(groups);
  BRISK_CHECK(groups_.size() == 1, name_, "LBFGS doesn't support per-parameter options (parameter groups): got ",
              groups_.size(), " groups");
  // max_eval defaults to max_iter * 5 / 4, fixed at construction (as libtorch).
  auto& o = static_cast<LBFGSOptions&>(groups_[0].options());
  if (!o.max_eval()) o.max_eval(o.max_iter() * 5 / 4);
  auto& d = static_cast<LBFGSOptions&>(*defaults_);
  if (!d.max_eval()) d.max_eval(d.max_iter() * 5 / 4);
}

void LBFGS::check_options(const OptimizerOptions& base) const {
  const auto* o = dynamic_cast<const LBFGSOptions*>(&base);
  BRISK_CHECK(o, name_, "param group options are not LBFGSOptions");
  BRISK_CHECK(o->lr() >= 0, name_, "invalid learning rate ", o->lr(), " (must be >= 0)");
  BRISK_CHECK(o->max_iter() > 0, name_, "invalid max_iter ", o->max_iter(), " (must be > 0)");
  BRISK_CHECK(!o->max_eval() || *o->max_eval() > 0, name_, "invalid max_eval ", o->max_eval().value_or(0),
              " (must be > 0)");
  BRISK_CHECK(o->history_size() > 0, name_, "invalid history_size ", o->history_size(), " (must be > 0)");
  BRISK_CHECK(!o->line_search_fn() || *o->line_search_fn() == "strong_wolfe", name_, "line_search_fn '",
              o->line_search_fn().value_or(""), "' is not supported: only \"strong_wolfe\" (or none)");
}

void LBFGS::step_group(OptimizerParamGroup&, const std::vector<Tensor>&) {
  BRISK_FAIL(name_, "internal: LBFGS updates through step(closure)");
}

Tensor LBFGS::step(LossClosure closure) {
  BRISK_CHECK(closure != nullptr, name_, "step() needs a closure that reevaluates the model and returns the loss");
  BRISK_CHECK(groups_.size() == 1, name_, "expected exactly one param group, but got ", groups_.size());
  // One event for the whole step, closure calls included (as the base's
  // step); no implementation detail: the advisor's for-loop rule does not apply.
  profiler::detail::ScopedEvent event(profiler::EventKind::OptimizerStep, "LBFGS.step");
  NoGradGuard no_grad;
  auto evaluate = [&closure] {
    EnableGradGuard grad_on;
    return closure();
  };
  const std::vector<Tensor>& params = groups_[0].params();
  if (params.empty()) return evaluate();
  const auto& o = static_cast<const LBFGSOptions&>(groups_[0].options());
  const double lr = o.lr();
  const int64_t max_iter = o.max_iter();
  const int64_t max_eval = o.max_eval().value_or(max_iter * 5 / 4);
  const double tolerance_grad = o.tolerance_grad(), tolerance_change = o.tolerance_change();
  const size_t history_size = size_t(o.history_size());
  const bool maximize = o.maximize();
  for (const Tensor& p : params)
    BRISK_CHECK(p.dtype() == params[0].dtype() && p.device() == params[0].device(), name_,
                "all parameters must have one dtype and device (got ", p.dtype(), " on ", p.device(), " and ",
                params[0].dtype(), " on ", params[0].device(), ")");

  // The gradient of all parameters as one vector (zeros for a missing one).
  auto flat_grad = [&] {
    std::vector<Tensor> views;
    views.reserve(params.size());
    for (const Tensor& p : params) {
      const Tensor& g = p.grad();
      views.push_back(g.defined() ? g.reshape({-1}) : zeros({p.numel()}, p.options()));
    }
    Tensor r = cat(views, 0);
    if (maximize) r.neg_();
    return r;
  };
  // p += step * update (the update's slice of each parameter).
  auto add_grad = [&](double step, const Tensor& update) {
    int64_t offset = 0;
    for (const Tensor& p : params) {
      const int64_t n = p.numel();
      Tensor(p).add_(update.narrow(0, offset, n).view(p.sizes()), step);
      offset += n;
    }
  };
  auto loss_value = [maximize](const Tensor& loss) {
    BRISK_CHECK(loss.defined() && loss.numel() == 1, "LBFGS", "the closure must return the loss as a one-element tensor");
    const double v = loss.item<double>();
    return maximize ? -v : v;
  };

  State& st = state_lbfgs_;
  Tensor orig_loss = evaluate();
  double loss = loss_value(orig_loss);
  int64_t current_evals = 1;
  st.func_evals += 1;
  Tensor g = flat_grad();
  if (abs_max(g) <= tolerance_grad) return orig_loss;

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    ++n_iter;
    ++st.n_iter;
    // The direction: steepest descent first, then the two-loop recursion
    // over the stored curvature pairs (y, s).
    if (st.n_iter == 1) {
      st.d = g.neg();
      st.old_dirs.clear();
      st.old_stps.clear();
      st.ro.clear();
      st.H_diag = 1;
    } else {
      Tensor y = g.sub(st.prev_flat_grad);
      Tensor s = st.d.mul(st.t);
      const double ys = dotv(y, s);
      if (ys > 1e-10) {
        if (st.old_dirs.size() == history_size) {
          st.old_dirs.pop_front();
          st.old_stps.pop_front();
          st.ro.pop_front();
        }
        st.old_dirs.push_back(y);
        st.old_stps.push_back(s);
        st.ro.push_back(1.0 / ys);
        st.H_diag = ys / dotv(y, y);
      }
      const size_t num_old = st.old_dirs.size();
      if (st.al.size() < history_size) st.al.resize(history_size, 0.0);
      Tensor q = g.neg();
      for (size_t k = num_old; k-- > 0;) {
        st.al[k] = dotv(st.old_stps[k], q) * st.ro[k];
        q.add_(st.old_dirs[k], -st.al[k]);
      }
      Tensor r = q.mul(st.H_diag);
      for (size_t k = 0; k < num_old; ++k) {
        const double be_k = dotv(st.old_dirs[k], r) * st.ro[k];
        r.add_(st.old_stps[k], st.al[k] - be_k);
      }
      st.d = r;
    }
    if (!st.prev_flat_grad.defined())
      st.prev_flat_grad = g.clone(kContiguous);
    else
      st.prev_flat_grad.copy_(g);
    st.prev_loss = loss;
    st.has_prev_loss = true;

    // The step length: the first iteration scales by the gradient's size.
    st.t = st.n_iter == 1 ? std::min(1.0, 1.0 / g.abs().sum().item<double>()) * lr : lr;
    const double gtd = dotv(g, st.d);
    if (gtd > -tolerance_change) break;

    int64_t ls_func_evals = 0;
    bool opt_cond = false;
    if (o.line_search_fn()) {
      std::vector<Tensor> x_init;
      x_init.reserve(params.size());
      for (const Tensor& p : params) x_init.push_back(p.clone(kContiguous));
      auto eval_at = [&](double t) {
        add_grad(t, st.d);
        Evaluation e{loss_value(evaluate()), flat_grad()};
        for (size_t k = 0; k < params.size(); ++k) Tensor(params[k]).copy_(x_init[k]);
        return e;
      };
      LineSearchResult ls = strong_wolfe(eval_at, st.t, st.d, loss, g, gtd, 1e-4, 0.9, 1e-9, max_eval - current_evals);
      loss = ls.f;
      g = ls.g;
      st.t = ls.t;
      ls_func_evals = ls.evals;
      add_grad(st.t, st.d);
      opt_cond = abs_max(g) <= tolerance_grad;
    } else {
      add_grad(st.t, st.d);
      if (n_iter != max_iter) {
        // Re-evaluate for the next iteration's gradient (not after the last).
        loss = loss_value(evaluate());
        g = flat_grad();
        opt_cond = abs_max(g) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    st.func_evals += ls_func_evals;

    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (abs_max(st.d.mul(st.t)) <= tolerance_change) break;
    if (std::abs(loss - st.prev_loss) < tolerance_change) break;
  }
  return orig_loss;
}

// ---- state dict ------------------------------------------------------------------------

namespace {
Tensor scalar64(double v) { return scalar_tensor(v, kDouble); }
Tensor vector64(const std::vector<double>& v) {
  return v.empty() ? empty({0}, kDouble) : tensor(v, kDouble);
}
}  // namespace

StateDict LBFGS::state_dict() const {
  StateDict d = Optimizer::state_dict();
  const State& st = state_lbfgs_;
  if (st.func_evals == 0) return d;  // no state yet, as PyTorch's empty state
  const std::string sp = "state.0.";
  d[sp + "func_evals"] = scalar64(double(st.func_evals));
  d[sp + "n_iter"] = scalar64(double(st.n_iter));
  d[sp + "t"] = scalar64(st.t);
  d[sp + "H_diag"] = scalar64(st.H_diag);
  if (st.has_prev_loss) d[sp + "prev_loss"] = scalar64(st.prev_loss);
  if (st.d.defined()) d[sp + "d"] = st.d.detach().clone();
  if (st.prev_flat_grad.defined()) d[sp + "prev_flat_grad"] = st.prev_flat_grad.detach().clone();
  for (size_t k = 0; k < st.old_dirs.size(); ++k) {
    d[sp + "old_dirs." + std::to_string(k)] = st.old_dirs[k].detach().clone();
    d[sp + "old_stps." + std::to_string(k)] = st.old_stps[k].detach().clone();
  }
  d[sp + "ro"] = vector64(std::vector<double>(st.ro.begin(), st.ro.end()));
  d[sp + "al"] = vector64(st.al);
  return d;
}

void LBFGS::load_state_dict(const StateDict& dict) {
  // LBFGS's own keys are checked and read into a new State before anything changes.
  StateDict rest;
  State st;
  const std::string sp = "state.0.";
  int64_t numel = 0;
  for (const Tensor& p : groups_[0].params()) numel += p.numel();
  const Tensor& p0 = groups_[0].params().empty() ? Tensor() : groups_[0].params()[0];
  auto as_vector = [&](const std::string& key, const Tensor& t) {
    BRISK_CHECK(t.dim() == 1 && t.numel() == numel && p0.defined(), name_, "load_state_dict: '", key,
                "' has shape ", t.sizes(), " but the parameters have ", numel, " elements");
    return t.to(p0.device(), p0.dtype(), false, true).contiguous();
  };
  auto as_list = [](const Tensor& t) { return t.to(kDouble).contiguous().to_vector<double>(); };
  std::map<size_t, Tensor> dirs, stps;
  for (const auto& [key, t] : dict) {
    if (key.rfind("state.", 0) != 0) {
      rest.emplace(key, t);
      continue;
    }
    BRISK_CHECK(key.rfind(sp, 0) == 0, name_, "load_state_dict: key '", key, "' is not LBFGS state (state.0.<field>)");
    const std::string f = key.substr(sp.size());
    if (f == "func_evals") st.func_evals = int64_t(t.item<double>());
    else if (f == "n_iter") st.n_iter = int64_t(t.item<double>());
    else if (f == "t") st.t = t.item<double>();
    else if (f == "H_diag") st.H_diag = t.item<double>();
    else if (f == "prev_loss") st.prev_loss = t.item<double>(), st.has_prev_loss = true;
    else if (f == "d") st.d = as_vector(key, t);
    else if (f == "prev_flat_grad") st.prev_flat_grad = as_vector(key, t);
    else if (f == "ro") { auto v = as_list(t); st.ro.assign(v.begin(), v.end()); }
    else if (f == "al") st.al = as_list(t);
    else if (f.rfind("old_dirs.", 0) == 0) dirs[std::stoul(f.substr(9))] = as_vector(key, t);
    else if (f.rfind("old_stps.", 0) == 0) stps[std::stoul(f.substr(9))] = as_vector(key, t);
    else BRISK_FAIL(name_, "load_state_dict: unknown state field in '", key, "'");
  }
  BRISK_CHECK(dirs.size() == stps.size() && dirs.size() == st.ro.size(), name_,
              "load_state_dict: the history has ", dirs.size(), " directions, ", stps.size(), " steps and ",
              st.ro.size(), " curvatures");
  size_t k = 0;
  for (auto& [i, t] : dirs) {
    BRISK_CHECK(i == k++ && stps.count(i), name_, "load_state_dict: the history entries are not numbered 0..n-1");
    st.old_dirs.push_back(t);
    st.old_stps.push_back(stps[i]);
  }
  Optimizer::load_state_dict(rest);  // groups and options (checks before changing them)
  state_lbfgs_ = std::move(st);
}

}  // namespace brisk::optim
