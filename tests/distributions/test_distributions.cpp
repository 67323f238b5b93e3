// brisk::distributions against torch.distributions (torch 2.15, float64:
// reference.txt, written by tools/distributions/reference.py), sample
// moments within statistical bounds, rsample gradients against finite
// differences, constraint errors, the KL registry.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
namespace D = brisk::distributions;
using brisk::testing::close;
using brisk::testing::expect_error;

namespace {

struct ThreadsOne {
  ThreadsOne() { set_num_threads(1); }
} threads_one;

std::vector<std::string> split(const std::string& s, char c) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, c)) out.push_back(cur);
  return out;
}

/// `shape:v0,v1,...` (shape `-`: 0-dim) as a float64 tensor.
Tensor parse_tensor(const std::string& s) {
  const size_t colon = s.find(':');
  const std::string shape = s.substr(0, colon), vals = s.substr(colon + 1);
  std::vector<double> v;
  for (const auto& x : split(vals, ',')) v.push_back(std::strtod(x.c_str(), nullptr));
  std::vector<int64_t> dims;
  if (shape != "-")
    for (const auto& d : split(shape, ',')) dims.push_back(std::stoll(d));
  return tensor(v, kDouble).reshape(dims);
}

struct Reference {
  std::map<std::string, D::DistributionPtr> dists;
  std::vector<std::vector<std::string>> lines;
};

D::TransformPtr parse_transform(const std::string& s) {
  const auto parts = split(s, ':');
  if (parts[0] == "affine") return D::affine_transform(tensor({std::stod(parts[1])}, kDouble).reshape({}),
                                                       tensor({std::stod(parts[2])}, kDouble).reshape({}));
  if (parts[0] == "sigmoid") return D::sigmoid_transform();
  if (parts[0] == "tanh") return D::tanh_transform();
  if (parts[0] == "exp") return D::exp_transform();
  ADD_FAILURE() << "unknown transform " << s;
  return nullptr;
}

D::DistributionPtr make(const std::string& family, std::map<std::string, std::string> kv,
                        const std::map<std::string, D::DistributionPtr>& built) {
  auto t = [&](const char* k) { return parse_tensor(kv.at(k)); };
  if (family == "Normal") return D::share(D::Normal(t("loc"), t("scale")));
  if (family == "Uniform") return D::share(D::Uniform(t("low"), t("high")));
  if (family == "Laplace") return D::share(D::Laplace(t("loc"), t("scale")));
  if (family == "Cauchy") return D::share(D::Cauchy(t("loc"), t("scale")));
  if (family == "Gumbel") return D::share(D::Gumbel(t("loc"), t("scale")));
  if (family == "LogNormal") return D::share(D::LogNormal(t("loc"), t("scale")));
  if (family == "Exponential") return D::share(D::Exponential(t("rate")));
  if (family == "Poisson") return D::share(D::Poisson(t("rate")));
  if (family == "Binomial") {
    if (kv.count("probs")) return D::share(D::Binomial(t("total_count"), D::probs(t("probs"))));
    return D::share(D::Binomial(t("total_count"), D::logits(t("logits"))));
  }
  if (family == "Multinomial") {
    const int64_t n = std::stoll(kv.at("total_count"));
    if (kv.count("probs")) return D::share(D::Multinomial(n, D::probs(t("probs"))));
    return D::share(D::Multinomial(n, D::logits(t("logits"))));
  }
  if (family == "Gamma") return D::share(D::Gamma(t("concentration"), t("rate")));
  if (family == "Chi2") return D::share(D::Chi2(t("df")));
  if (family == "Beta") return D::share(D::Beta(t("concentration1"), t("concentration0")));
  if (family == "Dirichlet") return D::share(D::Dirichlet(t("concentration")));
  if (family == "StudentT") return D::share(D::StudentT(t("df"), t("loc"), t("scale")));
  auto pl = [&](auto tag) -> D::DistributionPtr {
    using Dist = decltype(tag);
    if (kv.count("probs")) return D::share(Dist(D::probs(t("probs"))));
    return D::share(Dist(D::logits(t("logits"))));
  };
  if (family == "Bernoulli") return pl(D::Bernoulli(D::probs(tensor({0.5}, kDouble))));
  if (family == "Categorical") return pl(D::Categorical(D::probs(tensor({0.5, 0.5}, kDouble))));
  if (family == "OneHotCategorical") return pl(D::OneHotCategorical(D::probs(tensor({0.5, 0.5}, kDouble))));
  if (family == "Geometric") return pl(D::Geometric(D::probs(tensor({0.5}, kDouble))));
  if (family == "MultivariateNormal") {
    if (kv.count("covariance_matrix")) return D::share(D::MultivariateNormal(t("loc"), D::covariance(t("covariance_matrix"))));
    if (kv.count("precision_matrix")) return D::share(D::MultivariateNormal(t("loc"), D::precision(t("precision_matrix"))));
    return D::share(D::MultivariateNormal(t("loc"), D::scale_tril(t("scale_tril"))));
  }
  if (family == "MixtureSameFamily")
    return D::share(D::MixtureSameFamily(D::Categorical(D::logits(t("logits"))), built.at(kv.at("base"))));
  if (family == "Independent") return D::share(D::Independent(built.at(kv.at("base")), std::stoll(kv.at("n"))));
  if (family == "TransformedDistribution") {
    std::vector<D::TransformPtr> ts;
    for (const auto& s : split(kv.at("t"), ',')) ts.push_back(parse_transform(s));
    return D::share(D::TransformedDistribution(built.at(kv.at("base")), ts));
  }
  ADD_FAILURE() << "unknown family " << family;
  return nullptr;
}

