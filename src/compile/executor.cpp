// Fusion planning and the fused-graph interpreter.
#include "compile/executor.h"

#include "brisk/cuda.h"
#include "compile/codegen_cuda.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <array>
#include <chrono>
#include <bit>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <sstream>
#include <tuple>

#include "brisk/ops.h"
#include "core/parallel.h"
#include "core/profile_hooks.h"
#include "core/tensor_create.h"

namespace brisk::jit {

// Note [Fusion groups]
// plan() walks the recorded kernel calls in program order and grows a group
// while the next call
//  - has the same iteration space (the TensorIter's coalesced shape, at most
//    two dims: one of `numel` for contiguous and scalar-broadcast operands,
//    two for a broadcast row or column), and
//  - touches each buffer the group writes with that buffer's one geometry
//    (offset, byte strides, dtype): element i of the iteration then reads
//    exactly what an earlier call of the group wrote at element i, so the
//    calls can run block by block (or as one generated loop) in order, and
//  - is connected to the group (reads or writes a buffer the group touches),
//    with at most kMaxGroupBuffers buffers in all: unrelated chains (an
//    optimizer's update of the next parameter) only widen the working set.
// Buffers only read may be read with several geometries. A temp whose every
// access is inside one group, first written there and not a result, is
// internal: it lives in the block's scratch and never gets memory of its own.

namespace {

bool same_geometry(const Operand& a, const Operand& b, int ndim) {
  if (a.buf != b.buf || a.offset != b.offset || a.dtype != b.dtype) return false;
  for (int d = 0; d < ndim; ++d)
    if (a.strides[d] != b.strides[d]) return false;
  return true;
}

bool same_space(const Node& a, const Node& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

// A 1-D iteration over s0 * s1 elements as the 2-D iteration (s0, s1): the
// same elements in the same order (element i0 + s0 * i1 is at i * stride).
void to_2d(Node& nd, int64_t s0, int64_t s1) {
  nd.linear = true;
  nd.ndim = 2;
  nd.shape[0] = s0;
  nd.shape[1] = s1;
  for (int k = 0; k < nd.noperands; ++k) nd.ops[k].strides[1] = nd.ops[k].strides[0] * s0;
}

constexpr int kMaxGroupBuffers = 24;

struct Access {
  Operand geo;
  bool written = false;
  bool multi = false;  // read with several geometries
};

}  // namespace

void plan_cuda(Graph& g, bool fuse) {
  // Note [Generated CUDA kernels] (codegen_cuda.cpp): a fused group runs as
  // one generated kernel; one the generator declines (or every group, when
  // NVRTC cannot be opened) runs call by call through the eager kernels, its
  // temps in memory.
  const CudaJit* jit = cuda_jit();
  if (!fuse || !jit || !jit->nvrtc_status().empty()) return plan_unfused(g);
  if (cuda::is_current_stream_capturing()) {
    // No NVRTC and no module loading inside a CUDA graph capture: a function
    // first called while capturing runs call by call (said once).
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr,
                   "brisk: compile: a compiled function was first called (for these shapes) while capturing a CUDA "
                   "graph: it runs unfused; call it once before the capture to get its generated kernels\n");
    return plan_unfused(g);
  }
  plan(g);
  std::vector<Group> groups;
  for (Group& grp : g.groups) {
    if (grp.fused() && (grp.row_node >= 0 || !generate_cuda(g, grp).ok)) {
      for (int ni : grp.nodes) {
        Group one;
        one.nodes = {ni};
        groups.push_back(std::move(one));
      }
      continue;
    }
    groups.push_back(std::move(grp));
  }
  g.groups = std::move(groups);
}

void plan_unfused(Graph& g) {
  eliminate_dead_nodes(g);
  eliminate_common_subexpressions(g);
  fold_constants(g);
  recompute_in_backward(g);
  eliminate_dead_nodes(g);
  g.groups.clear();
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) g.groups.push_back(Group{{i}, {}});
}

namespace {
/// Removes the nodes marked in `drop` (keeping the forward/backward split
/// where it was); returns how many.
int remove_nodes(Graph& g, const std::vector<char>& drop) {
  std::vector<Node> kept;
  int removed = 0, split = g.split;
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    if (!drop[i]) {
      kept.push_back(std::move(g.nodes[i]));
    } else {
      ++removed;
      if (g.split >= 0 && i < g.split) --split;
    }
  }
  g.nodes = std::move(kept);
  g.split = split;
  return removed;
}

/// Calls f(k, b) for every buffer b that node k writes.
template <class F>
void for_each_write(const Graph& g, const F& f) {
  for (int k = 0; k < static_cast<int>(g.nodes.size()); ++k) {
    const Node& nd = g.nodes[k];
    if (nd.opaque()) {
      for (int b : nd.writes)
        if (b >= 0) f(k, b);
    } else if (nd.out().buf >= 0) {
      f(k, nd.out().buf);
    }
  }
}
/// How many calls write each buffer.
std::vector<int> count_writers(const Graph& g) {
  std::vector<int> writers(g.bufs.size(), 0);
  for_each_write(g, [&](int, int b) { ++writers[b]; });
  return writers;
}
/// Buffers a result of the function views.
std::vector<char> result_buffers(const Graph& g) {
  std::vector<char> r(g.bufs.size(), 0);
  for (const OutputRef& o : g.outputs)
    if (o.buf >= 0) r[o.buf] = 1;
  return r;
}
/// An elementwise call that writes the whole of its output buffer from
/// offset 0 and does not read it (not in place): what it writes depends on
/// its inputs alone.
bool writes_whole(const Graph& g, const Node& nd) {
  const int b = nd.out().buf;
  if (nd.opaque() || b < 0 || nd.out().offset != 0 ||
      nd.numel * static_cast<int64_t>(element_size(nd.out().dtype)) != g.bufs[b].nbytes)
    return false;
  for (int k = 1; k < nd.noperands; ++k)
    if (nd.ops[k].buf == b) return false;
  return true;
}
}  // namespace

int eliminate_dead_nodes(Graph& g) {
  // Backwards over the calls: a call is live when it writes a buffer that is
  // an argument or a captured tensor (a side effect), a result, or a temp a
  // later live call reads, or when it draws random numbers (the generator
  // moves as in eager); a live call makes the buffers it reads live.
  // Buffer-level (a partial write keeps the whole buffer's writers), so it
  // only ever removes work whose every output nobody reads.
  const int n = static_cast<int>(g.nodes.size());
  std::vector<char> live_buf(g.bufs.size(), 0), keep(n, 0);
  for (const OutputRef& r : g.outputs)
    if (r.buf >= 0) live_buf[r.buf] = 1;
  for (size_t b = 0; b < g.bufs.size(); ++b)
    if (g.bufs[b].kind != BufKind::Temp) live_buf[b] = 1;
  for (int i = n - 1; i >= 0; --i) {
    const Node& nd = g.nodes[i];
    std::vector<int> writes = nd.writes, reads = nd.reads;
    if (!nd.opaque()) {
      writes.push_back(nd.out().buf);
      for (int k = 1; k < nd.noperands; ++k)
        if (!nd.ops[k].is_const()) reads.push_back(nd.ops[k].buf);
    }
    keep[i] = nd.side_effect;
    for (int b : writes) keep[i] |= b >= 0 && live_buf[b];
    if (keep[i])
      for (int b : reads) live_buf[b] = 1;
  }
  std::vector<char> drop(n);
  for (int i = 0; i < n; ++i) drop[i] = !keep[i];
  return remove_nodes(g, drop);
}

namespace {

bool same_scalar(const Scalar& a, const Scalar& b) {
  if (a.is_floating_point() != b.is_floating_point() || a.is_bool() != b.is_bool()) return false;
  if (a.is_floating_point()) return std::bit_cast<uint64_t>(a.to<double>()) == std::bit_cast<uint64_t>(b.to<double>());
  return a.to<int64_t>() == b.to<int64_t>();
}
bool same_args(const KernelArgs& a, const KernelArgs& b) {
  return a.i0 == b.i0 && a.i1 == b.i1 && a.mode == b.mode && a.has_s0 == b.has_s0 && a.has_s1 == b.has_s1 &&
         (!a.has_s0 || same_scalar(a.s0, b.s0)) && (!a.has_s1 || same_scalar(a.s1, b.s1)) &&
         // (kernels may read s0/s1 without the flags: compare them anyway)
         same_scalar(a.s0, b.s0) && same_scalar(a.s1, b.s1) && same_scalar(a.s2, b.s2);
}
bool same_operand(const Operand& a, const Operand& b, int ndim) {
  if (a.is_const() != b.is_const()) return false;
  if (a.is_const()) return a.dtype == b.dtype && std::memcmp(a.scalar, b.scalar, sizeof(a.scalar)) == 0;
  return same_geometry(a, b, ndim);
}
/// The same kernel call on the same operands (the output aside).
bool same_call(const Node& a, const Node& b) {
  if (a.opaque() || b.opaque() || a.slot != b.slot || a.ndim != b.ndim || a.numel != b.numel || a.linear != b.linear ||
      a.zero_dim != b.zero_dim || a.compute_dtype != b.compute_dtype || a.noperands != b.noperands ||
      !same_args(a.args, b.args))
    return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  if (a.out().dtype != b.out().dtype || a.out().offset != b.out().offset) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.out().strides[d] != b.out().strides[d]) return false;
  for (int k = 1; k < a.noperands; ++k)
    if (!same_operand(a.ops[k], b.ops[k], a.ndim)) return false;
  return true;
}

}  // namespace

