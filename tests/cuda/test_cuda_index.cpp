// CUDA index kernels: gather, scatter, scatter_add, index_add_, index /
// index_put_ / index_select, nonzero, and the deferred index errors (Note
// [Deferred index errors] in src/backend/cuda/device_errors.h).
//
// Host part (runs everywhere, never skips): the planners and per-element
// offset functions of src/backend/cuda/index_plan.h, which the kernels run
// on the device, are driven here on CPU tensors in the kernels' iteration
// order and compared with the CPU ops; the error record's decoding and
// message. Device part (skips without a GPU): every op on CUDA against the
// CPU op on the same inputs, and bad indices raised at the next sync.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <random>
#include <vector>

#include "backend/cuda/device_errors.h"
#include "backend/cuda/index_plan.h"
#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
namespace cd = brisk::cuda::detail;

namespace {

const ScalarType kAllDtypes[] = {kBool, kUInt8, kInt32, kInt64, kHalf, kBFloat16, kFloat, kDouble};

/// 0, 1, 2, ... in the given shape and dtype (bool: alternating; uint8 and
/// the 16-bit floats modulo 200, so values stay exact).
Tensor iota(IntArrayRef shape, ScalarType dt = kFloat) {
  Tensor t = arange(multiply(shape), kInt64).reshape(shape);
  if (dt == kBool) return t.remainder(2).to(kBool);
  if (dt == kUInt8 || dt == kHalf || dt == kBFloat16) t = t.remainder(200);
  return t.to(dt);
}

/// 0, 1, 2, ... modulo `mod` in the given shape, converted to dt.
Tensor small_ints(IntArrayRef shape, int64_t mod, ScalarType dt) {
  return arange(multiply(shape), kInt64).reshape(shape).remainder(mod).to(dt);
}

/// Random int64 tensor with values in [lo, hi).
Tensor rand_int(IntArrayRef shape, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int64_t> u(lo, hi - 1);
  std::vector<int64_t> v(static_cast<size_t>(multiply(shape)));
  for (auto& x : v) x = u(g);
  return tensor(v, shape, kInt64);
}

/// Calls f(coords) for every coordinate of `shape` in row-major order.
template <class F>
void for_each_coord(IntArrayRef shape, F f) {
  const int64_t n = multiply(shape);
  std::vector<int64_t> c(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(c);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++c[d] < shape[d]) break;
      c[d] = 0;
    }
  }
}

/// An int64 index of `shape` whose values along `dim` are distinct (a
/// shuffled prefix of [0, size) per line): scatter targets never collide.
Tensor unique_index(IntArrayRef shape, int64_t dim, int64_t size, uint32_t seed) {
  std::mt19937 g(seed);
  Tensor idx = empty(shape, kInt64);
  int64_t* p = idx.data_ptr<int64_t>();
  std::vector<int64_t> perm(static_cast<size_t>(size));
  for_each_coord(shape, [&](const std::vector<int64_t>& c) {
    if (c[dim] != 0) return;
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::shuffle(perm.begin(), perm.end(), g);
    std::vector<int64_t> t = c;
    for (int64_t j = 0; j < shape[dim]; ++j) {
      t[dim] = j;
      int64_t off = 0;
      for (size_t d = 0; d < t.size(); ++d) off = off * shape[d] + t[d];
      p[off] = perm[static_cast<size_t>(j)];
    }
  });
  return idx;
}

/// Same dtype, shape and bytes (CPU tensors; NaN payloads included).
::testing::AssertionResult bits_equal(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype()) return ::testing::AssertionFailure() << got.dtype() << " vs " << want.dtype();
  if (!(got.sizes() == want.sizes()))
    return ::testing::AssertionFailure() << "shape " << got.sizes() << " vs " << want.sizes();
  Tensor g = got.cpu().contiguous(), w = want.cpu().contiguous();
  const size_t es = g.element_size();
  const auto* a = static_cast<const unsigned char*>(g.data_ptr());
  const auto* b = static_cast<const unsigned char*>(w.data_ptr());
  for (int64_t i = 0; i < g.numel(); ++i)
    if (std::memcmp(a + i * es, b + i * es, es) != 0)
      return ::testing::AssertionFailure() << "element " << i << " (flat) differs";
  return ::testing::AssertionSuccess();
}

// ---- host drivers of the kernels' element functions --------------------------------------

/// The scatter-family kernel's body, sequentially in walk order, on CPU
/// double tensors. Returns the bad index values met.
std::vector<int64_t> run_scatter_family(const cd::ScatterParams& p, const Tensor& a, const Tensor& index,
                                        const Tensor& b, double fill, double alpha) {
  std::vector<int64_t> bad;
  double* ap = static_cast<double*>(a.data_ptr());
  double* bp = b.defined() ? static_cast<double*>(b.data_ptr()) : nullptr;
  const int64_t* ip = static_cast<const int64_t*>(index.data_ptr());
  for (int64_t e = 0; e < p.numel; ++e) {
    int64_t ao, io, bo;
    cd::scatter_offsets(p, e, ao, io, bo);
    const int64_t v = ip[io];
    const auto mode = static_cast<cd::ScatterMode>(p.mode);
    if (!cd::scatter_index_ok(v, p.dim_size)) {
      bad.push_back(v);
      if (mode == cd::ScatterMode::gather) bp[bo] = 0;
      continue;
    }
    ao += v * p.a_dim_stride;
    switch (mode) {
      case cd::ScatterMode::gather: bp[bo] = ap[ao]; break;
      case cd::ScatterMode::scatter: ap[ao] = bp[bo]; break;
      case cd::ScatterMode::fill: ap[ao] = fill; break;
      case cd::ScatterMode::add: ap[ao] += alpha * bp[bo]; break;
    }
  }
  return bad;
}

/// The advanced kernel's body on CPU double tensors; returns the bad values.
std::vector<int64_t> run_advanced(const cd::AdvancedParams& p, const Tensor& rows, const Tensor& view,
                                  const Tensor& index) {
  std::vector<int64_t> bad;
  double* rp = static_cast<double*>(rows.data_ptr());
  double* vp = static_cast<double*>(view.data_ptr());
  const int64_t* ip = static_cast<const int64_t*>(index.data_ptr());
  for (int64_t e = 0; e < p.total; ++e) {
    int64_t ro, vo, bv = 0;
    int bj = 0;
    if (!cd::advanced_offsets(p, ip, e, ro, vo, bj, bv)) {
      bad.push_back(bv);
      if (!p.to_view) rp[ro] = 0;
      continue;
    }
    if (p.to_view) {
      double f;
      std::memcpy(&f, &p.fill_bits, sizeof f);
      vp[vo] = p.fill ? f : rp[ro];
    } else {
      rp[ro] = vp[vo];
    }
  }
  return bad;
}

