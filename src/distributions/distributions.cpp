// brisk::distributions (include/brisk/distributions.h): the families, their
// constraints and transforms. Formulas follow torch.distributions (torch
// 2.15); tests/distributions checks them against PyTorch's values.
#include "brisk/distributions.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>

#include "brisk/autograd.h"
#include "brisk/error.h"
#include "brisk/ops.h"
#include "distributions/common.h"

namespace brisk::distributions {

using namespace detail;

namespace {

std::atomic<bool> g_validate{true};

constexpr double kPi = std::numbers::pi;
constexpr double kEulerGamma = 0.57721566490153286060;

}  // namespace

void set_default_validate_args(bool value) { g_validate.store(value); }
bool get_default_validate_args() { return g_validate.load(); }

// ---- constraints ---------------------------------------------------------------------------

namespace constraints {
Constraint real() { return {"Real()", [](const Tensor& v) { return v == v; }}; }
Constraint positive() { return {"GreaterThan(lower_bound=0.0)", [](const Tensor& v) { return v > 0; }}; }
Constraint nonnegative() { return {"GreaterThanEq(lower_bound=0.0)", [](const Tensor& v) { return v >= 0; }}; }
Constraint unit_interval() {
  return {"Interval(lower_bound=0.0, upper_bound=1.0)", [](const Tensor& v) { return logical_and(v >= 0, v <= 1); }};
}
Constraint interval(const Tensor& low, const Tensor& high) {
  return {"Interval(lower_bound=low, upper_bound=high)",
          [low, high](const Tensor& v) { return logical_and(v >= low, v <= high); }};
}
Constraint boolean() {
  return {"Boolean()", [](const Tensor& v) { return logical_or(v == 0, v == 1); }, true};
}
Constraint nonnegative_integer() {
  return {"IntegerGreaterThan(lower_bound=0)", [](const Tensor& v) { return logical_and(v >= 0, v == v.floor()); },
          true};
}
Constraint integer_interval(int64_t low, int64_t high) {
  return {"IntegerInterval(lower_bound=" + std::to_string(low) + ", upper_bound=" + std::to_string(high) + ")",
          [low, high](const Tensor& v) { return logical_and(logical_and(v >= low, v <= high), v == v.floor()); },
          true};
}
Constraint simplex() {
  return {"Simplex()",
          [](const Tensor& v) {
            return logical_and((v >= 0).all(-1), ((v.sum(-1) - 1).abs() < 1e-6));
          },
          false, 1};
}
Constraint one_hot() {
  return {"OneHot()",
          [](const Tensor& v) { return logical_and(logical_or(v == 0, v == 1).all(-1), v.sum(-1) == 1); }, true, 1};
}
}  // namespace constraints

// ---- Distribution ------------------------------------------------------------------------

Distribution::Distribution(std::vector<int64_t> batch_shape, std::vector<int64_t> event_shape,
                           std::optional<bool> validate)
    : batch_shape_(std::move(batch_shape)),
      event_shape_(std::move(event_shape)),
      validate_(validate.value_or(get_default_validate_args())) {}

std::vector<int64_t> Distribution::extended_shape(const std::vector<int64_t>& sample_shape) const {
  return concat(concat(sample_shape, batch_shape_), event_shape_);
}

void Distribution::check_param(const char* param, const Tensor& value, const Constraint& c) const {
  if (!validate_) return;
  const std::string op = name();
  BRISK_CHECK(value.defined(), op.c_str(), "parameter ", param, " is an undefined tensor");
  BRISK_CHECK(value.is_floating_point(), op.c_str(), "parameter ", param, " must be a floating point tensor, got ",
              value.dtype());
  NoGradGuard ng;
  const Tensor ok = c.check(value);
  if (ok.all().item<bool>()) return;
  std::ostringstream bad;
  bad << value.masked_select(logical_not(ok.expand(value.sizes())));
  BRISK_CHECK(false, op.c_str(), "expected parameter ", param, " (Tensor of shape ", shape_str(dims(value)),
              ") to satisfy the constraint ", c.name, ", but found invalid values: ", bad.str(),
              " (brisk::distributions::set_default_validate_args(false) or validate_args=false skips this check)");
}

void Distribution::init_loc_scale(Tensor& loc, Tensor& scale, const Tensor& l, const Tensor& s) {
  std::tie(loc, scale) = broadcast2(l, s);
  batch_shape_ = dims(loc);
  check_param("loc", loc, constraints::real());
  check_param("scale", scale, constraints::positive());
}

void Distribution::validate_sample(const Tensor& value) const {
  if (!validate_) return;
  const std::string op = name();
  BRISK_CHECK(value.defined(), op.c_str(), "log_prob: the value is an undefined tensor");
  // value's shape must broadcast with batch_shape + event_shape
  const std::vector<int64_t> full = extended_shape({});
  const auto vs = dims(value);
  const size_t ev = event_shape_.size();
  BRISK_CHECK(vs.size() >= ev, op.c_str(), "the value's shape ", shape_str(vs), " has fewer dims than the event shape ",
              shape_str(event_shape_));
  for (size_t i = 1; i <= std::min(vs.size(), full.size()); ++i) {
    const int64_t a = vs[vs.size() - i], b = full[full.size() - i];
    BRISK_CHECK(a == b || a == 1 || b == 1, op.c_str(), "the value's shape ", shape_str(vs),
                " does not broadcast with the batch and event shape ", shape_str(full));
  }
  NoGradGuard ng;
  const Tensor ok = support().check(value);
  BRISK_CHECK(ok.all().item<bool>(), op.c_str(), "the value is not in the support of the distribution (",
              support().name, ")");
}

void Distribution::not_implemented(const char* what) const {
  throw Error("[" + name() + "] " + what + " is not implemented for " + name());
}

Tensor Distribution::sample(const std::vector<int64_t>& sample_shape) const {
  if (!has_rsample()) not_implemented("sample");
  NoGradGuard ng;
  return rsample(sample_shape);
}
Tensor Distribution::rsample(const std::vector<int64_t>&) const {
  throw Error("[" + name() + "] rsample: " + name() +
              " has no reparameterized sampler (PyTorch neither); use sample() (no gradient) and a score-function "
              "estimator (log_prob of the sample)");
}
Tensor Distribution::cdf(const Tensor&) const { not_implemented("cdf"); }
Tensor Distribution::icdf(const Tensor&) const { not_implemented("icdf"); }
Tensor Distribution::entropy() const { not_implemented("entropy"); }
Tensor Distribution::mean() const { not_implemented("mean"); }
Tensor Distribution::mode() const { not_implemented("mode"); }
Tensor Distribution::variance() const { not_implemented("variance"); }

// ---- Normal ------------------------------------------------------------------------------

Normal::Normal(const Tensor& loc_, const Tensor& scale_, std::optional<bool> v) : Distribution({}, {}, v) {
  init_loc_scale(loc, scale, loc_, scale_);
}
Normal::Normal(double l, double s, std::optional<bool> v) : Normal(scalar(l), scalar(s), v) {}
Tensor Normal::rsample(const std::vector<int64_t>& shape) const {
  return loc + randn(extended_shape(shape), loc.options()) * scale;
}
Tensor Normal::log_prob(const Tensor& value) const {
  validate_sample(value);
  return -(value - loc).square() / (2 * scale.square()) - scale.log() - std::log(std::sqrt(2 * kPi));
}
Tensor Normal::cdf(const Tensor& value) const {
  validate_sample(value);
  return 0.5 * (1 + erf((value - loc) * scale.reciprocal() / std::sqrt(2.0)));
}
Tensor Normal::icdf(const Tensor& value) const { return loc + scale * erfinv(2 * value - 1) * std::sqrt(2.0); }
Tensor Normal::entropy() const { return 0.5 + 0.5 * std::log(2 * kPi) + scale.log(); }
DistributionPtr Normal::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Normal>(loc.expand(bs), scale.expand(bs), validate_);
}

