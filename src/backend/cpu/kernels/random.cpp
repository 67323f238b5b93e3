// CPU kernels of the random fills. Each fills a contiguous tensor from
// (seed, offset): element i takes its draws from counter block
// offset + i / per_block (Note [Random counter layout] in core/philox.h), so
// the values depend on neither the thread count nor the ISA variant.
// KernelArgs::mode is 1 for "wide" (64-bit) draws, chosen by the front end.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "kernels/samplers.h"

namespace brisk {
namespace cpu {
namespace BRISK_CPU_ISA {
namespace {

// Calls f(draws, first, count) over a fill of n elements, where draws holds
// the 32-bit draws of elements [first, first + count): one per element, or
// two (low word first) with wide draws. Blocks are concatenated, so element
// i's draw is word i (wide: words 2i, 2i+1) of the op's stream -- the mapping
// of Note [Random counter layout]. Chunks are whole blocks, so element pairs
// (Box-Muller) never straddle two calls.
template <class F>
void for_each_draws(int64_t n, bool wide, uint64_t seed, uint64_t offset, const F& f) {
  constexpr int64_t kChunkBlocks = 256;
  const int64_t per = philox::elems_per_block(wide);
  const int64_t nblocks = (n + per - 1) / per;
  const int64_t grain = std::max<int64_t>(kChunkBlocks, kGrainSize / per / 4);
  parallel_for(0, nblocks, grain, [&](int64_t b0, int64_t b1) {
    uint32_t buf[kChunkBlocks * 4];
    for (int64_t b = b0; b < b1; b += kChunkBlocks) {
      const int64_t nb = std::min(kChunkBlocks, b1 - b);
      for (int64_t k = 0; k < nb; ++k) philox::block(seed, offset + static_cast<uint64_t>(b + k), buf + 4 * k);
      const int64_t first = b * per;
      f(buf, first, std::min(nb * per, n - first));
    }
  });
}

inline uint64_t join64(uint32_t lo, uint32_t hi) { return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32); }

// Random mantissa bits per dtype: exactly representable uniforms in [0, 1).
template <class T>
constexpr int mantissa_bits() {
  if constexpr (std::is_same_v<T, Half>) return 11;
  else if constexpr (std::is_same_v<T, BFloat16>) return 8;
  else if constexpr (std::is_same_v<T, float>) return 24;
  else return 53;
}

// out ~ U[from, to): s0 = from, s1 = to. from + u * (to - from) can round up
// to `to` for some ranges; such values become `from` (as PyTorch's CUDA
// kernel does), so `to` is never returned.
void uniform_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  const bool wide = a.mode == 1;
  BRISK_ASSERT(wide == (out.dtype() == kDouble));
  const double from = a.s0.to_double(), to = a.s1.to_double();
  const int64_t n = out.numel();
  BRISK_DISPATCH_FLOAT(out.dtype(), "uniform_", [&] {
    using M = opmath_t<scalar_t>;
    scalar_t* p = static_cast<scalar_t*>(out.data_ptr());
    const M lo = static_cast<M>(from), range = static_cast<M>(to - from);
    const M hi = static_cast<M>(to);
    auto put = [&](int64_t i, M u) {
      scalar_t v = static_cast<scalar_t>(lo + u * range);
      if (!(static_cast<M>(v) < hi)) v = static_cast<scalar_t>(lo);
      p[i] = v;
    };
    if constexpr (std::is_same_v<scalar_t, double>) {
      for_each_draws(n, true, seed, offset, [&](const uint32_t* r, int64_t first, int64_t cnt) {
        for (int64_t j = 0; j < cnt; ++j) put(first + j, philox::to_unit_double(join64(r[2 * j], r[2 * j + 1])));
      });
    } else {
      for_each_draws(n, false, seed, offset, [&](const uint32_t* r, int64_t first, int64_t cnt) {
        for (int64_t j = 0; j < cnt; ++j) put(first + j, philox::to_unit_float(r[j], mantissa_bits<scalar_t>()));
      });
    }
  });
}

// The normals of elements j and j + 1 from a chunk's draws.
inline void normal_pair(const uint32_t* r, int64_t j, float& z0, float& z1) {
  philox::box_muller32(r[j], r[j + 1], z0, z1);
}
inline void normal_pair(const uint32_t* r, int64_t j, double& z0, double& z1) {
  philox::box_muller64(join64(r[2 * j], r[2 * j + 1]), join64(r[2 * j + 2], r[2 * j + 3]), z0, z1);
}

// out ~ N(mean, std^2) by Box-Muller: s0 = mean, s1 = std. Elements 2m and
// 2m + 1 come from one pair of draws; float64 uses 64-bit draws and double
// math, the other dtypes 32-bit draws and float math.
void normal_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  const bool wide = a.mode == 1;
  BRISK_ASSERT(wide == (out.dtype() == kDouble));
  const int64_t n = out.numel();
  BRISK_DISPATCH_FLOAT(out.dtype(), "normal_", [&] {
    using M = opmath_t<scalar_t>;
    const M mean = static_cast<M>(a.s0.to_double()), sd = static_cast<M>(a.s1.to_double());
    scalar_t* p = static_cast<scalar_t*>(out.data_ptr());
    for_each_draws(n, wide, seed, offset, [&](const uint32_t* r, int64_t first, int64_t cnt) {
      scalar_t* o = p + first;
      for (int64_t j = 0; j < cnt; j += 2) {
        M z0, z1;
        normal_pair(r, j, z0, z1);
        o[j] = static_cast<scalar_t>(mean + sd * z0);
        if (j + 1 < cnt) o[j + 1] = static_cast<scalar_t>(mean + sd * z1);
      }
    });
  });
}

// out ~ Bernoulli(p), any dtype (1 or 0): s0 = p. 1 when draw < p * 2^32,
// i.e. u = draw * 2^-32 in [0, 1) is below p: p = 0 never, p = 1 always.
void bernoulli_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  const double threshold = a.s0.to_double() * 4294967296.0;
  const int64_t n = out.numel();
  BRISK_DISPATCH_ALL(out.dtype(), "bernoulli_", [&] {
    scalar_t* p = static_cast<scalar_t*>(out.data_ptr());
    const scalar_t one = static_cast<scalar_t>(1), zero = static_cast<scalar_t>(0);
    for_each_draws(n, false, seed, offset, [&](const uint32_t* r, int64_t first, int64_t cnt) {
      scalar_t* o = p + first;
      for (int64_t j = 0; j < cnt; ++j) o[j] = static_cast<double>(r[j]) < threshold ? one : zero;
    });
  });
}

