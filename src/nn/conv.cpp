// Front ends of conv1d, conv2d and conv_transpose2d (argument checks, output
// shapes, layouts, the recorded backward) and the Conv1d / Conv2d /
// ConvTranspose2d modules. The kernels are rows of the op table
// (conv_forward, conv_backward_data, conv_backward_weights; plan in
// core/conv_plan.h): oneDNN and im2col on the CPU (backend/cpu/conv_onednn.cpp,
// backend/cpu/kernels/conv.cpp, docs/design/conv.md), cuDNN on CUDA
// (backend/cuda/conv_cudnn.cpp, docs/design/cuda_conv.md).
#include "brisk/nn/conv.h"

#include <cmath>
#include <memory>
#include <sstream>

#include "autograd/function.h"
#include "core/autocast.h"
#include "core/tensor_create.h"
#include "brisk/nn/init.h"
#include "brisk/ops.h"
#include "core/conv_plan.h"
#include "core/dispatch.h"
#include "core/profile_hooks.h"

namespace brisk::nn {

namespace {

using conv::ConvGeom;

// The kernels of one call, from the op table (core/dispatch.h): oneDNN or
// im2col on the CPU, cuDNN on CUDA (`scratch` serves the CPU kernels only).
void kernel_forward(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& w, const Tensor& bias,
                    const Tensor& dst, conv::ConvScratch* scratch) {
  kernel<OpId::conv_forward>(src.device().type, op)(op, g, src, w, bias, dst, scratch);
}
void kernel_backward_data(const char* op, const ConvGeom& g, const Tensor& grad_dst, const Tensor& w,
                          const Tensor& grad_src, conv::ConvScratch* scratch) {
  kernel<OpId::conv_backward_data>(grad_dst.device().type, op)(op, g, grad_dst, w, grad_src, scratch);
}
void kernel_backward_weights(const char* op, const ConvGeom& g, const Tensor& src, const Tensor& grad_dst,
                             const Tensor& grad_w, const Tensor& grad_bias, conv::ConvScratch* scratch) {
  kernel<OpId::conv_backward_weights>(src.device().type, op)(op, g, src, grad_dst, grad_w, grad_bias, scratch);
}

/// One call's parameters, expanded to 2-D (a 1-D convolution has a neutral
/// first dim: kernel 1, stride 1, dilation 1, no padding).
struct ConvArgs {
  const char* op = "conv2d";
  int64_t spatial = 2;
  bool transposed = false;
  std::array<int64_t, 2> stride{1, 1}, dilation{1, 1}, pad_before{0, 0}, pad_after{0, 0}, output_padding{0, 0};
  int64_t groups = 1;
  bool same = false;  // padding="same": resolved once the kernel size is known
};

std::string pair_str(const std::array<int64_t, 2>& v, int64_t spatial) {
  return spatial == 1 ? std::to_string(v[1]) : "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

template <size_t D>
std::array<int64_t, 2> expand(const char* op, const char* what, const ExpandingInts<D>& v, int64_t neutral) {
  BRISK_CHECK(v.given() == 1 || v.given() == int(D), op, what, " must be one integer or ", D, " integers, got ",
              v.given());
  std::array<int64_t, 2> r{neutral, neutral};
  for (size_t i = 0; i < D; ++i) r[2 - D + i] = v[i];
  return r;
}

template <size_t D>
ConvArgs direct_args(const char* op, const ExpandingInts<D>& stride, const ConvPadding<D>& padding,
                     const ExpandingInts<D>& dilation, int64_t groups) {
  ConvArgs a;
  a.op = op;
  a.spatial = D;
  a.stride = expand(op, "stride", stride, 1);
  a.dilation = expand(op, "dilation", dilation, 1);
  a.groups = groups;
  if (!padding.mode().empty()) {
    BRISK_CHECK(padding.is_same() || padding.is_valid(), op, "padding must be 'same', 'valid' or integers, got '",
                padding.mode(), "'");
    if (padding.is_same()) {
      BRISK_CHECK(a.stride[0] == 1 && a.stride[1] == 1, op,
                  "padding='same' is not supported for strided convolutions (stride ", pair_str(a.stride, D), ")");
      a.same = true;
    }
  } else {
    a.pad_before = a.pad_after = expand(op, "padding", padding.ints(), 0);
  }
  return a;
}

template <size_t D>
ConvArgs transposed_args(const char* op, const ExpandingInts<D>& stride, const ExpandingInts<D>& padding,
                         const ExpandingInts<D>& output_padding, int64_t groups, const ExpandingInts<D>& dilation) {
  ConvArgs a;
  a.op = op;
  a.spatial = D;
  a.transposed = true;
  a.stride = expand(op, "stride", stride, 1);
  a.dilation = expand(op, "dilation", dilation, 1);
  a.pad_before = a.pad_after = expand(op, "padding", padding, 0);
  a.output_padding = expand(op, "output_padding", output_padding, 0);
  a.groups = groups;
  return a;
}

/// Whether a 4-D tensor's strides order its dims as channels_last (PyTorch's
/// suggest_memory_format): C innermost, then W, H, N, judged by strides even
/// for dims of size 1, so that an (N, 1, H, W) tensor made channels_last by
/// its producer stays channels_last. Strides only decide the layout choice;
/// the kernels still get a tensor that is_contiguous() in that layout.
bool is_channels_last(const Tensor& t) {
  if (t.dim() != 4 || t.numel() == 0) return false;
  int64_t min = 0;
  for (int64_t d : {1, 3, 2, 0}) {
    if (t.stride(d) < min) return false;
    if (d == 0 && min == t.stride(1)) return false;  // N and C tie: contiguous (N, 1, ...) or (1, C, 1, 1)
    min = t.stride(d);
    if (t.size(d) > 1) min *= t.size(d);
  }
  return true;
}

/// (N, C, H, W) view of an input: unbatched inputs get N = 1, 1-D ones H = 1.
Tensor to_4d(const Tensor& t, bool batched, int64_t spatial) {
  Tensor r = batched ? t : t.unsqueeze(0);
  return spatial == 1 ? r.unsqueeze(2) : r;
}
Tensor from_4d(const Tensor& t, bool batched, int64_t spatial) {
  Tensor r = spatial == 1 ? t.squeeze(2) : t;
  return batched ? r : r.squeeze(0);
}
/// Activations go to the kernels contiguous or channels_last (oneDNN reorders
/// one into the other in a single pass; other strides are copied to `fmt`).
Tensor kernel_activation(const Tensor& t4, ScalarType ct, MemoryFormat fmt) {
  Tensor t = t4.to(ct);
  return t.is_contiguous() || t.is_contiguous(kChannelsLast) ? t : t.contiguous(fmt);
}
/// Weights go to the kernels contiguous or channels_last.
Tensor kernel_weight(const Tensor& w4, ScalarType ct) {
  Tensor w = w4.to(ct);
  if (w.is_contiguous() || w.is_contiguous(kChannelsLast)) return w;
  return w.contiguous(is_channels_last(w) ? kChannelsLast : kContiguous);
}

void check_inputs(const ConvArgs& a, const Tensor& x, const Tensor& w, const Tensor& b) {
  const char* op = a.op;
  BRISK_CHECK(x.defined() && w.defined(), op, "input and weight must be defined");
  const int64_t D = a.spatial;
  BRISK_CHECK(x.dim() == D + 1 || x.dim() == D + 2, op, "expected a ", D + 1, "-D (unbatched) or ", D + 2,
              "-D (batched) input, got input of shape ", x.sizes());
  BRISK_CHECK(w.dim() == D + 2, op, "expected a ", D + 2, "-D weight (",
              a.transposed ? "in_channels, out_channels / groups" : "out_channels, in_channels / groups",
              D == 1 ? ", kernel_size" : ", kH, kW", "), got weight of shape ", w.sizes());
  BRISK_CHECK(w.device() == x.device(), op, "input and weight must be on the same device, got input on ",
              x.device(), " and weight on ", w.device());
  if (b.defined())
    BRISK_CHECK(b.device() == x.device(), op, "input and bias must be on the same device, got input on ",
                x.device(), " and bias on ", b.device());
  BRISK_CHECK(supports(OpId::conv_forward, x.device().type), op, "not implemented on ", x.device().type);
  BRISK_CHECK(x.is_floating_point(), op, "expected a floating point input, got ", x.dtype());
  BRISK_CHECK(w.dtype() == x.dtype(), op, "input (", x.dtype(), ") and weight (", w.dtype(),
              ") must have the same dtype");
  if (b.defined())
    BRISK_CHECK(b.dtype() == x.dtype(), op, "input (", x.dtype(), ") and bias (", b.dtype(),
                ") must have the same dtype");
  BRISK_CHECK(a.groups > 0, op, "groups must be positive, got ", a.groups);
  for (int i = 0; i < 2; ++i) {
    BRISK_CHECK(a.stride[i] > 0, op, "stride must be positive, got ", pair_str(a.stride, D));
    BRISK_CHECK(a.dilation[i] > 0, op, "dilation must be positive, got ", pair_str(a.dilation, D));
    BRISK_CHECK(a.pad_before[i] >= 0, op, "padding must be non-negative, got ", pair_str(a.pad_before, D));
    BRISK_CHECK(a.output_padding[i] >= 0, op, "output_padding must be non-negative, got ",
                pair_str(a.output_padding, D));
  }
}

/// Checks shapes and computes the geometry of the direct convolution that
/// runs the op (for a transposed op: its dual, see core/conv_plan.h), plus
/// the op's output shape (N, C, H, W).
ConvGeom make_geometry(ConvArgs& a, const Tensor& x4, const Tensor& w4, const Tensor& b, const Tensor& x,
                       const Tensor& w, std::array<int64_t, 4>& out_shape) {
  const char* op = a.op;
  const int64_t D = a.spatial, G = a.groups;
  const int64_t n = x4.size(0), c = x4.size(1), h = x4.size(2), wd = x4.size(3);
  const int64_t kh = w4.size(2), kw = w4.size(3);
  BRISK_CHECK(w4.size(0) % G == 0, op, "weight of shape ", w.sizes(), " with groups=", G, ": ",
              a.transposed ? "in_channels " : "out_channels ", w4.size(0), " is not divisible by groups");
  int64_t out_c;
  if (!a.transposed) {
    BRISK_CHECK(c == w4.size(1) * G, op, "input of shape ", x.sizes(), " has ", c, " channels, but weight of shape ",
                w.sizes(), " with groups=", G, " expects ", w4.size(1) * G);
    out_c = w4.size(0);
  } else {
    BRISK_CHECK(c == w4.size(0), op, "input of shape ", x.sizes(), " has ", c, " channels, but weight of shape ",
                w.sizes(), " expects ", w4.size(0), " (weight.size(0) = in_channels)");
    out_c = w4.size(1) * G;
  }
  if (b.defined())
    BRISK_CHECK(b.dim() == 1 && b.size(0) == out_c, op, "bias must be a 1-D tensor of ", out_c,
                " elements (out_channels), got shape ", b.sizes());
  BRISK_CHECK(c > 0 && h > 0 && wd > 0, op, "input of shape ", x.sizes(), " has a zero-size non-batch dim");
  const std::array<int64_t, 2> in{h, wd}, k{kh, kw};
  if (a.same) {
    // PyTorch: total = dilation * (k - 1), the odd one on the bottom/right.
    for (int i = 0; i < 2; ++i) {
      const int64_t total = a.dilation[i] * (k[i] - 1);
      a.pad_before[i] = total / 2;
      a.pad_after[i] = total - total / 2;
    }
  }
  std::array<int64_t, 2> out{};
  for (int i = 0; i < 2; ++i) {
    const int64_t extent = a.dilation[i] * (k[i] - 1) + 1;
    if (!a.transposed) {
      const int64_t padded = in[i] + a.pad_before[i] + a.pad_after[i];
      if (padded < extent) {
        std::array<int64_t, 2> pin{}, kext{};
        for (int j = 0; j < 2; ++j) {
          pin[j] = in[j] + a.pad_before[j] + a.pad_after[j];
          kext[j] = a.dilation[j] * (k[j] - 1) + 1;
        }
        BRISK_FAIL(op, "kernel size ", pair_str(kext, D), " (dilated) is larger than the padded input size ",
                   pair_str(pin, D), " of input of shape ", x.sizes());
      }
      out[i] = (padded - extent) / a.stride[i] + 1;
    } else {
      BRISK_CHECK(a.output_padding[i] < a.stride[i] || a.output_padding[i] < a.dilation[i], op,
                  "output_padding ", pair_str(a.output_padding, D), " must be smaller than either stride ",
                  pair_str(a.stride, D), " or dilation ", pair_str(a.dilation, D));
      out[i] = (in[i] - 1) * a.stride[i] - 2 * a.pad_before[i] + extent + a.output_padding[i];
      BRISK_CHECK(out[i] > 0, op, "input of shape ", x.sizes(), " gives an output size ", out[i],
                  " < 1 (too much padding)");
    }
  }
  out_shape = {n, out_c, out[0], out[1]};

  ConvGeom g;
  g.n = n;
  if (!a.transposed) {
    g.ic = c, g.ih = h, g.iw = wd;
    g.oc = out_c, g.oh = out[0], g.ow = out[1];
  } else {  // the dual: src is the op's output, dst its input
    g.ic = out_c, g.ih = out[0], g.iw = out[1];
    g.oc = c, g.oh = h, g.ow = wd;
  }
  g.kh = kh, g.kw = kw;
  g.sh = a.stride[0], g.sw = a.stride[1];
  g.dh = a.dilation[0], g.dw = a.dilation[1];
  g.pt = a.pad_before[0], g.pl = a.pad_before[1];
  g.pb = a.pad_after[0], g.pr = a.pad_after[1];
  g.groups = G;
  return g;
}

// ---- differentiable kernel calls (create_graph) ------------------------------------------
// Note [Convolution double backward]
// Every convolution here is a direct convolution D from src (g.ic channels)
// to dst (g.oc channels) with weight (g.oc, g.ic / G, kh, kw), run forward or
// as one of its two adjoints (a transposed convolution is D's backward-data):
//   F(src, w) = dst,   Bd(dst, w) = src,   Bw(src, dst) = w,
// with <F(s, w), d> = <s, Bd(d, w)> = <w, Bw(s, d)>. F is bilinear, so the
// derivative of each of the three is again one of the three:
//   F(s, w) = d:  ds = Bd(gd, w),  dw = Bw(s, gd)
//   Bd(d, w) = s: dd = F(gs, w),   dw = Bw(gs, d)
//   Bw(s, d) = w: ds = Bd(d, gw),  dd = F(s, gw)
// conv_call records that rule, so a backward run under create_graph is
// differentiable to any order, with the geometry (stride, padding on each
// side, dilation, groups, output sizes) of the first call.
enum class ConvCall { Forward, BackwardData, BackwardWeights };

/// One kernel call on 4-D tensors in the kernel dtype, recorded when grad mode
/// is on and an operand requires grad. Forward(src, w), BackwardData(dst, w),
/// BackwardWeights(src, dst).
Tensor conv_call(ConvCall call, const ConvGeom& g, const char* op, const Tensor& a, const Tensor& b) {
  Tensor out;
  {
    NoGradGuard no_grad;
    const ScalarType ct = a.dtype();
    const TensorOptions copts = TensorOptions(ct).device(a.device());
    const MemoryFormat fmt = g.channels_last ? kChannelsLast : kContiguous;
    switch (call) {
      case ConvCall::Forward:
        out = empty({g.n, g.oc, g.oh, g.ow}, copts, fmt);
        kernel_forward(op, g, kernel_activation(a, ct, fmt), kernel_weight(b, ct), Tensor(), out, nullptr);
        break;
      case ConvCall::BackwardData:
        out = empty({g.n, g.ic, g.ih, g.iw}, copts, fmt);
        kernel_backward_data(op, g, kernel_activation(a, ct, fmt), kernel_weight(b, ct), out, nullptr);
        break;
      case ConvCall::BackwardWeights:
        out = empty({g.oc, g.ic / g.groups, g.kh, g.kw}, copts);
        kernel_backward_weights(op, g, kernel_activation(a, ct, fmt), kernel_activation(b, ct, fmt), out, Tensor(),
                                nullptr);
        break;
    }
  }
  if (!autograd::should_record(a, b)) return out;
  using namespace autograd;
  record(call == ConvCall::Forward ? "ConvolutionBackward0" : "ConvolutionBackwardBackward0", {out}, {a, b},
         {save(a), save(b)}, [call, g, op](BackwardCtx& c) -> TensorList {
           const Tensor& go = c.grad();
           const Tensor a = c.saved(0), b = c.saved(1);
           Tensor ga, gb;
           switch (call) {
             case ConvCall::Forward:  // a = src, b = w
               if (c.needs(0)) ga = conv_call(ConvCall::BackwardData, g, op, go, b);
               if (c.needs(1)) gb = conv_call(ConvCall::BackwardWeights, g, op, a, go);
               break;
             case ConvCall::BackwardData:  // a = dst, b = w
               if (c.needs(0)) ga = conv_call(ConvCall::Forward, g, op, go, b);
               if (c.needs(1)) gb = conv_call(ConvCall::BackwardWeights, g, op, go, a);
               break;
             case ConvCall::BackwardWeights:  // a = src, b = dst
               if (c.needs(0)) ga = conv_call(ConvCall::BackwardData, g, op, b, go);
               if (c.needs(1)) gb = conv_call(ConvCall::Forward, g, op, a, go);
               break;
           }
           return {ga, gb};
         });
  return out;
}

/// The gradients of a convolution written with conv_call: a graph for double
/// backward (the backward runs under create_graph).
TensorList differentiable_backward(const ConvGeom& g, const char* op, bool transposed, bool batched,
                                   int64_t spatial, ScalarType ct, const Tensor& grad, const Tensor& x,
                                   const Tensor& w, bool need_x, bool need_w, bool need_b) {
  const Tensor gy = to_4d(grad, batched, spatial).to(ct);
  const Tensor x4 = to_4d(x, batched, spatial).to(ct);
  const Tensor w4 = (spatial == 1 ? w.unsqueeze(2) : w).to(ct);
  Tensor gx, gw, gb;
  if (need_x) {
    gx = conv_call(transposed ? ConvCall::Forward : ConvCall::BackwardData, g, op, gy, w4);
    gx = from_4d(gx, batched, spatial).to(x.dtype());
  }
  if (need_w) {
    gw = transposed ? conv_call(ConvCall::BackwardWeights, g, op, gy, x4)
                    : conv_call(ConvCall::BackwardWeights, g, op, x4, gy);
    if (spatial == 1) gw = gw.squeeze(2);
    gw = gw.to(w.dtype());
  }
  if (need_b) gb = gy.sum({0, 2, 3}).to(grad.dtype());
  return {gx, gw, gb};
}

Tensor convolution(ConvArgs a, const Tensor& input, const Tensor& weight, const Tensor& bias) {
  BRISK_PROFILE_OP(a.op, input, weight, bias);
  check_inputs(a, input, weight, bias);
  const bool batched = input.dim() == a.spatial + 2;
  const bool recording = autograd::should_record(input, weight, bias);
  // The CPU computes float16 in float32 and hands bfloat16 to its kernels
  // (Note [bfloat16 convolutions]); cuDNN takes both as they are.
  // A transposed bfloat16 convolution with a bias on the CPU runs in float
  // too: its kernel (a backward-data one) has no bias, and adding the bias
  // to the rounded result rounds twice where PyTorch's CPU kernel rounds
  // once (fuzzer, seed 229 case 365384: 4.174 - 0.256 gave 3.9375, not
  // 3.921875; exp amplified it). PyTorch's CUDA path adds the bias after
  // cuDNN, in bfloat16, as brisk's does.
  const bool cpu16 = input.is_cpu() && (input.dtype() == kHalf ||
                                        (input.dtype() == kBFloat16 && a.transposed && bias.defined()));
  const ScalarType ct = cpu16 ? kFloat : input.dtype();
  const TensorOptions copts = TensorOptions(ct).device(input.device());
  const char* op = a.op;

  Tensor x4, w4, xk, wk, bk, y;
  ConvGeom g;
  // The input converted to oneDNN's layout is kept for the weight gradient.
  std::shared_ptr<conv::ConvScratch> scratch;
  if (recording && autograd::needs_grad(weight)) scratch = std::make_shared<conv::ConvScratch>();
  std::array<int64_t, 4> out_shape{};
  {
    NoGradGuard no_grad;  // views and casts for the kernels; the graph is recorded below
    x4 = to_4d(input, batched, a.spatial);
    w4 = a.spatial == 1 ? weight.unsqueeze(2) : weight;
    g = make_geometry(a, x4, w4, bias, input, weight, out_shape);
    g.channels_last = a.spatial == 2 && (is_channels_last(x4) || is_channels_last(w4));
    const MemoryFormat fmt = g.channels_last ? kChannelsLast : kContiguous;
    xk = kernel_activation(x4, ct, fmt);
    wk = kernel_weight(w4, ct);
    if (bias.defined()) bk = bias.to(ct).contiguous();
    y = empty(IntArrayRef(out_shape.data(), 4), copts, fmt);
    if (!a.transposed) {
      kernel_forward(op, g, xk, wk, bk, y, scratch.get());
    } else {
      kernel_backward_data(op, g, xk, wk, y, scratch.get());
      if (bk.defined()) y.add_(bk.view({1, out_shape[1], 1, 1}));
    }
    y = from_4d(y, batched, a.spatial);
    if (ct != input.dtype()) y = y.to(input.dtype());
  }
  if (!recording) return y;

  using namespace autograd;
  const int64_t spatial = a.spatial;
  const bool transposed = a.transposed;
  record("ConvolutionBackward0", {y}, {input, weight, bias}, {save(input), save(weight)},
         [g, batched, spatial, transposed, ct, copts, op, scratch](BackwardCtx& c) -> TensorList {
           const Tensor x = c.saved(0), w = c.saved(1);
           if (GradMode::is_enabled())  // create_graph: gradients with history (Note [Convolution double backward])
             return differentiable_backward(g, op, transposed, batched, spatial, ct, c.grad(), x, w, c.needs(0),
                                            c.needs(1), c.needs(2));
           NoGradGuard no_grad;
           const MemoryFormat fmt = g.channels_last ? kChannelsLast : kContiguous;
           const Tensor gy = kernel_activation(to_4d(c.grad(), batched, spatial), ct, fmt);
           const Tensor xk = kernel_activation(to_4d(x, batched, spatial), ct, fmt);
           const Tensor wk = kernel_weight(spatial == 1 ? w.unsqueeze(2) : w, ct);
           // the weight gradient in the layout the weight went to the kernels in
           const MemoryFormat wfmt = wk.is_contiguous() ? kContiguous : kChannelsLast;
           // grad_dst is converted once for both gradients; the forward's
           // converted input (if any) is used and then dropped
           conv::ConvScratch local;
           conv::ConvScratch& sc = scratch ? *scratch : local;
           Tensor gx, gw, gb;
           if (c.needs(0)) {
             gx = empty(xk.sizes(), copts, fmt);
             if (!transposed)
               kernel_backward_data(op, g, gy, wk, gx, &sc);
             else
               kernel_forward(op, g, gy, wk, Tensor(), gx, &sc);
             gx = from_4d(gx, batched, spatial);
           }
           if (c.needs(1)) gw = empty(wk.sizes(), copts, wfmt);
           if (c.needs(2)) gb = empty({transposed ? g.ic : g.oc}, copts);
           if (!transposed) {
             kernel_backward_weights(op, g, xk, gy, gw, gb, &sc);
           } else {
             kernel_backward_weights(op, g, gy, xk, gw, Tensor(), &sc);
             if (gb.defined()) gb.copy_(gy.sum({0, 2, 3}));
           }
           sc.converted.clear();
           if (gw.defined() && spatial == 1) gw = gw.squeeze(2);
           return {gx, gw, gb};
         });
  return y;
}

}  // namespace

// ---- functional ---------------------------------------------------------------------------

namespace functional {

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, ExpandingInts<2> stride,
              ConvPadding<2> padding, ExpandingInts<2> dilation, int64_t groups) {
  BRISK_AUTOCAST(conv2d, conv2d, x, weight, bias, stride, padding, dilation, groups);
  return convolution(direct_args<2>("conv2d", stride, padding, dilation, groups), x, weight, bias);
}
Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dFuncOptions& o) {
  return conv2d(x, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, ExpandingInts<1> stride,
              ConvPadding<1> padding, ExpandingInts<1> dilation, int64_t groups) {
  BRISK_AUTOCAST(conv1d, conv1d, x, weight, bias, stride, padding, dilation, groups);
  return convolution(direct_args<1>("conv1d", stride, padding, dilation, groups), x, weight, bias);
}
Tensor conv1d(const Tensor& x, const Tensor& weight, const Conv1dFuncOptions& o) {
  return conv1d(x, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, ExpandingInts<2> stride,
                        ExpandingInts<2> padding, ExpandingInts<2> output_padding, int64_t groups,
                        ExpandingInts<2> dilation) {
  BRISK_AUTOCAST(conv_transpose2d, conv_transpose2d, x, weight, bias, stride, padding, output_padding, groups, dilation);
  return convolution(transposed_args<2>("conv_transpose2d", stride, padding, output_padding, groups, dilation), x,
                     weight, bias);
}
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const ConvTranspose2dFuncOptions& o) {
  return conv_transpose2d(x, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}

// ---- 3-D convolutions and conv_transpose1d --------------------------------------------
// Note [3-D convolutions as 2-D ones]: the kernels are 2-D (core/conv_plan.h).
// A 3-D convolution is the sum over the depth taps kd of 2-D convolutions:
// out[:, :, od] = sum_kd conv2d(x[:, :, od * sd + kd * dd - pd], w[:, :, kd]).
// For one kd the input depths od * sd + kd * dd (od = 0..OD-1) are a strided
// slice; folded into the batch, one conv2d call serves every od. The
// transposed convolution runs the other way round: the input depths are
// folded into the batch once, each kd gives conv_transpose2d(x, w[:, :, kd])
// landing at the output depths id * sd + kd * dd (zeros between them when
// sd > 1), and the taps are summed. Everything is composed of differentiable
// ops, so the gradients (to any order) come with them.

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, ExpandingInts<1> stride,
                        ExpandingInts<1> padding, ExpandingInts<1> output_padding, int64_t groups,
                        ExpandingInts<1> dilation) {
  BRISK_AUTOCAST(conv_transpose1d, conv_transpose1d, x, weight, bias, stride, padding, output_padding, groups, dilation);
  return convolution(transposed_args<1>("conv_transpose1d", stride, padding, output_padding, groups, dilation), x,
                     weight, bias);
}
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const ConvTranspose1dFuncOptions& o) {
  return conv_transpose1d(x, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}

namespace {

std::array<int64_t, 3> expand3(const char* op, const char* what, const ExpandingInts<3>& v) {
  BRISK_CHECK(v.given() == 1 || v.given() == 3, op, what, " must be one integer or 3 integers, got ", v.given());
  return v.values();
}

/// The checks shared by conv3d and conv_transpose3d; returns the 5-D input.
Tensor check_conv3d(const char* op, bool transposed, const Tensor& x, const Tensor& w, const Tensor& b,
                    const std::array<int64_t, 3>& stride, const std::array<int64_t, 3>& dilation, int64_t groups) {
  BRISK_CHECK(x.defined() && w.defined(), op, "input and weight must be defined");
  BRISK_CHECK(x.dim() == 4 || x.dim() == 5, op, "expected a 4-D (unbatched) or 5-D (batched) input, got ", x.dim(),
              "-D with shape ", x.sizes());
  BRISK_CHECK(w.dim() == 5, op, "expected a 5-D weight, got shape ", w.sizes());
  BRISK_CHECK(is_floating_point(x.dtype()), op, "expected a floating-point input, got ", x.dtype());
  BRISK_CHECK(x.dtype() == w.dtype(), op, "input (", x.dtype(), ") and weight (", w.dtype(),
              ") must have the same dtype");
  BRISK_CHECK(groups > 0, op, "groups must be positive, got ", groups);
  for (int i = 0; i < 3; ++i) {
    BRISK_CHECK(stride[i] > 0, op, "stride must be positive");
    BRISK_CHECK(dilation[i] > 0, op, "dilation must be positive");
  }
  const Tensor x5 = x.dim() == 5 ? x : x.unsqueeze(0);
  const int64_t c = x5.size(1);
  if (!transposed) {
    BRISK_CHECK(w.size(0) % groups == 0, op, "weight's out channels ", w.size(0), " must be divisible by groups ",
                groups);
    BRISK_CHECK(c == w.size(1) * groups, op, "expected input with ", w.size(1) * groups, " channels (weight ",
                w.sizes(), ", groups ", groups, "), got ", c);
  } else {
    BRISK_CHECK(c == w.size(0), op, "expected input with ", w.size(0), " channels (weight ", w.sizes(), "), got ", c);
    BRISK_CHECK(c % groups == 0, op, "input channels ", c, " must be divisible by groups ", groups);
  }
  const int64_t oc = transposed ? w.size(1) * groups : w.size(0);
  if (b.defined()) {
    BRISK_CHECK(b.dim() == 1 && b.size(0) == oc, op, "expected a bias of shape [", oc, "], got ", b.sizes());
    BRISK_CHECK(b.dtype() == x.dtype(), op, "input (", x.dtype(), ") and bias (", b.dtype(),
                ") must have the same dtype");  // a float64 bias promoted a float32 result
    BRISK_CHECK(b.device() == x.device(), op, "input and bias must be on the same device, got input on ",
                x.device(), " and bias on ", b.device());
  }
  BRISK_CHECK(w.device() == x.device(), op, "input and weight must be on the same device, got input on ", x.device(),
              " and weight on ", w.device());
  return x5;
}

// Note [3-D convolutions in 16 bits]
// conv3d and conv_transpose3d are sums of 2-D convolutions over the depth
// taps, plus the bias. In float16/bfloat16 each tap's result, each partial
// sum and the bias add would round to 16 bits; PyTorch's kernels accumulate
// in float and round once, so a 16-bit call runs the composite in float and
// rounds the result (and, through the casts' backward, each gradient) once.
// Found by the fuzzer (seed 233 case 103966): a bfloat16 output that should
// be -0.0006 came out 0 (the taps' sum rounded before the bias cancelled it).
bool runs_in_float(const Tensor& x) { return x.dtype() == kHalf || x.dtype() == kBFloat16; }
Tensor to_float(const Tensor& t) { return t.defined() ? t.to(kFloat) : t; }

Tensor finish3d(const Tensor& acc5, const Tensor& bias, bool batched) {
  // acc5: (N, OD, O, OH, OW) -> (N, O, OD, OH, OW)
  Tensor y = acc5.permute({0, 2, 1, 3, 4}).contiguous();
  if (bias.defined()) y = y + bias.view({1, bias.size(0), 1, 1, 1});
  return batched ? y : y.squeeze(0);
}

}  // namespace

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, ExpandingInts<3> stride_,
              ConvPadding<3> padding, ExpandingInts<3> dilation_, int64_t groups) {
  BRISK_AUTOCAST(conv3d, conv3d, x, weight, bias, stride_, padding, dilation_, groups);
  const char* op = "conv3d";
  BRISK_PROFILE_OP(op, x, weight, bias);
  const auto stride = expand3(op, "stride", stride_);
  const auto dilation = expand3(op, "dilation", dilation_);
  const Tensor x5 = check_conv3d(op, false, x, weight, bias, stride, dilation, groups);
  if (runs_in_float(x))  // Note [3-D convolutions in 16 bits]
    return conv3d(x.to(kFloat), weight.to(kFloat), to_float(bias), stride_, padding, dilation_, groups).to(x.dtype());
  const int64_t kd = weight.size(2);
  std::array<int64_t, 3> pb{0, 0, 0}, pa{0, 0, 0};
  if (!padding.mode().empty()) {
    BRISK_CHECK(padding.is_same() || padding.is_valid(), op, "padding must be 'same', 'valid' or integers, got '",
                padding.mode(), "'");
    if (padding.is_same()) {
      BRISK_CHECK(stride[0] == 1 && stride[1] == 1 && stride[2] == 1, op,
                  "padding='same' is not supported for strided convolutions");
      for (int i = 0; i < 3; ++i) {
        const int64_t total = dilation[i] * (weight.size(2 + i) - 1);
        pb[i] = total / 2;
        pa[i] = total - pb[i];
      }
    }
  } else {
    pb = pa = expand3(op, "padding", padding.ints());
    for (int i = 0; i < 3; ++i) BRISK_CHECK(pb[i] >= 0, op, "padding must be non-negative");
  }
  // H and W: padded by conv2d when symmetric, else here together with D
  const bool hw_sym = pb[1] == pa[1] && pb[2] == pa[2];
  Tensor xp = x5;
  if (pb[0] || pa[0] || !hw_sym)
    xp = brisk::pad(x5, {hw_sym ? 0 : pb[2], hw_sym ? 0 : pa[2], hw_sym ? 0 : pb[1], hw_sym ? 0 : pa[1], pb[0], pa[0]});
  const ExpandingInts<2> pad2 = hw_sym ? ExpandingInts<2>({pb[1], pb[2]}) : ExpandingInts<2>(0);
  const int64_t n = xp.size(0), c = xp.size(1), dp = xp.size(2), h = xp.size(3), wd = xp.size(4);
  const int64_t span = dilation[0] * (kd - 1) + 1;
  BRISK_CHECK(dp >= span, op, "the padded input depth ", dp, " is smaller than the dilated kernel depth ", span,
              " (input ", x.sizes(), ", weight ", weight.sizes(), ")");
  const int64_t od = (dp - span) / stride[0] + 1;
  const Tensor xt = xp.permute({0, 2, 1, 3, 4});  // (N, Dp, C, H, W), a view
  Tensor acc;
  for (int64_t k = 0; k < kd; ++k) {
    const int64_t start = k * dilation[0];
    const Tensor xs = xt.slice(1, start, start + (od - 1) * stride[0] + 1, stride[0]).reshape({n * od, c, h, wd});
    Tensor y = conv2d(xs, weight.select(2, k), {}, {stride[1], stride[2]}, pad2, {dilation[1], dilation[2]}, groups);
    acc = acc.defined() ? acc + y : y;
  }
  return finish3d(acc.view({n, od, acc.size(1), acc.size(2), acc.size(3)}), bias, x.dim() == 5);
}
Tensor conv3d(const Tensor& x, const Tensor& weight, const Conv3dFuncOptions& o) {
  return conv3d(x, weight, o.bias(), o.stride(), o.padding(), o.dilation(), o.groups());
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias, ExpandingInts<3> stride_,
                        ExpandingInts<3> padding_, ExpandingInts<3> output_padding_, int64_t groups,
                        ExpandingInts<3> dilation_) {
  BRISK_AUTOCAST(conv_transpose3d, conv_transpose3d, x, weight, bias, stride_, padding_, output_padding_, groups,
                 dilation_);
  const char* op = "conv_transpose3d";
  BRISK_PROFILE_OP(op, x, weight, bias);
  const auto stride = expand3(op, "stride", stride_);
  const auto dilation = expand3(op, "dilation", dilation_);
  const auto padding = expand3(op, "padding", padding_);
  const auto outpad = expand3(op, "output_padding", output_padding_);
  const Tensor x5 = check_conv3d(op, true, x, weight, bias, stride, dilation, groups);
  if (runs_in_float(x))  // Note [3-D convolutions in 16 bits]
    return conv_transpose3d(x.to(kFloat), weight.to(kFloat), to_float(bias), stride_, padding_, output_padding_,
                            groups, dilation_)
        .to(x.dtype());
  for (int i = 0; i < 3; ++i) {
    BRISK_CHECK(padding[i] >= 0, op, "padding must be non-negative");
    BRISK_CHECK(outpad[i] >= 0 && (outpad[i] < stride[i] || outpad[i] < dilation[i]), op,
                "output_padding must be smaller than either stride or dilation, got output_padding ",
                output_padding_.str(), ", stride ", stride_.str(), ", dilation ", dilation_.str());
  }
  const int64_t n = x5.size(0), c = x5.size(1), id = x5.size(2), h = x5.size(3), wd = x5.size(4);
  const int64_t kd = weight.size(2), sd = stride[0], dd = dilation[0];
  const int64_t full = (id - 1) * sd + dd * (kd - 1) + 1 + outpad[0];
  const int64_t od = full - 2 * padding[0];
  BRISK_CHECK(od > 0, op, "the output depth would be ", od, " (input ", x.sizes(), ", weight ", weight.sizes(),
              ", padding ", padding_.str(), ")");
  const Tensor xs = x5.permute({0, 2, 1, 3, 4}).reshape({n * id, c, h, wd});
  const int64_t placed = (id - 1) * sd + 1;  // the depth one tap covers, zeros between when sd > 1
  Tensor acc;
  for (int64_t k = 0; k < kd; ++k) {
    Tensor y = conv_transpose2d(xs, weight.select(2, k), {}, {stride[1], stride[2]}, {padding[1], padding[2]},
                                {outpad[1], outpad[2]}, groups, {dilation[1], dilation[2]});
    const int64_t o = y.size(1), oh = y.size(2), ow = y.size(3);
    y = y.view({n, id, o, oh, ow});
    if (sd > 1)  // (N, ID, 1, ...) padded to (N, ID, sd, ...): sd - 1 zero depths after each
      y = brisk::pad(y.unsqueeze(2), {0, 0, 0, 0, 0, 0, 0, sd - 1}).reshape({n, id * sd, o, oh, ow}).narrow(1, 0, placed);
    y = brisk::pad(y, {0, 0, 0, 0, 0, 0, k * dd, full - placed - k * dd});
    acc = acc.defined() ? acc + y : y;
  }
  return finish3d(acc.narrow(1, padding[0], od), bias, x.dim() == 5);
}
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const ConvTranspose3dFuncOptions& o) {
  return conv_transpose3d(x, weight, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(),
                          o.dilation());
}

}  // namespace functional

