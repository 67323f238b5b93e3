// brisk_compile_bench: brisk::compile against eager brisk on the cases of
// issue 15 (bench/compile_bench.py runs it next to PyTorch eager and
// torch.compile and prints the ratios; docs/performance.md, "compile").
//
//   brisk_compile_bench [--threads N] [--quick]
//
// Prints one `key value` line per figure (milliseconds or microseconds as
// the key says), medians over rounds after warm-up calls.
#include <brisk/brisk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "timing.h"

using namespace brisk;

using bench_timing::out;
using bench_timing::now;
using bench_timing::time_ms;

namespace {



Tensor gelu_chain(const Tensor& x) { return x * 0.5 * (1.0 + erf(x / 1.41421)); }

// The transformer MLP block of the issue: Linear 384->1536, GELU, Linear
// 1536->384, residual, layer_norm; x (8 * 128, 384).
struct Block : nn::Module {
  nn::Linear fc1{nullptr}, fc2{nullptr};
  nn::LayerNorm norm{nullptr};
  Block() {
    fc1 = register_module("fc1", nn::Linear(384, 1536));
    fc2 = register_module("fc2", nn::Linear(1536, 384));
    norm = register_module("norm", nn::LayerNorm(std::vector<int64_t>{384}));
  }
  Tensor forward(const Tensor& x) { return norm(x + fc2(gelu(fc1(x)))); }
};

// Adam written with plain ops (the fused-optimizer lecture's starting
// point): the bias corrections come in as 0-dim tensors so that the step
// number is not a constant of the trace.
struct PlainAdam {
  double lr = 1e-3, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 1e-2;
  void step(const std::vector<Tensor>& p, const std::vector<Tensor>& g, const std::vector<Tensor>& m,
            const std::vector<Tensor>& v, const Tensor& step_size, const Tensor& bc2_sqrt) const {
    for (size_t i = 0; i < p.size(); ++i) {
      p[i].mul_(1 - lr * wd);
      m[i].mul_(b1).add_(g[i], 1 - b1);
      v[i].mul_(b2).addcmul_(g[i], g[i], 1 - b2);
      Tensor denom = (v[i].sqrt() / bc2_sqrt).add_(eps);
      p[i].sub_(m[i] / denom * step_size);
    }
  }
};

}  // namespace

// The compile cost of one small function (the gelu chain on 1,000 elements)
// in a cache directory of its own: `cold` builds the generated code's
// precompiled header and the kernel, `new` another kernel in the same
// directory, `disk` (a fresh process) finds that kernel on disk.
double first_call_ms(double scale) {
  Tensor x = randn({1000});
  auto f = compile([scale](const Tensor& t) { return t * scale * (1.0 + erf(t / 1.41421)); });
  const double a = now();
  f(x);
  return (now() - a) * 1e3;
}

