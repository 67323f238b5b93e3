// Printing tensors the way PyTorch's Python repr does (torch/_tensor_str.py):
//   tensor([[1., 2.],
//           [3., 4.]])
// with the same float formatting rules (integral / fixed / scientific, one
// common width), summarization with "..." above 1000 elements, line wrapping
// at 80 columns and the same suffixes (device, dtype, size of empty tensors),
// except that dtypes are spelled `brisk.int32`.
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "brisk/ops.h"
#include "core/autograd_meta.h"
#include "core/tensor_create.h"
#include "profiler/record.h"

namespace brisk {

namespace {

// PyTorch's default print options.
constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;  // more elements than this: summarize
constexpr int64_t kEdgeItems = 3;     // items kept at each end of a summarized dim
constexpr int64_t kLineWidth = 80;

// Reads one element of any dtype as double (floating) or int64 (integral).
struct ElementReader {
  double (*as_double)(const char*) = nullptr;
  int64_t (*as_long)(const char*) = nullptr;
};
ElementReader reader_for(ScalarType t) {
  return BRISK_DISPATCH_ALL(t, "print", [&]() -> ElementReader {
    ElementReader r;
    r.as_double = [](const char* p) {
      scalar_t v;
      std::memcpy(&v, p, sizeof(v));
      return static_cast<double>(static_cast<opmath_t<scalar_t>>(v));
    };
    r.as_long = [](const char* p) {
      scalar_t v;
      std::memcpy(&v, p, sizeof(v));
      if constexpr (std::is_floating_point_v<opmath_t<scalar_t>>)
        return static_cast<int64_t>(static_cast<opmath_t<scalar_t>>(v));
      else
        return static_cast<int64_t>(v);
    };
    return r;
  });
}

/// A strided view of host memory: the tensor (on the CPU) being printed.
struct HostView {
  const char* base;
  std::vector<int64_t> sizes, strides;  // strides in bytes
  ElementReader read;
};

/// Calls f(ptr) for every element PyTorch's formatter looks at: all of them,
/// or with `summarize` only the first/last kEdgeItems of each long dim
/// (get_summarized_data).
template <class F>
void for_each_shown(const HostView& v, size_t d, const char* p, bool summarize, const F& f) {
  if (d == v.sizes.size()) {
    f(p);
    return;
  }
  const int64_t n = v.sizes[d];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) i = n - kEdgeItems;
    for_each_shown(v, d + 1, p + i * v.strides[d], summarize, f);
  }
}

std::string format_printf(const char* fmt, int width, int precision, double v) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, width, precision, v);
  return buf;
}

// Python's float formatting prints non-finite values as nan / inf / -inf
// (never "-nan" as printf may).
std::string nonfinite_str(double v) { return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"; }

/// torch._tensor_str._Formatter: one format and width for all elements.
class Formatter {
 public:
  Formatter(const HostView& v, bool summarize, ScalarType dtype)
      : floating_(is_floating_point(dtype)), bool_(dtype == kBool) {
    if (!floating_) {
      for_each_shown(v, 0, v.base, summarize, [&](const char* p) {
        width_ = std::max(width_, static_cast<int>(int_str(v.read.as_long(p)).size()));
      });
      return;
    }
    // Only nonzero finite values choose the format.
    std::vector<double> vals;
    for_each_shown(v, 0, v.base, summarize, [&](const char* p) {
      const double x = v.read.as_double(p);
      if (std::isfinite(x) && x != 0) vals.push_back(x);
    });
    if (vals.empty()) return;
    double lo = std::abs(vals[0]), hi = lo;
    for (double x : vals) {
      lo = std::min(lo, std::abs(x));
      hi = std::max(hi, std::abs(x));
      if (x != std::ceil(x)) int_mode_ = false;
    }
    if (int_mode_) {
      sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8;
    } else {
      sci_mode_ = hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4;
    }
    for (double x : vals) {
      int w;
      if (sci_mode_)
        w = static_cast<int>(format_printf("%*.*e", 0, kPrecision, x).size());
      else if (int_mode_)
        w = static_cast<int>(format_printf("%*.*f", 0, 0, x).size()) + 1;
      else
        w = static_cast<int>(format_printf("%*.*f", 0, kPrecision, x).size());
      width_ = std::max(width_, w);
    }
  }

  int width() const { return width_; }

  /// One element, right-aligned to the common width.
  std::string format(const char* p, const ElementReader& r) const {
    std::string s;
    if (floating_) {
      const double x = r.as_double(p);
      if (!std::isfinite(x)) {
        s = nonfinite_str(x);
      } else if (sci_mode_) {
        s = format_printf("%*.*e", 0, kPrecision, x);
      } else if (int_mode_) {
        s = format_printf("%*.*f", 0, 0, x) + ".";
      } else {
        s = format_printf("%*.*f", 0, kPrecision, x);
      }
    } else {
      s = int_str(r.as_long(p));
    }
    if (static_cast<int>(s.size()) < width_) s.insert(0, static_cast<size_t>(width_) - s.size(), ' ');
    return s;
  }

 private:
  std::string int_str(int64_t v) const {
    if (bool_) return v ? "True" : "False";
    return std::to_string(v);
  }

  bool floating_;
  bool bool_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int width_ = 1;
};

// _vector_str: one dim of elements, wrapped to the line width.
std::string vector_str(const HostView& v, const char* p, size_t d, int64_t indent, bool summarize,
                       const Formatter& fmt) {
  const int64_t element_length = fmt.width() + 2;
  const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / element_length);
  std::vector<std::string> data;
  const int64_t n = v.sizes[d];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      data.push_back(" ...");
      i = n - kEdgeItems;
    }
    data.push_back(fmt.format(p + i * v.strides[d], v.read));
  }
  std::string out = "[";
  const std::string line_sep = ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0) out += (static_cast<int64_t>(i) % per_line == 0) ? line_sep : std::string(", ");
    out += data[i];
  }
  return out + "]";
}