/// The advanced kernel's body moving raw elements of type S (S may be a
/// 16-byte group: widen_advanced).
template <class S>
void run_advanced_bits(const cd::AdvancedParams& p, void* rows, void* view, const int64_t* idx) {
  S* rp = static_cast<S*>(rows);
  S* vp = static_cast<S*>(view);
  for (int64_t e = 0; e < p.total; ++e) {
    int64_t ro, vo, bv = 0;
    int bj = 0;
    if (!cd::advanced_offsets(p, idx, e, ro, vo, bj, bv)) continue;
    if (p.to_view)
      vp[vo] = rp[ro];
    else
      rp[ro] = vp[vo];
  }
}
struct Bytes16 {
  uint32_t w[4];
};

/// nonzero as the three kernels compute it: per-tile counts, an exclusive
/// scan, then each tile's rounds of kNonzeroThreads elements ranked in
/// thread order.
Tensor run_nonzero(const Tensor& in) {
  const cd::NonzeroParams p = cd::make_nonzero_params(in);
  const char* base = static_cast<const char*>(in.data_ptr());
  const int64_t tiles = (p.numel + cd::kNonzeroTile - 1) / cd::kNonzeroTile;
  std::vector<int64_t> offsets(static_cast<size_t>(tiles) + 1, 0);
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t e = t * cd::kNonzeroTile; e < std::min(p.numel, (t + 1) * cd::kNonzeroTile); ++e)
      offsets[static_cast<size_t>(t) + 1] += cd::nonzero_at(p, base, e);
  for (int64_t t = 0; t < tiles; ++t) offsets[static_cast<size_t>(t) + 1] += offsets[static_cast<size_t>(t)];
  const int64_t total = offsets[static_cast<size_t>(tiles)];
  Tensor out = empty({total, in.dim()}, kInt64);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t t = 0; t < tiles; ++t) {
    int64_t written = offsets[static_cast<size_t>(t)];
    for (int i = 0; i < cd::kNonzeroItems; ++i)
      for (int th = 0; th < cd::kNonzeroThreads; ++th) {
        const int64_t e = t * cd::kNonzeroTile + i * cd::kNonzeroThreads + th;
        if (e < p.numel && cd::nonzero_at(p, base, e)) cd::nonzero_coords(p, e, o + (written++) * p.nd);
      }
  }
  return out;
}

Tensor cu(const Tensor& t) { return t.to(Device(kCUDA)); }

}  // namespace

// ==== host: index arithmetic and planners ======================================================

TEST(CudaIndexHost, DivmodMatchesDivision) {
  const int64_t big = int64_t{1} << 32;
  const int64_t as[] = {0, 1, 7, 12345, big - 1, big, big + 5, (int64_t{1} << 40) + 3, INT64_MAX};
  const int64_t bs[] = {1, 3, 7, 4096, big - 1, big, big + 1, int64_t{1} << 35};
  for (int64_t a : as)
    for (int64_t b : bs) {
      int64_t q, r;
      cd::divmod(a, b, q, r);
      EXPECT_EQ(q, a / b) << a << " / " << b;
      EXPECT_EQ(r, a % b) << a << " % " << b;
    }
}

TEST(CudaIndexHost, WalkBuilderMergesAndChecksTheDimLimit) {
  // A contiguous tensor is one run; a transposed one two dims; size-1 dims go.
  Tensor x = empty({3, 1, 4, 5});
  cd::WalkBuilder<1> b;
  for (int64_t d = 0; d < x.dim(); ++d) b.push(x.size(d), {x.stride(d)}, "t");
  cd::OffsetCalc<1> c = b.build("t");
  EXPECT_EQ(c.nd, 1);
  EXPECT_EQ(c.sizes[0], 60);
  Tensor t = empty({4, 6}).t();  // (6, 4), strides (1, 6)
  cd::WalkBuilder<2> b2;
  Tensor y = empty({6, 4});
  for (int64_t d = 0; d < 2; ++d) b2.push(t.size(d), {t.stride(d), y.stride(d)}, "t");
  cd::OffsetCalc<2> c2 = b2.build("t");
  EXPECT_EQ(c2.nd, 2);
  for (int64_t e = 0; e < 24; ++e) {
    int64_t off[2];
    c2.get(e, off);
    EXPECT_EQ(off[0], (e / 4) * 1 + (e % 4) * 6);
    EXPECT_EQ(off[1], e);
  }
  // A size-0 dim: nothing to walk.
  cd::WalkBuilder<1> b0;
  b0.push(3, {5}, "t");
  b0.push(0, {1}, "t");
  EXPECT_EQ(b0.build("t").numel(), 0);
  // No dims: one element at offset 0.
  cd::OffsetCalc<1> s = cd::WalkBuilder<1>().build("t");
  int64_t off[1] = {-1};
  s.get(0, off);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(off[0], 0);
  // 26 dims that cannot merge do not fit a kernel's parameters: a brisk::Error.
  cd::WalkBuilder<1> many;
  int64_t stride = 1;
  for (int d = 0; d < 26; ++d) {
    many.push(2, {stride}, "gather");
    stride *= 3;
  }
  expect_error([&] { many.build("gather"); }, {"[gather]", "more than 25 dims", "got 26"});
  // 30 dims that merge into one are fine.
  cd::WalkBuilder<1> merged;
  for (int d = 0; d < 30; ++d) merged.push(2, {int64_t{1} << (29 - d)}, "gather");
  EXPECT_EQ(merged.build("gather").nd, 1);
}