int eliminate_common_subexpressions(Graph& g) {
  // Note [Common subexpressions]
  // A call j that repeats an earlier call i (same kernel, arguments, space
  // and input views, Note [Fusion groups]' geometry) reads the same values
  // when nothing wrote i's inputs in between; its result is then i's. Only
  // when both results are temps that their one call writes whole, with the
  // same layout, and j's is not a result of the function (two results must
  // not share memory) nor read by an opaque call (which holds its buffers):
  // then j's readers read i's buffer and j goes. Bit-exact by construction.
  const int n = static_cast<int>(g.nodes.size());
  const std::vector<int> writers = count_writers(g);
  const std::vector<char> is_result = result_buffers(g);
  std::vector<char> opaque_read(g.bufs.size(), 0);
  for (const Node& nd : g.nodes)
    if (nd.opaque())
      for (const auto* list : {&nd.reads, &nd.writes})  // (an opaque call may read what it writes)
        for (int b : *list)
          if (b >= 0) opaque_read[b] = 1;
  auto whole_temp = [&](const Node& nd) {
    return writes_whole(g, nd) && g.bufs[nd.out().buf].kind == BufKind::Temp && writers[nd.out().buf] == 1;
  };
  std::vector<int> remap(g.bufs.size());
  for (size_t b = 0; b < remap.size(); ++b) remap[b] = static_cast<int>(b);
  std::vector<char> drop(n, 0);
  std::vector<int> last_write(g.bufs.size(), -1);  // node index of the latest write to each buffer
  // candidates by slot, in program order
  std::vector<int> seen;
  for (int j = 0; j < n; ++j) {
    Node& nd = g.nodes[j];
    if (!nd.opaque())  // reads of removed results go to the kept ones
      for (int k = 1; k < nd.noperands; ++k)
        if (!nd.ops[k].is_const()) nd.ops[k].buf = remap[nd.ops[k].buf];
    if (!nd.opaque() && whole_temp(nd) && !is_result[nd.out().buf] && !opaque_read[nd.out().buf]) {
      for (int i : seen) {
        const Node& a = g.nodes[i];
        if (!same_call(a, nd) || g.bufs[a.out().buf].nbytes != g.bufs[nd.out().buf].nbytes) continue;
        bool clean = true;  // nothing wrote i's inputs (or i's result) after i
        for (int k = 0; k < a.noperands && clean; ++k)
          if (!a.ops[k].is_const() && last_write[a.ops[k].buf] > i) clean = false;
        if (!clean) continue;
        remap[nd.out().buf] = a.out().buf;
        drop[j] = 1;
        break;
      }
      if (!drop[j]) seen.push_back(j);
    }
    if (drop[j]) continue;
    if (nd.opaque()) {
      for (int b : nd.writes)
        if (b >= 0) last_write[b] = j;
    } else if (nd.out().buf >= 0) {
      last_write[nd.out().buf] = j;
    }
  }
  return remove_nodes(g, drop);
}


void release_trace_temps(Graph& g) {
  for (Buffer& bf : g.bufs)
    if (bf.kind == BufKind::Temp) bf.tensor = Tensor();
}

int fold_constants(Graph& g, int64_t max_bytes) {
  // Note [Constant folding]
  // A call that reads only constants (scalars, tensors brisk's constant
  // factories made inside the function, earlier folded results) computes
  // the same values on every call. It runs once here, through the same
  // kernel, into memory the graph owns (the trace run's own memory is gone
  // or is the first call's result), which becomes a constant of the graph;
  // the call goes. Bit-exact by construction. Only temps its one call
  // writes (an elementwise call: whole), and small ones (max_bytes), as a
  // constant holds its memory for the graph's life.
  const int n = static_cast<int>(g.nodes.size());
  const std::vector<int> writers = count_writers(g);
  std::vector<char> constant(g.bufs.size(), 0), drop(n, 0);
  for (size_t b = 0; b < g.bufs.size(); ++b)
    constant[b] = g.bufs[b].kind == BufKind::External && g.bufs[b].made_in_trace;
  for (int j = 0; j < n; ++j) {
    const Node& nd = g.nodes[j];
    if (nd.side_effect) continue;  // a random draw reads no tensor, yet differs per call
    std::vector<int> reads = nd.reads, writes = nd.writes;
    if (!nd.opaque()) {
      writes = {nd.out().buf};
      for (int k = 1; k < nd.noperands; ++k)
        if (!nd.ops[k].is_const()) reads.push_back(nd.ops[k].buf);
      // an elementwise call covers its buffer (an opaque call's buffers
      // are its results, made for it)
      if (!writes_whole(g, nd)) continue;
    }
    bool ok = !writes.empty();
    for (int b : writes) {
      ok = ok && b >= 0 && g.bufs[b].kind == BufKind::Temp && writers[b] == 1 && g.bufs[b].nbytes > 0 &&
           g.bufs[b].nbytes <= max_bytes && g.bufs[b].nbytes % static_cast<int64_t>(element_size(g.bufs[b].dtype)) == 0;
      for (int r : reads) ok = ok && r != b;
    }
    for (int r : reads) ok = ok && r >= 0 && constant[r];
    if (!ok) continue;
    // run the call once, now, into memory of the graph's own
    std::vector<Tensor> owners(g.bufs.size());
    std::vector<char*> base(g.bufs.size(), nullptr);
    for (int r : reads) {
      owners[r] = g.bufs[r].tensor;
      base[r] = static_cast<char*>(owners[r].impl()->storage->data);
    }
    for (int b : writes) {
      Buffer& bf = g.bufs[b];
      owners[b] = zeros({bf.nbytes / static_cast<int64_t>(element_size(bf.dtype))},
                        TensorOptions().dtype(bf.dtype).device(g.device));
      base[b] = static_cast<char*>(owners[b].impl()->storage->data);
    }
    if (nd.opaque())
      nd.run(Bound{owners, base.data()});
    else
      run_elementwise(nd, base.data(), g.device.type);
    for (int b : writes) {
      Buffer& bf = g.bufs[b];
      bf.tensor = owners[b];
      bf.kind = BufKind::External;
      bf.made_in_trace = true;  // (a result that views it is cloned per call)
      bf.made_by = "a folded constant";
      constant[b] = 1;
    }
    drop[j] = 1;
  }
  return remove_nodes(g, drop);
}

