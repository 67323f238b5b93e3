// Front ends of random number generation: seeding, in-place fills
// (uniform_, normal_, bernoulli_, random_), factories (rand, randn, randint,
// randperm) and sampling (bernoulli, multinomial).
//
// Every op reserves its counter blocks from the default generator before it
// runs (core/generator.h), so its values are fixed by (seed, offset) alone:
// reproducible after manual_seed and independent of the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "autograd/function.h"
#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "profiler/record.h"
#include "core/dispatch.h"
#include "core/generator.h"
#include "core/parallel.h"
#include "core/philox.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "ops/sampling.h"
#include "kernels/samplers.h"

namespace brisk {

void manual_seed(uint64_t seed) { detail::set_default_seed(seed); }
uint64_t initial_seed() { return detail::default_seed(); }

namespace {

// Runs a random kernel on `self`. The kernel fills contiguous memory, so a
// non-contiguous `self` gets a contiguous temporary that is copied in.
// `wide`: 64-bit draws per element (see Note [Random counter layout]).
template <OpId op>
Tensor& random_fill(const char* name, Tensor& self, const KernelArgs& args, bool wide) {
  auto fn = kernel<op>(self.device().type, name);
  if (self.numel() == 0) return self;
  check_no_internal_overlap(name, self);
  const detail::PhiloxState st =
      detail::reserve_random_blocks_for(self.device().is_cuda(), philox::blocks_for(self.numel(), wide));
  KernelArgs a = args;
  a.mode = wide ? 1 : 0;
  if (self.is_contiguous()) {
    fn(self, st.seed, st.offset, a);
    self.bump_version();
  } else {
    Tensor tmp = detail::make_tensor(self.sizes(), {}, self.dtype(), self.device());
    fn(tmp, st.seed, st.offset, a);
    self.copy_(tmp);  // bumps the version
  }
  return self;
}

// Largest finite value of a floating dtype.
double float_max(ScalarType t) {
  switch (t) {
    case kHalf: return 65504.0;
    case kBFloat16: return 3.3895313892515355e38;
    case kFloat: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

void check_floating(const char* name, ScalarType t) {
  BRISK_CHECK(is_floating_point(t), name, "expected a floating point dtype, got ", t);
}

// Marks a freshly filled factory result as requiring grad when asked to.
Tensor finish_factory(Tensor t, const TensorOptions& opts) {
  detail::mark_new_version(t);  // Note [Version counters]
  if (!opts.requires_grad_) return t;
  BRISK_CHECK(t.is_floating_point(), "requires_grad",
              "only tensors of floating point dtype can require gradients, got ", t.dtype());
  return t.to(TensorOptions(t.dtype()).device(t.device()).requires_grad(true));
}

Tensor& uniform_impl(const char* name, Tensor& self, double from, double to) {
  check_floating(name, self.dtype());
  const double mx = float_max(self.dtype());
  BRISK_CHECK(from >= -mx && from <= mx, name, "from is out of bounds for ", self.dtype(), " (from=", from, ")");
  BRISK_CHECK(to >= -mx && to <= mx, name, "to is out of bounds for ", self.dtype(), " (to=", to, ")");
  BRISK_CHECK(from <= to, name, "expects to return a [from, to) range, but found from=", from, " > to=", to);
  BRISK_CHECK(to - from <= mx, name, "expects to - from <= ", mx, " (the largest ", self.dtype(),
              "), but found from=", from, " and to=", to);
  KernelArgs a;
  a.s0 = from;
  a.s1 = to;
  return random_fill<OpId::uniform>(name, self, a, self.dtype() == kDouble);
}

Tensor& normal_impl(const char* name, Tensor& self, double mean, double std) {
  check_floating(name, self.dtype());
  BRISK_CHECK(std >= 0.0, name, "expected std >= 0.0, but found std ", std);
  KernelArgs a;
  a.s0 = mean;
  a.s1 = std;
  return random_fill<OpId::normal>(name, self, a, self.dtype() == kDouble);
}

// Integers uniform in [from, to), checked against the dtype's range.
Tensor& random_impl(const char* name, Tensor& self, int64_t from, int64_t to) {
  BRISK_CHECK(from < to, name, "expected 'from' to be less than 'to', but got from=", from, " >= to=", to);
  const ScalarType t = self.dtype();
  double lo, hi;  // representable range of the dtype
  switch (t) {
    case kBool: lo = 0, hi = 1; break;
    case kUInt8: lo = 0, hi = 255; break;
    case kInt8: lo = -128, hi = 127; break;
    case kInt16: lo = -32768, hi = 32767; break;
    case kInt32: lo = -2147483648.0, hi = 2147483647.0; break;
    case kInt64: lo = -9.3e18, hi = 9.3e18; break;
    default: lo = -float_max(t), hi = float_max(t);
  }
  BRISK_CHECK(static_cast<double>(from) >= lo && static_cast<double>(from) <= hi, name, "from is out of bounds for ",
              t, " (from=", from, ")");
  BRISK_CHECK(static_cast<double>(to - 1) >= lo && static_cast<double>(to - 1) <= hi, name,
              "to - 1 is out of bounds for ", t, " (to=", to, ")");
  const uint64_t range = static_cast<uint64_t>(to) - static_cast<uint64_t>(from);
  KernelArgs a;
  a.i0 = from;
  a.i1 = to;
  return random_fill<OpId::randint>(name, self, a, range >= (uint64_t{1} << 32));
}

TensorOptions without_grad(TensorOptions o) { return o.requires_grad(false); }

// Sequential host access to an op's draws that computes each counter block
// once (draw i as in Note [Random counter layout]).
class DrawStream {
 public:
  explicit DrawStream(detail::PhiloxState st) : st_(st) {}
  uint32_t u32(uint64_t i) { return load(i / 4)[i % 4]; }
  uint64_t u64(uint64_t i) {
    const uint32_t* r = load(i / 2);
    const int lane = static_cast<int>(i % 2) * 2;
    return static_cast<uint64_t>(r[lane]) | (static_cast<uint64_t>(r[lane + 1]) << 32);
  }

 private:
  const uint32_t* load(uint64_t b) {
    if (b != cached_) {
      philox::block(st_.seed, st_.offset + b, r_);
      cached_ = b;
    }
    return r_;
  }
  detail::PhiloxState st_;
  uint64_t cached_ = ~uint64_t{0};
  uint32_t r_[4] = {};
};

}  // namespace

// ---- in-place fills ------------------------------------------------------------
Tensor& Tensor::uniform_(double from, double to) const {
  BRISK_PROFILE_OP("uniform_", *this);
  return uniform_impl("uniform_", const_cast<Tensor&>(*this), from, to);
}
Tensor& Tensor::normal_(double mean, double std) const {
  BRISK_PROFILE_OP("normal_", *this);
  return normal_impl("normal_", const_cast<Tensor&>(*this), mean, std);
}
Tensor& Tensor::random_(int64_t from, int64_t to) const {
  BRISK_PROFILE_OP("random_", *this);
  return random_impl("random_", const_cast<Tensor&>(*this), from, to);
}
Tensor& Tensor::bernoulli_(double p) const {
  BRISK_PROFILE_OP("bernoulli_", *this);
  BRISK_CHECK(p >= 0.0 && p <= 1.0, "bernoulli_", "expected p to be in [0, 1], but got p=", p);
  KernelArgs a;
  a.s0 = p;
  return random_fill<OpId::bernoulli>("bernoulli_", const_cast<Tensor&>(*this), a, false);
}

// ---- factories -------------------------------------------------------------------
Tensor rand(IntArrayRef sizes, TensorOptions opts) {
  BRISK_PROFILE_OP("rand");
  const ScalarType dt = opts.dtype_or_default();
  check_floating("rand", dt);
  Tensor t = empty(sizes, without_grad(opts.dtype(dt)));
  uniform_impl("rand", t, 0.0, 1.0);
  return finish_factory(t, opts);
}

Tensor randn(IntArrayRef sizes, TensorOptions opts) {
  BRISK_PROFILE_OP("randn");
  const ScalarType dt = opts.dtype_or_default();
  check_floating("randn", dt);
  Tensor t = empty(sizes, without_grad(opts.dtype(dt)));
  normal_impl("randn", t, 0.0, 1.0);
  return finish_factory(t, opts);
}

Tensor randint(int64_t low, int64_t high, IntArrayRef sizes, TensorOptions opts) {
  BRISK_PROFILE_OP("randint");
  // An options object without a dtype still means int64 here (not the float default).
  const ScalarType dt = opts.dtype_ ? *opts.dtype_ : kInt64;
  Tensor t = empty(sizes, without_grad(opts.dtype(dt)));
  random_impl("randint", t, low, high);
  return finish_factory(t, opts);
}
Tensor randint(int64_t high, IntArrayRef sizes, TensorOptions opts) { return randint(0, high, sizes, opts); }

// Fisher-Yates on the host: step k (k = 0 .. n-2) swaps position i = n-1-k
// with j = draw_k % (i + 1), draw_k being draw k of the op's counter range
// (64-bit draws when n exceeds 2^32). Then converted to the requested dtype.
Tensor randperm(int64_t n, TensorOptions opts) {
  BRISK_PROFILE_OP("randperm");
  const ScalarType dt = opts.dtype_ ? *opts.dtype_ : kInt64;
  BRISK_CHECK(n >= 0, "randperm", "n must be non-negative, got ", n);
  BRISK_CHECK(dt != kBool, "randperm", "not implemented for ", dt);
  int64_t limit = std::numeric_limits<int64_t>::max();
  switch (dt) {
    case kUInt8: limit = 256; break;
    case kInt8: limit = 128; break;
    case kInt16: limit = 32768; break;
    case kInt32: limit = int64_t{1} << 31; break;
    case kHalf: limit = 2049; break;      // 2^11 + 1: every integer below it is exact
    case kBFloat16: limit = 257; break;   // 2^8 + 1
    case kFloat: limit = (int64_t{1} << 24) + 1; break;
    case kDouble: limit = (int64_t{1} << 53) + 1; break;
    default: break;
  }
  BRISK_CHECK(n <= limit, "randperm", "n cannot be greater than ", limit, " for ", dt, ", got n=", n);
  detail::check_device_available(opts.device_, "randperm");
  Tensor perm = detail::make_tensor({n}, {}, kInt64, Device(kCPU));
  int64_t* p = perm.data_ptr<int64_t>();
  std::iota(p, p + n, int64_t{0});
  if (n > 1) {
    const bool wide = static_cast<uint64_t>(n) > (uint64_t{1} << 32);
    DrawStream draws(detail::reserve_random_blocks(philox::blocks_for(n - 1, wide)));
    for (int64_t k = 0; k < n - 1; ++k) {
      const int64_t i = n - 1 - k;
      const uint64_t draw = wide ? draws.u64(static_cast<uint64_t>(k)) : draws.u32(static_cast<uint64_t>(k));
      const int64_t j = static_cast<int64_t>(draw % static_cast<uint64_t>(i + 1));
      std::swap(p[i], p[j]);
    }
  }
  Tensor out = perm.to(TensorOptions(dt).device(opts.device_));
  return finish_factory(out, opts);
}

// ---- sampling ---------------------------------------------------------------------
// out[i] = 1 with probability p[i] (same shape and dtype as p): a float64
// uniform compared with p.
Tensor bernoulli(const Tensor& p) {
  BRISK_PROFILE_OP("bernoulli", p);
  BRISK_CHECK(p.defined(), "bernoulli", "p is an undefined tensor");
  BRISK_CHECK(p.is_floating_point(), "bernoulli", "expected a floating point tensor of probabilities, got ",
              p.dtype());
  if (p.numel() > 0) {
    // (compile: this check reads p on the host, which a replay would skip:
    // a graph break rather than an unchecked replay)
    if (BRISK_UNLIKELY(detail::tracing_any())) detail::trace_sync("bernoulli");
    detail::DeviceCheckScope device_check;  // a device-side assert on a GPU
    Tensor pd = p.to(Device(kCPU), kDouble).contiguous();
    const double* v = pd.data_ptr<double>();
    for (int64_t i = 0; i < pd.numel(); ++i)
      BRISK_CHECK(v[i] >= 0.0 && v[i] <= 1.0, "bernoulli", "expected all probabilities to be in [0, 1], but got p=",
                  v[i], " at flat index ", i);
  }
  Tensor u = empty(p.sizes(), TensorOptions(kDouble).device(p.device()));
  uniform_impl("bernoulli", u, 0.0, 1.0);
  return u.lt(p).to(p.dtype());
}

// ---- per-element samplers (Note [Samplers in one pass], src/kernels/samplers.h) --------

namespace {

/// Runs the sample kernel: out of a's shape and dtype from contiguous a (and b).
/// One counter block reserved (Note [Sampler streams]). On the CPU the
/// parameters are checked first (reading host memory costs nothing there);
/// the CUDA kernel checks each as it samples and reports an invalid one
/// through Note [Deferred index errors] (raised at the next sync), so the op
/// itself never waits for the device.
Tensor run_sampler(const char* name, samplers::Sampler which, const Tensor& a, const Tensor& b) {
  BRISK_CHECK(static_cast<uint64_t>(a.numel()) < samplers::kMaxElements, name, "too many elements (", a.numel(),
              "): at most 2^40");
  Tensor ac = a.contiguous(), bc = b.defined() ? b.contiguous() : b;
  if (samplers::is_random(which) && ac.device().is_cpu() && ac.numel() > 0) {
    BRISK_DISPATCH_FLOAT(ac.dtype(), name, [&] {
      const scalar_t* pa = ac.data_ptr<scalar_t>();
      const scalar_t* pb = bc.defined() ? bc.data_ptr<scalar_t>() : nullptr;
      for (int64_t i = 0; i < ac.numel(); ++i) {
        const double x = static_cast<double>(pa[i]), y = pb ? static_cast<double>(pb[i]) : 0.0;
        BRISK_CHECK(samplers::valid_params(which, x, y), name, "expected ", samplers::expected_params(which),
                    ", but got ", x, pb ? " and " : "", pb ? std::to_string(y) : std::string(), " at flat index ", i);
      }
    });
  }
  Tensor out = empty(ac.sizes(), ac.options());
  if (out.numel() == 0) return out;
  auto fn = kernel<OpId::sample>(out.device().type, name);
  const detail::PhiloxState st = samplers::is_random(which)
                                     ? detail::reserve_random_blocks_for(out.device().is_cuda(), 1)
                                     : detail::PhiloxState{};
  fn(out, ac, bc, st.seed, st.offset, static_cast<int>(which));
  detail::mark_new_version(out);  // Note [Version counters]
  return out;
}

void check_sampler_input(const char* name, const char* arg, const Tensor& t) {
  BRISK_CHECK(t.defined(), name, arg, " is an undefined tensor");
  BRISK_CHECK(t.is_floating_point(), name, "expected a floating point tensor for ", arg, ", got ", t.dtype());
}

}  // namespace

// x ~ Gamma(alpha, 1), differentiable in alpha as torch._standard_gamma is:
// dx/dalpha by implicit reparameterization (_standard_gamma_grad).
Tensor _standard_gamma(const Tensor& alpha) {
  BRISK_PROFILE_OP("_standard_gamma", alpha);
  check_sampler_input("_standard_gamma", "alpha", alpha);
  Tensor x;
  {
    NoGradGuard no_grad;
    x = run_sampler("_standard_gamma", samplers::Sampler::standard_gamma, alpha.detach(), Tensor());
  }
  if (!autograd::should_record(alpha)) return x;
  Tensor out = x.clone();  // the node saves x, not its own output
  autograd::record("StandardGammaBackward0", {out}, {alpha}, {autograd::save(alpha.detach()), autograd::save(x)},
                   [](autograd::BackwardCtx& c) -> TensorList {
                     return {c.grad() * _standard_gamma_grad(c.saved(0), c.saved(1))};
                   });
  return out;
}

namespace {
/// a and x broadcast and promoted to one floating dtype, without history.
std::pair<Tensor, Tensor> float_pair(const char* name, const Tensor& a, const Tensor& x,
                                     const char* a_name = "the first argument",
                                     const char* x_name = "the second argument") {
  check_sampler_input(name, a_name, a);
  check_sampler_input(name, x_name, x);
  BRISK_CHECK(a.device() == x.device(), name, "the arguments are on different devices (", a.device(), " and ",
              x.device(), ")");
  const ScalarType t = promote_types(a.dtype(), x.dtype());
  const DimVector shape = broadcast_shapes(a.sizes(), x.sizes(), name);
  return {a.detach().to(t).expand(shape), x.detach().to(t).expand(shape)};
}
}  // namespace

Tensor _standard_gamma_grad(const Tensor& alpha, const Tensor& x) {
  BRISK_PROFILE_OP("_standard_gamma_grad", alpha, x);
  NoGradGuard no_grad;
  auto [a, v] = float_pair("_standard_gamma_grad", alpha, x);
  return run_sampler("_standard_gamma_grad", samplers::Sampler::standard_gamma_grad, a, v);
}

// torch.igamma: the regularized lower incomplete gamma function P(a, x)
// (Note [igamma]). Its dtype is a binary op's, result_type(a, x) (a 0-dim
// float64 a with a float32 x gives float32; an integer or bool argument
// takes the other's floating dtype), and like torch it has no integer kernel:
// two integer or bool arguments are refused. Differentiable in x (the
// Gamma(a, 1) density), built from differentiable ops on the saved inputs
// so that it has derivatives of its own; in a, as in PyTorch, not.
Tensor igamma(const Tensor& a, const Tensor& x) {
  BRISK_PROFILE_OP("igamma", a, x);
  BRISK_CHECK(a.defined() && x.defined(), "igamma", "an argument is an undefined tensor");
  BRISK_CHECK(a.device() == x.device(), "igamma", "the arguments are on different devices (", a.device(), " and ",
              x.device(), ")");
  const ScalarType t = result_type(a, x);
  BRISK_CHECK(is_floating_point(t), "igamma", "expected a floating point argument: a (", a.dtype(), ") and x (",
              x.dtype(), ") promote to ", t, ", and igamma has no kernel for it (as in PyTorch)");
  Tensor p;
  {
    NoGradGuard no_grad;
    const DimVector shape = broadcast_shapes(a.sizes(), x.sizes(), "igamma");
    p = run_sampler("igamma", samplers::Sampler::igamma, a.detach().to(t).expand(shape),
                    x.detach().to(t).expand(shape));
  }
  if (!autograd::should_record(a, x)) return p;
  autograd::record("IgammaBackward0", {p}, {a, x}, {autograd::save(a), autograd::save(x)},
                   [](autograd::BackwardCtx& c) -> TensorList {
                     BRISK_CHECK(!c.needs(0), "igamma", "the derivative with respect to the first argument (a) is "
                                 "not implemented (as in PyTorch): detach it");
                     if (!c.needs(1)) return {Tensor(), Tensor()};
                     // torch's formula, op for op: grad * exp((a - 1) * log(x) - x - lgamma(a))
                     const Tensor aa = c.saved(0), xx = c.saved(1);
                     return {Tensor(), c.grad() * ((aa - 1) * xx.log() - xx - aa.lgamma()).exp()};
                   });
  return p;
}

Tensor poisson(const Tensor& rates) {
  BRISK_PROFILE_OP("poisson", rates);
  check_sampler_input("poisson", "rates", rates);
  NoGradGuard no_grad;
  return run_sampler("poisson", samplers::Sampler::poisson, rates, Tensor());
}

Tensor binomial(const Tensor& count, const Tensor& prob) {
  BRISK_PROFILE_OP("binomial", count, prob);
  NoGradGuard no_grad;
  auto [n, p] = float_pair("binomial", count, prob, "count", "prob");
  return run_sampler("binomial", samplers::Sampler::binomial, n, p);
}

namespace detail {

// Note [multinomial on a device]
// On a GPU the host algorithm below would copy the probabilities to the host
// and wait: a sync per Categorical.sample(). There the same sampling runs as
// tensor ops, with the same draws (a float64 uniform fill of rows x
// per_row elements reserves exactly the blocks the host version does) and
// no read back:
//  - with replacement, the category of x = u * total is the number of
//    cumulative sums <= x (upper_bound as a count), computed on chunks of
//    samples so the comparison tensor stays under 2^26 elements; an x that
//    rounded up to the total takes the last category of nonzero mass;
//  - without, the exponential race: keys log E - log p (p > 0), and
//    1e4 + E for the categories of mass 0, which then come last in the
//    order of E, as on the host; the num_samples smallest by topk.
// The probabilities are checked by the backend's multinomial_check kernel,
// which reports a bad row as a deferred device error (raised at the next
// sync). Values equal the host's except where the device's cumulative sum or
// log rounds differently at a category boundary.
Tensor multinomial_on_device(const Tensor& probs, int64_t num_samples, bool replacement) {
  NoGradGuard no_grad;
  const Tensor p = (probs.dim() == 1 ? probs.unsqueeze(0) : probs).to(kDouble).contiguous();
  const int64_t rows = p.size(0), ncat = p.size(1);
  const TensorOptions dopts = TensorOptions(kDouble).device(probs.device());
  kernel<OpId::multinomial_check>(probs.device().type, "multinomial")(p);
  Tensor out;
  if (rows == 0) {
    out = empty({0, num_samples}, TensorOptions(kInt64).device(probs.device()));
  } else if (replacement) {
    const Tensor cdf = p.cumsum(1);                       // (rows, ncat)
    const Tensor total = cdf.narrow(1, ncat - 1, 1);      // (rows, 1)
    const Tensor x = rand({rows, num_samples}, dopts) * total;
    const Tensor cats = arange(ncat, dopts);
    const Tensor last_nonzero = where(p > 0, cats, -1.0).amax({1}, true).to(kInt64);  // (rows, 1)
    const int64_t chunk = std::max<int64_t>(1, (int64_t{1} << 26) / std::max<int64_t>(rows * ncat, 1));
    std::vector<Tensor> parts;
    for (int64_t s0 = 0; s0 < num_samples; s0 += chunk) {
      const Tensor xs = x.narrow(1, s0, std::min(chunk, num_samples - s0));   // (rows, m)
      parts.push_back(le(cdf.unsqueeze(1), xs.unsqueeze(2)).sum({2}));     // (rows, m) int64
    }
    const Tensor c = parts.size() == 1 ? parts[0] : cat(parts, 1);
    out = where(c < ncat, c, last_nonzero.expand({rows, num_samples}));
  } else {
    const Tensor e = -(-rand({rows, ncat}, dopts)).log1p();  // Exp(1), finite
    const Tensor key = where(p > 0, e.log() - p.log(), e + 1e4);
    out = std::get<1>(key.topk(num_samples, 1, /*largest=*/false, /*sorted=*/true));
  }
  return probs.dim() == 1 ? out.squeeze(0) : out;
}

}  // namespace detail

// Row r of probs (1-D: one row) gives num_samples category indices (int64):
//  - with replacement: inverse CDF of a float64 uniform, draw r * num_samples + s;
//  - without: the num_samples smallest keys E_c / p_c with E_c ~ Exp(1) from
//    draw r * ncat + c (exponential races: the order in which independent
//    clocks of rates p_c ring is a draw without replacement). Categories of
//    probability 0 come after all others, in random order (as PyTorch).
// Both use 64-bit draws.
// Runs on the host; rows are independent, so parallel over rows.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  BRISK_PROFILE_OP("multinomial", probs);
  const char* name = "multinomial";
  BRISK_CHECK(probs.defined(), name, "probs is an undefined tensor");
  BRISK_CHECK(probs.dim() == 1 || probs.dim() == 2, name, "prob_dist must be 1 or 2 dim, got ", probs.dim(),
              " dims (shape ", probs.sizes(), ")");
  BRISK_CHECK(probs.is_floating_point(), name, "only supports floating-point dtypes for input, got ", probs.dtype());
  BRISK_CHECK(num_samples > 0, name, "cannot sample n_sample <= 0 samples (got ", num_samples, ")");
  const int64_t ncat = probs.size(-1);
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1;
  BRISK_CHECK(replacement || num_samples <= ncat, name, "cannot sample n_sample > prob_dist.size(-1) samples "
              "without replacement (n_sample ", num_samples, ", ", ncat, " categories)");
  BRISK_CHECK(ncat > 0 || rows == 0, name, "the number of categories cannot be zero (shape ", probs.sizes(), ")");
  if (!probs.device().is_cpu()) return detail::multinomial_on_device(probs, num_samples, replacement);

  Tensor pd = probs.to(Device(kCPU), kDouble).contiguous();
  const double* pv = pd.data_ptr<double>();
  kernel<OpId::multinomial_check>(kCPU, name)(pd.view({rows, ncat}));  // raises on a bad row

  DimVector out_shape;
  if (probs.dim() == 2) out_shape.push_back(rows);
  out_shape.push_back(num_samples);
  Tensor out = detail::make_tensor(out_shape, {}, kInt64, Device(kCPU));
  int64_t* ov = out.data_ptr<int64_t>();
  if (rows == 0) return out.to(probs.device());

  const int64_t per_row = replacement ? num_samples : ncat;
  const detail::PhiloxState st =
      detail::reserve_random_blocks(philox::blocks_for(rows * per_row, /*wide=*/true));
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_row, 1));
  // A candidate without replacement: positive categories by E / p, then the
  // zero-probability ones by E alone.
  struct Race {
    double key, tie;
    int64_t index;
    bool operator<(const Race& o) const {
      if (key != o.key) return key < o.key;
      if (tie != o.tie) return tie < o.tie;
      return index < o.index;
    }
  };
  parallel_for(0, rows, grain, [&](int64_t r0, int64_t r1) {
    DrawStream draws(st);
    std::vector<double> cdf(replacement ? static_cast<size_t>(ncat) : 0);
    std::vector<Race> race(replacement ? 0 : static_cast<size_t>(ncat));
    for (int64_t r = r0; r < r1; ++r) {
      const double* p = pv + r * ncat;
      int64_t* o = ov + r * num_samples;
      const uint64_t base = static_cast<uint64_t>(r * per_row);
      if (replacement) {
        double acc = 0;
        int64_t last_nonzero = 0;
        for (int64_t c = 0; c < ncat; ++c) {
          acc += p[c];
          cdf[static_cast<size_t>(c)] = acc;
          if (p[c] > 0) last_nonzero = c;
        }
        for (int64_t s = 0; s < num_samples; ++s) {
          const double x = philox::to_unit_double(draws.u64(base + static_cast<uint64_t>(s))) * acc;
          // first category whose cumulative mass exceeds x (never one of mass 0)
          const int64_t c = std::upper_bound(cdf.begin(), cdf.end(), x) - cdf.begin();
          o[s] = c < ncat ? c : last_nonzero;  // x rounded up to the total
        }
      } else {
        const double inf = std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < ncat; ++c) {
          const double u = philox::to_unit_double(draws.u64(base + static_cast<uint64_t>(c)));
          const double e = -std::log1p(-u);  // Exp(1), finite since u < 1
          race[static_cast<size_t>(c)] = p[c] > 0 ? Race{e / p[c], 0.0, c} : Race{inf, e, c};
        }
        std::partial_sort(race.begin(), race.begin() + num_samples, race.end());
        for (int64_t s = 0; s < num_samples; ++s) o[s] = race[static_cast<size_t>(s)].index;
      }
    }
  });
  return out.to(probs.device());
}

}  // namespace brisk
