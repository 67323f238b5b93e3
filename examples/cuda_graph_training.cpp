// A whole training step as one CUDA graph: forward, loss, backward and the
// optimizer's step replay with one launch per batch (the pattern of
// PyTorch's "whole network capture"), next to make_graphed_callables, which
// graphs the forward and backward of one module inside an ordinary loop.
//
//   cuda_graph_training [--steps N] [--batch B] [--threads T]
//
// On a GPU it trains one MLP eagerly and a copy of it through (a) a captured
// whole step and (b) make_graphed_callables, from the same weights on the
// same batches, checks that the losses agree step by step (exit 1 if not)
// and prints the time per step of each. Without a GPU it says so and trains
// the eager model on the CPU, printing its losses, and graphs the module
// with make_graphed_callables (no graphs on the CPU: the same copies and
// autograd node, eager runs in place of replays), checking it against eager.
//
// What a captured whole step needs (docs/design/cuda_graphs.md):
//  - static inputs: each batch is copied into the same device tensors;
//  - gradients stay allocated: zero_grad(/*set_to_none=*/false) inside the
//    step, so backward writes the same memory at every replay;
//  - warm-up steps before capture, on a side stream (cuBLAS handles, the
//    optimizer's state: SGD's momentum buffers are made at its first step);
//  - an optimizer whose step has no host number that changes per step: SGD
//    (with momentum) here; Adam's step count and bias corrections are host
//    numbers, so its step() raises during a capture. The learning rate is
//    frozen into the graph too (a scheduler would not reach it).
#include <brisk/brisk.h>
#include <brisk/graphed_callable.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace brisk;
namespace F = brisk::nn::functional;

namespace {

nn::Sequential make_model() {
  return nn::Sequential(nn::Linear(64, 256), nn::GELU(), nn::Linear(256, 256), nn::GELU(), nn::Linear(256, 10));
}

void copy_params(nn::Module& dst, nn::Module& src) {
  NoGradGuard ng;
  auto d = dst.parameters(), s = src.parameters();
  for (size_t i = 0; i < d.size(); ++i) d[i].copy_(s[i]);
}

struct Batch {
  Tensor x, y;
};

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

bool close(double a, double b) { return std::fabs(a - b) <= 1e-4 * std::max(1.0, std::fabs(b)); }

}  // namespace

int main(int argc, char** argv) {
  int steps = 20, batch = 128, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  set_num_threads(threads);
  const bool gpu = cuda::is_available();
  const Device dev = gpu ? Device(kCUDA, 0) : Device(kCPU);
  if (!gpu)
    std::printf("CUDA is not available (%s): no graphs; the CPU runs the same steps eagerly\n",
                cuda::unavailable_reason().c_str());
  manual_seed(0);
  std::vector<Batch> data;
  const int warmup = 3;
  for (int k = 0; k < steps + warmup; ++k)
    data.push_back({randn({batch, 64}).to(dev), randint(0, 10, {batch}).to(dev)});
  auto sgd = [](nn::Module& m) { return optim::SGD(m.parameters(), optim::SGDOptions(0.05).momentum(0.9)); };
  auto train_step = [](nn::Sequential& m, optim::SGD& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad(/*set_to_none=*/false);
    Tensor loss = F::cross_entropy(m->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };

  // the reference: eager steps
  nn::Sequential eager = make_model();
  eager->to(dev);
  nn::Sequential whole = make_model(), graphed_model = make_model();
  whole->to(dev);
  graphed_model->to(dev);
  copy_params(*whole, *eager);
  copy_params(*graphed_model, *eager);
  optim::SGD opt_e = sgd(*eager);
  std::vector<double> eager_losses;
  double t0 = now_ms();
  for (const Batch& b : data) eager_losses.push_back(train_step(eager, opt_e, b.x, b.y).item<double>());
  const double eager_ms = (now_ms() - t0) / static_cast<double>(data.size());
  int bad = 0;

  // (b) make_graphed_callables: the module's forward and backward as graphs
  {
    optim::SGD opt_g = sgd(*graphed_model);
    cuda::GraphedCallable g = cuda::make_graphed_callables(graphed_model, {data[0].x});
    t0 = now_ms();
    for (size_t k = 0; k < data.size(); ++k) {
      opt_g.zero_grad(/*set_to_none=*/false);
      Tensor loss = F::cross_entropy(g(data[k].x), data[k].y);
      loss.backward();
      opt_g.step();
      const double l = loss.item<double>();
      if (!close(l, eager_losses[k])) {
        std::printf("make_graphed_callables: step %zu loss %.6f, eager %.6f\n", k, l, eager_losses[k]);
        ++bad;
      }
    }
    std::printf("make_graphed_callables (%s): %.3f ms per step, losses as eager: %s\n",
                g.uses_graphs() ? "graphs" : "no graphs on the CPU", (now_ms() - t0) / data.size(),
                bad ? "NO" : "yes");
  }

  if (!gpu) {
    for (size_t k = 0; k < data.size(); k += 5) std::printf("step %2zu  loss %.4f\n", k, eager_losses[k]);
    std::printf("eager: %.3f ms per step (CPU)\n", eager_ms);
    return bad ? 1 : 0;
  }

  // (a) the whole step captured: static batch tensors, warm-up on the stream
  // the capture runs on (cuda::capture_stream: its cuBLAS workspace exists
  // before the capture)
  optim::SGD opt_w = sgd(*whole);
  Tensor sx = empty_like(data[0].x), sy = empty_like(data[0].y);
  std::vector<double> losses;
  const cuda::Stream side = cuda::capture_stream();
  side.wait(cuda::current_stream());
  {
    cuda::StreamGuard sg(side);
    for (int k = 0; k < warmup; ++k) {
      sx.copy_(data[k].x);
      sy.copy_(data[k].y);
      losses.push_back(train_step(whole, opt_w, sx, sy).item<double>());
    }
  }
  cuda::current_stream().wait(side);
  cuda::synchronize();
  cuda::CUDAGraph step_graph;
  Tensor static_loss;
  {
    cuda::graph capture(step_graph);
    static_loss = train_step(whole, opt_w, sx, sy);
  }
  t0 = now_ms();
  for (size_t k = warmup; k < data.size(); ++k) {
    sx.copy_(data[k].x);
    sy.copy_(data[k].y);
    step_graph.replay();
    losses.push_back(static_loss.item<double>());
  }
  const double graph_ms = (now_ms() - t0) / static_cast<double>(data.size() - warmup);
  int bad_whole = 0;
  for (size_t k = 0; k < losses.size(); ++k)
    if (!close(losses[k], eager_losses[k])) {
      std::printf("whole-step graph: step %zu loss %.6f, eager %.6f\n", k, losses[k], eager_losses[k]);
      ++bad_whole;
    }
  std::printf("whole step as one graph: %.3f ms per step, eager %.3f ms; losses as eager: %s\n", graph_ms, eager_ms,
              bad_whole ? "NO" : "yes");
  return bad || bad_whole ? 1 : 0;
}