// ---- Uniform -----------------------------------------------------------------------------

Uniform::Uniform(const Tensor& low_, const Tensor& high_, std::optional<bool> v) : Distribution({}, {}, v) {
  std::tie(low, high) = broadcast2(low_, high_);
  batch_shape_ = dims(low);
  check_param("low", low, constraints::real());
  check_param("high", high, constraints::real());
  if (validate_) {
    NoGradGuard ng;
    BRISK_CHECK(lt(low, high).all().item<bool>(), "Uniform", "Uniform is not defined when low >= high");
  }
}
Uniform::Uniform(double l, double h, std::optional<bool> v) : Uniform(scalar(l), scalar(h), v) {}
Tensor Uniform::rsample(const std::vector<int64_t>& shape) const {
  return low + rand(extended_shape(shape), low.options()) * (high - low);
}
Tensor Uniform::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor lb = le(low, value).to(low.dtype()), ub = gt(high, value).to(low.dtype());
  return (lb * ub).log() - (high - low).log();
}
Tensor Uniform::cdf(const Tensor& value) const {
  validate_sample(value);
  return ((value - low) / (high - low)).clamp(0, 1);
}
Tensor Uniform::icdf(const Tensor& value) const { return value * (high - low) + low; }
Tensor Uniform::entropy() const { return (high - low).log(); }
Tensor Uniform::mode() const { return nan_like(high, batch_shape_); }
DistributionPtr Uniform::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Uniform>(low.expand(bs), high.expand(bs), validate_);
}

