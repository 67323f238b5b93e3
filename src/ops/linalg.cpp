// Front ends of the matrix products: matmul, mm, bmm, addmm, mv, dot, outer,
// einsum. Every product ends in one call of the GEMM kernel on 3-D views:
// out (B, m, n) = beta * out + alpha * a (B, m, k) @ b (B, k, n).
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "core/autocast.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "core/trace_hooks.h"
#include "core/tensor_create.h"
#include "profiler/record.h"

namespace brisk {

namespace {

// ---- checks -------------------------------------------------------------------

/// Both operands of a product: defined, same device, same dtype, not bool.
/// `pair` names them in messages ("m1 and m2").
void check_operands(const char* op, const Tensor& a, const Tensor& b, const char* pair = "m1 and m2") {
  BRISK_CHECK(a.defined() && b.defined(), op, "expected defined tensors");
  BRISK_CHECK(a.device() == b.device(), op, "expected all tensors to be on the same device, but found ",
              a.device(), " and ", b.device());
  BRISK_CHECK(a.dtype() == b.dtype(), op, "expected ", pair, " to have the same dtype, but got: ", a.dtype(),
              " != ", b.dtype());
  BRISK_CHECK(a.dtype() != kBool, op, "not supported for dtype bool");
}

/// out= of a product: same dtype and device as the result; resized when it
/// has no elements, else its shape must equal the result's.
void prepare_out(const char* op, Tensor& out, IntArrayRef shape, const Tensor& like) {
  BRISK_CHECK(out.defined(), op, "out is an undefined tensor");
  BRISK_CHECK(out.dtype() == like.dtype(), op, "expected out to have dtype ", like.dtype(), ", but got ",
              out.dtype(), " instead");
  BRISK_CHECK(out.device() == like.device(), op, "expected out on ", like.device(), ", but got ", out.device());
  if (out.numel() == 0 && !(out.sizes() == shape)) detail::resize_(out, shape);
  BRISK_CHECK(out.sizes() == shape, op, "expected out to have shape ", shape, ", but got ", out.sizes());
}

// ---- the one call into the kernel -----------------------------------------------

/// out3 (B, m, n) = beta * out3 + alpha * a3 @ b3. If out3 shares memory with
/// an input, the product goes through a scratch tensor.
void gemm3(const char* op, const Tensor& out3, const Tensor& a3, const Tensor& b3, const Scalar& alpha = 1,
           const Scalar& beta = 0) {
  if (out3.numel() == 0) return;
  auto fn = kernel<OpId::gemm>(out3.device().type, op);
  if (out3.is_alias_of(a3) || out3.is_alias_of(b3)) {
    Tensor tmp = beta.to_double() == 0.0 ? empty(out3.sizes(), out3.options()) : out3.clone(kContiguous);
    fn(tmp, a3, b3, alpha, beta);
    Tensor(out3).copy_(tmp);
    return;
  }
  fn(out3, a3, b3, alpha, beta);
  out3.bump_version();
}

/// (m, k) @ (k, n) into out (m, n); shapes already checked.
void mm_into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha = 1,
             const Scalar& beta = 0) {
  gemm3(op, out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), alpha, beta);
}

void check_mm_shapes(const char* op, const Tensor& a, const Tensor& b) {
  BRISK_CHECK(a.dim() == 2, op, "expected m1 to be a matrix (2-D), but got a ", a.dim(), "-D tensor of shape ",
              a.sizes());
  BRISK_CHECK(b.dim() == 2, op, "expected m2 to be a matrix (2-D), but got a ", b.dim(), "-D tensor of shape ",
              b.sizes());
  BRISK_CHECK(a.size(1) == b.size(0), op, "shapes ", a.sizes(), " and ", b.sizes(), ": inner dimensions ",
              a.size(1), " and ", b.size(0), " differ");
}
/// x @ y for a gradient whose input `like` is stored transposed (a weight
/// used as w.t(), as nn::Linear does): computed as (y^T x^T)^T so that the
/// result has like's layout. The leaf then receives a gradient in its own
/// layout, which it takes without a copy, and the optimizer's update reads
/// both in the same order (Note [Gradient layout]).
Tensor mm_in_layout_of(const Tensor& x, const Tensor& y, const Tensor& like) {
  if (like.dim() == 2 && !like.is_contiguous() && like.t().is_contiguous()) return y.t().mm(x.t()).t();
  return x.mm(y);
}


// ---- autograd ---------------------------------------------------------------------
// The formulas use the public products, which record themselves when the
// backward runs with create_graph: double backward needs nothing more.
using autograd::BackwardCtx;

void record_mm(const Tensor& r, const Tensor& a, const Tensor& b) {
  using namespace autograd;
  record("MmBackward0", {r}, {a, b}, {save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
    const Tensor& g = c.grad();
    Tensor x = c.saved(0), y = c.saved(1);
    return {c.needs(0) ? mm_in_layout_of(g, y.t(), x) : Tensor(), c.needs(1) ? mm_in_layout_of(x.t(), g, y) : Tensor()};
  });
}

