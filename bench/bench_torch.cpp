// The libtorch side of brisk_bench: the same cases as bench_brisk.cpp, written
// as a libtorch user would write them (default grad mode, torch:: factories).
#include <torch/torch.h>
#include <torch/version.h>

#include <exception>
#include <memory>
#include <vector>

#include "bench.h"

// libtorch's GEMM goes to the same OpenBLAS (pthread build) that brisk uses.
extern "C" void openblas_set_num_threads(int);

namespace bench {

std::string torch_version() { return TORCH_VERSION; }

void torch_init() {
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // Already set (it may be set only once per process): keep going.
  }
}

namespace {

torch::Tensor make(at::IntArrayRef sizes, uint32_t seed, bool half_zero = false) {
  torch::Tensor t = torch::empty(sizes, torch::kFloat);
  if (half_zero)
    fill_half_zero(t.data_ptr<float>(), t.numel(), seed);
  else
    fill_inputs(t.data_ptr<float>(), t.numel(), seed);
  return t;
}

// One SGD step of the MLP in bench.h, written as a libtorch user would.
struct Mlp {
  torch::Tensor x;
  std::vector<torch::Tensor> params;  // w1, b1, w2, b2, w3, b3

  Mlp() : x(make({kMlpBatch, kMlpSizes[0]}, 1)) {
    for (int l = 0; l < 3; ++l) {
      const int64_t in = kMlpSizes[l], out = kMlpSizes[l + 1];
      params.push_back((torch::randn({out, in}) * kMlpInitScale).requires_grad_());
      params.push_back((torch::randn({out}) * kMlpInitScale).requires_grad_());
    }
  }
  void step() {
    for (torch::Tensor& p : params) p.mutable_grad().reset();
    const torch::Tensor &w1 = params[0], &b1 = params[1], &w2 = params[2], &b2 = params[3], &w3 = params[4],
                        &b3 = params[5];
    torch::Tensor h = (x.matmul(w1.t()) + b1).relu();
    torch::Tensor h2 = (h.matmul(w2.t()) + b2).relu();
    torch::Tensor out = h2.matmul(w3.t()) + b3;
    torch::Tensor loss = out.pow(2).mean();
    loss.backward();
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : params) p.add_(p.grad(), -kMlpLearningRate);
  }
};

// Adam over `count` parameters with fixed random gradients.
struct AdamCase {
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Adam> opt;
  AdamCase(int64_t count, int64_t n) {
    for (int64_t i = 0; i < count; ++i) {
      torch::Tensor p = make({n}, static_cast<uint32_t>(2 * i + 1)).requires_grad_();
      p.mutable_grad() = make({n}, static_cast<uint32_t>(2 * i + 2));
      params.push_back(p);
    }
    opt = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(1e-3));
  }
};

torch::nn::Sequential epoch_model(bool cnn) {
  namespace tnn = torch::nn;
  if (!cnn)
    return tnn::Sequential(tnn::Linear(784, 256), tnn::ReLU(), tnn::Linear(256, 128), tnn::ReLU(), tnn::Linear(128, 10));
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 16, 3).padding(1)), tnn::ReLU(),
                         tnn::MaxPool2d(tnn::MaxPool2dOptions(2)), tnn::Conv2d(tnn::Conv2dOptions(16, 32, 3).padding(1)),
                         tnn::ReLU(), tnn::MaxPool2d(tnn::MaxPool2dOptions(2)), tnn::Flatten(),
                         tnn::Linear(32 * 7 * 7, 128), tnn::ReLU(), tnn::Linear(128, 10));
}

// One epoch written as a libtorch user would without a DataLoader: a random
// permutation, index_select of uint8 images, convert and normalise.
struct EpochCase {
  bool cnn;
  torch::nn::Sequential model;
  std::unique_ptr<torch::optim::AdamW> opt;
  torch::Tensor images, labels;
  double last_loss = 0;
  explicit EpochCase(bool c) : cnn(c), model(epoch_model(c)) {
    const TrainingData& d = training_data();
    images = torch::from_blob(const_cast<uint8_t*>(d.images), {d.n, 28, 28}, torch::kUInt8);
    labels = torch::from_blob(const_cast<int64_t*>(d.labels), {d.n}, torch::kInt64);
    opt = std::make_unique<torch::optim::AdamW>(
        model->parameters(), torch::optim::AdamWOptions(kEpochLr).weight_decay(kEpochWeightDecay));
  }
  void run() {
    const int64_t n = images.size(0);
    torch::Tensor perm = torch::randperm(n, torch::kInt64);
    for (int64_t i = 0; i < n; i += kEpochBatch) {
      torch::Tensor idx = perm.slice(0, i, std::min(i + kEpochBatch, n));
      torch::Tensor x = images.index_select(0, idx).to(torch::kFloat).div_(255).sub_(kEpochMean).div_(kEpochStd);
      x = cnn ? x.unsqueeze(1) : x.flatten(1);
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), labels.index_select(0, idx));
      opt->zero_grad();
      loss.backward();
      opt->step();
      last_loss = loss.item<double>();
    }
  }
};