int main(int argc, char** argv) {
  int threads = 1;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    if (!std::strcmp(argv[i], "--disk-hit")) {  // (children of the compile-cost case, in its cache directory)
      std::printf("compile_disk_hit_ms %.4f\n", first_call_ms(0.25));
      return 0;
    }
    if (!std::strcmp(argv[i], "--cold")) {
      std::printf("compile_cold_dir_ms %.4f\n", first_call_ms(0.5));
      std::printf("compile_new_kernel_ms %.4f\n", first_call_ms(0.25));
      return 0;
    }
  }
  {  // compile cost, in a fresh cache directory of its own (child processes)
    char dir[] = "/tmp/brisk-compile-bench.XXXXXX";
    if (mkdtemp(dir)) {
      for (const char* step : {"--cold", "--disk-hit"}) {
        const std::string cmd = std::string("BRISK_COMPILE_CACHE=") + dir + " " + argv[0] + " " + step;
        if (FILE* p = popen(cmd.c_str(), "r")) {
          char line[256];
          while (std::fgets(line, sizeof(line), p)) std::fputs(line, stdout);
          pclose(p);
        }
      }
      if (std::system((std::string("rm -rf ") + dir).c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir);
    }
  }
  set_num_threads(threads);
  manual_seed(0);
  const int rounds = quick ? 3 : 7;
  std::printf("threads %d\n", threads);

  {  // the gelu chain on 2^24 float32
    NoGradGuard ng;
    Tensor x = randn({1 << 24});
    auto f = compile(gelu_chain);
    const double t0 = now();
    f(x);
    out("gelu_trace_ms", (now() - t0) * 1e3);
    out("gelu_eager_ms", time_ms([&] { gelu_chain(x); }, rounds, 1));
    out("gelu_compiled_ms", time_ms([&] { f(x); }, rounds, 1));
    auto fa = compile(gelu_chain, CompileOptions().set_mode(CompileMode::MaxAutotune));
    fa(x);
    fa(x);  // (the first run of the graph times the variants)
    out("gelu_autotuned_ms", time_ms([&] { fa(x); }, rounds, 1));
    std::fprintf(stderr, "gelu autotune: %s\n", fa.stats().autotune.c_str());
    auto u = compile(gelu_chain, CompileOptions().set_fuse(false));
    u(x);
    out("gelu_unfused_replay_ms", time_ms([&] { u(x); }, rounds, 1));
    out("gelu_clone_ms", time_ms([&] { x.clone(); }, rounds, 1));  // the copy-bandwidth floor: read + write once
  }
  {  // the MLP block, forward under inference mode
    auto block = std::make_shared<Block>();
    Tensor x = randn({8 * 128, 384});
    NoGradGuard ng;
    auto cb = compile(block);
    cb(x);
    out("mlp_fwd_eager_ms", time_ms([&] { block->forward(x); }, rounds, quick ? 2 : 5));
    out("mlp_fwd_compiled_ms", time_ms([&] { cb(x); }, rounds, quick ? 2 : 5));
  }
  {  // the MLP block, forward and backward (parameter gradients; set to none between steps)
    auto block = std::make_shared<Block>();
    Tensor x = randn({8 * 128, 384}), gy = randn({8 * 128, 384});
    auto cb = compile(block);
    auto step = [&](auto& m) {
      for (auto& p : block->parameters()) p.mutable_grad() = Tensor();
      m(x).backward(gy);
    };
    auto eager = [&](const Tensor& t) { return block->forward(t); };
    step(cb);
    step(cb);
    out("mlp_fwdbwd_eager_ms", time_ms([&] { step(eager); }, rounds, quick ? 2 : 5));
    out("mlp_fwdbwd_compiled_ms", time_ms([&] { step(cb); }, rounds, quick ? 2 : 5));
  }
  {  // Adam with plain ops over 200 tensors of 10k floats
    const int n = 200;
    std::vector<Tensor> p, g, m, v;
    for (int i = 0; i < n; ++i) {
      p.push_back(randn({10000}));
      g.push_back(randn({10000}));
      m.push_back(zeros({10000}));
      v.push_back(zeros({10000}));
    }
    NoGradGuard ng;
    PlainAdam adam;
    Tensor step_size = scalar_tensor(1e-3 / (1 - 0.9)), bc2 = scalar_tensor(std::sqrt(1 - 0.999));
    auto f = compile([&adam](const std::vector<Tensor>& p, const std::vector<Tensor>& g, const std::vector<Tensor>& m,
                             const std::vector<Tensor>& v, const Tensor& s, const Tensor& b) {
      adam.step(p, g, m, v, s, b);
    });
    const double t0 = now();
    f(p, g, m, v, step_size, bc2);
    out("adam_trace_ms", (now() - t0) * 1e3);
    out("adam_plain_eager_ms", time_ms([&] { adam.step(p, g, m, v, step_size, bc2); }, rounds, 5));
    out("adam_plain_compiled_ms", time_ms([&] { f(p, g, m, v, step_size, bc2); }, rounds, 5));
    auto fa = compile(
        [&adam](const std::vector<Tensor>& p, const std::vector<Tensor>& g, const std::vector<Tensor>& m,
                const std::vector<Tensor>& v, const Tensor& s, const Tensor& b) { adam.step(p, g, m, v, s, b); },
        CompileOptions().set_mode(CompileMode::MaxAutotune));
    fa(p, g, m, v, step_size, bc2);
    fa(p, g, m, v, step_size, bc2);
    out("adam_plain_autotuned_ms", time_ms([&] { fa(p, g, m, v, step_size, bc2); }, rounds, 5));
    std::fprintf(stderr, "adam autotune: %s\n", fa.stats().autotune.substr(0, 200).c_str());
    std::vector<Tensor> params;
    for (int i = 0; i < n; ++i) {
      Tensor q = p[i].clone().requires_grad_();
      q.mutable_grad() = g[i].clone();
      params.push_back(q);
    }
    optim::AdamW fused(params, optim::AdamWOptions(1e-3).weight_decay(1e-2).impl(optim::Impl::Fused));
    out("adamw_fused_ms", time_ms([&] { fused.step(); }, rounds, 5));
  }
  {  // row fusion: attention scores softmax(s * scale + mask), 8 heads x 512 x 512,
     // and layer_norm(x + residual) over 8 x 128 tokens of 768
    NoGradGuard ng;
    Tensor s = randn({8, 512, 512}), mask = randn({512, 512});
    auto attn = [](const Tensor& s, const Tensor& m) { return softmax(s * 0.125 + m, -1); };
    auto fa = compile(attn);
    fa(s, mask);
    out("softmax_eager_ms", time_ms([&] { attn(s, mask); }, rounds, 3));
    out("softmax_compiled_ms", time_ms([&] { fa(s, mask); }, rounds, 3));
    Tensor x = randn({1024, 768}), r = randn({1024, 768}), w = randn({768}), bb = randn({768});
    auto ln = [](const Tensor& x, const Tensor& r, const Tensor& w, const Tensor& b) {
      return nn::functional::layer_norm(x + r, {768}, w, b);
    };
    auto fl = compile(ln);
    fl(x, r, w, bb);
    out("layernorm_eager_ms", time_ms([&] { ln(x, r, w, bb); }, rounds, 10));
    out("layernorm_compiled_ms", time_ms([&] { fl(x, r, w, bb); }, rounds, 10));
  }
  {  // host cost of a cache-hit call of a 10-op graph on a 3x3 tensor
    NoGradGuard ng;
    Tensor x = randn({3, 3});
    auto ten = [](const Tensor& a) { return ((((a + 1) * 2 - a).exp() / 3 + a).sigmoid() * a - 1).abs() + 0.5; };
    auto f = compile(ten);
    f(x);
    out("host10_eager_us", time_ms([&] { ten(x); }, rounds, 20000) * 1e3);
    out("host10_compiled_us", time_ms([&] { f(x); }, rounds, 20000) * 1e3);
  }
  return 0;
}