const Reference& reference() {
  static const Reference r = [] {
    Reference ref;
    const char* dir = std::getenv("BRISK_TEST_DIR");
    if (dir == nullptr) return ref;
    std::ifstream in(std::filesystem::path(dir) / "distributions" / "reference.txt");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> f;
      std::istringstream ss(line);
      for (std::string w; ss >> w;) f.push_back(w);
      if (f[0] == "D") {
        std::map<std::string, std::string> kv;
        for (size_t i = 3; i < f.size(); ++i) {
          const size_t eq = f[i].find('=');
          kv[f[i].substr(0, eq)] = f[i].substr(eq + 1);
        }
        ref.dists[f[1]] = make(f[2], kv, ref.dists);
      }
      ref.lines.push_back(f);
    }
    return ref;
  }();
  return r;
}

#define NEED_REFERENCE()                                                                              \
  if (std::getenv("BRISK_TEST_DIR") == nullptr) GTEST_SKIP() << "BRISK_TEST_DIR is not set (CTest sets it)"; \
  ASSERT_FALSE(reference().dists.empty()) << "tests/distributions/reference.txt is missing or empty"

// NaN == NaN and inf == inf count as equal here.
::testing::AssertionResult same(const Tensor& got, const Tensor& want) {
  if (got.sizes() != want.sizes())
    return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  const Tensor g = got.to(kDouble).contiguous(), w = want.contiguous();
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double a = g.view({-1})[i].item<double>(), b = w.view({-1})[i].item<double>();
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (std::abs(a - b) <= 1e-9 * std::abs(b) + 1e-12) continue;
    return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", expected " << b;
  }
  return ::testing::AssertionSuccess();
}

// trigamma by its series sum 1 / (a + k)^2 (with the tail's asymptotic sum)
double detail_trigamma(double a) {
  double s = 0;
  for (int k = 0; k < 100000; ++k) s += 1.0 / ((a + k) * (a + k));
  const double t = a + 100000;
  return s + 1 / t + 1 / (2 * t * t);
}

}  // namespace

