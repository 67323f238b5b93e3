// brisk::compile: guards, the graph cache, tracing and replay
// (docs/design/compile.md).
#include "brisk/compile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "brisk/autograd.h"
#include "compile/executor.h"
#include "compile/trace.h"
#include "core/parallel.h"
#include "core/profile_hooks.h"
#include "core/tensor_create.h"

namespace brisk {
namespace compile_detail {

using jit::BufKind;
using jit::Graph;

namespace {

// One argument as a guard sees it, as text (the warning names what changed).
std::string describe_arg(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << dtype_name(t.dtype()) << t.sizes() << " strides " << t.strides() << " offset " << t.storage_offset() << " on "
     << t.device();
  if (t.requires_grad()) os << " requires_grad";
  return os.str();
}

}  // namespace

struct Entry {
  // The guard key: grad/inference mode, the constants, then per argument
  // dtype, device, sizes, strides, offset, requires_grad and which earlier
  // argument shares its storage.
  std::vector<int64_t> guard;
  std::string key;
  std::vector<std::string> arg_text;  // for the recompile message
  bool eager = false;                 // a graph break: run the function
  std::string reason;
  Graph graph;
  std::unique_ptr<jit::Executable> exe;
  std::vector<size_t> structure;
};

struct CompiledCore::Impl {
  CompileOptions opts;
  std::string name;
  std::vector<std::unique_ptr<Entry>> entries;
  CompileStats stats;
  bool warned_limit = false;
  std::mutex mu;
};

namespace {

void make_guard(const std::vector<Tensor>& inputs, const std::string& key, std::vector<int64_t>& g) {
  g.clear();
  g.push_back(GradMode::is_enabled());
  g.push_back(InferenceMode::is_enabled());
  g.push_back(static_cast<int64_t>(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) {
      g.push_back(-1);
      continue;
    }
    g.push_back(static_cast<int64_t>(t.dtype()));
    g.push_back(static_cast<int64_t>(static_cast<int>(t.device().type)) * 1024 + static_cast<int8_t>(t.device().index));
    g.push_back(t.dim());
    for (int64_t s : t.sizes()) g.push_back(s);
    for (int64_t s : t.strides()) g.push_back(s);
    g.push_back(t.storage_offset());
    g.push_back(t.requires_grad());
    int64_t alias = -1;
    const void* st = t.impl()->storage.get();
    for (size_t j = 0; j < i; ++j)
      if (inputs[j].defined() && inputs[j].impl()->storage.get() == st) {
        alias = static_cast<int64_t>(j);
        break;
      }
    g.push_back(alias);
  }
  (void)key;
}

}  // namespace

CompiledCore::CompiledCore(CompileOptions opts, std::string name) : impl_(std::make_unique<Impl>()) {
  BRISK_CHECK(opts.cache_size_limit >= 0, "compile", "cache_size_limit must be >= 0, got ", opts.cache_size_limit);
  BRISK_CHECK(!opts.dynamic, "compile",
              "dynamic=true (a symbolic batch dimension) is not implemented yet: use dynamic=false (one graph per "
              "shape)");
  impl_->opts = opts;
  impl_->name = std::move(name);
}
CompiledCore::~CompiledCore() = default;

const CompileStats& CompiledCore::stats() const { return impl_->stats; }

std::string CompiledCore::graph_text() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto it = impl_->entries.rbegin(); it != impl_->entries.rend(); ++it)
    if (!(*it)->eager) return jit::describe((*it)->graph);
  return "";
}