namespace {
// Note [A cut through the forward]
// recompute_in_backward makes a backward-read value again only from
// buffers kept anyway. AOTAutograd's partitioner goes further: it may keep
// a value the backward does not read (a GEMM's result h ahead of a chain of
// pointwise calls) when every value the backward reads can be made from it
// and it is smaller than they are together. That is a minimum vertex cut
// between the values nothing can make again (sources) and the values the
// backward reads (sinks), each value's capacity its bytes: a max flow
// (Edmonds-Karp on the split-vertex graph; graphs here have hundreds of
// buffers), the cut read off the residual graph. Only temps written once
// (and not results) can be cut; a value whose chain cannot be replayed
// (not elementwise, written in place, an input changed after its read) is
// a source. The caller keeps the cut only when it saves bytes (a chain
// deeper than its replay limit would not be made again).
std::vector<char> min_cut_saves(const Graph& g, const std::vector<char>& kept, const std::function<bool(int)>& wanted,
                                const std::vector<char>& is_result, const std::vector<int>& writers,
                                const std::vector<int>& producer, const std::vector<int>& last_write,
                                const std::function<bool(int)>& replayable) {
  const int nb = static_cast<int>(g.bufs.size());
  std::vector<char> cut(nb, 0);
  // the values involved: the backward's reads that could be made again
  // (`wanted`; the others are kept whatever happens), and their ancestors
  std::vector<int> idx(nb, -1), vals;
  std::vector<int> stack;
  for (int b = 0; b < nb; ++b)
    if (wanted(b)) stack.push_back(b);
  while (!stack.empty()) {
    const int b = stack.back();
    stack.pop_back();
    if (idx[b] >= 0) continue;
    idx[b] = static_cast<int>(vals.size());
    vals.push_back(b);
    if (!replayable(b) || is_result[b]) continue;
    const Node& nd = g.nodes[producer[b]];
    for (int q = 1; q < nd.noperands; ++q)
      if (!nd.ops[q].is_const() && !kept[nd.ops[q].buf]) stack.push_back(nd.ops[q].buf);
  }
  if (vals.empty()) return cut;
  constexpr int64_t kInf = int64_t(1) << 60;
  const int V = 2 * static_cast<int>(vals.size()) + 2, S = V - 2, T = V - 1;
  struct Edge {
    int to;
    int64_t cap;
  };
  std::vector<Edge> edges;
  std::vector<std::vector<int>> adj(V);
  auto add = [&](int u, int v, int64_t c) {
    adj[u].push_back(static_cast<int>(edges.size()));
    edges.push_back({v, c});
    adj[v].push_back(static_cast<int>(edges.size()));
    edges.push_back({u, 0});
  };
  for (size_t i = 0; i < vals.size(); ++i) {
    const int b = vals[i], in = 2 * static_cast<int>(i), out = in + 1;
    const Buffer& bf = g.bufs[b];
    const bool cuttable = bf.kind == BufKind::Temp && writers[b] == 1 && !is_result[b] && bf.nbytes > 0;
    add(in, out, cuttable ? bf.nbytes : kInf);
    bool remake = replayable(b) && !is_result[b];
    if (remake) {
      const Node& nd = g.nodes[producer[b]];
      for (int q = 1; q < nd.noperands; ++q) {
        if (nd.ops[q].is_const()) continue;
        const int u = nd.ops[q].buf;
        if (last_write[u] > producer[b]) remake = false;  // (u no longer holds what the call read)
      }
    }
    if (!remake) {
      add(S, in, kInf);
    } else {
      const Node& nd = g.nodes[producer[b]];
      for (int q = 1; q < nd.noperands; ++q)
        if (!nd.ops[q].is_const() && !kept[nd.ops[q].buf]) add(2 * idx[nd.ops[q].buf] + 1, in, kInf);
    }
    if (wanted(b)) add(out, T, kInf);
  }
  // Edmonds-Karp
  int64_t flow = 0;
  std::vector<int> via(V);
  for (;;) {
    std::fill(via.begin(), via.end(), -1);
    std::vector<int> q{S};
    via[S] = -2;
    for (size_t h = 0; h < q.size() && via[T] == -1; ++h)
      for (int e : adj[q[h]])
        if (edges[e].cap > 0 && via[edges[e].to] == -1) {
          via[edges[e].to] = e;
          q.push_back(edges[e].to);
        }
    if (via[T] == -1) break;
    int64_t push = kInf;
    for (int v = T; v != S; v = edges[via[v] ^ 1].to) push = std::min(push, edges[via[v]].cap);
    if (push >= kInf) return cut;  // no finite cut (a sink no cut can reach)
    for (int v = T; v != S; v = edges[via[v] ^ 1].to) {
      edges[via[v]].cap -= push;
      edges[via[v] ^ 1].cap += push;
    }
    flow += push;
    if (flow >= kInf) return cut;
  }
  // the cut: values whose in-vertex the source still reaches and out-vertex not
  std::vector<char> seen(V, 0);
  std::vector<int> q{S};
  seen[S] = 1;
  for (size_t h = 0; h < q.size(); ++h)
    for (int e : adj[q[h]])
      if (edges[e].cap > 0 && !seen[edges[e].to]) {
        seen[edges[e].to] = 1;
        q.push_back(edges[e].to);
      }
  for (size_t i = 0; i < vals.size(); ++i)
    if (seen[2 * i] && !seen[2 * i + 1]) cut[vals[i]] = 1;
  return cut;
}
}  // namespace

int recompute_in_backward(Graph& g) {
  // Note [Recomputing in the backward]
  // A joint graph's backward part reads forward temps, which a run keeps
  // from the forward to the backward. A temp made by a chain of elementwise
  // calls from buffers the backward has anyway (the arguments and captured
  // tensors the graph never writes, and temps it reads that cannot be
  // recomputed) costs no memory to make again: its chain is copied to the
  // start of the backward part (new temps) and the backward reads the copy,
  // so the forward's temp goes back to the allocator after its last forward
  // use, and the copies fuse with the backward's own pointwise calls (the
  // usual case: x * 0.5 * (1 + erf(x / 1.41421)) keeps x alone for its
  // backward). AOTAutograd's min-cut partitioner is the reference; this is
  // its cheap case (no cut through a value that would then be saved
  // instead). The same kernels on the same values: the same bits.
  if (g.split < 0) return 0;
  const int n = static_cast<int>(g.nodes.size()), split = g.split;
  const int nb = static_cast<int>(g.bufs.size());
  std::vector<int> writers(nb, 0), producer(nb, -1), last_write(nb, -1);
  for_each_write(g, [&](int k, int b) {
    ++writers[b];
    last_write[b] = k;
    if (k < split && !g.nodes[k].opaque()) producer[b] = k;
  });
  const std::vector<char> is_result = result_buffers(g);
  std::vector<char> bwd_read(nb, 0), opaque_bwd_read(nb, 0);
  for (int k = split; k < n; ++k) {
    const Node& nd = g.nodes[k];
    for (int b : nd.reads)
      if (b >= 0) bwd_read[b] = opaque_bwd_read[b] = 1;
    for (int b : nd.writes)  // (a backward call that writes a forward buffer: leave it alone)
      if (b >= 0) opaque_bwd_read[b] = 1;
    if (!nd.opaque()) {
      for (int q = 1; q < nd.noperands; ++q)
        if (!nd.ops[q].is_const()) bwd_read[nd.ops[q].buf] = 1;
      if (nd.out().buf >= 0) opaque_bwd_read[nd.out().buf] = 1;
    }
  }
  // a forward call that can be run again: elementwise, the one writer of a
  // temp it writes whole, not in place
  auto replayable = [&](int b) {
    return producer[b] >= 0 && writers[b] == 1 && g.bufs[b].kind == BufKind::Temp &&
           writes_whole(g, g.nodes[producer[b]]);
  };
  // kept anyway until the backward: unwritten arguments and captured tensors,
  // and backward-read temps that cannot be replayed
  std::vector<char> kept(nb, 0);
  for (int b = 0; b < nb; ++b) {
    const BufKind kd = g.bufs[b].kind;
    kept[b] = ((kd == BufKind::Input || kd == BufKind::External) && writers[b] == 0) ||
              (kd == BufKind::Temp && bwd_read[b] && (!replayable(b) || opaque_bwd_read[b] || is_result[b]));
  }
  // rec[b]: 1 yes, 0 no, -1 unknown; chains up to kMaxDepth calls deep
  constexpr int kMaxDepth = 12;
  std::vector<int> rec(nb, -1);
  std::function<bool(int, int)> can = [&](int b, int depth) -> bool {
    if (kept[b]) return true;
    if (rec[b] >= 0) return rec[b] == 1;
    if (depth > kMaxDepth || !replayable(b) || is_result[b]) return false;
    const Node& nd = g.nodes[producer[b]];
    bool ok = true;
    for (int q = 1; q < nd.noperands && ok; ++q) {
      if (nd.ops[q].is_const()) continue;
      const int u = nd.ops[q].buf;
      // a kept input must still hold what the call read (a temp written
      // again later, say by sin_ after the copy autograd saved of it, does not)
      ok = can(u, depth + 1) && !(kept[u] && last_write[u] > producer[b]);
    }
    rec[b] = ok ? 1 : 0;
    return ok;
  };
  auto wanted = [&](int b) {  // read by the backward, and could be made again there
    return bwd_read[b] && !kept[b] && !opaque_bwd_read[b] && !is_result[b] && g.bufs[b].kind == BufKind::Temp;
  };
  // bytes kept from the forward for the backward beyond what it keeps anyway
  auto saved_bytes = [&](const std::vector<char>& extra) {
    int64_t bytes = 0;
    for (int b = 0; b < nb; ++b)
      if (extra[b] || (bwd_read[b] && !kept[b] && !(wanted(b) && can(b, 0)))) bytes += g.bufs[b].nbytes;
    return bytes;
  };
  {
    // a cut: keep a value the backward does not read so that the values it
    // does read are made again from it (Note [A cut through the forward])
    const std::vector<char> cut = min_cut_saves(g, kept, wanted, is_result, writers, producer, last_write, replayable);
    bool any = false;
    for (char c : cut) any = any || c;
    if (any) {
      const int64_t before = saved_bytes(std::vector<char>(nb, 0));
      std::vector<char> kept0 = kept;
      for (int b = 0; b < nb; ++b) kept[b] = kept[b] || cut[b];
      std::fill(rec.begin(), rec.end(), -1);
      if (saved_bytes(cut) >= before) {  // (deeper than kMaxDepth, say): as it was
        kept = std::move(kept0);
        std::fill(rec.begin(), rec.end(), -1);
      }
    }
  }
  std::vector<int> targets;
  for (int b = 0; b < nb; ++b)
    if (wanted(b) && can(b, 0)) targets.push_back(b);
  if (targets.empty()) return 0;
  // copies of the chains, in forward order, into new temps
  std::vector<int> copy_of(nb, -1);
  std::vector<Node> copies;
  std::function<void(int)> emit = [&](int b) {
    if (kept[b] || copy_of[b] >= 0) return;
    const Node& src = g.nodes[producer[b]];
    for (int q = 1; q < src.noperands; ++q)
      if (!src.ops[q].is_const()) emit(src.ops[q].buf);
    Node c = src;
    for (int q = 1; q < c.noperands; ++q)
      if (!c.ops[q].is_const() && copy_of[c.ops[q].buf] >= 0) c.ops[q].buf = copy_of[c.ops[q].buf];
    Buffer nbf;
    nbf.kind = BufKind::Temp;
    nbf.nbytes = g.bufs[b].nbytes;
    nbf.dtype = g.bufs[b].dtype;
    g.bufs.push_back(nbf);
    copy_of[b] = static_cast<int>(g.bufs.size()) - 1;
    c.ops[0].buf = copy_of[b];
    copies.push_back(std::move(c));
  };
  std::vector<std::pair<int, int>> order;  // (producer index, buffer): forward order
  for (int b : targets) order.push_back({producer[b], b});
  std::sort(order.begin(), order.end());
  for (const auto& [k, b] : order) emit(b);
  // the backward reads the copies
  for (int k = split; k < n; ++k) {
    Node& nd = g.nodes[k];
    if (nd.opaque()) continue;
    for (int q = 1; q < nd.noperands; ++q)
      if (!nd.ops[q].is_const() && nd.ops[q].buf < nb && copy_of[nd.ops[q].buf] >= 0 && !kept[nd.ops[q].buf])
        nd.ops[q].buf = copy_of[nd.ops[q].buf];
  }
  const int added = static_cast<int>(copies.size());
  g.nodes.insert(g.nodes.begin() + split, std::make_move_iterator(copies.begin()), std::make_move_iterator(copies.end()));
  return added;
}

