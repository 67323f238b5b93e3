// brisk_fuzz_runner: the brisk side of the differential fuzzer
// (tools/fuzz/difffuzz.py, docs/design/fuzzing.md).
//
// Reads one program per line on stdin (JSON, written by the Python
// generator), runs it through brisk's public API and writes one JSON line
// per program on stdout, flushed, so that the driver can pair results with
// cases and restart the process after a crash. A program is
//
//   {"case": N, "inputs": [{"dtype", "shape", "data", "rg", "layout"}...],
//    "ops": [{"op": "add", "args": [...], "kw": {...}}...],
//    "grad": bool, "grad2": bool}
//
// and values are numbered in order: inputs first, then the outputs of each op.
// An argument is {"v": k} (value k), {"s": 1.5} / {"i": 2} / {"b": true}
// (a Python float / int / bool scalar), a plain JSON number, list, string,
// bool or null. Floats that JSON cannot spell travel as "nan", "inf", "-inf".
//
// The result line holds, per op, a snapshot of its outputs taken right after
// it ran; the final state of every value; the gradients of the leaves of
//   loss = sum_v (v.to(float64) * w_v).sum()   over float values requiring grad
// and, for "grad2" programs, the second-order gradients of
//   sum_i (g_i.to(float64) * u_i).sum(),  g = grad(loss, leaves, create_graph).
// The weights w, u are fixed formulas that difffuzz.py repeats.
#include <brisk/brisk.h>

#include <array>
#include <cctype>
#include <stdexcept>
#include <typeinfo>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using brisk::Scalar;
using brisk::ScalarType;
using brisk::Tensor;
using brisk::TensorIndex;
namespace F = brisk::nn::functional;

/// A problem of the runner or of the program text (not brisk's): reported
/// apart from brisk's errors so that it is never blamed on an op.
struct RunnerError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- a tiny JSON tree (the input is ours, so errors just throw) ---------------------

struct Json {
  enum Kind { Null, Bool, Num, Str, Arr, Obj } kind = Null;
  bool b = false;
  std::string text;  // number literal or string value
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> fields;

  const Json* get(const std::string& key) const {
    for (auto& [k, v] : fields)
      if (k == key) return &v;
    return nullptr;
  }
  bool is_null() const { return kind == Null; }
  bool is_int() const { return kind == Num && text.find_first_of(".eE") == std::string::npos; }
  int64_t as_int() const {
    if (kind == Bool) return b;
    if (kind != Num) throw RunnerError("runner: expected a number");
    return std::strtoll(text.c_str(), nullptr, 10);
  }
  double as_double() const {
    if (kind == Str) {
      if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
      if (text == "inf") return std::numeric_limits<double>::infinity();
      if (text == "-inf") return -std::numeric_limits<double>::infinity();
    }
    if (kind != Num) throw RunnerError("runner: expected a float");
    return std::strtod(text.c_str(), nullptr);
  }
};

class JsonParser {
 public:
  explicit JsonParser(const std::string& s) : s_(s) {}
  Json parse() {
    Json j = value();
    ws();
    if (p_ != s_.size()) fail();
    return j;
  }

 private:
  [[noreturn]] void fail() { throw RunnerError("runner: bad JSON at byte " + std::to_string(p_)); }
  void ws() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  char peek() {
    ws();
    if (p_ >= s_.size()) fail();
    return s_[p_];
  }
  void expect(char c) {
    if (peek() != c) fail();
    ++p_;
  }
  std::string str() {
    expect('"');
    std::string out;
    while (p_ < s_.size() && s_[p_] != '"') {
      char c = s_[p_++];
      if (c == '\\') {
        char e = s_.at(p_++);
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'u': {
            unsigned v = std::stoul(s_.substr(p_, 4), nullptr, 16);
            p_ += 4;
            out += v < 0x80 ? char(v) : '?';
            break;
          }
          default: out += e;
        }
      } else {
        out += c;
      }
    }
    expect('"');
    return out;
  }
  Json value() {
    Json j;
    char c = peek();
    if (c == '{') {
      ++p_;
      j.kind = Json::Obj;
      if (peek() == '}') {
        ++p_;
        return j;
      }
      for (;;) {
        std::string k = str();
        expect(':');
        j.fields.emplace_back(std::move(k), value());
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect('}');
        return j;
      }
    }
    if (c == '[') {
      ++p_;
      j.kind = Json::Arr;
      if (peek() == ']') {
        ++p_;
        return j;
      }
      for (;;) {
        j.items.push_back(value());
        if (peek() == ',') {
          ++p_;
          continue;
        }
        expect(']');
        return j;
      }
    }
    if (c == '"') {
      j.kind = Json::Str;
      j.text = str();
      return j;
    }
    if (s_.compare(p_, 4, "true") == 0) {
      p_ += 4;
      j.kind = Json::Bool;
      j.b = true;
      return j;
    }
    if (s_.compare(p_, 5, "false") == 0) {
      p_ += 5;
      j.kind = Json::Bool;
      return j;
    }
    if (s_.compare(p_, 4, "null") == 0) {
      p_ += 4;
      return j;
    }
    size_t start = p_;
    while (p_ < s_.size() && std::strchr("+-0123456789.eE", s_[p_])) ++p_;
    if (start == p_) fail();
    j.kind = Json::Num;
    j.text = s_.substr(start, p_ - start);
    return j;
  }
  const std::string& s_;
  size_t p_ = 0;
};

// ---- writing results ----------------------------------------------------------------------

void put_quoted(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      out += '?';  // keep the line ASCII: messages are for humans
    } else {
      out += c;
    }
  }
  out += '"';
}

void put_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "\"nan\"";
  } else if (std::isinf(v)) {
    out += v > 0 ? "\"inf\"" : "\"-inf\"";
  } else if (v == 0) {
    out += std::signbit(v) ? "-0.0" : "0.0";
  } else {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out += buf;
  }
}

ScalarType parse_dtype(const std::string& s) {
  static const std::map<std::string, ScalarType> names = {
      {"float32", brisk::kFloat32}, {"float64", brisk::kFloat64}, {"float16", brisk::kFloat16},
      {"bfloat16", brisk::kBFloat16}, {"int64", brisk::kInt64},   {"int32", brisk::kInt32},
      {"int16", brisk::kInt16},     {"int8", brisk::kInt8},     {"uint8", brisk::kUInt8},
      {"bool", brisk::kBool}};
  auto it = names.find(s);
  if (it == names.end()) throw RunnerError("runner: unknown dtype " + s);
  return it->second;
}

/// Reads element i (row-major) of t by walking its strides: no brisk op runs,
/// so what we print is what the tensor holds.
template <class T>
void put_elements(std::string& out, const Tensor& t) {
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  const int64_t n = t.numel();
  const T* base = static_cast<const T*>(t.data_ptr());
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * strides[d];
    if (k) out += ',';
    T v = base[off];
    if constexpr (std::is_same_v<T, bool>) {
      out += v ? "1" : "0";
    } else if constexpr (std::is_integral_v<T>) {
      out += std::to_string(static_cast<int64_t>(v));
    } else {
      put_double(out, static_cast<double>(static_cast<float>(v)));
    }
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}
template <>
void put_elements<double>(std::string& out, const Tensor& t) {
  // double is not narrowed through float.
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  const double* base = static_cast<const double*>(t.data_ptr());
  std::vector<int64_t> idx(sizes.size(), 0);
  for (int64_t k = 0; k < t.numel(); ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < sizes.size(); ++d) off += idx[d] * strides[d];
    if (k) out += ',';
    put_double(out, base[off]);
    for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}

void put_tensor(std::string& out, const Tensor& t) {
  if (!t.defined()) {
    out += "null";
    return;
  }
  out += "{\"dtype\":\"";
  out += std::string(brisk::dtype_name(t.dtype()));
  out += "\",\"shape\":[";
  for (size_t d = 0; d < t.sizes().size(); ++d) {
    if (d) out += ',';
    out += std::to_string(t.sizes()[d]);
  }
  out += "],\"rg\":";
  out += t.requires_grad() ? "true" : "false";
  out += ",\"data\":[";
  BRISK_DISPATCH_ALL(t.dtype(), "fuzz_runner", [&] { put_elements<scalar_t>(out, t); });
  out += "]}";
}

// ---- building inputs --------------------------------------------------------------------------

Tensor make_contiguous(const Json& spec) {
  ScalarType dt = parse_dtype(spec.get("dtype")->text);
  std::vector<int64_t> shape;
  for (auto& s : spec.get("shape")->items) shape.push_back(s.as_int());
  const auto& data = spec.get("data")->items;
  if (brisk::is_floating_point(dt)) {
    Tensor t = brisk::empty(shape, brisk::kFloat64);
    double* p = t.data_ptr<double>();
    for (size_t i = 0; i < data.size(); ++i) p[i] = data[i].as_double();
    return t.to(dt);
  }
  Tensor t = brisk::empty(shape, brisk::kInt64);
  int64_t* p = t.data_ptr<int64_t>();
  for (size_t i = 0; i < data.size(); ++i) p[i] = data[i].as_int();
  return t.to(dt);
}

/// The input with its layout: "t" (strides reversed), "step" (every other
/// element of a buffer twice as long in dim 0), "offset" (storage offset 3).
Tensor make_input(const Json& spec) {
  Tensor x = make_contiguous(spec);
  const Json* layout = spec.get("layout");
  std::string kind = layout && !layout->is_null() ? layout->text : "";
  brisk::NoGradGuard ng;
  if (kind == "t" && x.dim() >= 2) {
    std::vector<int64_t> rev;
    for (int64_t d = x.dim() - 1; d >= 0; --d) rev.push_back(d);
    x = x.permute(rev).contiguous().permute(rev);
  } else if (kind == "step" && x.dim() >= 1) {
    std::vector<int64_t> big(x.sizes().begin(), x.sizes().end());
    big[0] *= 2;
    Tensor buf = brisk::zeros(big, x.dtype());
    Tensor v = buf.slice(0, 0, std::nullopt, 2);
    v.copy_(x);
    x = v;
  } else if (kind == "offset") {
    Tensor buf = brisk::zeros({x.numel() + 3}, x.dtype());
    Tensor v = buf.slice(0, 3, std::nullopt, 1);
    v.copy_(x.reshape({-1}));
    x = v.view(x.sizes());
  }
  x = x.detach();
  const Json* rg = spec.get("rg");
  if (rg && rg->b) x.requires_grad_(true);
  return x;
}

