// kl_divergence and its registry (include/brisk/distributions.h): the pairs
// torch.distributions.kl registers among brisk's families (torch 2.15), and
// the user's.
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <numbers>

#include "brisk/autograd.h"
#include "brisk/distributions.h"
#include "brisk/error.h"
#include "brisk/ops.h"

namespace brisk::distributions {

Tensor kl_mvn_mvn(const MultivariateNormal& p, const MultivariateNormal& q);  // multivariate_normal.cpp

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kEulerGamma = 0.57721566490153286060;
constexpr double kInf = std::numeric_limits<double>::infinity();

using Key = std::pair<std::type_index, std::type_index>;

struct Registry {
  std::mutex mu;
  std::map<Key, KLFn> fns;
};

Tensor infinite_like(const Tensor& t) { return full_like(t, kInf); }

Tensor sum_rightmost(const Tensor& t, int64_t n) {
  if (n <= 0) return t;
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i) d.push_back(-i);
  return t.sum(d);
}

template <class P, class Q, class F>
void add(std::map<Key, KLFn>& m, F f) {
  m[{std::type_index(typeid(P)), std::type_index(typeid(Q))}] = [f](const Distribution& p, const Distribution& q) {
    return f(static_cast<const P&>(p), static_cast<const Q&>(q));
  };
}

