// Per-element samplers of the distributions whose draws take a random
// number of steps: standard Gamma, Poisson, Binomial. One element is one
// call with its own random stream, so the CPU kernel (a loop over elements)
// and the CUDA kernel (a thread per element) run the same code and finish
// on the device with no host round trip: no "is anything still pending?"
// read per round (Note [Samplers in one pass]).
//
// Plain C++ with BRISK_HOST_DEVICE functions and no CUDA header, like
// functors.h: the CPU kernel (src/backend/cpu/kernels/random.cpp) and the
// CUDA one (src/backend/cuda/random.cu) include it.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/philox.h"

namespace brisk::samplers {

// Note [Samplers in one pass]
// A rejection sampler written with tensor ops draws for every element per
// round and asks the host whether any element is still pending: one device
// sync per round, and on the CPU a dozen full-size passes per round. Here
// each element runs its own loop. Its draws come from its own Philox stream
// (Note [Sampler streams]), so its value depends on (seed, offset, element
// index) alone: not on the thread count, the launch shape or the device.
// The arithmetic is float64 whatever the dtype (counts up to 2^53 stay
// exact; the float32 result is rounded once at the end). CPU and CUDA give
// the same draws; the values agree except where a log/lgamma/exp that
// differs by an ulp between libm and CUDA moves an acceptance test across
// its bound (rare), the same caveat as Note [Random fills on the GPU].
//
// Note [Sampler streams]
// A sampler op reserves one counter block of the default generator (its
// offset) and element i draws blocks k = 0, 1, 2, ... of counter
//   {lo(offset), hi(offset), lo(i), 0x80000000 | hi(i) << 23 | k}
// (i < 2^40, k < 2^23). The fills of Note [Random counter layout] use
// counters whose top two words are 0, and another sampler op has another
// offset, so no two streams ever share a block. An element that would need
// more than 2^23 blocks (32 million words; no valid parameter comes near)
// stops with NaN. Draws take one word (32 bits) where 2^-32 is far below
// any effect on the distribution (acceptance tests, the polar method's
// point, geometric waiting times) and two (53 bits) where u's resolution
// would cut a tail (Poisson's inversion) or the proposal's grid (PTRS and
// BTRS's U).
constexpr uint64_t kMaxElements = uint64_t{1} << 40;
constexpr uint32_t kMaxBlocks = uint32_t{1} << 23;

/// Element i's stream of draws: 32-bit words, four per counter block, taken
/// in order.
class Stream {
 public:
  BRISK_HOST_DEVICE Stream(uint64_t seed, uint64_t offset, uint64_t elem) {
    key_[0] = static_cast<uint32_t>(seed);
    key_[1] = static_cast<uint32_t>(seed >> 32);
    ctr_[0] = static_cast<uint32_t>(offset);
    ctr_[1] = static_cast<uint32_t>(offset >> 32);
    ctr_[2] = static_cast<uint32_t>(elem);
    high_ = 0x80000000u | (static_cast<uint32_t>(elem >> 32) << 23);
  }
  /// Uniform in [0, 1) with 53 random bits (two words): for inversions,
  /// where the resolution of u is the resolution of the tail.
  BRISK_HOST_DEVICE double uniform() {
    const uint64_t lo = word(), hi = word();
    return philox::to_unit_double(lo | (hi << 32));
  }
  /// Uniform in (0, 1]: a logarithm of it is finite.
  BRISK_HOST_DEVICE double uniform_open0() { return 1.0 - uniform(); }
  /// Uniform in (0, 1) from one word, (w + 1/2) 2^-32: for acceptance tests
  /// and angles, where 2^-32 is far below any effect on the distribution.
  BRISK_HOST_DEVICE double uniform32() { return (static_cast<double>(word()) + 0.5) * 2.3283064365386963e-10; }
  /// Standard normal pairs by Marsaglia's polar method (a point uniform in
  /// the unit disc from two words, 79% accepted; no trigonometry); the
  /// pair's second value is kept for the next call.
  BRISK_HOST_DEVICE double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double x, y, q;
    do {
      x = 2.0 * uniform32() - 1.0;
      y = 2.0 * uniform32() - 1.0;
      q = x * x + y * y;
    } while (q >= 1.0 && !exhausted_);
    const double f = std::sqrt(-2.0 * std::log(q) / q);
    spare_ = y * f;
    has_spare_ = true;
    return x * f;
  }
  /// True once the stream ran past kMaxBlocks: the caller gives up (NaN).
  BRISK_HOST_DEVICE bool exhausted() const { return exhausted_; }

