// Indexing front ends: Python-style index()/index_put_(), index_select,
// gather, scatter, scatter_add, index_add_, masked_select, nonzero, where(cond).
//
// Note [Basic and advanced indices]
// Integers, slices, None, Ellipsis and bools are *basic* indices: they are
// applied as views (select, slice, unsqueeze, narrow) and share storage.
// Index tensors and masks are *advanced*: they broadcast together to a shape
// B and the result allocates, following numpy/PyTorch:
//   x: (A, X, Y, Z); x[:, i, j] with i, j broadcast to B -> (A, B..., Z)
//   (adjacent advanced indices stay in place), x[i, :, j] -> (B..., X, Z)
//   (separated ones go first). A bool mask of k dims acts like its nonzero()
//   coordinates, i.e. k index tensors. As in PyTorch, integers always select
//   (even next to tensors), and a bool is an advanced index of shape [1]
//   (True) or [0] (False) on a new dim; when no tensor is present the bools'
//   shape is built as a view, then index() copies it (a copy in PyTorch too:
//   x[True].fill_(5) leaves x alone). index_put_ writes through that view,
//   and a lone bool is PyTorch's fast path (x[False] = v does nothing).
//   Unlike PyTorch (and like numpy), a multi-dim mask consumes all its dims
//   before the next index is applied, at most one Ellipsis is allowed, and
//   index values are checked even when the result is empty.
// The kernels see the view, a (k, N) int64 matrix of broadcast indices and
// the rows (N, rest...) to fill or read (Note [Advanced index kernel layout]).
#include <algorithm>
#include <optional>
#include <sstream>
#include <string_view>

#include "core/autocast.h"
#include "brisk/ops.h"
#include "autograd/function.h"
#include "core/dispatch.h"
#include "core/tensor_create.h"
#include "core/tensor_iter.h"
#include "profiler/record.h"

namespace brisk {

using detail::make_tensor;
using detail::wrap_dim;

TensorIndex::TensorIndex(const char* s) : kind_(Kind::Ellipsis) {
  BRISK_CHECK(s != nullptr && std::string_view(s) == "...", "index",
              "the only string accepted as an index is \"...\" (Ellipsis), got \"", s ? s : "(null)", "\"");
}

namespace {

bool is_mask_dtype(ScalarType t) { return t == kBool || t == kUInt8; }

/// One advanced index: an integer tensor for view dim `dim`, or a bool/uint8
/// mask covering view dims [dim, dim + mask.dim()).
struct AdvancedIndex {
  Tensor t;
  int64_t dim;
  bool is_mask;
};

/// The result of applying the basic indices (see Note [Basic and advanced indices]).
struct Parsed {
  Tensor view;
  std::vector<AdvancedIndex> adv;
  bool identity = false;  ///< view is a plain alias of self (no basic index changed it)
  bool bools = false;     ///< bools (no tensor) were applied as a view: index() copies it
};

Tensor select_checked(const Tensor& v, int64_t d, int64_t i, int64_t real_dim, const char* op) {
  const int64_t n = v.size(d);
  BRISK_CHECK(i >= -n && i < n, op, "index ", i, " is out of bounds for dimension ", real_dim, " with size ", n);
  return v.select(d, i);
}

Parsed parse_indices(const Tensor& self, const TensorIndex* ix, size_t count, const char* op) {
  BRISK_CHECK(self.defined(), op, "the indexed tensor is undefined");
  // Pass 1: how many of self's dims the indices consume, and whether any
  // index is advanced (that decides how bools are applied).
  int64_t consumed = 0;
  int ellipses = 0;
  bool advanced = false;
  for (size_t i = 0; i < count; ++i) {
    const TensorIndex& x = ix[i];
    switch (x.kind()) {
      case TensorIndex::Kind::Integer:
      case TensorIndex::Kind::Slice:
        ++consumed;
        break;
      case TensorIndex::Kind::Ellipsis:
        ++ellipses;
        break;
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = x.tensor();
        BRISK_CHECK(t.defined(), op, "index ", i, " is an undefined tensor");
        const ScalarType dt = t.dtype();
        BRISK_CHECK(dt == kInt64 || dt == kInt32 || is_mask_dtype(dt), op,
                    "tensors used as indices must be long, int, byte or bool tensors, got ", dt);
        BRISK_CHECK(t.device() == self.device() || t.is_cpu(), op, "indices should be either on cpu or on the ",
                    "same device as the indexed tensor (", self.device(), "), got ", t.device());
        if (is_mask_dtype(dt)) {
          consumed += t.dim();
          advanced |= t.dim() > 0;
        } else {
          ++consumed;
          advanced |= t.dim() > 0;
        }
        break;
      }
      default:
        break;
    }
  }
  BRISK_CHECK(ellipses <= 1, op, "an index can only have a single ellipsis ('...')");
  BRISK_CHECK(consumed <= self.dim(), op, "too many indices for tensor of dimension ", self.dim(), " (got ",
              consumed, ")");

