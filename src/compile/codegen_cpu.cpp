// CPU code generation for fused groups of elementwise kernel calls.
#include "compile/codegen_cpu.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "brisk/error.h"
#include "compile/group_buffers.h"
#include "compile/toolchain.h"
#include "core/parallel.h"
#include "kernels/math.h"

#ifndef BRISK_SOURCE_DIR
#error "codegen_cpu.cpp needs BRISK_SOURCE_DIR (src/CMakeLists.txt defines it)"
#endif

namespace brisk {
namespace cpu {
const char* cpu_capability();  // backend/cpu/register.cpp
}  // namespace cpu

namespace jit {

// Note [Generated CPU kernels]
// A group's kernel walks its iteration space (1 or 2 dims, innermost first,
// strides and shape passed at run time, so one kernel serves every shape of
// the same layout class) in blocks of B elements of a row: the largest of
// 2048, 1024, 512 and 256 whose blocks (all of them, in their math types)
// take at most 24 KiB, half of a 48 KiB L1 (measured on the EPYC: the gelu chain's six
// blocks run 1.5x faster at 1024 elements than at 256, the plain-op Adam's
// seventeen 1.5x slower at 512 than at 256); a call long enough to
// prefetch walks its 1-d range in blocks of 256 (Note [Prefetching in
// generated kernels]: the gelu chain of 2^24 floats 10.3 ms at 1024, 9.3 at
// 256, on the Xeon).
// Per block it loads each external operand into a block of its math type
// (float for float16/bfloat16, as the eager kernels compute; a broadcast
// operand as one value), runs the nodes, and stores the results that leave
// the group. Consecutive nodes of plain arithmetic share one loop and keep
// their values in registers (Note [Register runs]); a node of vector math
// joins the arithmetic around it in one loop over whole vectors (Note
// [Vector runs]), or, alone, runs as a loop over the block writing a block
// of its own. The blocks live in L1; no intermediate touches memory.
//
// Bit equality with the eager kernels rests on four rules:
//  - Each node's loop is the eager kernel's lambda, the same expression (so
//    GCC contracts a * b + c into an FMA exactly where the eager kernel file
//    does: both are compiled with the same ISA flags, -O3 and the default
//    -ffp-contract=fast; only the preferred width of GCC's vectorized plain
//    loops differs, which changes no value), and vector ops call the same
//    vec:: functions at the same vector width (the variant eager picked at
//    start-up).
//  - Nothing contracts across nodes: a node's result is a block in memory
//    and an asm memory barrier follows each loop; inside a register or
//    vector run each value GCC could fold into the next node's arithmetic
//    (a product, a multiply-add, a sum of two blocks, a vector node's
//    result) is sealed (cg::seal, cg::vseal).
//  - Scalars that the eager kernel reads at run time (alpha, clamp bounds,
//    the Scalar operands in scalar_buf) are opaque to the optimizer here too
//    (cg::opaque; constant operands are blocks filled once), so nothing is
//    folded or contracted differently. The eager kernels' own literals (the
//    0.5 of gelu) are literals in both.
//  - A result is rounded to its dtype (cg::to<S>) before any other node
//    reads it, as the eager store rounds it.
// Every element is computed by the same code wherever it falls (the tails
// run the vector code on padded blocks, as vec_loops.h does), so the values
// do not depend on the split into blocks, rows or threads.

namespace {

/// How a vector run's code starts (Note [Vector runs]).
constexpr const char* kVectorRun = "/*vector run*/ {";

const char* cpp_type(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kUInt8: return "uint8_t";
    case kInt8: return "int8_t";
    case kInt16: return "int16_t";
    case kInt32: return "int32_t";
    case kInt64: return "int64_t";
    case kHalf: return "brisk::Half";
    case kBFloat16: return "brisk::BFloat16";
    case kFloat: return "float";
    case kDouble: return "double";
    default: return nullptr;
  }
}
bool is_float_dt(ScalarType t) { return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16; }
bool is_int_dt(ScalarType t) { return t == kUInt8 || t == kInt8 || t == kInt16 || t == kInt32 || t == kInt64; }
/// The math type (opmath) of a storage dtype.
ScalarType math_dt(ScalarType t) { return (t == kHalf || t == kBFloat16) ? kFloat : t; }
const char* math_type(ScalarType t) { return cpp_type(math_dt(t)); }

/// An opaque literal of math dtype `m` with value v (already of that type).
template <class T>
std::string lit_bits(const T& v) {
  char buf[96];
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, float>) {
    std::snprintf(buf, sizeof(buf), "cg::opaque<float>(uint32_t(0x%08" PRIx32 "u))", std::bit_cast<uint32_t>(v));
  } else if constexpr (std::is_same_v<T, double>) {
    std::snprintf(buf, sizeof(buf), "cg::opaque<double>(uint64_t(0x%016" PRIx64 "ull))",
                  std::bit_cast<uint64_t>(v));
  } else {
    using U = std::make_unsigned_t<T>;
    const char* ut = sizeof(T) == 1 ? "uint8_t" : sizeof(T) == 2 ? "uint16_t" : sizeof(T) == 4 ? "uint32_t" : "uint64_t";
    std::snprintf(buf, sizeof(buf), "cg::opaque<%s>((%s)(0x%" PRIx64 "ull))", cpp_type(dtype_of<T>), ut,
                  uint64_t(U(v)));
  }
  return buf;
}

/// A Scalar (KernelArgs) read as the eager kernel reads it: s.to<M>() with M
/// the math type of storage dtype `st`.
std::string scalar_lit(const Scalar& s, ScalarType st) {
  switch (math_dt(st)) {
    case kBool: return lit_bits(s.to<bool>());
    case kUInt8: return lit_bits(s.to<uint8_t>());
    case kInt8: return lit_bits(s.to<int8_t>());
    case kInt16: return lit_bits(s.to<int16_t>());
    case kInt32: return lit_bits(s.to<int32_t>());
    case kInt64: return lit_bits(s.to<int64_t>());
    case kFloat: return lit_bits(s.to<float>());
    case kDouble: return lit_bits(s.to<double>());
    default: return "";
  }
}
/// fill_'s value: a.s0.to<scalar_t>() stored, in the math type.
std::string fill_lit(const Scalar& s, ScalarType st) {
  if (st == kHalf) return lit_bits(static_cast<float>(s.to<Half>()));
  if (st == kBFloat16) return lit_bits(static_cast<float>(s.to<BFloat16>()));
  return scalar_lit(s, st);
}
/// A constant operand (bytes of dtype st in scalar_buf), in the math type.
std::string const_lit(const Operand& op) {
  auto get = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, op.scalar, sizeof(v));
    return v;
  };
  switch (op.dtype) {
    case kBool: return lit_bits(get(bool{}));
    case kUInt8: return lit_bits(get(uint8_t{}));
    case kInt8: return lit_bits(get(int8_t{}));
    case kInt16: return lit_bits(get(int16_t{}));
    case kInt32: return lit_bits(get(int32_t{}));
    case kInt64: return lit_bits(get(int64_t{}));
    case kHalf: return lit_bits(static_cast<float>(get(Half{})));
    case kBFloat16: return lit_bits(static_cast<float>(get(BFloat16{})));
    case kFloat: return lit_bits(get(float{}));
    case kDouble: return lit_bits(get(double{}));
    default: return "";
  }
}
/// The value of a constant operand as double (pow's special exponents).
double const_value(const Operand& op) {
  auto get = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, op.scalar, sizeof(v));
    return static_cast<double>(static_cast<opmath_t<decltype(tag)>>(v));
  };
  switch (op.dtype) {
    case kHalf: return get(Half{});
    case kBFloat16: return get(BFloat16{});
    case kFloat: return get(float{});
    case kDouble: return get(double{});
    default: return NAN;
  }
}

std::string dn(ScalarType t) { return std::string(brisk::dtype_name(t)); }

struct Unsupported {
  std::string why;
};

/// The generator's state for one group.
class Gen {
 public:
  Gen(const Graph& g, const Group& grp, int64_t block) : g_(g), grp_(grp), forced_block_(block), bufs_(grp) {}

  CpuCodegen run(const std::string& name) {
    CpuCodegen r;
    try {
      build(name, r.kernel);
      r.ok = true;
    } catch (const Unsupported& u) {
      r.ok = false;
      r.reason = u.why;
      r.kernel = CpuKernel{};
    }
    return r;
  }

 private:
  struct Block {
    std::string name;
    ScalarType dt;        // storage dtype; elements are its math type, already rounded to it
    bool scalar = false;  // one value (a constant operand, or per_block), not a block
    bool per_block = false;  // scalar: a broadcast operand, one value per block (loaded per block)
  };
  [[noreturn]] static void no(const std::string& why) { throw Unsupported{why}; }

  const Graph& g_;
  const Group& grp_;
  int64_t forced_block_ = 0;
  int ndim_ = 1;
  std::vector<int64_t> shape_;
  std::vector<CpuKernelArg> args_;
  std::vector<std::array<int64_t, 2>> arg_strides_;
  std::vector<std::pair<std::string, std::string>> decls_;  // (block, its declaration)
  std::vector<std::string> prelude_;
  /// The group's code in order: node loops, each either raw code or a
  /// scalar expression that may share one loop with its neighbours (Note
  /// [Register runs]).
  struct Step {
    std::string code;                // raw code (when expr is empty)
    bool reg = false;                // a scalar loop that may join a run
    bool sealed = false;             // reg: sealed in a run (Note [Register runs])
    Block out;                       // a scalar loop: the block it writes
    std::string expr;                // a scalar loop: the value, blocks read as @name@
    std::vector<std::string> reads;  // the blocks it reads (by name)
    // Note [Vector runs]
    std::string vexpr;               // reg: the value on vectors (float/double math), empty if none
    bool vnode = false;              // a vector node: out = vfn(x[, y]) with x, y the blocks vargs
    std::string vfn;
    std::vector<std::string> vargs;
  };
  std::vector<Step> steps_;
  std::set<std::string> registers_only_;  // blocks whose values never leave their run (not declared)
  std::map<std::string, std::string> direct_;  // block -> the pointer its run writes (d<j>: the tensor, or the block)
  int nconst_ = 0, nblocks_ = 0;
  size_t block_bytes_ = 0;  // the kernel's stack blocks, bytes per element of a block