void plan(Graph& g) {
  eliminate_dead_nodes(g);
  eliminate_common_subexpressions(g);
  fold_constants(g);
  recompute_in_backward(g);
  eliminate_dead_nodes(g);
  g.groups.clear();
  const int n = static_cast<int>(g.nodes.size());
  std::vector<Access> acc(g.bufs.size());
  std::vector<int> touched;
  // (row fusion) the calls that touch each buffer, and the results
  std::vector<std::vector<int>> touchers(g.bufs.size());
  for (int k = 0; k < n; ++k) {
    const Node& nd = g.nodes[k];
    auto add = [&](int b) {
      if (b >= 0 && (touchers[b].empty() || touchers[b].back() != k)) touchers[b].push_back(k);
    };
    for (int b : nd.reads) add(b);
    for (int b : nd.writes) add(b);
    for (int q = 0; q < nd.noperands; ++q)
      if (!nd.ops[q].is_const()) add(nd.ops[q].buf);
  }
  const std::vector<char> result_buf = result_buffers(g);
  int i = 0;
  while (i < n) {
    Group grp;
    grp.nodes.push_back(i);
    for (int b : touched) acc[b] = Access{};
    touched.clear();
    auto note = [&](const Node& nd) {
      for (int k = nd.noperands - 1; k >= 0; --k) {  // inputs first, then the output
        const Operand& o = nd.ops[k];
        if (o.is_const()) continue;
        Access& a = acc[o.buf];
        if (std::find(touched.begin(), touched.end(), o.buf) == touched.end()) {
          touched.push_back(o.buf);
          a.geo = o;
        } else if (!same_geometry(a.geo, o, nd.ndim)) {
          a.multi = true;
        }
        if (k == 0) a.written = true;
      }
    };
    note(g.nodes[i]);
    int j = i + 1;
    if (!g.nodes[i].opaque() && !g.nodes[i].zero_dim && g.nodes[i].ndim <= 2) {
      for (; j < n; ++j) {
        Node& nd = g.nodes[j];
        if (nd.opaque() || nd.zero_dim || j == g.split) break;  // (the backward part starts its own groups)
        const Node& first = g.nodes[i];
        if (!same_space(first, nd)) {
          // One element order in two shapes: a contiguous chain (1-D) meets
          // a broadcast (2-D) of as many elements.
          if (nd.numel != first.numel || nd.ndim > 2) break;
          const int64_t s0 = nd.ndim == 2 ? nd.shape[0] : first.shape[0];
          if (rows_per_block(s0, true) == 0) break;
          if (nd.ndim == 1 && first.ndim == 2) {
            to_2d(nd, first.shape[0], first.shape[1]);
          } else if (nd.ndim == 2 && first.ndim == 1) {
            for (int m : grp.nodes) to_2d(g.nodes[m], nd.shape[0], nd.shape[1]);
            for (int b : touched) acc[b] = Access{};
            touched.clear();
            for (int m : grp.nodes) note(g.nodes[m]);
          } else {
            break;
          }
        }
        // Only calls connected to the group join it (a result it made, or an
        // input it reads): independent chains over other tensors (an
        // optimizer's per-parameter updates) would only widen the block's
        // working set past the caches. And at most kMaxGroupBuffers buffers.
        bool connected = false;
        int fresh = 0;
        for (int k = 0; k < nd.noperands; ++k) {
          if (nd.ops[k].is_const()) continue;
          if (std::find(touched.begin(), touched.end(), nd.ops[k].buf) != touched.end())
            connected = true;
          else
            ++fresh;
        }
        // (a small group may take an unconnected call: the next steps of a
        // chain often read what several short chains made)
        if ((!connected && touched.size() > 4) || static_cast<int>(touched.size()) + fresh > kMaxGroupBuffers) break;
        bool ok = true;
        for (int k = 0; k < nd.noperands && ok; ++k) {
          const Operand& o = nd.ops[k];
          if (o.is_const()) continue;
          if (std::find(touched.begin(), touched.end(), o.buf) == touched.end()) continue;
          const Access& a = acc[o.buf];
          const bool writes = k == 0 || a.written;
          if (writes && (a.multi || !same_geometry(a.geo, o, nd.ndim))) ok = false;
        }
        if (!ok) break;
        note(nd);
        grp.nodes.push_back(j);
      }
    }
    // Note [Row fusion]
    // A row op (Node::run_rows) right after an elementwise group that makes
    // its whole input, which nothing else touches: the group runs a block
    // of whole rows at a time into scratch and the row op reads them there,
    // so the input never goes to memory (softmax(x * scale + mask),
    // layer_norm(x + residual)). Each row is computed by the same code as
    // in the unfused run (the row kernels run rows one by one; blocks of a
    // 1-d group start at multiples of 64 elements), so the bits are eager's.
    if (j < n && !g.nodes[i].opaque() && g.nodes[j].run_rows && !(g.split >= 0 && i < g.split && j >= g.split)) {
      const Node& rn = g.nodes[j];
      const Node& first = g.nodes[i];
      const int x = rn.row_in;
      const int64_t N = rn.row_cols, R = rn.row_count;
      const int64_t es = static_cast<int64_t>(element_size(rn.row_in_dtype));
      // (a one-dim group's blocks start at multiples of 64 elements: up to
      // 64 rows per block when rows are not multiples of 64 long)
      bool linear = first.ndim == 1;
      for (int m : grp.nodes) linear |= g.nodes[m].linear;
      const int64_t min_rows = linear ? 64 / std::gcd<int64_t>(N, 64) : 1;
      bool ok = x >= 0 && g.bufs[x].kind == BufKind::Temp && !result_buf[x] && N > 0 && R > 0 &&
                N * es <= (int64_t(4) << 20) && min_rows * N * es <= (int64_t(16) << 20) &&
                std::find(touched.begin(), touched.end(), x) != touched.end();
      // only the group and the row op touch x, and the group writes it first
      if (ok)
        for (int k : touchers[x]) ok = ok && k >= i && k <= j;
      if (ok) {
        const Node& w = g.nodes[touchers[x].front()];
        ok = !w.opaque() && w.out().buf == x;
        for (int q = 1; q < w.noperands && ok; ++q) ok = w.ops[q].buf != x;
      }
      // one geometry: x's rows, contiguous, in the group's iteration order
      if (ok) {
        const Access& a = acc[x];
        ok = !a.multi && a.written && a.geo.offset == rn.row_in_offset && a.geo.dtype == rn.row_in_dtype;
        if (ok && first.ndim == 2)
          ok = first.shape[0] == N && first.shape[1] == R && a.geo.strides[0] == es && a.geo.strides[1] == N * es;
        else if (ok)
          ok = first.ndim == 1 && first.numel == R * N && a.geo.strides[0] == es;
      }
      // the row op's other buffers are not the group's
      if (ok) {
        for (int b : rn.writes) ok = ok && std::find(touched.begin(), touched.end(), b) == touched.end();
        for (int b : rn.reads)
          ok = ok && (b == x || std::find(touched.begin(), touched.end(), b) == touched.end());
      }
      if (ok) {
        grp.nodes.push_back(j);
        grp.row_node = j;
        grp.staged = x;
        ++j;
      }
    }
    g.groups.push_back(std::move(grp));
    i = j;
  }
  // Internal temps: every access in one group, the first one a write (of the
  // group's geometry), and no result views them.
  std::vector<int> group_of(g.bufs.size(), -2);  // -2 untouched, -1 several groups
  std::vector<char> first_is_write(g.bufs.size(), 0), seen(g.bufs.size(), 0);
  for (int gi = 0; gi < static_cast<int>(g.groups.size()); ++gi)
    for (int ni : g.groups[gi].nodes) {
      const Node& nd = g.nodes[ni];
      for (int pass = 0; pass < 2; ++pass)
        for (int b : pass == 0 ? nd.reads : nd.writes) {
          if (!seen[b]) {
            seen[b] = 1;
            first_is_write[b] = pass == 1;
          }
          group_of[b] = -1;  // an opaque call's buffers live in memory
        }
      for (int k = nd.noperands - 1; k >= 0; --k) {
        const Operand& o = nd.ops[k];
        if (o.is_const()) continue;
        if (!seen[o.buf]) {
          seen[o.buf] = 1;
          first_is_write[o.buf] = k == 0;
        }
        int& gr = group_of[o.buf];
        gr = gr == -2 ? gi : (gr == gi ? gi : -1);
      }
    }
  for (int b = 0; b < static_cast<int>(g.bufs.size()); ++b) {
    if (g.bufs[b].kind != BufKind::Temp || result_buf[b] || !first_is_write[b] || group_of[b] < 0) continue;
    Group& grp = g.groups[group_of[b]];
    if (grp.fused()) grp.internal.push_back(b);
  }
}

