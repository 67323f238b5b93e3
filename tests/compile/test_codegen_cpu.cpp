// compile's CPU code generator (src/compile/codegen_cpu.cpp) and toolchain
// (src/compile/toolchain.cpp): generated kernels of fused groups against the
// eager kernels, bit for bit, and the disk cache.
//
// The graphs are built here without compile's tracer: Recorder runs each op
// as its front end does (an IterBuilder configured as in src/ops/*.cpp, then
// the kernel slot), records the TensorIter as a Node, and keeps the eager
// result as the reference.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "brisk/brisk.h"
#include "compile/codegen_cpu.h"
#include "compile/toolchain.h"
#include "compile/trace.h"
#include "core/dispatch.h"
#include "core/tensor_iter.h"
#include "private_compile_cache.h"
#include "test_util.h"

namespace brisk::jit {
namespace {

// A private cache directory for this test binary.
const std::string& test_cache_dir() { return testing::private_compile_cache("brisk_codegen_test"); }
const auto* const g_env = ::testing::AddGlobalTestEnvironment(new testing::PrivateCompileCache("brisk_codegen_test"));

/// Builds a graph from eager op calls (see the file comment).
struct Recorder {
  Graph g;
  struct Span {
    char* base;
    size_t nbytes;
    Tensor keep;
    std::vector<char> before;  // the bytes when registered
  };
  std::vector<Span> spans;

  int buffer(const Tensor& t, BufKind kind) {
    StorageImpl* s = t.impl()->storage.get();
    char* base = static_cast<char*>(s->data);
    for (size_t b = 0; b < spans.size(); ++b)
      if (spans[b].base == base) return static_cast<int>(b);
    Buffer buf;
    buf.kind = kind;
    buf.tensor = t;
    buf.nbytes = static_cast<int64_t>(s->nbytes);
    buf.dtype = t.dtype();
    if (kind == BufKind::Input) buf.input = static_cast<int>(g.inputs.size());
    g.bufs.push_back(buf);
    spans.push_back({base, s->nbytes, t, std::vector<char>(base, base + s->nbytes)});
    return static_cast<int>(spans.size()) - 1;
  }
  int input(const Tensor& t) { return buffer(t, BufKind::Input); }
  int find(const char* p) const {
    for (size_t b = 0; b < spans.size(); ++b)
      if (p >= spans[b].base && p < spans[b].base + spans[b].nbytes) return static_cast<int>(b);
    return -1;
  }

  /// Runs the kernel of `slot` on the iterator `b` builds, as run<> in
  /// src/ops/binary.cpp does, and records it.
  Tensor run(OpId slot, const char* name, IterBuilder& b, const KernelArgs& args) {
    TensorIter it;
    b.build(it);
    EXPECT_FALSE(it.staging.defined()) << name << ": the test recorder does not follow staging copies";
    Node n;
    n.slot = slot;
    n.name = name;
    n.args = args;
    n.ndim = it.ndim;
    n.numel = it.numel;
    n.compute_dtype = it.compute_dtype;
    n.noperands = it.noperands;
    for (int d = 0; d < it.ndim; ++d) n.shape[d] = it.shape[d];
    for (int k = 0; k < it.noperands; ++k) {
      Operand& op = n.ops[k];
      op.dtype = it.dtypes[k];
      const char* p = it.data[k];
      if (p >= it.scalar_buf[k] && p < it.scalar_buf[k] + 16) {
        op.buf = -1;
        std::memcpy(op.scalar, p, 16);
        continue;
      }
      int buf = find(p);
      if (buf < 0 && k == 0) buf = buffer(it.result, BufKind::Temp);
      EXPECT_GE(buf, 0) << name << ": operand " << k << " is not a recorded tensor";
      op.buf = buf;
      op.offset = p - spans[buf].base;
      for (int d = 0; d < it.ndim; ++d) op.strides[d] = it.strides[k][d];
    }
    auto fn = reinterpret_cast<ElementwiseFn>(detail::g_kernel_table[static_cast<int>(slot)][static_cast<int>(kCPU)]);
    fn(it, args);
    it.finish();
    g.nodes.push_back(n);
    return std::move(it.result);
  }

  // front ends (as in src/ops/*.cpp)
  Tensor binary(OpId slot, const char* name, const Tensor& a, const Tensor& b, KernelArgs args = {},
                bool int_to_float = false, ScalarType out = ScalarType::Undefined) {
    IterBuilder it(name);
    it.input(a).input(b);
    if (int_to_float) it.promote_int_to_float();
    if (out != ScalarType::Undefined) it.output_dtype(out);
    return run(slot, name, it, args);
  }
  Tensor binary(OpId slot, const char* name, const Tensor& a, const Scalar& b, KernelArgs args = {},
                bool int_to_float = false, ScalarType out = ScalarType::Undefined) {
    IterBuilder it(name);
    it.input(a).input(b);
    if (int_to_float) it.promote_int_to_float();
    if (out != ScalarType::Undefined) it.output_dtype(out);
    return run(slot, name, it, args);
  }
  Tensor add(const Tensor& a, const Tensor& b, double alpha = 1) {
    KernelArgs k;
    k.s0 = alpha;
    return binary(OpId::add, "add", a, b, k);
  }
  Tensor add(const Tensor& a, const Scalar& b) {
    KernelArgs k;
    k.s0 = Scalar(int64_t(1));
    return binary(OpId::add, "add", a, b, k);
  }
  Tensor mul(const Tensor& a, const Tensor& b) { return binary(OpId::mul, "mul", a, b); }
  Tensor mul(const Tensor& a, const Scalar& b) { return binary(OpId::mul, "mul", a, b); }
  template <class B>
  Tensor div(const Tensor& a, const B& b, int mode = 0) {
    KernelArgs k;
    k.mode = mode;
    return binary(OpId::div, "div", a, b, k, mode == 0);
  }
  Tensor unary(UnaryMode m, const Tensor& x, bool predicate = false, bool numeric = false) {
    IterBuilder it(unary_mode_name(m));
    it.input(x);
    if (predicate)
      it.output_dtype(kBool);
    else if (!numeric)
      it.promote_int_to_float();
    KernelArgs k;
    k.mode = static_cast<int>(m);
    return run(OpId::unary, unary_mode_name(m), it, k);
  }
  /// A unary mode with parameters: polygamma's n (s0), logit's bounds (s0, s1).
  Tensor unary_args(UnaryMode m, const Tensor& x, KernelArgs k) {
    IterBuilder it(unary_mode_name(m));
    it.input(x);
    it.promote_int_to_float();
    k.mode = static_cast<int>(m);
    return run(OpId::unary, unary_mode_name(m), it, k);
  }
  Tensor gelu(const Tensor& x, bool tanh_approx) {
    IterBuilder it("gelu");
    it.input(x);
    KernelArgs k;
    k.mode = tanh_approx;
    return run(OpId::gelu, "gelu", it, k);
  }
  Tensor compare(CompareMode m, const Tensor& a, const Tensor& b) {
    KernelArgs k;
    k.mode = static_cast<int>(m);
    return binary(OpId::compare, "compare", a, b, k, false, kBool);
  }
  Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
    IterBuilder it("where");
    it.input(c, false).input(a).input(b);
    it.compute_dtype(promote_types(a.dtype(), b.dtype()));
    return run(OpId::where, "where", it, KernelArgs{});
  }
  Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
    IterBuilder it("clamp");
    it.input(x);
    it.compute_dtype(x.dtype());
    KernelArgs a;
    if (lo) a.s0 = *lo, a.has_s0 = true;
    if (hi) a.s1 = *hi, a.has_s1 = true;
    return run(OpId::clamp, "clamp", it, a);
  }
  Tensor copy(const Tensor& dst, const Tensor& src) {
    IterBuilder it("copy_");
    it.output(dst).input(src).no_cast_inputs();
    run(OpId::copy, "copy_", it, KernelArgs{});
    return dst;
  }
  Tensor ternary(OpId slot, const char* name, const Tensor& a, const Tensor& b, const Tensor& c, KernelArgs args = {}) {
    IterBuilder it(name);
    it.input(a).input(b).input(c);
    return run(slot, name, it, args);
  }

  /// The group of all recorded nodes; temps not in `keep` are internal.
  Group group(std::initializer_list<Tensor> keep = {}) const {
    Group grp;
    for (size_t i = 0; i < g.nodes.size(); ++i) grp.nodes.push_back(static_cast<int>(i));
    for (size_t b = 0; b < g.bufs.size(); ++b) {
      if (g.bufs[b].kind != BufKind::Temp) continue;
      bool kept = false;
      for (const Tensor& t : keep) kept |= t.impl()->storage->data == spans[b].base;
      if (!kept) grp.internal.push_back(static_cast<int>(b));
    }
    return grp;
  }
};

/// NaN results compare equal whatever their sign and payload: which NaN
/// operand x86 propagates depends on the register order the compiler picks
/// for a commutative operation, which neither side controls.
bool both_nan(ScalarType dt, const char* a, const char* b) {
  auto nan = [&](const char* p) {
    switch (dt) {
      case kFloat: { float v; std::memcpy(&v, p, 4); return v != v; }
      case kDouble: { double v; std::memcpy(&v, p, 8); return v != v; }
      case kHalf: { Half v; std::memcpy(&v, p, 2); return float(v) != float(v); }
      case kBFloat16: { BFloat16 v; std::memcpy(&v, p, 2); return float(v) != float(v); }
      default: return false;
    }
  };
  return nan(a) && nan(b);
}

