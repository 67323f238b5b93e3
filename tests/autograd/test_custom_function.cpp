// Custom autograd functions (autograd::Function<T>, libtorch's API): gradients
// against the built-in ops and finite differences, the context (saved
// tensors, saved_data, mark_dirty, mark_non_differentiable, materialize
// grads, needs_input_grad), errors, double backward, anomaly mode, profiler.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/grad_util.h"
#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
using brisk::autograd::AutogradContext;
using brisk::autograd::variable_list;
using brisk::testing::close;
using brisk::testing::expect_error;
using brisk::testing::gradcheck_ok;
using brisk::testing::leaf;

namespace customfn {

// y = x w^T + b (b optional), libtorch's documentation example.
struct LinearFunction : autograd::Function<LinearFunction> {
  static Tensor forward(AutogradContext* ctx, Tensor input, Tensor weight, std::optional<Tensor> bias) {
    ctx->save_for_backward({input, weight, bias ? *bias : Tensor()});
    Tensor out = input.mm(weight.t());
    if (bias) out = out + bias->unsqueeze(0).expand_as(out);
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    const Tensor &input = saved[0], &weight = saved[1], &bias = saved[2];
    const Tensor& g = grad_outputs[0];
    Tensor gi, gw, gb;
    if (ctx->needs_input_grad(0)) gi = g.mm(weight);
    if (ctx->needs_input_grad(1)) gw = g.t().mm(input);
    if (bias.defined() && ctx->needs_input_grad(2)) gb = g.sum(0);
    return {gi, gw, gb};
  }
};

// exp saving its output: backward is written with ops, so it is twice differentiable.
struct Exp : autograd::Function<Exp> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    Tensor r = x.exp();
    ctx->save_for_backward({r});
    return r;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->get_saved_variables()[0]};
  }
};

// x * k with k a double kept in saved_data; one gradient per argument.
struct MulConst : autograd::Function<MulConst> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
    ctx->saved_data["k"] = k;
    return x * k;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {g[0] * ctx->saved_data["k"].toDouble(), Tensor()};
  }
};

// Named explicitly.
struct Square : autograd::Function<Square> {
  static constexpr const char* name = "MySquare";
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {2 * g[0] * ctx->get_saved_variables()[0]};
  }
};

// In place: x *= 2 (an input marked dirty and returned).
struct MulTwoInplace : autograd::Function<MulTwoInplace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2}; }
};

}  // namespace customfn

using namespace customfn;

TEST(CustomFunction, LinearMatchesBuiltinAndFiniteDifferences) {
  Tensor x = leaf({4, 3}), w = leaf({5, 3}), b = leaf({5});
  Tensor y = LinearFunction::apply(x, w, b);
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "customfn::LinearFunction");
  Tensor go = rand({4, 5}, kDouble);
  y.backward(go);
  Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_(), b2 = b.detach().requires_grad_();
  (x2.matmul(w2.t()) + b2).backward(go);
  EXPECT_TRUE(close(x.grad(), x2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(close(w.grad(), w2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(close(b.grad(), b2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return LinearFunction::apply(in[0], in[1], in[2]); },
                           {leaf({3, 2}), leaf({4, 2}), leaf({4})}));
  // Without bias (std::nullopt): still one gradient per argument.
  Tensor y2 = LinearFunction::apply(x, w, std::nullopt);
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return LinearFunction::apply(in[0], in[1], std::nullopt); },
                           {leaf({3, 2}), leaf({4, 2})}));
}

TEST(CustomFunction, ExpGradcheckAndDoubleBackward) {
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return Exp::apply(in[0]); }, {leaf({3, 4})},
                           /*grad_grad=*/true));
  Tensor x = leaf({5});
  Tensor y = Exp::apply(x).sum();
  TensorList g = autograd::grad({y}, {x}, {}, std::nullopt, /*create_graph=*/true);
  EXPECT_TRUE(close(g[0], x.detach().exp(), 1e-12, 1e-12));
  ASSERT_TRUE(g[0].requires_grad());
  TensorList gg = autograd::grad({g[0].sum()}, {x});
  EXPECT_TRUE(close(gg[0], x.detach().exp(), 1e-12, 1e-12));
}