  std::map<std::string, ScalarType> block_dt_;  // block name -> its math dtype
  std::string new_block(ScalarType dt, const std::string& prefix) {
    block_bytes_ += element_size(math_dt(dt));
    const std::string n = prefix + std::to_string(nblocks_++);
    block_dt_[n] = math_dt(dt);
    decls_.push_back({n, std::string("alignas(64) ") + math_type(dt) + " " + n + "[B];"});
    return n;
  }

  using Geo = OperandGeometry;
  Geo geo(const Operand& op) const { return geometry_of(op, ndim_); }
  GroupBuffers<Block> bufs_;                      // which geometry and value each buffer has (group_buffers.h)
  std::map<Geo, int> arg_of_geo_;                 // kernel argument of each geometry
  std::map<Geo, Block> loaded_;                   // the loaded block of each geometry read

  int arg_for(const Geo& g) {
    auto it = arg_of_geo_.find(g);
    if (it != arg_of_geo_.end()) return it->second;
    CpuKernelArg a;
    a.buf = g.buf;
    a.offset = g.offset;
    a.dtype = g.dt;
    args_.push_back(a);
    arg_strides_.push_back({g.s0, g.s1});
    return arg_of_geo_[g] = static_cast<int>(args_.size()) - 1;
  }

  /// The block holding operand k's value (loading it, or a constant).
  Block input(const Node& n, int k) {
    const Operand& op = n.ops[k];
    if (!cpp_type(op.dtype)) no("operand dtype " + dn((op.dtype)));
    if (op.is_const()) {
      // an opaque scalar: eager reads it from scalar_buf at run time
      const std::string name = "c" + std::to_string(nconst_++);
      prelude_.push_back(std::string("const ") + math_type(op.dtype) + " " + name + " = " + const_lit(op) + ";");
      return {name, op.dtype, true};
    }
    if (op.buf < 0 || op.buf >= static_cast<int>(g_.bufs.size())) no("operand of an unknown buffer");
    const Geo gm = geo(op);
    std::string why;
    if (const Block* b = bufs_.read(gm, why)) return *b;
    if (!why.empty()) no(why);
    if (auto it = loaded_.find(gm); it != loaded_.end()) return it->second;
    const int j = arg_for(gm);
    args_[j].read = true;
    if (gm.s0 == 0 && op.dtype != kBool) {
      // broadcast along the rows: one value per block (a block never
      // crosses a row), loaded once per block as cg::ld would spread it
      const std::string v = "lv" + std::to_string(j), s = cpp_type(op.dtype);
      loads_.push_back("const " + std::string(math_type(op.dtype)) + " " + v + " = [&] { " + s + " e; std::memcpy(&e, p" +
                       std::to_string(j) + ", sizeof(e)); return static_cast<opmath_t<" + s + ">>(e); }();");
      Block b{v, op.dtype, true, true};
      loaded_[gm] = b;
      return b;
    }
    // the loaded block: a pointer into the tensor when it is contiguous in
    // the math type and the block is whole vectors, else a copy
    const std::string jj = std::to_string(j);
    const std::string m = math_type(op.dtype), s = cpp_type(op.dtype);
    decls_.push_back({"lb" + jj, "alignas(64) " + m + " lb" + jj + "[B];"});
    block_bytes_ += element_size(math_dt(op.dtype));
    std::string code;
    if (math_dt(op.dtype) == op.dtype && op.dtype != kBool)
      code = "const " + m + "* l" + jj + " = (s" + jj + "_0 == int64_t(sizeof(" + s + ")) && (n & 15) == 0) ? reinterpret_cast<const " +
             m + "*>(p" + jj + ") : (cg::ld<" + s + ">(lb" + jj + ", p" + jj + ", s" + jj + "_0, n), lb" + jj + ");";
    else
      code = "const " + m + "* l" + jj + " = (cg::ld<" + s + ">(lb" + jj + ", p" + jj + ", s" + jj + "_0, n), lb" + jj + ");";
    loads_.push_back(code);
    Block b{"l" + jj, op.dtype};
    block_dt_[b.name] = math_dt(op.dtype);
    loaded_[gm] = b;
    return b;
  }
  std::vector<std::string> loads_;

  /// Declares the block of node `k`'s result (commit() records the write).
  Block output(const Node& n) {
    const Operand& op = n.ops[0];
    if (op.is_const()) no("a node writes a constant");
    if (op.buf < 0 || op.buf >= static_cast<int>(g_.bufs.size())) no("a node writes an unknown buffer");
    if (!cpp_type(op.dtype)) no("output dtype " + dn((op.dtype)));
    const Geo gm = geo(op);
    if (std::string why = bufs_.check_write(gm); !why.empty()) no(why);
    Block b{new_block(op.dtype, "v"), op.dtype};
    pending_geo_ = gm;
    return b;
  }
  Geo pending_geo_{};
  void commit(const Block& b) {
    if (bufs_.wrote(pending_geo_, b)) args_[arg_for(pending_geo_)].written = true;
  }

  // ---- emission helpers ----
  /// out[i] = to<S>(M(expr)) with a, b, c standing for the operands' blocks
  /// at i (at()). `reg`: the expression is plain arithmetic, selects or
  /// min/max that GCC vectorizes in any company, so it may join a register
  /// run (Note [Register runs]).
  void scalar_loop(const Block& o, const std::string& expr, bool reg = false, bool sealed = false) {
    Step st;
    st.reg = reg;
    st.sealed = sealed;
    st.out = o;
    st.expr = "cg::to<" + std::string(cpp_type(o.dt)) + ">(static_cast<" + math_type(o.dt) + ">(" + expr + "))";
    with_refs(st.expr, [&](const std::string& b) {
      st.reads.push_back(b);
      return b;
    });
    steps_.push_back(std::move(st));
  }
  /// expr with each @block@ replaced by f(block).
  template <class F>
  static std::string with_refs(const std::string& expr, const F& f) {
    std::string x;
    for (size_t p = 0; p < expr.size();) {
      if (expr[p] != '@') {
        x += expr[p++];
        continue;
      }
      const size_t q = expr.find('@', p + 1);
      x += f(expr.substr(p + 1, q - p - 1));
      p = q + 1;
    }
    return x;
  }
  void raw(std::string code, std::vector<std::string> reads) {
    Step st;
    st.code = std::move(code);
    st.reads = std::move(reads);
    steps_.push_back(std::move(st));
  }
  void vec_loop1(const Block& o, const Block& a0, const std::string& fexpr) {
    const Block a = vec_src(a0);
    raw("cg::vmap1(" + o.name + ", " + a.name + ", n, [&](auto x) { using V = decltype(x); (void)sizeof(V); return " + fexpr + "; });",
        {a.name});
    vnode(o, fexpr, {a.name});
    round16(o);
  }
  void vec_loop2(const Block& o, const Block& a0, const Block& b0, const std::string& fexpr) {
    // a constant operand is a filled block: the partial last vector is
    // padded with zeros in both operands, as vec_binary_kernel pads it
    const Block a = vec_src(a0), b = vec_src(b0);
    raw("cg::vmap2(" + o.name + ", " + a.name + ", " + b.name +
            ", n, [&](auto x, auto y) { using V = decltype(x); (void)sizeof(V); return " + fexpr + "; });",
        {a.name, b.name});
    vnode(o, fexpr, {a.name, b.name});
    round16(o);
  }
  /// Marks the step just made as a vector node (Note [Vector runs]).
  void vnode(const Block& o, const std::string& fexpr, std::vector<std::string> args) {
    Step& st = steps_.back();
    st.vnode = true;
    st.out = o;
    st.vfn = fexpr;
    st.vargs = std::move(args);
    node_vec_ = true;
  }
  /// An operand of a vector form that must be a vector (a function's
  /// argument; at() gives a constant or broadcast operand as a scalar).
  static std::string vx(const std::string& operand) { return "cg::vv<V>(" + operand + ")"; }
  /// The vector form of the scalar loop just made (Note [Vector runs]):
  /// the same value lane by lane, operands as at() writes them.
  void vform(const std::string& core) {
    Step& st = steps_.back();
    if (st.reg && !st.expr.empty()) st.vexpr = core;
  }
  void round16(const Block& o) {
    if (o.dt == kHalf || o.dt == kBFloat16)
      raw("for (int64_t i = 0; i < n; ++i) " + o.name + "[i] = cg::to<" + cpp_type(o.dt) + ">(" + o.name + "[i]);", {o.name});
  }
  std::string k(const std::string& lit, ScalarType mdt) {
    const std::string name = "k" + std::to_string(nconst_++);
    prelude_.push_back(std::string("const ") + math_type(mdt) + " " + name + " = " + lit + ";");
    return name;
  }
  /// An operand of a scalar expression: a constant's name, or @block@
  /// (build() makes it block[i], or the register of a run).
  static std::string at(const Block& b) { return b.scalar ? b.name : "@" + b.name + "@"; }
  /// The operand of a vector loop: a block (a constant is spread into one).
  Block vec_src(const Block& b) {
    if (!b.scalar) return b;
    const std::string n = b.name + "_b";
    block_dt_[n] = math_dt(b.dt);
    if (spread_.insert(n).second) {
      decls_.push_back({n, std::string("alignas(64) ") + math_type(b.dt) + " " + n + "[B];"});
      (b.per_block ? loads_ : prelude_).push_back("cg::fill(" + n + ", " + b.name + ", B);");
      block_bytes_ += element_size(math_dt(b.dt));
    }
    return {n, b.dt};
  }
  std::set<std::string> spread_;
  bool node_vec_ = false;  // the node being emitted runs vector code

  void same_dtypes(const Node& n, int from, int to_excl, ScalarType t) {
    for (int i = from; i < to_excl; ++i)
      if (n.ops[i].dtype != t) no(n.name + ": operand " + std::to_string(i) + " is " + dn(n.ops[i].dtype) + ", expected " + dn(t));
  }

  void emit_node(const Node& n);
  std::vector<std::string> assemble_steps();
  std::vector<std::string> carry_prefetches(const std::vector<std::string>& body) const;
  void build(const std::string& name, CpuKernel& kern);
};