/// Runs the generated kernel of `grp` on fresh copies of the buffers (as
/// they were before the eager run; temps zero) and compares every
/// materialized buffer with the eager result, byte for byte. `splits` > 1
/// also runs the range in that many pieces from several threads.
::testing::AssertionResult check_group(const Recorder& r, const Group& grp, int splits = 1) {
  CpuCodegen cg = generate_cpu(r.g, grp);
  if (!cg.ok) return ::testing::AssertionFailure() << "not generated: " << cg.reason;
  CpuKernelFn fn = load_cpu_kernel(cg.kernel);
  const CpuKernel& k = cg.kernel;
  std::vector<std::vector<char>> work(r.spans.size());
  for (size_t b = 0; b < r.spans.size(); ++b) {
    work[b] = r.g.bufs[b].kind == BufKind::Temp ? std::vector<char>(r.spans[b].nbytes, 0) : r.spans[b].before;
  }
  std::vector<char*> ptrs;
  for (const auto& a : k.args) ptrs.push_back(work[a.buf].data() + a.offset);
  if (splits <= 1) {
    fn(ptrs.data(), k.strides.data(), k.shape.data(), 0, k.numel);
  } else {
    std::vector<std::thread> ts;
    // split points at row start + a multiple of 64 (codegen_cpu.h)
    auto point = [&](int s) {
      const int64_t p = k.numel * s / splits, s0 = k.shape[0];
      if (s == splits) return k.numel;
      return p / s0 * s0 + std::min(s0, (p % s0) / 64 * 64);
    };
    for (int s = 0; s < splits; ++s) {
      const int64_t b0 = point(s), b1 = point(s + 1);
      ts.emplace_back([&, b0, b1] { fn(ptrs.data(), k.strides.data(), k.shape.data(), b0, b1); });
    }
    for (auto& t : ts) t.join();
  }
  for (const auto& a : k.args) {
    if (!a.written) continue;
    const Recorder::Span& sp = r.spans[a.buf];
    const char* want = sp.base;
    const char* got = work[a.buf].data();
    if (std::memcmp(want, got, sp.nbytes) != 0) {
      const size_t es = element_size(a.dtype);
      for (size_t i = 0; i < sp.nbytes; i += es)
        if (std::memcmp(want + i, got + i, es) != 0 && !both_nan(a.dtype, want + i, got + i)) {
          double w = 0, gv = 0;
          if (a.dtype == kFloat) w = *reinterpret_cast<const float*>(want + i), gv = *reinterpret_cast<const float*>(got + i);
          if (a.dtype == kDouble) w = *reinterpret_cast<const double*>(want + i), gv = *reinterpret_cast<const double*>(got + i);
          return ::testing::AssertionFailure() << "buffer " << a.buf << " (" << a.dtype << ") element " << i / es
                                               << ": generated " << gv << ", eager " << w << " (" << k.ops << ")\n"
                                               << k.body;
        }
    }
  }
  return ::testing::AssertionSuccess();
}

/// Values with the special cases at the front: nan, +-inf, +-0, denormals,
/// huge and tiny, then normal values in [-lim, lim].
Tensor test_values(int64_t n, ScalarType dt, double lim = 6, uint64_t seed = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-lim, lim);
  Tensor t = empty({n}, TensorOptions(kDouble));
  double* p = t.data_ptr<double>();
  const double den = dt == kFloat ? 1e-40 : 1e-310;
  const double specials[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, den, -den, 1e30, -1e30, 1e-30, 88.5, -88.5, 0.5, -3.25, 700, -720};
  for (int64_t i = 0; i < n; ++i) p[i] = i < 16 && i * 7 % 3 == 0 ? specials[i] : u(rng);
  // a few specials scattered through the tail too
  if (n > 40) p[n - 1] = NAN, p[n - 2] = -0.0, p[n / 2] = INFINITY;
  for (int64_t i = 0; i < std::min<int64_t>(n, 16); ++i)
    if (i * 7 % 3 != 0) p[i] = specials[i];
  return t.to(dt);
}

const int64_t kSizes[] = {1, 7, 16, 17, 1000, (1 << 16) + 3};

class CodegenCpu : public ::testing::Test {
 protected:
  void SetUp() override {
    set_num_threads(1);
    if (!have_compiler()) GTEST_SKIP() << "no C++ compiler: " << compiler_command();
  }
};

// ---- the gelu chain of issue 15 ---------------------------------------------------
TEST_F(CodegenCpu, GeluChainBitEqual) {
  for (ScalarType dt : {kFloat, kDouble})
    for (int64_t n : kSizes) {
      Recorder r;
      Tensor x = test_values(n, dt, 8);
      r.input(x);
      Tensor a = r.mul(x, Scalar(0.5));
      Tensor b = r.div(x, Scalar(1.41421));
      Tensor e = r.unary(UnaryMode::erf, b);
      Tensor c = r.add(e, Scalar(1.0));
      Tensor y = r.mul(a, c);
      // the recorder ran what the public ops run
      Tensor ref = x * 0.5 * (1.0 + erf(x / 1.41421));
      ASSERT_EQ(std::memcmp(ref.data_ptr(), y.data_ptr(), n * element_size(dt)), 0);
      EXPECT_TRUE(check_group(r, r.group({y}))) << dt << " n=" << n;
      if (n > 1000) EXPECT_TRUE(check_group(r, r.group({y}), 3)) << "split";
    }
}

TEST_F(CodegenCpu, KeepsIntermediateResults) {
  Recorder r;
  Tensor x = test_values(1000, kFloat);
  r.input(x);
  Tensor a = r.mul(x, x);
  Tensor b = r.unary(UnaryMode::sigmoid, a);
  Tensor c = r.add(b, x, 2.5);
  EXPECT_TRUE(check_group(r, r.group({a, c})));  // a materialized too
}

// ---- every supported unary mode, alone and after a mul ------------------------------
TEST_F(CodegenCpu, UnaryOpsBitEqual) {
  const UnaryMode modes[] = {UnaryMode::neg,   UnaryMode::abs,     UnaryMode::sign,    UnaryMode::exp,
                             UnaryMode::exp2,  UnaryMode::log,     UnaryMode::log2,    UnaryMode::log10,
                             UnaryMode::log1p, UnaryMode::expm1,   UnaryMode::sqrt,    UnaryMode::rsqrt,
                             UnaryMode::square, UnaryMode::reciprocal, UnaryMode::sin, UnaryMode::cos,
                             UnaryMode::tan,   UnaryMode::asin,    UnaryMode::acos,    UnaryMode::atan,
                             UnaryMode::sinh,  UnaryMode::cosh,    UnaryMode::tanh,    UnaryMode::asinh,
                             UnaryMode::acosh, UnaryMode::atanh,   UnaryMode::sigmoid, UnaryMode::erf,
                             UnaryMode::erfc,  UnaryMode::erfinv,  UnaryMode::lgamma,  UnaryMode::digamma,
                             UnaryMode::relu,  UnaryMode::silu,    UnaryMode::mish,    UnaryMode::floor,
                             UnaryMode::ceil,  UnaryMode::round,   UnaryMode::trunc,   UnaryMode::frac,
                             UnaryMode::logit, UnaryMode::trigamma};
  // all modes in one group (one compile): each after a mul, from a wide
  // range and from [-1.2, 1.2] (erfinv, logit, atanh, ...)
  for (ScalarType dt : {kFloat, kDouble})
    for (int64_t n : {int64_t(17), int64_t(1000)}) {
      Recorder r;
      Tensor x = test_values(n, dt, 10), u = test_values(n, dt, 1.2, 3);
      r.input(x);
      r.input(u);
      Tensor a = r.mul(x, Scalar(1.5));
      Tensor b = r.mul(u, Scalar(0.75));
      std::vector<Tensor> keep;
      for (UnaryMode m : modes) {
        keep.push_back(r.unary(m, a));
        keep.push_back(r.unary(m, b));
      }
      Group grp;
      for (size_t i = 0; i < r.g.nodes.size(); ++i) grp.nodes.push_back(int(i));
      grp.internal = {r.find(static_cast<const char*>(a.data_ptr())), r.find(static_cast<const char*>(b.data_ptr()))};
      EXPECT_TRUE(check_group(r, grp)) << dt << " n=" << n;
    }
}

// polygamma(n, x) (digamma's derivatives past trigamma, n in s0) and logit
// with its clamp's bounds in s0 and s1, as the front ends pass them
TEST_F(CodegenCpu, PolygammaAndLogitBoundsBitEqual) {
  for (ScalarType dt : {kFloat, kDouble}) {
    Recorder r;
    Tensor x = test_values(1000, dt, 10), u = test_values(1000, dt, 1.2, 3);
    r.input(x);
    r.input(u);
    Tensor a = r.mul(x, Scalar(1.5));
    Tensor b = r.mul(u, Scalar(0.75));
    std::vector<Tensor> keep;
    for (int64_t n : {2, 3, 5}) {
      KernelArgs k;
      k.s0 = n, k.has_s0 = true;
      keep.push_back(r.unary_args(UnaryMode::polygamma, a, k));
    }
    KernelArgs k;
    k.s0 = 0.25, k.s1 = 0.625, k.has_s0 = k.has_s1 = true;
    keep.push_back(r.unary_args(UnaryMode::logit, b, k));
    Group grp;
    for (size_t i = 0; i < r.g.nodes.size(); ++i) grp.nodes.push_back(int(i));
    grp.internal = {r.find(static_cast<const char*>(a.data_ptr())), r.find(static_cast<const char*>(b.data_ptr()))};
    EXPECT_TRUE(check_group(r, grp)) << dt;
  }
}