// ---- modules -------------------------------------------------------------------------------

namespace {

template <size_t D>
std::string tuple_str(const ExpandingInts<D>& v) {
  std::string s = "(";
  for (size_t i = 0; i < D; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (D == 1 ? ",)" : ")");
}
template <size_t D>
bool all_equal(const ExpandingInts<D>& v, int64_t x) {
  for (size_t i = 0; i < D; ++i)
    if (v[i] != x) return false;
  return true;
}

void check_channels(const char* name, int64_t in, int64_t out, int64_t groups) {
  BRISK_CHECK(in > 0 && out > 0, name, "in_channels and out_channels must be positive, got ", in, " and ", out);
  BRISK_CHECK(groups > 0, name, "groups must be positive, got ", groups);
  BRISK_CHECK(in % groups == 0, name, "in_channels ", in, " must be divisible by groups ", groups);
  BRISK_CHECK(out % groups == 0, name, "out_channels ", out, " must be divisible by groups ", groups);
}

template <size_t D>
void check_kernel(const char* name, const ExpandingInts<D>& k) {
  BRISK_CHECK(k.given() == 1 || k.given() == int(D), name, "kernel_size must be one integer or ", D,
              " integers, got ", k.given());
  for (size_t i = 0; i < D; ++i)
    BRISK_CHECK(k[i] > 0, name, "kernel_size must be positive, got ", tuple_str(k));
}

/// kaiming_uniform_(a = sqrt(5)) on the weight, U(+-1/sqrt(fan_in)) on the bias.
void init_conv(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

template <class Options, size_t D>
std::string direct_repr(const Options& o, bool has_bias) {
  std::ostringstream os;
  os << o.in_channels() << ", " << o.out_channels() << ", kernel_size=" << tuple_str(o.kernel_size())
     << ", stride=" << tuple_str(o.stride());
  const auto& p = o.padding();
  if (!p.mode().empty() || !all_equal(p.ints(), 0)) os << ", padding=" << p.str();
  if (!all_equal(o.dilation(), 1)) os << ", dilation=" << tuple_str(o.dilation());
  if (o.groups() != 1) os << ", groups=" << o.groups();
  if (!has_bias) os << ", bias=false";
  if (!o.padding_mode().is_zeros()) os << ", padding_mode=" << o.padding_mode().name();
  return os.str();
}

template <size_t D>
std::vector<int64_t> weight_shape(int64_t first, int64_t second, const ExpandingInts<D>& k) {
  std::vector<int64_t> s{first, second};
  for (size_t i = 0; i < D; ++i) s.push_back(k[i]);
  return s;
}

}  // namespace

ConvPaddingMode::ConvPaddingMode(PadMode m) : kind_(Kind::Zeros) {
  BRISK_CHECK(m != PadMode::Constant, "Conv", "padding_mode must be kZeros, kReflect, kReplicate or kCircular");
  kind_ = m == PadMode::Reflect ? Kind::Reflect : m == PadMode::Replicate ? Kind::Replicate : Kind::Circular;
}
const char* ConvPaddingMode::name() const {
  switch (kind_) {
    case Kind::Zeros: return "zeros";
    case Kind::Reflect: return "reflect";
    case Kind::Replicate: return "replicate";
    case Kind::Circular: return "circular";
  }
  return "?";
}
PadMode ConvPaddingMode::pad_mode() const {
  return kind_ == Kind::Reflect ? PadMode::Reflect : kind_ == Kind::Replicate ? PadMode::Replicate : PadMode::Circular;
}

namespace {
/// A direct convolution module's forward: with a padding_mode other than
/// zeros the input is padded by F::pad in that mode (PyTorch's
/// _reversed_padding_repeated_twice, "same" split as the convolution does)
/// and the convolution runs unpadded.
template <size_t D, class Conv>
Tensor conv_module_forward(const ConvOptions<D>& o, const Tensor& x, const Tensor& weight, const Tensor& bias,
                           Conv conv) {
  if (o.padding_mode().is_zeros()) return conv(x, o.padding());
  const auto& p = o.padding();
  std::vector<int64_t> pads;
  for (size_t i = D; i-- > 0;) {
    int64_t before = 0, after = 0;
    if (p.is_same()) {
      const int64_t total = o.dilation()[i] * (weight.size(2 + int64_t(i)) - 1);
      before = total / 2;
      after = total - before;
    } else if (!p.is_valid()) {
      before = after = p.ints()[i];
    }
    pads.push_back(before);
    pads.push_back(after);
  }
  (void)bias;
  return conv(F::pad(x, F::PadFuncOptions(pads).mode(o.padding_mode().pad_mode())), ConvPadding<D>(0));
}
void check_transposed_mode(const char* name, const ConvPaddingMode& m) {
  BRISK_CHECK(m.is_zeros(), name, "only padding_mode kZeros is supported for transposed convolutions, got '",
              m.name(), "'");
}
}  // namespace

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o, TensorOptions opts) : Module("Conv2d"), options(o) {
  check_channels("Conv2d", o.in_channels(), o.out_channels(), o.groups());
  check_kernel("Conv2d", o.kernel_size());
  (void)direct_args<2>("Conv2d", o.stride(), o.padding(), o.dilation(), o.groups());  // validates padding
  weight = register_parameter(
      "weight", empty(weight_shape<2>(o.out_channels(), o.in_channels() / o.groups(), o.kernel_size()), opts));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}, opts));
  reset_parameters();
}
void Conv2dImpl::reset_parameters() { init_conv(weight, bias); }
Tensor Conv2dImpl::forward(const Tensor& x) {
  return conv_module_forward<2>(options, x, weight, bias, [&](const Tensor& xp, const ConvPadding<2>& pad) {
    return F::conv2d(xp, weight, bias, options.stride(), pad, options.dilation(), options.groups());
  });
}
std::string Conv2dImpl::extra_repr() const { return direct_repr<Conv2dOptions, 2>(options, bias.defined()); }