 private:
  BRISK_HOST_DEVICE uint32_t word() {
    if (used_ == 4) {
      if (block_ >= kMaxBlocks) exhausted_ = true;
      const uint32_t ctr[4] = {ctr_[0], ctr_[1], ctr_[2], high_ | (block_ & (kMaxBlocks - 1))};
      philox::philox4x32_10(ctr, key_, r_);
      ++block_;
      used_ = 0;
    }
    return r_[used_++];
  }
  uint32_t key_[2];
  uint32_t ctr_[3];
  uint32_t high_;
  uint32_t block_ = 0;
  uint32_t r_[4] = {};
  int used_ = 4;
  bool has_spare_ = false;
  bool exhausted_ = false;
  double spare_ = 0;
};

/// log Gamma(x) for x > 0, reentrant on the host (glibc's lgamma writes the
/// global signgam).
BRISK_HOST_DEVICE inline double log_gamma(double x) {
#ifdef __CUDA_ARCH__
  return lgamma(x);
#else
  int sign;
  return lgamma_r(x, &sign);
#endif
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Note [Gamma sampling]
// Standard Gamma(alpha) by Marsaglia and Tsang's method: with d = alpha - 1/3
// and c = 1 / sqrt(9 d), a normal x and a uniform u, v = (1 + c x)^3 is
// accepted when v > 0 and u < 1 - 0.0331 x^4 (the squeeze) or log u <
// x^2 / 2 + d - d v + d log v; the sample is d v. About 2-5% of rounds
// reject. For alpha < 1 the sample of alpha + 1 is scaled by u^(1 / alpha).
// alpha = inf gives inf, alpha <= 0 or NaN gives NaN (the distribution
// checks its parameters before it samples). The caller clamps to the
// dtype's smallest normal number, as PyTorch does.
BRISK_HOST_DEVICE inline double standard_gamma(double alpha, Stream& s) {
  if (!(alpha > 0)) return kNaN;
  if (std::isinf(alpha)) return alpha;
  const bool boost = alpha < 1;
  const double a = boost ? alpha + 1 : alpha;
  const double d = a - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  double out = kNaN;
  while (!s.exhausted()) {
    const double x = s.normal();
    double v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const double u = s.uniform32();
    const double x2 = x * x;
    if (u < 1 - 0.0331 * x2 * x2 || std::log(u) < 0.5 * x2 + d - d * v + d * std::log(v)) {
      out = d * v;
      break;
    }
  }
  if (boost) out *= std::exp(std::log(s.uniform_open0()) / alpha);  // u^(1/alpha), u in (0, 1]
  return s.exhausted() ? kNaN : out;
}

// Note [Poisson sampling]
// Below rate 10 by inversion (walk the CDF from k = 0 with one uniform;
// about rate + 1 steps), above by Hormann's PTRS transformed rejection
// (1993; about 1.1 rounds of two uniforms), its acceptance test with an
// exact lgamma. Rate 0 gives 0; a negative or NaN rate NaN.
BRISK_HOST_DEVICE inline double poisson(double lam, Stream& s) {
  if (!(lam >= 0)) return kNaN;
  if (lam == 0) return 0;
  if (std::isinf(lam)) return lam;
  if (lam < 10) {
    const double u = s.uniform();
    double k = 0, p = std::exp(-lam), cdf = p;
    while (u > cdf && k < 1000) {
      k += 1;
      p *= lam / k;
      cdf += p;
    }
    return k;
  }
  const double slam = std::sqrt(lam), loglam = std::log(lam);
  const double b = 0.931 + 2.53 * slam;
  const double a = -0.059 + 0.02483 * b;
  const double log_invalpha = std::log(1.1239 + 1.1328 / (b - 3.4));
  const double vr = 0.9277 - 3.6224 / (b - 2);
  while (!s.exhausted()) {
    const double U = s.uniform() - 0.5;
    const double V = s.uniform32();
    const double us = 0.5 - std::fabs(U);
    const double k = std::floor((2 * a / us + b) * U + lam + 0.43);
    if (us >= 0.07 && V <= vr) return k;
    if (k < 0 || (us < 0.013 && V > us)) continue;
    if (std::log(V) + log_invalpha - std::log(a / (us * us) + b) <= -lam + k * loglam - log_gamma(k + 1)) return k;
  }
  return kNaN;
}

// Note [Binomial sampling]
// As PyTorch's sampler: with q = min(p, 1 - p) (a draw for p > 1/2 is n
// minus one for 1 - p), n q < 10 counts the geometric waiting times between
// successes until they pass n (about n q + 1 steps), otherwise Hormann's
// BTRS transformed rejection (1993; about 1.2 rounds of two uniforms), whose
// bound on log f(k) / f(m) is evaluated exactly with lgamma. n up to 2^53.
BRISK_HOST_DEVICE inline double binomial(double n, double p, Stream& s) {
  if (!(n >= 0) || !(p >= 0 && p <= 1)) return kNaN;
  const bool flip = p > 0.5;
  const double q = flip ? 1 - p : p;
  double k = 0;
  if (n == 0 || q == 0) {
    k = 0;
  } else if (n * q < 10) {
    const double log1mq = std::log1p(-q);
    double sum = 0;
    while (!s.exhausted()) {
      sum += std::ceil(std::log(s.uniform32()) / log1mq);  // a geometric waiting time
      if (sum > n) break;
      k += 1;
    }
  } else {
    const double sd = std::sqrt(n * q * (1 - q));
    const double b = 1.15 + 2.53 * sd;
    const double a = -0.0873 + 0.0248 * b + 0.01 * q;
    const double c = n * q + 0.5;
    const double vr = 0.92 - 4.2 / b;
    const double alpha = (2.83 + 5.1 / b) * sd;
    const double m = std::floor((n + 1) * q);
    double log_r = 0, log_fm = 0;  // computed at the first round the quick test leaves open
    bool have_logs = false;
    while (!s.exhausted()) {
      const double U = s.uniform() - 0.5;
      const double V = s.uniform32();
      const double us = 0.5 - std::fabs(U);
      const double kk = std::floor((2 * a / us + b) * U + c);
      if (kk < 0 || kk > n) continue;
      if (us >= 0.07 && V <= vr) {
        k = kk;
        break;
      }
      if (!have_logs) {
        log_r = std::log(q) - std::log1p(-q);
        log_fm = -log_gamma(m + 1) - log_gamma(n - m + 1);
        have_logs = true;
      }
      const double log_ratio = (kk - m) * log_r - log_gamma(kk + 1) - log_gamma(n - kk + 1) - log_fm;
      if (std::log(V * alpha / (a / (us * us) + b)) <= log_ratio) {
        k = kk;
        break;
      }
    }
  }
  if (s.exhausted()) return kNaN;
  return flip ? n - k : k;
}

// Note [Implicit reparameterization]
// A Gamma(alpha) sample x = F^-1(u; alpha) depends on alpha through the
// inverse CDF, so dx/dalpha = -(dF/dalpha)(x; alpha) / f(x; alpha)
// (Figurnov et al. 2018), where F is the regularized lower incomplete gamma
// function P(alpha, x) and f the density. dF/dalpha has no closed form:
// it is the central difference of P in alpha (step 1e-6 * max(alpha, 1);
// P from its series below alpha + 1 and from Q's continued fraction above,
// where the difference is taken of Q, so that P close to 1 loses no
// digits), about 1e-8 relative. Float64, per element, on either device.

/// P(a, x) (lower) when `lower`, else Q(a, x) = 1 - P(a, x), each computed
/// directly where it is accurate (a > 0, x finite).
BRISK_HOST_DEVICE inline double incomplete_gamma(double a, double x, bool lower) {
  if (x <= 0) return lower ? 0.0 : 1.0;
  const double front = std::exp(-x + a * std::log(x) - log_gamma(a));
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 10000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (std::fabs(term) < std::fabs(sum) * 1e-17) break;
    }
    const double p = sum * front;
    return lower ? p : 1 - p;
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-16) break;
  }
  const double q = front * h;
  return lower ? 1 - q : q;
}

