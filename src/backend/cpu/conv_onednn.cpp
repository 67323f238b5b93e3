// float32 convolutions on oneDNN primitives (convolution_forward,
// convolution_backward_data, convolution_backward_weights).
//
// Note [oneDNN convolution layouts]
// Measured on the 2-core AVX-512 dev box (oneDNN 2.6), a 3x3 convolution
// with plain NCHW src/dst and OIHW weights gets oneDNN's "gemm:jit"
// implementation (im2col + sgemm), 1.5-3x slower than its direct jit kernels,
// and plain NHWC with plain OHWI weights gets the reference loop (100x
// slower). So:
// - NCHW tensors: src/dst/weights are described with format_tag::any; oneDNN
//   picks its blocked layouts (nChw16c, OIhw16i16o, ...) and we reorder user
//   tensors in and out (counted in ConvStats::activation_reorders). For a
//   first layer with few input channels oneDNN keeps src in NCHW (no reorder).
// - channels_last tensors: src/dst are plain NHWC in the primitive itself,
//   so activations are never reordered; weights are format_tag::any
//   (reordered per call: they are small).
// Weights and weight gradients are always reordered from/to the user's
// OIHW (or channels_last OHWI) layout.
//
// Note [oneDNN primitive cache]
// Building a primitive descriptor walks oneDNN's implementation list and
// JIT-compiles kernels (0.1-10 ms). Entries are cached by everything that
// shapes them: the geometry, the pass, the user layouts, bias or not, and
// the thread count (oneDNN's OpenMP kernels split work by the thread count
// seen at creation). The cache holds the primitive, the reorders around it
// and its scratchpad size; scratchpads and reorder buffers come from brisk's
// caching allocator on each call, so one primitive can run on several
// threads at once. Parameters oneDNN does not implement are cached as
// "unsupported" and run on im2col.
//
// Threads: see Note [BLAS threads] in backend/cpu/blas.cpp. oneDNN reads the
// calling thread's omp_get_max_threads(); sync_threads() sets it to brisk's
// count before each call.
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#ifdef BRISK_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

#include "backend/cpu/conv.h"
#include "backend/cpu/onednn.h"
#include "brisk/ops.h"
#include "core/cpu_features.h"
#include "core/parallel.h"

