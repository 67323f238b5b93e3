// The advisor: reads a profile and names the anti-patterns of the PyTorch
// performance handbooks, with what they cost and the fix. Rules and
// thresholds: docs/design/profiler.md ("Advisor") and profiler/advisor.h.
#include "profiler/advisor.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "core/cpu_features.h"
#include "core/op_table.h"

namespace brisk::profiler {

namespace advisor {

namespace {

int32_t parent_index(const ProfileResult& r, size_t i) {
  int32_t p = r.events[i].parent;
  if (p < 0 || static_cast<size_t>(p) >= r.events.size() || static_cast<size_t>(p) == i) return -1;
  return p;
}

}  // namespace

std::vector<std::string> scopes_of(const ProfileResult& r, size_t i) {
  const Event& e = r.events[i];
  std::vector<std::string> scopes;
  if (!e.stack.empty()) {
    scopes = e.stack;
    // A scope's own stack may list the scope itself last.
    if (e.kind == EventKind::UserScope && scopes.back() == e.name) scopes.pop_back();
    return scopes;
  }
  // The parent links form a forest; the step bound guards against a
  // hand-made result with a cycle.
  size_t steps = 0;
  for (int32_t p = parent_index(r, i); p >= 0 && steps < r.events.size(); p = parent_index(r, p), ++steps)
    if (r.events[p].kind == EventKind::UserScope) scopes.push_back(r.events[p].name);
  std::reverse(scopes.begin(), scopes.end());
  return scopes;
}

std::string where_of(const ProfileResult& r, size_t i) {
  std::string w = r.events[i].name;
  std::vector<std::string> scopes = scopes_of(r, i);
  if (scopes.empty()) return w;
  w += " (";
  for (size_t k = 0; k < scopes.size(); ++k) {
    if (k) w += " > ";
    w += scopes[k];
  }
  w += ")";
  return w;
}

std::string format_duration(int64_t ns) {
  char buf[64];
  double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000) std::snprintf(buf, sizeof buf, "%.3fs", v / 1e9);
  else if (ns >= 1'000'000) std::snprintf(buf, sizeof buf, "%.3fms", v / 1e6);
  else if (ns >= 1'000) std::snprintf(buf, sizeof buf, "%.3fus", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%lldns", static_cast<long long>(ns));
  return buf;
}

bool CopyDetail::host_to_device() const { return valid && src.rfind("cpu", 0) == 0 && dst.rfind("cpu", 0) != 0; }

CopyDetail parse_copy_detail(const std::string& detail) {
  CopyDetail c;
  std::istringstream words(detail);
  std::string first, w;
  if (!(words >> first)) return c;
  size_t arrow = first.find("->");
  if (arrow == std::string::npos || arrow == 0 || arrow + 2 == first.size()) return c;
  c.src = first.substr(0, arrow);
  c.dst = first.substr(arrow + 2);
  c.valid = true;
  while (words >> w) {
    if (w == "non_blocking") c.non_blocking = true;
    if (w == "pinned") c.pinned = true;
  }
  return c;
}

}  // namespace advisor

using namespace advisor;

namespace {

// Per-event facts the rules share: enclosing events of each kind.
struct Context {
  const ProfileResult& r;
  std::vector<int32_t> parent;  // validated parent links
  std::vector<uint8_t> in_op, in_backward, in_optimizer, in_sync, op_ancestor_recorded;
  std::vector<int32_t> nearest_op;  // innermost enclosing Op event, or -1
  std::unordered_map<std::string, int64_t> scope_count;  // UserScope name -> times entered
  std::unordered_map<std::string, int32_t> first_scope;  // UserScope name -> its earliest instance

  explicit Context(const ProfileResult& res) : r(res) {
    const size_t n = r.events.size();
    parent.resize(n);
    for (size_t i = 0; i < n; ++i) {
      int32_t p = r.events[i].parent;
      parent[i] = (p < 0 || static_cast<size_t>(p) >= n || static_cast<size_t>(p) == i) ? -1 : p;
    }
    in_op.assign(n, 0);
    in_backward.assign(n, 0);
    in_optimizer.assign(n, 0);
    in_sync.assign(n, 0);
    op_ancestor_recorded.assign(n, 0);
    nearest_op.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      size_t steps = 0;
      for (int32_t p = parent[i]; p >= 0 && steps < n; p = parent[p], ++steps) {
        const Event& a = r.events[p];
        switch (a.kind) {
          case EventKind::Op:
            if (!in_op[i]) nearest_op[i] = p;
            in_op[i] = 1;
            if (a.recorded_graph) op_ancestor_recorded[i] = 1;
            break;
          case EventKind::Backward: in_backward[i] = 1; break;
          case EventKind::OptimizerStep: in_optimizer[i] = 1; break;
          case EventKind::Sync: in_sync[i] = 1; break;
          default: break;
        }
      }
      optimizer_steps += r.events[i].kind == EventKind::OptimizerStep;
      dataloader_waits += r.events[i].kind == EventKind::DataLoaderWait;
      if (r.events[i].kind == EventKind::UserScope) {
        ++scope_count[r.events[i].name];
        auto [it, fresh] = first_scope.emplace(r.events[i].name, static_cast<int32_t>(i));
        if (!fresh && r.events[i].start_ns < r.events[it->second].start_ns) it->second = static_cast<int32_t>(i);
      }
    }
  }

