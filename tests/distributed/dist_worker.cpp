// One rank of the brisk::distributed tests (test_process_group.cpp spawns
// WORLD_SIZE of these). Runs a scenario, checks every result against the
// value computed locally from what each rank contributes, and exits 0 (all
// checks passed), 3 (the expected brisk::Error was raised) or 1.
//
//   RANK=r WORLD_SIZE=n MASTER_ADDR=127.0.0.1 MASTER_PORT=p dist_worker SCENARIO
#include <brisk/brisk.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>

using namespace brisk;
namespace dist = brisk::distributed;

namespace {

int failures = 0;

// BRISK_DIST_BACKEND=nccl runs the scenarios on CUDA tensors (one GPU per
// rank: cuda:LOCAL_RANK); the values are checked on the host
std::string g_backend = "gloo";
Device g_dev(kCPU);
Tensor on(const Tensor& t) { return t.to(g_dev); }
Tensor host(const Tensor& t) { return t.to(kCPU); }
TensorOptions opts(ScalarType dt) { return TensorOptions(dt).device(g_dev); }

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED %s\n", std::atoi(std::getenv("RANK")), what.c_str());
    ++failures;
  }
}

// rank r's contribution: values depending on r and the element index
Tensor contribution(int r, ScalarType dt, int64_t n = 7) {
  return (arange(n).to(kDouble) * (r + 1) + r * 3 - 5).to(dt);
}

void collectives(int rank, int world) {
  for (ScalarType dt : {kFloat, kDouble, kInt32, kInt64, kHalf, kBFloat16, kUInt8, kInt8}) {
    const std::string name = std::string(dtype_name(dt));
    auto contrib = [&](int r) {
      Tensor c = contribution(r, kDouble);
      if (dt == kUInt8) c = c.abs();
      return c.to(dt);
    };
    for (dist::ReduceOp op : {dist::ReduceOp::SUM, dist::ReduceOp::MIN, dist::ReduceOp::MAX, dist::ReduceOp::PRODUCT}) {
      Tensor t = on(contrib(rank));
      dist::all_reduce(t, op);
      t = host(t);
      Tensor want = contrib(0);
      for (int r = 1; r < world; ++r) {
        const Tensor c = contrib(r);
        if (op == dist::ReduceOp::SUM) want = (want + c).to(dt);
        if (op == dist::ReduceOp::MIN) want = minimum(want, c);
        if (op == dist::ReduceOp::MAX) want = maximum(want, c);
        if (op == dist::ReduceOp::PRODUCT) want = (want * c).to(dt);
      }
      // 16-bit floats round at each step, in rank order here and in Gloo's ring
      const bool exact = !(dt == kHalf || dt == kBFloat16) || op == dist::ReduceOp::MIN || op == dist::ReduceOp::MAX;
      expect(exact ? equal(t, want) : allclose(t.to(kDouble), want.to(kDouble), 2e-2, 1e-2),
             "all_reduce " + name + " op " + std::to_string(int(op)));
    }
    if (is_floating_point(dt)) {
      Tensor t = on(contrib(rank));
      dist::all_reduce(t, dist::ReduceOp::AVG);
      Tensor want = zeros({7}, kDouble);
      for (int r = 0; r < world; ++r) want = want + contrib(r).to(kDouble);
      expect(allclose(host(t).to(kDouble), want / world, 2e-2, 1e-2), "all_reduce AVG " + name);
    }
    Tensor b = on(rank == world - 1 ? contrib(rank) : zeros({7}, dt));
    dist::broadcast(b, world - 1);
    expect(equal(host(b), contrib(world - 1)), "broadcast " + name);
    std::vector<Tensor> outs;
    for (int r = 0; r < world; ++r) outs.push_back(empty({7}, opts(dt)));
    dist::all_gather(outs, on(contrib(rank)));
    for (int r = 0; r < world; ++r) expect(equal(host(outs[r]), contrib(r)), "all_gather " + name);
  }
  // reduce_scatter: rank r gets the sum over ranks of their inputs[r]
  std::vector<Tensor> ins;
  for (int r = 0; r < world; ++r) ins.push_back(full({2, 3}, 10.0 * rank + r, opts(kFloat)));
  Tensor out = empty({2, 3}, opts(kFloat));
  dist::reduce_scatter(out, ins);
  double want = 0;
  for (int s = 0; s < world; ++s) want += 10.0 * s + rank;
  expect(equal(host(out), full({2, 3}, want)), "reduce_scatter");
  // async: several in flight, then waited
  Tensor a1 = full({1000}, 1.0 * rank, opts(kFloat)), a2 = full({5}, 2.0, opts(kFloat));
  auto w1 = dist::all_reduce(a1, dist::ReduceOp::SUM, true);
  auto w2 = dist::all_reduce(a2, dist::ReduceOp::MAX, true);
  w1->wait();
  w2->wait();
  // (on nccl, wait() orders the current stream after the collective; the
  // host learns of completion once the stream has run)
  if (g_dev.is_cuda()) cuda::synchronize();
  expect(w1->is_completed() && w2->is_completed(), "async completion");
  expect(equal(host(a1), full({1000}, world * (world - 1) / 2.0)) && equal(host(a2), full({5}, 2.0)), "async values");
  // point to point around a ring: a batch (send and receive together) on
  // every backend, and on gloo also separate calls
  if (world > 1) {
    const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    Tensor mine = full({4}, 100.0 + rank, opts(kFloat)), got = empty({4}, opts(kFloat));
    auto works = dist::batch_isend_irecv({dist::P2POp::isend(mine, next, 5), dist::P2POp::irecv(got, prev, 5)});
    for (auto& w : works) w->wait();
    expect(works.size() == 2 && equal(host(got), full({4}, 100.0 + prev)), "batch_isend_irecv");
    if (g_backend == "gloo") {
      Tensor got2 = empty({4});
      auto s = dist::send(mine, next, 6, true);
      dist::recv(got2, prev, 6);
      s->wait();
      expect(equal(got2, full({4}, 100.0 + prev)), "send/recv");
    }
  }
  dist::barrier();
}