/// torch.igamma(a, x): P(a, x), with its edge values (a = 0: 1 for x > 0;
/// x = inf: 1; a = inf: 0; a < 0, x < 0, NaN, or a = x = 0: NaN).
BRISK_HOST_DEVICE inline double igamma(double a, double x) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0 || (a == 0 && x == 0)) return kNaN;
  if (a == 0) return 1.0;
  if (std::isinf(x)) return std::isinf(a) ? kNaN : 1.0;
  if (std::isinf(a)) return 0.0;
  return incomplete_gamma(a, x, /*lower=*/true);
}

/// d x / d alpha of a Gamma(alpha, 1) sample x (Note [Implicit reparameterization]).
BRISK_HOST_DEVICE inline double standard_gamma_grad(double a, double x) {
  const bool lower = x < a + 1;
  const double h = 1e-6 * (a > 1.0 ? a : 1.0);
  double dp = (incomplete_gamma(a + h, x, lower) - incomplete_gamma(a - h, x, lower)) / (2 * h);
  if (!lower) dp = -dp;  // dP/da = -dQ/da
  const double log_density = (a - 1) * std::log(x) - x - log_gamma(a);
  return -dp / std::exp(log_density);
}

/// What a SampleFn kernel computes per element (one int): the three
/// samplers, and two functions of the gamma family that need no draws.
enum class Sampler : int { standard_gamma = 0, poisson = 1, binomial = 2, standard_gamma_grad = 3, igamma = 4 };
/// Whether the kernel draws random numbers (reserves a counter block).
BRISK_HOST_DEVICE constexpr bool is_random(Sampler s) { return static_cast<int>(s) <= 2; }