std::vector<Tensor> CompiledCore::call(const std::vector<Tensor>& inputs, const std::string& key, const Eager& eager,
                                       std::vector<size_t>& structure) {
  Impl& im = *impl_;
  CompileStats& st = im.stats;
  ++st.calls;
  if (im.opts.backend == CompileBackend::Eager || jit::current_tracer()) {
    // (a compiled function called while another is traced runs inline: its
    // kernels are part of the outer trace)
    ++st.eager_calls;
    return eager(structure);
  }
  thread_local std::vector<int64_t> guard;
  make_guard(inputs, key, guard);
  Entry* hit = nullptr;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    for (auto& e : im.entries)
      if (e->guard == guard && e->key == key) {
        hit = e.get();
        break;
      }
  }
  if (hit) {
    structure = hit->structure;
    if (hit->eager) {
      ++st.eager_calls;
      return eager(structure);
    }
    ++st.cache_hits;
    return hit->exe->run(inputs);
  }

  // A miss: name what changed since the last graph.
  std::vector<std::string> arg_text;
  arg_text.reserve(inputs.size());
  for (const Tensor& t : inputs) arg_text.push_back(describe_arg(t));
  std::string changed;
  if (!im.entries.empty()) {
    const Entry& last = *im.entries.back();
    changed = "the storage shared between arguments changed";
    if (last.key != key) changed = "a non-tensor argument changed";
    if (last.guard.size() >= 2 && (last.guard[0] != guard[0] || last.guard[1] != guard[1]))
      changed = "grad mode or inference mode changed";
    for (size_t i = 0; i < inputs.size() && i < last.arg_text.size(); ++i)
      if (last.arg_text[i] != arg_text[i]) {
        changed = "argument " + std::to_string(i) + " was " + last.arg_text[i] + ", now " + arg_text[i];
        break;
      }
    if (last.arg_text.size() != inputs.size()) changed = "the number of tensor arguments changed";
    st.last_recompile = changed;
  }
  if (static_cast<int>(im.entries.size()) >= im.opts.cache_size_limit) {
    if (!im.warned_limit) {
      im.warned_limit = true;
      std::fprintf(stderr,
                   "brisk: compile: '%s' reached cache_size_limit (%d graphs); new guard keys run eagerly. Last "
                   "change: %s\n",
                   im.name.c_str(), im.opts.cache_size_limit, changed.empty() ? "?" : changed.c_str());
    }
    ++st.eager_calls;
    return eager(structure);
  }

  // Trace: run the function eagerly with the tracer installed.
  auto entry = std::make_unique<Entry>();
  entry->guard = guard;
  entry->key = key;
  entry->arg_text = std::move(arg_text);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> out;
  std::string reason;
  {
    auto ev = profiler::detail::ScopedEvent::lazy(profiler::EventKind::UserScope,
                                                  [&] { return "compile.trace(" + im.name + ")"; });
    jit::Tracer tracer(entry->graph);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (!t.defined()) continue;
      if (!t.is_cpu()) tracer.graph_break("argument " + std::to_string(i) + " is on " + t.device().str());
      if (t.impl()->storage) tracer.add_input(t, static_cast<int>(i));
    }
    tracer.install();
    try {
      out = eager(structure);
    } catch (...) {
      tracer.uninstall();
      throw;
    }
    tracer.uninstall();
    reason = tracer.break_reason();
    if (reason.empty()) {
      for (size_t i = 0; i < out.size() && reason.empty(); ++i) {
        const Tensor& t = out[i];
        jit::OutputRef r;
        if (!t.defined()) {
          reason = "result " + std::to_string(i) + " is an undefined tensor";
          break;
        }
        r.dtype = t.dtype();
        r.sizes.assign(t.sizes().begin(), t.sizes().end());
        r.strides.assign(t.strides().begin(), t.strides().end());
        if (t.numel() == 0) {
          r.buf = -1;
        } else {
          r.buf = tracer.output_buffer(t, r.offset);
          if (r.buf < 0) {
            reason = "result " + std::to_string(i) + " was not made by a traced op";
            break;
          }
          const jit::Buffer& b = entry->graph.bufs[r.buf];
          if (b.dtype != t.dtype()) reason = "result " + std::to_string(i) + " views its storage as another dtype";
          if (t.requires_grad() && GradMode::is_enabled())
            reason = "result " + std::to_string(i) + " requires grad (compiled backward is not done yet)";
        }
        entry->graph.outputs.push_back(std::move(r));
      }
    }
    // Inputs the traced run marked requires_grad or changed in a way a replay
    // does not repeat cannot be compiled either.
  }
  entry->structure = structure;
  if (!reason.empty()) {
    ++st.graph_breaks;
    st.last_break = reason;
    if (im.opts.fullgraph) {
      BRISK_FAIL("compile", "'", im.name, "' cannot be compiled as one graph (fullgraph=true): ", reason);
    }
    entry->eager = true;
    entry->reason = reason;
  } else {
    if (im.opts.fuse) jit::plan(entry->graph);
    else jit::plan_unfused(entry->graph);
    entry->exe = std::make_unique<jit::Executable>(entry->graph, im.opts);
    st.nodes = static_cast<int64_t>(entry->graph.nodes.size());
    st.groups = static_cast<int64_t>(entry->graph.groups.size());
  }
  ++st.traces;
  st.trace_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(im.mu);
  im.entries.push_back(std::move(entry));
  return out;
}

}  // namespace compile_detail
}  // namespace brisk