namespace brisk::cpu {

using conv::ConvGeom;
using conv::ConvScratch;

ConvStats& conv_stats() {
  static ConvStats s;
  return s;
}

#ifndef BRISK_HAVE_DNNL

bool onednn_available() { return false; }
bool onednn_conv_forward(const ConvGeom&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, ConvScratch*) {
  return false;
}
bool onednn_conv_backward_data(const ConvGeom&, const Tensor&, const Tensor&, const Tensor&, ConvScratch*) { return false; }
bool onednn_conv_backward_weights(const ConvGeom&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                             ConvScratch*) {
  return false;
}
void clear_conv_primitive_cache() {}

#else

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DType = memory::data_type;

dnnl::engine& cpu_engine() { return onednn_engine(); }
dnnl::stream& thread_stream() { return onednn_stream(); }

int effective_threads() { return in_parallel_region() ? 1 : get_num_threads(); }

void sync_threads() {
  if (in_parallel_region()) return;
#ifdef _OPENMP
  const int nt = get_num_threads();
  if (omp_get_max_threads() != nt) omp_set_num_threads(nt);
#endif
}

enum class Pass : int64_t { Forward, BackwardData, BackwardWeights };

// ---- the cache ---------------------------------------------------------------------

constexpr size_t kKeyLen = 24;
using Key = std::array<int64_t, kKeyLen>;
using KeyHash = PrimitiveKeyHash;

/// The user tensors' layouts: src-side and dst-side activations NCHW or
/// NHWC, weights OIHW or OHWI (channels_last).
struct UserLayouts {
  bool src_cl = false, dst_cl = false, w_cl = false;
};

Key make_key(const ConvGeom& g, Pass pass, UserLayouts u, bool bias, DType dt) {
  return Key{g.n,  g.ic, g.ih, g.iw, g.oc, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh,
             g.dw, g.pt, g.pl, g.pb, g.pr, g.groups, int64_t(g.channels_last), int64_t(pass),
             int64_t(u.src_cl) | int64_t(u.dst_cl) << 1 | int64_t(u.w_cl) << 2, int64_t(bias),
             int64_t(effective_threads()), int64_t(dt)};
}

/// One argument of a cached primitive: the user tensor's layout, the
/// primitive's, and the reorder between them when they differ.
struct Arg {
  int id = 0;
  memory::desc user, inner;
  bool output = false, activation = false, reordered = false;
  dnnl::reorder reorder;
};

struct Entry {
  bool ok = false;
  dnnl::primitive prim;
  std::vector<Arg> args;  // in the order the caller passes tensors
  size_t scratchpad_bytes = 0;
};

constexpr size_t kMaxEntries = 1024;

struct Cache {
  std::mutex mu;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> map;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: primitives may outlive static destruction order
  return *c;
}

// ---- descriptors -----------------------------------------------------------------------

memory::dims dims_of(std::initializer_list<int64_t> l) { return memory::dims(l.begin(), l.end()); }

/// (N, C, H, W) in NCHW or NHWC.
memory::desc activation_md(int64_t n, int64_t c, int64_t h, int64_t w, bool cl, DType dt) {
  return memory::desc(dims_of({n, c, h, w}), dt, cl ? Tag::nhwc : Tag::nchw);
}
memory::desc activation_any(int64_t n, int64_t c, int64_t h, int64_t w, DType dt) {
  return memory::desc(dims_of({n, c, h, w}), dt, Tag::any);
}
/// Weights (OC, IC/G, KH, KW), grouped as (G, OC/G, IC/G, KH, KW) when G > 1,
/// contiguous (OIHW) or channels_last (OHWI).
memory::desc weights_md(const ConvGeom& g, bool cl, DType dt) {
  const int64_t icg = g.ic / g.groups, ocg = g.oc / g.groups;
  // element strides of (O, I, H, W)
  const int64_t so = icg * g.kh * g.kw;
  const int64_t si = cl ? 1 : g.kh * g.kw, sy = cl ? g.kw * icg : g.kw, sx = cl ? icg : 1;
  if (g.groups == 1) return memory::desc(dims_of({g.oc, icg, g.kh, g.kw}), dt, dims_of({so, si, sy, sx}));
  return memory::desc(dims_of({g.groups, ocg, icg, g.kh, g.kw}), dt, dims_of({ocg * so, so, si, sy, sx}));
}
memory::desc weights_any(const ConvGeom& g, DType dt) {
  const int64_t icg = g.ic / g.groups, ocg = g.oc / g.groups;
  if (g.groups == 1) return memory::desc(dims_of({g.oc, icg, g.kh, g.kw}), dt, Tag::any);
  return memory::desc(dims_of({g.groups, ocg, icg, g.kh, g.kw}), dt, Tag::any);
}

struct ConvDescs {
  memory::desc src, weights, bias, dst;
  memory::dims strides, dilates, pad_l, pad_r;
  bool ok = true;
};

/// Right padding oneDNN accepts: it requires
/// (in - kernel_extent + pad_l + pad_r) / stride + 1 == out. The caller's
/// padding satisfies this for every direct convolution; the dual of a
/// transposed convolution with output_padding may need the exact value.
int64_t right_pad(int64_t in, int64_t out, int64_t k, int64_t s, int64_t d, int64_t pl, int64_t pr, bool& ok) {
  const int64_t extent = d * (k - 1) + 1;
  if (in - extent + pl + pr >= 0 && (in - extent + pl + pr) / s + 1 == out) return pr;
  const int64_t exact = (out - 1) * s + extent - in - pl;
  if (exact + s <= 0) ok = false;
  return exact;
}

ConvDescs make_descs(const ConvGeom& g, bool bias, DType dt) {
  ConvDescs d;
  if (g.channels_last) {
    d.src = activation_md(g.n, g.ic, g.ih, g.iw, true, dt);
    d.dst = activation_md(g.n, g.oc, g.oh, g.ow, true, dt);
  } else {
    d.src = activation_any(g.n, g.ic, g.ih, g.iw, dt);
    d.dst = activation_any(g.n, g.oc, g.oh, g.ow, dt);
  }
  d.weights = weights_any(g, dt);
  if (bias) d.bias = memory::desc(dims_of({g.oc}), dt, Tag::x);
  d.strides = dims_of({g.sh, g.sw});
  d.dilates = dims_of({g.dh - 1, g.dw - 1});
  d.pad_l = dims_of({g.pt, g.pl});
  d.pad_r = dims_of({right_pad(g.ih, g.oh, g.kh, g.sh, g.dh, g.pt, g.pb, d.ok),
                     right_pad(g.iw, g.ow, g.kw, g.sw, g.dw, g.pl, g.pr, d.ok)});
  return d;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

/// Always forward_training, also when no gradient will be asked for: for
/// inference and NCHW user tensors oneDNN 2.6 picks brgconv with an NHWC dst,
/// whose reorder back to NCHW costs 4x the convolution on a 1->32 channel
/// 28x28 layer (measured: 2.6 ms against 0.58 ms at N=64, one thread).
dnnl::convolution_forward::primitive_desc forward_pd(const ConvDescs& d, bool bias) {
  const auto prop = dnnl::prop_kind::forward_training;
  const auto alg = dnnl::algorithm::convolution_direct;
  auto desc = bias ? dnnl::convolution_forward::desc(prop, alg, d.src, d.weights, d.bias, d.dst, d.strides,
                                                     d.dilates, d.pad_l, d.pad_r)
                   : dnnl::convolution_forward::desc(prop, alg, d.src, d.weights, d.dst, d.strides, d.dilates,
                                                     d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, user_scratchpad(), cpu_engine());
}

/// Adds an argument: the primitive's layout is queried from the descriptor.
void add_arg(Entry& e, const dnnl::primitive_desc_base& pd, int id, const memory::desc& user, bool output,
             bool activation) {
  Arg a;
  a.id = id;
  a.user = user;
  a.inner = pd.query_md(dnnl::query::exec_arg_md, id);
  a.output = output;
  a.activation = activation;
  a.reordered = a.inner != a.user;
  if (a.reordered) {
    auto& eng = cpu_engine();
    a.reorder = output ? dnnl::reorder(dnnl::reorder::primitive_desc(eng, a.inner, eng, a.user))
                       : dnnl::reorder(dnnl::reorder::primitive_desc(eng, a.user, eng, a.inner));
  }
  e.args.push_back(std::move(a));
}

std::shared_ptr<const Entry> build(const ConvGeom& g, Pass pass, UserLayouts u, bool bias, DType dt) {
  auto e = std::make_shared<Entry>();
  const ConvDescs d = make_descs(g, bias, dt);
  if (!d.ok) return e;
  const memory::desc src_u = activation_md(g.n, g.ic, g.ih, g.iw, u.src_cl, dt);
  const memory::desc dst_u = activation_md(g.n, g.oc, g.oh, g.ow, u.dst_cl, dt);
  const memory::desc w_u = weights_md(g, u.w_cl, dt);
  try {
    switch (pass) {
      case Pass::Forward: {
        auto pd = forward_pd(d, bias);
        e->prim = dnnl::convolution_forward(pd);
        add_arg(*e, pd, DNNL_ARG_SRC, src_u, false, true);
        add_arg(*e, pd, DNNL_ARG_WEIGHTS, w_u, false, false);
        if (bias) add_arg(*e, pd, DNNL_ARG_BIAS, d.bias, false, false);
        add_arg(*e, pd, DNNL_ARG_DST, dst_u, true, true);
        e->scratchpad_bytes = pd.scratchpad_desc().get_size();
        break;
      }
      case Pass::BackwardData: {
        auto hint = forward_pd(d, false);
        dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, d.src, d.weights, d.dst,
                                                   d.strides, d.dilates, d.pad_l, d.pad_r);
        dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), cpu_engine(), hint);
        e->prim = dnnl::convolution_backward_data(pd);
        add_arg(*e, pd, DNNL_ARG_DIFF_DST, dst_u, false, true);
        add_arg(*e, pd, DNNL_ARG_WEIGHTS, w_u, false, false);
        add_arg(*e, pd, DNNL_ARG_DIFF_SRC, src_u, true, true);
        e->scratchpad_bytes = pd.scratchpad_desc().get_size();
        break;
      }
      case Pass::BackwardWeights: {
        auto hint = forward_pd(d, bias);
        const auto alg = dnnl::algorithm::convolution_direct;
        auto desc = bias ? dnnl::convolution_backward_weights::desc(alg, d.src, d.weights, d.bias, d.dst, d.strides,
                                                                    d.dilates, d.pad_l, d.pad_r)
                         : dnnl::convolution_backward_weights::desc(alg, d.src, d.weights, d.dst, d.strides,
                                                                    d.dilates, d.pad_l, d.pad_r);
        dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), cpu_engine(), hint);
        e->prim = dnnl::convolution_backward_weights(pd);
        add_arg(*e, pd, DNNL_ARG_SRC, src_u, false, true);
        add_arg(*e, pd, DNNL_ARG_DIFF_DST, dst_u, false, true);
        add_arg(*e, pd, DNNL_ARG_DIFF_WEIGHTS, w_u, true, false);
        if (bias) add_arg(*e, pd, DNNL_ARG_DIFF_BIAS, d.bias, true, false);
        e->scratchpad_bytes = pd.scratchpad_desc().get_size();
        break;
      }
    }
    e->ok = true;
  } catch (const dnnl::error&) {
    e->ok = false;  // no implementation for these parameters: im2col runs them
    e->args.clear();
  }
  return e;
}

