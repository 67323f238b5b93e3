// Training on a GPU end to end: the same MLP, data and optimizer on the CPU
// and on CUDA give the same losses and parameters (autograd, nn, losses,
// fused/foreach/for-loop optimizers and the data path on the device). Skips
// without a device.
#include <gtest/gtest.h>

#include "brisk/brisk.h"
#include "test_util.h"

using namespace brisk;

namespace {

std::shared_ptr<nn::SequentialImpl> mlp() {
  using nn::ModulePtr;
  return std::make_shared<nn::SequentialImpl>(std::initializer_list<ModulePtr>{
      std::make_shared<nn::LinearImpl>(20, 32), std::make_shared<nn::ReLUImpl>(), std::make_shared<nn::LinearImpl>(32, 16),
      std::make_shared<nn::GELUImpl>(), std::make_shared<nn::LinearImpl>(16, 5)});
}

// Trains `steps` steps on (x, y) on `device` and returns the losses.
std::vector<double> train(nn::SequentialImpl& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y,
                          Device device, int steps) {
  std::vector<double> losses;
  Tensor xd = x.to(device), yd = y.to(device);
  for (int s = 0; s < steps; ++s) {
    Tensor loss = nn::functional::cross_entropy(model.forward(xd), yd);
    opt.zero_grad();
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

}  // namespace

class CudaTraining : public ::testing::TestWithParam<optim::Impl> {};

TEST_P(CudaTraining, MlpWithAdamWMatchesTheCpu) {
  REQUIRE_CUDA();
  manual_seed(0);
  Tensor x = randn({64, 20});
  Tensor y = randint(0, 5, {64});
  auto cpu_model = mlp();
  auto gpu_model = mlp();
  gpu_model->load_state_dict(cpu_model->state_dict());
  gpu_model->to(Device(kCUDA));
  for (const Tensor& p : gpu_model->parameters()) EXPECT_TRUE(p.is_cuda());
  optim::AdamW cpu_opt(cpu_model->parameters(), optim::AdamWOptions(1e-2).weight_decay(0.1).impl(GetParam()));
  optim::AdamW gpu_opt(gpu_model->parameters(), optim::AdamWOptions(1e-2).weight_decay(0.1).impl(GetParam()));
  auto a = train(*cpu_model, cpu_opt, x, y, Device(kCPU), 20);
  auto b = train(*gpu_model, gpu_opt, x, y, Device(kCUDA), 20);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4 * (1 + std::abs(a[i]))) << "step " << i;
  EXPECT_LT(b.back(), b.front());
  auto pc = cpu_model->parameters(), pg = gpu_model->parameters();
  for (size_t i = 0; i < pc.size(); ++i) EXPECT_TRUE(allclose(pg[i].cpu(), pc[i], 1e-4, 1e-5)) << "parameter " << i;
}

TEST_P(CudaTraining, MlpWithSgdMomentumMatchesTheCpu) {
  REQUIRE_CUDA();
  manual_seed(1);
  Tensor x = randn({32, 20});
  Tensor y = randint(0, 5, {32});
  auto cpu_model = mlp();
  auto gpu_model = mlp();
  gpu_model->load_state_dict(cpu_model->state_dict());
  gpu_model->to(Device(kCUDA));
  optim::SGD cpu_opt(cpu_model->parameters(), optim::SGDOptions(0.1).momentum(0.9).nesterov(true).impl(GetParam()));
  optim::SGD gpu_opt(gpu_model->parameters(), optim::SGDOptions(0.1).momentum(0.9).nesterov(true).impl(GetParam()));
  auto a = train(*cpu_model, cpu_opt, x, y, Device(kCPU), 15);
  auto b = train(*gpu_model, gpu_opt, x, y, Device(kCUDA), 15);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-4 * (1 + std::abs(a[i]))) << "step " << i;
}

INSTANTIATE_TEST_SUITE_P(Impls, CudaTraining,
                         ::testing::Values(optim::Impl::Fused, optim::Impl::Foreach, optim::Impl::ForLoop),
                         [](const auto& info) { return std::string(optim::impl_name(info.param)); });

TEST(CudaTrainingNoDevice, ModuleToCudaNamesTheReason) {
  if (cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  auto model = mlp();
  brisk::testing::expect_error([&] { model->to(Device(kCUDA)); }, {"not available"});
  // The module is unchanged and still trains on the CPU.
  for (const Tensor& p : model->parameters()) EXPECT_TRUE(p.is_cpu());
}
