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

void append_event(std::string& out, const Event& e, const ProfileOptions& o) {
  out += "{\"ph\": \"X\", \"name\": ";
  json::append_quoted(out, e.name);
  out += ", \"cat\": \"";
  out += kind_name(e.kind);
  out += "\", \"pid\": 0, \"tid\": " + std::to_string(e.thread) + ", \"ts\": ";
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

}  // namespace

void export_chrome_trace(const ProfileResult& r, const std::string& path) {
  std::string out = "{\"traceEvents\": [\n";
  bool first = true;
  auto next = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (size_t t = 0; t < r.threads.size(); ++t) {
    next();
    out += "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": " + std::to_string(t) +
           ", \"args\": {\"name\": ";
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
  out += "}, \"threads\": [";
  for (size_t t = 0; t < r.threads.size(); ++t) {
    if (t) out += ", ";
    json::append_quoted(out, r.threads[t]);
  }
  out += "]}}\n";
  io::write_file_atomic(path, out, "export_chrome_trace");
}

}  // namespace brisk::profiler