TEST(CudaIndexHost, GatherPlanMatchesCpu) {
  Tensor x = iota({4, 5, 3}, kDouble);
  for (int64_t dim = 0; dim < 3; ++dim) {
    std::vector<int64_t> ishape = {3, 4, 2};
    ishape[dim] = 6;
    Tensor idx = rand_int(ishape, 0, x.size(dim), 5 + dim);
    Tensor out = empty(ishape, kDouble);
    const cd::ScatterParams p = cd::make_gather_params(out, dim, idx, x, 1);
    EXPECT_TRUE(run_scatter_family(p, x, idx, out, 0, 1).empty());
    EXPECT_TRUE(bits_equal(out, x.gather(dim, idx))) << "dim " << dim;
  }
  // Non-contiguous source, index and output.
  Tensor xt = iota({6, 4}, kDouble).t();                  // (4, 6)
  Tensor idx = rand_int({5, 4}, 0, 6, 9).t();             // (4, 5)
  Tensor out = empty({5, 4}, kDouble).t();                // (4, 5), transposed
  const cd::ScatterParams p = cd::make_gather_params(out, 1, idx, xt, 1);
  EXPECT_EQ(p.w.nd, 2);
  run_scatter_family(p, xt, idx, out, 0, 1);
  EXPECT_TRUE(bits_equal(out, xt.gather(1, idx)));
  // A bad value is skipped, its output element zeroed, the value reported.
  Tensor bad = tensor({{0, 7}, {-1, 2}, {3, 4}});
  Tensor x2 = iota({3, 5}, kDouble);
  Tensor o2 = full({3, 2}, 9.0, kDouble);
  std::vector<int64_t> got = run_scatter_family(cd::make_gather_params(o2, 1, bad, x2, 1), x2, bad, o2, 0, 1);
  EXPECT_EQ(got, (std::vector<int64_t>{7, -1}));
  EXPECT_EQ(o2.to_vector<double>(), (std::vector<double>{0, 0, 0, 7, 13, 14}));
}

TEST(CudaIndexHost, ScatterAndAddPlansMatchCpu) {
  for (int64_t dim = 0; dim < 3; ++dim) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    Tensor self = iota({4, 5, 3}, kDouble);
    std::vector<int64_t> ishape = {3, 4, 2};
    ishape[dim] = 3;
    Tensor idx = rand_int(ishape, 0, self.size(dim), 31 + dim);  // duplicates: walk order = CPU order
    Tensor src = iota({5, 5, 5}, kDouble).add(100).narrow(0, 0, 4).permute({2, 1, 0}).contiguous().permute({2, 1, 0});
    // scatter from a tensor (src non-contiguous, larger than index)
    Tensor a = self.clone();
    run_scatter_family(cd::make_scatter_params(a, dim, idx, src, cd::ScatterMode::scatter, 2, "scatter"), a, idx, src,
                       0, 1);
    EXPECT_TRUE(bits_equal(a, self.scatter(dim, idx, src)));
    // scatter of a scalar
    Tensor f = self.clone();
    run_scatter_family(cd::make_scatter_params(f, dim, idx, Tensor(), cd::ScatterMode::fill, 2, "scatter"), f, idx,
                       Tensor(), -2.5, 1);
    EXPECT_TRUE(bits_equal(f, self.scatter(dim, idx, Scalar(-2.5))));
    // scatter_add
    Tensor s = self.clone();
    run_scatter_family(cd::make_scatter_params(s, dim, idx, src, cd::ScatterMode::add, 3, "scatter_add"), s, idx, src,
                       0, 1);
    EXPECT_TRUE(bits_equal(s, self.scatter_add(dim, idx, src)));
    // index_add_ with alpha 2 on a transposed self
    Tensor base = iota({3, 5, 4}, kDouble).permute({2, 1, 0});  // (4, 5, 3), non-contiguous
    std::vector<int64_t> sshape = {4, 5, 3};
    sshape[dim] = 6;
    Tensor isrc = small_ints(sshape, 7, kDouble);
    Tensor iidx = rand_int({6}, 0, base.size(dim), 23 + dim);
    Tensor mine = base.clone().permute({2, 1, 0}).contiguous().permute({2, 1, 0});  // same layout as base
    run_scatter_family(cd::make_index_add_params(mine, dim, iidx, isrc, 4), mine, iidx, isrc, 0, 2.0);
    Tensor want = base.clone();
    want.index_add_(dim, iidx, isrc, 2);
    EXPECT_TRUE(bits_equal(mine, want));
  }
}

TEST(CudaIndexHost, AdvancedPlanMatchesNaiveLoops) {
  // view (4, 5, 6) non-contiguous, indexed on dims 0 and 2 by a (2, N) index
  // with negative values; rows (N, 5) non-contiguous.
  Tensor view = iota({6, 5, 4}, kDouble).permute({2, 1, 0});
  Tensor index = tensor({{0, 3, -1, 2, -4}, {5, -6, 0, 2, 1}});
  const int64_t n = 5;
  Tensor rows = empty({5, n}, kDouble).t();  // (N, 5)
  const int64_t dims = (int64_t{1} << 0) | (int64_t{1} << 2);
  cd::AdvancedParams p = cd::make_advanced_params(rows, dims, index, view, true, false, 5, "index");
  EXPECT_EQ(p.k, 2);
  EXPECT_EQ(p.total, n * 5);
  EXPECT_TRUE(run_advanced(p, rows, view, index).empty());
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < 5; ++c) {
      int64_t i0 = index.index({0, r}).item<int64_t>(), i1 = index.index({1, r}).item<int64_t>();
      if (i0 < 0) i0 += 4;
      if (i1 < 0) i1 += 6;
      EXPECT_EQ(rows.index({r, c}).item<double>(), view.index({i0, c, i1}).item<double>()) << r << "," << c;
    }
  // The other direction: rows into the view.
  Tensor target = zeros({4, 5, 6}, kDouble);
  Tensor vals = iota({n, 5}, kDouble).add(1);
  Tensor uniq = tensor({{0, 3, -1}, {5, -6, 2}});
  cd::AdvancedParams q = cd::make_advanced_params(vals.narrow(0, 0, 3), dims, uniq, target, true, true, 6, "index_put_");
  run_advanced(q, vals.narrow(0, 0, 3), target, uniq);
  Tensor want = zeros({4, 5, 6}, kDouble);
  want.index_put_({uniq.index({0}), Slice(), uniq.index({1})}, vals.narrow(0, 0, 3));
  EXPECT_TRUE(bits_equal(target, want));
  // One value (a scalar expanded to the rows) is a fill: rows are not read.
  Tensor filled = zeros({4, 5, 6}, kDouble);
  Tensor one = scalar_tensor(-1.5, kDouble).expand({3, 5});
  cd::AdvancedParams fq = cd::make_advanced_params(one, dims, uniq, filled, true, true, 6, "index_put_");
  fq.fill = true;
  const double fv = -1.5;
  std::memcpy(&fq.fill_bits, &fv, sizeof fv);
  run_advanced(fq, Tensor(empty({0}, kDouble)), filled, uniq);
  Tensor wf = zeros({4, 5, 6}, kDouble);
  wf.index_put_({uniq.index({0}), Slice(), uniq.index({1})}, Scalar(-1.5));
  EXPECT_TRUE(bits_equal(filled, wf));
  // Without wrap, -1 is out of range; with wrap, -5 on a dim of 4 is.
  Tensor neg = tensor({{-1}, {0}});
  cd::AdvancedParams nw = cd::make_advanced_params(empty({1, 5}, kDouble), dims, neg, view, false, false, 7, "t");
  Tensor r1 = full({1, 5}, 3.0, kDouble);
  EXPECT_EQ(run_advanced(nw, r1, view, neg), (std::vector<int64_t>(5, -1)));
  EXPECT_EQ(r1.to_vector<double>(), (std::vector<double>(5, 0.0)));  // zeroed, not read
  Tensor far = tensor({{-5}, {0}});
  int64_t ro, vo, bv = 0;
  int bj = -1;
  EXPECT_FALSE(cd::advanced_offsets(cd::make_advanced_params(empty({1, 5}, kDouble), dims, far, view, true, false, 5,
                                                             "index"),
                                    far.data_ptr<int64_t>(), 0, ro, vo, bj, bv));
  EXPECT_EQ(bj, 0);
  EXPECT_EQ(bv, -5);
  // index_select is the k = 1 case on the moved dim (as the kernels call it).
  Tensor x = iota({3, 4, 5}, kDouble).transpose(0, 2);  // (5, 4, 3)
  for (int64_t dim = 0; dim < 3; ++dim) {
    Tensor idx = rand_int({7}, 0, x.size(dim), 17 + dim);
    std::vector<int64_t> shape = x.sizes().vec();
    shape[dim] = 7;
    Tensor out = empty(shape, kDouble);
    Tensor moved = out.movedim(dim, 0);
    cd::AdvancedParams ps =
        cd::make_advanced_params(moved, int64_t{1} << dim, idx.unsqueeze(0), x, false, false, 7, "index_select");
    run_advanced(ps, moved, x, idx.unsqueeze(0));
    EXPECT_TRUE(bits_equal(out, x.index_select(dim, idx))) << "dim " << dim;
  }
}