namespace F = brisk::nn::functional;

nn::Sequential make_mlp() { return nn::Sequential(nn::Linear(6, 8), nn::ReLU(), nn::Linear(8, 3)); }

void copy_params(nn::Module& dst, nn::Module& src) {
  NoGradGuard ng;
  auto d = dst.parameters(), s = src.parameters();
  for (size_t i = 0; i < d.size(); ++i) d[i].copy_(s[i]);
}

bool grads_close(nn::Module& a, nn::Module& b, const std::string& what) {
  auto pa = a.parameters(), pb = b.parameters();
  bool ok = true;
  for (size_t i = 0; i < pa.size(); ++i) {
    const bool c = pa[i].grad().defined() && pb[i].grad().defined() && allclose(pa[i].grad(), pb[i].grad(), 1e-5, 1e-6);
    if (!c) std::fprintf(stderr, "%s: gradient %zu differs\n", what.c_str(), i);
    ok = ok && c;
  }
  return ok;
}

// DDP: each rank trains on its shard; the averaged gradients must equal the
// full batch's (equal shards of a mean loss), locally computed on a copy.
// With as_view (gradient_as_bucket_view), the gradients are zeroed in place
// and must become views of the buckets that stay put from step to step.
void ddp(int rank, int world, bool as_view) {
  manual_seed(100 + rank);  // different initial weights: DDP broadcasts rank 0's
  nn::Sequential model = make_mlp();
  model->to(g_dev);
  nn::parallel::DistributedDataParallel ddp_model(
      model, nn::parallel::DistributedDataParallelOptions()
                 .set_bucket_cap_mb(0.0001)  // two buckets of two parameters
                 .set_first_bucket_mb(0.0001)
                 .set_gradient_as_bucket_view(as_view));
  expect(ddp_model->bucket_indices().size() > 1, "several buckets");
  nn::Sequential ref = make_mlp();
  ref->to(g_dev);
  copy_params(*ref, *model);
  // rank 0's initial weights everywhere
  {
    Tensor w = model->parameters()[0].detach().clone();
    std::vector<Tensor> all;
    for (int r = 0; r < world; ++r) all.push_back(empty(w.sizes(), opts(kFloat)));
    dist::all_gather(all, w);
    for (int r = 0; r < world; ++r) expect(equal(all[r], all[0]), "broadcast at construction");
  }
  manual_seed(7);
  const int64_t per = 4, n = per * world;
  Tensor x = on(randn({n, 6})), y = on(randint(0, 3, {n}));
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
  optim::SGD ref_opt(ref->parameters(), optim::SGDOptions(0.1));
  std::vector<void*> grad_ptrs;
  for (int step = 0; step < 4; ++step) {
    opt.zero_grad(/*set_to_none=*/!as_view);
    ref_opt.zero_grad();
    F::cross_entropy(ddp_model->forward(x.narrow(0, rank * per, per)), y.narrow(0, rank * per, per)).backward();
    F::cross_entropy(ref->forward(x), y).backward();
    expect(grads_close(*model, *ref, "step " + std::to_string(step)), "DDP gradients == full-batch gradients");
    if (as_view) {
      std::vector<void*> ptrs;
      for (const Tensor& p : model->parameters()) {
        expect(p.grad()._is_view(), "gradient_as_bucket_view: .grad() is a view of a bucket");
        ptrs.push_back(p.grad().data_ptr());
      }
      // step 0 builds the buckets in arrival order: from step 1 on they stay
      if (step >= 1) expect(ptrs == grad_ptrs, "gradient_as_bucket_view: the gradients stay in the buckets");
      grad_ptrs = ptrs;
      // parameters of one bucket share its buffer
      std::set<const void*> storages;
      for (const Tensor& p : model->parameters()) storages.insert(p.grad()._base().data_ptr());
      expect(storages.size() < model->parameters().size(), "gradient_as_bucket_view: buckets hold several");
    }
    opt.step();
    ref_opt.step();
  }
  // no_sync: the first micro-batch stays local, the second averages both
  opt.zero_grad(/*set_to_none=*/!as_view);
  ref_opt.zero_grad();
  const int64_t half = per / 2;
  {
    auto guard = ddp_model->no_sync();
    F::cross_entropy(ddp_model->forward(x.narrow(0, rank * per, half)), y.narrow(0, rank * per, half)).backward();
  }
  F::cross_entropy(ddp_model->forward(x.narrow(0, rank * per + half, half)), y.narrow(0, rank * per + half, half))
      .backward();
  Tensor ref_loss = zeros({}, opts(kFloat));
  for (int r = 0; r < world; ++r)
    for (int k = 0; k < 2; ++k)
      ref_loss = ref_loss + F::cross_entropy(ref->forward(x.narrow(0, r * per + k * half, half)),
                                             y.narrow(0, r * per + k * half, half));
  (ref_loss / world).backward();
  expect(grads_close(*model, *ref, "no_sync"), "no_sync accumulation then averaging");
}

