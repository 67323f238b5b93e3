// 3-D pooling (max_pool3d, avg_pool3d) and adaptive pooling
// (adaptive_max_pool1d/2d/3d, adaptive_avg_pool1d/3d) and their modules.
//
// Note [Pooling by gathered windows]: each pooled dim is described by a table
// of positions, window o covering positions pos[o][0..K) of the (padded)
// input. Box pooling is separable: the dims are pooled one at a time, last
// first; for one dim, index_select with the flattened table gives
// (..., O, ..., K) (the window's elements moved last) and a max (or a sum)
// over K reduces it. Averages divide the sums by the product of the dims'
// counts at the end. Max takes the first maximum at each stage, which is the
// first in row-major window order overall (PyTorch's choice); the flat
// indices follow the maxima through the stages; a padding tap is never
// chosen (max_last's `valid`), so they always name input elements. The
// gathers and reductions are differentiable ops, so autograd gives the
// gradients. Windows shorter
// than K (the adaptive ones) repeat their last position for max (a repeat
// changes no maximum and the first occurrence is a real position) and point
// at an appended zero for averages. Each stage costs about K / stride times
// its input; the 1-D/2-D max/avg pools keep their kernels.
#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "brisk/nn/pooling.h"
#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "nn/pooling_repr.h"

