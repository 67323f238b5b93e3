// The backward engine: dependency counts, then nodes in order of readiness
// (latest-created first among the ready ones), gradients summed per input.
#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/autocast.h"
#include "autograd/engine.h"
#include "autograd/function.h"
#include "profiler/record.h"

namespace brisk::autograd {

namespace {

// Note [Backward task]
// One call of backward() or grad() is a task. `deps` counts, for every node
// reachable from the roots, the edges that point at it; a node runs once all
// of them delivered (possibly undefined) gradients into its buffer. grad()
// captures the gradient arriving at each input's edge instead of
// accumulating it, and runs only the nodes from which a captured edge can be
// reached.
struct Task {
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, TensorList> buffers;
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;
  std::unordered_set<Node*> needed;
  /// Inputs (bit input_nr) that a structural zero reached (Note [Structural zeros]).
  std::unordered_map<Node*, uint64_t> zero_inputs;
  TensorList captured;
  bool keep_graph = false;
  bool create_graph = false;
  bool only_needed = false;
  /// queue_callback's functions, run when the pass ends (Note [Backward callbacks]).
  std::vector<std::function<void()>> callbacks;
};

// Note [Backward callbacks]
// autograd::queue_callback (PyTorch's Variable._execution_engine.queue_callback)
// registers a function to run when the backward pass the caller is inside
// (a tensor hook, a custom function's backward) has run every node: after
// the leaves' gradients are accumulated. DistributedDataParallel waits for
// its last all-reduces there. Callbacks run in order, on the thread of the
// pass; one may queue another; an exception from one ends the pass with it.
thread_local Task* t_current_task = nullptr;

struct ByPriority {
  bool operator()(const Node* a, const Node* b) const { return a->sequence_nr() < b->sequence_nr(); }
};

void compute_dependencies(Task& t, const std::vector<Edge>& roots) {
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (const Edge& r : roots)
    if (seen.insert(r.function.get()).second) stack.push_back(r.function.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (!e.valid()) continue;
      Node* c = e.function.get();
      ++t.deps[c];
      if (seen.insert(c).second) stack.push_back(c);
    }
  }
}

// Marks the nodes from which a capture node can be reached (iterative post-order).
void compute_needed(Task& t, const std::vector<Edge>& roots) {
  std::unordered_map<Node*, int> state;  // 1: on the stack, 2: done
  std::vector<std::pair<Node*, size_t>> stack;
  for (const Edge& r : roots) {
    if (state[r.function.get()]) continue;
    stack.push_back({r.function.get(), 0});
    state[r.function.get()] = 1;
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      const auto& edges = n->next_edges();
      if (i < edges.size()) {
        Node* c = edges[i++].function.get();
        if (c && !state[c]) {
          state[c] = 1;
          stack.push_back({c, 0});
        }
        continue;
      }
      bool need = t.captures.count(n) > 0;
      for (const Edge& e : edges)
        if (e.valid() && t.needed.count(e.function.get())) need = true;
      if (need) t.needed.insert(n);
      state[n] = 2;
      stack.pop_back();
    }
  }
}

bool expandable_to(IntArrayRef from, IntArrayRef to) {
  if (from.size() < to.size()) return false;
  const size_t lead = from.size() - to.size();
  for (size_t i = 0; i < to.size(); ++i)
    if (to[i] != 1 && to[i] != from[lead + i]) return false;
  return true;
}

/// Brings a gradient to the shape and dtype of the forward tensor it belongs to.
Tensor conform(Tensor g, const OutputMeta& m, const Node& producer, size_t index) {
  if (g.sizes() != IntArrayRef(m.sizes)) {
    BRISK_CHECK(expandable_to(g.sizes(), m.sizes), "backward", "function ", producer.name(),
                " returned an invalid gradient at index ", index, ": got shape ", g.sizes(),
                " but expected a shape compatible with ", IntArrayRef(m.sizes));
    g = sum_to(g, m.sizes);
  }
  if (g.dtype() != m.dtype) g = g.to(m.dtype);
  return g;
}

/// buf += g without writing into a tensor someone else can see.
void add_into(Tensor& buf, Tensor&& g, bool recording) {
  if (!buf.defined()) {
    buf = std::move(g);
    return;
  }
  const bool own = !recording && buf.use_count() == 1 && buf.impl()->storage.use_count() == 1 &&
                   buf.is_contiguous() && buf.sizes() == g.sizes() && buf.dtype() == g.dtype();
  if (own)
    buf.add_(g);
  else
    buf = buf + g;
}

void check_anomaly(const Node& n, const TensorList& outs) {
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& o = outs[i];
    if (!o.defined() || !o.is_floating_point()) continue;
    BRISK_CHECK(!o.isnan().any().item<bool>(), "backward", "Function '", n.name(), "' returned nan values in its ",
                i, (i == 1 ? "st" : i == 2 ? "nd" : i == 3 ? "rd" : "th"), " output (anomaly mode)");
  }
}

