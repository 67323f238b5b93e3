// RNN, LSTM, GRU and their cells: outputs and gradients against PyTorch 2.15
// (tests/nn/rnn_torch_ref.h, float64), packed sequences against running each
// sequence alone, gradcheck, dropout modes, parameters, errors.
#include <brisk/nn.h>

#include <cmath>
#include <functional>

#include "autograd/grad_util.h"
#include "nn/rnn_torch_ref.h"
#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
namespace nn = brisk::nn;
namespace R = brisk::nn::utils::rnn;

namespace {

// The formulas of tests/nn/rnn_torch_ref.py.
Tensor formula(std::vector<int64_t> shape, double a, double b, double s = 1.0, bool cosine = false) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = s * (cosine ? std::cos(a * double(i) + b) : std::sin(a * double(i) + b));
  return brisk::tensor(v, kFloat64).view(shape);
}

void set_params(nn::Module& m) {
  NoGradGuard g;
  int k = 0;
  for (auto& [name, p] : m.named_parameters()) {
    std::vector<int64_t> shape(p.sizes().begin(), p.sizes().end());
    p.copy_(formula(shape, 0.37 + 0.05 * k, 0.1 * k, 0.5));
    ++k;
  }
}

std::vector<double> flat(const Tensor& t) { return t.defined() ? t.contiguous().to_vector<double>() : std::vector<double>{}; }

// float64 runs match to 1e-9 relative; float32 runs to 1e-4 (+1e-5 absolute).
double g_rtol = 1e-9, g_atol = 1e-10;

void expect_near(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], g_atol + g_rtol * std::abs(want[i])) << what << " element " << i;
}

// What one case returns: output (padded for packed input), h_n, c_n.
struct Outs {
  Tensor out, h, c;
};
using Runner = std::function<Outs(nn::Module&, const Tensor& x, const Tensor& h0, const Tensor& c0)>;

void check_case(const std::string& name, nn::Module& m, std::vector<int64_t> xs, std::vector<int64_t> h0s,
                std::vector<int64_t> c0s, const Runner& run, ScalarType dtype = kFloat64) {
  const rnn_ref::Case* ref = nullptr;
  for (const auto& c : rnn_ref::cases())
    if (c.name == name) ref = &c;
  ASSERT_NE(ref, nullptr) << name;
  SCOPED_TRACE(name);
  m.to(dtype);
  set_params(m);
  g_rtol = dtype == kFloat64 ? 1e-9 : 1e-4;
  g_atol = dtype == kFloat64 ? 1e-10 : 1e-5;
  Tensor x = formula(xs, 0.29, 0.3).to(dtype).requires_grad_();
  Tensor h0 = h0s.empty() ? Tensor() : formula(h0s, 0.41, 0.0, 0.5, true).to(dtype).requires_grad_();
  Tensor c0 = c0s.empty() ? Tensor() : formula(c0s, 0.53, 0.2, 0.5, true).to(dtype).requires_grad_();
  Outs o = run(m, x, h0, c0);
  std::vector<int64_t> os(o.out.sizes().begin(), o.out.sizes().end());
  Tensor loss = (o.out * formula(os, 0.11, 0.2).to(dtype)).sum();
  if (o.h.defined()) {
    std::vector<int64_t> hs(o.h.sizes().begin(), o.h.sizes().end());
    loss = loss + (o.h * formula(hs, 0.13, 0.0).to(dtype)).sum();
  }
  if (o.c.defined()) {
    std::vector<int64_t> cs(o.c.sizes().begin(), o.c.sizes().end());
    loss = loss + (o.c * formula(cs, 0.17, 0.5).to(dtype)).sum();
  }
  loss.backward();
  expect_near(flat(o.out), ref->out, "out");
  expect_near(flat(o.h), ref->h, "h_n");
  expect_near(flat(o.c), ref->c, "c_n");
  std::vector<double> dparams;
  for (auto& p : m.parameters()) {
    auto g = flat(p.grad());
    dparams.insert(dparams.end(), g.begin(), g.end());
  }
  expect_near(dparams, ref->dparams, "parameter gradients");
  expect_near(flat(x.grad()), ref->dx, "input gradient");
  if (h0.defined()) expect_near(flat(h0.grad()), ref->dh0, "h0 gradient");
  if (c0.defined()) expect_near(flat(c0.grad()), ref->dc0, "c0 gradient");
}

