// brisk::cuda::make_graphed_callables (include/brisk/graphed_callable.h).
//
// Note [Graphed callables]
// Two graphs per callable, captured after `warmup` eager passes on a side
// stream: the forward (static inputs -> static outputs) and the backward
// (static output gradients -> the gradients of the inputs that require
// grad and of the parameters: autograd::grad over the captured forward's
// graph, which stays alive with the static outputs so that the tensors it
// saved keep their memory). A call copies the inputs in, replays the
// forward and gives the outputs one autograd node, GraphedCallableBackward,
// whose inputs are the call's inputs and the parameters: its backward
// copies the incoming gradients into the static ones, replays the backward
// graph and returns the static gradients, which the engine accumulates into
// .grad() (copies: they are shared with the graph, so never stolen). On the
// CPU the "replays" are eager runs over the same static buffers, so the
// tests exercise the same copies and node without a GPU.
#include "brisk/graphed_callable.h"

#include <algorithm>

#include "autograd/function.h"
#include "brisk/autograd.h"
#include "brisk/error.h"
#include "brisk/nn/module.h"
#include "brisk/ops.h"

namespace brisk::cuda {
namespace {
constexpr const char* kOp = "make_graphed_callables";
}  // namespace

struct GraphedCallable::Impl {
  Fn fn;
  TensorList params;           // receive gradients
  TensorList static_inputs;    // what the graphs read
  std::vector<bool> input_needs_grad;
  TensorList static_outputs;   // the forward graph's outputs (with their autograd graph)
  TensorList static_grad_outputs;
  TensorList static_grads;     // per grad target: inputs that need grad, then params
  TensorList grad_targets;     // the static inputs that need grad, then params
  bool use_graphs = false;
  std::unique_ptr<CUDAGraph> fwd, bwd;
  uint64_t calls = 0;  // forwards so far: a backward belongs to the latest