TEST(CustomFunction, SavedDataAndNonTensorArguments) {
  Tensor x = leaf({3});
  Tensor y = MulConst::apply(x, 2.5);
  EXPECT_NE(y.grad_fn()->name().find("MulConst"), std::string::npos);
  y.sum().backward();
  EXPECT_TRUE(close(x.grad(), full({3}, 2.5, kDouble)));
  EXPECT_TRUE(gradcheck_ok([](const TensorList& in) { return MulConst::apply(in[0], -3.0); }, {leaf({2, 3})}));
  // Integer literal for a double parameter, and a mul-by-constant in float32.
  Tensor xf = ones({2}).requires_grad_();
  MulConst::apply(xf, 3).sum().backward();
  EXPECT_EQ(xf.grad().dtype(), kFloat);
  EXPECT_EQ(xf.grad().to_vector<float>(), (std::vector<float>{3, 3}));
}

TEST(CustomFunction, StaticNameAndProfiler) {
  Tensor x = leaf({3});
  Tensor y = Square::apply(x);
  EXPECT_EQ(y.grad_fn()->name(), "MySquare");
  profiler::profile p;
  y.sum().backward();
  bool found = false;
  for (const auto& e : p.result().events) found = found || (e.name == "MySquare" && e.kind == profiler::EventKind::Backward);
  EXPECT_TRUE(found) << "the custom node's backward is a profiler event under its name";
  EXPECT_TRUE(close(x.grad(), 2 * x.detach(), 1e-12, 1e-12));
}

