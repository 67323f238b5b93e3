// Autocast's hook in the op front ends (Note [Autocast]). Core-level, like
// the profiler's hooks: the front ends call it without depending on amp.
#pragma once
#include <atomic>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "brisk/tensor.h"
#include "core/op_table.h"

namespace brisk::amp::detail {

// Note [Autocast]
// brisk::amp::autocast (include/brisk/amp.h) is PyTorch's torch.autocast:
// inside the scope, ops on the op table's lists run in another dtype. The
// state is per thread and per device type (enabled, dtype), with one
// process-wide count of enabled scopes so that an op pays one relaxed load
// and a branch not taken when no thread autocasts.
//
// An op whose row has a policy other than Keep calls BRISK_AUTOCAST first
// thing in its functional front end (before BRISK_PROFILE_OP, so that the
// profiler records the op once, in the dtype it runs in). When autocast is
// on for the device type of the op's first tensor argument, the hook casts
// the tensor arguments by the row's policy for that device type and calls
// the front end again with autocast excluded on this thread for the whole
// call (so that the ops it runs inside are not cast again), as PyTorch's
// autocast wrappers do:
//   Lower    floating tensors to the autocast dtype;
//   Fp32     floating tensors to float32;
//   Promote  floating tensors to the widest of them (float32 if any is,
//            else the autocast dtype);
//   Banned   a brisk::Error.
// float64 tensors, integer tensors and tensors on another device type are
// never cast. Ops that take an output dtype (sum, softmax, cumsum, prod)
// are cast only when it is not given, as PyTorch's fp32_set_opt_dtype
// ops. Out= and in-place forms are not cast (PyTorch's lists hold the
// functional forms only). Backward passes run with autocast excluded: a
// gradient is computed in the dtypes its forward ran in.
//
// Weight-cast cache: a float32 leaf that requires grad (a parameter) cast
// to the autocast dtype is cast once per outermost scope and reused by
// later ops in the scope, as PyTorch does; brisk's entry also remembers the
// parameter's version and the grad mode, so an optimizer step or a
// no_grad call inside the scope does not hand back a stale or graph-less
// copy (PyTorch's does). The cache is off while compile traces (a cached
// cast made outside the trace would become a constant of the graph).

/// Enabled autocast scopes, all threads (include/brisk/amp.h's autocast).
extern std::atomic<int> g_autocast_scopes;
inline bool autocast_any() { return g_autocast_scopes.load(std::memory_order_relaxed) != 0; }

/// What the hook does for one call: nothing (policy Keep), or cast to `to`.
struct CastPlan {
  Op op = Op::kNumOps;
  AmpPolicy policy = AmpPolicy::Keep;
  DeviceType device = DeviceType::CPU;
  ScalarType lower = kBFloat16;  ///< the scope's dtype for that device type
  explicit operator bool() const { return policy != AmpPolicy::Keep; }
};

/// The policy for `op` on this thread given the device type of its first
/// tensor argument (Keep when autocast is off there, or excluded now).
CastPlan plan_for(Op op, DeviceType device);
/// Throws the error for a Banned op.
[[noreturn]] void banned(Op op);
/// `t` cast for the plan (or `t` itself); the weight cache lives here.
Tensor cast(const CastPlan& p, ScalarType to, const Tensor& t);
/// Promote: the widest floating dtype among the eligible tensors.
ScalarType promote(const CastPlan& p, ScalarType current, const Tensor& t);

/// Tests: how many times this thread's hook cast the arguments of each op
/// (indexed by Op), and a switch that makes CPU tensors follow the CUDA
/// column, so that the CUDA lists' hooks run on a machine without a GPU.
const std::vector<int64_t>& redispatch_counts();
void set_cpu_follows_cuda_lists_for_testing(bool on);
/// The autocast state of this thread as one number, for compile's guard.
int64_t state_key();

/// Autocast excluded on this thread for its lifetime (the redispatched call,
/// a backward pass).
class ExcludeGuard {
 public:
  ExcludeGuard();
  ~ExcludeGuard();
  ExcludeGuard(const ExcludeGuard&) = delete;
  ExcludeGuard& operator=(const ExcludeGuard&) = delete;

