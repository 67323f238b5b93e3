// brisk's side of the CUDA-graph benchmarks (issue 17); bench/cuda/graph_bench.py
// runs the same cases in PyTorch (eager and torch.cuda.graph) and prints
// both with their ratios. Each line printed is "name value unit":
//
//   seed_b1_{eager,replay}_host_us   the seed model (Linear 1000-5000-10000-10000,
//                                    ReLU) at batch 1: host time to issue one
//                                    forward (eager) or one replay, GPU idle
//   seed_b1_{eager,replay}_step_us   the same, time per step back to back
//   blocks8_bB_{eager,replay}_us     eight Linear(512) + GELU + LayerNorm blocks at
//                                    batch B in 1, 2, 4, 8: time per forward, back to back
//   mnist_b64_{eager,replay}_us      an MNIST-sized training step (784-256-10 MLP,
//                                    cross entropy, SGD with momentum), batch 64
//
// Median of rounds; every figure synchronizes before reading the clock.
// --profile: also prints the profiler's table (CUDA kernel times) of 20
// eager forwards of the eight blocks at batch 1, and of 20 replays.
#include <brisk/brisk.h>
#include <brisk/profiler.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <functional>
#include <vector>

#include "../timing.h"

using namespace brisk;
namespace F = brisk::nn::functional;

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Time per call of f, back to back: the median of `rounds` rounds of `n`
/// calls and one sync each, after a warm-up round.
double per_call_us(const std::function<void()>& f, int n, int rounds = 7) {
  auto one_round = [&] {
    for (int i = 0; i < n; ++i) f();
    cuda::synchronize();
  };
  return bench_timing::time_ms(one_round, rounds, 1, /*warmup=*/1) * 1e3 / n;
}

/// Host time of one call issued with the GPU idle (the call alone, no sync inside).
double host_us(const std::function<void()>& f, int n = 50) {
  for (int i = 0; i < 3; ++i) f();
  cuda::synchronize();
  std::vector<double> t;
  for (int i = 0; i < n; ++i) {
    const double t0 = now_us();
    f();
    t.push_back(now_us() - t0);
    cuda::synchronize();
  }
  return median(t);
}

/// Captures `body` (after warm-ups on the capture stream) and returns the graph.
std::unique_ptr<cuda::CUDAGraph> capture(const std::function<void()>& body, int warmup = 3) {
  const cuda::Stream side = cuda::capture_stream();
  side.wait(cuda::current_stream());
  {
    cuda::StreamGuard g(side);
    for (int i = 0; i < warmup; ++i) body();
  }
  cuda::current_stream().wait(side);
  cuda::synchronize();
  auto g = std::make_unique<cuda::CUDAGraph>();
  {
    cuda::graph scope(*g);
    body();
  }
  cuda::synchronize();
  return g;
}

void out(const char* name, double v, const char* unit) { std::printf("%s %.2f %s\n", name, v, unit); }

}  // namespace

int main(int argc, char** argv) {
  const bool profile = argc > 1 && !std::strcmp(argv[1], "--profile");
  if (!cuda::is_available()) {
    std::fprintf(stderr, "brisk_graph_bench: %s\n", cuda::unavailable_reason().c_str());
    return 1;
  }
  try {
    const Device dev(kCUDA, 0);
    std::printf("device %s\n", cuda::get_device_properties(0).name.c_str());
    manual_seed(0);
    {  // the seed model at batch 1
      NoGradGuard ng;
      nn::Sequential m(nn::Linear(1000, 5000), nn::ReLU(), nn::Linear(5000, 10000), nn::ReLU(),
                       nn::Linear(10000, 10000));
      m->to(dev);
      Tensor x = randn({1, 1000}).to(dev), y;
      auto fwd = [&] { y = m->forward(x); };
      out("seed_b1_eager_host_us", host_us(fwd), "us");
      out("seed_b1_eager_step_us", per_call_us(fwd, 50), "us");
      auto g = capture(fwd);
      auto replay = [&] { g->replay(); };
      out("seed_b1_replay_host_us", host_us(replay), "us");
      out("seed_b1_replay_step_us", per_call_us(replay, 50), "us");
    }
    {  // eight Linear(512) + GELU + LayerNorm blocks
      NoGradGuard ng;
      std::vector<nn::Linear> lin;
      std::vector<nn::LayerNorm> ln;
      for (int i = 0; i < 8; ++i) {
        lin.push_back(nn::Linear(512, 512));
        ln.push_back(nn::LayerNorm(nn::LayerNormOptions({512})));
        lin.back()->to(dev);
        ln.back()->to(dev);
      }
      for (int64_t b : {1, 2, 4, 8}) {
        Tensor x = randn({b, 512}).to(dev), y;
        auto fwd = [&] {
          Tensor h = x;
          for (int i = 0; i < 8; ++i) h = ln[i]->forward(F::gelu(lin[i]->forward(h)));
          y = h;
        };
        char name[64];
        std::snprintf(name, sizeof(name), "blocks8_b%lld_eager_us", static_cast<long long>(b));
        out(name, per_call_us(fwd, 100), "us");
        auto g = capture(fwd);
        std::snprintf(name, sizeof(name), "blocks8_b%lld_replay_us", static_cast<long long>(b));
        out(name, per_call_us([&] { g->replay(); }, 100), "us");
        if (profile && b == 1) {
          namespace prof = brisk::profiler;
          for (int graphed = 0; graphed < 2; ++graphed) {
            prof::profile p(prof::ProfileOptions().activities({prof::Activity::CPU, prof::Activity::CUDA}));
            for (int i = 0; i < 20; ++i) graphed ? g->replay() : fwd();
            cuda::synchronize();
            p.stop();
            std::cerr << (graphed ? "replays" : "eager") << " of blocks8_b1, 20 calls\n"
                      << p.key_averages().table("cuda_time_total", 25) << "\n";
          }
        }
      }
    }
    {  // an MNIST-sized training step
      nn::Sequential m(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 10));
      m->to(dev);
      optim::SGD opt(m->parameters(), optim::SGDOptions(0.01).momentum(0.9));
      Tensor x = randn({64, 784}).to(dev), t = randint(0, 10, {64}).to(dev), loss;
      auto step = [&] {
        opt.zero_grad(/*set_to_none=*/false);
        loss = F::cross_entropy(m->forward(x), t);
        loss.backward();
        opt.step();
      };
      out("mnist_b64_eager_us", per_call_us(step, 100), "us");
      auto g = capture(step);
      out("mnist_b64_replay_us", per_call_us([&] { g->replay(); }, 100), "us");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "brisk_graph_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