/// Whether (a, b) are parameters the sampler takes; a sampler given others
/// returns NaN, and the ops raise (the CPU before sampling, CUDA through the
/// deferred device errors).
BRISK_HOST_DEVICE inline bool valid_params(Sampler which, double a, double b) {
  switch (which) {
    case Sampler::standard_gamma: return a > 0;
    case Sampler::poisson: return a >= 0;
    case Sampler::binomial: return a >= 0 && std::floor(a) == a && b >= 0 && b <= 1;
    default: return true;  // the functions give NaN where undefined, as PyTorch's
  }
}
/// What valid_params asks for, in words (the error message).
inline const char* expected_params(Sampler which) {
  switch (which) {
    case Sampler::standard_gamma: return "concentrations alpha > 0";
    case Sampler::poisson: return "rates >= 0";
    default: return "counts that are non-negative integers and probabilities in [0, 1]";
  }
}

/// Element i's value: a[i] (alpha, rate or count), b[i] (binomial's prob).
BRISK_HOST_DEVICE inline double sample_one(Sampler which, double a, double b, uint64_t seed, uint64_t offset,
                                           uint64_t i) {
  switch (which) {
    case Sampler::standard_gamma_grad: return standard_gamma_grad(a, b);
    case Sampler::igamma: return igamma(a, b);
    default: break;
  }
  Stream s(seed, offset, i);
  switch (which) {
    case Sampler::standard_gamma: return standard_gamma(a, s);
    case Sampler::poisson: return poisson(a, s);
    default: return binomial(a, b, s);
  }
}

}  // namespace brisk::samplers
