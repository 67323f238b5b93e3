// Conversions and copies: to, contiguous, clone, copy_, fill_, item, equal.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>

#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/autograd_meta.h"
#include "core/device_backend.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "profiler/record.h"

namespace brisk {

namespace detail {
bool non_overlapping_and_dense(const Tensor& t) {
  SmallVec<8> order;  // dims of size > 1, innermost (smallest stride) first
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1) order.push_back(d);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.stride(a) < t.stride(b); });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

// Note [Preserved strides]
// A fresh tensor "like" t (empty_like and the other *_like factories, clone,
// to(dtype), all with memory format preserve) gets, as in PyTorch:
// - t's own strides when t is non-overlapping and dense (a transpose stays a
//   transpose, channels_last stays channels_last);
// - otherwise dense strides in t's memory order: its dims ranked by stride
//   (innermost = smallest), as an elementwise op's output is. A dim of stride
//   0 (expanded) is ranked nowhere: it keeps its place in the natural order.
//   So a channels_last tensor sliced along H stays channels_last, and a
//   sliced contiguous tensor becomes contiguous.
DimVector preserved_strides(const Tensor& t) {
  const int64_t nd = t.dim();
  // (is_contiguous() holds for any tensor without elements: PyTorch keeps
  // such a tensor's strides too, 0 strides included)
  if (t.is_contiguous() || non_overlapping_and_dense(t))
    return DimVector(t.strides().begin(), t.strides().end());
  // rank[0] is the innermost dim. Start from the natural order (last dim
  // innermost) and insert each dim inward past the dims it must precede:
  // a dim with a larger stride, or an equal stride and a larger size, goes
  // outward; a 0 stride on either side decides nothing, and the scan goes on
  // past it.
  std::vector<int64_t> rank(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) rank[static_cast<size_t>(i)] = nd - 1 - i;
  auto outer = [&](int64_t a, int64_t b) {  // +1: a belongs outside b; -1: inside; 0: undecided
    const int64_t sa = t.stride(a), sb = t.stride(b);
    if (sa == 0 || sb == 0) return 0;
    if (sa != sb) return sa > sb ? 1 : -1;
    return t.size(a) > t.size(b) ? 1 : 0;
  };
  for (int64_t i = 1; i < nd; ++i) {
    int64_t pos = i;  // where the dim being placed currently sits
    for (int64_t j = i - 1; j >= 0; --j) {
      const int c = outer(rank[static_cast<size_t>(j)], rank[static_cast<size_t>(pos)]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(rank[static_cast<size_t>(j)], rank[static_cast<size_t>(pos)]);
        pos = j;
      }
    }
  }
  DimVector out(nd);
  int64_t acc = 1;
  for (int64_t d : rank) {
    out[d] = acc;
    acc *= std::max<int64_t>(t.size(d), 1);
  }
  return out;
}
}  // namespace detail

bool Tensor::is_contiguous(MemoryFormat fmt) const {
  if (fmt != kChannelsLast) return is_contiguous();
  if (dim() != 4) return false;
  // order from innermost: C, W, H, N
  const int64_t order[4] = {1, 3, 2, 0};
  int64_t expected = 1;
  for (int64_t d : order) {
    if (size(d) == 1) continue;
    if (stride(d) != expected) return false;
    expected *= size(d);
  }
  return true;
}