  /// The forward over the static inputs, with grad mode on (eager on the CPU).
  void run_forward() {
    AutoGradMode grad_on(true);
    static_outputs = fn(static_inputs);
  }
  /// The backward over the static outputs into static_grads (eager on the CPU).
  void run_backward() {
    TensorList outs, grads;
    for (size_t k = 0; k < static_outputs.size(); ++k)
      if (static_outputs[k].requires_grad()) {
        outs.push_back(static_outputs[k]);
        grads.push_back(static_grad_outputs[k]);
      }
    // (under capture these become the backward graph's static gradients;
    // on the CPU a fresh set per call)
    static_grads = autograd::grad(outs, grad_targets, grads, /*retain_graph=*/true, /*create_graph=*/false,
                                  /*allow_unused=*/true);
  }
};

GraphedCallable::GraphedCallable(Fn fn, const TensorList& sample_inputs, const TensorList& parameters,
                                 GraphedCallableOptions options)
    : impl_(std::make_shared<Impl>()) {
  BRISK_CHECK(fn != nullptr, kOp, "the function is empty");
  BRISK_CHECK(!sample_inputs.empty(), kOp, "needs at least one sample input");
  BRISK_CHECK(options.warmup >= 1, kOp, "warmup must be at least 1 (the capture needs warm libraries), got ",
              options.warmup);
  Impl& m = *impl_;
  m.fn = std::move(fn);
  const Device dev = sample_inputs[0].device();
  for (const Tensor& s : sample_inputs) {
    BRISK_CHECK(s.defined(), kOp, "a sample input is undefined");
    BRISK_CHECK(s.device() == dev, kOp, "every sample input must be on one device: ", s.device(), " and ", dev);
    NoGradGuard ng;
    Tensor t = s.detach().clone();
    if (s.requires_grad()) t.requires_grad_(true);
    m.static_inputs.push_back(t);
    m.input_needs_grad.push_back(s.requires_grad());
    if (s.requires_grad()) m.grad_targets.push_back(t);
  }
  for (const Tensor& p : parameters) {
    BRISK_CHECK(p.defined() && p.requires_grad(), kOp, "every parameter must require grad");
    BRISK_CHECK(p.device() == dev, kOp, "a parameter is on ", p.device(), " but the inputs are on ", dev);
    m.params.push_back(p);
    m.grad_targets.push_back(p);
  }
  m.use_graphs = dev.is_cuda();
  auto grad_outputs_like = [&m] {
    m.static_grad_outputs.clear();
    NoGradGuard ng;
    for (const Tensor& o : m.static_outputs) m.static_grad_outputs.push_back(zeros_like(o));
  };
  auto check_outputs = [&m] {
    BRISK_CHECK(!m.static_outputs.empty(), kOp, "the function returned no tensor");
    for (const Tensor& o : m.static_outputs) BRISK_CHECK(o.defined(), kOp, "the function returned an undefined tensor");
  };
  if (!m.use_graphs) {
    m.run_forward();  // shapes of the outputs and their gradients
    check_outputs();
    grad_outputs_like();
    return;
  }
  // warm-up on the capture stream (cuBLAS handles, workspaces, compile's
  // kernels), then the two captures on it into one pool
  const Stream prev = current_stream(dev.index);
  const Stream side = capture_stream(dev.index);
  side.wait(prev);
  {
    StreamGuard sg(side);
    for (int i = 0; i < options.warmup; ++i) {
      m.run_forward();
      check_outputs();
      grad_outputs_like();
      if (!m.grad_targets.empty()) m.run_backward();
    }
    // (the warm-up's tensors go back to the allocator now, not during a capture)
    m.static_outputs.clear();
    m.static_grads.clear();
  }
  prev.wait(side);
  synchronize(dev.index);
  const MempoolId pool = options.pool.id != 0 ? options.pool : graph_pool_handle();
  m.fwd = std::make_unique<CUDAGraph>();
  {
    graph capture(*m.fwd, pool, CaptureMode::Global, side);
    m.run_forward();
  }
  grad_outputs_like();  // (outside the capture: their values are written per call)
  m.bwd = std::make_unique<CUDAGraph>();
  if (!m.grad_targets.empty()) {
    graph capture(*m.bwd, pool, CaptureMode::Global, side);
    m.run_backward();
  }
}

GraphedCallable::~GraphedCallable() = default;

bool GraphedCallable::uses_graphs() const { return impl_->use_graphs; }

TensorList GraphedCallable::operator()(const TensorList& inputs) const {
  Impl& m = *impl_;
  BRISK_CHECK(inputs.size() == m.static_inputs.size(), kOp, "expected ", m.static_inputs.size(),
              " inputs (as the samples), got ", inputs.size());
  {
    NoGradGuard ng;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Tensor& in = inputs[k];
      const Tensor& st = m.static_inputs[k];
      BRISK_CHECK(in.defined() && in.sizes() == st.sizes() && in.dtype() == st.dtype() && in.device() == st.device(),
                  kOp, "input ", k, " must have the sample's shape ", st.sizes(), ", dtype ", st.dtype(),
                  " and device ", st.device(), " (the graphs were captured for it)");
      if (in.data_ptr() != st.data_ptr()) Tensor(st).copy_(in);
    }
  }
  if (m.use_graphs)
    m.fwd->replay();
  else
    m.run_forward();
  const uint64_t call = ++m.calls;
  TensorList outs;
  for (const Tensor& o : m.static_outputs) outs.push_back(o.detach());
  // the node: differentiable when grad mode is on and something needs a gradient
  TensorList node_inputs;
  bool any = false;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (m.input_needs_grad[k]) {
      node_inputs.push_back(inputs[k]);
      any = any || inputs[k].requires_grad();
    }
  for (const Tensor& p : m.params) node_inputs.push_back(p);
  any = any || !m.params.empty();
  if (!GradMode::is_enabled() || !any || m.grad_targets.empty()) return outs;
  TensorList diff;
  std::vector<size_t> diff_index;
  for (size_t k = 0; k < outs.size(); ++k)
    if (m.static_outputs[k].requires_grad()) {
      diff.push_back(outs[k]);
      diff_index.push_back(k);
    }
  if (diff.empty()) return outs;
  std::shared_ptr<Impl> keep = impl_;
  autograd::record("GraphedCallableBackward", diff, node_inputs, {},
                   [keep, diff_index, call](autograd::BackwardCtx& c) -> TensorList {
                     Impl& mm = *keep;
                     // the graphs' buffers hold the latest call's values: the
                     // backward of an earlier one would be silently wrong
                     BRISK_CHECK(call == mm.calls, kOp, "backward of call ", call,
                                 " after call ", mm.calls, " ran its forward: a graphed callable keeps one call's "
                                 "values in its static buffers, so run each call's backward before the next forward");
                     {
                       NoGradGuard ng;
                       for (size_t j = 0; j < diff_index.size(); ++j) {
                         Tensor dst = mm.static_grad_outputs[diff_index[j]];
                         const Tensor& g = c.grad(j);
                         if (g.defined())
                           dst.copy_(g);
                         else
                           dst.zero_();
                       }
                     }
                     if (mm.use_graphs)
                       mm.bwd->replay();
                     else
                       mm.run_backward();
                     TensorList r;
                     for (const Tensor& g : mm.static_grads) r.push_back(g.defined() ? g.detach() : g);
                     return r;
                   });
  return outs;
}

Tensor GraphedCallable::operator()(const Tensor& input) const {
  TensorList out = (*this)(TensorList{input});
  BRISK_CHECK(out.size() == 1, kOp, "the function returns ", out.size(), " tensors: call it with a list");
  return out[0];
}

GraphedCallable make_graphed_callables(const std::shared_ptr<nn::Module>& module, const TensorList& sample_inputs,
                                       GraphedCallableOptions options) {
  BRISK_CHECK(module != nullptr, kOp, "the module is null");
  BRISK_CHECK(sample_inputs.size() == 1, kOp, "a module's forward takes one input; got ", sample_inputs.size(),
              " samples (graph a function for more)");
  TensorList params;
  for (const Tensor& p : module->parameters())
    if (p.requires_grad()) params.push_back(p);
  std::shared_ptr<nn::Module> m = module;
  return GraphedCallable([m](const TensorList& in) { return TensorList{m->forward(in[0])}; }, sample_inputs, params,
                         options);
}

}  // namespace brisk::cuda
