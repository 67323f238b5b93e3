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

// Poisson draws come from the poisson op: one pass on any device, no sync
// (Note [Poisson sampling] in src/kernels/samplers.h).
Tensor poisson_sample(const Tensor& rate) { return brisk::poisson(rate); }

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
// Binomial draws come from the binomial op: one pass on any device, no sync
// (Note [Binomial sampling] in src/kernels/samplers.h).
Tensor binomial_sample(const Tensor& count, const Tensor& prob) { return brisk::binomial(count, prob); }

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