TEST_F(CodegenCpu, PredicatesAndWhere) {
  for (ScalarType dt : {kFloat, kDouble})
    for (int64_t n : kSizes) {
      Recorder r;
      Tensor x = test_values(n, dt), z = test_values(n, dt, 6, 7);
      r.input(x);
      r.input(z);
      Tensor nan = r.unary(UnaryMode::isnan, x, true);
      Tensor fin = r.unary(UnaryMode::isfinite, x, true);
      Tensor lt = r.compare(CompareMode::Lt, x, z);
      Tensor w = r.where(lt, x, z);
      Tensor w2 = r.where(fin, w, x);
      EXPECT_TRUE(check_group(r, r.group({nan, lt, w2}))) << dt << " n=" << n;
    }
}

TEST_F(CodegenCpu, BinaryOpsBitEqual) {
  for (ScalarType dt : {kFloat, kDouble})
    for (int64_t n : {int64_t(7), int64_t(1000), int64_t((1 << 16) + 3)}) {
      Recorder r;
      Tensor x = test_values(n, dt), z = test_values(n, dt, 3, 5), w = test_values(n, dt, 1, 9);
      r.input(x);
      r.input(z);
      r.input(w);
      std::vector<Tensor> keep;
      keep.push_back(r.add(x, z, -1));   // sub
      keep.push_back(r.add(x, z, 2.5));  // alpha: FMA in the eager kernel
      keep.push_back(r.div(x, z));
      keep.push_back(r.div(x, z, 1));
      keep.push_back(r.div(x, z, 2));
      keep.push_back(r.binary(OpId::minimum, "minimum", x, z));
      keep.push_back(r.binary(OpId::maximum, "maximum", x, z));
      keep.push_back(r.binary(OpId::remainder, "remainder", x, z));
      keep.push_back(r.binary(OpId::fmod, "fmod", x, z));
      keep.push_back(r.binary(OpId::atan2, "atan2", x, z));
      for (const char* nm : {"hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "xlogy", "heaviside"}) {
        KernelArgs k;  // the binary_math modes, in math::BinaryMath's order
        static const std::vector<std::string> order = {"hypot", "logaddexp", "logaddexp2", "copysign",
                                                       "nextafter", "xlogy", "heaviside"};
        k.mode = int(std::find(order.begin(), order.end(), nm) - order.begin());
        keep.push_back(r.binary(OpId::binary_math, nm, x, z, k));
      }
      for (double e : {2.0, 3.0, 0.5, -1.0, -2.0, 2.7}) {
        KernelArgs k;
        k.mode = 1;
        keep.push_back(r.binary(OpId::pow, "pow", w, Scalar(e), k));
      }
      keep.push_back(r.binary(OpId::pow, "pow", w, z));
      keep.push_back(r.clamp(x, -1.5, 2.0));
      keep.push_back(r.clamp(x, std::nullopt, 0.25));
      keep.push_back(r.clamp(x, -0.0, std::nullopt));
      keep.push_back(r.ternary(OpId::clamp_tensor, "clamp", x, z, w));
      keep.push_back(r.gelu(x, false));
      keep.push_back(r.gelu(x, true));
      {
        KernelArgs k;
        k.s0 = 2.0;
        k.s1 = 5.0;
        IterBuilder it("softplus");
        it.input(x);
        keep.push_back(r.run(OpId::softplus, "softplus", it, k));
      }
      {
        KernelArgs k;
        k.s0 = 0.5;
        keep.push_back(r.ternary(OpId::addcmul, "addcmul", x, z, w, k));
        keep.push_back(r.ternary(OpId::addcdiv, "addcdiv", x, z, w, k));
        keep.push_back(r.ternary(OpId::lerp, "lerp", x, z, w));
        KernelArgs kl;
        kl.s0 = 0.3;
        kl.has_s0 = true;
        keep.push_back(r.binary(OpId::lerp, "lerp", x, z, kl));
        KernelArgs kt;
        kt.s0 = 0.1;
        keep.push_back(r.binary(OpId::threshold_backward, "threshold_backward", x, z, kt));
      }
      for (int m = 0; m < 6; ++m) keep.push_back(r.compare(static_cast<CompareMode>(m), x, z));
      {
        KernelArgs k;
        k.s0 = 1e-3;
        k.s1 = 1e-2;
        k.mode = 1;
        keep.push_back(r.binary(OpId::isclose, "isclose", x, z, k, false, kBool));
      }
      Group grp;
      for (size_t i = 0; i < r.g.nodes.size(); ++i) grp.nodes.push_back(int(i));  // all kept
      EXPECT_TRUE(check_group(r, grp)) << dt << " n=" << n;
    }
}

// ---- broadcasting and 2-d iteration spaces -----------------------------------------
TEST_F(CodegenCpu, BroadcastOperands) {
  for (ScalarType dt : {kFloat, kDouble}) {
    // a tensor of one element against n
    for (int64_t n : kSizes) {
      Recorder r;
      Tensor x = test_values(n, dt), s = test_values(1, dt, 2, 3);
      r.input(x);
      r.input(s);
      Tensor a = r.mul(x, s);
      Tensor b = r.unary(UnaryMode::tanh, a);
      Tensor c = r.add(s, b, 0.5);
      EXPECT_TRUE(check_group(r, r.group({c}))) << dt << " n=" << n;
    }
    // rows and columns: (m, n) with (n) and (m, 1)
    for (int64_t n : {int64_t(7), int64_t(17), int64_t(300)}) {
      Recorder r;
      const int64_t m = 5;
      Tensor x = test_values(m * n, dt).reshape({m, n});
      Tensor row = test_values(n, dt, 3, 4), col = test_values(m, dt, 3, 8).reshape({m, 1});
      r.input(x);
      r.input(row);
      r.input(col);
      Tensor a = r.add(x, row);
      Tensor b = r.mul(a, col);
      Tensor c = r.add(b, row, 0.5);
      for (const Node& nd : r.g.nodes) ASSERT_EQ(nd.ndim, 2);
      EXPECT_TRUE(check_group(r, r.group({c}))) << dt << " n=" << n;
      EXPECT_TRUE(check_group(r, r.group({c}), 3)) << "split mid-row";
    }
  }
}

TEST_F(CodegenCpu, TransposedInput) {
  Recorder r;
  Tensor x = test_values(37 * 19, kFloat).reshape({37, 19});
  Tensor xt = x.t();
  Tensor z = test_values(19 * 37, kFloat, 2, 3).reshape({19, 37});
  r.input(x);
  r.input(z);
  Tensor a = r.add(xt, z);
  Tensor b = r.binary(OpId::atan2, "atan2", a, z);  // a has xt's layout, z the other
  for (const Node& nd : r.g.nodes) ASSERT_EQ(nd.ndim, 2) << nd.name << " " << nd.ops[0].strides[0] << " " << nd.ops[1].strides[0] << " " << nd.ops[2].strides[0] << " " << a.strides() << " " << b.strides();
  EXPECT_TRUE(check_group(r, r.group({b})));
}

// ---- dtype conversions, 16-bit floats, fill, in place --------------------------------
TEST_F(CodegenCpu, CopiesBetweenDtypes) {
  for (int64_t n : {int64_t(17), int64_t(1000)}) {
    Recorder r;
    Tensor x = test_values(n, kFloat, 300);
    Tensor i32 = (test_values(n, kDouble, 1e6).nan_to_num(0, 0, 0)).to(kInt32);
    Tensor bl = x.gt(0.5);
    r.input(x);
    r.input(i32);
    r.input(bl);
    std::vector<Tensor> keep;
    for (ScalarType t : {kDouble, kHalf, kBFloat16, kBool}) keep.push_back(r.copy(empty({n}, TensorOptions(t)), x));
    Tensor back = r.copy(empty({n}, TensorOptions(kFloat)), keep[1]);  // half -> float
    Tensor d2f = r.copy(empty({n}, TensorOptions(kFloat)), keep[0]);
    Tensor i2f = r.copy(empty({n}, TensorOptions(kFloat)), i32);
    Tensor i2h = r.copy(empty({n}, TensorOptions(kHalf)), i32);
    Tensor b2f = r.copy(empty({n}, TensorOptions(kDouble)), bl);
    Tensor i2i = r.copy(empty({n}, TensorOptions(kInt8)), i32);
    Tensor i2l = r.copy(empty({n}, TensorOptions(kInt64)), i32);
    Group grp;
    for (size_t i = 0; i < r.g.nodes.size(); ++i) grp.nodes.push_back(int(i));
    // outputs made by empty() are not recorded as temps: register them
    EXPECT_TRUE(check_group(r, grp)) << n;
  }
}

TEST_F(CodegenCpu, HalfChainRoundsBetweenOps) {
  for (ScalarType dt : {kHalf, kBFloat16})
    for (int64_t n : {int64_t(7), int64_t(1000)}) {
      Recorder r;
      Tensor x = test_values(n, dt, 4), z = test_values(n, dt, 4, 3);
      r.input(x);
      r.input(z);
      Tensor a = r.add(x, z, 1);
      Tensor b = r.mul(a, z);
      Tensor c = r.unary(UnaryMode::exp, b);
      Tensor d = r.gelu(c, false);
      Tensor e = r.unary(UnaryMode::neg, d);
      EXPECT_TRUE(check_group(r, r.group({e}))) << dt << " n=" << n;
    }
}

TEST_F(CodegenCpu, InPlaceChain) {
  Recorder r;
  Tensor x = test_values(1000, kFloat);
  Tensor y = test_values(1000, kFloat, 2, 11);
  r.input(x);
  r.input(y);
  {  // x.mul_(y).add_(1.0).sqrt_()
    IterBuilder it("mul_");
    it.inplace(x).input(x).input(y);
    r.run(OpId::mul, "mul_", it, KernelArgs{});
  }
  {
    IterBuilder it("add_");
    it.inplace(x).input(x).input(Scalar(1.0));
    KernelArgs k;
    k.s0 = 1;
    r.run(OpId::add, "add_", it, k);
  }
  {
    IterBuilder it("sqrt_");
    it.inplace(x).input(x).promote_int_to_float();
    KernelArgs k;
    k.mode = int(UnaryMode::sqrt);
    r.run(OpId::unary, "sqrt_", it, k);
  }
  CpuCodegen cg = generate_cpu(r.g, r.group());
  ASSERT_TRUE(cg.ok) << cg.reason;
  ASSERT_EQ(cg.kernel.args.size(), 2u);
  EXPECT_TRUE(cg.kernel.args[0].read && cg.kernel.args[0].written);
  // Note [Register runs]: one loop, the product sealed, the result stored
  // straight into x (d0) when its rows are contiguous
  EXPECT_NE(cg.kernel.body.find("cg::seal("), std::string::npos) << cg.kernel.body;
  EXPECT_NE(cg.kernel.body.find("d0[i] = "), std::string::npos) << cg.kernel.body;
  EXPECT_EQ(cg.kernel.body.find("cg::vmap"), std::string::npos) << cg.kernel.body;
  EXPECT_TRUE(check_group(r, r.group()));
}

TEST_F(CodegenCpu, Fill) {
  Recorder r;
  Tensor x = empty({100}, TensorOptions(kFloat));
  r.input(x);
  IterBuilder it("fill_");
  it.output(x).compute_dtype(kFloat).allow_overlap();
  KernelArgs k;
  k.s0 = 0.1;
  r.run(OpId::fill, "fill_", it, k);
  r.unary(UnaryMode::exp, x);
  EXPECT_TRUE(check_group(r, r.group({})));
  Recorder r2;  // keep the exp
  Tensor x2 = empty({100}, TensorOptions(kDouble));
  r2.input(x2);
  IterBuilder it2("fill_");
  it2.output(x2).compute_dtype(kDouble).allow_overlap();
  r2.run(OpId::fill, "fill_", it2, k);
  Tensor y2 = r2.unary(UnaryMode::exp, x2);
  EXPECT_TRUE(check_group(r2, r2.group({y2})));
}

// ---- integer and bool dtypes (wrap-around as eager, -fwrapv) -----------------------------
TEST_F(CodegenCpu, IntegerOps) {
  for (ScalarType dt : {kUInt8, kInt8, kInt16, kInt32, kInt64})
    for (int64_t n : {int64_t(7), int64_t(1000)}) {
      Recorder r;
      Tensor x = (test_values(n, kDouble, 300).nan_to_num(0, 0, 0) * 1e6).to(kInt64).to(dt);
      Tensor z = (test_values(n, kDouble, 300, 4).nan_to_num(0, 0, 0) * 1e6).to(kInt64).to(dt);
      r.input(x);
      r.input(z);
      std::vector<Tensor> keep;
      keep.push_back(r.add(x, z, 3));
      keep.push_back(r.add(x, z, 1));
      keep.push_back(r.mul(x, z));
      keep.push_back(r.binary(OpId::minimum, "minimum", x, z));
      keep.push_back(r.binary(OpId::maximum, "maximum", x, z));
      Tensor gt = r.compare(CompareMode::Gt, x, z);
      keep.push_back(r.where(gt, x, z));
      keep.push_back(r.clamp(x, -100, 100));
      for (UnaryMode m : {UnaryMode::neg, UnaryMode::abs, UnaryMode::sign, UnaryMode::square, UnaryMode::relu,
                          UnaryMode::floor, UnaryMode::round})
        keep.push_back(r.unary(m, x, false, true));
      KernelArgs k;
      k.mode = int(LogicalMode::Xor);
      keep.push_back(r.binary(OpId::logical, "logical_xor", x, z, k, false, kBool));
      keep.push_back(r.copy(empty({n}, TensorOptions(kFloat)), x));
      keep.push_back(r.copy(empty({n}, TensorOptions(kInt8)), x));
      Group grp;
      for (size_t i = 0; i < r.g.nodes.size(); ++i) grp.nodes.push_back(int(i));
      EXPECT_TRUE(check_group(r, grp)) << dt << " n=" << n;
    }
}

// Several kernels in one translation unit (one compile).
TEST_F(CodegenCpu, SeveralKernelsPerUnit) {
  Recorder r;
  Tensor x = test_values(300, kFloat);
  r.input(x);
  Tensor a = r.unary(UnaryMode::exp, x);
  Tensor b = r.unary(UnaryMode::tanh, a);
  Group g1, g2;
  g1.nodes = {0};
  g2.nodes = {1};
  CpuCodegen k1 = generate_cpu(r.g, g1, "brisk_k0"), k2 = generate_cpu(r.g, g2, "brisk_k1");
  ASSERT_TRUE(k1.ok && k2.ok);
  reset_toolchain_stats();
  std::vector<CpuKernelFn> fns = load_cpu_kernels({&k1.kernel, &k2.kernel});
  ASSERT_EQ(fns.size(), 2u);
  EXPECT_EQ(toolchain_stats().compiles + toolchain_stats().disk_hits, 1);
  Tensor ta = empty({300}), tb = empty({300});
  char* p1[2] = {static_cast<char*>(x.data_ptr()), static_cast<char*>(ta.data_ptr())};
  fns[0](p1, k1.kernel.strides.data(), k1.kernel.shape.data(), 0, k1.kernel.numel);
  char* p2[2] = {static_cast<char*>(ta.data_ptr()), static_cast<char*>(tb.data_ptr())};
  fns[1](p2, k2.kernel.strides.data(), k2.kernel.shape.data(), 0, k2.kernel.numel);
  EXPECT_EQ(std::memcmp(tb.data_ptr(), b.data_ptr(), 300 * 4), 0);
}

// ---- graphs from compile's tracer ------------------------------------------------------
/// Traces f(x, y), plans it, and checks the generated kernel of every group
/// against the trace run's own (eager) values; returns the generated groups,
/// a fused one counting 100 (fused groups must be generated).
int check_traced(const std::function<Tensor(const Tensor&, const Tensor&)>& f, const Tensor& x, const Tensor& y) {
  Graph g;
  Tracer tr(g);
  tr.add_input(x, 0);
  tr.add_input(y, 1);
  tr.install();
  Tensor r = f(x, y);
  tr.uninstall();
  EXPECT_EQ(tr.break_reason(), "");
  OutputRef out;  // the result (as compile.cpp registers it): not internal
  out.buf = tr.output_buffer(r, out.offset);
  EXPECT_GE(out.buf, 0);
  out.sizes.assign(r.sizes().begin(), r.sizes().end());
  out.strides.assign(r.strides().begin(), r.strides().end());
  out.dtype = r.dtype();
  g.outputs.push_back(out);
  plan(g);
  if (std::getenv("BRISK_CODEGEN_DESCRIBE")) std::printf("%s\n", describe(g).c_str());
  auto storage = [&](int b) -> std::pair<const char*, size_t> {
    const Buffer& buf = g.bufs[b];
    const Tensor& t = buf.kind == BufKind::Input ? (buf.input == 0 ? x : y) : buf.tensor;
    const StorageImpl* s = t.impl()->storage.get();
    return {static_cast<const char*>(s->data), s->nbytes};
  };
  int generated = 0;
  for (const Group& grp : g.groups) {
    CpuCodegen cg = generate_cpu(g, grp);
    if (!cg.ok) {
      // the one refusal a fused group may get: rows that are not whole vectors
      EXPECT_TRUE(!grp.fused() || cg.reason.find("other vectors than eager") != std::string::npos)
          << "fused group not generated: " << cg.reason << "\n" << describe(g);
      continue;
    }
    const CpuKernel& k = cg.kernel;
    bool known = true;  // a buffer registered from a raw block may have no tensor to compare with
    for (const auto& a : k.args) known &= g.bufs[a.buf].kind == BufKind::Input || g.bufs[a.buf].tensor.defined();
    if (!known) continue;
    bool writes = false;
    for (const auto& a : k.args) writes |= a.written;
    if (!writes) continue;  // dead code (every result internal): nothing to compare
    generated += grp.fused() ? 100 : 1;  // fused groups count 100
    CpuKernelFn fn = load_cpu_kernel(k);
    std::map<int, std::vector<char>> work;
    for (const auto& a : k.args) {
      auto [p, nb] = storage(a.buf);
      if (!work.count(a.buf)) work[a.buf] = a.read ? std::vector<char>(p, p + nb) : std::vector<char>(nb, 0);
    }
    std::vector<char*> ptrs;
    for (const auto& a : k.args) ptrs.push_back(work[a.buf].data() + a.offset);
    fn(ptrs.data(), k.strides.data(), k.shape.data(), 0, k.numel);
    for (const auto& a : k.args) {
      if (!a.written) continue;
      auto [p, nb] = storage(a.buf);
      const size_t es = element_size(a.dtype);
      for (size_t i = 0; i < nb; i += es)
        if (std::memcmp(p + i, work[a.buf].data() + i, es) != 0 && !both_nan(a.dtype, p + i, work[a.buf].data() + i)) {
          double want = 0, got = 0;
          if (a.dtype == kFloat) want = *reinterpret_cast<const float*>(p + i), got = *reinterpret_cast<const float*>(work[a.buf].data() + i);
          if (a.dtype == kDouble) want = *reinterpret_cast<const double*>(p + i), got = *reinterpret_cast<const double*>(work[a.buf].data() + i);
          ADD_FAILURE() << "buffer " << a.buf << " element " << i / es << " differs (" << k.ops << "): generated " << got
                        << ", eager " << want << "\n" << describe(g) << "\n" << k.body;
          break;
        }
    }
  }
  return generated;
}

// The whole-graph entry points: one unit for all groups, run on the pool.
TEST_F(CodegenCpu, GraphKernelsOnThePool) {
  Tensor x = test_values(300 * 256, kFloat).reshape({300, 256}), y = test_values(256, kFloat, 3, 2);
  Graph g;
  Tracer tr(g);
  tr.add_input(x, 0);
  tr.add_input(y, 1);
  tr.install();
  Tensor r = ((x + y).exp() + 1).tanh() * 2;
  Tensor s = r.sum(1);  // an opaque node between fused groups
  Tensor r2 = gelu(x * y) - y;
  tr.uninstall();
  for (const Tensor& t : {r, s, r2}) {  // (s a result too: dead-code elimination would drop the sum)
    OutputRef out;
    out.buf = tr.output_buffer(t, out.offset);
    g.outputs.push_back(out);
  }
  plan(g);
  reset_toolchain_stats();
  CpuGraphKernels gk = build_cpu_kernels(g);
  ASSERT_EQ(gk.fns.size(), g.groups.size());
  EXPECT_EQ(toolchain_stats().compiles + toolchain_stats().disk_hits, 1);
  int fused = 0;
  set_num_threads(2);
  for (size_t i = 0; i < g.groups.size(); ++i) {
    if (!g.groups[i].fused()) {
      EXPECT_EQ(gk.fns[i], nullptr);
      continue;
    }
    ASSERT_NE(gk.fns[i], nullptr) << gk.code[i].reason;
    ++fused;
    // fresh memory for every buffer the kernel touches, inputs copied in
    const CpuKernel& k = gk.code[i].kernel;
    std::vector<std::vector<char>> mem(g.bufs.size());
    std::vector<char*> base(g.bufs.size(), nullptr);
    for (const auto& a : k.args) {
      const Buffer& b = g.bufs[a.buf];
      const Tensor& t = b.kind == BufKind::Input ? (b.input == 0 ? x : y) : b.tensor;
      ASSERT_TRUE(t.defined());
      const StorageImpl* st = t.impl()->storage.get();
      const char* src = static_cast<const char*>(st->data);
      mem[a.buf] = a.read ? std::vector<char>(src, src + st->nbytes) : std::vector<char>(st->nbytes, 0);
      base[a.buf] = mem[a.buf].data();
    }
    run_cpu_kernel(k, gk.fns[i], base.data());
    for (const auto& a : k.args) {
      if (!a.written) continue;
      const StorageImpl* st = g.bufs[a.buf].tensor.impl()->storage.get();
      EXPECT_EQ(std::memcmp(st->data, mem[a.buf].data(), st->nbytes), 0) << "group " << i << " (" << k.ops << ")";
    }
  }
  set_num_threads(1);
  EXPECT_GE(fused, 2);

  // max-autotune's variants: each block size is its own kernel that walks
  // that block, except the default kernel standing for 256 (a larger
  // default walks a prefetching call in blocks of 256, so it cannot stand
  // for its own block: Note [Prefetching in generated kernels])
  CpuGraphKernels gv = build_cpu_kernels(g, false, true);
  int checked = 0;
  for (size_t i = 0; i < g.groups.size(); ++i) {
    if (!gv.code[i].ok) continue;
    const CpuKernel& d = gv.code[i].kernel;
    ASSERT_EQ(gv.variants[i].size(), 4u) << gv.code[i].reason;
    for (size_t v = 0; v < gv.variants[i].size(); ++v) {
      const CpuKernel& k = gv.variants[i][v];
      EXPECT_EQ(k.name == d.name, k.block == d.block && d.block == 256) << k.name << " block " << k.block;
      if (k.name != d.name) EXPECT_EQ(k.body.find("Bs = prefetching"), std::string::npos) << k.body;
      EXPECT_NE(gv.variant_fns[i][v], nullptr);
      ++checked;
    }
  }
  EXPECT_GE(checked, 8);
}

// Note [Vectors as eager forms them]: Sleef's sin takes a slower reduction
// for a whole vector when one lane is large, so a lane's bits depend on its
// neighbours; the kernel must form eager's vectors.
TEST_F(CodegenCpu, VectorsAsEagerFormsThem) {
  for (ScalarType dt : {kFloat, kDouble})
    for (int64_t n : {int64_t(100), int64_t(1000), int64_t(4099)}) {
      Recorder r;
      Tensor x = test_values(n, dt, 400, 5);  // many lanes past sin's fast range
      // ... and a small last stretch (no nan there): eager's zero-padded
      // last vector takes the fast reduction
      {
        NoGradGuard ng;
        x.narrow(0, n - 40, 40).copy_((rand({40}) * 2 - 1).to(dt));
      }
      r.input(x);
      Tensor a = r.mul(x, Scalar(0.75));
      Tensor b = r.unary(UnaryMode::sin, a);
      Tensor c = r.unary(UnaryMode::tan, b);
      Tensor d = r.binary(OpId::atan2, "atan2", c, a);
      Tensor e = r.unary(UnaryMode::cos, d);
      EXPECT_TRUE(check_group(r, r.group({e}))) << dt << " n=" << n;
      EXPECT_TRUE(check_group(r, r.group({e}), 3)) << dt << " n=" << n << " split";
    }
  // rows longer than a block: the row's last block ends in a partial vector,
  // whose lanes past the row hold the block's previous values (large here)
  // unless padded with zeros as eager pads them
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor x = ((rand({300, 3000}) * 2 - 1) * 3).to(dt);
    {
      NoGradGuard ng;
      x.narrow(0, 40, 12).fill_(300.0);
    }
    Recorder r;
    r.input(x);
    Tensor out = empty({3000, 300}, TensorOptions(dt));
    IterBuilder it("sin");
    it.output(out).input(x.t()).promote_int_to_float();
    KernelArgs k;
    k.mode = int(UnaryMode::sin);
    r.run(OpId::unary, "sin", it, k);
    ASSERT_EQ(r.g.nodes[0].ndim, 2);
    ASSERT_EQ(r.g.nodes[0].shape[0], 300);
    Group grp;
    grp.nodes = {0};
    EXPECT_TRUE(check_group(r, grp)) << dt;
  }
  // a 1-d call viewed as rows that are not whole vectors: refused
  Tensor x = test_values(20 * 33, kFloat, 400).reshape({20, 33}), y = test_values(33, kFloat, 3, 2);
  Graph g;
  Tracer tr(g);
  tr.add_input(x, 0);
  tr.add_input(y, 1);
  tr.install();
  Tensor r = (x + y).sin() * y;
  tr.uninstall();
  OutputRef out;
  out.buf = tr.output_buffer(r, out.offset);
  g.outputs.push_back(out);
  plan(g);
  bool refused = false;
  for (const Group& grp : g.groups)
    if (grp.fused()) {
      CpuCodegen cg = generate_cpu(g, grp);
      refused |= !cg.ok && cg.reason.find("other vectors than eager") != std::string::npos;
    }
  EXPECT_TRUE(refused);
}

