// functional::interpolate and nn::Upsample: composites of index_select,
// elementwise ops and adaptive_avg_pool2d, so autograd and every backend
// come for free.
//
// Note [Separable interpolation]
// Every mode resamples each spatial dim independently: the output is the
// input resampled along W, then along H, then along D (PyTorch's kernels sum
// the same products, innermost dim first). Along one dim of size `in` to
// `out`, output position i reads a few input positions with fixed weights:
//   nearest:  one position, src(i) = floor(i * scale), at most in - 1;
//   nearest-exact: floor((i + 0.5) * scale);
//   linear:   x = scale * (i + 0.5) - 0.5 clamped at 0 (scale * i with
//             align_corners), positions floor(x) and floor(x) + 1 (capped at
//             in - 1) with weights 1 - t and t, t = x - floor(x);
//   cubic:    the same x unclamped, positions floor(x) - 1 .. floor(x) + 2
//             clamped to [0, in - 1], Keys weights (a = -0.75) of t;
//   area:     adaptive average pooling (windows [floor(i * in / out),
//             ceil((i + 1) * in / out))), itself separable.
// scale is in / out, or 1 / scale_factor when the factor is given (and not
// recomputed), or (in - 1) / (out - 1) with align_corners. The arithmetic
// follows PyTorch 2's CPU kernels to the bit: float for float32, float16 and
// bfloat16 inputs, double for float64, with the fused multiply-add PyTorch 2
// computes scale * (i + 0.5) - 0.5 with where its kernel has one
// (fused_source_coordinate), and the nearest modes' float floor
// (a float64 input's positions are rounded to float before flooring).
// Each dim becomes index_select (one per tap) times a weight column, summed.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/autocast.h"
#include "core/round_to.h"
#include "brisk/nn/upsampling.h"
#include "brisk/nn/pooling.h"
#include "brisk/ops.h"
#include "profiler/record.h"

namespace brisk::nn {

const char* mode_name(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::Nearest: return "nearest";
    case InterpolateMode::NearestExact: return "nearest-exact";
    case InterpolateMode::Linear: return "linear";
    case InterpolateMode::Bilinear: return "bilinear";
    case InterpolateMode::Bicubic: return "bicubic";
    case InterpolateMode::Trilinear: return "trilinear";
    case InterpolateMode::Area: return "area";
  }
  return "?";
}

namespace functional {
namespace {

constexpr const char* kOp = "interpolate";

template <class V>
std::string list_str(const std::vector<V>& v) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << ']';
  return os.str();
}

bool is_nearest(InterpolateMode m) { return m == kNearest || m == kNearestExact; }
bool is_interpolating(InterpolateMode m) {
  return m == kLinear || m == kBilinear || m == kBicubic || m == kTrilinear;
}

/// One resampled dim: taps[k][i] is the input position tap k of output i
/// reads, weights[k][i] its weight (empty for the nearest modes).
struct DimPlan {
  std::vector<std::vector<int64_t>> taps;
  std::vector<std::vector<double>> weights;
  bool identity = false;
};

/// in / out, 1 / scale_factor, or the align_corners ratio, in T (float or double).
template <class T>
T compute_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> factor) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  if (factor && *factor > 0) return static_cast<T>(1.0 / *factor);
  return static_cast<T>(in) / static_cast<T>(out);
}

/// scale * (i + 0.5) - 0.5, or scale * i with align_corners. With `fused`
/// one rounding, as the PyTorch 2.15 kernels that its compiler contracted to
/// a multiply-add (fused_source_coordinate); else two.
template <class T>
T source_coordinate(T scale, int64_t i, bool align_corners, bool fused = true) {
  if (align_corners) return scale * static_cast<T>(i);
  if (fused) return std::fma(scale, static_cast<T>(i) + T(0.5), T(-0.5));
  volatile T p = scale * (static_cast<T>(i) + T(0.5));  // rounded: never contracted here
  return p - T(0.5);
}

/// Whether PyTorch 2.15's CPU kernel for `mode` and dtype `dt` computes the
/// source coordinate with one rounding: its build contracted the multiply and
/// the subtraction in some kernels and not in others. Not fused: linear and
/// trilinear in float32 and float16 (measured with a weight that is exactly 0
/// unfused and 1.5e-8 fused, next to a 3e38: fuzzer nn2 seed 631 case
/// 1274688, a trilinear 3.7e30 where torch gives -0.25); fused: bilinear,
/// bicubic, float64, and bfloat16 (their weights at other positions, an ulp
/// apart, say so).
bool fused_source_coordinate(InterpolateMode mode, ScalarType dt) {
  return !((mode == kLinear || mode == kTrilinear) && (dt == kFloat || dt == kHalf));
}

