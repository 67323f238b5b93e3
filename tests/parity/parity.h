// The parity harness: run the same case through brisk and libtorch on the
// same input bytes and compare shapes, dtypes and values.
//
// Only tests/parity/test_parity.cpp includes this header (libtorch headers are
// heavy: one translation unit pays for them once).
//
// A case is a name, input specs and one lambda per library. Most cases use a
// single *generic* lambda run on both sides: brisk's API mirrors libtorch's,
// so `[](const auto& t) { return t[0].sum(1, true); }` means the same thing for
// std::vector<brisk::Tensor> and std::vector<at::Tensor>. Names that differ
// between the two (Slice, None, nullopt, dtypes, rounding modes) come from
// Lib<Tensor> (see LibOf below).
//
// Note [Parity verdicts]
// - torch returns, brisk returns: same number of outputs, each with the same
//   shape and dtype (mapped), values equal (integers, bool) or close (floats,
//   tolerance by result dtype, torch.testing's defaults unless the case says).
// - torch throws c10::Error: brisk must throw brisk::Error (whatever the
//   message; the Errors family checks messages).
// - torch 1.13 lacks a CPU kernel for Half/BFloat16 ("... not implemented for
//   'Half'"): brisk computes those dtypes in float and rounds, so the reference
//   is torch on float32 copies of the inputs, float32 outputs rounded back.
// - Some libtorch helpers throw std::runtime_error instead of c10::Error; any
//   std::exception from libtorch counts as "torch throws".
// - Inputs must come back unchanged from both libraries.
#pragma once
#include <ATen/ATen.h>
#include <ATen/TensorIndexing.h>
#include <gtest/gtest.h>

#include <brisk/brisk.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace parity {

using BT = brisk::Tensor;
using TT = at::Tensor;
using BList = std::vector<BT>;
using TList = std::vector<TT>;
using brisk::ScalarType;

// ---- dtypes -------------------------------------------------------------------

inline at::ScalarType to_torch(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return at::kBool;
    case ScalarType::UInt8: return at::kByte;
    case ScalarType::Int8: return at::kChar;
    case ScalarType::Int16: return at::kShort;
    case ScalarType::Int32: return at::kInt;
    case ScalarType::Int64: return at::kLong;
    case ScalarType::Half: return at::kHalf;
    case ScalarType::BFloat16: return at::kBFloat16;
    case ScalarType::Float: return at::kFloat;
    case ScalarType::Double: return at::kDouble;
    default: return at::ScalarType::Undefined;
  }
}

/// Short dtype names for case names: f32, bf16, i64, b, ...
inline const char* short_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "b";
    case ScalarType::UInt8: return "u8";
    case ScalarType::Int8: return "i8";
    case ScalarType::Int16: return "i16";
    case ScalarType::Int32: return "i32";
    case ScalarType::Int64: return "i64";
    case ScalarType::Half: return "f16";
    case ScalarType::BFloat16: return "bf16";
    case ScalarType::Float: return "f32";
    case ScalarType::Double: return "f64";
    default: return "undef";
  }
}

constexpr ScalarType kAllDtypes[] = {brisk::kBool, brisk::kUInt8, brisk::kInt8,     brisk::kInt16, brisk::kInt32,
                                     brisk::kInt64, brisk::kHalf,  brisk::kBFloat16, brisk::kFloat, brisk::kDouble};
constexpr ScalarType kNumericDtypes[] = {brisk::kUInt8, brisk::kInt8,     brisk::kInt16, brisk::kInt32, brisk::kInt64,
                                         brisk::kHalf,  brisk::kBFloat16, brisk::kFloat, brisk::kDouble};
constexpr ScalarType kFloatDtypes[] = {brisk::kHalf, brisk::kBFloat16, brisk::kFloat, brisk::kDouble};
constexpr ScalarType kIntDtypes[] = {brisk::kUInt8, brisk::kInt8, brisk::kInt16, brisk::kInt32, brisk::kInt64};

// ---- library adapters for generic lambdas ------------------------------------------

template <class T>
struct Lib;