/// (B, m, k) @ (B, k, n) -> fresh (B, m, n), no checks (bmm, einsum); records BmmBackward0.
Tensor bmm_fresh(const char* op, const Tensor& a, const Tensor& b) {
  Tensor out = empty({a.size(0), a.size(1), b.size(2)}, a.options());
  gemm3(op, out, a, b);
  detail::mark_new_version(out);  // Note [Version counters]
  if (BRISK_UNLIKELY(autograd::should_record(a, b))) {
    using namespace autograd;
    record("BmmBackward0", {out}, {a, b}, {save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      return {c.needs(0) ? g.bmm(c.saved(1).transpose(1, 2)) : Tensor(),
              c.needs(1) ? c.saved(0).transpose(1, 2).bmm(g) : Tensor()};
    });
  }
  return out;
}

int64_t leading_numel(const Tensor& t, int64_t trailing);

/// matmul's node for every rank case. With 1-D operands made 2-D (a as a
/// row, b as a column, g with the matching size-1 dims), the gradients are
/// g @ b^T and a^T @ g; the engine sums broadcast batch dims away.
void record_matmul(const Tensor& r, const Tensor& a, const Tensor& b) {
  using namespace autograd;
  const int64_t da = a.dim(), db = b.dim();
  const char* name = da == 1 && db == 1   ? "DotBackward0"
                     : da == 2 && db == 1 ? "MvBackward0"
                     : da == 2 && db == 2 ? "MmBackward0"
                                          : "MatmulBackward0";
  record(name, {r}, {a, b}, {save(a), save(b)}, [da, db](BackwardCtx& c) -> TensorList {
    const Tensor& g = c.grad();
    Tensor x = c.saved(0), y = c.saved(1);
    if (da == 1 && db == 1) return {c.needs(0) ? g * y : Tensor(), c.needs(1) ? g * x : Tensor()};
    Tensor g2 = g;
    if (da == 1) g2 = g2.unsqueeze(-2);  // (..., n) -> (..., 1, n)
    if (db == 1) g2 = g2.unsqueeze(-1);  // (..., m) -> (..., m, 1)
    Tensor ga, gb;
    if (da == 2 && db == 2) {
      if (c.needs(0)) ga = mm_in_layout_of(g2, y.t(), x);
      if (c.needs(1)) gb = mm_in_layout_of(x.t(), g2, y);
      return {ga, gb};
    }
    if (c.needs(0)) {
      ga = g2.matmul(db == 1 ? y.unsqueeze(0) : y.transpose(-1, -2));
      if (da == 1) ga = ga.squeeze(-2);
    }
    if (c.needs(1)) {
      if (da >= 3 && db == 2) {
        // A batch against one matrix (nn::Linear on (B, L, in)): the batch
        // folds into the rows, one GEMM x^T g, as the forward folded it
        // (per batch products summed by the engine would form a
        // (B, k, n) intermediate: 300 MB for a BERT-sized FFN weight).
        const int64_t k = x.size(-1), n = g2.size(-1);
        gb = mm_in_layout_of(x.reshape({leading_numel(x, 1), k}).t(), g2.reshape({leading_numel(g2, 1), n}), y);
      } else {
        gb = (da == 1 ? x.unsqueeze(1) : x.transpose(-1, -2)).matmul(g2);
      }
      if (db == 1) gb = gb.squeeze(-1);
    }
    return {ga, gb};
  });
}

// ---- matmul ---------------------------------------------------------------------

/// Number of elements in all but the last `trailing` dims (no -1 inference,
/// which cannot work when a trailing size is 0).
int64_t leading_numel(const Tensor& t, int64_t trailing) {
  int64_t p = 1;
  for (int64_t d = 0; d < t.dim() - trailing; ++d) p *= t.size(d);
  return p;
}

/// PyTorch's matmul cases. Writes into *out when given (already validated
/// against the result shape), else returns a fresh tensor.
// Note [Small matmul fast path]
// A product of at most 8x8x8 float32/float64 matrices costs less than the
// bookkeeping around the GEMM kernel (3-D views of the operands, the kernel
// table, BLAS layout checks): it is computed here on the raw strides into a
// fresh output, which keeps matmul(3x3, 3x3) near the cost of an add.
template <class T>
void small_mm_loop(T* c, const T* a, const T* b, int64_t m, int64_t n, int64_t k, int64_t sa0, int64_t sa1,
                   int64_t sb0, int64_t sb1) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += a[i * sa0 + p * sa1] * b[p * sb0 + j * sb1];
      c[i * n + j] = acc;
    }
}
bool small_mm(const Tensor& a, const Tensor& b, Tensor& r) {
  // (not while compile traces: the loop writes on the host, unseen)
  if (detail::tracing_any()) return false;
  if (!a.defined() || !b.defined() || a.dim() != 2 || b.dim() != 2 || a.dtype() != b.dtype() || !a.is_cpu() ||
      !b.is_cpu())
    return false;
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (b.size(0) != k || m * n * k > 512 || m * n * k == 0) return false;
  if (a.dtype() == kFloat) {
    r = empty({m, n}, a.options());
    small_mm_loop(r.data_ptr<float>(), a.data_ptr<float>(), b.data_ptr<float>(), m, n, k, a.stride(0), a.stride(1),
                  b.stride(0), b.stride(1));
    return true;
  }
  if (a.dtype() == kDouble) {
    r = empty({m, n}, a.options());
    small_mm_loop(r.data_ptr<double>(), a.data_ptr<double>(), b.data_ptr<double>(), m, n, k, a.stride(0),
                  a.stride(1), b.stride(0), b.stride(1));
    return true;
  }
  return false;
}