// Note [Structural zeros]
// A backward formula returns an undefined gradient for an input whose
// gradient is zero by construction (sgn's derivative, which abs's formula
// multiplies by; fill_/copy_ materialize theirs, as PyTorch does). Such a
// zero is not computed with: the node it reaches does not run for it, so no 0 * inf
// turns it into NaN further down (PyTorch's "efficient zero tensors" give
// the same, e.g. second derivatives of abs(x / 0)), and it travels on to the
// leaves, which then get a zero gradient as in PyTorch rather than none.
void mark_zero(Task& t, const Edge& e) {
  if (!e.valid() || (t.only_needed && !t.needed.count(e.function.get()))) return;
  t.zero_inputs[e.function.get()] |= uint64_t(1) << std::min<uint32_t>(e.input_nr, 63);
}

void run_nodes(Task& t, const std::vector<Edge>& roots, TensorList&& root_grads);

void execute(Task& t, const std::vector<Edge>& roots, TensorList&& root_grads) {
  Task* const outer = t_current_task;
  t_current_task = &t;
  struct Restore {
    Task* outer;
    ~Restore() { t_current_task = outer; }
  } restore{outer};
  run_nodes(t, roots, std::move(root_grads));
  for (size_t i = 0; i < t.callbacks.size(); ++i) {
    std::function<void()> cb = std::move(t.callbacks[i]);
    cb();
  }
}

void run_nodes(Task& t, const std::vector<Edge>& roots, TensorList&& root_grads) {
  AutoGradMode mode(t.create_graph);
  // Gradients run in the dtypes their forward ran in (Note [Autocast]).
  amp::detail::ExcludeGuard no_autocast;
  compute_dependencies(t, roots);
  if (t.only_needed) compute_needed(t, roots);
  for (size_t i = 0; i < roots.size(); ++i) {
    Node* n = roots[i].function.get();
    TensorList& buf = t.buffers[n];
    buf.resize(n->num_outputs());
    add_into(buf[roots[i].input_nr], std::move(root_grads[i]), t.create_graph);
  }
  std::priority_queue<Node*, std::vector<Node*>, ByPriority> ready;
  {
    std::unordered_set<Node*> pushed;
    for (const Edge& r : roots)
      if (t.deps[r.function.get()] == 0 && pushed.insert(r.function.get()).second) ready.push(r.function.get());
  }
  const bool anomaly = AnomalyMode::is_enabled() && AnomalyMode::should_check_nan();
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    // Keep the node alive while it runs: releasing a buffer may drop the last owner.
    std::shared_ptr<Node> hold = n->shared_from_this();
    TensorList grads;
    if (auto it = t.buffers.find(n); it != t.buffers.end()) {
      grads = std::move(it->second);
      t.buffers.erase(it);
    }
    grads.resize(n->num_outputs());
    uint64_t zeros_in = 0;
    if (!t.zero_inputs.empty())
      if (auto z = t.zero_inputs.find(n); z != t.zero_inputs.end()) zeros_in = z->second;
    if (n->has_pre_hooks()) n->run_pre_hooks(grads);
    if (auto c = t.captures.find(n); c != t.captures.end())
      for (auto [nr, idx] : c->second) {
        t.captured[idx] = grads[nr];
        if (!grads[nr].defined() && (zeros_in >> std::min<uint32_t>(nr, 63) & 1)) {
          const OutputMeta& m = n->output_meta(nr);
          t.captured[idx] = zeros(m.sizes, TensorOptions(m.dtype).device(m.device));
        }
      }

    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    const auto& edges = n->next_edges();
    if (!any && zeros_in) {
      // Only structural zeros arrived: a leaf's accumulator runs (on zeros),
      // any other node passes them on without running.
      if (edges.empty())
        any = true;
      else
        for (const Edge& e : edges) mark_zero(t, e);
    }
    bool run = any;
    if (run && t.only_needed) {
      // grad(): run a node only when it leads to a captured edge (a captured
      // leaf's AccumulateGrad itself never runs).
      run = false;
      for (const Edge& e : edges) run = run || (e.valid() && t.needed.count(e.function.get()));
    }
    if (run) {
      // The node's event covers its backward formula and the accumulation of
      // its outputs into the next nodes' buffers.
      auto event = profiler::detail::ScopedEvent::lazy(profiler::EventKind::Backward, [n] { return n->name(); });
      for (size_t k = 0; k < grads.size() && n->materialize_grads(); ++k)
        if (!grads[k].defined()) {
          const OutputMeta& m = n->output_meta(k);
          grads[k] = zeros(m.sizes, TensorOptions(m.dtype).device(m.device));
        }
      TensorList outs = n->apply(std::move(grads));
      if (!t.keep_graph) n->release_variables();
      if (anomaly) check_anomaly(*n, outs);
      BRISK_CHECK(outs.size() <= edges.size() || edges.empty(), "backward", "function ", n->name(), " returned ",
                  outs.size(), " gradients but has ", edges.size(), " inputs");
      for (size_t i = 0; i < edges.size(); ++i) {
        const Edge& e = edges[i];
        if (i >= outs.size() || !outs[i].defined()) {
          mark_zero(t, e);
          continue;
        }
        if (!e.valid()) continue;
        Node* c = e.function.get();
        if (t.only_needed && !t.needed.count(c)) continue;
        Tensor g = conform(std::move(outs[i]), c->output_meta(e.input_nr), *n, i);
        TensorList& buf = t.buffers[c];
        buf.resize(c->num_outputs());
        add_into(buf[e.input_nr], std::move(g), t.create_graph);
      }
    }
    for (const Edge& e : edges)
      if (e.valid() && --t.deps[e.function.get()] == 0) ready.push(e.function.get());
  }
}

