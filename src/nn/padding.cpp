// functional::pad and the padding modules (include/brisk/nn/padding.h).
// Reflect, replicate and circular padding gather each padded dim with
// index_select (one index vector per dim), so autograd gives the gradient
// (index_select's backward sums the copies back).
#include "core/autocast.h"
#include "brisk/nn/padding.h"

#include <sstream>

#include "brisk/ops.h"

namespace brisk::nn {

const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}

namespace functional {

namespace {

Tensor gather_dim(const Tensor& x, int64_t dim, int64_t before, int64_t after, PadMode mode) {
  const int64_t n = x.size(dim);
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(n + before + after));
  for (int64_t i = -before; i < n + after; ++i) {
    int64_t j = i;
    if (mode == PadMode::Reflect) {
      if (j < 0) j = -j;
      if (j >= n) j = 2 * (n - 1) - j;
    } else if (mode == PadMode::Replicate) {
      j = j < 0 ? 0 : (j >= n ? n - 1 : j);
    } else {  // circular
      j = ((j % n) + n) % n;
    }
    idx.push_back(j);
  }
  return x.index_select(dim, tensor(idx, TensorOptions(kInt64).device(x.device())));
}

}  // namespace

Tensor pad(const Tensor& x, const PadFuncOptions& o) {
  if (o.mode() == PadMode::Reflect)
    BRISK_AUTOCAST(reflection_pad, pad, x, o);
  else if (o.mode() == PadMode::Replicate)
    BRISK_AUTOCAST(replication_pad, pad, x, o);
  const char* op = "pad";
  const std::vector<int64_t>& p = o.pad();
  BRISK_CHECK(x.defined(), op, "input must be defined");
  BRISK_CHECK(p.size() % 2 == 0, op, "the pad list must have an even length, got ", p.size());
  const int64_t k = static_cast<int64_t>(p.size()) / 2;
  BRISK_CHECK(k <= x.dim(), op, "the pad list (", p.size(), " values) pads more dims than the input has (shape ",
              x.sizes(), ")");
  if (o.mode() == PadMode::Constant) {
    // negative amounts crop first; brisk::pad adds the rest
    Tensor y = x;
    std::vector<int64_t> rest(p.size());
    for (int64_t i = 0; i < k; ++i) {
      const int64_t dim = x.dim() - 1 - i;
      int64_t b = p[2 * i], a = p[2 * i + 1];
      if (b < 0 || a < 0) {
        const int64_t cb = b < 0 ? -b : 0, ca = a < 0 ? -a : 0;
        BRISK_CHECK(cb + ca <= y.size(dim), op, "negative padding (", b, ", ", a, ") crops more than dim ", dim,
                    " of size ", y.size(dim));
        y = y.narrow(dim, cb, y.size(dim) - cb - ca);
      }
      rest[2 * i] = b > 0 ? b : 0;
      rest[2 * i + 1] = a > 0 ? a : 0;
    }
    return brisk::pad(y, rest, o.value());
  }
  const char* mode = pad_mode_name(o.mode());
  BRISK_CHECK(k >= 1 && k <= 3, op, mode, " padding pads the last 1, 2 or 3 dims, got a pad list of ", p.size(),
              " values");
  BRISK_CHECK(x.dim() == k + 1 || x.dim() == k + 2, op, mode, " padding of ", k, " dims expects a ", k + 1,
              "-D or ", k + 2, "-D input, got shape ", x.sizes());
  Tensor y = x;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t dim = x.dim() - 1 - i;
    const int64_t b = p[2 * i], a = p[2 * i + 1], n = x.size(dim);
    BRISK_CHECK(b >= 0 && a >= 0, op, mode, " padding must be non-negative, got (", b, ", ", a, ")");
    if (b == 0 && a == 0) continue;
    if (o.mode() == PadMode::Reflect)
      BRISK_CHECK(b < n && a < n, op, "reflect padding (", b, ", ", a, ") must be smaller than the size ", n,
                  " of dim ", dim);
    else if (o.mode() == PadMode::Replicate)
      BRISK_CHECK(n > 0, op, "replicate padding of an empty dim ", dim);
    else
      BRISK_CHECK(b <= n && a <= n, op, "circular padding (", b, ", ", a, ") must be at most the size ", n,
                  " of dim ", dim);
    y = gather_dim(y, dim, b, a, o.mode());
  }
  return y;
}

}  // namespace functional