Tensor matmul_impl(const char* op, const Tensor& a, const Tensor& b, Tensor* out) {
  if (!out) {
    Tensor r;
    if (small_mm(a, b, r)) return r;
  }
  check_operands(op, a, b, "both arguments");
  const int64_t da = a.dim(), db = b.dim();
  BRISK_CHECK(da >= 1 && db >= 1, op, "both arguments to matmul need to be at least 1D, but they are ", da,
              "D and ", db, "D");
  auto shape_error = [&](int64_t ka, int64_t kb) {
    BRISK_FAIL(op, "shapes ", a.sizes(), " and ", b.sizes(), ": inner dimensions ", ka, " and ", kb, " differ");
  };
  const int64_t ka = a.size(-1), kb = db == 1 ? b.size(0) : b.size(-2);
  if (ka != kb) shape_error(ka, kb);

  // Result shape: broadcast batch dims, then the kept matrix dims.
  DimVector result;
  if (da >= 2 || db >= 2) {
    DimVector ba(a.sizes().begin(), a.sizes().end() - std::min<int64_t>(da, 2));
    DimVector bb(b.sizes().begin(), b.sizes().end() - std::min<int64_t>(db, 2));
    result = broadcast_shapes(ba, bb, op);
    if (da >= 2) result.push_back(a.size(-2));
    if (db >= 2) result.push_back(b.size(-1));
  }
  Tensor r;
  if (out) {
    prepare_out(op, *out, result, a);
    r = *out;
  } else {
    r = empty(result, a.options());
  }
  if (r.numel() == 0) return r;

  // Views of r, a and b as 3-D operands: (B, m, k) @ (B, k, n) -> (B, m, n).
  Tensor a3, b3, r3;
  if (da <= 2 && db <= 2) {
    a3 = da == 1 ? a.unsqueeze(0).unsqueeze(0) : a.unsqueeze(0);
    b3 = db == 1 ? b.unsqueeze(1).unsqueeze(0) : b.unsqueeze(0);
    r3 = r.reshape({1, a3.size(1), b3.size(2)});
  } else if (db <= 2) {
    // (..., m, k) @ (k, n): fold the batch of a into its rows.
    const int64_t n = db == 2 ? b.size(1) : 1;
    a3 = a.reshape({1, leading_numel(a, 1), ka});
    b3 = db == 2 ? b.unsqueeze(0) : b.unsqueeze(1).unsqueeze(0);
    r3 = r.reshape({1, a3.size(1), n});
  } else {
    // Batched with broadcasting: expand both to the batch shape, then (B, m, k) @ (B, k, n).
    DimVector batch(result.begin(), result.end() - (da >= 2 ? 1 : 0) - 1);
    const int64_t m = da >= 2 ? a.size(-2) : 1, n = b.size(-1);
    DimVector ea = batch, eb = batch;
    ea.push_back(m), ea.push_back(ka);
    eb.push_back(kb), eb.push_back(n);
    Tensor ax = da == 1 ? a.unsqueeze(0) : a;
    const int64_t nb = multiply(batch);
    a3 = ax.expand(ea).reshape({nb, m, ka});
    b3 = b.expand(eb).reshape({nb, kb, n});
    r3 = r.reshape({nb, m, n});
  }
  // reshape may have copied r (a non-contiguous out=): compute there, copy back.
  const bool direct = r3.is_alias_of(r);
  gemm3(op, r3, a3, b3);
  if (!direct) r.copy_(r3.view(r.sizes()));
  return r;
}

// ---- einsum ---------------------------------------------------------------------

// Labels: 'A'..'Z' are 0..25, 'a'..'z' are 26..51 (so sorting them gives
// PyTorch's implicit output order), ellipsis dims are 52 + i.
constexpr int kLetters = 52;
int label_of(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : c - 'a' + 26; }
char letter_of(int l) { return static_cast<char>(l < 26 ? 'A' + l : 'a' + l - 26); }