TEST(CudaIndexHost, WideAdvancedMovesMatchCpu) {
  // Rows of 8 floats (or 4 doubles, 16 bools...) move as 16-byte groups.
  for (ScalarType dt : {kFloat, kDouble, kHalf, kUInt8}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t inner = 64 / static_cast<int64_t>(element_size(dt));
    Tensor x = iota({50, inner}, dt);
    Tensor idx = rand_int({37}, 0, 50, 4);
    Tensor out = empty({37, inner}, dt);
    cd::AdvancedParams p = cd::make_advanced_params(out, 1, idx.unsqueeze(0), x, false, false, 7, "index_select");
    const int64_t total = p.total;
    ASSERT_TRUE(cd::widen_advanced(p, static_cast<int64_t>(element_size(dt)), out.data_ptr(), x.data_ptr()));
    EXPECT_EQ(p.total * (16 / static_cast<int64_t>(element_size(dt))), total);
    run_advanced_bits<Bytes16>(p, out.data_ptr(), x.data_ptr(), idx.data_ptr<int64_t>());
    EXPECT_TRUE(bits_equal(out, x.index_select(0, idx)));
    // index_put_ direction, into a column slice of a wider tensor (strides 2 * inner).
    Tensor big = zeros({50, 2 * inner}, dt);
    Tensor target = big.narrow(1, 0, inner);
    Tensor uidx = unique_index({20}, 0, 50, 5);
    Tensor vals = iota({20, inner}, dt);
    cd::AdvancedParams q = cd::make_advanced_params(vals, 1, uidx.unsqueeze(0), target, false, true, 6, "index_put_");
    ASSERT_TRUE(cd::widen_advanced(q, static_cast<int64_t>(element_size(dt)), vals.data_ptr(), target.data_ptr()));
    run_advanced_bits<Bytes16>(q, vals.data_ptr(), target.data_ptr(), uidx.data_ptr<int64_t>());
    Tensor want = zeros({50, 2 * inner}, dt);
    want.narrow(1, 0, inner).index_put_({uidx}, vals);
    EXPECT_TRUE(bits_equal(big, want));
  }
  // Layouts that do not qualify keep their element moves.
  Tensor x = iota({10, 8});
  Tensor idx = tensor({1, 3});
  auto widens = [&](const Tensor& view, const Tensor& out) {
    cd::AdvancedParams p = cd::make_advanced_params(out, 1, idx.unsqueeze(0), view, false, false, 7, "t");
    const int64_t total = p.total, rows_s0 = p.rows_s0;
    const bool w = cd::widen_advanced(p, 4, out.data_ptr(), view.data_ptr());
    if (!w) {
      EXPECT_TRUE(p.total == total && p.rows_s0 == rows_s0);
    }
    return w;
  };
  EXPECT_TRUE(widens(x, empty({2, 8})));
  EXPECT_FALSE(widens(x.narrow(1, 1, 4), empty({2, 4})));   // misaligned base
  EXPECT_FALSE(widens(x.narrow(1, 0, 6), empty({2, 6})));   // 6 floats: not whole groups
  EXPECT_FALSE(widens(x.t().contiguous().t(), empty({2, 8})));  // inner stride 10
  EXPECT_FALSE(widens(x.narrow(1, 0, 1), empty({2, 1})));   // one element per row
}

