// brisk::compile: trace a function of tensors once per guard key, fuse its
// elementwise kernels, and replay the recorded graph on later calls
// (docs/design/compile.md).
//
//   auto gelu = brisk::compile([](const Tensor& x) { return x * 0.5 * (1.0 + erf(x / 1.41421)); });
//   Tensor y = gelu(x);  // first call: traced (and run); later calls: the graph
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "brisk/tensor.h"

namespace brisk {

/// How a compiled graph runs.
enum class CompileBackend : uint8_t {
  Default,      ///< generated code (the system C++ compiler, cached on disk) where available, else the interpreter
  Interpreter,  ///< the fused-graph interpreter (chunked eager kernels)
  Eager,        ///< no graph: call the function (for debugging and A/B timing)
};

/// How much work goes into each graph's kernels.
enum class CompileMode : uint8_t {
  Default,      ///< one variant per generated kernel (its block size from the size of its working set)
  /// Generated kernels are built in every block-size variant (256 to 2048
  /// elements); the first run of each times them once on copies of its
  /// data and keeps the fastest (values are the same in every variant).
  MaxAutotune,
};

struct CompileOptions {
  /// false: one graph per shape (the guard key includes every size).
  /// true: dim 0 of every tensor argument (the batch) is left out of the
  /// guard: a new batch size of a known graph is traced once (sharing its
  /// generated code: no compiler run), is not a recompile and does not
  /// count against cache_size_limit; up to 64 sizes per graph, the least
  /// recently used dropped. Not a symbolic trace (docs/design/compile.md).
  bool dynamic = false;
  /// Raise (naming the op) instead of running eagerly where the function
  /// cannot be one graph.
  bool fullgraph = false;
  /// Graphs kept per compiled function; past it a warning names the guard
  /// that failed and the function runs eagerly for new keys.
  int cache_size_limit = 8;
  CompileBackend backend = CompileBackend::Default;
  /// Fuse consecutive elementwise kernels (off: replay them one by one).
  bool fuse = true;
  CompileMode mode = CompileMode::Default;

  CompileOptions& set_dynamic(bool v) { dynamic = v; return *this; }
  CompileOptions& set_fullgraph(bool v) { fullgraph = v; return *this; }
  CompileOptions& set_cache_size_limit(int v) { cache_size_limit = v; return *this; }
  CompileOptions& set_backend(CompileBackend v) { backend = v; return *this; }
  CompileOptions& set_fuse(bool v) { fuse = v; return *this; }
  CompileOptions& set_mode(CompileMode v) { mode = v; return *this; }
};

/// What a compiled function did so far.
struct CompileStats {
  int64_t calls = 0;
  int64_t traces = 0;       ///< guard-key misses that traced the function
  int64_t batch_sizes = 0;  ///< of which new batch sizes of a known graph (dynamic=true)
  int64_t cache_hits = 0;   ///< calls that ran a recorded graph
  int64_t eager_calls = 0;  ///< calls that ran eagerly (a graph break, the limit, the Eager backend)
  int64_t graph_breaks = 0;
  int64_t nodes = 0;        ///< kernel calls in the last recorded graph
  int64_t groups = 0;       ///< of which fused into this many steps
  int64_t generated = 0;    ///< steps of the last graph that run generated code
  std::string codegen;      ///< why a fused step is interpreted ("" when none is)
  /// MaxAutotune: per tuned kernel of the last graph, its variants' times
  /// and the one kept ("g0: block 256 1.32 ms, block 512 1.32 ms, block 1024
  /// 1.3 ms, block 2048 1.31 ms (kept 1024); g1: ...").
  std::string autotune;
  double trace_seconds = 0;
  std::string last_break;     ///< why the last break happened ("" if none)
  std::string last_recompile;  ///< the guard that failed on the last retrace
};

namespace compile_detail {

/// The type-erased core: guards, the graph cache, tracing and replay.
class CompiledCore {
 public:
  explicit CompiledCore(CompileOptions opts, std::string name);
  ~CompiledCore();
  CompiledCore(const CompiledCore&) = delete;
  CompiledCore& operator=(const CompiledCore&) = delete;

