// brisk::cuda::make_graphed_callables: a module's (or a function's) forward
// and backward replayed as CUDA graphs inside an ordinary training loop
// (torch.cuda.make_graphed_callables).
//
//   auto graphed = brisk::cuda::make_graphed_callables(model, {sample_x});
//   for (...) {
//     opt.zero_grad();
//     Tensor loss = F::cross_entropy(graphed(x), y);   // forward: one replay
//     loss.backward();                                 // backward: one replay
//     opt.step();
//   }
//
// At construction the callable runs `warmup` eager forward+backward passes
// on a side stream, then captures the forward into one graph and the
// backward (the gradients of the outputs with respect to the inputs that
// require grad and the parameters) into another, sharing one private pool.
// A call copies its inputs into the static inputs, replays the forward and
// returns the static outputs (aliases: the next call overwrites them); the
// backward copies the incoming gradients into static buffers, replays the
// backward graph and hands the static gradients to autograd, which
// accumulates them into the parameters' .grad() as it would eagerly (a copy:
// the graph keeps its buffers). Under no-grad mode the forward graph alone
// replays.
//
// One call's values live in the static buffers: each call's backward must
// run before the next call's forward (an earlier call's backward raises).
// What must hold, as in PyTorch: the inputs have the samples' shapes,
// dtypes and devices (checked); the module's control flow, parameters and
// training mode do not change between calls; nothing in the forward
// synchronizes with the host. Random ops draw fresh numbers per replay
// (Note [Random draws in a CUDA graph]).
//
// On the CPU there are no graphs: the same static buffers, copies and
// autograd node, with eager runs in place of replays (what the tests check
// without a GPU). See docs/design/cuda_graphs.md.
#pragma once
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "brisk/cuda.h"
#include "brisk/tensor.h"

namespace brisk::nn {
class Module;
}

namespace brisk::cuda {

struct GraphedCallableOptions {
  /// Eager forward+backward passes on the capture stream before capture.
  int warmup = 3;
  /// The pool the two graphs capture into (default: a new one).
  MempoolId pool{};
  GraphedCallableOptions& set_warmup(int n) {
    warmup = n;
    return *this;
  }
  GraphedCallableOptions& set_pool(MempoolId p) {
    pool = p;
    return *this;
  }
};

class GraphedCallable {
 public:
  using Fn = std::function<TensorList(const TensorList&)>;
  /// `parameters`: the tensors `fn` reads that receive gradients (a
  /// module's parameters). Captures now.
  GraphedCallable(Fn fn, const TensorList& sample_inputs, const TensorList& parameters,
                  GraphedCallableOptions options = {});
  ~GraphedCallable();

  TensorList operator()(const TensorList& inputs) const;
  /// One input, one output (a module's forward).
  Tensor operator()(const Tensor& input) const;
  /// Whether the forward and backward replay CUDA graphs (false on the CPU).
  bool uses_graphs() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

namespace detail {
template <class T, class = void>
struct is_module_holder : std::false_type {};
template <class T>
struct is_module_holder<T, std::void_t<decltype(std::declval<const T&>().ptr())>> : std::true_type {};
}  // namespace detail

/// For a function of tensors (TensorList -> TensorList) with the parameters it trains.
template <class F, std::enable_if_t<!detail::is_module_holder<std::decay_t<F>>::value, int> = 0>
GraphedCallable make_graphed_callables(F&& fn, const TensorList& sample_inputs, const TensorList& parameters,
                                       GraphedCallableOptions options = {}) {
  return GraphedCallable(GraphedCallable::Fn(std::forward<F>(fn)), sample_inputs, parameters, options);
}
/// For a module: its forward over one input, its parameters that require grad.
GraphedCallable make_graphed_callables(const std::shared_ptr<nn::Module>& module, const TensorList& sample_inputs,
                                       GraphedCallableOptions options = {});
/// For a module holder (nn::Linear, nn::Sequential, ...).
template <class Holder, std::enable_if_t<detail::is_module_holder<Holder>::value, int> = 0>
GraphedCallable make_graphed_callables(const Holder& module, const TensorList& sample_inputs,
                                       GraphedCallableOptions options = {}) {
  return make_graphed_callables(std::static_pointer_cast<nn::Module>(module.ptr()), sample_inputs, options);
}

}  // namespace brisk::cuda
