// nn::TransformerEncoderLayer / TransformerEncoder against libtorch's
// torch::nn::TransformerEncoderLayer (1.13's C++ module: sequence-first,
// post-norm, relu or gelu), with brisk's initial parameters copied into
// torch's module: outputs and the gradients of the input and of parameters.
#pragma once
#include <brisk/nn.h>
#include <torch/nn/modules/transformerlayer.h>

#include "parity.h"

namespace parity {
namespace {

/// A torch tensor with a brisk tensor's values (float32).
TT to_torch_copy(const BT& b) {
  BT c = b.detach().to(brisk::kFloat).contiguous();
  std::vector<float> v = c.to_vector<float>();
  std::vector<int64_t> shape(c.sizes().begin(), c.sizes().end());
  return at::from_blob(v.data(), shape, at::kFloat).clone();
}

void check_encoder_layer(const std::string& name, bool gelu, int with_masks) {
  if (!selected(name)) return;
  SCOPED_TRACE(name);
  const int64_t E = 16, H = 4, F = 24, S = 6, N = 3;
  brisk::manual_seed(hash_name(name, 7));
  brisk::nn::TransformerEncoderLayer b(
      brisk::nn::TransformerEncoderLayerOptions(E, H).dim_feedforward(F).dropout(0.0).activation(gelu ? "gelu" : "relu"));
  auto topt = torch::nn::TransformerEncoderLayerOptions(E, H).dim_feedforward(F).dropout(0.0);
  if (gelu) topt.activation(torch::kGELU);
  torch::nn::TransformerEncoderLayer t(topt);
  {
    at::NoGradGuard ng;
    auto tp = t->named_parameters();
    auto bp = b->named_parameters();
    ASSERT_EQ(tp.size(), bp.size());
    for (const auto& [key, value] : bp) {
      ASSERT_TRUE(tp.contains(key)) << "torch has no parameter " << key;
      tp[key].copy_(to_torch_copy(value));
    }
  }
  uint64_t seed = hash_name(name, 11);
  Both x = make(in({S, N, E}), seed++), g = make(in({S, N, E}), seed++), m = make(mask({S, S}), seed++),
       kpm = make(mask({N, S}), seed++);
  // keep key 0 for every query (a fully masked row is NaN in 1.13, 0 in brisk and torch 2.x)
  m.b = m.b.logical_and(brisk::arange(S).ne(0));
  m.t = m.t.logical_and(at::arange(S).ne(0));
  kpm.b = kpm.b.logical_and(brisk::arange(S).ne(0));
  kpm.t = kpm.t.logical_and(at::arange(S).ne(0));
  x.b.requires_grad_();
  x.t.requires_grad_();
  const bool src_mask = with_masks & 1, padding = with_masks & 2;
  BT ob = b(x.b, src_mask ? m.b : BT(), padding ? kpm.b : BT());
  // A bool src_mask means "true = not allowed" in PyTorch's Python module
  // (2.15: the same output as the additive mask with -inf there, checked);
  // libtorch 1.13's C++ module does not read a bool mask that way, so torch
  // gets the additive form.
  TT mt = at::zeros({S, S}).masked_fill(m.t, -std::numeric_limits<float>::infinity());
  TT ot = t->forward(x.t, src_mask ? mt : TT(), padding ? kpm.t : TT());
  EXPECT_TRUE(compare(ob, ot, tol(1e-4, 1e-5), false, "output"));
  (ob * g.b).sum().backward();
  (ot * g.t).sum().backward();
  EXPECT_TRUE(compare(x.b.grad(), x.t.grad(), tol(1e-4, 1e-5), false, "input gradient"));
  auto tp = t->named_parameters();
  for (const auto& [key, value] : b->named_parameters())
    EXPECT_TRUE(compare(value.grad(), tp[key].grad(), tol(1e-4, 1e-5), false, key + " gradient"));
}

TEST(ParityTransformer, EncoderLayer) {
  check_encoder_layer("transformer.relu", false, 0);
  check_encoder_layer("transformer.gelu", true, 0);
  check_encoder_layer("transformer.relu_src_mask", false, 1);
  check_encoder_layer("transformer.relu_padding", false, 2);
  check_encoder_layer("transformer.gelu_masks", true, 3);
}

}  // namespace
}  // namespace parity
