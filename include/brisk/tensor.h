// brisk::Tensor: a cheap handle to a TensorImpl, with libtorch's methods.
#pragma once
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "brisk/detail/unary_ops.h"
#include "brisk/error.h"
#include "brisk/options.h"
#include "brisk/scalar.h"
#include "brisk/tensor_impl.h"

namespace brisk {

class Tensor;
class TensorIndex;
using TensorList = std::vector<Tensor>;
namespace autograd {
class Node;
}

/// Rounding modes of div: none (true division), "trunc", "floor".
enum class RoundingMode : int8_t { None, Trunc, Floor };

/// A tensor. Copying is a refcount bump; views share storage.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Ref<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  ~Tensor() = default;

  // Note [Assignment to a tensor]
  // As in libtorch: assigning to a named tensor (an lvalue) rebinds the
  // handle (`t = other` shares other's data, no copy); assigning to a
  // temporary (an rvalue: the result of x[i], x.index({...}), x.select(0, 1),
  // ...) writes into its data: `x[i] = v` is `x[i].copy_(v)` (v broadcast and
  // converted) and `x.index({0}) = 5` is `fill_(5)`. Autograd records them as
  // the copy_ and fill_ they are.
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& src) && { return copy_(src); }
  Tensor& operator=(Tensor&& src) && { return copy_(src); }
  Tensor& operator=(const Scalar& v) && { return fill_(v); }

  // ---- metadata ---------------------------------------------------------
  bool defined() const { return static_cast<bool>(impl_); }
  TensorImpl* impl() const { return impl_.get(); }
  const Ref<TensorImpl>& impl_ref() const { return impl_; }
  int64_t dim() const { return static_cast<int64_t>(impl_->sizes.size()); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return impl_->sizes; }
  IntArrayRef strides() const { return impl_->strides; }
  IntArrayRef shape() const { return impl_->sizes; }
  /// Size of dim d (negative d counts from the end).
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t numel() const { return impl_->numel; }
  ScalarType dtype() const { return impl_->dtype; }
  ScalarType scalar_type() const { return impl_->dtype; }
  Device device() const { return impl_->device; }
  bool is_cpu() const { return impl_->device.is_cpu(); }
  bool is_cuda() const { return impl_->device.is_cuda(); }
  size_t element_size() const { return brisk::element_size(impl_->dtype); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  int64_t storage_offset() const { return impl_->storage_offset; }
  bool is_floating_point() const { return brisk::is_floating_point(dtype()); }
  bool is_contiguous() const { return impl_->is_contiguous; }
  bool is_contiguous(MemoryFormat fmt) const;
  bool is_same(const Tensor& o) const { return impl_.get() == o.impl_.get(); }
  bool is_inference() const { return impl_->is_inference; }
  /// True when both tensors view the same storage.
  bool is_alias_of(const Tensor& o) const { return impl_->storage.get() == o.impl_->storage.get(); }
  int32_t use_count() const { return impl_.use_count(); }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  /// Version counter shared by all views: 0 for a tensor an op or factory
  /// made, plus one per in-place op since (see Note [Version counters]).
  uint32_t _version() const {
    const StorageImpl* s = impl_->storage.get();
    return s->version.load(std::memory_order_relaxed) - s->version_base;
  }
  /// The raw counter that autograd's saved-tensor checks compare (only its
  /// changes mean something).
  uint32_t _raw_version() const { return impl_->storage->version.load(std::memory_order_relaxed); }
  /// Called by every in-place op. A relaxed load+store, not a locked
  /// increment: two threads writing one tensor in place race anyway.
  BRISK_ALWAYS_INLINE void bump_version() const {
    if (!impl_->is_inference) {
      auto& v = impl_->storage->version;
      v.store(v.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
  }

  void* data_ptr() const { return impl_->data(); }
  /// Typed pointer to the first element; checks the dtype.
  template <class T>
  T* data_ptr() const {
    BRISK_CHECK(dtype_of<T> == dtype(), "data_ptr", "requested ", dtype_of<T>, " but the tensor is ", dtype());
    return reinterpret_cast<T*>(impl_->data());
  }

  // ---- conversion and copies ---------------------------------------------
  Tensor to(ScalarType t, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device d, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device d, ScalarType t, bool non_blocking = false, bool copy = false) const;
  Tensor to(TensorOptions o, bool non_blocking = false, bool copy = false) const;
  Tensor to(MemoryFormat fmt) const;
  /// x.to(kCPU), x.to(kCUDA) (a device type alone: libtorch's most common
  /// idiom; without this overload the call is ambiguous between Device and
  /// TensorOptions).
  Tensor to(DeviceType d, bool non_blocking = false, bool copy = false) const {
    return to(Device(d), non_blocking, copy);
  }
  /// To other's dtype and device.
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false) const;
  /// libtorch's toType: to(t).
  Tensor toType(ScalarType t) const { return to(t); }
  Tensor type_as(const Tensor& other) const { return to(other.dtype()); }
  Tensor cpu() const { return to(Device(kCPU)); }
  Tensor cuda() const { return to(Device(kCUDA)); }
  /// A copy in page-locked (pinned) host memory, from which copies to a GPU
  /// can be non-blocking; `*this` when it is pinned already. CPU tensors only.
  Tensor pin_memory() const;
  /// True for CPU tensors whose memory is pinned (pin_memory, DataLoader's pin_memory).
  bool is_pinned() const;
  Tensor contiguous(MemoryFormat fmt = kContiguous) const;
  Tensor clone(MemoryFormat fmt = kPreserve) const;
  /// Copies src into this tensor, broadcasting and converting dtype.
  Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  Tensor& fill_(const Scalar& v) const;
  Tensor& zero_() const;
  /// libtorch's resize_: contiguous sizes over the same storage when it is
  /// large enough (the data stays where it is: shrinking keeps the leading
  /// elements), else over a larger block holding a copy of the old bytes
  /// (the new elements are uninitialized), shared by every view of the
  /// storage. The same sizes change nothing. Refused for tensors that
  /// require grad (and views of them) and for memory brisk does not own
  /// (from_blob) that must grow. Bumps the version counter.
  const Tensor& resize_(IntArrayRef sizes) const;
  /// The value of a one-element tensor.
  Scalar item() const;
  template <class T>
  T item() const {
    return item().to<T>();
  }
  /// All elements in row-major order, converted to T.
  template <class T>
  std::vector<T> to_vector() const;

  // ---- views (share storage, never copy) ---------------------------------
  Tensor view(IntArrayRef shape) const;
  Tensor view_as(const Tensor& o) const { return view(o.sizes()); }
  /// A view when the strides allow it, otherwise a copy.
  Tensor reshape(IntArrayRef shape) const;
  Tensor reshape_as(const Tensor& o) const { return reshape(o.sizes()); }
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, IntArrayRef sizes) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  /// transpose's other names (PyTorch's swapdims / swapaxes) and the
  /// conjugate transpose of the last two dims (real: mT).
  Tensor swapdims(int64_t d0, int64_t d1) const;
  Tensor adjoint() const;
  /// Each element (or slice along dim) repeated (brisk::repeat_interleave).
  Tensor repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim = std::nullopt,
                           std::optional<int64_t> output_size = std::nullopt) const;
  /// brisk::diag, diag_embed, fliplr, flipud, rot90.
  Tensor diag(int64_t diagonal = 0) const;
  Tensor diag_embed(int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1) const;
  Tensor fliplr() const;
  Tensor flipud() const;
  Tensor rot90(int64_t k = 1, IntArrayRef dims = {0, 1}) const;
  /// sign(x) for real tensors (PyTorch's sgn, which extends sign to complex).
  Tensor sgn() const;
  /// brisk::take_along_dim, diff, kron, cross, clip (clamp).
  Tensor take_along_dim(const Tensor& indices, std::optional<int64_t> dim = std::nullopt) const;
  Tensor diff(int64_t n = 1, int64_t dim = -1, const std::optional<Tensor>& prepend = std::nullopt,
              const std::optional<Tensor>& append = std::nullopt) const;
  Tensor kron(const Tensor& other) const;
  Tensor cross(const Tensor& other, std::optional<int64_t> dim = std::nullopt) const;
  Tensor clip(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor& clip_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor swapaxes(int64_t d0, int64_t d1) const { return transpose(d0, d1); }
  Tensor permute(IntArrayRef dims) const;
  Tensor movedim(int64_t src, int64_t dst) const;
  Tensor t() const;
  Tensor mT() const;
  Tensor expand(IntArrayRef sizes) const;
  Tensor expand_as(const Tensor& o) const { return expand(o.sizes()); }
  Tensor as_strided(IntArrayRef sizes, IntArrayRef strides, std::optional<int64_t> offset = {}) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = {}, std::optional<int64_t> end = {},
               int64_t step = 1) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(IntArrayRef split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const { return split(split_sizes, dim); }
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  Tensor diagonal(int64_t offset = 0, int64_t d1 = 0, int64_t d2 = 1) const;
  Tensor unfold(int64_t dim, int64_t size, int64_t step) const;
  /// Python-style indexing: x.index({Slice(), None, 0, Ellipsis}).
  Tensor index(std::initializer_list<TensorIndex> idx) const;
  Tensor index(const std::vector<TensorIndex>& idx) const;
  /// x[idx] = value (value broadcast to the indexed shape).
  Tensor& index_put_(const std::vector<TensorIndex>& idx, const Tensor& value) const;
  Tensor& index_put_(const std::vector<TensorIndex>& idx, const Scalar& value) const;
  Tensor& index_put_(std::initializer_list<TensorIndex> idx, const Tensor& value) const;
  Tensor& index_put_(std::initializer_list<TensorIndex> idx, const Scalar& value) const;
  /// libtorch's index_put_(indices, values, accumulate): values must have
  /// this tensor's dtype and broadcast to the indexed shape (no leading size-1
  /// dims dropped); with accumulate they are added, duplicate indices
  /// accumulating (PyTorch's x.index_put_((i,), v, accumulate=True)).
  Tensor& index_put_(const std::vector<TensorIndex>& idx, const Tensor& values, bool accumulate) const;
  Tensor& index_put_(std::initializer_list<TensorIndex> idx, const Tensor& values, bool accumulate) const;
  /// Out of place: a copy of this tensor with index_put_ applied.
  Tensor index_put(const std::vector<TensorIndex>& idx, const Tensor& values, bool accumulate = false) const;
  Tensor index_put(std::initializer_list<TensorIndex> idx, const Tensor& values, bool accumulate = false) const;
  Tensor operator[](int64_t i) const { return select(0, i); }

  // ---- indexing that allocates -------------------------------------------
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor scatter(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_(int64_t dim, const Tensor& index, const Scalar& value) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor& scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha = 1) const;
  Tensor& index_add_(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha = 1) const;
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  Tensor masked_select(const Tensor& mask) const;
  Tensor nonzero() const;

  // ---- elementwise --------------------------------------------------------
#define BRISK_BINARY_METHODS(name)                  \
  Tensor name(const Tensor& other) const;           \
  Tensor name(const Scalar& other) const;           \
  Tensor& name##_(const Tensor& other) const;       \
  Tensor& name##_(const Scalar& other) const;
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  BRISK_BINARY_METHODS(mul)
  Tensor div(const Tensor& other, RoundingMode mode = RoundingMode::None) const;
  Tensor div(const Scalar& other, RoundingMode mode = RoundingMode::None) const;
  Tensor& div_(const Tensor& other, RoundingMode mode = RoundingMode::None) const;
  Tensor& div_(const Scalar& other, RoundingMode mode = RoundingMode::None) const;
  BRISK_BINARY_METHODS(remainder)
  BRISK_BINARY_METHODS(fmod)
  BRISK_BINARY_METHODS(pow)
  BRISK_BINARY_METHODS(minimum)
  BRISK_BINARY_METHODS(maximum)
  BRISK_BINARY_METHODS(atan2)
  Tensor hypot(const Tensor& other) const;
  Tensor& hypot_(const Tensor& other) const;
  Tensor logaddexp(const Tensor& other) const;
  Tensor logaddexp2(const Tensor& other) const;
  BRISK_BINARY_METHODS(copysign)
  Tensor nextafter(const Tensor& other) const;
  Tensor& nextafter_(const Tensor& other) const;
  BRISK_BINARY_METHODS(xlogy)
  Tensor heaviside(const Tensor& values) const;
  Tensor& heaviside_(const Tensor& values) const;
  Tensor ldexp(const Tensor& other) const;
  Tensor& ldexp_(const Tensor& other) const;
  BRISK_BINARY_METHODS(float_power)
  BRISK_BINARY_METHODS(eq)
  BRISK_BINARY_METHODS(ne)
  BRISK_BINARY_METHODS(lt)
  BRISK_BINARY_METHODS(le)
  BRISK_BINARY_METHODS(gt)
  BRISK_BINARY_METHODS(ge)
  BRISK_BINARY_METHODS(logical_and)
  BRISK_BINARY_METHODS(logical_or)
  BRISK_BINARY_METHODS(logical_xor)
  BRISK_BINARY_METHODS(bitwise_and)
  BRISK_BINARY_METHODS(bitwise_or)
  BRISK_BINARY_METHODS(bitwise_xor)
  BRISK_BINARY_METHODS(bitwise_left_shift)
  BRISK_BINARY_METHODS(bitwise_right_shift)
#undef BRISK_BINARY_METHODS
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight) const;
  Tensor& lerp_(const Tensor& end, const Tensor& weight) const;
  Tensor addcmul(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor& addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor& addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value = 1) const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp(const Tensor& min, const Tensor& max) const;
  Tensor clamp_min(const Scalar& min) const { return clamp(min, std::nullopt); }
  Tensor clamp_max(const Scalar& max) const { return clamp(std::nullopt, max); }
  Tensor& clamp_min_(const Scalar& min) const { return clamp_(min, std::nullopt); }
  Tensor& clamp_max_(const Scalar& max) const { return clamp_(std::nullopt, max); }

  // The unary pointwise ops of include/brisk/detail/unary_ops.h: x.exp(),
  // x.exp_(), ..., x.isnan(); logit is declared below.
  BRISK_FORALL_UNARY_OPS(BRISK_DETAIL_UNARY_DECLARE_METHODS, _)
  /// log(x / (1 - x)); with eps, x is first clamped to [eps, 1 - eps].
  Tensor logit(std::optional<double> eps = std::nullopt) const;
  Tensor& logit_(std::optional<double> eps = std::nullopt) const;
  /// approximate: "none" (erf) or "tanh".
  Tensor gelu(std::string_view approximate = "none") const;
  Tensor& gelu_(std::string_view approximate = "none") const;
  Tensor softplus(const Scalar& beta = 1, const Scalar& threshold = 20) const;
  /// NaN, +inf and -inf replaced (see brisk::nan_to_num).
  Tensor nan_to_num(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                    std::optional<double> neginf = std::nullopt) const;
  Tensor& nan_to_num_(std::optional<double> nan = std::nullopt, std::optional<double> posinf = std::nullopt,
                      std::optional<double> neginf = std::nullopt) const;

  // ---- reductions ---------------------------------------------------------
  Tensor sum(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor sum(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dims, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor mean(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor prod(int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  /// sum / mean with NaNs taken as 0 / left out (brisk::nansum, nanmean).
  Tensor nansum(IntArrayRef dims = {}, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor nanmean(IntArrayRef dims = {}, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt) const;
  /// int64 count of the nonzero elements over dims (all when empty).
  Tensor count_nonzero(IntArrayRef dims = {}) const;
  Tensor count_nonzero(int64_t dim) const;
  /// The sum of the main diagonal of a matrix (brisk::trace).
  Tensor trace() const;
  Tensor max() const;
  Tensor min() const;
  /// (values, indices) along dim.
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dims = {}, bool keepdim = false) const;
  Tensor amax(int64_t dim, bool keepdim = false) const;
  Tensor amin(int64_t dim, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor var(std::optional<std::vector<int64_t>> dims = std::nullopt, const Scalar& correction = 1,
             bool keepdim = false) const;
  Tensor std(std::optional<std::vector<int64_t>> dims = std::nullopt, const Scalar& correction = 1,
             bool keepdim = false) const;
  Tensor var(int64_t dim, const Scalar& correction = 1, bool keepdim = false) const;
  Tensor std(int64_t dim, const Scalar& correction = 1, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dims, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dims, bool keepdim = false) const;
  Tensor logsumexp(int64_t dim, bool keepdim = false) const;
  Tensor softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor log_softmax(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumsum(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<ScalarType> dtype = std::nullopt) const;
  Tensor all() const;
  Tensor any() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  /// (values, indices), stable.
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  /// Lower median of all elements, or (values, indices) along dim (see brisk::median).
  Tensor median() const;
  std::tuple<Tensor, Tensor> median(int64_t dim, bool keepdim = false) const;
  Tensor nanmedian() const;
  std::tuple<Tensor, Tensor> nanmedian(int64_t dim, bool keepdim = false) const;

  // ---- linear algebra and shape ------------------------------------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor mv(const Tensor& vec) const;
  Tensor dot(const Tensor& other) const;
  Tensor outer(const Tensor& other) const;
  Tensor addmm(const Tensor& m1, const Tensor& m2, const Scalar& beta = 1, const Scalar& alpha = 1) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor tile(IntArrayRef reps) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor& tril_(int64_t diagonal = 0) const;
  Tensor& triu_(int64_t diagonal = 0) const;

  // ---- comparison of whole tensors ---------------------------------------
  bool equal(const Tensor& other) const;
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;

  // ---- random fills --------------------------------------------------------
  Tensor& uniform_(double from = 0, double to = 1) const;
  Tensor& normal_(double mean = 0, double std = 1) const;
  Tensor& bernoulli_(double p = 0.5) const;
  Tensor& random_(int64_t from, int64_t to) const;

  // ---- operators ----------------------------------------------------------
  Tensor& operator+=(const Tensor& o) { return add_(o); }
  Tensor& operator+=(const Scalar& o) { return add_(o); }
  Tensor& operator-=(const Tensor& o) { return sub_(o); }
  Tensor& operator-=(const Scalar& o) { return sub_(o); }
  Tensor& operator*=(const Tensor& o) { return mul_(o); }
  Tensor& operator*=(const Scalar& o) { return mul_(o); }
  Tensor& operator/=(const Tensor& o) { return div_(o); }
  Tensor& operator/=(const Scalar& o) { return div_(o); }
  Tensor& operator&=(const Tensor& o) { return bitwise_and_(o); }
  Tensor& operator&=(const Scalar& o) { return bitwise_and_(o); }
  Tensor& operator|=(const Tensor& o) { return bitwise_or_(o); }
  Tensor& operator|=(const Scalar& o) { return bitwise_or_(o); }
  Tensor& operator^=(const Tensor& o) { return bitwise_xor_(o); }
  Tensor& operator^=(const Scalar& o) { return bitwise_xor_(o); }
  Tensor& operator<<=(const Tensor& o) { return bitwise_left_shift_(o); }
  Tensor& operator<<=(const Scalar& o) { return bitwise_left_shift_(o); }
  Tensor& operator>>=(const Tensor& o) { return bitwise_right_shift_(o); }
  Tensor& operator>>=(const Scalar& o) { return bitwise_right_shift_(o); }
  Tensor operator-() const { return neg(); }
  Tensor operator~() const { return bitwise_not(); }
  Tensor operator!() const { return logical_not(); }

  // ---- autograd (src/autograd; see include/brisk/autograd.h) ---------------
  /// True for a leaf that requires grad and for any result of a recorded op.
  /// (A view requires grad when its root does, as in PyTorch: Note [View + in-place].)
  BRISK_ALWAYS_INLINE bool requires_grad() const {
    return impl_->requires_grad || (impl_->view_base && impl_->view_base->requires_grad);
  }
  /// Makes a floating point leaf require (or stop requiring) gradients.
  Tensor& requires_grad_(bool r = true) const;
  Tensor& set_requires_grad(bool r) const { return requires_grad_(r); }
  /// The accumulated gradient (undefined until a backward reaches it, and
  /// after it is set to none). Non-leaf tensors keep one only after retain_grad().
  const Tensor& grad() const;
  /// Assignable gradient: `t.mutable_grad() = Tensor()` sets it to none.
  Tensor& mutable_grad() const;
  /// Backward from this tensor; `gradient` may be omitted for a scalar.
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false, const TensorList& inputs = {}) const;
  /// The node that made this tensor (null for leaves and tensors outside the graph).
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  /// True unless the tensor is the result of a recorded op.
  bool is_leaf() const;
  /// Which output of grad_fn() this tensor is.
  uint32_t output_nr() const;
  /// Keeps the gradient of a non-leaf tensor in grad() during backward.
  void retain_grad() const;
  bool retains_grad() const;
  /// A tensor sharing storage (and version counter) outside the graph.
  Tensor detach() const;
  /// Takes this tensor out of the graph in place.
  Tensor& detach_() const;
  /// Same as detach(): the data without the autograd history.
  Tensor data() const { return detach(); }
  /// True for a view (of a tensor that is not an inference tensor); _base()
  /// is the root of its chain of views.
  bool _is_view() const;
  Tensor _base() const;
  /// Runs `hook` on this tensor's gradient during backward; a hook that
  /// returns a defined tensor replaces the gradient. Returns a handle for remove_hook.
  unsigned register_hook(std::function<Tensor(const Tensor&)> hook) const;
  template <class F>
    requires std::is_void_v<std::invoke_result_t<F, const Tensor&>>
  unsigned register_hook(F&& f) const {
    return register_hook(std::function<Tensor(const Tensor&)>([f = std::forward<F>(f)](const Tensor& g) {
      f(g);
      return Tensor();
    }));
  }
  /// Runs `hook(leaf)` after the leaf's gradient was accumulated into
  /// .grad() in a backward (PyTorch's register_post_accumulate_grad_hook):
  /// the hook sees the gradient as the optimizer will. Leaves only. Returns
  /// a handle for remove_hook.
  unsigned register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  void remove_hook(unsigned handle) const;
  /// Drops the reference (the handle becomes undefined).
  void reset() { impl_.reset(); }

 private:
  Ref<TensorImpl> impl_;
};

// Binary operators, tensor-tensor and tensor-scalar, both orders.
#define BRISK_OPERATOR(op, method)                                                          \
  inline Tensor operator op(const Tensor& a, const Tensor& b) { return a.method(b); }       \
  inline Tensor operator op(const Tensor& a, const Scalar& b) { return a.method(b); }
BRISK_OPERATOR(+, add)
BRISK_OPERATOR(-, sub)
BRISK_OPERATOR(*, mul)
BRISK_OPERATOR(/, div)
BRISK_OPERATOR(%, remainder)
BRISK_OPERATOR(==, eq)
BRISK_OPERATOR(!=, ne)
BRISK_OPERATOR(<, lt)
BRISK_OPERATOR(<=, le)
BRISK_OPERATOR(>, gt)
BRISK_OPERATOR(>=, ge)
BRISK_OPERATOR(&, bitwise_and)
BRISK_OPERATOR(|, bitwise_or)
BRISK_OPERATOR(^, bitwise_xor)
BRISK_OPERATOR(<<, bitwise_left_shift)
BRISK_OPERATOR(>>, bitwise_right_shift)
#undef BRISK_OPERATOR
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator==(const Scalar& a, const Tensor& b);
Tensor operator<(const Scalar& a, const Tensor& b);
Tensor operator>(const Scalar& a, const Tensor& b);

/// Prints like PyTorch: tensor([[1., 2.], [3., 4.]]).
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);

}  // namespace brisk
