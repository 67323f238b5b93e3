// An MNIST-style CNN written the way libtorch programs are: a TORCH_MODULE
// model with holder members, the data:: pipeline (MNIST dataset, Normalize,
// Stack, make_data_loader), SGD with momentum, NoGradGuard for testing and
// brisk::save / brisk::load for the checkpoint. It compiles unchanged against
// libtorch after `sed -e 's/brisk::/torch::/g' -e 's|brisk/brisk.h|torch/torch.h|'`.
//
// Reads the IDX files (plain or .gz) of MNIST or Fashion-MNIST:
//   mnist [DATA_DIR] [EPOCHS] [MAX_BATCHES_PER_EPOCH]
// Exits with status 1 when the training loss did not fall.
#include <brisk/brisk.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

struct NetImpl : brisk::nn::Module {
  NetImpl()
      : conv1(brisk::nn::Conv2dOptions(1, 10, /*kernel_size=*/5)),
        conv2(brisk::nn::Conv2dOptions(10, 20, /*kernel_size=*/5)),
        fc1(320, 50),
        fc2(50, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }

  brisk::Tensor forward(brisk::Tensor x) {
    x = brisk::relu(brisk::max_pool2d(conv1->forward(x), 2));
    x = brisk::relu(brisk::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = brisk::relu(fc1->forward(x));
    x = brisk::dropout(x, /*p=*/0.5, /*train=*/is_training());
    x = fc2->forward(x);
    return brisk::log_softmax(x, /*dim=*/1);
  }

  brisk::nn::Conv2d conv1;
  brisk::nn::Conv2d conv2;
  brisk::nn::Dropout2d conv2_drop;
  brisk::nn::Linear fc1;
  brisk::nn::Linear fc2;
};
TORCH_MODULE(Net);

template <typename Loader>
double train_epoch(size_t epoch, Net& model, brisk::Device device, Loader& loader, brisk::optim::Optimizer& optimizer,
                   size_t max_batches) {
  model->train();
  size_t batch_idx = 0;
  double sum = 0;
  for (auto& batch : loader) {
    if (batch_idx == max_batches) break;
    auto data = batch.data.to(device), targets = batch.target.to(device);
    optimizer.zero_grad();
    auto output = model->forward(data);
    auto loss = brisk::nll_loss(output, targets);
    if (std::isnan(loss.template item<float>())) {
      std::cerr << "the loss is NaN\n";
      std::exit(1);
    }
    loss.backward();
    optimizer.step();
    sum += loss.template item<double>();
    if (++batch_idx % 20 == 0)
      std::printf("\rtrain epoch %zu: batch %zu, loss %.4f", epoch, batch_idx, loss.template item<float>());
  }
  std::printf("\n");
  return sum / static_cast<double>(batch_idx);
}

template <typename Loader>
double test(Net& model, brisk::Device device, Loader& loader, size_t dataset_size) {
  brisk::NoGradGuard no_grad;
  model->eval();
  double test_loss = 0;
  int64_t correct = 0;
  for (const auto& batch : loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    auto output = model->forward(data);
    test_loss += brisk::nll_loss(output, targets, /*weight=*/{}, brisk::Reduction::Sum).template item<double>();
    auto pred = output.argmax(1);
    correct += pred.eq(targets).sum().template item<int64_t>();
  }
  test_loss /= static_cast<double>(dataset_size);
  std::printf("test set: average loss %.4f, accuracy %.3f\n", test_loss,
              static_cast<double>(correct) / static_cast<double>(dataset_size));
  return test_loss;
}

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
  const size_t epochs = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1;
  const size_t max_batches = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : static_cast<size_t>(-1);
  brisk::manual_seed(1);
  brisk::set_num_threads(2);
  brisk::Device device(brisk::cuda::is_available() ? brisk::kCUDA : brisk::kCPU);

  Net model;
  model->to(device);

  auto train_dataset = brisk::data::datasets::MNIST(root)
                           .map(brisk::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(brisk::data::transforms::Stack<>());
  const size_t train_size = train_dataset.size().value();
  auto train_loader = brisk::data::make_data_loader<brisk::data::samplers::RandomSampler>(
      std::move(train_dataset), brisk::data::DataLoaderOptions().batch_size(64).workers(1));

  auto test_dataset = brisk::data::datasets::MNIST(root, brisk::data::datasets::MNIST::Mode::kTest)
                          .map(brisk::data::transforms::Normalize<>(0.1307, 0.3081))
                          .map(brisk::data::transforms::Stack<>());
  const size_t test_size = test_dataset.size().value();
  auto test_loader = brisk::data::make_data_loader(std::move(test_dataset), 1000);
  std::printf("%zu training and %zu test images from %s\n", train_size, test_size, root.c_str());

  brisk::optim::SGD optimizer(model->parameters(), brisk::optim::SGDOptions(0.01).momentum(0.5));

  const double before = test(model, device, *test_loader, test_size);
  for (size_t epoch = 1; epoch <= epochs; ++epoch) {
    train_epoch(epoch, model, device, *train_loader, optimizer, max_batches);
  }
  const double after = test(model, device, *test_loader, test_size);

  // The checkpoint: save, load into a fresh model, same test loss.
  brisk::save(model, "mnist_model.checkpoint");
  brisk::save(optimizer, "mnist_optimizer.checkpoint");
  Net restored;
  brisk::load(restored, "mnist_model.checkpoint");
  restored->to(device);
  const double reloaded = test(restored, device, *test_loader, test_size);
  if (std::abs(reloaded - after) > 1e-6 * std::abs(after)) {
    std::cerr << "the reloaded model differs: " << reloaded << " vs " << after << "\n";
    return 1;
  }
  if (!(after < before)) {
    std::cerr << "the test loss did not fall: " << before << " -> " << after << "\n";
    return 1;
  }
  std::printf("test loss %.4f -> %.4f\n", before, after);
  return 0;
}
