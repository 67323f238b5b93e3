// MultivariateNormal (torch.distributions.MultivariateNormal, torch 2.15).
#include <cmath>
#include <numbers>

#include "brisk/distributions.h"
#include "brisk/error.h"
#include "distributions/common.h"

namespace brisk::distributions {

using namespace detail;

namespace {

// Note [Small linear algebra]
// brisk has no Cholesky factorization or triangular solve op yet, so
// MultivariateNormal composes them of tensor ops: Cholesky-Banachiewicz one
// column at a time, forward substitution one row at a time, each step a
// matrix-vector product over the columns (rows) done so far. Autograd sees
// ordinary ops, so gradients (and gradients of gradients) come with them.
// O(n) steps of O(n^2) work: fine for the dimensions of a distribution's
// event (tens); a LAPACK-backed op is the fix for large n.

/// L with L L^T = a, for symmetric positive definite a (..., n, n). A matrix
/// that is not positive definite gives NaN on the diagonal.
Tensor cholesky_lower(const Tensor& a) {
  const int64_t n = a.size(-1);
  const Tensor idx = arange(n, TensorOptions(kInt64).device(a.device()));
  std::vector<Tensor> cols;
  for (int64_t j = 0; j < n; ++j) {
    Tensor s = a.select(-1, j);  // column j of a, (..., n)
    if (j > 0) {
      const Tensor lj = stack(cols, -1);  // (..., n, j)
      s = s - matmul(lj, lj.select(-2, j).unsqueeze(-1)).squeeze(-1);
    }
    const Tensor d = s.select(-1, j).sqrt().unsqueeze(-1);
    cols.push_back(where(idx > j, s / d, where(idx == j, d, 0.0)));
  }
  return stack(cols, -1);
}

/// X with L X = b for lower triangular l (..., n, n), b (..., n, k).
Tensor solve_lower(const Tensor& l, const Tensor& b) {
  const int64_t n = l.size(-1);
  std::vector<Tensor> rows;
  for (int64_t i = 0; i < n; ++i) {
    Tensor r = b.select(-2, i);  // (..., k)
    const Tensor li = l.select(-2, i);
    if (i > 0) r = r - matmul(li.narrow(-1, 0, i).unsqueeze(-2), stack(rows, -2)).squeeze(-2);
    rows.push_back(r / li.select(-1, i).unsqueeze(-1));
  }
  return stack(rows, -2);
}

/// ||L^-1 x||^2 over the last dim (PyTorch's _batch_mahalanobis).
Tensor mahalanobis(const Tensor& l, const Tensor& x) { return solve_lower(l, x.unsqueeze(-1)).squeeze(-1).square().sum({-1}); }

Constraint lower_cholesky() {
  return {"LowerCholesky()",
          [](const Tensor& v) {
            const Tensor lower = (v.tril() == v).all(-1).all(-1);
            const Tensor pos = (v.diagonal(0, -2, -1) > 0).all(-1);
            return logical_and(lower, pos);
          },
          false, 2};
}
Constraint positive_definite() {
  return {"PositiveDefinite()",
          [](const Tensor& v) {
            const Tensor sym = ((v - v.mT()).abs() <= 1e-6 * (v.abs() + 1)).all(-1).all(-1);
            const Tensor d = cholesky_lower(v).diagonal(0, -2, -1);
            return logical_and(sym, logical_and(d == d, d > 0).all(-1));
          },
          false, 2};
}
std::vector<int64_t> mvn_batch(const Tensor& loc, const Tensor& m) {
  BRISK_CHECK(loc.defined() && loc.dim() >= 1, "MultivariateNormal", "loc must be at least one-dimensional");
  BRISK_CHECK(m.defined() && m.dim() >= 2 && m.size(-1) == m.size(-2), "MultivariateNormal",
              "the matrix argument must be at least two-dimensional and square, got shape ",
              m.defined() ? shape_str(dims(m)) : std::string("undefined"));
  BRISK_CHECK(m.size(-1) == loc.size(-1), "MultivariateNormal", "loc has ", loc.size(-1),
              " dims but the matrix is ", m.size(-1), " x ", m.size(-1));
  const Tensor lb = empty(IntArrayRef(loc.sizes().data(), loc.dim() - 1));
  const Tensor mb = empty(IntArrayRef(m.sizes().data(), m.dim() - 2));
  return dims(broadcast_tensors({lb, mb})[0]);
}

}  // namespace

void MultivariateNormal::init(const Tensor& l0, const Tensor& tril) {
  loc = l0.expand(concat(batch_shape_, event_shape_));
  scale_tril = tril.expand(concat(batch_shape_, {event_shape_[0], event_shape_[0]}));
}

MultivariateNormal::MultivariateNormal(const Tensor& l, Covariance c, std::optional<bool> v)
    : Distribution(mvn_batch(l, c.t), {l.size(-1)}, v) {
  check_param("loc", l, constraints::real());
  check_param("covariance_matrix", c.t, positive_definite());
  init(l, cholesky_lower(c.t));
}
MultivariateNormal::MultivariateNormal(const Tensor& l, Precision p, std::optional<bool> v)
    : Distribution(mvn_batch(l, p.t), {l.size(-1)}, v) {
  check_param("loc", l, constraints::real());
  check_param("precision_matrix", p.t, positive_definite());
  // PyTorch's _precision_to_scale_tril: the Cholesky factor of the flipped
  // precision, flipped and transposed, is the inverse of the scale's factor
  const Tensor lf = cholesky_lower(p.t.flip({-2, -1}));
  const Tensor l_inv = lf.flip({-2, -1}).mT();
  const int64_t n = p.t.size(-1);
  init(l, solve_lower(l_inv, eye(n, p.t.options()).expand(dims(l_inv))));
}
MultivariateNormal::MultivariateNormal(const Tensor& l, ScaleTril s, std::optional<bool> v)
    : Distribution(mvn_batch(l, s.t), {l.size(-1)}, v) {
  check_param("loc", l, constraints::real());
  check_param("scale_tril", s.t, lower_cholesky());
  init(l, s.t);
}

Tensor MultivariateNormal::rsample(const std::vector<int64_t>& shape) const {
  const Tensor eps = randn(extended_shape(shape), loc.options());
  return loc + matmul(scale_tril, eps.unsqueeze(-1)).squeeze(-1);
}
Tensor MultivariateNormal::log_prob(const Tensor& value) const {
  validate_sample(value);
  const Tensor diff = value - loc;
  const double n = static_cast<double>(event_shape_[0]);
  const Tensor half_log_det = scale_tril.diagonal(0, -2, -1).log().sum({-1});
  const Tensor m = mahalanobis(scale_tril, diff);  // broadcasts over sample dims
  return -0.5 * (n * std::log(2 * std::numbers::pi) + m) - half_log_det;
}
Tensor MultivariateNormal::entropy() const {
  const double n = static_cast<double>(event_shape_[0]);
  const Tensor half_log_det = scale_tril.diagonal(0, -2, -1).log().sum({-1});
  return 0.5 * n * (1.0 + std::log(2 * std::numbers::pi)) + half_log_det;
}
Constraint MultivariateNormal::support() const {
  Constraint c = constraints::real();
  auto inner = c.check;
  c.check = [inner](const Tensor& v) { return inner(v).all(-1); };
  c.event_dim = 1;
  c.name = "IndependentConstraint(Real(), 1)";
  return c;
}
DistributionPtr MultivariateNormal::expand(const std::vector<int64_t>& bs) const {
  const int64_t n = event_shape_[0];
  return std::make_shared<MultivariateNormal>(loc.expand(concat(bs, {n})),
                                              distributions::scale_tril(scale_tril.expand(concat(bs, {n, n}))),
                                              validate_);
}

/// KL(p || q) of two multivariate normals (PyTorch's formula).
Tensor kl_mvn_mvn(const MultivariateNormal& p, const MultivariateNormal& q) {
  BRISK_CHECK(p.event_shape() == q.event_shape(), "kl_divergence",
              "KL between multivariate normals of different event shapes");
  const double n = static_cast<double>(p.event_shape()[0]);
  const Tensor half_term1 =
      q.scale_tril.diagonal(0, -2, -1).log().sum({-1}) - p.scale_tril.diagonal(0, -2, -1).log().sum({-1});
  auto b = broadcast_tensors({q.scale_tril, p.scale_tril});
  const Tensor term2 = solve_lower(b[0], b[1]).square().sum({-2, -1});
  const Tensor term3 = mahalanobis(q.scale_tril, q.loc - p.loc);
  return half_term1 + 0.5 * (term2 + term3 - n);
}

}  // namespace brisk::distributions
