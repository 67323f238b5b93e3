// CUDA code generation for fused groups of elementwise kernel calls.
#include "compile/codegen_cuda.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <tuple>

#include "brisk/error.h"
#include "compile/codegen_cpu.h"
#include "compile/group_buffers.h"
#include "compile/toolchain.h"
#include "kernels/math.h"

namespace brisk::jit {

// Note [Generated CUDA kernels]
// A fused group becomes one __global__ function: a grid-stride loop over the
// group's iteration space (1 or 2 dims; strides and sizes are arguments, so
// one function serves every shape of the same ops and dtypes), and per
// element: load each operand the group reads from memory, run each call as
// the eager CUDA kernel would (the same device functor,
// src/backend/cuda/pointwise_ops.cuh, with the same mode and scalars the
// host side of that kernel picks, on values converted to and from the
// storage dtype as loops.cuh converts them), keep each result in a
// register, and store the results that leave the group. Internal temps
// never touch memory.
//
// Bit equality with the eager kernels rests on:
//  - one definition of each op: the generated code calls the eager kernel's
//    functor, compiled by NVRTC with nvcc's defaults (FMA contraction on,
//    IEEE division and square root, denormals kept), for the device's
//    architecture;
//  - a result is rounded to its storage dtype (from_math) before another
//    call reads it (to_math), as the eager store and load do;
//  - nothing contracts across calls: each float result passes through
//    cg::seal (an add of -0 in inline PTX with explicit rounding), which
//    neither NVVM nor ptxas can fuse with the multiply before it.
// The host-side choices of the eager kernels are mirrored here: add's unit
// alpha, pow with a host exponent of 2 over one dim (x * x), bitwise_not of
// bool, logit's missing eps. NaN payloads may differ (a sealed NaN is quiet).
// The GPU test (tests/cuda/test_cuda_compile.cpp) compares every op row
// against eager; tests/compile/test_codegen_cuda.cpp compiles the generated
// source of every row with NVRTC where NVRTC is installed, GPU or not.

namespace {

const char* dev_type(ScalarType t) {
  switch (t) {
    case kBool: return "bool";
    case kUInt8: return "uint8_t";
    case kInt8: return "int8_t";
    case kInt16: return "int16_t";
    case kInt32: return "int32_t";
    case kInt64: return "int64_t";
    case kHalf: return "__half";
    case kBFloat16: return "__nv_bfloat16";
    case kFloat: return "float";
    case kDouble: return "double";
    default: return nullptr;
  }
}
/// brisk's C++ type of a dtype (ArithOp's T).
const char* host_type(ScalarType t) {
  if (t == kHalf) return "brisk::Half";
  if (t == kBFloat16) return "brisk::BFloat16";
  return dev_type(t);
}
bool is_float_dt(ScalarType t) { return t == kFloat || t == kDouble || t == kHalf || t == kBFloat16; }
ScalarType math_dt(ScalarType t) { return (t == kHalf || t == kBFloat16) ? kFloat : t; }
const char* math_type(ScalarType t) { return dev_type(math_dt(t)); }
std::string dn(ScalarType t) { return std::string(dtype_name(t)); }

/// A value of math dtype m, exactly (bit patterns for floats).
template <class T>
std::string lit(const T& v) {
  char buf[80];
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, float>) {
    std::snprintf(buf, sizeof(buf), "__int_as_float(0x%08" PRIx32 ")", std::bit_cast<uint32_t>(v));
  } else if constexpr (std::is_same_v<T, double>) {
    std::snprintf(buf, sizeof(buf), "__longlong_as_double(0x%016" PRIx64 "LL)", std::bit_cast<uint64_t>(v));
  } else {
    using U = std::make_unsigned_t<T>;
    std::snprintf(buf, sizeof(buf), "static_cast<%s>(0x%" PRIx64 "ULL)", dev_type(dtype_of<T>), uint64_t(U(v)));
  }
  return buf;
}
/// Scalar s as the eager kernel reads it: s.to<M>() with M the math type of
/// storage dtype st.
std::string scalar_lit(const Scalar& s, ScalarType st) {
  switch (math_dt(st)) {
    case kBool: return lit(s.to<bool>());
    case kUInt8: return lit(s.to<uint8_t>());
    case kInt8: return lit(s.to<int8_t>());
    case kInt16: return lit(s.to<int16_t>());
    case kInt32: return lit(s.to<int32_t>());
    case kInt64: return lit(s.to<int64_t>());
    case kFloat: return lit(s.to<float>());
    case kDouble: return lit(s.to<double>());
    default: return "";
  }
}
/// A value of dtype t stored as `bytes` (its storage bits), as device code
/// of that storage type.
std::string bits_lit(const void* bytes, ScalarType t) {
  uint64_t bits = 0;
  std::memcpy(&bits, bytes, element_size(t));
  char buf[96];
  std::snprintf(buf, sizeof(buf), "cg::from_bits<%s>(0x%" PRIx64 "ULL)", dev_type(t), bits);
  return buf;
}
/// Scalar s stored in dtype t (fill_'s a.s0.to<scalar_t>()), as device code.
std::string stored_lit(const Scalar& s, ScalarType t) {
  char b[8] = {};
  switch (t) {
    case kBool: { bool v = s.to<bool>(); std::memcpy(b, &v, 1); break; }
    case kUInt8: { uint8_t v = s.to<uint8_t>(); std::memcpy(b, &v, 1); break; }
    case kInt8: { int8_t v = s.to<int8_t>(); std::memcpy(b, &v, 1); break; }
    case kInt16: { int16_t v = s.to<int16_t>(); std::memcpy(b, &v, 2); break; }
    case kInt32: { int32_t v = s.to<int32_t>(); std::memcpy(b, &v, 4); break; }
    case kInt64: { int64_t v = s.to<int64_t>(); std::memcpy(b, &v, 8); break; }
    case kHalf: { Half v = s.to<Half>(); std::memcpy(b, &v, 2); break; }
    case kBFloat16: { BFloat16 v = s.to<BFloat16>(); std::memcpy(b, &v, 2); break; }
    case kFloat: { float v = s.to<float>(); std::memcpy(b, &v, 4); break; }
    case kDouble: { double v = s.to<double>(); std::memcpy(b, &v, 8); break; }
    default: return "";
  }
  return bits_lit(b, t);
}

struct Unsupported {
  std::string why;
};

class Gen {
 public:
  Gen(const Graph& g, const Group& grp, int max_lanes) : g_(g), grp_(grp), bufs_(grp), max_lanes_(max_lanes) {}