  // Whether event i runs in a later iteration of a loop: inside an instance
  // of a repeated record_function scope other than its first.
  bool in_later_iteration(size_t i) const {
    const size_t n = r.events.size();
    int32_t outer = -1;  // the outermost repeated UserScope around i
    size_t steps = 0;
    for (int32_t p = parent[i]; p >= 0 && steps < n; p = parent[p], ++steps) {
      const Event& a = r.events[p];
      if (a.kind != EventKind::UserScope) continue;
      auto it = scope_count.find(a.name);
      if (it != scope_count.end() && it->second >= kScopeMinRepeats) outer = p;
    }
    if (outer < 0) return false;
    auto first = first_scope.find(r.events[outer].name);
    return first != first_scope.end() && first->second != outer;
  }

  // The number of iterations of the loop around event i: the instances of
  // the innermost repeated scope around it, else the optimizer steps or the
  // data-loader waits (whichever there are more of), else 0 (unknown).
  int64_t loop_iterations(size_t i) const {
    std::vector<std::string> scopes = scopes_of(r, i);
    for (size_t k = scopes.size(); k-- > 0;) {
      auto it = scope_count.find(scopes[k]);
      if (it != scope_count.end() && it->second >= kScopeMinRepeats) return it->second;
    }
    return std::max(optimizer_steps, dataloader_waits);
  }
  int64_t optimizer_steps = 0, dataloader_waits = 0;

  bool in_repeated_scope(size_t i) const {
    for (const std::string& s : scopes_of(r, i)) {
      auto it = scope_count.find(s);
      if (it != scope_count.end() && it->second >= kScopeMinRepeats) return true;
    }
    return false;
  }
};

// Events grouped by call site ("name (scopes)"), to list the costliest.
class Sites {
 public:
  void add(const std::string& where, int64_t ns, int64_t count = 1) {
    Site& s = sites_[where];
    s.count += count;
    s.time_ns += ns;
  }
  /// The call sites, most costly first (ties: more frequent, then by name).
  std::vector<std::string> top(size_t limit = kMaxWhere) const {
    std::vector<std::pair<std::string, Site>> v(sites_.begin(), sites_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      if (a.second.time_ns != b.second.time_ns) return a.second.time_ns > b.second.time_ns;
      if (a.second.count != b.second.count) return a.second.count > b.second.count;
      return a.first < b.first;
    });
    std::vector<std::string> out;
    for (size_t k = 0; k < v.size() && k < limit; ++k) out.push_back(v[k].first);
    if (v.size() > limit) out.push_back("... and " + std::to_string(v.size() - limit) + " more call sites");
    return out;
  }

 private:
  struct Site {
    int64_t count = 0, time_ns = 0;
  };
  std::map<std::string, Site> sites_;
};

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// ---- 1. host-device synchronisations in a loop ---------------------------------

