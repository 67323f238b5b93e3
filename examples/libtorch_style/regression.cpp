// Fits a cubic polynomial with one Linear layer on its features, written the
// way libtorch programs are (torch::nn::Linear holder, functional loss,
// optimizer, in-place updates under NoGradGuard for the first phase). It
// compiles unchanged against libtorch after
// `sed -e 's/brisk::/torch::/g' -e 's|brisk/brisk.h|torch/torch.h|'`.
//
//   regression [STEPS]
// Exits with status 1 unless the loss falls below 1e-3.
#include <brisk/brisk.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace F = brisk::nn::functional;

constexpr int64_t kDegree = 3;

// Builds [x, x^2, x^3] as columns.
brisk::Tensor make_features(brisk::Tensor x) {
  x = x.unsqueeze(1);
  std::vector<brisk::Tensor> xs;
  for (int64_t i = 0; i < kDegree; ++i) xs.push_back(x.pow(i + 1));
  return brisk::cat(xs, 1);
}

int main(int argc, char** argv) {
  const int64_t steps = argc > 1 ? std::atoll(argv[1]) : 2000;
  brisk::manual_seed(0);
  brisk::set_num_threads(1);
  auto poly_desired = brisk::tensor({0.5, -1.25, 0.75}, brisk::kFloat).unsqueeze(1);
  auto bias_desired = brisk::tensor({0.3}, brisk::kFloat);

  brisk::nn::Linear fc(brisk::nn::LinearOptions(kDegree, 1));
  brisk::optim::SGD optimizer(fc->parameters(), brisk::optim::SGDOptions(0.1));

  // Phase 1: a few hand-written gradient steps on the raw parameters.
  for (int i = 0; i < 20; ++i) {
    auto x = make_features(brisk::randn({32}));
    auto y = x.mm(poly_desired) + bias_desired.item<float>();
    auto loss = F::mse_loss(fc(x), y);
    fc->zero_grad();
    loss.backward();
    brisk::NoGradGuard no_grad;
    for (auto& p : fc->parameters()) p.sub_(p.grad() * 0.05);
  }

  // Phase 2: the optimizer, with the smooth L1 loss.
  double first = 0, loss_value = 0;
  int64_t step = 0;
  for (; step < steps; ++step) {
    auto x = make_features(brisk::randn({32}));
    auto y = x.mm(poly_desired) + bias_desired.item<float>();
    optimizer.zero_grad();
    auto loss = F::smooth_l1_loss(fc(x), y);
    loss_value = loss.item<double>();
    if (step == 0) first = loss_value;
    loss.backward();
    optimizer.step();
    if (loss_value < 1e-3) break;
  }
  std::cout << "loss " << first << " -> " << loss_value << " after " << step << " steps\n";
  std::cout << "learned: y = " << fc->weight.view({-1}) << " x + " << fc->bias << "\n";
  return loss_value < 1e-3 && loss_value < first ? 0 : 1;
}