void Gen::emit_node(const Node& n) {
  if (n.opaque()) no(n.name + ": not an elementwise kernel call");
  const ScalarType dt0 = n.ops[0].dtype;
  auto need = [&](int nops) {
    if (n.noperands != nops) no(n.name + ": " + std::to_string(n.noperands) + " operands");
  };
  auto float_only = [&](ScalarType t) {
    if (!is_float_dt(t)) no(n.name + " on " + dn(t));
  };
  auto numeric = [&](ScalarType t) {
    if (!is_float_dt(t) && !is_int_dt(t)) no(n.name + " on " + dn(t));
  };
  switch (n.slot) {
    case OpId::copy: {
      need(2);
      const ScalarType in = n.ops[1].dtype;
      Block a = input(n, 1);
      Block o = output(n);
      if (in == dt0) {
        scalar_loop(o, at(a), true);
        vform(at(a));
      } else {
        const bool narrow = in == kInt8 || in == kInt16 || dt0 == kInt8 || dt0 == kInt16;
        // float -> integer conversions past the range are undefined in C++;
        // the eager kernel's values there depend on how it was vectorized
        if (is_float_dt(in) && (is_int_dt(dt0) && !narrow && dt0 != kInt32 && dt0 != kInt64))
          no("copy from a float dtype to " + dn((dt0)));
        if (narrow && is_float_dt(in)) no("copy from a float dtype to a narrow integer");
        if (narrow)
          scalar_loop(o, "static_cast<int32_t>(" + at(a) + ")");
        else
          scalar_loop(o, at(a));
      }
      return commit(o);
    }
    case OpId::fill: {
      need(1);
      Block o = output(n);
      const std::string v = k(fill_lit(n.args.s0, dt0), math_dt(dt0));
      scalar_loop(o, v, true);
      vform(v);
      return commit(o);
    }
    case OpId::add:
    case OpId::mul: {
      need(3);
      same_dtypes(n, 1, 3, dt0);
      if (dt0 != kBool) numeric(dt0);
      Block a = input(n, 1), b = input(n, 2);
      Block o = output(n);
      if (dt0 == kBool) {
        scalar_loop(o, at(a) + (n.slot == OpId::add ? " || " : " && ") + at(b));
      } else if (n.slot == OpId::mul) {
        scalar_loop(o, at(a) + " * " + at(b), true, true);
        vform(at(a) + " * " + at(b));
      } else {
        // alpha == M(1) is decided on the value eager compares
        bool unit = false;
        switch (math_dt(dt0)) {
          case kFloat: unit = n.args.s0.to<float>() == 1.0f; break;
          case kDouble: unit = n.args.s0.to<double>() == 1.0; break;
          case kUInt8: unit = n.args.s0.to<uint8_t>() == 1; break;
          case kInt8: unit = n.args.s0.to<int8_t>() == 1; break;
          case kInt16: unit = n.args.s0.to<int16_t>() == 1; break;
          case kInt32: unit = n.args.s0.to<int32_t>() == 1; break;
          case kInt64: unit = n.args.s0.to<int64_t>() == 1; break;
          default: no("add on " + dn((dt0)));
        }
        // a 16-bit alpha read as the dtype (the eager kernel's a.s0.to<scalar_t>())
        if (dt0 == kHalf) unit = static_cast<float>(n.args.s0.to<Half>()) == 1.0f;
        if (dt0 == kBFloat16) unit = static_cast<float>(n.args.s0.to<BFloat16>()) == 1.0f;
        const std::string e = unit ? at(a) + " + " + at(b) : at(a) + " + " + k(fill_lit(n.args.s0, dt0), math_dt(dt0)) + " * " + at(b);
        // sealed in a run: a multiply-add, and a sum of two blocks (x + x,
        // which GCC rewrites as x * 2, a product that would contract with
        // the next node's add; its value numbering sees x + copy(x) and two
        // equal nodes' results as x + x too)
        scalar_loop(o, e, true, !unit || (!a.scalar && !b.scalar));
        vform(e);
      }
      return commit(o);
    }
    case OpId::div:
    case OpId::remainder:
    case OpId::fmod: {
      need(3);
      float_only(dt0);
      same_dtypes(n, 1, 3, dt0);
      Block a = input(n, 1), b = input(n, 2);
      Block o = output(n);
      if (n.slot == OpId::remainder)
        scalar_loop(o, "math::remainder(" + at(a) + ", " + at(b) + ")");
      else if (n.slot == OpId::fmod)
        scalar_loop(o, "math::fmod(" + at(a) + ", " + at(b) + ")");
      else if (n.args.mode == 1)
        scalar_loop(o, std::string("math::trunc_div<") + cpp_type(dt0) + ">(" + at(a) + ", " + at(b) + ")");
      else if (n.args.mode == 2)
        scalar_loop(o, "math::floor_div(" + at(a) + ", " + at(b) + ")");
      else if (n.args.mode == 0) {
        scalar_loop(o, at(a) + " / " + at(b), true);
        vform(at(a) + " / " + at(b));
      } else
        no("div mode " + std::to_string(n.args.mode));
      return commit(o);
    }
    case OpId::minimum:
    case OpId::maximum: {
      need(3);
      numeric(dt0);
      same_dtypes(n, 1, 3, dt0);
      Block a = input(n, 1), b = input(n, 2);
      Block o = output(n);
      scalar_loop(o, std::string(n.slot == OpId::minimum ? "math::minimum(" : "math::maximum(") + at(a) + ", " + at(b) + ")", true);
      if (is_float_dt(dt0)) vform(std::string(n.slot == OpId::minimum ? "cg::vminimum(" : "cg::vmaximum(") + vx(at(a)) + ", " + vx(at(b)) + ")");
      return commit(o);
    }
    case OpId::compare:
    case OpId::logical: {
      need(3);
      const ScalarType t = n.ops[1].dtype;
      if (dt0 != kBool) no(n.name + " into " + dn(dt0));
      if (t != kBool) numeric(t);
      same_dtypes(n, 1, 3, t);
      Block a = input(n, 1), b = input(n, 2);
      Block o = output(n);
      const std::string x = at(a), y = at(b), z = std::string(math_type(t)) + "(0)";
      if (n.slot == OpId::compare) {
        static const char* ops[] = {" == ", " != ", " < ", " <= ", " > ", " >= "};
        if (n.args.mode < 0 || n.args.mode > 5) no("compare mode");
        scalar_loop(o, x + ops[n.args.mode] + y);
      } else {
        switch (static_cast<LogicalMode>(n.args.mode)) {
          case LogicalMode::And: scalar_loop(o, x + " != " + z + " && " + y + " != " + z); break;
          case LogicalMode::Or: scalar_loop(o, x + " != " + z + " || " + y + " != " + z); break;
          case LogicalMode::Xor: scalar_loop(o, "(" + x + " != " + z + ") != (" + y + " != " + z + ")"); break;
          default: no("logical mode");
        }
      }
      return commit(o);
    }
    case OpId::lerp: {
      float_only(dt0);
      if (n.args.has_s0) {
        need(3);
        same_dtypes(n, 1, 3, dt0);
        Block a = input(n, 1), b = input(n, 2);
        Block o = output(n);
        scalar_loop(o, "math::lerp(" + at(a) + ", " + at(b) + ", " + k(scalar_lit(n.args.s0, dt0), math_dt(dt0)) + ")", true, true);
        return commit(o);
      }
      need(4);
      same_dtypes(n, 1, 4, dt0);
      Block a = input(n, 1), b = input(n, 2), c = input(n, 3);
      Block o = output(n);
      scalar_loop(o, "math::lerp(" + at(a) + ", " + at(b) + ", " + at(c) + ")", true, true);
      return commit(o);
    }
    case OpId::addcmul:
    case OpId::addcdiv: {
      need(4);
      if (n.slot == OpId::addcdiv) float_only(dt0);
      else numeric(dt0);
      same_dtypes(n, 1, 4, dt0);
      Block a = input(n, 1), b = input(n, 2), c = input(n, 3);
      Block o = output(n);
      const std::string v = k(scalar_lit(n.args.s0, dt0), math_dt(dt0));
      const std::string e = at(a) + " + " + v + " * " + at(b) + (n.slot == OpId::addcmul ? " * " : " / ") + at(c);
      scalar_loop(o, e, true, true);
      vform(e);
      return commit(o);
    }
    case OpId::clamp: {
      need(2);
      numeric(dt0);
      same_dtypes(n, 1, 2, dt0);
      if (!n.args.has_s0 && !n.args.has_s1) no("clamp without bounds");
      Block a = input(n, 1);
      Block o = output(n);
      const ScalarType m = math_dt(dt0);
      if (n.args.has_s0 && n.args.has_s1) {
        const std::string lo = k(scalar_lit(n.args.s0, dt0), m), hi = k(scalar_lit(n.args.s1, dt0), m);
        scalar_loop(o, "math::minimum(math::maximum(" + at(a) + ", " + lo + "), " + hi + ")", true);
        if (is_float_dt(dt0)) vform("cg::vminimum(cg::vmaximum(" + vx(at(a)) + ", " + vx(lo) + "), " + vx(hi) + ")");
      } else if (n.args.has_s0) {
        const std::string lo = k(scalar_lit(n.args.s0, dt0), m);
        scalar_loop(o, "math::maximum(" + at(a) + ", " + lo + ")", true);
        if (is_float_dt(dt0)) vform("cg::vmaximum(" + vx(at(a)) + ", " + vx(lo) + ")");
      } else {
        const std::string hi = k(scalar_lit(n.args.s1, dt0), m);
        scalar_loop(o, "math::minimum(" + at(a) + ", " + hi + ")", true);
        if (is_float_dt(dt0)) vform("cg::vminimum(" + vx(at(a)) + ", " + vx(hi) + ")");
      }
      return commit(o);
    }
    case OpId::clamp_tensor: {
      need(4);
      numeric(dt0);
      same_dtypes(n, 1, 4, dt0);
      Block a = input(n, 1), b = input(n, 2), c = input(n, 3);
      Block o = output(n);
      scalar_loop(o, "math::minimum(math::maximum(" + at(a) + ", " + at(b) + "), " + at(c) + ")", true);
      if (is_float_dt(dt0)) vform("cg::vminimum(cg::vmaximum(" + vx(at(a)) + ", " + vx(at(b)) + "), " + vx(at(c)) + ")");
      return commit(o);
    }
    case OpId::where: {
      need(4);
      if (n.ops[1].dtype != kBool) no("where with a " + dn((n.ops[1].dtype)) + " condition");
      same_dtypes(n, 2, 4, dt0);
      Block c = input(n, 1), a = input(n, 2), b = input(n, 3);
      Block o = output(n);
      scalar_loop(o, at(c) + " ? " + at(a) + " : " + at(b), true);
      return commit(o);
    }
    case OpId::threshold_backward: {
      need(3);
      float_only(dt0);
      same_dtypes(n, 1, 3, dt0);
      Block gr = input(n, 1), x = input(n, 2);
      Block o = output(n);
      const ScalarType m = math_dt(dt0);
      const std::string th = k(scalar_lit(n.args.s0, dt0), m);
      scalar_loop(o, at(x) + " <= " + th + " ? " + math_type(dt0) + "(0) : " + at(gr), true);
      vform("vec::select(" + vx(at(x)) + " <= " + vx(th) + ", V{}, " + vx(at(gr)) + ")");
      return commit(o);
    }
    case OpId::activation_backward: {  // eager's vector formula (activation_grad_v), the mode a template argument
      need(3);
      float_only(dt0);
      same_dtypes(n, 1, 3, dt0);
      static const char* modes[] = {"sigmoid",    "tanh",        "silu",       "mish",       "gelu_erf",
                                    "gelu_tanh",  "logit",       "softplus",   "hardswish",  "hardsigmoid",
                                    "elu",        "elu_result",  "leaky_relu", "softshrink", "hardshrink",
                                    "log_sigmoid", "hardtanh", "mse"};
      static_assert(std::size(modes) == static_cast<size_t>(math::ActGrad::kNumModes));
      if (n.args.mode < 0 || n.args.mode >= static_cast<int>(math::ActGrad::kNumModes)) no("activation gradient mode");
      Block gr = input(n, 1), v = input(n, 2);
      Block o = output(n);
      const ScalarType m = math_dt(dt0);
      vec_loop2(o, gr, v,
                std::string("cg::activation_grad_v<math::ActGrad::") + modes[n.args.mode] + ">(x, y, vec::splat<V>(" +
                    k(scalar_lit(n.args.s0, dt0), m) + "), vec::splat<V>(" + k(scalar_lit(n.args.s1, dt0), m) +
                    "), vec::splat<V>(" + k(scalar_lit(n.args.s2, dt0), m) + "))");
      return commit(o);
    }
    case OpId::activation: {  // eager's vector formula (activation_v), the mode a template argument
      need(2);
      float_only(dt0);
      same_dtypes(n, 1, 2, dt0);
      static const char* modes[] = {"hardswish",  "hardsigmoid", "elu",        "leaky_relu",
                                    "softshrink", "hardshrink",  "log_sigmoid"};
      static_assert(std::size(modes) == static_cast<size_t>(math::Act::kNumModes));
      if (n.args.mode < 0 || n.args.mode >= static_cast<int>(math::Act::kNumModes)) no("activation mode");
      Block a = input(n, 1);
      Block o = output(n);
      const ScalarType m = math_dt(dt0);
      vec_loop1(o, a,
                std::string("cg::activation_v<math::Act::") + modes[n.args.mode] + ">(x, vec::splat<V>(" +
                    k(scalar_lit(n.args.s0, dt0), m) + "), vec::splat<V>(" + k(scalar_lit(n.args.s1, dt0), m) +
                    "), vec::splat<V>(" + k(scalar_lit(n.args.s2, dt0), m) + "))");
      return commit(o);
    }
    case OpId::isclose: {
      need(3);
      const ScalarType t = n.ops[1].dtype;
      if (dt0 != kBool) no("isclose into " + dn((dt0)));
      float_only(t);
      same_dtypes(n, 1, 3, t);
      Block a = input(n, 1), b = input(n, 2);
      Block o = output(n);
      const ScalarType m = math_dt(t);
      // the tolerances in the math type, unrounded (the eager kernel's Scalar::to<M>)
      scalar_loop(o, std::string("math::isclose_float<") + cpp_type(t) + ">(" + at(a) + ", " + at(b) + ", " +
                         k(scalar_lit(n.args.s0, m), m) + ", " + k(scalar_lit(n.args.s1, m), m) + ", " +
                         (n.args.mode != 0 ? "true" : "false") + ")");
      return commit(o);
    }
    case OpId::gelu:
    case OpId::softplus: {
      need(2);
      float_only(n.ops[1].dtype);
      same_dtypes(n, 1, 2, dt0);
      Block a = input(n, 1);
      Block o = output(n);
      if (n.slot == OpId::gelu) {
        vec_loop1(o, a, n.args.mode == 1 ? "cg::gelu_tanh_v(x)" : "cg::gelu_erf_v(x)");
      } else {
        const ScalarType m = math_dt(dt0);
        const std::string beta = k(scalar_lit(n.args.s0, dt0), m), th = k(scalar_lit(n.args.s1, dt0), m);
        vec_loop1(o, a, "cg::softplus_v(x, vec::splat<V>(" + beta + "), vec::splat<V>(" + th + "))");
      }
      return commit(o);
    }
    case OpId::binary_math: {
      // the eager kernel's forms (backend/cpu/kernels/binary_math.cpp)
      need(3);
      same_dtypes(n, 1, 3, dt0);
      if (n.args.mode < 0 || n.args.mode >= static_cast<int>(math::BinaryMath::kNumModes)) no("binary_math mode");
      const auto m = static_cast<math::BinaryMath>(n.args.mode);
      if (m != math::BinaryMath::heaviside) float_only(dt0);
      Block a = input(n, 1), b = input(n, 2);
      Block o = output(n);
      const std::string s16 = cpp_type(dt0);
      switch (m) {
        case math::BinaryMath::hypot: vec_loop2(o, a, b, "vec::hypot(x, y)"); break;
        case math::BinaryMath::logaddexp: vec_loop2(o, a, b, "cg::logaddexp_v(x, y)"); break;
        case math::BinaryMath::logaddexp2: vec_loop2(o, a, b, "cg::logaddexp2_v(x, y)"); break;
        case math::BinaryMath::copysign: vec_loop2(o, a, b, "vec::copysign(x, y)"); break;
        case math::BinaryMath::nextafter:
          if (dt0 == kHalf || dt0 == kBFloat16)
            scalar_loop(o, "static_cast<float>(math::nextafter16(" + s16 + "(" + at(a) + "), " + s16 + "(" + at(b) + ")))");
          else
            vec_loop2(o, a, b, "vec::nextafter(x, y)");
          break;
        case math::BinaryMath::xlogy:
          scalar_loop(o, "math::xlogy_in<" + s16 + ">(" + at(a) + ", " + at(b) + ")");
          break;
        default: scalar_loop(o, "math::heaviside(" + at(a) + ", " + at(b) + ")"); break;
      }
      return commit(o);
    }
    case OpId::pow:
    case OpId::atan2: {
      need(3);
      float_only(dt0);
      same_dtypes(n, 1, 3, dt0);
      Block a = input(n, 1), b = input(n, 2);
      Block o = output(n);
      if (n.slot == OpId::atan2) {
        vec_loop2(o, a, b, "vec::atan2(x, y)");
        return commit(o);
      }
      // pow_kernel's special exponents: a Scalar exponent (mode 1) seen as
      // a 0-stride operand of a 1-dim iterator
      const Operand& e_op = n.ops[2];
      bool zero_stride = e_op.is_const() || e_op.strides[0] == 0;
      // (a linear node was a 1-dim iterator when eager ran it: plan() viewed it as 2-d)
      const bool eager_1d = n.ndim == 1 || n.linear;
      if (n.args.mode == 1 && zero_stride && eager_1d) {
        if (!e_op.is_const()) no("pow with a Scalar exponent that is not a constant");
        const double e = const_value(e_op);
        // these are exactly rounded lane by lane (mul, div, the hardware
        // sqrt), so the scalar form is eager's vector value and may join a run
        const std::string x = at(a), one = std::string(math_type(dt0)) + "(1)";
        std::string f;
        // bfloat16 by 3 and -2: x * x rounded to bfloat16 first (pow_kernel);
        // no vector form (the runs split around it)
        const bool bf16_steps = dt0 == kBFloat16 && (e == 3 || e == -2);
        if (bf16_steps) {
          const std::string sq = "cg::to<BFloat16>(" + x + " * " + x + ")";
          scalar_loop(o, e == 3 ? sq + " * " + x : one + " / " + sq, true, e == 3);
          return commit(o);
        }
        if (e == 2) f = x + " * " + x;
        else if (e == 3) f = x + " * " + x + " * " + x;
        else if (e == 0.5 && dt0 != kHalf) f = "std::sqrt(" + x + ")";  // float16: pow (pow_kernel)
        else if (e == -0.5 && dt0 != kHalf) f = one + " / std::sqrt(" + x + ")";
        else if (e == -1) f = one + " / " + x;
        else if (e == -2) f = one + " / (" + x + " * " + x + ")";
        if (!f.empty()) {
          scalar_loop(o, f, true, e == 2 || e == 3);
          const std::string vs = "vec::sqrt(" + vx(x) + ")";
          vform(e == 0.5 ? vs : e == -0.5 ? one + " / " + vs : f);
          return commit(o);
        }
      }  // else eager takes Sleef's pow for every exponent
      vec_loop2(o, a, b, "vec::pow(x, y)");
      return commit(o);
    }
    case OpId::unary: {
      need(2);
      const ScalarType t = n.ops[1].dtype;
      const auto mode = static_cast<UnaryMode>(n.args.mode);
      // predicates: bool out
      if (mode == UnaryMode::isnan || mode == UnaryMode::isinf || mode == UnaryMode::isfinite ||
          mode == UnaryMode::logical_not) {
        if (dt0 != kBool) no(n.name + " into " + dn(dt0));
        if (t != kBool) numeric(t);
        Block a = input(n, 1);
        Block o = output(n);
        const std::string x = at(a);
        const bool fl = is_float_dt(t);
        if (mode == UnaryMode::isnan) scalar_loop(o, x + " != " + x);
        else if (mode == UnaryMode::logical_not) scalar_loop(o, x + " == " + math_type(t) + "(0)");
        else if (mode == UnaryMode::isinf) scalar_loop(o, fl ? "std::isinf(" + x + ")" : "false");
        else scalar_loop(o, fl ? "std::isfinite(" + x + ")" : "true");
        return commit(o);
      }
      same_dtypes(n, 1, 2, dt0);
      const char* scalar_expr = nullptr;  // NUMERIC_OP / FLOAT_OP of unary.cpp, x the operand
      std::string scalar_text;            // (an expression with the node's parameter)
      const char* vec_expr = nullptr;     // VEC_OP
      bool ints = false;
      switch (mode) {
        case UnaryMode::neg: scalar_expr = "math::neg(X)"; ints = true; break;
        case UnaryMode::abs: scalar_expr = "math::abs(X)"; ints = true; break;
        case UnaryMode::sign: scalar_expr = "math::sign(X)"; ints = true; break;
        case UnaryMode::square: scalar_expr = "math::square(X)"; ints = true; break;
        case UnaryMode::relu: scalar_expr = "math::relu(X)"; ints = true; break;
        case UnaryMode::round: scalar_expr = "math::round_even(X)"; ints = true; break;
        case UnaryMode::floor: scalar_expr = "FP ? M(std::floor(X)) : X"; ints = true; break;
        case UnaryMode::ceil: scalar_expr = "FP ? M(std::ceil(X)) : X"; ints = true; break;
        case UnaryMode::trunc: scalar_expr = "FP ? M(std::trunc(X)) : X"; ints = true; break;
        case UnaryMode::frac: scalar_expr = "X - std::trunc(X)"; break;
        case UnaryMode::trigamma: scalar_expr = "math::trigamma(X)"; break;
        case UnaryMode::polygamma:  // n in s0
          if (!n.args.has_s0) no("polygamma without n");
          scalar_text = "math::polygamma(" + std::to_string(n.args.s0.to<int64_t>()) + ", X)";
          scalar_expr = scalar_text.c_str();
          break;
        case UnaryMode::exp: vec_expr = "vec::exp(x)"; break;
        case UnaryMode::exp2: vec_expr = "vec::exp2(x)"; break;
        case UnaryMode::log: vec_expr = "vec::log(x)"; break;
        case UnaryMode::log2: vec_expr = "vec::log2(x)"; break;
        case UnaryMode::log10: vec_expr = "vec::log10(x)"; break;
        case UnaryMode::log1p: vec_expr = "vec::log1p_fast(x)"; break;
        case UnaryMode::expm1: vec_expr = "vec::expm1(x)"; break;
        // exactly rounded lane by lane: the scalar form is vec::sqrt's value
        case UnaryMode::sqrt: scalar_expr = "std::sqrt(X)"; break;
        case UnaryMode::rsqrt: scalar_expr = "M(1) / std::sqrt(X)"; break;
        case UnaryMode::reciprocal: scalar_expr = "M(1) / X"; break;
        case UnaryMode::sin: vec_expr = "vec::sin(x)"; break;
        case UnaryMode::cos: vec_expr = "vec::cos(x)"; break;
        case UnaryMode::tan: vec_expr = "vec::tan(x)"; break;
        case UnaryMode::asin: vec_expr = "vec::asin(x)"; break;
        case UnaryMode::acos: vec_expr = "vec::acos(x)"; break;
        case UnaryMode::atan: vec_expr = "vec::atan(x)"; break;
        case UnaryMode::sinh: vec_expr = "vec::sinh_full(x)"; break;
        case UnaryMode::cosh: vec_expr = "vec::cosh_full(x)"; break;
        case UnaryMode::tanh: vec_expr = "vec::tanh(x)"; break;
        case UnaryMode::asinh: vec_expr = "vec::asinh_full(x)"; break;
        case UnaryMode::acosh: vec_expr = "vec::acosh_full(x)"; break;
        case UnaryMode::atanh: vec_expr = "vec::atanh(x)"; break;
        case UnaryMode::sigmoid: vec_expr = "cg::sigmoid_v(x)"; break;
        case UnaryMode::erf: vec_expr = "cg::erf_v(x)"; break;
        case UnaryMode::erfc: vec_expr = "cg::erfc_v(x)"; break;
        case UnaryMode::erfinv: vec_expr = "cg::erfinv_v(x)"; break;
        case UnaryMode::lgamma: vec_expr = "vec::lgamma(x)"; break;
        case UnaryMode::digamma: vec_expr = "cg::digamma_v(x)"; break;
        case UnaryMode::silu: vec_expr = "cg::silu_v(x)"; break;
        case UnaryMode::mish: vec_expr = "cg::mish_v(x)"; break;
        case UnaryMode::logit: break;
        default: no(std::string("unary ") + unary_mode_name(mode));
      }
      if (ints) numeric(t);
      else float_only(t);
      Block a = input(n, 1);
      Block o = output(n);
      if (scalar_expr) {
        std::string e = scalar_expr;
        const std::string x = at(a);
        auto replace = [&](const std::string& from, const std::string& to) {
          for (size_t p = e.find(from); p != std::string::npos; p = e.find(from, p + to.size())) e.replace(p, from.size(), to);
        };
        if (e.rfind("FP ? ", 0) == 0) {  // floor/ceil/trunc: identity on integers
          const std::string fn = e.substr(e.find("std::"), e.find("(X)") - e.find("std::"));
          e = is_float_dt(t) ? std::string(math_type(t)) + "(" + fn + "(X))" : "X";
        }
        replace("X", x);
        replace("M(1)", std::string(math_type(t)) + "(1)");
        scalar_loop(o, e, mode == UnaryMode::neg || mode == UnaryMode::abs || mode == UnaryMode::square ||
                              mode == UnaryMode::relu || mode == UnaryMode::sqrt || mode == UnaryMode::rsqrt ||
                              mode == UnaryMode::reciprocal || mode == UnaryMode::floor || mode == UnaryMode::ceil ||
                              mode == UnaryMode::trunc || mode == UnaryMode::round || mode == UnaryMode::frac,
                    mode == UnaryMode::square);
        if (is_float_dt(t)) {  // (math::neg and math::square are -x and x * x on floats, math::abs std::fabs)
          const std::string one = std::string(math_type(t)) + "(1)";
          switch (mode) {
            case UnaryMode::neg: vform("-(" + x + ")"); break;
            case UnaryMode::abs: vform("cg::vfabs(" + vx(x) + ")"); break;
            case UnaryMode::relu: vform("cg::vrelu(" + vx(x) + ")"); break;
            case UnaryMode::square: vform(x + " * " + x); break;
            case UnaryMode::sqrt: vform("vec::sqrt(" + vx(x) + ")"); break;
            case UnaryMode::rsqrt: vform(one + " / vec::sqrt(" + vx(x) + ")"); break;
            case UnaryMode::reciprocal: vform(one + " / " + x); break;
            // (exact: the eager kernels' vector rounding, lane by lane std::floor ...)
            case UnaryMode::floor: vform("vec::floor(" + vx(x) + ")"); break;
            case UnaryMode::ceil: vform("vec::ceil(" + vx(x) + ")"); break;
            case UnaryMode::trunc: vform("vec::trunc(" + vx(x) + ")"); break;
            case UnaryMode::round: vform("vec::rint(" + vx(x) + ")"); break;
            case UnaryMode::frac: vform(x + " - vec::trunc(" + vx(x) + ")"); break;
            default: break;
          }
        }
      } else if (mode == UnaryMode::logit) {
        const double lo_d = n.args.has_s0 ? n.args.s0.to<double>() : -1.0;
        // eager's rounding code (16-bit dtypes in their steps: composite::logit_v)
        const std::string code = std::string("vec::splat<V>(") + (t == kHalf ? "1" : t == kBFloat16 ? "2" : "0") + ")";
        if (lo_d < 0) {
          vec_loop1(o, a, "cg::logit_v(x, " + code + ")");
        } else {
          // eager: the bounds eps and 1 - eps in s0 and s1 (rounded to the dtype by the front end), M(s0), M(s1)
          if (!n.args.has_s1) no("logit without its upper bound");
          const double hi_d = n.args.s1.to<double>();
          const ScalarType m = math_dt(t);
          std::string lo, hi;
          if (m == kFloat) {
            lo = k(lit_bits(static_cast<float>(lo_d)), m);
            hi = k(lit_bits(static_cast<float>(hi_d)), m);
          } else {
            lo = k(lit_bits(lo_d), m);
            hi = k(lit_bits(hi_d), m);
          }
          vec_loop1(o, a, "cg::logit_eps_v(x, vec::splat<V>(" + lo + "), vec::splat<V>(" + hi + "), " + code + ")");
        }
      } else {
        vec_loop1(o, a, vec_expr);
      }
      return commit(o);
    }
    default:
      no(std::string("slot ") + op_name(n.slot));
  }
}

