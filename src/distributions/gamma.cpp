// The gamma family of brisk::distributions: Gamma, Chi2, Dirichlet, Beta,
// StudentT (formulas of torch.distributions, torch 2.15).
#include <cmath>
#include <limits>
#include <numbers>

#include "brisk/distributions.h"
#include "brisk/error.h"
#include "autograd/function.h"
#include "distributions/common.h"

namespace brisk::distributions {

using namespace detail;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Standard Gamma draws come from the _standard_gamma op: one pass on any
// device, no sync (Note [Gamma sampling] in src/kernels/samplers.h).
Tensor standard_gamma(const Tensor& alpha) { return brisk::_standard_gamma(alpha.detach()); }

/// x ~ Gamma(alpha, 1) with gradients to alpha: the _standard_gamma op
/// records them (Note [Implicit reparameterization] in src/kernels/samplers.h).
Tensor standard_gamma_rsample(const Tensor& alpha) { return brisk::_standard_gamma(alpha); }

}  // namespace

// ---- Gamma -------------------------------------------------------------------------------

Gamma::Gamma(const Tensor& c, const Tensor& r, std::optional<bool> v) : Distribution({}, {}, v) {
  std::tie(concentration, rate) = broadcast2(c, r);
  batch_shape_ = dims(concentration);
  check_param("concentration", concentration, constraints::positive());
  check_param("rate", rate, constraints::positive());
}
Gamma::Gamma(double c, double r, std::optional<bool> v) : Gamma(scalar(c), scalar(r), v) {}
Tensor Gamma::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  const std::vector<int64_t> full = extended_shape(shape);
  return standard_gamma(concentration.expand(full).contiguous()) / rate.expand(full);
}
Tensor Gamma::log_prob(const Tensor& value) const {
  validate_sample(value);
  return xlogy(concentration, rate) + xlogy(concentration - 1, value) - rate * value - concentration.lgamma();
}
Tensor Gamma::cdf(const Tensor& value) const {
  validate_sample(value);
  BRISK_CHECK(!(concentration.requires_grad() && GradMode::is_enabled()), "Gamma",
              "cdf: the derivative with respect to the concentration is not implemented (PyTorch's gammainc has "
              "none either); detach the concentration or call it under NoGradGuard");
  auto b = broadcast_tensors({concentration, rate, value.to(concentration.dtype())});
  // P(a, rate * value): igamma is differentiable in its second argument
  return brisk::igamma(b[0].detach(), b[1] * b[2]);
}

Tensor Gamma::entropy() const {
  return concentration - rate.log() + concentration.lgamma() + (1.0 - concentration) * concentration.digamma();
}
Tensor Gamma::rsample(const std::vector<int64_t>& shape) const {
  const std::vector<int64_t> full = extended_shape(shape);
  return standard_gamma_rsample(concentration.expand(full)) / rate.expand(full);
}
DistributionPtr Gamma::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Gamma>(concentration.expand(bs), rate.expand(bs), validate_);
}

// ---- Chi2 --------------------------------------------------------------------------------

Chi2::Chi2(const Tensor& df_, std::optional<bool> v) : Gamma(0.5 * df_, full_like(df_, 0.5), v), df(df_) {}
Chi2::Chi2(double d, std::optional<bool> v) : Chi2(scalar(d), v) {}
DistributionPtr Chi2::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Chi2>(df.expand(bs), validate_);
}

// ---- Dirichlet ---------------------------------------------------------------------------

namespace {
std::vector<int64_t> without_last(const Tensor& t, const char* who) {
  BRISK_CHECK(t.defined() && t.dim() >= 1, who, "concentration must be at least one-dimensional, got shape ",
              t.defined() ? shape_str(dims(t)) : std::string("undefined"));
  auto d = dims(t);
  d.pop_back();
  return d;
}
}  // namespace

