// Runs a recorded graph: buffers bound to the call's arguments, temps
// allocated (and freed after their last use), each group run by the
// interpreter (Note [The fused-graph interpreter] in executor.cpp) or by
// generated code.
#pragma once
#include <vector>

#include "brisk/compile.h"
#include "compile/graph.h"

namespace brisk::jit {

/// Every node its own group (CompileOptions::fuse off).
void plan_unfused(Graph& g);

class Executable {
 public:
  Executable(const Graph& g, const CompileOptions& opts);
  /// The results of one call (the arguments passed the guards).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

 private:
  void run_group(int gi, const Bound& bound) const;
  void run_node(const Node& n, char* const* base) const;
  void run_fused(const Group& grp, char* const* base) const;

  const Graph& g_;
  CompileOptions opts_;
  std::vector<int> last_use_;      // per buffer: the last group that touches it
  std::vector<char> internal_;     // per buffer: lives in a group's scratch only
  std::vector<char> is_output_;    // per buffer: a result views it
  std::vector<std::pair<int, int>> written_args_;  // (buffer, argument) written in place
  std::vector<std::string> group_names_;
  std::vector<std::vector<int>> release_after_;  // per group: temps last used there
  std::vector<std::vector<int>> alloc_before_;   // per group: temps first used there
};

}  // namespace brisk::jit
