// Factories: empty, zeros, ones, full, arange, linspace, eye, from_blob, *_like.
#include <cmath>

#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "core/profile_hooks.h"

namespace brisk {

namespace {
// Every factory's result starts at version 0, however it was filled (Note
// [Version counters]).
Tensor finish_factory(Tensor t, const TensorOptions& opts) {
  detail::mark_new_version(t);
  if (opts.requires_grad_) {
    BRISK_CHECK(t.is_floating_point(), "requires_grad", "only tensors of floating point dtype can require "
                "gradients, got ", t.dtype());
    t = t.to(opts.requires_grad(true));
  }
  return t;
}
}  // namespace

Tensor empty(IntArrayRef sizes, TensorOptions opts) {
  BRISK_PROFILE_OP("empty");
  Tensor t = detail::make_tensor(sizes, {}, opts.dtype_or_default(), opts.device_);
  // Not `c ? finish_factory(t, opts) : t`: the conditional copies t (a locked
  // increment and decrement of its refcount).
  if (BRISK_UNLIKELY(opts.requires_grad_)) return finish_factory(std::move(t), opts);
  return t;
}

Tensor empty(IntArrayRef sizes, TensorOptions opts, MemoryFormat fmt) {
  if (fmt == kChannelsLast) {
    BRISK_PROFILE_OP("empty");
    return finish_factory(
        detail::make_tensor(sizes, detail::channels_last_strides(sizes), opts.dtype_or_default(), opts.device_), opts);
  }
  return empty(sizes, opts);
}

Tensor empty_strided(IntArrayRef sizes, IntArrayRef strides, TensorOptions opts) {
  BRISK_PROFILE_OP("empty_strided");
  BRISK_CHECK(sizes.size() == strides.size(), "empty_strided", "sizes ", sizes, " and strides ", strides,
              " have different lengths");
  for (int64_t s : strides) BRISK_CHECK(s >= 0, "empty_strided", "negative stride ", s);
  return finish_factory(detail::make_tensor(sizes, strides, opts.dtype_or_default(), opts.device_), opts);
}

Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions opts) {
  BRISK_PROFILE_OP("full", value);
  if (!opts.dtype_) opts = opts.dtype(value.dtype());
  Tensor t = detail::make_tensor(sizes, {}, *opts.dtype_, opts.device_);
  const Scalar v = detail::fill_value("full", value, *opts.dtype_, t.numel() == 1 && t.is_cpu());
  t.fill_(v);
  return finish_factory(t, opts);
}
Tensor zeros(IntArrayRef sizes, TensorOptions opts) {
  BRISK_PROFILE_OP("zeros");
  return full(sizes, 0, opts.dtype(opts.dtype_or_default()));
}
Tensor ones(IntArrayRef sizes, TensorOptions opts) {
  BRISK_PROFILE_OP("ones");
  return full(sizes, 1, opts.dtype(opts.dtype_or_default()));
}

Tensor scalar_tensor(const Scalar& v, TensorOptions opts) {
  BRISK_PROFILE_OP("scalar_tensor", v);
  return full({}, v, opts);
}

namespace {
TensorOptions like_options(const Tensor& t, const std::optional<TensorOptions>& opts) {
  TensorOptions o = opts ? *opts : TensorOptions();
  if (!o.dtype_) o = o.dtype(t.dtype());
  if (!o.has_device_) o = o.device(t.device());  // zeros_like(cuda_x, kFloat) stays on the GPU (libtorch)
  return o;
}
}  // namespace

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> opts) {
  BRISK_PROFILE_OP("empty_like", t);
  TensorOptions o = like_options(t, opts);
  // Memory format preserve: t's strides when it is dense, else dense strides
  // in t's memory order (Note [Preserved strides]).
  return finish_factory(detail::make_tensor(t.sizes(), detail::preserved_strides(t), o.dtype_or_default(), o.device_),
                        o);
}
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> opts) {
  BRISK_PROFILE_OP("zeros_like", t);
  return detail::mark_new_version(empty_like(t, opts).zero_());
}
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> opts) {
  BRISK_PROFILE_OP("ones_like", t);
  return detail::mark_new_version(empty_like(t, opts).fill_(1));
}
Tensor full_like(const Tensor& t, const Scalar& v, std::optional<TensorOptions> opts) {
  BRISK_PROFILE_OP("full_like", t, v);
  Tensor r = empty_like(t, opts);
  return detail::mark_new_version(r.fill_(detail::fill_value("full_like", v, r.dtype(), r.numel() == 1 && r.is_cpu())));
}
Tensor rand_like(const Tensor& t, std::optional<TensorOptions> opts) {
  BRISK_PROFILE_OP("rand_like", t);
  return detail::mark_new_version(empty_like(t, opts).uniform_(0, 1));
}
Tensor randn_like(const Tensor& t, std::optional<TensorOptions> opts) {
  BRISK_PROFILE_OP("randn_like", t);
  return detail::mark_new_version(empty_like(t, opts).normal_(0, 1));
}

Tensor arange(const Scalar& end, TensorOptions opts) { return arange(0, end, 1, opts); }