template <>
struct Lib<brisk::Tensor> {
  static constexpr ScalarType kBool = brisk::kBool, kUInt8 = brisk::kUInt8, kInt = brisk::kInt32,
                              kLong = brisk::kInt64, kHalf = brisk::kHalf, kBFloat16 = brisk::kBFloat16,
                              kFloat = brisk::kFloat, kDouble = brisk::kDouble;
  // A function, not a type alias: `L::Slice(1, L::None)` then needs no
  // `typename` inside generic lambdas.
  template <class... A>
  static brisk::indexing::Slice Slice(A... a) {
    return brisk::indexing::Slice(a...);
  }
  static constexpr auto None = brisk::indexing::None;
  static constexpr auto Ellipsis = brisk::indexing::Ellipsis;
  static constexpr auto nullopt = std::nullopt;
  static constexpr auto kTrunc = brisk::RoundingMode::Trunc;
  static constexpr auto kFloor = brisk::RoundingMode::Floor;
  static ScalarType dtype(ScalarType t) { return t; }
  static BT empty(std::vector<int64_t> shape, ScalarType t) { return brisk::empty(shape, t); }
  static BT scalar_tensor(double v, ScalarType t) { return brisk::scalar_tensor(v, t); }
  static BT var(const BT& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
    return brisk::var(x, dims, correction, keepdim);
  }
  static BT std(const BT& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
    return brisk::std(x, dims, correction, keepdim);
  }
  static std::tuple<BT, BT> var_mean(const BT& x, std::optional<std::vector<int64_t>> dims, int64_t correction,
                                     bool keepdim) {
    return brisk::var_mean(x, dims, correction, keepdim);
  }
  static std::tuple<BT, BT> sort(const BT& x, int64_t dim, bool descending) { return brisk::sort(x, dim, descending); }
  static BT pad(const BT& x, std::vector<int64_t> p, double value) { return brisk::pad(x, p, value); }
  static BT norm(const BT& x, double p, std::vector<int64_t> dims, bool keepdim) {
    return brisk::norm(x, p, dims, keepdim);
  }
};

template <>
struct Lib<at::Tensor> {
  static constexpr at::ScalarType kBool = at::kBool, kUInt8 = at::kByte, kInt = at::kInt, kLong = at::kLong,
                                  kHalf = at::kHalf, kBFloat16 = at::kBFloat16, kFloat = at::kFloat,
                                  kDouble = at::kDouble;
  template <class... A>
  static at::indexing::Slice Slice(A... a) {
    return at::indexing::Slice(a...);
  }
  static constexpr auto None = at::indexing::None;
  static inline const at::indexing::EllipsisIndexType& Ellipsis = at::indexing::Ellipsis;
  static constexpr auto nullopt = c10::nullopt;
  static constexpr c10::string_view kTrunc = "trunc";
  static constexpr c10::string_view kFloor = "floor";
  static at::ScalarType dtype(ScalarType t) { return to_torch(t); }
  static TT empty(std::vector<int64_t> shape, ScalarType t) { return at::empty(shape, at::dtype(to_torch(t))); }
  static TT scalar_tensor(double v, ScalarType t) { return at::scalar_tensor(v, at::dtype(to_torch(t))); }
  static TT var(const TT& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
    // An explicit optional: a plain integer would pick the `bool unbiased` overload.
    const c10::optional<int64_t> corr(correction);
    return dims ? at::var(x, at::OptionalIntArrayRef(*dims), corr, keepdim)
                : at::var(x, at::OptionalIntArrayRef(c10::nullopt), corr, keepdim);
  }
  static TT std(const TT& x, std::optional<std::vector<int64_t>> dims, int64_t correction, bool keepdim) {
    const c10::optional<int64_t> corr(correction);
    return dims ? at::std(x, at::OptionalIntArrayRef(*dims), corr, keepdim)
                : at::std(x, at::OptionalIntArrayRef(c10::nullopt), corr, keepdim);
  }
  static std::tuple<TT, TT> var_mean(const TT& x, std::optional<std::vector<int64_t>> dims, int64_t correction,
                                     bool keepdim) {
    const c10::optional<int64_t> corr(correction);
    return dims ? at::var_mean(x, at::OptionalIntArrayRef(*dims), corr, keepdim)
                : at::var_mean(x, at::OptionalIntArrayRef(c10::nullopt), corr, keepdim);
  }
  // brisk's sort is documented stable; compare against torch's stable sort.
  static std::tuple<TT, TT> sort(const TT& x, int64_t dim, bool descending) {
    return at::sort(x, /*stable=*/true, dim, descending);
  }
  static TT pad(const TT& x, std::vector<int64_t> p, double value) { return at::pad(x, p, "constant", value); }
  static TT norm(const TT& x, double p, std::vector<int64_t> dims, bool keepdim) {
    return at::norm(x, at::Scalar(p), dims, keepdim);
  }
};

/// The adapter for the element type of a tensor list: LibOf<decltype(t)>::Slice.
template <class V>
using LibOf = Lib<typename std::decay_t<V>::value_type>;

/// A list of dims: libtorch's braced {0, 2} is ambiguous (int or Dimname list).
using D = std::vector<int64_t>;

/// A generic case lambda: FN(t[0].sum(1, true)). `t` is the input list and `L`
/// the library adapter.
#define FN(...)                                                  \
  [](const auto& t) {                                            \
    using L [[maybe_unused]] = ::parity::LibOf<decltype(t)>;     \
    return __VA_ARGS__;                                          \
  }

/// A scalar operand for ops that libtorch declares only for tensors
/// (logical_and, ...): brisk takes the Scalar, torch a wrapped-number 0-dim
/// tensor, which promotes exactly like a Python scalar.
template <class S>
brisk::Scalar scalar_arg(const BT&, S s) {
  return brisk::Scalar(s);
}
template <class S>
TT scalar_arg(const TT&, S s) {
  TT w = at::scalar_to_tensor(at::Scalar(s));
  w.unsafeGetTensorImpl()->set_wrapped_number(true);
  return w;
}