void rule_sync_in_loop(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  // A Sync event marks the point where the host would wait; the op around it
  // (item, nonzero, to) is the call the user made, and its time is what the
  // call cost here. Call sites: that op (or the Sync itself) + scopes + call.
  struct Group {
    std::vector<size_t> events;  // the op around each sync, or the sync
    std::string call;            // the sync's detail: "item", "nonzero", ...
    bool in_repeated_scope = false;
    int64_t iterations = 0;      // of the loop around it, 0 when unknown
  };
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != EventKind::Sync || c.in_sync[i]) continue;  // a sync inside a sync is one wait
    size_t call = c.nearest_op[i] >= 0 ? static_cast<size_t>(c.nearest_op[i]) : i;
    Group& g = groups[where_of(c.r, call) + "\x1f" + ev[i].detail];
    g.events.push_back(call);
    g.call = ev[i].detail.empty() ? ev[i].name : ev[i].detail;
    g.in_repeated_scope = g.in_repeated_scope || c.in_repeated_scope(i);
    g.iterations = std::max(g.iterations, c.loop_iterations(i));
  }
  Finding f{Rule::SyncInLoop, "Host-device synchronisation inside a loop", 0, 0, {}, {}};
  Sites sites;
  std::set<std::string> calls;
  for (const auto& [key, g] : groups) {
    const auto n = static_cast<int64_t>(g.events.size());
    if (n < kLoopMinRepeats && !g.in_repeated_scope) continue;
    // Read every N steps: already the fix.
    if (g.iterations > 0 && static_cast<double>(n) <= kSyncMinIterationShare * static_cast<double>(g.iterations))
      continue;
    calls.insert(g.call);
    for (size_t i : g.events) {
      f.count += 1;
      f.time_ns += ev[i].duration_ns();
      sites.add(where_of(c.r, i), ev[i].duration_ns());
    }
  }
  if (f.count == 0) return;
  f.where = sites.top();
  std::string fix;
  auto has = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (calls.count(n)) return true;
    return false;
  };
  if (has({"item", "is_nonzero", "bool", "local_scalar_dense"}))
    fix += "item() and data-dependent branches: keep running values on the device (total += loss.detach()) and "
           "read them once every N steps or after the loop; replace `if (t.item<bool>())` by where()/masks. ";
  if (has({"nonzero", "where", "masked_select", "unique"}))
    fix += "nonzero(): its output size depends on the data, so the host must wait for it; keep shapes static "
           "with a boolean mask: where(mask, x, 0), masked_fill or x * mask. ";
  if (has({"to", "cpu", "copy"}))
    fix += "to(kCPU) / copies to the host: copy once after the loop or every N steps, or non_blocking into "
           "pinned memory. ";
  if (has({"print", "operator<<"})) fix += "printing a tensor: log every N steps, not every iteration. ";
  if (fix.empty()) fix = "Keep the values on the device and read them from the host once, outside the loop. ";
  fix +=
      "Measured on the CPU these calls cost only their own time; on a GPU each one also waits for every queued "
      "kernel, so the device idles while the host catches up (set_sync_debug_mode(SyncDebugMode::Warn) "
      "reports each call site).";
  f.fix = fix;
  out.push_back(std::move(f));
}

// ---- 2. tensors created on the CPU then copied to a device -----------------------

bool is_factory(const std::string& name) {
  // Factories, and random fills of a tensor just made (empty(...).normal_())
  const OpLookup op = find_op(name);
  return op.info != nullptr &&
         (op.info->kind == OpKind::Factory || (op.info->kind == OpKind::Random && op.inplace));
}

// The previous sibling of an event on its thread: same parent, ended before
// it started. Siblings do not overlap, so sorted by start they are sorted by
// end too.
class Siblings {
 public:
  explicit Siblings(const Context& c) : c_(c) {
    for (size_t i = 0; i < c.r.events.size(); ++i) groups_[{c.r.events[i].thread, c.parent[i]}].push_back(i);
    for (auto& [key, v] : groups_)
      std::stable_sort(v.begin(), v.end(),
                       [&](size_t a, size_t b) { return c.r.events[a].start_ns < c.r.events[b].start_ns; });
  }
  int64_t previous(size_t i) const {
    const auto& ev = c_.r.events;
    const auto& v = groups_.at({ev[i].thread, c_.parent[i]});
    auto it = std::lower_bound(v.begin(), v.end(), i, [&](size_t a, size_t b) {
      return ev[a].start_ns < ev[b].start_ns;
    });
    while (it != v.begin()) {
      --it;
      if (*it != i && ev[*it].end_ns <= ev[i].start_ns) return static_cast<int64_t>(*it);
    }
    return -1;
  }

 private:
  const Context& c_;
  std::map<std::pair<uint32_t, int32_t>, std::vector<size_t>> groups_;
};

void rule_cpu_tensor_then_copy(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  Finding f{Rule::CpuTensorThenCopy, "Tensors created on the CPU, then copied to a device", 0, 0, {}, {}};
  Sites sites;
  std::unique_ptr<Siblings> siblings;  // built at the first host-to-device copy
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != EventKind::Copy || !parse_copy_detail(ev[i].detail).host_to_device()) continue;
    if (!siblings) siblings = std::make_unique<Siblings>(c);
    // The user's call is the outermost op around the copy (to(), cuda()).
    size_t call = i;
    size_t steps = 0;
    for (int32_t p = c.parent[i]; p >= 0 && steps < ev.size(); p = c.parent[p], ++steps)
      if (ev[p].kind == EventKind::Op) call = static_cast<size_t>(p);
    int64_t prev = siblings->previous(call);
    if (prev < 0 || ev[prev].kind != EventKind::Op || !is_factory(ev[prev].name)) continue;
    f.count += 1;
    f.time_ns += ev[prev].duration_ns() + ev[call].duration_ns();
    sites.add(where_of(c.r, static_cast<size_t>(prev)), ev[prev].duration_ns() + ev[call].duration_ns());
  }
  if (f.count == 0) return;
  f.where = sites.top();
  f.fix =
      "Create the tensor on the device directly: factories take options, e.g. "
      "brisk::zeros(shape, brisk::device(brisk::kCUDA)); data that must come from the host should be built in "
      "pinned memory and copied with non_blocking = true.";
  out.push_back(std::move(f));
}

