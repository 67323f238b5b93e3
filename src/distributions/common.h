// Helpers the distribution families share (src/distributions/*.cpp).
#pragma once
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "brisk/autograd.h"
#include "brisk/ops.h"

namespace brisk::distributions::detail {

inline std::vector<int64_t> dims(const Tensor& t) { return t.sizes().vec(); }

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

/// float32 for double parameters, as PyTorch's broadcast_all of numbers.
inline Tensor scalar(double v) { return tensor({static_cast<float>(v)}).reshape({}); }

/// The parameters broadcast to one shape (PyTorch's broadcast_all).
inline std::pair<Tensor, Tensor> broadcast2(const Tensor& a, const Tensor& b) {
  auto r = broadcast_tensors({a, b});
  return {r[0], r[1]};
}

inline double eps_of(ScalarType t) {
  switch (t) {
    case kDouble: return std::numeric_limits<double>::epsilon();
    case kHalf: return 0.0009765625;
    case kBFloat16: return 0.0078125;
    default: return std::numeric_limits<float>::epsilon();
  }
}
inline double tiny_of(ScalarType t) {
  switch (t) {
    case kDouble: return std::numeric_limits<double>::min();
    case kHalf: return 6.103515625e-05;
    default: return std::numeric_limits<float>::min();  // float32, bfloat16
  }
}
inline double lowest_of(ScalarType t) {
  switch (t) {
    case kDouble: return std::numeric_limits<double>::lowest();
    case kHalf: return -65504.0;
    case kBFloat16: return -3.3895313892515355e38;
    default: return std::numeric_limits<float>::lowest();
  }
}

/// probs clamped to [eps, 1 - eps] (PyTorch's clamp_probs).
inline Tensor clamp_probs(const Tensor& p) {
  const double e = eps_of(p.dtype());
  return p.clamp(e, 1 - e);
}
/// log(p) - log1p(-p) of the clamped probs (Bernoulli, Geometric).
inline Tensor binary_probs_to_logits(const Tensor& p) {
  const Tensor c = clamp_probs(p);
  return c.log() - (-c).log1p();
}
/// max(x, 0) - x z + log1p(exp(-|x|)): binary cross-entropy with logits, elementwise.
inline Tensor bce_logits(const Tensor& x, const Tensor& z) { return x.clamp_min(0) - x * z + (-x.abs()).exp().log1p(); }

/// Sums the last n dims (PyTorch's _sum_rightmost).
inline Tensor sum_rightmost(const Tensor& t, int64_t n) {
  if (n <= 0) return t;
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i) d.push_back(-i);
  return t.sum(d);
}

inline Tensor nan_like(const Tensor& t, const std::vector<int64_t>& shape) {
  return full(shape, std::numeric_limits<double>::quiet_NaN(), t.options());
}

inline std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}


// x * log(y), 0 where x == 0: brisk::xlogy (PyTorch's op, as torch.distributions calls it).

}  // namespace brisk::distributions::detail