TEST(CudaIndexHost, NonzeroTilesMatchCpu) {
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = rand_int({5, 7, 3}, 0, 3, 1).to(dt);
    for (const Tensor& v : {x, x.transpose(0, 2), x.index({Slice(None, None, 2), Slice(), 1}), zeros({4, 0, 2}, dt),
                            zeros({3, 4}, dt), ones({3}, dt).expand({2, 3})})
      EXPECT_TRUE(bits_equal(run_nonzero(v), v.nonzero())) << v.sizes();
  }
  // -0.0 is zero and NaN is not, in every float dtype.
  for (ScalarType dt : {kHalf, kBFloat16, kFloat, kDouble}) {
    Tensor f = tensor({0.0, -0.0, std::nan(""), 1e-3, -2.0}).to(dt);
    EXPECT_EQ(run_nonzero(f).to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4})) << dtype_name(dt);
  }
  // 0-dim inputs give (1, 0) or (0, 0).
  EXPECT_EQ(run_nonzero(scalar_tensor(3.0)).sizes().vec(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(run_nonzero(scalar_tensor(0.0)).sizes().vec(), (std::vector<int64_t>{0, 0}));
  // Several tiles, a partial last one, a transposed input.
  Tensor big = rand_int({301, 23}, 0, 2, 77).to(kFloat);
  EXPECT_TRUE(bits_equal(run_nonzero(big), big.nonzero()));
  EXPECT_TRUE(bits_equal(run_nonzero(big.t()), big.t().nonzero()));
}

TEST(CudaIndexHost, DeviceErrorRecordDecoding) {
  cd::DeviceErrorRecord r;
  r.ready = 1;
  r.op = static_cast<int32_t>(cd::DeviceErrorOp::gather);
  r.value = 7;
  r.dim = 1;
  r.size = 5;
  EXPECT_EQ(cd::describe_device_error(r, 0),
            "index 7 is out of bounds for dimension 1 with size 5 (detected on cuda:0 after the kernel ran; results "
            "written since then are unreliable)");
  try {
    cd::throw_device_error(r, 3);
    ADD_FAILURE() << "expected brisk::Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "[gather] index 7 is out of bounds for dimension 1 with size 5 (detected on cuda:3 after the kernel "
              "ran; results written since then are unreliable)");
  }
  // The samplers' invalid parameters (value: the flat index).
  r.op = static_cast<int32_t>(cd::DeviceErrorOp::poisson);
  r.value = 12;
  EXPECT_EQ(cd::describe_device_error(r, 1),
            "expected rates >= 0, but the one at flat index 12 is not (detected on cuda:1 after the kernel ran; "
            "results written since then are unreliable)");
  r.op = static_cast<int32_t>(cd::DeviceErrorOp::binomial);
  EXPECT_NE(cd::describe_device_error(r, 0).find("probabilities in [0, 1], but the pair at flat index 12"),
            std::string::npos);
  // The op names are the CPU kernels' names.
  const std::pair<cd::DeviceErrorOp, const char*> names[] = {
      {cd::DeviceErrorOp::gather, "gather"},       {cd::DeviceErrorOp::scatter, "scatter"},
      {cd::DeviceErrorOp::scatter_add, "scatter_add"}, {cd::DeviceErrorOp::index_add, "index_add_"},
      {cd::DeviceErrorOp::index, "index"},         {cd::DeviceErrorOp::index_put, "index_put_"},
      {cd::DeviceErrorOp::index_select, "index_select"},
      {cd::DeviceErrorOp::standard_gamma, "_standard_gamma"}, {cd::DeviceErrorOp::poisson, "poisson"},
      {cd::DeviceErrorOp::binomial, "binomial"}};
  for (auto [op, name] : names) EXPECT_STREQ(cd::device_error_op_name(static_cast<int32_t>(op)), name);
  r.op = static_cast<int32_t>(cd::DeviceErrorOp::index);
  r.value = -6;
  r.dim = 0;
  r.size = 5;
  expect_error([&] { cd::throw_device_error(r, 1); },
               {"[index] index -6 is out of bounds for dimension 0 with size 5", "cuda:1"});
  // An unknown op code still raises, saying so.
  r.op = 99;
  expect_error([&] { cd::throw_device_error(r, 0); }, {"[cuda kernel]", "unknown device-side error (op code 99)"});
}

// ==== device: CUDA against CPU ================================================================

TEST(CudaIndex, IndexSelectMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({6, 7, 5}, dt).permute({2, 0, 1});  // (5, 6, 7) non-contiguous
    Tensor xg = cu(x);
    for (int64_t dim = 0; dim < 3; ++dim) {
      Tensor idx = rand_int({9}, 0, x.size(dim), 40 + dim);  // duplicates
      EXPECT_TRUE(bits_equal(xg.index_select(dim, cu(idx)), x.index_select(dim, idx))) << "dim " << dim;
    }
    EXPECT_TRUE(bits_equal(xg.index_select(1, cu(empty({0}, kInt64))), x.index_select(1, empty({0}, kInt64))));
  }
  // int32 index, strided index, 0-dim self, many rows.
  Tensor x = iota({5, 6}).t();
  Tensor idx = tensor({4, 0, 4, 2, 1, 3}).index({Slice(None, None, 2)});
  EXPECT_TRUE(bits_equal(cu(x).index_select(-1, cu(idx.to(kInt32))), x.index_select(-1, idx.to(kInt32))));
  EXPECT_TRUE(bits_equal(cu(scalar_tensor(5.0)).index_select(0, cu(tensor({0}))), scalar_tensor(5.0)));
  Tensor big = iota({70000, 3});
  Tensor bi = rand_int({50000}, 0, 70000, 3);
  EXPECT_TRUE(bits_equal(cu(big).index_select(0, cu(bi)), big.index_select(0, bi)));
  // Embedding-style rows: 16-byte moves (widen_advanced) for whole aligned
  // rows and aligned column slices; element moves for a misaligned slice.
  for (ScalarType dt : {kFloat, kDouble, kHalf, kUInt8}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor emb = randn({1000, 64}).mul(50).to(dt);
    Tensor ei = rand_int({3000}, 0, 1000, 12);
    Tensor eg = cu(emb), eig = cu(ei);
    EXPECT_TRUE(bits_equal(eg.index_select(0, eig), emb.index_select(0, ei)));
    EXPECT_TRUE(bits_equal(eg.narrow(1, 32, 32).index_select(0, eig), emb.narrow(1, 32, 32).index_select(0, ei)));
    EXPECT_TRUE(bits_equal(eg.narrow(1, 1, 32).index_select(0, eig), emb.narrow(1, 1, 32).index_select(0, ei)));
    Tensor ui = unique_index({500}, 0, 1000, 13);
    Tensor rowsv = randn({500, 64}).mul(50).to(dt);
    Tensor want = emb.clone();
    want.index_put_({ui}, rowsv);
    Tensor got = eg.clone();
    got.index_put_({cu(ui)}, cu(rowsv));
    EXPECT_TRUE(bits_equal(got, want));
  }
}

