// The CPU convolution kernels (rows conv_forward, conv_backward_data and
// conv_backward_weights of core/dispatch.h; plan in core/conv_plan.h): float32
// on oneDNN when it takes the parameters (backend/cpu/conv_onednn.cpp),
// otherwise im2col + GEMM (brisk's matmul): the float64 path, the float32
// path without oneDNN, and the reference the oneDNN path is tested against.
//
// For a chunk of nc samples, col (nc, G, K, L) holds, for every output
// position l = oy * OW + ox (L = OH * OW) and every kernel tap
// k = (c * KH + i) * KW + j of group g's channels c (K = IC / G * KH * KW), the
// src value the tap reads (zero in the padding). Then
//   dst (nc, G, OC/G, L)      = W (G, OC/G, K) @ col
//   grad col (nc, G, K, L)    = W^T @ grad_dst, scattered back by col2im
//   grad W (G, OC/G, K)      += sum over the chunk of grad_dst @ col^T
// Chunks keep col under kColBudgetBytes.
#include <algorithm>

#include "backend/cpu/conv.h"
#include "brisk/autograd.h"
#include "brisk/ops.h"
#include "core/dispatch.h"
#include "core/parallel.h"

namespace brisk::cpu {
namespace BRISK_CPU_ISA {
namespace {

using conv::ConvGeom;
using conv::ConvScratch;

constexpr int64_t kColBudgetBytes = int64_t(32) << 20;

int64_t chunk_size(const ConvGeom& g, size_t elem) {
  const int64_t per_sample = std::max<int64_t>(1, g.ic * g.kh * g.kw * g.oh * g.ow * int64_t(elem));
  return std::clamp<int64_t>(kColBudgetBytes / per_sample, 1, std::max<int64_t>(g.n, 1));
}

/// A 1x1 convolution with stride 1 and no padding reads src as col directly.
bool col_is_src(const ConvGeom& g, const Tensor& src) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.oh == g.ih &&
         g.ow == g.iw && src.is_contiguous();
}

// col (nc, IC * KH * KW, OH * OW) of samples n0 .. n0 + nc of x (any strides).
template <class T>
void im2col(const ConvGeom& g, const Tensor& x, int64_t n0, int64_t nc, T* col) {
  const T* xp = static_cast<const T*>(x.data_ptr());
  const int64_t sn = x.stride(0), sc = x.stride(1), sy = x.stride(2), sx = x.stride(3);
  const int64_t L = g.oh * g.ow, taps = g.kh * g.kw;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, taps * L));
  parallel_for(0, nc * g.ic, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.ic, c = r % g.ic;
      const T* plane = xp + (n0 + n) * sn + c * sc;
      T* out = col + r * taps * L;  // rows (c, i, j) of sample n
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j, out += L) {
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            const int64_t iy = oy * g.sh - g.pt + i * g.dh;
            T* row = out + oy * g.ow;
            if (iy < 0 || iy >= g.ih) {
              std::fill(row, row + g.ow, T(0));
              continue;
            }
            const T* line = plane + iy * sy;
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              const int64_t ix = ox * g.sw - g.pl + j * g.dw;
              row[ox] = (ix >= 0 && ix < g.iw) ? line[ix * sx] : T(0);
            }
          }
        }
    }
  });
}

// grad_x[n0 + n] += col2im(gcol[n]) for the chunk; grad_x any strides.
template <class T>
void col2im_add(const ConvGeom& g, const T* gcol, int64_t n0, int64_t nc, const Tensor& gx) {
  T* xp = static_cast<T*>(gx.data_ptr());
  const int64_t sn = gx.stride(0), sc = gx.stride(1), sy = gx.stride(2), sx = gx.stride(3);
  const int64_t L = g.oh * g.ow, taps = g.kh * g.kw;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, taps * L));
  // One (sample, channel) plane per task: no two tasks write one element.
  parallel_for(0, nc * g.ic, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.ic, c = r % g.ic;
      T* plane = xp + (n0 + n) * sn + c * sc;
      const T* in = gcol + r * taps * L;
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j, in += L)
          for (int64_t oy = 0; oy < g.oh; ++oy) {
            const int64_t iy = oy * g.sh - g.pt + i * g.dh;
            if (iy < 0 || iy >= g.ih) continue;
            T* line = plane + iy * sy;
            const T* row = in + oy * g.ow;
            for (int64_t ox = 0; ox < g.ow; ++ox) {
              const int64_t ix = ox * g.sw - g.pl + j * g.dw;
              if (ix >= 0 && ix < g.iw) line[ix * sx] += row[ox];
            }
          }
    }
  });
}