// Note [Register runs]
// Consecutive scalar loops of plain arithmetic (add, mul, div, addcmul,
// where, min/max, clamp, lerp, copies, fills, neg/abs/square/relu, and the
// exactly rounded sqrt, rsqrt, reciprocal and pow by 2, 3, +-0.5, -1, -2)
// into float or double math share one loop over the block: each value is a
// local variable that GCC keeps in a vector register, and a block is
// written only for a value that code outside the run reads (a vector node,
// a later run, the final store). The plain-op Adam's eleven loops over L1
// blocks become one.
// Bit equality (Note [Generated CPU kernels]) needs every value rounded and
// nothing contracted across nodes, as when each node stored its block.
// GCC's value-changing rewrites here (no -ffast-math) all fold a node's
// arithmetic into the next one's, so a run passes each value they could
// start from through cg::seal (its bits or-ed with an opaque zero: one
// vpord per vector, which GCC vectorizes; the node's `sealed` flag):
//  - a product (mul, square, pow 2 and 3): GCC contracts it with the add
//    that consumes it into an FMA;
//  - a sum of two blocks: GCC rewrites x + x as x * 2, a product (found by
//    RandomProgramsMatchEager: lerp(x + x, y, w) contracted the other way
//    round, one ulp off), and its value numbering also sees x + copy(x)
//    and the sum of two equal nodes' results as x + x (a review's find);
//  - a value that ends in a multiply-add (add with an alpha, addcmul,
//    addcdiv, lerp): GCC folds a later node's negation into it
//    (-(a + k * b) as one vfnmsub, which gives +0 where eager's neg of a
//    stored +0 gives -0; found by VectorRunsMatchEager).
// RegisterRunsMatchEager has a program for each (each fails unsealed).
// The contraction inside a node's own expression (add's a + alpha * b)
// stays what the eager kernel's loop does. This rests on -fno-math-errno
// too (the eager files' flag as well): without it a std::sqrt keeps its
// errno branch, which splits the loop and changes what GCC contracts.
// Vector nodes (the vec:: math) join plain arithmetic in vector runs (Note
// [Vector runs]); runs do not mix float and double math. A float16 or
// bfloat16 result is rounded through its storage type in the register, as
// eager's store rounds it (GCC vectorizes the conversions).
//
// Note [Vector runs]
// A vector node (erf, exp, ... through vmap1/vmap2) between plain
// arithmetic used to split the runs around it and keep its own loop and
// block: the gelu chain x * 0.5 * (1 + erf(x / 1.41421)) ran three loops per
// block, two blocks stored and read back. Consecutive steps that are
// vector nodes or plain arithmetic with a vector form (add, mul, div,
// addcmul/addcdiv, copies, fills, neg, square, sqrt, rsqrt, reciprocal, pow
// by 2, 3, +-0.5, -1, -2, and the selects: minimum/maximum, clamp, abs,
// relu, threshold_backward, through cg::vminimum and its neighbours in
// cpu_prelude.h), all into float (or all into double) and reading
// blocks of that type, with at least one vector node among them, form a
// vector run: one loop over the block's whole vectors in vec:: types, each
// value a vector register, then the last partial vector once more on
// zero-padded loads with partial stores. The vector nodes see the vectors
// vmap1/vmap2 would give them (Note [Vectors as eager forms them]): the
// same whole vectors from the block's start, and in the tail their
// operands' pad lanes set to +0 (cg::zero_pad) as vmap pads them; the
// lane-wise arithmetic does not care what the pad lanes hold. Nothing may
// contract across nodes here either: the values a register run seals are
// sealed here too (GCC's x + x -> x * 2 rewrite is for scalars only, but
// one rule serves both), and so is every vector node's result (its code
// may end in a product). The vector forms compute what the scalar forms
// compute lane by lane (+, -, *, / and sqrt are exactly rounded; a +
// alpha * b contracts in both; the selects make the scalar forms'
// comparisons, NaN's a + b included, and abs clears the sign bit as
// std::fabs does, where vec::abs would keep a -0), so the values are
// eager's (the suites of test_codegen_cpu, special values included).
// Measured on the gelu chain of 2^24 floats at one thread: see
// docs/design/compile.md.
std::vector<std::string> Gen::assemble_steps() {
  auto runnable = [&](const Step& st) {
    return st.reg && (math_dt(st.out.dt) == kFloat || math_dt(st.out.dt) == kDouble);
  };
  // the dtype a step would compute in a vector run (none: it cannot join one)
  auto vec_dt = [&](const Step& st) -> std::optional<ScalarType> {
    if (!st.vnode && (!st.reg || st.vexpr.empty())) return std::nullopt;
    const ScalarType t = st.out.dt;
    if (t != kFloat && t != kDouble) return std::nullopt;
    for (const std::string& r : st.reads)
      if (auto it = block_dt_.find(r); it == block_dt_.end() || it->second != t) return std::nullopt;
    return t;
  };
  // the run of each step (steps of one run share an id; others get their
  // own): vector runs first, then register runs among the other steps
  std::vector<int> run(steps_.size(), -1);
  std::vector<char> vrun(steps_.size(), 0);
  int id = 0;
  for (size_t i = 0; i < steps_.size();) {
    const std::optional<ScalarType> t = vec_dt(steps_[i]);
    if (!t) {
      ++i;
      continue;
    }
    size_t e = i + 1;
    while (e < steps_.size() && vec_dt(steps_[e]) == t) ++e;
    bool node = false;
    for (size_t j = i; j < e; ++j) node |= steps_[j].vnode;
    if (node && e - i > 1) {
      for (size_t j = i; j < e; ++j) run[j] = id, vrun[j] = 1;
      ++id;
    }
    i = e;
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (vrun[i]) continue;
    if (i > 0 && !vrun[i - 1] && runnable(steps_[i]) && runnable(steps_[i - 1]) &&
        math_dt(steps_[i].out.dt) == math_dt(steps_[i - 1].out.dt))
      run[i] = run[i - 1];
    else
      run[i] = id++;
  }
  // which blocks must exist in memory: read by a step of another run, or stored
  std::map<std::string, int> producer;  // block -> its step
  for (size_t i = 0; i < steps_.size(); ++i)
    if (!steps_[i].expr.empty() || vrun[i]) producer[steps_[i].out.name] = static_cast<int>(i);
  std::set<std::string> in_memory;
  for (size_t i = 0; i < steps_.size(); ++i)
    for (const std::string& r : steps_[i].reads)
      if (auto p = producer.find(r); p == producer.end() || run[p->second] != run[i]) in_memory.insert(r);
  // a result only the final store reads goes straight into the tensor when
  // its rows are contiguous in the math type (else into its block, stored
  // as before): a pointer per block, d<j>
  for (auto& [buf, blk] : bufs_.last_write()) {
    if (!in_memory.count(blk.name) && producer.count(blk.name) && (blk.dt == kFloat || blk.dt == kDouble)) {
      const int j = arg_of_geo_.at(bufs_.written_geometry(buf));
      const std::string d = "d" + std::to_string(j), m = math_type(blk.dt), jj = std::to_string(j);
      loads_.push_back(m + "* " + d + " = s" + jj + "_0 == int64_t(sizeof(" + m + ")) ? reinterpret_cast<" + m + "*>(p" +
                       jj + ") : " + blk.name + ";");
      direct_[blk.name] = d;
    }
    in_memory.insert(blk.name);
  }
  for (auto& [name, i] : producer)
    if (!in_memory.count(name)) {
      block_bytes_ -= element_size(math_dt(steps_[i].out.dt));
      registers_only_.insert(name);
    }

  std::vector<std::string> body;
  bool zeros = false;
  // a vector run's loop (Note [Vector runs]): its whole vectors, then the
  // partial last one (`tail`)
  auto vector_run = [&](size_t i, size_t e) {
    const ScalarType t = steps_[i].out.dt;
    const std::string mt = math_type(t), z = t == kFloat ? "z32" : "z64";
    auto text = [&](bool tail) {
      std::set<std::string> regs;
      std::map<std::string, std::string> loaded;  // a block read from memory: its vector, loaded at first use
      std::string c;
      auto ref = [&](const std::string& b) -> std::string {
        if (regs.count(b)) return "r_" + b;
        if (auto it = loaded.find(b); it != loaded.end()) return it->second;
        const std::string x = "x_" + b;
        c += " const V " + x + " = " + (tail ? "cg::load_part(" + b + " + i, m)" : "vec::loadu(" + b + " + i)") + ";";
        return loaded[b] = x;
      };
      for (size_t j = i; j < e; ++j) {
        const Step& st = steps_[j];
        std::string v;
        if (st.vnode) {
          std::string args, params;
          for (size_t a = 0; a < st.vargs.size(); ++a) {
            const std::string r = ref(st.vargs[a]);
            args += (a ? ", " : "") + (tail ? "cg::zero_pad(" + r + ", m)" : r);
            params += a ? ", auto y" : "auto x";
          }
          v = "cg::vseal([&](" + params + ") { using V = decltype(x); (void)sizeof(V); return " + st.vfn + "; }(" + args +
              "), " + z + ")";
        } else {
          v = "cg::vv<V>(" + with_refs(st.vexpr, ref) + ")";
          if (st.sealed) v = "cg::vseal(" + v + ", " + z + ")";
        }
        c += " const V r_" + st.out.name + " = " + v + ";";
        regs.insert(st.out.name);
        if (in_memory.count(st.out.name)) {
          const auto d = direct_.find(st.out.name);
          const std::string dst = (d != direct_.end() ? d->second : st.out.name) + " + i, r_" + st.out.name;
          c += tail ? " cg::store_part(" + dst + ", m);" : " vec::storeu(" + dst + ");";
        }
      }
      return c;
    };
    return std::string(kVectorRun) + " using V = vec::Vec<" + mt + ">; constexpr int64_t N = vec::kLanes<" + mt +
           ">; const int64_t nw = n - n % N; for (int64_t i = 0; i < nw; i += N) { /*pf*/" + text(false) +
           " } if (nw < n) { const int64_t i = nw, m = n - nw;" + text(true) + " } }";
  };
  for (size_t i = 0; i < steps_.size();) {
    size_t e = i + 1;
    while (e < steps_.size() && run[e] == run[i]) ++e;
    if ((e - i > 1 || vrun[i]) && !zeros) {
      zeros = true;
      prelude_.push_back("const uint32_t z32 = cg::opaque<uint32_t>(uint32_t(0)); (void)z32;");
      prelude_.push_back("const uint64_t z64 = cg::opaque<uint64_t>(uint64_t(0)); (void)z64;");
    }
    if (vrun[i]) {
      body.push_back(vector_run(i, e));
    } else if (steps_[i].expr.empty()) {
      body.push_back(steps_[i].code);
    } else {
      // one loop; a block read in the run that an earlier step of the run
      // wrote is its register, any other is memory
      std::set<std::string> regs;
      // ivdep: no iteration depends on another (a tensor read and written
      // in place is read and written at the same i), so GCC need not prove
      // that d<j> and the loaded pointers are apart
      std::string loop = "_Pragma(\"GCC ivdep\") for (int64_t i = 0; i < n; ++i) {";
      for (size_t j = i; j < e; ++j) {
        const Step& st = steps_[j];
        const std::string x =
            with_refs(st.expr, [&](const std::string& b) { return regs.count(b) ? "r_" + b : b + "[i]"; });
        const auto d = direct_.find(st.out.name);
        const std::string dst = d != direct_.end() ? d->second : st.out.name;
        if (e - i == 1) {  // a lone loop: its block, unless nothing reads it
          if (in_memory.count(st.out.name)) loop += " " + dst + "[i] = " + x + ";";
          continue;
        }
        if (st.sealed)  // (a 16-bit result's rounding would do as well)
          loop += std::string(" const ") + math_type(st.out.dt) + " r_" + st.out.name + " = cg::seal(" + x +
                  (math_dt(st.out.dt) == kFloat ? ", z32);" : ", z64);");
        else
          loop += std::string(" const ") + math_type(st.out.dt) + " r_" + st.out.name + " = " + x + ";";
        regs.insert(st.out.name);
        if (in_memory.count(st.out.name)) loop += " " + dst + "[i] = r_" + st.out.name + ";";
      }
      body.push_back(loop + " }");
    }
    // nothing contracts across the loops (their blocks are in memory)
    body.push_back("asm volatile(\"\" ::: \"memory\");");
    i = e;
  }
  return body;
}

