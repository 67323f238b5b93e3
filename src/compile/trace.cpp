// compile's tracer: the hooks core calls while a thread traces, and the
// recording of elementwise kernel calls into a Graph.
#include "compile/trace.h"

#include <array>
#include <cstring>
#include <utility>
#include <map>
#include <sstream>
#include <unordered_map>

#include "brisk/autograd.h"
#include "core/conv_plan.h"
#include "core/generator.h"
#include "core/op_table.h"
#include "core/philox.h"
#include "core/pool_plan.h"
#include "core/profile_hooks.h"
#include "core/reduce_plan.h"

namespace brisk {
namespace jit {

// Note [Kernel-level tracing]
// compile records a function by running it once, eagerly, with a Tracer
// installed on the thread. It does not record the ops as the user wrote them
// but the elementwise kernel calls the front ends make (the slots with the
// ElementwiseFn signature: copy, fill, add, mul, unary, where, ...), each with
// its TensorIter as the front end built it: broadcasting, type promotion,
// scalar conversion, output allocation and dimension coalescing are already
// done, so a replay of the recorded calls computes exactly what eager does,
// and a view costs nothing (it is a stride pattern of an operand). Memory is
// tracked by storage: the arguments' storages, tensors the function captured
// (seen as inputs of an op front end: parameters, constants) and the results
// of recorded calls (temps, kept alive until the trace ends, so no address
// is reused while recording). Three hooks guard what a kernel-level record
// cannot see:
//  - every op front end (BRISK_PROFILE_OP) calls trace_op: an op whose row is
//    not pointwise, a view or a copy (a reduction, a GEMM, an index op, a
//    random op, anything that syncs) is a graph break, as is a tensor on
//    another device than the graph's (Tracer::use_device) or one that needs
//    a gradient with grad mode on;
//  - every kernel lookup calls trace_kernel: a slot compile does not record
//    (on CUDA, fewer: kCudaWrappers), or a device other than the graph's, is
//    a graph break; a recorded slot gets a wrapper (wrapper_for<K, device>)
//    that records the call, then runs the kernel;
//  - sync points (item, printing, nonzero) call trace_sync: a break.
// A break does not stop the trace run (its results are right: it is the
// eager run); compile then runs that guard's calls eagerly, or with
// fullgraph raises naming the op. Kernels a recorded kernel calls itself are
// part of it, not recorded.

namespace {

thread_local Tracer* t_tracer = nullptr;

bool traceable_op(std::string_view name) {
  const OpLookup l = find_op(name);
  if (!l.info) return false;
  const OpInfo& r = *l.info;
  // (random ops are let through by name: one that draws calls a random
  // kernel, a graph break at the lookup, or fills memory on the host, a break
  // at its first read; dropout in eval mode draws nothing and is traced)
  if (r.syncs()) return false;
  switch (r.kind) {
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Ternary:
    case OpKind::View:
    case OpKind::Reduction:
    case OpKind::Scan:
    case OpKind::Gemm:
    case OpKind::Normalization:
    case OpKind::Factory:
    case OpKind::Random:
      // (their kernels are recorded where the slot is one compile knows:
      // trace_kernel breaks on the others)
      return true;
    case OpKind::Copy: {
      std::string_view n = r.name;
      return n == "copy" || n == "clone" || n == "contiguous" || n == "to" || n == "fill" || n == "zero";
    }
    case OpKind::Index: {
      // gathers and scatter-adds by index values the kernel reads (and
      // checks) itself, advanced indexing and index_put with integer
      // indices included (their output's shape comes from the indices'
      // shapes); a bool mask or a 0-dim index tensor reads values on the
      // host (nonzero, item: a break at that sync), and masked_select and
      // nonzero stay breaks
      std::string_view n = r.name;
      return n == "index_select" || n == "embedding" || n == "gather" || n == "scatter" || n == "scatter_add" ||
             n == "index_add" || n == "index" || n == "index_put";
    }
    case OpKind::Attention:
      return std::string_view(r.name) == "scaled_dot_product_attention";
    case OpKind::Convolution:
    case OpKind::Pooling:
    case OpKind::Loss:
      // (their kernels are recorded; max pooling's PyTorch indices are made
      // by a kernel compile does not record: a break at its lookup)
      return true;
    default:
      return false;
  }
}

template <int K, int D>
void elementwise_wrapper(TensorIter& it, const KernelArgs& args);
template <int K, int D>
void reduce_wrapper(ReducePlan& plan, const KernelArgs& args);
template <int K, int D>
void dim_wrapper(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs& args);
template <int K, int D>
void rownorm_wrapper(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                     const Tensor& bias, double eps);
template <int K, int D>
void gemm_wrapper(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta);
template <int K, int D>
void index_wrapper(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const KernelArgs& args);
template <int K, int D>
void index_inplace_wrapper(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           const KernelArgs& args);
template <int K, int D>
void attention_wrapper(const AttentionArgs& args);
template <int K, int D>
void random_wrapper(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& args);
template <int K, int D>
void conv_forward_wrapper(const char* op, const conv::ConvGeom& g, const Tensor& src, const Tensor& w,
                          const Tensor& bias, const Tensor& dst, conv::ConvScratch* scratch);
template <int K, int D>
void conv_backward_data_wrapper(const char* op, const conv::ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                                const Tensor& grad_src, conv::ConvScratch* scratch);
template <int K, int D>
void conv_backward_weights_wrapper(const char* op, const conv::ConvGeom& g, const Tensor& src, const Tensor& grad_dst,
                                   const Tensor& grad_w, const Tensor& grad_bias, conv::ConvScratch* scratch);
template <int K, int D>
void max_pool_wrapper(const pool::MaxPlan& p, const Tensor& x, const Tensor& y, Tensor* taps);
template <int K, int D>
void max_pool_backward_wrapper(const pool::MaxPlan& p, const Tensor& gy, const Tensor& taps, const Tensor& gx);
template <int K, int D>
void avg_pool_wrapper(const pool::AvgPlan& p, const Tensor& in, const Tensor& out);
template <int K, int D>
void cross_entropy_wrapper(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& input,
                           const Tensor& target, const Tensor& weight, int64_t ignore_index, double ls);
template <int K, int D>
void cross_entropy_backward_wrapper(const Tensor& grad_input, const Tensor& grad_loss, const Tensor& input,
                                    const Tensor& target, const Tensor& weight, const Tensor& lse,
                                    int64_t ignore_index, double ls);
template <int K, int D>
std::pair<Tensor, Tensor> batch_norm_wrapper(const Tensor& x, const Tensor& y, const NormView& v,
                                             const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                                             const Tensor& running_var, bool training, bool update, double momentum,
                                             double eps);
template <int K, int D>
void batch_norm_backward_wrapper(const Tensor& gy, const Tensor& x, const NormView& v, const Tensor& weight,
                                 const Tensor& mean, const Tensor& invstd, bool training, const Tensor& dx,
                                 const Tensor& dw, const Tensor& db);
template <int K, int D>
std::pair<Tensor, Tensor> group_norm_wrapper(const Tensor& x, const Tensor& y, const NormView& v, int64_t G,
                                             const Tensor& weight, const Tensor& bias, double eps);
template <int K, int D>
void group_norm_backward_wrapper(const Tensor& gy, const Tensor& x, const NormView& v, int64_t G,
                                 const Tensor& weight, const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                 const Tensor& dw, const Tensor& db);
template <int K, int D>
void dim_backward_wrapper(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim,
                          const KernelArgs& args);
template <int K, int D>
void rownorm_backward_wrapper(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                              const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight);

using WrapperFn = detail::AnyFn;
// One wrapper per slot whose calls compile records; null for the others.
template <int K, int D>
constexpr WrapperFn wrapper_for() {
  using Sig = typename OpSignature<static_cast<OpId>(K)>::type;
  if constexpr (std::is_same_v<Sig, ElementwiseFn>)
    return reinterpret_cast<WrapperFn>(&elementwise_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, ReduceFn>)
    return reinterpret_cast<WrapperFn>(&reduce_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, DimFn>)
    return reinterpret_cast<WrapperFn>(&dim_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, RowNormFn>)
    return reinterpret_cast<WrapperFn>(&rownorm_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, GemmFn>)
    return reinterpret_cast<WrapperFn>(&gemm_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, DimBackwardFn>)
    return reinterpret_cast<WrapperFn>(&dim_backward_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, RowNormBackwardFn>)
    return reinterpret_cast<WrapperFn>(&rownorm_backward_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, RandomFn>)  // uniform, normal, bernoulli, randint
    return reinterpret_cast<WrapperFn>(&random_wrapper<K, D>);
  // (by slot: the forward's and the weight gradient's signatures are the same type)
  else if constexpr (K == static_cast<int>(OpId::conv_forward))
    return reinterpret_cast<WrapperFn>(&conv_forward_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::conv_backward_data))
    return reinterpret_cast<WrapperFn>(&conv_backward_data_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::conv_backward_weights))
    return reinterpret_cast<WrapperFn>(&conv_backward_weights_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, MaxPoolFn>)
    return reinterpret_cast<WrapperFn>(&max_pool_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, MaxPoolBackwardFn>)
    return reinterpret_cast<WrapperFn>(&max_pool_backward_wrapper<K, D>);
  else if constexpr (std::is_same_v<Sig, AvgPoolFn>)  // forward and backward
    return reinterpret_cast<WrapperFn>(&avg_pool_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::cross_entropy))
    return reinterpret_cast<WrapperFn>(&cross_entropy_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::cross_entropy_backward))
    return reinterpret_cast<WrapperFn>(&cross_entropy_backward_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::batch_norm))
    return reinterpret_cast<WrapperFn>(&batch_norm_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::batch_norm_backward))
    return reinterpret_cast<WrapperFn>(&batch_norm_backward_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::group_norm))
    return reinterpret_cast<WrapperFn>(&group_norm_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::group_norm_backward))
    return reinterpret_cast<WrapperFn>(&group_norm_backward_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::index_select) ||  // of the IndexFn slots, those that only
                     K == static_cast<int>(OpId::gather) ||        // read and write a fresh output
                     K == static_cast<int>(OpId::index))           // (advanced: dim is the mask of indexed dims)
    return reinterpret_cast<WrapperFn>(&index_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::scatter) || K == static_cast<int>(OpId::scatter_add) ||
                     K == static_cast<int>(OpId::index_add) ||
                     K == static_cast<int>(OpId::index_put))  // and those that write into self
    return reinterpret_cast<WrapperFn>(&index_inplace_wrapper<K, D>);
  else if constexpr (K == static_cast<int>(OpId::attention_fused))  // the forward (the backward needs grad mode)
    return reinterpret_cast<WrapperFn>(&attention_wrapper<K, D>);
  else
    return nullptr;
}
template <int... Ks>
constexpr std::array<WrapperFn, sizeof...(Ks)> make_wrappers(std::integer_sequence<int, Ks...>) {
  return {wrapper_for<Ks, 0>()...};
}
const std::array<WrapperFn, kNumOps> kWrappers = make_wrappers(std::make_integer_sequence<int, kNumOps>{});

