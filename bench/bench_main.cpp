// brisk_bench: brisk and libtorch timed side by side in one process, on the
// same inputs and thread counts, against the targets of the performance issue.
//
//   brisk_bench [--quick] [--wall] [--filter TEXT] [--side brisk|libtorch] [--markdown docs/performance.md]
//
// --quick      about 20x fewer iterations (a smoke test; figures are noisier)
// --wall       wall-clock time for every case (default: single-threaded cases
//              use the thread's CPU time, which time spent descheduled by a busy
//              neighbour does not inflate)
// --filter     runs only the cases whose section or name contains TEXT
// --side       runs one library only (for perf / callgrind)
// --markdown   rewrites the generated part of that file (between the BEGIN/END
//              markers; text outside them is kept) atomically: temp file + rename
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <immintrin.h>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench.h"
#include "brisk/version.h"

#ifndef BRISK_BENCH_BUILD
#define BRISK_BENCH_BUILD "unknown build"
#endif

extern "C" char* openblas_get_corename(void);

namespace bench {
namespace {

// ---- the machine --------------------------------------------------------------

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  const auto e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The value on the first "key: value" line of `text` whose key is `key`.
std::string field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon != std::string::npos && trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return "";
}

std::string read_command(const char* cmd) {
  std::string out;
  if (FILE* p = popen(cmd, "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Machine {
  std::string model;         // lscpu "Model name" (family/model appended)
  int cpus = 0;              // logical CPUs
  std::string cores;         // "2 cores (1 socket x 2), 1 thread per core"
  double mhz = 0;            // /proc/cpuinfo "cpu MHz" (0 when absent)
  std::string coretype_env;  // OPENBLAS_CORETYPE
  std::string openblas_core; // what OpenBLAS chose
  std::string cpu_flags;     // AVX-512 / AVX2 summary
  std::string loadavg;       // at start: the machine may be shared
  double fma_gflops = 0;     // measured float32 FMA throughput of one core (0: not measured)
};

// Note [Measured FMA peak]
// The float32 FMA throughput of one core, measured: 12 independent chains of
// vector FMAs kept in registers (enough to cover the FMA latency on two
// pipes), timed on the thread's CPU clock. It is the real ceiling for GEMM:
// nominal formulas miss how a core executes wide vectors (Zen 4 runs each
// 512-bit FMA as two 256-bit halves, so AVX-512 and AVX2 reach the same
// FLOP rate there).
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}
// One body for both widths (a template or lambda would not inherit the
// target attribute of the function it is used in).
#define BRISK_BENCH_FMA_CHAINS(V, SET1, FMA, LANES)                                                    \
  V b = SET1(1.0000001f), c = SET1(1e-9f);                                                            \
  /* distinct starting values: identical chains could be merged by the compiler */                 \
  V a0 = SET1(0.f), a1 = SET1(1.f), a2 = SET1(2.f), a3 = SET1(3.f), a4 = SET1(4.f), a5 = SET1(5.f);  \
  V a6 = SET1(6.f), a7 = SET1(7.f), a8 = SET1(8.f), a9 = SET1(9.f), a10 = SET1(10.f), a11 = SET1(11.f); \
  const long iters = 50'000'000;                                                                      \
  const double t0 = thread_seconds();                                                                 \
  for (long i = 0; i < iters; ++i) {                                                                  \
    a0 = FMA(a0, b, c); a1 = FMA(a1, b, c); a2 = FMA(a2, b, c); a3 = FMA(a3, b, c);                   \
    a4 = FMA(a4, b, c); a5 = FMA(a5, b, c); a6 = FMA(a6, b, c); a7 = FMA(a7, b, c);                   \
    a8 = FMA(a8, b, c); a9 = FMA(a9, b, c); a10 = FMA(a10, b, c); a11 = FMA(a11, b, c);               \
  }                                                                                                   \
  const double sec = thread_seconds() - t0;                                                           \
  V all = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;                               \
  alignas(64) float out[LANES];                                                                       \
  std::memcpy(out, &all, sizeof(out));                                                                \
  volatile float sink = out[0];                                                                       \
  (void)sink;                                                                                         \
  return static_cast<double>(iters) * 12 * LANES * 2 / sec * 1e-9;

[[gnu::target("avx512f")]] double fma_peak_avx512() { BRISK_BENCH_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16) }
[[gnu::target("avx2,fma")]] double fma_peak_avx2() { BRISK_BENCH_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8) }
#undef BRISK_BENCH_FMA_CHAINS

Machine probe_machine() {
  Machine m;
  const std::string lscpu = read_command("LC_ALL=C lscpu 2>/dev/null");
  const std::string cpuinfo = read_file("/proc/cpuinfo");
  m.model = field(lscpu, "Model name");
  if (m.model.empty()) m.model = field(cpuinfo, "model name");
  // A VM may show a generic name ("AMD EPYC"): the family and model say which core it is.
  const std::string family = field(lscpu, "CPU family"), model = field(lscpu, "Model");
  if (!family.empty() && !model.empty()) m.model += " (family " + family + ", model " + model + ")";
  m.cpus = static_cast<int>(std::thread::hardware_concurrency());
  const std::string per_socket = field(lscpu, "Core(s) per socket"), sockets = field(lscpu, "Socket(s)"),
                    tpc = field(lscpu, "Thread(s) per core");
  if (!per_socket.empty() && !sockets.empty())
    m.cores = std::to_string(std::atoi(per_socket.c_str()) * std::atoi(sockets.c_str())) + " cores (" + sockets +
              " socket x " + per_socket + "), " + (tpc.empty() ? "?" : tpc) + " thread(s) per core";
  else
    m.cores = std::to_string(m.cpus) + " logical CPUs";
  const std::string mhz = field(cpuinfo, "cpu MHz");
  m.mhz = mhz.empty() ? 0 : std::atof(mhz.c_str());
  const char* ct = std::getenv("OPENBLAS_CORETYPE");
  m.coretype_env = ct ? ct : "unset";
  const char* core = openblas_get_corename();
  m.openblas_core = core ? core : "?";
  const std::string flags = " " + field(cpuinfo, "flags") + " ";
  m.cpu_flags = flags.find(" avx512f ") != std::string::npos ? "AVX-512F"
                : flags.find(" avx2 ") != std::string::npos ? "AVX2"
                                                             : "no AVX2";
  {
    std::istringstream in(read_file("/proc/loadavg"));
    std::string a, b, c;
    in >> a >> b >> c;
    m.loadavg = a + " " + b + " " + c + " (1, 5, 15 min)";
  }
  // Best of three runs of each width (a core that splits 512-bit vectors
  // reaches the same rate with AVX2).
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    for (int r = 0; r < 3; ++r) {
      m.fma_gflops = std::max(m.fma_gflops, fma_peak_avx2());
      if (__builtin_cpu_supports("avx512f")) m.fma_gflops = std::max(m.fma_gflops, fma_peak_avx512());
    }
  return m;
}