// Note [Prefetching in generated kernels]
// On the 2-core Xeon of docs/performance.md one core streams memory at
// half the speed it can when the loads and the stores' line fills are not
// asked for ahead: a copy of 2^24 floats takes 9.8 ms, 4.9 ms with a
// software prefetch of the source and a prefetchw of the destination a
// few KiB ahead, and the compiled gelu chain took the sum of its memory
// time and its arithmetic (16 ms) instead of their maximum. So each block
// of a kernel prefetches, for every operand, the lines cg::kPrefetchAhead
// elements ahead of the one it is at (the next blocks of a row: reading,
// or for writing the lines it will store), one prefetch per operand and
// vector, spread over the kernel's work: inside its first vector-math
// loop (the expensive one: erf, exp, ...), else inside its first scalar
// loop in chunks of 16 elements. All at the start of a block instead (a
// burst of 16-64 prefetches) keeps the line-fill buffers full and gains
// half as much. An operand with a stride over 16 bytes (a column) or 0 (a
// broadcast) prefetches its block's own first element, a hit. Prefetches
// past the end of a tensor do not fault. Values do not change.
std::vector<std::string> Gen::carry_prefetches(const std::vector<std::string>& body) const {
  std::vector<std::string> out = body;
  if (args_.empty()) return out;
  for (std::string& b : out) {
    if (b.rfind(kVectorRun, 0) == 0) {  // a vector run: one per whole vector
      b.replace(b.find("/*pf*/"), 6, "pf(i);");
      return out;
    }
    for (const char* v : {"cg::vmap1(", "cg::vmap2("})
      if (b.rfind(v, 0) == 0) {
        // the vmap's last argument is its lambda: add pf after it
        const size_t close = b.rfind(");");
        if (close == std::string::npos) continue;
        b = b.substr(0, close) + ", pf" + b.substr(close);
        return out;
      }
  }
  const std::string loop = "_Pragma(\"GCC ivdep\") for (int64_t i = 0; i < n; ++i) {";
  for (std::string& b : out)
    if (b.rfind(loop, 0) == 0) {
      // (the chunks cost: calls that do not prefetch run the plain loop)
      b = "if (prefetching) { for (int64_t i0 = 0; i0 < n; i0 += 16) { pf(i0); const int64_t e0 = n - i0 < 16 ? n : i0 + 16; "
          "_Pragma(\"GCC ivdep\") for (int64_t i = i0; i < e0; ++i) {" +
          b.substr(loop.size()) + " } } else { " + b + " }";
      return out;
    }
  return out;
}