Outs run_rnn(nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor&) {
  auto [out, h] = m.as<nn::RNN>()->forward(x, h0);
  return {out, h, {}};
}
Outs run_gru(nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor&) {
  auto [out, h] = m.as<nn::GRU>()->forward(x, h0);
  return {out, h, {}};
}
Outs run_lstm(nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor& c0) {
  std::optional<std::tuple<Tensor, Tensor>> hx;
  if (h0.defined()) hx = std::make_tuple(h0, c0);
  auto [out, state] = m.as<nn::LSTM>()->forward(x, hx);
  return {out, std::get<0>(state), std::get<1>(state)};
}

// Packs x (T, B, in) or (B, T, in) with lengths (enforce_sorted=false), runs,
// and pads the output back to x's length.
Runner packed(std::vector<int64_t> lengths) {
  return [lengths](nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor& c0) -> Outs {
    auto* base = dynamic_cast<nn::detail::RNNImplBase*>(&m);
    const bool bf = base->options_base.batch_first;
    auto p = R::pack_padded_sequence(x, brisk::tensor(lengths, kInt64), bf, false);
    const int64_t T = x.size(bf ? 1 : 0);
    R::PackedSequence out;
    Outs o;
    if (auto* l = m.as<nn::LSTM>()) {
      std::optional<std::tuple<Tensor, Tensor>> hx;
      if (h0.defined()) hx = std::make_tuple(h0, c0);
      auto [po, st] = l->forward_with_packed_input(p, hx);
      out = po;
      o.h = std::get<0>(st);
      o.c = std::get<1>(st);
    } else if (auto* g = m.as<nn::GRU>()) {
      std::tie(out, o.h) = g->forward_with_packed_input(p, h0);
    } else {
      std::tie(out, o.h) = m.as<nn::RNN>()->forward_with_packed_input(p, h0);
    }
    o.out = std::get<0>(R::pad_packed_sequence(out, bf, 0.0, T));
    return o;
  };
}

Outs run_rnn_cell(nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor&) {
  return {m.as<nn::RNNCell>()->forward(x, h0), {}, {}};
}
Outs run_gru_cell(nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor&) {
  return {m.as<nn::GRUCell>()->forward(x, h0), {}, {}};
}
Outs run_lstm_cell(nn::Module& m, const Tensor& x, const Tensor& h0, const Tensor& c0) {
  std::optional<std::tuple<Tensor, Tensor>> hx;
  if (h0.defined()) hx = std::make_tuple(h0, c0);
  auto [h, c] = m.as<nn::LSTMCell>()->forward(x, hx);
  return {h, {}, c};  // as the reference: the cell's h is its output
}

}  // namespace

TEST(RNNTorchRef, Modules) {
  set_num_threads(1);
  {
    nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("rnn_tanh_2l_bidir", *m, {5, 2, 3}, {4, 2, 4}, {}, run_rnn);
  }
  {
    nn::RNN m(nn::RNNOptions(3, 4).nonlinearity(brisk::kReLU).batch_first(true));
    check_case("rnn_relu_batch_first", *m, {2, 5, 3}, {}, {}, run_rnn);
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
    check_case("lstm_2l_bidir_batch_first", *m, {2, 5, 3}, {4, 2, 4}, {4, 2, 4}, run_lstm);
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).proj_size(2));
    check_case("lstm_proj_2l_bidir", *m, {4, 3, 3}, {4, 3, 2}, {4, 3, 5}, run_lstm);
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 4).bias(false));
    check_case("lstm_unbatched_nobias", *m, {5, 3}, {1, 4}, {1, 4}, run_lstm);
  }
  {
    nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("gru_2l_bidir", *m, {5, 2, 3}, {4, 2, 4}, {}, run_gru);
  }
  {
    nn::GRU m(nn::GRUOptions(3, 4).bias(false));
    check_case("gru_unbatched_nobias", *m, {5, 3}, {}, {}, run_gru);
  }
}