namespace {
// Note [Copies between devices]
// The bytes cross between devices as one dense block of the destination's
// dtype: the source is cast and made dense on its own device first (a
// kernel there), the block moves with one copy_bytes, and a destination that
// is not dense receives it through a temporary and a copy kernel on its
// device. Device-to-host copies are synchronising calls. A host-to-device
// copy is non-blocking only from pinned memory; from pageable memory the
// driver stages it and the call returns when the copy is done, as in PyTorch.
const char* copy_detail(const Device& src, const Device& dst, bool non_blocking, bool pinned) {
  if (src.is_cpu() && !dst.is_cpu()) {
    if (non_blocking) return pinned ? "cpu->cuda non_blocking pinned" : "cpu->cuda non_blocking";
    return pinned ? "cpu->cuda pinned" : "cpu->cuda";
  }
  if (!src.is_cpu() && dst.is_cpu()) {
    if (non_blocking) return pinned ? "cuda->cpu non_blocking pinned" : "cuda->cpu non_blocking";
    return pinned ? "cuda->cpu pinned" : "cuda->cpu";
  }
  return non_blocking ? "cuda->cuda non_blocking" : "cuda->cuda";
}

bool is_dense_contiguous(const Tensor& t) { return t.is_contiguous(); }

void copy_across_devices(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const Device dd = dst.device(), sd = src.device();
  detail::DeviceBackend* b = detail::device_backend(dd.is_cpu() ? sd.type : dd.type);
  (void)detail::resolve_device(dd.is_cpu() ? sd : dd, "copy_");
  if (!sd.is_cpu() && dd.is_cpu()) detail::sync_point("to", src);
  // The source as one dense block of the destination's dtype, on its device.
  Tensor s = src;
  if (s.dtype() != dst.dtype() || !is_dense_contiguous(s)) {
    Tensor t = detail::make_tensor(s.sizes(), {}, dst.dtype(), sd);
    t.copy_(s);
    s = t;
  }
  const bool pinned = (sd.is_cpu() && b->is_pinned(s.data_ptr())) || (dd.is_cpu() && b->is_pinned(dst.data_ptr()));
  auto ev = profiler::detail::ScopedEvent::lazy(
      profiler::EventKind::Copy,
      [&] { return std::string(sd.is_cpu() ? "Memcpy HtoD" : dd.is_cpu() ? "Memcpy DtoH" : "Memcpy DtoD"); },
      [&] { return copy_detail(sd, dd, non_blocking, pinned); });
  if (is_dense_contiguous(dst)) {
    b->copy_bytes(dst.data_ptr(), dd, s.data_ptr(), sd, s.nbytes(), non_blocking && pinned);
    return;
  }
  Tensor t = detail::make_tensor(dst.sizes(), {}, dst.dtype(), dd);
  b->copy_bytes(t.data_ptr(), dd, s.data_ptr(), sd, s.nbytes(), non_blocking && pinned);
  Tensor(dst).copy_(t);
}
}  // namespace

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const {
  BRISK_PROFILE_OP("copy_", *this, src);
  BRISK_CHECK(src.defined(), "copy_", "source tensor is undefined");
  // x.copy_(x) and copies into empty tensors move no data but are still
  // in-place ops: a leaf that requires grad refuses them and the version
  // counter moves (PyTorch: a saved empty tensor that was copied into fails
  // at backward).
  autograd::check_inplace(*this, "copy_");
  if (is_same(src)) {
    bump_version();
    return const_cast<Tensor&>(*this);
  }
  const bool rec = autograd::should_record(*this, src);
  std::optional<NoGradGuard> no_grad;
  if (rec) no_grad.emplace();
  Tensor s = src;
  if (!(s.sizes() == sizes())) {
    DimVector shape = broadcast_shapes(sizes(), s.sizes(), "copy_");
    BRISK_CHECK(IntArrayRef(shape) == sizes(), "copy_", "source of shape ", src.sizes(),
                " cannot be broadcast to the destination shape ", sizes());
    s = s.expand(sizes());
  }
  if (numel() == 0) {
    // nothing to move
  } else if (BRISK_UNLIKELY(s.device().type != device().type ||
                            (!is_cpu() && s.device().index != device().index))) {
    check_no_internal_overlap("copy_", *this);
    copy_across_devices(*this, s, non_blocking);
  } else {
    TensorIter it;
    IterBuilder("copy_").output(*this).input(s).no_cast_inputs().build(it);
    kernel<OpId::copy>(device().type, "copy_")(it, KernelArgs{});
  }
  bump_version();
  if (BRISK_UNLIKELY(rec)) {
    no_grad.reset();
    // The old value is overwritten: its gradient is zeros, materialized as
    // in PyTorch (so a 0 * inf further down is NaN in both); src gets the
    // gradient, summed over broadcast dims and cast back by the engine.
    autograd::record_inplace("CopyBackwards", *this, {*this, src}, {}, [](autograd::BackwardCtx& c) -> TensorList {
      return {c.needs(0) ? zeros_like(c.grad()) : Tensor(), c.needs(1) ? c.grad() : Tensor()};
    });
  }
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::fill_(const Scalar& v) const {
  BRISK_PROFILE_OP("fill_", *this, v);
  const Scalar val = detail::fill_value("fill_", v, dtype(), numel() == 1 && is_cpu());
  // An empty tensor is still checked and its version moves (see copy_).
  autograd::check_inplace(*this, "fill_");
  if (numel() > 0) {
    // Overlapping memory (an expanded tensor) is allowed: every element
    // gets the same value, in any order (PyTorch).
    TensorIter it;
    IterBuilder("fill_").output(*this).compute_dtype(dtype()).allow_overlap().build(it);
    KernelArgs a;
    a.s0 = val;
    kernel<OpId::fill>(device().type, "fill_")(it, a);
  }
  bump_version();
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    autograd::record_inplace("FillBackward0", *this, {*this}, {}, [](autograd::BackwardCtx& c) -> TensorList {
      return {c.needs(0) ? zeros_like(c.grad()) : Tensor()};  // materialized, as in PyTorch (see copy_)
    });
  return const_cast<Tensor&>(*this);
}
Tensor& Tensor::zero_() const {
  BRISK_PROFILE_OP("zero_", *this);
  return fill_(0);
}

namespace {
// `to_host`: the caller asked for the CPU explicitly (to(kCPU), cpu()): on a
// GPU that is a device-to-host copy, a synchronizing call.
Tensor to_impl(const Tensor& self, TensorOptions o, bool non_blocking, bool copy, bool to_host) {
  BRISK_PROFILE_OP("to", self);
  // A tensor on a GPU passes the sync point in copy_ (Note [Copies between devices]).
  if (to_host && self.is_cpu()) detail::sync_point("to", self);
  Tensor r = self;
  const ScalarType dt = o.dtype_ ? *o.dtype_ : self.dtype();
  if (dt != self.dtype() || o.device_ != self.device() || copy) {
    detail::check_device_available(o.device_, "to");
    r = detail::make_tensor(self.sizes(), detail::preserved_strides(self), dt, o.device_);
    {
      AutoGradMode no_grad(false);
      r.copy_(self, non_blocking);
    }
    detail::mark_new_version(r);
    if (BRISK_UNLIKELY(autograd::should_record(self)) && r.is_floating_point())
      autograd::record("ToCopyBackward0", {r}, {self}, {}, [](autograd::BackwardCtx& c) -> TensorList {
        return {c.grad()};  // the engine casts it back to the input's dtype
      });
  }
  if (o.requires_grad_) r.requires_grad_(true);
  return r;
}
}  // namespace

// (`x.grad().to(...)` of a tensor without a gradient must raise, not crash.)
#define BRISK_TO_CHECK_DEFINED() BRISK_CHECK(defined(), "to", "called on an undefined tensor")
Tensor Tensor::to(TensorOptions o, bool nb, bool copy) const {
  BRISK_TO_CHECK_DEFINED();
  return to_impl(*this, o, nb, copy, false);
}
Tensor Tensor::to(ScalarType t, bool nb, bool copy) const {
  BRISK_TO_CHECK_DEFINED();
  return to_impl(*this, TensorOptions(t).device(device()), nb, copy, false);
}
Tensor Tensor::to(Device d, bool nb, bool copy) const {
  BRISK_TO_CHECK_DEFINED();
  return to_impl(*this, TensorOptions(dtype()).device(d), nb, copy, d.is_cpu());
}
Tensor Tensor::to(Device d, ScalarType t, bool nb, bool copy) const {
  BRISK_TO_CHECK_DEFINED();
  return to_impl(*this, TensorOptions(t).device(d), nb, copy, d.is_cpu());
}
Tensor Tensor::to(const Tensor& other, bool nb, bool copy) const {
  BRISK_TO_CHECK_DEFINED();
  BRISK_CHECK(other.defined(), "to", "the tensor whose dtype and device to take is undefined");
  return to_impl(*this, TensorOptions(other.dtype()).device(other.device()), nb, copy, other.is_cpu());
}
Tensor Tensor::to(MemoryFormat fmt) const {
  BRISK_TO_CHECK_DEFINED();
  return contiguous(fmt);
}
#undef BRISK_TO_CHECK_DEFINED

Tensor Tensor::contiguous(MemoryFormat fmt) const {
  if (fmt == kPreserve) return *this;
  if (is_contiguous(fmt)) return *this;
  BRISK_PROFILE_OP("contiguous", *this);
  return clone(fmt);
}

Tensor Tensor::clone(MemoryFormat fmt) const {
  BRISK_PROFILE_OP("clone", *this);
  DimVector strides;
  if (fmt == kChannelsLast)
    strides = detail::channels_last_strides(sizes());
  else if (fmt == kPreserve)
    strides = detail::preserved_strides(*this);
  else
    strides = detail::contiguous_strides(sizes());
  Tensor r = detail::make_tensor(sizes(), strides, dtype(), device());
  {
    AutoGradMode no_grad(false);
    r.copy_(*this);
  }
  detail::mark_new_version(r);
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    autograd::record("CloneBackward0", {r}, {*this}, {},
                     [](autograd::BackwardCtx& c) -> TensorList { return {c.grad()}; });
  return r;
}

namespace detail {
Tensor to_host_after_sync_point(const Tensor& t) {
  if (t.is_cpu()) return t;
  Tensor s = t.is_contiguous() ? t : t.contiguous();
  Tensor r = make_tensor(t.sizes(), {}, t.dtype(), Device(kCPU));
  if (r.numel() > 0)
    device_backend(t.device().type)->copy_bytes(r.data_ptr(), Device(kCPU), s.data_ptr(), s.device(), s.nbytes(), false);
  return r;
}
}  // namespace detail

Tensor Tensor::pin_memory() const {
  BRISK_PROFILE_OP("pin_memory", *this);
  BRISK_CHECK(is_cpu(), "pin_memory", "only CPU tensors can be pinned, got a tensor on ", device());
  if (is_pinned()) return *this;
  detail::DeviceBackend* b = detail::device_backend(kCUDA);
  (void)detail::resolve_device(Device(kCUDA), "pin_memory");
  Tensor r = detail::make_tensor(sizes(), detail::preserved_strides(*this), dtype(), device());
  // Re-home the fresh tensor's storage in pinned memory.
  StorageImpl* st = r.impl()->storage.get();
  st->allocator->free(st->data, st->nbytes);
  st->data = nullptr;
  st->allocator = nullptr;
  Allocator* pinned = b->host_allocator();
  st->data = pinned->allocate(st->nbytes);
  st->allocator = pinned;
  {
    AutoGradMode no_grad(false);
    r.copy_(*this);
  }
  detail::mark_new_version(r);
  if (BRISK_UNLIKELY(autograd::should_record(*this)))
    autograd::record("PinMemoryBackward0", {r}, {*this}, {},
                     [](autograd::BackwardCtx& c) -> TensorList { return {c.grad()}; });
  return r;
}

bool Tensor::is_pinned() const {
  if (!is_cpu() || !defined()) return false;
  detail::DeviceBackend* b = detail::device_backend(kCUDA);
  return b != nullptr && impl()->storage->data != nullptr && b->is_pinned(impl()->storage->data);
}

Scalar Tensor::item() const {
  BRISK_PROFILE_OP("item", *this);
  detail::sync_point("item", *this);
  BRISK_CHECK(numel() == 1, "item", "a Tensor with ", numel(), " elements cannot be converted to a Scalar");
  Tensor c = is_cpu() ? *this : detail::to_host_after_sync_point(*this);
  return BRISK_DISPATCH_ALL(dtype(), "item", [&]() -> Scalar {
    scalar_t v = *static_cast<const scalar_t*>(c.data_ptr());
    if constexpr (std::is_same_v<scalar_t, bool>)
      return Scalar(v);
    else if constexpr (std::is_floating_point_v<opmath_t<scalar_t>>)
      return Scalar(static_cast<double>(static_cast<opmath_t<scalar_t>>(v)));
    else
      return Scalar(static_cast<int64_t>(v));
  });
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  BRISK_PROFILE_OP("isclose", a, b);
  BRISK_CHECK(a.dtype() == b.dtype(), "isclose", "expected both tensors to have the same dtype, got ", a.dtype(),
              " and ", b.dtype());
  BRISK_CHECK(rtol >= 0, "isclose", "rtol must be greater than or equal to zero, got ", rtol);
  BRISK_CHECK(atol >= 0, "isclose", "atol must be greater than or equal to zero, got ", atol);
  if (!is_floating_point(a.dtype())) {
    // As PyTorch: integers and bools are compared exactly when both
    // tolerances are 0, else as the default float dtype (so int64 values
    // 2^40 + 1 and 2^40 are close under any tolerance in float32).
    if (rtol == 0 && atol == 0) return eq(a, b);
    const ScalarType f = default_dtype();
    return isclose(a.to(f), b.to(f), rtol, atol, equal_nan);
  }
  TensorIter it;
  IterBuilder("isclose").input(a).input(b).output_dtype(kBool).build(it);
  KernelArgs k;
  k.s0 = rtol;
  k.s1 = atol;
  k.mode = equal_nan;
  kernel<OpId::isclose>(it.result.device().type, "isclose")(it, k);
  return it.result;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  BRISK_PROFILE_OP("allclose", a, b);
  return isclose(a, b, rtol, atol, equal_nan).all().item<bool>();
}
bool Tensor::allclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return brisk::allclose(*this, o, rtol, atol, equal_nan);
}

