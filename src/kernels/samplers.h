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

// Note [igamma]
// torch.igamma(a, x) = P(a, x) follows SciPy's cephes igam, as PyTorch's
// calc_igamma (ATen/native/Math.h) does, evaluated in float64 whatever the
// dtype and rounded once:
//  - edge values in cephes' order: a < 0 or x < 0: NaN; a = 0: 1 for x > 0,
//    else NaN; x = 0: 0 (for a = NaN too: the zero integration limit);
//    a = inf: 0 (NaN for x = inf); x = inf: 1 (for a = NaN too);
//  - a > 20 with x near a (|x - a| / a < 0.3; see asymptotic_region):
//    Temme's uniform asymptotic expansion (DLMF 8.12.3). The series and the
//    continued fraction would need O(sqrt(a)) terms there, and the prefactor
//    x^a e^-x / Gamma(a) cancels in its exponent for a large (P(1e30, 1e30)
//    is 0.5);
//  - x > 1 and x > a: 1 - Q, Q from its continued fraction (DLMF 8.9.2) or
//    for x <= 1.1 its series (DLMF 8.7.3);
//  - otherwise the power series (DLMF 8.11.4).
// Departures from torch, each toward the exact value: the expansion's wider
// region for a > 200 (asymptotic_region); float32, float16 and
// bfloat16 are computed in float64 (torch: in float32, where the series'
// prefactor x^a e^-x / Gamma(a) underflows to 0 for a below ~3e-39: its
// float32 igamma(1e-40, 0.97) is 0, the exact value 1 - 1e-40); the
// series' prefactor is x^a e^-x / Gamma(a + 1) in one exponent for a < 1
// (no underflow for a float64 a down to the denormals either); the
// expansion's 1 / sqrt(2 pi a) uses pi in float64 (torch's float pi puts a
// 1e-9 relative error on P(50, 45)); the result is clamped to [0, 1]
// (torch's float64 igamma(1e-30, 0.5) is 1 + 2e-15).
namespace igam {
constexpr double kMachEp = 1.11022302462515654042e-16;
constexpr double kMaxLog = 7.09782712893383996843e2;
constexpr int kMaxIter = 2000;
constexpr double kLanczosG = 6.024680040776729583740234375;

#ifdef __CUDA_ARCH__
#define BRISK_IGAM_TABLE constexpr
#else
#define BRISK_IGAM_TABLE static constexpr
#endif

/// Lanczos' sum times exp(-g) / (x + g - 0.5)^(x - 0.5) scaled (Boost's
/// lanczos_sum_expg_scaled, via cephes): Gamma(x) in fac below.
BRISK_HOST_DEVICE inline double lanczos_sum_expg_scaled(double x) {
  BRISK_IGAM_TABLE double num[13] = {
      0.006061842346248906525783753964555936883222, 0.5098416655656676188125178644804694509993,
      19.51992788247617482847860966235652136208,    449.9445569063168119446858607650988409623,
      6955.999602515376140356310115515198987526,    75999.29304014542649875303443598909137092,
      601859.6171681098786670226533699352302507,    3481712.15498064590882071018964774556468,
      14605578.08768506808414169982791359218571,    43338889.32467613834773723740590533316085,
      86363131.28813859145546927288977868422342,    103794043.1163445451906271053616070238554,
      56906521.91347156388090791033559122686859};
  BRISK_IGAM_TABLE double den[13] = {1.,        66.,        1925.,     32670.,    357423.,  2637558., 13339535.,
                                     45995730., 105258076., 150917976., 120543840., 39916800., 0.};
  // the ratio of the two polynomials (coefficients from the highest power);
  // above 1 evaluated in 1 / x
  double n = 0, d = 0;
  if (std::fabs(x) > 1) {
    const double y = 1 / x;
    for (int i = 12; i >= 0; --i) {
      n = n * y + num[i];
      d = d * y + den[i];
    }
  } else {
    for (int i = 0; i <= 12; ++i) {
      n = n * x + num[i];
      d = d * x + den[i];
    }
  }
  return n / d;
}

/// x^a e^-x / Gamma(a) (cephes igam_fac): for x near a through Lanczos'
/// approximation, which keeps the exponent's cancellation out.
BRISK_HOST_DEVICE inline double fac(double a, double x) {
  if (std::fabs(a - x) > 0.4 * std::fabs(a)) {
    const double ax = a * std::log(x) - x - log_gamma(a);
    return ax < -kMaxLog ? 0.0 : std::exp(ax);
  }
  const double f = a + kLanczosG - 0.5;
  double res = std::sqrt(f / 2.718281828459045) / lanczos_sum_expg_scaled(a);
  if (a < 200 && x < 200) {
    res *= std::exp(a - x) * std::pow(x / f, a);
  } else {
    const double num = x - a - kLanczosG + 0.5, numfac = num / f;
    res *= std::exp(a * (std::log1p(numfac) - numfac) + x * (0.5 - kLanczosG) / f);
  }
  return res;
}

/// P by its power series (DLMF 8.11.4).
BRISK_HOST_DEVICE inline double p_series(double a, double x) {
  double front;
  if (a < 1 && std::fabs(a - x) > 0.4 * a) {
    // x^a e^-x / Gamma(a + 1): for a tiny, Gamma(a) alone overflows the exponent
    const double ax = a * std::log(x) - x - log_gamma(a + 1);
    if (ax < -kMaxLog) return 0.0;
    front = std::exp(ax);
  } else {
    front = fac(a, x);
    if (front == 0) return 0.0;
    front /= a;
  }
  double r = a, c = 1, sum = 1;
  for (int i = 0; i < kMaxIter; ++i) {
    r += 1;
    c *= x / r;
    sum += c;
    if (c <= kMachEp * sum) break;
  }
  return sum * front;
}

/// Q by its series (DLMF 8.7.3), for small x, written against cancellation.
BRISK_HOST_DEVICE inline double q_series(double a, double x) {
  double f = 1, sum = 0;
  for (int n = 1; n < kMaxIter; ++n) {
    f *= -x / n;
    const double term = f / (a + n);
    sum += term;
    if (std::fabs(term) <= kMachEp * std::fabs(sum)) break;
  }
  const double logx = std::log(x);
  return -std::expm1(a * logx - log_gamma(1 + a)) - std::exp(a * logx - log_gamma(a)) * sum;
}

/// Temme's uniform asymptotic expansion (DLMF 8.12.3 / 8.12.4): P when
/// `lower`, else Q. The table is cephes': d[k][n] is the n-th Taylor
/// coefficient in eta of the expansion's k-th term.
BRISK_HOST_DEVICE inline double asymptotic_series(double a, double x, bool lower) {
  BRISK_IGAM_TABLE double d[25][25] = {{-3.3333333333333333e-1, 8.3333333333333333e-2, -1.4814814814814815e-2,
      1.1574074074074074e-3, 3.527336860670194e-4, -1.7875514403292181e-4,
      3.9192631785224378e-5, -2.1854485106799922e-6, -1.85406221071516e-6,
      8.296711340953086e-7, -1.7665952736826079e-7, 6.7078535434014986e-9,
      1.0261809784240308e-8, -4.3820360184533532e-9, 9.1476995822367902e-10,
      -2.551419399494625e-11, -5.8307721325504251e-11, 2.4361948020667416e-11,
      -5.0276692801141756e-12, 1.1004392031956135e-13, 3.3717632624009854e-13,
      -1.3923887224181621e-13, 2.8534893807047443e-14, -5.1391118342425726e-16,
      -1.9752288294349443e-15},
    {-1.8518518518518519e-3, -3.4722222222222222e-3, 2.6455026455026455e-3,
      -9.9022633744855967e-4, 2.0576131687242798e-4, -4.0187757201646091e-7,
      -1.8098550334489978e-5, 7.6491609160811101e-6, -1.6120900894563446e-6,
      4.6471278028074343e-9, 1.378633446915721e-7, -5.752545603517705e-8,
      1.1951628599778147e-8, -1.7543241719747648e-11, -1.0091543710600413e-9,
      4.1627929918425826e-10, -8.5639070264929806e-11, 6.0672151016047586e-14,
      7.1624989648114854e-12, -2.9331866437714371e-12, 5.9966963656836887e-13,
      -2.1671786527323314e-16, -4.9783399723692616e-14, 2.0291628823713425e-14,
      -4.13125571381061e-15},
    {4.1335978835978836e-3, -2.6813271604938272e-3, 7.7160493827160494e-4,
      2.0093878600823045e-6, -1.0736653226365161e-4, 5.2923448829120125e-5,
      -1.2760635188618728e-5, 3.4235787340961381e-8, 1.3721957309062933e-6,
      -6.298992138380055e-7, 1.4280614206064242e-7, -2.0477098421990866e-10,
      -1.4092529910867521e-8, 6.228974084922022e-9, -1.3670488396617113e-9,
      9.4283561590146782e-13, 1.2872252400089318e-10, -5.5645956134363321e-11,
      1.1975935546366981e-11, -4.1689782251838635e-15, -1.0940640427884594e-12,
      4.6622399463901357e-13, -9.905105763906906e-14, 1.8931876768373515e-17,
      8.8592218725911273e-15},
    {6.4943415637860082e-4, 2.2947209362139918e-4, -4.6918949439525571e-4,
      2.6772063206283885e-4, -7.5618016718839764e-5, -2.3965051138672967e-7,
      1.1082654115347302e-5, -5.6749528269915966e-6, 1.4230900732435884e-6,
      -2.7861080291528142e-11, -1.6958404091930277e-7, 8.0994649053880824e-8,
      -1.9111168485973654e-8, 2.3928620439808118e-12, 2.0620131815488798e-9,
      -9.4604966618551322e-10, 2.1541049775774908e-10, -1.388823336813903e-14,
      -2.1894761681963939e-11, 9.7909989511716851e-12, -2.1782191880180962e-12,
      6.2088195734079014e-17, 2.126978363279737e-13, -9.3446887915174333e-14,
      2.0453671226782849e-14},
    {-8.618882909167117e-4, 7.8403922172006663e-4, -2.9907248030319018e-4,
      -1.4638452578843418e-6, 6.6414982154651222e-5, -3.9683650471794347e-5,
      1.1375726970678419e-5, 2.5074972262375328e-10, -1.6954149536558306e-6,
      8.9075075322053097e-7, -2.2929348340008049e-7, 2.956794137544049e-11,
      2.8865829742708784e-8, -1.4189739437803219e-8, 3.4463580499464897e-9,
      -2.3024517174528067e-13, -3.9409233028046405e-10, 1.8602338968504502e-10,
      -4.356323005056618e-11, 1.2786001016296231e-15, 4.6792750266579195e-12,
      -2.1492464706134829e-12, 4.9088156148096522e-13, -6.3385914848915603e-18,
      -5.0453320690800944e-14},
    {-3.3679855336635815e-4, -6.9728137583658578e-5, 2.7727532449593921e-4,
      -1.9932570516188848e-4, 6.7977804779372078e-5, 1.419062920643967e-7,
      -1.3594048189768693e-5, 8.0184702563342015e-6, -2.2914811765080952e-6,
      -3.252473551298454e-10, 3.4652846491085265e-7, -1.8447187191171343e-7,
      4.8240967037894181e-8, -1.7989466721743515e-14, -6.3061945000135234e-9,
      3.1624176287745679e-9, -7.8409242536974293e-10, 5.1926791652540407e-15,
      9.3589442423067836e-11, -4.5134262161632782e-11, 1.0799129993116827e-11,
      -3.661886712685252e-17, -1.210902069055155e-12, 5.6807435849905643e-13,
      -1.3249659916340829e-13},
    {5.3130793646399222e-4, -5.9216643735369388e-4, 2.7087820967180448e-4,
      7.9023532326603279e-7, -8.1539693675619688e-5, 5.6116827531062497e-5,
      -1.8329116582843376e-5, -3.0796134506033048e-9, 3.4651553688036091e-6,
      -2.0291327396058604e-6, 5.7887928631490037e-7, 2.338630673826657e-13,
      -8.8286007463304835e-8, 4.7435958880408128e-8, -1.2545415020710382e-8,
      8.6496488580102925e-14, 1.6846058979264063e-9, -8.5754928235775947e-10,
      2.1598224929232125e-10, -7.6132305204761539e-16, -2.6639822008536144e-11,
      1.3065700536611057e-11, -3.1799163902367977e-12, 4.7109761213674315e-18,
      3.6902800842763467e-13},
    {3.4436760689237767e-4, 5.1717909082605922e-5, -3.3493161081142236e-4,
      2.812695154763237e-4, -1.0976582244684731e-4, -1.2741009095484485e-7,
      2.7744451511563644e-5, -1.8263488805711333e-5, 5.7876949497350524e-6,
      4.9387589339362704e-10, -1.0595367014026043e-6, 6.1667143761104075e-7,
      -1.7562973359060462e-7, -1.2974473287015439e-12, 2.695423606288966e-8,
      -1.4578352908731271e-8, 3.887645959386175e-9, -3.8810022510194121e-17,
      -5.3279941738772867e-10, 2.7437977643314845e-10, -6.9957960920705679e-11,
      2.5899863874868481e-17, 8.8566890996696381e-12, -4.403168815871311e-12,
      1.0865561947091654e-12},
    {-6.5262391859530942e-4, 8.3949872067208728e-4, -4.3829709854172101e-4,
      -6.969091458420552e-7, 1.6644846642067548e-4, -1.2783517679769219e-4,
      4.6299532636913043e-5, 4.5579098679227077e-9, -1.0595271125805195e-5,
      6.7833429048651666e-6, -2.1075476666258804e-6, -1.7213731432817145e-11,
      3.7735877416110979e-7, -2.1867506700122867e-7, 6.2202288040189269e-8,
      6.5977038267330006e-16, -9.5903864974256858e-9, 5.2132144922808078e-9,
      -1.3991589583935709e-9, 5.382058999060575e-16, 1.9484714275467745e-10,
      -1.0127287556389682e-10, 2.6077347197254926e-11, -5.0904186999932993e-18,
      -3.3721464474854592e-12},
    {-5.9676129019274625e-4, -7.2048954160200106e-5, 6.7823088376673284e-4,
      -6.4014752602627585e-4, 2.7750107634328704e-4, 1.8197008380465151e-7,
      -8.4795071170685032e-5, 6.105192082501531e-5, -2.1073920183404862e-5,
      -8.8585890141255994e-10, 4.5284535953805377e-6, -2.8427815022504408e-6,
      8.7082341778646412e-7, 3.6886101871706965e-12, -1.5344695190702061e-7,
      8.862466778790695e-8, -2.5184812301826817e-8, -1.0225912098215092e-14,
      3.8969470758154777e-9, -2.1267304792235635e-9, 5.7370135528051385e-10,
      -1.887749850169741e-19, -8.0931538694657866e-11, 4.2382723283449199e-11,
      -1.1002224534207726e-11},
    {1.3324454494800656e-3, -1.9144384985654775e-3, 1.1089369134596637e-3,
      9.932404122642299e-7, -5.0874501293093199e-4, 4.2735056665392884e-4,
      -1.6858853767910799e-4, -8.1301893922784998e-9, 4.5284402370562147e-5,
      -3.127053674781734e-5, 1.044986828530338e-5, 4.8435226265680926e-11,
      -2.1482565873456258e-6, 1.329369701097492e-6, -4.0295693092101029e-7,
      -1.7567877666323291e-13, 7.0145043163668257e-8, -4.040787734999483e-8,
      1.1474026743371963e-8, 3.9642746853563325e-18, -1.7804938269892714e-9,
      9.7480262548731646e-10, -2.6405338676507616e-10, 5.794875163403742e-18,
      3.7647749553543836e-11},
    {1.579727660730835e-3, 1.6251626278391582e-4, -2.0633421035543276e-3,
      2.1389686185689098e-3, -1.0108559391263003e-3, -3.9912705529919201e-7,
      3.6235025084764691e-4, -2.8143901463712154e-4, 1.0449513336495887e-4,
      2.1211418491830297e-9, -2.5779417251947842e-5, 1.7281818956040463e-5,
      -5.6413773872904282e-6, -1.1024320105776174e-11, 1.1223224418895175e-6,
      -6.8693396379526735e-7, 2.0653236975414887e-7, 4.6714772409838506e-14,
      -3.5609886164949055e-8, 2.0470855345905963e-8, -5.8091738633283358e-9,
      -1.332821287582869e-16, 9.0354604391335133e-10, -4.9598782517330834e-10,
      1.3481607129399749e-10},
    {-4.0725121195140166e-3, 6.4033628338080698e-3, -4.0410161081676618e-3,
      -2.183732802866233e-6, 2.1740441801254639e-3, -1.9700440518418892e-3,
      8.3595469747962458e-4, 1.9445447567109655e-8, -2.5779387120421696e-4,
      1.9009987368139304e-4, -6.7696499937438965e-5, -1.4440629666426572e-10,
      1.5712512518742269e-5, -1.0304008744776893e-5, 3.304517767401387e-6,
      7.9829760242325709e-13, -6.4097794149313004e-7, 3.8894624761300056e-7,
      -1.1618347644948869e-7, -2.816808630596451e-15, 1.9878012911297093e-8,
      -1.1407719956357511e-8, 3.2355857064185555e-9, 4.1759468293455945e-20,
      -5.0423112718105824e-10},
    {-5.9475779383993003e-3, -5.4016476789260452e-4, 8.7910413550767898e-3,
      -9.8576315587856125e-3, 5.0134695031021538e-3, 1.2807521786221875e-6,
      -2.0626019342754683e-3, 1.7109128573523058e-3, -6.7695312714133799e-4,
      -6.9011545676562133e-9, 1.8855128143995902e-4, -1.3395215663491969e-4,
      4.6263183033528039e-5, 4.0034230613321351e-11, -1.0255652921494033e-5,
      6.612086372797651e-6, -2.0913022027253008e-6, -2.0951775649603837e-13,
      3.9756029041993247e-7, -2.3956211978815887e-7, 7.1182883382145864e-8,
      8.925574873053455e-16, -1.2101547235064676e-8, 6.9350618248334386e-9,
      -1.9661464453856102e-9},
    {1.7402027787522711e-2, -2.9527880945699121e-2, 2.0045875571402799e-2,
      7.0289515966903407e-6, -1.2375421071343148e-2, 1.1976293444235254e-2,
      -5.4156038466518525e-3, -6.3290893396418616e-8, 1.8855118129005065e-3,
      -1.473473274825001e-3, 5.5515810097708387e-4, 5.2406834412550662e-10,
      -1.4357913535784836e-4, 9.9181293224943297e-5, -3.3460834749478311e-5,
      -3.5755837291098993e-12, 7.1560851960630076e-6, -4.5516802628155526e-6,
      1.4236576649271475e-6, 1.8803149082089664e-14, -2.6623403898929211e-7,
      1.5950642189595716e-7, -4.7187514673841102e-8, -6.5107872958755177e-17,
      7.9795091026746235e-9},
    {3.0249124160905891e-2, 2.4817436002649977e-3, -4.9939134373457022e-2,
      5.9915643009307869e-2, -3.2483207601623391e-2, -5.7212968652103441e-6,
      1.5085251778569354e-2, -1.3261324005088445e-2, 5.5515262632426148e-3,
      3.0263182257030016e-8, -1.7229548406756723e-3, 1.2893570099929637e-3,
      -4.6845138348319876e-4, -1.830259937893045e-10, 1.1449739014822654e-4,
      -7.7378565221244477e-5, 2.5625836246985201e-5, 1.0766165333192814e-12,
      -5.3246809282422621e-6, 3.349634863064464e-6, -1.0381253128684018e-6,
      -5.608909920621128e-15, 1.9150821930676591e-7, -1.1418365800203486e-7,
      3.3654425209171788e-8},
    {-9.9051020880159045e-2, 1.7954011706123486e-1, -1.2989606383463778e-1,
      -3.1478872752284357e-5, 9.0510635276848131e-2, -9.2828824411184397e-2,
      4.4412112839877808e-2, 2.7779236316835888e-7, -1.7229543805449697e-2,
      1.4182925050891573e-2, -5.6214161633747336e-3, -2.39598509186381e-9,
      1.6029634366079908e-3, -1.1606784674435773e-3, 4.1001337768153873e-4,
      1.8365800754090661e-11, -9.5844256563655903e-5, 6.3643062337764708e-5,
      -2.076250624489065e-5, -1.1806020912804483e-13, 4.2131808239120649e-6,
      -2.6262241337012467e-6, 8.0770620494930662e-7, 6.0125912123632725e-16,
      -1.4729737374018841e-7},
    {-1.9994542198219728e-1, -1.5056113040026424e-2, 3.6470239469348489e-1,
      -4.6435192311733545e-1, 2.6640934719197893e-1, 3.4038266027147191e-5,
      -1.3784338709329624e-1, 1.276467178337056e-1, -5.6213828755200985e-2,
      -1.753150885483011e-7, 1.9235592956768113e-2, -1.5088821281095315e-2,
      5.7401854451350123e-3, 1.0622382710310225e-9, -1.5335082692563998e-3,
      1.0819320643228214e-3, -3.7372510193945659e-4, -6.6170909729031985e-12,
      8.4263617380909628e-5, -5.5150706827483479e-5, 1.7769536448348069e-5,
      3.8827923210205533e-14, -3.53513697488768e-6, 2.1865832130045269e-6,
      -6.6812849447625594e-7},
    {7.2438608504029431e-1, -1.3918010932653375, 1.0654143352413968,
      1.876173868950258e-4, -8.2705501176152696e-1, 8.9352433347828414e-1,
      -4.4971003995291339e-1, -1.6107401567546652e-6, 1.9235590165271091e-1,
      -1.6597702160042609e-1, 6.8882222681814333e-2, 1.3910091724608687e-8,
      -2.146911561508663e-2, 1.6228980898865892e-2, -5.9796016172584256e-3,
      -1.1287469112826745e-10, 1.5167451119784857e-3, -1.0478634293553899e-3,
      3.5539072889126421e-4, 8.1704322111801517e-13, -7.7773013442452395e-5,
      5.0291413897007722e-5, -1.6035083867000518e-5, 1.2469354315487605e-14,
      3.1369106244517615e-6},
    {1.6668949727276811, 1.165462765994632e-1, -3.3288393225018906,
      4.4692325482864037, -2.6977693045875807, -2.600667859891061e-4,
      1.5389017615694539, -1.4937962361134612, 6.8881964633233148e-1,
      1.3077482004552385e-6, -2.5762963325596288e-1, 2.1097676102125449e-1,
      -8.3714408359219882e-2, -7.7920428881354753e-9, 2.4267923064833599e-2,
      -1.7813678334552311e-2, 6.3970330388900056e-3, 4.9430807090480523e-11,
      -1.5554602758465635e-3, 1.0561196919903214e-3, -3.5277184460472902e-4,
      9.3002334645022459e-14, 7.5285855026557172e-5, -4.8186515569156351e-5,
      1.5227271505597605e-5},
    {-6.6188298861372935, 1.3397985455142589e+1, -1.0789350606845146e+1,
      -1.4352254537875018e-3, 9.2333694596189809, -1.0456552819547769e+1,
      5.5105526029033471, 1.2024439690716742e-5, -2.5762961164755816,
      2.3207442745387179, -1.0045728797216284, -1.0207833290021914e-7,
      3.3975092171169466e-1, -2.6720517450757468e-1, 1.0235252851562706e-1,
      8.4329730484871625e-10, -2.7998284958442595e-2, 2.0066274144976813e-2,
      -7.0554368915086242e-3, 1.9402238183698188e-12, 1.6562888105449611e-3,
      -1.1082898580743683e-3, 3.654545161310169e-4, -5.1290032026971794e-11,
      -7.6340103696869031e-5},
    {-1.7112706061976095e+1, -1.1208044642899116, 3.7131966511885444e+1,
      -5.2298271025348962e+1, 3.3058589696624618e+1, 2.4791298976200222e-3,
      -2.061089403411526e+1, 2.088672775145582e+1, -1.0045703956517752e+1,
      -1.2238783449063012e-5, 4.0770134274221141, -3.473667358470195,
      1.4329352617312006, 7.1359914411879712e-8, -4.4797257159115612e-1,
      3.4112666080644461e-1, -1.2699786326594923e-1, -2.8953677269081528e-10,
      3.3125776278259863e-2, -2.3274087021036101e-2, 8.0399993503648882e-3,
      -1.177805216235265e-9, -1.8321624891071668e-3, 1.2108282933588665e-3,
      -3.9479941246822517e-4},
    {7.389033153567425e+1, -1.5680141270402273e+2, 1.322177542759164e+2,
      1.3692876877324546e-2, -1.2366496885920151e+2, 1.4620689391062729e+2,
      -8.0365587724865346e+1, -1.1259851148881298e-4, 4.0770132196179938e+1,
      -3.8210340013273034e+1, 1.719522294277362e+1, 9.3519707955168356e-7,
      -6.2716159907747034, 5.1168999071852637, -2.0319658112299095,
      -4.9507215582761543e-9, 5.9626397294332597e-1, -4.4220765337238094e-1,
      1.6079998700166273e-1, -2.4733786203223402e-8, -4.0307574759979762e-2,
      2.7849050747097869e-2, -9.4751858992054221e-3, 6.419922235909132e-6,
      2.1250180774699461e-3},
    {2.1216837098382522e+2, 1.3107863022633868e+1, -4.9698285932871748e+2,
      7.3121595266969204e+2, -4.8213821720890847e+2, -2.8817248692894889e-2,
      3.2616720302947102e+2, -3.4389340280087117e+2, 1.7195193870816232e+2,
      1.4038077378096158e-4, -7.52594195897599e+1, 6.651969984520934e+1,
      -2.8447519748152462e+1, -7.613702615875391e-7, 9.5402237105304373,
      -7.5175301113311376, 2.8943997568871961, -4.6612194999538201e-7,
      -8.0615149598794088e-1, 5.8483006570631029e-1, -2.0845408972964956e-1,
      1.4765818959305817e-4, 5.1000433863753019e-2, -3.3066252141883665e-2,
      1.5109265210467774e-2},
    {-9.8959643098322368e+2, 2.1925555360905233e+3, -1.9283586782723356e+3,
      -1.5925738122215253e-1, 1.9569985945919857e+3, -2.4072514765081556e+3,
      1.3756149959336496e+3, 1.2920735237496668e-3, -7.525941715948055e+2,
      7.3171668742208716e+2, -3.4137023466220065e+2, -9.9857390260608043e-6,
      1.3356313181291573e+2, -1.1276295161252794e+2, 4.6310396098204458e+1,
      -7.9237387133614756e-6, -1.4510726927018646e+1, 1.1111771248100563e+1,
      -4.1690817945270892, 3.1008219800117808e-3, 1.1220095449981468,
      -7.6052379926149916e-1, 3.6262236505085254e-1, 2.216867741940747e-1,
      4.8683443692930507e-1}};;
  const double lambda = x / a, sigma = (x - a) / a;
  double eta = 0;
  if (lambda > 1)
    eta = std::sqrt(-2 * (std::log1p(sigma) - sigma));
  else if (lambda < 1)
    eta = -std::sqrt(-2 * (std::log1p(sigma) - sigma));
  const int sgn = lower ? -1 : 1;
  double res = 0.5 * std::erfc(sgn * eta * std::sqrt(a / 2));
  double etapow[25] = {1};
  int maxpow = 0;
  double sum = 0, afac = 1, absoldterm = std::numeric_limits<double>::infinity();
  for (int k = 0; k < 25; ++k) {
    double ck = d[k][0];
    for (int n = 1; n < 25; ++n) {
      if (n > maxpow) {
        etapow[n] = eta * etapow[n - 1];
        maxpow += 1;
      }
      const double ckterm = d[k][n] * etapow[n];
      ck += ckterm;
      if (std::fabs(ckterm) < kMachEp * std::fabs(ck)) break;
    }
    const double term = ck * afac, absterm = std::fabs(term);
    if (absterm > absoldterm) break;
    sum += term;
    if (absterm < kMachEp * std::fabs(sum)) break;
    absoldterm = absterm;
    afac /= a;
  }
  constexpr double kTwoPi = 6.283185307179586477;
  return res + sgn * std::exp(-0.5 * a * eta * eta) * sum / std::sqrt(kTwoPi * a);
}

/// Whether (a, x) is in the expansion's region: cephes' (a in (20, 200)
/// with |x - a| / a < 0.3, or a > 200 with |x - a| / a < 4.5 / sqrt(a)),
/// and above a = 200 out to |x - a| / a < 0.3 too, where cephes' series and
/// continued fraction stop at 2000 terms before converging (for a above
/// ~1e6: P(7.9e6, 7.85e6) 4e-6 off, P(1e10, 0.9999e10) 5x off; the expansion
/// is within 1e-12 there, and as accurate as they are between a = 200 and 5e4).
BRISK_HOST_DEVICE inline bool asymptotic_region(double a, double x) {
  const double absxma_a = std::fabs(x - a) / a;
  return (a > 20 && absxma_a < 0.3) || (a > 200 && absxma_a < 4.5 / std::sqrt(a));
}

/// Q by its continued fraction (DLMF 8.9.2), for x > 1.1 and x >= a.
BRISK_HOST_DEVICE inline double q_continued_fraction(double a, double x) {
  const double ax = fac(a, x);
  if (ax == 0) return 0.0;
  constexpr double kBig = 4.503599627370496e15, kBigInv = 2.22044604925031308085e-16;
  double y = 1 - a, z = x + y + 1, c = 0;
  double pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x;
  double ans = pkm1 / qkm1;
  for (int i = 0; i < kMaxIter; ++i) {
    c += 1;
    y += 1;
    z += 2;
    const double yc = y * c;
    const double pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    double t = 1;
    if (qk != 0) {
      const double r = pk / qk;
      t = std::fabs((ans - r) / r);
      ans = r;
    }
    pkm2 = pkm1;
    pkm1 = pk;
    qkm2 = qkm1;
    qkm1 = qk;
    if (std::fabs(pk) > kBig) {
      pkm2 *= kBigInv;
      pkm1 *= kBigInv;
      qkm2 *= kBigInv;
      qkm1 *= kBigInv;
    }
    if (t <= kMachEp) break;
  }
  return ans * ax;
}

/// Q(a, x) for finite a > 0, x > 0 (cephes igamc without its edge values).
BRISK_HOST_DEVICE inline double q(double a, double x) {
  if (asymptotic_region(a, x)) return asymptotic_series(a, x, /*lower=*/false);
  if (x > 1.1) return x < a ? 1 - p_series(a, x) : q_continued_fraction(a, x);
  if (x <= 0.5) return -0.4 / std::log(x) < a ? 1 - p_series(a, x) : q_series(a, x);
  return x * 1.1 < a ? 1 - p_series(a, x) : q_series(a, x);
}
#undef BRISK_IGAM_TABLE
}  // namespace igam

/// torch.igamma(a, x): P(a, x) (Note [igamma]).
BRISK_HOST_DEVICE inline double igamma(double a, double x) {
  if (x < 0 || a < 0) return kNaN;
  if (a == 0) return x > 0 ? 1.0 : kNaN;
  if (x == 0) return 0.0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : 0.0;
  if (std::isinf(x)) return 1.0;
  if (std::isnan(a) || std::isnan(x)) return kNaN;
  double p;
  if (igam::asymptotic_region(a, x))
    p = igam::asymptotic_series(a, x, /*lower=*/true);
  else if (x > 1 && x > a)
    p = 1 - igam::q(a, x);
  else
    p = igam::p_series(a, x);
  return p < 0 ? 0.0 : (p > 1 ? 1.0 : p);
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