// On CUDA (Note [Generated CUDA kernels] in codegen_cuda.cpp) the
// elementwise calls, reductions, the row ops of the DimFn slots (softmax,
// log_softmax and their backward), the row norms and the GEMMs are recorded;
// any other CUDA kernel is a graph break. Row fusion is the CPU's only.
template <int K>
constexpr WrapperFn cuda_wrapper_for() {
  using Sig = typename OpSignature<static_cast<OpId>(K)>::type;
  if constexpr (std::is_same_v<Sig, ElementwiseFn> || std::is_same_v<Sig, ReduceFn> || std::is_same_v<Sig, DimFn> ||
                std::is_same_v<Sig, RowNormFn> || std::is_same_v<Sig, GemmFn> || std::is_same_v<Sig, DimBackwardFn> ||
                std::is_same_v<Sig, RowNormBackwardFn>)
    return wrapper_for<K, static_cast<int>(DeviceType::CUDA)>();
  else
    return nullptr;
}
template <int... Ks>
constexpr std::array<WrapperFn, sizeof...(Ks)> make_cuda_wrappers(std::integer_sequence<int, Ks...>) {
  return {cuda_wrapper_for<Ks>()...};
}
const std::array<WrapperFn, kNumOps> kCudaWrappers = make_cuda_wrappers(std::make_integer_sequence<int, kNumOps>{});

template <int K, int D>
typename OpSignature<static_cast<OpId>(K)>::type real_kernel() {
  return reinterpret_cast<typename OpSignature<static_cast<OpId>(K)>::type>(
      detail::g_kernel_table[K][D]);
}

// Runs the kernel as part of the recorded call (kernels it calls are not
// recorded).
template <class F>
void run_recorded(Tracer* t, const F& f) {
  t->in_kernel = true;
  struct Reset {
    Tracer* t;
    ~Reset() { t->in_kernel = false; }
  } reset{t};
  f();
}