// Every rank's parameters, flattened, equal across ranks (bit for bit).
bool same_on_every_rank(nn::Module& m, int world) {
  TensorList flat;
  for (const Tensor& p : m.parameters()) flat.push_back(p.detach().reshape({-1}));
  Tensor mine = cat(flat, 0);
  std::vector<Tensor> all;
  for (int r = 0; r < world; ++r) all.push_back(empty_like(mine));
  dist::all_gather(all, mine);
  bool ok = true;
  for (int r = 0; r < world; ++r) ok = ok && equal(host(all[r]), host(mine));
  return ok;
}

// 20 steps of SGD (momentum) and of AdamW on DDP against one process on the
// union of the batches: the losses and parameters follow the full-batch
// run's (float32 rounding: the averaged gradients sum in another order) and
// stay identical across ranks.
void ddp_train(int rank, int world) {
  for (int opt_kind = 0; opt_kind < 2; ++opt_kind) {
    manual_seed(200 + rank);
    nn::Sequential model = make_mlp();
    model->to(g_dev);
    nn::parallel::DistributedDataParallel ddp_model(model, nn::parallel::DistributedDataParallelOptions()
                                                               .set_bucket_cap_mb(0.0001)
                                                               .set_first_bucket_mb(0.0001));
    nn::Sequential ref = make_mlp();
    ref->to(g_dev);
    copy_params(*ref, *model);
    auto make_opt = [&](nn::Module& m) -> std::unique_ptr<optim::Optimizer> {
      if (opt_kind == 0) return std::make_unique<optim::SGD>(m.parameters(), optim::SGDOptions(0.05).momentum(0.9));
      return std::make_unique<optim::AdamW>(m.parameters(), optim::AdamWOptions(0.01).weight_decay(0.01));
    };
    auto opt = make_opt(*model), ref_opt = make_opt(*ref);
    const char* name = opt_kind == 0 ? "SGD" : "AdamW";
    manual_seed(11);
    const int64_t per = 3, n = per * world;
    for (int step = 0; step < 20; ++step) {
      Tensor x = on(randn({n, 6})), y = on(randint(0, 3, {n}));
      opt->zero_grad();
      ref_opt->zero_grad();
      Tensor loss = F::cross_entropy(ddp_model->forward(x.narrow(0, rank * per, per)), y.narrow(0, rank * per, per));
      loss.backward();
      F::cross_entropy(ref->forward(x), y).backward();
      opt->step();
      ref_opt->step();
    }
    auto pm = model->parameters(), pr = ref->parameters();
    bool close = true;
    for (size_t i = 0; i < pm.size(); ++i) close = close && allclose(host(pm[i]), host(pr[i]), 1e-4, 1e-5);
    expect(close, std::string(name) + ": 20 DDP steps == 20 full-batch steps");
    expect(same_on_every_rank(*model, world), std::string(name) + ": parameters identical on every rank");
  }
}