// Peak float32 GFLOP/s of one core: the measured FMA throughput (Note
// [Measured FMA peak]); without AVX2+FMA, the nominal 2 FMA units x 16 lanes
// x 2 flops x clock, or the 220 GFLOP/s without a clock reading.
double nominal_gflops_per_core(const Machine& m) { return m.mhz > 0 ? 2 * 16 * 2 * m.mhz * 1e-3 : 220.0; }
double peak_gflops_per_core(const Machine& m) { return m.fma_gflops > 0 ? m.fma_gflops : nominal_gflops_per_core(m); }

// ---- the cases ----------------------------------------------------------------

enum class Section { Host, Bandwidth, Matmul, MatmulBf16, Nonzero, Copy, Unary, Autograd, Training, RowOps, Attention, Profiler };

struct Case {
  Section section;
  std::string name;
  Spec spec;
  double earlier_torch_ns = 0;  ///< libtorch's figure quoted in the issue (host cases)
};

/// One side's figure for one case: seconds per call, or why it did not run.
struct Timing {
  double seconds = 0;
  bool ok = false;
  std::string skipped;  ///< reason when !ok
};

struct Result {
  Case c;
  Timing brisk, torch;
  /// Bandwidth cases: the plain loop timed in the same interleaved
  /// repetitions, and the median over repetitions of (plain time / brisk time).
  Timing reference;
  double brisk_vs_reference = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool has_reference(Kind k) {
  return k == Kind::BwAdd || k == Kind::BwAddOut || k == Kind::BwAdd_ || k == Kind::BwPlainLoop512 ||
         k == Kind::AdamFused || k == Kind::AdamForeach || k == Kind::AdamForLoop;
}

// Times one case: warm-up, then `reps` rounds in which every runnable side
// makes `iters` calls (the order rotates from round to round).
Result measure(const Case& c, const std::string& side) {
  const Budget& b = c.spec.budget;
  struct Slot {
    Runner runner;
    Timing* out;
    std::vector<double> t;
  };
  Result r{c, {}, {}, {}, 0};
  std::vector<Slot> slots;
  auto add = [&](Runner rn, Timing* out) {
    if (rn.run)
      slots.push_back({std::move(rn), out, {}});
    else
      out->skipped = rn.skipped;
  };
  auto guarded = [](auto&& f) -> Runner {
    try {
      return f();
    } catch (const std::exception& e) {
      return skip(std::string("threw: ") + e.what());
    }
  };
  if (side == "libtorch")
    r.brisk.skipped = "not run (--side libtorch)";
  else
    add(guarded([&] { return brisk_runner(c.spec); }), &r.brisk);
  if (side == "brisk")
    r.torch.skipped = "not run (--side brisk)";
  else
    add(guarded([&] { return torch_runner(c.spec); }), &r.torch);
  if (has_reference(c.spec.kind)) add(guarded([&] { return reference_runner(c.spec); }), &r.reference);

  // Multi-threaded rounds first let the other library's idle workers stop
  // spinning (OpenBLAS's pthreads spin for about 0.1 s after a call, OpenMP's
  // for a while too): on a small machine they would steal the cores. The
  // pause puts this side's own workers to sleep as well, so one untimed call
  // wakes them before the timed ones (the first call after it ran at 25-75%
  // of the steady speed for both libraries: a harness effect, not a cost a
  // loop of calls pays). Cases of one or two long calls per round (training
  // steps, epochs) skip it: there it is noise, and it would double their time.
  const bool settle = c.spec.threads > 1;
  auto run = [settle](Slot& s, int64_t calls, bool cpu) -> bool {
    try {
      if (settle) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        if (calls >= 3) s.runner.run(1, cpu);
      }
      const double sec = s.runner.run(calls, cpu);
      if (calls > 0) s.t.push_back(sec / static_cast<double>(calls));
      return true;
    } catch (const std::exception& e) {
      s.out->skipped = std::string("threw: ") + e.what();
      s.runner.run = nullptr;
      return false;
    }
  };
  for (Slot& s : slots) {
    run(s, b.warmup, b.thread_cpu_time);
    s.t.clear();
  }
  for (int rep = 0; rep < b.reps; ++rep)
    for (size_t i = 0; i < slots.size(); ++i) {
      Slot& s = slots[(i + rep) % slots.size()];
      if (s.runner.run) run(s, b.iters, b.thread_cpu_time);
    }
  for (Slot& s : slots)
    if (s.runner.run && !s.t.empty()) {
      s.out->seconds = median(s.t);
      s.out->ok = true;
    }
  Slot* bs = nullptr;
  Slot* rs = nullptr;
  for (Slot& s : slots) {
    if (s.out == &r.brisk) bs = &s;
    if (s.out == &r.reference) rs = &s;
  }
  if (bs && rs && r.brisk.ok && r.reference.ok && bs->t.size() == rs->t.size()) {
    std::vector<double> ratio;
    for (size_t i = 0; i < bs->t.size(); ++i) ratio.push_back(rs->t[i] / bs->t[i]);
    r.brisk_vs_reference = median(ratio);
  }
  return r;
}