TEST(CustomFunction, IValueKinds) {
  std::unordered_map<std::string, IValue> d;
  d["t"] = ones({2});
  d["d"] = 1.5;
  d["f"] = 2.5f;
  d["i"] = 7;
  d["l"] = int64_t(1) << 40;
  d["b"] = true;
  d["s"] = "name";
  d["s2"] = std::string("other");
  d["iv"] = std::vector<int64_t>{1, 2, 3};
  d["dv"] = std::vector<double>{0.5, 1.5};
  d["tv"] = std::vector<Tensor>{zeros({1}), ones({2})};
  d["sc"] = Scalar(3);
  d["none"] = IValue();
  EXPECT_TRUE(d["t"].isTensor());
  EXPECT_EQ(d["t"].toTensor().numel(), 2);
  EXPECT_EQ(d["d"].toDouble(), 1.5);
  EXPECT_EQ(d["f"].toDouble(), 2.5);
  EXPECT_EQ(d["i"].toInt(), 7);
  EXPECT_EQ(d["l"].toInt(), int64_t(1) << 40);
  EXPECT_TRUE(d["b"].toBool());
  EXPECT_EQ(d["s"].toStringRef(), "name");
  EXPECT_EQ(d["s2"].toStringRef(), "other");
  EXPECT_EQ(d["iv"].toIntVector(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(d["dv"].toDoubleVector(), (std::vector<double>{0.5, 1.5}));
  EXPECT_EQ(d["tv"].toTensorVector().size(), 2u);
  EXPECT_TRUE(d["sc"].isInt());
  EXPECT_EQ(d["sc"].toScalar().to<int64_t>(), 3);
  EXPECT_TRUE(d["none"].isNone());
  expect_error([&] { (void)d["i"].toDouble(); }, {"IValue", "expected Double but got Int"});
  expect_error([&] { (void)d["t"].toStringRef(); }, {"expected String but got Tensor"});
}

TEST(CustomFunction, MarkDirtyInplace) {
  Tensor l = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor a = l * 1;
  const uint32_t v0 = a._version();
  Tensor y = MulTwoInplace::apply(a);
  EXPECT_TRUE(y.is_same(a)) << "the dirty input is the output";
  EXPECT_EQ(a._version(), v0 + 2) << "the op's bump and mark_dirty's, as PyTorch";
  EXPECT_NE(a.grad_fn()->name().find("MulTwoInplace"), std::string::npos) << "history rebased";
  EXPECT_EQ(a.to_vector<double>(), (std::vector<double>{2, 4, 6}));
  (y * y).sum().backward();  // d/dl (2l)^2 = 8l
  EXPECT_TRUE(close(l.grad(), tensor({8.0, 16.0, 24.0})));
  // A leaf that requires grad may not be changed in place.
  Tensor leaf_x = ones({2}, kDouble).requires_grad_();
  expect_error([&] { MulTwoInplace::apply(leaf_x); }, {"MulTwoInplace", "leaf Variable that requires grad"});
  // Under no-grad the leaf is changed and the output is a detached alias.
  {
    NoGradGuard ng;
    Tensor o = MulTwoInplace::apply(leaf_x);
    EXPECT_FALSE(o.requires_grad());
  }
  // forward ran before the refusal (as in PyTorch), then once more under no-grad.
  EXPECT_EQ(leaf_x.to_vector<double>(), (std::vector<double>{4, 4}));
}

TEST(CustomFunction, MarkDirtyOnAViewRewritesTheBase) {
  Tensor l = ones({3}, kDouble).requires_grad_();
  Tensor b = l * 1;
  Tensor v = b.narrow(0, 0, 2);
  MulTwoInplace::apply(v);
  EXPECT_EQ(b.grad_fn()->name(), "CopySlices");
  b.sum().backward();
  EXPECT_EQ(l.grad().to_vector<double>(), (std::vector<double>{2, 2, 1}));  // PyTorch: [2, 2, 1]
}

namespace customfn {
// Returns (x sorted descending, the sort's float positions marked non-differentiable, argmax as int64).
struct SortWithIndex : autograd::Function<SortWithIndex> {
  static inline std::vector<bool> grads_defined;
  static inline double pos_grad_abs_sum = -1;
  static variable_list forward(AutogradContext* ctx, Tensor x, bool materialize) {
    ctx->set_materialize_grads(materialize);
    auto [v, i] = x.sort(0, true);
    Tensor pos = i.to(kDouble);
    ctx->mark_non_differentiable({pos});
    ctx->save_for_backward({i});
    ctx->saved_data["n"] = x.size(0);
    return {v, pos, x.argmax()};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    EXPECT_EQ(g.size(), 3u);
    grads_defined = {g[0].defined(), g[1].defined(), g[2].defined()};
    pos_grad_abs_sum = g[1].defined() ? g[1].abs().sum().item<double>() : -1;
    Tensor idx = ctx->get_saved_variables()[0];
    Tensor gx = zeros({ctx->saved_data["n"].toInt()}, g[0].options());
    gx.index_put_({idx}, g[0]);
    return {gx, Tensor()};
  }
};
}  // namespace customfn

TEST(CustomFunction, NonDifferentiableOutputsAndMaterializeGrads) {
  for (bool materialize : {true, false}) {
    Tensor x = tensor({0.3, -1.0, 2.0, 0.5}).requires_grad_();
    variable_list out = SortWithIndex::apply(x, materialize);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_TRUE(out[0].requires_grad());
    EXPECT_FALSE(out[1].requires_grad()) << "marked non-differentiable";
    EXPECT_FALSE(out[2].requires_grad()) << "int64: not differentiable";
    EXPECT_EQ(out[2].item<int64_t>(), 2);
    (out[0] * tensor({1.0, 2.0, 3.0, 4.0})).sum().backward();
    // sorted descending: 2.0 (idx 2), 0.5 (3), 0.3 (0), -1.0 (1)
    EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3, 4, 1, 2}));
    // Outputs whose gradient did not flow: zeros by default, undefined without materializing.
    EXPECT_EQ(SortWithIndex::grads_defined, (std::vector<bool>{true, materialize, materialize}));
    EXPECT_EQ(SortWithIndex::pos_grad_abs_sum, materialize ? 0.0 : -1.0);
  }
}