// Note [Integer arange and linspace]
// For an integral dtype PyTorch (2.x; 1.13 differs in corner cases) counts
// the elements from the arguments as given, ceil((end - start) / step) in
// float64, but computes the values from start and step converted to int64
// (truncated toward zero): arange(-2.5, 2.5, 1, kInt32) is
// [-2, -1, 0, 1, 2], and a step that truncates to 0 repeats start
// (arange(0, 1, 0.3, kInt64) is [0, 0, 0, 0]; 1.13 raised "step must be
// nonzero" there). linspace converts start and end to the dtype first (an
// out-of-range end is an error), then interpolates in float64 and truncates.
// (PyTorch 2.x's integer linspace differs from that in a few elements whose
// exact value is an integer, e.g. linspace(-3, 7, 7) gives 1 where 2 is
// exact: its vectorized loop accumulates from a truncated base, and its int32
// and int64 results differ for the same arguments. brisk keeps the exact
// rule.)
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions opts) {
  BRISK_PROFILE_OP("arange", start, end, step);
  const bool all_int = !start.is_floating_point() && !end.is_floating_point() && !step.is_floating_point();
  const ScalarType dt = opts.dtype_ ? *opts.dtype_ : all_int ? kInt64 : default_dtype();
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  BRISK_CHECK(st != 0, "arange", "step must be nonzero");
  BRISK_CHECK(std::isfinite(s) && std::isfinite(e), "arange", "unsupported range: ", start, " -> ", end);
  BRISK_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "arange", "upper bound and larger bound inconsistent "
              "with step sign (start ", start, ", end ", end, ", step ", step, ")");
  int64_t n;
  if (all_int) {
    const int64_t a = start.to_long(), b = end.to_long(), c = step.to_long();
    n = c > 0 ? (b - a + c - 1) / c : (a - b + (-c) - 1) / (-c);
  } else {
    const double nd = std::ceil((e - s) / st);
    BRISK_CHECK(nd < 9.2e18, "arange", "the range ", start, " -> ", end, " with step ", step, " has too many elements");
    n = static_cast<int64_t>(nd);
  }
  // Integer values: int64 start + i * step (Note [Integer arange and linspace]).
  const bool int_values = all_int || is_integral(dt, false);
  if (int_values && !all_int)
    BRISK_CHECK(std::abs(s) < 9.2e18 && std::abs(st) < 9.2e18, "arange", "start ", start, " or step ", step,
                " does not fit in int64");
  const int64_t ia = int_values ? start.to_long() : 0, ic = int_values ? step.to_long() : 0;
  Tensor t = detail::make_tensor({n}, {}, dt, opts.device_);
  // the same values on every device (the CPU's backend/cpu/kernels/factories.cpp)
  kernel<OpId::arange>(t.device().type, "arange")(t, int_values, ia, ic, s, st);
  return finish_factory(t, opts);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions opts) {
  BRISK_PROFILE_OP("linspace", start, end);
  BRISK_CHECK(steps >= 0, "linspace", "number of steps must be non-negative, got ", steps);
  const ScalarType dt = opts.dtype_or_default();
  // The ends must fit the dtype (torch converts them with a check); integer
  // dtypes take them converted (Note [Integer arange and linspace]). torch
  // converts only what it uses: nothing for 0 steps, start for 1 step (and
  // then a 16-bit float start overflows to inf, torch 2.x).
  if (steps > 1 || (steps == 1 && !is_reduced_float(dt))) detail::check_scalar_fits("linspace", start, dt);
  if (steps > 1) detail::check_scalar_fits("linspace", end, dt);
  double a = start.to_double(), b = end.to_double();
  if (is_integral(dt, false) && steps > 0) {
    a = scalar_tensor(start, dt).item<double>();
    b = steps > 1 ? scalar_tensor(end, dt).item<double>() : a;
  }
  const double step = steps > 1 ? (b - a) / static_cast<double>(steps - 1) : 0.0;
  // Fill symmetrically from both ends, as PyTorch does, so the last value is exact.
  // steps == 1 gives [start] (torch.linspace), so a single step counts from the front.
  const int64_t half = steps == 1 ? 1 : steps / 2;
  Tensor t = detail::make_tensor({steps}, {}, dt, opts.device_);
  kernel<OpId::linspace>(t.device().type, "linspace")(t, a, b, step, half);
  return finish_factory(t, opts);
}

Tensor eye(int64_t n, TensorOptions opts) { return eye(n, n, opts); }
Tensor eye(int64_t n, int64_t m, TensorOptions opts) {
  BRISK_PROFILE_OP("eye");
  BRISK_CHECK(n >= 0 && m >= 0, "eye", "n and m must be non-negative, got ", n, " and ", m);
  Tensor t = zeros({n, m}, opts.requires_grad(false));
  t.diagonal().fill_(1);
  return finish_factory(t, opts);
}