// ---- Bernoulli ---------------------------------------------------------------------------

Bernoulli::Bernoulli(Probs p, std::optional<bool> v) : Distribution(dims(p.t), {}, v) {
  check_param("probs", p.t, constraints::unit_interval());
  probs = p.t;
  logits = binary_probs_to_logits(probs);
}
Bernoulli::Bernoulli(Logits l, std::optional<bool> v) : Distribution(dims(l.t), {}, v) {
  check_param("logits", l.t, constraints::real());
  logits = l.t;
  probs = logits.sigmoid();
}
Tensor Bernoulli::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  const Tensor p = probs.expand(extended_shape(shape));
  if (p.device().is_cpu()) return bernoulli(p);
  // On a GPU the op's check of p would read it on the host (a sync): the
  // constructor checked probs (validate_args), so draw as the op does (a
  // float64 uniform below p) without it.
  return lt(rand(dims(p), TensorOptions(kDouble).device(p.device())), p).to(p.dtype());
}
Tensor Bernoulli::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto [l, v] = broadcast2(logits, value.to(logits.dtype()));
  return -bce_logits(l, v);
}
Tensor Bernoulli::entropy() const { return bce_logits(logits, probs); }
Tensor Bernoulli::mode() const {
  const Tensor m = (probs >= 0.5).to(probs.dtype());
  return where(probs == 0.5, std::numeric_limits<double>::quiet_NaN(), m);
}
DistributionPtr Bernoulli::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Bernoulli>(distributions::logits(logits.expand(bs)), validate_);
}

// ---- Categorical -------------------------------------------------------------------------

namespace {
std::vector<int64_t> leading(const Tensor& t, const char* who, const char* what) {
  BRISK_CHECK(t.defined() && t.dim() >= 1, who, what, " must be at least one-dimensional, got shape ",
              t.defined() ? shape_str(dims(t)) : std::string("undefined"));
  auto d = dims(t);
  d.pop_back();
  return d;
}
}  // namespace

