// brisk::compile: guards, the graph cache, tracing and replay
// (docs/design/compile.md).
#include "brisk/compile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>

#include "brisk/autograd.h"
#include "compile/codegen_cpu.h"
#include "compile/executor.h"
#include "compile/trace.h"
#include "autograd/function.h"
#include "core/autocast.h"
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
  // dynamic=true: the arguments' dim-0 sizes, which the guard leaves out
  // (Note [Dynamic batch sizes]); the last call that used this entry
  std::vector<int64_t> batch;
  uint64_t last_used = 0;
  std::vector<std::string> arg_text;  // for the recompile message
  bool eager = false;                 // a graph break: run the function
  std::string reason;
  Graph graph;
  std::unique_ptr<jit::Executable> exe;
  std::vector<size_t> structure;
  // A joint graph (Note [Compiled backward]): what needs a gradient.
  int n_args = 0;              // the function's tensor arguments (the output gradients come after)
  int split_group = -1;        // first group of the backward part
  std::vector<int> diff_outputs;  // results that get the backward node as grad_fn
  std::vector<int> grad_args;     // arguments that require grad, then...
  std::vector<int> grad_externals;  // ...captured tensors (buffers) that require grad
  std::vector<int> backward_reads;  // arguments' and captured tensors' buffers the backward part reads
};

struct CompiledCore::Impl {
  CompileOptions opts;
  std::string name;
  std::vector<std::shared_ptr<Entry>> entries;
  CompileStats stats;
  uint64_t use_clock = 0;  // (dynamic: least recently used batch sizes go first)
  bool warned_limit = false;
  std::mutex mu;
};

namespace {

// Note [Dynamic batch sizes]
// With dynamic=true the guard leaves out dim 0 of every tensor argument
// (the batch dimension) and keeps those sizes apart: entries with the same
// guard and other batch sizes are one graph's specializations. A new batch
// size is traced (one eager run and a plan; the generated kernels take
// sizes at run time, so the code is the same source: no compiler run), is
// not a recompile (no message, not counted against cache_size_limit, which
// counts distinct guards), and a graph keeps up to kMaxBatchSizes sizes,
// dropping the least recently used. It is not a symbolic trace: each size
// pays one traced run the first time it is seen.
constexpr size_t kMaxBatchSizes = 64;

void make_guard(const std::vector<Tensor>& inputs, const std::string& key, bool dynamic, std::vector<int64_t>& g,
                std::vector<int64_t>& batch) {
  g.clear();
  batch.clear();
  g.push_back(GradMode::is_enabled());
  g.push_back(InferenceMode::is_enabled());
  g.push_back(amp::detail::state_key());  // the autocast state (Note [Autocast])
  g.push_back(static_cast<int64_t>(inputs.size()));
  // the first argument on each storage, for an optimizer's hundreds of
  // tensors: a flat table with linear probing, kept per thread (an
  // unordered_map allocated a node per tensor per call: 60 us of a 200-
  // tensor Adam step's 1.5 ms)
  thread_local std::vector<std::pair<const void*, int64_t>> first_on;
  size_t mask = 0;
  if (inputs.size() > 16) {
    size_t cap = 64;
    while (cap < 2 * inputs.size()) cap *= 2;
    first_on.assign(cap, {nullptr, -1});
    mask = cap - 1;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) {
      g.push_back(-1);
      continue;
    }
    g.push_back(static_cast<int64_t>(t.dtype()));
    g.push_back(static_cast<int64_t>(static_cast<int>(t.device().type)) * 1024 + static_cast<int8_t>(t.device().index));
    g.push_back(t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (dynamic && d == 0) {
        g.push_back(-7);  // (the batch size, kept in `batch`)
        batch.push_back(t.size(0));
      } else {
        g.push_back(t.size(d));
      }
    }
    for (int64_t s : t.strides()) g.push_back(s);
    g.push_back(t.storage_offset());
    g.push_back(t.requires_grad());
    int64_t alias = -1;
    const void* st = t.impl()->storage.get();
    if (inputs.size() <= 16) {
      for (size_t j = 0; j < i; ++j)
        if (inputs[j].defined() && inputs[j].impl()->storage.get() == st) {
          alias = static_cast<int64_t>(j);
          break;
        }
    } else {  // (an optimizer's hundreds of tensors)
      size_t h = (reinterpret_cast<uintptr_t>(st) >> 4) * 0x9E3779B97F4A7C15ull >> 20;
      for (;; ++h) {
        auto& e = first_on[h & mask];
        if (e.second < 0) {  // (an empty slot; a storage pointer may be null)
          e = {st, static_cast<int64_t>(i)};
          break;
        }
        if (e.first == st) {
          alias = e.second;
          break;
        }
      }
    }
    g.push_back(alias);
  }
  (void)key;
}

}  // namespace

