// A custom autograd function in libtorch's form (torch::autograd::Function
// with static forward/backward and an AutogradContext), used inside a module
// and trained; its gradients are checked against the same model built from
// ordinary ops. It compiles unchanged against libtorch after
// `sed -e 's/brisk::/torch::/g' -e 's|brisk/brisk.h|torch/torch.h|'`.
//
//   custom_function [STEPS]
// Exits with status 1 when the gradients differ or the loss did not fall.
#include <brisk/brisk.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

using brisk::autograd::AutogradContext;
using brisk::autograd::variable_list;

// y = x W^T + b, with its own backward.
struct LinearFunction : public brisk::autograd::Function<LinearFunction> {
  static brisk::Tensor forward(AutogradContext* ctx, brisk::Tensor input, brisk::Tensor weight, brisk::Tensor bias) {
    ctx->save_for_backward({input, weight, bias});
    return input.mm(weight.t()) + bias;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0], weight = saved[1];
    auto grad = grad_outputs[0];
    auto grad_input = grad.mm(weight);
    auto grad_weight = grad.t().mm(input);
    auto grad_bias = grad.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

// A scaled tanh with the scale kept in saved_data: y = tanh(x * k).
struct ScaledTanh : public brisk::autograd::Function<ScaledTanh> {
  static brisk::Tensor forward(AutogradContext* ctx, brisk::Tensor x, double k) {
    auto y = brisk::tanh(x * k);
    ctx->saved_data["k"] = k;
    ctx->save_for_backward({y});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto y = ctx->get_saved_variables()[0];
    const double k = ctx->saved_data["k"].toDouble();
    return {grad_outputs[0] * (1 - y * y) * k, brisk::Tensor()};
  }
};

struct MyLinearImpl : brisk::nn::Module {
  MyLinearImpl(int64_t in, int64_t out) {
    weight = register_parameter("weight", brisk::randn({out, in}) / std::sqrt(static_cast<double>(in)));
    bias = register_parameter("bias", brisk::zeros({out}));
  }
  brisk::Tensor forward(brisk::Tensor x) { return LinearFunction::apply(x, weight, bias); }
  brisk::Tensor weight, bias;
};
TORCH_MODULE(MyLinear);

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  brisk::manual_seed(0);
  brisk::set_num_threads(1);
  MyLinear l1(4, 16), l2(16, 1);

  // Gradients against the same computation written with ordinary ops.
  auto x = brisk::randn({8, 4});
  auto out = l2(ScaledTanh::apply(l1(x), 0.7)).square().sum();
  out.backward();
  auto g1 = l1->weight.grad().clone(), g2 = l2->bias.grad().clone();
  l1->weight.mutable_grad() = brisk::Tensor();
  l2->bias.mutable_grad() = brisk::Tensor();
  auto ref = (brisk::tanh((x.mm(l1->weight.t()) + l1->bias) * 0.7).mm(l2->weight.t()) + l2->bias).square().sum();
  ref.backward();
  if (!g1.allclose(l1->weight.grad(), 1e-5, 1e-6) || !g2.allclose(l2->bias.grad(), 1e-5, 1e-6)) {
    std::cerr << "the custom function's gradients differ from autograd's\n";
    return 1;
  }

  // Train both layers on a smooth target.
  std::vector<brisk::Tensor> params = l1->parameters();
  for (auto& p : l2->parameters()) params.push_back(p);
  brisk::optim::Adam optimizer(params, brisk::optim::AdamOptions(1e-2));
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    auto input = brisk::rand({64, 4}) * 2 - 1;
    auto target = input.sum(1, /*keepdim=*/true).sin();
    optimizer.zero_grad();
    auto loss = (l2(ScaledTanh::apply(l1(input), 0.7)) - target).square().mean();
    loss.backward();
    optimizer.step();
    last = loss.item<double>();
    if (step == 0) first = last;
  }
  std::cout << "loss " << first << " -> " << last << "\n";
  return last < 0.5 * first ? 0 : 1;
}
