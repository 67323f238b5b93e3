// Gradient accumulation: K micro-batches whose mean losses are scaled by 1/K
// (or by their share of the samples) and backpropagated one after the other
// leave the gradient of one big batch, and the optimizer steps that follow
// (SGD with momentum, AdamW; every implementation) give the same parameters,
// to float32 rounding. See examples/grad_accumulation.cpp.
#include <brisk/nn.h>
#include <brisk/optim.h>

#include <memory>
#include <vector>

#include "test_util.h"

using namespace brisk;
using brisk::testing::close;
namespace nn = brisk::nn;
namespace optim = brisk::optim;
namespace F = brisk::nn::functional;

namespace {

// Tanh rather than ReLU: no exactly-zero gradients, whose sign Adam would
// amplify from rounding noise.
std::shared_ptr<nn::SequentialImpl> make_model() {
  manual_seed(3);
  return std::make_shared<nn::SequentialImpl>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::LinearImpl>(12, 16), std::make_shared<nn::TanhImpl>(), std::make_shared<nn::LinearImpl>(16, 5)});
}

/// A second model with the same parameters.
std::shared_ptr<nn::SequentialImpl> copy_of(const nn::SequentialImpl& m) {
  auto c = make_model();
  c->load_state_dict(m.state_dict());
  return c;
}

struct Batch {
  Tensor x, y;
};
Batch make_batch(int64_t n, uint64_t seed) {
  manual_seed(seed);
  return {randn({n, 12}), randint(0, 5, {n})};
}

std::vector<Tensor> grads(const nn::Module& m) {
  std::vector<Tensor> g;
  for (const Tensor& p : m.parameters()) g.push_back(p.grad());
  return g;
}

/// Asserts two lists of tensors agree to float32 rounding, relative to each
/// tensor's largest magnitude.
void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_TRUE(a[i].defined() && b[i].defined()) << what << " " << i;
    const double scale = b[i].abs().max().item<double>();
    EXPECT_TRUE(close(a[i], b[i], 1e-5, 1e-6 * scale)) << what << " " << i;
  }
}

std::vector<Tensor> params(const nn::Module& m) {
  std::vector<Tensor> p;
  for (const Tensor& t : m.parameters()) p.push_back(t.detach().clone());
  return p;
}

/// Backward of the full batch's mean cross entropy.
void full_backward(nn::Module& m, const Batch& b) { F::cross_entropy(m.forward(b.x), b.y).backward(); }

/// Backward of each micro-batch's mean loss times its share of the samples
/// (1/K for equal sizes): the gradients add up to the full batch's.
void accumulated_backward(nn::Module& m, const Batch& b, const std::vector<int64_t>& sizes) {
  const double n = static_cast<double>(b.x.size(0));
  int64_t at = 0;
  for (int64_t s : sizes) {
    const Tensor loss = F::cross_entropy(m.forward(b.x.narrow(0, at, s)), b.y.narrow(0, at, s));
    (loss * (static_cast<double>(s) / n)).backward();
    at += s;
  }
}

}  // namespace

TEST(GradAccumulation, EqualMicroBatchesGiveTheFullBatchGradient) {
  const Batch b = make_batch(64, 1);
  auto full = make_model();
  auto acc = copy_of(*full);
  full_backward(*full, b);
  for (int64_t K : {1, 2, 4, 8}) {
    SCOPED_TRACE(K);
    acc->zero_grad();
    accumulated_backward(*acc, b, std::vector<int64_t>(static_cast<size_t>(K), 64 / K));
    expect_same(grads(*acc), grads(*full), "gradient");
  }
  // without the scaling, K micro-batches give K times the gradient
  acc->zero_grad();
  for (int64_t i = 0; i < 4; ++i)
    F::cross_entropy(acc->forward(b.x.narrow(0, 16 * i, 16)), b.y.narrow(0, 16 * i, 16)).backward();
  std::vector<Tensor> four_times;
  for (const Tensor& g : grads(*full)) four_times.push_back(g * 4.0);
  expect_same(grads(*acc), four_times, "unscaled gradient");
}

TEST(GradAccumulation, UnequalMicroBatchesWeightedBySize) {
  const Batch b = make_batch(50, 2);
  auto full = make_model();
  auto acc = copy_of(*full);
  full_backward(*full, b);
  accumulated_backward(*acc, b, {16, 16, 16, 2});  // a short last micro-batch
  expect_same(grads(*acc), grads(*full), "gradient");
}

TEST(GradAccumulation, OptimizerStepsMatchTheFullBatch) {
  using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, optim::Impl)>;
  const std::vector<std::pair<const char*, MakeOpt>> opts = {
      {"SGD", [](std::vector<Tensor> p, optim::Impl impl) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::SGD>(std::move(p),
                                             optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3).impl(impl));
       }},
      {"AdamW", [](std::vector<Tensor> p, optim::Impl impl) -> std::unique_ptr<optim::Optimizer> {
         return std::make_unique<optim::AdamW>(std::move(p), optim::AdamWOptions(1e-2).impl(impl));
       }},
  };
  const int64_t K = 4, m = 8, steps = 5;
  for (const auto& [name, make] : opts)
    for (optim::Impl impl : {optim::Impl::ForLoop, optim::Impl::Foreach, optim::Impl::Fused}) {
      SCOPED_TRACE(std::string(name) + " impl " + std::to_string(static_cast<int>(impl)));
      auto full = make_model();
      auto acc = copy_of(*full);
      auto opt_full = make(full->parameters(), impl);
      auto opt_acc = make(acc->parameters(), impl);
      for (int64_t step = 0; step < steps; ++step) {
        const Batch b = make_batch(K * m, 10 + static_cast<uint64_t>(step));
        // one big batch
        opt_full->zero_grad();
        full_backward(*full, b);
        opt_full->step();
        // K micro-batches, loss / K each, one step, then zero_grad
        for (int64_t i = 0; i < K; ++i) {
          const Tensor loss = F::cross_entropy(acc->forward(b.x.narrow(0, i * m, m)), b.y.narrow(0, i * m, m));
          (loss / static_cast<double>(K)).backward();
        }
        expect_same(grads(*acc), grads(*full), "gradient");
        opt_acc->step();
        opt_acc->zero_grad();
        expect_same(params(*acc), params(*full), "parameter");
      }
      for (const Tensor& p : acc->parameters()) EXPECT_FALSE(p.grad().defined());  // zero_grad sets to none
    }
}
