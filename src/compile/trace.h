// compile's tracer (Note [Kernel-level tracing] in compile/trace.cpp).
#pragma once
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "compile/graph.h"
#include "core/profile_hooks.h"

namespace brisk::jit {

/// Records the elementwise kernel calls of one eager run into a Graph.
/// install() makes it the thread's tracer; the run's tensors stay alive until
/// it is destroyed.
class Tracer {
 public:
  explicit Tracer(Graph& g);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  void install();
  void uninstall();
  /// Registers argument `index` (before install).
  int add_input(const Tensor& t, int index);
  /// The buffer holding t's storage (-1: none), and t's byte offset in it.
  int output_buffer(const Tensor& t, int64_t& offset);
  /// Why the function cannot be compiled as one graph ("" when it can).
  const std::string& break_reason() const { return break_reason_; }
  void graph_break(std::string why);
  /// Tensors that require grad are recorded (a joint forward + backward trace).
  void set_allow_grad(bool a) { allow_grad_ = a; }
  /// The captured tensors (buffers) that require grad, in the order seen.
  std::vector<int> grad_externals() const;

  // The hooks' side (trace.cpp).
  void on_op(const char* name, const profiler::detail::InputRef* refs, int n);
  void record(OpId op, TensorIter& it, const KernelArgs& args);
  void set_pending(const char* caller) { pending_caller_ = caller; }
  const char* pending() const { return pending_caller_; }
  void on_alloc(void* p, size_t nbytes);
  /// A tensor argument of an opaque call (`output`: the kernel writes it;
  /// unknown memory then becomes a temp, else the trace breaks).
  TensorRef tensor_ref(const Tensor& t, bool output, Node& n);
  /// A raw pointer a kernel reads or writes (a ReducePlan's).
  bool ptr_ref(const void* p, bool output, ScalarType dtype, int& buf, int64_t& offset, Node& n);
  void add_node(Node&& n);
  void note_read(int b);
  /// t was filled on the host from C++ values (detail::note_host_constant).
  void mark_constant(const Tensor& t);
  void note_write(const std::string& op, int b);
  bool in_kernel = false;
  /// The device the graph runs on: the first one seen (the arguments', or the
  /// first op's), fixed from then on; false when `d` is another one.
  bool use_device(Device d);
  bool use_device(DeviceType t) { return use_device(Device(t)); }
  Device device() const { return g_.device; }

 private:
  int add_buffer(const Tensor& t, BufKind kind, int input);
  int find_ptr(const char* p, int64_t& offset) const;

  Graph& g_;
  bool installed_ = false;
  bool allow_grad_ = false;
  std::string break_reason_;
  const char* pending_caller_ = nullptr;
  std::unordered_map<const StorageImpl*, int> by_storage_;
  std::map<uintptr_t, int> by_base_;
  std::vector<Tensor> keep_;
  struct Alloc {
    size_t bytes;
    const char* op;  // the op front end last entered when it was allocated
  };
  std::map<uintptr_t, Alloc> allocs_;  // blocks the traced run allocated, by start
  const char* last_op_ = "";
  bool device_set_ = false;
  std::vector<char> written_;  // per buffer: a recorded call wrote it  // blocks the traced run allocated: start -> bytes
};

/// The thread's tracer, or null.
Tracer* current_tracer();

}  // namespace brisk::jit