  // Pass 2: basic indices become views; v's dim d is self's dim `real`.
  Parsed p;
  Tensor v = self;
  int64_t d = 0, real = 0;
  std::vector<int64_t> bool_dims;  // view dims added by bools (when no tensors)
  bool all_true = true;
  auto apply_bool = [&](bool b) {
    v = v.unsqueeze(d);
    if (advanced) {
      p.adv.push_back({b ? zeros({1}, kInt64) : empty({0}, kInt64), d, false});
    } else {
      bool_dims.push_back(d);
      all_true &= b;
    }
    ++d;
  };
  for (size_t i = 0; i < count; ++i) {
    const TensorIndex& x = ix[i];
    switch (x.kind()) {
      case TensorIndex::Kind::None:
        v = v.unsqueeze(d);
        ++d;
        break;
      case TensorIndex::Kind::Ellipsis: {
        const int64_t skip = self.dim() - consumed;
        d += skip;
        real += skip;
        break;
      }
      case TensorIndex::Kind::Integer:
        v = select_checked(v, d, x.integer(), real, op);
        ++real;
        break;
      case TensorIndex::Kind::Boolean:
        apply_bool(x.boolean());
        break;
      case TensorIndex::Kind::Slice: {
        const auto& s = x.slice();
        BRISK_CHECK(s.step > 0, op, "step must be greater than zero, got ", s.step);
        v = v.slice(d, s.start, s.stop, s.step);
        ++d;
        ++real;
        break;
      }
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = x.tensor();
        if (t.dim() == 0) {
          // A 0-dim integer tensor selects; a 0-dim bool acts like a bool.
          if (is_mask_dtype(t.dtype())) {
            apply_bool(t.item<bool>());
          } else {
            v = select_checked(v, d, t.item<int64_t>(), real, op);
            ++real;
          }
        } else if (is_mask_dtype(t.dtype())) {
          for (int64_t j = 0; j < t.dim(); ++j)
            BRISK_CHECK(t.size(j) == v.size(d + j), op, "the shape of the mask ", t.sizes(), " at index ", j,
                        " does not match the shape of the indexed tensor ", v.sizes(), " at index ", d + j);
          p.adv.push_back({t, d, true});
          d += t.dim();
          real += t.dim();
        } else {
          p.adv.push_back({t, d, false});
          ++d;
          ++real;
        }
        break;
      }
    }
  }
  if (!bool_dims.empty()) {
    // Bools alone act like advanced indices of shape [1] (True) or [0]
    // (False) broadcast together: their dims merge into one, placed like any
    // advanced result (x[True, True] is (1, ...), x[True, :, True] is
    // (1, X, ...)), but computed as a view.
    bool adjacent = true;
    for (size_t j = 1; j < bool_dims.size(); ++j)
      adjacent &= bool_dims[j] == bool_dims[0] + static_cast<int64_t>(j);
    for (size_t j = bool_dims.size(); j-- > 0;) v = v.squeeze(bool_dims[j]);
    const int64_t pos = adjacent ? bool_dims[0] : 0;
    v = v.unsqueeze(pos);
    if (!all_true) v = v.narrow(pos, 0, 0);
    p.bools = true;
  }
  // A view even when nothing changed, so that the result is a new handle.
  p.identity = v.is_same(self);
  p.view = p.identity ? detail::make_view(self, self.sizes(), self.strides(), self.storage_offset()) : v;
  return p;
}

/// The geometry of an advanced index (no tensors: backward formulas capture it by value).
struct PlanGeom {
  std::vector<int64_t> dims; ///< the k indexed view dims, ascending
  DimVector bshape;          ///< B, the broadcast shape of the indices
  DimVector result;          ///< the shape of view[indices]
  DimVector view_sizes;      ///< the shape of the indexed view
  int64_t pos = 0;           ///< where B sits in `result`
  int64_t mask_bits = 0;     ///< `dims` as a bitmask (the kernels' dim argument)
};
/// The advanced part, ready for the kernels.
struct AdvancedPlan : PlanGeom {
  Tensor index;              ///< (k, N) int64
};

AdvancedPlan plan_advanced(const Parsed& p, const char* op) {
  AdvancedPlan a;
  const Tensor& v = p.view;
  BRISK_CHECK(v.dim() < 64, op, "advanced indexing supports tensors of up to 63 dims, got ", v.dim());
  if (p.adv.size() == 1 && p.adv[0].is_mask) {
    // x[mask]: the nonzero() coordinates, transposed, are the index matrix.
    const AdvancedIndex& m = p.adv[0];
    Tensor nz = nonzero(m.t);  // (n, k)
    a.index = nz.t();
    a.bshape = DimVector{nz.size(0)};
    for (int64_t j = 0; j < m.t.dim(); ++j) a.dims.push_back(m.dim + j);
  } else {
    std::vector<Tensor> idx;
    for (const AdvancedIndex& x : p.adv) {
      if (x.is_mask) {
        Tensor nz = nonzero(x.t);
        for (int64_t j = 0; j < x.t.dim(); ++j) {
          idx.push_back(nz.select(1, j));
          a.dims.push_back(x.dim + j);
        }
      } else {
        idx.push_back(x.t);
        a.dims.push_back(x.dim);
      }
    }
    // Broadcast all index tensors together (numpy's rule).
    DimVector b(idx[0].sizes().begin(), idx[0].sizes().end());
    for (size_t i = 1; i < idx.size(); ++i) {
      IntArrayRef s = idx[i].sizes();
      const size_t n = std::max(b.size(), s.size());
      DimVector out(n);
      bool ok = true;
      for (size_t j = 0; j < n; ++j) {
        const int64_t x = j < n - b.size() ? 1 : b[j - (n - b.size())];
        const int64_t y = j < n - s.size() ? 1 : s[j - (n - s.size())];
        ok &= x == y || x == 1 || y == 1;
        out[j] = x == 1 ? y : x;
      }
      if (!ok) {
        std::ostringstream shapes;
        for (size_t k = 0; k < idx.size(); ++k) shapes << (k ? ", " : "") << idx[k].sizes();
        BRISK_FAIL(op, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                   shapes.str());
      }
      b = std::move(out);
    }
    a.bshape = b;
    const int64_t n = multiply(b), k = static_cast<int64_t>(idx.size());
    if (k == 1 && idx[0].dtype() == kInt64) {
      a.index = idx[0].reshape({1, n});
    } else {
      a.index = empty({k, n}, kInt64);
      for (int64_t j = 0; j < k; ++j) a.index.select(0, j).view(b).copy_(idx[j]);
    }
  }
  if (a.index.device() != v.device()) a.index = a.index.to(v.device());  // cpu indices for a cuda tensor
  for (int64_t d : a.dims) a.mask_bits |= int64_t(1) << d;
  a.view_sizes = DimVector(v.sizes().begin(), v.sizes().end());

  bool adjacent = true;
  for (size_t j = 1; j < a.dims.size(); ++j) adjacent &= a.dims[j] == a.dims[0] + static_cast<int64_t>(j);
  a.pos = adjacent ? a.dims[0] : 0;
  DimVector rest;
  for (int64_t d = 0; d < v.dim(); ++d)
    if (!((a.mask_bits >> d) & 1)) rest.push_back(v.size(d));
  for (int64_t d = 0; d < a.pos; ++d) a.result.push_back(rest[d]);
  for (int64_t s : a.bshape) a.result.push_back(s);
  for (size_t d = a.pos; d < rest.size(); ++d) a.result.push_back(rest[d]);
  return a;
}