/// One operand during the contraction: a tensor and a label per dim.
struct Term {
  Tensor t;
  std::vector<int> labels;
};

/// Sums `t` over the listed dims (via a product with ones, so it needs
/// nothing but GEMM). Returns a tensor of the other dims in order.
Tensor sum_dims(const Tensor& t, const std::vector<int64_t>& dims) {
  if (dims.empty()) return t;
  std::vector<int64_t> keep, order;
  DimVector kept_sizes;
  int64_t s = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) != dims.end()) {
      s *= t.size(d);
    } else {
      keep.push_back(d);
      kept_sizes.push_back(t.size(d));
    }
  }
  order = keep;
  order.insert(order.end(), dims.begin(), dims.end());
  int64_t p = 1;
  for (int64_t v : kept_sizes) p *= v;
  // (1, P, S) @ (1, S, 1) -> (1, P, 1)
  Tensor m = t.permute(order).reshape({1, p, s});
  Tensor ones_col = ones({1, s, 1}, t.options());
  return bmm_fresh("einsum", m, ones_col).view(kept_sizes);
}

/// Drops the labels of `term` that are not in `needed`, summing over them.
void sum_unneeded(Term& term, const std::array<bool, 128>& needed) {
  std::vector<int64_t> dims;
  std::vector<int> labels;
  for (size_t i = 0; i < term.labels.size(); ++i) {
    if (needed[term.labels[i]])
      labels.push_back(term.labels[i]);
    else
      dims.push_back(static_cast<int64_t>(i));
  }
  if (dims.empty()) return;
  term.t = sum_dims(term.t, dims);
  term.labels = labels;
}

/// Appends the dims of `t` holding `labels` to `perm` (and their sizes to
/// `sizes`); returns the product of those sizes.
int64_t gather_dims(const Term& t, const std::vector<int>& labels, std::vector<int64_t>& perm, DimVector* sizes) {
  int64_t p = 1;
  for (int l : labels) {
    const auto d = static_cast<int64_t>(std::find(t.labels.begin(), t.labels.end(), l) - t.labels.begin());
    perm.push_back(d);
    p *= t.t.size(d);
    if (sizes) sizes->push_back(t.t.size(d));
  }
  return p;
}

/// Contracts two terms over their shared labels that nothing later needs.
Term contract(Term a, Term b, const std::array<bool, 128>& needed_later) {
  // A label of size 1 on one side and n on the other broadcasts: drop it from
  // the size-1 side (summing a size-1 dim is a squeeze).
  auto drop = [](Term& t, size_t i) {
    t.t = t.t.squeeze(static_cast<int64_t>(i));
    t.labels.erase(t.labels.begin() + static_cast<int64_t>(i));
  };
  for (size_t i = 0; i < a.labels.size();) {
    auto it = std::find(b.labels.begin(), b.labels.end(), a.labels[i]);
    if (it != b.labels.end()) {
      const size_t j = static_cast<size_t>(it - b.labels.begin());
      const int64_t sa = a.t.size(static_cast<int64_t>(i)), sb = b.t.size(static_cast<int64_t>(j));
      if (sa != sb && sa == 1) {
        drop(a, i);
        continue;
      }
      if (sa != sb && sb == 1) drop(b, j);
    }
    ++i;
  }
  // Labels only on one side that nothing later needs are summed out first.
  std::array<bool, 128> need_a = needed_later, need_b = needed_later;
  for (int l : b.labels) need_a[l] = true;
  for (int l : a.labels) need_b[l] = true;
  sum_unneeded(a, need_a);
  sum_unneeded(b, need_b);

  std::vector<int> batch, aonly, bonly, summed;
  for (int l : a.labels) {
    const bool in_b = std::find(b.labels.begin(), b.labels.end(), l) != b.labels.end();
    if (in_b)
      (needed_later[l] ? batch : summed).push_back(l);
    else
      aonly.push_back(l);
  }
  for (int l : b.labels)
    if (std::find(a.labels.begin(), a.labels.end(), l) == a.labels.end()) bonly.push_back(l);

  // a -> (batch, aonly, summed) as (Bt, M, K); b -> (batch, summed, bonly) as (Bt, K, N).
  std::vector<int64_t> pa, pb;
  DimVector out_sizes;
  const int64_t nb = gather_dims(a, batch, pa, &out_sizes);
  const int64_t m = gather_dims(a, aonly, pa, &out_sizes);
  const int64_t k = gather_dims(a, summed, pa, nullptr);
  gather_dims(b, batch, pb, nullptr);
  gather_dims(b, summed, pb, nullptr);
  const int64_t n = gather_dims(b, bonly, pb, &out_sizes);
  Tensor a3 = a.t.permute(pa).reshape({nb, m, k});
  Tensor b3 = b.t.permute(pb).reshape({nb, k, n});
  Term r;
  r.t = bmm_fresh("einsum", a3, b3).view(out_sizes);
  r.labels = batch;
  r.labels.insert(r.labels.end(), aonly.begin(), aonly.end());
  r.labels.insert(r.labels.end(), bonly.begin(), bonly.end());
  return r;
}

}  // namespace