// ---- decoding arguments ---------------------------------------------------------------------

struct Call {
  const Json& op;
  std::vector<Tensor>& vals;

  const Json& arg(size_t i) const {
    static const Json null;
    const Json* a = op.get("args");
    return a && i < a->items.size() ? a->items[i] : null;
  }
  const Json& kw(const char* name) const {
    static const Json null;
    const Json* k = op.get("kw");
    const Json* v = k ? k->get(name) : nullptr;
    return v ? *v : null;
  }
  size_t nargs() const {
    const Json* a = op.get("args");
    return a ? a->items.size() : 0;
  }

  static bool is_tensor(const Json& j) { return j.kind == Json::Obj && j.get("v"); }
  Tensor tensor(const Json& j) const {
    if (j.is_null()) return Tensor();
    if (!is_tensor(j)) throw RunnerError("runner: expected a tensor argument");
    size_t k = j.get("v")->as_int();
    // A value brisk did not produce (an op returned fewer outputs than torch's):
    // the divergence is reported at that op, not here.
    if (k >= vals.size() || !vals[k].defined()) throw RunnerError("runner: value v" + std::to_string(k) + " missing");
    return vals[k];
  }
  Tensor t(size_t i) const { return tensor(arg(i)); }
  bool is_t(size_t i) const { return is_tensor(arg(i)); }
  std::vector<Tensor> tensors(const Json& j) const {
    std::vector<Tensor> out;
    for (auto& x : j.items) out.push_back(tensor(x));
    return out;
  }
  static Scalar scalar(const Json& j) {
    if (j.kind == Json::Obj) {
      if (auto* s = j.get("s")) return Scalar(s->as_double());
      if (auto* i = j.get("i")) return Scalar(i->as_int());
      if (auto* b = j.get("b")) return Scalar(b->b);
    }
    if (j.kind == Json::Bool) return Scalar(j.b);
    if (j.is_int()) return Scalar(j.as_int());
    return Scalar(j.as_double());
  }
  Scalar s(size_t i) const { return scalar(arg(i)); }
  static std::optional<Scalar> opt_scalar(const Json& j) {
    if (j.is_null()) return std::nullopt;
    return scalar(j);
  }
  int64_t i(size_t k) const { return arg(k).as_int(); }
  static std::optional<int64_t> opt_int(const Json& j) {
    if (j.is_null()) return std::nullopt;
    return j.as_int();
  }
  static std::vector<int64_t> ints(const Json& j) {
    std::vector<int64_t> out;
    if (j.kind == Json::Num) {
      out.push_back(j.as_int());
      return out;
    }
    for (auto& x : j.items) out.push_back(x.as_int());
    return out;
  }
  static bool boolean(const Json& j, bool dflt = false) { return j.is_null() ? dflt : j.b; }
  static double dbl(const Json& j, double dflt) { return j.is_null() ? dflt : j.as_double(); }
  static std::optional<ScalarType> opt_dtype(const Json& j) {
    if (j.is_null()) return std::nullopt;
    return parse_dtype(j.text);
  }
  std::optional<ScalarType> dtype_kw() const { return opt_dtype(kw("dtype")); }

  std::vector<TensorIndex> indices(const Json& j) const {
    std::vector<TensorIndex> out;
    for (auto& x : j.items) {
      if (x.kind == Json::Num) {
        out.emplace_back(x.as_int());
      } else if (x.kind == Json::Bool) {
        out.emplace_back(x.b);
      } else if (x.is_null()) {
        out.emplace_back(brisk::None);
      } else if (x.kind == Json::Str && x.text == "...") {
        out.emplace_back(brisk::Ellipsis);
      } else if (auto* sl = x.get("slice")) {
        out.emplace_back(brisk::Slice(opt_int(sl->items.at(0)), opt_int(sl->items.at(1)),
                                      sl->items.at(2).is_null() ? 1 : sl->items.at(2).as_int()));
      } else {
        out.emplace_back(tensor(x));
      }
    }
    return out;
  }
};

brisk::RoundingMode rounding(const Json& j) {
  if (j.is_null()) return brisk::RoundingMode::None;
  if (j.text == "trunc") return brisk::RoundingMode::Trunc;
  if (j.text == "floor") return brisk::RoundingMode::Floor;
  throw brisk::Error("[div] rounding_mode must be None, 'trunc' or 'floor', got '" + j.text + "'");
}

brisk::nn::Reduction reduction(const Json& j) {
  if (j.is_null() || j.text == "mean") return brisk::nn::kMean;
  if (j.text == "sum") return brisk::nn::kSum;
  if (j.text == "none") return brisk::nn::kNone;
  if (j.text == "batchmean") return brisk::nn::kBatchMean;
  throw RunnerError("runner: unknown reduction " + j.text);
}

template <size_t D>
brisk::nn::ExpandingInts<D> expanding(const Json& j, int64_t dflt) {
  if (j.is_null()) return brisk::nn::ExpandingInts<D>(dflt);
  if (j.kind == Json::Num) return brisk::nn::ExpandingInts<D>(j.as_int());
  std::array<int64_t, D> a{};
  if (j.items.size() != D) {
    // A wrong count: pass what was given (up to four values, so that it is
    // never D) so the op refuses it with its own message.
    std::vector<int64_t> v;
    for (auto& x : j.items) v.push_back(x.as_int());
    switch (v.size()) {
      case 0: return brisk::nn::ExpandingInts<D>(std::initializer_list<int64_t>{});
      case 1: return brisk::nn::ExpandingInts<D>({v[0]});
      case 2: return brisk::nn::ExpandingInts<D>({v[0], v[1]});
      case 3: return brisk::nn::ExpandingInts<D>({v[0], v[1], v[2]});
      default: return brisk::nn::ExpandingInts<D>({v[0], v[1], v[2], v[3]});
    }
  }
  for (size_t d = 0; d < D; ++d) a[d] = j.items[d].as_int();
  return brisk::nn::ExpandingInts<D>(a);
}
template <size_t D>
brisk::nn::ConvPadding<D> conv_padding(const Json& j) {
  if (j.kind == Json::Str) return brisk::nn::ConvPadding<D>(j.text);
  return brisk::nn::ConvPadding<D>(expanding<D>(j, 0));
}
template <size_t D>
std::optional<brisk::nn::ExpandingInts<D>> opt_expanding(const Json& j) {
  if (j.is_null()) return std::nullopt;
  return expanding<D>(j, 1);
}

// ---- the ops ----------------------------------------------------------------------------------

using Outs = std::vector<Tensor>;
using OpFn = std::function<Outs(Call&)>;

Outs pair(const std::tuple<Tensor, Tensor>& t) { return {std::get<0>(t), std::get<1>(t)}; }