/// t of shape `result` as (N, rest...): B's dims moved to the front and merged.
Tensor as_rows(const Tensor& t, const PlanGeom& a, bool must_be_view) {
  const int64_t nb = static_cast<int64_t>(a.bshape.size()), nd = t.dim();
  std::vector<int64_t> perm;
  for (int64_t j = 0; j < nb; ++j) perm.push_back(a.pos + j);
  for (int64_t d = 0; d < nd; ++d)
    if (d < a.pos || d >= a.pos + nb) perm.push_back(d);
  Tensor p = t.permute(perm);
  DimVector shape{multiply(a.bshape)};
  for (int64_t d = nb; d < nd; ++d) shape.push_back(p.size(d));
  return must_be_view ? p.view(shape) : p.reshape(shape);
}

/// Drops leading size-1 dims of a value (PyTorch lets x[i] = v take v of
/// shape (1, 1, n) where x[i] is (n,)).
Tensor strip_leading_ones(const Tensor& value) {
  int64_t lead = 0;
  while (lead < value.dim() && value.size(lead) == 1) ++lead;
  if (lead == 0) return value;
  IntArrayRef s = value.sizes();
  return value.view(IntArrayRef(s.data() + lead, s.size() - lead));
}

void check_value_shape(const Tensor& value, IntArrayRef target, const char* op) {
  bool ok = value.dim() <= static_cast<int64_t>(target.size());
  for (int64_t i = 1; ok && i <= value.dim(); ++i) {
    const int64_t vs = value.size(-i), ts = target[target.size() - i];
    ok = vs == ts || vs == 1;
  }
  BRISK_CHECK(ok, op, "shape mismatch: value tensor of shape ", value.sizes(),
              " cannot be broadcast to indexing result of shape ", target);
}

// ---- autograd helpers of the advanced plan ---------------------------------------------

/// zeros of the view's shape with `src` (of shape g.result) added at the
/// indexed positions; duplicates accumulate. Built from recording ops
/// (index_add_, view, permute), so it is differentiable itself.
Tensor accumulate_plan(const Tensor& src, const Tensor& index, const PlanGeom& g) {
  // Laid out as (indexed dims merged, other dims...), the indexed dims'
  // coordinates become one linear index into dim 0.
  std::vector<int64_t> perm(g.dims.begin(), g.dims.end());
  DimVector flat{1}, full;
  for (int64_t d : g.dims) {
    flat[0] *= g.view_sizes[d];
    full.push_back(g.view_sizes[d]);
  }
  for (int64_t d = 0; d < static_cast<int64_t>(g.view_sizes.size()); ++d)
    if (!((g.mask_bits >> d) & 1)) {
      perm.push_back(d);
      flat.push_back(g.view_sizes[d]);
      full.push_back(g.view_sizes[d]);
    }
  Tensor z = zeros(flat, src.options());
  if (index.size(1) > 0 && z.numel() > 0) {
    Tensor lin;
    int64_t mult = 1;
    for (int64_t j = static_cast<int64_t>(g.dims.size()); j-- > 0;) {
      const int64_t n = g.view_sizes[g.dims[j]];
      Tensor ij = index.select(0, j).remainder(n);  // negative indices wrap
      Tensor term = mult == 1 ? ij : ij * mult;
      lin = lin.defined() ? lin + term : term;
      mult *= n;
    }
    z.index_add_(0, lin, as_rows(src, g, false));
  }
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return z.view(full).permute(inv);
}

/// view[index] for an advanced plan. `input` is what gets the gradient (the
/// view, or self when the view is a plain alias of it): IndexBackward0.
Tensor index_plan(const Tensor& v, const Tensor& input, const Tensor& index, const PlanGeom& g) {
  Tensor out = make_tensor(g.result, {}, v.dtype(), v.device());
  KernelArgs args;
  args.mode = 1;  // negative indices wrap
  kernel<OpId::index>(v.device().type, "index")(as_rows(out, g, true), g.mask_bits, index, v, args);
  if (BRISK_UNLIKELY(autograd::should_record(input)))
    autograd::record("IndexBackward0", {out}, {input}, {autograd::save(index)},
                     [g](autograd::BackwardCtx& c) -> TensorList {
                       return {accumulate_plan(c.grad(), c.saved(0), g)};
                     });
  return out;
}

/// Ones of the view's shape with zeros where the plan writes (no graph).
Tensor kept_mask(const Tensor& index, const PlanGeom& g, TensorOptions opts) {
  Tensor m = ones(g.view_sizes, opts);
  KernelArgs args;
  args.mode = 1;
  kernel<OpId::index_put>(m.device().type, "index_put_")(m, g.mask_bits, index,
                                                         as_rows(zeros({}, opts).expand(g.result), g, false), args);
  return m;
}