void builtin(std::map<Key, KLFn>& m) {
  add<Normal, Normal>(m, [](const Normal& p, const Normal& q) {
    const Tensor var_ratio = (p.scale / q.scale).square();
    const Tensor t1 = ((p.loc - q.loc) / q.scale).square();
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log());
  });
  add<Bernoulli, Bernoulli>(m, [](const Bernoulli& p, const Bernoulli& q) {
    Tensor t1 = p.probs * ((-q.logits).softplus() - (-p.logits).softplus());
    t1 = where(q.probs == 0, kInf, t1);
    t1 = where(p.probs == 0, 0.0, t1);
    Tensor t2 = (1 - p.probs) * (q.logits.softplus() - p.logits.softplus());
    t2 = where(q.probs == 1, kInf, t2);
    t2 = where(p.probs == 1, 0.0, t2);
    return t1 + t2;
  });
  auto categorical = [](const Categorical& p, const Categorical& q) {
    Tensor t = p.probs * (p.logits - q.logits);
    t = where((q.probs == 0).expand_as(t), kInf, t);
    t = where((p.probs == 0).expand_as(t), 0.0, t);
    return t.sum({-1});
  };
  add<Categorical, Categorical>(m, categorical);
  add<OneHotCategorical, OneHotCategorical>(
      m, [categorical](const OneHotCategorical& p, const OneHotCategorical& q) {
        return categorical(p.categorical, q.categorical);
      });
  add<Geometric, Geometric>(m, [](const Geometric& p, const Geometric& q) {
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits;
  });
  add<Exponential, Exponential>(m, [](const Exponential& p, const Exponential& q) {
    const Tensor rate_ratio = q.rate / p.rate;
    return -rate_ratio.log() + rate_ratio - 1;
  });
  add<Uniform, Uniform>(m, [](const Uniform& p, const Uniform& q) {
    const Tensor r = ((q.high - q.low) / (p.high - p.low)).log();
    return where(logical_or(q.low > p.low, q.high < p.high), kInf, r);
  });
  add<Laplace, Laplace>(m, [](const Laplace& p, const Laplace& q) {
    const Tensor scale_ratio = p.scale / q.scale;
    const Tensor loc_abs_diff = (p.loc - q.loc).abs();
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1;
  });
  add<Gumbel, Gumbel>(m, [](const Gumbel& p, const Gumbel& q) {
    const Tensor ct1 = p.scale / q.scale, ct2 = q.loc / q.scale, ct3 = p.loc / q.scale;
    const Tensor t1 = -ct1.log() - ct2 + ct3;
    const Tensor t2 = ct1 * kEulerGamma;
    const Tensor t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp();
    return t1 + t2 + t3 - (1 + kEulerGamma);
  });
  add<Cauchy, Cauchy>(m, [](const Cauchy& p, const Cauchy& q) {
    const Tensor t1 = ((p.scale + q.scale).square() + (p.loc - q.loc).square()).log();
    return t1 - (4 * p.scale * q.scale).log();
  });
  add<Independent, Independent>(m, [](const Independent& p, const Independent& q) {
    BRISK_CHECK(p.reinterpreted_batch_ndims == q.reinterpreted_batch_ndims, "kl_divergence",
                "Independent distributions reinterpret ", p.reinterpreted_batch_ndims, " and ",
                q.reinterpreted_batch_ndims, " batch dims: KL is not defined between them");
    return sum_rightmost(kl_divergence(*p.base, *q.base), p.reinterpreted_batch_ndims);
  });
  add<TransformedDistribution, TransformedDistribution>(
      m, [](const TransformedDistribution& p, const TransformedDistribution& q) {
        bool same = p.transforms.size() == q.transforms.size();
        for (size_t i = 0; same && i < p.transforms.size(); ++i) same = p.transforms[i]->equals(*q.transforms[i]);
        BRISK_CHECK(same, "kl_divergence", p.name(), " and ", q.name(),
                    " push their bases through different transforms: no closed form (PyTorch neither)");
        BRISK_CHECK(p.event_shape() == q.event_shape(), "kl_divergence", "event shapes differ");
        return kl_divergence(*p.base, *q.base);
      });
  // Cross-family pairs.
  add<Exponential, Gumbel>(m, [](const Exponential& p, const Gumbel& q) {
    const Tensor scale_rate_prod = p.rate * q.scale;
    const Tensor loc_scale_ratio = q.loc / q.scale;
    const Tensor t1 = scale_rate_prod.log() - 1;
    const Tensor t2 = loc_scale_ratio.exp() * scale_rate_prod / (scale_rate_prod + 1);
    return t1 - loc_scale_ratio + t2 + scale_rate_prod.reciprocal();
  });
  add<Exponential, Normal>(m, [](const Exponential& p, const Normal& q) {
    const Tensor var_normal = q.scale.square(), rate_sqr = p.rate.square();
    const Tensor t1 = 0.5 * (rate_sqr * var_normal * (2 * kPi)).log();
    const Tensor t2 = rate_sqr.reciprocal(), t3 = q.loc / p.rate, t4 = q.loc.square() * 0.5;
    return t1 - 1 + (t2 - t3 + t4) / var_normal;
  });
  add<Gumbel, Normal>(m, [](const Gumbel& p, const Normal& q) {
    const Tensor param_ratio = p.scale / q.scale;
    const Tensor t1 = (param_ratio / std::sqrt(2 * kPi)).log();
    const Tensor t2 = (kPi * param_ratio * 0.5).square() / 3;
    const Tensor t3 = ((p.loc + p.scale * kEulerGamma - q.loc) / q.scale).square() * 0.5;
    return -t1 + t2 + t3 - (kEulerGamma + 1);
  });
  add<Laplace, Normal>(m, [](const Laplace& p, const Normal& q) {
    const Tensor var_normal = q.scale.square();
    const Tensor scale_sqr_var_ratio = p.scale.square() / var_normal;
    const Tensor t1 = 0.5 * (2 * scale_sqr_var_ratio / kPi).log();
    const Tensor t2 = 0.5 * p.loc.square(), t3 = p.loc * q.loc, t4 = 0.5 * q.loc.square();
    return -t1 + scale_sqr_var_ratio + (t2 - t3 + t4) / var_normal - 1;
  });
  add<Normal, Gumbel>(m, [](const Normal& p, const Gumbel& q) {
    const Tensor mean_scale_ratio = p.loc / q.scale;
    const Tensor var_scale_sqr_ratio = (p.scale / q.scale).square();
    const Tensor loc_scale_ratio = q.loc / q.scale;
    const Tensor t1 = var_scale_sqr_ratio.log() * 0.5;
    const Tensor t2 = mean_scale_ratio - loc_scale_ratio;
    const Tensor t3 = (-mean_scale_ratio + 0.5 * var_scale_sqr_ratio + loc_scale_ratio).exp();
    return -t1 + t2 + t3 - (0.5 * (1 + std::log(2 * kPi)));
  });
  add<Normal, Laplace>(m, [](const Normal& p, const Laplace& q) {
    const Tensor loc_diff = p.loc - q.loc;
    const Tensor scale_ratio = p.scale / q.scale;
    const Tensor loc_diff_scale_ratio = loc_diff / p.scale;
    const Tensor t1 = scale_ratio.log();
    const Tensor t2 = std::sqrt(2 / kPi) * p.scale * (-0.5 * loc_diff_scale_ratio.square()).exp();
    const Tensor t3 = loc_diff * erf(std::sqrt(0.5) * loc_diff_scale_ratio);
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + std::log(0.5 * kPi)));
  });
  add<Uniform, Exponential>(m, [](const Uniform& p, const Exponential& q) {
    const Tensor r = q.rate * (p.high + p.low) / 2 - ((p.high - p.low) * q.rate).log();
    return where(p.low < 0, kInf, r);
  });
  add<Uniform, Gumbel>(m, [](const Uniform& p, const Gumbel& q) {
    const Tensor common_term = q.scale / (p.high - p.low);
    const Tensor high_loc_diff = (p.high - q.loc) / q.scale, low_loc_diff = (p.low - q.loc) / q.scale;
    const Tensor t1 = common_term.log() + 0.5 * (high_loc_diff + low_loc_diff);
    const Tensor t2 = common_term * ((-high_loc_diff).exp() - (-low_loc_diff).exp());
    return t1 - t2;
  });
  add<Uniform, Normal>(m, [](const Uniform& p, const Normal& q) {
    const Tensor common_term = p.high - p.low;
    const Tensor t1 = (std::sqrt(kPi * 2) * q.scale / common_term).log();
    const Tensor t2 = common_term.square() / 12;
    const Tensor t3 = ((p.high + p.low - 2 * q.loc) / 2).square();
    return t1 + 0.5 * (t2 + t3) / q.scale.square();
  });
  // The gamma family.
  add<Gamma, Gamma>(m, [](const Gamma& p, const Gamma& q) {
    const Tensor t1 = q.concentration * (p.rate / q.rate).log();
    const Tensor t2 = q.concentration.lgamma() - p.concentration.lgamma();
    const Tensor t3 = (p.concentration - q.concentration) * p.concentration.digamma();
    const Tensor t4 = (q.rate - p.rate) * (p.concentration / p.rate);
    return t1 + t2 + t3 + t4;
  });
  add<Beta, Beta>(m, [](const Beta& p, const Beta& q) {
    const Tensor sp = p.concentration1 + p.concentration0, sq = q.concentration1 + q.concentration0;
    const Tensor t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sp.lgamma();
    const Tensor t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sq.lgamma();
    const Tensor t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma();
    const Tensor t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma();
    const Tensor t5 = (sq - sp) * sp.digamma();
    return t1 - t2 + t3 + t4 + t5;
  });
  add<Dirichlet, Dirichlet>(m, [](const Dirichlet& p, const Dirichlet& q) {
    const Tensor sp = p.concentration.sum({-1}), sq = q.concentration.sum({-1});
    const Tensor t1 = sp.lgamma() - sq.lgamma();
    const Tensor t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum({-1});
    const Tensor t3 = p.concentration - q.concentration;
    const Tensor t4 = p.concentration.digamma() - sp.digamma().unsqueeze(-1);
    return t1 - t2 + (t3 * t4).sum({-1});
  });
  add<Beta, Exponential>(m, [](const Beta& p, const Exponential& q) {
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration1 / (p.concentration1 + p.concentration0));
  });
  add<Beta, Gamma>(m, [](const Beta& p, const Gamma& q) {
    const Tensor t1 = -p.entropy();
    const Tensor t2 = q.concentration.lgamma() - q.concentration * q.rate.log();
    const Tensor t3 =
        (q.concentration - 1) * (p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma());
    const Tensor t4 = q.rate * p.concentration1 / (p.concentration1 + p.concentration0);
    return t1 + t2 - t3 + t4;
  });
  add<Beta, Normal>(m, [](const Beta& p, const Normal& q) {
    const Tensor e = p.concentration1 / (p.concentration1 + p.concentration0);
    const Tensor var_normal = q.scale.square();
    const Tensor t1 = -p.entropy();
    const Tensor t2 = 0.5 * (var_normal * 2 * kPi).log();
    const Tensor t3 = (e * (1 - e) / (p.concentration1 + p.concentration0 + 1) + e.square()) * 0.5;
    const Tensor t4 = q.loc * e, t5 = q.loc.square() * 0.5;
    return t1 + t2 + (t3 - t4 + t5) / var_normal;
  });
  add<Beta, Uniform>(m, [](const Beta& p, const Uniform& q) {
    const Tensor r = -p.entropy() + (q.high - q.low).log();
    return where(logical_or(q.low > 0, q.high < 1), kInf, r);
  });
  add<Exponential, Gamma>(m, [](const Exponential& p, const Gamma& q) {
    const Tensor ratio = q.rate / p.rate;
    return -q.concentration * ratio.log() + ratio + q.concentration.lgamma() + q.concentration * kEulerGamma -
           (1 + kEulerGamma);
  });
  add<Gamma, Exponential>(m, [](const Gamma& p, const Exponential& q) {
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate;
  });
  add<Gamma, Gumbel>(m, [](const Gamma& p, const Gumbel& q) {
    const Tensor beta_scale_prod = p.rate * q.scale;
    const Tensor loc_scale_ratio = q.loc / q.scale;
    const Tensor t1 = (p.concentration - 1) * p.concentration.digamma() - p.concentration.lgamma() - p.concentration;
    const Tensor t2 = beta_scale_prod.log() + p.concentration / beta_scale_prod;
    const Tensor t3 = loc_scale_ratio.exp() * (1 + beta_scale_prod.reciprocal()).pow(-p.concentration) -
                      loc_scale_ratio;
    return t1 + t2 + t3;
  });
  add<Gamma, Normal>(m, [](const Gamma& p, const Normal& q) {
    const Tensor var_normal = q.scale.square(), beta_sqr = p.rate.square();
    const Tensor t1 = 0.5 * (beta_sqr * var_normal * 2 * kPi).log() - p.concentration - p.concentration.lgamma();
    const Tensor t2 = 0.5 * (p.concentration.square() + p.concentration) / beta_sqr;
    const Tensor t3 = q.loc * p.concentration / p.rate, t4 = 0.5 * q.loc.square();
    return t1 + (p.concentration - 1) * p.concentration.digamma() + (t2 - t3 + t4) / var_normal;
  });
  auto x_log_x = [](const Tensor& t) { return where(t == 0, 0.0, t * t.log()); };
  add<Uniform, Beta>(m, [x_log_x](const Uniform& p, const Beta& q) {
    const Tensor common_term = p.high - p.low;
    const Tensor t1 = common_term.log();
    const Tensor t2 =
        (q.concentration1 - 1) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term;
    const Tensor t3 =
        (q.concentration0 - 1) * (x_log_x(1 - p.high) - x_log_x(1 - p.low) + common_term) / common_term;
    const Tensor t4 = q.concentration1.lgamma() + q.concentration0.lgamma() -
                      (q.concentration1 + q.concentration0).lgamma();
    const Tensor r = t3 + t4 - t1 - t2;
    return where(logical_or(p.high > 1, p.low < 0), kInf, r);
  });
  add<Uniform, Gamma>(m, [x_log_x](const Uniform& p, const Gamma& q) {
    const Tensor common_term = p.high - p.low;
    const Tensor t1 = common_term.log();
    const Tensor t2 = q.concentration.lgamma() - q.concentration * q.rate.log();
    const Tensor t3 = (1 - q.concentration) * (x_log_x(p.high) - x_log_x(p.low) - common_term) / common_term;
    const Tensor t4 = q.rate * (p.high + p.low) / 2;
    return where(p.low < 0, kInf, -t1 + t2 + t3 + t4);
  });
  add<Exponential, Beta>(m, [](const Exponential& p, const Beta&) { return infinite_like(p.rate); });
  add<Gamma, Uniform>(m, [](const Gamma& p, const Uniform&) { return infinite_like(p.concentration); });
  add<Gamma, Beta>(m, [](const Gamma& p, const Beta&) { return infinite_like(p.concentration); });
  add<Gumbel, Gamma>(m, [](const Gumbel& p, const Gamma&) { return infinite_like(p.loc); });
  add<Gumbel, Beta>(m, [](const Gumbel& p, const Beta&) { return infinite_like(p.loc); });
  add<Laplace, Gamma>(m, [](const Laplace& p, const Gamma&) { return infinite_like(p.loc); });
  add<Laplace, Beta>(m, [](const Laplace& p, const Beta&) { return infinite_like(p.loc); });
  add<Normal, Gamma>(m, [](const Normal& p, const Gamma&) { return infinite_like(p.loc); });
  add<Normal, Beta>(m, [](const Normal& p, const Beta&) { return infinite_like(p.loc); });
  add<MultivariateNormal, MultivariateNormal>(m, [](const MultivariateNormal& p, const MultivariateNormal& q) {
    return kl_mvn_mvn(p, q);
  });
  // Counting distributions.
  add<Poisson, Poisson>(m, [](const Poisson& p, const Poisson& q) {
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate);
  });
  add<Bernoulli, Poisson>(m, [](const Bernoulli& p, const Poisson& q) {
    return -p.entropy() - (p.probs * q.rate.log() - q.rate);
  });
  add<Binomial, Binomial>(m, [](const Binomial& p, const Binomial& q) {
    BRISK_CHECK(!(p.total_count < q.total_count).any().item<bool>(), "kl_divergence",
                "KL between Binomials where q.total_count > p.total_count is not defined in closed form (PyTorch "
                "neither)");
    const Tensor kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p());
    return where(p.total_count > q.total_count, kInf, kl);
  });
  add<Poisson, Binomial>(m, [](const Poisson& p, const Binomial&) { return infinite_like(p.rate); });
  add<Poisson, Bernoulli>(m, [](const Poisson& p, const Bernoulli&) { return infinite_like(p.rate); });
  // Pairs whose q has no mass where p has some: infinite everywhere.
  add<Exponential, Uniform>(m, [](const Exponential& p, const Uniform&) { return infinite_like(p.rate); });
  add<Gumbel, Uniform>(m, [](const Gumbel& p, const Uniform&) { return infinite_like(p.loc); });
  add<Gumbel, Exponential>(m, [](const Gumbel& p, const Exponential&) { return infinite_like(p.loc); });
  add<Laplace, Uniform>(m, [](const Laplace& p, const Uniform&) { return infinite_like(p.loc); });
  add<Laplace, Exponential>(m, [](const Laplace& p, const Exponential&) { return infinite_like(p.loc); });
  add<Normal, Uniform>(m, [](const Normal& p, const Uniform&) { return infinite_like(p.loc); });
  add<Normal, Exponential>(m, [](const Normal& p, const Exponential&) { return infinite_like(p.loc); });
}

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    builtin(reg->fns);
    return reg;
  }();
  return *r;
}

}  // namespace

void register_kl(std::type_index p, std::type_index q, KLFn fn) {
  BRISK_CHECK(fn != nullptr, "register_kl", "the function is empty");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.fns[{p, q}] = std::move(fn);
}

// Note [KL dispatch]: PyTorch takes, among the registered pairs whose
// classes p and q are instances of, the one whose p class comes first in
// p's method resolution order, then whose q class comes first in q's. brisk
// does the same over lineage() (the class, then its bases): LogNormal's
// pair is (LogNormal, LogNormal) if registered, else (TransformedDistribution,
// TransformedDistribution).
Tensor kl_divergence(const Distribution& p, const Distribution& q) {
  const auto lp = p.lineage(), lq = q.lineage();
  KLFn fn;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (const auto& a : lp) {
      for (const auto& b : lq) {
        auto it = r.fns.find({a, b});
        if (it != r.fns.end()) {
          fn = it->second;
          break;
        }
      }
      if (fn) break;
    }
  }
  BRISK_CHECK(fn != nullptr, "kl_divergence", "no KL divergence is registered for ", p.name(), " || ", q.name(),
              " (PyTorch's pairs among brisk's families are; add one with register_kl<P, Q>)");
  return fn(p, q);
}

}  // namespace brisk::distributions
