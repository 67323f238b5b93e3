// brisk's side of the GPU benchmarks (issue figures for the CUDA backend).
// bench/cuda/run.sh builds the libtorch side (torch_cuda_bench.cpp) against
// the PyTorch installed on the GPU machine, runs both and prints one table.
//
// Each line printed is "name value unit", read by run.sh:
//   host_add_3x3_ns        host time per `z = x + y` on 3x3 float32, launch included (bursts of 200)
//   add_2p26_gbs           z = x + y on 2^26 float32, bytes moved (3 x 256 MiB) per second
//   d2d_copy_gbs           cudaMemcpy device-to-device of 256 MiB, bytes read + written per second
//   matmul_bf16_8192_tflops
//   adamw_200x1m_{fused,foreach,forloop}_ms
//   gelu_chain_2p24_{eager,compiled,compiled_lanes4}_ms, _compiled{,_lanes4}_gbs (compare d2d_copy_gbs),
//   compile_gelu_first_call_s
#include <brisk/brisk.h>
#include <brisk/compile.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace brisk;

void brisk_bench_launch_empty(cudaStream_t s);  // empty_kernel.cu

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Median of `reps` timings (ms) of f() measured with CUDA events on the current stream.
template <class F>
double time_ms(int reps, const F& f) {
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    cuda::Event a(true), b(true);
    a.record();
    f();
    b.record();
    b.synchronize();
    t.push_back(a.elapsed_time(b));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void host_cost() {
  Tensor x = randn({3, 3}, Device(kCUDA)), y = randn({3, 3}, Device(kCUDA));
  for (int i = 0; i < 1000; ++i) (void)(x + y);
  cuda::synchronize();
  // Bursts of 200 calls (well inside the GPU's launch queue, so the host
  // never waits for the device), timed on the host; the median of 200 bursts.
  const int n = 200;
  std::vector<double> per_call;
  for (int r = 0; r < 200; ++r) {
    cuda::synchronize();
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) {
      Tensor z = x + y;
      (void)z;
    }
    per_call.push_back((now_s() - t0) / n * 1e9);
  }
  cuda::synchronize();
  std::sort(per_call.begin(), per_call.end());
  const double best = per_call[per_call.size() / 2];
  std::printf("host_add_3x3_ns %.1f ns\n", best);
  // Without the allocation: add(x, y, out=z).
  Tensor zo = empty({3, 3}, Device(kCUDA));
  per_call.clear();
  for (int r = 0; r < 200; ++r) {
    cuda::synchronize();
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) add_out(zo, x, y);
    per_call.push_back((now_s() - t0) / n * 1e9);
  }
  std::sort(per_call.begin(), per_call.end());
  std::printf("host_add_out_3x3_ns %.1f ns\n", per_call[per_call.size() / 2]);
  // The floor under it: an empty kernel launched with the CUDA runtime, same bursts.
  cudaStream_t stream = static_cast<cudaStream_t>(cuda::current_stream().handle());
  per_call.clear();
  for (int r = 0; r < 200; ++r) {
    cuda::synchronize();
    const double t0 = now_s();
    for (int i = 0; i < n; ++i) brisk_bench_launch_empty(stream);
    per_call.push_back((now_s() - t0) / n * 1e9);
  }
  cuda::synchronize();
  std::sort(per_call.begin(), per_call.end());
  std::printf("empty_kernel_launch_ns %.1f ns\n", per_call[per_call.size() / 2]);
}

void bandwidth() {
  const int64_t n = int64_t(1) << 26;
  Tensor x = randn({n}, Device(kCUDA)), y = randn({n}, Device(kCUDA));
  Tensor z = empty({n}, Device(kCUDA));
  const double bytes = 4.0 * n;
  const double add_ms = time_ms(20, [&] { Tensor r = x + y; });
  std::printf("add_2p26_gbs %.1f GB/s\n", 3 * bytes / (add_ms * 1e-3) / 1e9);
  const double out_ms = time_ms(20, [&] { add_out(z, x, y); });
  std::printf("add_out_2p26_gbs %.1f GB/s\n", 3 * bytes / (out_ms * 1e-3) / 1e9);
  const double copy_ms = time_ms(20, [&] {
    cudaMemcpyAsync(z.data_ptr(), x.data_ptr(), size_t(bytes), cudaMemcpyDeviceToDevice,
                    static_cast<cudaStream_t>(cuda::current_stream().handle()));
  });
  std::printf("d2d_copy_gbs %.1f GB/s\n", 2 * bytes / (copy_ms * 1e-3) / 1e9);
}