Tensor index_impl(const Tensor& self, const TensorIndex* ix, size_t n) {
  BRISK_PROFILE_OP("index", self);
  Parsed p = parse_indices(self, ix, n, "index");
  // A bool is an advanced index (PyTorch): x[True] is a copy, not a view,
  // even though brisk computes its shape as one.
  if (p.bools && p.adv.empty()) return p.view.clone(MemoryFormat::Contiguous);
  if (p.adv.empty()) {
    if (p.identity && BRISK_UNLIKELY(autograd::should_record(self))) {
      autograd::record("AliasBackward0", {p.view}, {self}, {},
                       [](autograd::BackwardCtx& c) -> TensorList { return {c.grad()}; });
      autograd::mark_view(p.view, self);
    }
    return p.view;
  }
  AdvancedPlan a = plan_advanced(p, "index");
  return index_plan(p.view, p.identity ? self : p.view, a.index, a);
}

/// How index_put_ writes. The Python-style forms (x.index_put_({i}, v),
/// PyTorch's x[i] = v) convert the value to self's dtype and drop its leading
/// size-1 dims; the libtorch/ATen form with `accumulate` (index_put_(indices,
/// values, accumulate)) takes values of self's dtype broadcast to the indexed
/// shape as they are, and with accumulate adds them (duplicates accumulate).
struct PutMode {
  bool accumulate = false;
  bool strict = false;  ///< the ATen form's checks
};

/// value: a tensor or, when null, `scalar`.
Tensor& index_put_impl(Tensor& self, const TensorIndex* ix, size_t n, const Tensor* value, const Scalar& scalar,
                       PutMode mode = {}) {
  BRISK_PROFILE_OP("index_put_", self);
  const char* op = "index_put_";
  if (value) BRISK_CHECK(value->defined(), op, "the value tensor is undefined");
  if (mode.strict)
    BRISK_CHECK(value->dtype() == self.dtype(), op, "Index put requires the source and destination dtypes match, got ",
                self.dtype(), " for the destination and ", value->dtype(), " for the source.");
  // A lone bool is torch's fast path (set_item): x[False] = v does nothing
  // at all, x[True] = v copies into x (converting v). Bools among other
  // indices are advanced indices.
  const bool lone_bool = n == 1 && ix[0].kind() == TensorIndex::Kind::Boolean && !mode.strict && !mode.accumulate;
  if (lone_bool && !ix[0].boolean()) return self;
  const bool rec = autograd::should_record(self) || (value && autograd::should_record(*value));
  autograd::check_inplace(self, op);
  const uint32_t version = self._raw_version();
  // The views, copy_, fill_ and masked_fill_ below are internals: one node
  // (IndexPutBackward0) records the whole update.
  std::optional<NoGradGuard> no_grad;
  if (BRISK_UNLIKELY(rec)) no_grad.emplace();
  Parsed p = parse_indices(self, ix, n, op);
  const Tensor& v = p.view;
  Tensor val;
  // x[i] = v converts v to self's dtype with a check: fill_'s for basic
  // indices (torch 2.x lets one element of a 16-bit float take 1e5 as inf),
  // index_put_'s otherwise.
  const Scalar& scalar_v = scalar;
  const bool bool_advanced = p.bools && !lone_bool;
  // torch 2.15 converts a scalar unchecked whenever two or more indices are
  // advanced (bools or tensors: x[True, False] = v, x[i, j] = v; 1e5 is inf
  // in float16, nothing is written past a False) and checks it with fewer.
  // brisk converts unchecked only when all of them are bools: x[i, j] = 1e5
  // on float16 is an error here where torch writes inf (fuzz seed 131 case
  // 547802, tools/fuzz/known_divergences.txt).
  bool all_bools = n > 1 && !mode.strict;
  for (size_t i = 0; i < n; ++i) all_bools = all_bools && ix[i].kind() == TensorIndex::Kind::Boolean;
  if (!value && !(p.adv.empty() && !bool_advanced) && !all_bools) detail::check_scalar_fits(op, scalar, self.dtype());
  if (value) {
    val = mode.strict ? *value : strip_leading_ones(*value);
    // Reading and writing the same memory: work from a copy.
    if (val.is_alias_of(self)) val = val.clone();
  }
  AdvancedPlan a;
  if (p.adv.empty()) {
    if (value) {
      check_value_shape(val, v.sizes(), op);
      // Bools are advanced indices (torch): the values must have self's dtype.
      BRISK_CHECK(!bool_advanced || val.dtype() == self.dtype(), op, "the values have dtype ", val.dtype(),
                  " but the indexed tensor has ", self.dtype(), ": convert them first (values.to(", self.dtype(),
                  "))");
      if (mode.accumulate)
        Tensor(v).add_(val);
      else
        Tensor(v).copy_(val);
    } else if (all_bools) {
      const ScalarType st = scalar_v.is_floating_point() ? kDouble : scalar_v.is_bool() ? kBool : kLong;
      Tensor(v).copy_(scalar_tensor(scalar_v, TensorOptions(st).device(self.device())));
    } else {
      Tensor(v).fill_(scalar_v);
    }
  } else {
    check_no_internal_overlap(op, v);
    const bool one_value = !value || val.dim() == 0;
    if (one_value && !mode.accumulate && p.adv.size() == 1 && p.adv[0].is_mask) {
      // x[mask] = scalar is masked_fill_ with the mask aligned to its dims.
      const AdvancedIndex& m = p.adv[0];
      Tensor mask = m.t.dtype() == kBool ? m.t : m.t.ne(0);
      DimVector shape(mask.sizes().begin(), mask.sizes().end());
      for (int64_t d = m.dim + mask.dim(); d < v.dim(); ++d) shape.push_back(1);
      Tensor(v).masked_fill_(mask.reshape(shape), value ? val.item() : scalar_v);
      if (rec) a = plan_advanced(p, op);  // for the backward
    } else {
      a = plan_advanced(p, op);
      if (!value) val = scalar_tensor(scalar_v, self.dtype());
      check_value_shape(val, a.result, op);
      // Advanced indexing writes values of self's dtype only (torch): a
      // silent conversion would hide a dtype mix-up.
      BRISK_CHECK(val.dtype() == self.dtype(), op, "the values have dtype ", val.dtype(),
                  " but the indexed tensor has ", self.dtype(), ": convert them first (values.to(", self.dtype(), "))");
      Tensor index = a.index.is_alias_of(self) ? a.index.clone() : a.index;
      KernelArgs args;
      args.mode = 1 | (mode.accumulate ? 2 : 0);  // negative indices wrap; accumulate
      kernel<OpId::index_put>(self.device().type, op)(v, a.mask_bits, index, as_rows(val.expand(a.result), a, false),
                                                    args);
    }
  }
  if (self._raw_version() == version) self.bump_version();
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    no_grad.reset();
    // The update is recorded on the indexed view (an in-place op on a view:
    // the engine rewrites self's history), or on self when the view is an alias.
    Tensor target = p.identity ? self : p.view;
    if (!p.identity) mark_view(target, self);
    // The view was taken without a graph, so its own edge says nothing:
    // self's gradient (the view's old value) is needed when self requires grad.
    const bool self_needs = needs_grad(self);
    const bool has_value = value != nullptr;
    const bool acc = mode.accumulate;
    const DimVector vsizes = has_value ? to_dims(value->sizes()) : DimVector();
    const DimVector ssizes = has_value ? to_dims(val.sizes()) : DimVector();  // Python forms: leading ones dropped
    // The old value passes through where it was kept (everywhere when adding).
    if (p.adv.empty()) {
      auto fn = [has_value, vsizes, ssizes, self_needs, acc](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        TensorList r{c.needs(0) || self_needs ? (acc ? g : zeros_like(g)) : Tensor()};
        if (has_value) r.push_back(c.needs(1) ? sum_to(g, ssizes).view(vsizes) : Tensor());
        return r;
      };
      if (has_value)
        record_inplace("IndexPutBackward0", target, {target, *value}, {}, fn);
      else
        record_inplace("IndexPutBackward0", target, {target}, {}, fn);
    } else {
      PlanGeom geo = a;
      auto fn = [has_value, vsizes, ssizes, geo, self_needs, acc](BackwardCtx& c) -> TensorList {
        const Tensor& g = c.grad();
        Tensor idx = c.saved(0);
        // masked_fill, not a product: an inf gradient at a written position is 0, not NaN.
        TensorList r{c.needs(0) || self_needs ? (acc ? g : g.masked_fill(kept_mask(idx, geo, g.options()).eq(0), 0))
                                              : Tensor()};
        if (has_value) r.push_back(c.needs(1) ? sum_to(index_plan(g, g, idx, geo), ssizes).view(vsizes) : Tensor());
        return r;
      };
      if (has_value)
        record_inplace("IndexPutBackward0", target, {target, *value}, {save(a.index)}, fn);
      else
        record_inplace("IndexPutBackward0", target, {target}, {save(a.index)}, fn);
    }
  }
  return self;
}

