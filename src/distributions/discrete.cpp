// Counting distributions of brisk::distributions: Poisson, Binomial,
// Multinomial (formulas of torch.distributions, torch 2.15).
#include <cmath>
#include <limits>

#include "brisk/distributions.h"
#include "brisk/error.h"
#include "distributions/common.h"

namespace brisk::distributions {

using namespace detail;

// ---- Poisson -----------------------------------------------------------------------------

namespace {

// Note [Poisson sampling]
// With tensor ops, so any device works: below rate 10 by inversion (walk
// the CDF from k = 0 with one uniform per element, all elements a step at
// a time until every one has stopped; about rate + 1 steps), above by
// Hormann's PTRS transformed rejection (1993), about 1.1 rounds of two
// uniforms per element. Rate 0 gives 0.
Tensor poisson_sample(const Tensor& rate) {
  NoGradGuard ng;
  const std::vector<int64_t> shape = dims(rate);
  const Tensor small = rate < 10;
  Tensor out = zeros_like(rate);
  // inversion for the small rates (the large ones run with rate 0 here)
  {
    const Tensor lam = where(small, rate, 0.0);
    const Tensor u = rand(shape, rate.options());
    Tensor k = zeros_like(rate), p = (-lam).exp(), cdf = p.clone();
    Tensor going = logical_and(small, u > cdf);
    for (int step = 1; step < 1000 && going.any().item<bool>(); ++step) {
      k = where(going, k + 1, k);
      p = where(going, p * lam / static_cast<double>(step), p);
      cdf = where(going, cdf + p, cdf);
      going = logical_and(going, u > cdf);
    }
    out = where(small, k, out);
  }
  if (!logical_not(small).any().item<bool>()) return out;
  // PTRS for the large rates
  const Tensor lam = where(small, 10.0, rate);
  const Tensor slam = lam.sqrt(), loglam = lam.log();
  const Tensor b = 0.931 + 2.53 * slam;
  const Tensor a = -0.059 + 0.02483 * b;
  const Tensor invalpha = 1.1239 + 1.1328 / (b - 3.4);
  const Tensor vr = 0.9277 - 3.6224 / (b - 2);
  Tensor pending = logical_not(small);
  Tensor big = zeros_like(rate);
  for (int round = 0; round < 1000 && pending.any().item<bool>(); ++round) {
    const Tensor U = rand(shape, rate.options()) - 0.5;
    const Tensor V = rand(shape, rate.options());
    const Tensor us = 0.5 - U.abs();
    const Tensor k = ((2 * a / us + b) * U + lam + 0.43).floor();
    const Tensor quick = logical_and(us >= 0.07, V <= vr);
    const Tensor reject = logical_or(k < 0, logical_and(us < 0.013, V > us));
    const Tensor lhs = V.log() + invalpha.log() - (a / us.square() + b).log();
    const Tensor rhs = -lam + k * loglam - (k + 1).lgamma();
    const Tensor ok = logical_or(quick, logical_and(logical_not(reject), lhs <= rhs));
    const Tensor take = logical_and(ok, pending);
    big = where(take, k, big);
    pending = logical_and(pending, logical_not(ok));
  }
  return where(small, out, big);
}

}  // namespace

Poisson::Poisson(const Tensor& r, std::optional<bool> v) : Distribution(dims(r), {}, v), rate(r) {
  check_param("rate", rate, constraints::nonnegative());
}
Poisson::Poisson(double r, std::optional<bool> v) : Poisson(scalar(r), v) {}
Tensor Poisson::sample(const std::vector<int64_t>& shape) const {
  return poisson_sample(rate.expand(extended_shape(shape)).contiguous());
}
Tensor Poisson::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto [r, x] = broadcast2(rate, value.to(rate.dtype()));
  return xlogy(x, r) - r - (x + 1).lgamma();
}
DistributionPtr Poisson::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Poisson>(rate.expand(bs), validate_);
}

// ---- Binomial ----------------------------------------------------------------------------

namespace {
Tensor count_tensor(int64_t n) { return tensor({static_cast<float>(n)}).reshape({}); }
}  // namespace