template <int K, int D>
void elementwise_wrapper(TensorIter& it, const KernelArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(it, args);
  t->record(static_cast<OpId>(K), it, args);
  run_recorded(t, [&] { fn(it, args); });
}

Node opaque_node(Tracer* t, int k, const char* pending) {
  Node n;
  n.slot = static_cast<OpId>(k);
  n.name = pending ? pending : op_name(n.slot);
  return n;
}

template <int K, int D>
void reduce_wrapper(ReducePlan& plan, const KernelArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(plan, args);
  Node n = opaque_node(t, K, t->pending());
  int ib = -1, ob = -1, o2b = -1;
  int64_t io = 0, oo = 0, o2o = 0;
  bool ok = true;
  if (plan.in) ok &= t->ptr_ref(plan.in, false, plan.in_dtype, ib, io, n);
  if (plan.out) ok &= t->ptr_ref(plan.out, true, plan.out_dtype, ob, oo, n);
  if (plan.out2) ok &= t->ptr_ref(plan.out2, true, plan.out2_dtype, o2b, o2o, n);
  if (ok) {
    n.run = [plan, args, ib, io, ob, oo, o2b, o2o](const Bound& b) {
      ReducePlan p = plan;
      p.in = ib >= 0 ? b.base[ib] + io : nullptr;
      p.out = ob >= 0 ? b.base[ob] + oo : nullptr;
      p.out2 = o2b >= 0 ? b.base[o2b] + o2o : nullptr;
      real_kernel<K, D>()(p, args);
    };
    // a reduction over contiguous rows (inner 1): each output reads one row
    if (D == 0 && plan.inner == 1 && plan.reduce > 0 && plan.outer > 0 && ib >= 0) {
      n.row_count = plan.outer;
      n.row_cols = plan.reduce;
      n.row_in = ib;
      n.row_in_offset = io;
      n.row_in_dtype = plan.in_dtype;
      const int64_t es1 = plan.out ? static_cast<int64_t>(element_size(plan.out_dtype)) : 0;
      const int64_t es2 = plan.out2 ? static_cast<int64_t>(element_size(plan.out2_dtype)) : 0;
      n.run_rows = [plan, args, ob, oo, o2b, o2o, es1, es2](const Bound& b, int64_t r0, int64_t nr, const Tensor& x) {
        ReducePlan p = plan;
        p.in = x.data_ptr();
        p.out = ob >= 0 ? b.base[ob] + oo + r0 * es1 : nullptr;
        p.out2 = o2b >= 0 ? b.base[o2b] + o2o + r0 * es2 : nullptr;
        p.chunk_outer = plan.outer;
        p.outer = nr;
        real_kernel<K, D>()(p, args);
      };
    }
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(plan, args); });
}

/// Rows [r0, r0 + nr) of r seen as a (rows, cols) contiguous matrix (cols 1:
/// a vector of per-row values).
Tensor row_view(const Bound& b, const TensorRef& r, int64_t r0, int64_t nr, int64_t cols, bool matrix) {
  if (r.buf < 0) return Tensor();
  TensorRef v = r;
  v.offset += r0 * cols * static_cast<int64_t>(element_size(r.dtype));
  if (matrix) {
    v.sizes = {nr, cols};
    v.strides = {cols, 1};
  } else {
    v.sizes = {nr};
    v.strides = {1};
  }
  return b.view(v);
}

template <int K, int D>
void dim_wrapper(const Tensor& out, const Tensor& in, int64_t dim, const KernelArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(out, in, dim, args);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef ri = t->tensor_ref(in, false, n), ro = t->tensor_ref(out, true, n);
  if (t->break_reason().empty()) {
    n.run = [ri, ro, dim, args](const Bound& b) { real_kernel<K, D>()(b.view(ro), b.view(ri), dim, args); };
    // softmax / log_softmax over a contiguous last dim: rows are independent
    // (the kernel runs each row alone: backend/cpu/kernels/softmax.cpp)
    if constexpr (K == static_cast<int>(OpId::softmax) || K == static_cast<int>(OpId::log_softmax)) {
      if (D == 0 && in.dim() >= 1 && dim == in.dim() - 1 && in.size(-1) > 0 && in.is_contiguous() && out.is_contiguous() &&
          in.dtype() == out.dtype()) {
        const int64_t cols = in.size(-1), rows = in.numel() / cols;
        n.row_count = rows;
        n.row_cols = cols;
        n.row_in = ri.buf;
        n.row_in_offset = ri.offset;
        n.row_in_dtype = in.dtype();
        n.run_rows = [ro, cols, args](const Bound& b, int64_t r0, int64_t nr, const Tensor& x) {
          real_kernel<K, D>()(row_view(b, ro, r0, nr, cols, true), x, 1, args);
        };
      }
    }
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(out, in, dim, args); });
}

template <int K, int D>
void rownorm_wrapper(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& weight,
                     const Tensor& bias, double eps) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(y, mean, rstd, x, weight, bias, eps);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rx = t->tensor_ref(x, false, n), rw = t->tensor_ref(weight, false, n),
                  rb = t->tensor_ref(bias, false, n);
  const TensorRef ry = t->tensor_ref(y, true, n), rm = t->tensor_ref(mean, true, n), rr = t->tensor_ref(rstd, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      real_kernel<K, D>()(b.view(ry), b.view(rm), b.view(rr), b.view(rx), b.view(rw), b.view(rb), eps);
    };
    // each row alone (backend/cpu/kernels/norm_rows.cpp)
    if (D == 0 && x.dim() == 2 && x.size(1) > 0 && x.is_contiguous() && y.is_contiguous()) {
      const int64_t cols = x.size(1);
      n.row_count = x.size(0);
      n.row_cols = cols;
      n.row_in = rx.buf;
      n.row_in_offset = rx.offset;
      n.row_in_dtype = x.dtype();
      n.run_rows = [=](const Bound& b, int64_t r0, int64_t nr, const Tensor& xr) {
        real_kernel<K, D>()(row_view(b, ry, r0, nr, cols, true), row_view(b, rm, r0, nr, 1, false),
                         row_view(b, rr, r0, nr, 1, false), xr, b.view(rw), b.view(rb), eps);
      };
    }
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(y, mean, rstd, x, weight, bias, eps); });
}