namespace {
Tensor wrap_blob(void* data, IntArrayRef sizes, IntArrayRef strides, StorageImpl::Deleter del, void* ctx,
                 TensorOptions opts) {
  BRISK_CHECK(data != nullptr || multiply(sizes) == 0, "from_blob", "data pointer is null");
  detail::check_device_available(opts.device_, "from_blob");
  for (int64_t s : sizes) BRISK_CHECK(s >= 0, "from_blob", "negative dimension ", s, " in shape ", sizes);
  for (int64_t s : strides) BRISK_CHECK(s >= 0, "from_blob", "negative stride ", s);
  // Nothing below throws until both objects are owned.
  auto* st = new StorageImpl();
  auto* impl = new TensorImpl();
  impl->sizes.assign(sizes.begin(), sizes.end());
  impl->strides = strides.empty() ? detail::contiguous_strides(sizes) : DimVector(strides.begin(), strides.end());
  impl->dtype = opts.dtype_or_default();
  impl->device = opts.device_;
  impl->refresh();
  int64_t extent = impl->numel == 0 ? 0 : 1;
  if (impl->numel > 0)
    for (size_t i = 0; i < sizes.size(); ++i) extent += (sizes[i] - 1) * impl->strides[i];
  st->data = data;
  st->nbytes = static_cast<size_t>(extent) * element_size(impl->dtype);
  st->device = opts.device_;
  st->deleter = del;
  st->deleter_ctx = ctx;
  impl->storage = Ref<StorageImpl>::adopt(st);
  return finish_factory(Tensor(Ref<TensorImpl>::adopt(impl)), opts);
}
}  // namespace

Tensor from_blob(void* data, IntArrayRef sizes, TensorOptions opts) {
  BRISK_PROFILE_OP("from_blob");
  return wrap_blob(data, sizes, {}, nullptr, nullptr, opts);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, TensorOptions opts) {
  BRISK_PROFILE_OP("from_blob");
  BRISK_CHECK(sizes.size() == strides.size(), "from_blob", "sizes ", sizes, " and strides ", strides,
              " have different lengths");
  return wrap_blob(data, sizes, strides, nullptr, nullptr, opts);
}
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, TensorOptions opts) {
  BRISK_PROFILE_OP("from_blob");
  auto* ctx = new std::function<void(void*)>(std::move(deleter));
  return wrap_blob(
      data, sizes, {},
      [](void* c, void* d) {
        auto* f = static_cast<std::function<void(void*)>*>(c);
        if (*f) (*f)(d);
        delete f;
      },
      ctx, opts);
}

// ---- tensor(nested braces) --------------------------------------------------------------
namespace {
struct NestedScan {
  DimVector shape;
  bool any_double = false, any_float = false, any_int = false;
  std::vector<Scalar> values;
};
// The shape is read along the first element of each level; every other
// element must match it (else "ragged"). Scalars are appended in row-major order.
void scan_nested(const detail::TensorData& d, size_t depth, NestedScan& s) {
  if (depth == s.shape.size()) {
    BRISK_CHECK(d.is_scalar(), "tensor", "ragged nested list: a list at nesting depth ", depth,
                " where the first element has a scalar");
    const Scalar& v = d.scalar();
    if (v.is_floating_point())
      (d.is_float_literal() ? s.any_float : s.any_double) = true;
    else if (v.is_integral(false))
      s.any_int = true;
    s.values.push_back(v);
    return;
  }
  BRISK_CHECK(!d.is_scalar(), "tensor", "ragged nested list: a scalar at nesting depth ", depth,
              " where the first element has a list of length ", s.shape[depth]);
  const int64_t n = static_cast<int64_t>(d.items().size());
  BRISK_CHECK(n == s.shape[depth], "tensor", "ragged nested list: a list of length ", n, " at nesting depth ", depth,
              " where the first has length ", s.shape[depth]);
  for (const detail::TensorData& item : d.items()) scan_nested(item, depth + 1, s);
}
}  // namespace

Tensor tensor(const detail::TensorData& data, TensorOptions opts) {
  BRISK_PROFILE_OP("tensor");
  NestedScan s;
  for (const detail::TensorData* d = &data; !d->is_scalar();) {
    s.shape.push_back(static_cast<int64_t>(d->items().size()));
    if (d->items().empty()) break;
    d = &d->items()[0];
  }
  scan_nested(data, 0, s);
  const ScalarType natural = s.any_double ? default_dtype() : s.any_float ? kFloat : s.any_int ? kInt64 : kBool;
  const ScalarType want = opts.dtype_ ? *opts.dtype_ : (s.values.empty() ? default_dtype() : natural);
  // Gathered exactly (int64 for integers and bools, float64 otherwise), then converted once.
  const bool as_double = s.any_double || s.any_float;
  Tensor host = detail::make_tensor(s.shape, {}, as_double ? kDouble : kInt64, Device(kCPU));
  if (as_double) {
    double* p = host.data_ptr<double>();
    for (size_t i = 0; i < s.values.size(); ++i) p[i] = s.values[i].to_double();
  } else {
    int64_t* p = host.data_ptr<int64_t>();
    for (size_t i = 0; i < s.values.size(); ++i) p[i] = s.values[i].to_long();
  }
  Tensor r = host.to(TensorOptions(want).device(opts.device_));
  return finish_factory(std::move(r), opts);
}

}  // namespace brisk