Binomial::Binomial(const Tensor& n, Probs p, std::optional<bool> v) : Distribution({}, {}, v) {
  std::tie(total_count, probs) = broadcast2(n.to(p.t.dtype()), p.t);
  batch_shape_ = dims(probs);
  check_param("total_count", total_count, constraints::nonnegative_integer());
  check_param("probs", probs, constraints::unit_interval());
  logits = binary_probs_to_logits(probs);
}
Binomial::Binomial(const Tensor& n, Logits l, std::optional<bool> v) : Distribution({}, {}, v) {
  std::tie(total_count, logits) = broadcast2(n.to(l.t.dtype()), l.t);
  batch_shape_ = dims(logits);
  check_param("total_count", total_count, constraints::nonnegative_integer());
  check_param("logits", logits, constraints::real());
  probs = logits.sigmoid();
}
Binomial::Binomial(int64_t n, Probs p, std::optional<bool> v) : Binomial(count_tensor(n), std::move(p), v) {}
Binomial::Binomial(int64_t n, Logits l, std::optional<bool> v) : Binomial(count_tensor(n), std::move(l), v) {}
// Note [Binomial sampling]
// As PyTorch's sampler, with tensor ops: with q = min(p, 1 - p) (a draw for
// p > 1/2 is n minus one for 1 - p), elements with n q < 10 count the
// geometric waiting times between successes until they pass n (about n q + 1
// steps, all elements a step at a time), the others run Hormann's BTRS
// transformed rejection (1993; about 1.2 rounds of two uniforms). Where BTRS
// bounds log f(k) / f(m) with Stirling tails, this one evaluates it exactly
// with lgamma: the same acceptance test, a few more flops. In float64
// internally (n up to 2^53 stays exact), returned in probs' dtype.
Tensor binomial_sample(const Tensor& count_in, const Tensor& prob_in) {
  NoGradGuard ng;
  const Tensor n = count_in.to(kDouble), p = prob_in.to(kDouble);
  const std::vector<int64_t> shape = dims(n);
  const Tensor flip = p > 0.5;
  const Tensor q = where(flip, 1 - p, p);
  const Tensor small = n * q < 10;
  const TensorOptions opts = n.options();
  Tensor k_small = zeros_like(n);
  if (small.any().item<bool>()) {
    // waiting times: ceil(log U / log(1 - q)) trials per success
    const Tensor qs = where(small, q, 0.0);
    const Tensor ns = where(small, n, 0.0);
    const Tensor log1mq = (-qs).log1p();
    Tensor sum = zeros_like(n);
    Tensor going = small.clone();
    for (int64_t step = 0; step < (int64_t{1} << 20) && going.any().item<bool>(); ++step) {
      const Tensor geom = (rand(shape, opts).log() / log1mq).ceil();
      sum = sum + where(going, geom, 0.0);
      going = logical_and(going, sum <= ns);
      k_small = where(going, k_small + 1, k_small);
    }
  }
  Tensor k_big = zeros_like(n);
  Tensor pending = logical_not(small);
  if (pending.any().item<bool>()) {
    const Tensor nb = where(small, 100.0, n), qb = where(small, 0.25, q);  // harmless values where unused
    const Tensor sd = (nb * qb * (1 - qb)).sqrt();
    const Tensor b = 1.15 + 2.53 * sd;
    const Tensor a = -0.0873 + 0.0248 * b + 0.01 * qb;
    const Tensor c = nb * qb + 0.5;
    const Tensor vr = 0.92 - 4.2 / b;
    const Tensor log_r = qb.log() - (-qb).log1p();
    const Tensor alpha = (2.83 + 5.1 / b) * sd;
    const Tensor m = ((nb + 1) * qb).floor();
    const Tensor log_fm = -(m + 1).lgamma() - (nb - m + 1).lgamma();
    for (int round = 0; round < 10000 && pending.any().item<bool>(); ++round) {
      const Tensor U = rand(shape, opts) - 0.5;
      const Tensor V = rand(shape, opts);
      const Tensor us = 0.5 - U.abs();
      const Tensor k = ((2 * a / us + b) * U + c).floor();
      const Tensor inside = logical_and(k >= 0, k <= nb);
      const Tensor quick = logical_and(us >= 0.07, V <= vr);
      // log f(k) - log f(m), exactly
      const Tensor kk = k.clamp(0).minimum(nb);
      const Tensor log_ratio = (kk - m) * log_r - (kk + 1).lgamma() - (nb - kk + 1).lgamma() - log_fm;
      const Tensor lhs = (V * alpha / (a / us.square() + b)).log();
      const Tensor ok = logical_and(inside, logical_or(quick, lhs <= log_ratio));
      k_big = where(logical_and(ok, pending), k, k_big);
      pending = logical_and(pending, logical_not(ok));
    }
    BRISK_CHECK(!pending.any().item<bool>(), "Binomial", "internal: BTRS did not accept within 10000 rounds");
  }
  const Tensor k = where(small, k_small, k_big);
  return where(flip, n - k, k).to(prob_in.dtype());
}

Tensor Binomial::sample(const std::vector<int64_t>& shape) const {
  const std::vector<int64_t> full = extended_shape(shape);
  return binomial_sample(total_count.expand(full).contiguous(), probs.expand(full).contiguous());
}

