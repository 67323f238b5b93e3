// Shared pieces of brisk_bench: the clock, the case list and the interface
// between the brisk side (bench_brisk.cpp, C++20) and the libtorch side
// (bench_torch.cpp, compiled as C++17 because libtorch 1.13's headers predate
// C++20).
#pragma once
#include <chrono>
#include <cstdint>
#include <ctime>
#include <functional>
#include <string>

namespace bench {

/// Seconds on the wall clock, or on the calling thread's CPU clock (user +
/// system time, page faults included). The thread clock is right for
/// single-threaded cases on a shared machine: time the thread spends
/// descheduled is not counted.
inline double now_seconds(bool thread_cpu_time) {
  if (thread_cpu_time) {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// How long to run one measurement: `reps` repetitions of `iters` calls each,
/// after `warmup` untimed calls. The figure is the median over repetitions of
/// the mean time per call; the repetitions of brisk and libtorch (and of the
/// reference loop, for bandwidth cases) are interleaved so that a busy
/// neighbour slows all of them alike.
struct Budget {
  int64_t iters = 1;
  int reps = 5;
  int64_t warmup = 1;
  bool thread_cpu_time = false;
};

/// What a case times. Both sides implement each kind (or say why not).
enum class Kind {
  // host cost, 3x3 float32, single thread
  HostAdd,          // y = x + x
  HostAddScalar_,   // x.add_(1)
  HostAddTensor_,   // x.add_(x)
  HostT,            // x.t()
  HostSelect,       // x[0]
  HostMatmul,       // matmul(x, x)
  HostEmpty,        // empty({3, 3})
  // bandwidth, float32 vectors of n elements, single thread
  BwAdd,            // z = x + y (allocating, in a loop)
  BwAddOut,         // add_out(z, x, y)
  BwAdd_,           // x.add_(y)
  BwPlainLoop,      // z[i] = x[i] + y[i] (reference, brisk side only)
  BwPlainLoop512,   // the same loop built like brisk's AVX-512 kernels (information)
  // compute
  Matmul,           // (n, n) @ (n, n), float32
  MatmulBf16,       // (n, n) @ (n, n), bfloat16
  Nonzero,          // nonzero of n float32 elements, about half nonzero
  Transpose,        // z.copy_(x.t()), (n, n) float32
  ToHalf,           // h.copy_(x): n float32 -> float16
  // autograd, float32, single thread
  AutogradHost,     // y = x * w + b, 3x3, only w requires grad (graph built and dropped)
  AutogradHostBackward,  // w.grad = none; y = x * w + b; y.backward(ones)
  HolderCall,       // y = lin(x): nn::Linear(3, 3) called through its holder, x 3x3 (graph recorded)
  HolderForward,    // y = lin->forward(x): the same through the module

  AutogradMlpStep,  // one SGD step of the MLP 1000-5000-10000-10, batch 64 (see mlp_* below)
  // training, float32
  AdamFused,        // one Adam step over `count` tensors of n floats: brisk fused (libtorch: torch::optim::Adam)
  AdamForeach,      // the same, brisk foreach
  AdamForLoop,      // the same, brisk for-loop
  AdamPlainLoop,    // reference: the plain loop moving the same bytes (brisk side only)
  EpochMlp,         // one epoch of the demo's MLP on Fashion-MNIST (see kEpoch* below)
  EpochCnn,         // one epoch of the demo's CNN
  // attention, float32: scaled_dot_product_attention on (B, H, L, E) query/key/value, no mask
  // (shape sdpa_shape(n)); forward, or forward + backward of out.backward(g) with the grads set to none
  SdpaForward,
  SdpaForwardBackward,
  // a BERT-style encoder layer (kEncoder* below: d_model 384, 12 heads, FFN 1536, GELU, dropout 0,
  // post-norm), src (128, 8, 384) sequence-first: nn::TransformerEncoderLayer on both sides
  // (libtorch's C++ module); forward in grad mode, or forward + backward with the grads set to none
  EncoderForward,
  EncoderForwardBackward,
  // nn::LSTM(64 -> 128, 2 layers), input (50, 32, 64) sequence-first, forward + backward of
  // out.backward(g) with the grads set to none (kLstm* below)
  LstmForwardBackward,
  // row ops (issue 13): `count` rows of n float32 values, softmax/log_softmax along the rows,
  // layer_norm (weight, bias) and rms_norm (weight) over them; *Bwd: forward + backward
  // (x, weight, bias require grad; their grads set to none each call; g preallocated)
  RowSoftmax,
  RowSoftmaxBwd,
  RowLogSoftmax,
  RowLogSoftmaxBwd,
  RowLayerNorm,
  RowLayerNormBwd,
  RowRmsNorm,
  RowRmsNormBwd,
  // activations forward + backward (issue 15's MLP hidden: 1024 x 1536); op: kActivations index, count: 1 bfloat16
  ActivationBwd,
  // brisk's profiler (brisk side only): y = x + x, 3x3 float32, single thread
  ProfilerOff,          // no profile active (the op pays one relaxed atomic load)
  ProfilerOn,           // inside an active profile (default options)
  ProfilerOnShapes,     // ... with record_shapes
  ProfilerOnMemory,     // ... with record_shapes and profile_memory
  // vectorized unary math (issue 13), n float32, `op` indexes kUnaryOps
  Unary,            // y = op(x) (allocating, as a user writes it)
  UnaryCopy,        // z.copy_(x): the copy bandwidth the unary rows are judged against
};

/// The unary ops of the vectorized-math section, and the input range of each
/// (uniform; the same values on both sides). pow and atan2 take a second
/// tensor (pow_tensor: exponents in [-2, 2); atan2: x in [-3, 3)).
struct UnaryOpSpec {
  const char* name;
  double lo, hi;
};
inline constexpr UnaryOpSpec kUnaryOps[] = {
    {"exp", -10, 10},       {"expm1", -3, 3},      {"exp2", -10, 10},    {"log", 0.01, 100},
    {"log1p", -0.5, 100},   {"log2", 0.01, 100},   {"log10", 0.01, 100}, {"sin", -10, 10},
    {"cos", -10, 10},       {"tan", -1.5, 1.5},    {"asin", -1, 1},      {"acos", -1, 1},
    {"atan", -10, 10},      {"atan2", -3, 3},      {"sinh", -5, 5},      {"cosh", -5, 5},
    {"tanh", -5, 5},        {"asinh", -10, 10},    {"acosh", 1, 10},     {"atanh", -0.99, 0.99},
    {"erf", -3, 3},         {"erfc", -3, 3},       {"erfinv", -0.99, 0.99}, {"sigmoid", -10, 10},
    {"logit", 0.01, 0.99},  {"softplus", -10, 10}, {"gelu", -5, 5},      {"gelu_tanh", -5, 5},
    {"silu", -10, 10},      {"mish", -10, 10},     {"pow(x, 2.5)", 0.01, 10}, {"pow(x, y)", 0.1, 4},
    {"rsqrt", 0.01, 100},   {"reciprocal", 0.1, 10}, {"sqrt", 0, 100},   {"lgamma", 0.1, 10},
    {"digamma", 0.1, 10},   {"clamp(x, -1, 1)", -3, 3}, {"fmod(x, y)", -10, 10}, {"remainder(x, y)", -10, 10},
};
constexpr int kNumUnaryOps = int(sizeof(kUnaryOps) / sizeof(kUnaryOps[0]));
/// Maps fill_inputs' values in [-0.5, 0.5) onto [lo, hi).
inline void to_domain(float* p, int64_t n, double lo, double hi) {
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(lo + (double(p[i]) + 0.5) * (hi - lo));
}

/// Adam cases: lr 1e-3, betas (0.9, 0.999), eps 1e-8, no weight decay; every
/// parameter has a fixed random gradient. A step reads param, grad, exp_avg
/// and exp_avg_sq and writes param, exp_avg and exp_avg_sq: 7 floats moved
/// per element.
constexpr double kAdamFloatsPerElement = 7;

/// The epoch cases train the demo's models (examples/train_fashion_mnist.cpp)
/// for one epoch over the 60,000 training images: batches of 128 in a fresh
/// random order, images kept uint8 and normalised per batch ((x / 255 -
/// 0.2860) / 0.3530), cross-entropy loss, gradients set to none (brisk) or
/// zeroed (libtorch's default), AdamW (lr 2e-3, weight decay 1e-4), the loss
/// read back every step.
///   MLP: Linear(784, 256)-ReLU-Linear(256, 128)-ReLU-Linear(128, 10)
///   CNN: Conv2d(1, 16, 3, padding 1)-ReLU-MaxPool2d(2)-Conv2d(16, 32, 3,
///        padding 1)-ReLU-MaxPool2d(2)-Flatten-Linear(1568, 128)-ReLU-Linear(128, 10)
constexpr int64_t kEpochBatch = 128;
constexpr double kEpochLr = 2e-3, kEpochWeightDecay = 1e-4;
constexpr double kEpochMean = 0.2860, kEpochStd = 0.3530;

/// The training images for the epoch cases: Fashion-MNIST's training set
/// when installed, else random images and labels of the same shape (source
/// says which). Loaded once, shared by both sides.
struct TrainingData {
  const uint8_t* images = nullptr;  ///< n x 28 x 28
  const int64_t* labels = nullptr;  ///< n, values 0..9
  int64_t n = 0;
  std::string source;
};
const TrainingData& training_data();

/// The MLP of the training-step case: Linear(1000, 5000)-ReLU-Linear(5000,
/// 10000)-ReLU-Linear(10000, 10), batch 64, parameters as nn.Linear's
/// (weight [out, in], bias [out]) initialized with randn * 0.01.
constexpr int64_t kMlpBatch = 64;
constexpr int64_t kMlpSizes[4] = {1000, 5000, 10000, 10};
constexpr double kMlpInitScale = 0.01;
constexpr double kMlpLearningRate = 0.01;
/// Floating-point operations of one step: the forward GEMMs (2 b i o per
/// layer), in backward the weight gradients of every layer and the input
/// gradients of every layer but the first (x needs none).
constexpr double mlp_step_flops() {
  double fwd = 0, grad_in = 0;
  for (int l = 0; l < 3; ++l) {
    const double f = 2.0 * kMlpBatch * kMlpSizes[l] * kMlpSizes[l + 1];
    fwd += f;
    if (l > 0) grad_in += f;
  }
  return 2 * fwd + grad_in;
}

/// The attention shapes (B, H, L = S, E): 0 is the BERT-style layer's
/// (8 x 12 heads x 128 x 32), 1 a long sequence (1 x 16 x 1024 x 64).
struct SdpaShape {
  int64_t B, H, L, E;
};
constexpr int64_t kEncoderDModel = 384, kEncoderHeads = 12, kEncoderFfn = 1536, kEncoderSeq = 128, kEncoderBatch = 8;
constexpr int64_t kLstmInput = 64, kLstmHidden = 128, kLstmLayers = 2, kLstmSeq = 50, kLstmBatch = 32;
constexpr SdpaShape sdpa_shape(int64_t n) { return n == 0 ? SdpaShape{8, 12, 128, 32} : SdpaShape{1, 16, 1024, 64}; }

/// The activations of the ActivationBwd cases (Spec::op).
inline constexpr const char* kActivations[] = {"gelu", "gelu tanh", "silu",       "sigmoid", "tanh",    "mish",
                                                "hardswish", "hardtanh", "leaky_relu", "elu", "mse_loss", "selu",
                                                "hardsigmoid", "softshrink", "hardshrink", "logsigmoid"};

struct Spec {
  Kind kind;
  int64_t n = 0;  ///< problem size (elements, or the matrix side)
  int threads = 1;
  Budget budget;
  int64_t count = 1;  ///< tensors in the list (Adam cases)
  int op = 0;         ///< index into kUnaryOps (Unary cases)
};

/// A prepared case on one side: inputs made, ready to time.
struct Runner {
  /// Sets this side's thread count, makes `calls` calls and returns the
  /// elapsed seconds on the requested clock. Empty when the case cannot run.
  std::function<double(int64_t calls, bool thread_cpu_time)> run;
  std::string skipped;  ///< why `run` is empty
};

/// Wraps f (one call of the op, its inputs captured by value) in a Runner.
/// The loop is instantiated in the side's own file, so timing a call costs
/// no indirect call; set_threads runs before the clock starts.
template <class SetThreads, class F>
Runner make_runner(SetThreads set_threads, F f) {
  Runner r;
  r.run = [set_threads, f](int64_t calls, bool cpu) mutable {
    set_threads();
    const double t0 = now_seconds(cpu);
    for (int64_t i = 0; i < calls; ++i) f();
    return now_seconds(cpu) - t0;
  };
  return r;
}
inline Runner skip(std::string why) {
  Runner r;
  r.skipped = std::move(why);
  return r;
}

// The two sides. Exceptions thrown while preparing come back as skips; the
// driver also catches those thrown while timing.
Runner brisk_runner(const Spec& s);
Runner torch_runner(const Spec& s);
/// The plain loop z[i] = x[i] + y[i] over s.n elements (bandwidth reference).
Runner reference_runner(const Spec& s);
/// "1.13.0", or "" when the bench was built without libtorch.
std::string torch_version();
/// One inter-op thread for libtorch (must run before any libtorch work).
void torch_init();
/// The fills both sides use, so they see identical inputs.
void fill_inputs(float* p, int64_t n, uint32_t seed);
void fill_half_zero(float* p, int64_t n, uint32_t seed);

}  // namespace bench