std::vector<Case> make_cases(bool quick, bool wall) {
  const int64_t q = quick ? 20 : 1;
  const int qr = quick ? 3 : 0;  // fewer repetitions when quick
  auto budget = [&](int64_t iters, int reps, int64_t warmup) {
    Budget b;
    b.iters = std::max<int64_t>(1, iters / q);
    b.reps = qr ? std::min(reps, qr) : reps;
    b.warmup = std::max<int64_t>(2, warmup / q);  // >= 2: an allocating loop alternates two blocks
    return b;
  };
  std::vector<Case> cs;
  // Single-threaded cases use the thread's CPU clock unless --wall.
  auto single = [&](Budget b) {
    b.thread_cpu_time = !wall;
    return b;
  };
  const Budget host = single(budget(200000, 7, 20000));
  auto host_case = [&](const char* name, Kind k, double earlier) {
    cs.push_back({Section::Host, name, {k, 9, 1, host}, earlier});
  };
  host_case("y = x + x", Kind::HostAdd, 590);
  host_case("x.add_(1)", Kind::HostAddScalar_, 1730);
  host_case("x.add_(x)", Kind::HostAddTensor_, 306);
  host_case("x.t()", Kind::HostT, 386);
  host_case("x[0]", Kind::HostSelect, 303);
  host_case("empty({3,3})", Kind::HostEmpty, 249);
  host_case("matmul(x, x)", Kind::HostMatmul, 719);  // last of its group: it may not exist yet

  const int64_t bw_n = int64_t(1) << 24;
  const Budget bw = single(budget(10, 9, 3));
  cs.push_back({Section::Bandwidth, "plain loop z[i] = x[i] + y[i]", {Kind::BwPlainLoop, bw_n, 1, bw}});
  cs.push_back({Section::Bandwidth, "plain loop, AVX-512 build", {Kind::BwPlainLoop512, bw_n, 1, bw}});
  cs.push_back({Section::Bandwidth, "z = x + y (allocating)", {Kind::BwAdd, bw_n, 1, bw}});
  cs.push_back({Section::Bandwidth, "add_out(z, x, y)", {Kind::BwAddOut, bw_n, 1, bw}});
  cs.push_back({Section::Bandwidth, "x.add_(y)", {Kind::BwAdd_, bw_n, 1, bw}});

  for (int64_t n : {1024, 2048})
    for (int t : {1, 2}) {
      // 1024: about 0.1 s (2 threads) to 0.2 s per repetition; a shared
      // 2-core VM loses a core for tens of milliseconds now and then, which
      // the median over 7 repetitions leaves out.
      Budget b = n <= 1024 ? budget(20, 7, 4) : budget(3, 5, 2);
      if (t == 1) b = single(b);
      cs.push_back({Section::Matmul, "matmul " + std::to_string(n) + "x" + std::to_string(n) + ", " +
                                         std::to_string(t) + (t == 1 ? " thread" : " threads"),
                    {Kind::Matmul, n, t, b}});
    }
  // bfloat16 matmul (Note [bfloat16 GEMM on oneDNN]): no target in the issue.
  for (int t : {1, 2}) {
    Budget b = budget(20, 7, 4);
    if (t == 1) b = single(b);
    cs.push_back({Section::MatmulBf16, std::string("bfloat16 matmul 1024x1024, ") + (t == 1 ? "1 thread" : "2 threads"),
                  {Kind::MatmulBf16, 1024, t, b}});
  }
  cs.push_back({Section::Nonzero, "nonzero, 1e6 float32, ~50% nonzero", {Kind::Nonzero, 1000000, 1,
                                                                         single(budget(20, 5, 3))}});
  // Transposing copies (Note [Tiled transposed copy]): no target in the
  // issue, measured against libtorch.
  for (int t : {1, 2}) {
    Budget b = budget(20, 7, 4);
    if (t == 1) b = single(b);
    cs.push_back({Section::Copy, std::string("z.copy_(x.t()), 2048x2048, ") + (t == 1 ? "1 thread" : "2 threads"),
                  {Kind::Transpose, 2048, t, b}});
  }
  cs.push_back({Section::Copy, "h.copy_(x), 2^24 float32 -> float16, 1 thread",
                {Kind::ToHalf, int64_t(1) << 24, 1, single(budget(10, 7, 3))}});

  // Vectorized unary math (issue 13): every op on 2^22 float32 at 1 and 2
  // threads, after the copy that sets the bandwidth they are judged against.
  for (int t : {1, 2}) {
    Budget b = budget(10, 5, 2);
    if (t == 1) b = single(b);
    const std::string th = t == 1 ? ", 1 thread" : ", 2 threads";
    Spec copy{Kind::UnaryCopy, int64_t(1) << 22, t, b};
    cs.push_back({Section::Unary, "z.copy_(x)" + th, copy});
    for (int op = 0; op < kNumUnaryOps; ++op) {
      Spec sp{Kind::Unary, int64_t(1) << 22, t, b};
      sp.op = op;
      cs.push_back({Section::Unary, std::string(kUnaryOps[op].name) + th, sp});
    }
  }

  // Autograd: the host cost of recording (3x3, the graph built and dropped
  // every call), then one training step of an MLP (a few seconds per side).
  const Budget ag_host = single(budget(20000, 7, 2000));
  cs.push_back({Section::Autograd, "y = x * w + b (w requires grad)", {Kind::AutogradHost, 9, 1, ag_host}});
  cs.push_back({Section::Autograd, "y = x * w + b; y.backward(g)", {Kind::AutogradHostBackward, 9, 1, ag_host}});
  cs.push_back({Section::Autograd, "y = lin(x) (Linear(3, 3) holder)", {Kind::HolderCall, 9, 1, ag_host}});
  cs.push_back({Section::Autograd, "y = lin->forward(x)", {Kind::HolderForward, 9, 1, ag_host}});
  Budget step;  // 1 call per repetition: 5 repetitions after 2 warm-up steps (quick: 2 after 1)
  step.iters = 1;
  step.reps = quick ? 2 : 5;
  step.warmup = quick ? 1 : 2;
  cs.push_back({Section::Autograd, "MLP training step (1000-5000-10000-10, batch 64)",
                {Kind::AutogradMlpStep, 0, 1, single(step)}});

  // Training: an Adam step over two tensor lists (1 thread), then one epoch
  // of the demo's models on 2 threads (seconds per side and repetition).
  for (auto [count, n] : {std::pair<int64_t, int64_t>{200, 10000}, {20, 1000000}}) {
    const Budget b = single(n <= 10000 ? budget(50, 7, 5) : budget(5, 7, 2));
    const std::string list = std::to_string(count) + " x " + (n == 10000 ? "10k" : "1M") + " floats";
    cs.push_back({Section::Training, "Adam step, " + list + ", fused", {Kind::AdamFused, n, 1, b, count}});
    cs.push_back({Section::Training, "Adam step, " + list + ", foreach", {Kind::AdamForeach, n, 1, b, count}});
    cs.push_back({Section::Training, "Adam step, " + list + ", for-loop", {Kind::AdamForLoop, n, 1, b, count}});
  }
  Budget epoch;  // 1 epoch per repetition
  epoch.iters = 1;
  epoch.reps = quick ? 1 : 3;
  epoch.warmup = 1;
  cs.push_back({Section::Training, "MLP epoch (Fashion-MNIST, batch 128, AdamW), 2 threads",
                {Kind::EpochMlp, 0, 2, epoch}});
  cs.push_back({Section::Training, "CNN epoch (Fashion-MNIST, batch 128, AdamW), 2 threads",
                {Kind::EpochCnn, 0, 2, epoch}});

  // Row ops (issue 13): 2048 rows of 4096 float32, forward and forward + backward, 1 and 2 threads.
  for (int t : {1, 2}) {
    const struct {
      const char* name;
      Kind kind;
    } rows[] = {{"softmax", Kind::RowSoftmax},          {"softmax fwd+bwd", Kind::RowSoftmaxBwd},
                {"log_softmax", Kind::RowLogSoftmax},   {"log_softmax fwd+bwd", Kind::RowLogSoftmaxBwd},
                {"layer_norm", Kind::RowLayerNorm},     {"layer_norm fwd+bwd", Kind::RowLayerNormBwd},
                {"rms_norm", Kind::RowRmsNorm},         {"rms_norm fwd+bwd", Kind::RowRmsNormBwd}};
    for (const auto& r : rows) {
      Budget b = budget(10, 7, 3);
      if (t == 1) b = single(b);
      cs.push_back({Section::RowOps, std::string(r.name) + ", " + (t == 1 ? "1 thread" : "2 threads"),
                    {r.kind, 4096, t, b, 2048}});
    }
  }
  // Activations forward + backward over a transformer MLP's hidden activation (1024 x 1536): the
  // gradient in one pass (activation_backward) against torch's *_backward kernels.
  for (int t : {1, 2})
    for (int op = 0; op < int(std::size(kActivations)); ++op)
      for (int64_t bf16 : {0, 1}) {
        if (bf16 && op != 0 && op != 2) continue;  // bfloat16: gelu and silu
        Budget b = budget(10, 7, 3);
        if (t == 1) b = single(b);
        Spec sp{Kind::ActivationBwd, 1536, t, b, bf16};
        sp.op = op;
        cs.push_back({Section::RowOps,
                      std::string(kActivations[op]) + " fwd+bwd, 1024x1536 " + (bf16 ? "bfloat16" : "float32") + ", " +
                          (t == 1 ? "1 thread" : "2 threads"),
                      sp});
      }
  // Attention (issue 13): scaled_dot_product_attention, float32, 1 and 2 threads.
  for (int64_t shape : {0, 1})
    for (bool backward : {false, true})
      for (int t : {1, 2}) {
        const SdpaShape d = sdpa_shape(shape);
        Budget b = shape == 0 ? budget(backward ? 5 : 10, 7, 2) : budget(1, 5, 1);
        if (t == 1) b = single(b);
        cs.push_back({Section::Attention,
                      std::string("sdpa ") + std::to_string(d.B) + "x" + std::to_string(d.H) + "x" +
                          std::to_string(d.L) + "x" + std::to_string(d.E) + (backward ? ", fwd+bwd, " : ", forward, ") +
                          std::to_string(t) + (t == 1 ? " thread" : " threads"),
                      {backward ? Kind::SdpaForwardBackward : Kind::SdpaForward, shape, t, b}});
      }
  for (bool backward : {false, true})
    for (int t : {1, 2}) {
      Budget b = budget(1, 5, 1);
      if (t == 1) b = single(b);
      cs.push_back({Section::Attention,
                    std::string("encoder layer 384/12/1536 gelu, 128x8, ") + (backward ? "fwd+bwd, " : "forward, ") +
                        std::to_string(t) + (t == 1 ? " thread" : " threads"),
                    {backward ? Kind::EncoderForwardBackward : Kind::EncoderForward, 0, t, b}});
    }
  // Recurrent: nn::LSTM 64 -> 128, 2 layers, seq 50, batch 32, forward + backward.
  for (int t : {1, 2}) {
    Budget b = budget(1, 7, 2);
    if (t == 1) b = single(b);
    cs.push_back({Section::Attention,
                  std::string("lstm 64->128 x2 layers, 50x32, fwd+bwd, ") + std::to_string(t) +
                      (t == 1 ? " thread" : " threads"),
                  {Kind::LstmForwardBackward, 0, t, b}});
  }

  // The profiler's cost per op: the host-cost case y = x + x without a
  // profile, then inside one (brisk only).
  cs.push_back({Section::Profiler, "y = x + x, profiler off", {Kind::ProfilerOff, 9, 1, host}});
  cs.push_back({Section::Profiler, "y = x + x, profile active", {Kind::ProfilerOn, 9, 1, host}});
  cs.push_back({Section::Profiler, "y = x + x, profile active, record_shapes", {Kind::ProfilerOnShapes, 9, 1, host}});
  cs.push_back({Section::Profiler, "y = x + x, profile active, record_shapes + profile_memory",
                {Kind::ProfilerOnMemory, 9, 1, host}});
  return cs;
}