// ---- public front ends ------------------------------------------------------------

Tensor matmul(const Tensor& a, const Tensor& b) {
  BRISK_AUTOCAST(matmul, matmul, a, b);
  BRISK_PROFILE_OP("matmul", a, b);
  if (BRISK_LIKELY(!autograd::should_record(a, b))) return matmul_impl("matmul", a, b, nullptr);
  Tensor r;
  {
    NoGradGuard no_grad;  // the views taken inside are internals of one node
    r = matmul_impl("matmul", a, b, nullptr);
  }
  record_matmul(r, a, b);
  return r;
}
Tensor& matmul_out(Tensor& out, const Tensor& a, const Tensor& b) {
  BRISK_PROFILE_OP("matmul_out", a, b);
  autograd::check_out("matmul_out", a, b);
  matmul_impl("matmul_out", a, b, &out);
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  BRISK_AUTOCAST(mm, mm, a, b);
  BRISK_PROFILE_OP("mm", a, b);
  Tensor out;
  if (BRISK_LIKELY(!autograd::should_record(a, b)) && small_mm(a, b, out)) return out;
  check_operands("mm", a, b);
  check_mm_shapes("mm", a, b);
  out = empty({a.size(0), b.size(1)}, a.options());
  if (BRISK_LIKELY(!autograd::should_record(a, b))) {
    mm_into("mm", out, a, b);
    return out;
  }
  {
    NoGradGuard no_grad;
    mm_into("mm", out, a, b);
  }
  record_mm(out, a, b);
  return out;
}
Tensor& mm_out(Tensor& out, const Tensor& a, const Tensor& b) {
  BRISK_PROFILE_OP("mm_out", a, b);
  check_operands("mm_out", a, b);
  check_mm_shapes("mm_out", a, b);
  autograd::check_out("mm_out", a, b);
  prepare_out("mm_out", out, {a.size(0), b.size(1)}, a);
  mm_into("mm_out", out, a, b);
  return out;
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  BRISK_AUTOCAST(bmm, bmm, a, b);
  BRISK_PROFILE_OP("bmm", a, b);
  check_operands("bmm", a, b, "batch1 and batch2");
  BRISK_CHECK(a.dim() == 3, "bmm", "batch1 must be a 3D tensor, but got shape ", a.sizes());
  BRISK_CHECK(b.dim() == 3, "bmm", "batch2 must be a 3D tensor, but got shape ", b.sizes());
  BRISK_CHECK(a.size(0) == b.size(0), "bmm", "shapes ", a.sizes(), " and ", b.sizes(), ": batch sizes ",
              a.size(0), " and ", b.size(0), " differ");
  BRISK_CHECK(a.size(2) == b.size(1), "bmm", "shapes ", a.sizes(), " and ", b.sizes(), ": inner dimensions ",
              a.size(2), " and ", b.size(1), " differ");
  return bmm_fresh("bmm", a, b);
}

Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  BRISK_AUTOCAST(addmm, addmm, self, m1, m2, beta, alpha);
  BRISK_PROFILE_OP("addmm", self, m1, m2);
  check_operands("addmm", m1, m2);
  check_mm_shapes("addmm", m1, m2);
  BRISK_CHECK(self.defined(), "addmm", "self is an undefined tensor");
  BRISK_CHECK(self.dtype() == m1.dtype(), "addmm", "expected self and m1 to have the same dtype, but got: ",
              self.dtype(), " != ", m1.dtype());
  BRISK_CHECK(self.device() == m1.device(), "addmm", "expected all tensors to be on the same device, but found ",
              self.device(), " and ", m1.device());
  const int64_t m = m1.size(0), n = m2.size(1);
  DimVector shape = broadcast_shapes(self.sizes(), {m, n}, "addmm");
  BRISK_CHECK(IntArrayRef(shape) == IntArrayRef({m, n}), "addmm", "self of shape ", self.sizes(),
              " cannot be broadcast to the product's shape ", IntArrayRef({m, n}));
  Tensor out = empty({m, n}, m1.options());
  // beta = 0 ignores self entirely (NaN and inf in self do not propagate).
  // Integer tensors truncate float alpha/beta, as PyTorch does (beta = 0.5 is 0).
  // Likewise alpha = 0 ignores the product (BLAS does not read m1 and m2 then):
  // addmm(s, [[inf]], [[1]], alpha=0) is beta * s, not NaN.
  const bool fp = is_floating_point(m1.dtype());
  if (!fp) {  // torch's checked conversion: alpha = -1.5 for uint8 raises, 0.5 truncates
    detail::check_scalar_fits("addmm", beta, m1.dtype());
    detail::check_scalar_fits("addmm", alpha, m1.dtype());
  }
  const bool use_self = fp ? beta.to_double() != 0.0 : beta.to<int64_t>() != 0;
  const bool use_product = fp ? alpha.to_double() != 0.0 : alpha.to<int64_t>() != 0;
  const bool rec = autograd::should_record(self, m1, m2);
  {
    std::optional<NoGradGuard> no_grad;  // internals of the one AddmmBackward0 node
    if (BRISK_UNLIKELY(rec)) no_grad.emplace();
    if (use_self) out.copy_(self.expand({m, n}));
    if (use_product)
      mm_into("addmm", out, m1, m2, alpha, use_self ? beta : Scalar(0));
    else if (use_self)
      out.mul_(fp ? beta : Scalar(beta.to<int64_t>()));
    else
      out.zero_();
  }
  detail::mark_new_version(out);  // Note [Version counters]
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    const double b = use_self ? beta.to_double() : 0.0, al = alpha.to_double();
    record("AddmmBackward0", {out}, {self, m1, m2}, {save(m1), save(m2)}, [b, al](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      Tensor gs, g1, g2;
      if (c.needs(0)) gs = b == 1.0 ? g : g * b;
      if (c.needs(1)) {
        g1 = mm_in_layout_of(g, c.saved(1).t(), c.saved(0));
        if (al != 1.0) g1 = g1 * al;
      }
      if (c.needs(2)) {
        // linear passes w.t() as mat2: its gradient comes out transposed, so
        // that w's gradient (after TBackward0) is contiguous and stolen.
        g2 = mm_in_layout_of(c.saved(0).t(), g, c.saved(1));
        if (al != 1.0) g2 = g2 * al;
      }
      return {gs, g1, g2};
    });
  }
  return out;
}