Dirichlet::Dirichlet(const Tensor& c, std::optional<bool> v)
    : Distribution(without_last(c, "Dirichlet"), {c.size(-1)}, v), concentration(c) {
  check_param("concentration", concentration, constraints::positive());
}
Tensor Dirichlet::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  const Tensor g = standard_gamma(concentration.expand(extended_shape(shape)).contiguous());
  const double tiny = tiny_of(g.dtype()), e = eps_of(g.dtype());
  return (g / g.sum({-1}, true)).clamp(tiny, 1 - e);
}
Tensor Dirichlet::log_prob(const Tensor& value) const {
  validate_sample(value);
  return xlogy(concentration - 1, value).sum({-1}) + concentration.sum({-1}).lgamma() -
         concentration.lgamma().sum({-1});
}
Tensor Dirichlet::entropy() const {
  const double k = static_cast<double>(concentration.size(-1));
  const Tensor a0 = concentration.sum({-1});
  return concentration.lgamma().sum({-1}) - a0.lgamma() - (k - a0) * a0.digamma() -
         ((concentration - 1) * concentration.digamma()).sum({-1});
}
Tensor Dirichlet::mode() const {
  const Tensor cm1 = (concentration - 1).clamp_min(0);
  Tensor mode = cm1 / cm1.sum({-1}, true);
  // all concentrations below 1: a vertex (the largest), as PyTorch
  const Tensor all_below = (concentration < 1).all(-1, true);
  const int64_t k = concentration.size(-1);
  const Tensor vertex =
      eq(mode.argmax(-1, true), arange(k, TensorOptions(kInt64).device(mode.device()))).to(mode.dtype());
  return where(all_below, vertex, mode);
}
Tensor Dirichlet::variance() const {
  const Tensor con0 = concentration.sum({-1}, true);
  return concentration * (con0 - concentration) / (con0.square() * (con0 + 1));
}
Tensor Dirichlet::rsample(const std::vector<int64_t>& shape) const {
  const Tensor g = standard_gamma_rsample(concentration.expand(extended_shape(shape)));
  const double tiny = tiny_of(g.dtype()), e = eps_of(g.dtype());
  return (g / g.sum({-1}, true)).clamp(tiny, 1 - e);
}
DistributionPtr Dirichlet::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Dirichlet>(concentration.expand(concat(bs, event_shape_)), validate_);
}

// ---- Beta --------------------------------------------------------------------------------

namespace {
Tensor stack_pair(const Tensor& c1, const Tensor& c0) {
  auto [a, b] = broadcast2(c1, c0);
  return stack({a, b}, -1);
}
}  // namespace

Beta::Beta(const Tensor& c1, const Tensor& c0, std::optional<bool> v)
    : Distribution({}, {}, v), dirichlet(stack_pair(c1, c0), v) {
  concentration1 = dirichlet.concentration.select(-1, 0);
  concentration0 = dirichlet.concentration.select(-1, 1);
  batch_shape_ = dims(concentration1);
}
Beta::Beta(double c1, double c0, std::optional<bool> v) : Beta(scalar(c1), scalar(c0), v) {}
Tensor Beta::sample(const std::vector<int64_t>& shape) const { return dirichlet.sample(shape).select(-1, 0); }
Tensor Beta::log_prob(const Tensor& value) const {
  validate_sample(value);
  return dirichlet.log_prob(stack({value, 1 - value}, -1));
}
Tensor Beta::variance() const {
  const Tensor total = concentration1 + concentration0;
  return concentration1 * concentration0 / (total.square() * (total + 1));
}
Tensor Beta::rsample(const std::vector<int64_t>& shape) const { return dirichlet.rsample(shape).select(-1, 0); }
DistributionPtr Beta::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Beta>(concentration1.expand(bs), concentration0.expand(bs), validate_);
}

// ---- StudentT ----------------------------------------------------------------------------

StudentT::StudentT(const Tensor& df_, const Tensor& loc_, const Tensor& scale_, std::optional<bool> v)
    : Distribution({}, {}, v) {
  auto b = broadcast_tensors({df_, loc_, scale_});
  df = b[0];
  loc = b[1];
  scale = b[2];
  batch_shape_ = dims(df);
  check_param("df", df, constraints::positive());
  check_param("loc", loc, constraints::real());
  check_param("scale", scale, constraints::positive());
}
StudentT::StudentT(double d, double l, double s, std::optional<bool> v) : StudentT(scalar(d), scalar(l), scalar(s), v) {}
Tensor StudentT::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  const std::vector<int64_t> full = extended_shape(shape);
  const Tensor x = randn(full, loc.options());
  const Tensor z = Chi2(df, false).sample(shape);
  return loc + scale * (x * (z / df).rsqrt());
}
Tensor StudentT::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor y = (value - loc) / scale;
  const Tensor z = scale.log() + 0.5 * df.log() + 0.5 * std::log(std::numbers::pi) + (0.5 * df).lgamma() -
                   (0.5 * (df + 1.)).lgamma();
  return -0.5 * (df + 1.) * (y.square() / df).log1p() - z;
}
Tensor StudentT::entropy() const {
  const Tensor lbeta = (0.5 * df).lgamma() + std::lgamma(0.5) - (0.5 * (df + 1)).lgamma();
  return scale.log() + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma() - (0.5 * df).digamma()) + 0.5 * df.log() + lbeta;
}
Tensor StudentT::mean() const { return where(df > 1, loc, kNaN); }
Tensor StudentT::variance() const {
  const Tensor v = scale.square() * df / (df - 2);
  return where(df > 2, v, where(df > 1, kInf, kNaN));
}
Tensor StudentT::rsample(const std::vector<int64_t>& shape) const {
  const std::vector<int64_t> full = extended_shape(shape);
  const Tensor x = randn(full, loc.options());
  const Tensor z = Chi2(df, false).rsample(shape);
  return loc + scale * (x * (z / df).rsqrt());
}
DistributionPtr StudentT::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<StudentT>(df.expand(bs), loc.expand(bs), scale.expand(bs), validate_);
}

}  // namespace brisk::distributions