template <int K, int D>
void gemm_wrapper(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(out, a, b, alpha, beta);
  Node n = opaque_node(t, K, t->pending());
  const bool reads_out = beta.to_double() != 0.0;
  const TensorRef ra = t->tensor_ref(a, false, n), rb = t->tensor_ref(b, false, n);
  const TensorRef ro = reads_out ? t->tensor_ref(out, false, n) : t->tensor_ref(out, true, n);
  if (reads_out && ro.buf >= 0) n.writes.push_back(ro.buf);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& bd) { real_kernel<K, D>()(bd.view(ro), bd.view(ra), bd.view(rb), alpha, beta); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(out, a, b, alpha, beta); });
}

// index_select: out (self) = src rows picked by index along dim; the index
// values are read (and range-checked) by the kernel on every replay.
template <int K, int D>
void index_wrapper(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const KernelArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(self, dim, index, src, args);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef ri = t->tensor_ref(index, false, n), rs = t->tensor_ref(src, false, n);
  const TensorRef ro = t->tensor_ref(self, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) { real_kernel<K, D>()(b.view(ro), dim, b.view(ri), b.view(rs), args); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(self, dim, index, src, args); });
}

// scatter, scatter_add, index_add: write into self at positions the index
// values give (partly), reading the rest of it (an add reads what it adds
// to): self is read and written; the values are checked by the kernel on
// every replay, as in index_wrapper.
template <int K, int D>
void index_inplace_wrapper(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                           const KernelArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(self, dim, index, src, args);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef ri = t->tensor_ref(index, false, n), rs = t->tensor_ref(src, false, n);
  const TensorRef ro = t->tensor_ref(self, false, n);
  if (ro.buf >= 0) n.writes.push_back(ro.buf);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) { real_kernel<K, D>()(b.view(ro), dim, b.view(ri), b.view(rs), args); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(self, dim, index, src, args); });
}

// The fused attention forward: reads q, k, v and the mask, writes out and the
// log-sum-exp rows.
template <int K, int D>
void attention_wrapper(const AttentionArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(args);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rq = t->tensor_ref(args.q, false, n), rk = t->tensor_ref(args.k, false, n),
                  rv = t->tensor_ref(args.v, false, n), rm = t->tensor_ref(args.mask, false, n);
  const TensorRef ro = t->tensor_ref(args.out, true, n), rl = t->tensor_ref(args.lse, true, n);
  if (t->break_reason().empty()) {
    const double scale = args.scale;
    const bool causal = args.causal;
    n.run = [=](const Bound& b) {
      AttentionArgs a;
      a.q = b.view(rq);
      a.k = b.view(rk);
      a.v = b.view(rv);
      a.mask = b.view(rm);
      a.out = b.view(ro);
      a.lse = b.view(rl);
      a.scale = scale;
      a.causal = causal;
      real_kernel<K, D>()(a);
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(args); });
}

// Note [Random draws in a graph]
// A random fill (rand, randn, randint, uniform_, normal_, bernoulli_, and
// so dropout) is recorded with the number of counter blocks its front end
// reserved (random_fill: philox::blocks_for(numel, wide), wide being
// args.mode == 1), not with the seed and offset of the trace run: every
// replay reserves that many blocks from the default generator, as the
// eager call does, and fills with the seed and offset it gets. So each call
// draws fresh numbers, a compiled function gives the bits eager gives after
// the same manual_seed, and the generator moves on exactly as it would
// eagerly (the node is a side effect: never removed as dead, even when
// nothing reads what it drew). Replays run the nodes in trace order, so
// draws keep eager's order.
template <int K, int D>
void random_wrapper(const Tensor& out, uint64_t seed, uint64_t offset, const KernelArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(out, seed, offset, args);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef ro = t->tensor_ref(out, true, n);
  const uint64_t blocks = philox::blocks_for(out.numel(), args.mode == 1);
  if (t->break_reason().empty()) {
    n.side_effect = true;
    n.run = [=](const Bound& b) {
      const detail::PhiloxState st = detail::reserve_random_blocks(blocks);
      real_kernel<K, D>()(b.view(ro), st.seed, st.offset, args);
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(out, seed, offset, args); });
}

// Note [Convolutions and pooling in a graph]
// A convolution's kernels read their inputs and write their outputs whole;
// the plan (geometry) is a value. The eager front end may pass a scratch
// that caches converted activations between a forward and its backward
// (keyed by tensor and version): a replay passes none, so every call
// converts afresh (the values are the same). Max pooling's forward kernel
// allocates its taps itself (for the backward): a replay lets it, then
// copies them into the graph's buffer the trace saw.
template <int K, int D>
void conv_forward_wrapper(const char* op, const conv::ConvGeom& g, const Tensor& src, const Tensor& w,
                          const Tensor& bias, const Tensor& dst, conv::ConvScratch* scratch) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(op, g, src, w, bias, dst, scratch);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rs = t->tensor_ref(src, false, n), rw = t->tensor_ref(w, false, n), rb = t->tensor_ref(bias, false, n);
  const TensorRef rd = t->tensor_ref(dst, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) { real_kernel<K, D>()(op, g, b.view(rs), b.view(rw), b.view(rb), b.view(rd), nullptr); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(op, g, src, w, bias, dst, scratch); });
}

template <int K, int D>
void conv_backward_data_wrapper(const char* op, const conv::ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                                const Tensor& grad_src, conv::ConvScratch* scratch) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(op, g, grad_dst, w, grad_src, scratch);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rg = t->tensor_ref(grad_dst, false, n), rw = t->tensor_ref(w, false, n);
  const TensorRef ro = t->tensor_ref(grad_src, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) { real_kernel<K, D>()(op, g, b.view(rg), b.view(rw), b.view(ro), nullptr); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(op, g, grad_dst, w, grad_src, scratch); });
}

template <int K, int D>
void conv_backward_weights_wrapper(const char* op, const conv::ConvGeom& g, const Tensor& src, const Tensor& grad_dst,
                                   const Tensor& grad_w, const Tensor& grad_bias, conv::ConvScratch* scratch) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(op, g, src, grad_dst, grad_w, grad_bias, scratch);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rs = t->tensor_ref(src, false, n), rg = t->tensor_ref(grad_dst, false, n);
  const TensorRef rw = t->tensor_ref(grad_w, true, n), rb = t->tensor_ref(grad_bias, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      real_kernel<K, D>()(op, g, b.view(rs), b.view(rg), b.view(rw), b.view(rb), nullptr);
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(op, g, src, grad_dst, grad_w, grad_bias, scratch); });
}