TEST(CudaIndex, GatherMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({4, 5, 3}, dt);
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> ishape = {3, 4, 2};
      ishape[dim] = 6;
      Tensor idx = rand_int(ishape, 0, x.size(dim), 5 + dim);
      EXPECT_TRUE(bits_equal(cu(x).gather(dim, cu(idx)), x.gather(dim, idx))) << "dim " << dim;
    }
  }
  Tensor x = iota({6, 4}).t();
  Tensor idx = rand_int({5, 4}, 0, 4, 9).t();
  EXPECT_TRUE(bits_equal(cu(x).gather(0, cu(idx)), x.gather(0, idx)));
  EXPECT_TRUE(bits_equal(cu(x).gather(-1, cu(idx)), x.gather(-1, idx)));
  EXPECT_TRUE(bits_equal(cu(scalar_tensor(3.0)).gather(0, cu(scalar_tensor(0, kInt64))), scalar_tensor(3.0)));
  EXPECT_EQ(cu(x).gather(0, cu(empty({0, 6}, kInt64))).sizes().vec(), (std::vector<int64_t>{0, 6}));
  Tensor big = randn({100000});
  Tensor bi = rand_int({80000}, 0, 100000, 4);
  EXPECT_TRUE(bits_equal(cu(big).gather(0, cu(bi)), big.gather(0, bi)));
  // An index on another device is an error, not a fault.
  expect_error([&] { gather(cu(x), 0, idx); }, {"[gather]", "expected index on cuda"});
}

TEST(CudaIndex, ScatterMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor self = iota({4, 5, 3}, dt);
    Tensor src = iota({5, 6, 4}, dt).permute({1, 0, 2});  // (6, 5, 4), non-contiguous, larger than index
    for (int64_t dim = 0; dim < 3; ++dim) {
      std::vector<int64_t> ishape = {3, 4, 2};
      ishape[dim] = 3;
      Tensor idx = unique_index(ishape, dim, self.size(dim), 60 + dim);  // no two writes to one element
      EXPECT_TRUE(bits_equal(cu(self).scatter(dim, cu(idx), cu(src)), self.scatter(dim, idx, src))) << dim;
      EXPECT_TRUE(bits_equal(cu(self).scatter(dim, cu(idx), Scalar(1)), self.scatter(dim, idx, Scalar(1)))) << dim;
      Tensor t = cu(self);
      t.scatter_(dim, cu(idx), cu(src));
      EXPECT_TRUE(bits_equal(t, self.scatter(dim, idx, src)));
    }
  }
  // A transposed target.
  Tensor self = iota({5, 4}).t();  // (4, 5)
  Tensor idx = unique_index({2, 5}, 0, 4, 3);
  Tensor src = iota({2, 5}).add(100);
  EXPECT_TRUE(bits_equal(cu(self).scatter(0, cu(idx), cu(src)), self.scatter(0, idx, src)));
}

TEST(CudaIndex, ScatterAddAndIndexAddMatchCpu) {
  REQUIRE_CUDA();
  // Small integer values: every partial sum is exact in every dtype, so the
  // atomic adds' order does not matter and results are bit-identical.
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t dim = 0; dim < 3; ++dim) {
      const bool b = dt == kBool;
      Tensor self = small_ints({4, 5, 3}, b ? 2 : 50, dt);
      std::vector<int64_t> ishape = {4, 5, 3};
      ishape[dim] = 6;
      Tensor idx = rand_int(ishape, 0, self.size(dim), 70 + dim);  // duplicates accumulate
      Tensor src = small_ints(ishape, b ? 2 : 9, dt);
      EXPECT_TRUE(bits_equal(cu(self).scatter_add(dim, cu(idx), cu(src)), self.scatter_add(dim, idx, src))) << dim;

      std::vector<int64_t> sshape = {4, 5, 3};
      sshape[dim] = 7;
      Tensor isrc = small_ints(sshape, b ? 2 : 5, dt);
      Tensor iidx = rand_int({7}, 0, self.size(dim), 80 + dim);
      Tensor want = self.clone();
      want.index_add_(dim, iidx, isrc, b ? Scalar(true) : Scalar(2));
      Tensor got = cu(self);
      got.index_add_(dim, cu(iidx), cu(isrc), b ? Scalar(true) : Scalar(2));
      EXPECT_TRUE(bits_equal(got, want)) << dim;
    }
  }
  // uint8 wraps modulo 256 as on the CPU.
  Tensor u = full({3}, 250, kUInt8);
  Tensor uw = u.scatter_add(0, tensor({0, 0, 2}), full({3}, 5, kUInt8));
  EXPECT_TRUE(bits_equal(cu(u).scatter_add(0, cu(tensor({0, 0, 2})), cu(full({3}, 5, kUInt8))), uw));
  // Random floats: equal up to the summation order.
  Tensor self = randn({64, 32});
  Tensor idx = rand_int({500, 32}, 0, 64, 5);
  Tensor src = randn({500, 32});
  EXPECT_TRUE(close(cu(self).scatter_add(0, cu(idx), cu(src)).cpu(), self.scatter_add(0, idx, src), 1e-5, 1e-5));
  Tensor d = randn({40, 8}, kDouble).t();  // (8, 40), non-contiguous
  Tensor di = rand_int({300}, 0, 40, 6);
  Tensor ds = randn({8, 300}, kDouble);
  Tensor want = d.clone();
  want.index_add_(1, di, ds, 0.75);
  Tensor got = cu(d);
  got.index_add_(1, cu(di.to(kInt32)), cu(ds), 0.75);
  EXPECT_TRUE(close(got.cpu(), want, 1e-12, 1e-12));
  for (ScalarType dt : {kHalf, kBFloat16}) {  // rounded after every add: order matters a little
    Tensor h = randn({16, 4}).to(dt);
    Tensor hi = rand_int({64, 4}, 0, 16, 7);
    Tensor hs = randn({64, 4}).to(dt);
    EXPECT_TRUE(close(cu(h).scatter_add(0, cu(hi), cu(hs)).cpu(), h.scatter_add(0, hi, hs), 5e-2, 5e-2))
        << dtype_name(dt);
  }
}

