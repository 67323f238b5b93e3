// Autocast: the per-thread state, the scope, the casts and the weight-cast
// cache (Note [Autocast] in core/autocast.h).
#include "core/autocast.h"

#include <string>
#include <unordered_map>

#include "brisk/amp.h"
#include "brisk/autograd.h"
#include "brisk/error.h"
#include "core/trace_hooks.h"

namespace brisk::amp {
namespace detail {

std::atomic<int> g_autocast_scopes{0};

namespace {

struct CachedCast {
  Tensor source;  ///< keeps the parameter (and so the key) alive until the cache is cleared
  uint32_t version;
  bool grad_mode;
  ScalarType to;
  Tensor cast;
};

struct ThreadState {
  bool enabled[kNumDeviceTypes] = {false, false};
  ScalarType dtype[kNumDeviceTypes] = {kBFloat16, kHalf};
  bool cache_enabled = true;
  bool excluded = false;
  bool cpu_follows_cuda = false;  // tests only
  int nesting = 0;
  std::unordered_map<const TensorImpl*, CachedCast> cache;
  std::vector<int64_t> counts = std::vector<int64_t>(kNumTableOps, 0);
};

ThreadState& ts() {
  thread_local ThreadState s;
  return s;
}

bool eligible(const CastPlan& p, const Tensor& t) {
  return t.defined() && t.is_floating_point() && t.dtype() != kDouble && t.device().type() == p.device;
}

const char* device_name(DeviceType d) { return d == DeviceType::CPU ? "cpu" : "cuda"; }

}  // namespace

CastPlan plan_for(Op op, DeviceType device) {
  ThreadState& s = ts();
  const int i = static_cast<int>(device);
  if (s.excluded || !s.enabled[i]) return {};
  const OpInfo& info = op_info(op);
  CastPlan p;
  p.op = op;
  p.policy = device == DeviceType::CPU && !s.cpu_follows_cuda ? info.cpu_amp : info.amp;
  p.device = device;
  p.lower = s.dtype[i];
  if (p.policy != AmpPolicy::Keep) ++s.counts[static_cast<size_t>(op)];
  return p;
}

void banned(Op op) {
  const char* name = op_info(op).name;
  throw Error(std::string(name) + ": unsafe to autocast: its float16 result loses the small probabilities the " +
              "loss needs (PyTorch bans it under CUDA autocast too). Models usually apply a sigmoid right " +
              "before it: drop the sigmoid and call binary_cross_entropy_with_logits (nn::BCEWithLogitsLoss), " +
              "which is safe under autocast, or compute this loss outside the autocast scope in float32.");
}

Tensor cast(const CastPlan& p, ScalarType to, const Tensor& t) {
  if (!eligible(p, t) || t.dtype() == to) return t;
  ThreadState& s = ts();
  const bool cacheable = s.cache_enabled && to == p.lower && t.dtype() == kFloat && t.requires_grad() &&
                         t.is_leaf() && !t._is_view() && !brisk::detail::tracing_any();
  if (!cacheable) return t.to(to);
  const bool grad_mode = GradMode::is_enabled();
  auto it = s.cache.find(t.impl());
  if (it != s.cache.end() && it->second.version == t._version() && it->second.grad_mode == grad_mode &&
      it->second.to == to)
    return it->second.cast;
  Tensor c = t.to(to);
  s.cache[t.impl()] = CachedCast{t, t._version(), grad_mode, to, c};
  return c;
}

ScalarType promote(const CastPlan& p, ScalarType current, const Tensor& t) {
  if (!eligible(p, t)) return current;
  const ScalarType next = t.dtype();
  if (current == kFloat || next == kFloat) return kFloat;
  if (current == next) return current;
  const std::string lower(dtype_name(p.lower));
  throw Error(std::string(op_info(p.op).name) + ": under " + device_name(p.device) + " autocast to " + lower +
              ", an input is " + std::string(dtype_name(next)) + " and another " +
              std::string(dtype_name(current)) + ": autocast promotes only float32 and " + lower +
              " (as PyTorch); cast the inputs to one dtype first.");
}

ExcludeGuard::ExcludeGuard() : prev_(ts().excluded) { ts().excluded = true; }
ExcludeGuard::~ExcludeGuard() { ts().excluded = prev_; }

const std::vector<int64_t>& redispatch_counts() { return ts().counts; }
void set_cpu_follows_cuda_lists_for_testing(bool on) { ts().cpu_follows_cuda = on; }

int64_t state_key() {
  if (!autocast_any()) return 0;
  const ThreadState& s = ts();
  int64_t k = s.excluded ? 1 : 0;
  for (int i = 0; i < kNumDeviceTypes; ++i)
    if (s.enabled[i]) k |= (int64_t{1} << (1 + i)) | (int64_t(s.dtype[i]) << (8 + 8 * i));
  if (s.cpu_follows_cuda) k |= int64_t{1} << 40;
  return k;
}

}  // namespace detail

using detail::ts;

autocast::autocast(DeviceType device_type, std::optional<ScalarType> dtype, bool enabled,
                   std::optional<bool> cache_enabled)
    : device_(device_type) {
  if (dtype && enabled)
    BRISK_CHECK(*dtype == kBFloat16 || *dtype == kHalf, "autocast", "autocast on ", detail::device_name(device_type),
                " runs ops in float16 or bfloat16, got ", dtype_name(*dtype),
                " (for float32 everywhere, leave autocast off or pass enabled=false)");
  auto& s = ts();
  const int i = static_cast<int>(device_type);
  prev_enabled_ = s.enabled[i];
  prev_dtype_ = s.dtype[i];
  prev_cache_ = s.cache_enabled;
  s.enabled[i] = enabled;
  if (dtype) s.dtype[i] = *dtype;
  if (cache_enabled) s.cache_enabled = *cache_enabled;
  ++s.nesting;
  counted_ = enabled;
  if (counted_) detail::g_autocast_scopes.fetch_add(1, std::memory_order_relaxed);
}

autocast::~autocast() {
  auto& s = ts();
  const int i = static_cast<int>(device_);
  s.enabled[i] = prev_enabled_;
  s.dtype[i] = prev_dtype_;
  s.cache_enabled = prev_cache_;
  if (counted_) detail::g_autocast_scopes.fetch_sub(1, std::memory_order_relaxed);
  if (--s.nesting == 0) s.cache.clear();
}

bool is_autocast_enabled(DeviceType device_type) { return ts().enabled[static_cast<int>(device_type)]; }
ScalarType get_autocast_dtype(DeviceType device_type) { return ts().dtype[static_cast<int>(device_type)]; }
bool is_autocast_cache_enabled() { return ts().cache_enabled; }
void clear_autocast_cache() { ts().cache.clear(); }

}  // namespace brisk::amp