std::string describe(const Graph& g) {
  std::ostringstream os;
  auto opnd = [&](const Operand& o, int ndim) {
    if (o.is_const()) {
      os << "const";
      return;
    }
    os << "b" << o.buf << "+" << o.offset << "[";
    for (int d = 0; d < ndim; ++d) os << (d ? "," : "") << o.strides[d];
    os << "]:" << dtype_name(o.dtype);
  };
  os << "buffers:\n";
  for (size_t b = 0; b < g.bufs.size(); ++b) {
    const Buffer& bf = g.bufs[b];
    os << "  b" << b << " "
       << (bf.kind == BufKind::Input ? "input " + std::to_string(bf.input) : bf.kind == BufKind::External ? "external" : "temp")
       << " " << bf.nbytes << " bytes\n";
  }
  os << "groups:\n";
  for (size_t gi = 0; gi < g.groups.size(); ++gi) {
    const Group& grp = g.groups[gi];
    os << "  group " << gi << (grp.fused() ? " (fused)" : "");
    if (grp.row_node >= 0) os << " rows staged: b" << grp.staged;
    if (!grp.internal.empty()) {
      os << " internal:";
      for (int b : grp.internal) os << " b" << b;
    }
    os << "\n";
    for (int ni : grp.nodes) {
      const Node& nd = g.nodes[ni];
      if (nd.opaque()) {
        os << "    " << nd.name << " [" << op_name(nd.slot) << "] writes";
        for (int b : nd.writes) os << " b" << b;
        os << " reads";
        for (int b : nd.reads) os << " b" << b;
        os << "\n";
        continue;
      }
      os << "    " << nd.name << " [" << op_name(nd.slot) << "] shape(";
      for (int d = 0; d < nd.ndim; ++d) os << (d ? "," : "") << nd.shape[d];
      os << ") ";
      opnd(nd.ops[0], nd.ndim);
      os << " <-";
      for (int k = 1; k < nd.noperands; ++k) {
        os << " ";
        opnd(nd.ops[k], nd.ndim);
      }
      os << "\n";
    }
  }
  os << "results:";
  for (const OutputRef& r : g.outputs) os << " b" << r.buf;
  os << "\n";
  return os.str();
}

Executable::Executable(const Graph& g, const CompileOptions& opts) : g_(g), opts_(opts) {
  const size_t nb = g.bufs.size();
  last_use_.assign(nb, -1);
  internal_.assign(nb, 0);
  is_output_.assign(nb, 0);
  for (const OutputRef& r : g.outputs)
    if (r.buf >= 0) is_output_[r.buf] = 1;
  for (int gi = 0; gi < static_cast<int>(g.groups.size()); ++gi) {
    const Group& grp = g.groups[gi];
    for (int b : grp.internal) internal_[b] = 1;
    if (grp.staged >= 0) internal_[grp.staged] = 1;  // (rows in scratch: no memory of its own)
    std::string nm;
    for (int ni : grp.nodes) {
      const Node& nd = g.nodes[ni];
      std::vector<int> writes = nd.writes;
      for (int b : nd.reads) last_use_[b] = gi;
      for (int b : nd.writes) last_use_[b] = gi;
      for (int k = 0; k < nd.noperands; ++k)
        if (!nd.ops[k].is_const()) last_use_[nd.ops[k].buf] = gi;
      if (!nd.opaque()) writes.push_back(nd.out().buf);
      for (int wb : writes) {
        const Buffer& ob = g.bufs[wb];
        if (ob.kind == BufKind::Temp) continue;
        const int arg = ob.kind == BufKind::Input ? ob.input : -1;
        const std::tuple<int, int, int> w{wb, arg, gi};
        if (std::find(written_args_.begin(), written_args_.end(), w) == written_args_.end()) written_args_.push_back(w);
      }
      nm += (nm.empty() ? "" : "+") + nd.name;
    }
    group_names_.push_back(grp.fused() ? "fused(" + nm + ")" : nm);
  }
  fused_plans_.resize(g.groups.size());
  for (size_t gi = 0; gi < g.groups.size(); ++gi)
    if (g.groups[gi].fused() && g.groups[gi].row_node < 0) fused_plans_[gi] = make_fused_plan(g, g.groups[gi]);
  kernels_.fns.assign(g.groups.size(), nullptr);
  if (g.device.is_cuda()) {
    // (plan_cuda left fused only the groups the generator takes)
    cuda_kernels_ = build_cuda_kernels(g, opts.mode == CompileMode::MaxAutotune ? 4 : 1);
    for (size_t gi = 0; gi < g.groups.size(); ++gi)
      BRISK_INTERNAL_ASSERT(!g.groups[gi].fused() || cuda_kernels_[gi].fn,
                            "compile: fused CUDA group without a kernel: ", cuda_kernels_[gi].code.reason);
  } else if (opts.backend == CompileBackend::Default && opts.fuse) {
    // Generated code for the fused groups (one compiler run or disk hit per
    // graph); groups the generator does not take, or no compiler at all,
    // stay with the interpreter. A compiler failure is brisk's bug: it is
    // reported once and the graph is interpreted.
    try {
      kernels_ = build_cpu_kernels(g, false, opts.mode == CompileMode::MaxAutotune);
    } catch (const Error& e) {
      kernels_.fns.assign(g.groups.size(), nullptr);
      codegen_note_ = std::string("code generation failed, interpreting: ") + e.what();
      static bool warned = false;
      if (!warned) {
        warned = true;
        std::fprintf(stderr, "brisk: compile: %s\n", codegen_note_.c_str());
      }
    }
    for (size_t gi = 0; gi < kernels_.code.size() && codegen_note_.empty(); ++gi)
      if (g.groups[gi].fused() && !kernels_.fns[gi] && !kernels_.code[gi].reason.empty())
        codegen_note_ = "group " + std::to_string(gi) + " interpreted: " + kernels_.code[gi].reason;
  }
  chosen_ = std::make_unique<std::atomic<int>[]>(g.groups.size());
  for (size_t gi = 0; gi < g.groups.size(); ++gi) chosen_[gi].store(-1, std::memory_order_relaxed);
  tune_notes_.assign(g.groups.size(), "");
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& bf = g.bufs[b];
    if (bf.kind != BufKind::External) continue;
    const Tensor& t = bf.tensor;
    externals_.push_back({static_cast<int>(b), t.dtype(), std::vector<int64_t>(t.sizes().begin(), t.sizes().end()),
                          std::vector<int64_t>(t.strides().begin(), t.strides().end()), t.storage_offset(),
                          static_cast<int64_t>(t.impl()->storage->nbytes), t.requires_grad()});
  }
  release_after_.assign(g.groups.size(), {});
  alloc_before_.assign(g.groups.size(), {});
  std::vector<int> first_use(nb, -1);
  for (int gi = static_cast<int>(g.groups.size()) - 1; gi >= 0; --gi)
    for (int ni : g.groups[gi].nodes) {
      const Node& nd = g.nodes[ni];
      for (int b : nd.reads) first_use[b] = gi;
      for (int b : nd.writes) first_use[b] = gi;
      for (int k = 0; k < nd.noperands; ++k)
        if (!nd.ops[k].is_const()) first_use[nd.ops[k].buf] = gi;
    }
  for (size_t b = 0; b < nb; ++b) {
    if (g.bufs[b].kind != BufKind::Temp || internal_[b] || first_use[b] < 0) continue;
    alloc_before_[first_use[b]].push_back(static_cast<int>(b));
    if (!is_output_[b]) release_after_[last_use_[b]].push_back(static_cast<int>(b));
  }
  plan_batches();
}