/// Root edges and gradients of a backward from `outputs`.
std::vector<Edge> make_roots(const char* op, const TensorList& outputs, const TensorList& grad_outputs,
                             TensorList& root_grads) {
  BRISK_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), op, "got ", grad_outputs.size(),
              " gradients for ", outputs.size(), " outputs");
  std::vector<Edge> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    BRISK_CHECK(o.defined(), op, "output ", i, " is an undefined tensor");
    Edge root = gradient_edge(o);  // (regenerates a stale view's history first)
    BRISK_CHECK(root.valid(), op, "element ", i, " of tensors does not require grad and does not have a grad_fn");
    Tensor g = i < grad_outputs.size() ? grad_outputs[i] : Tensor();
    if (!g.defined()) {
      BRISK_CHECK(o.numel() == 1, op, "grad can be implicitly created only for scalar outputs (output ", i,
                  " has shape ", o.sizes(), "); pass a gradient of that shape");
      g = ones_like(o);
    } else {
      BRISK_CHECK(g.sizes() == o.sizes(), op, "Mismatch in shape: grad_output[", i, "] has a shape of ", g.sizes(),
                  " and output[", i, "] has a shape of ", o.sizes());
      if (g.dtype() != o.dtype()) g = g.to(o.dtype());
    }
    roots.push_back(std::move(root));
    root_grads.push_back(std::move(g));
  }
  return roots;
}

}  // namespace

void queue_callback(std::function<void()> fn) {
  BRISK_CHECK(t_current_task != nullptr, "queue_callback",
              "no backward pass is running on this thread: call it from a tensor hook or a backward function");
  BRISK_CHECK(fn != nullptr, "queue_callback", "the callback is empty");
  t_current_task->callbacks.push_back(std::move(fn));
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  Task t;
  t.create_graph = create_graph;
  t.keep_graph = retain_graph.value_or(create_graph);
  t.only_needed = true;
  TensorList root_grads;
  std::vector<Edge> roots = make_roots("grad", outputs, grad_outputs, root_grads);
  t.captured.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    BRISK_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "grad", "input ", i,
                " of the differentiated tensors does not require grad");
    Edge e = gradient_edge(inputs[i]);
    t.captures[e.function.get()].push_back({e.input_nr, i});
  }
  execute(t, roots, std::move(root_grads));
  for (size_t i = 0; i < inputs.size(); ++i) {
    BRISK_CHECK(allow_unused || t.captured[i].defined(), "grad", "input ", i,
                " of the differentiated tensors appears to not have been used in the graph. Set "
                "allow_unused=true if this is the desired behavior.");
    Tensor& g = t.captured[i];
    if (g.defined()) {
      const Tensor& in = inputs[i];
      if (g.sizes() != in.sizes()) g = sum_to(g, in.sizes());
      if (g.dtype() != in.dtype()) g = g.to(in.dtype());
    }
  }
  return std::move(t.captured);
}

void backward(const TensorList& outputs, const TensorList& grad_outputs, std::optional<bool> retain_graph,
              bool create_graph, const TensorList& inputs) {
  if (!inputs.empty()) {
    TensorList gs = grad(outputs, inputs, grad_outputs, retain_graph, create_graph, /*allow_unused=*/true);
    AutoGradMode mode(create_graph);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (gs[i].defined()) {
        accumulate_into(inputs[i].mutable_grad(), std::move(gs[i]));
        if (inputs[i].is_leaf()) run_post_accumulate_hooks(inputs[i]);
      }
    return;
  }
  Task t;
  t.create_graph = create_graph;
  t.keep_graph = retain_graph.value_or(create_graph);
  TensorList root_grads;
  std::vector<Edge> roots = make_roots("backward", outputs, grad_outputs, root_grads);
  execute(t, roots, std::move(root_grads));
}

}  // namespace brisk::autograd