  CudaCodegen run(const std::string& name) {
    CudaCodegen r;
    try {
      build(name, r.kernel);
      r.ok = true;
    } catch (const Unsupported& u) {
      r.ok = false;
      r.reason = u.why;
      r.kernel = CudaKernel{};
    }
    return r;
  }

 private:
  /// A value in a register: a variable of storage dtype dt.
  struct Val {
    std::string name;
    ScalarType dt;
  };
  using Geo = OperandGeometry;
  [[noreturn]] static void no(const std::string& why) { throw Unsupported{why}; }

  const Graph& g_;
  const Group& grp_;
  int ndim_ = 1;
  std::vector<CudaKernelArg> args_;
  GroupBuffers<Val> bufs_;
  std::map<Geo, int> arg_of_geo_;
  std::map<Geo, Val> loaded_;
  int max_lanes_ = 1;
  /// A line of the per-element body, by what it is (the kernel emits each
  /// lane's loads and constants, then the calls, then the stores).
  enum class Line { Comment, Value, Call, Store };
  std::vector<std::pair<Line, std::string>> body_;
  int nvals_ = 0;
  Geo pending_geo_{};

  Geo geo(const Operand& op) const { return geometry_of(op, ndim_); }
  int arg_for(const Geo& gm) {
    auto it = arg_of_geo_.find(gm);
    if (it != arg_of_geo_.end()) return it->second;
    CudaKernelArg a;
    a.buf = gm.buf;
    a.offset = gm.offset;
    a.dtype = gm.dt;
    a.s0 = gm.s0;
    a.s1 = gm.s1;
    args_.push_back(a);
    return arg_of_geo_[gm] = static_cast<int>(args_.size()) - 1;
  }
  static std::string addr(int j) {
    const std::string jj = std::to_string(j);
    return "a.p[" + jj + "] + I0$ * a.s0[" + jj + "] + I1$ * a.s1[" + jj + "]";
  }