TEST(RNNTorchRef, PackedUnsorted) {
  set_num_threads(1);
  {
    nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("packed_lstm_2l_bidir", *m, {5, 3, 3}, {4, 3, 4}, {4, 3, 4}, packed({3, 5, 2}));
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 5).proj_size(3).batch_first(true));
    check_case("packed_lstm_proj_batch_first", *m, {4, 6, 3}, {1, 4, 3}, {1, 4, 5}, packed({2, 6, 6, 1}));
  }
  {
    nn::GRU m(nn::GRUOptions(3, 4).bidirectional(true));
    check_case("packed_gru_bidir", *m, {5, 3, 3}, {2, 3, 4}, {}, packed({3, 5, 2}));
  }
  {
    nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).nonlinearity(brisk::kReLU));
    check_case("packed_rnn_relu_2l", *m, {5, 3, 3}, {}, {}, packed({1, 4, 5}));
  }
}

TEST(RNNTorchRef, Cells) {
  set_num_threads(1);
  {
    nn::RNNCell m(3, 4);
    check_case("rnn_cell_tanh", *m, {2, 3}, {2, 4}, {}, run_rnn_cell);
  }
  {
    nn::RNNCell m(nn::RNNCellOptions(3, 4).nonlinearity(brisk::kReLU));
    check_case("rnn_cell_relu_unbatched", *m, {3}, {4}, {}, run_rnn_cell);
  }
  {
    nn::LSTMCell m(3, 4);
    check_case("lstm_cell", *m, {2, 3}, {2, 4}, {2, 4}, run_lstm_cell);
  }
  {
    nn::LSTMCell m(nn::LSTMCellOptions(3, 4).bias(false));
    check_case("lstm_cell_nobias_nohx", *m, {2, 3}, {}, {}, run_lstm_cell);
  }
  {
    nn::GRUCell m(3, 4);
    check_case("gru_cell", *m, {2, 3}, {2, 4}, {}, run_gru_cell);
  }
  {
    nn::GRUCell m(3, 4);
    check_case("gru_cell_unbatched", *m, {3}, {4}, {}, run_gru_cell);
  }
}

// The float32 path (the modules' default dtype) against the same references.
TEST(RNNTorchRef, Float32) {
  set_num_threads(1);
  {
    nn::LSTM m(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).proj_size(2));
    check_case("lstm_proj_2l_bidir", *m, {4, 3, 3}, {4, 3, 2}, {4, 3, 5}, run_lstm, kFloat32);
  }
  {
    nn::GRU m(nn::GRUOptions(3, 4).bidirectional(true));
    check_case("packed_gru_bidir", *m, {5, 3, 3}, {2, 3, 4}, {}, packed({3, 5, 2}), kFloat32);
  }
  {
    nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("rnn_tanh_2l_bidir", *m, {5, 2, 3}, {4, 2, 4}, {}, run_rnn, kFloat32);
  }
  {
    nn::LSTMCell m(3, 4);
    check_case("lstm_cell", *m, {2, 3}, {2, 4}, {2, 4}, run_lstm_cell, kFloat32);
  }
}