Categorical::Categorical(Probs p, std::optional<bool> v) : Distribution(leading(p.t, "Categorical", "probs"), {}, v) {
  BRISK_CHECK(p.t.is_floating_point(), "Categorical", "probs must be a floating point tensor, got ", p.t.dtype());
  probs = p.t / p.t.sum({-1}, true);
  check_param("probs", probs, constraints::simplex());
  logits = clamp_probs(probs).log();
}
Categorical::Categorical(Logits l, std::optional<bool> v)
    : Distribution(leading(l.t, "Categorical", "logits"), {}, v) {
  check_param("logits", l.t, constraints::real());
  logits = l.t - l.t.logsumexp({-1}, true);
  probs = logits.softmax(-1);
}
Tensor Categorical::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  const Tensor p2 = probs.reshape({-1, num_events()});
  const Tensor s2 = multinomial(p2, n, /*replacement=*/true).t();  // (n, batch)
  return s2.reshape(extended_shape(shape));
}
Tensor Categorical::log_prob(const Tensor& value) const {
  validate_sample(value);
  Tensor v = value.to(kInt64).unsqueeze(-1);
  auto b = broadcast_tensors({v, logits});
  v = b[0].narrow(-1, 0, 1);
  return b[1].gather(-1, v).squeeze(-1);
}
Tensor Categorical::entropy() const {
  const Tensor l = logits.clamp_min(lowest_of(logits.dtype()));
  return -(l * probs).sum({-1});
}
Tensor Categorical::mean() const { return nan_like(probs, batch_shape_); }
Tensor Categorical::variance() const { return nan_like(probs, batch_shape_); }
Tensor Categorical::mode() const { return probs.argmax(-1); }
DistributionPtr Categorical::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Categorical>(distributions::logits(logits.expand(concat(bs, {num_events()}))), validate_);
}

// ---- OneHotCategorical --------------------------------------------------------------------

OneHotCategorical::OneHotCategorical(Probs p, std::optional<bool> v)
    : Distribution(leading(p.t, "OneHotCategorical", "probs"), {p.t.size(-1)}, v), categorical(p, v) {}
OneHotCategorical::OneHotCategorical(Logits l, std::optional<bool> v)
    : Distribution(leading(l.t, "OneHotCategorical", "logits"), {l.t.size(-1)}, v), categorical(l, v) {}
namespace {
Tensor one_hot_of(const Tensor& idx, int64_t k, ScalarType dtype) {
  return eq(idx.unsqueeze(-1), arange(k, TensorOptions(kInt64).device(idx.device()))).to(dtype);
}
}  // namespace
Tensor OneHotCategorical::sample(const std::vector<int64_t>& shape) const {
  return one_hot_of(categorical.sample(shape), categorical.num_events(), categorical.probs.dtype());
}
Tensor OneHotCategorical::log_prob(const Tensor& value) const {
  validate_sample(value);
  return categorical.log_prob(value.argmax(-1));
}
Tensor OneHotCategorical::mode() const {
  return one_hot_of(categorical.probs.argmax(-1), categorical.num_events(), categorical.probs.dtype());
}
DistributionPtr OneHotCategorical::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<OneHotCategorical>(
      distributions::logits(categorical.logits.expand(concat(bs, {categorical.num_events()}))), validate_);
}

// ---- Geometric ---------------------------------------------------------------------------

Geometric::Geometric(Probs p, std::optional<bool> v) : Distribution(dims(p.t), {}, v) {
  check_param("probs", p.t, constraints::unit_interval());
  if (validate_) {
    NoGradGuard ng;
    BRISK_CHECK((p.t > 0).all().item<bool>(), "Geometric", "expected probs > 0 (a success probability of 0 never "
                                                             "stops)");
  }
  probs = p.t;
  logits = binary_probs_to_logits(probs);
}
Geometric::Geometric(Logits l, std::optional<bool> v) : Distribution(dims(l.t), {}, v) {
  check_param("logits", l.t, constraints::real());
  logits = l.t;
  probs = logits.sigmoid();
}
Tensor Geometric::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  const double tiny = tiny_of(probs.dtype());
  const Tensor u = rand(extended_shape(shape), probs.options()) * (1 - tiny) + tiny;  // (tiny, 1)
  return (u.log() / (-probs).log1p()).floor();
}
Tensor Geometric::log_prob(const Tensor& value) const {
  validate_sample(value);
  auto [v, p] = broadcast2(value.to(probs.dtype()), probs);
  const Tensor pc = where(logical_and(p == 1, v == 0), 0.0, p);
  return v * (-pc).log1p() + probs.log();
}
Tensor Geometric::entropy() const { return bce_logits(logits, probs) / probs; }
DistributionPtr Geometric::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Geometric>(distributions::probs(probs.expand(bs)), validate_);
}