// Note [Compiled backward]
// Under grad mode, a function whose results need gradients is traced as one
// joint graph: its forward (recorded as usual; the eager run also builds
// eager's history, so the first call's results are eager's), then
// autograd::grad of the results that require grad with respect to the
// arguments and captured tensors that require grad, with output gradients
// that are extra arguments of the graph: brisk's own backward formulas run
// and their kernel calls are recorded like any others. The nodes before
// the split are the forward part, the rest the backward part; fusion never
// crosses the split. A later call runs the forward part, keeps the run's
// buffers (the temps the backward part reads stay alive: everything the
// backward needs is saved, nothing is recomputed yet) and gives its results
// one autograd node, CompiledFunctionBackward, whose backward binds the
// incoming gradients and runs the backward part.
namespace {
std::vector<Tensor> run_joint(const std::shared_ptr<Entry>& e, const std::vector<Tensor>& inputs) {
  const jit::Executable& exe = *e->exe;
  std::shared_ptr<jit::RunState> st(exe.bind(inputs).release());
  exe.run_groups(*st, 0, e->split_group);
  std::vector<Tensor> out = exe.results(*st, 0, e->graph.forward_outputs);
  std::vector<Tensor> diff, req;
  for (int k : e->diff_outputs) diff.push_back(out[k]);
  for (int i : e->grad_args) req.push_back(inputs[i]);
  for (int b : e->grad_externals) req.push_back(e->graph.bufs[b].tensor);
  // the inputs and captured tensors the backward part reads, with their versions now
  std::vector<std::pair<Tensor, int64_t>> read;
  read.reserve(e->backward_reads.size());
  for (int b : e->backward_reads) {
    const jit::Buffer& bf = e->graph.bufs[b];
    const Tensor& t = bf.kind == BufKind::Input ? inputs[bf.input] : bf.tensor;
    if (!t.is_inference()) read.emplace_back(t, t._version());
  }
  autograd::record("CompiledFunctionBackward", diff, req, {}, [e, st, read](autograd::BackwardCtx& c) -> TensorList {
    for (const auto& [t, v] : read)
      BRISK_CHECK(t._version() == v, "compile",
                  "one of the variables needed for gradient computation has been modified by an inplace operation: "
                  "version ", t._version(), " instead of ", v);
    const jit::Executable& x = *e->exe;
    for (size_t k = 0; k < e->diff_outputs.size(); ++k) {
      Tensor g = c.grad(k);
      const jit::InputSpec& spec = e->graph.inputs[e->graph.inputs.size() - e->diff_outputs.size() + k];
      if (!g.defined()) g = zeros(spec.sizes, TensorOptions(spec.dtype).device(e->graph.device));
      if (g.dtype() != spec.dtype || !(g.sizes() == IntArrayRef(spec.sizes)) ||
          !(g.strides() == IntArrayRef(spec.strides)) || g.storage_offset() != 0) {
        // the traced layout of this gradient
        Tensor t = detail::make_tensor(spec.sizes, spec.strides, spec.dtype, e->graph.device);
        t.copy_(g);
        g = t;
      }
      x.bind_input(*st, e->n_args + static_cast<int>(k), g);
    }
    x.run_groups(*st, e->split_group, x.num_groups());
    return x.results(*st, e->graph.forward_outputs, static_cast<int>(e->graph.outputs.size()));
  });
  return out;
}
}  // namespace