const char* section_title(Section s) {
  switch (s) {
    case Section::Host: return "Host cost per op (3x3 float32, 1 thread)";
    case Section::Bandwidth: return "Bandwidth (2^24 float32 per array, 1 thread)";
    case Section::Matmul: return "float32 matmul";
    case Section::MatmulBf16: return "bfloat16 matmul";
    case Section::Nonzero: return "nonzero (1e6 float32, 1 thread)";
    case Section::Copy: return "Copies: transposing, converting";
    case Section::Unary: return "Vectorized unary math (2^22 float32, y = op(x))";
    case Section::Autograd: return "Autograd (float32, 1 thread)";
    case Section::Training: return "Training: optimizer step and epoch (float32)";
    case Section::RowOps: return "Row ops (2048 rows of 4096 float32) and activations (1024 x 1536)";
    case Section::Attention: return "Attention: scaled_dot_product_attention (float32, (B, H, L, E), no mask) and an encoder layer";
    case Section::Profiler: return "Profiler cost per op (y = x + x, 3x3 float32, 1 thread)";
  }
  return "";
}
const char* section_key(Section s) {
  switch (s) {
    case Section::Host: return "host";
    case Section::Bandwidth: return "bandwidth";
    case Section::Matmul: return "matmul";
    case Section::MatmulBf16: return "bf16";
    case Section::Nonzero: return "nonzero";
    case Section::Copy: return "copy";
    case Section::Unary: return "unary";
    case Section::Autograd: return "autograd";
    case Section::Training: return "training";
    case Section::RowOps: return "rowops";
    case Section::Attention: return "attention";
    case Section::Profiler: return "profiler";
  }
  return "";
}

// ---- formatting -----------------------------------------------------------------

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

struct Table {
  std::string title;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
};

// Bytes moved per element: 3 arrays of 4 bytes (add_ reads x and y, writes x).
double bytes_per_call(const Spec& s) { return 3.0 * 4.0 * static_cast<double>(s.n); }
double gbps(const Spec& s, const Timing& t) { return bytes_per_call(s) / t.seconds * 1e-9; }
double gflops(const Spec& s, const Timing& t) {
  const double n = static_cast<double>(s.n);
  return 2 * n * n * n / t.seconds * 1e-9;
}

std::string skip_text(const Timing&) { return "skipped"; }

