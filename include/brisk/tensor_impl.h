// TensorImpl and StorageImpl: what a Tensor handle points at.
#pragma once
#include <atomic>
#include <cstdint>
#include <utility>

#include "brisk/allocator.h"
#include "brisk/device.h"
#include "brisk/dtype.h"
#include "brisk/shape.h"

namespace brisk {

/// Intrusive reference-counted pointer. T has `std::atomic<int32_t> refcount_`
/// (starting at 1 for a fresh object) and is deleted when it drops to zero.
template <class T>
class Ref {
 public:
  Ref() = default;
  /// Adopts a fresh object (refcount already 1).
  static Ref adopt(T* p) {
    Ref r;
    r.p_ = p;
    return r;
  }
  Ref(const Ref& o) : p_(o.p_) { retain(); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Ref& operator=(const Ref& o) {
    if (p_ != o.p_) {
      o.retain();
      release();
      p_ = o.p_;
    }
    return *this;
  }
  Ref& operator=(Ref&& o) noexcept {
    if (this != &o) {
      release();
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  ~Ref() { release(); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  int32_t use_count() const { return p_ ? p_->refcount_.load(std::memory_order_relaxed) : 0; }
  void reset() {
    release();
    p_ = nullptr;
  }
  /// A new reference to an object someone else owns (bumps the count).
  static Ref borrow(T* p) {
    Ref r;
    r.p_ = p;
    r.retain();
    return r;
  }

 private:
  void retain() const {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  // Note [Releasing the last reference]: a count of 1 seen by the owner of
  // that reference means no other reference exists, and none can appear (a
  // new one is made only from an existing one; there are no weak ones), so
  // the object is deleted without the locked decrement. The acquire load
  // pairs with the release half of other owners' decrements, as the
  // decrement's acquire would. A freshly made tensor is usually released
  // this way: two locked instructions fewer per temporary (tensor, storage).
  void release() {
    if (!p_) return;
    if (p_->refcount_.load(std::memory_order_acquire) == 1 ||
        p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete p_;
  }
  T* p_ = nullptr;
};

/// A buffer shared by all views of it.
// Note [Version counters]
// The version counter lives in the storage: every view of a storage shares
// it without an extra allocation. Every in-place op bumps it (except on
// inference tensors); autograd compares it against the value saved with a
// tensor to detect modification of saved inputs.
// A tensor an op hands out starts at version 0 (`ones({3})._version()` is 0,
// as in PyTorch), although ops build their results with in-place ops (full
// fills, cat copies into slices, ...) that bump the counter. Resetting the
// counter would break autograd: a node recorded inside the op may have saved
// the result at the bumped version. So the counter itself is never reset:
// the op records its value in `version_base` (detail::mark_new_version,
// src/core/tensor_create.h) and _version() reports the difference, while
// autograd and the caches compare the raw counter (_raw_version()).
struct StorageImpl {
  using Deleter = void (*)(void* ctx, void* data);

  std::atomic<int32_t> refcount_{1};
  std::atomic<uint32_t> version{0};
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  /// The counter's value when the op that made this storage handed it out:
  /// Tensor::_version() is `version - version_base` (Note [Version counters]).
  uint32_t version_base = 0;
  Allocator* allocator = nullptr;  ///< frees `data` unless null
  Deleter deleter = nullptr;       ///< used when allocator is null (from_blob)
  void* deleter_ctx = nullptr;

  StorageImpl() = default;
  // Recycled through a per-thread free list: a tensor costs no malloc.
  static void* operator new(size_t n);
  static void operator delete(void* p);
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;
  ~StorageImpl();
};

struct AutogradMeta;

/// How a view was made (TensorImpl::view_creation), as PyTorch's CreationMeta.
enum class ViewCreation : uint8_t {
  Default = 0,      ///< in grad mode by a single-output view op
  NoGradMode = 1,   ///< with grad mode off
  MultiOutput = 2,  ///< one of several views made by one op (split, chunk, unbind)
};

/// Sizes, strides, offset and dtype over a storage.
struct TensorImpl {
  std::atomic<int32_t> refcount_{1};
  /// For a view: the storage version when its history was last set; a
  /// different version means the base (or another view of it) was changed
  /// in place since, and the history is regenerated on next use (Note [View
  /// + in-place]). Here, in the refcount's padding, TensorImpl keeps its size.
  uint32_t view_version = 0;
  Ref<StorageImpl> storage;
  int64_t storage_offset = 0;
  DimVector sizes;
  DimVector strides;
  int64_t numel = 1;
  ScalarType dtype = kFloat;
  Device device;
  bool is_contiguous = true;
  bool is_inference = false;     ///< made under InferenceMode: no version tracking
  bool requires_grad = false;    ///< leaf that requires grad, or output of a recorded op
  /// For a view: how it was made (ViewCreation), which decides whether an
  /// in-place op may rewrite its history (Note [View + in-place]).
  uint8_t view_creation = 0;
  AutogradMeta* autograd = nullptr;  ///< null unless the tensor takes part in autograd
  /// For a view: the tensor at the root of its chain of views (see Note
  /// [View tracking]); null for non-views, detached aliases and inference tensors.
  Ref<TensorImpl> view_base;

  TensorImpl() = default;
  static void* operator new(size_t n);
  static void operator delete(void* p);
  TensorImpl(const TensorImpl&) = delete;
  TensorImpl& operator=(const TensorImpl&) = delete;
  ~TensorImpl();

  /// Recomputes numel and is_contiguous after sizes/strides changed.
  void refresh() {
    int64_t n = 1, expected = 1;
    bool contig = true;
    for (size_t i = sizes.size(); i-- > 0;) {
      const int64_t s = sizes[i];
      n *= s;
      if (s != 1) {
        if (strides[i] != expected) contig = false;
        expected *= s;
      }
    }
    numel = n;
    is_contiguous = contig || n == 0;
  }
  char* data() const { return static_cast<char*>(storage->data) + storage_offset * element_size(dtype); }
};

}  // namespace brisk
