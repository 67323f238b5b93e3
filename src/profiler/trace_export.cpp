// export_chrome_trace: Chrome trace-event JSON (Perfetto, chrome://tracing).
// The schema is documented in docs/design/profiler.md (load_chrome_trace
// reads it back).
#include <algorithm>
#include <string>

#include "brisk/profiler.h"
#include "io/atomic_write.h"
#include "io/json.h"

namespace brisk::profiler {

namespace {

// ns as microseconds with exactly 3 decimals ("12.345"), without rounding.
void append_us(std::string& out, int64_t ns) {
  if (ns < 0) {
    out += '-';
    ns = -ns;
  }
  out += std::to_string(ns / 1000);
  const int64_t frac = ns % 1000;
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
}

void append_bool(std::string& out, bool v) { out += v ? "true" : "false"; }

// The process of a track: 0 for the host's threads, 1 + device for a GPU's
// streams (Perfetto groups a process's threads).
int64_t pid_of(const Event& e) { return e.is_gpu() && e.device >= 0 ? int64_t(e.device) + 1 : 0; }

void append_event(std::string& out, const Event& e, const ProfileOptions& o) {
  out += "{\"ph\": \"X\", \"name\": ";
  json::append_quoted(out, e.name);
  out += ", \"cat\": \"";
  out += kind_name(e.kind);
  out += "\", \"pid\": " + std::to_string(pid_of(e)) + ", \"tid\": " + std::to_string(e.thread) + ", \"ts\": ";
  append_us(out, e.start_ns);
  out += ", \"dur\": ";
  append_us(out, e.duration_ns());
  out += ", \"args\": {";
  if (o.record_shapes() && !e.shapes.empty()) {
    out += "\"Input Dims\": [";
    for (size_t i = 0; i < e.shapes.size(); ++i) {
      if (i) out += ", ";
      out += '[';
      for (size_t d = 0; d < e.shapes[i].size(); ++d) {
        if (d) out += ", ";
        out += std::to_string(e.shapes[i][d]);
      }
      out += ']';
    }
    out += "], \"Input type\": [";
    for (size_t i = 0; i < e.dtypes.size(); ++i) {
      if (i) out += ", ";
      json::append_quoted(out, e.dtypes[i]);
    }
    out += "], ";
  }
  if (o.profile_memory()) {
    out += "\"self_alloc_bytes\": " + std::to_string(e.self_alloc_bytes) +
           ", \"self_free_bytes\": " + std::to_string(e.self_free_bytes) +
           ", \"self_allocs\": " + std::to_string(e.self_allocs) +
           ", \"self_cache_misses\": " + std::to_string(e.self_cache_misses) + ", ";
  }
  if (e.is_gpu()) {
    out += "\"device\": " + std::to_string(e.device) + ", \"stream\": " + std::to_string(e.stream) +
           ", \"correlation\": " + std::to_string(e.correlation_id) + ", ";
    if (e.kind != EventKind::Kernel) out += "\"bytes\": " + std::to_string(e.bytes) + ", ";
  }
  out += "\"recorded_graph\": ";
  append_bool(out, e.recorded_graph);
  if (!e.detail.empty()) {
    out += ", \"detail\": ";
    json::append_quoted(out, e.detail);
  }
  if (o.with_stack() && !e.stack.empty()) {
    out += ", \"stack\": [";
    for (size_t i = 0; i < e.stack.size(); ++i) {
      if (i) out += ", ";
      json::append_quoted(out, e.stack[i]);
    }
    out += ']';
  }
  out += ", \"start_ns\": " + std::to_string(e.start_ns) + ", \"end_ns\": " + std::to_string(e.end_ns) + "}}";
}

void append_sample(std::string& out, const MemorySample& m) {
  out += "{\"ph\": \"C\", \"name\": \"Memory\", \"pid\": 0, \"tid\": " + std::to_string(m.thread) + ", \"ts\": ";
  append_us(out, m.time_ns);
  out += ", \"args\": {\"allocated\": " + std::to_string(m.allocated) + ", \"reserved\": " +
         std::to_string(m.reserved) + ", \"time_ns\": " + std::to_string(m.time_ns) +
         ", \"bytes\": " + std::to_string(m.bytes) + "}}";
}

// A flow arrow from the host event that launched a GPU event to it: "s" at
// the launching event's start on its thread (Perfetto binds it to the
// deepest slice there: the launching event, which starts after its parents
// and before its children), "f" at the GPU event's start with "bp": "e"
// (bound to the enclosing slice: the GPU event itself).
void append_flow(std::string& out, const Event& op, const Event& g, size_t id) {
  const std::string sid = std::to_string(id);
  out += "{\"ph\": \"s\", \"id\": " + sid + ", \"name\": \"launch\", \"cat\": \"flow\", \"pid\": " +
         std::to_string(pid_of(op)) + ", \"tid\": " + std::to_string(op.thread) + ", \"ts\": ";
  append_us(out, op.start_ns);
  out += "},\n{\"ph\": \"f\", \"bp\": \"e\", \"id\": " + sid +
         ", \"name\": \"launch\", \"cat\": \"flow\", \"pid\": " + std::to_string(pid_of(g)) +
         ", \"tid\": " + std::to_string(g.thread) + ", \"ts\": ";
  append_us(out, g.start_ns);
  out += "}";
}

}  // namespace

void export_chrome_trace(const ProfileResult& r, const std::string& path) {
  std::string out = "{\"traceEvents\": [\n";
  bool first = true;
  auto next = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  // The process of each thread: GPU tracks belong to their device's.
  std::vector<int64_t> thread_pid(r.threads.size(), 0);
  std::vector<int64_t> gpu_pids;
  for (const Event& e : r.events)
    if (e.is_gpu() && e.thread < thread_pid.size()) {
      thread_pid[e.thread] = pid_of(e);
      if (std::find(gpu_pids.begin(), gpu_pids.end(), pid_of(e)) == gpu_pids.end()) gpu_pids.push_back(pid_of(e));
    }
  std::sort(gpu_pids.begin(), gpu_pids.end());
  if (!gpu_pids.empty()) {
    auto process = [&](int64_t pid, const std::string& name) {
      next();
      out += "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + std::to_string(pid) +
             ", \"tid\": 0, \"args\": {\"name\": ";
      json::append_quoted(out, name);
      out += "}}";
      next();
      out += "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": " + std::to_string(pid) +
             ", \"tid\": 0, \"args\": {\"sort_index\": " + std::to_string(pid) + "}}";
    };
    process(0, "host");
    for (int64_t pid : gpu_pids) process(pid, "cuda:" + std::to_string(pid - 1));
  }
  for (size_t t = 0; t < r.threads.size(); ++t) {
    next();
    out += "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + std::to_string(thread_pid[t]) +
           ", \"tid\": " + std::to_string(t) + ", \"args\": {\"name\": ";
    json::append_quoted(out, r.threads[t]);
    out += "}}";
  }
  // Complete events and memory counters, merged in order of time.
  std::vector<size_t> order(r.events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return r.events[a].start_ns < r.events[b].start_ns; });
  size_t m = 0;
  for (size_t i : order) {
    const Event& e = r.events[i];
    for (; m < r.memory.size() && r.memory[m].time_ns < e.start_ns; ++m) {
      next();
      append_sample(out, r.memory[m]);
    }
    next();
    append_event(out, e, r.options);
    const int32_t op = e.correlated_op;
    if (e.is_gpu() && op >= 0 && static_cast<size_t>(op) < r.events.size() && !r.events[op].is_gpu()) {
      next();
      append_flow(out, r.events[static_cast<size_t>(op)], e, i + 1);
    }
  }
  for (; m < r.memory.size(); ++m) {
    next();
    append_sample(out, r.memory[m]);
  }
  out += "\n], \"displayTimeUnit\": \"ns\", \"brisk\": {\"version\": 1, \"duration_ns\": " +
         std::to_string(r.duration_ns) + ", \"options\": {\"record_shapes\": ";
  append_bool(out, r.options.record_shapes());
  out += ", \"profile_memory\": ";
  append_bool(out, r.options.profile_memory());
  out += ", \"with_stack\": ";
  append_bool(out, r.options.with_stack());
  out += ", \"activities\": [";
  for (size_t a = 0; a < r.options.activities().size(); ++a) {
    if (a) out += ", ";
    out += r.options.activities()[a] == Activity::CUDA ? "\"cuda\"" : "\"cpu\"";
  }
  out += "]}, \"threads\": [";
  for (size_t t = 0; t < r.threads.size(); ++t) {
    if (t) out += ", ";
    json::append_quoted(out, r.threads[t]);
  }
  out += "]";
  if (!r.warnings.empty()) {
    out += ", \"warnings\": [";
    for (size_t w = 0; w < r.warnings.size(); ++w) {
      if (w) out += ", ";
      json::append_quoted(out, r.warnings[w]);
    }
    out += "]";
  }
  out += "}}\n";
  io::write_file_atomic(path, out, "export_chrome_trace");
}

}  // namespace brisk::profiler