TEST_F(CodegenCpu, TracedGraphs) {
  for (ScalarType dt : {kFloat, kDouble}) {
    // rows of 64 elements: the 1-d calls of a 2-d group form eager's vectors
    Tensor x = test_values(33 * 64, dt).reshape({33, 64}), y = test_values(64, dt, 3, 2);
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor&) { return a * 0.5 * (1.0 + erf(a / 1.41421)); }, x, y), 100);
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return (a + b) * sigmoid(a) - tanh(b); }, x, y), 100);
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return where(a > b, exp(a), relu(b)); }, x, y), 100);
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return minimum(a.clamp(-1, 1), b) * maximum(a, b); },
                           x, y),
              100);
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor&) { return (a.to(kHalf) * 2).to(kFloat) + a.exp(); }, x, y),
              1);
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor&) { return gelu(a, "tanh") * a.square() + a.abs().sqrt(); },
                           x, y),
              100);
    // pow's special exponents on nodes plan() views as 2-d (eager ran them 1-d)
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return ((a + b).pow(3) + b).pow(-2) * b; }, x, y), 100);
    // a reduction between two fused chains (an opaque node: not generated)
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return ((a * 2 + b).exp().sum(1) + 1).tanh(); }, x, y),
              100);
  }
}

// bfloat16 pow by 3 and -2 rounds x * x to bfloat16 first, as eager does
TEST_F(CodegenCpu, Bfloat16PowBy3AndMinus2MatchEager) {
  Tensor x = test_values(33 * 64, kFloat).reshape({33, 64}).to(kBFloat16), y = test_values(64, kFloat, 3, 2).to(kBFloat16);
  EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return (a.pow(3) + b).pow(-2) * b; }, x, y), 1);
}