// ---- 3. launch-bound stretches -----------------------------------------------------

bool is_small_op(const Event& e) {
  bool any_tensor = false;
  for (const auto& shape : e.shapes) {  // {}: a non-tensor argument or a 0-d tensor
    int64_t numel = 1;
    for (int64_t d : shape) numel *= std::max<int64_t>(d, 0);
    any_tensor = true;
    if (numel > kSmallOpNumel) return false;
  }
  if (any_tensor) return true;
  return e.duration_ns() < kSmallOpNs;  // no recorded shapes (or no tensor input)
}

// Views change metadata only: on a GPU they launch nothing (the op table's
// View rows, Note [The op table]).
bool is_view_op(const std::string& name) {
  const OpLookup op = find_op(name);
  return op.info != nullptr && op.info->kind == OpKind::View;
}

// Ops a user dispatched (not inside another op or an optimizer step, which
// rule 5 covers), per thread in start order. Views are left out: they
// neither count nor break a stretch (rules 3 and 10).
std::map<uint32_t, std::vector<size_t>> user_ops_per_thread(const Context& c) {
  const auto& ev = c.r.events;
  std::map<uint32_t, std::vector<size_t>> per_thread;
  for (size_t i = 0; i < ev.size(); ++i)
    if (ev[i].kind == EventKind::Op && !c.in_op[i] && !c.in_optimizer[i] && !is_view_op(ev[i].name))
      per_thread[ev[i].thread].push_back(i);
  auto by_start = [&](size_t a, size_t b) { return ev[a].start_ns < ev[b].start_ns; };
  for (auto& [thread, ops] : per_thread)
    if (!std::is_sorted(ops.begin(), ops.end(), by_start)) std::stable_sort(ops.begin(), ops.end(), by_start);
  return per_thread;
}

/// Calls on_run(ops, k, end) for every run ops[k, end) of at least min_ops
/// consecutive user ops of one thread that all satisfy in_run.
template <class InRun, class OnRun>
void for_each_run(const Context& c, int64_t min_ops, const InRun& in_run, const OnRun& on_run) {
  for (const auto& [thread, ops] : user_ops_per_thread(c)) {
    size_t k = 0;
    while (k < ops.size()) {
      size_t end = k;
      while (end < ops.size() && in_run(c.r.events[ops[end]])) ++end;
      if (static_cast<int64_t>(end - k) >= min_ops) on_run(ops, k, end);
      k = end == k ? k + 1 : end;
    }
  }
}

void rule_launch_bound(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  Finding f{Rule::LaunchBound, "Launch-bound stretches of small ops", 0, 0, {}, {}};
  Sites sites;
  int64_t stretches = 0;
  for_each_run(c, kLaunchBoundMinOps, is_small_op, [&](const std::vector<size_t>& ops, size_t k, size_t end) {
    ++stretches;
    for (size_t j = k; j < end; ++j) {
      f.count += 1;
      f.time_ns += ev[ops[j]].duration_ns();
      sites.add(where_of(c.r, ops[j]), ev[ops[j]].duration_ns());
    }
  });
  if (f.count == 0) return;
  f.title += " (" + plural(stretches, "stretch", "stretches") + " of at least " + std::to_string(kLaunchBoundMinOps) +
             " ops)";
  f.where = sites.top();
  f.fix =
      "Each op costs a dispatch (on a GPU, a kernel launch) that exceeds its work on tensors this small: batch the "
      "work into fewer ops on bigger tensors (stack the inputs and vectorise the loop), use the foreach ops "
      "(brisk::foreach_add_ and friends) for lists of tensors, and on a GPU capture the stretch in a CUDA graph "
      "(brisk::cuda::CUDAGraph; brisk::cuda::GraphRunner for a serving loop whose batch size varies) or compile it.";
  out.push_back(std::move(f));
}

// ---- 10. pointwise chains compile would fuse ------------------------------------------

bool is_pointwise_op(const std::string& name) {
  const OpLookup op = find_op(name);
  return op.info != nullptr && op.info->pointwise();
}