template <int K, int D>
void max_pool_wrapper(const pool::MaxPlan& p, const Tensor& x, const Tensor& y, Tensor* taps) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(p, x, y, taps);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rx = t->tensor_ref(x, false, n), ry = t->tensor_ref(y, true, n);
  run_recorded(t, [&] { fn(p, x, y, taps); });
  const TensorRef rt = taps ? t->tensor_ref(*taps, true, n) : TensorRef{};  // (allocated by the kernel)
  if (t->break_reason().empty()) {
    const pool::MaxPlan plan = p;
    const bool with_taps = taps != nullptr;
    n.run = [=](const Bound& b) {
      Tensor made;
      real_kernel<K, D>()(plan, b.view(rx), b.view(ry), with_taps ? &made : nullptr);
      if (with_taps) b.view(rt).copy_(made);
    };
    t->add_node(std::move(n));
  }
}

template <int K, int D>
void max_pool_backward_wrapper(const pool::MaxPlan& p, const Tensor& gy, const Tensor& taps, const Tensor& gx) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(p, gy, taps, gx);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rg = t->tensor_ref(gy, false, n), rt = t->tensor_ref(taps, false, n);
  const TensorRef ro = t->tensor_ref(gx, true, n);
  if (t->break_reason().empty()) {
    const pool::MaxPlan plan = p;
    n.run = [=](const Bound& b) { real_kernel<K, D>()(plan, b.view(rg), b.view(rt), b.view(ro)); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(p, gy, taps, gx); });
}

template <int K, int D>
void avg_pool_wrapper(const pool::AvgPlan& p, const Tensor& in, const Tensor& out) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(p, in, out);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef ri = t->tensor_ref(in, false, n), ro = t->tensor_ref(out, true, n);
  if (t->break_reason().empty()) {
    const pool::AvgPlan plan = p;
    n.run = [=](const Bound& b) { real_kernel<K, D>()(plan, b.view(ri), b.view(ro)); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(p, in, out); });
}

// cross_entropy: the kernel checks the targets before it writes (so on
// every replay); loss, the row weights and the (max, log sum) pairs written.
template <int K, int D>
void cross_entropy_wrapper(const Tensor& loss, const Tensor& wt, const Tensor& lse, const Tensor& input,
                           const Tensor& target, const Tensor& weight, int64_t ignore_index, double ls) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(loss, wt, lse, input, target, weight, ignore_index, ls);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef ri = t->tensor_ref(input, false, n), rt = t->tensor_ref(target, false, n),
                  rw = t->tensor_ref(weight, false, n);
  const TensorRef rl = t->tensor_ref(loss, true, n), rwt = t->tensor_ref(wt, true, n), rs = t->tensor_ref(lse, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      real_kernel<K, D>()(b.view(rl), b.view(rwt), b.view(rs), b.view(ri), b.view(rt), b.view(rw), ignore_index, ls);
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(loss, wt, lse, input, target, weight, ignore_index, ls); });
}

template <int K, int D>
void cross_entropy_backward_wrapper(const Tensor& grad_input, const Tensor& grad_loss, const Tensor& input,
                                    const Tensor& target, const Tensor& weight, const Tensor& lse,
                                    int64_t ignore_index, double ls) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(grad_input, grad_loss, input, target, weight, lse, ignore_index, ls);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rg = t->tensor_ref(grad_loss, false, n), ri = t->tensor_ref(input, false, n),
                  rt = t->tensor_ref(target, false, n), rw = t->tensor_ref(weight, false, n),
                  rs = t->tensor_ref(lse, false, n);
  const TensorRef ro = t->tensor_ref(grad_input, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      real_kernel<K, D>()(b.view(ro), b.view(rg), b.view(ri), b.view(rt), b.view(rw), b.view(rs), ignore_index, ls);
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(grad_input, grad_loss, input, target, weight, lse, ignore_index, ls); });
}

// batch_norm and group_norm return statistics their kernels allocate (as
// max pooling's taps): a replay copies them into the graph's buffers.
// batch_norm's update writes the running statistics in place.
template <int K, int D>
std::pair<Tensor, Tensor> batch_norm_wrapper(const Tensor& x, const Tensor& y, const NormView& v,
                                             const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                                             const Tensor& running_var, bool training, bool update, double momentum,
                                             double eps) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(x, y, v, weight, bias, running_mean, running_var, training, update, momentum, eps);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rx = t->tensor_ref(x, false, n), rw = t->tensor_ref(weight, false, n),
                  rb = t->tensor_ref(bias, false, n), rm = t->tensor_ref(running_mean, false, n),
                  rv = t->tensor_ref(running_var, false, n);
  if (update)
    for (int b : {rm.buf, rv.buf})
      if (b >= 0) n.writes.push_back(b);
  const TensorRef ry = t->tensor_ref(y, true, n);
  std::pair<Tensor, Tensor> r;
  run_recorded(t, [&] { r = fn(x, y, v, weight, bias, running_mean, running_var, training, update, momentum, eps); });
  const TensorRef r1 = t->tensor_ref(r.first, true, n), r2 = t->tensor_ref(r.second, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      const auto made = real_kernel<K, D>()(b.view(rx), b.view(ry), v, b.view(rw), b.view(rb), b.view(rm), b.view(rv),
                                         training, update, momentum, eps);
      if (r1.buf >= 0) b.view(r1).copy_(made.first);
      if (r2.buf >= 0) b.view(r2).copy_(made.second);
    };
    t->add_node(std::move(n));
  }
  return r;
}

template <int K, int D>
void batch_norm_backward_wrapper(const Tensor& gy, const Tensor& x, const NormView& v, const Tensor& weight,
                                 const Tensor& mean, const Tensor& invstd, bool training, const Tensor& dx,
                                 const Tensor& dw, const Tensor& db) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(gy, x, v, weight, mean, invstd, training, dx, dw, db);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rg = t->tensor_ref(gy, false, n), rx = t->tensor_ref(x, false, n),
                  rw = t->tensor_ref(weight, false, n), rm = t->tensor_ref(mean, false, n),
                  ri = t->tensor_ref(invstd, false, n);
  const TensorRef rdx = t->tensor_ref(dx, true, n), rdw = t->tensor_ref(dw, true, n), rdb = t->tensor_ref(db, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      real_kernel<K, D>()(b.view(rg), b.view(rx), v, b.view(rw), b.view(rm), b.view(ri), training, b.view(rdx),
                       b.view(rdw), b.view(rdb));
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(gy, x, v, weight, mean, invstd, training, dx, dw, db); });
}