TEST(RNN, ParametersNamedAndShapedAsPyTorch) {
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).proj_size(2));
  const std::vector<std::pair<std::string, std::vector<int64_t>>> want = {
      {"weight_ih_l0", {20, 3}},         {"weight_hh_l0", {20, 2}},         {"bias_ih_l0", {20}},
      {"bias_hh_l0", {20}},              {"weight_hr_l0", {2, 5}},          {"weight_ih_l0_reverse", {20, 3}},
      {"weight_hh_l0_reverse", {20, 2}}, {"bias_ih_l0_reverse", {20}},      {"bias_hh_l0_reverse", {20}},
      {"weight_hr_l0_reverse", {2, 5}},  {"weight_ih_l1", {20, 4}},         {"weight_hh_l1", {20, 2}},
      {"bias_ih_l1", {20}},              {"bias_hh_l1", {20}},              {"weight_hr_l1", {2, 5}},
      {"weight_ih_l1_reverse", {20, 4}}, {"weight_hh_l1_reverse", {20, 2}}, {"bias_ih_l1_reverse", {20}},
      {"bias_hh_l1_reverse", {20}},      {"weight_hr_l1_reverse", {2, 5}}};
  auto named = lstm->named_parameters();
  ASSERT_EQ(named.size(), want.size());
  size_t i = 0;
  for (auto& [name, p] : named) {
    EXPECT_EQ(name, want[i].first);
    EXPECT_EQ(p.sizes(), IntArrayRef(want[i].second)) << name;
    ++i;
  }
  EXPECT_EQ(lstm->all_weights().size(), want.size());
  lstm->flatten_parameters();  // a no-op
  nn::GRU gru(nn::GRUOptions(4, 6).bias(false));
  EXPECT_EQ(gru->named_parameters().size(), 2u);
  EXPECT_EQ(gru->named_parameters()["weight_hh_l0"].sizes(), IntArrayRef({18, 6}));
  nn::RNNCell cell(4, 6);
  EXPECT_EQ(cell->weight_ih.sizes(), IntArrayRef({6, 4}));
  EXPECT_EQ(cell->bias_hh.sizes(), IntArrayRef({6}));
}

TEST(RNN, InitRange) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(32, 64).num_layers(2));
  const double bound = 1.0 / std::sqrt(64.0);
  for (auto& p : lstm->parameters()) {
    EXPECT_LE(p.abs().max().item<double>(), bound);
    EXPECT_GT(p.abs().max().item<double>(), 0.9 * bound);
  }
  nn::GRUCell cell(8, 16);
  EXPECT_LE(cell->weight_hh.abs().max().item<double>(), 0.25);
}

TEST(RNN, ShapesAndStateRoundTrip) {
  set_num_threads(1);
  manual_seed(0);
  nn::LSTM lstm(nn::LSTMOptions(4, 6).num_layers(2).batch_first(true));
  Tensor x = randn({3, 7, 4});
  auto [out, st] = lstm(x);
  EXPECT_EQ(out.sizes(), IntArrayRef({3, 7, 6}));
  EXPECT_EQ(std::get<0>(st).sizes(), IntArrayRef({2, 3, 6}));
  // Running the two halves of the sequence with the state carried over is the whole run.
  auto [o1, s1] = lstm(x.narrow(1, 0, 3));
  auto [o2, s2] = lstm(x.narrow(1, 3, 4), s1);
  EXPECT_TRUE(close(cat({o1, o2}, 1), out, 1e-5, 1e-6));
  EXPECT_TRUE(close(std::get<1>(s2), std::get<1>(st), 1e-5, 1e-6));
  // The sequence loop is the cell, step after step.
  nn::GRU gru(4, 5);
  nn::GRUCell cell(4, 5);
  {
    NoGradGuard g;
    cell->weight_ih.copy_(gru->named_parameters()["weight_ih_l0"]);
    cell->weight_hh.copy_(gru->named_parameters()["weight_hh_l0"]);
    cell->bias_ih.copy_(gru->named_parameters()["bias_ih_l0"]);
    cell->bias_hh.copy_(gru->named_parameters()["bias_hh_l0"]);
  }
  Tensor seq = randn({6, 2, 4});
  auto [gout, gh] = gru(seq);
  Tensor h = zeros({2, 5});
  for (int64_t t = 0; t < 6; ++t) {
    h = cell(seq[t], h);
    EXPECT_TRUE(close(gout[t], h, 1e-5, 1e-6)) << t;
  }
}

