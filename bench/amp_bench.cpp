// brisk_amp_bench: training steps in float32 and under reduced-precision
// autocast (issue 16's cases; bench/amp_bench.py runs the same steps in
// PyTorch and prints the ratios; docs/performance.md, "mixed precision").
//
//   brisk_amp_bench [--threads N] [--quick] [--device cpu|cuda]
//
// --device cpu (the default): float32 and bfloat16 autocast on the CPU, the
// MLP 1000-5000-10000-10 at batch 64 (SGD step) and the encoder layer at
// batch 16 x 128 tokens (forward + backward).
//
// --device cuda: the same two models, with batches large enough to be
// GEMM-bound on an H100/H200: the MLP at batch 4096, the encoder layer at
// batch 64 x 128 tokens. Three variants each: float32 with TF32 off
// (cuda::set_allow_tf32(false)), float16 autocast with an amp::GradScaler
// (the MLP: scale(loss).backward(), scaler.step(opt), scaler.update(); the
// encoder, which has no optimizer: scale(loss).backward()), and bfloat16
// autocast without a scaler. Every timed step ends with cuda::synchronize().
//
// Prints one `key value` line per figure (milliseconds per step), medians
// over rounds after warm-up steps: mlp_step_{fp32,bf16}_ms and
// encoder_fwd_bwd_{fp32,bf16}_ms on the CPU; on CUDA also the
// *_fp16_scaler_ms keys (the device's name goes to stderr).
#include <brisk/brisk.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "timing.h"

using namespace brisk;
namespace F = brisk::nn::functional;

using bench_timing::out;
using bench_timing::time_ms;

namespace {

// --device cpu|cuda (or --device=...); bench_timing::parse_args skips it.
// Returns false (after a message) on a missing or unknown value.
bool parse_device(int argc, char** argv, bool& use_cuda) {
  use_cuda = false;
  for (int i = 1; i < argc; ++i) {
    std::string v;
    if (!std::strcmp(argv[i], "--device")) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "brisk_amp_bench: --device needs a value (cpu or cuda)\n");
        return false;
      }
      v = argv[++i];
    } else if (!std::strncmp(argv[i], "--device=", 9)) {
      v = argv[i] + 9;
    } else {
      continue;
    }
    if (v == "cpu") {
      use_cuda = false;
    } else if (v == "cuda") {
      use_cuda = true;
    } else {
      std::fprintf(stderr, "brisk_amp_bench: unknown --device '%s' (cpu or cuda)\n", v.c_str());
      return false;
    }
  }
  return true;
}

// Today's CPU cases (float32 and bfloat16 autocast).
void run_cpu(int rounds) {
  // The MLP of the issue: 1000-5000-10000-10, batch 64, SGD.
  {
    nn::Sequential mlp(nn::Linear(1000, 5000), nn::ReLU(), nn::Linear(5000, 10000), nn::ReLU(), nn::Linear(10000, 10));
    optim::SGD opt(mlp->parameters(), optim::SGDOptions(1e-3));
    Tensor x = randn({64, 1000});
    Tensor y = randint(0, 10, {64});
    auto step = [&](bool amp) {
      opt.zero_grad();
      Tensor loss;
      {
        amp::autocast ac(kCPU, kBFloat16, amp);
        loss = F::cross_entropy(mlp->forward(x), y);
      }
      loss.backward();
      opt.step();
    };
    out("mlp_step_fp32_ms", time_ms([&] { step(false); }, rounds, 1));
    out("mlp_step_bf16_ms", time_ms([&] { step(true); }, rounds, 1));
  }
  // A transformer encoder layer (d_model 512, 8 heads, feed-forward 2048,
  // no dropout), batch 16 x 128 tokens, forward + backward.
  {
    nn::TransformerEncoderLayer layer(
        nn::TransformerEncoderLayerOptions(512, 8).dim_feedforward(2048).dropout(0.0).batch_first(true));
    Tensor x = randn({16, 128, 512});
    auto step = [&](bool amp) {
      layer->zero_grad();
      Tensor loss;
      {
        amp::autocast ac(kCPU, kBFloat16, amp);
        loss = layer->forward(x).to(kFloat).square().mean();
      }
      loss.backward();
    };
    out("encoder_fwd_bwd_fp32_ms", time_ms([&] { step(false); }, rounds, 1));
    out("encoder_fwd_bwd_bf16_ms", time_ms([&] { step(true); }, rounds, 1));
  }
}

