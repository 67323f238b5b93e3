#include "brisk/tensor_impl.h"

#include <new>

#include "brisk/ops.h"
#include "core/autograd_meta.h"
#include "core/device_backend.h"
#include "core/tensor_create.h"

namespace brisk {

namespace {
// A per-thread stack of freed objects of one size. Objects freed on another
// thread join that thread's stack; beyond kDepth they go back to malloc.
//
// The stacks are trivially destructible, so they stay usable while the
// thread's other thread_local and static objects are destroyed: a Tensor held
// by one of those may be freed after the stacks were drained. A separate guard
// object drains them at thread exit and closes them, after which freed objects
// go straight back to malloc (see Note [Free lists at thread exit]).
template <size_t Size>
struct FreeList {
  static constexpr int kDepth = 1024;
  void* items[kDepth];
  int count;
  bool closed;
  bool guarded;  // the thread's guard is registered
  void* take() { return count > 0 ? items[--count] : ::operator new(Size); }
  void give(void* p);
  void drain() {
    while (count > 0) ::operator delete(items[--count]);
    closed = true;
  }
};
constinit thread_local FreeList<sizeof(TensorImpl)> t_tensor_impls BRISK_TLS_FAST{};
constinit thread_local FreeList<sizeof(StorageImpl)> t_storage_impls BRISK_TLS_FAST{};

// Note [Free lists at thread exit]: the guard is constructed on the first
// give() of a thread, which registers its destructor with that thread's exit.
struct FreeListGuard {
  FreeListGuard() = default;
  ~FreeListGuard() {
    t_tensor_impls.drain();
    t_storage_impls.drain();
  }
};
thread_local FreeListGuard t_guard;

template <size_t Size>
void FreeList<Size>::give(void* p) {
  if (BRISK_UNLIKELY(!guarded)) {
    guarded = true;
    (void)&t_guard;  // odr-use: constructs (registers) the guard once per thread
  }
  if (count < kDepth && !closed)
    items[count++] = p;
  else
    ::operator delete(p);
}

// The factories below take their objects from the free lists directly: a
// call of the exported operator new from inside the library goes through the
// PLT (it could be interposed).
inline TensorImpl* new_tensor_impl() { return ::new (t_tensor_impls.take()) TensorImpl; }
inline StorageImpl* new_storage_impl() { return ::new (t_storage_impls.take()) StorageImpl; }
}  // namespace

void* TensorImpl::operator new(size_t n) {
  BRISK_ASSERT(n == sizeof(TensorImpl));
  return t_tensor_impls.take();
}
void TensorImpl::operator delete(void* p) { t_tensor_impls.give(p); }
void* StorageImpl::operator new(size_t n) {
  BRISK_ASSERT(n == sizeof(StorageImpl));
  return t_storage_impls.take();
}
void StorageImpl::operator delete(void* p) { t_storage_impls.give(p); }

StorageImpl::~StorageImpl() {
  if (allocator)
    allocator->free(data, nbytes);
  else if (deleter)
    deleter(deleter_ctx, data);
}

TensorImpl::~TensorImpl() { delete autograd; }

int64_t Tensor::size(int64_t d) const { return impl_->sizes[detail::wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides[detail::wrap_dim(d, dim(), "stride")]; }

namespace detail {

DimVector contiguous_strides(IntArrayRef sizes) {
  DimVector s(sizes.size());
  int64_t acc = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    s[i] = acc;
    // A size-0 dim makes numel 0 but the strides still multiply the other
    // sizes: refuse shapes whose strides do not fit in int64.
    BRISK_CHECK(!__builtin_mul_overflow(acc, std::max<int64_t>(sizes[i], 1), &acc), "tensor", "shape ", sizes,
                " is too large: its strides overflow int64");
  }
  return s;
}

DimVector channels_last_strides(IntArrayRef sz) {
  BRISK_CHECK(sz.size() == 4, "channels_last", "expected a 4-D shape, got ", sz);
  const int64_t c = std::max<int64_t>(sz[1], 1), h = std::max<int64_t>(sz[2], 1), w = std::max<int64_t>(sz[3], 1);
  return DimVector{c * h * w, 1, w * c, c};
}

void wrap_dim_fail(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = std::max<int64_t>(ndim, 1);
  BRISK_FAIL(op, "dimension out of range (expected to be in range of [", -n, ", ", n - 1, "], but got ", dim, ")");
}

int64_t wrap_dim_nonscalar(int64_t dim, int64_t ndim, const char* op) {
  BRISK_CHECK(ndim > 0, op, "Dimension specified as ", dim, " but tensor has no dimensions");
  return wrap_dim(dim, ndim, op);
}

namespace {
DeviceBackend* g_backends[kNumDeviceTypes] = {};
}

void set_device_backend(DeviceType type, DeviceBackend* backend) { g_backends[static_cast<int>(type)] = backend; }
DeviceBackend* device_backend(DeviceType type) { return g_backends[static_cast<int>(type)]; }

int resolve_device(Device d, const char* op) {
  if (d.is_cpu()) return 0;
  DeviceBackend* b = device_backend(d.type);
  if (b == nullptr)
    BRISK_FAIL(op, "device ", d, " is not available: this build of brisk has no CUDA backend ",
               "(configure with the CUDA toolkit installed, or use the cpu device)");
  if (!b->available())
    BRISK_FAIL(op, "device ", d, " is not available: ", b->unavailable_reason(),
               " (use the cpu device, or a machine with an NVIDIA GPU)");
  if (d.index < 0) return b->current_device();
  const int n = b->device_count();
  BRISK_CHECK(d.index < n, op, "device ", d, " is out of range: ", n, n == 1 ? " device is" : " devices are",
              " visible");
  return d.index;
}

void check_device_available(Device d, const char* op) { (void)resolve_device(d, op); }

void check_cpu_kernel(const Tensor& t, const char* op) {
  if (BRISK_LIKELY(!t.defined() || t.is_cpu())) return;
  BRISK_FAIL(op, "not implemented on ", t.device().type, ": brisk has no ", t.device().type, " kernel for ", op,
             " yet; run it on the cpu (x.cpu()) and move the result back");
}

bool is_inference_mode() { return autograd::tls::t_inference_mode; }

Tensor make_tensor(IntArrayRef sizes, IntArrayRef strides, ScalarType dtype, Device device) {
  Allocator* alloc = cpu_allocator();
  if (BRISK_UNLIKELY(!device.is_cpu())) {
    device.index = static_cast<int8_t>(resolve_device(device, "empty"));
    alloc = device_backend(device.type)->allocator(device.index);
  }
  // Owned from the start: a bad shape or a failed allocation below throws.
  Ref<TensorImpl> owner = Ref<TensorImpl>::adopt(new_tensor_impl());
  TensorImpl* impl = owner.get();
  impl->sizes.assign(sizes.begin(), sizes.end());
  impl->dtype = dtype;
  impl->device = device;
  int64_t extent;  // elements the storage must hold
  if (strides.empty()) {
    // Contiguous: strides, numel and extent in one pass.
    const size_t nd = sizes.size();
    impl->strides.assign(sizes.begin(), sizes.end());  // sized so (no memset call): each entry is set below
    int64_t acc = 1;
    for (size_t i = nd; i-- > 0;) {
      const int64_t s = sizes[i];
      BRISK_CHECK(s >= 0, "empty", "negative dimension ", s, " in shape ", sizes);
      impl->strides[i] = acc;
      // A size-0 dim makes numel 0, but the strides still multiply the other sizes.
      BRISK_CHECK(!__builtin_mul_overflow(acc, s == 0 ? 1 : s, &acc), "empty", "shape ", sizes,
                  " is too large: its strides overflow int64");
    }
    impl->numel = multiply(sizes);
    impl->is_contiguous = true;
    extent = impl->numel;
  } else {
    for (int64_t s : sizes) BRISK_CHECK(s >= 0, "empty", "negative dimension ", s, " in shape ", sizes);
    impl->strides.assign(strides.begin(), strides.end());
    impl->refresh();
    extent = impl->numel == 0 ? 0 : 1;
    if (impl->numel > 0)
      for (size_t i = 0; i < sizes.size(); ++i) extent += (sizes[i] - 1) * impl->strides[i];
  }
  impl->storage = Ref<StorageImpl>::adopt(new_storage_impl());
  StorageImpl* st = impl->storage.get();
  st->nbytes = static_cast<size_t>(extent) * element_size(dtype);
  st->device = device;
  st->data = alloc->allocate(st->nbytes);
  st->allocator = alloc;  // set once the block exists: the destructor frees through it
  impl->is_inference = autograd::tls::t_inference_mode;
  return Tensor(std::move(owner));
}

Tensor make_view(const Tensor& base, IntArrayRef sizes, IntArrayRef strides, int64_t storage_offset) {
  const TensorImpl* b = base.impl();
  Ref<TensorImpl> owner = Ref<TensorImpl>::adopt(new_tensor_impl());
  TensorImpl* impl = owner.get();
  impl->storage = b->storage;
  // Note [View tracking]: every view knows the root of its chain of views,
  // so that an in-place op that records on a view can rewrite the root's
  // history (CopySlices, src/autograd/autograd.cpp) even when the root did
  // not require grad before. One refcount increment per view op; inference
  // tensors are not tracked.
  if (!b->is_inference) {
    // One increment: not `b->view_base ? b->view_base : Ref::borrow(b)`,
    // whose const and non-const operands make a temporary that is copied
    // (three locked instructions).
    impl->view_base = Ref<TensorImpl>::borrow(b->view_base ? b->view_base.get() : const_cast<TensorImpl*>(b));
    // Note [View + in-place] (src/autograd/autograd.cpp): the version the
    // view's history matches, and whether it was made with grad mode off.
    impl->view_version = b->storage->version.load(std::memory_order_relaxed);
    // A view of a view made in no-grad mode or by a multi-output op inherits
    // that (PyTorch's propagate_creation_meta).
    impl->view_creation =
        b->view_base && b->view_creation != static_cast<uint8_t>(ViewCreation::Default)
            ? b->view_creation
            : static_cast<uint8_t>(autograd::tls::t_grad_enabled ? ViewCreation::Default : ViewCreation::NoGradMode);
  }
  impl->storage_offset = storage_offset;
  impl->sizes.assign(sizes.begin(), sizes.end());
  impl->strides.assign(strides.begin(), strides.end());
  impl->dtype = b->dtype;
  impl->device = b->device;
  impl->is_inference = b->is_inference;
  impl->refresh();
  return Tensor(std::move(owner));
}

void resize_(const Tensor& t, IntArrayRef sizes) {
  Tensor fresh = make_tensor(sizes, {}, t.dtype(), t.device());
  TensorImpl* impl = t.impl();
  // The version counter belongs to the tensor (PyTorch keeps it on resize).
  StorageImpl* st = fresh.impl()->storage.get();
  st->version.store(impl->storage->version.load(std::memory_order_relaxed), std::memory_order_relaxed);
  st->version_base = impl->storage->version_base;
  impl->storage = fresh.impl()->storage;
  impl->storage_offset = 0;
  impl->sizes = fresh.impl()->sizes;
  impl->strides = fresh.impl()->strides;
  impl->refresh();
}

}  // namespace detail
}  // namespace brisk
