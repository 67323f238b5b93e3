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
#include <set>
#include <sstream>
#include <tuple>

#include "brisk/error.h"
#include "compile/group_buffers.h"
#include "compile/toolchain.h"
#include "core/parallel.h"

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
// take at most 24 KiB, half of a 48 KiB L1 (measured: the gelu chain's six
// blocks run 1.5x faster at 1024 elements than at 256, the plain-op Adam's
// seventeen 1.5x slower at 512 than at 256).
// Per block it loads each external operand into a block of its math type
// (float for float16/bfloat16, as the eager kernels compute), runs each node
// as a loop over the block writing a block of its own, and stores the
// results that leave the group. The blocks live in L1; no intermediate
// touches memory.
//
// Bit equality with the eager kernels rests on four rules:
//  - Each node's loop is the eager kernel's lambda, the same expression (so
//    GCC contracts a * b + c into an FMA exactly where the eager kernel file
//    does: both are compiled with the same ISA flags, -O3 and the default
//    -ffp-contract=fast), and vector ops call the same vec:: functions at the
//    same vector width (the variant eager picked at start-up).
//  - Nothing contracts across nodes: a node's result is a block in memory
//    and an asm memory barrier separates the nodes' loops.
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
    bool scalar = false;  // one value (a constant operand), not a block
  };
  [[noreturn]] static void no(const std::string& why) { throw Unsupported{why}; }

  const Graph& g_;
  const Group& grp_;
  int64_t forced_block_ = 0;
  int ndim_ = 1;
  std::vector<int64_t> shape_;
  std::vector<CpuKernelArg> args_;
  std::vector<std::array<int64_t, 2>> arg_strides_;
  std::vector<std::string> decls_, prelude_, body_;
  int nconst_ = 0, nblocks_ = 0;
  size_t block_bytes_ = 0;  // the kernel's stack blocks, bytes per element of a block

  std::string new_block(ScalarType dt, const std::string& prefix) {
    block_bytes_ += element_size(math_dt(dt));
    const std::string n = prefix + std::to_string(nblocks_++);
    decls_.push_back(std::string("alignas(64) ") + math_type(dt) + " " + n + "[B];");
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
    // the loaded block: a pointer into the tensor when it is contiguous in
    // the math type and the block is whole vectors, else a copy
    const std::string jj = std::to_string(j);
    const std::string m = math_type(op.dtype), s = cpp_type(op.dtype);
    decls_.push_back("alignas(64) " + m + " lb" + jj + "[B];");
    block_bytes_ += element_size(math_dt(op.dtype));
    std::string code;
    if (math_dt(op.dtype) == op.dtype && op.dtype != kBool)
      code = "const " + m + "* l" + jj + " = (s" + jj + "_0 == int64_t(sizeof(" + s + ")) && (n & 15) == 0) ? reinterpret_cast<const " +
             m + "*>(p" + jj + ") : (cg::ld<" + s + ">(lb" + jj + ", p" + jj + ", s" + jj + "_0, n), lb" + jj + ");";
    else
      code = "const " + m + "* l" + jj + " = (cg::ld<" + s + ">(lb" + jj + ", p" + jj + ", s" + jj + "_0, n), lb" + jj + ");";
    loads_.push_back(code);
    Block b{"l" + jj, op.dtype};
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
  /// out[i] = to<S>(M(expr)) with a, b, c standing for the operands' blocks at i.
  void scalar_loop(const Block& o, const std::string& expr) {
    body_.push_back("for (int64_t i = 0; i < n; ++i) " + o.name + "[i] = cg::to<" + cpp_type(o.dt) + ">(static_cast<" +
                    math_type(o.dt) + ">(" + expr + "));");
  }
  void vec_loop1(const Block& o, const Block& a0, const std::string& fexpr) {
    const Block a = vec_src(a0);
    body_.push_back("cg::vmap1(" + o.name + ", " + a.name + ", n, [&](auto x) { using V = decltype(x); (void)sizeof(V); return " + fexpr + "; });");
    node_vec_ = true;
    round16(o);
  }
  void vec_loop2(const Block& o, const Block& a0, const Block& b0, const std::string& fexpr) {
    // a constant operand is a filled block: the partial last vector is
    // padded with zeros in both operands, as vec_binary_kernel pads it
    const Block a = vec_src(a0), b = vec_src(b0);
    body_.push_back("cg::vmap2(" + o.name + ", " + a.name + ", " + b.name +
                    ", n, [&](auto x, auto y) { using V = decltype(x); (void)sizeof(V); return " + fexpr + "; });");
    node_vec_ = true;
    round16(o);
  }
  void round16(const Block& o) {
    if (o.dt == kHalf || o.dt == kBFloat16)
      body_.push_back("for (int64_t i = 0; i < n; ++i) " + o.name + "[i] = cg::to<" + cpp_type(o.dt) + ">(" + o.name + "[i]);");
  }
  std::string k(const std::string& lit, ScalarType mdt) {
    const std::string name = "k" + std::to_string(nconst_++);
    prelude_.push_back(std::string("const ") + math_type(mdt) + " " + name + " = " + lit + ";");
    return name;
  }
  static std::string at(const Block& b) { return b.scalar ? b.name : b.name + "[i]"; }
  /// The operand of a vector loop: a block (a constant is spread into one).
  Block vec_src(const Block& b) {
    if (!b.scalar) return b;
    const std::string n = b.name + "_b";
    if (spread_.insert(n).second) {
      decls_.push_back(std::string("alignas(64) ") + math_type(b.dt) + " " + n + "[B];");
      prelude_.push_back("cg::fill(" + n + ", " + b.name + ", B);");
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
        scalar_loop(o, at(a));
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
      scalar_loop(o, v);
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
        scalar_loop(o, at(a) + " * " + at(b));
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
        if (unit)
          scalar_loop(o, at(a) + " + " + at(b));
        else
          scalar_loop(o, at(a) + " + " + k(scalar_lit(n.args.s0, dt0), math_dt(dt0)) + " * " + at(b));
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
      else if (n.args.mode == 0)
        scalar_loop(o, at(a) + " / " + at(b));
      else
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
      scalar_loop(o, std::string(n.slot == OpId::minimum ? "math::minimum(" : "math::maximum(") + at(a) + ", " + at(b) + ")");
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
        scalar_loop(o, "math::lerp(" + at(a) + ", " + at(b) + ", " + k(scalar_lit(n.args.s0, dt0), math_dt(dt0)) + ")");
        return commit(o);
      }
      need(4);
      same_dtypes(n, 1, 4, dt0);
      Block a = input(n, 1), b = input(n, 2), c = input(n, 3);
      Block o = output(n);
      scalar_loop(o, "math::lerp(" + at(a) + ", " + at(b) + ", " + at(c) + ")");
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
      scalar_loop(o, at(a) + " + " + v + " * " + at(b) + (n.slot == OpId::addcmul ? " * " : " / ") + at(c));
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
        scalar_loop(o, "math::minimum(math::maximum(" + at(a) + ", " + lo + "), " + hi + ")");
      } else if (n.args.has_s0) {
        scalar_loop(o, "math::maximum(" + at(a) + ", " + k(scalar_lit(n.args.s0, dt0), m) + ")");
      } else {
        scalar_loop(o, "math::minimum(" + at(a) + ", " + k(scalar_lit(n.args.s1, dt0), m) + ")");
      }
      return commit(o);
    }
    case OpId::clamp_tensor: {
      need(4);
      numeric(dt0);
      same_dtypes(n, 1, 4, dt0);
      Block a = input(n, 1), b = input(n, 2), c = input(n, 3);
      Block o = output(n);
      scalar_loop(o, "math::minimum(math::maximum(" + at(a) + ", " + at(b) + "), " + at(c) + ")");
      return commit(o);
    }
    case OpId::where: {
      need(4);
      if (n.ops[1].dtype != kBool) no("where with a " + dn((n.ops[1].dtype)) + " condition");
      same_dtypes(n, 2, 4, dt0);
      Block c = input(n, 1), a = input(n, 2), b = input(n, 3);
      Block o = output(n);
      scalar_loop(o, at(c) + " ? " + at(a) + " : " + at(b));
      return commit(o);
    }
    case OpId::threshold_backward: {
      need(3);
      float_only(dt0);
      same_dtypes(n, 1, 3, dt0);
      Block gr = input(n, 1), x = input(n, 2);
      Block o = output(n);
      const ScalarType m = math_dt(dt0);
      scalar_loop(o, at(x) + " <= " + k(scalar_lit(n.args.s0, dt0), m) + " ? " + math_type(dt0) + "(0) : " + at(gr));
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
      scalar_loop(o, "cg::isclose(" + at(a) + ", " + at(b) + ", " + k(scalar_lit(n.args.s0, t), m) + ", " +
                         k(scalar_lit(n.args.s1, t), m) + ", " + (n.args.mode != 0 ? "true" : "false") + ")");
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
        const char* f = nullptr;
        if (e == 2) f = "x * x";
        else if (e == 3) f = "x * x * x";
        else if (e == 0.5) f = "vec::sqrt(x)";
        else if (e == -0.5) f = "cg::one<V>() / vec::sqrt(x)";
        else if (e == -1) f = "cg::one<V>() / x";
        else if (e == -2) f = "cg::one<V>() / (x * x)";
        if (f) {
          vec_loop2(o, a, b, std::string("((void)y, ") + f + ")");
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
        case UnaryMode::exp: vec_expr = "vec::exp(x)"; break;
        case UnaryMode::exp2: vec_expr = "vec::exp2(x)"; break;
        case UnaryMode::log: vec_expr = "vec::log(x)"; break;
        case UnaryMode::log2: vec_expr = "vec::log2(x)"; break;
        case UnaryMode::log10: vec_expr = "vec::log10(x)"; break;
        case UnaryMode::log1p: vec_expr = "vec::log1p_fast(x)"; break;
        case UnaryMode::expm1: vec_expr = "vec::expm1(x)"; break;
        case UnaryMode::sqrt: vec_expr = "vec::sqrt(x)"; break;
        case UnaryMode::rsqrt: vec_expr = "cg::one<V>() / vec::sqrt(x)"; break;
        case UnaryMode::reciprocal: vec_expr = "cg::one<V>() / x"; break;
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
        scalar_loop(o, e);
      } else if (mode == UnaryMode::logit) {
        const double eps = n.args.has_s0 ? n.args.s0.to<double>() : -1.0;
        if (eps < 0) {
          vec_loop1(o, a, "cg::logit_v(x)");
        } else {
          // eager: M lo = M(eps), hi = M(1) - M(eps)
          const ScalarType m = math_dt(t);
          std::string lo, hi;
          if (m == kFloat) {
            lo = k(lit_bits(static_cast<float>(eps)), m);
            hi = k(lit_bits(1.0f - static_cast<float>(eps)), m);
          } else {
            lo = k(lit_bits(eps), m);
            hi = k(lit_bits(1.0 - eps), m);
          }
          vec_loop1(o, a, "cg::logit_eps_v(x, vec::splat<V>(" + lo + "), vec::splat<V>(" + hi + "))");
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
    body_.push_back("asm volatile(\"\" ::: \"memory\");");
    if (!ops.empty()) ops += "+";
    ops += n.name.empty() ? op_name(n.slot) : n.name;
  }
  if (args_.empty()) no("no buffers");
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
  for (auto& d : decls_) s << "  " << d << "\n";
  for (auto& p : prelude_) s << "  " << p << "\n";
  for (size_t j = 0; j < args_.size(); ++j)
    for (int d = 0; d < nd; ++d) s << "  const int64_t s" << j << "_" << d << " = strides[" << j * nd + d << "];\n";
  std::string ind = "    ";
  if (nd == 1) {
    s << "  for (int64_t b0 = begin; b0 < end; b0 += B) {\n"
      << "    const int64_t n = end - b0 < B ? end - b0 : B;\n";
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
  for (auto& l : loads_) s << ind << l << "\n";
  for (auto& b : body_) s << ind << b << "\n";
  for (auto& [buf, blk] : bufs_.last_write()) {
    const int j = arg_of_geo_.at(bufs_.written_geometry(buf));
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
                                       "src/backend/cpu/vec_composite.h", "src/kernels/math.h",
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
    for (std::string w; in >> w;) f.push_back(w);
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
          if (b == out.code[i].kernel.block) {
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
      if (out.variants[i][v].block != out.code[i].kernel.block) {
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
      if (out.variants[i][v].block == out.code[i].kernel.block) out.variant_fns[i][v] = out.fns[i];
  return out;
}

}  // namespace jit
}  // namespace brisk