std::vector<Table> make_tables(const std::vector<Result>& rs, const Machine& m) {
  std::vector<Table> out;
  auto find_section = [&](Section s) {
    std::vector<const Result*> v;
    for (const Result& r : rs)
      if (r.c.section == s) v.push_back(&r);
    return v;
  };
  auto add_skips = [](Table& t, const Result& r) {
    if (!r.brisk.ok) t.notes.push_back(r.c.name + ", brisk: " + r.brisk.skipped);
    if (!r.torch.ok) t.notes.push_back(r.c.name + ", libtorch: " + r.torch.skipped);
  };

  if (auto v = find_section(Section::Host); !v.empty()) {
    Table t{section_title(Section::Host),
            {"case", "brisk ns", "libtorch ns", "speedup", "target", "met", "libtorch ns (issue)"}, {}, {}};
    for (const Result* r : v) {
      const bool both = r->brisk.ok && r->torch.ok;
      const double sp = both ? r->torch.seconds / r->brisk.seconds : 0;
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.1f", r->brisk.seconds * 1e9) : skip_text(r->brisk),
                        r->torch.ok ? fmt("%.1f", r->torch.seconds * 1e9) : skip_text(r->torch),
                        both ? fmt("%.1fx", sp) : "-", ">= 5x", both ? (sp >= 5 ? "yes" : "NO") : "-",
                        fmt("%.0f", r->c.earlier_torch_ns)});
      add_skips(t, *r);
    }
    t.notes.push_back("speedup = libtorch time / brisk time; mean of " + std::to_string(v[0]->c.spec.budget.iters) +
                      " calls, median of " + std::to_string(v[0]->c.spec.budget.reps) + " repetitions.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::Bandwidth); !v.empty()) {
    Table t{section_title(Section::Bandwidth),
            {"case", "brisk GB/s", "libtorch GB/s", "brisk / plain loop", "target", "met", "brisk ms",
             "libtorch ms"}, {}, {}};
    for (const Result* r : v) {
      const bool is_plain = r->c.spec.kind == Kind::BwPlainLoop, is_info = r->c.spec.kind == Kind::BwPlainLoop512;
      const bool brisk_only = is_plain || is_info;
      const double g = r->brisk.ok ? gbps(r->c.spec, r->brisk) : 0;
      const double rel = r->brisk_vs_reference;  // plain-loop time / brisk time, paired by repetition
      const bool cmp = rel > 0;
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.1f", g) : skip_text(r->brisk),
                        brisk_only ? "-" : r->torch.ok ? fmt("%.1f", gbps(r->c.spec, r->torch)) : skip_text(r->torch),
                        cmp ? fmt("%.0f%%", 100 * rel) : "-",
                        is_plain ? "(reference)" : is_info ? "(information)" : ">= 90%",
                        cmp && !is_info ? (rel >= 0.9 ? "yes" : "NO") : "-",
                        r->brisk.ok ? fmt("%.2f", r->brisk.seconds * 1e3) : "-",
                        !brisk_only && r->torch.ok ? fmt("%.2f", r->torch.seconds * 1e3) : "-"});
      if (!brisk_only)
        add_skips(t, *r);
      else if (!r->brisk.ok)
        t.notes.push_back(r->c.name + ": " + r->brisk.skipped);
    }
    t.notes.push_back("GB/s counts 3 arrays x 4 bytes per element (add_: read x, read y, write x).");
    t.notes.push_back("brisk / plain loop: the plain loop is timed again inside each case, in the same interleaved "
                      "repetitions as brisk; the column is the median of the per-repetition ratios of their times.");
    t.notes.push_back("The reference is the plain loop `z[i] = x[i] + y[i]` compiled with the bench's flags (-O3, no "
                      "-march: 128-bit SSE); the AVX-512 build of the same loop (512-bit vectors, as brisk's "
                      "avx512 kernels) is shown for information.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::Matmul); !v.empty()) {
    const double per_core = peak_gflops_per_core(m);
    Table t{section_title(Section::Matmul),
            {"case", "brisk GFLOP/s", "libtorch GFLOP/s", "brisk / libtorch", "brisk % of peak",
             "libtorch % of peak", "peak GFLOP/s"}, {}, {}};
    for (const Result* r : v) {
      const double peak = per_core * r->c.spec.threads;
      const double b = r->brisk.ok ? gflops(r->c.spec, r->brisk) : 0, l = r->torch.ok ? gflops(r->c.spec, r->torch) : 0;
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.1f", b) : skip_text(r->brisk),
                        r->torch.ok ? fmt("%.1f", l) : skip_text(r->torch),
                        r->brisk.ok && r->torch.ok ? fmt("%.2f", b / l) : "-",
                        r->brisk.ok ? fmt("%.0f%%", 100 * b / peak) : "-",
                        r->torch.ok ? fmt("%.0f%%", 100 * l / peak) : "-", fmt("%.0f", peak)});
      add_skips(t, *r);
    }
    if (m.fma_gflops > 0)
      t.notes.push_back("peak = threads x the measured float32 FMA throughput of one core, " +
                        fmt("%.1f", per_core) +
                        " GFLOP/s (12 independent register FMA chains on the thread's CPU clock; the nominal 2 "
                        "FMA units x 16 lanes x 2 flops x " + fmt("%.0f", m.mhz) + " MHz would be " +
                        fmt("%.0f", nominal_gflops_per_core(m)) + ", which this core does not reach). Target: "
                        "at least 90% of peak.");
    else if (m.mhz > 0)
      t.notes.push_back("peak = threads x 2 FMA units x 16 lanes x 2 flops x " + fmt("%.0f", m.mhz) +
                        " MHz (\"cpu MHz\" in /proc/cpuinfo) = " + fmt("%.1f", per_core) + " GFLOP/s per core.");
    else
      t.notes.push_back("/proc/cpuinfo has no \"cpu MHz\": peak assumes the issue's 220 GFLOP/s per core.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::MatmulBf16); !v.empty()) {
    Table t{section_title(Section::MatmulBf16),
            {"case", "brisk GFLOP/s", "libtorch GFLOP/s", "brisk / libtorch"}, {}, {}};
    for (const Result* r : v) {
      const double flops = 2.0 * double(r->c.spec.n) * double(r->c.spec.n) * double(r->c.spec.n);
      const bool both = r->brisk.ok && r->torch.ok;
      auto g = [&](const Timing& tm) { return tm.ok ? fmt("%.1f", flops / tm.seconds * 1e-9) : skip_text(tm); };
      t.rows.push_back(
          {r->c.name, g(r->brisk), g(r->torch), both ? fmt("%.2f", r->torch.seconds / r->brisk.seconds) : "-"});
      add_skips(t, *r);
    }
    t.notes.push_back("Both multiply bf16 inputs and return bf16; brisk runs oneDNN's bf16 matmul where the CPU has "
                      "AVX512_BF16 (2 bf16 products per float32 lane), float32 sgemm on converted inputs otherwise. "
                      "No target in the issue.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::Nonzero); !v.empty()) {
    Table t{section_title(Section::Nonzero), {"case", "brisk ms", "libtorch ms", "speedup", "target", "met"}, {}, {}};
    for (const Result* r : v) {
      const bool both = r->brisk.ok && r->torch.ok;
      const double sp = both ? r->torch.seconds / r->brisk.seconds : 0;
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.3f", r->brisk.seconds * 1e3) : skip_text(r->brisk),
                        r->torch.ok ? fmt("%.3f", r->torch.seconds * 1e3) : skip_text(r->torch),
                        both ? fmt("%.1fx", sp) : "-", ">= 3x", both ? (sp >= 3 ? "yes" : "NO") : "-"});
      add_skips(t, *r);
    }
    out.push_back(t);
  }

  if (auto v = find_section(Section::Attention); !v.empty()) {
    Table t{section_title(Section::Attention),
            {"case", "brisk ms", "libtorch ms", "brisk / libtorch time", "target", "met"}, {}, {}};
    for (const Result* r : v) {
      const bool both = r->brisk.ok && r->torch.ok;
      const double ratio = both ? r->brisk.seconds / r->torch.seconds : 0;
      // issue 13: the encoder layer at most 0.9x libtorch's TransformerEncoderLayer, attention 1.0x
      const bool encoder = r->c.spec.kind == Kind::EncoderForward || r->c.spec.kind == Kind::EncoderForwardBackward;
      const double limit = encoder ? 0.9 : 1.0;
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.3f", r->brisk.seconds * 1e3) : skip_text(r->brisk),
                        r->torch.ok ? fmt("%.3f", r->torch.seconds * 1e3) : skip_text(r->torch),
                        both ? fmt("%.2fx", ratio) : "-", fmt("<= %.1fx", limit),
                        both ? (ratio <= limit ? "yes" : "NO") : "-"});
      add_skips(t, *r);
    }
    out.push_back(t);
  }

  if (auto v = find_section(Section::Copy); !v.empty()) {
    Table t{section_title(Section::Copy), {"case", "brisk GB/s", "libtorch GB/s", "speedup", "brisk ms", "libtorch ms"},
            {}, {}};
    for (const Result* r : v) {
      const double bytes = r->c.spec.kind == Kind::ToHalf ? 6.0 * double(r->c.spec.n)  // read 4, write 2
                                                          : 2.0 * 4.0 * double(r->c.spec.n) * double(r->c.spec.n);
      const bool both = r->brisk.ok && r->torch.ok;
      auto gbs = [&](const Timing& tm) { return tm.ok ? fmt("%.1f", bytes / tm.seconds * 1e-9) : skip_text(tm); };
      auto ms = [&](const Timing& tm) { return tm.ok ? fmt("%.2f", tm.seconds * 1e3) : "-"; };
      t.rows.push_back({r->c.name, gbs(r->brisk), gbs(r->torch),
                        both ? fmt("%.1fx", r->torch.seconds / r->brisk.seconds) : "-", ms(r->brisk), ms(r->torch)});
      add_skips(t, *r);
    }
    t.notes.push_back("GB/s counts the bytes read and written (2 x 4 bytes per element; 4 + 2 for float16); the "
                      "destination is allocated once (what x.t().contiguous() or x.to(kHalf) cost beyond this is the "
                      "allocation). No target in the issue.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::Unary); !v.empty()) {
    Table t{section_title(Section::Unary),
            {"case", "brisk ms", "libtorch ms", "brisk / libtorch", "brisk / copy bandwidth", "target", "met"}, {}, {}};
    const Result* copy[3] = {nullptr, nullptr, nullptr};
    for (const Result* r : v)
      if (r->c.spec.kind == Kind::UnaryCopy && r->brisk.ok) copy[std::min(r->c.spec.threads, 2)] = r;
    for (const Result* r : v) {
      const bool is_copy = r->c.spec.kind == Kind::UnaryCopy;
      const bool both = r->brisk.ok && r->torch.ok;
      const double ratio = both ? r->brisk.seconds / r->torch.seconds : 0;
      // The op moves as many bytes as the copy (read 4, write 4 per element;
      // the two-tensor ops read 4 more): brisk's speed relative to the copy's.
      const Result* c = copy[std::min(r->c.spec.threads, 2)];
      const double bytes = (r->c.spec.kind == Kind::Unary && (r->c.spec.op == 13 || r->c.spec.op == 31)) ? 12 : 8;
      const double bw = c && r->brisk.ok ? (bytes / 8) * c->brisk.seconds / r->brisk.seconds : 0;
      std::string met = "-";
      if (!is_copy && r->brisk.ok) met = (both && ratio <= 1.1) || bw >= 0.9 ? "yes" : "NO";
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.3f", r->brisk.seconds * 1e3) : skip_text(r->brisk),
                        r->torch.ok ? fmt("%.3f", r->torch.seconds * 1e3) : skip_text(r->torch),
                        both ? fmt("%.2f", ratio) : "-", bw > 0 && !is_copy ? fmt("%.2f", bw) : "-",
                        is_copy ? "(reference)" : "<= 1.1 or >= 0.9", met});
      add_skips(t, *r);
    }
    t.notes.push_back("Each op allocates its result (y = op(x)) on both sides, on inputs spread over its domain "
                      "(bench/bench.h kUnaryOps). brisk / copy bandwidth = (bytes the op moves / its time) over "
                      "(bytes brisk's z.copy_(x) moves / its time) in the same run; target: brisk within 1.1x of "
                      "libtorch's time, or at least 0.9 of the copy bandwidth.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::Autograd); !v.empty()) {
    Table t{section_title(Section::Autograd), {"case", "brisk", "libtorch", "speedup", "target", "met"}, {}, {}};
    constexpr double kStepTargetSeconds = 0.150;
    const Result* step = nullptr;
    for (const Result* r : v) {
      const bool is_step = r->c.spec.kind == Kind::AutogradMlpStep;
      const bool is_info = r->c.spec.kind == Kind::AutogradHostBackward;
      if (is_step) step = r;
      auto cell = [&](const Timing& tm) {
        return !tm.ok ? skip_text(tm) : is_step ? fmt("%.1f ms", tm.seconds * 1e3) : fmt("%.1f ns", tm.seconds * 1e9);
      };
      const bool both = r->brisk.ok && r->torch.ok;
      const double sp = both ? r->torch.seconds / r->brisk.seconds : 0;
      std::string target = is_step ? "brisk <= 150 ms" : is_info ? "(information)" : ">= 3x";
      std::string met = "-";
      if (is_step && r->brisk.ok)
        met = r->brisk.seconds <= kStepTargetSeconds ? "yes" : "NO";
      else if (!is_step && !is_info && both)
        met = sp >= 3 ? "yes" : "NO";
      t.rows.push_back({r->c.name, cell(r->brisk), cell(r->torch), both ? fmt("%.1fx", sp) : "-", target, met});
      add_skips(t, *r);
    }
    t.notes.push_back("speedup = libtorch time / brisk time. 3x3 cases: only w requires grad (x and b are plain "
                      "tensors); each call builds the graph and drops the previous one; with backward, w's gradient "
                      "is set to none first and g is a preallocated 3x3 ones; mean of " +
                      std::to_string(v[0]->c.spec.budget.iters) + " calls, median of " +
                      std::to_string(v[0]->c.spec.budget.reps) + " repetitions.");
    if (step) {
      const double flops = mlp_step_flops(), peak = peak_gflops_per_core(m);
      t.notes.push_back("MLP step: Linear(1000,5000)-ReLU-Linear(5000,10000)-ReLU-Linear(10000,10), batch 64, "
                        "weights [out, in] and biases [out] from randn * 0.01 (55.1M parameters); one step = every "
                        "grad set to none, forward, loss = out.pow(2).mean(), loss.backward(), then under NoGradGuard "
                        "p.add_(p.grad(), -0.01) for each parameter. Median of " +
                        std::to_string(step->c.spec.budget.reps) + " steps after " +
                        std::to_string(step->c.spec.budget.warmup) +
                        (step->c.spec.budget.warmup == 1 ? " warm-up step." : " warm-up steps."));
      t.notes.push_back("One step is " + fmt("%.1f", flops * 1e-9) +
                        " GFLOP of GEMM (forward, weight gradients, input gradients of layers 2 and 3): at the "
                        "measured float32 peak of one core (" + fmt("%.0f", peak) + " GFLOP/s, see the matmul table) that "
                        "is " + fmt("%.0f", flops / (peak * 1e9) * 1e3) +
                        " ms (" + fmt("%.0f", flops / 220e9 * 1e3) +
                        " ms at the issue's 220 GFLOP/s per core), the floor for any single-threaded library" +
                        (step->brisk.ok ? "; brisk's step runs at " +
                                              fmt("%.0f", flops / step->brisk.seconds * 1e-9) + " GFLOP/s"
                                        : std::string()) +
                        (step->torch.ok ? ", libtorch's at " + fmt("%.0f", flops / step->torch.seconds * 1e-9) +
                                              " GFLOP/s"
                                        : std::string()) +
                        ". The issue's libtorch reference is about 800 ms per step with the machine's default "
                        "thread count.");
    }
    out.push_back(t);
  }

  if (auto v = find_section(Section::Training); !v.empty()) {
    Table t{section_title(Section::Training),
            {"case", "brisk", "libtorch", "brisk / libtorch", "target", "met", "brisk / bandwidth limit"}, {}, {}};
    for (const Result* r : v) {
      const Kind k = r->c.spec.kind;
      const bool epoch = k == Kind::EpochMlp || k == Kind::EpochCnn, fused = k == Kind::AdamFused;
      auto cell = [&](const Timing& tm) {
        return !tm.ok ? skip_text(tm) : epoch ? fmt("%.2f s", tm.seconds) : fmt("%.2f ms", tm.seconds * 1e3);
      };
      const bool both = r->brisk.ok && r->torch.ok;
      const double ratio = both ? r->brisk.seconds / r->torch.seconds : 0;
      std::string target = epoch ? "<= 0.7" : fused ? "<= 0.4 (2.5x faster)" : "(information)";
      std::string met = "-";
      if (both && (epoch || fused)) met = ratio <= (epoch ? 0.7 : 0.4) ? "yes" : "NO";
      // brisk_vs_reference = plain-loop time / brisk time: its inverse is how
      // many times the bandwidth limit brisk's step takes.
      const double limit = r->brisk_vs_reference > 0 ? 1 / r->brisk_vs_reference : 0;
      std::string lim = limit > 0 ? fmt("%.2fx", limit) + (fused ? (limit <= 1.5 ? " (<= 1.5x: yes)" : " (<= 1.5x: NO)") : "")
                                  : "-";
      t.rows.push_back({r->c.name, cell(r->brisk), cell(r->torch), both ? fmt("%.2f", ratio) : "-", target, met, lim});
      add_skips(t, *r);
    }
    t.notes.push_back("Adam: lr 1e-3, betas (0.9, 0.999), eps 1e-8, one thread; every parameter has a fixed random "
                      "gradient; libtorch runs torch::optim::Adam (its C++ Adam, one tensor at a time) in every "
                      "row. The bandwidth limit is the plain loop z[i] = x[i] + y[i] timed in the same repetitions "
                      "over arrays that move as many bytes as one step (7 floats per element: read param, grad, "
                      "exp_avg, exp_avg_sq; write param, exp_avg, exp_avg_sq).");
    t.notes.push_back("Epochs: " + training_data().source + "; the demo's models (examples/train_fashion_mnist.cpp): "
                      "MLP 784-256-128-10, CNN Conv2d(1,16,3,p1)-ReLU-MaxPool2d(2)-Conv2d(16,32,3,p1)-ReLU-"
                      "MaxPool2d(2)-Flatten-Linear(1568,128)-ReLU-Linear(128,10); batch 128 in a random order, "
                      "uint8 images normalised per batch, cross-entropy, AdamW (lr 2e-3, weight decay 1e-4), the "
                      "loss read every step. brisk runs the demo's loop (DataLoader with one worker, fused AdamW, "
                      "grads set to none); libtorch a plain loop (randperm, index_select, torch::optim::AdamW, "
                      "zero_grad). Median of " + std::to_string(v.back()->c.spec.budget.reps) + " epochs after one "
                      "warm-up epoch.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::RowOps); !v.empty()) {
    Table t{section_title(Section::RowOps),
            {"case", "brisk ms", "libtorch ms", "brisk / libtorch", "target", "met"}, {}, {}};
    for (const Result* r : v) {
      const bool both = r->brisk.ok && r->torch.ok;
      const double rel = both ? r->brisk.seconds / r->torch.seconds : 0;
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.2f", r->brisk.seconds * 1e3) : skip_text(r->brisk),
                        r->torch.ok ? fmt("%.2f", r->torch.seconds * 1e3) : skip_text(r->torch),
                        both ? fmt("%.2fx", rel) : "-", "<= 1.0x", both ? (rel <= 1.0 ? "yes" : "NO") : "-"});
      add_skips(t, *r);
    }
    t.notes.push_back("brisk / libtorch = brisk time / libtorch time. softmax and log_softmax along the rows; "
                      "layer_norm with weight and bias, rms_norm with weight (eps 1e-6), over the 4096 values of "
                      "a row. fwd+bwd: x, weight and bias require grad (their grads set to none each call), "
                      "y = op(x), y.backward(g) with g preallocated.");
    out.push_back(t);
  }

  if (auto v = find_section(Section::Profiler); !v.empty()) {
    Table t{section_title(Section::Profiler), {"case", "brisk ns", "added ns", "target", "met"}, {}, {}};
    const Result* off = nullptr;
    const Result* host_add = nullptr;
    for (const Result& r : rs) {
      if (r.c.spec.kind == Kind::ProfilerOff && r.brisk.ok) off = &r;
      if (r.c.spec.kind == Kind::HostAdd && r.brisk.ok) host_add = &r;
    }
    for (const Result* r : v) {
      const bool is_off = r->c.spec.kind == Kind::ProfilerOff;
      const Result* base = is_off ? host_add : off;
      const bool cmp = r->brisk.ok && base;
      const double added = cmp ? (r->brisk.seconds - base->brisk.seconds) * 1e9 : 0;
      std::string target = is_off ? "(= host case)" : "<= 1000";
      std::string met = "-";
      if (cmp && !is_off) met = added <= 1000 ? "yes" : "NO";
      t.rows.push_back({r->c.name, r->brisk.ok ? fmt("%.1f", r->brisk.seconds * 1e9) : skip_text(r->brisk),
                        cmp ? fmt("%+.1f", added) : "-", target, met});
      if (!r->brisk.ok) t.notes.push_back(r->c.name + ": " + r->brisk.skipped);
    }
    t.notes.push_back("added ns: the case's time minus the profiler-off case's (for the off case: minus the host "
                      "table's y = x + x, the same code timed separately, so the difference is noise). The cost of "
                      "the off path itself (one relaxed atomic load and a not-taken branch per op) is measured "
                      "build against build: see docs/design/profiler.md.");
    t.notes.push_back("With a profile active each op records one event (name, thread, start and end from the "
                      "steady clock; input shapes and dtypes with record_shapes; an allocation and a free sample "
                      "with profile_memory) into its thread's buffer; the profile starts before and stops after "
                      "the timed calls.");
    out.push_back(t);
  }
  return out;
}

