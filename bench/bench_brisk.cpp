// The brisk side of brisk_bench, plus the plain C++ loop that bandwidth cases
// are judged against.
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "bench.h"
#include "brisk/brisk.h"

namespace bench {

// A 32-bit LCG: the same values on both sides, cheap to generate for 2^24 elements.
void fill_inputs(float* p, int64_t n, uint32_t seed) {
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<float>(s >> 8) * (1.0f / 16777216.0f) - 0.5f;  // [-0.5, 0.5)
  }
}
// Zero or non-zero with probability 1/2 each, in no pattern a branch predictor could learn.
void fill_half_zero(float* p, int64_t n, uint32_t seed) {
  uint32_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = (s >> 31) ? 1.0f + static_cast<float>((s >> 8) & 0xff) : 0.0f;
  }
}

namespace {

brisk::Tensor make(brisk::IntArrayRef sizes, uint32_t seed, bool half_zero = false) {
  brisk::Tensor t = brisk::empty(sizes, brisk::kFloat);
  if (half_zero)
    fill_half_zero(t.data_ptr<float>(), t.numel(), seed);
  else
    fill_inputs(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

// The reference for the bandwidth cases: what a C++ programmer writes by
// hand. noinline so that the timing loop cannot hoist or fuse it.
[[gnu::noinline]] void plain_add(float* __restrict z, const float* __restrict x, const float* __restrict y,
                                 int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

// The same loop built as brisk's AVX-512 kernels are (512-bit vectors): it
// separates the cost of the vector width from the cost of brisk itself.
[[gnu::noinline, gnu::target("avx512f,avx512vl,prefer-vector-width=512")]] void plain_add_avx512(
    float* __restrict z, const float* __restrict x, const float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

// One SGD step of the MLP in bench.h, written as a brisk user would.
struct Mlp {
  brisk::Tensor x;
  std::vector<brisk::Tensor> params;  // w1, b1, w2, b2, w3, b3

  Mlp() : x(make({kMlpBatch, kMlpSizes[0]}, 1)) {
    for (int l = 0; l < 3; ++l) {
      const int64_t in = kMlpSizes[l], out = kMlpSizes[l + 1];
      params.push_back((brisk::randn({out, in}) * kMlpInitScale).requires_grad_());
      params.push_back((brisk::randn({out}) * kMlpInitScale).requires_grad_());
    }
  }
  void step() {
    for (brisk::Tensor& p : params) p.mutable_grad() = brisk::Tensor();
    const brisk::Tensor &w1 = params[0], &b1 = params[1], &w2 = params[2], &b2 = params[3], &w3 = params[4],
                        &b3 = params[5];
    brisk::Tensor h = (x.matmul(w1.t()) + b1).relu();
    brisk::Tensor h2 = (h.matmul(w2.t()) + b2).relu();
    brisk::Tensor out = h2.matmul(w3.t()) + b3;
    brisk::Tensor loss = out.pow(2).mean();
    loss.backward();
    brisk::NoGradGuard no_grad;
    for (brisk::Tensor& p : params) p.add_(p.grad(), -kMlpLearningRate);
  }
};

// ---- training -------------------------------------------------------------------

/// `count` parameters of n floats with fixed random gradients, and an Adam
/// of the given implementation over them.
struct AdamCase {
  std::vector<brisk::Tensor> params;
  std::unique_ptr<brisk::optim::Adam> opt;
  AdamCase(int64_t count, int64_t n, brisk::optim::Impl impl) {
    for (int64_t i = 0; i < count; ++i) {
      brisk::Tensor p = make({n}, static_cast<uint32_t>(2 * i + 1)).requires_grad_();
      p.mutable_grad() = make({n}, static_cast<uint32_t>(2 * i + 2));
      params.push_back(p);
    }
    opt = std::make_unique<brisk::optim::Adam>(params, brisk::optim::AdamOptions(1e-3).impl(impl));
  }
};

namespace bnn = brisk::nn;

std::shared_ptr<bnn::SequentialImpl> epoch_model(bool cnn) {
  using bnn::ModulePtr;
  if (!cnn)
    return std::make_shared<bnn::SequentialImpl>(std::initializer_list<ModulePtr>{
        std::make_shared<bnn::LinearImpl>(784, 256), std::make_shared<bnn::ReLUImpl>(), std::make_shared<bnn::LinearImpl>(256, 128),
        std::make_shared<bnn::ReLUImpl>(), std::make_shared<bnn::LinearImpl>(128, 10)});
  return std::make_shared<bnn::SequentialImpl>(std::initializer_list<ModulePtr>{
      std::make_shared<bnn::Conv2dImpl>(bnn::Conv2dOptions(1, 16, 3).padding(1)), std::make_shared<bnn::ReLUImpl>(),
      std::make_shared<bnn::MaxPool2dImpl>(2),
      std::make_shared<bnn::Conv2dImpl>(bnn::Conv2dOptions(16, 32, 3).padding(1)), std::make_shared<bnn::ReLUImpl>(),
      std::make_shared<bnn::MaxPool2dImpl>(2), std::make_shared<bnn::FlattenImpl>(),
      std::make_shared<bnn::LinearImpl>(32 * 7 * 7, 128), std::make_shared<bnn::ReLUImpl>(),
      std::make_shared<bnn::LinearImpl>(128, 10)});
}

// One epoch as the demo runs it: DataLoader (shuffle, one worker, uint8
// images normalised per batch), fused AdamW, grads set to none.
struct EpochCase {
  bool cnn;
  std::shared_ptr<bnn::SequentialImpl> model;
  std::unique_ptr<brisk::optim::AdamW> opt;
  std::unique_ptr<brisk::data::DataLoader> loader;
  double last_loss = 0;
  explicit EpochCase(bool c) : cnn(c), model(epoch_model(c)) {
    const TrainingData& d = training_data();
    brisk::Tensor images = brisk::from_blob(const_cast<uint8_t*>(d.images), {d.n, 28, 28}, brisk::kUInt8);
    brisk::Tensor labels = brisk::from_blob(const_cast<int64_t*>(d.labels), {d.n}, brisk::kInt64);
    auto set = std::make_shared<brisk::data::TensorDataset>(images, labels);
    loader = std::make_unique<brisk::data::DataLoader>(
        set, brisk::data::DataLoaderOptions()
                 .batch_size(static_cast<size_t>(kEpochBatch))
                 .shuffle(true)
                 .seed(0)
                 .num_workers(1)
                 .transform(brisk::data::Normalize(kEpochMean, kEpochStd)));
    opt = std::make_unique<brisk::optim::AdamW>(model->parameters(),
                                                brisk::optim::AdamWOptions(kEpochLr).weight_decay(kEpochWeightDecay));
  }
  void run() {
    for (auto& batch : *loader) {
      brisk::Tensor x = cnn ? batch.data.unsqueeze(1) : batch.data.flatten(1);
      brisk::Tensor loss = bnn::functional::cross_entropy(model->forward(x), batch.target);
      opt->zero_grad();
      loss.backward();
      opt->step();
      last_loss = loss.item<double>();
    }
  }
};

auto threads(int n) {
  return [n] { brisk::set_num_threads(n); };
}

Runner prepare(const Spec& s) {
  using brisk::Tensor;
  const auto th = threads(s.threads);
  switch (s.kind) {
    case Kind::HostAdd:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = x + x; });
    case Kind::HostAddScalar_:
      return make_runner(th, [x = make({3, 3}, 1)]() mutable { x.add_(1); });
    case Kind::HostAddTensor_:
      return make_runner(th, [x = make({3, 3}, 1)]() mutable { x.add_(x); });
    case Kind::HostT:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = x.t(); });
    case Kind::HostSelect:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = x[0]; });
    case Kind::HostMatmul:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = brisk::matmul(x, x); });
    case Kind::HostEmpty:
      return make_runner(th, [y = Tensor()]() mutable { y = brisk::empty({3, 3}); });
    case Kind::BwAdd:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2), z = Tensor()]() mutable { z = x + y; });
    case Kind::BwAddOut:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3)]() mutable {
        brisk::add_out(z, x, y);
      });
    case Kind::BwAdd_:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2)]() mutable { x.add_(y); });
    case Kind::BwPlainLoop:
      return reference_runner(s);
    case Kind::BwPlainLoop512: {
      if (!__builtin_cpu_supports("avx512f")) return skip("this CPU has no AVX-512");
      Tensor x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3);
      return make_runner(th, [x, y, z, xp = x.data_ptr<float>(), yp = y.data_ptr<float>(),
                              zp = z.data_ptr<float>(), n = s.n] { plain_add_avx512(zp, xp, yp, n); });
    }
    case Kind::Matmul:
      return make_runner(th, [x = make({s.n, s.n}, 1), y = make({s.n, s.n}, 2), z = Tensor()]() mutable {
        z = brisk::matmul(x, y);
      });
    case Kind::MatmulBf16:
      return make_runner(th, [x = make({s.n, s.n}, 1).to(brisk::kBFloat16), y = make({s.n, s.n}, 2).to(brisk::kBFloat16),
                              z = Tensor()]() mutable { z = brisk::matmul(x, y); });
    case Kind::Nonzero:
      return make_runner(th, [x = make({s.n}, 1, /*half_zero=*/true), z = Tensor()]() mutable {
        z = brisk::nonzero(x);
      });
    case Kind::Transpose:
      return make_runner(th, [x = make({s.n, s.n}, 1), z = make({s.n, s.n}, 2)]() mutable { z.copy_(x.t()); });
    case Kind::UnaryCopy:
      return make_runner(th, [x = make({s.n}, 1), z = make({s.n}, 2)]() mutable { z.copy_(x); });
    case Kind::Unary: {
      const UnaryOpSpec& u = kUnaryOps[s.op];
      Tensor x = make({s.n}, 1), y = make({s.n}, 2);
      to_domain(x.data_ptr<float>(), s.n, u.lo, u.hi);
      to_domain(y.data_ptr<float>(), s.n, s.op == 13 ? -3.0 : -2.0, s.op == 13 ? 3.0 : 2.0);
      using F = Tensor (*)(const Tensor&, const Tensor&);
      static const F fns[kNumUnaryOps] = {
          [](const Tensor& a, const Tensor&) { return a.exp(); },
          [](const Tensor& a, const Tensor&) { return a.expm1(); },
          [](const Tensor& a, const Tensor&) { return a.exp2(); },
          [](const Tensor& a, const Tensor&) { return a.log(); },
          [](const Tensor& a, const Tensor&) { return a.log1p(); },
          [](const Tensor& a, const Tensor&) { return a.log2(); },
          [](const Tensor& a, const Tensor&) { return a.log10(); },
          [](const Tensor& a, const Tensor&) { return a.sin(); },
          [](const Tensor& a, const Tensor&) { return a.cos(); },
          [](const Tensor& a, const Tensor&) { return a.tan(); },
          [](const Tensor& a, const Tensor&) { return a.asin(); },
          [](const Tensor& a, const Tensor&) { return a.acos(); },
          [](const Tensor& a, const Tensor&) { return a.atan(); },
          [](const Tensor& a, const Tensor& b) { return brisk::atan2(a, b); },
          [](const Tensor& a, const Tensor&) { return a.sinh(); },
          [](const Tensor& a, const Tensor&) { return a.cosh(); },
          [](const Tensor& a, const Tensor&) { return a.tanh(); },
          [](const Tensor& a, const Tensor&) { return a.asinh(); },
          [](const Tensor& a, const Tensor&) { return a.acosh(); },
          [](const Tensor& a, const Tensor&) { return a.atanh(); },
          [](const Tensor& a, const Tensor&) { return a.erf(); },
          [](const Tensor& a, const Tensor&) { return a.erfc(); },
          [](const Tensor& a, const Tensor&) { return a.erfinv(); },
          [](const Tensor& a, const Tensor&) { return a.sigmoid(); },
          [](const Tensor& a, const Tensor&) { return a.logit(); },
          [](const Tensor& a, const Tensor&) { return a.softplus(); },
          [](const Tensor& a, const Tensor&) { return a.gelu(); },
          [](const Tensor& a, const Tensor&) { return a.gelu("tanh"); },
          [](const Tensor& a, const Tensor&) { return a.silu(); },
          [](const Tensor& a, const Tensor&) { return brisk::mish(a); },
          [](const Tensor& a, const Tensor&) { return a.pow(2.5); },
          [](const Tensor& a, const Tensor& b) { return a.pow(b); },
          [](const Tensor& a, const Tensor&) { return a.rsqrt(); },
          [](const Tensor& a, const Tensor&) { return a.reciprocal(); },
          [](const Tensor& a, const Tensor&) { return a.sqrt(); },
          [](const Tensor& a, const Tensor&) { return a.lgamma(); },
          [](const Tensor& a, const Tensor&) { return a.digamma(); },
          [](const Tensor& a, const Tensor&) { return a.clamp(-1.0, 1.0); },
          [](const Tensor& a, const Tensor& b) { return a.fmod(b); },
          [](const Tensor& a, const Tensor& b) { return a.remainder(b); },
      };
      return make_runner(th, [x, y, z = Tensor(), f = fns[s.op]]() mutable { z = f(x, y); });
    }
    case Kind::ToHalf:
      return make_runner(th, [x = make({s.n}, 1), h = make({s.n}, 2).to(brisk::kHalf)]() mutable { h.copy_(x); });
    case Kind::SdpaForward:
    case Kind::SdpaForwardBackward: {
      const SdpaShape d = sdpa_shape(s.n);
      Tensor q = make({d.B, d.H, d.L, d.E}, 1), k = make({d.B, d.H, d.L, d.E}, 2), v = make({d.B, d.H, d.L, d.E}, 3);
      if (s.kind == Kind::SdpaForward)
        return make_runner(th, [q, k, v, z = Tensor()]() mutable {
          z = brisk::nn::functional::scaled_dot_product_attention(q, k, v);
        });
      q.requires_grad_(), k.requires_grad_(), v.requires_grad_();
      return make_runner(th, [q, k, v, g = make({d.B, d.H, d.L, d.E}, 4)]() mutable {
        q.mutable_grad() = Tensor(), k.mutable_grad() = Tensor(), v.mutable_grad() = Tensor();
        brisk::nn::functional::scaled_dot_product_attention(q, k, v).backward(g);
      });
    }
    case Kind::EncoderForward:
    case Kind::EncoderForwardBackward: {
      auto layer = std::make_shared<brisk::nn::TransformerEncoderLayerImpl>(
          brisk::nn::TransformerEncoderLayerOptions(kEncoderDModel, kEncoderHeads)
              .dim_feedforward(kEncoderFfn)
              .dropout(0.0)
              .activation("gelu"));
      Tensor x = make({kEncoderSeq, kEncoderBatch, kEncoderDModel}, 1);
      if (s.kind == Kind::EncoderForward)
        return make_runner(th, [layer, x, z = Tensor()]() mutable { z = layer->forward(x); });
      x.requires_grad_();
      return make_runner(th, [layer, x, g = make({kEncoderSeq, kEncoderBatch, kEncoderDModel}, 2)]() mutable {
        layer->zero_grad();
        x.mutable_grad() = Tensor();
        layer->forward(x).backward(g);
      });
    }
    case Kind::LstmForwardBackward: {
      brisk::nn::LSTM lstm(brisk::nn::LSTMOptions(kLstmInput, kLstmHidden).num_layers(kLstmLayers));
      Tensor x = make({kLstmSeq, kLstmBatch, kLstmInput}, 1).requires_grad_();
      return make_runner(th, [lstm, x, g = make({kLstmSeq, kLstmBatch, kLstmHidden}, 2)]() mutable {
        lstm->zero_grad();
        x.mutable_grad() = Tensor();
        std::get<0>(lstm(x)).backward(g);
      });
    }
    case Kind::AutogradHost:
      return make_runner(th, [x = make({3, 3}, 1), w = make({3, 3}, 2).requires_grad_(), b = make({3, 3}, 3),
                              y = Tensor()]() mutable { y = x * w + b; });
    case Kind::AutogradHostBackward:
      return make_runner(th, [x = make({3, 3}, 1), w = make({3, 3}, 2).requires_grad_(), b = make({3, 3}, 3),
                              g = brisk::ones({3, 3}), y = Tensor()]() mutable {
        w.mutable_grad() = Tensor();
        y = x * w + b;
        y.backward(g);
      });
    case Kind::HolderCall:
      return make_runner(th, [x = make({3, 3}, 1), lin = brisk::nn::Linear(3, 3), y = Tensor()]() mutable {
        y = lin(x);
      });
    case Kind::HolderForward:
      return make_runner(th, [x = make({3, 3}, 1), lin = brisk::nn::Linear(3, 3), y = Tensor()]() mutable {
        y = lin->forward(x);
      });
    case Kind::AutogradMlpStep:
      return make_runner(th, [m = std::make_shared<Mlp>()] { m->step(); });
    case Kind::RowSoftmax:
    case Kind::RowLogSoftmax:
    case Kind::RowLayerNorm:
    case Kind::RowRmsNorm:
    case Kind::RowSoftmaxBwd:
    case Kind::RowLogSoftmaxBwd:
    case Kind::RowLayerNormBwd:
    case Kind::RowRmsNormBwd: {
      namespace F = brisk::nn::functional;
      const bool bwd = s.kind == Kind::RowSoftmaxBwd || s.kind == Kind::RowLogSoftmaxBwd ||
                       s.kind == Kind::RowLayerNormBwd || s.kind == Kind::RowRmsNormBwd;
      Tensor x = make({s.count, s.n}, 1), w = make({s.n}, 2), b = make({s.n}, 3), g = make({s.count, s.n}, 4);
      if (bwd) {
        x.requires_grad_();
        w.requires_grad_();
        b.requires_grad_();
      }
      const Kind k = s.kind;
      const int64_t n = s.n;
      return make_runner(th, [x, w, b, g, k, n, bwd, y = Tensor()]() mutable {
        if (bwd) {
          x.mutable_grad() = Tensor();
          w.mutable_grad() = Tensor();
          b.mutable_grad() = Tensor();
        }
        switch (k) {
          case Kind::RowSoftmax:
          case Kind::RowSoftmaxBwd: y = x.softmax(1); break;
          case Kind::RowLogSoftmax:
          case Kind::RowLogSoftmaxBwd: y = x.log_softmax(1); break;
          case Kind::RowLayerNorm:
          case Kind::RowLayerNormBwd: y = F::layer_norm(x, {n}, w, b); break;
          default: y = F::rms_norm(x, {n}, w, 1e-6); break;
        }
        if (bwd) y.backward(g);
      });
    }
    case Kind::ActivationBwd: {
      namespace F = brisk::nn::functional;
      const auto dt = s.count ? brisk::kBFloat16 : brisk::kFloat;
      Tensor x = make({1024, s.n}, 1).to(dt).requires_grad_(), g = make({1024, s.n}, 4).to(dt);
      const int op = s.op;
      return make_runner(th, [x, g, op, y = Tensor()]() mutable {
        x.mutable_grad() = Tensor();
        switch (op) {
          case 0: y = F::gelu(x); break;
          case 1: y = F::gelu(x, "tanh"); break;
          case 2: y = F::silu(x); break;
          case 3: y = x.sigmoid(); break;
          case 4: y = x.tanh(); break;
          case 5: y = F::mish(x); break;
          case 6: y = F::hardswish(x); break;
          case 7: y = F::hardtanh(x); break;
          case 8: y = F::leaky_relu(x); break;
          case 9: y = F::elu(x); break;
          case 11: y = F::selu(x); break;
          case 12: y = F::hardsigmoid(x); break;
          case 13: y = F::softshrink(x); break;
          case 14: y = F::hardshrink(x); break;
          case 15: y = F::logsigmoid(x); break;
          default: y = F::mse_loss(x, g, F::MSELossFuncOptions(brisk::nn::kNone)); break;
        }
        y.backward(g);
      });
    }
    case Kind::AdamFused:
    case Kind::AdamForeach:
    case Kind::AdamForLoop: {
      const auto impl = s.kind == Kind::AdamFused     ? brisk::optim::Impl::Fused
                        : s.kind == Kind::AdamForeach ? brisk::optim::Impl::Foreach
                                                      : brisk::optim::Impl::ForLoop;
      return make_runner(th, [c = std::make_shared<AdamCase>(s.count, s.n, impl)] { c->opt->step(); });
    }
    case Kind::AdamPlainLoop:
      return reference_runner(s);
    case Kind::EpochMlp:
    case Kind::EpochCnn:
      return make_runner(th, [c = std::make_shared<EpochCase>(s.kind == Kind::EpochCnn)] { c->run(); });
    case Kind::ProfilerOff:
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = x + x; });
    case Kind::ProfilerOn:
    case Kind::ProfilerOnShapes:
    case Kind::ProfilerOnMemory: {
      namespace prof = brisk::profiler;
      const prof::ProfileOptions opts = prof::ProfileOptions()
                                            .record_shapes(s.kind != Kind::ProfilerOn)
                                            .profile_memory(s.kind == Kind::ProfilerOnMemory);
      // The profile starts before and stops after the timed loop: the time
      // is what recording adds to each op; merging the buffers at stop() is
      // post-processing and is not counted.
      Runner r;
      r.run = [th, opts, x = make({3, 3}, 1), y = Tensor()](int64_t calls, bool cpu) mutable {
        th();
        prof::profile p(opts);
        const double t0 = now_seconds(cpu);
        for (int64_t i = 0; i < calls; ++i) y = x + x;
        const double t = now_seconds(cpu) - t0;
        p.stop();
        return t;
      };
      return r;
    }
  }
  return skip("unknown case");
}

}  // namespace