// Note [Register runs]: products feeding adds in the next node (a contraction
// eager cannot make), 16-bit results rounded in registers, broadcast
// operands, runs split by vector-math nodes, strided results (no direct
// store), each bit-equal to eager.
// Note [Prefetching in generated kernels]: calls of at least
// cg::kPrefetchMin elements prefetch ahead, carried by the first vector
// loop or, without one, by the first scalar loop in chunks of 16, and walk
// 1-d ranges in blocks of 256; none of it may change a value, at any size
// (tails that are not whole chunks or vectors), split or not.
TEST_F(CodegenCpu, PrefetchingCallsMatchEager) {
  for (ScalarType dt : {kFloat, kDouble, kHalf})
    for (int64_t n : {int64_t(65536), int64_t(200003)}) {
      {  // a vector loop carries the prefetches
        Recorder r;
        Tensor x = test_values(n, dt, 8, 3);
        r.input(x);
        Tensor e = r.unary(UnaryMode::erf, r.div(x, Scalar(1.41421)));
        Tensor y = r.mul(r.mul(x, Scalar(0.5)), r.add(e, Scalar(1.0)));
        const Group grp = r.group({y});
        CpuCodegen cg = generate_cpu(r.g, grp);
        ASSERT_TRUE(cg.ok) << cg.reason;
        // (float and double: one vector run, which prefetches per vector)
        EXPECT_NE(cg.kernel.body.find(dt == kHalf ? ", pf);" : "i += N) { pf(i);"), std::string::npos) << cg.kernel.body;
        EXPECT_TRUE(check_group(r, grp)) << dt << " n=" << n;
        EXPECT_TRUE(check_group(r, grp, 3)) << dt << " n=" << n << " split";
      }
      {  // a register run carries them, in chunks of 16; an operand read and written in place
        Recorder r;
        Tensor x = test_values(n, dt, 4, 5), w = test_values(n, dt, 3, 6);
        r.input(x);
        r.input(w);
        Tensor a = r.add(r.mul(x, w), r.mul(x, Scalar(0.25)));
        Tensor y = r.add(w, r.div(a, r.add(r.mul(w, w), Scalar(1.0))), -0.5);
        r.copy(w, y);
        const Group grp = r.group({w});
        CpuCodegen cg = generate_cpu(r.g, grp);
        ASSERT_TRUE(cg.ok) << cg.reason;
        EXPECT_NE(cg.kernel.body.find("pf(i0);"), std::string::npos) << cg.kernel.body;
        EXPECT_TRUE(check_group(r, grp)) << dt << " n=" << n;
        EXPECT_TRUE(check_group(r, grp, 3)) << dt << " n=" << n << " split";
      }
    }
  // rows (2-d kernels), a transposed operand (no prefetch step for it) and a
  // broadcast row, through the tracer
  for (ScalarType dt : {kFloat, kBFloat16}) {
    Tensor x = test_values(400 * 512, dt, 6, 7).reshape({400, 512}), y = test_values(512, dt, 3, 2);
    Tensor xt = test_values(512 * 400, dt, 6, 8).reshape({512, 400}).t();
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return a * 0.5 * (1.0 + erf(a / 1.41421)) - b; }, x, y), 100)
        << dt;
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return (a * b + a * 0.5) / (b * b + 1.0); }, xt, y), 100)
        << dt;
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return a * b.exp() + b; }, x, xt), 100) << dt;
  }
}