int64_t index_dim_of(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }

/// Index tensors of scatter/gather/index_add as int64, cloned when they share
/// memory with the tensor being written.
Tensor index_arg(const Tensor& index, const Tensor& written) {
  Tensor i = index.dtype() == kInt64 ? index : index.to(kInt64);
  return written.defined() && i.is_alias_of(written) ? i.clone() : i;
}

/// Index and source tensors of index_select/gather/scatter/index_add must be
/// on the indexed tensor's device (a kernel reads them there).
void check_same_device(const char* op, const Tensor& self, const Tensor& t, const char* what) {
  BRISK_CHECK(!t.defined() || t.device() == self.device(), op, "expected ", what, " on ", self.device(),
              " (the device of self), but got it on ", t.device());
}

/// 0-dim tensors are handled as 1-element 1-dim ones (views).
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

void check_scatter_args(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  BRISK_CHECK(index.dtype() == kInt64, op, "expected dtype int64 for index, got ", index.dtype());
  BRISK_CHECK(index_dim_of(index) == index_dim_of(self), op,
              "index tensor must have the same number of dimensions as self tensor (index ", index.sizes(),
              ", self ", self.sizes(), ")");
  if (src) {
    BRISK_CHECK(src->defined(), op, "src is an undefined tensor");
    BRISK_CHECK(src->dtype() == self.dtype(), op, "expected self.dtype to be equal to src.dtype (got ", self.dtype(),
                " and ", src->dtype(), ")");
    BRISK_CHECK(index_dim_of(index) == index_dim_of(*src), op,
                "index tensor must have the same number of dimensions as src tensor (index ", index.sizes(),
                ", src ", src->sizes(), ")");
  }
  if (index.dim() == 0) return;
  for (int64_t d = 0; d < index.dim(); ++d) {
    BRISK_CHECK(d == dim || index.size(d) <= (self.dim() ? self.size(d) : 1), op, "expected index ", index.sizes(),
                " to be no larger than self ", self.sizes(), " apart from dimension ", dim, " (dimension ", d, ")");
    BRISK_CHECK(!src || index.size(d) <= (src->dim() ? src->size(d) : 1), op, "expected index ", index.sizes(),
                " to be no larger than src ", src->sizes(), " (dimension ", d, ")");
  }
}