/// col of a chunk as a (nc, G, K, L) tensor (src itself for 1x1 convolutions).
Tensor make_col(const ConvGeom& g, const Tensor& src, int64_t n0, int64_t nc) {
  const int64_t G = g.groups, K = g.ic / G * g.kh * g.kw, L = g.oh * g.ow;
  if (col_is_src(g, src)) return src.narrow(0, n0, nc).view({nc, G, K, L});
  Tensor col = empty({nc, G, K, L}, src.options());
  if (src.dtype() == kDouble)
    im2col<double>(g, src, n0, nc, col.data_ptr<double>());
  else
    im2col<float>(g, src, n0, nc, col.data_ptr<float>());
  return col;
}

void check_dtype(const Tensor& t) {
  BRISK_INTERNAL_ASSERT(t.dtype() == kFloat || t.dtype() == kDouble, "conv kernel dtype ", t.dtype());
}

void im2col_forward(const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias, const Tensor& dst) {
  check_dtype(src);
  NoGradGuard no_grad;
  const int64_t G = g.groups, K = g.ic / G * g.kh * g.kw;
  const Tensor wg = w.reshape({G, g.oc / G, K});
  const int64_t chunk = chunk_size(g, src.element_size());
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - n0);
    const Tensor y = matmul(wg, make_col(g, src, n0, nc));  // (nc, G, OC/G, L)
    Tensor(dst.narrow(0, n0, nc)).copy_(y.view({nc, g.oc, g.oh, g.ow}));
  }
  if (bias.defined()) Tensor(dst).add_(bias.view({1, g.oc, 1, 1}));
}

void im2col_backward_data(const ConvGeom& g, const Tensor& grad_dst, const Tensor& w, const Tensor& grad_src) {
  check_dtype(grad_dst);
  NoGradGuard no_grad;
  const int64_t G = g.groups, K = g.ic / G * g.kh * g.kw;
  const Tensor wt = w.reshape({G, g.oc / G, K}).transpose(1, 2);  // (G, K, OC/G)
  Tensor(grad_src).zero_();
  const int64_t chunk = chunk_size(g, grad_dst.element_size());
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t nc = std::min(chunk, g.n - n0);
    const Tensor gy = grad_dst.narrow(0, n0, nc).contiguous().view({nc, G, g.oc / G, g.oh * g.ow});
    const Tensor gcol = matmul(wt, gy).contiguous();  // (nc, G, K, L)
    if (gcol.dtype() == kDouble)
      col2im_add<double>(g, gcol.data_ptr<double>(), n0, nc, grad_src);
    else
      col2im_add<float>(g, gcol.data_ptr<float>(), n0, nc, grad_src);
  }
}

void im2col_backward_weights(const ConvGeom& g, const Tensor& src, const Tensor& grad_dst, const Tensor& grad_w,
                             const Tensor& grad_bias) {
  check_dtype(src);
  NoGradGuard no_grad;
  const int64_t G = g.groups, K = g.ic / G * g.kh * g.kw;
  if (grad_w.defined()) {
    Tensor acc = zeros({G, g.oc / G, K}, src.options());
    const int64_t chunk = chunk_size(g, src.element_size());
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      const int64_t nc = std::min(chunk, g.n - n0);
      const Tensor gy = grad_dst.narrow(0, n0, nc).contiguous().view({nc, G, g.oc / G, g.oh * g.ow});
      const Tensor col = make_col(g, src, n0, nc);
      acc.add_(matmul(gy, col.transpose(2, 3)).sum(0));  // (G, OC/G, K)
    }
    Tensor(grad_w).copy_(acc.view(grad_w.sizes()));
  }
  if (grad_bias.defined()) Tensor(grad_bias).copy_(grad_dst.sum({0, 2, 3}));
}

void count_im2col() { conv_stats().im2col_calls.fetch_add(1, std::memory_order_relaxed); }