// Note [Batches of small groups]
// A group over fewer elements than kGrainSize runs on one thread (splitting
// it would cost more than it saves), so a graph of many small groups (an
// optimizer step written with plain ops: one group per parameter) ran on one
// thread however many there are. Consecutive small elementwise groups that
// are independent (none writes a buffer another one reads or writes) form a
// batch, and the batch's groups run in parallel, each on one thread, as they
// would alone: the same code on the same elements, so the same bits. Their
// temps get memory before the batch and go back after it.
void Executable::plan_batches() {
  const int ng = static_cast<int>(g_.groups.size());
  batch_end_.resize(ng);
  for (int gi = 0; gi < ng; ++gi) batch_end_[gi] = gi + 1;
  if (g_.device.is_cuda()) return;
  auto small_elementwise = [&](int gi) {
    const Group& grp = g_.groups[gi];
    if (grp.row_node >= 0) return false;
    for (int ni : grp.nodes) {
      const Node& nd = g_.nodes[ni];
      if (nd.opaque() || nd.side_effect || nd.numel > kGrainSize) return false;
    }
    return true;
  };
  auto touches = [&](int gi, std::vector<int>& reads, std::vector<int>& writes) {
    reads.clear();
    writes.clear();
    for (int ni : g_.groups[gi].nodes) {
      const Node& nd = g_.nodes[ni];
      writes.push_back(nd.out().buf);
      for (int k = 1; k < nd.noperands; ++k)
        if (!nd.ops[k].is_const()) reads.push_back(nd.ops[k].buf);
    }
  };
  std::vector<char> read_in(g_.bufs.size(), 0), written_in(g_.bufs.size(), 0);
  std::vector<int> r, w, used;
  for (int gi = 0; gi < ng;) {
    if (!small_elementwise(gi)) {
      ++gi;
      continue;
    }
    int ge = gi;
    used.clear();
    while (ge < ng && small_elementwise(ge)) {
      touches(ge, r, w);
      bool independent = true;
      for (int b : w) independent = independent && !read_in[b] && !written_in[b];
      for (int b : r) independent = independent && !written_in[b];
      if (!independent) break;
      for (int b : r) read_in[b] = 1, used.push_back(b);
      for (int b : w) written_in[b] = 1, used.push_back(b);
      ++ge;
    }
    for (int b : used) read_in[b] = written_in[b] = 0;
    if (ge - gi >= 2) batch_end_[gi] = ge;
    gi = std::max(ge, gi + 1);
  }
}

int Executable::generated_groups() const {
  int n = 0;
  for (auto f : kernels_.fns) n += f != nullptr;
  for (const auto& k : cuda_kernels_) n += k.fn != nullptr;
  return n;
}

std::string Executable::externals_changed() const {
  for (const ExternalSnapshot& e : externals_) {
    const Tensor& t = g_.bufs[e.buf].tensor;
    if (t.dtype() != e.dtype || !(t.sizes() == IntArrayRef(e.sizes)) || !(t.strides() == IntArrayRef(e.strides)) ||
        t.storage_offset() != e.offset || static_cast<int64_t>(t.impl()->storage->nbytes) < e.nbytes ||
        t.requires_grad() != e.requires_grad)
      return "a captured tensor (" + std::string(dtype_name(e.dtype)) + " of " + std::to_string(e.nbytes) +
             " bytes) changed its dtype, shape, storage or requires_grad";
  }
  return "";
}

Tensor Bound::view(const TensorRef& r) const {
  if (r.buf < 0) return Tensor();
  const Tensor& owner = owners[r.buf];
  BRISK_INTERNAL_ASSERT(owner.defined(), "compile: buffer b", r.buf, " has no memory at this point of the graph");
  Tensor v = detail::make_view(owner, r.sizes, r.strides, 0);
  TensorImpl* impl = v.impl();
  impl->dtype = r.dtype;
  impl->storage_offset = r.offset / static_cast<int64_t>(element_size(r.dtype));
  impl->refresh();
  return v;
}

void Executable::run_node(const Node& n, char* const* base) const { run_elementwise(n, base, g_.device.type); }

void run_elementwise(const Node& n, char* const* base, DeviceType dev) {
  TensorIter it;
  it.noperands = n.noperands;
  it.ndim = n.zero_dim ? 0 : n.ndim;
  it.numel = n.numel;
  it.compute_dtype = n.compute_dtype;
  for (int d = 0; d < n.ndim; ++d) it.shape[d] = n.shape[d];
  for (int k = 0; k < n.noperands; ++k) {
    const Operand& o = n.ops[k];
    it.dtypes[k] = o.dtype;
    for (int d = 0; d < n.ndim; ++d) it.strides[k][d] = o.strides[d];
    if (o.is_const()) {
      std::memcpy(it.scalar_buf[k], o.scalar, sizeof(o.scalar));
      it.data[k] = it.scalar_buf[k];
    } else {
      it.data[k] = base[o.buf] + o.offset;
    }
  }
  auto fn = reinterpret_cast<ElementwiseFn>(detail::g_kernel_table[static_cast<int>(n.slot)][static_cast<int>(dev)]);
  fn(it, n.args);
}

// Note [The fused-graph interpreter]
// A fused group runs block by block: the iteration space is cut into blocks
// of about kBlock elements (whole rows, or pieces of one row), and for each
// block every call of the group runs, in order, through the eager kernel of
// its slot on a TensorIter narrowed to the block. Internal temps live in a
// scratch block per thread (dense in iteration order), so a chain of five
// ops reads its inputs and writes its results once instead of five times,
// with the very kernels eager runs (bit-equal by construction). Blocks are
// independent (each call of the group reads at element i what the group
// wrote at element i), so they are spread over the threads.
int64_t rows_per_block(int64_t s0, bool has_linear) {
  if (s0 >= kBlock) return has_linear && s0 % 64 != 0 ? 0 : 1;
  int64_t rows = std::max<int64_t>(1, kBlock / s0);
  if (!has_linear) return rows;
  const int64_t m = 64 / std::gcd<int64_t>(s0, 64);  // rows * s0 a multiple of 64
  rows = (rows + m - 1) / m * m;
  return rows * s0 <= 8 * kBlock ? rows : 0;
}

FusedPlan make_fused_plan(const Graph& g, const Group& grp) {
  FusedPlan p;
  const Node& first = g.nodes[grp.nodes.front()];
  const int ndim = first.ndim;
  p.s0 = ndim >= 1 ? first.shape[0] : 1;
  p.s1 = ndim >= 2 ? first.shape[1] : 1;
  // Blocks: (row r, elements [c0, c0 + len) of dim 0) with rows_per rows each.
  bool has_linear = false;
  for (int ni : grp.nodes) has_linear |= g.nodes[ni].linear;
  p.rows_per = rows_per_block(p.s0, has_linear);
  BRISK_INTERNAL_ASSERT(p.rows_per > 0, "compile: a fused group without a block size");
  p.pieces = p.s0 >= kBlock ? (p.s0 + kBlock - 1) / kBlock : 1;
  p.nblocks = (p.s1 + p.rows_per - 1) / p.rows_per * p.pieces;
  const int64_t block_elems = p.s0 >= kBlock ? kBlock : p.s0 * std::min(p.rows_per, p.s1);
  // scratch offsets per internal temp, then per node operand
  std::vector<std::pair<int, int64_t>> off;
  for (int b : grp.internal) {
    ScalarType dt = g.bufs[b].dtype;  // the dtype the group writes it with
    for (int ni : grp.nodes)
      if (g.nodes[ni].out().buf == b) dt = g.nodes[ni].out().dtype;
    off.emplace_back(b, p.scratch_bytes);
    p.scratch_bytes += (block_elems * static_cast<int64_t>(element_size(dt)) + 63) / 64 * 64;
  }
  for (int ni : grp.nodes) {
    const Node& n = g.nodes[ni];
    std::array<int64_t, TensorIter::kMaxOperands> so;
    so.fill(-1);
    for (int k = 0; k < n.noperands; ++k)
      for (const auto& [b, o] : off)
        if (n.ops[k].buf == b) so[k] = o;
    p.scratch.push_back(so);
  }
  p.grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, block_elems));
  return p;
}