/// g.gather(dim, index) laid into zeros of `sizes` (src may be larger than index).
Tensor gather_to(const Tensor& g, int64_t dim, const Tensor& index, const DimVector& sizes) {
  Tensor t = g.gather(dim, index);
  if (t.sizes() == IntArrayRef(sizes)) return t;
  if (t.dim() != static_cast<int64_t>(sizes.size())) t = t.reshape({1});  // 0-dim index, 1-element src
  DimVector p;
  for (int64_t d = t.dim(); d-- > 0;) {
    p.push_back(0);
    p.push_back(sizes[d] - t.size(d));
  }
  return pad(t, p);
}

/// scatter / scatter_add into `self` in place (src undefined: the scalar).
/// `orig`: the out-of-place forms pass their input (self is a fresh copy of
/// it) and the node records on self as a new result of `orig`.
Tensor& scatter_into(Tensor& self, int64_t dim, const Tensor& index, const Tensor* src, const Scalar& value,
                     bool add, const char* op, const Tensor* orig = nullptr) {
  dim = wrap_dim(dim, self.dim(), op);
  check_scatter_args(op, self, dim, index, src);
  check_same_device(op, self, index, "index");
  if (src) check_same_device(op, self, *src, "src");
  // The value is converted with a check, when there is something to write (torch).
  if (!src && index.numel() > 0) detail::check_scalar_fits(op, value, self.dtype());
  check_no_internal_overlap(op, self);
  const bool rec = autograd::should_record(orig ? *orig : self) || (src && autograd::should_record(*src));
  if (!orig) autograd::check_inplace(self, op);
  if (index.numel() > 0) {
    Tensor s;
    if (src) s = src->is_alias_of(self) ? src->clone() : *src;
    KernelArgs args;
    args.s0 = value;
    args.has_s0 = !src;
    const Tensor self1 = as_1d(self);
    const Tensor idx = as_1d(index_arg(index, self));
    const Tensor src1 = s.defined() ? as_1d(s) : s;
    if (add)
      kernel<OpId::scatter_add>(self.device().type, op)(self1, dim, idx, src1, args);
    else
      kernel<OpId::scatter>(self.device().type, op)(self1, dim, idx, src1, args);
  }
  self.bump_version();
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    const DimVector ssizes = src ? to_dims(src->sizes()) : DimVector();
    const char* name = add ? "ScatterAddBackward0" : src ? "ScatterBackward0" : "ScatterBackward1";
    auto fn = [dim, add, ssizes](BackwardCtx& c) -> TensorList {
      const Tensor& g = c.grad();
      Tensor idx = c.saved(0);
      TensorList r{c.needs(0) ? (add ? g : g.scatter(dim, idx, Scalar(0))) : Tensor()};
      if (c.needs(1)) r.push_back(gather_to(g, dim, idx, ssizes));
      return r;
    };
    const Tensor& in0 = orig ? *orig : self;
    if (src && orig)
      record(name, {self}, {in0, *src}, {save(index)}, fn);
    else if (orig)
      record(name, {self}, {in0}, {save(index)}, fn);
    else if (src)
      record_inplace(name, self, {self, *src}, {save(index)}, fn);
    else
      record_inplace(name, self, {self}, {save(index)}, fn);
  }
  return self;
}

/// A copy of x for the out-of-place forms (no graph: they record their own node).
Tensor fresh_copy(const Tensor& x) {
  NoGradGuard g;
  return x.clone();
}

}  // namespace

// ---- index / index_put_ ---------------------------------------------------------------

Tensor Tensor::index(std::initializer_list<TensorIndex> idx) const { return index_impl(*this, idx.begin(), idx.size()); }
Tensor Tensor::index(const std::vector<TensorIndex>& idx) const { return index_impl(*this, idx.data(), idx.size()); }

Tensor& Tensor::index_put_(const std::vector<TensorIndex>& idx, const Tensor& value) const {
  return index_put_impl(const_cast<Tensor&>(*this), idx.data(), idx.size(), &value, Scalar());
}
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& idx, const Scalar& value) const {
  return index_put_impl(const_cast<Tensor&>(*this), idx.data(), idx.size(), nullptr, value);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> idx, const Tensor& value) const {
  return index_put_impl(const_cast<Tensor&>(*this), idx.begin(), idx.size(), &value, Scalar());
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> idx, const Scalar& value) const {
  return index_put_impl(const_cast<Tensor&>(*this), idx.begin(), idx.size(), nullptr, value);
}

// The ATen form: values of self's dtype, optionally accumulated.
Tensor& Tensor::index_put_(const std::vector<TensorIndex>& idx, const Tensor& values, bool accumulate) const {
  return index_put_impl(const_cast<Tensor&>(*this), idx.data(), idx.size(), &values, Scalar(), {accumulate, true});
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> idx, const Tensor& values, bool accumulate) const {
  return index_put_impl(const_cast<Tensor&>(*this), idx.begin(), idx.size(), &values, Scalar(), {accumulate, true});
}
Tensor index_put(const Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  BRISK_AUTOCAST(index_put, index_put, self, indices, values, accumulate);
  BRISK_CHECK(self.defined(), "index_put", "the indexed tensor is undefined");
  Tensor out = self.clone();  // records CloneBackward0: self's gradient flows through the copy
  index_put_impl(out, indices.data(), indices.size(), &values, Scalar(), {accumulate, true});
  return detail::mark_new_version(std::move(out));
}
Tensor& index_put_(Tensor& self, const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate) {
  return self.index_put_(indices, values, accumulate);
}
Tensor Tensor::index_put(const std::vector<TensorIndex>& idx, const Tensor& values, bool accumulate) const {
  return brisk::index_put(*this, idx, values, accumulate);
}
Tensor Tensor::index_put(std::initializer_list<TensorIndex> idx, const Tensor& values, bool accumulate) const {
  return brisk::index_put(*this, std::vector<TensorIndex>(idx), values, accumulate);
}