std::shared_ptr<const Entry> lookup(const ConvGeom& g, Pass pass, UserLayouts u, bool bias, DType dt) {
  const Key key = make_key(g, pass, u, bias, dt);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.map.find(key);
    if (it != c.map.end()) return it->second;
  }
  // Built outside the lock (slow); a racing thread may build the same entry.
  auto e = build(g, pass, u, bias, dt);
  conv_stats().primitives_created.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.map.size() >= kMaxEntries) c.map.clear();
  c.map.emplace(key, e);
  return e;
}

std::string md_bytes(const memory::desc& md) {
  return std::string(reinterpret_cast<const char*>(&md.data), sizeof(md.data));
}
bool md_equal(const std::string& bytes, const memory::desc& md) {
  dnnl_memory_desc_t d;
  std::memcpy(&d, bytes.data(), sizeof(d));
  return dnnl_memory_desc_equal(&d, &md.data) != 0;
}

/// A conversion of `user` (layout a.user) to a.inner made earlier, if any.
const Tensor* find_converted(const ConvScratch* sc, const Arg& a, const Tensor& user) {
  if (!sc) return nullptr;
  for (const auto& c : sc->converted)
    if (c.user.data_ptr() == user.data_ptr() && c.version == user._raw_version() && md_equal(c.user_layout, a.user) &&
        md_equal(c.inner_layout, a.inner))
      return &c.buffer;
  return nullptr;
}