// out ~ integers uniform in [low, high): i0 = low, i1 = high (low < high).
// low + draw % range, with 64-bit draws when the range is 2^32 or more (mode 1).
void randint_kernel(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& a) {
  const bool wide = a.mode == 1;
  const uint64_t low = static_cast<uint64_t>(a.i0);
  const uint64_t range = static_cast<uint64_t>(a.i1) - low;
  BRISK_ASSERT(range > 0 && (wide || range < (uint64_t{1} << 32)));
  const int64_t n = out.numel();
  BRISK_DISPATCH_ALL(out.dtype(), "random_", [&] {
    scalar_t* p = static_cast<scalar_t*>(out.data_ptr());
    auto put = [&](scalar_t* o, uint64_t r) {
      const int64_t v = static_cast<int64_t>(low + r);
      if constexpr (std::is_same_v<scalar_t, bool>) *o = v != 0;
      else if constexpr (std::is_floating_point_v<opmath_t<scalar_t>>)
        *o = static_cast<scalar_t>(static_cast<opmath_t<scalar_t>>(v));
      else *o = static_cast<scalar_t>(v);
    };
    for_each_draws(n, wide, seed, offset, [&](const uint32_t* r, int64_t first, int64_t cnt) {
      scalar_t* o = p + first;
      if (wide) {
        for (int64_t j = 0; j < cnt; ++j) put(o + j, join64(r[2 * j], r[2 * j + 1]) % range);
      } else {
        const uint32_t range32 = static_cast<uint32_t>(range);
        for (int64_t j = 0; j < cnt; ++j) put(o + j, r[j] % range32);
      }
    });
  });
}

// The per-element samplers (Note [Samplers in one pass]): element i of out
// from a[i] (b[i]), in float64, rounded to out's dtype once; a Gamma sample
// is at least the dtype's smallest normal number, as PyTorch's.
void sample_kernel(const Tensor& out, const Tensor& a, const Tensor& b, uint64_t seed, uint64_t offset,
                   int sampler) {
  const auto which = static_cast<samplers::Sampler>(sampler);
  BRISK_DISPATCH_FLOAT(out.dtype(), "sample", [&] {
    const scalar_t* pa = static_cast<const scalar_t*>(a.data_ptr());
    const scalar_t* pb = b.defined() ? static_cast<const scalar_t*>(b.data_ptr()) : nullptr;
    scalar_t* po = static_cast<scalar_t*>(out.data_ptr());
    const double tiny = static_cast<double>(std::numeric_limits<scalar_t>::min());
    // Rejection loops: a few hundred nanoseconds per element, so small grains.
    parallel_for(0, out.numel(), 2048, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double v = samplers::sample_one(which, static_cast<double>(pa[i]), pb ? static_cast<double>(pb[i]) : 0.0,
                                        seed, offset, static_cast<uint64_t>(i));
        if (which == samplers::Sampler::standard_gamma && v < tiny) v = tiny;
        po[i] = static_cast<scalar_t>(v);
      }
    });
  });
}

// multinomial's check of its probabilities (contiguous, 2-D): on the CPU a
// bad row raises at once (the CUDA kernel defers it to the next sync).
void multinomial_check(const Tensor& probs) {
  const int64_t rows = probs.size(0), ncat = probs.size(1);
  BRISK_DISPATCH_FLOAT(probs.dtype(), "multinomial", [&] {
    const scalar_t* p = static_cast<const scalar_t*>(probs.data_ptr());
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < ncat; ++c) {
        const double v = static_cast<double>(p[r * ncat + c]);
        BRISK_CHECK(std::isfinite(v) && v >= 0.0, "multinomial", "probability tensor contains either `inf`, `nan` "
                    "or element < 0 (got ", v, " in row ", r, ", category ", c, ")");
        sum += v;
      }
      BRISK_CHECK(sum > 0.0, "multinomial", "invalid multinomial distribution (sum of probabilities <= 0) in row ", r);
    }
  });
}

}  // namespace

void register_random_kernels() {
  register_kernel<OpId::uniform>(kCPU, uniform_kernel);
  register_kernel<OpId::normal>(kCPU, normal_kernel);
  register_kernel<OpId::bernoulli>(kCPU, bernoulli_kernel);
  register_kernel<OpId::randint>(kCPU, randint_kernel);
  register_kernel<OpId::sample>(kCPU, sample_kernel);
  register_kernel<OpId::multinomial_check>(kCPU, multinomial_check);
}

}  // namespace BRISK_CPU_ISA
}  // namespace cpu
}  // namespace brisk