void rule_fusable_pointwise(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  // (Under compile the chain is one event, a fused group: the rule is quiet.)
  Finding f{Rule::FusablePointwise, "Chains of pointwise ops that compile would fuse", 0, 0, {}, {}};
  Sites sites;
  int64_t chains = 0;
  auto fusable = [](const Event& e) { return is_pointwise_op(e.name) && !is_small_op(e); };
  for_each_run(c, kFusableMinOps, fusable, [&](const std::vector<size_t>& ops, size_t k, size_t end) {
    ++chains;
    std::string chain;
    int64_t t = 0;
    for (size_t j = k; j < end; ++j) {
      f.count += 1;
      t += ev[ops[j]].duration_ns();
      if (j - k < 6) chain += (chain.empty() ? "" : ", ") + ev[ops[j]].name;
    }
    if (end - k > 6) chain += ", ...";
    // The fused chain reads and writes memory once instead of once per
    // op: most of the chain's time is what it would save.
    f.time_ns += t - t / static_cast<int64_t>(end - k);
    sites.add(chain + " from " + where_of(c.r, ops[k]), t);
  });
  if (f.count == 0) return;
  f.title += " (" + plural(chains, "chain", "chains") + " of at least " + std::to_string(kFusableMinOps) + " ops)";
  f.where = sites.top();
  f.fix =
      "Each op of the chain reads and writes the whole tensor: put the chain in a function and call it through "
      "brisk::compile (auto f = brisk::compile(fn); f(x)), which records the chain once and runs it as one pass "
      "over memory (docs/design/compile.md).";
  out.push_back(std::move(f));
}

// ---- 4. zero-filled gradients ------------------------------------------------------

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void rule_zeroed_grads(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  Finding f{Rule::ZeroedGrads, "Gradients zero-filled instead of set to none", 0, 0, {}, {}};
  Sites sites;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.kind != EventKind::UserScope || !ends_with(e.name, "zero_grad") || e.detail != "set_to_none=false")
      continue;
    f.count += 1;
    f.time_ns += e.duration_ns();
    sites.add(where_of(c.r, i), e.duration_ns());
  }
  if (f.count == 0) return;
  f.where = sites.top();
  f.fix =
      "Call zero_grad() with its default set_to_none = true: the next backward then writes each gradient instead "
      "of adding it into a zero-filled tensor, which saves one fill and one read of every gradient. Keep "
      "zero_grad(false) only for code that reads grad() between zero_grad and backward and needs zeros there.";
  out.push_back(std::move(f));
}

// ---- 5. for-loop optimizers ----------------------------------------------------------

void rule_for_loop_optimizer(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  Finding f{Rule::ForLoopOptimizer, "Optimizer steps run as a for-loop over parameters", 0, 0, {}, {}};
  Sites sites;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != EventKind::OptimizerStep || ev[i].detail != "for-loop") continue;
    f.count += 1;
    f.time_ns += ev[i].duration_ns();
    sites.add(where_of(c.r, i), ev[i].duration_ns());
  }
  if (f.count == 0) return;
  f.where = sites.top();
  f.fix =
      "Construct the optimizer with .impl(brisk::optim::Impl::Fused) (the default) or Impl::Foreach: the update "
      "then runs in one pass over memory (or one foreach op per step of the formula) for all parameters, instead "
      "of several ops, each with its own dispatch and temporary, per parameter.";
  out.push_back(std::move(f));
}

// ---- 6. inference with grad mode on -------------------------------------------------

void rule_grad_mode_inference(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  // A graph recorded after the last backward started is consumed by none.
  bool any_backward = false;
  int64_t last_backward = 0;
  for (const Event& e : ev)
    if (e.kind == EventKind::Backward) {
      last_backward = any_backward ? std::max(last_backward, e.start_ns) : e.start_ns;
      any_backward = true;
    }
  Finding f{Rule::GradModeInference, "Forward ops recording an autograd graph that no backward uses", 0, 0, {}, {}};
  Sites sites;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.kind != EventKind::Op || !e.recorded_graph || c.op_ancestor_recorded[i] || c.in_backward[i]) continue;
    if (any_backward && e.start_ns <= last_backward) continue;
    f.count += 1;
    f.time_ns += e.duration_ns();
    sites.add(where_of(c.r, i), e.duration_ns());
  }
  if (f.count < kGradModeMinOps) return;
  f.where = sites.top();
  f.fix =
      "Run inference under a brisk::InferenceMode guard (or brisk::NoGradGuard when the outputs must be usable "
      "by autograd later): the ops then record no graph nodes, keep no inputs alive for a backward that never "
      "comes, and (InferenceMode) skip version counting.";
  out.push_back(std::move(f));
}

// ---- 7. allocating ops in a hot loop; allocator cache misses -----------------------

// Pointwise ops with an in-place form (x.op_()), called out of place (the
// op table's rows, Note [The op table]).
bool has_in_place_form(const std::string& name) {
  const OpLookup op = find_op(name);
  return op.info != nullptr && op.info->pointwise() && op.info->has_inplace() && !op.inplace && !op.out;
}

// What an event's allocations cost, estimated (the allocator's time is not
// measured apart from the op's): a round trip per allocation, plus first
// touch of every page when the allocation missed the cache; at most the
// event's own time.
int64_t allocation_cost_estimate(const Event& e) {
  int64_t cost = std::max<int64_t>(e.self_allocs, 1) * kAllocationCostNs;
  if (e.self_cache_misses > 0) cost += (e.self_alloc_bytes + 4095) / 4096 * kFirstTouchNsPerPage;
  return std::min(cost, std::max<int64_t>(e.duration_ns(), 0));
}