  /// Operand k's value (a load, a constant, or an earlier call's result).
  Val input(const Node& n, int k) {
    const Operand& op = n.ops[k];
    if (!dev_type(op.dtype)) no("operand dtype " + dn(op.dtype));
    if (op.is_const()) {
      const std::string v = "c" + std::to_string(nvals_++) + "$";
      body_.emplace_back(Line::Value,
                         "const " + std::string(dev_type(op.dtype)) + " " + v + " = " + bits_lit(op.scalar, op.dtype) + ";");
      return {v, op.dtype};
    }
    if (op.buf < 0 || op.buf >= static_cast<int>(g_.bufs.size())) no("operand of an unknown buffer");
    const Geo gm = geo(op);
    std::string why;
    if (const Val* v = bufs_.read(gm, why)) return *v;
    if (!why.empty()) no(why);
    if (auto it = loaded_.find(gm); it != loaded_.end()) return it->second;
    const int j = arg_for(gm);
    args_[j].read = true;
    const std::string v = "l" + std::to_string(j) + "$";
    body_.emplace_back(Line::Value, "const " + std::string(dev_type(op.dtype)) + " " + v + " = cg::ld<" +
                                        dev_type(op.dtype) + ">(" +
                    addr(j) + ");");
    return loaded_[gm] = Val{v, op.dtype};
  }
  /// to_math of a value (the functor's argument).
  static std::string m(const Val& v) { return "to_math(" + v.name + ")"; }

  void begin_output(const Node& n) {
    const Operand& op = n.ops[0];
    if (op.is_const()) no("a call writes a constant");
    if (op.buf < 0 || op.buf >= static_cast<int>(g_.bufs.size())) no("a call writes an unknown buffer");
    if (!dev_type(op.dtype)) no("output dtype " + dn(op.dtype));
    const Geo gm = geo(op);
    if (std::string why = bufs_.check_write(gm); !why.empty()) no(why);
    pending_geo_ = gm;
  }
  /// The call's result: `expr` (a value of dtype dt's storage type).
  void commit(const Node& n, const std::string& expr) {
    const ScalarType dt = n.ops[0].dtype;
    const std::string v = "t" + std::to_string(nvals_++) + "$";
    body_.emplace_back(Line::Call, "const " + std::string(dev_type(dt)) + " " + v + " = cg::seal(" + expr + ");");
    if (bufs_.wrote(pending_geo_, Val{v, dt})) args_[arg_for(pending_geo_)].written = true;
  }
  /// from_math<S_out>(functor(inputs...)) with each input converted to math.
  void call(const Node& n, const std::string& functor, std::initializer_list<int> operands) {
    std::vector<Val> in;
    for (int k : operands) in.push_back(input(n, k));
    begin_output(n);
    std::string e = "from_math<" + std::string(dev_type(n.ops[0].dtype)) + ">(" + functor + "(";
    bool first = true;
    for (const Val& v : in) {
      e += (first ? "" : ", ") + m(v);
      first = false;
    }
    commit(n, e + "))");
  }
  void need(const Node& n, int nops) {
    if (n.noperands != nops) no(n.name + ": " + std::to_string(n.noperands) + " operands");
  }
  void same_dtypes(const Node& n, int from, int to_excl, ScalarType t) {
    for (int i = from; i < to_excl; ++i)
      if (n.ops[i].dtype != t) no(n.name + ": operand " + std::to_string(i) + " is " + dn(n.ops[i].dtype) + ", expected " + dn(t));
  }
  static std::string arith(ScalarType t, const char* mode, const std::string& s) {
    return std::string("ArithOp<") + math_type(t) + ", " + host_type(t) + ">{Arith::" + mode + ", " + s + "}";
  }
  static std::string zero(ScalarType t) { return scalar_lit(Scalar(0), t); }
  /// Whether the eager kernel saw one dim (its host-side checks look at it.ndim == 1).
  static bool recorded_1d(const Node& n) { return n.linear || (n.ndim == 1 && !n.zero_dim); }

