// CPU code generation for compile (issue 15): one C++ function per group of
// elementwise kernel calls (Graph::groups after plan()), compiled by the
// system compiler (compile/toolchain.h) with the eager kernels' ISA flags,
// giving the eager kernels' values bit for bit (Note [Generated CPU kernels]
// in codegen_cpu.cpp; the one exception is the sign and payload of a NaN
// result, see test_codegen_cpu's both_nan).
//
// The executor's two calls (after plan()):
//   CpuGraphKernels gk = build_cpu_kernels(graph);      // once per graph: one compile or disk hit
//   if (gk.fns[gi]) run_cpu_kernel(gk.code[gi].kernel, gk.fns[gi], base);  // else interpret group gi
// or, a group at a time:
//   CpuCodegen cg = generate_cpu(graph, group, "brisk_k7");  // cg.ok, else cg.reason
//   if (cg.ok && have_compiler()) {
//     CpuKernelFn fn = load_cpu_kernel(cg.kernel);  // compiles, or loads from the disk cache
//     // or load_cpu_kernels({&k0, &k1, ...}): one translation unit, one compile
//     std::vector<char*> ptrs;  // one per argument
//     for (const CpuKernelArg& a : cg.kernel.args) ptrs.push_back(storage_base(a.buf) + a.offset);
//     parallel_for(0, cg.kernel.numel, grain, [&](int64_t b, int64_t e) {
//       fn(ptrs.data(), cg.kernel.strides.data(), cg.kernel.shape.data(), b, e);
//     });
//   }
//
// The strides and shape are run-time arguments: a kernel depends on the
// group's ops, dtypes, constants and operand aliasing, not on sizes, so
// graphs of other shapes with the same ops hit the cache. Internal temps
// (Group::internal) are never touched; every other buffer the group writes
// is stored, every buffer it reads first is loaded (in-place ops included).
//
// The generated code includes brisk's own headers (compile/cpu_prelude.h,
// backend/cpu/vec_math.h, vec_composite.h, kernels/math.h, brisk/dtype.h,
// brisk/half.h) from codegen_dir(): installed under share/brisk/codegen (an
// installed brisk), else the source tree it was built from; it links Sleef.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compile/graph.h"

