// Gradient accumulation: train with an effective batch of K * m samples
// while only m samples go through the model at a time (when a big batch does
// not fit in memory).
//
//   for each micro-batch i = 1..K:
//     loss_i = mean loss over the m samples / K    <- scaled by 1/K
//     loss_i.backward()                            <- adds into p.grad()
//   optimizer.step(); optimizer.zero_grad()        <- once per K micro-batches
//
// Gradients add up in p.grad() across backward calls until zero_grad() sets
// them to none, so K backward passes of (mean over m) / K leave exactly the
// gradient of the mean over all K * m samples. The example first shows this
// on one batch (the two gradients agree to float32 rounding), then trains an
// MLP on Fashion-MNIST this way (or on synthetic data when the dataset is not
// installed: apt-get install dataset-fashion-mnist).
//
//   grad_accumulation [--data DIR] [--micro-batch M] [--accumulate K] [--steps N]
//
// The equivalence needs a loss that is a mean over samples and a model in
// which samples do not interact: no BatchNorm (its batch statistics differ
// for m and K * m samples) and the same dropout draws. With micro-batches of
// unequal size (a short last one), weight each loss by m_i / (total samples)
// instead of 1/K.
#include <brisk/brisk.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

using namespace brisk;
namespace F = brisk::nn::functional;

namespace {

struct Data {
  Tensor train_x, train_y, test_x, test_y;  // float images (N, 784) and int64 labels (N)
  std::string source;
};

// Fashion-MNIST, normalised; or, when it is missing, a synthetic 10-class
// problem: labels from a random linear "teacher" of random inputs.
Data load_data(const std::string& dir) {
  const std::string root = dir.empty() ? data::FashionMNIST::default_root() : dir;
  try {
    data::FashionMNIST train(root, true), test(root, false);
    auto images = [](const Tensor& u8) { return (u8.to(kFloat) / 255.0 - 0.2860) / 0.3530; };
    return {images(train.images()).flatten(1), train.targets(), images(test.images()).flatten(1), test.targets(),
            "Fashion-MNIST from " + root};
  } catch (const Error& e) {
    std::printf("(%s)\n", e.what());
    Tensor teacher = randn({784, 10});
    Tensor x = randn({12000, 784});
    Tensor y = x.matmul(teacher).argmax(1);
    return {x.narrow(0, 0, 10000), y.narrow(0, 0, 10000), x.narrow(0, 10000, 2000), y.narrow(0, 10000, 2000),
            "synthetic data (Fashion-MNIST not found)"};
  }
}

std::shared_ptr<nn::SequentialImpl> make_model() {
  return std::make_shared<nn::SequentialImpl>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::LinearImpl>(784, 128), std::make_shared<nn::ReLUImpl>(), std::make_shared<nn::LinearImpl>(128, 10)});
}

// Every parameter's gradient, cloned (zero_grad() will drop the originals).
std::vector<Tensor> grads_of(nn::Module& model) {
  std::vector<Tensor> g;
  for (const Tensor& p : model.parameters()) g.push_back(p.grad().clone());
  return g;
}

double accuracy(nn::Module& model, const Tensor& x, const Tensor& y) {
  InferenceMode guard;
  return model.forward(x).argmax(1).eq(y).to(kDouble).mean().item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int64_t m = 32, K = 8, steps = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--data") dir = argv[i + 1];
    else if (k == "--micro-batch") m = std::atoll(argv[i + 1]);
    else if (k == "--accumulate") K = std::atoll(argv[i + 1]);
    else if (k == "--steps") steps = std::atoll(argv[i + 1]);
  }
  if (m < 1 || K < 1 || steps < 1 || argc % 2 == 0) {
    std::cerr << "usage: grad_accumulation [--data DIR] [--micro-batch M] [--accumulate K] [--steps N]\n";
    return 2;
  }
  set_num_threads(1);  // a 784-128-10 MLP on 32 samples is too small to share out between threads
  manual_seed(0);
  const Data d = load_data(dir);
  std::printf("%s: %lld training samples; micro-batches of %lld, %lld per step (effective batch %lld)\n",
              d.source.c_str(), static_cast<long long>(d.train_x.size(0)), static_cast<long long>(m),
              static_cast<long long>(K), static_cast<long long>(K * m));

  auto model = make_model();

  // ---- 1. One batch of K * m samples: full batch vs K accumulated micro-batches ----
  const Tensor xb = d.train_x.narrow(0, 0, K * m), yb = d.train_y.narrow(0, 0, K * m);
  model->zero_grad();
  F::cross_entropy(model->forward(xb), yb).backward();  // mean over K * m samples
  const std::vector<Tensor> full = grads_of(*model);

  model->zero_grad();  // gradients set to none
  for (int64_t i = 0; i < K; ++i) {
    const Tensor x = xb.narrow(0, i * m, m), y = yb.narrow(0, i * m, m);
    const Tensor loss = F::cross_entropy(model->forward(x), y) / static_cast<double>(K);  // mean over m, / K
    loss.backward();  // the first backward sets p.grad(), later ones add into it
  }
  const std::vector<Tensor> accumulated = grads_of(*model);

  std::printf("\ngradient of the mean loss over %lld samples: full batch vs %lld accumulated micro-batches\n",
              static_cast<long long>(K * m), static_cast<long long>(K));
  const auto names = model->named_parameters().keys();
  for (size_t i = 0; i < full.size(); ++i) {
    const double diff = (full[i] - accumulated[i]).abs().max().item<double>();
    const double scale = full[i].abs().max().item<double>();
    std::printf("  %-9s max |full - accumulated| = %.2e  (max |grad| = %.2e, relative %.1e)\n", names[i].c_str(),
                diff, scale, diff / scale);
  }

  // ---- 2. Training with accumulation ------------------------------------------------
  model = make_model();
  optim::AdamW opt(model->parameters(), optim::AdamWOptions(1e-3));
  data::DataLoader loader(data::TensorDataset(d.train_x, d.train_y),
                          data::DataLoaderOptions().batch_size(static_cast<size_t>(m)).shuffle(true).drop_last(true));
  std::printf("\ntraining %lld optimizer steps of %lld micro-batches each\n", static_cast<long long>(steps),
              static_cast<long long>(K));
  int64_t step = 0, micro = 0;
  double running = 0;
  opt.zero_grad();
  while (step < steps) {
    for (auto& batch : loader) {  // one epoch of micro-batches
      const Tensor loss = F::cross_entropy(model->forward(batch.data), batch.target);
      (loss / static_cast<double>(K)).backward();
      running += loss.item<double>() / static_cast<double>(K);
      if (++micro % K != 0) continue;  // keep accumulating
      opt.step();       // one update from K * m samples
      opt.zero_grad();  // start the next accumulation
      if (++step % 50 == 0 || step == steps)
        std::printf("  step %4lld  loss %.4f\n", static_cast<long long>(step), running);
      running = 0;
      if (step == steps) break;
    }
  }
  std::printf("test accuracy after %lld steps: %.2f%%\n", static_cast<long long>(steps),
              100 * accuracy(*model, d.test_x, d.test_y));
  return 0;
}
