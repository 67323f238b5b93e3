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
#include <string>
#include <thread>

using namespace brisk;
namespace dist = brisk::distributed;

namespace {

int failures = 0;

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
      Tensor t = contrib(rank);
      dist::all_reduce(t, op);
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
      Tensor t = contrib(rank);
      dist::all_reduce(t, dist::ReduceOp::AVG);
      Tensor want = zeros({7}, kDouble);
      for (int r = 0; r < world; ++r) want = want + contrib(r).to(kDouble);
      expect(allclose(t.to(kDouble), want / world, 2e-2, 1e-2), "all_reduce AVG " + name);
    }
    Tensor b = rank == world - 1 ? contrib(rank) : zeros({7}, dt);
    dist::broadcast(b, world - 1);
    expect(equal(b, contrib(world - 1)), "broadcast " + name);
    std::vector<Tensor> outs;
    for (int r = 0; r < world; ++r) outs.push_back(empty({7}, dt));
    dist::all_gather(outs, contrib(rank));
    for (int r = 0; r < world; ++r) expect(equal(outs[r], contrib(r)), "all_gather " + name);
  }
  // reduce_scatter: rank r gets the sum over ranks of their inputs[r]
  std::vector<Tensor> ins;
  for (int r = 0; r < world; ++r) ins.push_back(full({2, 3}, 10.0 * rank + r));
  Tensor out = empty({2, 3});
  dist::reduce_scatter(out, ins);
  double want = 0;
  for (int s = 0; s < world; ++s) want += 10.0 * s + rank;
  expect(equal(out, full({2, 3}, want)), "reduce_scatter");
  // async: several in flight, then waited
  Tensor a1 = full({1000}, 1.0 * rank), a2 = full({5}, 2.0);
  auto w1 = dist::all_reduce(a1, dist::ReduceOp::SUM, true);
  auto w2 = dist::all_reduce(a2, dist::ReduceOp::MAX, true);
  w1->wait();
  w2->wait();
  expect(w1->is_completed() && w2->is_completed(), "async completion");
  expect(equal(a1, full({1000}, world * (world - 1) / 2.0)) && equal(a2, full({5}, 2.0)), "async values");
  // point to point around a ring
  if (world > 1) {
    Tensor mine = full({4}, 100.0 + rank), got = empty({4});
    const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    auto s = dist::send(mine, next, 5, true);
    dist::recv(got, prev, 5);
    s->wait();
    expect(equal(got, full({4}, 100.0 + prev)), "send/recv");
  }
  dist::barrier();
}

}  // namespace

int main(int argc, char** argv) {
  set_num_threads(1);
  const std::string scenario = argc > 1 ? argv[1] : "collectives";
  const int rank = std::atoi(std::getenv("RANK"));
  try {
    if (scenario == "collectives") {
      dist::init_process_group("gloo", dist::InitOptions().set_timeout(std::chrono::seconds(60)));
      expect(dist::get_rank() == rank, "get_rank");
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
      dist::init_process_group("gloo", dist::InitOptions().set_timeout(std::chrono::seconds(3)));
      const int w = dist::get_world_size();
      if (rank == w - 1) std::_Exit(0);
      Tensor t = ones({4});
      dist::all_reduce(t);
      std::fprintf(stderr, "rank %d: the collective returned with a dead rank\n", rank);
      return 1;
    } else if (scenario == "hello") {
      dist::init_process_group("gloo", dist::InitOptions().set_timeout(std::chrono::seconds(60)));
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
    if (scenario == "dead_rank") {
      std::fprintf(stderr, "rank %d: raised as expected: %s\n", rank, e.what());
      return 3;
    }
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}