// ---- Exponential -------------------------------------------------------------------------

Exponential::Exponential(const Tensor& rate_, std::optional<bool> v) : Distribution(dims(rate_), {}, v), rate(rate_) {
  check_param("rate", rate, constraints::positive());
}
Exponential::Exponential(double r, std::optional<bool> v) : Exponential(scalar(r), v) {}
Tensor Exponential::rsample(const std::vector<int64_t>& shape) const {
  const Tensor e = -(-rand(extended_shape(shape), rate.options())).log1p();  // -log(1 - u): standard exponential
  return e / rate;
}
Tensor Exponential::log_prob(const Tensor& value) const {
  validate_sample(value);
  return rate.log() - rate * value;
}
Tensor Exponential::cdf(const Tensor& value) const {
  validate_sample(value);
  return 1 - (-rate * value).exp();
}
Tensor Exponential::icdf(const Tensor& value) const { return -(-value).log1p() / rate; }
DistributionPtr Exponential::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Exponential>(rate.expand(bs), validate_);
}

// ---- Laplace -----------------------------------------------------------------------------

Laplace::Laplace(const Tensor& loc_, const Tensor& scale_, std::optional<bool> v) : Distribution({}, {}, v) {
  init_loc_scale(loc, scale, loc_, scale_);
}
Laplace::Laplace(double l, double s, std::optional<bool> v) : Laplace(scalar(l), scalar(s), v) {}
Tensor Laplace::rsample(const std::vector<int64_t>& shape) const {
  const double e = eps_of(loc.dtype());
  const Tensor u = rand(extended_shape(shape), loc.options()) * (2 - e) + (e - 1);  // [eps - 1, 1)
  return loc - scale * u.sign() * (-u.abs()).log1p();
}
Tensor Laplace::log_prob(const Tensor& value) const {
  validate_sample(value);
  return -(2 * scale).log() - (value - loc).abs() / scale;
}
Tensor Laplace::cdf(const Tensor& value) const {
  validate_sample(value);
  return 0.5 - 0.5 * (value - loc).sign() * (-(value - loc).abs() / scale).expm1();
}
Tensor Laplace::icdf(const Tensor& value) const {
  const Tensor term = value - 0.5;
  return loc - scale * term.sign() * (-2 * term.abs()).log1p();
}
DistributionPtr Laplace::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Laplace>(loc.expand(bs), scale.expand(bs), validate_);
}

// ---- Cauchy ------------------------------------------------------------------------------

Cauchy::Cauchy(const Tensor& loc_, const Tensor& scale_, std::optional<bool> v) : Distribution({}, {}, v) {
  init_loc_scale(loc, scale, loc_, scale_);
}
Cauchy::Cauchy(double l, double s, std::optional<bool> v) : Cauchy(scalar(l), scalar(s), v) {}
Tensor Cauchy::rsample(const std::vector<int64_t>& shape) const {
  const Tensor u = rand(extended_shape(shape), loc.options());
  return loc + scale * (kPi * (u - 0.5)).tan();
}
Tensor Cauchy::log_prob(const Tensor& value) const {
  validate_sample(value);
  return -std::log(kPi) - scale.log() - ((value - loc) / scale).square().log1p();
}
Tensor Cauchy::cdf(const Tensor& value) const {
  validate_sample(value);
  return ((value - loc) / scale).atan() / kPi + 0.5;
}
Tensor Cauchy::icdf(const Tensor& value) const { return (kPi * (value - 0.5)).tan() * scale + loc; }
Tensor Cauchy::entropy() const { return std::log(4 * kPi) + scale.log(); }
Tensor Cauchy::mean() const { return nan_like(loc, batch_shape_); }
Tensor Cauchy::variance() const { return full(batch_shape_, std::numeric_limits<double>::infinity(), loc.options()); }
DistributionPtr Cauchy::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Cauchy>(loc.expand(bs), scale.expand(bs), validate_);
}