// A parameter no rank uses: an error naming it, or zeros with find_unused_parameters.
struct TwoHeads : nn::Module {
  nn::Linear a{nullptr}, b{nullptr};
  TwoHeads() {
    a = register_module("a", nn::Linear(4, 2));
    b = register_module("b", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& x) override { return a(x); }
};

void ddp_unused(int, int) {
  auto m = std::make_shared<TwoHeads>();
  m->to(g_dev);
  nn::parallel::DistributedDataParallel strict(m);
  bool raised = false;
  try {
    strict->forward(ones({3, 4}, opts(kFloat))).sum().backward();
  } catch (const Error& e) {
    raised = std::strstr(e.what(), "b.weight") != nullptr && std::strstr(e.what(), "find_unused_parameters");
  }
  expect(raised, "unused parameter error");
  auto m2 = std::make_shared<TwoHeads>();
  m2->to(g_dev);
  nn::parallel::DistributedDataParallel lenient(m2, nn::parallel::DistributedDataParallelOptions().set_find_unused_parameters(true));
  lenient->forward(ones({3, 4}, opts(kFloat))).sum().backward();
  expect(m2->a->weight.grad().defined() && equal(host(m2->b->weight.grad()), zeros({2, 4})), "find_unused_parameters");
}

}  // namespace