// Note [bfloat16 convolutions]
// bfloat16 tensors run on oneDNN's bfloat16 convolution where the CPU has
// AVX512_BF16 or AMX (float32 accumulation, one rounding of the result, as
// PyTorch's mkldnn path); elsewhere, or where oneDNN has no kernel for the
// shape, they are converted to float32, run there and the results rounded
// back once (the path every 16-bit convolution took before).
Tensor as_float(const Tensor& t) {
  if (!t.defined()) return t;
  const MemoryFormat fmt = t.dim() == 4 && !t.is_contiguous() && t.is_contiguous(kChannelsLast) ? kChannelsLast
                                                                                                  : kContiguous;
  Tensor f = empty(t.sizes(), TensorOptions(kFloat), fmt);
  f.copy_(t);
  return f;
}
void round_back(const Tensor& to, const Tensor& from) {
  if (to.defined()) Tensor(to).copy_(from);
}

void conv_forward_kernel(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias,
                         const Tensor& dst, ConvScratch* scratch) {
  NoGradGuard no_grad;
  if (conv::empty_problem(g)) {
    Tensor(dst).zero_();
    if (bias.defined()) Tensor(dst).add_(bias.view({1, g.oc, 1, 1}));
    return;
  }
  if ((src.dtype() == kFloat || src.dtype() == kBFloat16) && onednn_conv_forward(g, src, w, bias, dst, scratch))
    return;
  if (src.dtype() == kBFloat16) {  // Note [bfloat16 convolutions]
    const Tensor d = as_float(dst);
    conv_forward_kernel(op, g, as_float(src), as_float(w), as_float(bias), d, nullptr);
    round_back(dst, d);
    return;
  }
  count_im2col();
  im2col_forward(g, src, w, bias, dst);
}

void conv_backward_data_kernel(const char* op, const ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                               const Tensor& grad_src, ConvScratch* scratch) {
  NoGradGuard no_grad;
  if (conv::empty_problem(g)) {
    Tensor(grad_src).zero_();
    return;
  }
  if ((grad_dst.dtype() == kFloat || grad_dst.dtype() == kBFloat16) &&
      onednn_conv_backward_data(g, grad_dst, w, grad_src, scratch))
    return;
  if (grad_dst.dtype() == kBFloat16) {
    const Tensor gs = as_float(grad_src);
    conv_backward_data_kernel(op, g, as_float(grad_dst), as_float(w), gs, nullptr);
    round_back(grad_src, gs);
    return;
  }
  count_im2col();
  im2col_backward_data(g, grad_dst, w, grad_src);
}

void conv_backward_weights_kernel(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& grad_dst,
                                  const Tensor& grad_w, const Tensor& grad_bias, ConvScratch* scratch) {
  NoGradGuard no_grad;
  if (!grad_w.defined()) {
    if (grad_bias.defined()) Tensor(grad_bias).copy_(grad_dst.sum({0, 2, 3}));
    return;
  }
  if (conv::empty_problem(g)) {
    Tensor(grad_w).zero_();
    if (grad_bias.defined()) Tensor(grad_bias).copy_(grad_dst.sum({0, 2, 3}));
    return;
  }
  if ((src.dtype() == kFloat || src.dtype() == kBFloat16) &&
      onednn_conv_backward_weights(g, src, grad_dst, grad_w, grad_bias, scratch))
    return;
  if (src.dtype() == kBFloat16) {
    const Tensor gw = as_float(grad_w), gb = as_float(grad_bias);
    conv_backward_weights_kernel(op, g, as_float(src), as_float(grad_dst), gw, gb, nullptr);
    round_back(grad_w, gw);
    round_back(grad_bias, gb);
    return;
  }
  count_im2col();
  im2col_backward_weights(g, src, grad_dst, grad_w, grad_bias);
}

}  // namespace

void register_conv_kernels() {
  register_kernel<OpId::conv_forward>(kCPU, conv_forward_kernel);
  register_kernel<OpId::conv_backward_data>(kCPU, conv_backward_data_kernel);
  register_kernel<OpId::conv_backward_weights>(kCPU, conv_backward_weights_kernel);
}

}  // namespace BRISK_CPU_ISA
}  // namespace brisk::cpu