template <int K, int D>
std::pair<Tensor, Tensor> group_norm_wrapper(const Tensor& x, const Tensor& y, const NormView& v, int64_t G,
                                             const Tensor& weight, const Tensor& bias, double eps) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(x, y, v, G, weight, bias, eps);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rx = t->tensor_ref(x, false, n), rw = t->tensor_ref(weight, false, n),
                  rb = t->tensor_ref(bias, false, n);
  const TensorRef ry = t->tensor_ref(y, true, n);
  std::pair<Tensor, Tensor> r;
  run_recorded(t, [&] { r = fn(x, y, v, G, weight, bias, eps); });
  const TensorRef r1 = t->tensor_ref(r.first, true, n), r2 = t->tensor_ref(r.second, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      const auto made = real_kernel<K, D>()(b.view(rx), b.view(ry), v, G, b.view(rw), b.view(rb), eps);
      if (r1.buf >= 0) b.view(r1).copy_(made.first);
      if (r2.buf >= 0) b.view(r2).copy_(made.second);
    };
    t->add_node(std::move(n));
  }
  return r;
}

template <int K, int D>
void group_norm_backward_wrapper(const Tensor& gy, const Tensor& x, const NormView& v, int64_t G,
                                 const Tensor& weight, const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                 const Tensor& dw, const Tensor& db) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(gy, x, v, G, weight, mean, rstd, dx, dw, db);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rg = t->tensor_ref(gy, false, n), rx = t->tensor_ref(x, false, n),
                  rw = t->tensor_ref(weight, false, n), rm = t->tensor_ref(mean, false, n),
                  rr = t->tensor_ref(rstd, false, n);
  const TensorRef rdx = t->tensor_ref(dx, true, n), rdw = t->tensor_ref(dw, true, n), rdb = t->tensor_ref(db, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      real_kernel<K, D>()(b.view(rg), b.view(rx), v, G, b.view(rw), b.view(rm), b.view(rr), b.view(rdx), b.view(rdw),
                       b.view(rdb));
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(gy, x, v, G, weight, mean, rstd, dx, dw, db); });
}

template <int K, int D>
void dim_backward_wrapper(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim,
                          const KernelArgs& args) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(grad_in, grad_out, out, dim, args);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rg = t->tensor_ref(grad_out, false, n), ro = t->tensor_ref(out, false, n);
  const TensorRef ri = t->tensor_ref(grad_in, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) { real_kernel<K, D>()(b.view(ri), b.view(rg), b.view(ro), dim, args); };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(grad_in, grad_out, out, dim, args); });
}

template <int K, int D>
void rownorm_backward_wrapper(const Tensor& dx, const Tensor& dweight, const Tensor& dbias, const Tensor& dy,
                              const Tensor& x, const Tensor& mean, const Tensor& rstd, const Tensor& weight) {
  auto fn = real_kernel<K, D>();
  Tracer* t = t_tracer;
  if (!t || t->in_kernel) return fn(dx, dweight, dbias, dy, x, mean, rstd, weight);
  Node n = opaque_node(t, K, t->pending());
  const TensorRef rdy = t->tensor_ref(dy, false, n), rx = t->tensor_ref(x, false, n),
                  rm = t->tensor_ref(mean, false, n), rr = t->tensor_ref(rstd, false, n),
                  rw = t->tensor_ref(weight, false, n);
  const TensorRef rdx = t->tensor_ref(dx, true, n), rdw = t->tensor_ref(dweight, true, n),
                  rdb = t->tensor_ref(dbias, true, n);
  if (t->break_reason().empty()) {
    n.run = [=](const Bound& b) {
      real_kernel<K, D>()(b.view(rdx), b.view(rdw), b.view(rdb), b.view(rdy), b.view(rx), b.view(rm), b.view(rr),
                       b.view(rw));
    };
    t->add_node(std::move(n));
  }
  run_recorded(t, [&] { fn(dx, dweight, dbias, dy, x, mean, rstd, weight); });
}

}  // namespace

Tracer::Tracer(Graph& g) : g_(g) {}

void Tracer::add_node(Node&& n) {
  for (int b : n.reads) note_read(b);
  for (int b : n.writes) note_write(n.name, b);
  g_.nodes.push_back(std::move(n));
}

void Tracer::mark_constant(const Tensor& t) {
  if (!t.defined() || !t.is_cpu() || !t.impl()->storage || !t.impl()->storage->data) return;
  const int b = add_buffer(t, BufKind::External, -1);
  if (g_.bufs[b].made_in_trace) g_.bufs[b].made_by = "tensor";
}

void Tracer::note_read(int b) {
  if (b < 0) return;
  if (written_.size() < g_.bufs.size()) written_.resize(g_.bufs.size(), 0);
  Buffer& bf = g_.bufs[b];
  if (bf.made_in_trace && bf.kind == BufKind::Temp && !written_[b]) {
    // Filled on the host, not by a traced kernel: a constant when the op
    // that made it builds tensors from C++ values; anything else computed
    // it from data where the trace cannot see (a replay would not redo it).
    const std::string_view by = bf.made_by;
    if (by == "tensor" || by == "scalar_tensor" || by == "from_blob")
      bf.kind = BufKind::External;
    else
      graph_break(std::string("'") + bf.made_by + "' computed a tensor on the host, where compile cannot record it");
  }
}

void Tracer::note_write(const std::string& op, int b) {
  if (b < 0) return;
  if (written_.size() < g_.bufs.size()) written_.resize(g_.bufs.size(), 0);
  written_[b] = 1;
  // A replay would change the recorded constant for good.
  if (g_.bufs[b].made_in_trace && g_.bufs[b].kind == BufKind::External)
    graph_break(op + " writes in place into a constant the function made without a traced op");
}

void Tracer::on_alloc(void* p, size_t nbytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  allocs_[a] = Alloc{nbytes, last_op_};
  // A block handed out again: a buffer registered from its raw pointer
  // (nothing keeps it alive) is dead now.
  auto it = by_base_.find(a);
  if (it != by_base_.end() && !g_.bufs[it->second].tensor.defined() && g_.bufs[it->second].kind == BufKind::Temp)
    by_base_.erase(it);
}

