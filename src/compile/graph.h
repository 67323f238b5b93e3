// The graph `compile` records and runs (Note [Kernel-level tracing] in
// compile/trace.cpp, docs/design/compile.md): buffers, and the elementwise
// kernel calls over them in program order.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "brisk/tensor.h"
#include "core/dispatch.h"
#include "core/tensor_iter.h"

namespace brisk::jit {

/// Where a buffer's memory comes from on each call.
enum class BufKind : uint8_t {
  Input,     ///< the storage of an argument of the compiled function
  External,  ///< a tensor the function captured (a parameter, a constant): read and written in place
  Temp,      ///< memory the graph allocates per call (an op's result)
};

/// One storage the graph reads or writes. Offsets of operands are bytes from
/// the storage's first byte.
struct Buffer {
  BufKind kind = BufKind::Temp;
  int input = -1;        ///< Input: the argument index (the first argument on this storage)
  Tensor tensor;         ///< External: the captured tensor; Temp: the tensor the trace run made (its layout)
  int64_t nbytes = 0;    ///< Temp: bytes to allocate
  ScalarType dtype = kFloat;  ///< Temp: the dtype it was allocated with
  /// Made during the trace by untraced code: a Temp when a traced call
  /// writes it first, an External constant when one reads it first (results
  /// that view a constant are cloned per call).
  bool made_in_trace = false;
  const char* made_by = "";  ///< made_in_trace: the op that allocated it
};

/// One operand of a kernel call: a strided view of a buffer, or a constant
/// (a Scalar the front end converted into the TensorIter's scalar_buf).
struct Operand {
  int buf = -1;  ///< -1: a constant (value in `scalar`, stride 0)
  int64_t offset = 0;
  int64_t strides[TensorIter::kMaxDims] = {};  ///< bytes, per iteration dim (innermost first)
  ScalarType dtype = kFloat;
  alignas(16) char scalar[16] = {};
  bool is_const() const { return buf < 0; }
};

/// A tensor argument of an opaque kernel call: a strided view of a buffer.
struct TensorRef {
  int buf = -1;  ///< -1: an undefined tensor
  int64_t offset = 0;  ///< bytes
  std::vector<int64_t> sizes, strides;
  ScalarType dtype = kFloat;
};

/// On replay, each buffer's owning tensor and first byte.
struct Bound {
  const std::vector<Tensor>& owners;
  char* const* base;
  /// A tensor over a buffer as `r` describes it.
  Tensor view(const TensorRef& r) const;
};

/// One elementwise kernel call as the eager front end made it: the slot
/// (add, unary, where, copy, ...), its KernelArgs (alpha, the unary mode,
/// clamp bounds), the TensorIter's iteration space (coalesced, innermost
/// first) and operands (0 is the output).
struct Node {
  OpId slot = OpId::copy;
  std::string name;  ///< the op the profiler names (`mul`, `erf`, `copy_`)
  KernelArgs args;
  int ndim = 0;
  int64_t shape[TensorIter::kMaxDims] = {};
  int64_t numel = 0;
  ScalarType compute_dtype = kFloat;
  int noperands = 0;
  Operand ops[TensorIter::kMaxOperands];
  /// Recorded as one dim and viewed as the 2-D space of its group (plan()):
  /// its kernel still runs over linear ranges (Note [Fusion groups]).
  bool linear = false;
  /// Recorded with a 0-dim iteration (one element; stored as one dim of
  /// size 1): replayed 0-dim, as some kernels (pow) take another path there.
  bool zero_dim = false;
  /// A call of another kernel family (a reduction, softmax, layer_norm, a
  /// GEMM): never fused; `run` replays it, `reads` and `writes` are its
  /// buffers. Elementwise nodes leave these empty.
  std::function<void(const Bound&)> run;
  std::vector<int> reads, writes;
  /// Draws from the default generator (Note [Random draws in a graph]):
  /// kept even when nothing reads what it writes.
  bool side_effect = false;
  bool opaque() const { return static_cast<bool>(run); }
  /// A row op whose rows are independent (softmax and log_softmax over a
  /// contiguous last dim, layer_norm, rms_norm, reductions of contiguous
  /// rows: sum, mean, amax, var, argmax, ... over the last dim): run_rows runs rows
  /// [r0, r0 + nr) of its row_count x row_cols input reading them from x
  /// (nr x row_cols, contiguous), giving run's bits row for row. plan() may
  /// put the elementwise calls that make the input in front of it (Note
  /// [Row fusion] in executor.cpp).
  std::function<void(const Bound&, int64_t r0, int64_t nr, const Tensor& x)> run_rows;
  int64_t row_count = 0, row_cols = 0;
  int row_in = -1;             ///< the input's buffer
  int64_t row_in_offset = 0;   ///< bytes
  ScalarType row_in_dtype = kFloat;
  const Operand& out() const { return ops[0]; }
};

/// A result of the compiled function: a view of a buffer.
struct OutputRef {
  int buf = -1;
  int64_t offset = 0;  ///< bytes
  std::vector<int64_t> sizes, strides;  ///< elements
  ScalarType dtype = kFloat;
};

/// An argument as the trace saw it (the guards compare each call with it).
struct InputSpec {
  int buf = -1;
  int64_t offset = 0;  ///< bytes from the storage's start
  std::vector<int64_t> sizes, strides;
  ScalarType dtype = kFloat;
  bool requires_grad = false;
};

/// A run of nodes executed together: one node alone, or a fused group
/// (every node has the same iteration space; Note [Fusion groups]).
struct Group {
  std::vector<int> nodes;
  /// Temps written and read only inside this group and not results: they
  /// live in per-chunk scratch, never in memory of their own.
  std::vector<int> internal;
  /// Row fusion (Note [Row fusion]): the last node is a row op (row_node)
  /// whose input (staged) the calls before it make, a block of rows at a
  /// time into scratch (never whole in memory).
  int row_node = -1, staged = -1;
  bool fused() const { return nodes.size() > 1; }
};

/// OutputRef::buf of a result that is an undefined tensor (an unused gradient).
constexpr int kUndefinedOutput = -2;

struct Graph {
  /// Where every buffer lives and every call runs (Tracer::use_device).
  Device device = kCPU;
  /// A joint graph (Note [Compiled backward]): nodes from `split` on, and
  /// results from `forward_outputs` on, are the backward part (-1: none).
  int split = -1;
  int forward_outputs = -1;
  std::vector<Buffer> bufs;
  std::vector<Node> nodes;
  std::vector<InputSpec> inputs;
  std::vector<OutputRef> outputs;
  std::vector<Group> groups;  ///< after plan(): the execution order
};

/// Removes the calls whose results nobody reads (dead-code elimination);
/// returns how many. plan() starts with it.
int eliminate_dead_nodes(Graph& g);
/// Removes the calls that repeat an earlier call on the same, unchanged
/// inputs; their readers read the earlier result (Note [Common
/// subexpressions] in executor.cpp). Returns how many. plan() runs it.
int eliminate_common_subexpressions(Graph& g);
/// Turns the calls that read only constants into constants of the graph
/// (their trace-run values; buffers up to max_bytes), Note [Constant
/// folding] in executor.cpp. Returns how many. plan() runs it.
int fold_constants(Graph& g, int64_t max_bytes = int64_t(64) << 10);
/// Copies the elementwise chains that make forward temps the backward part
/// reads to the start of the backward part, where they cost no memory to
/// make again (Note [Recomputing in the backward] in executor.cpp).
/// Returns how many calls were copied. plan() runs it.
int recompute_in_backward(Graph& g);
/// Lets go of the trace run's temps (plan() and the executable no longer
/// need their values; they held the trace's intermediates alive).
void release_trace_temps(Graph& g);
/// Splits the nodes into groups (fusion) and marks internal temps.
void plan(Graph& g);
/// Elements per block of the fused-graph interpreter.
constexpr int64_t kBlock = 8192;
/// Rows per block of a 2-D group whose first dim has s0 elements; with
/// linear nodes, blocks start at multiples of 64 elements so that their
/// kernels see the vectors eager saw (0: no such block size, do not mix).
int64_t rows_per_block(int64_t s0, bool has_linear);
/// A readable listing of the graph (nodes, buffers, groups) for errors and docs.
std::string describe(const Graph& g);

}  // namespace brisk::jit
