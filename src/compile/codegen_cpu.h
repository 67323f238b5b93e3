// CPU code generation for compile (issue 15): one C++ function per fused
// group of elementwise kernel calls, compiled by the system compiler
// (compile/toolchain.h) with the eager kernels' ISA flags, and giving the
// eager kernels' values bit for bit (Note [Generated CPU kernels] in
// codegen_cpu.cpp).
//
//   CpuCodegen cg = generate_cpu(graph, group);   // cg.ok, else cg.reason
//   if (cg.ok && have_compiler()) {
//     CpuKernelFn fn = load_cpu_kernel(cg.kernel);  // compiles, or loads from the disk cache
//     char* ptrs[...];  // ptrs[j] = storage base of cg.kernel.args[j].buf + args[j].offset
//     fn(ptrs, cg.kernel.strides.data(), cg.kernel.shape.data(), 0, cg.kernel.outer);
//   }
//
// The generated code includes brisk's source headers (compile/cpu_prelude.h,
// backend/cpu/vec_math.h, kernels/math.h, brisk/*.h) from the source tree
// this library was built from (BRISK_SOURCE_DIR) and links Sleef: an
// installed brisk will need those headers installed and the paths pointed at
// them.
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
///   [begin, end): ndim 1: the elements to compute; ndim 2: the range of the
///                 outer dim (shape[1]) whose rows (all shape[0] elements
///                 each) to compute.
/// Any split of [0, outer) into disjoint ranges, run in any order or in
/// parallel, gives the same bits (every element is computed by the same
/// code wherever it falls).
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
  int64_t outer = 0;              ///< the end of the [begin, end) range: shape[ndim - 1]
  std::vector<CpuKernelArg> args;
  std::vector<int64_t> strides;   ///< args.size() * ndim bytes, as the entry point takes them
  std::string ops;                ///< the node names, "mul+div+erf+add+mul" (profiler events)
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
CpuCodegen generate_cpu(const Graph& g, const Group& group, const std::string& name = "brisk_k");

/// A translation unit of the given kernel bodies (the #include lines added).
std::string cpu_translation_unit(const std::vector<const CpuKernel*>& kernels);
/// The compiler flags for generated CPU code: the eager kernel variant this
/// process runs (its ISA flags, -O3, FP contraction as the eager kernel
/// files have it), include paths and Sleef.
const std::vector<std::string>& cpu_compile_flags();
/// The brisk headers generated code includes (absolute paths; their content
/// is part of every cache key).
std::vector<std::string> cpu_prelude_headers();
/// The eager kernel variant the flags target ("avx512", "avx2" or "base").
const char* cpu_isa();

/// Compiles (or loads from the disk cache) the unit of these kernels and
/// returns their entry points in order. The first compile with an empty
/// cache also precompiles the prelude header (about 1.3 s, once per cache
/// directory; BRISK_COMPILE_PCH=0 turns that off). Throws brisk::Error naming `compile`
/// when the compiler fails.
std::vector<CpuKernelFn> load_cpu_kernels(const std::vector<const CpuKernel*>& kernels);
inline CpuKernelFn load_cpu_kernel(const CpuKernel& k) { return load_cpu_kernels({&k})[0]; }

}  // namespace brisk::jit