  /// The user's function run eagerly: its results flattened, and the
  /// lengths of the vectors among them in `structure`.
  using Eager = std::function<std::vector<Tensor>(std::vector<size_t>& structure)>;
  /// `key` holds the non-tensor arguments (constants of a trace). Returns
  /// the results flattened and their `structure`.
  std::vector<Tensor> call(const std::vector<Tensor>& inputs, const std::string& key, const Eager& eager,
                           std::vector<size_t>& structure);
  /// A snapshot (the function may be running on other threads).
  CompileStats stats() const;
  /// The last recorded graph as text (nodes, buffers, fused groups).
  std::string graph_text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Flattening of arguments and results: tensors, vectors, tuples and pairs
// of them; other arguments (numbers, enums, Scalars, int lists) become part
// of the key.
template <class T>
struct is_tuple_like : std::false_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

inline void append_key(std::string& key, const void* p, size_t n) { key.append(static_cast<const char*>(p), n); }

template <class T>
void flatten_arg(const T& v, std::vector<Tensor>& out, std::string& key) {
  using U = std::decay_t<T>;
  if constexpr (std::is_same_v<U, Tensor>) {
    out.push_back(v);
  } else if constexpr (is_vector<U>::value) {
    const uint64_t n = v.size();
    append_key(key, &n, sizeof(n));
    for (const auto& e : v) flatten_arg(e, out, key);
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](const auto&... e) { (flatten_arg(e, out, key), ...); }, v);
  } else if constexpr (std::is_arithmetic_v<U> || std::is_enum_v<U>) {
    append_key(key, &v, sizeof(v));
  } else if constexpr (std::is_same_v<U, Scalar>) {
    const double d = v.to_double();
    const int64_t i = v.is_floating_point() ? 0 : v.to_long();
    const auto t = v.dtype();
    append_key(key, &d, sizeof(d));
    append_key(key, &i, sizeof(i));
    append_key(key, &t, sizeof(t));
  } else if constexpr (std::is_same_v<U, std::string>) {
    const uint64_t n = v.size();
    append_key(key, &n, sizeof(n));
    key += v;
  } else {
    static_assert(sizeof(U) == 0,
                  "brisk::compile: an argument must be a Tensor, a number, an enum, a Scalar, a string, or a "
                  "vector/tuple/pair of them");
  }
}

template <class R>
void flatten_result(const R& r, std::vector<Tensor>& out, std::vector<size_t>& sizes) {
  if constexpr (std::is_same_v<R, Tensor>) {
    out.push_back(r);
  } else if constexpr (is_vector<R>::value) {
    sizes.push_back(r.size());
    for (const auto& e : r) flatten_result(e, out, sizes);
  } else if constexpr (is_tuple_like<R>::value) {
    std::apply([&](const auto&... e) { (flatten_result(e, out, sizes), ...); }, r);
  } else {
    static_assert(sizeof(R) == 0, "brisk::compile: results must be tensors, or vectors/tuples/pairs of tensors");
  }
}

template <class R>
R unflatten_result(const std::vector<Tensor>& flat, size_t& pos, const std::vector<size_t>& sizes, size_t& spos) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return flat.at(pos++);
  } else if constexpr (is_vector<R>::value) {
    R v;
    const size_t n = sizes.at(spos++);
    v.reserve(n);
    for (size_t i = 0; i < n; ++i) v.push_back(unflatten_result<typename R::value_type>(flat, pos, sizes, spos));
    return v;
  } else {
    return std::apply(
        [&](auto... proto) { return R{unflatten_result<decltype(proto)>(flat, pos, sizes, spos)...}; }, R{});
  }
}

}  // namespace compile_detail

/// A compiled function: call it like the original.
template <class F>
class Compiled {
 public:
  Compiled(F fn, CompileOptions opts, std::string name = "compiled")
      : fn_(std::make_shared<F>(std::move(fn))),
        core_(std::make_shared<compile_detail::CompiledCore>(opts, std::move(name))) {}