// Packed results equal running each sequence alone (unbatched) on its own
// length: padded positions never matter, whatever they hold.
TEST(RNN, PackedEqualsEachSequenceAlone) {
  set_num_threads(1);
  manual_seed(5);
  for (bool bidir : {false, true}) {
    nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(bidir).batch_first(true));
    const std::vector<int64_t> lengths = {2, 5, 1, 4};
    Tensor x = randn({4, 5, 3});
    Tensor h0 = randn({bidir ? 4 : 2, 4, 4}), c0 = randn({bidir ? 4 : 2, 4, 4});
    auto p = R::pack_padded_sequence(x, brisk::tensor(lengths, kInt64), true, false);
    auto [po, st] = lstm->forward_with_packed_input(p, std::make_tuple(h0, c0));
    auto [padded, lens] = R::pad_packed_sequence(po, true, -7.0);
    EXPECT_EQ(lens.to_vector<int64_t>(), lengths);
    EXPECT_EQ(padded.sizes(), IntArrayRef({4, 5, bidir ? 8 : 4}));
    // garbage in the padding does not change anything
    Tensor x2 = x.clone();
    for (size_t b = 0; b < 4; ++b)
      if (lengths[b] < 5) x2[int64_t(b)].narrow(0, lengths[b], 5 - lengths[b]).fill_(1e6);
    auto [po2, st2] = lstm->forward_with_packed_input(R::pack_padded_sequence(x2, brisk::tensor(lengths, kInt64), true, false),
                                                      std::make_tuple(h0, c0));
    EXPECT_TRUE(close(po2.data(), po.data()));
    for (int64_t b = 0; b < 4; ++b) {
      const int64_t L = lengths[size_t(b)];
      auto [o, s] = lstm(x[b].narrow(0, 0, L), std::make_tuple(h0.select(1, b), c0.select(1, b)));
      EXPECT_TRUE(close(padded[b].narrow(0, 0, L), o, 1e-5, 1e-6)) << b;
      if (L < 5) EXPECT_TRUE(padded[b].narrow(0, L, 5 - L).eq(-7.0).all().item<bool>()) << b;
      EXPECT_TRUE(close(std::get<0>(st).select(1, b), std::get<0>(s), 1e-5, 1e-6)) << b;
      EXPECT_TRUE(close(std::get<1>(st).select(1, b), std::get<1>(s), 1e-5, 1e-6)) << b;
    }
  }
}

TEST(RNN, PackUtilities) {
  Tensor a = arange(0, 6, 1, kFloat32).view({3, 2}), b = arange(10, 12, 1, kFloat32).view({1, 2}),
         c = arange(20, 24, 1, kFloat32).view({2, 2});
  Tensor padded = R::pad_sequence({a, b, c}, true, -1.0);
  EXPECT_EQ(padded.sizes(), IntArrayRef({3, 3, 2}));
  EXPECT_TRUE(close(padded[1][1], full({2}, -1.0)));
  EXPECT_TRUE(close(R::pad_sequence({a, b}, false, 0.0, "left").select(1, 1)[2], b[0]));
  EXPECT_EQ(R::pad_sequence({a, b}).sizes(), IntArrayRef({3, 2, 2}));
  // sorted: a, c, b
  auto p = R::pack_sequence({a, c, b});
  EXPECT_EQ(p.batch_sizes().to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 1}));
  EXPECT_FALSE(p.sorted_indices().defined());
  EXPECT_EQ(p.data().select(1, 0).to_vector<float>(), (std::vector<float>{0, 20, 10, 2, 22, 4}));
  expect_error([&] { R::pack_sequence({a, b, c}); }, {"pack_padded_sequence", "enforce_sorted"});
  auto q = R::pack_sequence({a, b, c}, false);
  EXPECT_EQ(q.sorted_indices().to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(q.unsorted_indices().to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1}));
  auto [back, lens] = R::pad_packed_sequence(q, true, -1.0, 4);
  EXPECT_EQ(back.sizes(), IntArrayRef({3, 4, 2}));
  EXPECT_TRUE(close(back.narrow(1, 0, 3), padded));
  EXPECT_EQ(lens.to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 2}));
  auto q64 = q.to(kFloat64);
  EXPECT_EQ(q64.data().dtype(), kFloat64);
  EXPECT_TRUE(q64.data().is_cpu());
  EXPECT_TRUE(q64.sorted_indices().is_same(q.sorted_indices()));
  expect_error([&] { R::pad_packed_sequence(q, false, 0.0, 2); }, {"pad_packed_sequence", "total_length"});
  expect_error([&] { R::pack_padded_sequence(padded, brisk::tensor({3L, 0L, 2L}), true, false); },
               {"pack_padded_sequence", "[1, 3]"});
  expect_error([&] { R::pack_padded_sequence(padded, brisk::tensor({3L, 2L}), true); },
               {"pack_padded_sequence", "3 lengths"});
  // gradients flow through pack and pad, none into padded positions
  Tensor x = randn({4, 3, 2}).requires_grad_();
  auto pk = R::pack_padded_sequence(x, brisk::tensor({2L, 4L, 1L}), false, false);
  std::get<0>(R::pad_packed_sequence(pk)).sum().backward();
  Tensor mask = zeros({4, 3, 2});
  mask.narrow(0, 0, 2).select(1, 0).fill_(1);
  mask.select(1, 1).fill_(1);
  mask.narrow(0, 0, 1).select(1, 2).fill_(1);
  EXPECT_TRUE(close(x.grad(), mask));
}

