// brisk::distributed on Gloo with several processes on loopback: every
// collective for 1 to 4 ranks and every dtype Gloo reduces (dist_worker.cpp
// checks the values), file:// rendezvous, errors, and a dead rank making
// the others raise instead of hanging.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "brisk/brisk.h"

extern char** environ;

namespace {

/// The worker and the launcher: the build tree's, or where the environment
/// says (tools/gpu/run.sh runs a packed copy on a GPU machine).
std::string worker_exe() {
  const char* e = std::getenv("BRISK_DIST_WORKER_EXE");
  return e != nullptr && *e != '\0' ? e : BRISK_DIST_WORKER;
}
std::string run_exe() {
  const char* e = std::getenv("BRISK_RUN_EXE_PATH");
  return e != nullptr && *e != '\0' ? e : BRISK_RUN_EXE;
}

/// A port for this run: spread by pid so that parallel CTest jobs differ.
int pick_port(int k) { return 20000 + static_cast<int>((::getpid() * 7 + k * 131) % 20000); }

/// Runs `world` workers of the scenario; returns their exit codes.
std::vector<int> run_workers(const std::string& scenario, int world, int port, const std::string& dir = "",
                             const std::vector<std::string>& extra_env = {}) {
  std::vector<pid_t> pids;
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> env_s;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string s = *e;
      if (s.rfind("RANK=", 0) == 0 || s.rfind("LOCAL_RANK=", 0) == 0 || s.rfind("WORLD_SIZE=", 0) == 0 ||
          s.rfind("MASTER_", 0) == 0)
        continue;
      env_s.push_back(s);
    }
    for (const auto& e : extra_env) env_s.push_back(e);
    env_s.push_back("RANK=" + std::to_string(r));
    env_s.push_back("LOCAL_RANK=" + std::to_string(r));
    env_s.push_back("WORLD_SIZE=" + std::to_string(world));
    env_s.push_back("MASTER_ADDR=127.0.0.1");
    env_s.push_back("MASTER_PORT=" + std::to_string(port));
    env_s.push_back("OMP_NUM_THREADS=1");
    if (!dir.empty()) env_s.push_back("BRISK_DIST_DIR=" + dir);
    std::vector<char*> envp;
    for (auto& s : env_s) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string exe = worker_exe();
    std::vector<char*> argv{exe.data(), const_cast<char*>(scenario.c_str()), nullptr};
    pid_t pid = 0;
    EXPECT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

}  // namespace

#define NEED_GLOO() \
  if (!brisk::distributed::is_gloo_available()) GTEST_SKIP() << "built without Gloo (apt-get install libgloo-dev)"

TEST(ProcessGroup, EveryCollectiveOneToFourRanks) {
  NEED_GLOO();
  for (int world = 1; world <= 4; ++world) {
    const auto codes = run_workers("collectives", world, pick_port(world));
    for (int r = 0; r < world; ++r) EXPECT_EQ(codes[r], 0) << "world " << world << " rank " << r;
  }
}