  template <class... Args>
  auto operator()(Args&&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, Args&&...>>;
    std::vector<Tensor> inputs;
    std::string key;
    (compile_detail::flatten_arg(args, inputs, key), ...);
    std::vector<size_t> sizes;
    if constexpr (std::is_void_v<R>) {  // a function that only updates tensors in place (an optimizer step)
      core_->call(
          inputs, key,
          [&](std::vector<size_t>&) {
            (*fn_)(args...);
            return std::vector<Tensor>();
          },
          sizes);
      return;
    } else {
    std::vector<Tensor> flat = core_->call(
        inputs, key,
        [&](std::vector<size_t>& structure) {
          std::vector<Tensor> out;
          compile_detail::flatten_result(static_cast<R>((*fn_)(args...)), out, structure);
          return out;
        },
        sizes);
    size_t pos = 0, spos = 0;
    return compile_detail::unflatten_result<R>(flat, pos, sizes, spos);
    }
  }

  CompileStats stats() const { return core_->stats(); }
  std::string graph_text() const { return core_->graph_text(); }

 private:
  std::shared_ptr<F> fn_;
  std::shared_ptr<compile_detail::CompiledCore> core_;
};

namespace compile_detail {
template <class T>
struct is_shared_ptr : std::false_type {};
template <class T>
struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};
template <class T>
concept HasPtr = requires(const T& h) {
  { h.ptr() };
  requires is_shared_ptr<std::decay_t<decltype(h.ptr())>>::value;
};
// The forward of a module, with its training flag as the first (constant)
// argument, so that train() and eval() get their own graphs.
template <class M>
struct ModuleForward {
  std::shared_ptr<M> m;
  template <class... A>
  auto operator()(bool /*training*/, A&&... a) const {
    return m->forward(std::forward<A>(a)...);
  }
};
}  // namespace compile_detail

/// A compiled module: calls its forward (the parameters are read on every
/// call, so optimizer steps and load_state_dict are seen).
template <class M>
class CompiledModule {
 public:
  CompiledModule(std::shared_ptr<M> m, CompileOptions opts)
      : m_(m), inner_(compile_detail::ModuleForward<M>{m}, opts, "forward") {}
  template <class... A>
  auto operator()(A&&... a) const {
    return inner_(m_->is_training(), std::forward<A>(a)...);
  }
  template <class... A>
  auto forward(A&&... a) const {
    return (*this)(std::forward<A>(a)...);
  }
  CompileStats stats() const { return inner_.stats(); }
  std::string graph_text() const { return inner_.graph_text(); }

 private:
  std::shared_ptr<M> m_;
  Compiled<compile_detail::ModuleForward<M>> inner_;
};

/// Compiles a callable over tensors (see Compiled).
template <class F>
  requires(!compile_detail::HasPtr<std::decay_t<F>> && !compile_detail::is_shared_ptr<std::decay_t<F>>::value)
Compiled<std::decay_t<F>> compile(F&& fn, CompileOptions opts = CompileOptions()) {
  return Compiled<std::decay_t<F>>(std::forward<F>(fn), opts);
}
/// Compiles a module's forward: compile(std::make_shared<Net>()).
template <class M>
CompiledModule<M> compile(const std::shared_ptr<M>& module, CompileOptions opts = CompileOptions()) {
  return CompiledModule<M>(module, opts);
}
/// Compiles a module holder's forward: compile(nn::Linear(4, 2)), compile(net).
template <class H>
  requires compile_detail::HasPtr<H>
auto compile(const H& holder, CompileOptions opts = CompileOptions()) {
  return compile(holder.ptr(), opts);
}

/// The directory whose src/ and include/ hold the headers generated CPU
/// code includes: BRISK_CODEGEN_DIR, else share/brisk/codegen of an
/// installed brisk, else the source tree it was built from.
std::string codegen_header_dir();

}  // namespace brisk