TEST(RNN, DropoutBetweenLayersOnlyInTraining) {
  set_num_threads(1);
  manual_seed(1);
  nn::GRU gru(nn::GRUOptions(3, 8).num_layers(2).dropout(0.5));
  Tensor x = randn({4, 2, 3});
  gru->eval();
  auto [e1, eh1] = gru(x);
  auto [e2, eh2] = gru(x);
  EXPECT_TRUE(close(e1, e2, 0, 0));
  gru->train();
  auto [t1, th1] = gru(x);
  auto [t2, th2] = gru(x);
  EXPECT_FALSE(close(t1, t2, 1e-6, 1e-6));  // random masks between the layers
  EXPECT_FALSE(close(t1, e1, 1e-6, 1e-6));
  // the first layer's final state sees no dropout
  EXPECT_TRUE(close(th1[0], eh1[0], 1e-5, 1e-6));
  // one layer: dropout has nothing to act on
  nn::LSTM one(nn::LSTMOptions(3, 4).dropout(0.5));
  auto [a, sa] = one(x);
  one->eval();
  auto [b, sb] = one(x);
  EXPECT_TRUE(close(a, b, 0, 0));
}

TEST(RNN, Gradcheck) {
  set_num_threads(1);
  manual_seed(2);
  nn::LSTM lstm(nn::LSTMOptions(2, 3).bidirectional(true).proj_size(2));
  lstm->to(kFloat64);
  Tensor x = randn({3, 2, 2}, kFloat64).requires_grad_();
  std::vector<Tensor> inputs = {x};
  for (auto& p : lstm->parameters()) inputs.push_back(p);
  EXPECT_TRUE(gradcheck_ok(
      [&](const TensorList& in) {
        auto [out, st] = lstm(in[0]);
        return out.sum() + std::get<1>(st).pow(2).sum();
      },
      inputs));
  nn::GRU gru(nn::GRUOptions(2, 3).num_layers(2));
  gru->to(kFloat64);
  Tensor h0 = randn({2, 2, 3}, kFloat64).requires_grad_();
  auto pk = R::pack_padded_sequence(x, brisk::tensor({1L, 3L}), false, false);
  EXPECT_TRUE(gradcheck_ok(
      [&](const TensorList& in) {
        auto p = R::pack_padded_sequence(in[0], brisk::tensor({1L, 3L}), false, false);
        auto [out, h] = gru->forward_with_packed_input(p, in[1]);
        return (out.data() * out.data()).sum() + h.sum();
      },
      {x, h0}));
  nn::RNNCell cell(nn::RNNCellOptions(2, 3).nonlinearity(brisk::kReLU));
  cell->to(kFloat64);
  EXPECT_TRUE(gradcheck_ok([&](const TensorList& in) { return cell(in[0], in[1]).sum(); },
                           {randn({2, 2}, kFloat64).requires_grad_(), randn({2, 3}, kFloat64).requires_grad_()}));
}