// PyTorch's: -sum_k f(k) log f(k) over the support 0..n, for one n shared
// by every batch element.
Tensor Binomial::entropy() const {
  NoGradGuard ng;
  if (total_count.numel() == 0) return zeros(batch_shape(), probs.options());
  const double nmax = total_count.max().item<double>(), nmin = total_count.min().item<double>();
  BRISK_CHECK(nmin == nmax, "Binomial", "entropy: an inhomogeneous total_count is not supported (as in PyTorch): ",
              "total_count ranges from ", nmin, " to ", nmax);
  BRISK_CHECK(nmax <= (int64_t{1} << 24), "Binomial", "entropy enumerates the support: total_count ", nmax,
              " is too large");
  const std::vector<int64_t> bs = batch_shape();
  const Tensor values = arange(static_cast<int64_t>(nmax) + 1, probs.options())
                            .view(concat({static_cast<int64_t>(nmax) + 1}, std::vector<int64_t>(bs.size(), 1)))
                            .expand(concat({static_cast<int64_t>(nmax) + 1}, bs));
  const Tensor lp = log_prob(values);
  return -(lp.exp() * lp).sum({0});
}
Tensor Binomial::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor log_factorial_n = (total_count + 1).lgamma();
  const Tensor log_factorial_k = (value + 1).lgamma();
  const Tensor log_factorial_nmk = (total_count - value + 1).lgamma();
  const Tensor normalize_term =
      total_count * logits.clamp_min(0) + total_count * (-logits.abs()).exp().log1p() - log_factorial_n;
  return value * logits - log_factorial_k - log_factorial_nmk - normalize_term;
}
Constraint Binomial::support() const {
  const Tensor n = total_count;
  return {"IntegerInterval(lower_bound=0, upper_bound=total_count)",
          [n](const Tensor& v) { return logical_and(logical_and(v >= 0, v <= n), v == v.floor()); }, true};
}
DistributionPtr Binomial::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Binomial>(total_count.expand(bs), distributions::probs(probs.expand(bs)), validate_);
}

// ---- Multinomial -------------------------------------------------------------------------

namespace {
std::vector<int64_t> multinomial_batch(const Tensor& t) {
  BRISK_CHECK(t.defined() && t.dim() >= 1, "Multinomial", "probs/logits must be at least one-dimensional");
  auto d = dims(t);
  d.pop_back();
  return d;
}
}  // namespace

Multinomial::Multinomial(int64_t n, Probs p, std::optional<bool> v)
    : Distribution(multinomial_batch(p.t), {p.t.size(-1)}, v), total_count(n), categorical(p, v) {
  BRISK_CHECK(n >= 0, "Multinomial", "total_count must be nonnegative, got ", n);
}
Multinomial::Multinomial(int64_t n, Logits l, std::optional<bool> v)
    : Distribution(multinomial_batch(l.t), {l.t.size(-1)}, v), total_count(n), categorical(l, v) {
  BRISK_CHECK(n >= 0, "Multinomial", "total_count must be nonnegative, got ", n);
}
Tensor Multinomial::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  const int64_t k = categorical.num_events();
  if (total_count == 0) return zeros(extended_shape(shape), categorical.probs.options());
  // total_count categorical draws per sample, counted per category
  const Tensor draws = categorical.sample(concat({total_count}, shape));  // (n, sample..., batch...)
  const Tensor hits = eq(draws.unsqueeze(-1), arange(k, TensorOptions(kInt64).device(draws.device())));
  return hits.to(categorical.probs.dtype()).sum({0});
}
Tensor Multinomial::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto [l, x] = broadcast2(categorical.logits, value.to(categorical.logits.dtype()));
  const Tensor lz = where(logical_and(x == 0, l == -std::numeric_limits<double>::infinity()), 0.0, l);
  return (x.sum({-1}) + 1).lgamma() - (x + 1).lgamma().sum({-1}) + (lz * x).sum({-1});
}
// n H(categorical) - log n! + sum over categories of E[log k!] under each
// category's Binomial(n, p) marginal (k = 1..n), as PyTorch.
Tensor Multinomial::entropy() const {
  const double n = static_cast<double>(total_count);
  const Tensor& p = categorical.probs;
  const Tensor term1 = n * categorical.entropy() - std::lgamma(n + 1);
  if (total_count == 0) return term1;
  std::vector<int64_t> kshape(static_cast<size_t>(p.dim()) + 1, 1);
  kshape[0] = total_count;
  const Tensor k = arange(1, total_count + 1, TensorOptions(p.dtype()).device(p.device())).view(kshape);
  const Tensor log_pmf = Binomial(full_like(p, n), distributions::probs(p), false).log_prob(k);  // (n, batch..., K)
  std::vector<int64_t> reduce{0, -1};
  return term1 + (log_pmf.exp() * (k + 1).lgamma()).sum(reduce);
}

Constraint Multinomial::support() const {
  const double n = static_cast<double>(total_count);
  return {"Multinomial support (nonnegative integer counts summing to total_count)",
          [n](const Tensor& v) {
            return logical_and(logical_and(v >= 0, v == v.floor()).all(-1), v.sum(-1) == n);
          },
          true, 1};
}
DistributionPtr Multinomial::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Multinomial>(
      total_count, distributions::logits(categorical.logits.expand(concat(bs, {categorical.num_events()}))),
      validate_);
}

}  // namespace brisk::distributions
