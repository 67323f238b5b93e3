// Forward values and gradients of differentiable ops on CUDA against the CPU:
// each case runs the same function on CPU inputs and on copies of them on the
// GPU, backpropagates the same upstream gradient, and compares outputs and
// input gradients. Covers the backward formulas (written with brisk ops, so
// they run on the device) of shape, view, reduction, index, linalg and nn
// functions. Skips without a device.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;
namespace F = brisk::nn::functional;

namespace {

struct GradCase {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;  // float inputs that require grad
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  bool positive = false;  // inputs in (0.5, 2): log, sqrt, pow, div
};

std::vector<GradCase> cases() {
  using V = std::vector<Tensor>;
  using indexing::Slice;
  return {
      {"add_broadcast", {{4, 5}, {5}}, [](const V& x) { return x[0] + x[1] * 2; }},
      {"mul_div", {{3, 4}, {3, 4}}, [](const V& x) { return x[0] * x[1] / (x[1] + 3); }, true},
      {"pow_log_sqrt", {{6}}, [](const V& x) { return x[0].pow(1.5) + x[0].log() + x[0].sqrt(); }, true},
      {"exp_tanh_sigmoid", {{2, 7}}, [](const V& x) { return x[0].exp() * x[0].tanh() + x[0].sigmoid(); }},
      {"relu_gelu_silu", {{5, 5}}, [](const V& x) { return x[0].relu() + F::gelu(x[0]) + F::silu(x[0]); }},
      {"clamp_where", {{9}}, [](const V& x) { return where(x[0].gt(0), x[0], x[0] * 0.1).clamp(-0.5, 0.7); }},
      {"sum_mean_dims", {{3, 4, 5}}, [](const V& x) { return x[0].sum({0, 2}).unsqueeze(0) + x[0].mean(1).sum(1).unsqueeze(1); }},
      {"var_std", {{4, 6}}, [](const V& x) { return x[0].var(1) + x[0].std(0).sum(); }},
      {"amax_logsumexp", {{5, 7}}, [](const V& x) { return x[0].amax(1) + logsumexp(x[0], {1}); }},
      {"norm", {{3, 8}}, [](const V& x) { return x[0].norm(); }},
      {"prod_cumsum", {{3, 4}}, [](const V& x) { return x[0].prod(1) + cumsum(x[0], 1).sum(1); }, true},
      {"softmax_log_softmax", {{4, 10}},
       [](const V& x) { return softmax(x[0], 1) * 3 + log_softmax(x[0], 0); }},
      {"matmul_family", {{4, 6}, {6, 3}}, [](const V& x) { return x[0].matmul(x[1]).relu(); }},
      {"bmm_transposed", {{2, 5, 4}, {2, 5, 3}}, [](const V& x) { return bmm(x[0].transpose(1, 2), x[1]); }},
      {"addmm_outer_dot", {{3, 2}, {3, 4}, {4, 2}},
       [](const V& x) { return addmm(x[0], x[1], x[2], 0.5, 2) + outer(x[0].select(1, 0), x[0].select(1, 1)).sum(); }},
      {"einsum", {{2, 3, 4}, {4, 5}}, [](const V& x) { return einsum("bij,jk->bik", {x[0], x[1]}); }},
      {"views", {{4, 6}},
       [](const V& x) {
         Tensor v = x[0].view({2, 12}).t().reshape({3, 8}).unsqueeze(0).expand({2, 3, 8});
         return v.index({Slice(), 1, Slice(2, 7, 2)}) * 3 + x[0].narrow(1, 1, 3).sum();
       }},
      {"cat_stack_flip_roll", {{2, 3}, {4, 3}},
       [](const V& x) {
         return cat({x[0], x[1]}, 0).flip({0}).roll({1}, {1}) + stack({x[1], x[1] * 2}, 0).sum(0).sum(0);
       }},
      {"tril_pad_repeat", {{3, 3}},
       [](const V& x) { return pad(tril(x[0]) + triu(x[0], 1) * 2, {1, 1, 0, 2}).repeat({2, 1}); }},
      {"gather_index_select", {{5, 4}},
       [](const V& x) {
         Tensor idx = tensor({3, 0, 3, 1}, TensorOptions(kInt64).device(x[0].device()));
         return x[0].index_select(0, idx) + x[0].gather(1, idx.view({1, 4}).expand({4, 4}).remainder(4));
       }},
      {"advanced_index", {{6, 5}},
       [](const V& x) {
         Tensor rows = tensor({5, 0, 2, 2}, TensorOptions(kInt64).device(x[0].device()));
         return x[0].index({rows}) + x[0].index({x[0].gt(0)}).sum();
       }},
      {"layer_norm", {{4, 8}, {8}, {8}}, [](const V& x) { return F::layer_norm(x[0], {8}, x[1], x[2]); }},
      {"cross_entropy", {{6, 5}},
       [](const V& x) {
         Tensor t = tensor({0, 4, 2, 2, 1, 3}, TensorOptions(kInt64).device(x[0].device()));
         return F::cross_entropy(x[0], t);
       }},
      {"mse_loss", {{3, 4}, {3, 4}}, [](const V& x) { return F::mse_loss(x[0], x[1]); }},
      {"sdpa_causal", {{2, 4, 6, 8}, {2, 4, 6, 8}, {2, 4, 6, 8}},
       [](const V& x) { return F::scaled_dot_product_attention(x[0], x[1], x[2], {}, 0.0, true); }},
      // Note [View + in-place]: stale views regenerated, CopySlices on a
      // transposed root, an expanded (overlapping) view, a buffer filled
      // through views
      {"view_inplace_stale_view", {{4, 6}, {6}},
       [](const V& x) {
         Tensor b = x[0] * 1;
         Tensor v = b.narrow(0, 1, 2);
         b.mul_(x[1]);
         return v * 2 + b.sum(0);
       }},
      {"view_inplace_transposed_root", {{3, 4}, {3}},
       [](const V& x) {
         Tensor b = (x[0] * 1).t();
         b.select(0, 1).mul_(x[1]);
         b.slice(1, 0, 3, 2).add_(x[0].t().slice(1, 0, 3, 2) * 2);
         return b;
       }},
      {"view_inplace_expanded", {{5}},
       [](const V& x) {
         Tensor b = x[0] * 1;
         Tensor e = b.unsqueeze(0).expand({3, 5});
         b.mul_(x[0]);
         return e * e;
       }},
      {"view_inplace_buffer", {{2, 3}, {3}},
       [](const V& x) {
         Tensor buf = zeros({3, 3}, x[0].options());
         Tensor row0 = buf.select(0, 0);
         buf.narrow(0, 1, 2).copy_(x[0].sin());
         row0.copy_(x[1] * x[1]);
         return buf * row0;
       }},
  };
}

}  // namespace