// ---- index_select / gather -------------------------------------------------------------

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  BRISK_PROFILE_OP("index_select", x, index);
  const char* op = "index_select";
  BRISK_CHECK(index.dim() <= 1, op, "index is supposed to be a vector, got a tensor of shape ", index.sizes());
  BRISK_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
              "expected dtype int32 or int64 for index, got ", index.dtype());
  check_same_device(op, x, index, "index");
  dim = wrap_dim(dim, x.dim(), op);
  if (x.dim() == 0) {
    BRISK_CHECK(index.numel() == 1, op, "index to scalar can have only 1 value, got ", index.numel(), " value(s)");
    return index_select(x.reshape({1}), 0, index).reshape({});
  }
  Tensor idx = index_arg(index, Tensor()).reshape({-1});
  DimVector shape(x.sizes().begin(), x.sizes().end());
  shape[dim] = idx.numel();
  Tensor out = make_tensor(shape, {}, x.dtype(), x.device());
  BRISK_CHECK(x.dim() < 64, op, "tensors of up to 63 dims are supported, got ", x.dim());
  kernel<OpId::index_select>(x.device().type, op)(out, dim, idx, x, KernelArgs{});
  if (BRISK_UNLIKELY(autograd::should_record(x)))
    autograd::record("IndexSelectBackward0", {out}, {x}, {autograd::save(idx)},
                     [dim, sizes = autograd::to_dims(x.sizes())](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor& g = c.grad();
                       Tensor z = zeros(sizes, g.options());
                       z.index_add_(dim, c.saved(0), g);
                       return {z};
                     });
  return out;
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return brisk::index_select(*this, dim, index); }

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  BRISK_PROFILE_OP("gather", x, index);
  const char* op = "gather";
  check_same_device(op, x, index, "index");
  dim = wrap_dim(dim, x.dim(), op);
  BRISK_CHECK(index.dtype() == kInt64, op, "expected dtype int64 for index, got ", index.dtype());
  BRISK_CHECK(index_dim_of(index) == index_dim_of(x), op,
              "index tensor must have the same number of dimensions as input tensor (index ", index.sizes(),
              ", input ", x.sizes(), ")");
  for (int64_t d = 0; d < index.dim(); ++d)
    BRISK_CHECK(d == dim || index.size(d) <= (x.dim() ? x.size(d) : 1), op, "size does not match at dimension ", d,
                ": expected index ", index.sizes(), " to be smaller than self ", x.sizes(), " apart from dimension ",
                dim);
  Tensor out = make_tensor(index.sizes(), {}, x.dtype(), x.device());
  if (index.numel() > 0)
    kernel<OpId::gather>(x.device().type, op)(as_1d(out), dim, as_1d(index), as_1d(x), KernelArgs{});
  if (BRISK_UNLIKELY(autograd::should_record(x)))
    autograd::record("GatherBackward0", {out}, {x}, {autograd::save(index)},
                     [dim, sizes = autograd::to_dims(x.sizes())](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor& g = c.grad();
                       Tensor z = zeros(sizes, g.options());
                       z.scatter_add_(dim, c.saved(0), g);
                       return {z};
                     });
  return out;
}
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return brisk::gather(*this, dim, index); }

// ---- scatter / scatter_add / index_add_ -------------------------------------------------

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  BRISK_PROFILE_OP("scatter", x, index, src);
  Tensor out = fresh_copy(x);
  scatter_into(out, dim, index, &src, Scalar(), false, "scatter", &x);
  return detail::mark_new_version(std::move(out));
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  BRISK_AUTOCAST(scatter_add, scatter_add, x, dim, index, src);
  BRISK_PROFILE_OP("scatter_add", x, index, src);
  Tensor out = fresh_copy(x);
  scatter_into(out, dim, index, &src, Scalar(), true, "scatter_add", &x);
  return detail::mark_new_version(std::move(out));
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return brisk::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  BRISK_PROFILE_OP("scatter", *this, index, value);
  Tensor out = fresh_copy(*this);
  scatter_into(out, dim, index, nullptr, value, false, "scatter", this);
  return detail::mark_new_version(std::move(out));
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
  BRISK_PROFILE_OP("scatter_", *this, index, src);
  return scatter_into(const_cast<Tensor&>(*this), dim, index, &src, Scalar(), false, "scatter_");
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) const {
  BRISK_PROFILE_OP("scatter_", *this, index, value);
  return scatter_into(const_cast<Tensor&>(*this), dim, index, nullptr, value, false, "scatter_");
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return brisk::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  BRISK_PROFILE_OP("scatter_add_", *this, index, src);
  return scatter_into(const_cast<Tensor&>(*this), dim, index, &src, Scalar(), true, "scatter_add_");
}

namespace {
// index_add_ on self; `op` names the form the user called in errors.
const Tensor& index_add_into(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                             const Scalar& alpha, const char* op);
}  // namespace

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) {
  BRISK_PROFILE_OP("index_add", x, index, src);
  BRISK_CHECK(x.defined(), "index_add", "self is an undefined tensor");
  Tensor out = x.clone();  // recorded: the gradient of x is the incoming one
  index_add_into(out, dim, index, src, alpha, "index_add");
  return out;
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) const {
  return brisk::index_add(*this, dim, index, src, alpha);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) const {
  BRISK_PROFILE_OP("index_add_", *this, index, src);
  index_add_into(*this, dim, index, src, alpha, "index_add_");
  return const_cast<Tensor&>(*this);
}

