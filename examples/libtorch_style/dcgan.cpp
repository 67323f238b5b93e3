// A DCGAN on MNIST-style images, written the way libtorch programs are:
// generator and discriminator as nn::Sequential of holders with options
// (ConvTranspose2d, BatchNorm2d, LeakyReLU, ...), Adam with betas, BCE loss,
// label smoothing with uniform_, and checkpoints with brisk::save. It
// compiles unchanged against libtorch after
// `sed -e 's/brisk::/torch::/g' -e 's|brisk/brisk.h|torch/torch.h|'`.
//
//   dcgan [DATA_DIR] [MAX_BATCHES]
// Exits with status 1 when the discriminator did not learn (its loss on the
// first batches must exceed its loss on the last ones) or a loss is not finite.
#include <brisk/brisk.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace nn = brisk::nn;

constexpr int64_t kNoiseSize = 32;
constexpr int64_t kBatchSize = 32;

struct DCGANGeneratorImpl : nn::Module {
  DCGANGeneratorImpl(int64_t noise_size)
      : conv1(nn::ConvTranspose2dOptions(noise_size, 128, 4).bias(false)),
        batch_norm1(128),
        conv2(nn::ConvTranspose2dOptions(128, 64, 3).stride(2).padding(1).bias(false)),
        batch_norm2(64),
        conv3(nn::ConvTranspose2dOptions(64, 32, 4).stride(2).padding(1).bias(false)),
        batch_norm3(32),
        conv4(nn::ConvTranspose2dOptions(32, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("conv4", conv4);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
    register_module("batch_norm3", batch_norm3);
  }

  brisk::Tensor forward(brisk::Tensor x) {
    x = brisk::relu(batch_norm1(conv1(x)));
    x = brisk::relu(batch_norm2(conv2(x)));
    x = brisk::relu(batch_norm3(conv3(x)));
    x = brisk::tanh(conv4(x));
    return x;
  }

  nn::ConvTranspose2d conv1, conv2, conv3, conv4;
  nn::BatchNorm2d batch_norm1, batch_norm2, batch_norm3;
};
TORCH_MODULE(DCGANGenerator);

nn::Sequential make_discriminator() {
  return nn::Sequential(
      // 1 x 28 x 28 -> 32 x 14 x 14
      nn::Conv2d(nn::Conv2dOptions(1, 32, 4).stride(2).padding(1).bias(false)),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      // -> 64 x 7 x 7
      nn::Conv2d(nn::Conv2dOptions(32, 64, 4).stride(2).padding(1).bias(false)), nn::BatchNorm2d(64),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      // -> 128 x 3 x 3
      nn::Conv2d(nn::Conv2dOptions(64, 128, 3).stride(2).padding(0).bias(false)), nn::BatchNorm2d(128),
      nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2)),
      // -> 1 x 1 x 1
      nn::Conv2d(nn::Conv2dOptions(128, 1, 3).stride(1).padding(0).bias(false)), nn::Sigmoid());
}

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const int64_t max_batches = argc > 2 ? std::atoll(argv[2]) : 200;
  brisk::manual_seed(1);
  brisk::set_num_threads(2);
  brisk::Device device(brisk::kCPU);
  if (brisk::cuda::is_available()) device = brisk::Device(brisk::kCUDA);

  DCGANGenerator generator(kNoiseSize);
  generator->to(device);
  nn::Sequential discriminator = make_discriminator();
  discriminator->to(device);

  auto dataset = brisk::data::datasets::MNIST(root)
                     .map(brisk::data::transforms::Normalize<>(0.5, 0.5))
                     .map(brisk::data::transforms::Stack<>());
  auto data_loader = brisk::data::make_data_loader(std::move(dataset),
                                                   brisk::data::DataLoaderOptions().batch_size(kBatchSize).workers(1));

  brisk::optim::Adam generator_optimizer(generator->parameters(),
                                         brisk::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));
  brisk::optim::Adam discriminator_optimizer(discriminator->parameters(),
                                             brisk::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)));

  int64_t batch_index = 0;
  double d_first = 0, d_last = 0;
  const int64_t window = 10;
  for (auto& batch : *data_loader) {
    if (batch_index == max_batches) break;
    // Train the discriminator on real images (labels smoothed into [0.8, 1]) ...
    discriminator->zero_grad();
    brisk::Tensor real_images = batch.data.to(device);
    brisk::Tensor real_labels = brisk::empty(batch.data.size(0), device).uniform_(0.8, 1.0);
    brisk::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
    brisk::Tensor d_loss_real = brisk::binary_cross_entropy(real_output, real_labels);
    d_loss_real.backward();

    // ... and on fakes.
    brisk::Tensor noise = brisk::randn({batch.data.size(0), kNoiseSize, 1, 1}, device);
    brisk::Tensor fake_images = generator->forward(noise);
    brisk::Tensor fake_labels = brisk::zeros(batch.data.size(0), device);
    brisk::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
    brisk::Tensor d_loss_fake = brisk::binary_cross_entropy(fake_output, fake_labels);
    d_loss_fake.backward();

    brisk::Tensor d_loss = d_loss_real + d_loss_fake;
    discriminator_optimizer.step();

    // Train the generator to fool it.
    generator->zero_grad();
    fake_labels.fill_(1);
    fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
    brisk::Tensor g_loss = brisk::binary_cross_entropy(fake_output, fake_labels);
    g_loss.backward();
    generator_optimizer.step();

    const double d = d_loss.item<double>(), g = g_loss.item<double>();
    if (!std::isfinite(d) || !std::isfinite(g)) {
      std::cerr << "a loss is not finite\n";
      return 1;
    }
    if (batch_index < window) d_first += d / window;
    if (batch_index >= max_batches - window) d_last += d / window;
    ++batch_index;
    if (batch_index % 20 == 0)
      std::printf("\rbatch %lld/%lld  D loss %.4f  G loss %.4f", static_cast<long long>(batch_index),
                  static_cast<long long>(max_batches), d, g);
  }
  std::printf("\n");
  brisk::save(generator, "dcgan_generator.checkpoint");
  brisk::save(generator_optimizer, "dcgan_generator_optimizer.checkpoint");
  brisk::save(discriminator, "dcgan_discriminator.checkpoint");
  // A few samples, as a tensor file.
  brisk::NoGradGuard no_grad;
  generator->eval();
  brisk::Tensor samples = generator->forward(brisk::randn({8, kNoiseSize, 1, 1}, device));
  brisk::save((samples + 1.0) / 2.0, "dcgan_samples.checkpoint");
  std::printf("discriminator loss: first %lld batches %.4f, last %lld batches %.4f\n",
              static_cast<long long>(window), d_first, static_cast<long long>(window), d_last);
  return d_last < d_first ? 0 : 1;
}
