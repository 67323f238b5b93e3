// PixelShuffle, PixelUnshuffle, Unflatten, CosineSimilarity and
// PairwiseDistance (include/brisk/nn/pixelshuffle.h): views, permutes and
// differentiable ops, so autograd gives the gradients.
#include "brisk/nn/pixelshuffle.h"

#include "brisk/autograd.h"

#include <algorithm>
#include <sstream>

#include "brisk/ops.h"

namespace brisk::nn {

namespace functional {

Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  const char* op = "pixel_shuffle";
  BRISK_CHECK(x.defined() && x.dim() >= 3, op, "expected an input of at least 3 dims (*, C, H, W), got shape ",
              x.defined() ? x.sizes() : IntArrayRef{});
  BRISK_CHECK(r > 0, op, "upscale_factor must be positive, got ", r);
  const int64_t d = x.dim(), c = x.size(d - 3), h = x.size(d - 2), w = x.size(d - 1);
  BRISK_CHECK(c % (r * r) == 0, op, "the channel count ", c, " must be divisible by upscale_factor^2 = ", r * r);
  std::vector<int64_t> lead(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t b = x.numel() / std::max<int64_t>(c * h * w, 1);
  const int64_t oc = c / (r * r);
  Tensor y = x.reshape({b, oc, r, r, h, w}).permute({0, 1, 4, 2, 5, 3}).reshape({b, oc, h * r, w * r});
  std::vector<int64_t> out = lead;
  out.insert(out.end(), {oc, h * r, w * r});
  return y.reshape(out);
}
Tensor pixel_shuffle(const Tensor& x, const PixelShuffleFuncOptions& o) { return pixel_shuffle(x, o.upscale_factor()); }

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  const char* op = "pixel_unshuffle";
  BRISK_CHECK(x.defined() && x.dim() >= 3, op, "expected an input of at least 3 dims (*, C, H, W), got shape ",
              x.defined() ? x.sizes() : IntArrayRef{});
  BRISK_CHECK(r > 0, op, "downscale_factor must be positive, got ", r);
  const int64_t d = x.dim(), c = x.size(d - 3), h = x.size(d - 2), w = x.size(d - 1);
  BRISK_CHECK(h % r == 0 && w % r == 0, op, "height ", h, " and width ", w, " must be divisible by downscale_factor ",
              r);
  std::vector<int64_t> lead(x.sizes().begin(), x.sizes().end() - 3);
  const int64_t b = x.numel() / std::max<int64_t>(c * h * w, 1);
  Tensor y = x.reshape({b, c, h / r, r, w / r, r}).permute({0, 1, 3, 5, 2, 4}).reshape({b, c * r * r, h / r, w / r});
  std::vector<int64_t> out = lead;
  out.insert(out.end(), {c * r * r, h / r, w / r});
  return y.reshape(out);
}
Tensor pixel_unshuffle(const Tensor& x, const PixelUnshuffleFuncOptions& o) {
  return pixel_unshuffle(x, o.downscale_factor());
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o) {
  const char* op = "cosine_similarity";
  BRISK_CHECK(x1.defined() && x2.defined(), op, "inputs must be defined");
  BRISK_CHECK(is_floating_point(x1.dtype()) && is_floating_point(x2.dtype()), op,
              "expected floating-point inputs, got ", x1.dtype(), " and ", x2.dtype());
  const auto b = broadcast_tensors({x1, x2});
  const int64_t nd = b[0].dim();
  BRISK_CHECK(o.dim() >= -std::max<int64_t>(nd, 1) && o.dim() < std::max<int64_t>(nd, 1), op, "dim ", o.dim(),
              " is out of range for inputs of ", nd, " dims");
  const int64_t dim = o.dim() < 0 ? o.dim() + nd : o.dim();
  // PyTorch clamps the norms in place under no_grad: the gradient goes
  // through the clamp as if it were not there (a differentiable clamp would
  // drop the norm's path for vectors shorter than eps, and make 0 * NaN a
  // 0 at a zero norm).
  Tensor n1 = brisk::norm(b[0], 2, {dim}, true).clone();
  Tensor n2 = brisk::norm(b[1], 2, {dim}, true).clone();
  {
    NoGradGuard no_grad;
    n1.clamp_min_(o.eps());
    n2.clamp_min_(o.eps());
  }
  return ((b[0] / n1) * (b[1] / n2)).sum({dim});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o) {
  const char* op = "pairwise_distance";
  BRISK_CHECK(x1.defined() && x2.defined(), op, "inputs must be defined");
  const int64_t nd = std::max(x1.dim(), x2.dim());
  BRISK_CHECK(nd >= 1, op, "expected inputs of at least 1 dim");
  return brisk::norm(x1 - x2 + o.eps(), o.p(), {nd - 1}, o.keepdim());
}

}  // namespace functional

PixelShuffleImpl::PixelShuffleImpl(const PixelShuffleOptions& o) : Module("PixelShuffle"), options(o) {
  BRISK_CHECK(o.upscale_factor() > 0, "PixelShuffle", "upscale_factor must be positive, got ", o.upscale_factor());
}
Tensor PixelShuffleImpl::forward(const Tensor& x) { return F::pixel_shuffle(x, options); }
std::string PixelShuffleImpl::extra_repr() const { return "upscale_factor=" + std::to_string(options.upscale_factor()); }

PixelUnshuffleImpl::PixelUnshuffleImpl(const PixelUnshuffleOptions& o) : Module("PixelUnshuffle"), options(o) {
  BRISK_CHECK(o.downscale_factor() > 0, "PixelUnshuffle", "downscale_factor must be positive, got ",
              o.downscale_factor());
}
Tensor PixelUnshuffleImpl::forward(const Tensor& x) { return F::pixel_unshuffle(x, options); }
std::string PixelUnshuffleImpl::extra_repr() const {
  return "downscale_factor=" + std::to_string(options.downscale_factor());
}

Tensor UnflattenImpl::forward(const Tensor& x) { return x.unflatten(options.dim(), options.sizes()); }
std::string UnflattenImpl::extra_repr() const {
  std::ostringstream os;
  os << "dim=" << options.dim() << ", unflattened_size=(";
  for (size_t i = 0; i < options.sizes().size(); ++i) os << (i ? ", " : "") << options.sizes()[i];
  os << (options.sizes().size() == 1 ? ",)" : ")");
  return os.str();
}

Tensor CosineSimilarityImpl::forward(const Tensor& x1, const Tensor& x2) { return F::cosine_similarity(x1, x2, options); }
std::string CosineSimilarityImpl::extra_repr() const {
  std::ostringstream os;
  os << "dim=" << options.dim() << ", eps=" << options.eps();
  return os.str();
}
Tensor PairwiseDistanceImpl::forward(const Tensor& x1, const Tensor& x2) { return F::pairwise_distance(x1, x2, options); }
std::string PairwiseDistanceImpl::extra_repr() const {
  std::ostringstream os;
  os << "p=" << options.p() << ", eps=" << options.eps() << ", keepdim=" << (options.keepdim() ? "true" : "false");
  return os.str();
}

}  // namespace brisk::nn