namespace customfn {
struct RecordNeeds : autograd::Function<RecordNeeds> {
  static inline std::vector<bool> in_forward, in_backward;
  static Tensor forward(AutogradContext* ctx, Tensor x, int64_t scale, Tensor y) {
    in_forward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    return x * y * double(scale);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    in_backward = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    return {g[0], Tensor(), ctx->needs_input_grad(1) ? g[0] : Tensor()};
  }
};
}  // namespace customfn

TEST(CustomFunction, NeedsInputGrad) {
  Tensor x = leaf({2}), y = rand({2}, kDouble);
  RecordNeeds::apply(x, 3, y).sum().backward();
  EXPECT_EQ(RecordNeeds::in_forward, (std::vector<bool>{true, false}));
  EXPECT_EQ(RecordNeeds::in_backward, (std::vector<bool>{true, false}));
  Tensor y2 = leaf({2});
  RecordNeeds::apply(x.detach(), 3, y2).sum().backward();
  EXPECT_EQ(RecordNeeds::in_backward, (std::vector<bool>{false, true}));
  EXPECT_TRUE(y2.grad().defined());
}

namespace customfn {
struct WrongCount : autograd::Function<WrongCount> {
  static Tensor forward(AutogradContext*, Tensor x, Tensor y) { return x * y; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0]}; }
};
struct WrongShape : autograd::Function<WrongShape> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static variable_list backward(AutogradContext*, variable_list g) { return {ones({7}, g[0].options())}; }
};
struct GradForDouble : autograd::Function<GradForDouble> {
  static Tensor forward(AutogradContext*, Tensor x, double k) { return x * k; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], g[0]}; }
};
struct ExtraUndefined : autograd::Function<ExtraUndefined> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 2; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 2, Tensor(), Tensor()}; }
};
struct NanBackward : autograd::Function<NanBackward> {
  static Tensor forward(AutogradContext*, Tensor x) { return x.clone(); }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * NAN}; }
};
struct Identity : autograd::Function<Identity> {
  static Tensor forward(AutogradContext*, Tensor x) { return x; }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0] * 3}; }
};
// Returns a view of its input (the first two elements).
struct Head : autograd::Function<Head> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->saved_data["n"] = x.size(0);
    return x.narrow(0, 0, 2);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor r = zeros({ctx->saved_data["n"].toInt()}, g[0].options());
    r.narrow(0, 0, 2).copy_(g[0] * 5);  // 5: shows the gradient went through this backward
    return {r};
  }
};
struct SumList : autograd::Function<SumList> {
  static Tensor forward(AutogradContext* ctx, variable_list xs, Tensor w) {
    ctx->saved_data["n"] = int64_t(xs.size());
    Tensor s = w.clone();
    for (const Tensor& x : xs) s = s + x;
    return s;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    variable_list r(size_t(ctx->saved_data["n"].toInt()) + 1, g[0]);
    return r;
  }
};
}  // namespace customfn

TEST(CustomFunction, Errors) {
  Tensor x = leaf({3}), y = leaf({3});
  expect_error([&] { WrongCount::apply(x, y).sum().backward(); },
               {"WrongCount", "incorrect number of gradients (expected 2, got 1)"});
  expect_error([&] { WrongShape::apply(x).sum().backward(); }, {"WrongShape", "invalid gradient at index 0"});
  expect_error([&] { GradForDouble::apply(x, 2.0).sum().backward(); },
               {"GradForDouble", "defined gradient at position 1", "not a tensor"});
  // Trailing undefined gradients are accepted (libtorch's rule).
  Tensor z = leaf({3});
  ExtraUndefined::apply(z).sum().backward();
  EXPECT_TRUE(close(z.grad(), full({3}, 2.0, kDouble)));
}

TEST(CustomFunction, SavedTensorModifiedInPlace) {
  Tensor l = leaf({3});
  Tensor a = l * 1;
  Tensor y = Square::apply(a);
  a.add_(1);
  expect_error([&] { y.sum().backward(); }, {"modified by an inplace operation", "saved by MySquare"});
  // Graph freed after backward: a second backward names the node.
  Tensor b = l * 1;
  Tensor y2 = Square::apply(b).sum();
  y2.backward();
  expect_error([&] { y2.backward(); }, {"backward through the graph a second time"});
}