Tensor mv(const Tensor& mat, const Tensor& vec) {
  BRISK_AUTOCAST(mv, mv, mat, vec);
  BRISK_PROFILE_OP("mv", mat, vec);
  check_operands("mv", mat, vec, "mat and vec");
  BRISK_CHECK(mat.dim() == 2 && vec.dim() == 1, "mv", "expected a matrix and a vector, but got shapes ", mat.sizes(),
              " and ", vec.sizes());
  BRISK_CHECK(mat.size(1) == vec.size(0), "mv", "shapes ", mat.sizes(), " and ", vec.sizes(),
              ": inner dimensions ", mat.size(1), " and ", vec.size(0), " differ");
  Tensor out = empty({mat.size(0)}, mat.options());
  const bool rec = autograd::should_record(mat, vec);
  {
    std::optional<NoGradGuard> no_grad;
    if (BRISK_UNLIKELY(rec)) no_grad.emplace();
    // (1, m, k) @ (1, k, 1) -> (1, m, 1)
    gemm3("mv", out.view({1, mat.size(0), 1}), mat.unsqueeze(0), vec.unsqueeze(1).unsqueeze(0));
  }
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    record("MvBackward0", {out}, {mat, vec}, {save(mat), save(vec)}, [](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      return {c.needs(0) ? g.outer(c.saved(1)) : Tensor(), c.needs(1) ? c.saved(0).t().mv(g) : Tensor()};
    });
  }
  return out;
}

Tensor dot(const Tensor& a, const Tensor& b) {
  BRISK_AUTOCAST(dot, dot, a, b);
  BRISK_PROFILE_OP("dot", a, b);
  BRISK_CHECK(a.defined() && b.defined(), "dot", "expected defined tensors");
  BRISK_CHECK(a.dim() == 1 && b.dim() == 1, "dot", "1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
              "D tensors");
  check_operands("dot", a, b, "both vectors");
  BRISK_CHECK(a.size(0) == b.size(0), "dot", "shapes ", a.sizes(), " and ", b.sizes(),
              ": inconsistent number of elements ", a.size(0), " and ", b.size(0));
  Tensor out = empty({}, a.options());
  const bool rec = autograd::should_record(a, b);
  {
    std::optional<NoGradGuard> no_grad;
    if (BRISK_UNLIKELY(rec)) no_grad.emplace();
    // (1, 1, k) @ (1, k, 1) -> (1, 1, 1)
    gemm3("dot", out.view({1, 1, 1}), a.unsqueeze(0).unsqueeze(0), b.unsqueeze(1).unsqueeze(0));
  }
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    record("DotBackward0", {out}, {a, b}, {save(a), save(b)}, [](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      return {c.needs(0) ? g * c.saved(1) : Tensor(), c.needs(1) ? g * c.saved(0) : Tensor()};
    });
  }
  return out;
}

Tensor outer(const Tensor& a, const Tensor& b) {
  BRISK_PROFILE_OP("outer", a, b);
  BRISK_CHECK(a.defined() && b.defined(), "outer", "expected defined tensors");
  BRISK_CHECK(a.dim() == 1, "outer", "expected 1-D argument self, but got ", a.dim(), "-D");
  BRISK_CHECK(b.dim() == 1, "outer", "expected 1-D argument vec2, but got ", b.dim(), "-D");
  // (n, 1) * (m,) -> (n, m), with mul's type promotion as in PyTorch.
  return a.unsqueeze(1).mul(b);
}