namespace modules_detail {

namespace {
template <size_t N>
std::string tuple_of(const ExpandingInts<N>& v) {
  std::string s = "(";
  for (size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}
const char* module_name(size_t d, PadMode m, bool zero) {
  static const char* names[4][3] = {{"ConstantPad1d", "ConstantPad2d", "ConstantPad3d"},
                                    {"ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d"},
                                    {"ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d"},
                                    {"CircularPad1d", "CircularPad2d", "CircularPad3d"}};
  static const char* zeros[3] = {"ZeroPad1d", "ZeroPad2d", "ZeroPad3d"};
  return zero ? zeros[d - 1] : names[static_cast<int>(m)][d - 1];
}
template <class Options>
constexpr bool is_zero_pad = requires(const Options& o) { o.padding(); } && !requires(const Options& o) { o.value(); };
}  // namespace

template <size_t D, PadMode M, class Options>
PadImpl<D, M, Options>::PadImpl(const Options& o)
    : Module(module_name(D, M, M == PadMode::Constant && is_zero_pad<Options>)), options(o) {
  const auto& p = o.padding();
  BRISK_CHECK(p.given() == 1 || p.given() == int(2 * D), name().c_str(), "padding must be one integer or ", 2 * D,
              " integers, got ", p.given());
  if constexpr (M != PadMode::Constant)
    for (size_t i = 0; i < 2 * D; ++i)
      BRISK_CHECK(p[i] >= 0, name().c_str(), "padding must be non-negative, got ", tuple_of(p));
}

template <size_t D, PadMode M, class Options>
Tensor PadImpl<D, M, Options>::forward(const Tensor& x) {
  BRISK_CHECK(x.defined() && (x.dim() == int64_t(D) + 1 || x.dim() == int64_t(D) + 2), name().c_str(),
              "expected a ", D + 1, "-D or ", D + 2, "-D input, got shape ",
              x.defined() ? x.sizes() : IntArrayRef{});
  const auto& v = options.padding().values();
  functional::PadFuncOptions f(std::vector<int64_t>(v.begin(), v.end()));
  f.mode(M);
  if constexpr (requires { options.value(); }) f.value(options.value());
  return functional::pad(x, f);
}

template <size_t D, PadMode M, class Options>
std::string PadImpl<D, M, Options>::extra_repr() const {
  if constexpr (requires { options.value(); }) {
    std::ostringstream os;
    os << "padding=" << tuple_of(options.padding()) << ", value=" << options.value();
    return os.str();
  } else {
    return tuple_of(options.padding());
  }
}

template class PadImpl<1, PadMode::Reflect, ReflectionPad1dOptions>;
template class PadImpl<2, PadMode::Reflect, ReflectionPad2dOptions>;
template class PadImpl<3, PadMode::Reflect, ReflectionPad3dOptions>;
template class PadImpl<1, PadMode::Replicate, ReplicationPad1dOptions>;
template class PadImpl<2, PadMode::Replicate, ReplicationPad2dOptions>;
template class PadImpl<3, PadMode::Replicate, ReplicationPad3dOptions>;
template class PadImpl<1, PadMode::Constant, ZeroPad1dOptions>;
template class PadImpl<2, PadMode::Constant, ZeroPad2dOptions>;
template class PadImpl<3, PadMode::Constant, ZeroPad3dOptions>;
template class PadImpl<1, PadMode::Constant, ConstantPad1dOptions>;
template class PadImpl<2, PadMode::Constant, ConstantPad2dOptions>;
template class PadImpl<3, PadMode::Constant, ConstantPad3dOptions>;

}  // namespace modules_detail

}  // namespace brisk::nn