std::unordered_map<std::string, OpFn> make_ops() {
  std::unordered_map<std::string, OpFn> ops;

  // -- binary: (a, tensor-or-scalar b), in-place forms name_.
#define BIN(name)                                                                      \
  ops[#name] = [](Call& c) -> Outs {                                                   \
    return {c.is_t(1) ? c.t(0).name(c.t(1)) : c.t(0).name(c.s(1))};                   \
  };                                                                                   \
  ops[#name "_"] = [](Call& c) -> Outs {                                               \
    Tensor a = c.t(0);                                                                 \
    return {c.is_t(1) ? a.name##_(c.t(1)) : a.name##_(c.s(1))};                        \
  };
  BIN(mul) BIN(remainder) BIN(fmod) BIN(pow) BIN(minimum) BIN(maximum) BIN(atan2)
  BIN(eq) BIN(ne) BIN(lt) BIN(le) BIN(gt) BIN(ge)
  BIN(logical_and) BIN(logical_or) BIN(logical_xor) BIN(bitwise_and) BIN(bitwise_or) BIN(bitwise_xor)
  BIN(bitwise_left_shift) BIN(bitwise_right_shift) BIN(copysign) BIN(xlogy)
#undef BIN
  // tensor-only binary ops (torch takes no Python number there)
#define BIN_T(name) ops[#name] = [](Call& c) -> Outs { return {c.t(0).name(c.t(1))}; };
#define BIN_T_(name) ops[#name "_"] = [](Call& c) -> Outs { Tensor a = c.t(0); return {a.name##_(c.t(1))}; };
  BIN_T(hypot) BIN_T_(hypot) BIN_T(logaddexp) BIN_T(logaddexp2) BIN_T(nextafter) BIN_T_(nextafter)
  BIN_T(heaviside) BIN_T_(heaviside)
#undef BIN_T
#undef BIN_T_
  ops["igamma"] = [](Call& c) -> Outs { return {brisk::igamma(c.t(0), c.t(1))}; };
  ops["isclose"] = [](Call& c) -> Outs {
    return {brisk::isclose(c.t(0), c.t(1), Call::dbl(c.kw("rtol"), 1e-5), Call::dbl(c.kw("atol"), 1e-8),
                           Call::boolean(c.kw("equal_nan")))};
  };
  ops["add"] = [](Call& c) -> Outs {
    Scalar alpha = c.kw("alpha").is_null() ? Scalar(1) : Call::scalar(c.kw("alpha"));
    return {c.is_t(1) ? c.t(0).add(c.t(1), alpha) : c.t(0).add(c.s(1), alpha)};
  };
  ops["add_"] = [](Call& c) -> Outs {
    Scalar alpha = c.kw("alpha").is_null() ? Scalar(1) : Call::scalar(c.kw("alpha"));
    Tensor a = c.t(0);
    return {c.is_t(1) ? a.add_(c.t(1), alpha) : a.add_(c.s(1), alpha)};
  };
  ops["sub"] = [](Call& c) -> Outs {
    Scalar alpha = c.kw("alpha").is_null() ? Scalar(1) : Call::scalar(c.kw("alpha"));
    return {c.is_t(1) ? c.t(0).sub(c.t(1), alpha) : c.t(0).sub(c.s(1), alpha)};
  };
  ops["sub_"] = [](Call& c) -> Outs {
    Scalar alpha = c.kw("alpha").is_null() ? Scalar(1) : Call::scalar(c.kw("alpha"));
    Tensor a = c.t(0);
    return {c.is_t(1) ? a.sub_(c.t(1), alpha) : a.sub_(c.s(1), alpha)};
  };
  ops["div"] = [](Call& c) -> Outs {
    auto m = rounding(c.kw("rounding_mode"));
    return {c.is_t(1) ? c.t(0).div(c.t(1), m) : c.t(0).div(c.s(1), m)};
  };
  ops["div_"] = [](Call& c) -> Outs {
    auto m = rounding(c.kw("rounding_mode"));
    Tensor a = c.t(0);
    return {c.is_t(1) ? a.div_(c.t(1), m) : a.div_(c.s(1), m)};
  };
  // scalar-first forms: s op t
  ops["radd"] = [](Call& c) -> Outs { return {c.s(0) + c.t(1)}; };
  ops["rsub"] = [](Call& c) -> Outs { return {c.s(0) - c.t(1)}; };
  ops["rmul"] = [](Call& c) -> Outs { return {c.s(0) * c.t(1)}; };
  ops["rdiv"] = [](Call& c) -> Outs { return {c.s(0) / c.t(1)}; };
  ops["rpow"] = [](Call& c) -> Outs { return {brisk::pow(c.s(0), c.t(1))}; };

  // -- unary
#define UN(name)                                                       \
  ops[#name] = [](Call& c) -> Outs { return {c.t(0).name()}; };         \
  ops[#name "_"] = [](Call& c) -> Outs {                                \
    Tensor a = c.t(0);                                                  \
    return {a.name##_()};                                               \
  };
  UN(neg) UN(abs) UN(sign) UN(exp) UN(exp2) UN(log) UN(log2) UN(log10) UN(log1p) UN(expm1) UN(sqrt)
  UN(rsqrt) UN(square) UN(reciprocal) UN(sin) UN(cos) UN(tan) UN(asin) UN(acos) UN(atan) UN(sinh)
  UN(cosh) UN(tanh) UN(sigmoid) UN(erf) UN(erfc) UN(relu) UN(silu) UN(floor) UN(ceil) UN(round)
  UN(trunc) UN(frac) UN(logical_not) UN(bitwise_not)
  UN(asinh) UN(acosh) UN(atanh) UN(erfinv) UN(lgamma) UN(digamma)
#undef UN
  ops["mish"] = [](Call& c) -> Outs { return {brisk::mish(c.t(0))}; };
  ops["mish_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {brisk::mish_(a)};
  };
  auto opt_dbl = [](const Json& j) -> std::optional<double> {
    if (j.is_null()) return std::nullopt;
    return j.as_double();
  };
  ops["logit"] = [opt_dbl](Call& c) -> Outs { return {c.t(0).logit(opt_dbl(c.kw("eps")))}; };
  ops["logit_"] = [opt_dbl](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.logit_(opt_dbl(c.kw("eps")))};
  };
  ops["nan_to_num"] = [opt_dbl](Call& c) -> Outs {
    return {c.t(0).nan_to_num(opt_dbl(c.kw("nan")), opt_dbl(c.kw("posinf")), opt_dbl(c.kw("neginf")))};
  };
  ops["nan_to_num_"] = [opt_dbl](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.nan_to_num_(opt_dbl(c.kw("nan")), opt_dbl(c.kw("posinf")), opt_dbl(c.kw("neginf")))};
  };
  ops["isnan"] = [](Call& c) -> Outs { return {c.t(0).isnan()}; };
  ops["isinf"] = [](Call& c) -> Outs { return {c.t(0).isinf()}; };
  ops["isfinite"] = [](Call& c) -> Outs { return {c.t(0).isfinite()}; };
  ops["gelu"] = [](Call& c) -> Outs {
    return {c.t(0).gelu(c.kw("approximate").is_null() ? "none" : c.kw("approximate").text)};
  };
  ops["gelu_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.gelu_(c.kw("approximate").is_null() ? "none" : c.kw("approximate").text)};
  };
  ops["softplus"] = [](Call& c) -> Outs {
    Scalar beta = c.kw("beta").is_null() ? Scalar(1) : Call::scalar(c.kw("beta"));
    Scalar th = c.kw("threshold").is_null() ? Scalar(20) : Call::scalar(c.kw("threshold"));
    return {c.t(0).softplus(beta, th)};
  };

  // -- ternary pointwise
  ops["lerp"] = [](Call& c) -> Outs { return {c.is_t(2) ? c.t(0).lerp(c.t(1), c.t(2)) : c.t(0).lerp(c.t(1), c.s(2))}; };
  ops["lerp_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {c.is_t(2) ? a.lerp_(c.t(1), c.t(2)) : a.lerp_(c.t(1), c.s(2))};
  };
  ops["addcmul"] = [](Call& c) -> Outs {
    return {c.t(0).addcmul(c.t(1), c.t(2), c.kw("value").is_null() ? Scalar(1) : Call::scalar(c.kw("value")))};
  };
  ops["addcmul_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.addcmul_(c.t(1), c.t(2), c.kw("value").is_null() ? Scalar(1) : Call::scalar(c.kw("value")))};
  };
  ops["addcdiv"] = [](Call& c) -> Outs {
    return {c.t(0).addcdiv(c.t(1), c.t(2), c.kw("value").is_null() ? Scalar(1) : Call::scalar(c.kw("value")))};
  };
  ops["addcdiv_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.addcdiv_(c.t(1), c.t(2), c.kw("value").is_null() ? Scalar(1) : Call::scalar(c.kw("value")))};
  };
  ops["clamp"] = [](Call& c) -> Outs {
    if (c.is_t(1) || c.is_t(2)) return {c.t(0).clamp(c.t(1), c.t(2))};
    return {c.t(0).clamp(Call::opt_scalar(c.arg(1)), Call::opt_scalar(c.arg(2)))};
  };
  ops["clamp_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.clamp_(Call::opt_scalar(c.arg(1)), Call::opt_scalar(c.arg(2)))};
  };
  ops["where"] = [](Call& c) -> Outs {
    Tensor cond = c.t(0);
    if (c.is_t(1) && c.is_t(2)) return {brisk::where(cond, c.t(1), c.t(2))};
    if (c.is_t(1)) return {brisk::where(cond, c.t(1), c.s(2))};
    if (c.is_t(2)) return {brisk::where(cond, c.s(1), c.t(2))};
    return {brisk::where(cond, c.s(1), c.s(2))};
  };

  // -- reductions
  ops["sum"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {c.t(0).sum(c.dtype_kw())};
    return {c.t(0).sum(Call::ints(c.arg(1)), Call::boolean(c.arg(2)), c.dtype_kw())};
  };
  ops["mean"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {c.t(0).mean(c.dtype_kw())};
    return {c.t(0).mean(Call::ints(c.arg(1)), Call::boolean(c.arg(2)), c.dtype_kw())};
  };
  // the composites of src/ops/composite.cpp
  ops["nansum"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {brisk::nansum(c.t(0))};
    return {brisk::nansum(c.t(0), Call::ints(c.arg(1)), Call::boolean(c.arg(2)))};
  };
  ops["nanmean"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {brisk::nanmean(c.t(0))};
    return {brisk::nanmean(c.t(0), Call::ints(c.arg(1)), Call::boolean(c.arg(2)))};
  };
  ops["count_nonzero"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {brisk::count_nonzero(c.t(0))};
    return {brisk::count_nonzero(c.t(0), Call::ints(c.arg(1)))};
  };
  ops["trace"] = [](Call& c) -> Outs { return {brisk::trace(c.t(0))}; };
  ops["repeat_interleave"] = [](Call& c) -> Outs {
    const std::optional<int64_t> dim = c.arg(2).is_null() ? std::nullopt : std::optional<int64_t>(c.i(2));
    return {brisk::repeat_interleave(c.t(0), c.i(1), dim)};
  };
  ops["diag"] = [](Call& c) -> Outs { return {brisk::diag(c.t(0), c.i(1))}; };
  ops["rot90"] = [](Call& c) -> Outs { return {brisk::rot90(c.t(0), c.i(1), Call::ints(c.arg(2)))}; };
  ops["diff"] = [](Call& c) -> Outs {
    auto opt = [&](int k) { return c.arg(k).is_null() ? std::optional<Tensor>() : std::optional<Tensor>(c.t(k)); };
    return {brisk::diff(c.t(0), c.i(1), c.i(2), opt(3), opt(4))};
  };
  ops["kron"] = [](Call& c) -> Outs { return {brisk::kron(c.t(0), c.t(1))}; };
  ops["take_along_dim"] = [](Call& c) -> Outs {
    return {brisk::take_along_dim(c.t(0), c.t(1), c.arg(2).is_null() ? std::nullopt : std::optional<int64_t>(c.i(2)))};
  };
  ops["fliplr"] = [](Call& c) -> Outs { return {brisk::fliplr(c.t(0))}; };
  ops["flipud"] = [](Call& c) -> Outs { return {brisk::flipud(c.t(0))}; };
  ops["prod"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {c.t(0).prod(c.dtype_kw())};
    return {c.t(0).prod(c.i(1), Call::boolean(c.arg(2)), c.dtype_kw())};
  };
  ops["max"] = [](Call& c) -> Outs { return {c.t(0).max()}; };
  ops["min"] = [](Call& c) -> Outs { return {c.t(0).min()}; };
  ops["max_dim"] = [](Call& c) -> Outs { return pair(c.t(0).max(c.i(1), Call::boolean(c.arg(2)))); };
  ops["min_dim"] = [](Call& c) -> Outs { return pair(c.t(0).min(c.i(1), Call::boolean(c.arg(2)))); };
  ops["amax"] = [](Call& c) -> Outs { return {c.t(0).amax(Call::ints(c.arg(1)), Call::boolean(c.arg(2)))}; };
  ops["amin"] = [](Call& c) -> Outs { return {c.t(0).amin(Call::ints(c.arg(1)), Call::boolean(c.arg(2)))}; };
  ops["argmax"] = [](Call& c) -> Outs { return {c.t(0).argmax(Call::opt_int(c.arg(1)), Call::boolean(c.arg(2)))}; };
  ops["argmin"] = [](Call& c) -> Outs { return {c.t(0).argmin(Call::opt_int(c.arg(1)), Call::boolean(c.arg(2)))}; };
  auto opt_dims = [](const Json& j) -> std::optional<std::vector<int64_t>> {
    if (j.is_null()) return std::nullopt;
    return Call::ints(j);
  };
  ops["var"] = [opt_dims](Call& c) -> Outs {
    Scalar corr = c.kw("correction").is_null() ? Scalar(1) : Call::scalar(c.kw("correction"));
    return {c.t(0).var(opt_dims(c.arg(1)), corr, Call::boolean(c.kw("keepdim")))};
  };
  ops["std"] = [opt_dims](Call& c) -> Outs {
    Scalar corr = c.kw("correction").is_null() ? Scalar(1) : Call::scalar(c.kw("correction"));
    return {c.t(0).std(opt_dims(c.arg(1)), corr, Call::boolean(c.kw("keepdim")))};
  };
  ops["var_mean"] = [opt_dims](Call& c) -> Outs {
    Scalar corr = c.kw("correction").is_null() ? Scalar(1) : Call::scalar(c.kw("correction"));
    return pair(brisk::var_mean(c.t(0), opt_dims(c.arg(1)), corr, Call::boolean(c.kw("keepdim"))));
  };
  ops["norm"] = [](Call& c) -> Outs {
    Scalar p = c.arg(1).is_null() ? Scalar(2) : c.s(1);
    if (c.arg(2).is_null()) return {c.t(0).norm(p)};
    return {c.t(0).norm(p, Call::ints(c.arg(2)), Call::boolean(c.arg(3)))};
  };
  ops["logsumexp"] = [](Call& c) -> Outs { return {c.t(0).logsumexp(Call::ints(c.arg(1)), Call::boolean(c.arg(2)))}; };
  ops["softmax"] = [](Call& c) -> Outs { return {c.t(0).softmax(c.i(1), c.dtype_kw())}; };
  ops["log_softmax"] = [](Call& c) -> Outs { return {c.t(0).log_softmax(c.i(1), c.dtype_kw())}; };
  ops["cumsum"] = [](Call& c) -> Outs { return {c.t(0).cumsum(c.i(1), c.dtype_kw())}; };
  ops["cumprod"] = [](Call& c) -> Outs { return {c.t(0).cumprod(c.i(1), c.dtype_kw())}; };
  ops["all"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {c.t(0).all()};
    return {c.t(0).all(c.i(1), Call::boolean(c.arg(2)))};
  };
  ops["any"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {c.t(0).any()};
    return {c.t(0).any(c.i(1), Call::boolean(c.arg(2)))};
  };
  ops["sort"] = [](Call& c) -> Outs { return pair(c.t(0).sort(c.i(1), Call::boolean(c.arg(2)))); };
  ops["argsort"] = [](Call& c) -> Outs { return {c.t(0).argsort(c.i(1), Call::boolean(c.arg(2)))}; };
  ops["topk"] = [](Call& c) -> Outs {
    return pair(c.t(0).topk(c.i(1), c.i(2), Call::boolean(c.arg(3), true), Call::boolean(c.arg(4), true)));
  };

  // -- linear algebra
  ops["matmul"] = [](Call& c) -> Outs { return {c.t(0).matmul(c.t(1))}; };
  ops["mm"] = [](Call& c) -> Outs { return {c.t(0).mm(c.t(1))}; };
  ops["bmm"] = [](Call& c) -> Outs { return {c.t(0).bmm(c.t(1))}; };
  ops["mv"] = [](Call& c) -> Outs { return {c.t(0).mv(c.t(1))}; };
  ops["dot"] = [](Call& c) -> Outs { return {c.t(0).dot(c.t(1))}; };
  ops["outer"] = [](Call& c) -> Outs { return {c.t(0).outer(c.t(1))}; };
  ops["addmm"] = [](Call& c) -> Outs {
    Scalar beta = c.kw("beta").is_null() ? Scalar(1) : Call::scalar(c.kw("beta"));
    Scalar alpha = c.kw("alpha").is_null() ? Scalar(1) : Call::scalar(c.kw("alpha"));
    return {c.t(0).addmm(c.t(1), c.t(2), beta, alpha)};
  };
  ops["einsum"] = [](Call& c) -> Outs { return {brisk::einsum(c.arg(0).text, c.tensors(c.arg(1)))}; };

  // -- shape
  ops["cat"] = [](Call& c) -> Outs { return {brisk::cat(c.tensors(c.arg(0)), c.i(1))}; };
  ops["stack"] = [](Call& c) -> Outs { return {brisk::stack(c.tensors(c.arg(0)), c.i(1))}; };
  ops["hstack"] = [](Call& c) -> Outs { return {brisk::hstack(c.tensors(c.arg(0)))}; };
  ops["vstack"] = [](Call& c) -> Outs { return {brisk::vstack(c.tensors(c.arg(0)))}; };
  ops["dstack"] = [](Call& c) -> Outs { return {brisk::dstack(c.tensors(c.arg(0)))}; };
  ops["flip"] = [](Call& c) -> Outs { return {c.t(0).flip(Call::ints(c.arg(1)))}; };
  ops["roll"] = [](Call& c) -> Outs { return {c.t(0).roll(Call::ints(c.arg(1)), Call::ints(c.arg(2)))}; };
  ops["tril"] = [](Call& c) -> Outs { return {c.t(0).tril(c.i(1))}; };
  ops["triu"] = [](Call& c) -> Outs { return {c.t(0).triu(c.i(1))}; };
  ops["tril_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.tril_(c.i(1))};
  };
  ops["triu_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.triu_(c.i(1))};
  };
  ops["pad"] = [](Call& c) -> Outs {
    return {brisk::pad(c.t(0), Call::ints(c.arg(1)), c.kw("value").is_null() ? Scalar(0) : Call::scalar(c.kw("value")))};
  };
  ops["broadcast_to"] = [](Call& c) -> Outs { return {brisk::broadcast_to(c.t(0), Call::ints(c.arg(1)))}; };
  ops["repeat"] = [](Call& c) -> Outs { return {c.t(0).repeat(Call::ints(c.arg(1)))}; };
  ops["tile"] = [](Call& c) -> Outs { return {c.t(0).tile(Call::ints(c.arg(1)))}; };
  ops["flatten"] = [](Call& c) -> Outs { return {c.t(0).flatten(c.i(1), c.i(2))}; };
  ops["unflatten"] = [](Call& c) -> Outs { return {c.t(0).unflatten(c.i(1), Call::ints(c.arg(2)))}; };
  ops["movedim"] = [](Call& c) -> Outs { return {c.t(0).movedim(c.i(1), c.i(2))}; };
  ops["reshape"] = [](Call& c) -> Outs { return {c.t(0).reshape(Call::ints(c.arg(1)))}; };
  ops["view"] = [](Call& c) -> Outs { return {c.t(0).view(Call::ints(c.arg(1)))}; };
  ops["t"] = [](Call& c) -> Outs { return {c.t(0).t()}; };
  ops["mT"] = [](Call& c) -> Outs { return {c.t(0).mT()}; };
  ops["expand"] = [](Call& c) -> Outs { return {c.t(0).expand(Call::ints(c.arg(1)))}; };
  ops["narrow"] = [](Call& c) -> Outs { return {c.t(0).narrow(c.i(1), c.i(2), c.i(3))}; };
  ops["select"] = [](Call& c) -> Outs { return {c.t(0).select(c.i(1), c.i(2))}; };
  ops["slice"] = [](Call& c) -> Outs {
    return {c.t(0).slice(c.i(1), Call::opt_int(c.arg(2)), Call::opt_int(c.arg(3)), c.i(4))};
  };
  ops["split"] = [](Call& c) -> Outs {
    if (c.arg(1).kind == Json::Num) return c.t(0).split(c.i(1), c.i(2));
    return c.t(0).split(Call::ints(c.arg(1)), c.i(2));
  };
  ops["chunk"] = [](Call& c) -> Outs { return c.t(0).chunk(c.i(1), c.i(2)); };
  ops["unbind"] = [](Call& c) -> Outs { return c.t(0).unbind(c.i(1)); };
  ops["diagonal"] = [](Call& c) -> Outs { return {c.t(0).diagonal(c.i(1), c.i(2), c.i(3))}; };
  ops["unfold"] = [](Call& c) -> Outs { return {c.t(0).unfold(c.i(1), c.i(2), c.i(3))}; };
  ops["squeeze"] = [](Call& c) -> Outs {
    if (c.arg(1).is_null()) return {c.t(0).squeeze()};
    return {c.t(0).squeeze(c.i(1))};
  };
  ops["unsqueeze"] = [](Call& c) -> Outs { return {c.t(0).unsqueeze(c.i(1))}; };
  ops["transpose"] = [](Call& c) -> Outs { return {c.t(0).transpose(c.i(1), c.i(2))}; };
  ops["permute"] = [](Call& c) -> Outs { return {c.t(0).permute(Call::ints(c.arg(1)))}; };
  ops["contiguous"] = [](Call& c) -> Outs { return {c.t(0).contiguous()}; };
  ops["clone"] = [](Call& c) -> Outs { return {c.t(0).clone()}; };
  ops["to"] = [](Call& c) -> Outs { return {c.t(0).to(parse_dtype(c.arg(1).text))}; };
  ops["detach"] = [](Call& c) -> Outs { return {c.t(0).detach()}; };

  // -- indexing
  ops["index"] = [](Call& c) -> Outs { return {c.t(0).index(c.indices(c.arg(1)))}; };
  ops["index_put_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    auto idx = c.indices(c.arg(1));
    return {c.is_t(2) ? a.index_put_(idx, c.t(2)) : a.index_put_(idx, c.s(2))};
  };
  ops["index_select"] = [](Call& c) -> Outs { return {c.t(0).index_select(c.i(1), c.t(2))}; };
  ops["gather"] = [](Call& c) -> Outs { return {c.t(0).gather(c.i(1), c.t(2))}; };
  ops["scatter"] = [](Call& c) -> Outs {
    return {c.is_t(3) ? c.t(0).scatter(c.i(1), c.t(2), c.t(3)) : c.t(0).scatter(c.i(1), c.t(2), c.s(3))};
  };
  ops["scatter_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {c.is_t(3) ? a.scatter_(c.i(1), c.t(2), c.t(3)) : a.scatter_(c.i(1), c.t(2), c.s(3))};
  };
  ops["scatter_add"] = [](Call& c) -> Outs { return {c.t(0).scatter_add(c.i(1), c.t(2), c.t(3))}; };
  ops["scatter_add_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.scatter_add_(c.i(1), c.t(2), c.t(3))};
  };
  ops["index_add_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    Scalar alpha = c.kw("alpha").is_null() ? Scalar(1) : Call::scalar(c.kw("alpha"));
    return {a.index_add_(c.i(1), c.t(2), c.t(3), alpha)};
  };
  ops["masked_fill"] = [](Call& c) -> Outs { return {c.t(0).masked_fill(c.t(1), c.s(2))}; };
  ops["masked_fill_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.masked_fill_(c.t(1), c.s(2))};
  };
  ops["masked_select"] = [](Call& c) -> Outs { return {c.t(0).masked_select(c.t(1))}; };
  ops["nonzero"] = [](Call& c) -> Outs { return {c.t(0).nonzero()}; };
  ops["copy_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.copy_(c.t(1))};
  };
  ops["fill_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.fill_(c.s(1))};
  };
  ops["zero_"] = [](Call& c) -> Outs {
    Tensor a = c.t(0);
    return {a.zero_()};
  };

  // -- factories
  ops["arange"] = [](Call& c) -> Outs {
    auto dt = c.dtype_kw();
    brisk::TensorOptions o;
    if (dt) o = o.dtype(*dt);
    return {brisk::arange(c.s(0), c.s(1), c.s(2), o)};
  };
  ops["linspace"] = [](Call& c) -> Outs {
    auto dt = c.dtype_kw();
    brisk::TensorOptions o;
    if (dt) o = o.dtype(*dt);
    return {brisk::linspace(c.s(0), c.s(1), c.i(2), o)};
  };
  ops["full"] = [](Call& c) -> Outs {
    auto dt = c.dtype_kw();
    brisk::TensorOptions o;
    if (dt) o = o.dtype(*dt);
    return {brisk::full(Call::ints(c.arg(0)), c.s(1), o)};
  };
  ops["scalar_tensor"] = [](Call& c) -> Outs {
    auto dt = c.dtype_kw();
    brisk::TensorOptions o;
    if (dt) o = o.dtype(*dt);
    return {brisk::scalar_tensor(c.s(0), o)};
  };
  ops["full_like"] = [](Call& c) -> Outs {
    auto dt = c.dtype_kw();
    std::optional<brisk::TensorOptions> o;
    if (dt) o = brisk::TensorOptions().dtype(*dt);
    return {brisk::full_like(c.t(0), c.s(1), o)};
  };
  ops["eye"] = [](Call& c) -> Outs {
    auto dt = c.dtype_kw();
    brisk::TensorOptions o;
    if (dt) o = o.dtype(*dt);
    return {brisk::eye(c.i(0), c.i(1), o)};
  };

  // -- nn.functional
  ops["F.relu"] = [](Call& c) -> Outs { return {F::relu(c.t(0))}; };
  ops["F.gelu"] = [](Call& c) -> Outs {
    return {F::gelu(c.t(0), c.kw("approximate").is_null() ? "none" : c.kw("approximate").text)};
  };
  ops["F.silu"] = [](Call& c) -> Outs { return {F::silu(c.t(0))}; };
  ops["F.softmax"] = [](Call& c) -> Outs { return {F::softmax(c.t(0), c.i(1))}; };
  ops["F.log_softmax"] = [](Call& c) -> Outs { return {F::log_softmax(c.t(0), c.i(1))}; };
  ops["F.linear"] = [](Call& c) -> Outs { return {F::linear(c.t(0), c.t(1), c.t(2))}; };
  ops["F.bilinear"] = [](Call& c) -> Outs { return {F::bilinear(c.t(0), c.t(1), c.t(2), c.t(3))}; };
  ops["F.dropout"] = [](Call& c) -> Outs { return {F::dropout(c.t(0), Call::dbl(c.arg(1), 0.5), Call::boolean(c.arg(2)))}; };
  ops["F.layer_norm"] = [](Call& c) -> Outs {
    return {F::layer_norm(c.t(0), Call::ints(c.arg(1)), c.t(2), c.t(3), Call::dbl(c.kw("eps"), 1e-5))};
  };
  ops["F.embedding"] = [](Call& c) -> Outs { return {F::embedding(c.t(0), c.t(1), Call::opt_int(c.kw("padding_idx")))}; };
  ops["F.mse_loss"] = [](Call& c) -> Outs { return {F::mse_loss(c.t(0), c.t(1), reduction(c.kw("reduction")))}; };
  ops["F.l1_loss"] = [](Call& c) -> Outs { return {F::l1_loss(c.t(0), c.t(1), reduction(c.kw("reduction")))}; };
  ops["F.smooth_l1_loss"] = [](Call& c) -> Outs {
    return {F::smooth_l1_loss(c.t(0), c.t(1),
                              F::SmoothL1LossFuncOptions(reduction(c.kw("reduction"))).beta(Call::dbl(c.kw("beta"), 1.0)))};
  };
  ops["F.huber_loss"] = [](Call& c) -> Outs {
    return {F::huber_loss(c.t(0), c.t(1),
                          F::HuberLossFuncOptions(reduction(c.kw("reduction"))).delta(Call::dbl(c.kw("delta"), 1.0)))};
  };
  ops["F.nll_loss"] = [](Call& c) -> Outs {
    auto o = F::NLLLossFuncOptions(reduction(c.kw("reduction")))
                 .weight(c.tensor(c.kw("weight")))
                 .ignore_index(c.kw("ignore_index").is_null() ? -100 : c.kw("ignore_index").as_int());
    return {F::nll_loss(c.t(0), c.t(1), o)};
  };
  ops["F.cross_entropy"] = [](Call& c) -> Outs {
    auto o = F::CrossEntropyFuncOptions(reduction(c.kw("reduction")))
                 .weight(c.tensor(c.kw("weight")))
                 .ignore_index(c.kw("ignore_index").is_null() ? -100 : c.kw("ignore_index").as_int())
                 .label_smoothing(Call::dbl(c.kw("label_smoothing"), 0.0));
    return {F::cross_entropy(c.t(0), c.t(1), o)};
  };
  ops["F.binary_cross_entropy"] = [](Call& c) -> Outs {
    auto o = F::BinaryCrossEntropyFuncOptions(reduction(c.kw("reduction"))).weight(c.tensor(c.kw("weight")));
    return {F::binary_cross_entropy(c.t(0), c.t(1), o)};
  };
  ops["F.binary_cross_entropy_with_logits"] = [](Call& c) -> Outs {
    auto o = F::BinaryCrossEntropyWithLogitsFuncOptions(reduction(c.kw("reduction")))
                 .weight(c.tensor(c.kw("weight")))
                 .pos_weight(c.tensor(c.kw("pos_weight")));
    return {F::binary_cross_entropy_with_logits(c.t(0), c.t(1), o)};
  };
  ops["F.kl_div"] = [](Call& c) -> Outs {
    auto o = F::KLDivFuncOptions(reduction(c.kw("reduction"))).log_target(Call::boolean(c.kw("log_target")));
    return {F::kl_div(c.t(0), c.t(1), o)};
  };
  ops["F.conv1d"] = [](Call& c) -> Outs {
    return {F::conv1d(c.t(0), c.t(1), c.t(2), expanding<1>(c.kw("stride"), 1),
                      conv_padding<1>(c.kw("padding")), expanding<1>(c.kw("dilation"), 1),
                      c.kw("groups").is_null() ? 1 : c.kw("groups").as_int())};
  };
  ops["F.conv2d"] = [](Call& c) -> Outs {
    return {F::conv2d(c.t(0), c.t(1), c.t(2), expanding<2>(c.kw("stride"), 1), conv_padding<2>(c.kw("padding")),
                      expanding<2>(c.kw("dilation"), 1), c.kw("groups").is_null() ? 1 : c.kw("groups").as_int())};
  };
  ops["F.conv_transpose2d"] = [](Call& c) -> Outs {
    return {F::conv_transpose2d(c.t(0), c.t(1), c.t(2), expanding<2>(c.kw("stride"), 1), expanding<2>(c.kw("padding"), 0),
                                expanding<2>(c.kw("output_padding"), 0),
                                c.kw("groups").is_null() ? 1 : c.kw("groups").as_int(), expanding<2>(c.kw("dilation"), 1))};
  };
  ops["F.max_pool1d"] = [](Call& c) -> Outs {
    return {F::max_pool1d(c.t(0), expanding<1>(c.arg(1), 1), opt_expanding<1>(c.kw("stride")), expanding<1>(c.kw("padding"), 0),
                          expanding<1>(c.kw("dilation"), 1), Call::boolean(c.kw("ceil_mode")))};
  };
  ops["F.max_pool2d"] = [](Call& c) -> Outs {
    return {F::max_pool2d(c.t(0), expanding<2>(c.arg(1), 1), opt_expanding<2>(c.kw("stride")), expanding<2>(c.kw("padding"), 0),
                          expanding<2>(c.kw("dilation"), 1), Call::boolean(c.kw("ceil_mode")))};
  };
  ops["F.max_pool2d_with_indices"] = [](Call& c) -> Outs {
    return pair(F::max_pool2d_with_indices(c.t(0), expanding<2>(c.arg(1), 1), opt_expanding<2>(c.kw("stride")),
                                           expanding<2>(c.kw("padding"), 0), expanding<2>(c.kw("dilation"), 1),
                                           Call::boolean(c.kw("ceil_mode"))));
  };
  ops["F.avg_pool1d"] = [](Call& c) -> Outs {
    return {F::avg_pool1d(c.t(0), expanding<1>(c.arg(1), 1), opt_expanding<1>(c.kw("stride")), expanding<1>(c.kw("padding"), 0),
                          Call::boolean(c.kw("ceil_mode")), Call::boolean(c.kw("count_include_pad"), true))};
  };
  ops["F.avg_pool2d"] = [](Call& c) -> Outs {
    return {F::avg_pool2d(c.t(0), expanding<2>(c.arg(1), 1), opt_expanding<2>(c.kw("stride")), expanding<2>(c.kw("padding"), 0),
                          Call::boolean(c.kw("ceil_mode")), Call::boolean(c.kw("count_include_pad"), true),
                          Call::opt_int(c.kw("divisor_override")))};
  };
  ops["F.adaptive_avg_pool2d"] = [](Call& c) -> Outs { return {F::adaptive_avg_pool2d(c.t(0), expanding<2>(c.arg(1), 1))}; };
  ops["F.batch_norm"] = [](Call& c) -> Outs {
    std::optional<double> momentum = 0.1;
    if (!c.kw("momentum").is_null()) momentum = c.kw("momentum").as_double();
    return {F::batch_norm(c.t(0), c.t(1), c.t(2), c.tensor(c.kw("weight")), c.tensor(c.kw("bias")),
                          Call::boolean(c.kw("training")), momentum, Call::dbl(c.kw("eps"), 1e-5))};
  };
  ops["F.group_norm"] = [](Call& c) -> Outs {
    return {F::group_norm(c.t(0), c.i(1), c.tensor(c.kw("weight")), c.tensor(c.kw("bias")), Call::dbl(c.kw("eps"), 1e-5))};
  };
  ops["F.scaled_dot_product_attention"] = [](Call& c) -> Outs {
    std::optional<double> scale;
    if (!c.kw("scale").is_null()) scale = c.kw("scale").as_double();
    return {F::scaled_dot_product_attention(c.t(0), c.t(1), c.t(2), c.tensor(c.kw("attn_mask")), 0.0,
                                            Call::boolean(c.kw("is_causal")), scale)};
  };
  ops["F.pad"] = [](Call& c) -> Outs {
    return {brisk::pad(c.t(0), Call::ints(c.arg(1)), c.kw("value").is_null() ? Scalar(0) : Call::scalar(c.kw("value")))};
  };

  // -- the nn2 family: median, interpolate, padding modes, rms_norm, 3-D and transposed convolutions
  ops["median"] = [](Call& c) -> Outs { return {c.t(0).median()}; };
  ops["nanmedian"] = [](Call& c) -> Outs { return {c.t(0).nanmedian()}; };
  ops["median_dim"] = [](Call& c) -> Outs { return pair(c.t(0).median(c.i(1), Call::boolean(c.arg(2)))); };
  ops["nanmedian_dim"] = [](Call& c) -> Outs { return pair(c.t(0).nanmedian(c.i(1), Call::boolean(c.arg(2)))); };
  const std::pair<const char*, brisk::nn::InterpolateMode> interpolate_modes[] = {
      {"nearest", brisk::nn::kNearest},   {"nearest-exact", brisk::nn::kNearestExact},
      {"linear", brisk::nn::kLinear},     {"bilinear", brisk::nn::kBilinear},
      {"bicubic", brisk::nn::kBicubic},   {"trilinear", brisk::nn::kTrilinear},
      {"area", brisk::nn::kArea}};
  for (auto [name, mode] : interpolate_modes) {
    ops[std::string("F.interpolate[") + name + "]"] = [mode](Call& c) -> Outs {
      auto o = F::InterpolateFuncOptions().mode(mode);
      if (!c.kw("size").is_null()) o.size(Call::ints(c.kw("size")));
      if (const Json& sf = c.kw("scale_factor"); !sf.is_null()) {
        std::vector<double> f;
        if (sf.kind == Json::Arr)
          for (auto& x : sf.items) f.push_back(x.as_double());
        else
          f.push_back(sf.as_double());
        o.scale_factor(f);
      }
      if (!c.kw("align_corners").is_null()) o.align_corners(c.kw("align_corners").b);
      if (!c.kw("recompute_scale_factor").is_null()) o.recompute_scale_factor(c.kw("recompute_scale_factor").b);
      return {F::interpolate(c.t(0), o)};
    };
  }
  const std::pair<const char*, brisk::nn::PadMode> pad_modes[] = {
      {"reflect", brisk::nn::kReflect}, {"replicate", brisk::nn::kReplicate}, {"circular", brisk::nn::kCircular}};
  for (auto [name, mode] : pad_modes) {
    ops[std::string("F.pad[") + name + "]"] = [mode](Call& c) -> Outs {
      return {F::pad(c.t(0), F::PadFuncOptions(Call::ints(c.arg(1))).mode(mode))};
    };
  }
  ops["F.rms_norm"] = [](Call& c) -> Outs {
    std::optional<double> eps;
    if (!c.kw("eps").is_null()) eps = c.kw("eps").as_double();
    return {F::rms_norm(c.t(0), Call::ints(c.arg(1)), c.t(2), eps)};
  };
  ops["F.conv3d"] = [](Call& c) -> Outs {
    return {F::conv3d(c.t(0), c.t(1), c.t(2), expanding<3>(c.kw("stride"), 1), conv_padding<3>(c.kw("padding")),
                      expanding<3>(c.kw("dilation"), 1), c.kw("groups").is_null() ? 1 : c.kw("groups").as_int())};
  };
  ops["F.conv_transpose1d"] = [](Call& c) -> Outs {
    return {F::conv_transpose1d(c.t(0), c.t(1), c.t(2), expanding<1>(c.kw("stride"), 1), expanding<1>(c.kw("padding"), 0),
                                expanding<1>(c.kw("output_padding"), 0),
                                c.kw("groups").is_null() ? 1 : c.kw("groups").as_int(), expanding<1>(c.kw("dilation"), 1))};
  };
  ops["F.conv_transpose3d"] = [](Call& c) -> Outs {
    return {F::conv_transpose3d(c.t(0), c.t(1), c.t(2), expanding<3>(c.kw("stride"), 1), expanding<3>(c.kw("padding"), 0),
                                expanding<3>(c.kw("output_padding"), 0),
                                c.kw("groups").is_null() ? 1 : c.kw("groups").as_int(), expanding<3>(c.kw("dilation"), 1))};
  };
  // -- the nn3 family: activations with options, more losses, instance/local response norm, 3-D,
  // adaptive and power-average pooling, distances, pixel shuffles, fold/unfold, embedding_bag
  ops["F.elu"] = [](Call& c) -> Outs { return {F::elu(c.t(0), F::ELUFuncOptions().alpha(Call::dbl(c.kw("alpha"), 1.0)))}; };
  ops["F.selu"] = [](Call& c) -> Outs { return {F::selu(c.t(0))}; };
  ops["F.celu"] = [](Call& c) -> Outs { return {F::celu(c.t(0), F::CELUFuncOptions().alpha(Call::dbl(c.kw("alpha"), 1.0)))}; };
  ops["F.leaky_relu"] = [](Call& c) -> Outs {
    return {F::leaky_relu(c.t(0), F::LeakyReLUFuncOptions().negative_slope(Call::dbl(c.kw("negative_slope"), 0.01)))};
  };
  ops["F.hardtanh"] = [](Call& c) -> Outs {
    return {F::hardtanh(c.t(0), F::HardtanhFuncOptions()
                                    .min_val(Call::dbl(c.kw("min_val"), -1.0))
                                    .max_val(Call::dbl(c.kw("max_val"), 1.0)))};
  };
  ops["F.relu6"] = [](Call& c) -> Outs { return {F::relu6(c.t(0))}; };
  ops["F.hardswish"] = [](Call& c) -> Outs { return {F::hardswish(c.t(0))}; };
  ops["F.hardsigmoid"] = [](Call& c) -> Outs { return {F::hardsigmoid(c.t(0))}; };
  ops["F.softsign"] = [](Call& c) -> Outs { return {F::softsign(c.t(0))}; };
  ops["F.tanhshrink"] = [](Call& c) -> Outs { return {F::tanhshrink(c.t(0))}; };
  ops["F.logsigmoid"] = [](Call& c) -> Outs { return {F::logsigmoid(c.t(0))}; };
  ops["F.softshrink"] = [](Call& c) -> Outs {
    return {F::softshrink(c.t(0), F::SoftshrinkFuncOptions(Call::dbl(c.kw("lambd"), 0.5)))};
  };
  ops["F.hardshrink"] = [](Call& c) -> Outs {
    return {F::hardshrink(c.t(0), F::HardshrinkFuncOptions(Call::dbl(c.kw("lambd"), 0.5)))};
  };
  ops["F.threshold"] = [](Call& c) -> Outs {
    return {F::threshold(c.t(0), F::ThresholdFuncOptions(c.arg(1).as_double(), c.arg(2).as_double()))};
  };
  ops["F.softmin"] = [](Call& c) -> Outs {
    return {F::softmin(c.t(0), F::SoftminFuncOptions(c.i(1)).dtype(c.dtype_kw()))};
  };
  ops["F.glu"] = [](Call& c) -> Outs { return {F::glu(c.t(0), F::GLUFuncOptions(c.i(1)))}; };
  ops["F.prelu"] = [](Call& c) -> Outs { return {F::prelu(c.t(0), c.t(1))}; };
  ops["F.softplus"] = [](Call& c) -> Outs {
    return {F::softplus(c.t(0), F::SoftplusFuncOptions()
                                    .beta(Call::dbl(c.kw("beta"), 1.0))
                                    .threshold(Call::dbl(c.kw("threshold"), 20.0)))};
  };
  ops["F.margin_ranking_loss"] = [](Call& c) -> Outs {
    auto o = F::MarginRankingLossFuncOptions(reduction(c.kw("reduction"))).margin(Call::dbl(c.kw("margin"), 0.0));
    return {F::margin_ranking_loss(c.t(0), c.t(1), c.t(2), o)};
  };
  ops["F.hinge_embedding_loss"] = [](Call& c) -> Outs {
    auto o = F::HingeEmbeddingLossFuncOptions(reduction(c.kw("reduction"))).margin(Call::dbl(c.kw("margin"), 1.0));
    return {F::hinge_embedding_loss(c.t(0), c.t(1), o)};
  };
  ops["F.soft_margin_loss"] = [](Call& c) -> Outs {
    return {F::soft_margin_loss(c.t(0), c.t(1), F::SoftMarginLossFuncOptions(reduction(c.kw("reduction"))))};
  };
  ops["F.multilabel_soft_margin_loss"] = [](Call& c) -> Outs {
    auto o = F::MultilabelSoftMarginLossFuncOptions(reduction(c.kw("reduction"))).weight(c.tensor(c.kw("weight")));
    return {F::multilabel_soft_margin_loss(c.t(0), c.t(1), o)};
  };
  ops["F.multi_margin_loss"] = [](Call& c) -> Outs {
    auto o = F::MultiMarginLossFuncOptions(reduction(c.kw("reduction")))
                 .p(c.kw("p").is_null() ? 1 : c.kw("p").as_int())
                 .margin(Call::dbl(c.kw("margin"), 1.0))
                 .weight(c.tensor(c.kw("weight")));
    return {F::multi_margin_loss(c.t(0), c.t(1), o)};
  };
  ops["F.multilabel_margin_loss"] = [](Call& c) -> Outs {
    return {F::multilabel_margin_loss(c.t(0), c.t(1), F::MultilabelMarginLossFuncOptions(reduction(c.kw("reduction"))))};
  };
  ops["F.cosine_embedding_loss"] = [](Call& c) -> Outs {
    auto o = F::CosineEmbeddingLossFuncOptions(reduction(c.kw("reduction"))).margin(Call::dbl(c.kw("margin"), 0.0));
    return {F::cosine_embedding_loss(c.t(0), c.t(1), c.t(2), o)};
  };
  ops["F.triplet_margin_loss"] = [](Call& c) -> Outs {
    auto o = F::TripletMarginLossFuncOptions(reduction(c.kw("reduction")))
                 .margin(Call::dbl(c.kw("margin"), 1.0))
                 .p(Call::dbl(c.kw("p"), 2.0))
                 .eps(Call::dbl(c.kw("eps"), 1e-6))
                 .swap(Call::boolean(c.kw("swap")));
    return {F::triplet_margin_loss(c.t(0), c.t(1), c.t(2), o)};
  };
  ops["F.poisson_nll_loss"] = [](Call& c) -> Outs {
    auto o = F::PoissonNLLLossFuncOptions(reduction(c.kw("reduction")))
                 .log_input(Call::boolean(c.kw("log_input"), true))
                 .full(Call::boolean(c.kw("full")))
                 .eps(Call::dbl(c.kw("eps"), 1e-8));
    return {F::poisson_nll_loss(c.t(0), c.t(1), o)};
  };
  ops["F.gaussian_nll_loss"] = [](Call& c) -> Outs {
    auto o = F::GaussianNLLLossFuncOptions(reduction(c.kw("reduction")))
                 .full(Call::boolean(c.kw("full")))
                 .eps(Call::dbl(c.kw("eps"), 1e-6));
    return {F::gaussian_nll_loss(c.t(0), c.t(1), c.t(2), o)};
  };
  ops["F.instance_norm"] = [](Call& c) -> Outs {
    auto o = F::InstanceNormFuncOptions()
                 .running_mean(c.tensor(c.kw("running_mean")))
                 .running_var(c.tensor(c.kw("running_var")))
                 .weight(c.tensor(c.kw("weight")))
                 .bias(c.tensor(c.kw("bias")))
                 .use_input_stats(Call::boolean(c.kw("use_input_stats"), true))
                 .momentum(Call::dbl(c.kw("momentum"), 0.1))
                 .eps(Call::dbl(c.kw("eps"), 1e-5));
    return {F::instance_norm(c.t(0), o)};
  };
  ops["F.local_response_norm"] = [](Call& c) -> Outs {
    auto o = F::LocalResponseNormFuncOptions(c.i(1))
                 .alpha(Call::dbl(c.kw("alpha"), 1e-4))
                 .beta(Call::dbl(c.kw("beta"), 0.75))
                 .k(Call::dbl(c.kw("k"), 1.0));
    return {F::local_response_norm(c.t(0), o)};
  };
  auto max_pool3d_opts = [](Call& c) {
    auto o = F::MaxPool3dFuncOptions(expanding<3>(c.arg(1), 1))
                 .padding(expanding<3>(c.kw("padding"), 0))
                 .dilation(expanding<3>(c.kw("dilation"), 1))
                 .ceil_mode(Call::boolean(c.kw("ceil_mode")));
    if (!c.kw("stride").is_null()) o.stride(expanding<3>(c.kw("stride"), 1));
    return o;
  };
  ops["F.max_pool3d"] = [max_pool3d_opts](Call& c) -> Outs { return {F::max_pool3d(c.t(0), max_pool3d_opts(c))}; };
  ops["F.max_pool3d_with_indices"] = [max_pool3d_opts](Call& c) -> Outs {
    return pair(F::max_pool3d_with_indices(c.t(0), max_pool3d_opts(c)));
  };
  ops["F.avg_pool3d"] = [](Call& c) -> Outs {
    auto o = F::AvgPool3dFuncOptions(expanding<3>(c.arg(1), 1))
                 .padding(expanding<3>(c.kw("padding"), 0))
                 .ceil_mode(Call::boolean(c.kw("ceil_mode")))
                 .count_include_pad(Call::boolean(c.kw("count_include_pad"), true))
                 .divisor_override(Call::opt_int(c.kw("divisor_override")));
    if (!c.kw("stride").is_null()) o.stride(expanding<3>(c.kw("stride"), 1));
    return {F::avg_pool3d(c.t(0), o)};
  };
  ops["F.adaptive_max_pool1d"] = [](Call& c) -> Outs { return {F::adaptive_max_pool1d(c.t(0), expanding<1>(c.arg(1), 1))}; };
  ops["F.adaptive_max_pool2d"] = [](Call& c) -> Outs { return {F::adaptive_max_pool2d(c.t(0), expanding<2>(c.arg(1), 1))}; };
  ops["F.adaptive_max_pool1d_with_indices"] = [](Call& c) -> Outs {
    return pair(F::adaptive_max_pool1d_with_indices(c.t(0), expanding<1>(c.arg(1), 1)));
  };
  ops["F.adaptive_max_pool2d_with_indices"] = [](Call& c) -> Outs {
    return pair(F::adaptive_max_pool2d_with_indices(c.t(0), expanding<2>(c.arg(1), 1)));
  };
  ops["F.adaptive_avg_pool1d"] = [](Call& c) -> Outs { return {F::adaptive_avg_pool1d(c.t(0), expanding<1>(c.arg(1), 1))}; };
  ops["F.adaptive_avg_pool3d"] = [](Call& c) -> Outs { return {F::adaptive_avg_pool3d(c.t(0), expanding<3>(c.arg(1), 1))}; };
  ops["F.lp_pool1d"] = [](Call& c) -> Outs {
    auto o = F::LPPool1dFuncOptions(c.arg(1).as_double(), expanding<1>(c.arg(2), 1)).ceil_mode(Call::boolean(c.kw("ceil_mode")));
    if (!c.kw("stride").is_null()) o.stride(expanding<1>(c.kw("stride"), 1));
    return {F::lp_pool1d(c.t(0), o)};
  };
  ops["F.lp_pool2d"] = [](Call& c) -> Outs {
    auto o = F::LPPool2dFuncOptions(c.arg(1).as_double(), expanding<2>(c.arg(2), 1)).ceil_mode(Call::boolean(c.kw("ceil_mode")));
    if (!c.kw("stride").is_null()) o.stride(expanding<2>(c.kw("stride"), 1));
    return {F::lp_pool2d(c.t(0), o)};
  };
  ops["F.cosine_similarity"] = [](Call& c) -> Outs {
    auto o = F::CosineSimilarityFuncOptions()
                 .dim(c.kw("dim").is_null() ? 1 : c.kw("dim").as_int())
                 .eps(Call::dbl(c.kw("eps"), 1e-8));
    return {F::cosine_similarity(c.t(0), c.t(1), o)};
  };
  ops["F.pairwise_distance"] = [](Call& c) -> Outs {
    auto o = F::PairwiseDistanceFuncOptions()
                 .p(Call::dbl(c.kw("p"), 2.0))
                 .eps(Call::dbl(c.kw("eps"), 1e-6))
                 .keepdim(Call::boolean(c.kw("keepdim")));
    return {F::pairwise_distance(c.t(0), c.t(1), o)};
  };
  ops["F.normalize"] = [](Call& c) -> Outs {
    auto o = F::NormalizeFuncOptions()
                 .p(Call::dbl(c.kw("p"), 2.0))
                 .dim(c.kw("dim").is_null() ? 1 : c.kw("dim").as_int())
                 .eps(Call::dbl(c.kw("eps"), 1e-12));
    return {F::normalize(c.t(0), o)};
  };
  ops["F.one_hot"] = [](Call& c) -> Outs { return {F::one_hot(c.t(0), c.nargs() > 1 ? c.i(1) : -1)}; };
  ops["F.pixel_shuffle"] = [](Call& c) -> Outs { return {F::pixel_shuffle(c.t(0), c.i(1))}; };
  ops["F.pixel_unshuffle"] = [](Call& c) -> Outs { return {F::pixel_unshuffle(c.t(0), c.i(1))}; };
  ops["F.unfold"] = [](Call& c) -> Outs {
    auto o = F::UnfoldFuncOptions(expanding<2>(c.arg(1), 1))
                 .dilation(expanding<2>(c.kw("dilation"), 1))
                 .padding(expanding<2>(c.kw("padding"), 0))
                 .stride(expanding<2>(c.kw("stride"), 1));
    return {F::unfold(c.t(0), o)};
  };
  ops["F.fold"] = [](Call& c) -> Outs {
    auto o = F::FoldFuncOptions(expanding<2>(c.arg(1), 1), expanding<2>(c.arg(2), 1))
                 .dilation(expanding<2>(c.kw("dilation"), 1))
                 .padding(expanding<2>(c.kw("padding"), 0))
                 .stride(expanding<2>(c.kw("stride"), 1));
    return {F::fold(c.t(0), o)};
  };
  ops["F.embedding_bag"] = [](Call& c) -> Outs {
    auto o = F::EmbeddingBagFuncOptions()
                 .offsets(c.tensor(c.kw("offsets")))
                 .per_sample_weights(c.tensor(c.kw("per_sample_weights")))
                 .include_last_offset(Call::boolean(c.kw("include_last_offset")))
                 .padding_idx(Call::opt_int(c.kw("padding_idx")));
    const Json& mode = c.kw("mode");
    if (mode.is_null() || mode.text == "mean") o.mode(brisk::nn::kMean);
    else if (mode.text == "sum") o.mode(brisk::nn::kSum);
    else if (mode.text == "max") o.mode(brisk::nn::kMax);
    else throw RunnerError("runner: unknown embedding_bag mode " + mode.text);
    return {F::embedding_bag(c.t(0), c.t(1), o)};
  };
  return ops;
}

// ---- one program ------------------------------------------------------------------------------

/// w_v[i] for the loss; fuzzlib/builder.py's weights() is the same formula.
Tensor weights(int64_t salt, int64_t v, const Tensor& like) {
  Tensor w = brisk::empty(like.sizes(), brisk::kFloat64);
  double* p = w.data_ptr<double>();
  for (int64_t i = 0; i < w.numel(); ++i) p[i] = double((i * 37 + v * 17 + salt * 5) % 19 - 9) / 8.0;
  return w;
}

struct Outcome {
  std::string status = "ok";  // ok | error | exception
  std::string msg;
};

void put_outcome(std::string& out, const Outcome& o) {
  out += "\"status\":";
  put_quoted(out, o.status);
  if (!o.msg.empty()) {
    out += ",\"msg\":";
    put_quoted(out, o.msg);
  }
}

template <class Fn>
Outcome guarded(Fn&& fn) {
  Outcome o;
  try {
    fn();
  } catch (const brisk::Error& e) {
    o.status = "error";
    o.msg = e.what();
  } catch (const RunnerError& e) {
    o.status = "runner";
    o.msg = e.what();
  } catch (const std::exception& e) {
    o.status = "exception";
    o.msg = std::string(typeid(e).name()) + ": " + e.what();
  } catch (...) {
    o.status = "exception";
    o.msg = "unknown exception type";
  }
  return o;
}

/// Where the runner is, on stderr (unbuffered): after a crash the driver
/// reads the last line to blame the op, or the backward pass, that crashed.
void progress(const std::string& case_id, const std::string& where) {
  std::fprintf(stderr, "@%s %s\n", case_id.c_str(), where.c_str());
}

std::string run_program(const Json& prog, const std::unordered_map<std::string, OpFn>& ops) {
  std::string out = "{\"case\":";
  const Json* case_id = prog.get("case");
  out += case_id ? case_id->text : "null";

  std::vector<Tensor> vals;
  std::vector<size_t> leaves;
  const Json* inputs = prog.get("inputs");
  Outcome in = guarded([&] {
    for (auto& spec : inputs->items) {
      size_t id = spec.get("id")->as_int();
      const Json* rg = spec.get("rg");
      if (rg && rg->b) leaves.push_back(id);
      if (vals.size() <= id) vals.resize(id + 1);
      vals[id] = make_input(spec);
    }
  });
  if (in.status != "ok") {
    out += ",\"input_error\":";
    put_quoted(out, in.msg);
    out += "}";
    return out;
  }

  // Forward: one snapshot (outputs as they are right after the op) per op.
  out += ",\"snaps\":[";
  const Json* prog_ops = prog.get("ops");
  Outcome fwd;
  size_t done = 0;
  const std::string cid = case_id ? case_id->text : "?";
  for (auto& op : prog_ops->items) {
    progress(cid, "op " + std::to_string(done));
    Outs res;
    fwd = guarded([&] {
      const std::string& name = op.get("op")->text;
      auto it = ops.find(name);
      if (it == ops.end()) throw RunnerError("runner: unknown op " + name);
      Call c{op, vals};
      res = it->second(c);
    });
    if (fwd.status != "ok") break;
    if (done) out += ',';
    out += '[';
    const size_t first = op.get("out")->as_int();
    if (vals.size() < first + res.size()) vals.resize(first + res.size());
    for (size_t k = 0; k < res.size(); ++k) {
      if (k) out += ',';
      put_tensor(out, res[k]);
      vals[first + k] = res[k];
    }
    out += ']';
    ++done;
  }
  out += "],";
  put_outcome(out, fwd);
  out += ",\"failed_op\":";
  out += fwd.status == "ok" ? "null" : std::to_string(done);
  if (fwd.status != "ok") return out + "}";

  out += ",\"final\":[";
  for (size_t v = 0; v < vals.size(); ++v) {
    if (v) out += ',';
    put_tensor(out, vals[v]);
  }
  out += "]";

  const Json* want_grad = prog.get("grad");
  if (!want_grad || !want_grad->b || leaves.empty()) return out + "}";

  // Backward of the weighted sum of every float value that requires grad.
  progress(cid, "bw");
  Tensor loss;
  Outcome bw = guarded([&] {
    for (size_t v = 0; v < vals.size(); ++v) {
      const Tensor& t = vals[v];
      if (!t.defined() || !t.is_floating_point() || !t.requires_grad()) continue;
      Tensor term = t.to(brisk::kFloat64).mul(weights(0, int64_t(v), t)).sum();
      loss = loss.defined() ? loss.add(term) : term;
    }
    if (loss.defined()) loss.backward(Tensor(), true);
  });
  out += ",\"bw\":{";
  put_outcome(out, bw);
  out += ",\"has_loss\":";
  out += loss.defined() ? "true" : "false";
  if (bw.status == "ok") {
    out += ",\"grads\":[";
    for (size_t k = 0; k < leaves.size(); ++k) {
      if (k) out += ',';
      put_tensor(out, vals[leaves[k]].grad());
    }
    out += "]";
  }
  out += "}";

  const Json* want_grad2 = prog.get("grad2");
  if (!want_grad2 || !want_grad2->b || bw.status != "ok" || !loss.defined()) return out + "}";
  progress(cid, "bw2");
  brisk::TensorList second;
  bool has_s = false;
  Outcome bw2 = guarded([&] {
    brisk::TensorList xs;
    for (size_t k : leaves) xs.push_back(vals[k]);
    brisk::TensorList g = brisk::autograd::grad({loss}, xs, {}, true, true, true);
    Tensor s;
    for (size_t k = 0; k < g.size(); ++k) {
      if (!g[k].defined() || !g[k].requires_grad()) continue;
      Tensor term = g[k].to(brisk::kFloat64).mul(weights(1, int64_t(k), g[k])).sum();
      s = s.defined() ? s.add(term) : term;
    }
    if (!s.defined()) return;
    has_s = true;
    second = brisk::autograd::grad({s}, xs, {}, std::nullopt, false, true);
  });
  out += ",\"bw2\":{";
  put_outcome(out, bw2);
  out += ",\"has_loss\":";
  out += has_s ? "true" : "false";
  if (bw2.status == "ok" && has_s) {
    out += ",\"grads\":[";
    for (size_t k = 0; k < second.size(); ++k) {
      if (k) out += ',';
      put_tensor(out, second[k]);
    }
    out += "]";
  }
  out += "}}";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  brisk::set_num_threads(1);
  const auto ops = make_ops();
  if (argc > 1 && std::string(argv[1]) == "--list-ops") {
    for (auto& [name, fn] : ops) std::cout << name << "\n";
    return 0;
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::string result;
    try {
      Json prog = JsonParser(line).parse();
      result = run_program(prog, ops);
    } catch (const std::exception& e) {
      // A malformed program or an unknown op: a runner problem, not brisk's.
      result = "{\"runner_error\":";
      put_quoted(result, e.what());
      result += "}";
    }
    std::fwrite(result.data(), 1, result.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
  return 0;
}