int main(int argc, char** argv) {
  set_num_threads(1);
  const std::string scenario = argc > 1 ? argv[1] : "collectives";
  const int rank = std::atoi(std::getenv("RANK"));
  if (const char* b = std::getenv("BRISK_DIST_BACKEND")) g_backend = b;
  try {
    if (g_backend == "nccl") {  // one GPU per process, picked before init (as with torchrun)
      const char* lr = std::getenv("LOCAL_RANK");
      cuda::set_device((lr != nullptr ? std::atoi(lr) : rank) % cuda::device_count());
      g_dev = Device(kCUDA, cuda::current_device());
    }
    if (scenario == "collectives") {
      dist::init_process_group(g_backend, dist::InitOptions().set_timeout(std::chrono::seconds(60)));
      expect(dist::get_rank() == rank, "get_rank");
      expect(dist::get_backend() == g_backend, "get_backend");
      collectives(rank, dist::get_world_size());
      dist::destroy_process_group();
    } else if (scenario == "file") {
      dist::init_process_group("gloo", dist::InitOptions()
                                           .set_init_method(std::string("file://") + std::getenv("BRISK_DIST_DIR"))
                                           .set_timeout(std::chrono::seconds(60)));
      Tensor t = full({3}, 1.0 + rank);
      dist::all_reduce(t);
      const int w = dist::get_world_size();
      expect(equal(t, full({3}, w * (w + 1) / 2.0)), "file:// all_reduce");
      dist::destroy_process_group();
    } else if (scenario == "dead_rank") {
      // the last rank exits without calling the collective: the others must
      // raise within the timeout, not hang
      dist::init_process_group(g_backend, dist::InitOptions().set_timeout(std::chrono::seconds(3)));
      const int w = dist::get_world_size();
      if (rank == w - 1) std::_Exit(0);
      Tensor t = ones({4}, opts(kFloat));
      dist::all_reduce(t);  // gloo raises here; nccl's watchdog aborts the
      host(t);              // collective, and the next call raises
      dist::barrier();
      std::fprintf(stderr, "rank %d: the collective returned with a dead rank\n", rank);
      return 1;
    } else if (scenario == "hung_rank") {
      // the last rank stays alive but never calls the collective: the others
      // must raise after the group's timeout (2 s), not wait for it
      dist::init_process_group(g_backend, dist::InitOptions().set_timeout(std::chrono::seconds(2)));
      const int w = dist::get_world_size();
      if (rank == w - 1) {
        std::this_thread::sleep_for(std::chrono::seconds(6));
        std::_Exit(0);
      }
      Tensor t = ones({4}, opts(kFloat));
      dist::all_reduce(t);
      host(t);
      dist::barrier();
      std::fprintf(stderr, "rank %d: the collective returned with a hung rank\n", rank);
      return 1;
    } else if (scenario == "hello") {
      dist::init_process_group(g_backend, dist::InitOptions().set_timeout(std::chrono::seconds(60)));
      std::printf("hello from %d of %d (local rank %s)\n", dist::get_rank(), dist::get_world_size(),
                  std::getenv("LOCAL_RANK"));
      std::fflush(stdout);
      dist::barrier();
      dist::destroy_process_group();
    } else if (scenario == "fail_rank") {
      // rank 1 fails at once; the others wait in a barrier that would last a
      // minute: the launcher must stop them and return rank 1's status
      dist::init_process_group("gloo", dist::InitOptions().set_timeout(std::chrono::seconds(60)));
      if (rank == 1) std::_Exit(7);
      std::this_thread::sleep_for(std::chrono::seconds(60));
      dist::barrier();
    } else if (scenario == "ddp" || scenario == "ddp_unused" || scenario == "ddp_view" || scenario == "ddp_train") {
      dist::init_process_group(g_backend, dist::InitOptions().set_timeout(std::chrono::seconds(60)));
      if (scenario == "ddp" || scenario == "ddp_view")
        ddp(rank, dist::get_world_size(), scenario == "ddp_view");
      else if (scenario == "ddp_train")
        ddp_train(rank, dist::get_world_size());
      else
        ddp_unused(rank, dist::get_world_size());
      dist::barrier();
      dist::destroy_process_group();
    } else if (scenario == "errors") {
      dist::init_process_group("gloo", dist::InitOptions().set_timeout(std::chrono::seconds(30)));
      int raised = 0;
      try {
        Tensor t = ones({4, 4}).t();
        dist::all_reduce(t);
      } catch (const Error& e) {
        raised += std::strstr(e.what(), "contiguous") != nullptr;
      }
      try {
        Tensor t = ones({4}, kInt32);
        dist::all_reduce(t, dist::ReduceOp::AVG);
      } catch (const Error& e) {
        raised += std::strstr(e.what(), "AVG") != nullptr;
      }
      try {
        dist::init_process_group("gloo");
      } catch (const Error& e) {
        raised += std::strstr(e.what(), "already initialized") != nullptr;
      }
      expect(raised == 3, "errors raised: " + std::to_string(raised));
      dist::barrier();
      dist::destroy_process_group();
    }
  } catch (const Error& e) {
    if (scenario == "dead_rank" || scenario == "hung_rank") {
      std::fprintf(stderr, "rank %d: raised as expected: %s\n", rank, e.what());
      return 3;
    }
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