Conv1dImpl::Conv1dImpl(const Conv1dOptions& o, TensorOptions opts) : Module("Conv1d"), options(o) {
  check_channels("Conv1d", o.in_channels(), o.out_channels(), o.groups());
  check_kernel("Conv1d", o.kernel_size());
  (void)direct_args<1>("Conv1d", o.stride(), o.padding(), o.dilation(), o.groups());
  weight = register_parameter(
      "weight", empty(weight_shape<1>(o.out_channels(), o.in_channels() / o.groups(), o.kernel_size()), opts));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}, opts));
  reset_parameters();
}
void Conv1dImpl::reset_parameters() { init_conv(weight, bias); }
Tensor Conv1dImpl::forward(const Tensor& x) {
  return conv_module_forward<1>(options, x, weight, bias, [&](const Tensor& xp, const ConvPadding<1>& pad) {
    return F::conv1d(xp, weight, bias, options.stride(), pad, options.dilation(), options.groups());
  });
}
std::string Conv1dImpl::extra_repr() const { return direct_repr<Conv1dOptions, 1>(options, bias.defined()); }

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& o, TensorOptions opts)
    : Module("ConvTranspose2d"), options(o) {
  check_channels("ConvTranspose2d", o.in_channels(), o.out_channels(), o.groups());
  check_kernel("ConvTranspose2d", o.kernel_size());
  check_transposed_mode("ConvTranspose2d", o.padding_mode());
  weight = register_parameter(
      "weight", empty(weight_shape<2>(o.in_channels(), o.out_channels() / o.groups(), o.kernel_size()), opts));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}, opts));
  reset_parameters();
}
void ConvTranspose2dImpl::reset_parameters() { init_conv(weight, bias); }
Tensor ConvTranspose2dImpl::forward(const Tensor& x) {
  return F::conv_transpose2d(x, weight, bias, options.stride(), options.padding(), options.output_padding(),
                             options.groups(), options.dilation());
}
std::string ConvTranspose2dImpl::extra_repr() const {
  const auto& o = options;
  std::ostringstream os;
  os << o.in_channels() << ", " << o.out_channels() << ", kernel_size=" << tuple_str(o.kernel_size())
     << ", stride=" << tuple_str(o.stride());
  if (!all_equal(o.padding(), 0)) os << ", padding=" << tuple_str(o.padding());
  if (!all_equal(o.dilation(), 1)) os << ", dilation=" << tuple_str(o.dilation());
  if (!all_equal(o.output_padding(), 0)) os << ", output_padding=" << tuple_str(o.output_padding());
  if (o.groups() != 1) os << ", groups=" << o.groups();
  if (!bias.defined()) os << ", bias=false";
  return os.str();
}

}  // namespace brisk::nn

