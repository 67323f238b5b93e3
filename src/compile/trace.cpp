// compile's tracer: the hooks core calls while a thread traces, and the
// recording of elementwise kernel calls into a Graph.
#include "compile/trace.h"

#include <array>
#include <cstring>
#include <utility>
#include <map>
#include <unordered_map>

#include "brisk/autograd.h"
#include "core/op_table.h"
#include "core/profile_hooks.h"

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
//    another device or one that needs a gradient with grad mode on;
//  - every kernel lookup calls trace_kernel: a slot that is not elementwise,
//    or a device other than the CPU, is a graph break; an elementwise slot
//    gets a wrapper that records the call, then runs the kernel;
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
  if (r.syncs() || r.random()) return false;
  switch (r.kind) {
    case OpKind::Unary:
    case OpKind::Binary:
    case OpKind::Ternary:
    case OpKind::View:
      return true;
    case OpKind::Copy: {
      std::string_view n = r.name;
      return n == "copy" || n == "clone" || n == "contiguous" || n == "to" || n == "fill" || n == "zero";
    }
    default:
      return false;
  }
}

template <int K>
void elementwise_wrapper(TensorIter& it, const KernelArgs& args);

using WrapperFn = detail::AnyFn;
// One wrapper per slot; null for slots that are not elementwise.
template <int K>
constexpr WrapperFn wrapper_for() {
  if constexpr (std::is_same_v<typename OpSignature<static_cast<OpId>(K)>::type, ElementwiseFn>)
    return reinterpret_cast<WrapperFn>(&elementwise_wrapper<K>);
  else
    return nullptr;
}
template <int... Ks>
constexpr std::array<WrapperFn, sizeof...(Ks)> make_wrappers(std::integer_sequence<int, Ks...>) {
  return {wrapper_for<Ks>()...};
}
const std::array<WrapperFn, kNumOps> kWrappers = make_wrappers(std::make_integer_sequence<int, kNumOps>{});

template <int K>
void elementwise_wrapper(TensorIter& it, const KernelArgs& args) {
  constexpr OpId op = static_cast<OpId>(K);
  auto fn = reinterpret_cast<ElementwiseFn>(detail::g_kernel_table[K][static_cast<int>(DeviceType::CPU)]);
  Tracer* t = t_tracer;
  if (t && !t->in_kernel) {
    t->record(op, it, args);
    t->in_kernel = true;
    struct Reset {
      Tracer* t;
      ~Reset() { t->in_kernel = false; }
    } reset{t};
    fn(it, args);
    return;
  }
  fn(it, args);
}

}  // namespace

Tracer::Tracer(Graph& g) : g_(g) {}

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
  Buffer b;
  b.kind = kind;
  b.input = input;
  b.nbytes = static_cast<int64_t>(s->nbytes);
  b.dtype = t.dtype();
  if (kind != BufKind::Input) b.tensor = t;
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
  if (!traceable_op(name)) graph_break(std::string("op '") + name + "' is not supported by compile yet");
  for (int i = 0; i < n; ++i) {
    const auto& r = refs[i];
    auto see = [&](const Tensor& t) {
      if (!t.defined()) return;
      if (!t.is_cpu()) {
        graph_break(std::string("op '") + name + "' has an input on " + t.device().str());
        return;
      }
      if (t.requires_grad() && GradMode::is_enabled())
        graph_break(std::string("op '") + name +
                    "' reads a tensor that requires grad with grad mode on (compiled backward is not done yet)");
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
      for (int d = 0; d < it.ndim; ++d) {
        if (o.strides[d] != 0 && it.shape[d] > 1) graph_break(n.name + ": a constant operand with strides");
        o.strides[d] = 0;
      }
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
  g_.nodes.push_back(std::move(n));
}

int Tracer::output_buffer(const Tensor& t, int64_t& offset) {
  if (!t.impl()->storage || !t.impl()->storage->data) return -1;
  auto found = by_storage_.find(t.impl()->storage.get());
  if (found == by_storage_.end()) return -1;
  offset = t.impl()->data() - static_cast<char*>(t.impl()->storage->data);
  return found->second;
}

Tracer* current_tracer() { return t_tracer; }

}  // namespace jit

namespace detail {
AnyFn trace_kernel(OpId op, DeviceType dev, const char* caller, AnyFn fn) {
  jit::Tracer* t = jit::t_tracer;
  if (!t || t->in_kernel) return fn;
  if (dev != DeviceType::CPU) {
    t->graph_break(std::string(caller) + " runs on " + Device(dev).str() + " (compile traces CPU code only yet)");
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

namespace profiler::detail {
void trace_op(const char* name, const InputRef* inputs, int n) {
  if (jit::Tracer* t = jit::t_tracer) t->on_op(name, inputs, n);
}
}  // namespace profiler::detail

namespace detail {
void trace_sync(const char* call) {
  if (jit::Tracer* t = jit::t_tracer)
    if (!t->in_kernel) t->graph_break(std::string(call) + " reads tensor data on the host (a data-dependent step)");
}
}  // namespace detail

}  // namespace brisk