namespace {
/// Points `it` at node n's block: rows [r0, r0 + nr) of the group's space,
/// elements [c0, c0 + len) of each row (a one-dim group: elements
/// r0 * len + c0 on). scratch_of(k) is operand k's block in scratch (dense
/// rows of len elements) or null for memory. A linear node runs over the
/// block's elements in memory order.
template <class ScratchOf>
void narrow_to_block(TensorIter& it, const Node& n, int ndim, char* const* base, int64_t r0, int64_t nr, int64_t c0,
                     int64_t len, const ScratchOf& scratch_of) {
  const bool lin = ndim <= 1 || n.linear;
  it.noperands = n.noperands;
  it.compute_dtype = n.compute_dtype;
  it.ndim = (!lin && nr > 1) ? 2 : 1;
  it.shape[0] = lin ? len * nr : len;
  it.shape[1] = nr;
  it.numel = len * nr;
  for (int k = 0; k < n.noperands; ++k) {
    const Operand& o = n.ops[k];
    it.dtypes[k] = o.dtype;
    if (o.is_const()) {
      std::memcpy(it.scalar_buf[k], o.scalar, sizeof(o.scalar));
      it.data[k] = it.scalar_buf[k];
      it.strides[k][0] = o.strides[0];  // 0 but over one element (as recorded)
      it.strides[k][1] = ndim >= 2 ? o.strides[1] : 0;
    } else if (char* p = scratch_of(k)) {
      const int64_t es = static_cast<int64_t>(element_size(o.dtype));
      it.data[k] = p;
      it.strides[k][0] = es;
      it.strides[k][1] = es * len;
    } else if (ndim >= 2) {
      it.data[k] = base[o.buf] + o.offset + r0 * o.strides[1] + c0 * o.strides[0];
      it.strides[k][0] = o.strides[0];
      it.strides[k][1] = o.strides[1];
    } else {
      it.data[k] = base[o.buf] + o.offset + (r0 * len + c0) * o.strides[0];
      it.strides[k][0] = o.strides[0];
      it.strides[k][1] = 0;
    }
  }
}
}  // namespace

void Executable::run_fused(int gi, char* const* base) const {
  const Group& grp = g_.groups[gi];
  const FusedPlan& fp = fused_plans_[gi];
  const int ndim = g_.nodes[grp.nodes.front()].ndim;
  const int64_t s0 = fp.s0, s1 = fp.s1, rows_per = fp.rows_per, pieces = fp.pieces, scratch_bytes = fp.scratch_bytes;
  const int64_t nblocks = fp.nblocks, grain = fp.grain;
  parallel_for(0, nblocks, grain, [&](int64_t bb, int64_t be) {
    // per-thread scratch, kept between calls (grow-only, not initialised)
    thread_local std::unique_ptr<char[]> t_scratch;
    thread_local int64_t t_scratch_bytes = 0;
    if (t_scratch_bytes < scratch_bytes + 64) {
      t_scratch.reset(new char[static_cast<size_t>(scratch_bytes) + 64]);
      t_scratch_bytes = scratch_bytes + 64;
    }
    char* scratch = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(t_scratch.get()) + 63) / 64 * 64);
    TensorIter it;
    for (int64_t blk = bb; blk < be; ++blk) {
      const int64_t rb = blk / pieces, piece = blk % pieces;
      const int64_t r0 = rb * rows_per, nr = std::min(rows_per, s1 - r0);
      const int64_t c0 = piece * kBlock, len = s0 >= kBlock ? std::min(kBlock, s0 - c0) : s0;
      for (size_t q = 0; q < grp.nodes.size(); ++q) {
        const Node& n = g_.nodes[grp.nodes[q]];
        const auto& so = fp.scratch[q];
        narrow_to_block(it, n, ndim, base, r0, nr, c0, len,
                        [&](int k) { return so[k] >= 0 ? scratch + so[k] : static_cast<char*>(nullptr); });
        auto fn = reinterpret_cast<ElementwiseFn>(detail::g_kernel_table[static_cast<int>(n.slot)][0]);
        fn(it, n.args);
      }
    }
  });
}

// Note [Row fusion] (plan()): blocks of whole rows; per block, the
// elementwise calls (generated code, or the eager kernels narrowed to the
// block as in run_fused) write the staged input into scratch, then the row
// op runs those rows.
constexpr int64_t kRowBlock = 32768;

void Executable::run_row_group(int gi, const Bound& bound) const {
  const Group& grp = g_.groups[gi];
  const Node& rn = g_.nodes[grp.row_node];
  const int64_t R = rn.row_count, N = rn.row_cols;
  const int x = grp.staged;
  const ScalarType xdt = rn.row_in_dtype;
  const int64_t xes = static_cast<int64_t>(element_size(xdt));
  const Node& first = g_.nodes[grp.nodes.front()];
  const int ndim = first.ndim;
  bool has_linear = ndim == 1;
  for (int ni : grp.nodes)
    if (ni != grp.row_node) has_linear |= g_.nodes[ni].linear;
  // Blocks of about kRowBlock elements: staged rows stay in the L2 cache,
  // and the per-block cost (the row op's views, a kernel call: about a
  // microsecond) stays small (kBlock-sized blocks made layer_norm(x + r) on
  // 1024 x 768 slower than eager).
  int64_t rows_per = std::max<int64_t>(1, kRowBlock / N);
  if (has_linear) {  // blocks start at multiples of 64 elements (the vectors eager formed)
    const int64_t m = 64 / std::gcd<int64_t>(N, 64);
    rows_per = (rows_per + m - 1) / m * m;
  }
  rows_per = std::min(rows_per, R);
  const int64_t nblocks = (R + rows_per - 1) / rows_per;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, rows_per * N));
  const CpuKernelFn fn = kernels_.fns[gi];
  // interpreter scratch: the internal temps, rows_per * N elements each
  std::vector<std::pair<int, int64_t>> off;
  int64_t scratch_bytes = 0;
  if (!fn)
    for (int b : grp.internal) {
      ScalarType dt = g_.bufs[b].dtype;
      for (int ni : grp.nodes)
        if (ni != grp.row_node && g_.nodes[ni].out().buf == b) dt = g_.nodes[ni].out().dtype;
      off.emplace_back(b, scratch_bytes);
      scratch_bytes += (rows_per * N * static_cast<int64_t>(element_size(dt)) + 63) / 64 * 64;
    }
  parallel_for(0, nblocks, grain, [&](int64_t bb, int64_t be) {
    Tensor xs = detail::make_tensor({rows_per * N}, {}, xdt, kCPU);
    char* xp = static_cast<char*>(xs.impl()->storage->data);
    Tensor scratch_t = scratch_bytes ? detail::make_tensor({scratch_bytes + 64}, {}, kUInt8, kCPU) : Tensor();
    char* scratch = scratch_bytes ? reinterpret_cast<char*>(
                                        (reinterpret_cast<uintptr_t>(scratch_t.impl()->storage->data) + 63) / 64 * 64)
                                  : nullptr;
    std::vector<char*> ptrs;
    TensorIter it;
    for (int64_t blk = bb; blk < be; ++blk) {
      const int64_t r0 = blk * rows_per, nr = std::min(rows_per, R - r0);
      if (fn) {
        const CpuKernel& k = kernels_.code[gi].kernel;
        ptrs.clear();
        for (const CpuKernelArg& a : k.args)
          // x's element (r, c) at xp + ((r - r0) * N + c) * xes
          ptrs.push_back(a.buf == x ? xp - r0 * N * xes + (a.offset - rn.row_in_offset) : bound.base[a.buf] + a.offset);
        fn(ptrs.data(), k.strides.data(), k.shape.data(), r0 * N, (r0 + nr) * N);
      } else {
        for (int ni : grp.nodes) {
          if (ni == grp.row_node) continue;
          const Node& n = g_.nodes[ni];
          narrow_to_block(it, n, ndim, bound.base, r0, nr, 0, N, [&](int k) -> char* {
            const int b = n.ops[k].buf;
            if (b == x) return xp;
            for (const auto& [ib, ob] : off)
              if (b == ib) return scratch + ob;
            return nullptr;
          });
          auto kfn = reinterpret_cast<ElementwiseFn>(detail::g_kernel_table[static_cast<int>(n.slot)][0]);
          kfn(it, n.args);
        }
      }
      rn.run_rows(bound, r0, nr, detail::make_view(xs, {nr, N}, {N, 1}, 0));
    }
  });
}

void Executable::run_group(int gi, const Bound& bound) const {
  const Group& grp = g_.groups[gi];
  char* const* base = bound.base;
  auto ev = profiler::detail::ScopedEvent::lazy(profiler::EventKind::UserScope, [&] { return group_names_[gi]; });
  if (grp.nodes.size() == 1 && g_.nodes[grp.nodes[0]].opaque())
    g_.nodes[grp.nodes[0]].run(bound);
  else if (!cuda_kernels_.empty() && cuda_kernels_[gi].fn)
    run_cuda_kernel(cuda_kernels_[gi], base);
  else if (g_.device.is_cuda())
    for (int ni : grp.nodes) run_node(g_.nodes[ni], base);
  else if (grp.row_node >= 0)
    run_row_group(gi, bound);
  else if (kernels_.fns[gi] && gi < static_cast<int>(kernels_.variants.size()) && kernels_.variants[gi].size() > 1) {
    int c = chosen_[gi].load(std::memory_order_acquire);
    if (c < 0) c = tune(gi, bound);
    run_cpu_kernel(kernels_.variants[gi][c], kernels_.variant_fns[gi][c], base);
  } else if (kernels_.fns[gi])
    run_cpu_kernel(kernels_.code[gi].kernel, kernels_.fns[gi], base);
  else if (grp.fused() && opts_.fuse)
    run_fused(gi, base);
  else
    for (int ni : grp.nodes) run_node(g_.nodes[ni], base);
}