namespace brisk::nn {

Conv3dImpl::Conv3dImpl(const Conv3dOptions& o, TensorOptions opts) : Module("Conv3d"), options(o) {
  check_channels("Conv3d", o.in_channels(), o.out_channels(), o.groups());
  check_kernel("Conv3d", o.kernel_size());
  const auto& p = o.padding();
  BRISK_CHECK(p.mode().empty() || p.is_valid() || (p.is_same() && all_equal(o.stride(), 1)), "Conv3d",
              "padding must be integers, 'valid', or 'same' with stride 1, got '", p.mode(), "'");
  weight = register_parameter(
      "weight", empty(weight_shape<3>(o.out_channels(), o.in_channels() / o.groups(), o.kernel_size()), opts));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}, opts));
  reset_parameters();
}
void Conv3dImpl::reset_parameters() { init_conv(weight, bias); }
Tensor Conv3dImpl::forward(const Tensor& x) {
  return conv_module_forward<3>(options, x, weight, bias, [&](const Tensor& xp, const ConvPadding<3>& pad) {
    return F::conv3d(xp, weight, bias, options.stride(), pad, options.dilation(), options.groups());
  });
}
std::string Conv3dImpl::extra_repr() const { return direct_repr<Conv3dOptions, 3>(options, bias.defined()); }