/// Runs a cached primitive on user tensors given in the entry's argument
/// order. Converted input activations are looked up in and added to `sc`.
void execute(const Entry& e, std::initializer_list<const Tensor*> tensors, ConvScratch* sc) {
  BRISK_INTERNAL_ASSERT(tensors.size() == e.args.size(), "oneDNN convolution: ", tensors.size(), " tensors for ",
                        e.args.size(), " primitive arguments");
  auto& eng = cpu_engine();
  auto& s = thread_stream();
  std::unordered_map<int, memory> args;
  args.reserve(e.args.size() + 1);
  std::vector<Tensor> buffers;  // reorder targets and the scratchpad, alive until the end
  buffers.reserve(e.args.size() + 1);
  std::vector<std::pair<const Arg*, std::pair<memory, memory>>> outputs;  // (inner, user) to reorder back
  auto* t = tensors.begin();
  for (const Arg& a : e.args) {
    const Tensor& user = **t++;
    memory um(a.user, eng, user.data_ptr());
    if (!a.reordered) {
      args.emplace(a.id, um);
      continue;
    }
    if (!a.output && a.activation) {
      if (const Tensor* done = find_converted(sc, a, user)) {
        conv_stats().reorders_reused.fetch_add(1, std::memory_order_relaxed);
        args.emplace(a.id, memory(a.inner, eng, done->data_ptr()));
        continue;
      }
    }
    buffers.push_back(empty({int64_t(a.inner.get_size())}, kUInt8));
    memory im(a.inner, eng, buffers.back().data_ptr());
    if (a.activation) conv_stats().activation_reorders.fetch_add(1, std::memory_order_relaxed);
    if (a.output) {
      outputs.push_back({&a, {im, um}});
    } else {
      a.reorder.execute(s, um, im);
      if (sc && a.activation)
        sc->converted.push_back({user, user._raw_version(), md_bytes(a.user), md_bytes(a.inner), buffers.back()});
    }
    args.emplace(a.id, im);
  }
  if (e.scratchpad_bytes > 0) {
    buffers.push_back(empty({int64_t(e.scratchpad_bytes)}, kUInt8));
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(memory::desc(dims_of({int64_t(e.scratchpad_bytes)}), DType::u8, Tag::x), eng,
                        buffers.back().data_ptr()));
  }
  e.prim.execute(s, args);
  for (auto& [a, mems] : outputs) a->reorder.execute(s, mems.first, mems.second);
  s.wait();
}

/// NHWC (true) or NCHW (false) for an activation, OHWI or OIHW for weights;
/// nullopt for any other layout or dtype (the caller converts first).
std::optional<bool> user_cl(const Tensor& t, ScalarType dtype) {
  if (t.dtype() != dtype) return std::nullopt;
  if (t.is_contiguous()) return false;
  if (t.is_contiguous(kChannelsLast)) return true;
  return std::nullopt;
}
bool bias_ok(const Tensor& b, ScalarType dtype) { return !b.defined() || (b.dtype() == dtype && b.is_contiguous()); }