namespace brisk::nn {

namespace {

struct DimWindows {
  int64_t in = 0, out = 0, k = 0;
  std::vector<int64_t> pos;   // out * k positions in the padded input
  std::vector<int64_t> orig;  // the same in the unpadded input (max: for indices)
  std::vector<uint8_t> valid; // per position: inside the input (empty: all are)
  std::vector<double> count;  // per output: the divisor's factor (averages)
  int64_t pad_before = 0, pad_after = 0;
  // sliding windows (pos = o * stride + j * dilation): taken as an unfold view
  bool sliding = false;
  int64_t stride = 1, dilation = 1;
};

/// x padded on every pooled dim with `pad_value`.
Tensor pad_all(const Tensor& x, const std::vector<DimWindows>& dims, double pad_value) {
  std::vector<int64_t> pad;
  bool any = false;
  for (size_t i = dims.size(); i-- > 0;) {
    pad.push_back(dims[i].pad_before);
    pad.push_back(dims[i].pad_after);
    any = any || dims[i].pad_before || dims[i].pad_after;
  }
  return any ? brisk::pad(x, pad, pad_value) : x;
}

/// The windows of dim `axis` of t: (..., O, later dims..., K), the window
/// elements last.
Tensor windows_of(const Tensor& t, int64_t axis, const DimWindows& d) {
  if (d.sliding) {  // a view: no copy
    const int64_t span = d.dilation * (d.k - 1) + 1;
    Tensor w = t.unfold(axis, span, d.stride).narrow(axis, 0, d.out);
    return d.dilation == 1 ? w : w.slice(-1, 0, span, d.dilation);
  }
  return t.index_select(axis, tensor(d.pos, TensorOptions(kInt64).device(t.device())))
      .unflatten(axis, {d.out, d.k})
      .movedim(axis + 1, -1);
}

/// The max over the last dim of w and its first position (the last NaN's
/// when there is one: PyTorch's kernels take `val > max || isnan(val)`), as
/// a chain of elementwise selects over the K slices: brisk's reductions over
/// a short last dim are slow, and `where` routes the gradient to the chosen
/// element only, as the pooling kernels do. `valid` (broadcastable to w, or
/// undefined when every tap is real) marks the taps inside the input: a
/// padding tap is never chosen, even over a real -inf, so the index always
/// names an input element (a window with no real tap keeps its tap 0).
std::tuple<Tensor, Tensor> max_last(const Tensor& w, const Tensor& valid, bool need_index) {
  const int64_t k = w.size(-1);
  Tensor best = w.select(-1, 0), arg, have;
  if (need_index) arg = zeros(best.sizes(), TensorOptions(kInt64).device(w.device()));
  if (valid.defined()) have = valid.select(-1, 0);
  for (int64_t j = 1; j < k; ++j) {
    const Tensor v = w.select(-1, j);
    Tensor take;
    {
      NoGradGuard no_grad;
      take = logical_or(gt(v, best), isnan(v));
      if (valid.defined()) {
        const Tensor real = valid.select(-1, j);
        take = logical_and(real, logical_or(take, logical_not(have)));
        have = logical_or(have, real);
      }
    }
    best = where(take, v, best);
    if (need_index) arg = where(take, Scalar(j), arg);
  }
  return {best, arg};
}
Tensor sum_last(const Tensor& w) {
  Tensor acc = w.select(-1, 0);
  for (int64_t j = 1; j < w.size(-1); ++j) acc = acc + w.select(-1, j);
  return acc;
}

/// The result of a pooling with an output size of 0 along some dim (PyTorch
/// returns an empty tensor): x narrowed to one element on each pooled dim and
/// expanded to the output shape, so that its gradient is zeros.
Tensor empty_pooled(const Tensor& x, const std::vector<DimWindows>& dims) {
  const int64_t lead = x.dim() - static_cast<int64_t>(dims.size());
  Tensor t = x;
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  for (size_t i = 0; i < dims.size(); ++i) {
    t = t.narrow(lead + int64_t(i), 0, 1);
    shape[size_t(lead) + i] = dims[i].out;
  }
  return t.expand(shape).clone();
}
bool any_empty(const std::vector<DimWindows>& dims) {
  for (const auto& d : dims)
    if (d.out == 0) return true;
  return false;
}

/// (values, flat indices) of the max over each window. Separable: the max
/// over a box is the max over the last dim's windows, then the next, ...;
/// each stage takes the first maximum (brisk::max), so among equal values
/// the first in row-major window order wins, as PyTorch's kernels.
std::tuple<Tensor, Tensor> max_over_windows(const Tensor& x, const std::vector<DimWindows>& dims,
                                            bool need_indices = true) {
  if (any_empty(dims)) {
    const Tensor y = empty_pooled(x, dims);
    return {y, need_indices ? zeros(y.sizes(), TensorOptions(kInt64).device(x.device())) : Tensor()};
  }
  const int64_t k = static_cast<int64_t>(dims.size()), lead = x.dim() - k;
  Tensor t = pad_all(x, dims, -std::numeric_limits<double>::infinity());
  Tensor flat;  // the flat index (unpadded input) of each value of t, once a dim is reduced
  int64_t stride = 1;
  for (int64_t i = k - 1; i >= 0; --i) {
    const DimWindows& d = dims[size_t(i)];
    const int64_t axis = lead + i;
    // (1.., O, 1.., K): the shape of a per-window table along dim i
    std::vector<int64_t> tshape(size_t(t.dim() + 1), 1);
    tshape[size_t(axis)] = d.out;
    tshape.back() = d.k;
    Tensor valid;
    if (!d.valid.empty()) {
      const std::vector<int64_t> mask(d.valid.begin(), d.valid.end());
      valid = tensor(mask, TensorOptions(kInt64).device(x.device())).view(tshape).ne(0);
    }
    auto [v, j] = max_last(windows_of(t, axis, d), valid, need_indices);
    t = v;
    if (!need_indices) continue;
    // the position along dim i of each window's maximum
    std::vector<int64_t> gshape(j.sizes().begin(), j.sizes().end());
    gshape.push_back(d.k);
    const Tensor orig = tensor(d.orig, TensorOptions(kInt64).device(x.device())).view(tshape).expand(gshape);
    Tensor pos = orig.gather(-1, j.unsqueeze(-1)).squeeze(-1);
    {
      NoGradGuard no_grad;
      Tensor f = pos * stride;
      if (flat.defined()) f = f + windows_of(flat, axis, d).gather(-1, j.unsqueeze(-1)).squeeze(-1);
      flat = f;
    }
    stride *= d.in;
  }
  return {t, flat};
}

/// The mean over each window: sums along each dim in turn, divided by the
/// product of the dims' counts (or by divisor).
Tensor mean_over_windows(const Tensor& x, const std::vector<DimWindows>& dims, std::optional<int64_t> divisor) {
  if (any_empty(dims)) return empty_pooled(x, dims);
  const int64_t k = static_cast<int64_t>(dims.size()), lead = x.dim() - k;
  Tensor sum = pad_all(x, dims, 0.0);
  for (int64_t i = k - 1; i >= 0; --i) sum = sum_last(windows_of(sum, lead + i, dims[size_t(i)]));
  if (divisor) return sum / double(*divisor);
  std::vector<int64_t> oshape;
  int64_t n_out = 1;
  for (const auto& d : dims) {
    oshape.push_back(d.out);
    n_out *= d.out;
  }
  std::vector<double> div(static_cast<size_t>(n_out));
  for (int64_t f = 0; f < n_out; ++f) {
    int64_t rem = f;
    double c = 1;
    for (size_t i = dims.size(); i-- > 0;) {
      c *= dims[i].count[size_t(rem % dims[i].out)];
      rem /= dims[i].out;
    }
    div[size_t(f)] = c;
  }
  return sum / tensor(div, oshape, TensorOptions(sum.dtype()).device(x.device()));
}

void check_input(const char* op, const Tensor& x, int64_t k) {
  BRISK_CHECK(x.defined() && (x.dim() == k + 1 || x.dim() == k + 2), op, "expected a ", k + 1, "-D (unbatched) or ",
              k + 2, "-D (batched) input, got shape ", x.defined() ? x.sizes() : IntArrayRef{});
  for (int64_t d = x.dim() - k; d < x.dim(); ++d)
    BRISK_CHECK(x.size(d) > 0, op, "expected non-empty spatial dims, got shape ", x.sizes());
  BRISK_CHECK(is_floating_point(x.dtype()), op, "expected a floating-point input, got ", x.dtype());
}

template <size_t D>
void check_given(const char* op, const char* what, const ExpandingInts<D>& v) {
  BRISK_CHECK(v.given() == 1 || v.given() == int(D), op, what, " must be one integer or ", D, " integers, got ",
              v.given());
}

/// The windows of a (dilated, strided, padded) pooling along one dim, as
/// PyTorch's pooling_output_shape; `avg`: the divisor counts.
DimWindows sliding(const char* op, int64_t in, int64_t k, int64_t s, int64_t p, int64_t dl, bool ceil_mode, bool avg,
                   bool count_include_pad) {
  BRISK_CHECK(k > 0 && s > 0 && dl > 0, op, "kernel_size, stride and dilation must be positive, got ", k, ", ", s,
              ", ", dl);
  BRISK_CHECK(p >= 0 && p <= k / 2, op, "padding must be non-negative and at most half the kernel size, got padding ",
              p, " for kernel_size ", k);
  const int64_t span = dl * (k - 1) + 1;
  const int64_t num = in + 2 * p - span;
  // PyTorch's output size: floor division, so that with ceil_mode a window
  // longer than the (padded) input still gives one clipped window (lp_pool1d
  // of a size-1 input with kernel 3; fuzzer nn3 seed 601 case 12218)
  const int64_t top = num + (ceil_mode ? s - 1 : 0);
  int64_t out = (top >= 0 ? top / s : -((-top + s - 1) / s)) + 1;
  if (ceil_mode && out > 0 && (out - 1) * s >= in + p) --out;
  BRISK_CHECK(out >= 1, op, "the input size ", in, " (padded ", in + 2 * p, ") is smaller than the kernel span ", span);
  DimWindows d;
  d.in = in;
  d.out = out;
  d.k = k;
  d.pad_before = p;
  const int64_t last = (out - 1) * s + (k - 1) * dl;
  d.pad_after = std::max<int64_t>(p, last + 1 - in - p);
  d.sliding = true;
  d.stride = s;
  d.dilation = dl;
  bool all_real = true;
  for (int64_t o = 0; o < out; ++o) {
    bool any_real = false;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t at = o * s + j * dl - p;
      const bool real = at >= 0 && at < in;
      d.pos.push_back(o * s + j * dl);
      d.orig.push_back(at);
      d.valid.push_back(real);
      any_real = any_real || real;
      all_real = all_real && real;
    }
    // No real tap (dilation can step over a small input): PyTorch's index
    // is then the window's first tap at or past 0, which max_last keeps as
    // tap 0's position.
    if (!any_real) {
      int64_t first = o * s - p;
      while (first < 0) first += dl;
      d.orig[size_t(o * k)] = first;
    }
    if (avg) {
      int64_t start = o * s - p, end = std::min(start + k, in + p);
      const int64_t pool = end - start;
      start = std::max<int64_t>(start, 0);
      end = std::min(end, in);
      d.count.push_back(double(count_include_pad ? pool : end - start));
    }
  }
  if (all_real) d.valid.clear();
  return d;
}

/// The windows of adaptive pooling along one dim: [floor(o * in / out), ceil((o + 1) * in / out)).
/// An output size of 0 gives no windows (and an empty result, as PyTorch).
DimWindows adaptive(const char* op, int64_t in, int64_t out, bool avg) {
  BRISK_CHECK(out >= 0, op, "output_size must be non-negative, got ", out);
  DimWindows d;
  d.in = in;
  d.out = out;
  int64_t kmax = 0;
  std::vector<std::pair<int64_t, int64_t>> win;
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
    win.emplace_back(start, end - start);
    kmax = std::max(kmax, end - start);
  }
  d.k = kmax;
  if (avg) d.pad_after = 1;  // an appended zero for the short windows
  for (auto [start, len] : win) {
    for (int64_t j = 0; j < kmax; ++j) {
      const int64_t p = j < len ? start + j : (avg ? in : start + len - 1);
      d.pos.push_back(p);
      d.orig.push_back(p);
    }
    d.count.push_back(double(len));
  }
  return d;
}

