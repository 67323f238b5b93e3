// A variational autoencoder on Fashion-MNIST with brisk::distributions
// (issue 18's example): the encoder gives a Normal posterior q(z | x) over
// a 20-dim latent, a sample z = q.rsample() goes through the decoder (the
// reparameterization trick: gradients reach the encoder through the
// sample), and the loss is the negative evidence lower bound
//
//   -ELBO = -log p(x | z) + KL(q(z | x) || N(0, I))
//
// with p(x | z) independent Bernoullis over the pixels (in [0, 1]) and the
// KL divergence in closed form from the registry. The loss per image falls
// from about 284 nats (mean over the first epoch) to about 250 in the third
// (2 threads, 1-2 s an epoch on this machine).
//
//   vae_fashion_mnist [--data DIR] [--epochs N] [--batches B] [--threads T]
//
// --batches caps the batches per epoch (the tests run a short version).
#include <brisk/brisk.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace brisk;
namespace D = brisk::distributions;
namespace F = brisk::nn::functional;

namespace {

struct VaeImpl : nn::Module {
  nn::Linear enc{nullptr}, mu{nullptr}, logvar{nullptr}, dec1{nullptr}, dec2{nullptr};
  VaeImpl() {
    enc = register_module("enc", nn::Linear(784, 400));
    mu = register_module("mu", nn::Linear(400, 20));
    logvar = register_module("logvar", nn::Linear(400, 20));
    dec1 = register_module("dec1", nn::Linear(20, 400));
    dec2 = register_module("dec2", nn::Linear(400, 784));
  }
  /// q(z | x): independent Normals over the 20 latent dims.
  D::Independent posterior(const Tensor& x) {
    const Tensor h = relu(enc(x));
    return D::Independent(D::Normal(mu(h), (0.5 * logvar(h)).exp()), 1);
  }
  /// p(x | z): the pixel logits.
  Tensor decode(const Tensor& z) { return dec2(relu(dec1(z))); }
};
TORCH_MODULE(Vae);

}  // namespace

int main(int argc, char** argv) {
  std::string root;
  int epochs = 3, threads = 2;
  int64_t max_batches = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--data") root = argv[i + 1];
    else if (k == "--epochs") epochs = std::atoi(argv[i + 1]);
    else if (k == "--batches") max_batches = std::atoll(argv[i + 1]);
    else if (k == "--threads") threads = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: vae_fashion_mnist [--data DIR] [--epochs N] [--batches B] [--threads T]\n");
      return 2;
    }
  }
  set_num_threads(threads);
  manual_seed(0);
  if (root.empty()) root = data::FashionMNIST::default_root();
  auto train = std::make_shared<data::FashionMNIST>(root, /*train=*/true);
  // pixels to [0, 1]: (x / 255 - 0) / 1
  data::DataLoader loader(train, data::DataLoaderOptions().batch_size(128).shuffle(true).seed(0).transform(
                                     data::Normalize(0.0, 1.0)));
  Vae vae;
  optim::Adam opt(vae->parameters(), optim::AdamOptions(1e-3));
  double first = 0, last = 0;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    double total = 0;
    int64_t seen = 0, batches = 0;
    for (auto& batch : loader) {
      if (max_batches >= 0 && batches >= max_batches) break;
      const Tensor x = batch.data.view({-1, 784});
      D::Independent q = vae->posterior(x);
      const Tensor z = q.rsample();  // differentiable in the encoder's outputs
      // Bernoulli likelihood of pixels in [0, 1] (the usual VAE loss; the
      // values are not in {0, 1}, so validation is off for it)
      const D::Independent px(D::Bernoulli(D::logits(vae->decode(z)), /*validate_args=*/false), 1);
      const D::Independent prior(D::Normal(zeros_like(z), ones_like(z)), 1);
      const Tensor loss = (-px.log_prob(x) + D::kl_divergence(q, prior)).mean();
      opt.zero_grad();
      loss.backward();
      opt.step();
      total += loss.item<double>() * static_cast<double>(x.size(0));
      seen += x.size(0);
      ++batches;
    }
    const double avg = total / static_cast<double>(seen);
    if (epoch == 1) first = avg;
    last = avg;
    std::printf("epoch %d: -ELBO %.1f nats per image (%lld images, %.1f s)\n", epoch, avg,
                static_cast<long long>(seen),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  // a sample from the prior through the decoder: mean pixel intensity as a sanity figure
  {
    NoGradGuard ng;
    const Tensor img = vae->decode(randn({16, 20})).sigmoid();
    std::printf("16 images decoded from the prior: mean intensity %.3f\n", img.mean().item<double>());
  }
  if (epochs > 1 && !(last < first)) {
    std::fprintf(stderr, "the loss did not fall (%.1f -> %.1f)\n", first, last);
    return 1;
  }
  return 0;
}