 private:
  bool prev_;
};

// ---- argument walking --------------------------------------------------------------

template <class T>
using bare_t = std::remove_cv_t<std::remove_reference_t<T>>;

/// The device type of the first defined tensor among the arguments.
inline bool first_device(DeviceType& d, const Tensor& t) {
  if (!t.defined()) return false;
  d = t.device().type();
  return true;
}
inline bool first_device(DeviceType& d, const std::optional<Tensor>& t) { return t && first_device(d, *t); }
inline bool first_device(DeviceType& d, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (first_device(d, t)) return true;
  return false;
}
template <class T>
bool first_device(DeviceType&, const T&) {
  return false;
}

inline ScalarType promote_arg(const CastPlan& p, ScalarType cur, const Tensor& t) { return promote(p, cur, t); }
inline ScalarType promote_arg(const CastPlan& p, ScalarType cur, const std::optional<Tensor>& t) {
  return t ? promote(p, cur, *t) : cur;
}
inline ScalarType promote_arg(const CastPlan& p, ScalarType cur, const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts) cur = promote(p, cur, t);
  return cur;
}
template <class T>
ScalarType promote_arg(const CastPlan&, ScalarType cur, const T&) {
  return cur;
}

inline Tensor cast_arg(const CastPlan& p, ScalarType to, const Tensor& t) { return cast(p, to, t); }
inline std::optional<Tensor> cast_arg(const CastPlan& p, ScalarType to, const std::optional<Tensor>& t) {
  if (!t) return std::nullopt;
  return cast(p, to, *t);
}
inline std::vector<Tensor> cast_arg(const CastPlan& p, ScalarType to, const std::vector<Tensor>& ts) {
  std::vector<Tensor> r;
  r.reserve(ts.size());
  for (const Tensor& t : ts) r.push_back(cast(p, to, t));
  return r;
}
template <class T>
  requires(!std::is_same_v<bare_t<T>, Tensor> && !std::is_same_v<bare_t<T>, std::optional<Tensor>> &&
           !std::is_same_v<bare_t<T>, std::vector<Tensor>>)
T&& cast_arg(const CastPlan&, ScalarType, T&& a) {
  return std::forward<T>(a);
}

/// The plan for a call with these arguments.
template <class... A>
CastPlan plan_call(Op op, const A&... args) {
  DeviceType d = DeviceType::CPU;
  if (!(first_device(d, args) || ...)) return {};
  return plan_for(op, d);
}

/// Casts the arguments by the plan and calls `f` with them, autocast
/// excluded for the call.
template <class F, class... A>
decltype(auto) redispatch(const CastPlan& p, F&& f, A&&... args) {
  if (p.policy == AmpPolicy::Banned) banned(p.op);
  ScalarType to = p.policy == AmpPolicy::Lower ? p.lower : kFloat;
  if (p.policy == AmpPolicy::Promote) {
    to = p.lower;
    ((to = promote_arg(p, to, args)), ...);
  }
  ExcludeGuard exclude;
  return f(cast_arg(p, to, std::forward<A>(args))...);
}

}  // namespace brisk::amp::detail

/// Autocast's hook, first thing in an op's functional front end: the row
/// (an Op enumerator name), the front end itself, and its parameters in
/// order. `BRISK_AUTOCAST(matmul, matmul, a, b);`
#define BRISK_AUTOCAST(row, fn, ...)                                                                           \
  do {                                                                                                         \
    if (BRISK_UNLIKELY(::brisk::amp::detail::autocast_any())) {                                               \
      if (const auto brisk_autocast_plan = ::brisk::amp::detail::plan_call(::brisk::Op::row, __VA_ARGS__))    \
        return ::brisk::amp::detail::redispatch(                                                               \
            brisk_autocast_plan, [&](auto&&... brisk_a) -> decltype(auto) { return fn(brisk_a...); }, \
            __VA_ARGS__);                                                                                      \
    }                                                                                                          \
  } while (0)