template <size_t D>
std::vector<DimWindows> adaptive_dims(const char* op, const Tensor& x, const ExpandingInts<D>& size, bool avg) {
  check_input(op, x, D);
  check_given(op, "output_size", size);
  std::vector<DimWindows> dims;
  for (size_t i = 0; i < D; ++i) dims.push_back(adaptive(op, x.size(x.dim() - int64_t(D) + int64_t(i)), size[i], avg));
  return dims;
}

}  // namespace

namespace functional {

namespace {
std::tuple<Tensor, Tensor> max_pool3d_impl(const Tensor& x, const MaxPool3dFuncOptions& o, bool need_indices) {
  const char* op = "max_pool3d";
  check_input(op, x, 3);
  check_given(op, "kernel_size", o.kernel_size());
  check_given(op, "stride", o.stride());
  check_given(op, "padding", o.padding());
  check_given(op, "dilation", o.dilation());
  std::vector<DimWindows> dims;
  for (size_t i = 0; i < 3; ++i)
    dims.push_back(sliding(op, x.size(x.dim() - 3 + int64_t(i)), o.kernel_size()[i], o.stride()[i], o.padding()[i],
                           o.dilation()[i], o.ceil_mode(), false, true));
  return max_over_windows(x, dims, need_indices);
}
}  // namespace
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, const MaxPool3dFuncOptions& o) {
  return max_pool3d_impl(x, o, true);
}
Tensor max_pool3d(const Tensor& x, const MaxPool3dFuncOptions& o) { return std::get<0>(max_pool3d_impl(x, o, false)); }