TEST_F(CodegenCpu, RegisterRunsMatchEager) {
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    Tensor x = test_values(17 * 64, dt).reshape({17, 64}), y = test_values(64, dt, 3, 2);
    Tensor xs = test_values(2 * 17 * 64, dt, 6, 5).reshape({17, 128}).slice(1, 0, 128, 2);  // strided rows
    auto progs = std::vector<std::function<Tensor(const Tensor&, const Tensor&)>>{
        [](const Tensor& a, const Tensor& b) { return a * b + a * 0.5 - b * b * 3.0; },
        [](const Tensor& a, const Tensor& b) { return addcmul(a * b, a, b, 0.25) / (b.abs() + 1.0); },
        [](const Tensor& a, const Tensor& b) { return (a.square() + 1.0).sqrt() * b.rsqrt().nan_to_num(0.0) + a; },
        [](const Tensor& a, const Tensor& b) { return where(a > b, a * 2.0, b * a).clamp(-4, 4) * a + b; },
        [](const Tensor& a, const Tensor& b) { return lerp(a * b, a, 0.3) - (a * a).exp() * b + a.reciprocal(); },
        [](const Tensor& a, const Tensor& b) {
          Tensor c = a * 0.9;
          c.add_(b, 0.1).mul_(b);
          return c + a.pow(2) * b.pow(3);
        },
        // a negated multiply-add: -(+0) is -0 (GCC would fold the neg into the FMA)
        [](const Tensor& a, const Tensor& b) { return (a - b).neg(); },
        [](const Tensor& a, const Tensor& b) { return addcmul(a, a, b, 0.5).neg(); },
        [](const Tensor& a, const Tensor& b) { return lerp(a, b, 0.25).neg(); },
        // x + x, which GCC rewrites as x * 2: a product that would contract
        [](const Tensor& a, const Tensor& b) { return lerp(a + a, b, 0.3) - (b + b + a * 3.0); },
        // ... and what GCC's value numbering sees as x + x: x + copy(x), the sum of two equal nodes
        [](const Tensor& a, const Tensor& b) { return lerp(a + a.clone(), b, 0.3) + (b.clone() + b).add(a, 0.3); },
        [](const Tensor& a, const Tensor& b) {
          Tensor c = a * b, d = a * b;
          d.add_(c).add_(b, 0.3);
          return d;
        },
    };
    for (size_t i = 0; i < progs.size(); ++i) {
      EXPECT_GE(check_traced(progs[i], x, y), 100) << dt << " program " << i;
      EXPECT_GE(check_traced(progs[i], xs, y), 1) << dt << " program " << i << " (strided)";
    }
    // a whole-tensor scalar broadcast (one value per block)
    Tensor s = test_values(1, dt, 3, 7).reshape({});
    EXPECT_GE(check_traced([](const Tensor& a, const Tensor& b) { return a * b + b * a * a - 1.0; }, x, s), 100) << dt;
  }
}

// Note [Vector runs]: vector nodes and the plain arithmetic around them in
// one loop over whole vectors, then the zero-padded partial last vector.
TEST_F(CodegenCpu, VectorRunsMatchEager) {
  for (ScalarType dt : {kFloat, kDouble}) {
    // one run (checked in the code), at lengths around the lane counts and
    // past the prefetch threshold, whole and split over threads
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(16), int64_t(17), int64_t(255), int64_t(1000), int64_t(70001)}) {
      Recorder r;
      Tensor x = test_values(n, dt, 5, 11), w = test_values(n, dt, 3, 12);
      r.input(x);
      r.input(w);
      Tensor e = r.unary(UnaryMode::erf, r.div(x, Scalar(1.41421)));
      Tensor g = r.mul(r.mul(x, Scalar(0.5)), r.add(e, Scalar(1.0)));
      Tensor t = r.binary(OpId::atan2, "atan2", r.unary(UnaryMode::exp, r.mul(g, w)), r.add(w, Scalar(0.5)));
      Tensor y = r.add(r.unary(UnaryMode::tanh, t), r.mul(g, w), -0.5);
      const Group grp = r.group({y});
      CpuCodegen cg = generate_cpu(r.g, grp);
      ASSERT_TRUE(cg.ok) << cg.reason;
      EXPECT_NE(cg.kernel.body.find("/*vector run*/"), std::string::npos) << cg.kernel.body;
      EXPECT_EQ(cg.kernel.body.find("cg::vmap"), std::string::npos) << cg.kernel.body;
      EXPECT_TRUE(check_group(r, grp)) << dt << " n=" << n;
      if (n > 1000) EXPECT_TRUE(check_group(r, grp, 3)) << dt << " n=" << n << " split";
      // the selects' vector forms (NaNs, signed zeros and infinities at the front)
      Recorder q;
      q.input(x);
      q.input(w);
      Tensor m = q.binary(OpId::maximum, "maximum", q.unary(UnaryMode::exp, x), w);
      Tensor c = q.clamp(q.unary(UnaryMode::abs, q.unary(UnaryMode::sin, m)), -0.5, 0.75);
      Tensor z = q.add(q.unary(UnaryMode::relu, q.binary(OpId::minimum, "minimum", c, q.unary(UnaryMode::tanh, w))), c);
      const Group gq = q.group({z});
      CpuCodegen cq = generate_cpu(q.g, gq);
      ASSERT_TRUE(cq.ok) << cq.reason;
      EXPECT_EQ(cq.kernel.body.find("cg::vmap"), std::string::npos) << cq.kernel.body;
      EXPECT_TRUE(check_group(q, gq)) << dt << " n=" << n << " (selects)";
    }
    // through the tracer: a range with a partial last vector, rows and a
    // broadcast row (fused vector nodes need rows of whole vectors: Note
    // [Vectors as eager forms them]), a whole-tensor scalar (one value per
    // block), in place, a constant into a two-operand vector node, a vector
    // node's result read after the run
    Tensor x = test_values(1700 + 3, dt), y = test_values(1700 + 3, dt, 3, 2);
    Tensor xr = test_values(17 * 128, dt, 6, 5).reshape({17, 128}), yr = test_values(128, dt, 3, 3);
    Tensor s = test_values(1, dt, 2, 7).reshape({});
    auto progs = std::vector<std::function<Tensor(const Tensor&, const Tensor&)>>{
        [](const Tensor& a, const Tensor& b) { return a * 0.5 * (1.0 + erf(a / 1.41421)) + b; },
        [](const Tensor& a, const Tensor& b) { return (a.exp() * b + 1.0).log() - a.tanh() * 2.0; },
        [](const Tensor& a, const Tensor& b) { return pow(a.abs() + 0.5, b) * 3.0 + atan2(a, b) / b.square(); },
        [](const Tensor& a, const Tensor& b) { return a.abs().pow(2.7) * b + (b * a).sigmoid() - a.reciprocal(); },
        [](const Tensor& a, const Tensor& b) { return (a * b).exp().sqrt() + b.rsqrt() - (a - b).neg().expm1(); },
        [](const Tensor& a, const Tensor& b) {
          Tensor c = a * 1.5;
          c.exp_().mul_(b).add_(a, 0.25);
          return c + a.sqrt();
        },
        [](const Tensor& a, const Tensor& b) {
          Tensor e = (a * b).exp();
          return where(e > 1.0, e, a) + e.clamp(0, 3) + e.sin();
        },
        [](const Tensor& a, const Tensor& b) { return addcdiv(a.erfc(), a, b.abs() + 1.0, 0.5) * addcmul(b, a, a.sin(), 2.0); },
        [](const Tensor& a, const Tensor& b) {
          return maximum(a.exp(), b).clamp(-2, 3).abs() + minimum(a, b.tanh()).relu() + clamp(a.sin(), b - 1.0, b + 1.0);
        },
    };
    for (size_t i = 0; i < progs.size(); ++i) {
      EXPECT_GE(check_traced(progs[i], x, y), 100) << dt << " program " << i;
      EXPECT_GE(check_traced(progs[i], xr, yr), 100) << dt << " program " << i << " (rows)";
      EXPECT_GE(check_traced(progs[i], x, s), 100) << dt << " program " << i << " (0-dim)";
    }
  }
}

