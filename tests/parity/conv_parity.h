// Convolutions against libtorch on identical inputs: at::conv2d, at::conv1d
// (integer and "same"/"valid" padding) and at::conv_transpose2d over
// stride / padding / dilation / groups (depthwise included) / bias, float32
// (brisk's oneDNN path) and float64 (im2col), NCHW and channels_last (the
// layout of the output and of the input's gradient must be torch's), and
// unbatched inputs; forward values and the gradients of input, weight and
// bias. Errors: both libraries refuse the same bad calls.
#pragma once
#include <brisk/nn.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "parity.h"

namespace parity {
namespace {

namespace CF = brisk::nn::functional;

BT conv_cl(const BT& x) { return x.contiguous(brisk::kChannelsLast); }
TT conv_cl(const TT& x) { return x.contiguous(at::MemoryFormat::ChannelsLast); }

/// Makes the leaves (x, w, b...) on both sides, channels_last leaves for the
/// 4-D ones when `cl`; runs fb / ft; compares the output (values, and strides
/// when `cl` and `output_strides`), then the gradients of sum(y * r) for
/// every leaf (with strides for channels_last leaves whose layout is
/// unambiguous: brisk keeps a one-channel tensor as it is where torch
/// restrides it, which changes no element's address).
void conv_check(const std::string& name, const std::vector<In>& leaves, bool cl,
                const std::function<BT(const BList&)>& fb, const std::function<TT(const TList&)>& ft, Tol t,
                bool output_strides = true) {
  SCOPED_TRACE("case " + name);
  if (!selected(name)) return;
  BList bl;
  TList tl;
  uint64_t seed = hash_name(name, 17);
  for (const In& s : leaves) {
    BT b;
    TT x;
    make_input(s, seed++, b, x);
    if (cl && b.dim() == 4) {
      b = conv_cl(b);
      x = conv_cl(x);
    }
    bl.push_back(b.requires_grad_());
    tl.push_back(x.requires_grad_());
  }
  const BT by = fb(bl);
  const TT ty = ft(tl);
  EXPECT_TRUE(compare(by, ty, t, /*check_strides=*/cl && output_strides, "output"));
  BT br;
  TT tr;
  make_input(in(std::vector<int64_t>(by.sizes().begin(), by.sizes().end()), by.dtype()), seed++, br, tr);
  (by * br).sum().backward();
  (ty * tr).sum().backward();
  for (size_t i = 0; i < bl.size(); ++i) {
    ASSERT_TRUE(bl[i].grad().defined()) << "leaf " << i << " got no gradient";
    const bool strides = cl && bl[i].dim() == 4 && bl[i].size(1) > 1 && bl[i].size(2) * bl[i].size(3) > 1;
    EXPECT_TRUE(compare(bl[i].grad(), tl[i].grad(), t, strides, "grad of leaf " + std::to_string(i)));
  }
}

Tol conv_tol(ScalarType dt) { return dt == brisk::kDouble ? tol(1e-10, 1e-10) : tol(1e-4, 1e-4); }

TEST(ParityConv, Conv2d) {
  struct Cfg {
    std::string tag;
    std::vector<int64_t> x, w, s, p, d;
    int64_t g;
    bool bias;
  };
  const std::vector<Cfg> cfgs = {
      {"k3", {2, 3, 8, 7}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {"k3p1_nobias", {2, 3, 8, 7}, {5, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, false},
      {"k3x2_s2x1_p1x0", {2, 4, 9, 8}, {4, 4, 3, 2}, {2, 1}, {1, 0}, {1, 1}, 1, true},
      {"dil2_p2", {2, 3, 9, 9}, {6, 3, 3, 3}, {1, 1}, {2, 2}, {2, 2}, 1, true},
      {"groups2_s2", {2, 4, 8, 8}, {6, 2, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 2, true},
      {"depthwise", {2, 8, 7, 7}, {8, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 8, true},
      {"depthwise_x2_s2", {2, 4, 9, 9}, {8, 1, 5, 5}, {2, 2}, {2, 2}, {1, 1}, 4, false},
      {"pointwise", {2, 16, 5, 5}, {8, 16, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {"first_layer", {4, 1, 12, 12}, {16, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"wide", {2, 32, 7, 7}, {64, 32, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true},
  };
  for (const Cfg& c : cfgs)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
      for (int layout = 0; layout < 3; ++layout) {  // NCHW, channels_last, unbatched
        if (layout == 1 && c.x[1] == 1) continue;    // one channel: torch keeps NCHW
        const std::string name = "conv2d." + c.tag + "." + short_name(dt) + (layout == 1 ? ".cl" : layout == 2 ? ".unbatched" : "");
        std::vector<int64_t> xs = c.x;
        if (layout == 2) xs.erase(xs.begin());
        std::vector<In> leaves = {in(xs, dt), in(c.w, dt)};
        if (c.bias) leaves.push_back(in({c.w[0]}, dt));
        conv_check(
            name, leaves, layout == 1,
            [&](const BList& p) {
              return CF::conv2d(p[0], p[1], c.bias ? p[2] : BT(), {c.s[0], c.s[1]}, {c.p[0], c.p[1]}, {c.d[0], c.d[1]},
                                c.g);
            },
            [&](const TList& p) { return at::conv2d(p[0], p[1], c.bias ? p[2] : TT(), c.s, c.p, c.d, c.g); },
            conv_tol(dt));
      }
  // string padding: "same" (asymmetric for even kernels, with dilation) and "valid"
  struct Str {
    std::string tag;
    std::vector<int64_t> w, d;
    const char* pad;
  };
  for (const Str& c : {Str{"same_k3", {4, 3, 3, 3}, {1, 1}, "same"}, Str{"same_k4x2", {4, 3, 4, 2}, {1, 1}, "same"},
                       Str{"same_k2_dil3x2", {4, 3, 2, 2}, {3, 2}, "same"}, Str{"valid", {4, 3, 3, 2}, {1, 1}, "valid"}})
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
      for (bool cl : {false, true}) {
        const std::string name = "conv2d." + c.tag + "." + short_name(dt) + (cl ? ".cl" : "");
        conv_check(
            name, {in({2, 3, 7, 8}, dt), in(c.w, dt), in({c.w[0]}, dt)}, cl,
            [&](const BList& p) { return CF::conv2d(p[0], p[1], p[2], 1, c.pad, {c.d[0], c.d[1]}); },
            [&](const TList& p) { return at::conv2d(p[0], p[1], p[2], D{1, 1}, c.pad, c.d, 1); }, conv_tol(dt));
      }
}

TEST(ParityConv, Conv1d) {
  struct Cfg {
    std::string tag;
    std::vector<int64_t> x, w;
    int64_t s, p, d, g;
    bool bias;
  };
  const std::vector<Cfg> cfgs = {
      {"k3", {2, 3, 12}, {4, 3, 3}, 1, 0, 1, 1, true},        {"k5s2p2", {2, 4, 15}, {6, 4, 5}, 2, 2, 1, 1, false},
      {"dil3_groups2", {2, 4, 16}, {6, 2, 3}, 1, 3, 3, 2, true}, {"depthwise", {3, 6, 10}, {6, 1, 3}, 1, 1, 1, 6, true},
      {"wide", {2, 32, 20}, {64, 32, 3}, 1, 1, 1, 1, true},
  };
  for (const Cfg& c : cfgs)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
      for (bool unbatched : {false, true}) {
        const std::string name = "conv1d." + c.tag + "." + short_name(dt) + (unbatched ? ".unbatched" : "");
        std::vector<int64_t> xs = c.x;
        if (unbatched) xs.erase(xs.begin());
        std::vector<In> leaves = {in(xs, dt), in(c.w, dt)};
        if (c.bias) leaves.push_back(in({c.w[0]}, dt));
        conv_check(
            name, leaves, false,
            [&](const BList& p) { return CF::conv1d(p[0], p[1], c.bias ? p[2] : BT(), c.s, c.p, c.d, c.g); },
            [&](const TList& p) {
              return at::conv1d(p[0], p[1], c.bias ? p[2] : TT(), D{c.s}, D{c.p}, D{c.d}, c.g);
            },
            conv_tol(dt));
      }
  for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
    conv_check(
        std::string("conv1d.same_k4_dil2.") + short_name(dt), {in({2, 3, 11}, dt), in({5, 3, 4}, dt), in({5}, dt)}, false,
        [](const BList& p) { return CF::conv1d(p[0], p[1], p[2], 1, "same", 2); },
        [](const TList& p) { return at::conv1d(p[0], p[1], p[2], D{1}, "same", D{2}, 1); }, conv_tol(dt));
}

TEST(ParityConv, ConvTranspose2d) {
  struct Cfg {
    std::string tag;
    std::vector<int64_t> x, w, s, p, op, d;
    int64_t g;
    bool bias;
  };
  const std::vector<Cfg> cfgs = {
      {"k3", {2, 3, 5, 4}, {3, 4, 3, 3}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, true},
      {"k4s2p1", {2, 8, 5, 5}, {8, 4, 4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {"k3s2p1_op1", {2, 4, 4, 5}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1, false},
      {"k3x2_s3x2_op2x1", {1, 2, 3, 4}, {2, 3, 3, 2}, {3, 2}, {0, 1}, {2, 1}, {1, 1}, 1, true},
      {"dil2", {2, 3, 4, 4}, {3, 2, 3, 3}, {1, 1}, {1, 1}, {0, 0}, {2, 2}, 1, true},
      {"op_below_dilation", {1, 2, 4, 4}, {2, 3, 3, 3}, {1, 1}, {0, 0}, {2, 1}, {3, 2}, 1, true},
      {"groups2", {2, 4, 4, 4}, {4, 3, 3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 1}, 2, true},
      {"depthwise", {2, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 6, false},
      {"wide", {2, 32, 6, 6}, {32, 16, 4, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}, 1, true},
  };
  for (const Cfg& c : cfgs)
    for (ScalarType dt : {brisk::kFloat, brisk::kDouble})
      for (int layout = 0; layout < 3; ++layout) {
        const std::string name =
            "conv_transpose2d." + c.tag + "." + short_name(dt) + (layout == 1 ? ".cl" : layout == 2 ? ".unbatched" : "");
        std::vector<int64_t> xs = c.x;
        if (layout == 2) xs.erase(xs.begin());
        std::vector<In> leaves = {in(xs, dt), in(c.w, dt)};
        if (c.bias) leaves.push_back(in({c.w[1] * c.g}, dt));
        // torch 1.13 runs conv_transpose2d on its slow NCHW kernel and
        // returns NCHW for a channels_last input; brisk keeps channels_last
        // (as its conv2d, and as PyTorch 2's mkldnn path): values only.
        conv_check(
            name, leaves, layout == 1,
            [&](const BList& p) {
              const BT y = CF::conv_transpose2d(p[0], p[1], c.bias ? p[2] : BT(), {c.s[0], c.s[1]}, {c.p[0], c.p[1]},
                                          {c.op[0], c.op[1]}, c.g, {c.d[0], c.d[1]});
              if (layout == 1) EXPECT_TRUE(y.is_contiguous(brisk::kChannelsLast) && !y.is_contiguous()) << name;
              return y;
            },
            [&](const TList& p) {
              return at::conv_transpose2d(p[0], p[1], c.bias ? p[2] : TT(), c.s, c.p, c.op, c.g, c.d);
            },
            conv_tol(dt), /*output_strides=*/false);
      }
}

TEST(ParityConv, Modules) {
  // A Conv2d module's forward is torch's conv2d with the module's parameters.
  brisk::manual_seed(3);
  brisk::nn::Conv2d conv(brisk::nn::Conv2dOptions(3, 8, 3).stride(2).padding(1).groups(1));
  BT x = brisk::randn({2, 3, 9, 9});
  auto to_torch_tensor = [](const BT& b) {
    const BT c = b.contiguous();
    TT t = at::empty(std::vector<int64_t>(c.sizes().begin(), c.sizes().end()), at::kFloat);
    std::memcpy(t.data_ptr(), c.data_ptr(), size_t(c.numel()) * sizeof(float));
    return t;
  };
  const TT want = at::conv2d(to_torch_tensor(x), to_torch_tensor(conv->weight.detach()),
                             to_torch_tensor(conv->bias.detach()), {2, 2}, {1, 1}, {1, 1}, 1);
  EXPECT_TRUE(compare(conv(x), want, tol(1e-5, 1e-5), false, "Conv2d forward"));
}

TEST(ParityConv, Errors) {
  // Every call here is refused by both libraries; brisk's message names the op.
  struct Bad {
    std::string tag;
    std::function<void()> b, t;
    std::string op;
  };
  auto bx = [](std::vector<int64_t> s) { return brisk::randn(s); };
  auto tx = [](std::vector<int64_t> s) { return at::randn(s); };
  const std::vector<Bad> bad = {
      {"channels", [&] { CF::conv2d(bx({2, 2, 5, 5}), bx({4, 3, 3, 3})); },
       [&] { at::conv2d(tx({2, 2, 5, 5}), tx({4, 3, 3, 3})); }, "[conv2d]"},
      {"groups_divide", [&] { CF::conv2d(bx({2, 4, 5, 5}), bx({3, 2, 3, 3}), {}, 1, 0, 1, 2); },
       [&] { at::conv2d(tx({2, 4, 5, 5}), tx({3, 2, 3, 3}), {}, D{1, 1}, D{0, 0}, D{1, 1}, 2); }, "[conv2d]"},
      {"kernel_too_big", [&] { CF::conv2d(bx({1, 3, 2, 2}), bx({4, 3, 3, 3})); },
       [&] { at::conv2d(tx({1, 3, 2, 2}), tx({4, 3, 3, 3})); }, "[conv2d]"},
      {"input_dims", [&] { CF::conv2d(bx({3, 5}), bx({4, 3, 3, 3})); },
       [&] { at::conv2d(tx({3, 5}), tx({4, 3, 3, 3})); }, "[conv2d]"},
      {"same_strided", [&] { CF::conv2d(bx({1, 3, 5, 5}), bx({4, 3, 3, 3}), {}, 2, "same"); },
       [&] { at::conv2d(tx({1, 3, 5, 5}), tx({4, 3, 3, 3}), {}, D{2, 2}, "same"); }, "[conv2d]"},
      {"bias_size", [&] { CF::conv2d(bx({1, 3, 5, 5}), bx({4, 3, 3, 3}), bx({3})); },
       [&] { at::conv2d(tx({1, 3, 5, 5}), tx({4, 3, 3, 3}), tx({3})); }, "[conv2d]"},
      {"conv1d_weight_dims", [&] { CF::conv1d(bx({1, 3, 5}), bx({4, 3, 3, 3})); },
       [&] { at::conv1d(tx({1, 3, 5}), tx({4, 3, 3, 3})); }, "[conv1d]"},
      {"transposed_channels", [&] { CF::conv_transpose2d(bx({1, 4, 5, 5}), bx({3, 2, 3, 3})); },
       [&] { at::conv_transpose2d(tx({1, 4, 5, 5}), tx({3, 2, 3, 3})); }, "[conv_transpose2d]"},
      {"transposed_output_padding", [&] { CF::conv_transpose2d(bx({1, 3, 5, 5}), bx({3, 2, 3, 3}), {}, 1, 0, 1); },
       [&] { at::conv_transpose2d(tx({1, 3, 5, 5}), tx({3, 2, 3, 3}), {}, D{1, 1}, D{0, 0}, D{1, 1}); }, "[conv_transpose2d]"},
  };
  for (const Bad& c : bad) {
    SCOPED_TRACE(c.tag);
    bool torch_threw = false;
    try {
      c.t();
    } catch (const std::exception&) {
      torch_threw = true;
    }
    EXPECT_TRUE(torch_threw) << "the case is wrong: torch accepts it";
    try {
      c.b();
      ADD_FAILURE() << "brisk accepts it";
    } catch (const brisk::Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(c.op, 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace parity
