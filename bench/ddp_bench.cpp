// brisk_ddp_bench: one rank of a DistributedDataParallel measurement (run
// it with brisk-run). Prints, on rank 0, all_reduce times per message size
// (Gloo on this machine's transport) and the training step of an MLP
// four ways: DDP with the default buckets (communication overlapping the
// backward), the same with gradient_as_bucket_view, DDP with one bucket
// (every all-reduce after the backward), and the same step without DDP (no
// communication): docs/design/distributed.md.
//
//   brisk-run --nproc-per-node 2 build/bench215/bench/brisk_ddp_bench
//   brisk-run --nproc-per-node 2 build/bench215/bench/brisk_ddp_bench --device cuda   (NCCL, a GPU per rank;
//                                                                                     all_reduce up to 256 MiB)
#include <brisk/brisk.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "timing.h"

using namespace brisk;
namespace dist = brisk::distributed;
namespace F = brisk::nn::functional;
using bench_timing::time_ms;

int main(int argc, char** argv) {
  set_num_threads(1);
  const bool gpu = argc > 2 && std::string(argv[1]) == "--device" && std::string(argv[2]) == "cuda";
  Device dev(kCPU);
  if (gpu) {  // one GPU per rank, NCCL between them
    const char* lr = std::getenv("LOCAL_RANK");
    cuda::set_device((lr ? std::atoi(lr) : 0) % cuda::device_count());
    dev = Device(kCUDA, cuda::current_device());
  }
  dist::init_process_group(gpu ? "nccl" : "gloo");
  const int rank = dist::get_rank(), world = dist::get_world_size();
  if (rank == 0) std::printf("ranks %d, backend %s\n", world, dist::get_backend().c_str());
  // (on a GPU the collective returns at once: the time includes waiting for it)
  auto settle = [&] {
    if (gpu) cuda::synchronize();
  };
  for (int64_t bytes = 1 << 10; bytes <= (int64_t{1} << 28); bytes *= 4) {
    Tensor t = ones({bytes / 4}, TensorOptions(kFloat).device(dev));
    dist::barrier();
    const double ms = time_ms(
        [&] {
          dist::all_reduce(t);
          settle();
        },
        5, bytes >= (1 << 24) ? 2 : 20);
    if (rank == 0) std::printf("allreduce_%lld_bytes_ms %.4f\n", static_cast<long long>(bytes), ms);
  }
  manual_seed(0);
  const int64_t batch = 64;
  Tensor x = randn({batch, 1024}).to(dev), y = randint(0, 10, {batch}).to(dev);
  auto make = [] {
    return nn::Sequential(nn::Linear(1024, 2048), nn::ReLU(), nn::Linear(2048, 2048), nn::ReLU(),
                          nn::Linear(2048, 1024), nn::ReLU(), nn::Linear(1024, 10));
  };
  // as_view: gradient_as_bucket_view, the gradients zeroed in place
  auto step_time = [&](const char* key, double cap_mb, bool use_ddp, bool as_view = false) {
    nn::Sequential model = make();
    model->to(dev);
    std::shared_ptr<nn::parallel::DistributedDataParallelImpl> ddp;
    if (use_ddp)
      ddp = std::make_shared<nn::parallel::DistributedDataParallelImpl>(
          model, nn::parallel::DistributedDataParallelOptions()
                     .set_bucket_cap_mb(cap_mb)
                     .set_first_bucket_mb(cap_mb > 100 ? cap_mb : 1.0)
                     .set_gradient_as_bucket_view(as_view));
    optim::SGD opt(model->parameters(), optim::SGDOptions(0.01));
    dist::barrier();
    const double ms = time_ms(
        [&] {
          opt.zero_grad(/*set_to_none=*/!as_view);
          F::cross_entropy(use_ddp ? ddp->forward(x) : model(x), y).backward();
          opt.step();
          settle();
        },
        5, 3);
    if (rank == 0) std::printf("%s %.4f\n", key, ms);
    // what the model, its gradients, the buckets and the optimizer hold now
    const int64_t held = gpu ? cuda::memory_allocated() : cpu::memory_allocated();
    if (rank == 0) std::printf("%s_allocated_mb %.1f\n", key, static_cast<double>(held) / 1e6);
  };
  step_time("step_ddp_buckets_ms", 25.0, true);
  step_time("step_ddp_bucket_view_ms", 25.0, true, true);
  step_time("step_ddp_one_bucket_ms", 1e6, true);
  step_time("step_local_ms", 25.0, false);
  dist::destroy_process_group();
  return 0;
}