  void emit_node(const Node& n);
  void build(const std::string& name, CudaKernel& kern);
};

void Gen::emit_node(const Node& n) {
  if (n.opaque()) no(n.name + ": not an elementwise kernel call");
  const ScalarType dt0 = n.ops[0].dtype;
  switch (n.slot) {
    case OpId::copy: {
      need(n, 2);
      const ScalarType in = n.ops[1].dtype;
      Val a = input(n, 1);
      begin_output(n);
      if (in == dt0)
        commit(n, a.name);
      else  // loops.cuh's AnyDtype load (the static float <-> 16-bit paths compute the same)
        commit(n, "from_math<" + std::string(dev_type(dt0)) + ">(static_cast<math_t<" + dev_type(dt0) + ">>(" + m(a) + "))");
      return;
    }
    case OpId::fill: {
      need(n, 1);
      begin_output(n);
      return commit(n, stored_lit(n.args.s0, dt0));
    }
    case OpId::add: {
      need(n, 3);
      same_dtypes(n, 1, 3, dt0);
      bool unit = dt0 == kBool;
      switch (math_dt(dt0)) {
        case kFloat: unit = n.args.s0.to<float>() == 1.0f; break;
        case kDouble: unit = n.args.s0.to<double>() == 1.0; break;
        case kUInt8: unit = n.args.s0.to<uint8_t>() == 1; break;
        case kInt8: unit = n.args.s0.to<int8_t>() == 1; break;
        case kInt16: unit = n.args.s0.to<int16_t>() == 1; break;
        case kInt32: unit = n.args.s0.to<int32_t>() == 1; break;
        case kInt64: unit = n.args.s0.to<int64_t>() == 1; break;
        case kBool: break;
        default: no("add on " + dn(dt0));
      }
      return call(n, arith(dt0, unit ? "Add" : "AddAlpha", scalar_lit(n.args.s0, dt0)), {1, 2});
    }
    case OpId::mul:
    case OpId::remainder:
    case OpId::fmod:
    case OpId::minimum:
    case OpId::maximum:
    case OpId::atan2: {
      need(n, 3);
      same_dtypes(n, 1, 3, dt0);
      const char* mode = n.slot == OpId::mul         ? "Mul"
                         : n.slot == OpId::remainder ? "Remainder"
                         : n.slot == OpId::fmod      ? "Fmod"
                         : n.slot == OpId::minimum   ? "Minimum"
                         : n.slot == OpId::maximum   ? "Maximum"
                                                     : "Atan2";
      return call(n, arith(dt0, mode, zero(dt0)), {1, 2});
    }
    case OpId::binary_math: {
      need(n, 3);
      same_dtypes(n, 1, 3, dt0);
      static const char* modes[] = {"Hypot", "LogAddExp", "LogAddExp2", "Copysign", "Nextafter", "Xlogy", "Heaviside"};
      static_assert(std::size(modes) == static_cast<size_t>(math::BinaryMath::kNumModes));
      if (n.args.mode < 0 || n.args.mode >= static_cast<int>(math::BinaryMath::kNumModes)) no("binary_math mode");
      return call(n, arith(dt0, modes[n.args.mode], zero(dt0)), {1, 2});
    }
    case OpId::div: {
      need(n, 3);
      same_dtypes(n, 1, 3, dt0);
      const char* mode = n.args.mode == 1 ? "DivTrunc" : n.args.mode == 2 ? "DivFloor" : "Div";
      return call(n, arith(dt0, mode, zero(dt0)), {1, 2});
    }
    case OpId::pow: {
      need(n, 3);
      same_dtypes(n, 1, 3, dt0);
      // pow_kernel: a host exponent of 2 over one dim runs as x * x (and
      // bfloat16's 3 and -2 in bfloat16 steps)
      bool square = false;
      if (recorded_1d(n) && n.ops[2].is_const() && n.ops[2].strides[0] == 0) {
        double e = 0;
        switch (dt0) {
          case kHalf: { Half h; std::memcpy(&h, n.ops[2].scalar, 2); e = static_cast<float>(h); break; }
          case kBFloat16: { BFloat16 h; std::memcpy(&h, n.ops[2].scalar, 2); e = static_cast<float>(h); break; }
          case kFloat: { float f; std::memcpy(&f, n.ops[2].scalar, 4); e = f; break; }
          case kDouble: std::memcpy(&e, n.ops[2].scalar, 8); break;
          case kUInt8: e = *reinterpret_cast<const uint8_t*>(n.ops[2].scalar); break;
          case kInt8: e = *reinterpret_cast<const int8_t*>(n.ops[2].scalar); break;
          case kInt16: { int16_t v; std::memcpy(&v, n.ops[2].scalar, 2); e = v; break; }
          case kInt32: { int32_t v; std::memcpy(&v, n.ops[2].scalar, 4); e = v; break; }
          case kInt64: { int64_t v; std::memcpy(&v, n.ops[2].scalar, 8); e = static_cast<double>(v); break; }
          default: no("pow on " + dn(dt0));
        }
        square = e == 2.0;
        if (dt0 == kBFloat16 && (e == 3.0 || e == -2.0))
          return call(n, arith(dt0, e == 3.0 ? "CubeSteps" : "InvSquareSteps", zero(dt0)), {1, 2});
      }
      return call(n, arith(dt0, square ? "Square" : "Pow", zero(dt0)), {1, 2});
    }
    case OpId::bitwise: {
      need(n, 3);
      same_dtypes(n, 1, 3, dt0);
      static const char* modes[] = {"BitAnd", "BitOr", "BitXor", "ShiftLeft", "ShiftRight"};
      if (n.args.mode < 0 || n.args.mode > 4) no("bitwise mode");
      return call(n, arith(dt0, modes[n.args.mode], zero(dt0)), {1, 2});
    }
    case OpId::threshold_backward: {
      need(n, 3);
      same_dtypes(n, 1, 3, dt0);
      return call(n, arith(dt0, "ThresholdBackward", scalar_lit(n.args.s0, dt0)), {1, 2});
    }
    case OpId::activation_backward:  // ActGradOp / ActOp with the mode as a template argument
    case OpId::activation: {
      const bool grad = n.slot == OpId::activation_backward;
      const int arity = grad ? 3 : 2;
      need(n, arity);
      same_dtypes(n, 1, arity, dt0);
      const int nmodes = grad ? static_cast<int>(math::ActGrad::kNumModes) : static_cast<int>(math::Act::kNumModes);
      if (n.args.mode < 0 || n.args.mode >= nmodes) no(grad ? "activation gradient mode" : "activation mode");
      const std::string md = std::to_string(n.args.mode);
      const std::string functor = std::string(grad ? "ActGradOp<" : "ActOp<") + math_type(dt0) + ", " + md + ">{" +
                                  md + ", " + scalar_lit(n.args.s0, dt0) + ", " + scalar_lit(n.args.s1, dt0) + ", " +
                                  scalar_lit(n.args.s2, dt0) + "}";
      return grad ? call(n, functor, {1, 2}) : call(n, functor, {1});
    }
    case OpId::lerp: {
      if (n.args.has_s0) {
        need(n, 3);
        same_dtypes(n, 1, 3, dt0);
        return call(n, arith(dt0, "Lerp", scalar_lit(n.args.s0, dt0)), {1, 2});
      }
      need(n, 4);
      same_dtypes(n, 1, 4, dt0);
      return call(n, std::string("TernaryOp<") + math_type(dt0) + ">{Ternary::Lerp, " + zero(dt0) + "}", {1, 2, 3});
    }
    case OpId::addcmul:
    case OpId::addcdiv:
    case OpId::clamp_tensor: {
      need(n, 4);
      same_dtypes(n, 1, 4, dt0);
      const char* mode = n.slot == OpId::addcmul ? "Addcmul" : n.slot == OpId::addcdiv ? "Addcdiv" : "Clamp";
      const std::string v = n.slot == OpId::clamp_tensor ? zero(dt0) : scalar_lit(n.args.s0, dt0);
      return call(n, std::string("TernaryOp<") + math_type(dt0) + ">{Ternary::" + mode + ", " + v + "}", {1, 2, 3});
    }
    case OpId::compare:
    case OpId::logical:
    case OpId::isclose: {
      need(n, 3);
      const ScalarType t = n.ops[1].dtype;
      if (dt0 != kBool) no(n.name + " into " + dn(dt0));
      same_dtypes(n, 1, 3, t);
      const std::string M = math_type(t);
      // PredOp<M>::tol_t: M for floats, double otherwise
      const ScalarType tol = is_float_dt(t) ? math_dt(t) : kDouble;
      std::string pred, rtol = zero(tol), atol = zero(tol), eq_nan = "false";
      if (n.slot == OpId::compare) {
        static const char* ops[] = {"Eq", "Ne", "Lt", "Le", "Gt", "Ge"};
        if (n.args.mode < 0 || n.args.mode > 5) no("compare mode");
        pred = ops[n.args.mode];
      } else if (n.slot == OpId::logical) {
        static const char* ops[] = {"And", "Or", "Xor"};
        if (n.args.mode < 0 || n.args.mode > 2) no("logical mode");
        pred = ops[n.args.mode];
      } else {
        pred = "IsClose";
        rtol = scalar_lit(Scalar(n.args.s0.to_double()), tol);
        atol = scalar_lit(Scalar(n.args.s1.to_double()), tol);
        eq_nan = n.args.mode != 0 ? "true" : "false";
      }
      if (pred == "IsClose" && !is_float_dt(t)) no("isclose of " + dn(t));  // the front end casts to float
      return call(n, "PredOp<" + M + ", " + host_type(t) + ">{Pred::" + pred + ", " + rtol + ", " + atol + ", " +
                         eq_nan + "}",
                  {1, 2});
    }
    case OpId::where: {
      need(n, 4);
      if (n.ops[1].dtype != kBool) no("where with a " + dn(n.ops[1].dtype) + " condition");
      same_dtypes(n, 2, 4, dt0);
      return call(n, std::string("WhereOp<") + math_type(dt0) + ">{}", {1, 2, 3});
    }
    case OpId::gelu:
    case OpId::softplus:
    case OpId::clamp: {
      need(n, 2);
      same_dtypes(n, 1, 2, dt0);
      std::string mode, a = zero(dt0), b = zero(dt0);
      if (n.slot == OpId::gelu) {
        mode = n.args.mode == 1 ? "kGeluTanh" : "kGeluErf";
      } else if (n.slot == OpId::softplus) {
        mode = "kSoftplus";
        a = scalar_lit(n.args.s0, dt0);
        b = scalar_lit(n.args.s1, dt0);
      } else {
        mode = n.args.has_s0 && n.args.has_s1 ? "kClampBoth" : n.args.has_s0 ? "kClampMin" : "kClampMax";
        if (n.args.has_s0) a = scalar_lit(n.args.s0, dt0);
        if (n.args.has_s1) b = scalar_lit(n.args.s1, dt0);
      }
      // (the mode as a template argument too: NVRTC instantiates that case alone)
      return call(n, std::string("UnaryOp<") + math_type(dt0) + ", " + mode + ">{" + mode + ", " + a + ", " + b + "}", {1});
    }
    case OpId::unary: {
      need(n, 2);
      const ScalarType t = n.ops[1].dtype;
      const auto mode = static_cast<UnaryMode>(n.args.mode);
      if (n.args.mode < 0 || mode >= UnaryMode::kNumModes) no("unary mode");
      const std::string M = math_type(t), md = std::to_string(n.args.mode);
      if (mode == UnaryMode::logical_not || mode == UnaryMode::isnan || mode == UnaryMode::isinf ||
          mode == UnaryMode::isfinite) {
        if (dt0 != kBool) no(n.name + " into " + dn(dt0));
        return call(n, "UnaryPredOp<" + M + ">{" + md + "}", {1});
      }
      if (mode == UnaryMode::bitwise_not && t == kBool) {
        if (dt0 != kBool) no(n.name + " into " + dn(dt0));
        return call(n, "UnaryPredOp<bool>{" + std::to_string(static_cast<int>(UnaryMode::logical_not)) + "}", {1});
      }
      same_dtypes(n, 1, 2, dt0);
      std::string a = zero(t), b = zero(t);
      if (mode == UnaryMode::logit) {  // the bounds (eager: s0, s1; none: -1, 1)
        a = n.args.has_s0 ? scalar_lit(n.args.s0, t) : scalar_lit(Scalar(-1.0), t);
        b = n.args.has_s1 ? scalar_lit(n.args.s1, t) : scalar_lit(Scalar(1.0), t);
      }
      if (mode == UnaryMode::polygamma) {  // n
        if (!n.args.has_s0) no("polygamma without n");
        a = scalar_lit(n.args.s0, t);
      }
      return call(n, "UnaryOp<" + M + ", " + md + ">{" + md + ", " + a + ", " + b + "}", {1});
    }
    default:
      no(std::string("slot ") + op_name(n.slot));
  }
}

void Gen::build(const std::string& name, CudaKernel& kern) {
  if (grp_.nodes.empty()) no("an empty group");
  if (grp_.row_node >= 0) no("a row-fused group");
  const Node& first = g_.nodes.at(grp_.nodes[0]);
  if (first.ndim > 2) no("ndim " + std::to_string(first.ndim));
  ndim_ = first.ndim == 0 ? 1 : first.ndim;
  kern.n0 = first.ndim >= 1 ? first.shape[0] : 1;
  kern.n1 = first.ndim >= 2 ? first.shape[1] : 1;
  std::string ops;
  for (int ni : grp_.nodes) {
    const Node& n = g_.nodes.at(ni);
    if (n.ndim != first.ndim) no("calls of different ranks");
    for (int d = 0; d < n.ndim; ++d)
      if (n.shape[d] != first.shape[d]) no("calls of different shapes");
    if (n.noperands < 1 || n.noperands > TensorIter::kMaxOperands) no("operand count");
    body_.emplace_back(Line::Comment, "// " + (n.name.empty() ? std::string(op_name(n.slot)) : n.name));
    emit_node(n);
    if (!ops.empty()) ops += "+";
    ops += n.name.empty() ? op_name(n.slot) : n.name;
  }
  if (args_.empty()) no("no buffers");
  if (args_.size() > 64) no("more than 64 operands");
  for (auto& [buf, v] : bufs_.last_write()) {
    const int j = arg_of_geo_.at(bufs_.written_geometry(buf));
    body_.emplace_back(Line::Store, "cg::st<" + std::string(dev_type(v.dt)) + ">(" + addr(j) + ", " + v.name + ");");
  }
  // Note [Lanes of a generated kernel]: each thread computes L elements per
  // iteration of the grid-stride loop, i, i + step, ..., i + (L-1) * step
  // (coalesced across the warp for each lane), with every lane's loads
  // first, then every lane's calls, then the stores: L independent loads of
  // each operand in flight per thread instead of one, which is what a
  // memory-bound chain needs to approach the copy bandwidth (one lane gave
  // 0.47 of it on an H200). A lane past the end reads element i and stores
  // nothing. Per element the code is the same expressions in the same order
  // (bit-equal to the one-lane form); L shrinks for long groups to bound the
  // registers. Names carry a '$' that becomes the lane's suffix. Four lanes
  // make NVRTC's cold compile of a short chain 1.4x slower (0.086 -> 0.123 s
  // here, over the 0.1 s), so the default mode generates one lane and
  // CompileMode::MaxAutotune up to four (not timed against each other yet:
  // that needs a GPU run; bench/cuda measures both forms).
  int lines = 0;
  for (const auto& [kind, b] : body_) lines += kind == Line::Comment ? 0 : 1;
  const int L = std::min(max_lanes_, lines <= 48 ? 4 : lines <= 120 ? 2 : 1);
  auto lane = [](const std::string& line, int k) {
    std::string out;
    for (char c : line) {
      if (c == '$')
        out += "_" + std::to_string(k);
      else
        out += c;
    }
    return out;
  };
  std::ostringstream s;
  s << "extern \"C\" __global__ void __launch_bounds__(256) " << name << "(const brisk::cg::Args<" << args_.size()
    << "> a) {\n"
    << "  // " << ops << "\n"
    << "  using namespace brisk;\n  using namespace brisk::cuda::detail;\n"
    << "  cg::for_each_lanes<" << L << ">(a.n0, a.n1, [&](const long long* i0, const long long* i1, const bool* v) {\n";
  for (int k = 0; k < L; ++k)
    s << "    const long long I0_" << k << " = i0[" << k << "], I1_" << k << " = i1[" << k << "];\n";
  for (int k = 0; k < L; ++k)  // loads and constants
    for (const auto& [kind, b] : body_)
      if (kind == Line::Value) s << "    " << lane(b, k) << "\n";
  for (int k = 0; k < L; ++k)  // the calls (the comments naming them once)
    for (const auto& [kind, b] : body_)
      if (kind == Line::Call || (k == 0 && kind == Line::Comment)) s << "    " << lane(b, k) << "\n";
  for (int k = 0; k < L; ++k)  // the stores
    for (const auto& [kind, b] : body_)
      if (kind == Line::Store) s << "    if (v[" << k << "]) " << lane(b, k) << "\n";
  s << "  });\n}\n";
  // the host entry of tests/compile/cuda_host_emulation.h (not seen by NVRTC)
  s << "#ifdef BRISK_CUDA_HOST_EMULATION\nextern \"C\" void " << name << "_host(const void* a) { " << name
    << "(*static_cast<const brisk::cg::Args<" << args_.size() << ">*>(a)); }\n#endif\n";
  kern.name = name;
  kern.body = s.str();
  kern.args = args_;
  kern.ops = ops;
  kern.lanes = L;
}

const char* const kCudaPreludeHeaders[] = {
    "src/compile/cuda_prelude.cuh", "src/backend/cuda/pointwise_ops.cuh", "src/backend/cuda/device_types.cuh",
    "src/kernels/functors.h",       "src/kernels/math.h",                 "include/brisk/half.h",
    "include/brisk/detail/unary_ops.h", "src/compile/nvrtc_std/cmath",    "src/compile/nvrtc_std/cstdint",
    "src/compile/nvrtc_std/cstring", "src/compile/nvrtc_std/limits",      "src/compile/nvrtc_std/type_traits"};

}  // namespace