TEST(Distributions, ValuesMatchPyTorch) {
  NEED_REFERENCE();
  int checked = 0;
  for (const auto& f : reference().lines) {
    if (f[0] == "M") {
      const auto& d = *reference().dists.at(f[1]);
      Tensor got;
      if (f[2] == "entropy") got = d.entropy();
      if (f[2] == "mean") got = d.mean();
      if (f[2] == "variance") got = d.variance();
      if (f[2] == "mode") got = d.mode();
      EXPECT_TRUE(same(got, parse_tensor(f[3]))) << f[1] << " (" << d.name() << ")." << f[2];
      ++checked;
    } else if (f[0] == "F") {
      const auto& d = *reference().dists.at(f[1]);
      const Tensor in = parse_tensor(f[3]);
      Tensor got;
      if (f[2] == "log_prob") got = d.log_prob(in);
      if (f[2] == "cdf") got = d.cdf(in);
      if (f[2] == "icdf") got = d.icdf(in);
      EXPECT_TRUE(same(got, parse_tensor(f[4]))) << f[1] << " (" << d.name() << ")." << f[2];
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
}

TEST(Distributions, EveryKLPairMatchesPyTorch) {
  NEED_REFERENCE();
  int checked = 0;
  for (const auto& f : reference().lines) {
    if (f[0] != "K") continue;
    const auto& p = *reference().dists.at(f[1]);
    const auto& q = *reference().dists.at(f[2]);
    EXPECT_TRUE(same(D::kl_divergence(p, q), parse_tensor(f[3]))) << "KL(" << p.name() << " " << f[1] << " || "
                                                                 << q.name() << " " << f[2] << ")";
    ++checked;
  }
  EXPECT_EQ(checked, 67);
}

// The sampled frequencies of each count against the pmf (exp of log_prob),
// within 5 standard errors, for both of Binomial's samplers and the mirror.
TEST(Distributions, BinomialFrequenciesFollowThePmf) {
  manual_seed(321);
  const int64_t n = 200000;
  for (auto [count, p] : std::vector<std::pair<double, double>>{{30, 0.2}, {50, 0.4}, {60, 0.85}, {400, 0.5}}) {
    D::Binomial d(tensor({count}), D::probs(tensor({p})));
    const Tensor s = d.sample({n}).to(kDouble).view({-1});
    const Tensor k = arange(static_cast<int64_t>(count) + 1, kDouble);
    const Tensor pmf = d.log_prob(k.view({-1, 1})).exp().view({-1}).to(kDouble);
    for (int64_t v = 0; v <= static_cast<int64_t>(count); ++v) {
      const double pk = pmf[v].item<double>();
      const double freq = (s == static_cast<double>(v)).to(kDouble).mean().item<double>();
      EXPECT_NEAR(freq, pk, 5 * std::sqrt(pk * (1 - pk) / n) + 2.0 / n) << "n " << count << " p " << p << " k " << v;
    }
  }
}

TEST(Distributions, BinomialEntropyNeedsOneTotalCount) {
  expect_error([] { D::Binomial(tensor({3.0, 4.0}), D::probs(tensor({0.5, 0.5}))).entropy(); },
               {"Binomial", "inhomogeneous total_count", "3", "4"});
  // a single count: -sum f log f by hand
  const Tensor h = D::Binomial(2, D::probs(tensor({0.5}))).entropy();
  EXPECT_NEAR(h.item<double>(), -(0.25 * std::log(0.25) * 2 + 0.5 * std::log(0.5)), 1e-6);
}

// Sample means and variances within 5 standard errors for fixed seeds.
TEST(Distributions, SampleMomentsWithinBounds) {
  manual_seed(123);
  const int64_t n = 200000;
  auto check = [&](const D::Distribution& d, const char* what) {
    const Tensor s = d.sample({n}).to(kDouble);
    const Tensor mean = d.mean().to(kDouble), var = d.variance().to(kDouble);
    const Tensor se = (var / n).sqrt();
    EXPECT_TRUE(((s.mean({0}) - mean).abs() <= 5 * se + 1e-12).all().item<bool>())
        << what << ": mean " << s.mean({0}) << " vs " << mean;
    // the variance's standard error, roughly sqrt(2/n) var for light tails
    EXPECT_TRUE(((s.var({0}) - var).abs() <= 0.05 * var + 1e-12).all().item<bool>())
        << what << ": variance " << s.var({0}) << " vs " << var;
  };
  check(D::Normal(tensor({0.5, -2.0}), tensor({1.0, 3.0})), "Normal");
  check(D::Uniform(tensor({-1.0, 2.0}), tensor({1.0, 2.5})), "Uniform");
  check(D::Bernoulli(D::probs(tensor({0.2, 0.7}))), "Bernoulli");
  check(D::Exponential(tensor({0.5, 4.0})), "Exponential");
  check(D::Laplace(tensor({0.0, 1.0}), tensor({1.0, 0.2})), "Laplace");
  check(D::Gumbel(tensor({0.0, 1.0}), tensor({1.0, 0.2})), "Gumbel");
  check(D::Geometric(D::probs(tensor({0.3, 0.8}))), "Geometric");
  check(D::LogNormal(tensor({0.0, 0.5}), tensor({0.25, 0.1})), "LogNormal");
  check(D::Gamma(tensor({0.3, 1.0, 4.5}), tensor({1.0, 2.0, 0.5})), "Gamma");
  check(D::Poisson(tensor({0.0, 0.7, 4.0, 9.9, 10.0, 35.0, 1000.0})), "Poisson");
  check(D::Binomial(tensor({1.0, 7.0, 30.0}), D::probs(tensor({0.5, 0.1, 0.8}))), "Binomial");
  // both samplers (Note [Binomial sampling]): waiting times where n min(p, 1-p) < 10, BTRS above,
  // p > 1/2 mirrored; counts far beyond what counting Bernoulli draws could hold
  // (float64: a float32 count of 3e9 is only exact to 256)
  check(D::Binomial(tensor({0.0, 25.0, 40.0, 1000.0, 1e6, 1e6, 3e9, 1e7}).to(kDouble),
                    D::probs(tensor({0.3, 0.2, 0.9, 0.5, 1e-6, 0.3, 0.999, 0.0}).to(kDouble))),
        "Binomial (large counts)");
  check(D::Multinomial(12, D::probs(tensor({0.2, 0.3, 0.5}))), "Multinomial");
  check(D::Chi2(tensor({1.0, 7.0})), "Chi2");
  check(D::Beta(tensor({0.5, 2.0}), tensor({0.5, 5.0})), "Beta");
  check(D::Dirichlet(tensor({0.4, 1.0, 3.0})), "Dirichlet");
  check(D::StudentT(tensor({5.0, 30.0}), tensor({0.0, 1.0}), tensor({1.0, 2.0})), "StudentT");
  check(D::MixtureSameFamily(D::Categorical(D::probs(tensor({{0.3, 0.7}, {0.5, 0.5}}))),
                             D::Normal(tensor({{-2.0, 1.0}, {0.0, 3.0}}), tensor({{0.5, 1.0}, {1.0, 0.2}}))),
        "MixtureSameFamily");
  check(D::MultivariateNormal(tensor({1.0, -2.0, 0.5}),
                              D::covariance(tensor({{2.0, 0.3, 0.1}, {0.3, 1.0, -0.2}, {0.1, -0.2, 0.5}}))),
        "MultivariateNormal");
  // Categorical: frequencies within 5 standard errors of the probabilities
  const Tensor p = tensor({0.1, 0.2, 0.3, 0.4});
  const Tensor s = D::Categorical(D::probs(p)).sample({n});
  EXPECT_EQ(s.dtype(), kInt64);
  for (int64_t k = 0; k < 4; ++k) {
    const double freq = (s == k).to(kDouble).mean().item<double>(), pk = p[k].item<double>();
    EXPECT_NEAR(freq, pk, 5 * std::sqrt(pk * (1 - pk) / n)) << k;
  }
  // Cauchy has no moments: its median and quartiles instead
  const Tensor c = std::get<0>(D::Cauchy(1.0, 2.0).sample({n}).sort(0));
  EXPECT_NEAR(c[n / 2].item<double>(), 1.0, 0.05);
  EXPECT_NEAR(c[n / 4].item<double>(), -1.0, 0.1);
  EXPECT_NEAR(c[3 * n / 4].item<double>(), 3.0, 0.1);
}

TEST(Distributions, ShapesFollowSampleBatchEvent) {
  D::Normal n(zeros({2, 3}), ones({2, 3}));
  EXPECT_EQ(n.batch_shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(n.sample({4, 5}).sizes(), IntArrayRef({4, 5, 2, 3}));
  D::Independent ind(n, 1);
  EXPECT_EQ(ind.batch_shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(ind.event_shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(ind.log_prob(zeros({2, 3})).sizes(), IntArrayRef({2}));
  D::Categorical c(D::logits(zeros({2, 5})));
  EXPECT_EQ(c.sample({7}).sizes(), IntArrayRef({7, 2}));
  EXPECT_EQ(c.log_prob(tensor<int64_t>({1, 4})).sizes(), IntArrayRef({2}));
  D::OneHotCategorical o(D::probs(ones({3})));
  const Tensor oh = o.sample({6});
  EXPECT_EQ(oh.sizes(), IntArrayRef({6, 3}));
  EXPECT_TRUE(equal(oh.sum({-1}), ones({6})));
  auto e = n.expand({4, 2, 3});
  EXPECT_EQ(e->batch_shape(), (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(e->sample().sizes(), IntArrayRef({4, 2, 3}));
  // scalar parameters are float32, as PyTorch's
  EXPECT_EQ(D::Normal(0.0, 1.0).sample().dtype(), kFloat);
  EXPECT_EQ(D::Normal(0.0, 1.0).sample().dim(), 0);
}

// rsample's gradients against central finite differences of a function of
// the sample with the noise fixed (the same seed for each evaluation).
TEST(Distributions, RsampleGradientsMatchFiniteDifferences) {
  auto check = [](const char* what, auto make, std::vector<double> params) {
    std::vector<Tensor> ps;
    for (double v : params) ps.push_back(tensor({v}, kDouble).reshape({}).requires_grad_(true));
    manual_seed(5);
    Tensor y = make(ps).rsample({64}).square().mean();
    y.backward();
    for (size_t i = 0; i < ps.size(); ++i) {
      const double h = 1e-6;
      auto at = [&](double delta) {
        NoGradGuard ng;
        std::vector<Tensor> q;
        for (size_t j = 0; j < ps.size(); ++j)
          q.push_back(tensor({params[j] + (j == i ? delta : 0)}, kDouble).reshape({}));
        manual_seed(5);
        return make(q).rsample({64}).square().mean().template item<double>();
      };
      const double fd = (at(h) - at(-h)) / (2 * h);
      EXPECT_NEAR(ps[i].grad().item<double>(), fd, 1e-5 * (1 + std::abs(fd))) << what << " parameter " << i;
    }
  };
  check("Normal", [](const std::vector<Tensor>& p) { return D::Normal(p[0], p[1]); }, {0.3, 1.7});
  check("Uniform", [](const std::vector<Tensor>& p) { return D::Uniform(p[0], p[1]); }, {-0.5, 2.0});
  check("Exponential", [](const std::vector<Tensor>& p) { return D::Exponential(p[0]); }, {1.5});
  check("Laplace", [](const std::vector<Tensor>& p) { return D::Laplace(p[0], p[1]); }, {0.3, 0.8});
  check("Gumbel", [](const std::vector<Tensor>& p) { return D::Gumbel(p[0], p[1]); }, {0.3, 0.8});
  check("Cauchy", [](const std::vector<Tensor>& p) { return D::Cauchy(p[0], p[1]); }, {0.3, 0.1});
  check("LogNormal", [](const std::vector<Tensor>& p) { return D::LogNormal(p[0], p[1]); }, {0.1, 0.4});
  // a sample() has no graph; families without rsample say so
  Tensor loc = zeros({}).requires_grad_(true);
  EXPECT_FALSE(D::Normal(loc, ones({})).sample().requires_grad());
  expect_error([] { D::Bernoulli(D::probs(tensor({0.5}))).rsample(); }, {"Bernoulli", "rsample"});
}

TEST(Distributions, LogProbGradientsMatchFiniteDifferences) {
  auto grad_check = [](const char* what, auto lp) {
    EXPECT_TRUE(autograd::gradcheck(lp, {tensor({0.3, -0.4}, kDouble).requires_grad_(true),
                               tensor({0.8, 1.3}, kDouble).requires_grad_(true)}))
        << what;
  };
  const Tensor v = tensor({0.1, 0.9}, kDouble);
  grad_check("Normal", [v](const TensorList& t) { return D::Normal(t[0], t[1]).log_prob(v); });
  grad_check("Laplace", [v](const TensorList& t) { return D::Laplace(t[0], t[1]).log_prob(v); });
  grad_check("Gumbel", [v](const TensorList& t) { return D::Gumbel(t[0], t[1]).log_prob(v); });
  grad_check("Cauchy", [v](const TensorList& t) { return D::Cauchy(t[0], t[1]).log_prob(v); });
  // through the composite Cholesky factorization and triangular solve
  EXPECT_TRUE(autograd::gradcheck(
      [](const TensorList& t) {
        const Tensor m = t[1].view({2, 2});
        const Tensor cov = matmul(m, m.mT()) + eye(2, kDouble);
        return D::MultivariateNormal(t[0], D::covariance(cov)).log_prob(tensor({{0.3, -0.2}, {1.0, 0.5}}, kDouble));
      },
      {tensor({0.1, 0.4}, kDouble).requires_grad_(true),
       tensor({0.9, 0.2, -0.3, 1.1}, kDouble).requires_grad_(true)}));
  EXPECT_TRUE(autograd::gradcheck(
      [](const TensorList& t) {
        const Tensor m = t[0].view({2, 2});
        const Tensor prec = matmul(m, m.mT()) + eye(2, kDouble);
        return D::MultivariateNormal(zeros({2}, kDouble), D::precision(prec)).entropy();
      },
      {tensor({0.9, 0.2, -0.3, 1.1}, kDouble).requires_grad_(true)}));
  // Gamma's cdf in the value and the rate
  EXPECT_TRUE(autograd::gradcheck(
      [](const TensorList& t) { return D::Gamma(tensor({0.7, 3.0}, kDouble), t[0]).cdf(t[1]); },
      {tensor({1.3, 0.4}, kDouble).requires_grad_(true), tensor({0.5, 6.0}, kDouble).requires_grad_(true)}));
  expect_error([] { D::Gamma(tensor({1.0}).requires_grad_(true), tensor({1.0})).cdf(tensor({1.0})); },
               {"Gamma", "cdf", "concentration"});
  grad_check("KL Normal", [](const TensorList& t) {
    return D::kl_divergence(D::Normal(t[0], t[1]), D::Normal(t[1], t[1] + 1));
  });
}

TEST(Distributions, ConstraintErrorsNameTheDistributionAndParameter) {
  expect_error([] { D::Normal(tensor({0.0, 1.0}), tensor({1.0, -1.0})); },
               {"Normal", "scale", "GreaterThan(lower_bound=0.0)", "-1"});
  expect_error([] { D::Bernoulli(D::probs(tensor({1.5}))); }, {"Bernoulli", "probs", "Interval"});
  expect_error([] { D::Uniform(1.0, 0.0); }, {"Uniform", "low >= high"});
  expect_error([] { D::Categorical(D::probs(tensor({-0.5, 1.5}))); }, {"Categorical", "probs", "Simplex"});
  expect_error([] { D::Normal(zeros({3}), ones({3})).log_prob(zeros({2})); }, {"Normal", "does not broadcast"});
  expect_error([] { D::Exponential(1.0).log_prob(tensor({-1.0})); }, {"Exponential", "support"});
  expect_error([] { D::Categorical(D::probs(tensor({0.5, 0.5}))).log_prob(tensor({2.0})); }, {"Categorical", "support"});
  expect_error([] { D::Independent(D::Normal(0.0, 1.0), 1); }, {"Independent", "reinterpreted_batch_ndims"});
  expect_error([] { D::MultivariateNormal(zeros({2}), D::covariance(tensor({{1.0, 2.0}, {2.0, 1.0}}))); },
               {"MultivariateNormal", "covariance_matrix", "PositiveDefinite()"});
  expect_error([] { D::MultivariateNormal(zeros({2}), D::scale_tril(tensor({{1.0, 0.5}, {0.0, 1.0}}))); },
               {"MultivariateNormal", "scale_tril", "LowerCholesky()"});
  // off: no check (as validate_args=False)
  EXPECT_NO_THROW(D::Normal(tensor({0.0}), tensor({-1.0}), false));
  D::set_default_validate_args(false);
  EXPECT_NO_THROW(D::Normal(tensor({0.0}), tensor({-1.0})));
  EXPECT_NO_THROW(D::Exponential(1.0).log_prob(tensor({-1.0})));
  D::set_default_validate_args(true);
}

namespace {
// A user family derived from Normal: the registry finds the Normal pair
// unless a more specific one is registered.
class ShiftedNormal : public D::Normal {
 public:
  ShiftedNormal(double loc, double scale) : D::Normal(loc + 1, scale) {}
  BRISK_DISTRIBUTION(ShiftedNormal, D::Normal)
};
}  // namespace

TEST(Distributions, KLRegistryPicksTheMostSpecificPair) {
  const ShiftedNormal s(0.0, 1.0);
  const D::Normal n(0.0, 2.0);
  const Tensor via_normal = D::kl_divergence(s, n);
  EXPECT_TRUE(close(via_normal, D::kl_divergence(D::Normal(1.0, 1.0), n)));
  D::register_kl<ShiftedNormal, D::Normal>(
      [](const ShiftedNormal&, const D::Normal& q) { return full_like(q.loc, 42.0); });
  EXPECT_EQ(D::kl_divergence(s, n).item<double>(), 42.0);
  EXPECT_TRUE(close(D::kl_divergence(n, s), D::kl_divergence(n, D::Normal(1.0, 1.0))));  // (Normal, Normal) still
  expect_error([] { D::kl_divergence(D::Categorical(D::probs(ones({3}))), D::Normal(0.0, 1.0)); },
               {"kl_divergence", "Categorical", "Normal", "register_kl"});
  expect_error(
      [] {
        D::kl_divergence(D::TransformedDistribution(D::Normal(0.0, 1.0), {D::exp_transform()}),
                         D::TransformedDistribution(D::Normal(0.0, 1.0), {D::tanh_transform()}));
      },
      {"kl_divergence", "transforms"});
}

// The implicit reparameterization gradient dx/dalpha of Gamma(alpha, 1)
// against torch._standard_gamma_grad, and rsample's gradients against
// derivatives of exact expectations (E[z] = a / r, E[log z] = digamma(a) -
// log r) averaged over many samples.
TEST(Distributions, GammaRsampleGradients) {
  NEED_REFERENCE();
  bool found = false;
  for (const auto& f : reference().lines) {
    if (f[0] != "G") continue;
    found = true;
    const Tensor a = parse_tensor(f[1]), x = parse_tensor(f[2]), want = parse_tensor(f[3]);
    const Tensor got = D::_standard_gamma_grad(a, x);
    // torch's is itself an approximation (a few 1e-4 relative in places)
    EXPECT_TRUE(close(got, want, 2e-3, 1e-8)) << got << " vs " << want;
  }
  EXPECT_TRUE(found);
  manual_seed(11);
  const int64_t n = 400000;
  for (double a0 : {0.4, 1.0, 3.5}) {
    Tensor a = tensor({a0}, kDouble).reshape({}).requires_grad_(true);
    Tensor r = tensor({2.0}, kDouble).reshape({}).requires_grad_(true);
    D::Gamma g(a, r);
    Tensor z = g.rsample({n});
    z.mean().backward();
    EXPECT_NEAR(a.grad().item<double>(), 1 / 2.0, 0.01) << a0;             // d/da a/r
    EXPECT_NEAR(r.grad().item<double>(), -a0 / 4.0, 0.01 * a0) << a0;     // d/dr a/r
    Tensor a2 = tensor({a0}, kDouble).reshape({}).requires_grad_(true);
    D::Gamma(a2, tensor({2.0}, kDouble).reshape({})).rsample({n}).log().mean().backward();
    // d/da digamma(a) = trigamma(a)
    const double trigamma = detail_trigamma(a0);
    EXPECT_NEAR(a2.grad().item<double>(), trigamma, 0.02 * trigamma) << a0;
  }
  // Beta, Dirichlet, StudentT, Chi2 sample with a graph
  Tensor c = tensor({2.0, 3.0}, kDouble).requires_grad_(true);
  D::Dirichlet(c).rsample({4}).select(-1, 0).sum().backward();
  EXPECT_TRUE(c.grad().defined());
  Tensor df = tensor({4.0}, kDouble).requires_grad_(true);
  D::StudentT(df, zeros({1}, kDouble), ones({1}, kDouble)).rsample({8}).square().mean().backward();
  EXPECT_TRUE(df.grad().defined());
}

// Sampling reads nothing back on the host (issue 18: "CUDA parameters sample
// on the device, with no host round trip or sync"). The sync debug mode
// raises at every synchronizing call, on CPU tensors too, so this checks on
// any machine what a GPU would wait for; the rejection samplers used to ask
// "is any element still pending?" once per round. Parameters are checked at
// construction (validate_args), before the mode is set.
TEST(Distributions, SamplingHasNoSyncPoints) {
  struct Reset {
    ~Reset() { set_sync_debug_mode(SyncDebugMode::Off); }
  } reset;
  manual_seed(3);
  const Tensor a = tensor({0.4, 1.0, 7.5}), b = tensor({2.0, 0.5, 1.0});
  std::vector<std::pair<std::string, D::DistributionPtr>> dists = {
      {"Gamma", D::share(D::Gamma(a, b))},
      {"Chi2", D::share(D::Chi2(a))},
      {"Beta", D::share(D::Beta(a, b))},
      {"Dirichlet", D::share(D::Dirichlet(a))},
      {"StudentT", D::share(D::StudentT(a, b, b))},
      {"Poisson", D::share(D::Poisson(tensor({0.5, 4.0, 60.0})))},
      {"Binomial", D::share(D::Binomial(tensor({10.0, 1000.0, 3.0}), D::probs(tensor({0.3, 0.6, 0.0}))))},
      {"Normal", D::share(D::Normal(a, b))},
      {"Exponential", D::share(D::Exponential(a))},
      {"Geometric", D::share(D::Geometric(D::probs(tensor({0.2, 0.9}))))},
  };
  for (auto& [name, d] : dists) {
    set_sync_debug_mode(SyncDebugMode::Error);
    Tensor s;
    EXPECT_NO_THROW(s = d->sample({500})) << name;
    set_sync_debug_mode(SyncDebugMode::Off);
    ASSERT_TRUE(s.defined()) << name;
    EXPECT_TRUE(s.isfinite().all().item<bool>()) << name;
  }
  // rsample and its backward (the implicit gradient runs per element on the
  // device too), and Gamma's cdf (igamma)
  for (const char* name : {"Gamma", "Beta", "Dirichlet"}) {
    const Tensor c = tensor({0.4, 1.0, 7.5}).requires_grad_(true), r = tensor({2.0, 0.5, 1.0}).requires_grad_(true);
    D::DistributionPtr d = std::string(name) == "Gamma" ? D::share(D::Gamma(c, r))
                           : std::string(name) == "Beta" ? D::share(D::Beta(c, r))
                                                         : D::share(D::Dirichlet(c));
    set_sync_debug_mode(SyncDebugMode::Error);
    EXPECT_NO_THROW(d->rsample({100}).sum().backward()) << name;
    set_sync_debug_mode(SyncDebugMode::Off);
    EXPECT_TRUE(c.grad().defined() && c.grad().isfinite().all().item<bool>()) << name;
  }
  const D::Gamma g(tensor({0.4, 1.0, 7.5}), tensor({2.0, 0.5, 1.0}), /*validate_args=*/false);  // validation reads the value on the host
  const Tensor v = tensor({0.1, 3.0, 7.0});
  set_sync_debug_mode(SyncDebugMode::Error);
  EXPECT_NO_THROW(g.cdf(v));
  set_sync_debug_mode(SyncDebugMode::Off);
}