void Gen::build(const std::string& name, CpuKernel& kern) {
  if (grp_.nodes.empty()) no("an empty group");
  const Node& first = g_.nodes.at(grp_.nodes[0]);
  if (first.ndim > 2) no("ndim " + std::to_string(first.ndim));
  ndim_ = first.ndim == 0 ? 1 : first.ndim;
  shape_.assign(ndim_, 1);
  for (int d = 0; d < first.ndim; ++d) shape_[d] = first.shape[d];
  std::string ops;
  for (int ni : grp_.nodes) {
    if (ni == grp_.row_node) continue;  // (the row op of a row-fused group runs after the kernel)
    const Node& n = g_.nodes.at(ni);
    if (n.ndim != first.ndim) no("nodes of different ranks");
    for (int d = 0; d < n.ndim; ++d)
      if (n.shape[d] != first.shape[d]) no("nodes of different shapes");
    if (n.noperands < 1 || n.noperands > TensorIter::kMaxOperands) no("operand count");
    node_vec_ = false;
    emit_node(n);
    // Note [Vectors as eager forms them] (cpu_prelude.h): a node eager ran
    // over one dim forms its vectors along the whole range; the kernel forms
    // them along rows, the same vectors only when rows are whole vectors
    if (node_vec_ && n.linear && ndim_ == 2 && shape_[0] % 64 != 0)
      no(n.name + ": a 1-d call viewed as rows of " + std::to_string(shape_[0]) +
         " elements (not a multiple of 64) would form other vectors than eager");
    if (!ops.empty()) ops += "+";
    ops += n.name.empty() ? op_name(n.slot) : n.name;
  }
  if (args_.empty()) no("no buffers");
  const std::vector<std::string> body = assemble_steps();
  // the blocks live on the stack of the calling thread (thread pools' stacks
  // are smaller than the main thread's)
  if (block_bytes_ * 256 > (size_t(256) << 10)) no("the group's blocks take more than 256 KiB (split the group)");
  int64_t block = 256;
  for (int64_t b : {2048, 1024, 512})
    if (b * static_cast<int64_t>(block_bytes_) <= (int64_t(24) << 10)) {
      block = b;
      break;
    }
  if (forced_block_) {
    if (forced_block_ != 256 && forced_block_ != 512 && forced_block_ != 1024 && forced_block_ != 2048)
      no("block size " + std::to_string(forced_block_));
    if (forced_block_ * static_cast<int64_t>(block_bytes_) > (int64_t(128) << 10))
      no("blocks of " + std::to_string(forced_block_) + " elements take more than 128 KiB");
    block = forced_block_;
  }

  // the entry point
  std::ostringstream s;
  const int nd = ndim_;
  s << "extern \"C\" __attribute__((visibility(\"default\"))) void " << name
    << "(char* const* ptrs, const int64_t* strides, const int64_t* shape, int64_t begin, int64_t end) {\n"
    << "  // " << ops << "\n"
    << "  using namespace brisk;\n  using namespace brisk::cpu::BRISK_CPU_ISA;\n"
    << "  constexpr int64_t B = " << block << ";\n  (void)shape;\n";
  for (auto& [blk, d] : decls_)
    if (!registers_only_.count(blk)) s << "  " << d << "\n";
  for (auto& p : prelude_) s << "  " << p << "\n";
  for (size_t j = 0; j < args_.size(); ++j)
    for (int d = 0; d < nd; ++d) s << "  const int64_t s" << j << "_" << d << " = strides[" << j * nd + d << "];\n";
  for (size_t j = 0; j < args_.size(); ++j)
    s << "  const int64_t f" << j << " = cg::prefetch_step(s" << j << "_0, end - begin); (void)f" << j << ";\n";
  {
    std::string any = "  const bool prefetching = (0";
    for (size_t j = 0; j < args_.size(); ++j) any += " | f" + std::to_string(j);
    s << any << ") != 0; (void)prefetching;\n";
  }
  std::string ind = "    ";
  if (nd == 1) {
    // (a prefetching call walks blocks of 256 unless max-autotune chose the
    // block: Note [Prefetching in generated kernels])
    s << (forced_block_ ? "  const int64_t Bs = B;\n" : "  const int64_t Bs = prefetching && B > 256 ? 256 : B;\n")
      << "  for (int64_t b0 = begin; b0 < end; b0 += Bs) {\n"
      << "    const int64_t n = end - b0 < Bs ? end - b0 : Bs;\n";
    for (size_t j = 0; j < args_.size(); ++j)
      s << "    char* p" << j << " = ptrs[" << j << "] + b0 * s" << j << "_0;\n";
  } else {
    // linear positions pos = i0 + shape[0] * i1, a block never crossing a row
    s << "  const int64_t inner = shape[0];\n"
      << "  for (int64_t pos = begin, n = 0; pos < end; pos += n) {\n"
      << "    const int64_t o = pos / inner, b0 = pos - o * inner;\n"
      << "    n = inner - b0 < end - pos ? inner - b0 : end - pos;\n"
      << "    if (n > B) n = B;\n";
    for (size_t j = 0; j < args_.size(); ++j)
      s << "    char* p" << j << " = ptrs[" << j << "] + o * s" << j << "_1 + b0 * s" << j << "_0;\n";
  }
  for (size_t j = 0; j < args_.size(); ++j) s << ind << "(void)p" << j << ";\n";
  const std::vector<std::string> carried = carry_prefetches(body);
  if (carried != body) {
    std::string pf = "const auto pf = [&](int64_t i) {";
    for (size_t j = 0; j < args_.size(); ++j)
      pf += std::string(" prefetch_") + (args_[j].written ? "write" : "read") + "(p" + std::to_string(j) + " + (i + cg::kPrefetchAhead) * f" +
            std::to_string(j) + ");";
    s << ind << pf << " };\n";
  }
  for (auto& l : loads_) s << ind << l << "\n";
  for (auto& b : carried) s << ind << b << "\n";
  for (auto& [buf, blk] : bufs_.last_write()) {
    const int j = arg_of_geo_.at(bufs_.written_geometry(buf));
    if (auto d = direct_.find(blk.name); d != direct_.end()) s << ind << "if (" << d->second << " == " << blk.name << ") ";
    s << ind << "cg::st<" << cpp_type(blk.dt) << ">(p" << j << ", s" << j << "_0, " << blk.name << ", n);\n";
  }
  s << "  }\n}\n";

  kern.name = name;
  kern.body = s.str();
  kern.ndim = nd;
  kern.shape = shape_;
  kern.numel = 1;
  for (int64_t d : shape_) kern.numel *= d;
  kern.args = args_;
  kern.strides.clear();
  for (auto& st : arg_strides_)
    for (int d = 0; d < nd; ++d) kern.strides.push_back(st[d]);
  kern.ops = ops;
  kern.block = block;
}

}  // namespace