bool equal(const Tensor& a, const Tensor& b) {
  BRISK_PROFILE_OP("equal", a, b);
  if (!(a.sizes() == b.sizes())) return false;
  if (a.numel() == 0) return true;
  return a.eq(b).all().item<bool>();
}
bool Tensor::equal(const Tensor& o) const { return brisk::equal(*this, o); }

}  // namespace brisk

namespace brisk {

const Tensor& Tensor::resize_(IntArrayRef new_sizes) const {
  BRISK_PROFILE_OP("resize_", *this);
  BRISK_CHECK(defined(), "resize_", "called on an undefined tensor");
  for (int64_t s : new_sizes) BRISK_CHECK(s >= 0, "resize_", "negative dimension ", s, " in shape ", new_sizes);
  if (sizes() == new_sizes) return const_cast<Tensor&>(*this);  // PyTorch: nothing changes, the version stays
  BRISK_CHECK(!requires_grad(), "resize_", "cannot resize tensors that require grad (",
              is_leaf() ? "a leaf" : "the result of an op or a view of one", "): resize a detach()ed tensor");
  const DimVector strides = detail::contiguous_strides(new_sizes);
  int64_t n = 1;
  for (int64_t s : new_sizes)
    BRISK_CHECK(!__builtin_mul_overflow(n, s, &n), "resize_", "shape ", new_sizes, " is too large");
  const size_t need = static_cast<size_t>(n == 0 ? 0 : storage_offset() + n) * element_size();
  StorageImpl* st = impl_->storage.get();
  if (need > st->nbytes) {
    BRISK_CHECK(st->allocator != nullptr, "resize_", "Trying to resize storage that is not resizable: the memory ",
                "is not brisk's (from_blob) and holds ", st->nbytes, " bytes, ", need, " needed");
    void* fresh = st->allocator->allocate(need);
    if (st->nbytes > 0) {
      if (st->device.is_cpu())
        std::memcpy(fresh, st->data, st->nbytes);
      else
        detail::device_backend(st->device.type)->copy_bytes(fresh, st->device, st->data, st->device, st->nbytes, false);
    }
    st->allocator->free(st->data, st->nbytes);
    st->data = fresh;
    st->nbytes = need;
  }
  impl_->sizes.assign(new_sizes.begin(), new_sizes.end());
  impl_->strides = strides;
  impl_->refresh();
  bump_version();
  return const_cast<Tensor&>(*this);
}

}  // namespace brisk