Tensor einsum(std::string_view eq, const std::vector<Tensor>& operands) {
  BRISK_AUTOCAST(einsum, einsum, eq, operands);
  BRISK_PROFILE_OP("einsum", operands);
  const char* op = "einsum";
  BRISK_CHECK(!operands.empty(), op, "must provide at least one operand");
  for (size_t i = 0; i < operands.size(); ++i) {
    BRISK_CHECK(operands[i].defined(), op, "operand ", i, " is an undefined tensor");
    BRISK_CHECK(operands[i].dtype() == operands[0].dtype(), op, "operands must have the same dtype, but operand ",
                i, " is ", operands[i].dtype(), " and operand 0 is ", operands[0].dtype());
    BRISK_CHECK(operands[i].device() == operands[0].device(), op, "operands must be on the same device, got ",
                operands[0].device(), " and ", operands[i].device());
  }
  // bool: one operand only (a view, or a sum to int64 below), as in PyTorch, whose bmm lacks bool.
  BRISK_CHECK(operands[0].dtype() != kBool || operands.size() == 1, op, "not supported for dtype bool");

  // 1. Parse "lhs[->rhs]": per operand its letters, with -1 marking "...".
  const size_t arrow = eq.find("->");
  const std::string_view lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> subs(1);
  auto parse_term = [&](std::string_view s, std::vector<int>& out, bool& has_ellipsis, const char* what) {
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (c == ' ') continue;
      if (c == '.') {
        BRISK_CHECK(s.substr(i, 3) == "...", op, "invalid '.' in ", what, " of equation '", eq,
                    "': expected an ellipsis '...'");
        BRISK_CHECK(!has_ellipsis, op, "found more than one ellipsis in ", what, " of equation '", eq, "'");
        has_ellipsis = true;
        out.push_back(-1);
        i += 2;
        continue;
      }
      BRISK_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), op, "invalid subscript '", c,
                  "' in equation '", eq, "': subscripts must be letters [a-zA-Z]");
      out.push_back(label_of(c));
    }
  };
  {
    size_t start = 0;
    std::vector<std::string_view> parts;
    for (size_t i = 0; i <= lhs.size(); ++i)
      if (i == lhs.size() || lhs[i] == ',') {
        parts.push_back(lhs.substr(start, i - start));
        start = i + 1;
      }
    BRISK_CHECK(parts.size() == operands.size(), op, "the equation '", eq, "' names ", parts.size(),
                " operands but ", operands.size(), " were given");
    subs.assign(parts.size(), {});
    for (size_t i = 0; i < parts.size(); ++i) {
      bool ell = false;
      parse_term(parts[i], subs[i], ell, "an operand");
    }
  }

  // 2. Per operand: map "..." to ellipsis labels (right-aligned across
  // operands), take diagonals of repeated labels.
  int64_t n_ell = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const int64_t named = static_cast<int64_t>(std::count_if(subs[i].begin(), subs[i].end(), [](int l) {
      return l >= 0;
    }));
    const bool ell = named != static_cast<int64_t>(subs[i].size());
    const int64_t nd = operands[i].dim();
    BRISK_CHECK(ell ? nd >= named : nd == named, op, "operand ", i, " has ", nd, " dimensions but the equation '",
                eq, "' names ", named, ell ? " (plus an ellipsis)" : "");
    if (ell) n_ell = std::max(n_ell, nd - named);
  }
  BRISK_CHECK(kLetters + n_ell <= 128, op, "too many dimensions under the ellipsis (", n_ell, ")");
  std::vector<Term> terms(operands.size());
  std::array<int64_t, 128> label_size;
  label_size.fill(-1);
  std::array<int, 128> count{};  // occurrences of each letter in the inputs
  for (const auto& s : subs)
    for (int l : s)
      if (l >= 0) ++count[l];
  for (size_t i = 0; i < operands.size(); ++i) {
    Term& t = terms[i];
    t.t = operands[i];
    const int64_t named = static_cast<int64_t>(std::count_if(subs[i].begin(), subs[i].end(), [](int l) {
      return l >= 0;
    }));
    const int64_t e = t.t.dim() - named;
    for (int l : subs[i]) {
      if (l >= 0) {
        t.labels.push_back(l);
        continue;
      }
      for (int64_t j = 0; j < e; ++j) t.labels.push_back(kLetters + static_cast<int>(n_ell - e + j));
    }
    // Repeated labels: diagonal over the first two occurrences (appended last).
    for (size_t p = 0; p < t.labels.size(); ++p) {
      for (size_t q = p + 1; q < t.labels.size();) {
        if (t.labels[q] != t.labels[p]) {
          ++q;
          continue;
        }
        const int64_t sp = t.t.size(static_cast<int64_t>(p)), sq = t.t.size(static_cast<int64_t>(q));
        BRISK_CHECK(sp == sq, op, "subscript ", letter_of(t.labels[p]), " is repeated for operand ", i,
                    " but the sizes don't match, ", sq, " != ", sp);
        const int l = t.labels[p];
        t.t = t.t.diagonal(0, static_cast<int64_t>(p), static_cast<int64_t>(q));
        t.labels.erase(t.labels.begin() + static_cast<int64_t>(q));
        t.labels.erase(t.labels.begin() + static_cast<int64_t>(p));
        t.labels.push_back(l);
        p = static_cast<size_t>(-1);  // restart: positions moved
        break;
      }
    }
    for (size_t d = 0; d < t.labels.size(); ++d) {
      const int l = t.labels[d];
      const int64_t s = t.t.size(static_cast<int64_t>(d));
      if (label_size[l] < 0 || label_size[l] == 1) {
        label_size[l] = s;
      } else {
        BRISK_CHECK(s == label_size[l] || s == 1, op, "subscript ",
                    l < kLetters ? std::string(1, letter_of(l)) : std::string("..."), " has size ", s,
                    " for operand ", i, " which does not broadcast with previously seen size ", label_size[l]);
      }
    }
  }

  // 3. Output labels: explicit, or ellipsis dims then the letters seen once, sorted.
  std::vector<int> out_labels;
  if (arrow != std::string_view::npos) {
    std::vector<int> rhs;
    bool ell = false;
    parse_term(eq.substr(arrow + 2), rhs, ell, "the output");
    std::array<bool, 128> used{};
    for (int l : rhs) {
      if (l < 0) {
        for (int64_t j = 0; j < n_ell; ++j) out_labels.push_back(kLetters + static_cast<int>(j));
        continue;
      }
      BRISK_CHECK(!used[l], op, "output subscript ", letter_of(l), " appears more than once in equation '", eq,
                  "'");
      BRISK_CHECK(count[l] > 0, op, "output subscript ", letter_of(l),
                  " does not appear in the equation for any input operand ('", eq, "')");
      used[l] = true;
      out_labels.push_back(l);
    }
    // Ellipsis dims present in the inputs but not in the output are summed.
  } else {
    for (int64_t j = 0; j < n_ell; ++j) out_labels.push_back(kLetters + static_cast<int>(j));
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) out_labels.push_back(l);
  }
  std::array<bool, 128> in_out{};
  for (int l : out_labels) in_out[l] = true;

  // 4. Contract left to right; what a later operand or the output needs stays.
  auto needed_after = [&](size_t i) {
    std::array<bool, 128> need = in_out;
    for (size_t j = i + 1; j < terms.size(); ++j)
      for (int l : terms[j].labels) need[l] = true;
    return need;
  };
  Term acc = terms[0];
  if (terms.size() == 1) {
    // One integer or bool operand with dims summed away: PyTorch sums it with
    // sum(), whose result is int64 ('bij->bj' of int32 or uint8 is int64).
    const std::array<bool, 128> need = needed_after(0);
    const bool sums = std::any_of(acc.labels.begin(), acc.labels.end(), [&](int l) { return !need[l]; });
    if (sums && is_integral(acc.t.dtype(), /*include_bool=*/true)) acc.t = acc.t.to(kInt64);
    sum_unneeded(acc, need);
  }
  for (size_t i = 1; i < terms.size(); ++i) acc = contract(std::move(acc), terms[i], needed_after(i));

  // 5. Arrange as the output; labels of size 1 dropped during broadcasting come back.
  std::vector<int64_t> perm;
  DimVector final_sizes;
  Tensor r = acc.t;
  for (int l : out_labels) {
    auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
    if (it == acc.labels.end()) {
      r = r.unsqueeze(-1);
      acc.labels.push_back(l);
      perm.push_back(r.dim() - 1);
    } else {
      perm.push_back(static_cast<int64_t>(it - acc.labels.begin()));
    }
  }
  BRISK_ASSERT(perm.size() == acc.labels.size());
  r = r.permute(perm);
  // A pure permutation of one operand (e.g. "ij->ji") stays a view, as in PyTorch.
  return r;
}

// ---- Tensor methods ----------------------------------------------------------------
Tensor Tensor::matmul(const Tensor& o) const { return brisk::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return brisk::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return brisk::bmm(*this, o); }
Tensor Tensor::mv(const Tensor& v) const { return brisk::mv(*this, v); }
Tensor Tensor::dot(const Tensor& o) const { return brisk::dot(*this, o); }
Tensor Tensor::outer(const Tensor& o) const { return brisk::outer(*this, o); }
Tensor Tensor::addmm(const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) const {
  return brisk::addmm(*this, m1, m2, beta, alpha);
}

}  // namespace brisk