/// Normalises what a case lambda returns to a list of tensors.
template <class T>
std::vector<T> outs(T t) {
  return {std::move(t)};
}
template <class T>
std::vector<T> outs(std::vector<T> v) {
  return v;
}
template <class T>
std::vector<T> outs(std::tuple<T, T> t) {
  return {std::get<0>(t), std::get<1>(t)};
}

// ---- inputs ------------------------------------------------------------------------

/// How an input's values are drawn (deterministically, from the case name).
enum class Gen {
  Normal,    // floats N(0,1); integers uniform in [-10, 10] ([0, 20] for uint8); bool p=0.5
  Positive,  // floats U(0.1, 4); integers in [1, 10]; bool true
  Unit,      // floats U(-0.9, 0.9) (asin, acos domains)
  NonZero,   // like Positive with a random sign: divisors
  Range,     // uniform integers in [lo, hi) (any dtype): indices, exponents
  Distinct,  // a permutation of distinct values (sort, argmax, topk without ties)
  Special,   // nan, +-inf, +-0, halves (rounding), large and tiny values
  Values,    // explicit values, row-major (contiguous layout only)
};

/// Memory layout of an input: the same view is taken on both sides.
enum class Layout {
  Contig,
  Transposed,  // stored with the last two dims swapped, then transpose(-2, -1)
  Strided,     // stored with the last dim doubled, then slice(-1, 0, end, 2)
  Expanded,    // stored with dim 0 of size 1, then expand (stride 0)
  Offset,      // stored with one extra leading row along dim 0, then narrow (storage offset)
};

struct In {
  std::vector<int64_t> shape;
  ScalarType dtype = brisk::kFloat;
  Gen gen = Gen::Normal;
  Layout layout = Layout::Contig;
  double lo = 0, hi = 0;
  std::vector<double> values;

  In T() const { auto c = *this; c.layout = Layout::Transposed; return c; }
  In S() const { auto c = *this; c.layout = Layout::Strided; return c; }
  In X() const { auto c = *this; c.layout = Layout::Expanded; return c; }
  In O() const { auto c = *this; c.layout = Layout::Offset; return c; }
  In as(Gen g) const { auto c = *this; c.gen = g; return c; }
};

/// A random input of the given shape and dtype.
inline In in(std::vector<int64_t> shape, ScalarType dt = brisk::kFloat, Gen g = Gen::Normal) {
  In i;
  i.shape = std::move(shape);
  i.dtype = dt;
  i.gen = g;
  return i;
}
/// Integers uniform in [lo, hi) (int64 unless given): index tensors.
inline In range(std::vector<int64_t> shape, int64_t lo, int64_t hi, ScalarType dt = brisk::kInt64) {
  In i = in(std::move(shape), dt, Gen::Range);
  i.lo = double(lo);
  i.hi = double(hi);
  return i;
}
/// A bool mask, p = 0.5.
inline In mask(std::vector<int64_t> shape) { return in(std::move(shape), brisk::kBool); }
/// Explicit values in row-major order.
inline In vals(std::vector<int64_t> shape, ScalarType dt, std::vector<double> v) {
  In i = in(std::move(shape), dt, Gen::Values);
  i.values = std::move(v);
  return i;
}

// ---- cases -------------------------------------------------------------------------

/// Tolerances; negative means "the default for the result dtype".
struct Tol {
  double rtol = -1, atol = -1;
};
inline Tol tol(double rtol, double atol) { return Tol{rtol, atol}; }

/// A case's name is "group.variant": the group (an op, usually) is one gtest,
/// the variants run inside it (see Note [Parity test granularity]).
struct Case {
  std::string name;
  std::vector<In> inputs;
  std::function<BList(const BList&)> brisk_fn;
  std::function<TList(const TList&)> torch_fn;
  Tol tolerance;
  bool check_strides = false;  // views: strides and storage offset must match too
  // Half/BFloat16 inputs: compare with torch on float32 copies, rounded back
  // (for ops whose torch 1.13 reduced-precision CPU kernel is less accurate
  // than computing in float and rounding once; the case says which).
  bool float_reference = false;
};

/// One generic lambda for both libraries.
template <class F>
Case same(std::string name, std::vector<In> inputs, F f, Tol t = {}) {
  Case c;
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.brisk_fn = [f](const BList& x) { return outs(f(x)); };
  c.torch_fn = [f](const TList& x) { return outs(f(x)); };
  c.tolerance = t;
  return c;
}
/// Separate lambdas where the two APIs differ.
template <class FB, class FT>
Case pair(std::string name, std::vector<In> inputs, FB fb, FT ft, Tol t = {}) {
  Case c;
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.brisk_fn = [fb](const BList& x) { return outs(fb(x)); };
  c.torch_fn = [ft](const TList& x) { return outs(ft(x)); };
  c.tolerance = t;
  return c;
}
/// A view case: values, and strides and storage offset as well.
template <class F>
Case view_case(std::string name, std::vector<In> inputs, F f) {
  Case c = same(std::move(name), std::move(inputs), f);
  c.check_strides = true;
  return c;
}

