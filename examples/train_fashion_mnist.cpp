// The brisk demo: trains an MLP and a small CNN on Fashion-MNIST (Debian's
// dataset-fashion-mnist) with AdamW, shows progress, reports test accuracy
// after every epoch, checkpoints model and optimizer (safetensors, written
// atomically) and resumes from the checkpoints when run again, then prints
// a summary.
//
//   train_fashion_mnist [--model mlp|cnn|both] [--epochs N] [--batch B] [--lr LR]
//                       [--threads T] [--checkpoint-dir DIR] [--fresh] [--data DIR]
//                       [--device cpu|cuda] [--amp]
//
// Under brisk-run (scripts/run-demo.sh --nproc N), each of the N processes
// trains on its shard of every epoch with DistributedDataParallel: the
// global batch stays --batch (each rank takes batch / N), gradients are
// averaged over the ranks, rank 0 evaluates, prints and writes checkpoints.
// With --device cuda each rank takes the GPU of its LOCAL_RANK and the
// gradients go over NCCL (not yet run on GPUs); on the CPU over Gloo.
//
// --amp trains under mixed precision: autocast to bfloat16 on the CPU (fast
// where the CPU has AVX512_BF16 or AMX), to float16 with a GradScaler on
// CUDA; the parameters and the optimizer stay float32.
#include <brisk/brisk.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

using namespace brisk;

namespace {

struct Args {
  std::string model = "both";
  int epochs = 5;
  int64_t batch = 128;
  double lr = 2e-3;
  int threads = 2;
  std::string checkpoint_dir = ".";  // fashion_<model>.safetensors in it
  std::string data;
  bool fresh = false;
  std::string device = "cpu";
  bool amp = false;
};

const char* kUsage =
    "usage: train_fashion_mnist [--model mlp|cnn|both] [--epochs N] [--batch B] [--lr LR] [--threads T]\n"
    "                           [--checkpoint-dir DIR] [--fresh] [--data DIR] [--device cpu|cuda] [--amp]\n";

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "missing value after " << k << "\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--model") a.model = value();
    else if (k == "--epochs") a.epochs = std::atoi(value().c_str());
    else if (k == "--batch") a.batch = std::atoll(value().c_str());
    else if (k == "--lr") a.lr = std::atof(value().c_str());
    else if (k == "--threads") a.threads = std::atoi(value().c_str());
    else if (k == "--checkpoint-dir") a.checkpoint_dir = value();
    else if (k == "--data") a.data = value();
    else if (k == "--fresh") a.fresh = true;
    else if (k == "--amp") a.amp = true;
    else if (k == "--device") a.device = value();
    else {
      (k == "--help" || k == "-h" ? std::cout : std::cerr) << kUsage;
      std::exit(k == "--help" || k == "-h" ? 0 : 2);
    }
  }
  if (a.model != "mlp" && a.model != "cnn" && a.model != "both") {
    std::cerr << "--model must be mlp, cnn or both (got " << a.model << ")\n" << kUsage;
    std::exit(2);
  }
  if (a.device != "cpu" && a.device.rfind("cuda", 0) != 0) {
    std::cerr << "--device must be cpu or cuda[:N] (got " << a.device << ")\n" << kUsage;
    std::exit(2);
  }
  if (a.epochs < 1 || a.batch < 1 || a.threads < 1 || !(a.lr > 0)) {
    std::cerr << "--epochs, --batch, --threads and --lr must be positive\n" << kUsage;
    std::exit(2);
  }
  return a;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One line, rewritten in place: [#####.....] batch 120/468  9100 samples/s  loss 0.4123
void progress(int epoch, size_t done, size_t total, double samples_per_s, double loss) {
  const int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::printf("\r  epoch %d [%s%s] %4zu/%zu  %6.0f samples/s  loss %.4f", epoch, std::string(filled, '#').c_str(),
              std::string(width - filled, '.').c_str(), done, total, samples_per_s, loss);
  std::fflush(stdout);
}

// The models see batches of uint8 images normalised to float [B, 28, 28]:
// the MLP flattens them, the CNN adds a channel dim.
Tensor model_input(const std::string& kind, const Tensor& images) {
  return kind == "mlp" ? images.flatten(1) : images.unsqueeze(1);
}

nn::Sequential make_model(const std::string& kind) {
  if (kind == "mlp")
    return nn::Sequential(nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 128), nn::ReLU(), nn::Linear(128, 10));
  // 28x28 -> conv 16 -> pool -> 14x14 -> conv 32 -> pool -> 7x7 -> 128 -> 10
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 16, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Flatten(), nn::Linear(32 * 7 * 7, 128), nn::ReLU(), nn::Linear(128, 10));
}

// Mixed precision (--amp): bfloat16 on the CPU, float16 on CUDA.
ScalarType amp_dtype(Device device) { return device.is_cuda() ? kHalf : kBFloat16; }