CpuCodegen generate_cpu(const Graph& g, const Group& group, const std::string& name, int64_t block) {
  return Gen(g, group, block).run(name);
}

const char* cpu_isa() {
  // the variant register_cpu_kernels installed (backend/cpu/register.cpp)
  static const char* isa = [] {
    const char* cap = cpu::cpu_capability();
#ifdef BRISK_HAVE_ISA_avx512
    if (std::strcmp(cap, "avx512") == 0) return "avx512";
#endif
#ifdef BRISK_HAVE_ISA_avx2
    if (std::strcmp(cap, "avx512") == 0 || std::strcmp(cap, "avx2") == 0) return "avx2";
#endif
    return "base";
  }();
  return isa;
}

namespace {
// The brisk headers the generated code includes (cpu_prelude.h and what it
// includes from brisk; test_codegen_cpu checks the list against the
// compiler's dependency output): their content is part of every cache key.
const char* const kPreludeHeaders[] = {"src/compile/cpu_prelude.h", "src/backend/cpu/vec_math.h",
                                       "src/backend/cpu/vec_tables.h", "src/backend/cpu/vec_composite.h",
                                       "src/backend/cpu/prefetch.h",
                                       "src/kernels/math.h",
                                       "include/brisk/dtype.h", "include/brisk/half.h"};

// Where the prelude headers are: BRISK_CODEGEN_DIR, else the install tree
// next to this library (<prefix>/share/brisk/codegen, installed by
// CMakeLists.txt), else the source tree the library was built from.
std::string find_codegen_dir() {
  auto has_prelude = [](const std::string& d) {
    FILE* f = std::fopen((d + "/" + kPreludeHeaders[0]).c_str(), "rb");
    if (f) std::fclose(f);
    return f != nullptr;
  };
  if (const char* e = std::getenv("BRISK_CODEGEN_DIR"); e && *e) return e;
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&find_codegen_dir), &info) && info.dli_fname) {
    std::string lib = info.dli_fname;
    const size_t slash = lib.rfind('/');
    if (slash != std::string::npos) {
#ifdef BRISK_CODEGEN_REL_TO_LIB
      const std::string d = lib.substr(0, slash) + "/" + BRISK_CODEGEN_REL_TO_LIB;
      if (has_prelude(d)) return d;
#endif
    }
  }
  return BRISK_SOURCE_DIR;
}

