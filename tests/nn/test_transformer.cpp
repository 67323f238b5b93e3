// nn::TransformerEncoderLayer / TransformerEncoder: structure and the forms
// of the forward (values against libtorch: tests/parity/transformer_parity.h).
#include <gtest/gtest.h>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::expect_error;

namespace {
double max_diff(const Tensor& a, const Tensor& b) { return (a - b).abs().max().item<double>(); }
}  // namespace

TEST(Transformer, ParameterNamesAsPyTorch) {
  nn::TransformerEncoderLayer l(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(12));
  std::vector<std::string> names;
  for (const auto& [n, t] : l->named_parameters()) names.push_back(n);
  const std::vector<std::string> want = {"self_attn.in_proj_weight", "self_attn.in_proj_bias",
                                         "self_attn.out_proj.weight", "self_attn.out_proj.bias",
                                         "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias",
                                         "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"};
  EXPECT_EQ(names, want);
  nn::TransformerEncoderLayer nb(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(12).bias(false));
  EXPECT_EQ(nb->named_parameters().size(), 6u);  // weights only (PyTorch's bias=False)
}

TEST(Transformer, BatchFirstIsTheTransposedSequenceFirst) {
  set_num_threads(1);
  manual_seed(1);
  auto o = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(12).dropout(0.0).activation("gelu");
  nn::TransformerEncoderLayer seq(o), bat(nn::TransformerEncoderLayerOptions(o).batch_first(true));
  bat->load_state_dict(seq->state_dict());
  Tensor x = randn({5, 3, 8});  // (S, N, E)
  Tensor kpm = tensor({false, false, true, false, true}).expand({3, 5}).contiguous();
  Tensor a = seq(x, Tensor(), kpm);
  Tensor b = bat(x.transpose(0, 1), Tensor(), kpm).transpose(0, 1);
  EXPECT_LT(max_diff(a, b), 1e-5);
  // unbatched (S, E) is the batch of one
  Tensor u = seq(x.select(1, 0), Tensor(), kpm.select(0, 0));
  EXPECT_LT(max_diff(u, a.select(1, 0)), 1e-5);
}

TEST(Transformer, NormFirstAndCustomActivation) {
  set_num_threads(1);
  manual_seed(2);
  auto o = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(12).dropout(0.0).norm_first(true);
  nn::TransformerEncoderLayer l(o);
  Tensor x = randn({4, 2, 8}, kDouble);
  l->to(kDouble);
  // pre-norm written out with the children
  auto [sa, w] = l->self_attn->forward(l->norm1->forward(x), l->norm1->forward(x), l->norm1->forward(x), Tensor(), false);
  Tensor h = x + sa;
  Tensor want = h + l->linear2->forward(relu(l->linear1->forward(l->norm2->forward(h))));
  EXPECT_LT(max_diff(l(x), want), 1e-12);
  // activation_fn replaces the named activation
  nn::TransformerEncoderLayer c(nn::TransformerEncoderLayerOptions(o).activation_fn([](const Tensor& t) { return t * 0; }));
  c->load_state_dict(l->state_dict());
  c->to(kDouble);
  EXPECT_LT(max_diff(c(x), h + l->linear2->bias), 1e-12);
}

TEST(Transformer, EncoderStacksCopiesOfOneLayer) {
  set_num_threads(1);
  manual_seed(3);
  auto o = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(12).dropout(0.0);
  nn::TransformerEncoder enc(o, 3, std::make_shared<nn::LayerNormImpl>(std::vector<int64_t>{8}));
  ASSERT_EQ(enc->layers.size(), 3u);
  auto sd = enc->state_dict();
  EXPECT_TRUE(sd.contains("layers.2.linear1.weight"));
  EXPECT_TRUE(sd.contains("norm.weight"));
  // PyTorch deep-copies the layer: every layer starts from the same values
  EXPECT_EQ(max_diff(sd.at("layers.0.linear1.weight"), sd.at("layers.2.linear1.weight")), 0.0);
  Tensor x = randn({4, 2, 8});
  Tensor want = enc->norm->forward(enc->layers[2]->forward(enc->layers[1]->forward(enc->layers[0]->forward(x))));
  EXPECT_LT(max_diff(enc(x), want), 1e-6);
  // a training step reaches every layer's parameters
  enc(x).sum().backward();
  for (const auto& [n, p] : enc->named_parameters()) EXPECT_TRUE(p.grad().defined()) << n;
}

TEST(Transformer, BadInputIsAnError) {
  expect_error([] { nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).activation("tanh")); },
               {"TransformerEncoderLayer", "tanh"});
  nn::TransformerEncoderLayer l(8, 2, 12, 0.0);
  expect_error([&] { l(randn({4, 2, 6})); }, {"TransformerEncoderLayer", "d_model"});
  expect_error([&] { l(randn({4})); }, {"TransformerEncoderLayer"});
  expect_error([] { nn::TransformerEncoder(nn::TransformerEncoderLayerOptions(8, 2), 0); }, {"num_layers"});
}