std::string cuda_toolkit_include_dir() {
  auto has = [](const std::string& d) {
    FILE* f = std::fopen((d + "/cuda_fp16.h").c_str(), "rb");
    if (f) std::fclose(f);
    return f != nullptr;
  };
  for (const char* e : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(e); v && *v && has(std::string(v) + "/include")) return std::string(v) + "/include";
#ifdef BRISK_CUDA_INCLUDE_DIR
  if (has(BRISK_CUDA_INCLUDE_DIR)) return BRISK_CUDA_INCLUDE_DIR;
#endif
  return "/usr/local/cuda/include";
}

CudaCodegen generate_cuda(const Graph& g, const Group& group, const std::string& name, int max_lanes) {
  return Gen(g, group, max_lanes).run(name);
}

std::string cuda_translation_unit(const std::vector<const CudaKernel*>& kernels) {
  std::string s = "// generated by brisk::compile (src/compile/codegen_cuda.cpp)\n#include \"compile/cuda_prelude.cuh\"\n\n";
  for (const CudaKernel* k : kernels) s += k->body + "\n";
  return s;
}

std::vector<std::string> cuda_prelude_headers() {
  std::vector<std::string> v;
  for (const char* f : kCudaPreludeHeaders) v.push_back(codegen_dir() + "/" + f);
  return v;
}