// ---- Gumbel ------------------------------------------------------------------------------

Gumbel::Gumbel(const Tensor& loc_, const Tensor& scale_, std::optional<bool> v) : Distribution({}, {}, v) {
  init_loc_scale(loc, scale, loc_, scale_);
}
Gumbel::Gumbel(double l, double s, std::optional<bool> v) : Gumbel(scalar(l), scalar(s), v) {}
Tensor Gumbel::rsample(const std::vector<int64_t>& shape) const {
  const double tiny = tiny_of(loc.dtype()), e = eps_of(loc.dtype());
  const Tensor u = rand(extended_shape(shape), loc.options()) * (1 - e - tiny) + tiny;  // [tiny, 1 - eps)
  return loc - scale * (-u.log()).log();
}
Tensor Gumbel::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor y = (loc - value) / scale;
  return (y - y.exp()) - scale.log();
}
Tensor Gumbel::cdf(const Tensor& value) const {
  validate_sample(value);
  return (-(-(value - loc) / scale).exp()).exp();
}
Tensor Gumbel::icdf(const Tensor& value) const { return loc - scale * (-value.log()).log(); }
Tensor Gumbel::entropy() const { return scale.log() + (1 + kEulerGamma); }
Tensor Gumbel::mean() const { return loc + scale * kEulerGamma; }
Tensor Gumbel::variance() const { return (scale * (kPi / std::sqrt(6.0))).square(); }
DistributionPtr Gumbel::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<Gumbel>(loc.expand(bs), scale.expand(bs), validate_);
}

// ---- Independent -------------------------------------------------------------------------

namespace {
std::pair<std::vector<int64_t>, std::vector<int64_t>> independent_shapes(const DistributionPtr& base, int64_t n) {
  BRISK_CHECK(base != nullptr, "Independent", "the base distribution is null");
  const auto& bs = base->batch_shape();
  BRISK_CHECK(n >= 0 && n <= static_cast<int64_t>(bs.size()), "Independent", "expected 0 <= reinterpreted_batch_ndims <= ",
              bs.size(), " (the base's batch dims, batch shape ", shape_str(bs), "), got ", n);
  std::vector<int64_t> batch(bs.begin(), bs.end() - n), event(bs.end() - n, bs.end());
  event.insert(event.end(), base->event_shape().begin(), base->event_shape().end());
  return {batch, event};
}
}  // namespace

Independent::Independent(DistributionPtr b, int64_t n, std::optional<bool> v)
    : Distribution(independent_shapes(b, n).first, independent_shapes(b, n).second, v),
      base(std::move(b)),
      reinterpreted_batch_ndims(n) {}
Tensor Independent::log_prob(const Tensor& value) const {
  return sum_rightmost(base->log_prob(value), reinterpreted_batch_ndims);
}
Tensor Independent::entropy() const { return sum_rightmost(base->entropy(), reinterpreted_batch_ndims); }
Constraint Independent::support() const {
  Constraint c = base->support();
  const int64_t n = reinterpreted_batch_ndims;
  const int ev = c.event_dim;
  auto inner = c.check;
  c.check = [inner, n](const Tensor& v) {
    Tensor ok = inner(v);
    for (int64_t i = 0; i < n && ok.dim() > 0; ++i) ok = ok.all(-1);
    return ok;
  };
  c.event_dim = ev + static_cast<int>(n);
  c.name = "IndependentConstraint(" + c.name + ", " + std::to_string(n) + ")";
  return c;
}
DistributionPtr Independent::expand(const std::vector<int64_t>& bs) const {
  const auto& b = base->batch_shape();
  std::vector<int64_t> full = concat(bs, std::vector<int64_t>(b.end() - reinterpreted_batch_ndims, b.end()));
  return std::make_shared<Independent>(base->expand(full), reinterpreted_batch_ndims, validate_);
}

