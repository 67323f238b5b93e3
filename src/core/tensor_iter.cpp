#include "core/tensor_iter.h"

#include <algorithm>
#include <cstring>

#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "core/tensor_create.h"

namespace brisk {

namespace {
// Category rank used by PyTorch's combine rule: bool < integral < floating.
int category(ScalarType t) { return t == kBool ? 0 : is_floating_point(t) ? 2 : 1; }

ScalarType promote_skip_undefined(ScalarType a, ScalarType b) {
  if (a == ScalarType::Undefined) return b;
  if (b == ScalarType::Undefined) return a;
  return promote_types(a, b);
}
// The higher-priority group wins unless the lower one is of a higher category.
ScalarType combine_categories(ScalarType higher, ScalarType lower) {
  if (higher == ScalarType::Undefined) return lower;
  if (lower == ScalarType::Undefined) return higher;
  if (category(higher) >= category(lower)) return higher;
  // e.g. int tensor with a float scalar: the scalar's category wins.
  return promote_skip_undefined(higher, lower);
}

void write_scalar(char* buf, const Scalar& s, ScalarType t) {
  BRISK_DISPATCH_ALL(t, "scalar", [&] {
    scalar_t v = s.to<scalar_t>();
    std::memcpy(buf, &v, sizeof(v));
  });
}
}  // namespace

void ResultTypeState::update(const Tensor& t) {
  if (t.dim() > 0)
    dim_result = promote_skip_undefined(dim_result, t.dtype());
  else
    zero_result = promote_skip_undefined(zero_result, t.dtype());
}
void ResultTypeState::update(const Scalar& s) {
  wrapped_result = promote_skip_undefined(wrapped_result, s.dtype());
}
ScalarType ResultTypeState::result() const {
  return combine_categories(dim_result, combine_categories(zero_result, wrapped_result));
}

ScalarType result_type(const Tensor& a, const Tensor& b) {
  ResultTypeState s;
  s.update(a);
  s.update(b);
  return s.result();
}
ScalarType result_type(const Tensor& a, const Scalar& b) {
  ResultTypeState s;
  s.update(a);
  s.update(b);
  return s.result();
}

bool has_internal_overlap(const Tensor& out) {
  if (out.numel() == 0) return false;  // an empty tensor writes nothing (PyTorch)
  for (int64_t d = 0; d < out.dim(); ++d)
    if (out.stride(d) == 0 && out.size(d) > 1) return true;
  return false;
}

void check_no_internal_overlap(const char* op, const Tensor& out) {
  BRISK_CHECK(!has_internal_overlap(out), op,
              "unsupported operation: more than one element of the written-to tensor refers to a single "
              "memory location (shape ",
              out.sizes(), ", strides ", out.strides(), "). Please clone() the tensor before writing to it.");
}

void check_no_partial_overlap(const char* op, const Tensor& out, const Tensor& in) {
  if (out.is_same(in)) return;
  if (!out.defined() || !in.defined() || !out.is_alias_of(in) || out.numel() == 0 || in.numel() == 0) return;
  if (out.data_ptr() == in.data_ptr() && out.sizes() == in.sizes() && out.strides() == in.strides()) return;
  auto range = [](const Tensor& t) {
    int64_t lo = 0, hi = 0;
    for (int64_t d = 0; d < t.dim(); ++d) {
      int64_t ext = (t.size(d) - 1) * t.stride(d);
      (ext < 0 ? lo : hi) += ext;
    }
    const int64_t es = static_cast<int64_t>(t.element_size());
    char* base = static_cast<char*>(t.data_ptr());
    return std::pair<char*, char*>(base + lo * es, base + (hi + 1) * es);
  };
  auto [a0, a1] = range(out);
  auto [b0, b1] = range(in);
  BRISK_CHECK(a1 <= b0 || b1 <= a0, op,
              "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
              "single memory location. Please clone() the input tensor before performing the operation.");
}

void TensorIter::finish() {
  if (staging.defined()) {
    // The op's own write-back: the op records its node; a recorded copy_
    // here would cut the gradient to result's old value.
    NoGradGuard no_grad;
    result.copy_(staging);
    staging = Tensor();
  }
}

namespace {
/// The strides make_tensor gives a contiguous tensor of t's sizes (a
/// contiguous tensor may have other strides on dims of size 1).
bool canonical_strides(const TensorImpl& t) {
  int64_t expected = 1;
  for (size_t i = t.sizes.size(); i-- > 0;) {
    if (t.strides[i] != expected) return false;
    expected *= std::max<int64_t>(t.sizes[i], 1);
  }
  return true;
}
}  // namespace

// Note [TensorIter fast path]
// The common small op has contiguous inputs of one shape and dtype (or
// scalars) and a fresh or matching contiguous output. It needs no
// broadcasting, casting, permutation or coalescing: one dim of numel
// elements. This path keeps the host cost of `x + y` on tiny tensors low.
bool IterBuilder::try_fast_path(TensorIter& it, ScalarType compute, ScalarType result_dtype) {
  const TensorImpl* first = nullptr;
  bool has_scalar = false;
  for (int i = 0; i < ninputs_; ++i) {
    if (is_scalar_[i]) {
      has_scalar = true;
      continue;
    }
    const TensorImpl* t = in(i).impl();
    if (!t->is_contiguous || (promote_[i] && cast_inputs_ && t->dtype != compute)) return false;
    if (!first) {
      first = t;
    } else if (!(t->sizes == first->sizes) || !(t->device == first->device)) {
      return false;
    }
  }
  if (!first) return false;
  if (has_scalar && !has_out() && (first->numel == 0 || !canonical_strides(*first))) return false;  // Note [Output layout]
  if (has_out()) {
    const TensorImpl* o = out_->impl();
    if (!o->is_contiguous || o->dtype != result_dtype || !(o->sizes == first->sizes) || !(o->device == first->device))
      return false;
    for (int i = 0; i < ninputs_; ++i)
      if (!is_scalar_[i]) check_no_partial_overlap(op_, *out_, in(i));  // self as input is fine
    it.result = *out_;
  } else {
    it.result = detail::make_tensor(first->sizes, {}, result_dtype, first->device);  // canonical strides
  }
  const int nops = ninputs_ + 1;
  it.noperands = nops;
  it.numel = first->numel;
  it.ndim = 1;
  it.shape[0] = first->numel;
  it.dtypes[0] = result_dtype;
  it.data[0] = it.result.impl()->data();
  it.strides[0][0] = static_cast<int64_t>(element_size(result_dtype));
  for (int i = 0; i < ninputs_; ++i) {
    const int k = i + 1;
    if (is_scalar_[i]) {
      write_scalar(it.scalar_buf[k], scalars_[i], compute);
      it.data[k] = it.scalar_buf[k];
      it.dtypes[k] = compute;
      it.strides[k][0] = 0;
    } else {
      const TensorImpl* t = in(i).impl();
      it.data[k] = t->data();
      it.dtypes[k] = t->dtype;
      it.strides[k][0] = static_cast<int64_t>(element_size(t->dtype));
    }
  }
  // A single element: every operand advances by its element size (the
  // scalar is read once either way).
  if (it.numel == 1)
    for (int k = 1; k < nops; ++k) it.strides[k][0] = static_cast<int64_t>(element_size(it.dtypes[k]));
  return true;
}

// Note [Output layout]
// A fresh output is laid out as PyTorch's TensorIterator lays it out, so
// that strides, is_contiguous() and which view() calls succeed match:
// - when the inputs (as cast to the compute dtype) all have the result's
//   shape (no Scalar, no broadcasting): all contiguous gives a contiguous
//   output, all channels_last gives channels_last, all non-overlapping and
//   dense with the same strides gives those strides (a transposed input
//   gives a transposed output);
// - otherwise the dims are ranked by the operands' strides, the output's
//   first when it is given: a broadcast dim (stride 0) decides nothing and
//   the scan goes on past it, a larger stride goes outside, and of two equal
//   strides the larger dim goes outside. A dim of size 1 in the result is
//   ranked by its stride too (a permuted (3, 1, 2) tensor keeps its order).
//   The natural order gives contiguous strides; another order gives dense
//   strides in that order (a dim of size 0 makes the strides outside it 0).
// The fast path's contiguous output has the canonical strides, except with
// a Scalar operand and an input without elements or whose dims of size 1
// have other strides:
// that goes the ranked way, as in PyTorch. empty_like follows the same rule
// (Note [Preserved strides]).
bool IterBuilder::same_layout_strides(const TensorIter& it, IntArrayRef shape, DimVector& strides) const {
  // (the inputs as cast to the compute dtype, as PyTorch decides after casting)
  if (ninputs_ == 0) return false;
  const Tensor& first = it.operands[1];
  bool contiguous = true, same = true;
  for (int i = 0; i < ninputs_; ++i) {
    if (is_scalar_[i]) return false;
    const Tensor& t = it.operands[i + 1];
    if (!(t.sizes() == shape)) return false;
    contiguous = contiguous && t.is_contiguous();
    same = same && t.strides() == first.strides();
  }
  if (contiguous) {
    strides = detail::contiguous_strides(shape);
    return true;
  }
  if (shape.size() == 4) {
    bool channels_last = true;
    for (int i = 0; i < ninputs_ && channels_last; ++i)
      channels_last = it.operands[i + 1].is_contiguous(kChannelsLast);
    if (channels_last) {
      strides = detail::channels_last_strides(shape);
      return true;
    }
  }
  if (!same) return false;
  for (int i = 0; i < ninputs_; ++i)
    if (!detail::non_overlapping_and_dense(it.operands[i + 1])) return false;
  strides = DimVector(first.strides().begin(), first.strides().end());
  return true;
}

void IterBuilder::build(TensorIter& it) {
  const int nops = ninputs_ + 1;
  BRISK_ASSERT(nops <= TensorIter::kMaxOperands);
  it.noperands = nops;

  // 1. Dtypes.
  ScalarType compute = compute_dtype_;
  if (compute == ScalarType::Undefined) {
    if (!cast_inputs_) {
      compute = has_out() ? out_->dtype() : in(0).dtype();
    } else if (ninputs_ == 2 && !is_scalar_[0] && !is_scalar_[1] && promote_[0] && promote_[1] &&
               in(0).dtype() == in(1).dtype()) {
      compute = in(0).dtype();  // the common binary case: nothing to promote
    } else {
      ResultTypeState st;
      for (int i = 0; i < ninputs_; ++i) {
        if (!promote_[i]) continue;
        if (is_scalar_[i])
          st.update(scalars_[i]);
        else
          st.update(in(i));
      }
      compute = st.result();
    }
  }
  if (int_to_float_ && !is_floating_point(compute)) compute = default_dtype();
  it.compute_dtype = compute;
  const ScalarType result_dtype = out_dtype_ != ScalarType::Undefined ? out_dtype_ : compute;

  if (try_fast_path(it, compute, result_dtype)) return;

  // 2. Broadcast shape of the tensor inputs.
  Device dev = has_out() ? out_->device() : Device(kCPU);
  bool have_dev = has_out();
  // A 0-dim CPU tensor does not decide the device when another tensor is on
  // a GPU (cpu_scalar + cuda_tensor runs on the GPU, as in PyTorch).
  bool dev_from_cpu_scalar = false;
  DimVector shape;
  for (int i = 0; i < ninputs_; ++i) {
    if (is_scalar_[i]) continue;
    const Tensor& t = in(i);
    const bool cpu_scalar = t.dim() == 0 && t.is_cpu();
    if (!have_dev || (dev_from_cpu_scalar && !cpu_scalar)) {
      dev = t.device();
      have_dev = true;
      dev_from_cpu_scalar = cpu_scalar;
    } else {
      // A 0-dim CPU tensor may meet a tensor on another device (as in PyTorch).
      BRISK_CHECK(t.device() == dev || (t.dim() == 0 && t.is_cpu()), op_,
                  "expected all tensors to be on the same device, but found ", dev, " and ", t.device());
    }
    if (shape.empty() && t.dim() == 0) continue;
    if (shape.empty())
      shape = DimVector(t.sizes().begin(), t.sizes().end());
    else if (!(IntArrayRef(shape) == t.sizes()))
      shape = broadcast_shapes(shape, t.sizes(), op_);
  }
  if (ninputs_ == 0 || (shape.empty() && has_out() && inplace_)) {
    // fill_: the output alone sets the shape.
    BRISK_ASSERT(has_out());
    if (shape.empty()) shape = DimVector(out_->sizes().begin(), out_->sizes().end());
  }
  const int nd = static_cast<int>(shape.size());
  BRISK_CHECK(nd <= TensorIter::kMaxDims, op_, "tensors with more than ", TensorIter::kMaxDims,
              " dims are not supported (got ", nd, ")");

  // 3. The output.
  Tensor out = has_out() ? *out_ : Tensor();
  if (out.defined()) {
    if (inplace_) {
      BRISK_CHECK(out.sizes() == IntArrayRef(shape), op_, "output with shape ", out.sizes(),
                  " doesn't match the broadcast shape ", IntArrayRef(shape));
      BRISK_CHECK(result_dtype == out.dtype() || can_cast(result_dtype, out.dtype()), op_, "result type ",
                  result_dtype, " can't be cast to the desired output type ", out.dtype());
    } else {
      if (resize_out_ && out.numel() == 0 && multiply(shape) != 0) {
        detail::resize_(out, shape);
      }
      BRISK_CHECK(out.sizes() == IntArrayRef(shape), op_, "output with shape ", out.sizes(),
                  " doesn't match the broadcast shape ", IntArrayRef(shape));
      BRISK_CHECK(result_dtype == out.dtype() || can_cast(result_dtype, out.dtype()), op_, "result type ",
                  result_dtype, " can't be cast to the desired output type ", out.dtype());
    }
    if (!allow_overlap_) check_no_internal_overlap(op_, out);
    for (int i = 0; i < ninputs_; ++i)
      if (!is_scalar_[i]) check_no_partial_overlap(op_, out, in(i));
  }

  // 4. Inputs, cast to the compute dtype.
  for (int i = 0; i < ninputs_; ++i) {
    const int k = i + 1;
    if (is_scalar_[i]) {
      write_scalar(it.scalar_buf[k], scalars_[i], compute);
      it.operands[k] = Tensor();
      it.dtypes[k] = compute;
      it.data[k] = it.scalar_buf[k];
      continue;
    }
    Tensor t = in(i);
    if (cast_inputs_ && promote_[i] && t.dtype() != compute) t = t.to(compute);
    it.operands[k] = t;
    it.dtypes[k] = t.dtype();
    it.data[k] = static_cast<char*>(t.data_ptr());
  }

  // 5. Strides per operand, innermost dim first.
  // `st` walks the elements (0 where a dim has size 1); `ost` orders the dims
  // (step 6): a dim of size 1 in the result keeps the operand's own stride
  // there, only a broadcast dim says nothing (Note [Output layout]).
  int64_t st[TensorIter::kMaxOperands][TensorIter::kMaxDims];
  int64_t ost[TensorIter::kMaxOperands][TensorIter::kMaxDims];
  int64_t sz[TensorIter::kMaxDims];
  for (int d = 0; d < nd; ++d) sz[d] = shape[nd - 1 - d];
  auto fill_strides = [&](int k, const Tensor& t) {
    const int off = nd - static_cast<int>(t.dim());
    for (int d = 0; d < nd; ++d) {
      const int src = nd - 1 - d - off;  // dim of t aligned from the right
      st[k][d] = (src < 0 || t.size(src) == 1) ? 0 : t.stride(src);
      ost[k][d] = (src < 0 || (t.size(src) == 1 && sz[d] != 1)) ? 0 : t.stride(src);
    }
  };
  for (int i = 0; i < ninputs_; ++i) {
    if (is_scalar_[i])
      for (int d = 0; d < nd; ++d) st[i + 1][d] = ost[i + 1][d] = 0;
    else
      fill_strides(i + 1, it.operands[i + 1]);
  }
  if (out.defined()) fill_strides(0, out);

  // 6. Order dims by stride (innermost first), output first, then inputs
  //    (Note [Output layout]).
  int perm[TensorIter::kMaxDims];
  for (int d = 0; d < nd; ++d) perm[d] = d;
  const int first_op = out.defined() ? 0 : 1;
  auto outer = [&](int d0, int d1) {  // +1: d0 belongs outside d1; -1: inside; 0: undecided
    for (int k = first_op; k < nops; ++k) {
      const int64_t s0 = ost[k][d0], s1 = ost[k][d1];
      if (s0 == 0 || s1 == 0) continue;
      if (s0 != s1) return s0 > s1 ? 1 : -1;
      if (sz[d0] > sz[d1]) return 1;
    }
    return 0;
  };
  for (int i = 1; i < nd; ++i) {
    int pos = i;  // where the dim being placed sits now
    for (int j = i - 1; j >= 0; --j) {
      const int c = outer(perm[j], perm[pos]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(perm[j], perm[pos]);
        pos = j;
      }
    }
  }

  if (!out.defined()) {
    DimVector ostrides(nd);
    if (!same_layout_strides(it, shape, ostrides)) {
      bool natural = true;
      for (int i = 0; i < nd && natural; ++i) natural = perm[i] == i;
      if (natural) {
        ostrides = detail::contiguous_strides(shape);
      } else {
        // Dense, in the inputs' memory order (a dim of size 0 makes the
        // strides outside it 0, as in PyTorch).
        int64_t acc = 1;
        for (int i = 0; i < nd; ++i) {
          const int d = perm[i];
          ostrides[nd - 1 - d] = acc;
          acc *= sz[d];
        }
      }
    }
    out = detail::make_tensor(shape, ostrides, result_dtype, dev);
    for (int d = 0; d < nd; ++d) st[0][d] = sz[d] == 1 ? 0 : ostrides[nd - 1 - d];
  }
  it.result = out;
  Tensor target = out;
  if (out.dtype() != result_dtype) {
    it.staging = detail::make_tensor(shape, {}, result_dtype, dev);
    target = it.staging;
    fill_strides(0, target);
  }
  it.operands[0] = target;
  it.dtypes[0] = target.dtype();
  it.data[0] = static_cast<char*>(target.data_ptr());

  // 7. Coalesce, convert to bytes.
  int n = 0;
  it.numel = multiply(shape);
  for (int i = 0; i < nd; ++i) {
    const int d = perm[i];
    if (sz[d] == 1) continue;
    if (n > 0) {
      bool merge = true;
      for (int k = 0; k < nops && merge; ++k)
        merge = it.shape[n - 1] * it.strides[k][n - 1] == st[k][d];
      if (merge) {
        it.shape[n - 1] *= sz[d];
        continue;
      }
    }
    it.shape[n] = sz[d];
    for (int k = 0; k < nops; ++k) it.strides[k][n] = st[k][d];
    ++n;
  }
  if (n == 0 && it.numel > 0) {  // all dims of size 1: one element
    it.shape[0] = 1;
    for (int k = 0; k < nops; ++k) it.strides[k][0] = 0;
    n = 1;
  }
  it.ndim = n;
  for (int k = 0; k < nops; ++k) {
    const int64_t es = static_cast<int64_t>(element_size(it.dtypes[k]));
    for (int d = 0; d < n; ++d) it.strides[k][d] *= es;
  }
  // A single element has stride 0 everywhere; give contiguous strides so the
  // fast path applies.
  if (n == 1 && it.shape[0] == 1)
    for (int k = 0; k < nops; ++k) it.strides[k][0] = static_cast<int64_t>(element_size(it.dtypes[k]));
}

}  // namespace brisk