Tensor avg_pool3d(const Tensor& x, const AvgPool3dFuncOptions& o) {
  const char* op = "avg_pool3d";
  check_input(op, x, 3);
  check_given(op, "kernel_size", o.kernel_size());
  check_given(op, "stride", o.stride());
  check_given(op, "padding", o.padding());
  if (o.divisor_override()) BRISK_CHECK(*o.divisor_override() != 0, op, "divisor_override must be non-zero");
  // PyTorch's avg_pool3d (not its max_pool3d) also wants the unpadded input
  // at least as large as the kernel (fuzzer nn3, seed 601 case 31019)
  for (size_t i = 0; i < 3; ++i)
    BRISK_CHECK(x.size(x.dim() - 3 + int64_t(i)) >= o.kernel_size()[i], op, "input image of shape ", x.sizes(),
                " is smaller than kernel_size ", o.kernel_size().str());
  std::vector<DimWindows> dims;
  for (size_t i = 0; i < 3; ++i)
    dims.push_back(sliding(op, x.size(x.dim() - 3 + int64_t(i)), o.kernel_size()[i], o.stride()[i], o.padding()[i], 1,
                           o.ceil_mode(), true, o.count_include_pad()));
  return mean_over_windows(x, dims, o.divisor_override());
}

std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o) {
  return max_over_windows(x, adaptive_dims<1>("adaptive_max_pool1d", x, o.output_size(), false));
}
Tensor adaptive_max_pool1d(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o) {
  return std::get<0>(max_over_windows(x, adaptive_dims<1>("adaptive_max_pool1d", x, o.output_size(), false), false));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return max_over_windows(x, adaptive_dims<2>("adaptive_max_pool2d", x, o.output_size(), false));
}
Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return std::get<0>(max_over_windows(x, adaptive_dims<2>("adaptive_max_pool2d", x, o.output_size(), false), false));
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o) {
  return max_over_windows(x, adaptive_dims<3>("adaptive_max_pool3d", x, o.output_size(), false));
}
Tensor adaptive_max_pool3d(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o) {
  return std::get<0>(max_over_windows(x, adaptive_dims<3>("adaptive_max_pool3d", x, o.output_size(), false), false));
}
Tensor adaptive_avg_pool1d(const Tensor& x, const AdaptiveAvgPool1dFuncOptions& o) {
  return mean_over_windows(x, adaptive_dims<1>("adaptive_avg_pool1d", x, o.output_size(), true), std::nullopt);
}
Tensor adaptive_avg_pool3d(const Tensor& x, const AdaptiveAvgPool3dFuncOptions& o) {
  return mean_over_windows(x, adaptive_dims<3>("adaptive_avg_pool3d", x, o.output_size(), true), std::nullopt);
}

}  // namespace functional