// The CUDA cases: float32 (TF32 off), float16 autocast + GradScaler,
// bfloat16 autocast. Each timed call is one step followed by
// cuda::synchronize(), so the wall clock covers the device's work.
void run_cuda(bool quick) {
  const Device dev(kCUDA);
  cuda::set_allow_tf32(false);
  std::fprintf(stderr, "brisk_amp_bench: device %s\n", cuda::get_device_properties().name.c_str());
  const int rounds = quick ? 3 : 10, iters = quick ? 2 : 5, warmup = quick ? 3 : 5;
  auto timed = [&](auto&& f) {
    return time_ms(
        [&] {
          f();
          cuda::synchronize();
        },
        rounds, iters, warmup);
  };

  // The MLP of the issue: 1000-5000-10000-10, SGD, batch 4096 on CUDA.
  {
    const int64_t batch = 4096;
    nn::Sequential mlp(nn::Linear(1000, 5000), nn::ReLU(), nn::Linear(5000, 10000), nn::ReLU(), nn::Linear(10000, 10));
    mlp->to(dev);
    optim::SGD opt(mlp->parameters(), optim::SGDOptions(1e-3));
    amp::GradScaler scaler;
    Tensor x = randn({batch, 1000}, dev);
    Tensor y = randint(0, 10, {batch}, TensorOptions(kInt64).device(dev));
    // dtype: nullopt for float32 (autocast off).
    auto step = [&](std::optional<ScalarType> dtype, bool use_scaler) {
      opt.zero_grad();
      Tensor loss;
      {
        amp::autocast ac(kCUDA, dtype.value_or(kHalf), dtype.has_value());
        loss = F::cross_entropy(mlp->forward(x), y);
      }
      if (use_scaler) {
        scaler.scale(loss).backward();
        scaler.step(opt);
        scaler.update();
      } else {
        loss.backward();
        opt.step();
      }
    };
    out("mlp_step_fp32_ms", timed([&] { step(std::nullopt, false); }));
    out("mlp_step_fp16_scaler_ms", timed([&] { step(kHalf, true); }));
    out("mlp_step_bf16_ms", timed([&] { step(kBFloat16, false); }));
  }
  // The encoder layer (d_model 512, 8 heads, feed-forward 2048, no
  // dropout), batch 64 x 128 tokens on CUDA, forward + backward.
  {
    nn::TransformerEncoderLayer layer(
        nn::TransformerEncoderLayerOptions(512, 8).dim_feedforward(2048).dropout(0.0).batch_first(true));
    layer->to(dev);
    amp::GradScaler scaler;
    Tensor x = randn({64, 128, 512}, dev);
    auto step = [&](std::optional<ScalarType> dtype, bool use_scaler) {
      layer->zero_grad();
      Tensor loss;
      {
        amp::autocast ac(kCUDA, dtype.value_or(kHalf), dtype.has_value());
        loss = layer->forward(x).to(kFloat).square().mean();
      }
      if (use_scaler) {
        scaler.scale(loss).backward();
      } else {
        loss.backward();
      }
    };
    out("encoder_fwd_bwd_fp32_ms", timed([&] { step(std::nullopt, false); }));
    out("encoder_fwd_bwd_fp16_scaler_ms", timed([&] { step(kHalf, true); }));
    out("encoder_fwd_bwd_bf16_ms", timed([&] { step(kBFloat16, false); }));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto [threads, quick] = bench_timing::parse_args(argc, argv);
  bool use_cuda = false;
  if (!parse_device(argc, argv, use_cuda)) return 2;
  try {
    set_num_threads(threads);
    manual_seed(0);
    if (use_cuda) {
      if (!cuda::is_available()) {
        std::fprintf(stderr, "brisk_amp_bench: --device cuda: %s\n", cuda::unavailable_reason().c_str());
        return 1;
      }
      run_cuda(quick);
    } else {
      run_cpu(quick ? 3 : 5);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk_amp_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