void rule_allocating_ops(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  // Ops the user called (autograd needs the outputs of recording ops, and
  // library internals are not the user's to change).
  std::map<std::string, std::pair<int64_t, int64_t>> per_site;  // where -> (count, estimated ns)
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.kind != EventKind::Op || e.self_alloc_bytes <= 0 || e.recorded_graph || c.in_op[i] || c.in_backward[i] ||
        c.in_optimizer[i] || !has_in_place_form(e.name))
      continue;
    auto& s = per_site[where_of(c.r, i)];
    s.first += 1;
    s.second += allocation_cost_estimate(e);
  }
  Finding f{Rule::AllocatingOps, "Out-of-place ops allocating their output in a loop", 0, 0, {}, {}};
  Sites sites;
  for (const auto& [where, s] : per_site) {
    if (s.first < kAllocatingOpMinCount) continue;
    f.count += s.first;
    f.time_ns += s.second;
    sites.add(where, s.second, s.first);
  }
  if (f.count > 0) {
    f.where = sites.top();
    f.fix =
        "Write into memory you already have: the in-place form (x.add_(y), x.relu_()) when nothing else needs "
        "the old value, or the out= form (brisk::add_out(out, a, b)) into a buffer allocated once before the "
        "loop. (The time is an estimate of the allocations' share.)";
    out.push_back(std::move(f));
  }

  // Allocations the cache could not serve, repeatedly at one call site. The
  // first allocation of a size always misses (warm-up); a miss counts when
  // the site already allocated that many bytes before, or when it happens in
  // a later iteration of a repeated record_function scope.
  std::map<std::string, std::pair<int64_t, int64_t>> misses;  // where -> (events, estimated ns)
  std::map<std::string, int64_t> allocating;                   // where -> events that allocated
  std::set<std::pair<std::string, int64_t>> seen;               // (where, bytes) allocated before
  std::vector<size_t> order(ev.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto by_start = [&](size_t a, size_t b) { return ev[a].start_ns < ev[b].start_ns; };
  if (!std::is_sorted(order.begin(), order.end(), by_start)) std::stable_sort(order.begin(), order.end(), by_start);
  for (size_t i : order) {
    const Event& e = ev[i];
    if (e.self_allocs <= 0 && e.self_cache_misses <= 0) continue;
    std::string where = where_of(c.r, i);
    ++allocating[where];
    bool repeat = !seen.insert({where, e.self_alloc_bytes}).second;
    if (e.self_cache_misses <= 0 || !(repeat || c.in_later_iteration(i))) continue;
    auto& s = misses[where];
    s.first += 1;
    s.second += allocation_cost_estimate(e);
  }
  Finding m{Rule::AllocatingOps, "Allocator cache misses in a loop", 0, 0, {}, {}};
  Sites miss_sites;
  for (const auto& [where, s] : misses) {
    if (s.first < kCacheMissMinCount ||
        static_cast<double>(s.first) < kCacheMissMinShare * static_cast<double>(allocating[where]))
      continue;
    m.count += s.first;
    m.time_ns += s.second;
    miss_sites.add(where, s.second, s.first);
  }
  if (m.count == 0) return;
  m.where = miss_sites.top();
  m.fix =
      "These allocations went past the allocator's cache to the operating system, which hands out fresh pages "
      "that fault on first touch: keep tensor sizes the same from one iteration to the next so freed blocks are "
      "reused, allocate buffers once and reuse them (out= forms), and do not call brisk::cpu::empty_cache() "
      "inside the loop. (The time is an estimate: the allocations and the first touch of their pages.)";
  out.push_back(std::move(m));
}

// ---- 8. data-loader stalls -----------------------------------------------------------

void rule_dataloader_stall(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  int64_t duration = c.r.duration_ns;
  if (duration <= 0) {
    for (const Event& e : ev) duration = std::max(duration, e.end_ns);
  }
  if (duration <= 0) return;
  Finding f{Rule::DataLoaderStall, "Compute waiting for the data loader", 0, 0, {}, {}};
  Sites sites;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != EventKind::DataLoaderWait) continue;
    f.count += 1;
    f.time_ns += ev[i].duration_ns();
    sites.add(where_of(c.r, i), ev[i].duration_ns());
  }
  double share = static_cast<double>(f.time_ns) / static_cast<double>(duration);
  if (f.count == 0 || share <= kDataLoaderStallShare) return;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", share * 100);
  f.title += " (" + std::string(pct) + " of the profile)";
  f.where = sites.top();
  f.fix =
      "Load batches while the model computes: DataLoaderOptions().num_workers(N) builds them on worker threads "
      "and prefetch_factor keeps more in flight; make the dataset's get() cheaper (decode or transform once "
      "ahead of time, not per sample); on a GPU add pin_memory(true) so the copies are non-blocking.";
  out.push_back(std::move(f));
}