TensorRef Tracer::tensor_ref(const Tensor& t, bool output, Node& n) {
  TensorRef r;
  if (!t.defined()) return r;
  if (!use_device(t.device())) {
    graph_break(n.name + " has a tensor on " + t.device().str() + ", the graph's other calls run on " + device().str());
    return r;
  }
  StorageImpl* s = t.impl()->storage.get();
  int b = -1;
  auto found = by_storage_.find(s);
  if (found != by_storage_.end()) {
    b = found->second;
  } else if (s && s->data) {
    int64_t off = 0;
    b = find_ptr(static_cast<const char*>(s->data), off);
    if (b >= 0 && off == 0) {
      by_storage_[s] = b;
      keep_.push_back(t);
    } else {
      b = -1;
    }
  }
  if (b < 0) {
    if (!output || !s || !s->data) {
      std::ostringstream what;
      what << n.name << " reads memory the trace did not see (a " << t.dtype() << " tensor of shape " << t.sizes()
           << ")";
      graph_break(what.str());
      return r;
    }
    b = add_buffer(t, BufKind::Temp, -1);
  }
  r.buf = b;
  r.offset = t.impl()->data() - static_cast<char*>(s->data);
  r.sizes.assign(t.sizes().begin(), t.sizes().end());
  r.strides.assign(t.strides().begin(), t.strides().end());
  r.dtype = t.dtype();
  (output ? n.writes : n.reads).push_back(b);
  return r;
}

bool Tracer::ptr_ref(const void* p, bool output, ScalarType dtype, int& buf, int64_t& offset, Node& n) {
  const char* c = static_cast<const char*>(p);
  buf = find_ptr(c, offset);
  if (buf < 0 && output) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    auto it = allocs_.upper_bound(a);
    if (it != allocs_.begin()) {
      --it;
      if (a < it->first + it->second.bytes) {
        Buffer bf;
        bf.kind = BufKind::Temp;
        bf.nbytes = static_cast<int64_t>(it->second.bytes);
        bf.dtype = dtype;
        const int id = static_cast<int>(g_.bufs.size());
        g_.bufs.push_back(std::move(bf));
        by_base_[it->first] = id;
        buf = find_ptr(c, offset);
      }
    }
  }
  if (buf < 0) {
    graph_break(n.name + " touches memory the trace did not see");
    return false;
  }
  (output ? n.writes : n.reads).push_back(buf);
  return true;
}

Tracer::~Tracer() {
  if (installed_) uninstall();
}

void Tracer::install() {
  BRISK_CHECK(t_tracer == nullptr, "compile", "a compiled function is already being traced on this thread");
  t_tracer = this;
  installed_ = true;
  brisk::detail::g_trace_threads.fetch_add(1, std::memory_order_relaxed);
}

void Tracer::uninstall() {
  brisk::detail::g_trace_threads.fetch_sub(1, std::memory_order_relaxed);
  t_tracer = nullptr;
  installed_ = false;
}

void Tracer::graph_break(std::string why) {
  if (break_reason_.empty()) break_reason_ = std::move(why);
}

int Tracer::add_buffer(const Tensor& t, BufKind kind, int input) {
  StorageImpl* s = t.impl()->storage.get();
  auto found = by_storage_.find(s);
  if (found != by_storage_.end()) return found->second;
  if (s->data) {
    // A block a kernel wrote through a raw pointer (a reduction's output):
    // the same buffer, now with its tensor.
    int64_t off = 0;
    const int known = find_ptr(static_cast<const char*>(s->data), off);
    if (known >= 0 && off == 0) {
      by_storage_[s] = known;
      keep_.push_back(t);
      return known;
    }
  }
  Buffer b;
  b.kind = kind;
  b.input = input;
  b.nbytes = static_cast<int64_t>(s->nbytes);
  b.dtype = t.dtype();
  if (kind != BufKind::Input) b.tensor = t;
  auto made = s->data ? allocs_.find(reinterpret_cast<uintptr_t>(s->data)) : allocs_.end();
  if (kind == BufKind::External && made != allocs_.end()) {
    b.made_by = made->second.op;
    // Made by the traced run without a traced op: memory a traced op fills
    // next (empty() then copy_: a temp), or a constant the host filled
    // (tensor({1, 2})): decided by its first access (note_read/note_write).
    b.made_in_trace = true;
    b.kind = BufKind::Temp;
  }
  keep_.push_back(t);
  const int id = static_cast<int>(g_.bufs.size());
  g_.bufs.push_back(std::move(b));
  by_storage_[s] = id;
  if (s->data && s->nbytes > 0) by_base_[reinterpret_cast<uintptr_t>(s->data)] = id;
  return id;
}

int Tracer::add_input(const Tensor& t, int index) {
  InputSpec in;
  in.dtype = t.dtype();
  in.requires_grad = t.requires_grad();
  in.sizes.assign(t.sizes().begin(), t.sizes().end());
  in.strides.assign(t.strides().begin(), t.strides().end());
  in.buf = add_buffer(t, BufKind::Input, index);
  in.offset = t.impl()->data() - static_cast<char*>(t.impl()->storage->data);
  g_.inputs.push_back(std::move(in));
  return g_.inputs.back().buf;
}

int Tracer::find_ptr(const char* p, int64_t& offset) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = by_base_.upper_bound(a);
  if (it == by_base_.begin()) return -1;
  --it;
  const Buffer& b = g_.bufs[it->second];
  if (a >= it->first + static_cast<uintptr_t>(b.nbytes)) return -1;
  offset = static_cast<int64_t>(a - it->first);
  return it->second;
}

void Tracer::on_op(const char* name, const profiler::detail::InputRef* refs, int n) {
  if (in_kernel) return;
  last_op_ = name;
  if (!traceable_op(name)) graph_break(std::string("op '") + name + "' is not supported by compile yet");
  for (int i = 0; i < n; ++i) {
    const auto& r = refs[i];
    auto see = [&](const Tensor& t) {
      if (!t.defined()) return;
      if (!use_device(t.device())) {
        graph_break(std::string("op '") + name + "' has an input on " + t.device().str() + ", and the function runs on " +
                    device().str() + " (a graph runs on one device)");
        return;
      }
      if (t.requires_grad() && GradMode::is_enabled() && !allow_grad_)
        graph_break(std::string("op '") + name + "' reads a tensor that requires grad with grad mode on");
      if (t.impl()->storage) add_buffer(t, BufKind::External, -1);
    };
    if (r.kind == profiler::detail::InputRef::TensorArg) {
      see(*static_cast<const Tensor*>(r.p));
    } else if (r.kind == profiler::detail::InputRef::ListArg) {
      for (const Tensor& t : *static_cast<const std::vector<Tensor>*>(r.p)) see(t);
    }
  }
}

