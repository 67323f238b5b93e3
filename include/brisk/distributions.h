// brisk::distributions: PyTorch's torch.distributions in C++ (issue 18, in
// progress): parameterized distributions with sampling (reparameterized
// where PyTorch has it), log-probabilities, moments, entropy and a KL
// divergence registry.
//
//   namespace D = brisk::distributions;
//   D::Categorical pi(D::logits(policy->forward(state)));
//   Tensor action = pi.sample();                      // no graph
//   Tensor loss = -(pi.log_prob(action) * advantage).mean();
//
//   D::Normal q(mu, sigma);                           // a VAE's posterior
//   Tensor z = q.rsample();                           // gradients flow to mu, sigma
//   Tensor kl = D::kl_divergence(q, D::Normal(zeros_like(mu), ones_like(sigma)));
//
// Families here: Normal, Uniform, Bernoulli, Categorical, OneHotCategorical,
// Geometric, Exponential, Laplace, Cauchy, Gumbel, LogNormal, Gamma, Chi2,
// Beta, Dirichlet, StudentT, Poisson, Binomial, Multinomial,
// MultivariateNormal, Independent,
// MixtureSameFamily and TransformedDistribution (exp, affine, sigmoid, tanh
// transforms). Parameters
// are checked against their constraints when validation is on (the default,
// as in PyTorch; set_default_validate_args(false) turns it off). See
// docs/design/distributions.md.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <vector>

#include "brisk/ops.h"
#include "brisk/tensor.h"

namespace brisk::distributions {

/// PyTorch's Distribution.set_default_validate_args (on by default).
void set_default_validate_args(bool value);
bool get_default_validate_args();

/// A parameter's or a sample's domain: a name (as PyTorch prints it) and a
/// check that returns a bool tensor of the elements inside it.
struct Constraint {
  std::string name;
  std::function<Tensor(const Tensor&)> check;
  bool is_discrete = false;
  int event_dim = 0;  ///< dims checked together (simplex: 1)
};
namespace constraints {
Constraint real();
Constraint positive();
Constraint nonnegative();
Constraint unit_interval();         ///< [0, 1]
Constraint interval(const Tensor& low, const Tensor& high);  ///< [low, high]
Constraint boolean();               ///< 0 or 1
Constraint nonnegative_integer();
Constraint integer_interval(int64_t low, int64_t high);  ///< {low, ..., high}
Constraint simplex();               ///< >= 0, summing to 1 over the last dim
Constraint one_hot();               ///< 0/1 with exactly one 1 over the last dim
}  // namespace constraints

/// A parameter given as probabilities or as logits (Bernoulli, Categorical,
/// OneHotCategorical, Geometric): `Categorical(probs(p))`, `Categorical(logits(l))`.
struct Probs {
  Tensor t;
};
struct Logits {
  Tensor t;
};
inline Probs probs(Tensor t) { return {std::move(t)}; }
inline Logits logits(Tensor t) { return {std::move(t)}; }

class Distribution {
 public:
  virtual ~Distribution() = default;
  /// "Normal", "Categorical", ... (PyTorch's class names).
  virtual std::string name() const = 0;
  /// The most derived class first, then its bases (the KL registry picks
  /// the most specific registered pair by this order).
  virtual std::vector<std::type_index> lineage() const = 0;
  virtual std::shared_ptr<Distribution> clone() const = 0;

  const std::vector<int64_t>& batch_shape() const { return batch_shape_; }
  const std::vector<int64_t>& event_shape() const { return event_shape_; }
  bool validate_args() const { return validate_; }

  /// Samples of shape sample_shape + batch_shape + event_shape, with no
  /// graph (rsample's where there is one, under no_grad).
  virtual Tensor sample(const std::vector<int64_t>& sample_shape = {}) const;
  /// Reparameterized samples: gradients flow to the parameters. Throws for
  /// families without one (has_rsample() false), naming the family.
  virtual Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const;
  virtual bool has_rsample() const { return false; }
  virtual Tensor log_prob(const Tensor& value) const = 0;
  virtual Tensor cdf(const Tensor& value) const;
  virtual Tensor icdf(const Tensor& value) const;
  virtual Tensor entropy() const;
  virtual Tensor mean() const;
  virtual Tensor mode() const;
  virtual Tensor variance() const;
  Tensor stddev() const { return variance().sqrt(); }
  virtual Constraint support() const = 0;
  /// The distribution with its batch shape expanded (parameters broadcast).
  virtual std::shared_ptr<Distribution> expand(const std::vector<int64_t>& batch_shape) const = 0;