double evaluate(const std::string& kind, nn::Module& model, data::DataLoader& loader, Device device, bool amp) {
  InferenceMode guard;  // no graph, no version counting
  amp::autocast ac(device.type(), amp_dtype(device), amp);
  model.eval();
  int64_t correct = 0, seen = 0;
  for (auto& batch : loader) {
    Tensor logits = model.forward(model_input(kind, batch.data.to(device, /*non_blocking=*/true)));
    correct += logits.argmax(1).eq(batch.target.to(device, /*non_blocking=*/true)).sum().item<int64_t>();
    seen += batch.target.size(0);
  }
  model.train();
  return seen ? static_cast<double>(correct) / static_cast<double>(seen) : 0.0;
}

}  // namespace

int run(const Args& args) {
  Device device(args.device);
  if (device.is_cuda() && !cuda::is_available()) {
    std::fprintf(stderr, "--device %s: %s\n", args.device.c_str(), cuda::unavailable_reason().c_str());
    return 1;
  }
  // Started by brisk-run (WORLD_SIZE > 1): one rank of a data-parallel job.
  const char* ws = std::getenv("WORLD_SIZE");
  const bool ddp = ws != nullptr && std::atoi(ws) > 1;
  int rank = 0, world = 1;
  if (ddp) {
    if (device.is_cuda()) {  // one GPU per rank (LOCAL_RANK), NCCL between them
      const char* lr = std::getenv("LOCAL_RANK");
      device = Device(kCUDA, (lr != nullptr ? std::atoi(lr) : 0) % cuda::device_count());
      cuda::set_device(device.index);
    }
    distributed::init_process_group(device.is_cuda() ? "nccl" : "gloo");
    rank = distributed::get_rank();
    world = distributed::get_world_size();
    if (rank != 0) std::freopen("/dev/null", "w", stdout);  // rank 0 reports
  }
  set_num_threads(std::max(1, args.threads / world));
  manual_seed(0);

  const std::string root = args.data.empty() ? data::FashionMNIST::default_root() : args.data;
  std::printf("brisk %d.%d.%d: Fashion-MNIST from %s\n", BRISK_VERSION_MAJOR, BRISK_VERSION_MINOR,
              BRISK_VERSION_PATCH, root.c_str());
  auto train_set = std::make_shared<data::FashionMNIST>(root, /*train=*/true);
  auto test_set = std::make_shared<data::FashionMNIST>(root, /*train=*/false);
  // Images stay uint8 in memory; each batch is converted and normalised
  // (in the loader's worker), to the autocast dtype under --amp: the first
  // layer would cast it anyway.
  const data::Normalize normalize(0.2860, 0.3530, args.amp ? amp_dtype(device) : kFloat);
  // One rank: a shuffled epoch. N ranks: each its shard of the epoch's
  // order (the same (seed, epoch) everywhere) in batches of batch / N.
  auto sampler = std::make_shared<data::DistributedSampler>(train_set->size().value(), world, rank);
  data::DataLoaderOptions train_options = data::DataLoaderOptions()
                                              .batch_size(static_cast<size_t>(std::max<int64_t>(1, args.batch / world)))
                                              .num_workers(1)
                                              .pin_memory(device.is_cuda())
                                              .transform(normalize);
  if (ddp)
    train_options.sampler(sampler);
  else
    train_options.shuffle(true).seed(0);
  data::DataLoader train(train_set, train_options);
  data::DataLoader test(test_set,
                        data::DataLoaderOptions().batch_size(1000).pin_memory(device.is_cuda()).transform(normalize));
  std::printf("train %zu images, test %zu images, %zu batches of %lld per epoch\n", train_set->size().value(),
              test_set->size().value(), train.size(), static_cast<long long>(args.batch));

  struct Summary {
    std::string model;
    int64_t params;
    int epochs;
    double accuracy, seconds;
  };
  std::vector<Summary> summary;
  // A missing checkpoint directory is created now, not found missing after
  // the first epoch.
  std::error_code dir_error;
  std::filesystem::create_directories(args.checkpoint_dir, dir_error);
  if (dir_error) {
    std::fprintf(stderr, "error: cannot create the checkpoint directory '%s': %s\n", args.checkpoint_dir.c_str(),
                 dir_error.message().c_str());
    return 1;
  }
  const std::vector<std::string> kinds =
      args.model == "both" ? std::vector<std::string>{"mlp", "cnn"} : std::vector<std::string>{args.model};
  for (const std::string& kind : kinds) {
    manual_seed(0);
    const std::string checkpoint = args.checkpoint_dir + "/fashion_" + kind + ".safetensors";
    nn::Sequential model = make_model(kind);
    model->to(device);
    optim::AdamW opt(model->parameters(), optim::AdamWOptions(args.lr).weight_decay(1e-4));
    // The learning rate follows a cosine from lr to 0 over all the steps.
    const int64_t steps_per_epoch = static_cast<int64_t>(train.size());
    optim::CosineAnnealingLR schedule(opt, std::max<int64_t>(1, args.epochs * steps_per_epoch));
    // float16 gradients can underflow: the loss is scaled (bfloat16 has
    // float32's range and needs no scaler).
    amp::GradScaler scaler(amp::GradScalerOptions().set_enabled(args.amp && amp_dtype(device) == kHalf));
    int64_t n_params = 0;
    for (const Tensor& p : model->parameters()) n_params += p.numel();
    std::cout << "\n== " << kind << " (" << n_params << " parameters) ==\n" << *model << "\n";

    // Resume: the checkpoint holds the model's tensors under "model." and the
    // optimizer's under "optim.", plus the finished epoch count as metadata.
    int start_epoch = 0;
    if (!args.fresh && std::filesystem::exists(checkpoint)) {
      StateDict all = load(checkpoint);
      StateDict m;
      optim::StateDict o;
      for (const auto& [name, t] : all) {
        if (name.rfind("model.", 0) == 0) m.insert(name.substr(6), t);
        if (name.rfind("optim.", 0) == 0) o[name.substr(6)] = t;
      }
      model->load_state_dict(m);
      opt.load_state_dict(o);
      const Metadata meta = load_metadata(checkpoint);
      start_epoch = meta.count("epoch") ? std::stoi(meta.at("epoch")) : 0;
      schedule.step(std::min(start_epoch, args.epochs) * steps_per_epoch);
      std::printf("resumed from %s after epoch %d\n", checkpoint.c_str(), start_epoch);
    }

    // Data parallel: rank 0's weights everywhere, gradients averaged
    // bucket by bucket during the backward (the model itself is evaluated
    // and saved: the same weights on every rank).
    std::shared_ptr<nn::parallel::DistributedDataParallelImpl> ddp_model;
    if (ddp) ddp_model = std::make_shared<nn::parallel::DistributedDataParallelImpl>(model);
    auto forward = [&](const Tensor& x) { return ddp ? ddp_model->forward(x) : model(x); };

    const auto t_start = std::chrono::steady_clock::now();
    double accuracy = start_epoch > 0 && rank == 0 ? evaluate(kind, *model, test, device, args.amp) : 0.0;
    for (int epoch = start_epoch + 1; epoch <= args.epochs; ++epoch) {
      sampler->set_epoch(static_cast<uint64_t>(epoch));
      const auto t0 = std::chrono::steady_clock::now();
      double running = 0;
      size_t done = 0, samples = 0;
      for (auto& batch : train) {
        // Pinned batches: the copies to a GPU do not block the host.
        Tensor loss;
        {
          amp::autocast ac(device.type(), amp_dtype(device), args.amp);  // a no-op without --amp
          Tensor logits = forward(model_input(kind, batch.data.to(device, /*non_blocking=*/true)));
          loss = nn::functional::cross_entropy(logits, batch.target.to(device, /*non_blocking=*/true));
        }
        opt.zero_grad();  // gradients set to none
        scaler.scale(loss).backward();
        scaler.step(opt);
        scaler.update();
        schedule.step();
        const double l = loss.item<double>();
        running = done == 0 ? l : 0.95 * running + 0.05 * l;
        ++done;
        samples += static_cast<size_t>(batch.target.size(0)) * static_cast<size_t>(world);
        if (done % 20 == 0 || done == train.size())
          progress(epoch, done, train.size(), samples / seconds_since(t0), running);
      }
      if (rank == 0) {  // (every rank holds the same weights)
        accuracy = evaluate(kind, *model, test, device, args.amp);
        std::printf("\n  epoch %d: %.1f s, test accuracy %.2f%%\n", epoch, seconds_since(t0), 100 * accuracy);
        StateDict all;
        for (const auto& [name, t] : model->state_dict()) all.insert("model." + name, t);
        for (const auto& [name, t] : opt.state_dict()) all.insert("optim." + name, t);
        save(all, checkpoint, {{"epoch", std::to_string(epoch)}});
      }
      if (ddp) distributed::barrier();  // the checkpoint is written before anyone resumes from it
    }
    summary.push_back({kind, n_params, args.epochs, accuracy, seconds_since(t_start)});
    std::printf("%s: checkpoint %s\n", kind.c_str(), checkpoint.c_str());
  }

  std::printf("\nsummary (%s%s%s, %d threads, batch %lld, AdamW lr %g with cosine decay):\n", device.str().c_str(),
              args.amp ? (device.is_cuda() ? ", float16 autocast" : ", bfloat16 autocast") : "",
              ddp ? (", " + std::to_string(world) + " processes (DistributedDataParallel)").c_str() : "", args.threads,
              static_cast<long long>(args.batch), args.lr);
  std::printf("  %-5s %10s %7s %14s %10s\n", "model", "parameters", "epochs", "test accuracy", "time");
  for (const Summary& r : summary)
    std::printf("  %-5s %10lld %7d %13.2f%% %9.1fs\n", r.model.c_str(), static_cast<long long>(r.params), r.epochs,
                100 * r.accuracy, r.seconds);
  std::printf("run again to resume from the checkpoints (--fresh to start over)\n");
  if (ddp) distributed::destroy_process_group();
  return 0;
}

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  try {
    return run(args);
  } catch (const Error& e) {
    std::fprintf(stderr, "\nerror: %s\n", e.what());
    return 1;
  }
}