// ---- transforms --------------------------------------------------------------------------

namespace {

class ExpTransform final : public Transform {
 public:
  std::string name() const override { return "ExpTransform()"; }
  Tensor forward(const Tensor& x) const override { return x.exp(); }
  Tensor inverse(const Tensor& y) const override { return y.log(); }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override { return x; }
  bool equals(const Transform& o) const override { return dynamic_cast<const ExpTransform*>(&o) != nullptr; }
};

class AffineTransform final : public Transform {
 public:
  AffineTransform(Tensor loc, Tensor scale) : loc_(std::move(loc)), scale_(std::move(scale)) {}
  std::string name() const override { return "AffineTransform()"; }
  Tensor forward(const Tensor& x) const override { return loc_ + scale_ * x; }
  Tensor inverse(const Tensor& y) const override { return (y - loc_) / scale_; }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override {
    return scale_.abs().log().expand(broadcast_shapes(x.sizes(), scale_.sizes()));
  }
  std::optional<Tensor> sign() const override { return scale_.sign(); }
  bool equals(const Transform& o) const override {
    const auto* a = dynamic_cast<const AffineTransform*>(&o);
    if (a == nullptr) return false;
    NoGradGuard ng;
    return loc_.sizes() == a->loc_.sizes() && scale_.sizes() == a->scale_.sizes() && equal(loc_, a->loc_) &&
           equal(scale_, a->scale_);
  }

 private:
  static std::vector<int64_t> broadcast_shapes(IntArrayRef a, IntArrayRef b) {
    return dims(broadcast_tensors({empty(a), empty(b)})[0]);
  }
  Tensor loc_, scale_;
};

class SigmoidTransform final : public Transform {
 public:
  std::string name() const override { return "SigmoidTransform()"; }
  Tensor forward(const Tensor& x) const override {
    return x.sigmoid().clamp(tiny_of(x.dtype()), 1 - eps_of(x.dtype()));
  }
  Tensor inverse(const Tensor& y) const override {
    const Tensor c = y.clamp(tiny_of(y.dtype()), 1 - eps_of(y.dtype()));
    return c.log() - (-c).log1p();
  }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override {
    return -(-x).softplus() - x.softplus();
  }
  bool equals(const Transform& o) const override { return dynamic_cast<const SigmoidTransform*>(&o) != nullptr; }
};

class TanhTransform final : public Transform {
 public:
  std::string name() const override { return "TanhTransform()"; }
  Tensor forward(const Tensor& x) const override { return x.tanh(); }
  Tensor inverse(const Tensor& y) const override { return 0.5 * (y.log1p() - (-y).log1p()); }
  Tensor log_abs_det_jacobian(const Tensor& x, const Tensor&) const override {
    return 2 * (std::log(2.0) - x - (-2 * x).softplus());
  }
  bool equals(const Transform& o) const override { return dynamic_cast<const TanhTransform*>(&o) != nullptr; }
};

}  // namespace

TransformPtr exp_transform() { return std::make_shared<ExpTransform>(); }
TransformPtr affine_transform(const Tensor& loc, const Tensor& scale) {
  return std::make_shared<AffineTransform>(loc, scale);
}
TransformPtr affine_transform(double loc, double scale) {
  return std::make_shared<AffineTransform>(scalar(loc), scalar(scale));
}
TransformPtr sigmoid_transform() { return std::make_shared<SigmoidTransform>(); }
TransformPtr tanh_transform() { return std::make_shared<TanhTransform>(); }