CompiledCore::CompiledCore(CompileOptions opts, std::string name) : impl_(std::make_unique<Impl>()) {
  BRISK_CHECK(opts.cache_size_limit >= 0, "compile", "cache_size_limit must be >= 0, got ", opts.cache_size_limit);
  impl_->opts = opts;
  impl_->name = std::move(name);
}
CompiledCore::~CompiledCore() = default;

CompileStats CompiledCore::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->opts.mode == CompileMode::MaxAutotune)
    for (auto it = impl_->entries.rbegin(); it != impl_->entries.rend(); ++it)
      if ((*it)->exe) {
        impl_->stats.autotune = (*it)->exe->autotune_note();
        break;
      }
  return impl_->stats;
}

}  // namespace compile_detail

std::string codegen_header_dir() { return jit::codegen_dir(); }

namespace compile_detail {

std::string CompiledCore::graph_text() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (auto it = impl_->entries.rbegin(); it != impl_->entries.rend(); ++it)
    if (!(*it)->eager) return jit::describe((*it)->graph) + ((*it)->exe ? (*it)->exe->batch_note() : "");
  return "";
}

std::vector<Tensor> CompiledCore::call(const std::vector<Tensor>& inputs, const std::string& key, const Eager& eager,
                                       std::vector<size_t>& structure) {
  Impl& im = *impl_;
  CompileStats& st = im.stats;  // (changed under im.mu only: callers may share a compiled function)
  if (im.opts.backend == CompileBackend::Eager || jit::current_tracer()) {
    // (a compiled function called while another is traced runs inline: its
    // kernels are part of the outer trace)
    {
      std::lock_guard<std::mutex> lock(im.mu);
      ++st.calls;
      ++st.eager_calls;
    }
    return eager(structure);
  }
  thread_local std::vector<int64_t> guard, batch;
  make_guard(inputs, key, im.opts.dynamic, guard, batch);
  std::shared_ptr<Entry> hit;
  bool sibling = false;  // dynamic: the graph is known at another batch size
  std::string externals_changed;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    ++st.calls;
    for (auto& e : im.entries)
      if (e->guard == guard && e->key == key) {
        if (e->batch == batch) {
          hit = e;
          break;
        }
        sibling = true;
      }
    if (hit && hit->exe) {
      externals_changed = hit->exe->externals_changed();
      if (!externals_changed.empty()) {
        // Recorded against tensors that are not what they were: trace again.
        im.entries.erase(std::find(im.entries.begin(), im.entries.end(), hit));
        hit.reset();
      }
    }
    if (hit) {
      if (im.opts.dynamic) hit->last_used = ++im.use_clock;
      ++(hit->eager ? st.eager_calls : st.cache_hits);
    }
  }
  if (hit) {
    structure = hit->structure;
    if (hit->eager) return eager(structure);
    if (hit->graph.split < 0) return hit->exe->run(inputs);
    return run_joint(hit, inputs);
  }

  // A miss: name what changed since the last graph.
  std::vector<std::string> arg_text;
  arg_text.reserve(inputs.size());
  for (const Tensor& t : inputs) arg_text.push_back(describe_arg(t));
  std::string changed;
  bool over_limit = false, warn = false;
  {
    std::lock_guard<std::mutex> lock(im.mu);
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
    }
    if (!externals_changed.empty()) changed = externals_changed;
    // Another thread may have traced this graph (at another batch size)
    // since the lookup above: a new batch size, not a recompile.
    if (!sibling && externals_changed.empty())
      for (const auto& e : im.entries)
        if (e->guard == guard && e->key == key) {
          sibling = true;
          break;
        }
    if (sibling && externals_changed.empty()) {
      // Note [Dynamic batch sizes]: another batch size of a known graph
      ++st.batch_sizes;
      size_t n = 0;
      std::shared_ptr<Entry> oldest;
      for (auto& e : im.entries)
        if (e->guard == guard && e->key == key) {
          ++n;
          if (!oldest || e->last_used < oldest->last_used) oldest = e;
        }
      if (n >= kMaxBatchSizes) im.entries.erase(std::find(im.entries.begin(), im.entries.end(), oldest));
    } else if (!im.entries.empty() || !externals_changed.empty()) {
      st.last_recompile = changed;
    }
    // (cache_size_limit counts graphs: distinct guards, whatever their batch sizes)
    size_t graphs = 0;
    for (size_t i = 0; i < im.entries.size(); ++i) {
      bool first = true;
      for (size_t j = 0; j < i && first; ++j)
        first = !(im.entries[j]->guard == im.entries[i]->guard && im.entries[j]->key == im.entries[i]->key);
      graphs += first;
    }
    over_limit = !sibling && static_cast<int>(graphs) >= im.opts.cache_size_limit;
    if (over_limit) {
      ++st.eager_calls;
      warn = !im.warned_limit;
      im.warned_limit = true;
    }
  }
  if (over_limit) {
    if (warn)
      std::fprintf(stderr,
                   "brisk: compile: '%s' reached cache_size_limit (%d graphs); new guard keys run eagerly. Last "
                   "change: %s\n",
                   im.name.c_str(), im.opts.cache_size_limit, changed.empty() ? "?" : changed.c_str());
    return eager(structure);
  }

  // Trace: run the function eagerly with the tracer installed.
  auto entry = std::make_shared<Entry>();
  entry->guard = guard;
  entry->key = key;
  entry->batch = batch;
  {
    std::lock_guard<std::mutex> lock(im.mu);
    entry->last_used = ++im.use_clock;
  }
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
      if (!tracer.use_device(t.device()))
        tracer.graph_break("argument " + std::to_string(i) + " is on " + t.device().str() + ", an earlier one on " +
                           tracer.device().str() + " (a graph runs on one device)");
      if (t.impl()->storage) tracer.add_input(t, static_cast<int>(i));
    }
    const bool grad_mode = GradMode::is_enabled();
    tracer.set_allow_grad(grad_mode);
    entry->n_args = static_cast<int>(inputs.size());
    tracer.install();
    try {
      out = eager(structure);
    } catch (...) {
      tracer.uninstall();
      throw;
    }
    reason = tracer.break_reason();
    // Results that carry a history: the backward part is traced too, by
    // running autograd::grad on them (Note [Compiled backward]).
    std::vector<Tensor> diff_outs, req, gs;
    if (reason.empty() && grad_mode) {
      for (size_t i = 0; i < out.size(); ++i)
        if (out[i].defined() && out[i].requires_grad()) {
          entry->diff_outputs.push_back(static_cast<int>(i));
          diff_outs.push_back(out[i]);
        }
    }
    if (!diff_outs.empty()) {
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].defined() && inputs[i].requires_grad()) {
          entry->grad_args.push_back(static_cast<int>(i));
          req.push_back(inputs[i]);
        }
      entry->grad_externals = tracer.grad_externals();
      for (int b : entry->grad_externals) req.push_back(entry->graph.bufs[b].tensor);
      entry->graph.split = static_cast<int>(entry->graph.nodes.size());
      // The output gradients: arguments of the backward part, made outside the trace.
      tracer.uninstall();
      for (size_t k = 0; k < diff_outs.size(); ++k) {
        NoGradGuard ng;
        gs.push_back(ones_like(diff_outs[k]));
        tracer.add_input(gs.back(), entry->n_args + static_cast<int>(k));
      }
      tracer.install();
      TensorList grads;
      try {
        grads = autograd::grad(diff_outs, req, gs, /*retain_graph=*/true, /*create_graph=*/false,
                               /*allow_unused=*/true);
      } catch (const Error& e) {
        tracer.graph_break(std::string("the backward could not be traced: ") + e.what());
      }
      tracer.uninstall();
      reason = tracer.break_reason();
      // Only what the results depend on gets an edge (as eager: an argument
      // the graph does not reach keeps an undefined grad).
      std::vector<int> args, exts;
      std::vector<Tensor> used, kept;
      for (size_t j = 0; j < grads.size(); ++j) {
        if (!grads[j].defined()) continue;
        if (j < entry->grad_args.size())
          args.push_back(entry->grad_args[j]);
        else
          exts.push_back(entry->grad_externals[j - entry->grad_args.size()]);
        used.push_back(grads[j]);
        kept.push_back(req[j]);
      }
      entry->grad_args = std::move(args);
      entry->grad_externals = std::move(exts);
      req = std::move(kept);
      if (req.empty()) reason = "no argument or captured tensor gets a gradient";
      out.insert(out.end(), used.begin(), used.end());
    } else {
      tracer.uninstall();
    }
    const size_t n_forward = out.size() - (diff_outs.empty() ? 0 : req.size());
    if (reason.empty()) {
      for (size_t i = 0; i < out.size() && reason.empty(); ++i) {
        const Tensor& t = out[i];
        jit::OutputRef r;
        if (!t.defined()) {
          if (i < n_forward) {
            reason = "result " + std::to_string(i) + " is an undefined tensor";
            break;
          }
          r.buf = jit::kUndefinedOutput;  // an unused gradient
          entry->graph.outputs.push_back(std::move(r));
          continue;
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
          if (!diff_outs.empty() && i < n_forward && b.kind != BufKind::Temp)
            reason = "result " + std::to_string(i) + " is a view of an argument or a captured tensor (with autograd)";
        }
        entry->graph.outputs.push_back(std::move(r));
      }
      if (!diff_outs.empty()) entry->graph.forward_outputs = static_cast<int>(n_forward);
    }
    if (!diff_outs.empty()) out.resize(n_forward);  // the caller gets the forward results (with eager's history)
  }
  entry->structure = structure;
  if (!reason.empty()) {
    {
      std::lock_guard<std::mutex> lock(im.mu);
      ++st.graph_breaks;
      st.last_break = reason;
    }
    if (im.opts.fullgraph) {
      BRISK_FAIL("compile", "'", im.name, "' cannot be compiled as one graph (fullgraph=true): ", reason);
    }
    entry->eager = true;
    entry->reason = reason;
  } else {
    if (entry->graph.device.is_cuda())
      jit::plan_cuda(entry->graph, im.opts.fuse && im.opts.backend == CompileBackend::Default);
    else if (im.opts.fuse) jit::plan(entry->graph);
    else jit::plan_unfused(entry->graph);
    try {
      entry->exe = std::make_unique<jit::Executable>(entry->graph, im.opts);
    } catch (const Error& e) {
      // NVRTC failed on a generated CUDA kernel (brisk's bug): said once,
      // and the graph runs call by call through the eager kernels
      if (!entry->graph.device.is_cuda()) throw;
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) std::fprintf(stderr, "brisk: compile: %s (running the CUDA graph unfused)\n", e.what());
      jit::plan_unfused(entry->graph);
      entry->exe = std::make_unique<jit::Executable>(entry->graph, im.opts);
    }
    jit::release_trace_temps(entry->graph);
    if (entry->graph.split >= 0) {
      jit::Graph& g = entry->graph;
      entry->split_group = static_cast<int>(g.groups.size());
      for (size_t gi = 0; gi < g.groups.size(); ++gi)
        if (g.groups[gi].nodes.front() >= g.split) {
          entry->split_group = static_cast<int>(gi);
          break;
        }
      // (once per graph: run_joint snapshots their versions on every call)
      std::vector<char> seen(g.bufs.size(), 0);
      auto note = [&](int b) {
        if (b < 0 || seen[b]) return;
        seen[b] = 1;
        const jit::Buffer& bf = g.bufs[b];
        if ((bf.kind == BufKind::Input && bf.input < entry->n_args) || bf.kind == BufKind::External)
          entry->backward_reads.push_back(b);
      };
      for (size_t gi = entry->split_group; gi < g.groups.size(); ++gi)
        for (int ni : g.groups[gi].nodes) {
          const jit::Node& nd = g.nodes[ni];
          for (int b : nd.reads) note(b);
          for (int k = 1; k < nd.noperands; ++k) note(nd.ops[k].buf);
        }
    }
  }
  std::lock_guard<std::mutex> lock(im.mu);
  if (entry->exe) {
    st.nodes = static_cast<int64_t>(entry->graph.nodes.size());
    st.groups = static_cast<int64_t>(entry->graph.groups.size());
    st.generated = entry->exe->generated_groups();
    st.codegen = entry->exe->codegen_note();
  }
  ++st.traces;
  st.trace_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  im.entries.push_back(std::move(entry));
  return out;
}

}  // namespace compile_detail
}  // namespace brisk