void matmul() {
  const int64_t n = 8192;
  Tensor a = randn({n, n}, Device(kCUDA)).to(kBFloat16), b = randn({n, n}, Device(kCUDA)).to(kBFloat16);
  for (int i = 0; i < 3; ++i) (void)a.matmul(b);
  const double ms = time_ms(10, [&] { Tensor c = a.matmul(b); });
  std::printf("matmul_bf16_8192_tflops %.1f TFLOP/s\n", 2.0 * n * n * n / (ms * 1e-3) / 1e12);
}

void adamw() {
  for (optim::Impl impl : {optim::Impl::Fused, optim::Impl::Foreach, optim::Impl::ForLoop}) {
    std::vector<Tensor> params;
    for (int i = 0; i < 200; ++i) {
      Tensor p = randn({1 << 20}, Device(kCUDA)).requires_grad_();
      p.mutable_grad() = randn({1 << 20}, Device(kCUDA));
      params.push_back(p);
    }
    optim::AdamW opt(params, optim::AdamWOptions(1e-3).impl(impl));
    for (int i = 0; i < 3; ++i) opt.step();
    const double ms = time_ms(10, [&] { opt.step(); });
    std::printf("adamw_200x1m_%s_ms %.3f ms\n", optim::impl_name(impl), ms);
  }
}

// brisk::compile of the gelu chain x * 0.5 * (1 + erf(x / 1.41421)) on
// 2^24 float32 (issue 15: at least 0.8 of the copy bandwidth): eager (five
// kernels), compiled (one generated kernel), bytes read + written per
// second, and the first call (trace + NVRTC, a fresh cache directory).
void compile_gelu() {
  const int64_t n = int64_t(1) << 24;
  const double bytes = 2.0 * 4.0 * static_cast<double>(n);
  Tensor x = randn({n}, Device(kCUDA));
  auto chain = [](const Tensor& t) { return t * 0.5 * (1.0 + erf(t / 1.41421)); };
  auto f = compile(chain);
  cuda::synchronize();
  const double t0 = now_s();
  (void)f(x);
  cuda::synchronize();
  std::printf("compile_gelu_first_call_s %.3f s\n", now_s() - t0);
  (void)f(x);
  const double eager_ms = time_ms(20, [&] { (void)chain(x); });
  const double comp_ms = time_ms(20, [&] { (void)f(x); });
  std::printf("gelu_chain_2p24_eager_ms %.3f ms\n", eager_ms);
  std::printf("gelu_chain_2p24_compiled_ms %.3f ms\n", comp_ms);
  std::printf("gelu_chain_2p24_compiled_gbs %.1f GB/s\n", bytes / (comp_ms * 1e-3) / 1e9);
  std::printf("gelu_chain_2p24_generated_kernels %lld n\n", static_cast<long long>(f.stats().generated));
  // CompileMode::MaxAutotune: four elements per thread and iteration (Note
  // [Lanes of a generated kernel])
  auto f4 = compile(chain, CompileOptions().set_mode(CompileMode::MaxAutotune));
  (void)f4(x);
  const double lanes_ms = time_ms(20, [&] { (void)f4(x); });
  std::printf("gelu_chain_2p24_compiled_lanes4_ms %.3f ms\n", lanes_ms);
  std::printf("gelu_chain_2p24_compiled_lanes4_gbs %.1f GB/s\n", bytes / (lanes_ms * 1e-3) / 1e9);
}

}  // namespace

int main() {
  if (!cuda::is_available()) {
    std::fprintf(stderr, "brisk_cuda_bench: %s\n", cuda::unavailable_reason().c_str());
    return 1;
  }
  try {
    auto p = cuda::get_device_properties();
    std::printf("device %s\n", p.name.c_str());
    host_cost();
    bandwidth();
    matmul();
    adamw();
    compile_gelu();
  } catch (const Error& e) {
    std::fprintf(stderr, "brisk_cuda_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