Runner prepare(const Spec& s) {
  using torch::Tensor;
  // at::set_num_threads sizes only libtorch's OpenMP pool; its GEMM runs in
  // the OpenBLAS pool, set here too (brisk::set_num_threads does the same).
  const auto th = [n = s.threads] {
    torch::set_num_threads(n);
    openblas_set_num_threads(n);
  };
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
      return make_runner(th, [x = make({3, 3}, 1), y = Tensor()]() mutable { y = torch::matmul(x, x); });
    case Kind::HostEmpty:
      return make_runner(th, [y = Tensor()]() mutable { y = torch::empty({3, 3}); });
    case Kind::BwAdd:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2), z = Tensor()]() mutable { z = x + y; });
    case Kind::BwAddOut:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2), z = make({s.n}, 3)]() mutable {
        torch::add_out(z, x, y);
      });
    case Kind::BwAdd_:
      return make_runner(th, [x = make({s.n}, 1), y = make({s.n}, 2)]() mutable { x.add_(y); });
    case Kind::BwPlainLoop:
    case Kind::BwPlainLoop512:
      return skip("reference loop: brisk side only");
    case Kind::Matmul:
      return make_runner(th, [x = make({s.n, s.n}, 1), y = make({s.n, s.n}, 2), z = Tensor()]() mutable {
        z = torch::matmul(x, y);
      });
    case Kind::MatmulBf16:
      return make_runner(th, [x = make({s.n, s.n}, 1).to(torch::kBFloat16), y = make({s.n, s.n}, 2).to(torch::kBFloat16),
                              z = Tensor()]() mutable { z = torch::matmul(x, y); });
    case Kind::Nonzero:
      return make_runner(th, [x = make({s.n}, 1, /*half_zero=*/true), z = Tensor()]() mutable {
        z = torch::nonzero(x);
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
          [](const Tensor& a, const Tensor& b) { return torch::atan2(a, b); },
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
          [](const Tensor& a, const Tensor&) { return torch::softplus(a); },
          [](const Tensor& a, const Tensor&) { return torch::gelu(a); },
          [](const Tensor& a, const Tensor&) { return torch::gelu(a, "tanh"); },
          [](const Tensor& a, const Tensor&) { return torch::silu(a); },
          [](const Tensor& a, const Tensor&) { return torch::mish(a); },
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
      return make_runner(th, [x = make({s.n}, 1), h = make({s.n}, 2).to(torch::kHalf)]() mutable { h.copy_(x); });
    case Kind::SdpaForward:
    case Kind::SdpaForwardBackward: {
#if TORCH_VERSION_MAJOR >= 2
      const SdpaShape d = sdpa_shape(s.n);
      Tensor q = make({d.B, d.H, d.L, d.E}, 1), k = make({d.B, d.H, d.L, d.E}, 2), v = make({d.B, d.H, d.L, d.E}, 3);
      if (s.kind == Kind::SdpaForward)
        return make_runner(th, [q, k, v, z = Tensor()]() mutable { z = at::scaled_dot_product_attention(q, k, v); });
      q.requires_grad_(), k.requires_grad_(), v.requires_grad_();
      return make_runner(th, [q, k, v, g = make({d.B, d.H, d.L, d.E}, 4)]() mutable {
        q.mutable_grad().reset(), k.mutable_grad().reset(), v.mutable_grad().reset();
        at::scaled_dot_product_attention(q, k, v).backward(g);
      });
#else
      return skip("libtorch 1.x has no scaled_dot_product_attention");
#endif
    }
    case Kind::EncoderForward:
    case Kind::EncoderForwardBackward: {
      torch::nn::TransformerEncoderLayer layer(torch::nn::TransformerEncoderLayerOptions(kEncoderDModel, kEncoderHeads)
                                                   .dim_feedforward(kEncoderFfn)
                                                   .dropout(0.0)
                                                   .activation(torch::kGELU));
      Tensor x = make({kEncoderSeq, kEncoderBatch, kEncoderDModel}, 1);
      if (s.kind == Kind::EncoderForward)
        return make_runner(th, [layer, x, z = Tensor()]() mutable { z = layer->forward(x); });
      x.requires_grad_();
      return make_runner(th, [layer, x, g = make({kEncoderSeq, kEncoderBatch, kEncoderDModel}, 2)]() mutable {
        layer->zero_grad(/*set_to_none=*/true);
        x.mutable_grad().reset();
        layer->forward(x).backward(g);
      });
    }
    case Kind::LstmForwardBackward: {
      torch::nn::LSTM lstm(torch::nn::LSTMOptions(kLstmInput, kLstmHidden).num_layers(kLstmLayers));
      Tensor x = make({kLstmSeq, kLstmBatch, kLstmInput}, 1).requires_grad_();
      return make_runner(th, [lstm, x, g = make({kLstmSeq, kLstmBatch, kLstmHidden}, 2)]() mutable {
        lstm->zero_grad(/*set_to_none=*/true);
        x.mutable_grad().reset();
        std::get<0>(lstm(x)).backward(g);
      });
    }
    case Kind::AutogradHost:
      return make_runner(th, [x = make({3, 3}, 1), w = make({3, 3}, 2).requires_grad_(), b = make({3, 3}, 3),
                              y = Tensor()]() mutable { y = x * w + b; });
    case Kind::AutogradHostBackward:
      return make_runner(th, [x = make({3, 3}, 1), w = make({3, 3}, 2).requires_grad_(), b = make({3, 3}, 3),
                              g = torch::ones({3, 3}), y = Tensor()]() mutable {
        w.mutable_grad().reset();
        y = x * w + b;
        y.backward(g);
      });
    case Kind::HolderCall:
      return make_runner(th, [x = make({3, 3}, 1), lin = torch::nn::Linear(3, 3), y = Tensor()]() mutable {
        y = lin(x);
      });
    case Kind::HolderForward:
      return make_runner(th, [x = make({3, 3}, 1), lin = torch::nn::Linear(3, 3), y = Tensor()]() mutable {
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
#if !(TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
      if (s.kind == Kind::RowRmsNorm || s.kind == Kind::RowRmsNormBwd)
        return skip("torch::rms_norm needs libtorch 2.4 or later");
#endif
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
          x.mutable_grad().reset();
          w.mutable_grad().reset();
          b.mutable_grad().reset();
        }
        switch (k) {
          case Kind::RowSoftmax:
          case Kind::RowSoftmaxBwd: y = torch::softmax(x, 1); break;
          case Kind::RowLogSoftmax:
          case Kind::RowLogSoftmaxBwd: y = torch::log_softmax(x, 1); break;
          case Kind::RowLayerNorm:
          case Kind::RowLayerNormBwd: y = torch::layer_norm(x, {n}, w, b); break;
          default:
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
            y = torch::rms_norm(x, {n}, w, 1e-6);
#endif
            break;
        }
        if (bwd) y.backward(g);
      });
    }
    case Kind::ActivationBwd: {
      namespace F = torch::nn::functional;
      const auto dt = s.count ? torch::kBFloat16 : torch::kFloat;
      Tensor x = make({1024, s.n}, 1).to(dt).requires_grad_(), g = make({1024, s.n}, 4).to(dt);
      const int op = s.op;
      return make_runner(th, [x, g, op, y = Tensor()]() mutable {
        x.mutable_grad().reset();
        switch (op) {
          case 0: y = torch::gelu(x); break;
          case 1: y = torch::gelu(x, "tanh"); break;
          case 2: y = torch::silu(x); break;
          case 3: y = torch::sigmoid(x); break;
          case 4: y = torch::tanh(x); break;
          case 5: y = torch::mish(x); break;
          case 6: y = torch::hardswish(x); break;
          case 7: y = F::hardtanh(x); break;
          case 8: y = F::leaky_relu(x); break;
          case 9: y = F::elu(x); break;
          case 11: y = F::selu(x); break;
          case 12: y = torch::hardsigmoid(x); break;
          case 13: y = F::softshrink(x); break;
          case 14: y = F::hardshrink(x); break;
          case 15: y = F::logsigmoid(x); break;
          default: y = F::mse_loss(x, g, F::MSELossFuncOptions(torch::kNone)); break;
        }
        y.backward(g);
      });
    }
    case Kind::AdamFused:
    case Kind::AdamForeach:
    case Kind::AdamForLoop:
      return make_runner(th, [c = std::make_shared<AdamCase>(s.count, s.n)] { c->opt->step(); });
    case Kind::AdamPlainLoop:
      return skip("reference loop: brisk side only");
    case Kind::EpochMlp:
    case Kind::EpochCnn:
      return make_runner(th, [c = std::make_shared<EpochCase>(s.kind == Kind::EpochCnn)] { c->run(); });
    case Kind::ProfilerOff:
    case Kind::ProfilerOn:
    case Kind::ProfilerOnShapes:
    case Kind::ProfilerOnMemory:
      return skip("brisk's profiler: brisk side only");
  }
  return skip("unknown case");
}

}  // namespace

Runner torch_runner(const Spec& s) {
  try {
    return prepare(s);
  } catch (const std::exception& e) {
    return skip(std::string("libtorch threw: ") + e.what());
  }
}

}  // namespace bench