  /// sample_shape + batch_shape + event_shape.
  std::vector<int64_t> extended_shape(const std::vector<int64_t>& sample_shape) const;

 protected:
  Distribution(std::vector<int64_t> batch_shape, std::vector<int64_t> event_shape, std::optional<bool> validate);
  /// Throws a brisk::Error naming the distribution, the parameter and the
  /// constraint when validation is on and `value` has elements outside it.
  void check_param(const char* param, const Tensor& value, const Constraint& c) const;
  /// The location-scale families' parameters: broadcast together, the batch
  /// shape theirs, loc real and scale positive.
  void init_loc_scale(Tensor& loc, Tensor& scale, const Tensor& l, const Tensor& s);
  /// log_prob's argument inside the support (and broadcastable), when validating.
  void validate_sample(const Tensor& value) const;
  [[noreturn]] void not_implemented(const char* what) const;

  std::vector<int64_t> batch_shape_, event_shape_;
  bool validate_ = true;
};

/// A shared, type-erased distribution (Independent, TransformedDistribution,
/// MixtureSameFamily hold their bases this way).
using DistributionPtr = std::shared_ptr<Distribution>;
template <class D>
DistributionPtr share(const D& d) {
  return std::make_shared<D>(d);
}

// The boilerplate every family shares: its name, lineage and clone.
#define BRISK_DISTRIBUTION(Class, Base)                                                                     \
  std::string name() const override { return #Class; }                                                      \
  std::vector<std::type_index> lineage() const override {                                                  \
    std::vector<std::type_index> l = Base::lineage_of();                                                    \
    l.insert(l.begin(), std::type_index(typeid(Class)));                                                    \
    return l;                                                                                               \
  }                                                                                                         \
  static std::vector<std::type_index> lineage_of() {                                                       \
    std::vector<std::type_index> l = Base::lineage_of();                                                    \
    l.insert(l.begin(), std::type_index(typeid(Class)));                                                    \
    return l;                                                                                               \
  }                                                                                                         \
  std::shared_ptr<Distribution> clone() const override { return std::make_shared<Class>(*this); }

/// The root of every lineage.
struct DistributionRoot {
  static std::vector<std::type_index> lineage_of() { return {std::type_index(typeid(Distribution))}; }
};

class Normal : public Distribution {
 public:
  Normal(const Tensor& loc, const Tensor& scale, std::optional<bool> validate_args = std::nullopt);
  Normal(double loc, double scale, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Normal, DistributionRoot)
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc; }
  Tensor mode() const override { return loc; }
  Tensor variance() const override { return scale.square(); }
  Constraint support() const override { return constraints::real(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor loc, scale;
};

class Uniform : public Distribution {
 public:
  Uniform(const Tensor& low, const Tensor& high, std::optional<bool> validate_args = std::nullopt);
  Uniform(double low, double high, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Uniform, DistributionRoot)
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return (low + high) / 2; }
  Tensor mode() const override;
  Tensor variance() const override { return (high - low).square() / 12; }
  Constraint support() const override { return constraints::interval(low, high); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor low, high;
};

class Bernoulli : public Distribution {
 public:
  Bernoulli(Probs p, std::optional<bool> validate_args = std::nullopt);
  Bernoulli(Logits l, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Bernoulli, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return probs; }
  Tensor mode() const override;
  Tensor variance() const override { return probs * (1 - probs); }
  Constraint support() const override { return constraints::boolean(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor probs, logits;
};

class Categorical : public Distribution {
 public:
  Categorical(Probs p, std::optional<bool> validate_args = std::nullopt);
  Categorical(Logits l, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Categorical, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;      ///< NaN, as PyTorch
  Tensor mode() const override;
  Tensor variance() const override;  ///< NaN, as PyTorch
  Constraint support() const override { return constraints::integer_interval(0, num_events() - 1); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  int64_t num_events() const { return probs.size(-1); }
  Tensor probs, logits;  ///< normalized over the last dim
};

class OneHotCategorical : public Distribution {
 public:
  OneHotCategorical(Probs p, std::optional<bool> validate_args = std::nullopt);
  OneHotCategorical(Logits l, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(OneHotCategorical, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return categorical.entropy(); }
  Tensor mean() const override { return categorical.probs; }
  Tensor mode() const override;
  Tensor variance() const override { return categorical.probs * (1 - categorical.probs); }
  Constraint support() const override { return constraints::one_hot(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Categorical categorical;
};

class Geometric : public Distribution {
 public:
  Geometric(Probs p, std::optional<bool> validate_args = std::nullopt);
  Geometric(Logits l, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Geometric, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return 1 / probs - 1; }
  Tensor mode() const override { return zeros_like(probs); }
  Tensor variance() const override { return (1 / probs - 1) / probs; }
  Constraint support() const override { return constraints::nonnegative_integer(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor probs, logits;
};

class Exponential : public Distribution {
 public:
  explicit Exponential(const Tensor& rate, std::optional<bool> validate_args = std::nullopt);
  explicit Exponential(double rate, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Exponential, DistributionRoot)
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override { return 1 - rate.log(); }
  Tensor mean() const override { return rate.reciprocal(); }
  Tensor mode() const override { return zeros_like(rate); }
  Tensor variance() const override { return rate.pow(-2); }
  Constraint support() const override { return constraints::nonnegative(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor rate;
};

class Laplace : public Distribution {
 public:
  Laplace(const Tensor& loc, const Tensor& scale, std::optional<bool> validate_args = std::nullopt);
  Laplace(double loc, double scale, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Laplace, DistributionRoot)
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override { return 1 + (2 * scale).log(); }
  Tensor mean() const override { return loc; }
  Tensor mode() const override { return loc; }
  Tensor variance() const override { return 2 * scale.square(); }
  Constraint support() const override { return constraints::real(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor loc, scale;
};

class Cauchy : public Distribution {
 public:
  Cauchy(const Tensor& loc, const Tensor& scale, std::optional<bool> validate_args = std::nullopt);
  Cauchy(double loc, double scale, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Cauchy, DistributionRoot)
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;      ///< NaN: undefined
  Tensor mode() const override { return loc; }
  Tensor variance() const override;  ///< inf
  Constraint support() const override { return constraints::real(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor loc, scale;
};

class Gumbel : public Distribution {
 public:
  Gumbel(const Tensor& loc, const Tensor& scale, std::optional<bool> validate_args = std::nullopt);
  Gumbel(double loc, double scale, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Gumbel, DistributionRoot)
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override { return loc; }
  Tensor variance() const override;
  Constraint support() const override { return constraints::real(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor loc, scale;
};

/// Poisson(rate). Samples by inversion below rate 10 and by Hormann's
/// transformed rejection (PTRS) above, with tensor ops.
class Poisson : public Distribution {
 public:
  explicit Poisson(const Tensor& rate, std::optional<bool> validate_args = std::nullopt);
  explicit Poisson(double rate, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Poisson, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor mean() const override { return rate; }
  Tensor mode() const override { return rate.floor(); }
  Tensor variance() const override { return rate; }
  Constraint support() const override { return constraints::nonnegative_integer(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor rate;
};

/// Binomial(total_count, probs or logits): successes in total_count trials.
class Binomial : public Distribution {
 public:
  Binomial(const Tensor& total_count, Probs p, std::optional<bool> validate_args = std::nullopt);
  Binomial(const Tensor& total_count, Logits l, std::optional<bool> validate_args = std::nullopt);
  Binomial(int64_t total_count, Probs p, std::optional<bool> validate_args = std::nullopt);
  Binomial(int64_t total_count, Logits l, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Binomial, DistributionRoot)
  /// Waiting-time inversion where total_count * min(p, 1 - p) < 10, BTRS
  /// rejection above (Note [Binomial sampling]): any total_count.
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  /// Enumerates the support (PyTorch's): total_count must be the same for
  /// every batch element.
  Tensor entropy() const override;
  Tensor mean() const override { return total_count * probs; }
  Tensor mode() const override { return minimum(((total_count + 1) * probs).floor(), total_count); }
  Tensor variance() const override { return total_count * probs * (1 - probs); }
  Constraint support() const override;
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor total_count, probs, logits;
};

/// Multinomial(total_count, probs or logits): counts per category of
/// total_count draws; the last dim is the event.
class Multinomial : public Distribution {
 public:
  Multinomial(int64_t total_count, Probs p, std::optional<bool> validate_args = std::nullopt);
  Multinomial(int64_t total_count, Logits l, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Multinomial, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return categorical.probs * static_cast<double>(total_count); }
  Tensor variance() const override {
    return categorical.probs * (1 - categorical.probs) * static_cast<double>(total_count);
  }
  Constraint support() const override;
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  int64_t total_count;
  Categorical categorical;
};

/// Gamma(concentration, rate). Samples by Marsaglia and Tsang's method;
/// rsample's gradient to the concentration by implicit reparameterization.
class Gamma : public Distribution {
 public:
  Gamma(const Tensor& concentration, const Tensor& rate, std::optional<bool> validate_args = std::nullopt);
  Gamma(double concentration, double rate, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Gamma, DistributionRoot)
  /// Implicit reparameterization (Note [Implicit reparameterization] in src/distributions/gamma.cpp).
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  /// P(concentration, rate * value), the regularized lower incomplete gamma
  /// function (float64 math on the CPU); differentiable in value and rate.
  Tensor cdf(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return concentration / rate; }
  Tensor mode() const override { return ((concentration - 1) / rate).clamp_min(0); }
  Tensor variance() const override { return concentration / rate.square(); }
  Constraint support() const override { return constraints::nonnegative(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor concentration, rate;
};

/// Chi2(df) = Gamma(df / 2, 1 / 2).
class Chi2 : public Gamma {
 public:
  explicit Chi2(const Tensor& df, std::optional<bool> validate_args = std::nullopt);
  explicit Chi2(double df, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Chi2, Gamma)
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor df;
};

/// Dirichlet(concentration): the last dim of `concentration` is the event.
class Dirichlet : public Distribution {
 public:
  explicit Dirichlet(const Tensor& concentration, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Dirichlet, DistributionRoot)
  /// Implicit reparameterization (Note [Implicit reparameterization] in src/distributions/gamma.cpp).
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return concentration / concentration.sum({-1}, true); }
  Tensor mode() const override;
  Tensor variance() const override;
  Constraint support() const override { return constraints::simplex(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor concentration;
};

/// Beta(concentration1, concentration0), a two-category Dirichlet.
class Beta : public Distribution {
 public:
  Beta(const Tensor& concentration1, const Tensor& concentration0, std::optional<bool> validate_args = std::nullopt);
  Beta(double concentration1, double concentration0, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(Beta, DistributionRoot)
  /// Implicit reparameterization (Note [Implicit reparameterization] in src/distributions/gamma.cpp).
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override { return dirichlet.entropy(); }
  Tensor mean() const override { return concentration1 / (concentration1 + concentration0); }
  Tensor mode() const override { return dirichlet.mode().select(-1, 0); }
  Tensor variance() const override;
  Constraint support() const override { return constraints::unit_interval(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor concentration1, concentration0;
  Dirichlet dirichlet;
};

/// Student's t with df degrees of freedom, location and scale.
class StudentT : public Distribution {
 public:
  StudentT(const Tensor& df, const Tensor& loc, const Tensor& scale, std::optional<bool> validate_args = std::nullopt);
  StudentT(double df, double loc = 0.0, double scale = 1.0, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(StudentT, DistributionRoot)
  /// Implicit reparameterization (Note [Implicit reparameterization] in src/distributions/gamma.cpp).
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override;      ///< loc for df > 1, else NaN
  Tensor mode() const override { return loc; }
  Tensor variance() const override;  ///< inf for 1 < df <= 2, NaN for df <= 1
  Constraint support() const override { return constraints::real(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor df, loc, scale;
};

/// Reinterprets the last `reinterpreted_batch_ndims` batch dims as event
/// dims: log_prob and entropy sum over them.
class Independent : public Distribution {
 public:
  Independent(DistributionPtr base, int64_t reinterpreted_batch_ndims, std::optional<bool> validate_args = std::nullopt);
  template <class D>
    requires std::is_base_of_v<Distribution, D>
  Independent(const D& base, int64_t n, std::optional<bool> validate_args = std::nullopt)
      : Independent(share(base), n, validate_args) {}
  BRISK_DISTRIBUTION(Independent, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override { return base->sample(sample_shape); }
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override { return base->rsample(sample_shape); }
  bool has_rsample() const override { return base->has_rsample(); }
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return base->mean(); }
  Tensor mode() const override { return base->mode(); }
  Tensor variance() const override { return base->variance(); }
  Constraint support() const override;
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  DistributionPtr base;
  int64_t reinterpreted_batch_ndims;
};

/// MultivariateNormal's matrix argument, tagged: `covariance(S)`,
/// `precision(P)` or `scale_tril(L)` (lower triangular, positive diagonal).
struct Covariance {
  Tensor t;
};
struct Precision {
  Tensor t;
};
struct ScaleTril {
  Tensor t;
};
inline Covariance covariance(Tensor t) { return {std::move(t)}; }
inline Precision precision(Tensor t) { return {std::move(t)}; }
inline ScaleTril scale_tril(Tensor t) { return {std::move(t)}; }

/// The multivariate normal over the last dim of `loc`. The factorizations
/// are composites of tensor ops (O(n) steps of vector ops each, fine for
/// the small n distributions usually have; Note [Small linear algebra]).
class MultivariateNormal : public Distribution {
 public:
  MultivariateNormal(const Tensor& loc, Covariance c, std::optional<bool> validate_args = std::nullopt);
  MultivariateNormal(const Tensor& loc, Precision p, std::optional<bool> validate_args = std::nullopt);
  MultivariateNormal(const Tensor& loc, ScaleTril l, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(MultivariateNormal, DistributionRoot)
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return true; }
  Tensor log_prob(const Tensor& value) const override;
  Tensor entropy() const override;
  Tensor mean() const override { return loc; }
  Tensor mode() const override { return loc; }
  Tensor variance() const override { return scale_tril.square().sum({-1}); }
  Tensor covariance_matrix() const { return matmul(scale_tril, scale_tril.mT()); }
  Constraint support() const override;
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor loc, scale_tril;  ///< broadcast to batch_shape + event_shape (+ [n])

 private:
  void init(const Tensor& loc, const Tensor& l);
};

/// A mixture of K components of one family: `mixture` a Categorical over
/// the K components (batch shape B), `components` a distribution of batch
/// shape B + [K]. log_prob is the log-sum-exp over components.
class MixtureSameFamily : public Distribution {
 public:
  MixtureSameFamily(const Categorical& mixture, DistributionPtr components,
                    std::optional<bool> validate_args = std::nullopt);
  template <class D>
    requires std::is_base_of_v<Distribution, D>
  MixtureSameFamily(const Categorical& mixture, const D& components, std::optional<bool> validate_args = std::nullopt)
      : MixtureSameFamily(mixture, share(components), validate_args) {}
  BRISK_DISTRIBUTION(MixtureSameFamily, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor mean() const override;
  Tensor variance() const override;
  Constraint support() const override { return components->support(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Categorical mixture;
  DistributionPtr components;
};

// ---- transforms -------------------------------------------------------------------------

/// A bijection y = f(x) with its inverse and log |dy/dx| (elementwise).
class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string name() const = 0;
  virtual Tensor forward(const Tensor& x) const = 0;
  virtual Tensor inverse(const Tensor& y) const = 0;
  virtual Tensor log_abs_det_jacobian(const Tensor& x, const Tensor& y) const = 0;
  /// The sign of dy/dx where it may be negative (affine: sign(scale));
  /// nullopt: increasing.
  virtual std::optional<Tensor> sign() const { return std::nullopt; }
  /// Equal transforms (same kind and parameters), for the KL registry.
  virtual bool equals(const Transform& other) const = 0;
};
using TransformPtr = std::shared_ptr<const Transform>;
/// y = exp(x)
TransformPtr exp_transform();
/// y = loc + scale * x
TransformPtr affine_transform(const Tensor& loc, const Tensor& scale);
TransformPtr affine_transform(double loc, double scale);
/// y = sigmoid(x)
TransformPtr sigmoid_transform();
/// y = tanh(x)
TransformPtr tanh_transform();

/// base pushed through the transforms in order. log_prob(y) inverts them
/// and subtracts their log |det J|.
class TransformedDistribution : public Distribution {
 public:
  TransformedDistribution(DistributionPtr base, std::vector<TransformPtr> transforms,
                          std::optional<bool> validate_args = std::nullopt);
  template <class D>
    requires std::is_base_of_v<Distribution, D>
  TransformedDistribution(const D& base, std::vector<TransformPtr> transforms,
                          std::optional<bool> validate_args = std::nullopt)
      : TransformedDistribution(share(base), std::move(transforms), validate_args) {}
  BRISK_DISTRIBUTION(TransformedDistribution, DistributionRoot)
  Tensor sample(const std::vector<int64_t>& sample_shape = {}) const override;
  Tensor rsample(const std::vector<int64_t>& sample_shape = {}) const override;
  bool has_rsample() const override { return base->has_rsample(); }
  Tensor log_prob(const Tensor& value) const override;
  Tensor cdf(const Tensor& value) const override;
  Tensor icdf(const Tensor& value) const override;
  Constraint support() const override { return constraints::real(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  DistributionPtr base;
  std::vector<TransformPtr> transforms;
};

/// exp of a Normal.
class LogNormal : public TransformedDistribution {
 public:
  LogNormal(const Tensor& loc, const Tensor& scale, std::optional<bool> validate_args = std::nullopt);
  LogNormal(double loc, double scale, std::optional<bool> validate_args = std::nullopt);
  BRISK_DISTRIBUTION(LogNormal, TransformedDistribution)
  Tensor entropy() const override;
  Tensor mean() const override;
  Tensor mode() const override;
  Tensor variance() const override;
  Constraint support() const override { return constraints::positive(); }
  DistributionPtr expand(const std::vector<int64_t>& batch_shape) const override;
  Tensor loc, scale;
};

/// d x / d alpha for x ~ Gamma(alpha, 1) at x (torch._standard_gamma_grad):
/// the implicit reparameterization gradient Gamma, Beta, Dirichlet and
/// StudentT's rsample use; brisk::_standard_gamma_grad, on any device.
inline Tensor _standard_gamma_grad(const Tensor& alpha, const Tensor& x) { return brisk::_standard_gamma_grad(alpha, x); }

// ---- KL divergence ----------------------------------------------------------------------

using KLFn = std::function<Tensor(const Distribution& p, const Distribution& q)>;
/// KL(p || q) from the most specific registered pair of (p's class or a
/// base, q's class or a base); a brisk::Error naming both for none.
Tensor kl_divergence(const Distribution& p, const Distribution& q);
/// Registers KL(P || Q) (PyTorch's @register_kl): a pair registered later
/// for the same classes replaces the earlier one.
void register_kl(std::type_index p, std::type_index q, KLFn fn);
template <class P, class Q>
void register_kl(std::function<Tensor(const P&, const Q&)> fn) {
  register_kl(std::type_index(typeid(P)), std::type_index(typeid(Q)),
              [fn](const Distribution& p, const Distribution& q) {
                return fn(static_cast<const P&>(p), static_cast<const Q&>(q));
              });
}

}  // namespace brisk::distributions
