// brisk_amp_bench: training steps in float32 and under bfloat16 autocast on
// the CPU (issue 16's cases; bench/amp_bench.py runs the same steps in
// PyTorch, float32 and torch.autocast("cpu"), and prints the ratios;
// docs/performance.md, "mixed precision").
//
//   brisk_amp_bench [--threads N] [--quick]
//
// Prints one `key value` line per figure (milliseconds per step), medians
// over rounds after warm-up steps.
#include <brisk/brisk.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "timing.h"

using namespace brisk;
namespace F = brisk::nn::functional;

using bench_timing::out;
using bench_timing::time_ms;

namespace {



}  // namespace

int main(int argc, char** argv) {
  const auto [threads, quick] = bench_timing::parse_args(argc, argv);
  set_num_threads(threads);
  manual_seed(0);
  const int rounds = quick ? 3 : 5;

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
  return 0;
}