// _tensor_str_with_formatter: nested brackets, blank lines between blocks.
std::string tensor_str(const HostView& v, const char* p, size_t d, int64_t indent, bool summarize,
                       const Formatter& fmt) {
  const size_t nd = v.sizes.size();
  if (d == nd) return fmt.format(p, v.read);  // 0-dim
  if (d + 1 == nd) return vector_str(v, p, d, indent, summarize, fmt);
  std::vector<std::string> slices;
  const int64_t n = v.sizes[d];
  for (int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      slices.push_back("...");
      i = n - kEdgeItems;
    }
    slices.push_back(tensor_str(v, p + i * v.strides[d], d + 1, indent + 1, summarize, fmt));
  }
  const std::string sep =
      "," + std::string(nd - d - 1, '\n') + std::string(static_cast<size_t>(indent + 1), ' ');
  std::string out = "[";
  for (size_t i = 0; i < slices.size(); ++i) {
    if (i > 0) out += sep;
    out += slices[i];
  }
  return out + "]";
}

// _add_suffixes: ", suffix" on the last line, or on a new line past 80 columns.
std::string add_suffixes(std::string s, const std::vector<std::string>& suffixes, int64_t indent) {
  const size_t nl = s.rfind('\n');
  const int64_t last_nl = nl == std::string::npos ? -1 : static_cast<int64_t>(nl);
  int64_t last_line_len = static_cast<int64_t>(s.size()) - last_nl + 1;
  for (const std::string& suffix : suffixes) {
    const int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line_len + len + 2 > kLineWidth) {
      s += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suffix;
      last_line_len = indent + len;
    } else {
      s += ", " + suffix;
      last_line_len += len + 2;
    }
  }
  return s + ")";
}

}  // namespace

std::string to_string(const Tensor& t) {
  if (!t.defined()) return "[ undefined tensor ]";
  const std::string prefix = "tensor(";
  const int64_t indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  if (!t.is_cpu()) {
    Device d = t.device();
    suffixes.push_back("device='" + Device(d.type, std::max<int>(d.index, 0)).str() + "'");
  }
  const std::string dtype_suffix = "dtype=brisk." + std::string(dtype_name(t.dtype()));
  std::string body;
  if (t.numel() == 0) {
    // Like NumPy: the shape unless it is (0,), and the dtype unless it is the
    // default float (an empty tensor shows no values to tell int from float).
    if (t.dim() != 1) {
      std::string size = "size=(";
      for (int64_t d = 0; d < t.dim(); ++d) size += (d ? ", " : "") + std::to_string(t.size(d));
      suffixes.push_back(size + ")");
    }
    if (t.dtype() != default_dtype()) suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    const ScalarType dt = t.dtype();
    if (dt != default_dtype() && dt != kInt64 && dt != kBool) suffixes.push_back(dtype_suffix);
    // Printing synchronizes with the device: read from a host copy.
    detail::sync_point("print", t);
    const Tensor host = t.is_cpu() ? t : detail::to_host_after_sync_point(t);
    HostView v;
    v.base = static_cast<const char*>(host.data_ptr());
    v.read = reader_for(dt);
    const int64_t es = static_cast<int64_t>(host.element_size());
    for (int64_t d = 0; d < host.dim(); ++d) {
      v.sizes.push_back(host.size(d));
      v.strides.push_back(host.stride(d) * es);
    }
    const bool summarize = t.numel() > kThreshold;
    const Formatter fmt(v, summarize, dt);
    body = tensor_str(v, v.base, 0, indent, summarize, fmt);
  }
  if (const auto& fn = t.grad_fn())
    suffixes.push_back("grad_fn=<" + fn->name() + ">");
  else if (t.requires_grad())
    suffixes.push_back("requires_grad=True");
  return add_suffixes(prefix + body, suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }

}  // namespace brisk