// Note [Autotuning block sizes]
// CompileMode::MaxAutotune builds each generated kernel in every block size
// (256, 512, 1024, 2048 elements; Note [Generated CPU kernels]): which is
// fastest depends on the kernel's working set and the machine's caches
// (the gelu chain is 1.5x faster at 1024 than at 256, a plain-op Adam
// update 1.5x slower at 512). The first run of a group times each variant
// once (a warm-up run, then the best of two) on private copies of the
// buffers it touches, so in-place updates are not applied more than once,
// and keeps the fastest for the graph's life. Only kernels over at least
// kAutotuneMinBytes (4 MiB) are timed: a smaller one runs from the cache
// when timed alone, unlike in the graph (see tune()). Every variant computes the
// same values (blocks never change which vectors an element falls in), so
// tuning changes only the time.
constexpr int64_t kAutotuneMinBytes = int64_t(4) << 20;

int Executable::tune(int gi, const Bound& bound) const {
  std::lock_guard<std::mutex> lock(tune_mu_);
  int c = chosen_[gi].load(std::memory_order_relaxed);
  if (c >= 0) return c;
  auto ev = profiler::detail::ScopedEvent::lazy(profiler::EventKind::UserScope,
                                                [&] { return "compile.autotune(" + group_names_[gi] + ")"; });
  const std::vector<CpuKernel>& vs = kernels_.variants[gi];
  // A kernel whose data fits in the L2 cache, timed alone on its copies,
  // runs from the cache, but between the other kernels of the graph it
  // streams from memory: such timings picked the wrong block for the
  // plain-op Adam's 10k-element updates (0.0065 against 0.0073 ms alone,
  // 1.3x slower in the loop). Small kernels keep the generator's choice.
  int64_t touched = 0;
  for (const CpuKernelArg& a : vs[0].args) touched += vs[0].numel * static_cast<int64_t>(element_size(a.dtype));
  if (touched < kAutotuneMinBytes) {
    // the default kernel itself where it is a variant (its block 256), else
    // the variant of its block
    int keep = 0;
    for (size_t v = 0; v < vs.size(); ++v)
      if (vs[v].block == kernels_.code[gi].kernel.block) keep = static_cast<int>(v);
    for (size_t v = 0; v < vs.size(); ++v)
      if (vs[v].name == kernels_.code[gi].kernel.name) keep = static_cast<int>(v);
    tune_notes_[gi] = "g" + std::to_string(gi) + ": block " + std::to_string(vs[keep].block) + " (" +
                      std::to_string(touched >> 10) + " KiB of data: too small to time alone)";
    chosen_[gi].store(keep, std::memory_order_release);
    return keep;
  }
  std::vector<char*> base(bound.base, bound.base + g_.bufs.size());
  std::vector<Tensor> copies;
  for (const CpuKernelArg& a : vs[0].args) {
    if (base[a.buf] != bound.base[a.buf]) continue;  // copied already
    const Tensor& owner = bound.owners[a.buf];
    const int64_t nbytes = static_cast<int64_t>(owner.impl()->storage->nbytes);
    Tensor copy = empty({nbytes}, TensorOptions().dtype(kUInt8));
    if (nbytes) std::memcpy(copy.data_ptr(), bound.base[a.buf], static_cast<size_t>(nbytes));
    base[a.buf] = static_cast<char*>(copy.data_ptr());
    copies.push_back(std::move(copy));
  }
  std::string note = "g" + std::to_string(gi) + ":";
  double best = 0;
  int best_v = 0;
  for (size_t v = 0; v < vs.size(); ++v) {
    double t = 0;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      run_cpu_kernel(vs[v], kernels_.variant_fns[gi][v], base.data());
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (rep == 1 || (rep == 2 && dt < t)) t = dt;
    }
    if (v == 0 || t < best) {
      best = t;
      best_v = static_cast<int>(v);
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), " block %lld %.3g ms", static_cast<long long>(vs[v].block), t * 1e3);
    note += (v ? "," : "") + std::string(buf);
  }
  note += " (kept " + std::to_string(vs[best_v].block) + ")";
  tune_notes_[gi] = note;
  chosen_[gi].store(best_v, std::memory_order_release);
  return best_v;
}

std::string Executable::autotune_note() const {
  std::lock_guard<std::mutex> lock(tune_mu_);
  std::string all;
  for (const std::string& n : tune_notes_)
    if (!n.empty()) all += (all.empty() ? "" : "; ") + n;
  return all;
}

std::unique_ptr<RunState> Executable::bind(const std::vector<Tensor>& inputs) const {
  const size_t nb = g_.bufs.size();
  auto st = std::make_unique<RunState>();
  st->inputs = inputs;
  st->base.assign(nb, nullptr);
  st->temps.resize(nb);
  st->owners.resize(nb);
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& bf = g_.bufs[b];
    if (bf.kind == BufKind::Input) {
      if (bf.input >= static_cast<int>(inputs.size())) continue;  // bound later (bind_input)
      st->owners[b] = inputs[bf.input];
      st->base[b] = static_cast<char*>(inputs[bf.input].impl()->storage->data);
    } else if (bf.kind == BufKind::External) {
      st->owners[b] = bf.tensor;
      st->base[b] = static_cast<char*>(bf.tensor.impl()->storage->data);
    }
  }
  return st;
}

void Executable::bind_input(RunState& st, int index, const Tensor& t) const {
  if (static_cast<int>(st.inputs.size()) <= index) st.inputs.resize(index + 1);
  st.inputs[index] = t;
  for (size_t b = 0; b < g_.bufs.size(); ++b) {
    const Buffer& bf = g_.bufs[b];
    if (bf.kind == BufKind::Input && bf.input == index) {
      st.owners[b] = t;
      st.base[b] = static_cast<char*>(t.impl()->storage->data);
    }
  }
}

std::string Executable::batch_note() const {
  std::string s;
  for (size_t gi = 0; gi < batch_end_.size(); ++gi)
    if (batch_end_[gi] > static_cast<int>(gi) + 1)
      s += (s.empty() ? "batches (run in parallel when there are threads):" : ",") + std::string(" groups ") +
           std::to_string(gi) + "-" + std::to_string(batch_end_[gi] - 1);
  return s.empty() ? s : s + "\n";
}

void Executable::run_groups(RunState& st, int g0, int g1) const {
  const Bound bound{st.owners, st.base.data()};
  // Memory planning: a temp gets memory just before the first group that
  // touches it and goes back to the cache after the last one (so the
  // caching allocator hands the same blocks to later temps).
  auto allocate = [&](int gi) {
    for (int b : alloc_before_[gi]) {
      const Buffer& bf = g_.bufs[b];
      const int64_t es = static_cast<int64_t>(element_size(bf.dtype));
      st.temps[b] = detail::make_tensor({(bf.nbytes + es - 1) / es}, {}, bf.dtype, g_.device);
      st.owners[b] = st.temps[b];
      st.base[b] = static_cast<char*>(st.temps[b].impl()->storage->data);
    }
  };
  auto release = [&](int gi) {
    for (int b : release_after_[gi]) {
      st.temps[b] = Tensor();
      st.owners[b] = Tensor();
    }
  };
  for (int gi = g0; gi < g1; ++gi) {
    const int ge = std::min(batch_end_[gi], g1);
    if (ge > gi + 1 && get_num_threads() > 1) {  // Note [Batches of small groups]
      for (int gb = gi; gb < ge; ++gb) allocate(gb);
      parallel_for(gi, ge, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t gb = b0; gb < b1; ++gb) run_group(static_cast<int>(gb), bound);
      });
      for (int gb = gi; gb < ge; ++gb) release(gb);
      gi = ge - 1;
      continue;
    }
    allocate(gi);
    run_group(gi, bound);
    release(gi);
  }
  for (const auto& [b, arg, gi] : written_args_) {
    if (gi < g0 || gi >= g1) continue;
    if (arg >= 0)
      st.inputs[arg].bump_version();
    else
      g_.bufs[b].tensor.bump_version();
  }
}

std::vector<Tensor> Executable::results(const RunState& st, int o0, int o1) const {
  std::vector<Tensor> out;
  out.reserve(o1 - o0);
  for (int i = o0; i < o1; ++i) {
    const OutputRef& r = g_.outputs[i];
    if (r.buf == kUndefinedOutput) {
      out.push_back(Tensor());
      continue;
    }
    if (r.buf < 0) {
      out.push_back(detail::make_tensor(r.sizes, r.strides, r.dtype, g_.device));
      continue;
    }
    const Buffer& bf = g_.bufs[r.buf];
    const Tensor& owner = st.owners[r.buf].defined() ? st.owners[r.buf] : st.temps[r.buf];
    const int64_t es = static_cast<int64_t>(element_size(r.dtype));
    Tensor v = detail::make_view(owner, r.sizes, r.strides, r.offset / es);
    out.push_back(bf.made_in_trace && bf.kind == BufKind::External ? v.clone() : v);
  }
  return out;
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) const {
  auto st = bind(inputs);
  run_groups(*st, 0, static_cast<int>(g_.groups.size()));
  return results(*st, 0, static_cast<int>(g_.outputs.size()));
}

}  // namespace brisk::jit