/// A case where both libraries must throw (brisk::Error and c10::Error).
struct ErrorCase {
  std::string name;
  std::vector<In> inputs;
  std::function<void(const BList&)> brisk_fn;
  std::function<void(const TList&)> torch_fn;
  std::vector<std::string> pieces;  // fragments brisk's message must contain
  bool torch_throws = true;         // false: a documented design difference
};
template <class F>
ErrorCase both_throw(std::string name, std::vector<In> inputs, std::vector<std::string> pieces, F f) {
  ErrorCase c;
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.brisk_fn = [f](const BList& x) { (void)f(x); };
  c.torch_fn = [f](const TList& x) { (void)f(x); };
  c.pieces = std::move(pieces);
  return c;
}

/// A design difference: brisk throws where libtorch does not (the case's
/// comment says why); torch must still accept the input, so that the case is
/// revisited if libtorch changes.
template <class F>
ErrorCase brisk_throws(std::string name, std::vector<In> inputs, std::vector<std::string> pieces, F f) {
  ErrorCase c = both_throw(std::move(name), std::move(inputs), std::move(pieces), f);
  c.torch_throws = false;
  return c;
}

// ---- making inputs -------------------------------------------------------------------

/// splitmix64: small, fast, the same everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  int64_t integer(int64_t lo, int64_t hi) {
    if (hi <= lo) {
      ADD_FAILURE() << "empty integer range [" << lo << ", " << hi << ")";
      return lo;
    }
    return lo + int64_t(next() % uint64_t(hi - lo));
  }
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