TEST(RNN, Errors) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  expect_error([&] { lstm(randn({5, 2, 4})); }, {"[LSTM]", "input_size", "Expected 3, got 4"});
  expect_error([&] { lstm(randn({5})); }, {"[LSTM]", "2-D"});
  expect_error([&] { lstm(randn({5, 2, 3}), std::make_tuple(zeros({1, 2, 4}), zeros({2, 2, 4}))); },
               {"[LSTM]", "hidden[0]", "[2, 2, 4]", "[1, 2, 4]"});
  expect_error([&] { lstm(randn({5, 2, 3}), std::make_tuple(zeros({2, 2, 4}), zeros({2, 3, 4}))); },
               {"[LSTM]", "hidden[1]"});
  expect_error([&] { lstm(randn({5, 2, 3}, kFloat64)); }, {"[LSTM]", "dtype"});
  nn::GRU gru(3, 4);
  expect_error([&] { gru(randn({5, 2, 3}), zeros({1, 3, 4})); }, {"[GRU]", "hidden", "[1, 2, 4]"});
  expect_error([&] { gru(randn({5, 3}), zeros({1, 2, 4})); }, {"[GRU]", "hidden", "[1, 4]"});
  nn::RNN rnn(3, 4);
  expect_error([&] { rnn(randn({0, 2, 3})); }, {"[RNN]", "time steps"});
  expect_error([] { nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)); }, {"[LSTM]", "proj_size"});
  expect_error([] { nn::GRU(nn::GRUOptions(3, 4).dropout(1.5)); }, {"[GRU]", "dropout"});
  nn::LSTMCell lc(3, 4);
  expect_error([&] { lc(randn({2, 5})); }, {"[LSTMCell]", "input_size"});
  expect_error([&] { lc(randn({2, 3}), std::make_tuple(zeros({2, 4}), zeros({3, 4}))); },
               {"[LSTMCell]", "hx[1]", "[2, 4]", "[3, 4]"});
  nn::GRUCell gc(3, 4);
  expect_error([&] { gc(randn({1, 2, 3})); }, {"[GRUCell]", "1D or 2D"});
  nn::RNNCell rc(3, 4);
  expect_error([&] { rc(randn({2, 3}), zeros({2, 5})); }, {"[RNNCell]", "hx", "[2, 4]"});
}

TEST(RNN, PrintsOptions) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).proj_size(2));
  const std::string s = to_string(lstm);
  EXPECT_NE(s.find("LSTM(input_size=3, hidden_size=4, num_layers=2"), std::string::npos) << s;
  EXPECT_NE(s.find("proj_size=2"), std::string::npos) << s;
}

// libtorch code after the rename (issue 14): a module holding an LSTM and a
// Linear, registered by holder, trained one step.
namespace {
struct SeqNetImpl : nn::Module {
  SeqNetImpl() : lstm(nn::LSTMOptions(4, 8).num_layers(2).batch_first(true)), fc(8, 2) {
    register_module("lstm", lstm);
    register_module("fc", fc);
  }
  Tensor forward(Tensor x) {
    auto out = std::get<0>(lstm->forward(x));
    return fc->forward(out.select(1, -1));
  }
  nn::LSTM lstm;
  nn::Linear fc;
};
BRISK_MODULE(SeqNet);
}  // namespace

TEST(RNN, PortsAsLibtorchCode) {
  set_num_threads(1);
  manual_seed(4);
  SeqNet net;
  EXPECT_EQ(net->named_parameters().size(), 10u);
  EXPECT_TRUE(net->named_parameters().contains("lstm.weight_hh_l1"));
  Tensor x = randn({3, 5, 4});
  Tensor y = net->forward(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({3, 2}));
  y.pow(2).sum().backward();
  for (auto& [name, p] : net->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_GT(p.grad().abs().max().item<double>(), 0.0) << name;
  }
  // state_dict round trip into a fresh module gives the same output
  SeqNet other;
  other->load_state_dict(net->state_dict());
  EXPECT_TRUE(close(other->forward(x), y, 0, 0));
}