// The headers whose content keys the cache are all the brisk headers the
// generated code includes.
TEST_F(CodegenCpu, PreludeHeaderListIsComplete) {
  std::string cmd = compiler_command();
  for (const auto& f : cpu_compile_flags())
    if (f.rfind("-I", 0) == 0 || f.rfind("-D", 0) == 0 || f.rfind("-m", 0) == 0 || f.rfind("-std", 0) == 0) cmd += " " + f;
  const std::string out = test_cache_dir() + "/deps.txt";
  cmd += " -MM -x c++ " + cpu_prelude_headers()[0] + " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  FILE* fp = std::fopen(out.c_str(), "r");
  ASSERT_NE(fp, nullptr);
  std::string deps;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), fp)) > 0;) deps.append(buf, n);
  std::fclose(fp);
  const std::string root = cpu_prelude_headers()[0].substr(0, cpu_prelude_headers()[0].find("/src/compile/"));
  const auto listed = cpu_prelude_headers();
  std::string word;
  int found = 0;
  for (char ch : deps + " ") {
    if (ch == ' ' || ch == '\n' || ch == '\\') {
      if (word.rfind(root + "/", 0) == 0) {
        ++found;
        EXPECT_NE(std::find(listed.begin(), listed.end(), word), listed.end()) << word << " is not in kPreludeHeaders";
      }
      word.clear();
    } else {
      word += ch;
    }
  }
  EXPECT_EQ(found, static_cast<int>(listed.size()));
}

TEST_F(CodegenCpu, PrecompiledPreludeGivesTheSameKernel) {
  Recorder r;
  Tensor x = test_values(1000, kFloat);
  r.input(x);
  Tensor y = r.gelu(r.mul(x, Scalar(3.0)), false);
  const std::string dir = test_cache_dir() + "/pch";
  setenv("BRISK_COMPILE_CACHE", dir.c_str(), 1);
  reset_toolchain_stats();
  EXPECT_TRUE(check_group(r, r.group({y})));
  EXPECT_EQ(toolchain_stats().pch_builds, 1);
  setenv("BRISK_COMPILE_PCH", "0", 1);
  setenv("BRISK_COMPILE_CACHE", (dir + "2").c_str(), 1);
  EXPECT_TRUE(check_group(r, r.group({y})));  // compiled without it
  EXPECT_EQ(toolchain_stats().pch_builds, 1);
  unsetenv("BRISK_COMPILE_PCH");
  setenv("BRISK_COMPILE_CACHE", test_cache_dir().c_str(), 1);
}

// Random programs (DAGs of pointwise ops, casts, broadcasts, views and
// reductions; no in-place ops, so each group can be checked against the trace
// run's values), every generated group against eager.
Tensor random_program(uint64_t seed, const Tensor& x, const Tensor& y) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  std::vector<Tensor> vals = {x, y};
  const int nops = 3 + pick(12);
  for (int i = 0; i < nops; ++i) {
    const Tensor& a = vals[pick(static_cast<int>(vals.size()))];
    const Tensor& b = vals[pick(static_cast<int>(vals.size()))];
    Tensor r;
    switch (pick(28)) {
      case 0: r = a + b; break;
      case 1: r = a - b * 0.25; break;
      case 2: r = a * b; break;
      case 3: r = a / (b.abs() + 1); break;
      case 4: r = a.exp().clamp(-5, 5); break;
      case 5: r = a.tanh() + b.sigmoid(); break;
      case 6: r = maximum(a, b) - minimum(a, 0.5); break;
      case 7: r = where(a > b, a, b * 2); break;
      case 8: r = a.neg().relu() + erf(b); break;
      case 9: r = gelu(a) * gelu(b, "tanh"); break;
      case 10: r = (a.to(kDouble) * 3).to(a.dtype()); break;  // (every value keeps the inputs' dtype)
      case 11: r = (a.to(kBFloat16) + 1).to(a.dtype()) * (b.to(kHalf) * 2).to(a.dtype()); break;
      case 12: r = a.t().contiguous().t() + b; break;
      case 13: r = a + b.narrow(1, 0, 1); break;
      case 14: r = a * b.narrow(0, 0, 1); break;
      case 15: r = a.sqrt().nan_to_num(0.0); break;
      case 16: r = (a > 0).to(b.dtype()) * b; break;
      case 17: r = a.pow(2) + a.abs().log1p() + b.pow(3); break;
      case 18: r = lerp(a, b, 0.3); break;
      case 19: r = a - a.sum({1}, true); break;
      case 20: r = atan2(a, b) + a.abs().rsqrt(); break;
      case 21: r = addcmul(a, a, b, 0.5) + addcdiv(b, a, b.abs() + 1, 2.0); break;
      case 22: r = softplus(a, 2.0, 10.0) + silu(b); break;
      case 24: r = (a - b * 0.5).neg(); break;
      case 25: r = addcmul(b, a, b, -0.5).neg() * a.exp().neg(); break;
      case 26: r = a.erf().neg() - (b.square() + a).sqrt().reciprocal(); break;
      case 27: r = lerp(a, b, 0.75).neg() + (a * b).tanh(); break;
      default: r = clamp(a.clamp_min(-1), b - 1, b + 1); break;
    }
    vals.push_back(r);
  }
  return vals.back();
}

TEST_F(CodegenCpu, RandomProgramsMatchEager) {
  // BRISK_CODEGEN_PROGRAMS=n[,seed] runs more (40 by default)
  const char* more = std::getenv("BRISK_CODEGEN_PROGRAMS");
  const int count = more ? std::atoi(more) : 40;
  std::mt19937_64 rng(more && std::strchr(more, ',') ? std::strtoull(std::strchr(more, ',') + 1, nullptr, 10) : 99);
  int fused = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t seed = rng();
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 20);
    const int64_t cols = rng() % 2 ? 64 * (1 + static_cast<int64_t>(rng() % 4)) : 1 + static_cast<int64_t>(rng() % 300);
    // every other program on values with exact zeros, infinities and NaNs
    // at the front (signs of zero, overflow), the others on normal values
    // (and one in four in double)
    const ScalarType dt = i % 4 == 3 ? kDouble : kFloat;
    Tensor x = (randn({rows, cols}) * 2).to(dt), y = (randn({rows, cols}) * 2).to(dt);
    if (i % 2) {
      x = test_values(rows * cols, dt, 4, seed).reshape({rows, cols});
      y = test_values(rows * cols, dt, 4, seed + 1).reshape({rows, cols});
    }
    const int got = check_traced([seed](const Tensor& a, const Tensor& b) { return random_program(seed, a, b); }, x, y);
    fused += got >= 100;
    if (HasFailure()) {
      ADD_FAILURE() << "program " << i << " (seed " << seed << ", " << rows << " x " << cols << ")";
      break;
    }
  }
  EXPECT_GT(fused, count / 3);
}

// ---- what it does not generate ---------------------------------------------------------
TEST_F(CodegenCpu, UnsupportedGivesAReason) {
  Recorder r;
  Tensor x = full({10}, 3, TensorOptions(kInt32));
  r.input(x);
  KernelArgs k;
  k.mode = int(BitwiseMode::And);
  r.binary(OpId::bitwise, "bitwise_and", x, x, k);
  CpuCodegen cg = generate_cpu(r.g, r.group());
  EXPECT_FALSE(cg.ok);
  EXPECT_NE(cg.reason.find("bitwise"), std::string::npos) << cg.reason;
}

// ---- the toolchain ------------------------------------------------------------------------
const char* kTrivial = "extern \"C\" int brisk_test_fn(int x) { return x * 3 + %d; }\n";
std::string trivial(int v) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), kTrivial, v);
  return buf;
}