class CudaAutograd : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaAutograd, ForwardAndGradientsMatchTheCpu) {
  REQUIRE_CUDA();
  const GradCase c = cases()[GetParam()];
  manual_seed(1234 + int64_t(GetParam()));
  std::vector<Tensor> cpu, gpu;
  for (const auto& s : c.shapes) {
    Tensor x = c.positive ? rand(s) * 1.5 + 0.5 : randn(s);
    cpu.push_back(x.clone().requires_grad_());
    gpu.push_back(x.cuda().requires_grad_());
  }
  Tensor yc = c.fn(cpu), yg = c.fn(gpu);
  ASSERT_TRUE(yg.is_cuda()) << c.name;
  ASSERT_EQ(yc.sizes(), yg.sizes()) << c.name;
  EXPECT_TRUE(allclose(yg.cpu(), yc, 1e-4, 1e-5)) << c.name << ": forward";
  Tensor up = randn(yc.sizes());
  yc.backward(up);
  yg.backward(up.cuda());
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_TRUE(gpu[i].grad().defined()) << c.name << ": input " << i;
    EXPECT_TRUE(gpu[i].grad().is_cuda()) << c.name << ": input " << i;
    EXPECT_TRUE(allclose(gpu[i].grad().cpu(), cpu[i].grad(), 1e-4, 1e-5)) << c.name << ": gradient of input " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaAutograd, ::testing::Range<size_t>(0, cases().size()),
                         [](const auto& info) { return cases()[info.param].name; });
