// F::unfold / F::fold and the Fold / Unfold modules (include/brisk/nn/fold.h).
// Both use one table of positions: for block l and kernel offset k, the flat
// position in the zero-padded (Hp, Wp) plane. unfold gathers with it
// (index_select), fold scatter-adds with it; the crop of the padding
// follows. Autograd gives the gradients (gather and scatter_add are each
// other's adjoints).
#include "brisk/nn/fold.h"

#include <vector>

#include "brisk/ops.h"

namespace brisk::nn {

namespace {

struct Blocks {
  int64_t kh, kw, oh, ow, hp, wp, ph, pw;
  std::vector<int64_t> pos;  // (kh * kw) x (oh * ow) flat positions in the padded plane
};

Blocks blocks(const char* op, int64_t h, int64_t w, const ExpandingInts<2>& k, const ExpandingInts<2>& d,
              const ExpandingInts<2>& p, const ExpandingInts<2>& s) {
  for (const auto* v : {&k, &d, &p, &s})
    BRISK_CHECK(v->given() == 1 || v->given() == 2, op, "sizes must be one integer or 2 integers, got ", v->given());
  BRISK_CHECK(k[0] > 0 && k[1] > 0, op, "kernel_size must be positive, got ", k.str());
  BRISK_CHECK(d[0] > 0 && d[1] > 0, op, "dilation must be positive, got ", d.str());
  BRISK_CHECK(s[0] > 0 && s[1] > 0, op, "stride must be positive, got ", s.str());
  BRISK_CHECK(p[0] >= 0 && p[1] >= 0, op, "padding must be non-negative, got ", p.str());
  Blocks b;
  b.kh = k[0];
  b.kw = k[1];
  b.ph = p[0];
  b.pw = p[1];
  b.hp = h + 2 * p[0];
  b.wp = w + 2 * p[1];
  const int64_t sh = d[0] * (k[0] - 1) + 1, sw = d[1] * (k[1] - 1) + 1;
  BRISK_CHECK(b.hp >= sh && b.wp >= sw, op, "the padded size (", b.hp, ", ", b.wp,
              ") is smaller than the dilated kernel (", sh, ", ", sw, ")");
  b.oh = (b.hp - sh) / s[0] + 1;
  b.ow = (b.wp - sw) / s[1] + 1;
  for (int64_t i = 0; i < b.kh; ++i)
    for (int64_t j = 0; j < b.kw; ++j)
      for (int64_t y = 0; y < b.oh; ++y)
        for (int64_t x = 0; x < b.ow; ++x) b.pos.push_back((y * s[0] + i * d[0]) * b.wp + x * s[1] + j * d[1]);
  return b;
}

}  // namespace

namespace functional {

Tensor unfold(const Tensor& input, const UnfoldFuncOptions& o) {
  const char* op = "unfold";
  BRISK_CHECK(input.defined() && (input.dim() == 3 || input.dim() == 4), op,
              "expected a 3-D (unbatched) or 4-D (batched) input, got shape ",
              input.defined() ? input.sizes() : IntArrayRef{});
  const Tensor x = input.dim() == 4 ? input : input.unsqueeze(0);
  // PyTorch: only the batch dim may be 0
  BRISK_CHECK(x.size(1) > 0 && x.size(2) > 0 && x.size(3) > 0, op,
              "expected non-zero channel and spatial dims (only the batch dim may be 0), got shape ", input.sizes());
  const int64_t n = x.size(0), c = x.size(1);
  const Blocks b = blocks(op, x.size(2), x.size(3), o.kernel_size(), o.dilation(), o.padding(), o.stride());
  const Tensor xp = (b.ph || b.pw) ? brisk::pad(x, {b.pw, b.pw, b.ph, b.ph}) : x;
  const Tensor cols = xp.reshape({n, c, b.hp * b.wp})
                          .index_select(2, tensor(b.pos, TensorOptions(kInt64).device(x.device())))
                          .view({n, c * b.kh * b.kw, b.oh * b.ow});
  return input.dim() == 4 ? cols : cols.squeeze(0);
}

Tensor fold(const Tensor& input, const FoldFuncOptions& o) {
  const char* op = "fold";
  BRISK_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3), op,
              "expected a 2-D (unbatched) or 3-D (batched) input, got shape ",
              input.defined() ? input.sizes() : IntArrayRef{});
  const Tensor x = input.dim() == 3 ? input : input.unsqueeze(0);
  BRISK_CHECK(x.size(1) > 0 && x.size(2) > 0, op,
              "expected non-zero dims (only the batch dim may be 0), got shape ", input.sizes());  // PyTorch's check
  BRISK_CHECK(o.output_size().given() == 1 || o.output_size().given() == 2, op,
              "output_size must be one integer or 2 integers");
  const Blocks b = blocks(op, o.output_size()[0], o.output_size()[1], o.kernel_size(), o.dilation(), o.padding(),
                          o.stride());
  const int64_t n = x.size(0), k = b.kh * b.kw, l = b.oh * b.ow;
  BRISK_CHECK(x.size(1) % k == 0, op, "expected the size of dim ", input.dim() - 2,
              " to be divisible by the product of kernel_size (", k, "), got ", x.size(1));
  BRISK_CHECK(x.size(2) == l, op, "expected ", l, " blocks for output_size ", o.output_size().str(), ", got ",
              x.size(2));
  const int64_t c = x.size(1) / k;
  const Tensor index = tensor(b.pos, TensorOptions(kInt64).device(x.device())).view({1, 1, k * l}).expand({n, c, k * l});
  Tensor out = zeros({n, c, b.hp * b.wp}, TensorOptions(x.dtype()).device(x.device()))
                   .scatter_add(2, index, x.reshape({n, c, k * l}))
                   .view({n, c, b.hp, b.wp});
  if (b.ph || b.pw) out = out.narrow(2, b.ph, o.output_size()[0]).narrow(3, b.pw, o.output_size()[1]);
  return input.dim() == 3 ? out : out.squeeze(0);
}

}  // namespace functional

Tensor UnfoldImpl::forward(const Tensor& x) { return F::unfold(x, options); }
std::string UnfoldImpl::extra_repr() const {
  return "kernel_size=" + options.kernel_size().str() + ", dilation=" + options.dilation().str() +
         ", padding=" + options.padding().str() + ", stride=" + options.stride().str();
}
Tensor FoldImpl::forward(const Tensor& x) { return F::fold(x, options); }
std::string FoldImpl::extra_repr() const {
  return "output_size=" + options.output_size().str() + ", kernel_size=" + options.kernel_size().str() +
         ", dilation=" + options.dilation().str() + ", padding=" + options.padding().str() +
         ", stride=" + options.stride().str();
}

}  // namespace brisk::nn