namespace {
const char* tf(bool b) { return b ? "true" : "false"; }
}  // namespace

MaxPool3dImpl::MaxPool3dImpl(const MaxPool3dOptions& o) : Module("MaxPool3d"), options(o) {}
Tensor MaxPool3dImpl::forward(const Tensor& x) { return F::max_pool3d(x, options); }
std::tuple<Tensor, Tensor> MaxPool3dImpl::forward_with_indices(const Tensor& x) {
  return F::max_pool3d_with_indices(x, options);
}
std::string MaxPool3dImpl::extra_repr() const {
  return detail_repr::max_pool_repr(options);
}

AvgPool3dImpl::AvgPool3dImpl(const AvgPool3dOptions& o) : Module("AvgPool3d"), options(o) {}
Tensor AvgPool3dImpl::forward(const Tensor& x) { return F::avg_pool3d(x, options); }
std::string AvgPool3dImpl::extra_repr() const {
  return detail_repr::avg_pool_repr(options);
}

namespace modules_detail {

template <size_t D>
AdaptiveMaxPoolImpl<D>::AdaptiveMaxPoolImpl(const AdaptiveMaxPoolOptions<D>& o)
    : Module(D == 1 ? "AdaptiveMaxPool1d" : D == 2 ? "AdaptiveMaxPool2d" : "AdaptiveMaxPool3d"), options(o) {
  for (size_t i = 0; i < D; ++i)
    BRISK_CHECK(o.output_size()[i] >= 0, name().c_str(), "output_size must be non-negative, got ",
                o.output_size().str());
}
template <size_t D>
std::tuple<Tensor, Tensor> AdaptiveMaxPoolImpl<D>::forward_with_indices(const Tensor& x) {
  if constexpr (D == 1) return F::adaptive_max_pool1d_with_indices(x, options);
  else if constexpr (D == 2) return F::adaptive_max_pool2d_with_indices(x, options);
  else return F::adaptive_max_pool3d_with_indices(x, options);
}
template <size_t D>
Tensor AdaptiveMaxPoolImpl<D>::forward(const Tensor& x) {
  if constexpr (D == 1) return F::adaptive_max_pool1d(x, options);
  else if constexpr (D == 2) return F::adaptive_max_pool2d(x, options);
  else return F::adaptive_max_pool3d(x, options);
}
template <size_t D>
std::string AdaptiveMaxPoolImpl<D>::extra_repr() const {
  return "output_size=" + options.output_size().str();
}

template <size_t D>
AdaptiveAvgPoolImpl<D>::AdaptiveAvgPoolImpl(const AdaptiveAvgPoolOptions<D>& o)
    : Module(D == 1 ? "AdaptiveAvgPool1d" : "AdaptiveAvgPool3d"), options(o) {
  for (size_t i = 0; i < D; ++i)
    BRISK_CHECK(o.output_size()[i] >= 0, name().c_str(), "output_size must be non-negative, got ",
                o.output_size().str());
}
template <size_t D>
Tensor AdaptiveAvgPoolImpl<D>::forward(const Tensor& x) {
  if constexpr (D == 1) return F::adaptive_avg_pool1d(x, options);
  else return F::adaptive_avg_pool3d(x, options);
}
template <size_t D>
std::string AdaptiveAvgPoolImpl<D>::extra_repr() const {
  return "output_size=" + options.output_size().str();
}

template class AdaptiveMaxPoolImpl<1>;
template class AdaptiveMaxPoolImpl<2>;
template class AdaptiveMaxPoolImpl<3>;
template class AdaptiveAvgPoolImpl<1>;
template class AdaptiveAvgPoolImpl<3>;

}  // namespace modules_detail

