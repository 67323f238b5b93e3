// The pointwise test rows (tests/ops/op_rows.h, Note [The test row]) against
// libtorch: the rows give the ops, dtypes and input values (the CPU leg's
// own generator), this file only how to call each row in both libraries (one
// generic lambda where the APIs agree). The cases run through the parity
// harness (tests/parity/parity.h: shapes, result dtypes and values compared,
// torch's errors must be brisk's errors). A row with no call here fails the
// completeness test unless it is an exception with a reason.
//
// Its own executable (the heavy libtorch headers are compiled twice, but
// test_parity stays as it was); three gtests (unary, binary, ternary rows),
// since every test process pays for loading libtorch.
#include "parity/parity.h"

#include <map>
#include <set>

#include "ops/op_rows.h"

namespace parity {
namespace {

namespace rows = brisk::testing::rows;

/// How a row is called in both libraries: a case maker for the values, the
/// two functions for the gradients.
struct Call {
  std::function<Case(std::string, std::vector<In>)> make;
  std::function<BT(const BList&)> brisk_fn;
  std::function<TT(const TList&)> torch_fn;
};
template <class F>
Call call(F f) {
  return {[f](std::string n, std::vector<In> in) { return same(std::move(n), std::move(in), f); },
          [f](const BList& t) { return BT(f(t)); }, [f](const TList& t) { return TT(f(t)); }};
}
template <class FB, class FT>
Call call2(FB fb, FT ft) {
  return {[fb, ft](std::string n, std::vector<In> in) { return pair(std::move(n), std::move(in), fb, ft); },
          [fb](const BList& t) { return BT(fb(t)); }, [ft](const TList& t) { return TT(ft(t)); }};
}

/// How each test row is called, by row name.
const std::map<std::string, Call>& calls() {
  static const std::map<std::string, Call> m = {
      // unary
      {"neg", call(FN(t[0].neg()))},
      {"abs", call(FN(t[0].abs()))},
      {"sign", call(FN(t[0].sign()))},
      {"sgn", call2([](const BList& t) { return brisk::autograd::sgn(t[0]); }, [](const TList& t) { return t[0].sgn(); })},
      {"exp", call(FN(t[0].exp()))},
      {"exp2", call(FN(t[0].exp2()))},
      {"expm1", call(FN(t[0].expm1()))},
      {"log", call(FN(t[0].log()))},
      {"log.special", call(FN(t[0].log()))},
      {"log2", call(FN(t[0].log2()))},
      {"log10", call(FN(t[0].log10()))},
      {"log1p", call(FN(t[0].log1p()))},
      {"sqrt", call(FN(t[0].sqrt()))},
      {"rsqrt", call(FN(t[0].rsqrt()))},
      {"square", call(FN(t[0].square()))},
      {"reciprocal", call(FN(t[0].reciprocal()))},
      {"sin", call(FN(t[0].sin()))},
      {"cos", call(FN(t[0].cos()))},
      {"tan", call(FN(t[0].tan()))},
      {"asin", call(FN(t[0].asin()))},
      {"acos", call(FN(t[0].acos()))},
      {"atan", call(FN(t[0].atan()))},
      {"sinh", call(FN(t[0].sinh()))},
      {"cosh", call(FN(t[0].cosh()))},
      {"tanh", call(FN(t[0].tanh()))},
      {"sigmoid", call(FN(t[0].sigmoid()))},
      {"erf", call(FN(t[0].erf()))},
      {"erfc", call(FN(t[0].erfc()))},
      {"relu", call(FN(t[0].relu()))},
      {"silu", call(FN(silu(t[0])))},
      {"floor", call(FN(t[0].floor()))},
      {"ceil", call(FN(t[0].ceil()))},
      {"round", call(FN(t[0].round()))},
      {"trunc", call(FN(t[0].trunc()))},
      {"frac", call(FN(t[0].frac()))},
      {"logical_not", call(FN(t[0].logical_not()))},
      {"bitwise_not", call(FN(t[0].bitwise_not()))},
      {"isnan", call(FN(t[0].isnan()))},
      {"isinf", call(FN(t[0].isinf()))},
      {"isfinite", call(FN(t[0].isfinite()))},
      {"asinh", call(FN(t[0].asinh()))},
      {"acosh", call(FN(t[0].acosh()))},
      {"atanh", call(FN(t[0].atanh()))},
      {"erfinv", call(FN(t[0].erfinv()))},
      {"lgamma", call(FN(t[0].lgamma()))},
      {"digamma", call(FN(t[0].digamma()))},
      {"mish", call(FN(mish(t[0])))},
      {"logit", call(FN(t[0].logit()))},
      {"logit.eps", call(FN(t[0].logit(0.25)))},
      {"gelu", call(FN(gelu(t[0])))},
      {"gelu.tanh", call(FN(gelu(t[0], "tanh")))},
      {"softplus", call(FN(softplus(t[0])))},
      {"softplus.beta", call(FN(softplus(t[0], 2, 4)))},
      {"hardswish", call(FN(hardswish(t[0])))},
      {"hardsigmoid", call(FN(hardsigmoid(t[0])))},
      {"elu", call(FN(elu(t[0], 1.3)))},
      {"elu.scaled", call(FN(elu(t[0], 1.3, 1.2, 0.8)))},
      {"selu", call(FN(selu(t[0])))},
      {"celu", call(FN(celu(t[0], 0.7)))},
      {"leaky_relu", call(FN(leaky_relu(t[0], 0.2)))},
      {"softshrink", call(FN(softshrink(t[0], 0.5)))},
      {"hardshrink", call(FN(hardshrink(t[0], 0.5)))},
      {"log_sigmoid", call(FN(log_sigmoid(t[0])))},
      {"nan_to_num", call(FN(t[0].nan_to_num(1.5, 100, -100)))},
      {"rsub", call(FN(rsub(t[0], 3)))},
      {"clamp.scalar", call(FN(t[0].clamp(-1, 2)))},
      // binary
      {"threshold_backward", call(FN(threshold_backward(t[0], t[1], 0.5)))},
      {"sigmoid_backward", call(FN(sigmoid_backward(t[0], t[1])))},
      {"tanh_backward", call(FN(tanh_backward(t[0], t[1])))},
      {"silu_backward", call(FN(silu_backward(t[0], t[1])))},
      {"mish_backward", call(FN(mish_backward(t[0], t[1])))},
      {"gelu_backward", call(FN(gelu_backward(t[0], t[1], "none")))},
      {"gelu_backward.tanh", call(FN(gelu_backward(t[0], t[1], "tanh")))},
      {"logit_backward", call(FN(logit_backward(t[0], t[1])))},
      {"logit_backward.eps", call(FN(logit_backward(t[0], t[1], 0.1234567)))},
      {"softplus_backward", call(FN(softplus_backward(t[0], t[1], 1.5, 4.1237)))},
      {"hardswish_backward", call(FN(hardswish_backward(t[0], t[1])))},
      {"hardsigmoid_backward", call(FN(hardsigmoid_backward(t[0], t[1])))},
      {"elu_backward", call(FN(elu_backward(t[0], 1.3, 1.2, 0.8, false, t[1])))},
      {"elu_backward.result", call(FN(elu_backward(t[0], 1.3, 1.2, 0.8, true, t[1])))},
      {"leaky_relu_backward", call(FN(leaky_relu_backward(t[0], t[1], 0.2, false)))},
      {"softshrink_backward", call(FN(softshrink_backward(t[0], t[1], 0.5)))},
      {"hardshrink_backward", call(FN(hardshrink_backward(t[0], t[1], 0.5)))},
      {"log_sigmoid_backward",
       call2([](const BList& t) { return brisk::log_sigmoid_backward(t[0], t[1]); },
             [](const TList& t) { return at::log_sigmoid_backward(t[0], t[1], std::get<1>(at::log_sigmoid_forward(t[1]))); })},
      {"hardtanh_backward", call(FN(hardtanh_backward(t[0], t[1], -1.5, 2.0)))},
      {"add", call(FN(t[0].add(t[1])))},
      {"add.alpha", call(FN(t[0].add(t[1], 2)))},
      {"sub", call(FN(t[0].sub(t[1])))},
      {"mul", call(FN(t[0].mul(t[1])))},
      {"div", call(FN(t[0].div(t[1])))},
      {"div.trunc", call(FN(t[0].div(t[1], L::kTrunc)))},
      {"div.floor", call(FN(t[0].div(t[1], L::kFloor)))},
      {"remainder", call(FN(t[0].remainder(t[1])))},
      {"fmod", call(FN(t[0].fmod(t[1])))},
      {"pow", call(FN(t[0].pow(t[1])))},
      {"pow.negative_base", call(FN(t[0].pow(t[1])))},
      {"pow.scalar_2", call(FN(t[0].pow(2.0)))},
      {"pow.scalar_3", call(FN(t[0].pow(3.0)))},
      {"pow.scalar_0.5", call(FN(t[0].pow(0.5)))},
      {"pow.scalar_-0.5", call(FN(t[0].pow(-0.5)))},
      {"pow.scalar_-1", call(FN(t[0].pow(-1.0)))},
      {"pow.scalar_-2", call(FN(t[0].pow(-2.0)))},
      {"pow.scalar_2.5", call(FN(t[0].pow(2.5)))},
      {"pow.int_scalar_3", call(FN(t[0].pow(3)))},
      {"pow.scalar_base", call(FN(pow(2.0, t[0])))},
      {"minimum", call(FN(t[0].minimum(t[1])))},
      {"maximum", call(FN(t[0].maximum(t[1])))},
      {"atan2", call(FN(t[0].atan2(t[1])))},
      {"hypot", call(FN(t[0].hypot(t[1])))},
      {"logaddexp", call(FN(t[0].logaddexp(t[1])))},
      {"logaddexp2", call(FN(t[0].logaddexp2(t[1])))},
      {"copysign", call(FN(t[0].copysign(t[1])))},
      {"nextafter", call(FN(t[0].nextafter(t[1])))},
      {"xlogy", call(FN(t[0].xlogy(t[1])))},
      {"heaviside", call(FN(t[0].heaviside(t[1])))},
      {"eq", call(FN(t[0].eq(t[1])))},
      {"ne", call(FN(t[0].ne(t[1])))},
      {"lt", call(FN(t[0].lt(t[1])))},
      {"le", call(FN(t[0].le(t[1])))},
      {"gt", call(FN(t[0].gt(t[1])))},
      {"ge", call(FN(t[0].ge(t[1])))},
      {"logical_and", call(FN(t[0].logical_and(t[1])))},
      {"logical_or", call(FN(t[0].logical_or(t[1])))},
      {"logical_xor", call(FN(t[0].logical_xor(t[1])))},
      {"bitwise_and", call(FN(t[0].bitwise_and(t[1])))},
      {"bitwise_or", call(FN(t[0].bitwise_or(t[1])))},
      {"bitwise_xor", call(FN(t[0].bitwise_xor(t[1])))},
      {"bitwise_left_shift", call(FN(t[0].bitwise_left_shift(t[1])))},
      {"bitwise_right_shift", call(FN(t[0].bitwise_right_shift(t[1])))},
      {"isclose", call(FN(isclose(t[0], t[1])))},
      {"masked_fill", call(FN(t[0].masked_fill(t[1], 3)))},
      {"lerp.scalar_weight", call(FN(t[0].lerp(t[1], 0.75)))},
      // ternary
      {"lerp", call(FN(t[0].lerp(t[1], t[2])))},
      {"addcmul", call(FN(t[0].addcmul(t[1], t[2], 2)))},
      {"addcdiv", call(FN(t[0].addcdiv(t[1], t[2], 0.5)))},
      {"clamp", call(FN(t[0].clamp(t[1], t[2])))},
      {"where", call(FN(where(t[0], t[1], t[2])))},
  };
  return m;
}

/// Rows not compared with libtorch, each with the reason.
const std::map<std::string, std::string>& no_parity() {
  static const std::map<std::string, std::string> m = {};
  return m;
}
/// Cases of a row not compared with libtorch 1.13 (dtypes: empty = all;
/// variant: empty = all, else the case's layout name), each with the reason:
/// where torch 2.x and brisk agree and 1.13 differs, or where torch's
/// vectorized loop loses what its scalar loop and brisk compute exactly.
struct Skip {
  std::string row;
  std::vector<ScalarType> dtypes;
  std::string variant;
  const char* reason;
};
const std::vector<Skip>& parity_skips() {
  using namespace brisk;
  // (torch's CUDA kernels and its CPU scalar loop, which takes strided and
  // short inputs, give what brisk gives)
  static const char* kHalfLogitSteps =
      "float16 logit and its gradient: torch 1.13 has no float16 CPU kernel (its reference here is float32, "
      "rounded once); torch 2.15's rounds in float16 steps, as brisk's (tests/ops/test_pytorch_divergences.cpp "
      "HalfLogitComputesInTheDtypesSteps)";
  static const char* kNanGradient =
      "x = nan: brisk gives the gradient of PyTorch's scalar CPU loop (Note [Activation kinks]); its vector loop, "
      "which takes contiguous inputs of two vectors or more, gives nan (hardswish, elu) or 0 (the shrinks, "
      "hardtanh)";
  static const std::vector<Skip> v = {
      {"nextafter", {kHalf, kBFloat16}, "",
       "nextafter steps in the 16-bit representation (torch 2.x's c10 nextafter, as brisk); torch 1.13's reference "
       "here is float32's step, rounded back to the dtype (tests/ops/test_binary_math.cpp checks torch 2.15's "
       "16-bit values)"},
      {"nextafter", {kHalf, kBFloat16}, "special", "as above"},
      {"clamp.scalar", {kUInt8}, "",
       "torch 1.13 converts the bound -1 to uint8 (255) and returns 2 everywhere; torch 2.x and brisk clamp to [0, 2]"},
      {"bitwise_left_shift", {}, "special",
       "counts outside [0, width): torch 1.13 shifts by the count modulo the width; torch 2.x and brisk give 0 "
       "(include/brisk/ops.h)"},
      {"bitwise_right_shift", {}, "special",
       "counts outside [0, width): torch 1.13 shifts by the count modulo the width; torch 2.x and brisk give 0, or "
       "-1 for a negative value"},
      {"div.floor", {kFloat, kBFloat16}, "special",
       "1e30 // -1e-30 overflows: torch 1.13's vectorized loop gives nan, its scalar loop and torch 2.x -inf, as brisk"},
      {"remainder", {kFloat, kBFloat16}, "special",
       "1e30 mod -1e-30: torch's vectorized loop (1.13 and 2.15) computes a - floor(a / b) * b, nan once a / b "
       "overflows; its scalar loop and brisk give the exact result"},
      {"fmod", {kFloat, kBFloat16}, "special",
       "1e30 fmod -1e-30: torch's vectorized loop (1.13 and 2.15) computes a - trunc(a / b) * b, nan once a / b "
       "overflows; its scalar loop and brisk give the exact result"},
      {"gelu_backward", {}, "broadcast",
       "torch's gelu_backward (oneDNN; 1.13 and 2.15) raises 'could not create a primitive descriptor' for "
       "broadcast operands; brisk broadcasts as every binary op"},
      {"gelu_backward", {}, "broadcast_self", "as broadcast: torch's oneDNN gelu_backward raises"},
      {"gelu_backward", {}, "zero_size", "as broadcast: torch's oneDNN gelu_backward raises"},
      {"gelu_backward", {}, "transposed",
       "torch 1.13's oneDNN gelu_backward reads a transposed grad_output as contiguous (wrong values); torch 2.15 "
       "and brisk give the elementwise result"},
      {"logit_backward", {kHalf}, "special",
       "x = -0.0 (float16 -1e-30): brisk gives grad * inf, as torch's scalar loop (1.13 and 2.15: small, strided "
       "and tail elements); torch's vector loop (here its float32 reference) grad / (x (1 - x)), an infinity "
       "with the sign of the zero"},
      {"logit_backward.eps", {}, "special",
       "x = nan with eps: brisk gives nan, as torch's scalar loop (1.13 and 2.15) and its CUDA kernel; torch's "
       "CPU vector loop 0 (nan is outside [eps, 1 - eps]); this case's nan in the tail matches"},
      {"softshrink", {}, "special",
       "x = nan: torch 1.13's vector loop gives 0 (nan fails its tests and it blends zeros); torch 2.15 and brisk "
       "nan (tests/ops/test_pytorch_divergences.cpp)"},
      {"hardswish_backward", {}, "special", kNanGradient},
      {"elu_backward", {}, "special", kNanGradient},
      {"elu_backward.result", {}, "special", kNanGradient},
      {"softshrink_backward", {}, "special", kNanGradient},
      {"hardshrink_backward", {}, "special", kNanGradient},
      {"hardtanh_backward", {}, "special", kNanGradient},
      {"hardswish_backward", {}, "long",
       "x = -3: torch 1.13 takes the middle piece (g * -0.5); torch 2.x and brisk 0 (Note [Activation kinks])"},
      {"logit", {kHalf}, "", kHalfLogitSteps},
      {"logit.eps", {kHalf}, "", kHalfLogitSteps},
      {"logit_backward", {kHalf}, "", kHalfLogitSteps},
      {"logit_backward.eps", {kHalf}, "", kHalfLogitSteps},
      {"lerp", {kHalf}, "special",
       "lerp(-3.7, inf, -100): torch 1.13 (float32 reference: no float16 CPU kernel) gives -inf; torch 2.x and "
       "brisk nan, from end - (end - start) * (1 - weight)"},
  };
  return v;
}
bool skipped(const rows::Row& r, ScalarType dt, const std::string& variant) {
  for (const Skip& k : parity_skips()) {
    if (k.row != r.name || (!k.variant.empty() && k.variant != variant)) continue;
    if (k.dtypes.empty()) return true;
    for (ScalarType t : k.dtypes)
      if (t == dt) return true;
  }
  return false;
}

/// An input of the row: the CPU leg's values (rows::gen_values) for the
/// stored elements, in the harness's layout.
In row_input(rows::Dom dom, ScalarType dt, std::vector<int64_t> shape, Layout layout, uint32_t seed) {
  if (dom == rows::Dom::Mask) dt = brisk::kBool;
  std::vector<int64_t> store = shape;
  if (layout == Layout::Expanded) store[0] = 1;
  int64_t n = 1;
  for (int64_t s : store) n *= s;
  In i = vals(std::move(shape), dt, rows::gen_values(n, dt, dom, seed));
  i.layout = layout;
  return i;
}

/// Special values, the operands laid out differently so that the specials
/// meet in many pairs (the harness cycles through 22 float values).
In in_special(ScalarType dt, int k) {
  In i = in({4, 23}, dt, Gen::Special);
  if (k == 1) i.layout = Layout::Offset;      // shifted by a row of 23
  if (k == 2) i.layout = Layout::Transposed;  // stored 23 x 4
  return i;
}

const char* group_of(const rows::Row& r) {
  switch (brisk::op_info(r.op).kind) {
    case brisk::OpKind::Unary: return "unary";
    case brisk::OpKind::Binary: return "binary";
    default: return "ternary";
  }
}

/// The cases of every row: each dtype of the row, contiguous, transposed,
/// expanded, broadcast, 0-dim and zero-size inputs.
std::vector<Case> op_row_cases() {
  struct Shape {
    const char* name;
    std::vector<std::vector<int64_t>> shapes;  // per input; the last repeats
    Layout first = Layout::Contig;
    int min_arity = 1;
  };
  const std::vector<Shape> shapes = {
      {"contiguous", {{3, 4}}},
      {"transposed", {{3, 4}}, Layout::Transposed},
      {"expanded", {{3, 4}}, Layout::Expanded},
      {"0dim", {{}}},
      {"zero_size", {{0, 4}, {4}}},
      {"broadcast", {{3, 1}, {4}, {1, 4}}, Layout::Contig, 2},
      {"broadcast_self", {{4}, {3, 4}, {3, 1}}, Layout::Contig, 2},
      {"long", {{5, 67}}},
  };
  std::vector<Case> v;
  for (const rows::Row& r : rows::op_test_rows()) {
    auto it = calls().find(r.name);
    if (it == calls().end()) continue;
    for (ScalarType dt : rows::row_dtypes(r)) {
      uint32_t seed = 1;
      for (const Shape& s : shapes) {
        if (s.min_arity > r.arity || skipped(r, dt, s.name)) continue;
        std::vector<In> in;
        for (int k = 0; k < r.arity; ++k) {
          const auto& sh = s.shapes[std::min<size_t>(size_t(k), s.shapes.size() - 1)];
          in.push_back(row_input(r.dom[size_t(k)], dt, sh, k == 0 ? s.first : Layout::Contig, seed * 7 + uint32_t(k)));
        }
        ++seed;
        Case c = it->second.make(std::string(group_of(r)) + "." + r.name + "." + short_name(dt) + "_" + s.name, in);
        // Float16/BFloat16: torch 1.13 computes some of these in the reduced
        // type itself; brisk computes in float32 and rounds once. Not logit:
        // brisk's bfloat16 logit rounds in steps as torch's CPU kernel.
        c.float_reference = !(dt == brisk::kBFloat16 && (r.name == std::string("logit") || r.name == std::string("logit.eps")));
        v.push_back(std::move(c));
      }
      // The harness's special values for every operand (nan, +-inf, +-0,
      // halves, 1e30, +-88; the integer extremes), whatever the row's domain.
      if (skipped(r, dt, "special")) continue;
      std::vector<In> in;
      for (int k = 0; k < r.arity; ++k)
        in.push_back(r.dom[size_t(k)] == rows::Dom::Mask ? mask({4, 23}) : in_special(dt, k));
      Case c = it->second.make(std::string(group_of(r)) + "." + r.name + "." + short_name(dt) + "_special", in);
      // float16 x ** +-0.5 is pow in torch's own float16 kernel, sqrt in float32 ((-0) ** 0.5)
      const std::string nm = r.name;
      c.float_reference = !(dt == brisk::kHalf && (nm == "pow.scalar_0.5" || nm == "pow.scalar_-0.5"));
      v.push_back(std::move(c));
    }
  }
  return v;
}

class ParityOpRows : public ::testing::TestWithParam<Group<Case>> {};
TEST_P(ParityOpRows, Run) { run_group(GetParam(), run_case); }
INSTANTIATE_TEST_SUITE_P(Pointwise, ParityOpRows, ::testing::ValuesIn(group_cases(op_row_cases())),
                         [](const ::testing::TestParamInfo<Group<Case>>& i) { return sanitize(i.param.name); });

// ---- gradients against libtorch ------------------------------------------------------------

/// Values at the kinks, ties and poles of a domain, for the gradient
/// conventions (every input gets the same value at the same element).
std::vector<double> kinks(rows::Dom d) {
  using D = rows::Dom;
  switch (d) {
    case D::Pos: return {1, 2, 0.5};
    case D::GeOne: return {1, 2};
    case D::Unit: return {0, 0.5, -0.5};
    case D::Prob: return {0.5, 0.25};
    case D::Exp: return {0, 1, 2};
    case D::NonZero: return {1, -1, 0.5, 2};
    case D::Special: return {0, -0.0, 1, -1, INFINITY, -INFINITY, NAN};
    default: return {0, 1, -1, 0.5, -2, 2.5};
  }
}

/// Gradient rows whose convention at a kink brisk takes from torch 2.x where
/// torch 1.13 differs (checked with torch 2.15); not compared at kinks.
const std::map<std::string, std::string>& kink_differences() {
  static const std::map<std::string, std::string> m = {
      {"clamp.scalar.grad_self",
       "x equal to a Scalar bound: torch 1.13 passes the gradient, torch 2.x and brisk give 0 (a tensor bound: "
       "torch 2.x and brisk split it, 0.5 each)"},
      {"atan2.grad_self", "atan2(0, 0): torch 1.13's gradient is nan (0 / 0), torch 2.x's and brisk's 0"},
      {"atan2.grad_other", "atan2(0, 0): torch 1.13's gradient is nan (0 / 0), torch 2.x's and brisk's 0"},
  };
  return m;
}

/// Rows whose gradient at NaN is PyTorch's scalar CPU loop's (NaN fails
/// every test: the positive branch, or the gradient passed) where its
/// vectorized loop, which runs on all but a tensor's tail, gives NaN or 0
/// (Note [Activation kinks] in src/nn/activation.cpp): compared at their
/// kinks without NaN, and at the extra kinks listed.
const std::map<std::string, std::vector<double>>& scalar_loop_at_nan() {
  static const std::map<std::string, std::vector<double>> m = {
      {"hardswish", {-3.0, 3.0}}, {"elu", {}},  {"elu.scaled", {}},        {"selu", {}},
      {"celu", {}},               {"softshrink", {-0.5, 0.5}}, {"hardshrink", {-0.5, 0.5}},
  };
  return m;
}

/// Rows whose own derivative torch does not implement ("derivative for
/// aten::silu_backward is not implemented", 1.13 and 2.15; hardsigmoid_backward),
/// or torch 1.13 not for every input (elu_backward's with is_result: 0 for
/// the result, and no graph where the result is broadcast; torch 2.15 has
/// EluBackwardBackward0): brisk's is checked by gradcheck and gradgradcheck
/// in tests/ops/test_op_rows.cpp.
const std::set<std::string>& no_torch_derivative() {
  static const std::set<std::string> s = {"silu_backward",        "mish_backward",       "logit_backward",
                                          "logit_backward.eps",   "hardsigmoid_backward",
                                          "elu_backward.result"};
  return s;
}

/// Gradient conventions where finite differences say nothing (kinks, ties,
/// poles): float64 inputs from the row's own values, every other element a
/// value of kinks() shared by all inputs (so that maximum, clamp, fmod, ...
/// meet their ties), once with equal shapes and once with the differentiated
/// input broadcast as in the gradient rows; brisk's gradient must equal
/// torch's (nan where torch's is nan).
TEST(ParityOpRowsGrad, GradientsAtKinksAndTiesMatchTorch) {
  for (const rows::GradRow& g : rows::grad_rows()) {
    const rows::Row& r = *g.row;
    auto it = calls().find(r.name);
    if (it == calls().end() || kink_differences().count(g.name()) || no_torch_derivative().count(r.name)) continue;
    for (bool broadcast : {false, true}) {
      if (broadcast && r.arity == 1) continue;
      SCOPED_TRACE(g.name() + (broadcast ? " (broadcast)" : ""));
      BList b;
      TList t;
      for (int j = 0; j < r.arity; ++j) {
        const bool small = broadcast && j == g.arg;
        const std::vector<int64_t> shape = small ? std::vector<int64_t>{4} : std::vector<int64_t>{3, 4};
        const int64_t n = small ? 4 : 12;
        const rows::Dom dom = r.dom[size_t(j)];
        std::vector<double> v = rows::gen_values(n, brisk::kDouble, dom, 11 + uint32_t(j));
        if (dom != rows::Dom::Mask) {
          std::vector<double> k = kinks(dom);
          if (auto sl = scalar_loop_at_nan().find(r.name); sl != scalar_loop_at_nan().end()) {
            std::erase_if(k, [](double x) { return std::isnan(x); });
            k.insert(k.end(), sl->second.begin(), sl->second.end());
            for (double& x : v)
              if (std::isnan(x)) x = 0.75;
          }
          for (int64_t e = 0; e < n; e += 2) v[size_t(e)] = k[size_t(e / 2) % k.size()];
        }
        BT bj;
        TT tj;
        make_input(vals(shape, dom == rows::Dom::Mask ? brisk::kBool : brisk::kDouble, v), 0, bj, tj);
        if (j == g.arg) {
          bj.requires_grad_(true);
          tj.requires_grad_(true);
        }
        b.push_back(bj);
        t.push_back(tj);
      }
      BT by = it->second.brisk_fn(b);
      TT ty = it->second.torch_fn(t);
      by.backward(brisk::ones_like(by));
      ty.backward(at::ones_like(ty));
      const BT bg = b[size_t(g.arg)].grad();
      const TT tg = t[size_t(g.arg)].grad();
      ASSERT_TRUE(bg.defined()) << "brisk gives no gradient";
      ASSERT_TRUE(tg.defined()) << "torch gives no gradient";
      std::ostringstream in;
      for (size_t j = 0; j < b.size(); ++j) in << "\n input " << j << ": " << t[j].flatten();
      EXPECT_TRUE(compare(bg, tg, tol(1e-7, 1e-7), false, "gradient")) << in.str();
    }
  }
}

TEST(ParityOpRowsTable, EveryRowIsCalledHereOrExcepted) {
  for (const rows::Row& r : rows::op_test_rows()) {
    const bool called = calls().count(r.name) > 0, excepted = no_parity().count(r.name) > 0;
    EXPECT_TRUE(called || excepted) << "test row " << r.name
                                    << " has no libtorch call in tests/parity/test_parity_op_rows.cpp";
    EXPECT_FALSE(called && excepted) << r.name << ": called and excepted";
  }
  for (const Skip& k : parity_skips()) {
    bool found = false;
    for (const rows::Row& r : rows::op_test_rows()) found |= r.name == k.row;
    EXPECT_TRUE(found) << k.row << ": no test row of that name (stale skip)";
  }
  for (const auto& [name, reason] : kink_differences()) {
    bool found = false;
    for (const rows::GradRow& g : rows::grad_rows()) found |= g.name() == name;
    EXPECT_TRUE(found) << name << ": no gradient row of that name (stale entry)";
  }
  for (const auto& [name, call] : calls()) {
    bool found = false;
    for (const rows::Row& r : rows::op_test_rows()) found |= r.name == name;
    EXPECT_TRUE(found) << name << ": no test row of that name (stale entry)";
  }
}

}  // namespace
}  // namespace parity