std::vector<std::string> cuda_include_options() {
  const std::string tk = cuda_toolkit_include_dir();
  return {"-I" + codegen_dir() + "/src/compile/nvrtc_std", "-I" + codegen_dir() + "/src", "-I" + codegen_dir() + "/include",
          "-I" + tk + "/cccl", "-I" + tk};
}

namespace {
const CudaJit* g_cuda_jit = nullptr;
}
const CudaJit* cuda_jit() { return g_cuda_jit; }
void set_cuda_jit(const CudaJit* j) { g_cuda_jit = j; }

std::vector<CudaGroupKernel> build_cuda_kernels(const Graph& g, int max_lanes) {
  std::vector<CudaGroupKernel> out(g.groups.size());
  const CudaJit* jit = cuda_jit();
  std::map<std::string, std::string> name_of_body;  // groups with the same ops share a kernel
  std::vector<const CudaKernel*> unique;
  std::vector<std::string> names;
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    if (!g.groups[gi].fused()) continue;
    CudaCodegen c = generate_cuda(g, g.groups[gi], "brisk_cuda_k", max_lanes);
    if (c.ok) {
      auto it = name_of_body.find(c.kernel.body);
      if (it == name_of_body.end()) {
        const std::string nm = "brisk_cuda_k" + std::to_string(unique.size());
        it = name_of_body.emplace(c.kernel.body, nm).first;
        c.kernel.name = nm;
        // (the body names its function, and its host entry, "brisk_cuda_k")
        std::string& b = c.kernel.body;
        for (size_t p = b.find("brisk_cuda_k"); p != std::string::npos; p = b.find("brisk_cuda_k", p + nm.size()))
          b.replace(p, 12, nm);
        out[gi].code = std::move(c);
        unique.push_back(&out[gi].code.kernel);
        names.push_back(nm);
        continue;
      }
      c.kernel.name = it->second;
    }
    out[gi].code = std::move(c);
  }
  if (unique.empty() || !jit) return out;
  const std::string cubin = jit->compile(cuda_translation_unit(unique), "");
  const std::vector<void*> fns = jit->load(cubin, names);
  std::map<std::string, void*> by_name;
  for (size_t i = 0; i < names.size(); ++i) by_name[names[i]] = fns[i];
  for (auto& k : out)
    if (k.code.ok) k.fn = by_name.at(k.code.kernel.name);
  return out;
}

void run_cuda_kernel(const CudaGroupKernel& k, char* const* base) {
  const CudaKernel& kern = k.code.kernel;
  const int64_t total = kern.n0 * kern.n1;
  if (total == 0) return;
  const size_t na = kern.args.size();  // at most 64 (the generator's bound)
  // brisk::cg::Args<N>: N pointers, N inner strides, N outer strides, n0, n1
  int64_t block[3 * 64 + 2];
  for (size_t j = 0; j < na; ++j) {
    const CudaKernelArg& a = kern.args[j];
    char* p = base[a.buf] + a.offset;
    std::memcpy(&block[j], &p, sizeof(p));
    block[na + j] = a.s0;
    block[2 * na + j] = a.s1;
  }
  block[3 * na] = kern.n0;
  block[3 * na + 1] = kern.n1;
  // the grid of total / lanes threads: each thread takes `lanes` elements per
  // iteration (a grid of total threads would leave lanes 1.. past the end)
  cuda_jit()->launch(k.fn, (total + kern.lanes - 1) / kern.lanes, block, (3 * na + 2) * sizeof(int64_t));
}

}  // namespace brisk::jit