namespace {

template <size_t D>
Tensor lp_pool(const char* op, const Tensor& x, const LPPoolOptions<D>& o) {
  check_input(op, x, D);
  check_given(op, "kernel_size", o.kernel_size());
  check_given(op, "stride", o.stride());
  BRISK_CHECK(o.norm_type() != 0, op, "norm_type must be non-zero");
  const double p = o.norm_type();
  std::vector<DimWindows> dims;
  double ksize = 1;
  for (size_t i = 0; i < D; ++i) {
    dims.push_back(sliding(op, x.size(x.dim() - int64_t(D) + int64_t(i)), o.kernel_size()[i], o.stride()[i], 0, 1,
                           o.ceil_mode(), true, true));
    ksize *= double(o.kernel_size()[i]);
  }
  // PyTorch: avg_pool(x^p) * kernel size, sign(out) * relu(|out|), then ^(1/p)
  const Tensor out = mean_over_windows(x.pow(p), dims, std::nullopt);
  return (out.sign() * out.abs().relu()).mul(ksize).pow(1.0 / p);
}

template <size_t D>
Tensor max_unpool(const char* op, const Tensor& x, const Tensor& indices, const functional::MaxUnpoolFuncOptions<D>& o) {
  check_input(op, x, D);
  BRISK_CHECK(indices.defined() && indices.dtype() == kInt64, op, "expected int64 indices");
  BRISK_CHECK(indices.sizes() == x.sizes(), op, "indices (", indices.sizes(), ") must have the shape of the input (",
              x.sizes(), ")");
  check_given(op, "kernel_size", o.kernel_size());
  check_given(op, "stride", o.stride());
  check_given(op, "padding", o.padding());
  const int64_t lead = x.dim() - int64_t(D);
  std::vector<int64_t> out;
  if (o.output_size()) {
    std::vector<int64_t> s = *o.output_size();
    if (s.size() == size_t(x.dim())) s.erase(s.begin(), s.begin() + lead);
    BRISK_CHECK(s.size() == D, op, "output_size must have ", D, " (or ", x.dim(), ") values, got ", o.output_size()->size());
    out = s;
  } else {
    for (size_t i = 0; i < D; ++i)
      out.push_back((x.size(lead + int64_t(i)) - 1) * o.stride()[i] - 2 * o.padding()[i] + o.kernel_size()[i]);
  }
  int64_t plane = 1;
  for (int64_t v : out) {
    BRISK_CHECK(v > 0, op, "the output size must be positive");
    plane *= v;
  }
  std::vector<int64_t> flat_shape(x.sizes().begin(), x.sizes().begin() + lead), shape = flat_shape;
  flat_shape.push_back(-1);
  shape.insert(shape.end(), out.begin(), out.end());
  const Tensor idx = indices.reshape(flat_shape);
  if (idx.numel() > 0 && idx.is_cpu()) {
    const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    BRISK_CHECK(lo >= 0 && hi < plane, op, "index ", (hi >= plane ? hi : lo), " is out of range for an output of ",
                plane, " elements per plane");
  }
  std::vector<int64_t> zshape(x.sizes().begin(), x.sizes().begin() + lead);
  zshape.push_back(plane);
  return zeros(zshape, TensorOptions(x.dtype()).device(x.device())).scatter(lead, idx, x.reshape(flat_shape)).view(shape);
}

}  // namespace