void Tracer::record(OpId op, TensorIter& it, const KernelArgs& args) {
  if (it.numel == 0) return;  // writes nothing
  Node n;
  n.slot = op;
  n.name = pending_caller_ ? pending_caller_ : op_name(op);
  n.args = args;
  n.ndim = it.ndim;
  n.numel = it.numel;
  n.compute_dtype = it.compute_dtype;
  n.noperands = it.noperands;
  for (int d = 0; d < it.ndim; ++d) n.shape[d] = it.shape[d];
  const bool zero_dim = it.ndim == 0;  // one element: recorded as one dim of size 1
  if (zero_dim) {
    n.ndim = 1;
    n.shape[0] = 1;
    n.zero_dim = true;
  }
  for (int k = 0; k < it.noperands; ++k) {
    Operand& o = n.ops[k];
    o.dtype = it.dtypes[k];
    for (int d = 0; d < it.ndim; ++d) o.strides[d] = it.strides[k][d];
    if (zero_dim) o.strides[0] = 0;
    const char* p = it.data[k];
    if (k > 0 && p >= it.scalar_buf[k] && p < it.scalar_buf[k] + sizeof(it.scalar_buf[k])) {
      o.buf = -1;
      std::memcpy(o.scalar, it.scalar_buf[k], sizeof(o.scalar));
      // (kept as recorded: over one element the builder gives a scalar its
      // element size as stride, and a kernel may check it: pow's special
      // exponents take a 0 stride only)
      for (int d = 0; d < it.ndim; ++d)
        if (o.strides[d] != 0 && it.shape[d] > 1) graph_break(n.name + ": a constant operand with strides");
      continue;
    }
    int64_t off = 0;
    int b = find_ptr(p, off);
    if (b < 0 && k == 0) {
      // A fresh result (or the staging buffer of an out= with another dtype).
      const Tensor& res = it.staging.defined() ? it.staging : it.result;
      if (res.defined() && res.impl()->storage && res.impl()->storage->data) {
        add_buffer(res, BufKind::Temp, -1);
        b = find_ptr(p, off);
      }
    }
    if (b < 0 && k > 0 && it.operands[k].defined() && it.operands[k].impl()->storage) {
      // An input the builder cast (recorded as its own copy call before).
      add_buffer(it.operands[k], BufKind::External, -1);
      b = find_ptr(p, off);
    }
    if (b < 0) {
      graph_break(n.name + " touches memory the trace did not see");
      return;
    }
    o.buf = b;
    o.offset = off;
  }
  for (int k = 1; k < n.noperands; ++k) note_read(n.ops[k].buf);
  note_write(n.name, n.ops[0].buf);
  g_.nodes.push_back(std::move(n));
}

int Tracer::output_buffer(const Tensor& t, int64_t& offset) {
  if (!t.impl()->storage || !t.impl()->storage->data) return -1;
  StorageImpl* s = t.impl()->storage.get();
  auto found = by_storage_.find(s);
  int b = -1;
  if (found != by_storage_.end()) {
    b = found->second;
  } else {
    int64_t off = 0;
    b = find_ptr(static_cast<const char*>(s->data), off);
    if (b < 0 || off != 0) return -1;  // (a raw block of a kernel's output: its storage starts there)
  }
  offset = t.impl()->data() - static_cast<char*>(s->data);
  return b;
}

std::vector<int> Tracer::grad_externals() const {
  std::vector<int> r;
  for (size_t b = 0; b < g_.bufs.size(); ++b) {
    const Buffer& bf = g_.bufs[b];
    if (bf.kind == BufKind::External && bf.tensor.defined() && bf.tensor.requires_grad() && !bf.made_in_trace)
      r.push_back(static_cast<int>(b));
  }
  return r;
}

bool Tracer::use_device(Device d) {
  if (!device_set_) {
    g_.device = d;
    device_set_ = true;
    return true;
  }
  if (g_.device.type != d.type) return false;
  if (d.type == DeviceType::CPU) return true;
  if (g_.device.index < 0) {
    g_.device = d;
    return true;
  }
  return d.index < 0 || d.index == g_.device.index;
}

Tracer* current_tracer() { return t_tracer; }

}  // namespace jit

namespace detail {
AnyFn trace_kernel(OpId op, DeviceType dev, const char* caller, AnyFn fn) {
  jit::Tracer* t = jit::t_tracer;
  if (!t || t->in_kernel) return fn;
  if (!t->use_device(dev)) {
    t->graph_break(std::string(caller) + " runs on " + Device(dev).str() + ", and the function's other calls on " +
                   t->device().str() + " (a graph runs on one device)");
    return fn;
  }
  if (dev == DeviceType::CUDA) {
    AnyFn w = jit::kCudaWrappers[static_cast<int>(op)];
    if (!w) {
      t->graph_break(std::string(caller) + " (kernel '" + op_name(op) +
                     "') on CUDA is not recorded by compile yet");
      return fn;
    }
    t->set_pending(caller);
    return w;
  }
  if (dev != DeviceType::CPU) {
    t->graph_break(std::string(caller) + " runs on " + Device(dev).str() + " (compile traces CPU and CUDA code only)");
    return fn;
  }
  AnyFn w = jit::kWrappers[static_cast<int>(op)];
  if (!w) {
    t->graph_break(std::string(caller) + " (kernel '" + op_name(op) + "') is not supported by compile yet");
    return fn;
  }
  t->set_pending(caller);
  return w;
}
}  // namespace detail

namespace detail {
bool tracing_this_thread() {
  const jit::Tracer* t = jit::t_tracer;
  return t != nullptr && !t->in_kernel;
}
}  // namespace detail

namespace profiler::detail {
void trace_op(const char* name, const InputRef* inputs, int n) {
  if (jit::Tracer* t = jit::t_tracer) t->on_op(name, inputs, n);
}
}  // namespace profiler::detail

namespace detail {
void note_host_constant(const Tensor& t) {
  if (!tracing_any()) return;
  if (jit::Tracer* tr = jit::t_tracer)
    if (!tr->in_kernel) tr->mark_constant(t);
}
void trace_alloc(void* p, size_t nbytes) {
  if (jit::Tracer* t = jit::t_tracer) t->on_alloc(p, nbytes);
}
void trace_sync(const char* call) {
  if (jit::Tracer* t = jit::t_tracer)
    if (!t->in_kernel) t->graph_break(std::string(call) + " reads tensor data on the host (a data-dependent step)");
}
}  // namespace detail

}  // namespace brisk