// ---- 9. CUDA: unpinned non-blocking copies, tensor-core math -------------------------

void rule_unpinned_copy(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  Finding f{Rule::UnpinnedCopy, "Non-blocking copies from pageable (unpinned) host memory", 0, 0, {}, {}};
  Sites sites;
  for (size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].kind != EventKind::Copy) continue;
    CopyDetail d = parse_copy_detail(ev[i].detail);
    if (!d.host_to_device() || !d.non_blocking || d.pinned) continue;
    f.count += 1;
    f.time_ns += ev[i].duration_ns();
    sites.add(where_of(c.r, i), ev[i].duration_ns());
  }
  if (f.count == 0) return;
  f.where = sites.top();
  f.fix =
      "A non-blocking copy from pageable memory is staged through a pinned buffer and blocks the host anyway: "
      "allocate the source pinned (pin_memory(), DataLoaderOptions().pin_memory(true)) so the copy overlaps "
      "compute.";
  out.push_back(std::move(f));
}

bool is_matmul_like(const std::string& name) {
  const OpLookup op = find_op(name);
  return op.info != nullptr && (op.info->kind == OpKind::Gemm || op.info->kind == OpKind::Convolution);
}

// The CPU side of rule 9b: on a CPU with AVX512_BF16 or AMX, brisk runs
// bfloat16 GEMMs on oneDNN at about twice float32's rate (Note [bfloat16
// GEMM on oneDNN]); a profile whose top-level time is mostly float32 GEMMs
// would gain from bfloat16 autocast. Convolutions are left out: on the CPU
// they compute 16-bit inputs in float32, so autocast would not speed them
// up. Quiet under autocast (the GEMMs are bfloat16 then) and on CPUs
// without the instructions.
void rule_cpu_bf16_math(const Context& c, std::vector<Finding>& out) {
  if (!brisk::detail::cpu_has_bf16_dot()) return;
  const auto& ev = c.r.events;
  int64_t top_ns = 0;
  Finding f{Rule::TensorCoreMath, "float32 matmuls that bfloat16 autocast would run about twice as fast on this CPU",
            0, 0, {}, {}};
  Sites sites;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.kind != EventKind::Op || c.in_op[i]) continue;
    top_ns += e.duration_ns();
    const OpLookup op = find_op(e.name);
    if (op.info == nullptr || op.info->kind != OpKind::Gemm || e.dtypes.empty()) continue;
    bool all_fp32 = true;
    for (const std::string& t : e.dtypes) all_fp32 = all_fp32 && (t.empty() || t == "float32");
    if (!all_fp32) continue;
    // Small products (no operand of 128 x 128 elements) gain little and
    // their time is mostly overhead, the first call's kernel generation
    // included. Without recorded shapes every GEMM counts.
    int64_t largest = e.shapes.empty() ? std::numeric_limits<int64_t>::max() : 0;
    for (const auto& sh : e.shapes) {
      int64_t n = 1;
      for (int64_t d : sh) n *= d;
      largest = std::max(largest, n);
    }
    if (largest < 128 * 128) continue;
    f.count += 1;
    f.time_ns += e.duration_ns();
    sites.add(where_of(c.r, i), e.duration_ns());
  }
  // Only where it matters: at least a quarter of the ops' time and 1 ms.
  if (f.count == 0 || f.time_ns < 1'000'000 || 4 * f.time_ns < top_ns) return;
  f.where = sites.top();
  f.fix =
      "Run the forward pass under brisk::amp::autocast(kCPU) (bfloat16): this CPU has AVX512_BF16/AMX, on which "
      "bfloat16 GEMMs run on oneDNN at about twice the float32 rate; parameters and gradients stay float32 and "
      "bfloat16 needs no GradScaler. Check the accuracy against a float32 run.";
  out.push_back(std::move(f));
}