const std::string& prelude_hash() {
  static const std::string h = hash_files(cpu_prelude_headers(), "generated CPU kernels");
  return h;
}
}  // namespace

const std::string& codegen_dir() {
  static const std::string d = find_codegen_dir();
  return d;
}

std::vector<std::string> cpu_prelude_headers() {
  std::vector<std::string> v;
  for (const char* f : kPreludeHeaders) v.push_back(codegen_dir() + "/" + f);
  return v;
}

const std::vector<std::string>& cpu_compile_flags() {
  static const std::vector<std::string> flags = [] {
    std::vector<std::string> f = {"-std=c++20"};
#ifdef BRISK_CODEGEN_OPT_FLAGS
    {  // the eager kernel files' optimization level (debug info left out: compile time)
      std::istringstream in(BRISK_CODEGEN_OPT_FLAGS);
      for (std::string w; in >> w;)
        if (w.rfind("-g", 0) != 0) f.push_back(w);
    }
#else
    f.push_back("-O3");
#endif
    for (const char* w : {"-fwrapv", "-fvisibility=hidden", "-w"}) f.push_back(w);
    const std::string isa = cpu_isa();
    const char* isa_flags = "";
#ifdef BRISK_CODEGEN_ISA_FLAGS_avx512
    if (isa == "avx512") isa_flags = BRISK_CODEGEN_ISA_FLAGS_avx512;
#endif
#ifdef BRISK_CODEGEN_ISA_FLAGS_avx2
    if (isa == "avx2") isa_flags = BRISK_CODEGEN_ISA_FLAGS_avx2;
#endif
    std::istringstream in(isa_flags);
    // The eager kernel files prefer 256-bit vectors for their plain loops;
    // the generated ones take 512 (their vector math is 512-bit already):
    // the gelu chain 10.4-11.0 -> 9.6-10.1 ms on 2^24 floats. Values do not
    // depend on the width (no reduction is vectorized without
    // -ffast-math; contraction is decided per expression).
    for (std::string w; in >> w;) f.push_back(w == "-mprefer-vector-width=256" ? "-mprefer-vector-width=512" : w);
    f.push_back("-DBRISK_CPU_ISA=" + isa);
    f.push_back("-DBRISK_PRELUDE_HASH=" + prelude_hash());  // the headers' content, in the key
    f.push_back("-I" + codegen_dir() + "/src");
    f.push_back("-I" + codegen_dir() + "/include");
#ifdef BRISK_CODEGEN_SLEEF_INCLUDE
    f.push_back(std::string("-I") + BRISK_CODEGEN_SLEEF_INCLUDE);
#endif
#ifdef BRISK_CODEGEN_SLEEF_LIBRARY
    f.push_back(BRISK_CODEGEN_SLEEF_LIBRARY);
#else
    f.push_back("-lsleef");
#endif
    return f;
  }();
  return flags;
}

std::string cpu_translation_unit(const std::vector<const CpuKernel*>& kernels) {
  std::string s = "// generated by brisk::compile (src/compile/codegen_cpu.cpp)\n#include \"compile/cpu_prelude.h\"\n\n";
  for (const CpuKernel* k : kernels) s += k->body + "\n";
  return s;
}

std::vector<CpuKernelFn> load_cpu_kernels(const std::vector<const CpuKernel*>& kernels) {
  // the prelude precompiled once per cache (a third of a cold compile otherwise)
  std::vector<std::string> pch;
  if (const char* e = std::getenv("BRISK_COMPILE_PCH"); !(e && std::strcmp(e, "0") == 0)) {
    const std::string dir = precompiled_header_dir(codegen_dir() + "/" + kPreludeHeaders[0],
                                                   "compile/cpu_prelude.h", cpu_compile_flags(), cpu_isa(),
                                                   prelude_hash());
    if (!dir.empty()) pch.push_back("-I" + dir);
  }
  const SharedObject& so = compile_shared_object(cpu_translation_unit(kernels), cpu_compile_flags(), cpu_isa(), pch);
  std::vector<CpuKernelFn> fns;
  for (const CpuKernel* k : kernels) fns.push_back(reinterpret_cast<CpuKernelFn>(symbol(so, k->name.c_str())));
  return fns;
}

void run_cpu_kernel(const CpuKernel& k, CpuKernelFn fn, char* const* base) {
  char* ptrs[64];
  std::vector<char*> heap;
  char** p = ptrs;
  if (k.args.size() > 64) {
    heap.resize(k.args.size());
    p = heap.data();
  }
  for (size_t j = 0; j < k.args.size(); ++j) p[j] = base[k.args[j].buf] + k.args[j].offset;
  const int64_t* st = k.strides.data();
  const int64_t* sh = k.shape.data();
  if (k.ndim == 2 && k.shape[1] > 1) {  // whole rows per thread (split points at row starts)
    const int64_t s0 = k.shape[0];
    parallel_for(0, k.shape[1], std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s0, 1)),
                 [&](int64_t r0, int64_t r1) { fn(p, st, sh, r0 * s0, r1 * s0); });
  } else {  // pieces of 64 elements
    const int64_t units = (k.numel + 63) / 64;
    parallel_for(0, units, kGrainSize / 64,
                 [&](int64_t u0, int64_t u1) { fn(p, st, sh, u0 * 64, std::min(u1 * 64, k.numel)); });
  }
}

CpuGraphKernels build_cpu_kernels(const Graph& g, bool singles, bool variants) {
  CpuGraphKernels out;
  out.code.resize(g.groups.size());
  out.fns.assign(g.groups.size(), nullptr);
  out.variants.resize(g.groups.size());
  out.variant_fns.resize(g.groups.size());
  const bool compiler = have_compiler();
  std::vector<const CpuKernel*> ks;
  std::vector<size_t> which;
  for (size_t i = 0; i < g.groups.size(); ++i) {
    const Group& grp = g.groups[i];
    if (!grp.fused() && !singles) {
      out.code[i].reason = "a single call (the eager kernel runs it)";
      continue;
    }
    if (!compiler) {
      out.code[i].reason = "no C++ compiler (" + compiler_command() + ")";
      continue;
    }
    out.code[i] = generate_cpu(g, grp, "brisk_g" + std::to_string(i));
    if (out.code[i].ok) {
      ks.push_back(&out.code[i].kernel);
      which.push_back(i);
      if (variants)
        for (int64_t b : {256, 512, 1024, 2048}) {
          // the default kernel serves as the variant of its own block only
          // at 256: a larger default walks a prefetching call in blocks of
          // 256 (Note [Prefetching in generated kernels]), a forced block
          // does not
          if (b == out.code[i].kernel.block && b == 256) {
            out.variants[i].push_back(out.code[i].kernel);
            continue;
          }
          CpuCodegen v = generate_cpu(g, grp, "brisk_g" + std::to_string(i) + "_b" + std::to_string(b), b);
          if (v.ok) out.variants[i].push_back(std::move(v.kernel));
        }
    }
  }
  // (the variants go into the same unit, after the default kernels)
  std::vector<std::pair<size_t, size_t>> variant_at;  // (group, variant) of ks entries past the defaults
  const size_t n_default = ks.size();
  for (size_t i = 0; i < g.groups.size(); ++i) {
    out.variant_fns[i].assign(out.variants[i].size(), nullptr);
    for (size_t v = 0; v < out.variants[i].size(); ++v)
      if (out.variants[i][v].name != out.code[i].kernel.name) {
        ks.push_back(&out.variants[i][v]);
        variant_at.push_back({i, v});
      }
  }
  if (ks.empty()) return out;
  // Groups that do the same work on other buffers (an optimizer's update of
  // each parameter) have the same body but for the name: one function
  // serves them all, so the unit holds each distinct body once.
  std::unordered_map<std::string, size_t> first_of;  // body with the name blanked -> index in ks
  std::vector<const CpuKernel*> unique;
  std::vector<size_t> slot(ks.size());
  for (size_t k = 0; k < ks.size(); ++k) {
    std::string key = ks[k]->body;
    for (size_t pos = key.find(ks[k]->name); pos != std::string::npos; pos = key.find(ks[k]->name, pos + 1))
      key.replace(pos, ks[k]->name.size(), "@");
    auto [it, fresh] = first_of.try_emplace(std::move(key), unique.size());
    if (fresh) unique.push_back(ks[k]);
    slot[k] = it->second;
  }
  std::vector<CpuKernelFn> fns = load_cpu_kernels(unique);
  for (size_t k = 0; k < which.size(); ++k) out.fns[which[k]] = fns[slot[k]];
  for (size_t k = n_default; k < ks.size(); ++k)
    out.variant_fns[variant_at[k - n_default].first][variant_at[k - n_default].second] = fns[slot[k]];
  for (size_t i = 0; i < g.groups.size(); ++i)
    for (size_t v = 0; v < out.variants[i].size(); ++v)
      if (out.variants[i][v].name == out.code[i].kernel.name) out.variant_fns[i][v] = out.fns[i];
  return out;
}

}  // namespace jit
}  // namespace brisk