namespace {
template <class Options>
std::string transposed_repr(const Options& o, bool has_bias) {
  std::ostringstream os;
  os << o.in_channels() << ", " << o.out_channels() << ", kernel_size=" << tuple_str(o.kernel_size())
     << ", stride=" << tuple_str(o.stride());
  if (!all_equal(o.padding(), 0)) os << ", padding=" << tuple_str(o.padding());
  if (!all_equal(o.dilation(), 1)) os << ", dilation=" << tuple_str(o.dilation());
  if (!all_equal(o.output_padding(), 0)) os << ", output_padding=" << tuple_str(o.output_padding());
  if (o.groups() != 1) os << ", groups=" << o.groups();
  if (!has_bias) os << ", bias=false";
  return os.str();
}
}  // namespace

ConvTranspose1dImpl::ConvTranspose1dImpl(const ConvTranspose1dOptions& o, TensorOptions opts)
    : Module("ConvTranspose1d"), options(o) {
  check_channels("ConvTranspose1d", o.in_channels(), o.out_channels(), o.groups());
  check_kernel("ConvTranspose1d", o.kernel_size());
  check_transposed_mode("ConvTranspose1d", o.padding_mode());
  weight = register_parameter(
      "weight", empty(weight_shape<1>(o.in_channels(), o.out_channels() / o.groups(), o.kernel_size()), opts));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}, opts));
  reset_parameters();
}
void ConvTranspose1dImpl::reset_parameters() { init_conv(weight, bias); }
Tensor ConvTranspose1dImpl::forward(const Tensor& x) {
  return F::conv_transpose1d(x, weight, bias, options.stride(), options.padding(), options.output_padding(),
                             options.groups(), options.dilation());
}
std::string ConvTranspose1dImpl::extra_repr() const { return transposed_repr(options, bias.defined()); }

ConvTranspose3dImpl::ConvTranspose3dImpl(const ConvTranspose3dOptions& o, TensorOptions opts)
    : Module("ConvTranspose3d"), options(o) {
  check_channels("ConvTranspose3d", o.in_channels(), o.out_channels(), o.groups());
  check_kernel("ConvTranspose3d", o.kernel_size());
  check_transposed_mode("ConvTranspose3d", o.padding_mode());
  weight = register_parameter(
      "weight", empty(weight_shape<3>(o.in_channels(), o.out_channels() / o.groups(), o.kernel_size()), opts));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}, opts));
  reset_parameters();
}
void ConvTranspose3dImpl::reset_parameters() { init_conv(weight, bias); }
Tensor ConvTranspose3dImpl::forward(const Tensor& x) {
  return F::conv_transpose3d(x, weight, bias, options.stride(), options.padding(), options.output_padding(),
                             options.groups(), options.dilation());
}
std::string ConvTranspose3dImpl::extra_repr() const { return transposed_repr(options, bias.defined()); }

}  // namespace brisk::nn
