// libtorch's side of the GPU benchmarks: the same cases as
// brisk_cuda_bench.cpp, on the PyTorch installed on the GPU machine (its
// C++ headers and libraries ship in the wheel). Built and run by run.sh.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class F>
double time_ms(int reps, const F& f) {
  std::vector<float> t;
  cudaStream_t s = c10::cuda::getCurrentCUDAStream();
  for (int i = 0; i < reps; ++i) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaEventRecord(a, s);
    f();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    t.push_back(ms);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main() {
  torch::NoGradGuard no_grad;
  auto dev = torch::TensorOptions().device(torch::kCUDA);
  {
    auto x = torch::randn({3, 3}, dev), y = torch::randn({3, 3}, dev);
    for (int i = 0; i < 1000; ++i) (void)(x + y);
    torch::cuda::synchronize();
    // Bursts of 200 calls (well inside the GPU's launch queue, so the host
    // never waits for the device), timed on the host; the median of 200 bursts.
    const int n = 200;
    std::vector<double> per_call;
    for (int r = 0; r < 200; ++r) {
      torch::cuda::synchronize();
      const double t0 = now_s();
      for (int i = 0; i < n; ++i) {
        auto z = x + y;
        (void)z;
      }
      per_call.push_back((now_s() - t0) / n * 1e9);
    }
    torch::cuda::synchronize();
    std::sort(per_call.begin(), per_call.end());
    const double best = per_call[per_call.size() / 2];
    std::printf("host_add_3x3_ns %.1f ns\n", best);
  }
  {
    const int64_t n = int64_t(1) << 26;
    auto x = torch::randn({n}, dev), y = torch::randn({n}, dev), z = torch::empty({n}, dev);
    const double bytes = 4.0 * n;
    double ms = time_ms(20, [&] { auto r = x + y; });
    std::printf("add_2p26_gbs %.1f GB/s\n", 3 * bytes / (ms * 1e-3) / 1e9);
    ms = time_ms(20, [&] { torch::add_out(z, x, y); });
    std::printf("add_out_2p26_gbs %.1f GB/s\n", 3 * bytes / (ms * 1e-3) / 1e9);
    ms = time_ms(20, [&] { z.copy_(x); });
    std::printf("d2d_copy_gbs %.1f GB/s\n", 2 * bytes / (ms * 1e-3) / 1e9);
  }
  {
    const int64_t n = 8192;
    auto a = torch::randn({n, n}, dev.dtype(torch::kBFloat16)), b = torch::randn({n, n}, dev.dtype(torch::kBFloat16));
    for (int i = 0; i < 3; ++i) (void)a.matmul(b);
    const double ms = time_ms(10, [&] { auto c = a.matmul(b); });
    std::printf("matmul_bf16_8192_tflops %.1f TFLOP/s\n", 2.0 * n * n * n / (ms * 1e-3) / 1e12);
  }
  {
    // torch::optim::AdamW in C++ is the for-loop form; the fused and foreach
    // kernels are reached through the ATen ops that torch.optim calls.
    std::vector<torch::Tensor> params, grads, m, v, vmax, steps;
    for (int i = 0; i < 200; ++i) {
      params.push_back(torch::randn({1 << 20}, dev));
      grads.push_back(torch::randn({1 << 20}, dev));
      m.push_back(torch::zeros({1 << 20}, dev));
      v.push_back(torch::zeros({1 << 20}, dev));
      steps.push_back(torch::zeros({}, dev));
    }
    auto fused = [&] {
      torch::_fused_adamw_(params, grads, m, v, vmax, steps, 1e-3, 0.9, 0.999, 1e-2, 1e-8, false, false);
    };
    for (int i = 0; i < 3; ++i) fused();
    std::printf("adamw_200x1m_fused_ms %.3f ms\n", time_ms(10, fused));
    std::vector<torch::Tensor> p2;
    for (auto& p : params) p2.push_back(p.clone().requires_grad_());
    for (size_t i = 0; i < p2.size(); ++i) p2[i].mutable_grad() = grads[i];
    torch::optim::AdamW opt(p2, torch::optim::AdamWOptions(1e-3));
    for (int i = 0; i < 3; ++i) opt.step();
    std::printf("adamw_200x1m_forloop_ms %.3f ms\n", time_ms(10, [&] { opt.step(); }));
  }
  return 0;
}