/// Whether every element of a dense bfloat16 tensor is finite (its
/// exponent bits are not all ones). oneDNN's bfloat16 kernels multiply the
/// zero padding of their blocks with the inputs, so one inf or NaN turns
/// outputs outside its window into NaN (PyTorch's bfloat16 convolution on
/// the same kernels does too); with a non-finite input brisk takes the
/// float32 path, whose results keep IEEE semantics per window.
bool all_finite_bf16(const Tensor& t) {
  if (!t.defined()) return true;
  const auto* p = static_cast<const uint16_t*>(t.data_ptr());
  const int64_t n = t.numel();
  uint16_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= static_cast<uint16_t>((p[i] & 0x7F80) == 0x7F80);
  return bad == 0;
}
bool finite_or_f32(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->defined() && t->dtype() == kBFloat16 && !all_finite_bf16(*t)) return false;
  return true;
}

/// The oneDNN data type of a convolution on `dtype` tensors: float32, or
/// bfloat16 where the CPU multiplies bf16 pairs in hardware (AVX512_BF16,
/// AMX; elsewhere oneDNN would emulate it, slower than converting).
std::optional<DType> conv_dtype(ScalarType dtype) {
  if (dtype == kFloat) return DType::f32;
  if (dtype == kBFloat16 && detail::cpu_has_bf16_dot()) return DType::bf16;
  return std::nullopt;
}

bool run(const ConvGeom& g, Pass pass, UserLayouts u, bool bias, std::initializer_list<const Tensor*> tensors,
         ConvScratch* sc, DType dt) {
  auto e = lookup(g, pass, u, bias, dt);
  if (!e->ok) return false;
  sync_threads();
  try {
    execute(*e, tensors, sc);
  } catch (const dnnl::error& err) {
    BRISK_FAIL("conv", "oneDNN failed to run a convolution: ", err.what());
  }
  conv_stats().onednn_calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace

bool onednn_available() { return true; }

void clear_conv_primitive_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.map.clear();
}

bool onednn_conv_forward(const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias, const Tensor& dst,
                    ConvScratch* sc) {
  const auto dt = conv_dtype(src.dtype());
  if (!dt) return false;
  const auto s = user_cl(src, src.dtype()), d = user_cl(dst, src.dtype()), wl = user_cl(w, src.dtype());
  if (!s || !d || !wl || !bias_ok(bias, src.dtype()) || !finite_or_f32({&src, &w, &bias})) return false;
  const UserLayouts u{*s, *d, *wl};
  if (bias.defined()) return run(g, Pass::Forward, u, true, {&src, &w, &bias, &dst}, sc, *dt);
  return run(g, Pass::Forward, u, false, {&src, &w, &dst}, sc, *dt);
}

bool onednn_conv_backward_data(const ConvGeom& g, const Tensor& grad_dst, const Tensor& w, const Tensor& grad_src,
                          ConvScratch* sc) {
  const auto dt = conv_dtype(grad_dst.dtype());
  if (!dt) return false;
  const ScalarType t = grad_dst.dtype();
  const auto s = user_cl(grad_src, t), d = user_cl(grad_dst, t), wl = user_cl(w, t);
  if (!s || !d || !wl || !finite_or_f32({&grad_dst, &w})) return false;
  return run(g, Pass::BackwardData, UserLayouts{*s, *d, *wl}, false, {&grad_dst, &w, &grad_src}, sc, *dt);
}

bool onednn_conv_backward_weights(const ConvGeom& g, const Tensor& src, const Tensor& grad_dst, const Tensor& grad_w,
                             const Tensor& grad_bias, ConvScratch* sc) {
  const auto dt = conv_dtype(src.dtype());
  if (!dt) return false;
  const ScalarType t = src.dtype();
  const auto s = user_cl(src, t), d = user_cl(grad_dst, t), wl = user_cl(grad_w, t);
  if (!s || !d || !wl || !bias_ok(grad_bias, t) || !finite_or_f32({&src, &grad_dst})) return false;
  const UserLayouts u{*s, *d, *wl};
  if (grad_bias.defined())
    return run(g, Pass::BackwardWeights, u, true, {&src, &grad_dst, &grad_w, &grad_bias}, sc, *dt);
  return run(g, Pass::BackwardWeights, u, false, {&src, &grad_dst, &grad_w}, sc, *dt);
}

#endif  // BRISK_HAVE_DNNL

}  // namespace brisk::cpu