/// Whether PyTorch's CPU kernel computes `mode` on a 16-bit input in that
/// dtype's steps: linear and trilinear (its generic kernel: scalar_t weights,
/// t and then 1 - t each rounded, and every product and sum rounded, the
/// innermost dim first); its bilinear kernel computes in float32, as brisk
/// does for the other modes. (Its bicubic's cubic weights are computed in
/// the 16-bit type too; not followed yet: an ulp or so apart.)
bool half_steps(InterpolateMode mode, ScalarType dt) {
  return (dt == kHalf || dt == kBFloat16) && (mode == kLinear || mode == kTrilinear);
}

/// Keys' cubic convolution kernel, a = -0.75, on |x| <= 1 and 1 < |x| < 2.
template <class T>
T cubic_near(T x) {
  constexpr T a = T(-0.75);
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
template <class T>
T cubic_far(T x) {
  constexpr T a = T(-0.75);
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

template <class T>
DimPlan plan_dim(InterpolateMode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> factor,
                 bool fused, ScalarType steps16 = kFloat) {
  DimPlan p;
  const T scale = compute_scale<T>(in, out, align_corners && is_interpolating(mode), factor);
  if (is_nearest(mode)) {
    p.taps.resize(1);
    for (int64_t i = 0; i < out; ++i) {
      T x;
      if (mode == kNearest)
        x = scale * static_cast<T>(i);
      else
        x = source_coordinate(scale, i, false) + T(0.5);
      // floorf: a float64 input's position is rounded to float first.
      const auto src = static_cast<int64_t>(std::floor(static_cast<float>(x)));
      p.taps[0].push_back(std::min(src, in - 1));
    }
  } else if (mode == kBicubic) {
    p.taps.resize(4);
    p.weights.resize(4);
    for (int64_t i = 0; i < out; ++i) {
      const T x = source_coordinate(scale, i, align_corners, fused);
      const int64_t base = std::min(static_cast<int64_t>(std::floor(static_cast<float>(x))), in - 1);
      const T t = std::min(std::max(x - static_cast<T>(base), T(0)), T(1));
      const T w[4] = {cubic_far<T>(t + 1), cubic_near<T>(t), cubic_near<T>(1 - t), cubic_far<T>(2 - t)};
      for (int k = 0; k < 4; ++k) {
        p.taps[k].push_back(std::min(std::max<int64_t>(base - 1 + k, 0), in - 1));
        p.weights[k].push_back(static_cast<double>(w[k]));
      }
    }
  } else {  // linear
    p.taps.resize(2);
    p.weights.resize(2);
    for (int64_t i = 0; i < out; ++i) {
      T x = source_coordinate(scale, i, align_corners, fused);
      if (x < T(0)) x = T(0);
      const int64_t i0 = std::min(static_cast<int64_t>(std::floor(static_cast<float>(x))), in - 1);
      T t = std::min(std::max(x - static_cast<T>(i0), T(0)), T(1));
      T t0 = T(1) - t;
      if (steps16 != kFloat) {  // torch's scalar_t lambdas: t, then 1 - t, each rounded to the dtype
        t = static_cast<T>(detail::round_to(steps16, static_cast<double>(t)));
        t0 = static_cast<T>(detail::round_to(steps16, static_cast<double>(T(1) - t)));
      }
      p.taps[0].push_back(i0);
      p.taps[1].push_back(i0 + (i0 < in - 1 ? 1 : 0));
      p.weights[0].push_back(static_cast<double>(t0));
      p.weights[1].push_back(static_cast<double>(t));
    }
  }
  // A dim left as it is (same size, unit scale) is skipped.
  p.identity = out == in;
  for (int64_t i = 0; p.identity && i < out; ++i) {
    p.identity = p.taps[0][static_cast<size_t>(i)] == i;
    if (!p.weights.empty()) {
      p.identity &= p.weights[0][static_cast<size_t>(i)] == 1.0;
      for (size_t k = 1; k < p.weights.size(); ++k) p.identity &= p.weights[k][static_cast<size_t>(i)] == 0.0;
    }
  }
  return p;
}

/// x resampled along `axis` by the plan. x is in the compute dtype.
Tensor resample_dim(const Tensor& x, int64_t axis, const DimPlan& p) {
  const int64_t out = static_cast<int64_t>(p.taps[0].size());
  auto positions = [&](size_t k) { return tensor(p.taps[k], kInt64).to(x.device()); };
  if (p.weights.empty()) return x.index_select(axis, positions(0));
  // weight column shaped to broadcast along axis: (out, 1, ..., 1)
  DimVector wshape{out};
  for (int64_t d = axis + 1; d < x.dim(); ++d) wshape.push_back(1);
  Tensor r;
  for (size_t k = 0; k < p.taps.size(); ++k) {
    Tensor w = tensor(p.weights[k], x.dtype()).view(wshape).to(x.device());
    Tensor term = x.index_select(axis, positions(k)) * w;
    r = r.defined() ? r + term : term;
  }
  return r;
}

/// Area mode: adaptive average pooling, per rank.
Tensor area(const Tensor& x, const std::vector<int64_t>& out) {
  // An empty output, or no channels: torch gives the empty result (brisk's
  // adaptive_avg_pool2d refuses an empty C).
  if (std::find(out.begin(), out.end(), int64_t(0)) != out.end() || x.size(1) == 0) {
    DimVector shape{x.size(0), x.size(1)};
    for (int64_t o : out) shape.push_back(o);
    return x.flatten(2).narrow(2, 0, 0).reshape(shape).clone();
  }
  if (x.dim() == 3) return adaptive_avg_pool2d(x.unsqueeze(2), {1, out[0]}).squeeze(2);
  if (x.dim() == 4) return adaptive_avg_pool2d(x, {out[0], out[1]});
  // 5-D: pool (H, W) of every depth slice, then D (the pooling is separable),
  // 16-bit inputs in float32 as PyTorch's one adaptive_avg_pool3d (two
  // rounded stages overflowed a float16 gradient its one stage keeps finite:
  // fuzzer nn2 seed 631 case 1976921, inf where torch gives 58336).
  if (is_reduced_float(x.dtype())) return area(x.to(kFloat), out).to(x.dtype());
  const int64_t N = x.size(0), C = x.size(1), D = x.size(2);
  Tensor hw = adaptive_avg_pool2d(x.reshape({N, C * D, x.size(3), x.size(4)}), {out[1], out[2]});
  Tensor d = adaptive_avg_pool2d(hw.reshape({N, C, D, out[1] * out[2]}), {out[0], out[1] * out[2]});
  return d.reshape({N, C, out[0], out[1], out[2]});
}

/// The rank each interpolating mode takes (0: any of 3, 4, 5).
int64_t rank_of(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::Linear: return 3;
    case InterpolateMode::Bilinear: return 4;
    case InterpolateMode::Bicubic: return 4;
    case InterpolateMode::Trilinear: return 5;
    default: return 0;
  }
}

/// "(W: 5)", "(H: 4, W: 5)", "(D: 2, H: 3, W: 5)".
std::string spatial_str(const std::vector<int64_t>& s) {
  static const char* names[3] = {"D", "H", "W"};
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << names[3 - s.size() + i] << ": " << s[i];
  os << ')';
  return os.str();
}

template <class V>
std::vector<V> per_dim(const std::vector<V>& v, int64_t dims) {
  return v.size() == 1 ? std::vector<V>(static_cast<size_t>(dims), v[0]) : v;
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o) {
  BRISK_AUTOCAST(interpolate, interpolate, x, o);
  BRISK_PROFILE_OP(kOp, x);
  BRISK_CHECK(x.defined(), kOp, "input is an undefined tensor");
  const InterpolateMode mode = o.mode();
  const char* name = mode_name(mode);
  // Python's argument checks, in its order.
  BRISK_CHECK(!(o.align_corners() && !is_interpolating(mode)), kOp,
              "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | "
              "trilinear");
  const bool align_corners = o.align_corners().value_or(false);
  BRISK_CHECK(!(o.size() && o.scale_factor()), kOp, "only one of size or scale_factor should be defined");
  BRISK_CHECK(o.size() || o.scale_factor(), kOp, "either size or scale_factor should be defined");
  const int64_t nd = x.dim();
  BRISK_CHECK(nd >= 3 && nd <= 5 && !(mode == kBicubic && nd != 4), kOp,
              "Input Error: Only 3D, 4D and 5D input Tensors supported (got ", nd,
              "D) for the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got ",
              name, ")");
  const int64_t dims = nd - 2;
  std::vector<int64_t> in(x.sizes().begin() + 2, x.sizes().end());
  std::vector<int64_t> out;
  std::vector<std::optional<double>> factors(static_cast<size_t>(dims));
  if (o.size()) {
    out = per_dim(*o.size(), dims);
    BRISK_CHECK(static_cast<int64_t>(out.size()) == dims, kOp,
                "Input and output must have the same number of spatial dimensions, but got input with spatial "
                "dimensions of ", list_str(in), " and output size of ", list_str(*o.size()),
                ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                "format.");
  } else {
    const std::vector<double> f = per_dim(*o.scale_factor(), dims);
    BRISK_CHECK(static_cast<int64_t>(f.size()) == dims, kOp,
                "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
                "dimensions of ", list_str(in), " and scale_factor of shape ", list_str(*o.scale_factor()),
                ". Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                "format.");
    for (size_t i = 0; i < f.size(); ++i) {
      out.push_back(static_cast<int64_t>(std::floor(static_cast<double>(in[i]) * f[i])));
      factors[i] = f[i];
    }
  }
  BRISK_CHECK(!(o.recompute_scale_factor().value_or(false) && o.size()), kOp,
              "recompute_scale_factor is not meaningful with an explicit size.");
  // Area always uses the output size alone.
  if (o.recompute_scale_factor().value_or(false) || mode == kArea)
    for (auto& f : factors) f.reset();
  BRISK_CHECK(!o.antialias(), kOp, "antialias=true is not supported");
  if (const int64_t want = rank_of(mode); want != 0 && want != nd)
    BRISK_FAIL(kOp, "Got ", nd, "D input, but ", name, " mode needs ", want, "D input");

  if (mode == kArea) {
    BRISK_CHECK(x.is_floating_point(), kOp, "mode 'area' is not implemented for ", x.dtype());
    return area(x, out);
  }
  bool positive = true;
  for (int64_t i = 0; i < dims; ++i) positive &= in[static_cast<size_t>(i)] > 0 && out[static_cast<size_t>(i)] > 0;
  BRISK_CHECK(positive, kOp, "Input and output sizes should be greater than 0, but got input ", spatial_str(in),
              dims == 1 ? " and output " : " output ", spatial_str(out));
  int64_t non_batch = 1;
  for (int64_t d = 1; d < nd; ++d) non_batch *= x.size(d);
  BRISK_CHECK(non_batch != 0, kOp, "Non-empty ", nd, "D data tensor expected but got a tensor with sizes ",
              x.sizes());
  BRISK_CHECK(x.is_floating_point() || (is_nearest(mode) && x.dtype() == kUInt8), kOp, "mode '", name,
              "' is not implemented for ", x.dtype(), " (floating point inputs",
              is_nearest(mode) ? " and uint8" : "", " only)");

  // Positions and weights in the kernels' precision; 16-bit floats compute in float32.
  const ScalarType compute = x.dtype() == kDouble ? kDouble : kFloat;
  std::vector<DimPlan> plans;
  bool identity = true;
  const bool fused = fused_source_coordinate(mode, x.dtype());
  const bool in_steps16 = half_steps(mode, x.dtype());
  const ScalarType steps16 = in_steps16 ? x.dtype() : kFloat;
  for (int64_t i = 0; i < dims; ++i) {
    const size_t k = static_cast<size_t>(i);
    plans.push_back(compute == kDouble ? plan_dim<double>(mode, in[k], out[k], align_corners, factors[k], fused)
                                       : plan_dim<float>(mode, in[k], out[k], align_corners, factors[k], fused, steps16));
    identity &= plans.back().identity;
  }
  if (identity) return x.clone();
  const bool widen = !is_nearest(mode) && x.dtype() != compute && !in_steps16;
  Tensor y = widen ? x.to(compute) : x;
  for (int64_t i = dims; i-- > 0;)  // innermost dim first (Note [Separable interpolation])
    if (!plans[static_cast<size_t>(i)].identity) y = resample_dim(y, i + 2, plans[static_cast<size_t>(i)]);
  return widen ? y.to(x.dtype()) : y;
}

}  // namespace functional

// ---- Upsample ----------------------------------------------------------------------------

UpsampleImpl::UpsampleImpl(const UpsampleOptions& o) : Module("Upsample"), options(o) {}

Tensor UpsampleImpl::forward(const Tensor& x) {
  return F::interpolate(x, F::InterpolateFuncOptions()
                               .size(options.size())
                               .scale_factor(options.scale_factor())
                               .mode(options.mode())
                               .align_corners(options.align_corners())
                               .recompute_scale_factor(options.recompute_scale_factor()));
}

std::string UpsampleImpl::extra_repr() const {
  std::ostringstream os;
  auto seq = [&os](const auto& v) {
    if (v.size() == 1) {
      os << v[0];
      return;
    }
    os << '(';
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    os << ')';
  };
  if (options.scale_factor()) {
    os << "scale_factor=";
    std::vector<std::string> f;
    for (double s : *options.scale_factor()) {
      std::ostringstream e;
      e << s;
      std::string t = e.str();
      if (t.find_first_of(".en") == std::string::npos) t += ".0";  // Python prints floats as 2.0
      f.push_back(t);
    }
    seq(f);
  } else {
    os << "size=";
    seq(options.size().value_or(std::vector<int64_t>{}));
  }
  os << ", mode='" << mode_name(options.mode()) << "'";
  return os.str();
}

}  // namespace brisk::nn