inline uint64_t hash_name(const std::string& s, uint64_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

inline std::vector<double> generate(const In& spec, int64_t n, Rng& rng) {
  std::vector<double> v(static_cast<size_t>(n));
  const ScalarType dt = spec.dtype;
  const bool fp = brisk::is_floating_point(dt);
  switch (spec.gen) {
    case Gen::Normal:
      for (auto& x : v) {
        if (dt == brisk::kBool) x = double(rng.next() & 1);
        else if (dt == brisk::kUInt8) x = double(rng.integer(0, 21));
        else if (!fp) x = double(rng.integer(-10, 11));
        else x = rng.normal();
      }
      break;
    case Gen::Positive:
      for (auto& x : v) x = dt == brisk::kBool ? 1.0 : fp ? 0.1 + 3.9 * rng.uniform() : double(rng.integer(1, 11));
      break;
    case Gen::Unit:
      for (auto& x : v) x = fp ? -0.9 + 1.8 * rng.uniform() : double(rng.integer(0, 2));
      break;
    case Gen::NonZero:
      for (auto& x : v) {
        const double sign = (dt == brisk::kBool || dt == brisk::kUInt8 || (rng.next() & 1)) ? 1.0 : -1.0;
        x = dt == brisk::kBool ? 1.0 : fp ? sign * (0.1 + 3.9 * rng.uniform()) : sign * double(rng.integer(1, 11));
      }
      break;
    case Gen::Range:
      for (auto& x : v) x = double(rng.integer(int64_t(spec.lo), int64_t(spec.hi)));
      break;
    case Gen::Distinct: {
      // Fisher-Yates over 0..n-1, then centred and scaled so that the values
      // stay exact in every dtype (0.25 steps for floats).
      std::vector<int64_t> p(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
      for (int64_t i = n - 1; i > 0; --i) std::swap(p[size_t(i)], p[size_t(rng.integer(0, i + 1))]);
      for (int64_t i = 0; i < n; ++i) {
        double k = double(p[size_t(i)]);
        v[size_t(i)] = dt == brisk::kUInt8 ? k : fp ? (k - double(n / 2)) * 0.25 : k - double(n / 2);
      }
      break;
    }
    case Gen::Special: {
      static const double fvals[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, 1e-3,
                                     100.0, -100.0, 3.7, -3.7, 1e30, -1e-30, 0.999, 1.0, -1.0, 88.0, -88.0};
      static const double ivals[] = {0,   1,    -1,    2,      -2,           7,           -7,
                                     100, -100, 127,   -128,   2147483647.0, -2147483648.0,
                                     300, -300, 32767, -32768};
      static const double uvals[] = {0, 1, 2, 7, 100, 127, 128, 200, 255};
      for (int64_t i = 0; i < n; ++i) {
        if (dt == brisk::kBool) v[size_t(i)] = double(i & 1);
        else if (dt == brisk::kUInt8) v[size_t(i)] = uvals[size_t(i) % std::size(uvals)];
        else if (!fp) v[size_t(i)] = ivals[size_t(i) % std::size(ivals)];
        else v[size_t(i)] = fvals[size_t(i) % std::size(fvals)];
      }
      break;
    }
    case Gen::Values:
      v = spec.values;
      break;
  }
  return v;
}

/// Writes v as dtype dt at p[i] (the same conversion for both libraries).
inline void store(void* p, int64_t i, ScalarType dt, double v) {
  switch (dt) {
    case ScalarType::Bool: static_cast<bool*>(p)[i] = v != 0; break;
    case ScalarType::UInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(static_cast<int64_t>(v)); break;
    case ScalarType::Int8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<int64_t>(v)); break;
    case ScalarType::Int16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(static_cast<int64_t>(v)); break;
    case ScalarType::Int32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(static_cast<int64_t>(v)); break;
    case ScalarType::Int64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case ScalarType::Half: static_cast<brisk::Half*>(p)[i] = brisk::Half(float(v)); break;
    case ScalarType::BFloat16: static_cast<brisk::BFloat16*>(p)[i] = brisk::BFloat16(float(v)); break;
    case ScalarType::Float: static_cast<float*>(p)[i] = float(v); break;
    case ScalarType::Double: static_cast<double*>(p)[i] = v; break;
    default: break;
  }
}

/// Builds the brisk and torch tensors of one input from the same bytes.
inline void make_input(const In& spec, uint64_t seed, BT& b, TT& t) {
  std::vector<int64_t> store_shape = spec.shape;
  const int64_t nd = int64_t(store_shape.size());
  switch (spec.layout) {
    case Layout::Contig: break;
    case Layout::Transposed: std::swap(store_shape[size_t(nd - 2)], store_shape[size_t(nd - 1)]); break;
    case Layout::Strided: store_shape[size_t(nd - 1)] *= 2; break;
    case Layout::Expanded: store_shape[0] = 1; break;
    case Layout::Offset: store_shape[0] += 1; break;
  }
  int64_t n = 1;
  for (int64_t s : store_shape) n *= s;
  Rng rng{seed};
  std::vector<double> v = generate(spec, n, rng);
  if (spec.gen == Gen::Values && int64_t(v.size()) != n) {
    ADD_FAILURE() << "input has " << v.size() << " values for " << n << " elements";
    v.resize(size_t(n), 0.0);
  }

  b = brisk::empty(store_shape, spec.dtype);
  t = at::empty(store_shape, at::dtype(to_torch(spec.dtype)));
  for (int64_t i = 0; i < n; ++i) store(b.data_ptr(), i, spec.dtype, v[size_t(i)]);
  if (n > 0) std::memcpy(t.data_ptr(), b.data_ptr(), size_t(n) * brisk::element_size(spec.dtype));

  switch (spec.layout) {
    case Layout::Contig: break;
    case Layout::Transposed:
      b = b.transpose(-2, -1);
      t = t.transpose(-2, -1);
      break;
    case Layout::Strided:
      b = b.slice(-1, 0, std::nullopt, 2);
      t = t.slice(-1, 0, c10::nullopt, 2);
      break;
    case Layout::Expanded:
      b = b.expand(spec.shape);
      t = t.expand(spec.shape);
      break;
    case Layout::Offset:
      b = b.narrow(0, 1, spec.shape[0]);
      t = t.narrow(0, 1, spec.shape[0]);
      break;
  }
}

// ---- comparing ---------------------------------------------------------------------

inline Tol default_tol(ScalarType t) {
  // torch.testing.assert_close's defaults.
  switch (t) {
    case ScalarType::Half: return {1e-3, 1e-5};
    case ScalarType::BFloat16: return {1.6e-2, 1e-5};
    case ScalarType::Float: return {1.3e-6, 1e-5};
    case ScalarType::Double: return {1e-7, 1e-7};
    default: return {0, 0};
  }
}

/// Elements of a contiguous brisk tensor as double (floats) or int64 (others).
inline void read_brisk(const BT& x, std::vector<double>& f, std::vector<int64_t>& i) {
  BT c = x.contiguous();
  const void* p = c.numel() ? c.data_ptr() : nullptr;
  const int64_t n = c.numel();
  const bool fp = brisk::is_floating_point(c.dtype());
  (fp ? f.resize(size_t(n)) : i.resize(size_t(n)));
  for (int64_t k = 0; k < n; ++k) {
    switch (c.dtype()) {
      case ScalarType::Bool: i[size_t(k)] = static_cast<const bool*>(p)[k]; break;
      case ScalarType::UInt8: i[size_t(k)] = static_cast<const uint8_t*>(p)[k]; break;
      case ScalarType::Int8: i[size_t(k)] = static_cast<const int8_t*>(p)[k]; break;
      case ScalarType::Int16: i[size_t(k)] = static_cast<const int16_t*>(p)[k]; break;
      case ScalarType::Int32: i[size_t(k)] = static_cast<const int32_t*>(p)[k]; break;
      case ScalarType::Int64: i[size_t(k)] = static_cast<const int64_t*>(p)[k]; break;
      case ScalarType::Half: f[size_t(k)] = float(static_cast<const brisk::Half*>(p)[k]); break;
      case ScalarType::BFloat16: f[size_t(k)] = float(static_cast<const brisk::BFloat16*>(p)[k]); break;
      case ScalarType::Float: f[size_t(k)] = static_cast<const float*>(p)[k]; break;
      case ScalarType::Double: f[size_t(k)] = static_cast<const double*>(p)[k]; break;
      default: break;
    }
  }
}
inline void read_torch(const TT& x, std::vector<double>& f, std::vector<int64_t>& i) {
  if (at::isFloatingType(x.scalar_type())) {
    TT c = x.to(at::kDouble).contiguous();
    f.assign(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  } else {
    TT c = x.to(at::kLong).contiguous();
    i.assign(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  }
}

inline std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream os;
  os << '[';
  for (size_t k = 0; k < s.size(); ++k) os << (k ? ", " : "") << s[k];
  return os.str() + ']';
}
inline std::string shape_str(const std::vector<int64_t>& s) { return shape_str(c10::IntArrayRef(s)); }
inline std::string shape_str(brisk::IntArrayRef s) {
  return shape_str(c10::IntArrayRef(s.data(), s.size()));
}

/// Row-major multi-index of flat element k in shape s.
inline std::string multi_index(int64_t k, c10::IntArrayRef s) {
  std::vector<int64_t> idx(s.size());
  for (int64_t d = int64_t(s.size()) - 1; d >= 0; --d) {
    idx[size_t(d)] = s[size_t(d)] ? k % s[size_t(d)] : 0;
    k = s[size_t(d)] ? k / s[size_t(d)] : 0;
  }
  return shape_str(idx);
}

/// Compares one output; `what` names it in messages ("output 0", "input 1").
inline ::testing::AssertionResult compare(const BT& got, const TT& want, Tol tol, bool check_strides,
                                          const std::string& what) {
  std::ostringstream err;
  const auto bt = to_torch(got.dtype());
  if (bt != want.scalar_type())
    err << what << ": dtype " << brisk::dtype_name(got.dtype()) << " but torch gives " << want.scalar_type()
        << "\n";
  if (shape_str(got.sizes()) != shape_str(want.sizes())) {
    err << what << ": shape " << shape_str(got.sizes()) << " but torch gives " << shape_str(want.sizes());
    return ::testing::AssertionFailure() << err.str();
  }
  if (check_strides) {
    if (shape_str(got.strides()) != shape_str(want.strides()))
      err << what << ": strides " << shape_str(got.strides()) << " but torch gives " << shape_str(want.strides())
          << "\n";
    if (got.storage_offset() != want.storage_offset())
      err << what << ": storage offset " << got.storage_offset() << " but torch gives " << want.storage_offset()
          << "\n";
  }
  std::vector<double> gf, wf;
  std::vector<int64_t> gi, wi;
  read_brisk(got, gf, gi);
  read_torch(want, wf, wi);
  // Compare as floats whenever either side is floating (a dtype mismatch is
  // already reported above; the values still help).
  if (!gi.empty() && !wf.empty()) gf.assign(gi.begin(), gi.end()), gi.clear();
  if (!wi.empty() && !gf.empty()) wf.assign(wi.begin(), wi.end()), wi.clear();
  Tol d = default_tol(got.dtype());
  const double rtol = tol.rtol >= 0 ? tol.rtol : d.rtol, atol = tol.atol >= 0 ? tol.atol : d.atol;
  int64_t bad = 0;
  const int64_t n = want.numel();
  for (int64_t k = 0; k < n; ++k) {
    bool ok;
    double g, w;
    if (!wf.empty() || !gf.empty()) {
      g = gf[size_t(k)], w = wf[size_t(k)];
      if (std::isnan(g) || std::isnan(w)) ok = std::isnan(g) && std::isnan(w);
      else if (std::isinf(g) || std::isinf(w)) ok = g == w;
      else ok = std::abs(g - w) <= atol + rtol * std::abs(w);
    } else {
      g = double(gi[size_t(k)]), w = double(wi[size_t(k)]);
      ok = gi[size_t(k)] == wi[size_t(k)];
    }
    if (!ok && bad++ < 8)
      err << what << ": element " << multi_index(k, want.sizes()) << " brisk " << g << ", torch " << w << "\n";
  }
  if (bad > 8) err << what << ": ... " << bad << " of " << n << " elements differ\n";
  if (err.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << err.str();
}

/// Gradient parity of a scalar function: makes `params` (leaves that require
/// grad) and `data` on both sides from one seed sequence (hash_name(name,
/// salt), +1 per input), runs fb (brisk) and ft (torch), and compares the
/// results and the gradient of every parameter. fb and ft may be one generic
/// lambda (brisk mirrors libtorch's names).
template <class FB, class FT>
void check_gradients(const std::string& name, const std::vector<In>& params, const std::vector<In>& data,
                     uint64_t salt, const FB& fb, const FT& ft, Tol tol, const std::string& result_label) {
  BList bp, bd;
  TList tp, td;
  uint64_t seed = hash_name(name, salt);
  for (const In& s : params) {
    BT b;
    TT t;
    make_input(s, seed++, b, t);
    bp.push_back(b.requires_grad_());
    tp.push_back(t.requires_grad_());
  }
  for (const In& s : data) {
    BT b;
    TT t;
    make_input(s, seed++, b, t);
    bd.push_back(b);
    td.push_back(t);
  }
  BT bl = fb(bp, bd);
  TT tl = ft(tp, td);
  EXPECT_TRUE(compare(bl, tl, tol, false, name + " " + result_label));
  bl.backward();
  tl.backward();
  for (size_t i = 0; i < bp.size(); ++i) {
    ASSERT_TRUE(bp[i].grad().defined()) << name << ": parameter " << i << " got no gradient";
    EXPECT_TRUE(compare(bp[i].grad(), tp[i].grad(), tol, false, name + " grad of parameter " + std::to_string(i)));
  }
}

inline std::string describe_inputs(const std::vector<In>& ins, const TList& t) {
  std::ostringstream os;
  for (size_t k = 0; k < ins.size(); ++k) {
    os << "  input " << k << ": " << short_name(ins[k].dtype) << shape_str(t[k].sizes());
    if (ins[k].layout != Layout::Contig) os << " strides " << shape_str(t[k].strides());
    if (t[k].numel() <= 24) {
      std::vector<double> f;
      std::vector<int64_t> i;
      read_torch(t[k], f, i);
      os << " = [";
      for (size_t e = 0; e < f.size() + i.size(); ++e) os << (e ? ", " : "") << (f.empty() ? double(i[e]) : f[e]);
      os << "]";
    }
    os << "\n";
  }
  return os.str();
}

/// libtorch throws c10::Error (with a backtrace we drop) and, in a few header
/// helpers (infer_size), plain std::runtime_error.
inline std::string torch_message(const std::exception& e) {
  if (auto* c10e = dynamic_cast<const c10::Error*>(&e)) return c10e->what_without_backtrace();
  return e.what();
}

/// Torch 1.13's message for a dtype its CPU kernel lacks: which one, if any.
inline std::optional<ScalarType> missing_reduced_kernel(const std::string& msg) {
  if (msg.find("not implemented for 'Half'") != std::string::npos) return brisk::kHalf;
  if (msg.find("not implemented for 'BFloat16'") != std::string::npos) return brisk::kBFloat16;
  return std::nullopt;
}

inline void run_case(const Case& c) {
  BList bin(c.inputs.size());
  TList tin(c.inputs.size());
  for (size_t k = 0; k < c.inputs.size(); ++k) make_input(c.inputs[k], hash_name(c.name, k), bin[k], tin[k]);
  // Untouched copies to check that neither library writes into its inputs.
  TList tin_before;
  for (auto& t : tin) tin_before.push_back(t.clone());

  TList want;
  std::string torch_err;
  std::optional<ScalarType> upcast;
  if (c.float_reference)
    for (auto& i : c.inputs)
      if (brisk::is_reduced_float(i.dtype) && !upcast) upcast = i.dtype;
  if (!upcast) {
    try {
      want = c.torch_fn(tin);
    } catch (const std::exception& e) {
      torch_err = torch_message(e);
      upcast = missing_reduced_kernel(torch_err);
    }
  }
  if (upcast) {
    // See Note [Parity verdicts]: reference = torch in float32, rounded back.
    TList up;
    for (auto& t : tin) up.push_back(t.scalar_type() == to_torch(*upcast) ? t.to(at::kFloat) : t);
    try {
      want = c.torch_fn(up);
      for (auto& w : want)
        if (w.scalar_type() == at::kFloat) w = w.to(to_torch(*upcast));
      torch_err.clear();
    } catch (const std::exception& e) {
      torch_err = torch_message(e);
    }
  }

  BList got;
  std::string brisk_err;
  try {
    got = c.brisk_fn(bin);
  } catch (const brisk::Error& e) {
    brisk_err = e.what();
  } catch (const std::exception& e) {
    brisk_err = std::string("(not a brisk::Error) ") + e.what();
    ADD_FAILURE() << "brisk threw an exception that is not brisk::Error: " << e.what() << "\n"
                  << describe_inputs(c.inputs, tin);
    return;
  }

  // Kernels torch 1.13 lacks and torch 2.x has, whose 2.x results brisk
  // follows (docs/design/tensor.md; checked against 2.x by the differential
  // fuzzer): no 1.13 reference to compare with.
  if (!torch_err.empty() && brisk_err.empty() &&
      torch_err.find("\"pow\" not implemented for 'Bool'") != std::string::npos)
    return;
  if (!torch_err.empty()) {
    EXPECT_FALSE(brisk_err.empty()) << "torch throws but brisk returns " << got.size() << " output(s)"
                                    << (got.empty() ? "" : " of shape " + shape_str(got[0].sizes()) + " dtype " +
                                                               std::string(brisk::dtype_name(got[0].dtype())))
                                    << "\n  torch: " << torch_err.substr(0, 300) << "\n"
                                    << describe_inputs(c.inputs, tin);
    return;
  }
  if (!brisk_err.empty()) {
    ADD_FAILURE() << "brisk throws but torch returns " << want.size() << " output(s)"
                  << (want.empty() ? "" : " of shape " + shape_str(want[0].sizes()))
                  << "\n  brisk: " << brisk_err << "\n"
                  << describe_inputs(c.inputs, tin);
    return;
  }
  ASSERT_EQ(got.size(), want.size()) << "number of outputs";
  for (size_t k = 0; k < got.size(); ++k) {
    // A case's tolerance only loosens the default of the result dtype (or of
    // the reduced dtype when the reference was computed in float32).
    Tol t = default_tol(upcast ? *upcast : got[k].dtype());
    t.rtol = std::max(t.rtol, c.tolerance.rtol);
    t.atol = std::max(t.atol, c.tolerance.atol);
    EXPECT_TRUE(compare(got[k], want[k], t, c.check_strides, "output " + std::to_string(k)))
        << describe_inputs(c.inputs, tin) << (upcast ? "  (torch reference computed in float32)\n" : "");
  }
  for (size_t k = 0; k < bin.size(); ++k)
    EXPECT_TRUE(compare(bin[k], tin_before[k], Tol{0, 0}, false, "brisk input " + std::to_string(k)))
        << "brisk modified an input";
}

inline void run_error_case(const ErrorCase& c) {
  BList bin(c.inputs.size());
  TList tin(c.inputs.size());
  for (size_t k = 0; k < c.inputs.size(); ++k) make_input(c.inputs[k], hash_name(c.name, k), bin[k], tin[k]);
  TList tin_before;
  for (auto& t : tin) tin_before.push_back(t.clone());
  bool torch_threw = false;
  try {
    c.torch_fn(tin);
  } catch (const std::exception&) {
    torch_threw = true;
  }
  if (c.torch_throws)
    EXPECT_TRUE(torch_threw) << "the case is wrong: torch does not throw";
  else
    EXPECT_FALSE(torch_threw) << "the documented design difference is gone: torch throws too";
  try {
    c.brisk_fn(bin);
    ADD_FAILURE() << "brisk does not throw (torch does)\n" << describe_inputs(c.inputs, tin);
  } catch (const brisk::Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.substr(0, 1), "[") << "message does not start with [op]: " << msg;
    for (auto& p : c.pieces) EXPECT_NE(msg.find(p), std::string::npos) << "message '" << msg << "' lacks '" << p << "'";
  } catch (const std::exception& e) {
    ADD_FAILURE() << "brisk throws something that is not brisk::Error: " << e.what();
  }
  // "Never leave a tensor half-written": in-place cases write into inputs.
  for (size_t k = 0; k < bin.size(); ++k)
    EXPECT_TRUE(compare(bin[k], tin_before[k], Tol{0, 0}, false, "brisk input " + std::to_string(k)))
        << "brisk changed an input before throwing";
}

// Note [Parity test granularity]
// One gtest per group ("add", "sum", "index", ...), not per case: every test
// process loads libtorch (about 0.7 s of CPU), and ctest runs each
// discovered test in its own process, so thousands of per-case tests would
// cost half an hour. A group's variants run one after the other, each failure
// names its variant. While developing, BRISK_PARITY_CASE=<substring> runs only
// the variants whose name contains it. A crash (an op still missing under
// BRISK_DEV_ALLOW_UNDEFINED) takes down only its group's test.

template <class C>
struct Group {
  std::string name;
  std::vector<C> cases;
};

/// Splits cases into groups by the part of their name before the first '.'.
template <class C>
std::vector<Group<C>> group_cases(const std::vector<C>& cases) {
  std::vector<Group<C>> groups;
  for (const C& c : cases) {
    const std::string g = c.name.substr(0, c.name.find('.'));
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group<C>& x) { return x.name == g; });
    if (it == groups.end()) {
      groups.push_back({g, {}});
      it = groups.end() - 1;
    }
    it->cases.push_back(c);
  }
  return groups;
}

template <class C>
void PrintTo(const Group<C>& g, std::ostream* os) {
  *os << g.name << " (" << g.cases.size() << " cases)";
}

inline bool selected(const std::string& name) {
  const char* f = std::getenv("BRISK_PARITY_CASE");
  return f == nullptr || name.find(f) != std::string::npos;
}

template <class C, class Run>
void run_group(const Group<C>& g, Run run) {
  int ran = 0;
  for (const C& c : g.cases) {
    if (!selected(c.name)) continue;
    SCOPED_TRACE("case " + c.name);
    run(c);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "no case of " << g.name << " matches BRISK_PARITY_CASE";
}

/// gtest parameter names: the case names, made identifier-safe.
inline std::string sanitize(const std::string& s) {
  std::string out;
  for (char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return out;
}

}  // namespace parity