std::string render_text(const Table& t) {
  std::vector<size_t> w(t.header.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = t.header[i].size();
  for (const auto& row : t.rows)
    for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
  std::ostringstream o;
  o << "== " << t.title << " ==\n";
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) {
      const std::string pad(w[i] - cells[i].size(), ' ');
      o << (i == 0 ? cells[i] + pad : pad + cells[i]) << (i + 1 < cells.size() ? "  " : "\n");
    }
  };
  line(t.header);
  for (const auto& row : t.rows) line(row);
  for (const auto& n : t.notes) o << "  note: " << n << "\n";
  return o.str();
}

std::string render_markdown(const Table& t) {
  std::ostringstream o;
  o << "### " << t.title << "\n\n|";
  for (const auto& h : t.header) o << " " << h << " |";
  o << "\n|";
  for (size_t i = 0; i < t.header.size(); ++i) o << (i == 0 ? "---|" : "---:|");
  o << "\n";
  for (const auto& row : t.rows) {
    o << "|";
    for (size_t i = 0; i < row.size(); ++i) o << " " << (i == 0 ? "`" + row[i] + "`" : row[i]) << " |";
    o << "\n";
  }
  if (!t.notes.empty()) {
    o << "\n";
    for (const auto& n : t.notes) o << "- " << n << "\n";
  }
  return o.str() + "\n";
}