// ---- TransformedDistribution --------------------------------------------------------------

namespace {
std::vector<int64_t> base_batch(const DistributionPtr& b) {
  BRISK_CHECK(b != nullptr, "TransformedDistribution", "the base distribution is null");
  return b->batch_shape();
}
}  // namespace

TransformedDistribution::TransformedDistribution(DistributionPtr b, std::vector<TransformPtr> ts,
                                                 std::optional<bool> v)
    : Distribution(base_batch(b), b->event_shape(), v), base(std::move(b)), transforms(std::move(ts)) {
  for (const auto& t : transforms) BRISK_CHECK(t != nullptr, "TransformedDistribution", "a transform is null");
}
Tensor TransformedDistribution::sample(const std::vector<int64_t>& shape) const {
  NoGradGuard ng;
  Tensor x = base->sample(shape);
  for (const auto& t : transforms) x = t->forward(x);
  return x;
}
Tensor TransformedDistribution::rsample(const std::vector<int64_t>& shape) const {
  Tensor x = base->rsample(shape);
  for (const auto& t : transforms) x = t->forward(x);
  return x;
}
Tensor TransformedDistribution::log_prob(const Tensor& value) const {
  validate_sample(value);
  const auto ev = static_cast<int64_t>(event_shape_.size());
  Tensor y = value, lp;
  for (auto it = transforms.rbegin(); it != transforms.rend(); ++it) {
    const Tensor x = (*it)->inverse(y);
    const Tensor term = sum_rightmost((*it)->log_abs_det_jacobian(x, y), ev);
    lp = lp.defined() ? lp - term : -term;
    y = x;
  }
  const Tensor base_lp = base->log_prob(y);
  return lp.defined() ? lp + base_lp : base_lp;
}
namespace {
/// The CDF through decreasing transforms: sign * (v - 0.5) + 0.5.
Tensor monotonize(const std::vector<TransformPtr>& ts, const Tensor& value) {
  Tensor sign;
  for (const auto& t : ts)
    if (auto s = t->sign()) sign = sign.defined() ? sign * *s : *s;
  return sign.defined() ? sign * (value - 0.5) + 0.5 : value;
}
}  // namespace
Tensor TransformedDistribution::cdf(const Tensor& value) const {
  Tensor v = value;
  for (auto it = transforms.rbegin(); it != transforms.rend(); ++it) v = (*it)->inverse(v);
  return monotonize(transforms, base->cdf(v));
}
Tensor TransformedDistribution::icdf(const Tensor& value) const {
  Tensor x = base->icdf(monotonize(transforms, value));
  for (const auto& t : transforms) x = t->forward(x);
  return x;
}
DistributionPtr TransformedDistribution::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<TransformedDistribution>(base->expand(bs), transforms, validate_);
}

// ---- LogNormal ---------------------------------------------------------------------------

LogNormal::LogNormal(const Tensor& loc_, const Tensor& scale_, std::optional<bool> v)
    : TransformedDistribution(std::make_shared<Normal>(loc_, scale_, v), {exp_transform()}, v) {
  const auto& n = static_cast<const Normal&>(*base);
  loc = n.loc;
  scale = n.scale;
}
LogNormal::LogNormal(double l, double s, std::optional<bool> v) : LogNormal(scalar(l), scalar(s), v) {}
Tensor LogNormal::entropy() const { return base->entropy() + loc; }
Tensor LogNormal::mean() const { return (loc + scale.square() / 2).exp(); }
Tensor LogNormal::mode() const { return (loc - scale.square()).exp(); }
Tensor LogNormal::variance() const {
  const Tensor s2 = scale.square();
  return s2.expm1() * (2 * loc + s2).exp();
}
DistributionPtr LogNormal::expand(const std::vector<int64_t>& bs) const {
  return std::make_shared<LogNormal>(loc.expand(bs), scale.expand(bs), validate_);
}

}  // namespace brisk::distributions