TEST(CodegenToolchain, DiskAndMemoryCache) {
  if (!have_compiler()) GTEST_SKIP() << "no C++ compiler";
  const std::string dir = test_cache_dir() + "/disk";
  setenv("BRISK_COMPILE_CACHE", dir.c_str(), 1);
  reset_toolchain_stats();
  const std::string src = trivial(1234);
  const SharedObject& a = compile_shared_object(src, {"-O1"}, "test");
  auto f = reinterpret_cast<int (*)(int)>(symbol(a, "brisk_test_fn"));
  EXPECT_EQ(f(2), 1240);
  EXPECT_EQ(toolchain_stats().compiles, 1);
  const SharedObject& b = compile_shared_object(src, {"-O1"}, "test");
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(toolchain_stats().memory_hits, 1);
  EXPECT_TRUE(std::filesystem::exists(a.path));
  // a second process: run this binary's disk-hit test in a child
  const pid_t pid = fork();
  if (pid == 0) {
    reset_toolchain_stats();
    forget_loaded_for_testing();
    const SharedObject& c = compile_shared_object(src, {"-O1"}, "test");
    auto g = reinterpret_cast<int (*)(int)>(symbol(c, "brisk_test_fn"));
    const ToolchainStats st = toolchain_stats();
    _exit(g(2) == 1240 && st.disk_hits == 1 && st.compiles == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child did not hit the disk cache";
  // in this process too, once the memo is dropped
  forget_loaded_for_testing();
  const SharedObject& d = compile_shared_object(src, {"-O1"}, "test");
  EXPECT_EQ(toolchain_stats().disk_hits, 1);
  EXPECT_EQ(reinterpret_cast<int (*)(int)>(symbol(d, "brisk_test_fn"))(1), 1237);
  // other flags or another ISA: another key
  compile_shared_object(src, {"-O2"}, "test");
  compile_shared_object(src, {"-O1"}, "test2");
  EXPECT_EQ(toolchain_stats().compiles, 3);
  // a stale entry (the .cpp differs from the key text) is compiled again
  {
    std::string cpp = d.path.substr(0, d.path.size() - 3) + ".cpp";
    FILE* fp = std::fopen(cpp.c_str(), "a");
    std::fputs("// changed\n", fp);
    std::fclose(fp);
    forget_loaded_for_testing();
    compile_shared_object(src, {"-O1"}, "test");
    EXPECT_EQ(toolchain_stats().compiles, 4);
  }
  testing::expect_error([&] { symbol(d, "no_such_symbol"); }, {"compile", "no_such_symbol"});
  setenv("BRISK_COMPILE_CACHE", test_cache_dir().c_str(), 1);
}

TEST(CodegenToolchain, CompilerErrors) {
  if (!have_compiler()) GTEST_SKIP() << "no C++ compiler";
  // a broken source: the compiler's message in the error
  testing::expect_error([] { compile_shared_object("extern \"C\" int f( { syntax error", {}, "test"); },
                        {"compile", "failed", "error"});
  EXPECT_GE(toolchain_stats().failures, 1);
  // no compiler
  setenv("BRISK_CXX", "/nonexistent/c++", 1);
  EXPECT_FALSE(have_compiler());
  testing::expect_error([] { compile_shared_object(trivial(99), {}, "test"); }, {"compile", "/nonexistent/c++"});
  unsetenv("BRISK_CXX");
  EXPECT_TRUE(have_compiler());
}

TEST(CodegenToolchain, ConcurrentCompilesOfOneKey) {
  if (!have_compiler()) GTEST_SKIP() << "no C++ compiler";
  const std::string dir = test_cache_dir() + "/concurrent";
  setenv("BRISK_COMPILE_CACHE", dir.c_str(), 1);
  reset_toolchain_stats();
  const std::string src = trivial(777);
  const SharedObject* got[2] = {};
  std::thread t0([&] { got[0] = &compile_shared_object(src, {}, "test"); });
  std::thread t1([&] { got[1] = &compile_shared_object(src, {}, "test"); });
  t0.join();
  t1.join();
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(toolchain_stats().compiles, 1);
  EXPECT_EQ(toolchain_stats().memory_hits, 1);
  // two processes at once on a fresh key: both load a complete object
  const std::string src2 = trivial(778);
  pid_t kids[2];
  for (pid_t& pid : kids) {
    pid = fork();
    if (pid == 0) {
      forget_loaded_for_testing();
      const SharedObject& so = compile_shared_object(src2, {}, "test");
      _exit(reinterpret_cast<int (*)(int)>(symbol(so, "brisk_test_fn"))(1) == 781 ? 0 : 1);
    }
  }
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  int leftovers = 0;
  for (auto& e : std::filesystem::directory_iterator(dir))
    leftovers += e.path().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(leftovers, 0);
  setenv("BRISK_COMPILE_CACHE", test_cache_dir().c_str(), 1);
}

// ---- timings (BRISK_CODEGEN_BENCH=1): the gelu chain on 2^24 float32, one thread ---------
TEST_F(CodegenCpu, GeluChainTimings) {
  if (!std::getenv("BRISK_CODEGEN_BENCH")) GTEST_SKIP() << "set BRISK_CODEGEN_BENCH=1";
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); };
  const int64_t n = int64_t(1) << 24;
  Tensor x = randn({n});
  Recorder r;
  r.input(x);
  Tensor a = r.mul(x, Scalar(0.5));
  Tensor b = r.div(x, Scalar(1.41421));
  Tensor e = r.unary(UnaryMode::erf, b);
  Tensor c = r.add(e, Scalar(1.0));
  Tensor y = r.mul(a, c);
  CpuCodegen cg = generate_cpu(r.g, r.group({y}));
  ASSERT_TRUE(cg.ok) << cg.reason;
  if (std::getenv("BRISK_CODEGEN_DUMP")) std::printf("%s\n", cpu_translation_unit({&cg.kernel}).c_str());
  // cold compile: a fresh cache directory
  const std::string dir = test_cache_dir() + "/bench";
  setenv("BRISK_COMPILE_CACHE", dir.c_str(), 1);
  reset_toolchain_stats();
  auto t0 = Clock::now();
  CpuKernelFn fn = load_cpu_kernel(cg.kernel);
  const double cold = ms(t0);
  const ToolchainStats st = toolchain_stats();
  forget_loaded_for_testing();
  t0 = Clock::now();
  fn = load_cpu_kernel(cg.kernel);
  const double warm = ms(t0);
  // a kernel not in the cache, the precompiled prelude there
  double cold_pch = 0;
  {
    Recorder r2;
    r2.input(x);
    Tensor a2 = r2.mul(x, Scalar(0.25));
    Tensor y2 = r2.unary(UnaryMode::tanh, a2);
    CpuCodegen cg2 = generate_cpu(r2.g, r2.group({y2}));
    ASSERT_TRUE(cg2.ok);
    t0 = Clock::now();
    load_cpu_kernel(cg2.kernel);
    cold_pch = ms(t0);
  }
  Tensor out = empty({n});
  char* ptrs[2];
  ASSERT_EQ(cg.kernel.args.size(), 2u);
  ptrs[0] = static_cast<char*>(x.data_ptr());
  ptrs[1] = static_cast<char*>(out.data_ptr());
  std::vector<double> te, tf;
  for (int rep = 0; rep < 7; ++rep) {
    t0 = Clock::now();
    Tensor ref = x * 0.5 * (1.0 + erf(x / 1.41421));
    te.push_back(ms(t0));
    t0 = Clock::now();
    fn(ptrs, cg.kernel.strides.data(), cg.kernel.shape.data(), 0, cg.kernel.numel);
    tf.push_back(ms(t0));
    ASSERT_EQ(std::memcmp(ref.data_ptr(), out.data_ptr(), n * 4), 0);
  }
  std::vector<double> tc, ts;
  for (int rep = 0; rep < 7; ++rep) {
    t0 = Clock::now();
    Tensor cl = x.clone();
    tc.push_back(ms(t0));
    // in cache: 2^12 elements, 4096 times
    t0 = Clock::now();
    for (int k = 0; k < 4096; ++k)
      fn(ptrs, cg.kernel.strides.data(), cg.kernel.shape.data(), int64_t(k % 8) << 12, (int64_t(k % 8) << 12) + 4096);
    ts.push_back(ms(t0));
  }
  std::sort(tc.begin(), tc.end());
  std::sort(ts.begin(), ts.end());
  std::printf("copy (clone) of 2^24 float32: %.1f ms; fused kernel in cache (2^24 elements in 2^12 pieces): %.1f ms\n",
              tc[3], ts[3]);
  std::sort(te.begin(), te.end());
  std::sort(tf.begin(), tf.end());
  std::printf("gelu chain, 2^24 float32, 1 thread (%s): eager %.1f ms, fused %.1f ms (%.1fx)\n", cpu_isa(), te[3], tf[3],
              te[3] / tf[3]);
  std::printf("empty cache: %.0f ms (of which the prelude's precompiled header %.0f ms, %lld built); "
              "another kernel with the header cached: %.0f ms; disk-cache hit: %.2f ms\n",
              cold, st.pch_seconds * 1e3, static_cast<long long>(st.pch_builds), cold_pch, warm);
  // a memory-bound chain: (x + z) * 0.5 - z
  {
    Tensor z = randn({n});
    Recorder r3;
    r3.input(x);
    r3.input(z);
    Tensor s1 = r3.add(x, z);
    Tensor s2 = r3.mul(s1, Scalar(0.5));
    Tensor s3 = r3.add(s2, z, -1);
    CpuCodegen cg3 = generate_cpu(r3.g, r3.group({s3}));
    ASSERT_TRUE(cg3.ok);
    CpuKernelFn fn3 = load_cpu_kernel(cg3.kernel);
    Tensor out3 = empty({n});
    std::vector<char*> p3;
    for (const auto& a : cg3.kernel.args)
      p3.push_back(static_cast<char*>((a.buf == 0 ? x : a.buf == 1 ? z : out3).data_ptr()));
    std::vector<double> e3, f3;
    for (int rep = 0; rep < 7; ++rep) {
      t0 = Clock::now();
      Tensor ref = (x + z) * 0.5 - z;
      e3.push_back(ms(t0));
      t0 = Clock::now();
      fn3(p3.data(), cg3.kernel.strides.data(), cg3.kernel.shape.data(), 0, cg3.kernel.numel);
      f3.push_back(ms(t0));
      ASSERT_EQ(std::memcmp(ref.data_ptr(), out3.data_ptr(), n * 4), 0);
    }
    std::sort(e3.begin(), e3.end());
    std::sort(f3.begin(), f3.end());
    std::printf("(x + z) * 0.5 - z, 2^24 float32, 1 thread: eager %.1f ms, fused %.1f ms (%.1fx)\n", e3[3], f3[3],
                e3[3] / f3[3]);
  }
  setenv("BRISK_COMPILE_CACHE", test_cache_dir().c_str(), 1);
}

}  // namespace
}  // namespace brisk::jit
