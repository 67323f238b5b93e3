// Runs a recorded graph: buffers bound to the call's arguments, temps
// allocated (and freed after their last use), each group run by the
// interpreter (Note [The fused-graph interpreter] in executor.cpp) or by
// generated code.
#pragma once
#include <array>
#include <atomic>
#include <mutex>
#include <string>
#include <memory>
#include <tuple>
#include <vector>

#include "brisk/compile.h"
#include "compile/codegen_cpu.h"
#include "compile/codegen_cuda.h"
#include "compile/graph.h"

namespace brisk::jit {

/// Runs one elementwise call through the eager kernel of `dev` (base: each
/// buffer's first byte).
void run_elementwise(const Node& n, char* const* base, DeviceType dev = DeviceType::CPU);
/// Every node its own group (CompileOptions::fuse off).
void plan_unfused(Graph& g);
/// plan() for a graph on CUDA: fused groups only where a generated kernel
/// takes them (Note [Generated CUDA kernels] in codegen_cuda.cpp).
void plan_cuda(Graph& g, bool fuse);

/// The buffers of one run of a graph (kept from the forward part to the
/// backward part of a joint graph: Note [Compiled backward]).
struct RunState {
  std::vector<Tensor> inputs;
  std::vector<char*> base;
  std::vector<Tensor> temps, owners;
};

/// How the interpreter cuts a fused group into blocks (made once per graph).
struct FusedPlan {
  int64_t s0 = 1, s1 = 1, rows_per = 1, pieces = 1, nblocks = 0, scratch_bytes = 0, grain = 1;
  /// per node of the group, per operand: its offset in the block scratch (-1: memory)
  std::vector<std::array<int64_t, TensorIter::kMaxOperands>> scratch;
};

FusedPlan make_fused_plan(const Graph& g, const Group& grp);

class Executable {
 public:
  Executable(const Graph& g, const CompileOptions& opts);
  /// The results of one call (the arguments passed the guards).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  /// Whether every captured tensor still has the dtype, shape, strides and
  /// offset it was traced with ("" if so, else what changed).
  std::string externals_changed() const;
  /// Binds the arguments (and the captured tensors): a run's state.
  std::unique_ptr<RunState> bind(const std::vector<Tensor>& inputs) const;
  /// Binds argument `index` after the fact (a joint graph's output gradients).
  void bind_input(RunState& st, int index, const Tensor& t) const;
  /// Runs groups [g0, g1).
  void run_groups(RunState& st, int g0, int g1) const;
  /// Results [o0, o1) as views of the state's buffers.
  std::vector<Tensor> results(const RunState& st, int o0, int o1) const;
  int num_groups() const { return static_cast<int>(g_.groups.size()); }
  /// Groups that run generated code, and why code generation was not used
  /// where it was tried and refused ("" when all were generated).
  int generated_groups() const;
  const std::string& codegen_note() const { return codegen_note_; }
  /// "batches: groups 0-199 (200)\n" for the batches of small groups (Note
  /// [Batches of small groups]), "" when there are none.
  std::string batch_note() const;
  /// CompileMode::MaxAutotune: the variants timed so far and the ones kept.
  std::string autotune_note() const;

 private:
  void run_group(int gi, const Bound& bound) const;
  /// Note [Batches of small groups] (executor.cpp): batch_end_[gi] is one past
  /// the last group of the batch that starts at gi (gi + 1: no batch).
  void plan_batches();
  std::vector<int> batch_end_;
  void run_node(const Node& n, char* const* base) const;
  void run_fused(int gi, char* const* base) const;
  void run_row_group(int gi, const Bound& bound) const;
  /// MaxAutotune: times group gi's variants on copies of its buffers and
  /// keeps the fastest; returns its index.
  int tune(int gi, const Bound& bound) const;

  const Graph& g_;
  CompileOptions opts_;
  std::vector<int> last_use_;      // per buffer: the last group that touches it
  std::vector<char> internal_;     // per buffer: lives in a group's scratch only
  std::vector<char> is_output_;    // per buffer: a result views it
  std::vector<std::tuple<int, int, int>> written_args_;  // (buffer, argument, group) written in place
  std::vector<std::string> group_names_;
  std::vector<FusedPlan> fused_plans_;  // per group (fused groups only)
  CpuGraphKernels kernels_;             // generated code per group (null: interpreted)
  std::vector<CudaGroupKernel> cuda_kernels_;  // a graph on CUDA: generated kernels per group
  std::string codegen_note_;
  struct ExternalSnapshot {
    int buf;
    ScalarType dtype;
    std::vector<int64_t> sizes, strides;
    int64_t offset, nbytes;
    bool requires_grad;
  };
  std::vector<ExternalSnapshot> externals_;
  std::vector<std::vector<int>> release_after_;  // per group: temps last used there
  std::vector<std::vector<int>> alloc_before_;   // per group: temps first used there
  // MaxAutotune: per group, the variant kept (-1: not timed yet)
  std::unique_ptr<std::atomic<int>[]> chosen_;
  mutable std::mutex tune_mu_;
  mutable std::vector<std::string> tune_notes_;  // per group ("" until timed)
};

}  // namespace brisk::jit