TEST(CudaIndex, AdvancedIndexingMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({6, 5, 4}, dt).permute({2, 1, 0});  // (4, 5, 6), non-contiguous
    Tensor xg = cu(x);
    Tensor i = tensor({2, 0, -1, 2}), j = tensor({{1}, {-6}});  // broadcast to (2, 4)
    EXPECT_TRUE(bits_equal(xg.index({cu(i)}), x.index({i})));
    EXPECT_TRUE(bits_equal(xg.index({Slice(), Slice(), cu(i)}), x.index({Slice(), Slice(), i})));
    EXPECT_TRUE(bits_equal(xg.index({cu(i), Slice(), cu(j)}), x.index({i, Slice(), j})));   // separated
    EXPECT_TRUE(bits_equal(xg.index({Slice(), cu(i), cu(j)}), x.index({Slice(), i, j})));   // adjacent
    EXPECT_TRUE(bits_equal(xg.index({i, 1, j}), x.index({i, 1, j})));  // cpu indices for a cuda tensor
    Tensor mask = rand_int({4, 5}, 0, 2, 3).to(kBool);
    EXPECT_TRUE(bits_equal(xg.index({cu(mask)}), x.index({mask})));
    EXPECT_TRUE(bits_equal(xg.masked_select(cu(mask.unsqueeze(2))), x.masked_select(mask.unsqueeze(2))));
    EXPECT_TRUE(bits_equal(xg.index({cu(zeros({4, 5}, kBool))}), x.index({zeros({4, 5}, kBool)})));
    EXPECT_TRUE(bits_equal(xg.index({cu(empty({0}, kInt64))}), x.index({empty({0}, kInt64)})));
  }
  Tensor big = randn({3000, 64});
  Tensor rows = rand_int({20000}, -3000, 3000, 8);
  EXPECT_TRUE(bits_equal(cu(big).index({cu(rows)}), big.index({rows})));
}

TEST(CudaIndex, IndexPutMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = zeros({6, 5, 4}, dt).permute({2, 1, 0});  // (4, 5, 6)
    Tensor val = iota({3, 5}, dt);
    Tensor i = tensor({3, -4, 1}), j = tensor({5, 0, -1});  // distinct (i, j) pairs
    Tensor want = x.clone();
    want.index_put_({i, Slice(), j}, val);
    Tensor got = cu(x);
    got.index_put_({cu(i), Slice(), cu(j)}, cu(val));
    EXPECT_TRUE(bits_equal(got, want));
    Tensor w2 = x.clone();
    w2.index_put_({Slice(), i}, Scalar(1));
    Tensor g2 = cu(x);
    g2.index_put_({Slice(), cu(i)}, Scalar(1));
    EXPECT_TRUE(bits_equal(g2, w2));
    Tensor mask = rand_int({4, 5, 6}, 0, 2, 9).to(kBool);
    Tensor mv = iota({mask.sum().item<int64_t>()}, dt);
    Tensor w3 = x.clone();
    w3.index_put_({mask}, mv);
    Tensor g3 = cu(x);
    g3.index_put_({cu(mask)}, cu(mv));
    EXPECT_TRUE(bits_equal(g3, w3));
  }
  // Duplicates carrying the same value give that value.
  Tensor d = zeros({5});
  Tensor dg = cu(d);
  dg.index_put_({cu(tensor({1, 3, 1, 1, 3}))}, cu(tensor({4.f, 7.f, 4.f, 4.f, 7.f})));
  EXPECT_EQ(dg.cpu().to_vector<float>(), (std::vector<float>{0, 4, 0, 7, 0}));
  // Duplicates with different values: one of them wins (the order of
  // parallel writes is not defined on CUDA, as in PyTorch).
  Tensor e = cu(zeros({3}));
  e.index_put_({cu(tensor({1, 1, 1}))}, cu(tensor({4.f, 5.f, 6.f})));
  const float v = e.cpu().to_vector<float>()[1];
  EXPECT_TRUE(v == 4.f || v == 5.f || v == 6.f) << v;
  // An empty index writes nothing.
  Tensor z = cu(ones({4}));
  z.index_put_({cu(empty({0}, kInt64))}, cu(empty({0})));
  EXPECT_EQ(z.cpu().to_vector<float>(), (std::vector<float>{1, 1, 1, 1}));
}

// index_put_ with accumulate: atomic adds on the device, serial adds on the
// CPU; integers match exactly, floats up to the order of the adds.
TEST(CudaIndex, IndexPutAccumulateMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = iota({6, 5, 4}, dt).permute({2, 1, 0});  // (4, 5, 6), non-contiguous
    Tensor i = rand_int({40}, -4, 4, 21), j = rand_int({40}, 0, 6, 22);  // many duplicates
    Tensor val = iota({40, 5}, dt);
    Tensor want = x.clone();
    want.index_put_({i, Slice(), j}, val, true);
    Tensor got = cu(x);
    got.index_put_({cu(i), Slice(), cu(j)}, cu(val), true);
    const bool exact = !is_floating_point(dt) || dt == kDouble || dt == kFloat;  // small integers: exact sums
    if (exact)
      EXPECT_TRUE(close(got.cpu(), want, 0, 0));
    else
      EXPECT_TRUE(close(got.cpu(), want, 2e-2, 2.0));  // 16-bit floats round after each add
    Tensor mask = rand_int({4, 5}, 0, 2, 23).to(kBool);
    Tensor mv = iota({6}, dt);
    Tensor w2 = x.clone();
    w2.index_put_({mask}, mv, true);
    Tensor g2 = cu(x);
    g2.index_put_({cu(mask)}, cu(mv), true);
    EXPECT_TRUE(close(g2.cpu(), w2, exact ? 0 : 2e-2, exact ? 0 : 1.0));
    Tensor one = cu(zeros({5}, dt));
    one.index_put_({cu(tensor({0, 1, 1, 3}))}, cu(ones({4}, dt)), true);
    EXPECT_EQ(one.cpu().to_vector<int64_t>(),
              dt == kBool ? (std::vector<int64_t>{1, 1, 0, 1, 0}) : (std::vector<int64_t>{1, 2, 0, 1, 0}));
  }
  // Many rows onto few places: float sums in any order, close to the CPU's.
  Tensor big = zeros({7, 33});
  Tensor rows = rand_int({20000}, -7, 7, 24);
  Tensor v = randn({20000, 33});
  Tensor want = big.index_put({rows}, v, true);
  EXPECT_TRUE(close(cu(big).index_put({cu(rows)}, cu(v), true).cpu(), want, 1e-4, 1e-3));
  // CPU values for a CUDA tensor; gradients on the device.
  Tensor g = cu(zeros({3}));
  g.index_put_({cu(tensor({2, 2}))}, scalar_tensor(1.5f), true);
  EXPECT_EQ(g.cpu().to_vector<float>(), (std::vector<float>{0, 0, 3}));
  Tensor leaf = cu(randn({4, 3}, kDouble)).requires_grad_();
  Tensor lv = cu(randn({5, 3}, kDouble)).requires_grad_();
  Tensor out = leaf.index_put({cu(tensor({0, 2, 2, -1, 0}))}, lv, true);
  (out * out).sum().backward();
  Tensor cl = leaf.detach().cpu().requires_grad_(), cv = lv.detach().cpu().requires_grad_();
  Tensor co = cl.index_put({tensor({0, 2, 2, -1, 0})}, cv, true);
  (co * co).sum().backward();
  EXPECT_TRUE(close(leaf.grad().cpu(), cl.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(close(lv.grad().cpu(), cv.grad(), 1e-12, 1e-12));
}

TEST(CudaIndex, NonzeroMatchesCpu) {
  REQUIRE_CUDA();
  for (ScalarType dt : kAllDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = rand_int({5, 7, 3}, 0, 3, 1).to(dt);
    for (const Tensor& v : {x, x.transpose(0, 2), x.index({Slice(None, None, 2), Slice(), 1}), x.flatten(),
                            zeros({4, 0, 2}, dt), zeros({0}, dt), zeros({3, 4}, dt), ones({3}, dt).expand({2, 3})})
      EXPECT_TRUE(bits_equal(cu(v).nonzero(), v.nonzero())) << v.sizes();
  }
  for (ScalarType dt : {kHalf, kBFloat16, kFloat, kDouble}) {
    Tensor f = tensor({0.0, -0.0, std::nan(""), 1e-3, -2.0}).to(dt);
    EXPECT_EQ(cu(f).nonzero().cpu().to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4})) << dtype_name(dt);
  }
  EXPECT_TRUE(bits_equal(cu(scalar_tensor(3.0)).nonzero(), scalar_tensor(3.0).nonzero()));
  EXPECT_TRUE(bits_equal(cu(scalar_tensor(0.0)).nonzero(), scalar_tensor(0.0).nonzero()));
  for (auto shape : {std::vector<int64_t>{1000003}, std::vector<int64_t>{701, 1409}}) {
    Tensor big = rand_int(shape, 0, 2, 77).to(kFloat);
    EXPECT_TRUE(bits_equal(cu(big).nonzero(), big.nonzero()));
    if (shape.size() == 2) {
      EXPECT_TRUE(bits_equal(cu(big).t().nonzero(), big.t().nonzero()));
    }
  }
  Tensor c = tensor(std::vector<bool>{true, false, false, true, true, false}, {2, 3});
  std::vector<Tensor> w = where(cu(c));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].cpu().to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(w[1].cpu().to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1}));
}