void rule_tensor_core_math(const Context& c, std::vector<Finding>& out) {
  const auto& ev = c.r.events;
  // Events carry no device: only a profile that asked for CUDA activity and
  // copied to a CUDA device is taken to run its matmuls on a GPU.
  bool cuda_requested = false;
  for (Activity a : c.r.options.activities()) cuda_requested = cuda_requested || a == Activity::CUDA;
  bool uses_cuda = false;
  for (const Event& e : ev) {
    if (e.kind != EventKind::Copy) continue;
    CopyDetail d = parse_copy_detail(e.detail);
    uses_cuda = uses_cuda || (d.valid && (d.dst.rfind("cuda", 0) == 0 || d.src.rfind("cuda", 0) == 0));
  }
  if (!cuda_requested || !uses_cuda) {
    rule_cpu_bf16_math(c, out);
    return;
  }
  Finding fp32{Rule::TensorCoreMath, "float32 matmuls and convolutions that autocast would run on tensor cores",
               0, 0, {}, {}};
  Finding dims{Rule::TensorCoreMath, "Half-precision matmuls with dimensions that are not multiples of 8", 0, 0,
               {}, {}};
  Sites fp32_sites, dim_sites;
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (e.kind != EventKind::Op || c.in_op[i] || !is_matmul_like(e.name) || e.dtypes.empty()) continue;
    bool all_fp32 = true, half = false;
    for (const std::string& t : e.dtypes) {
      if (t.empty()) continue;
      all_fp32 = all_fp32 && t == "float32";
      half = half || t == "float16" || t == "bfloat16";
    }
    if (all_fp32) {
      fp32.count += 1;
      fp32.time_ns += e.duration_ns();
      fp32_sites.add(where_of(c.r, i), e.duration_ns());
    }
    if (half) {
      // The matrix dims: the last two of each input with at least two dims
      // (for a convolution's weight (Cout, Cin, k...): the channel dims).
      bool conv = e.name.rfind("conv", 0) == 0;
      bool misaligned = false;
      for (size_t k = 0; k < e.shapes.size(); ++k) {
        const auto& s = e.shapes[k];
        if (s.size() < 2) continue;
        size_t a = conv ? (k == 0 ? 1 : 0) : s.size() - 2;
        size_t b = conv ? (k == 0 ? 1 : 1) : s.size() - 1;
        misaligned = misaligned || s[a] % 8 != 0 || s[b] % 8 != 0;
      }
      if (misaligned) {
        dims.count += 1;
        dims.time_ns += e.duration_ns();
        dim_sites.add(where_of(c.r, i), e.duration_ns());
      }
    }
  }
  if (fp32.count > 0) {
    fp32.where = fp32_sites.top();
    fp32.fix =
        "Run the forward pass under autocast (bfloat16 or float16 with a GradScaler), or allow TF32 for float32 "
        "matmuls: tensor cores do these several times faster than float32 FMA units.";
    out.push_back(std::move(fp32));
  }
  if (dims.count > 0) {
    dims.where = dim_sites.top();
    dims.fix =
        "Pad the feature, hidden and channel sizes (and the vocabulary) to multiples of 8 so that the half-precision "
        "GEMMs can use tensor cores.";
    out.push_back(std::move(dims));
  }
}

}  // namespace

const char* rule_name(Rule r) {
  switch (r) {
    case Rule::SyncInLoop: return "SyncInLoop";
    case Rule::CpuTensorThenCopy: return "CpuTensorThenCopy";
    case Rule::LaunchBound: return "LaunchBound";
    case Rule::ZeroedGrads: return "ZeroedGrads";
    case Rule::ForLoopOptimizer: return "ForLoopOptimizer";
    case Rule::GradModeInference: return "GradModeInference";
    case Rule::AllocatingOps: return "AllocatingOps";
    case Rule::DataLoaderStall: return "DataLoaderStall";
    case Rule::UnpinnedCopy: return "UnpinnedCopy";
    case Rule::TensorCoreMath: return "TensorCoreMath";
    case Rule::FusablePointwise: return "FusablePointwise";
  }
  return "?";
}

std::vector<Finding> advise(const ProfileResult& r) {
  Context c(r);
  std::vector<Finding> out;
  rule_sync_in_loop(c, out);
  rule_cpu_tensor_then_copy(c, out);
  rule_launch_bound(c, out);
  rule_fusable_pointwise(c, out);
  rule_zeroed_grads(c, out);
  rule_for_loop_optimizer(c, out);
  rule_grad_mode_inference(c, out);
  rule_allocating_ops(c, out);
  rule_dataloader_stall(c, out);
  rule_unpinned_copy(c, out);
  rule_tensor_core_math(c, out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.time_ns > b.time_ns; });
  return out;
}

std::ostream& operator<<(std::ostream& os, const Finding& f) {
  os << "[" << rule_name(f.rule) << "] " << f.title << ": " << f.count << (f.count == 1 ? " time" : " times")
     << ", " << format_duration(f.time_ns) << "\n";
  for (size_t k = 0; k < f.where.size(); ++k) os << (k == 0 ? "    where: " : "           ") << f.where[k] << "\n";
  os << "    fix: " << f.fix;
  return os;
}

std::string advice_text(const std::vector<Finding>& findings) {
  std::ostringstream os;
  if (findings.empty()) {
    os << "Advisor: no findings.\n";
    return os.str();
  }
  os << "Advisor: " << plural(static_cast<int64_t>(findings.size()), "finding", "findings")
     << ", most costly first\n";
  for (size_t k = 0; k < findings.size(); ++k) os << (k + 1) << ". " << findings[k] << "\n";
  return os.str();
}

}  // namespace brisk::profiler