TEST(ProcessGroup, FileRendezvous) {
  NEED_GLOO();
  const auto dir = std::filesystem::temp_directory_path() / ("brisk_dist_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto codes = run_workers("file", 3, 0, dir.string());
  for (int c : codes) EXPECT_EQ(c, 0);
  std::filesystem::remove_all(dir);
}

TEST(ProcessGroup, ErrorsAreClear) {
  NEED_GLOO();
  for (int c : run_workers("errors", 2, pick_port(9))) EXPECT_EQ(c, 0);
}

TEST(ProcessGroup, ADeadRankMakesTheOthersRaiseNotHang) {
  NEED_GLOO();
  const auto t0 = std::chrono::steady_clock::now();
  const auto codes = run_workers("dead_rank", 3, pick_port(11));
  EXPECT_EQ(codes[0], 3);
  EXPECT_EQ(codes[1], 3);
  EXPECT_EQ(codes[2], 0);  // the one that left
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

TEST(ProcessGroup, AHungRankMakesTheOthersRaiseAfterTheTimeout) {
  NEED_GLOO();
  const auto t0 = std::chrono::steady_clock::now();
  const auto codes = run_workers("hung_rank", 3, pick_port(12));
  EXPECT_EQ(codes[0], 3);
  EXPECT_EQ(codes[1], 3);
  EXPECT_EQ(codes[2], 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(ProcessGroup, WithoutAGroupCollectivesSaySo) {
  brisk::Tensor t = brisk::ones({2});
  try {
    brisk::distributed::all_reduce(t);
    FAIL() << "no error";
  } catch (const brisk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not initialized"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(brisk::distributed::is_initialized());
}

TEST(ProcessGroup, UnknownBackendIsAClearError) {
  try {
    brisk::distributed::init_process_group("mpi", brisk::distributed::InitOptions().set_rank(0).set_world_size(1));
    FAIL() << "no error";
  } catch (const brisk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'mpi' is not one of brisk's: \"gloo\" (CPU tensors) or \"nccl\""),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(brisk::distributed::is_initialized());
  try {
    brisk::Tensor t = brisk::ones({2});
    brisk::distributed::batch_isend_irecv({brisk::distributed::P2POp::isend(t, 1)});
    FAIL() << "no error";
  } catch (const brisk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[batch_isend_irecv] the default process group is not initialized"),
              std::string::npos)
        << e.what();
  }
}

// Where NCCL cannot run (no CUDA backend, no GPU), asking for it is a clear
// error at init_process_group, and is_nccl_available() tells beforehand
// whether the library is there.
TEST(ProcessGroupNccl, AvailabilityAndTheErrorsWithoutAGpu) {
  namespace dist = brisk::distributed;
  const bool cuda_build = brisk::cuda::unavailable_reason().find("no CUDA backend") == std::string::npos;
  bool toolkit_has_nccl = false;
  for (const char* root : std::initializer_list<const char*>{std::getenv("CUDA_HOME"), std::getenv("CUDA_PATH"),
                                                            "/usr/local/cuda"})
    for (const char* sub : {"lib64", "lib"})
      if (root != nullptr && std::filesystem::exists(std::filesystem::path(root) / sub / "libnccl.so.2"))
        toolkit_has_nccl = true;
  if (!cuda_build) {
    EXPECT_FALSE(dist::is_nccl_available());
  } else if (toolkit_has_nccl) {
    EXPECT_TRUE(dist::is_nccl_available()) << "the toolkit's libnccl.so.2 did not load";
  }
  if (brisk::cuda::is_available() && dist::is_nccl_available()) GTEST_SKIP() << "a GPU is here: the GPU tests run";
  const auto dir = std::filesystem::temp_directory_path() / ("brisk_nccl_" + std::to_string(::getpid()));
  try {
    dist::init_process_group("nccl", dist::InitOptions()
                                         .set_rank(0)
                                         .set_world_size(1)
                                         .set_init_method("file://" + dir.string())
                                         .set_timeout(std::chrono::seconds(5)));
    FAIL() << "no error";
  } catch (const brisk::Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("[init_process_group]"), std::string::npos) << m;
    if (!cuda_build)
      EXPECT_NE(m.find("the nccl backend is not available: this brisk was built without CUDA"), std::string::npos) << m;
    else if (dist::is_nccl_available())
      EXPECT_NE(m.find("the nccl backend needs a CUDA device"), std::string::npos) << m;
    else
      EXPECT_NE(m.find("libnccl.so.2 could not be loaded"), std::string::npos) << m;
  }
  EXPECT_FALSE(dist::is_initialized());
  std::filesystem::remove_all(dir);
}

// On a lent GPU: every collective and DDP on CUDA tensors through NCCL,
// one rank per GPU (one rank where there is one GPU: NCCL does not put two
// ranks on one device).
#define NEED_NCCL_GPUS(n)                                                                                \
  if (!brisk::cuda::is_available() || !brisk::distributed::is_nccl_available())                          \
    GTEST_SKIP() << "needs a GPU and NCCL: " << (brisk::cuda::is_available() ? "libnccl.so.2 did not load" \
                                                                             : brisk::cuda::unavailable_reason()); \
  if (brisk::cuda::device_count() < (n)) GTEST_SKIP() << "needs " << (n) << " GPUs"

TEST(ProcessGroupNccl, EveryCollectiveOnCudaTensors) {
  NEED_NCCL_GPUS(1);
  const int world = std::min(brisk::cuda::device_count(), 4);
  const auto codes = run_workers("collectives", world, pick_port(60), "", {"BRISK_DIST_BACKEND=nccl"});
  for (int r = 0; r < world; ++r) EXPECT_EQ(codes[r], 0) << "world " << world << " rank " << r;
}

TEST(ProcessGroupNccl, DistributedDataParallelOnCudaTensors) {
  NEED_NCCL_GPUS(1);
  const int world = std::min(brisk::cuda::device_count(), 2);
  for (const char* scenario : {"ddp", "ddp_view", "ddp_unused", "ddp_train"}) {
    const auto codes = run_workers(scenario, world, pick_port(61), "", {"BRISK_DIST_BACKEND=nccl"});
    for (int r = 0; r < world; ++r) EXPECT_EQ(codes[r], 0) << scenario << " rank " << r;
  }
}

TEST(ProcessGroupNccl, ADeadRankMakesTheOthersRaiseNotHang) {
  NEED_NCCL_GPUS(2);
  const int world = std::min(brisk::cuda::device_count(), 3);
  const auto t0 = std::chrono::steady_clock::now();
  const auto codes = run_workers("dead_rank", world, pick_port(62), "", {"BRISK_DIST_BACKEND=nccl"});
  for (int r = 0; r + 1 < world; ++r) EXPECT_EQ(codes[r], 3) << "rank " << r;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

namespace {
struct Launch {
  int status = -1;
  std::string out;
};
Launch launch(const std::string& args) {
  Launch l;
  const std::string cmd = run_exe() + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) l.out += buf;
  const int st = ::pclose(p);
  l.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return l;
}
}  // namespace

TEST(BriskRun, StartsTheRanksAndPrefixesTheirLines) {
  NEED_GLOO();
  const Launch l = launch("--nproc-per-node 3 --master-port " + std::to_string(pick_port(21)) + " " +
                          worker_exe() + " hello");
  EXPECT_EQ(l.status, 0) << l.out;
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(l.out.find("[rank " + std::to_string(r) + "]: hello from " + std::to_string(r) + " of 3 (local rank " +
                         std::to_string(r) + ")"),
              std::string::npos)
        << l.out;
  // collectives through the launcher's environment
  EXPECT_EQ(launch("--nproc-per-node 2 --master-port " + std::to_string(pick_port(22)) + " " +
                   worker_exe() + " collectives")
                .status,
            0);
}

TEST(BriskRun, AFailingRankStopsTheOthersAndGivesItsStatus) {
  NEED_GLOO();
  const auto t0 = std::chrono::steady_clock::now();
  const Launch l = launch("--nproc-per-node 3 --master-port " + std::to_string(pick_port(23)) + " " +
                          worker_exe() + " fail_rank");
  EXPECT_EQ(l.status, 7) << l.out;
  EXPECT_NE(l.out.find("rank 1 exited with status 7"), std::string::npos) << l.out;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));  // not the minute the others wait
}

// Two launchers on this machine as two nodes of two processes each: ranks
// 0-1 on node 0 and 2-3 on node 1, local ranks 0-1 on each, one group.
TEST(BriskRun, TwoNodesOnLoopback) {
  NEED_GLOO();
  const std::string common = "--nnodes 2 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port " +
                             std::to_string(pick_port(24)) + " ";
  auto node = [&](int k) {
    return launch(common + "--node-rank " + std::to_string(k) + " " + worker_exe() + " hello");
  };
  auto n1 = std::async(std::launch::async, node, 1);
  const Launch l0 = node(0);
  const Launch l1 = n1.get();
  EXPECT_EQ(l0.status, 0) << l0.out;
  EXPECT_EQ(l1.status, 0) << l1.out;
  for (int r = 0; r < 4; ++r) {
    const std::string line = "[rank " + std::to_string(r) + "]: hello from " + std::to_string(r) +
                             " of 4 (local rank " + std::to_string(r % 2) + ")";
    EXPECT_NE((r < 2 ? l0 : l1).out.find(line), std::string::npos) << line << "\n" << l0.out << l1.out;
  }
}

TEST(BriskRun, UsageErrors) {
  EXPECT_EQ(launch("").status, 2);
  EXPECT_EQ(launch("--nproc-per-node 0 true").status, 2);
  const Launch l = launch("--nproc-per-node 1 /no/such/program");
  EXPECT_EQ(l.status, 127) << l.out;
  EXPECT_NE(l.out.find("cannot run"), std::string::npos) << l.out;
}

TEST(DistributedDataParallel, GradientsEqualTheFullBatchsAndNoSyncAccumulates) {
  NEED_GLOO();
  for (int world : {1, 2, 3}) {
    const auto codes = run_workers("ddp", world, pick_port(30 + world));
    for (int r = 0; r < world; ++r) EXPECT_EQ(codes[r], 0) << "world " << world << " rank " << r;
  }
}

TEST(DistributedDataParallel, SgdAndAdamWOverTwentyStepsFollowTheFullBatchAndStayIdentical) {
  NEED_GLOO();
  for (int world : {2, 3}) {
    const auto codes = run_workers("ddp_train", world, pick_port(70 + world));
    for (int r = 0; r < world; ++r) EXPECT_EQ(codes[r], 0) << "world " << world << " rank " << r;
  }
}

TEST(DistributedDataParallel, GradientAsBucketView) {
  NEED_GLOO();
  for (int world : {1, 2}) {
    const auto codes = run_workers("ddp_view", world, pick_port(50 + world));
    for (int r = 0; r < world; ++r) EXPECT_EQ(codes[r], 0) << "world " << world << " rank " << r;
  }
}

TEST(DistributedDataParallel, UnusedParameters) {
  NEED_GLOO();
  for (int c : run_workers("ddp_unused", 2, pick_port(40))) EXPECT_EQ(c, 0);
}