namespace {
const Tensor& index_add_into(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                             const Scalar& alpha, const char* op) {
  dim = wrap_dim(dim, self.dim(), op);
  BRISK_CHECK(index.dim() <= 1, op, "index is supposed to be a vector, got a tensor of shape ", index.sizes());
  BRISK_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
              "expected dtype int32 or int64 for index, got ", index.dtype());
  BRISK_CHECK(src.defined(), op, "source is an undefined tensor");
  check_same_device(op, self, index, "index");
  check_same_device(op, self, src, "source");
  BRISK_CHECK(src.dtype() == self.dtype(), op, "self (", self.dtype(), ") and source (", src.dtype(),
              ") must have the same scalar type");
  BRISK_CHECK(index_dim_of(src) == index_dim_of(self), op,
              "source and self must have the same number of dimensions (self ", self.sizes(), ", source ", src.sizes(),
              ")");
  const int64_t along = src.dim() ? src.size(dim) : 1;
  BRISK_CHECK(index.numel() == along, op, "number of indices (", index.numel(),
              ") should be equal to source.size(dim) (", along, "), for dim ", dim);
  for (int64_t d = 0; d < src.dim(); ++d)
    BRISK_CHECK(d == dim || src.size(d) == self.size(d), op,
                "source and self must have the same size apart from dimension ", dim, ": self ", self.sizes(),
                ", source ", src.sizes());
  check_no_internal_overlap(op, self);
  const bool rec = autograd::should_record(self, src);
  autograd::check_inplace(self, op);
  if (index.numel() > 0 && self.numel() == 0 && self.dim() <= 1) {
    // Nothing is written, but torch 2.x still checks the indices of a 1-D
    // self (an empty multi-dim self it leaves unchecked; 1.13 checked both).
    const Tensor bad = index.lt(0).logical_or(index.ge(self.size(dim)));
    if (bad.any().item<bool>()) {
      const int64_t v = index.reshape({-1}).masked_select(bad.reshape({-1}))[0].item<int64_t>();
      BRISK_FAIL(op, "index ", v, " is out of bounds for dimension ", dim, " with size ", self.size(dim));
    }
  }
  if (index.numel() > 0 && self.numel() > 0) {
    const Tensor s = src.is_alias_of(self) ? src.clone() : src;
    KernelArgs args;
    args.s0 = alpha;
    args.has_s0 = true;
    kernel<OpId::index_add>(self.device().type, op)(as_1d(self), dim, index_arg(index, self).reshape({-1}),
                                                    as_1d(s), args);
  }
  self.bump_version();
  if (BRISK_UNLIKELY(rec)) {
    using namespace autograd;
    const bool one = alpha.to_double() == 1.0;
    record_inplace("IndexAddBackward0", self, {self, src}, {save(index)},
                   [dim, alpha, one](BackwardCtx& c) -> TensorList {
                     const Tensor& g = c.grad();
                     Tensor gs;
                     if (c.needs(1)) {
                       gs = g.index_select(dim, c.saved(0).reshape({-1}));
                       if (!one) gs = gs * alpha;
                     }
                     return {c.needs(0) ? g : Tensor(), gs};
                   });
  }
  return self;
}
}  // namespace

// ---- masked_select / nonzero / where(cond) ------------------------------------------------

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  BRISK_PROFILE_OP("masked_select", x, mask);
  const char* op = "masked_select";
  BRISK_CHECK(is_mask_dtype(mask.dtype()), op, "expected a bool (or uint8) mask, got ", mask.dtype());
  DimVector shape = broadcast_shapes(x.sizes(), mask.sizes(), op);
  Tensor xb = x.expand(shape), mb = mask.expand(shape);
  if (shape.empty()) {
    xb = xb.reshape({1});
    mb = mb.reshape({1});
  }
  BRISK_CHECK(xb.dim() < 64, op, "tensors of up to 63 dims are supported, got ", xb.dim());
  Tensor nz = nonzero(mb);  // (n, ndim)
  Tensor out = make_tensor({nz.size(0)}, {}, x.dtype(), x.device());
  int64_t all_dims = 0;
  for (int64_t d = 0; d < xb.dim(); ++d) all_dims |= int64_t(1) << d;
  kernel<OpId::index>(x.device().type, op)(out, all_dims, nz.t(), xb, KernelArgs{});
  if (BRISK_UNLIKELY(autograd::should_record(x))) {
    // The gradient: zeros of the broadcast shape with the selected entries
    // set (index_put_ with the mask, which records for double backward);
    // the engine sums it down to x's shape.
    autograd::record("MaskedSelectBackward0", {out}, {x}, {autograd::save(mask)},
                     [shape = autograd::to_dims(xb.sizes())](autograd::BackwardCtx& c) -> TensorList {
                       const Tensor& g = c.grad();
                       Tensor z = zeros(shape, g.options());
                       Tensor m = c.saved(0);
                       m = m.dim() == 0 ? m.reshape({1}) : m;
                       z.index_put_({m.expand(shape)}, g);
                       return {z};
                     });
  }
  return out;
}
Tensor Tensor::masked_select(const Tensor& mask) const { return brisk::masked_select(*this, mask); }

Tensor nonzero(const Tensor& x) {
  BRISK_PROFILE_OP("nonzero", x);
  BRISK_CHECK(x.defined(), "nonzero", "input is an undefined tensor");
  detail::sync_point("nonzero", x);  // the output's size depends on the data
  return kernel<OpId::nonzero>(x.device().type, "nonzero")(x);
}
Tensor Tensor::nonzero() const { return brisk::nonzero(*this); }

std::vector<Tensor> where(const Tensor& cond) {
  BRISK_PROFILE_OP("where", cond);
  BRISK_CHECK(cond.defined(), "where", "condition is an undefined tensor");
  return nonzero(as_1d(cond)).unbind(1);
}

}  // namespace brisk