// ---- the markdown file ------------------------------------------------------------

constexpr const char* kBegin = "<!-- BEGIN brisk_bench output: regenerated by the command below; edit outside -->";
constexpr const char* kEnd = "<!-- END brisk_bench output -->";

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return buf;
}

std::string generated_block(const std::vector<Table>& tables, const Machine& m, const std::string& command,
                            bool wall) {
  std::ostringstream o;
  o << kBegin << "\n\n";
  o << "## Results\n\n";
  o << "- date: " << utc_now() << "\n";
  o << "- machine: " << m.model << ", " << m.cores << ", " << m.cpus << " logical CPUs, " << m.cpu_flags
    << ", cpu MHz " << (m.mhz > 0 ? fmt("%.0f", m.mhz) : std::string("absent"))
    << (m.fma_gflops > 0 ? ", measured float32 FMA peak " + fmt("%.1f", m.fma_gflops) + " GFLOP/s per core" : "")
    << "\n";
  o << "- OPENBLAS_CORETYPE: " << m.coretype_env << " (OpenBLAS core in use: " << m.openblas_core << ")\n";
  o << "- load average at start: " << m.loadavg << "\n";
  const std::string tv = torch_version();
  o << "- libtorch: " << (tv.empty() ? std::string("not found at build time (brisk-only run)") : tv)
    << "; brisk " << BRISK_VERSION_MAJOR << "." << BRISK_VERSION_MINOR << "." << BRISK_VERSION_PATCH
    << " (" << BRISK_BENCH_BUILD;
  if (const char* cap = std::getenv("BRISK_CPU_CAPABILITY")) o << ", BRISK_CPU_CAPABILITY=" << cap;
  o << "); compiler " << __VERSION__ << "\n";
  o << "- clock: "
    << (wall ? "wall clock for every case (--wall)"
             : "the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) for single-threaded cases, wall clock for 2 threads")
    << "; each figure is the median of several repetitions of many calls\n";
  o << "- command: `" << command << "`\n\n";
  for (const Table& t : tables) o << render_markdown(t);
  o << kEnd << "\n";
  return o.str();
}