Runner brisk_runner(const Spec& s) {
  try {
    return prepare(s);
  } catch (const std::exception& e) {
    return skip(std::string("brisk threw: ") + e.what());
  }
}

const TrainingData& training_data() {
  static const TrainingData data = [] {
    static brisk::Tensor images, labels;
    TrainingData d;
    try {
      const std::string root = brisk::data::FashionMNIST::default_root();
      brisk::data::FashionMNIST set(root, /*train=*/true);
      images = set.images().contiguous();
      labels = set.targets().contiguous();
      d.source = "Fashion-MNIST training set (" + root + ")";
    } catch (const std::exception& e) {
      brisk::manual_seed(0);
      images = brisk::randint(0, 256, {60000, 28, 28}, brisk::kUInt8);
      labels = brisk::randint(0, 10, {60000}, brisk::kInt64);
      d.source = std::string("random images (Fashion-MNIST not found: ") + e.what() + ")";
    }
    d.images = images.data_ptr<uint8_t>();
    d.labels = labels.data_ptr<int64_t>();
    d.n = images.size(0);
    return d;
  }();
  return data;
}

// The plain loop z[i] = x[i] + y[i]; for the Adam cases, over arrays sized
// so that one call moves as many bytes as one Adam step.
Runner reference_runner(const Spec& s) {
  const bool adam = s.kind == Kind::AdamFused || s.kind == Kind::AdamForeach || s.kind == Kind::AdamForLoop ||
                    s.kind == Kind::AdamPlainLoop;
  const int64_t len = adam ? static_cast<int64_t>(static_cast<double>(s.count * s.n) * kAdamFloatsPerElement / 3) : s.n;
  brisk::Tensor x = make({len}, 1), y = make({len}, 2), z = make({len}, 3);
  return make_runner([] {}, [x, y, z, xp = x.data_ptr<float>(), yp = y.data_ptr<float>(), zp = z.data_ptr<float>(),
                            n = len] { plain_add(zp, xp, yp, n); });
}

}  // namespace bench
