// Recomputes in brisk what tools/bitexact/gen.py wrote from PyTorch and
// prints, per op and dtype, how many values and input gradients differ in
// any bit (NaN equal to NaN) and the largest relative difference. Silent on
// a bit-exact op. Build and run against a brisk build:
//   c++ -std=c++20 -O1 -Iinclude tools/bitexact/check.cpp -o /tmp/bitexact_check \
//       build/dev/src/libbrisk.so.0 -Wl,-rpath,$PWD/build/dev/src
//   OMP_NUM_THREADS=1 /tmp/bitexact_check DIR
#include <brisk/brisk.h>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <vector>
using namespace brisk;
namespace F = brisk::nn::functional;
int main(int argc, char** argv){
  const std::string dir = argc > 1 ? argv[1] : "/tmp/bitexact";
  set_num_threads(1);
  const int64_t n = 4000;
  std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
    {"elu", [](const Tensor& x){ return F::elu(x); }}, {"selu", [](const Tensor& x){ return F::selu(x); }},
    {"celu", [](const Tensor& x){ return F::celu(x); }}, {"softshrink", [](const Tensor& x){ return F::softshrink(x); }},
    {"hardshrink", [](const Tensor& x){ return F::hardshrink(x); }}, {"logsigmoid", [](const Tensor& x){ return F::logsigmoid(x); }},
    {"softsign", [](const Tensor& x){ return F::softsign(x); }}, {"tanhshrink", [](const Tensor& x){ return F::tanhshrink(x); }},
    {"mish", [](const Tensor& x){ return F::mish(x); }}, {"gelu", [](const Tensor& x){ return F::gelu(x); }},
    {"gelu_tanh", [](const Tensor& x){ return F::gelu(x, F::GELUFuncOptions().approximate("tanh")); }}, {"silu", [](const Tensor& x){ return F::silu(x); }},
    {"softplus", [](const Tensor& x){ return F::softplus(x); }}, {"sigmoid", [](const Tensor& x){ return x.sigmoid(); }},
    {"tanh", [](const Tensor& x){ return x.tanh(); }}, {"threshold", [](const Tensor& x){ return F::threshold(x, F::ThresholdFuncOptions(0.5, -1.0)); }},
    {"relu", [](const Tensor& x){ return F::relu(x); }},
    {"softmax", [](const Tensor& x){ return F::softmax(x.view({40, 100}), F::SoftmaxFuncOptions(1)).reshape({-1}); }},
    {"log_softmax", [](const Tensor& x){ return F::log_softmax(x.view({40, 100}), F::LogSoftmaxFuncOptions(1)).reshape({-1}); }},
    {"exp", [](const Tensor& x){ return x.exp(); }}, {"log1p", [](const Tensor& x){ return x.abs().log1p(); }},
    {"erf", [](const Tensor& x){ return x.erf(); }}, {"sqrt", [](const Tensor& x){ return x.abs().sqrt(); }},
    {"square", [](const Tensor& x){ return x.square(); }}, {"abs", [](const Tensor& x){ return x.abs(); }},
    {"layer_norm", [](const Tensor& x){ return F::layer_norm(x.view({40, 100}), {100}).reshape({-1}); }},
    {"rms_norm", [](const Tensor& x){ return F::rms_norm(x.view({40, 100}), {100}).reshape({-1}); }},
    {"smooth_l1", [](const Tensor& x){ return F::smooth_l1_loss(x, zeros({4000}, x.dtype()), F::SmoothL1LossFuncOptions(nn::kNone)); }},
    {"huber", [](const Tensor& x){ return F::huber_loss(x, zeros({4000}, x.dtype()), F::HuberLossFuncOptions(nn::kNone)); }},
    {"bce_logits", [](const Tensor& x){ return F::binary_cross_entropy_with_logits(x, (arange(4000) % 2).to(x.dtype()), F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(nn::kNone)); }},
    {"softmin", [](const Tensor& x){ return F::softmin(x.view({40, 100}), F::SoftminFuncOptions(1)).reshape({-1}); }},
    {"pow3", [](const Tensor& x){ return x.pow(3); }}, {"pow_1_5", [](const Tensor& x){ return x.abs().pow(1.5); }},
    {"pow2", [](const Tensor& x){ return x.pow(2); }}, {"pow_0_5", [](const Tensor& x){ return x.abs().pow(0.5); }},
    {"pow_m0_5", [](const Tensor& x){ return (x.abs() + 0.5).pow(-0.5); }}, {"pow_2_5", [](const Tensor& x){ return x.pow(2.5); }},
    {"pow_m2", [](const Tensor& x){ return (x.abs() + 0.5).pow(-2); }},
    {"reciprocal", [](const Tensor& x){ return x.reciprocal(); }}, {"atan", [](const Tensor& x){ return x.atan(); }},
    {"sin", [](const Tensor& x){ return x.sin(); }}, {"expm1", [](const Tensor& x){ return x.expm1(); }},
    {"rsqrt", [](const Tensor& x){ return x.abs().rsqrt(); }}, {"clamp", [](const Tensor& x){ return x.clamp(-1.0, 1.0); }},
    {"sign", [](const Tensor& x){ return x.sign(); }}, {"frac", [](const Tensor& x){ return x.frac(); }},
    {"lerp", [](const Tensor& x){ return lerp(x, ones_like(x), 0.3); }}, {"addcmul", [](const Tensor& x){ return addcmul(x, x, x, 0.5); }},
    {"addcdiv", [](const Tensor& x){ return addcdiv(x, x, x.abs() + 1, 0.5); }}, {"logit", [](const Tensor& x){ return x.sigmoid().logit(); }},
    {"atan2", [](const Tensor& x){ return atan2(x, x * 0.5 + 1); }},
    {"xlogy", [](const Tensor& x){ return xlogy(x, x.abs() + 1); }}, {"hypot", [](const Tensor& x){ return hypot(x, x * 0.5); }},
    {"logaddexp", [](const Tensor& x){ return logaddexp(x, x * 0.5 + 1); }}, {"logaddexp2", [](const Tensor& x){ return logaddexp2(x, x * 0.5 + 1); }},
    {"copysign", [](const Tensor& x){ return copysign(x, x - 0.3); }}, {"nextafter", [](const Tensor& x){ return nextafter(x, x.round()); }},
    {"hardswish", [](const Tensor& x){ return F::hardswish(x); }}, {"hardsigmoid", [](const Tensor& x){ return F::hardsigmoid(x); }},
    {"leaky_relu", [](const Tensor& x){ return F::leaky_relu(x); }}, {"leaky_relu2", [](const Tensor& x){ return F::leaky_relu(x, F::LeakyReLUFuncOptions().negative_slope(0.3)); }},
    {"hardtanh", [](const Tensor& x){ return F::hardtanh(x); }}, {"relu6", [](const Tensor& x){ return F::relu6(x); }},
    {"elu2", [](const Tensor& x){ return F::elu(x, F::ELUFuncOptions().alpha(0.7)); }}, {"celu2", [](const Tensor& x){ return F::celu(x, F::CELUFuncOptions().alpha(0.3)); }},
    {"softshrink2", [](const Tensor& x){ return F::softshrink(x, F::SoftshrinkFuncOptions(0.3)); }}, {"hardshrink2", [](const Tensor& x){ return F::hardshrink(x, F::HardshrinkFuncOptions(0.3)); }},
  };
  const char* names[] = {"float32","float16","bfloat16"};
  ScalarType dts[] = {kFloat, kHalf, kBFloat16};
  for (auto& [nm, f] : ops) for (int k = 0; k < 3; ++k) {
    std::ifstream in(dir + "/a2_" + nm + "_" + names[k] + ".bin", std::ios::binary);
    if (!in) { std::cout << nm << " " << names[k] << ": no torch file\n"; continue; }
    std::vector<double> xv(n), gv(n), yv(n), dv(n);
    in.read((char*)xv.data(), 8*n); in.read((char*)gv.data(), 8*n); in.read((char*)yv.data(), 8*n); in.read((char*)dv.data(), 8*n);
    try {
      Tensor x = tensor(xv, {n}, kDouble).to(dts[k]).requires_grad_();
      Tensor y = f(x); y.backward(tensor(gv, {n}, kDouble).to(dts[k]));
      Tensor yd = y.to(kDouble).contiguous(), gd = x.grad().to(kDouble).contiguous();
      int by = 0, bg = 0; double my = 0, mg = 0;
      for (int64_t i = 0; i < n; ++i) { double a = yd.data_ptr<double>()[i], b = yv[i]; if (!(std::isnan(a) && std::isnan(b)) && std::memcmp(&a, &b, 8)) { ++by; my = std::max(my, std::fabs(a-b)/std::max(1e-30,std::fabs(b))); } }
      for (int64_t i = 0; i < n; ++i) { double a = gd.data_ptr<double>()[i], b = dv[i]; if (!(std::isnan(a) && std::isnan(b)) && std::memcmp(&a, &b, 8)) { ++bg; mg = std::max(mg, std::fabs(a-b)/std::max(1e-30,std::fabs(b))); } }
      if (by || bg) std::cout << nm << " " << names[k] << ": value diffs " << by << " (max rel " << my << "), grad diffs " << bg << " (max rel " << mg << ")\n";
    } catch (std::exception& e) { std::cout << nm << " " << names[k] << ": brisk error " << std::string(e.what()).substr(0, 80) << "\n"; }
  }
}