const char* kDefaultIntro =
    "# Performance\n\n"
    "brisk and libtorch timed side by side by `bench/brisk_bench` (see `bench/README.md`):\n"
    "same process, same inputs, same thread count. Timings never gate tests.\n\n";

// Replaces the generated block of `path` (or creates the file), keeping the
// text around it; writes a temp file in the same folder and renames it over.
bool write_markdown(const std::string& path, const std::string& block) {
  std::string old = read_file(path), text;
  const auto b = old.find(kBegin), e = old.find(kEnd);
  if (b != std::string::npos && e != std::string::npos && e > b) {
    size_t tail = e + std::string(kEnd).size();
    if (tail < old.size() && old[tail] == '\n') ++tail;
    text = old.substr(0, b) + block + old.substr(tail);
  } else {
    text = (old.empty() ? std::string(kDefaultIntro) : old + "\n") + block;
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string("_./=:,+-@%").find(c) != std::string::npos;
  });
  if (plain) return s;
  std::string o = "'";
  for (char c : s) o += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return o + "'";
}

int usage() {
  std::cerr << "usage: brisk_bench [--quick] [--wall] [--filter TEXT] [--side brisk|libtorch] [--markdown FILE]\n";
  return 2;
}

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  bool quick = false, wall = false;
  std::string filter, markdown, side;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick")
      quick = true;
    else if (a == "--wall")
      wall = true;
    else if (a == "--filter" && i + 1 < argc)
      filter = argv[++i];
    else if (a == "--side" && i + 1 < argc && (std::string(argv[i + 1]) == "brisk" ||
                                                 std::string(argv[i + 1]) == "libtorch"))
      side = argv[++i];
    else if (a == "--markdown" && i + 1 < argc)
      markdown = argv[++i];
    else
      return usage();
  }
  std::string command;
  if (const char* ct = std::getenv("OPENBLAS_CORETYPE")) command = std::string("OPENBLAS_CORETYPE=") + ct + " ";
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + shell_quote(argv[i]);

  torch_init();
  const Machine m = probe_machine();
  std::cout << "machine: " << m.model << ", " << m.cores << ", cpu MHz " << m.mhz << ", FMA peak "
            << fmt("%.1f", m.fma_gflops) << " GFLOP/s/core"
            << ", OPENBLAS_CORETYPE=" << m.coretype_env << " (core " << m.openblas_core << "), load " << m.loadavg
            << "\nlibtorch: " << (torch_version().empty() ? "not built in" : torch_version()) << "\n\n";

  std::vector<Result> results;
  for (const Case& c : make_cases(quick, wall)) {
    if (!filter.empty() && c.name.find(filter) == std::string::npos &&
        std::string(section_key(c.section)).find(filter) == std::string::npos)
      continue;
    std::cout << "running " << section_key(c.section) << ": " << c.name << " ..." << std::flush;
    Result r = measure(c, side);
    std::cout << " brisk " << (r.brisk.ok ? fmt("%.4g s", r.brisk.seconds) : r.brisk.skipped) << ", libtorch "
              << (r.torch.ok ? fmt("%.4g s", r.torch.seconds) : r.torch.skipped) << "\n";
    results.push_back(std::move(r));
  }
  std::cout << "\n";
  const std::vector<Table> tables = make_tables(results, m);
  for (const Table& t : tables) std::cout << render_text(t) << "\n";

  if (!markdown.empty()) {
    if (!filter.empty() || quick || !side.empty())
      std::cerr << "warning: writing a partial or --quick run to " << markdown << "\n";
    if (!write_markdown(markdown, generated_block(tables, m, command, wall))) {
      std::cerr << "error: could not write " << markdown << "\n";
      return 1;
    }
    std::cout << "wrote " << markdown << "\n";
  }
  return 0;
}