namespace functional {
Tensor lp_pool1d(const Tensor& x, const LPPool1dFuncOptions& o) { return lp_pool<1>("lp_pool1d", x, o); }
Tensor lp_pool2d(const Tensor& x, const LPPool2dFuncOptions& o) { return lp_pool<2>("lp_pool2d", x, o); }
Tensor lp_pool3d(const Tensor& x, const LPPool3dFuncOptions& o) { return lp_pool<3>("lp_pool3d", x, o); }
Tensor max_unpool1d(const Tensor& x, const Tensor& indices, const MaxUnpool1dFuncOptions& o) {
  return max_unpool<1>("max_unpool1d", x, indices, o);
}
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, const MaxUnpool2dFuncOptions& o) {
  return max_unpool<2>("max_unpool2d", x, indices, o);
}
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, const MaxUnpool3dFuncOptions& o) {
  return max_unpool<3>("max_unpool3d", x, indices, o);
}
}  // namespace functional

namespace modules_detail {

template <size_t D>
LPPoolImpl<D>::LPPoolImpl(const LPPoolOptions<D>& o)
    : Module(D == 1 ? "LPPool1d" : D == 2 ? "LPPool2d" : "LPPool3d"), options(o) {}
template <size_t D>
Tensor LPPoolImpl<D>::forward(const Tensor& x) {
  if constexpr (D == 1) return F::lp_pool1d(x, options);
  else if constexpr (D == 2) return F::lp_pool2d(x, options);
  else return F::lp_pool3d(x, options);
}
template <size_t D>
std::string LPPoolImpl<D>::extra_repr() const {
  std::ostringstream os;
  os << "norm_type=" << options.norm_type() << ", kernel_size=" << options.kernel_size().str()
     << ", stride=" << options.stride().str() << ", ceil_mode=" << tf(options.ceil_mode());
  return os.str();
}

template <size_t D>
MaxUnpoolImpl<D>::MaxUnpoolImpl(const MaxUnpoolOptions<D>& o)
    : Module(D == 1 ? "MaxUnpool1d" : D == 2 ? "MaxUnpool2d" : "MaxUnpool3d"), options(o) {}
template <size_t D>
Tensor MaxUnpoolImpl<D>::forward(const Tensor& x, const Tensor& indices,
                                 const std::optional<std::vector<int64_t>>& output_size) {
  functional::MaxUnpoolFuncOptions<D> f(options.kernel_size());
  f.stride(options.stride()).padding(options.padding()).output_size(output_size);
  if constexpr (D == 1) return F::max_unpool1d(x, indices, f);
  else if constexpr (D == 2) return F::max_unpool2d(x, indices, f);
  else return F::max_unpool3d(x, indices, f);
}
template <size_t D>
std::string MaxUnpoolImpl<D>::extra_repr() const {
  return "kernel_size=" + options.kernel_size().str() + ", stride=" + options.stride().str() +
         ", padding=" + options.padding().str();
}

template class LPPoolImpl<1>;
template class LPPoolImpl<2>;
template class LPPoolImpl<3>;
template class MaxUnpoolImpl<1>;
template class MaxUnpoolImpl<2>;
template class MaxUnpoolImpl<3>;

}  // namespace modules_detail

}  // namespace brisk::nn