TEST(CudaIndex, BadIndicesRaiseAtTheNextSync) {
  REQUIRE_CUDA();
  cuda::synchronize();  // nothing pending
  Tensor x = cu(iota({3, 5}));
  Tensor bad = cu(tensor({{0, 7}, {1, 2}, {3, 4}}));  // 7 on dim 1 of size 5
  Tensor out = x.gather(1, bad);  // the launch does not wait
  expect_error([] { cuda::synchronize(); },
               {"[gather] index 7 is out of bounds for dimension 1 with size 5 (detected on cuda:",
                "results written since then are unreliable"});
  cuda::synchronize();  // raised once, then cleared
  // Every op names itself, raised here by the blocking copy of its result.
  Tensor ones_row = cu(ones({1, 5}));
  struct Case {
    std::function<Tensor()> run;
    std::vector<std::string> pieces;
  };
  const std::vector<Case> cases = {
      {[&] { return x.gather(0, cu(tensor({{-1, 0, 0, 0, 0}}))); },
       {"[gather]", "index -1 is out of bounds for dimension 0 with size 3"}},
      {[&] { return x.clone().scatter_(1, bad, cu(iota({3, 2}))); },
       {"[scatter]", "index 7 is out of bounds for dimension 1 with size 5"}},
      {[&] { return x.clone().scatter_(1, bad, 2.0); }, {"[scatter]", "index 7"}},
      {[&] { return x.clone().scatter_add_(1, bad, cu(iota({3, 2}))); }, {"[scatter_add]", "index 7"}},
      {[&] { return x.clone().index_add_(0, cu(tensor({0, 3})), cu(ones({2, 5}))); },
       {"[index_add_]", "index 3 is out of bounds for dimension 0 with size 3"}},
      {[&] { return x.index({cu(tensor({1, -4}))}); },
       {"[index]", "index -4 is out of bounds for dimension 0 with size 3"}},
      {[&] { return x.index({Slice(), cu(tensor({5}))}); },
       {"[index]", "index 5 is out of bounds for dimension 1 with size 5"}},
      {[&] { return x.clone().index_put_({cu(tensor({0, 3}))}, ones_row); },
       {"[index_put_]", "index 3 is out of bounds for dimension 0 with size 3"}},
      {[&] { return x.index_select(1, cu(tensor({2, 9}))); },
       {"[index_select]", "index 9 is out of bounds for dimension 1 with size 5"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pieces[0]);
    try {
      Tensor r = c.run();
      r.cpu();
      ADD_FAILURE() << "expected brisk::Error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      for (const std::string& p : c.pieces) EXPECT_NE(msg.find(p), std::string::npos) << msg;
      EXPECT_NE(msg.find("detected on cuda:"), std::string::npos) << msg;
    }
    cuda::synchronize();  // cleared
  }
  // The first error wins: two bad launches on one stream report the first.
  // (Indices are copied to the device first: a blocking copy is a sync
  // point, and would raise the pending error itself.)
  Tensor eleven = cu(tensor({11}));
  x.gather(1, bad);
  x.index_select(1, eleven);
  expect_error([] { cuda::synchronize(); }, {"[gather]", "index 7"});
  cuda::synchronize();
  // Stream and event waits check too.
  x.index_select(0, cu(tensor({4})));
  expect_error([] { cuda::current_stream().synchronize(); }, {"[index_select]", "index 4"});
  cuda::Event ev;
  x.index_select(0, cu(tensor({5})));
  ev.record();
  expect_error([&] { ev.synchronize(); }, {"[index_select]", "index 5"});
  // The context is still usable: valid ops give the CPU results.
  Tensor good = tensor({{0, 4}, {1, 2}, {3, 4}});
  EXPECT_TRUE(bits_equal(x.gather(1, cu(good)), iota({3, 5}).gather(1, good)));
  EXPECT_TRUE(bits_equal(x.index({cu(tensor({2, -3}))}), iota({3, 5}).index({tensor({2, -3})})));
}