TEST(CustomFunction, AnomalyModeNamesTheFunction) {
  Tensor x = leaf({2});
  autograd::DetectAnomalyGuard guard;
  expect_error([&] { NanBackward::apply(x).sum().backward(); }, {"NanBackward", "nan"});
}

TEST(CustomFunction, InputReturnedAsIsAndNoGrad) {
  Tensor x = leaf({3});
  Tensor y = Identity::apply(x);
  EXPECT_FALSE(y.is_same(x)) << "an alias with the call's history, as PyTorch's view_as";
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
  EXPECT_TRUE(x.is_leaf());
  y.sum().backward();
  EXPECT_TRUE(close(x.grad(), full({3}, 3.0, kDouble)));
  {
    NoGradGuard ng;
    Tensor z = Exp::apply(x);
    EXPECT_FALSE(z.requires_grad());
    EXPECT_FALSE(z.grad_fn());
  }
  Tensor plain = ones({2});
  EXPECT_FALSE(Exp::apply(plain).requires_grad());
}

TEST(CustomFunction, ViewOutput) {
  Tensor l = leaf({4});
  Tensor x = l * 1;
  Tensor h = Head::apply(x);
  EXPECT_EQ(h.data_ptr(), x.data_ptr());
  EXPECT_NE(h.grad_fn()->name().find("Head"), std::string::npos);
  h.sum().backward(ones({}, kDouble), /*retain_graph=*/true);
  EXPECT_EQ(l.grad().to_vector<double>(), (std::vector<double>{5, 5, 0, 0}));
  // Its history is the call's, not a view op's: changing it in place would
  // bypass the function's backward, so it is refused (PyTorch refuses too).
  expect_error([&] { h.mul_(2); }, {"no_grad"});
}

TEST(CustomFunction, TensorListArgumentCountsEachTensor) {
  Tensor a = leaf({2}), b = leaf({2}), w = leaf({2});
  SumList::apply(variable_list{a, b}, w).sum().backward();
  EXPECT_TRUE(close(a.grad(), ones({2}, kDouble)));
  EXPECT_TRUE(close(b.grad(), ones({2}, kDouble)));
  EXPECT_TRUE(close(w.grad(), ones({2}, kDouble)));
}

TEST(CustomFunction, Spellings) {
  // libtorch's names for the autograd API, as a ported file uses them.
  autograd::Variable v = leaf({2});
  autograd::variable_list outs = {(v * v).sum()};
  autograd::variable_list gs = autograd::grad(outs, {v}, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                              /*allow_unused=*/false);
  EXPECT_TRUE(close(gs[0], 2 * v.detach()));
  autograd::backward(outs, {ones({}, kDouble)});
  EXPECT_TRUE(close(v.grad(), 2 * v.detach()));
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(GradMode::is_enabled());
    AutoGradMode enable(true);
    EXPECT_TRUE(GradMode::is_enabled());
  }
  {
    InferenceMode guard;
    EXPECT_TRUE(InferenceMode::is_enabled());
  }
  autograd::AnomalyMode::set_enabled(true);
  EXPECT_TRUE(autograd::AnomalyMode::is_enabled());
  EXPECT_TRUE(autograd::AnomalyMode::should_check_nan());
  autograd::AnomalyMode::set_enabled(false);
  {
    autograd::DetectAnomalyGuard detect(/*check_nan=*/false);
    EXPECT_TRUE(autograd::AnomalyMode::is_enabled());
    Tensor x = leaf({2});
    NanBackward::apply(x).sum().backward();  // no NaN check requested
    EXPECT_TRUE(std::isnan(x.grad()[0].item<double>()));
  }
  EXPECT_FALSE(autograd::AnomalyMode::is_enabled());
  // torch::autograd::GradMode / AutoGradMode / InferenceMode spellings.
  {
    autograd::AutoGradMode off(false);
    EXPECT_FALSE(autograd::GradMode::is_enabled());
    autograd::InferenceMode inf;
    EXPECT_TRUE(InferenceMode::is_enabled());
  }
}