namespace brisk::jit {

/// The entry point of a generated kernel:
///   ptrs[j]     : the first element of kernel argument j (its buffer's
///                 storage base + args[j].offset), as the group's node
///                 operands address it;
///   strides     : bytes, strides[j * ndim + d] for argument j, iteration
///                 dim d (innermost first, as in the TensorIter);
///   shape       : shape[d], d < ndim;
///   [begin, end): the elements to compute, as linear positions of the
///                 iteration space (i0 + shape[0] * i1 for ndim 2), as
///                 for_each_range (backend/cpu/loops.h) takes them.
/// Split points: a split of [0, numel) into disjoint ranges, run in any
/// order or in parallel, gives eager's bits when every range starts at a
/// row start plus a multiple of 64 elements (p % shape[0] % 64 == 0; for
/// ndim 1, p % 64 == 0): vector ops then see the vectors eager saw (Note
/// [Vectors as eager forms them] in cpu_prelude.h). run_cpu_kernel splits so.
using CpuKernelFn = void (*)(char* const* ptrs, const int64_t* strides, const int64_t* shape, int64_t begin,
                             int64_t end);

/// One buffer the kernel reads or writes.
struct CpuKernelArg {
  int buf = -1;        ///< Graph::bufs index
  int64_t offset = 0;  ///< bytes from the buffer's first byte
  ScalarType dtype = kFloat;
  bool read = false;     ///< loaded (an input, or read before the group writes it)
  bool written = false;  ///< stored (a materialized result of the group)
};

struct CpuKernel {
  std::string name;  ///< the extern "C" symbol of the function
  /// The function alone (no #include lines): several may share one
  /// translation unit (cpu_translation_unit).
  std::string body;
  int ndim = 1;                   ///< 1 or 2 (a 0-dim group runs as ndim 1 of one element)
  std::vector<int64_t> shape;     ///< ndim entries, innermost first
  int64_t numel = 0;              ///< the end of the [begin, end) range
  std::vector<CpuKernelArg> args;
  std::vector<int64_t> strides;   ///< args.size() * ndim bytes, as the entry point takes them
  std::string ops;                ///< the node names, "mul+div+erf+add+mul" (profiler events)
  int64_t block = 256;            ///< elements per block (Note [Generated CPU kernels])
};

struct CpuCodegen {
  bool ok = false;
  std::string reason;  ///< why not, when !ok: the interpreter runs the group
  CpuKernel kernel;
};

/// Generates the kernel of `group` (its nodes run in order over one
/// iteration space). Never generates code it is not sure of: any node,
/// dtype or layout it does not handle gives ok = false with a reason.
/// `name` is the symbol (distinct names for kernels sharing a unit).
/// `block`: elements per block (256, 512, 1024 or 2048; 0: the generator
/// picks by the group's working set); a block whose buffers would take more
/// than 128 KiB of stack is refused.
CpuCodegen generate_cpu(const Graph& g, const Group& group, const std::string& name = "brisk_k", int64_t block = 0);

/// A translation unit of the given kernel bodies (the #include lines added).
std::string cpu_translation_unit(const std::vector<const CpuKernel*>& kernels);
/// The compiler flags for generated CPU code: the eager kernel variant this
/// process runs (its ISA flags, -O3, FP contraction as the eager kernel
/// files have it), include paths and Sleef.
const std::vector<std::string>& cpu_compile_flags();
/// The brisk headers generated code includes (absolute paths; their content
/// is part of every cache key).
std::vector<std::string> cpu_prelude_headers();
/// The directory they are under (its src/ and include/): BRISK_CODEGEN_DIR,
/// else <prefix>/share/brisk/codegen next to an installed library, else
/// the source tree the library was built from.
const std::string& codegen_dir();
/// The eager kernel variant the flags target ("avx512", "avx2" or "base").
const char* cpu_isa();

/// Compiles (or loads from the disk cache) the unit of these kernels and
/// returns their entry points in order. The first compile with an empty
/// cache also precompiles the prelude header (about 1.3 s, once per cache
/// directory; BRISK_COMPILE_PCH=0 turns that off). Throws brisk::Error naming `compile`
/// when the compiler fails.
std::vector<CpuKernelFn> load_cpu_kernels(const std::vector<const CpuKernel*>& kernels);
inline CpuKernelFn load_cpu_kernel(const CpuKernel& k) { return load_cpu_kernels({&k})[0]; }

/// Runs a loaded kernel over its whole iteration space on brisk's thread
/// pool (parallel_for, kGrainSize elements per thread at least): base[b] is
/// the first byte of buffer b (the executor's bound bases).
void run_cpu_kernel(const CpuKernel& k, CpuKernelFn fn, char* const* base);

/// The kernels of a whole graph: every group generate_cpu handles (fused
/// groups only, unless `singles`), compiled as one translation unit (one
/// compiler run or disk hit per graph). code[i] / fns[i] belong to
/// g.groups[i]; fns[i] is null where code[i].ok is false (or not tried:
/// code[i].reason says so). No compiler: every fns[i] null, reason "no C++
/// compiler"; a compiler error throws brisk::Error naming `compile`.
/// With `variants` (CompileMode::MaxAutotune), every generated group also
/// gets its other block sizes: variants[i] / variant_fns[i] (the default
/// kernel, code[i], among them), for the executor to time.
struct CpuGraphKernels {
  std::vector<CpuCodegen> code;
  std::vector<CpuKernelFn> fns;
  std::vector<std::vector<CpuKernel>> variants;
  std::vector<std::vector<CpuKernelFn>> variant_fns;
};
CpuGraphKernels build_cpu_kernels(const Graph& g, bool singles = false, bool variants = false);

}  // namespace brisk::jit
