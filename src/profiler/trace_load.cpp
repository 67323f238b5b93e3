// load_chrome_trace: reads a trace written by export_chrome_trace back into a
// ProfileResult (the schema is in docs/design/profiler.md, "The Chrome trace").
// The file is untrusted input: anything malformed is a brisk::Error naming
// the file and the event, never a crash. Events the schema does not know
// (other phases, other counters, other metadata) are skipped, so a trace
// edited by another tool still loads.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "brisk/profiler.h"
#include "io/json.h"

namespace brisk::profiler {

namespace {

constexpr const char* kOp = "load_chrome_trace";
/// Thread ids index ProfileResult::threads, so they are kept small.
constexpr int64_t kMaxThreads = 1 << 16;

using Kind = json::Reader::Kind;

// Skips one value of any kind, without recursion (nesting depth is bounded
// only by the input's size).
void skip_value(json::Reader& rd) {
  std::vector<bool> open;  // true: an object
  std::string key;
  do {
    if (!open.empty()) {
      bool more = open.back() ? rd.next_key(&key) : rd.next_item();
      if (!more) {
        open.pop_back();
        continue;
      }
    }
    switch (rd.peek_kind()) {
      case Kind::Object:
        rd.begin_object();
        open.push_back(true);
        break;
      case Kind::Array:
        rd.begin_array();
        open.push_back(false);
        break;
      case Kind::String: rd.read_string(); break;
      case Kind::Number: rd.read_number(); break;
      case Kind::Bool: rd.read_bool(); break;
      case Kind::Null: rd.read_null(); break;
    }
  } while (!open.empty());
}

class TraceReader {
 public:
  TraceReader(std::string_view text, const std::string& path) : rd_(text, kOp, quoted(path)), path_(path) {}

  ProfileResult read();

 private:
  // What one entry of traceEvents said; which fields matter depends on "ph".
  struct Raw {
    std::string ph, name, cat;
    std::optional<int64_t> tid;
    std::optional<double> ts, dur;
    Event ev;  // args of a complete event
    bool has_start_ns = false, has_end_ns = false;
    std::optional<int64_t> allocated, reserved, time_ns, bytes;  // counter args
    std::optional<std::string> thread_name;                        // metadata args
    std::optional<std::string> flow_id;                            // "s"/"f": the id, as text
  };
  // One end of a flow arrow.
  struct FlowEnd {
    uint32_t tid = 0;
    int64_t ts_ns = 0;
  };

  static std::string quoted(const std::string& s) { return "'" + s + "'"; }
  [[noreturn]] void fail_event(const std::string& what) const {
    if (in_header_) BRISK_FAIL(kOp, quoted(path_), ": the \"brisk\" header: ", what);
    BRISK_FAIL(kOp, quoted(path_), ": event ", index_, ": ", what);
  }
  void expect(Kind k, const char* field) {
    Kind got = rd_.peek_kind();
    if (got != k) fail_event(std::string("'") + field + "' must be a " + json::kind_name(k) + ", not a " + json::kind_name(got));
  }
  int64_t read_int(const char* field);
  double read_double(const char* field);
  bool read_bool(const char* field) {
    expect(Kind::Bool, field);
    return rd_.read_bool();
  }
  std::string read_string(const char* field) {
    expect(Kind::String, field);
    return rd_.read_string();
  }
  void read_event(Raw& raw);
  void read_args(Raw& raw);
  void add_event(Raw& raw, ProfileResult& r);
  void read_brisk(ProfileResult& r, bool* has_duration);

  json::Reader rd_;
  std::string path_;
  size_t index_ = 0;        // of the event being read, for messages
  bool in_header_ = false;  // reading the "brisk" object
  std::vector<std::string> meta_names_;  // thread_name metadata by tid
  std::map<std::string, FlowEnd> flow_starts_, flow_ends_;  // by flow id
  void link_flows(ProfileResult& r, const std::vector<std::vector<int32_t>>& per_thread);
};

int64_t TraceReader::read_int(const char* field) {
  expect(Kind::Number, field);
  std::string lit = rd_.read_number();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(lit.data(), lit.data() + lit.size(), v);
  if (ec != std::errc() || end != lit.data() + lit.size())
    fail_event(std::string("'") + field + "' must be an integer in range, not " + lit);
  return v;
}

double TraceReader::read_double(const char* field) {
  expect(Kind::Number, field);
  std::string lit = rd_.read_number();
  double v = 0;
  auto [end, ec] = std::from_chars(lit.data(), lit.data() + lit.size(), v);
  if (ec != std::errc() || end != lit.data() + lit.size() || !std::isfinite(v))
    fail_event(std::string("'") + field + "' is not a finite number: " + lit);
  return v;
}

void TraceReader::read_args(Raw& raw) {
  expect(Kind::Object, "args");
  rd_.begin_object();
  std::string key;
  Event& e = raw.ev;
  while (rd_.next_key(&key)) {
    if (key == "Input Dims") {
      expect(Kind::Array, "Input Dims");
      rd_.begin_array();
      while (rd_.next_item()) {
        expect(Kind::Array, "Input Dims");
        rd_.begin_array();
        std::vector<int64_t> dims;
        while (rd_.next_item()) {
          int64_t d = read_int("Input Dims");
          if (d < 0) fail_event("negative size in 'Input Dims'");
          dims.push_back(d);
        }
        e.shapes.push_back(std::move(dims));
      }
    } else if (key == "Input type") {
      expect(Kind::Array, "Input type");
      rd_.begin_array();
      while (rd_.next_item()) e.dtypes.push_back(read_string("Input type"));
    } else if (key == "self_alloc_bytes") {
      e.self_alloc_bytes = read_int("self_alloc_bytes");
    } else if (key == "self_free_bytes") {
      e.self_free_bytes = read_int("self_free_bytes");
    } else if (key == "self_allocs") {
      e.self_allocs = read_int("self_allocs");
    } else if (key == "self_cache_misses") {
      e.self_cache_misses = read_int("self_cache_misses");
    } else if (key == "recorded_graph") {
      e.recorded_graph = read_bool("recorded_graph");
    } else if (key == "detail") {
      e.detail = read_string("detail");
    } else if (key == "stack") {
      expect(Kind::Array, "stack");
      rd_.begin_array();
      while (rd_.next_item()) e.stack.push_back(read_string("stack"));
    } else if (key == "start_ns") {
      e.start_ns = read_int("start_ns");
      raw.has_start_ns = true;
    } else if (key == "end_ns") {
      e.end_ns = read_int("end_ns");
      raw.has_end_ns = true;
    } else if (key == "allocated") {
      raw.allocated = read_int("allocated");
    } else if (key == "reserved") {
      raw.reserved = read_int("reserved");
    } else if (key == "time_ns") {
      raw.time_ns = read_int("time_ns");
    } else if (key == "bytes") {
      raw.bytes = read_int("bytes");
    } else if (key == "name") {
      if (rd_.peek_kind() == Kind::String) raw.thread_name = rd_.read_string();
      else skip_value(rd_);
    } else if (key == "device") {
      int64_t d = read_int("device");
      if (d < -1 || d > INT32_MAX) fail_event("'device' out of range");
      e.device = static_cast<int32_t>(d);
    } else if (key == "stream") {
      e.stream = read_int("stream");
    } else if (key == "correlation") {
      int64_t c = read_int("correlation");
      if (c < 0) fail_event("negative 'correlation'");
      e.correlation_id = static_cast<uint64_t>(c);
    } else {
      skip_value(rd_);
    }
  }
}

void TraceReader::read_event(Raw& raw) {
  expect(Kind::Object, "traceEvents[]");
  rd_.begin_object();
  std::string key;
  while (rd_.next_key(&key)) {
    if (key == "ph") raw.ph = read_string("ph");
    else if (key == "name") raw.name = read_string("name");
    else if (key == "cat") raw.cat = read_string("cat");
    else if (key == "tid") raw.tid = read_int("tid");
    else if (key == "ts") raw.ts = read_double("ts");
    else if (key == "dur") raw.dur = read_double("dur");
    else if (key == "args") read_args(raw);
    else if (key == "id" && rd_.peek_kind() == Kind::Number) raw.flow_id = rd_.read_number();
    else if (key == "id" && rd_.peek_kind() == Kind::String) raw.flow_id = rd_.read_string();
    else skip_value(rd_);
  }
}

std::optional<EventKind> kind_from_name(const std::string& cat) {
  for (EventKind k : {EventKind::Op, EventKind::Backward, EventKind::UserScope, EventKind::OptimizerStep,
                      EventKind::DataLoaderWait, EventKind::Sync, EventKind::Copy, EventKind::Kernel,
                      EventKind::Memcpy, EventKind::Memset})
    if (cat == kind_name(k)) return k;
  return std::nullopt;
}

// Microseconds (the "ts"/"dur" fields) to nanoseconds, range-checked.
std::optional<int64_t> us_to_ns(double us) {
  double ns = std::round(us * 1000.0);
  if (!(std::fabs(ns) < 9.0e18)) return std::nullopt;
  return static_cast<int64_t>(ns);
}

void TraceReader::add_event(Raw& raw, ProfileResult& r) {
  if (raw.ph.empty()) fail_event("no 'ph' (phase)");
  const bool flow = raw.ph == "s" || raw.ph == "f";
  if (raw.ph != "X" && raw.ph != "C" && raw.ph != "M" && !flow) return;  // other phases: not brisk's
  if (flow && !raw.flow_id) return;  // a flow without an id cannot be matched
  if (!raw.tid) fail_event("no 'tid'");
  if (*raw.tid < 0 || *raw.tid >= kMaxThreads)
    fail_event("thread id " + std::to_string(*raw.tid) + " is outside [0, " + std::to_string(kMaxThreads) + ")");
  const auto tid = static_cast<uint32_t>(*raw.tid);

  if (flow) {
    if (!raw.ts) fail_event("a flow event without 'ts'");
    auto t = us_to_ns(*raw.ts);
    if (!t) fail_event("'ts' out of range");
    (raw.ph == "s" ? flow_starts_ : flow_ends_)[*raw.flow_id] = FlowEnd{tid, *t};
    return;
  }

  if (raw.ph == "M") {
    if (raw.name == "thread_name" && raw.thread_name) {
      if (meta_names_.size() <= tid) meta_names_.resize(tid + 1);
      meta_names_[tid] = *raw.thread_name;
    }
    return;
  }
  if (raw.ph == "C") {
    if (raw.name != "Memory") return;
    MemorySample m;
    if (raw.time_ns) {
      m.time_ns = *raw.time_ns;
    } else {
      if (!raw.ts) fail_event("a memory counter without 'ts'");
      auto t = us_to_ns(*raw.ts);
      if (!t) fail_event("'ts' out of range");
      m.time_ns = *t;
    }
    if (!raw.allocated) fail_event("a memory counter without 'allocated'");
    m.allocated = *raw.allocated;
    m.reserved = raw.reserved.value_or(0);
    m.bytes = raw.bytes.value_or(0);
    m.thread = tid;
    r.memory.push_back(m);
    return;
  }
  // A complete event.
  Event& e = raw.ev;
  if (raw.name.empty()) fail_event("an event without a name");
  auto kind = kind_from_name(raw.cat);
  if (!kind) fail_event("unknown category '" + raw.cat + "' (expected op, backward, user_scope, ...)");
  e.kind = *kind;
  e.name = std::move(raw.name);
  e.thread = tid;
  if (!raw.has_start_ns) {
    if (!raw.ts) fail_event("no 'ts' and no 'start_ns'");
    auto t = us_to_ns(*raw.ts);
    if (!t) fail_event("'ts' out of range");
    e.start_ns = *t;
  }
  if (!raw.has_end_ns) {
    if (!raw.dur) fail_event("no 'dur' and no 'end_ns'");
    auto d = us_to_ns(*raw.dur);
    if (!d || *d < 0 || e.start_ns > INT64_MAX - *d) fail_event("'dur' out of range");
    e.end_ns = e.start_ns + *d;
  }
  if (e.end_ns < e.start_ns) fail_event("ends before it starts");
  if (!e.dtypes.empty() && !e.shapes.empty() && e.dtypes.size() != e.shapes.size())
    fail_event("'Input Dims' and 'Input type' have different lengths");
  if (e.is_gpu()) {
    e.bytes = raw.bytes.value_or(0);
  } else {
    e.device = -1;  // device/stream describe GPU events only
    e.stream = -1;
  }
  r.events.push_back(std::move(e));
}

void TraceReader::read_brisk(ProfileResult& r, bool* has_duration) {
  in_header_ = true;
  expect(Kind::Object, "brisk");
  rd_.begin_object();
  std::string key;
  while (rd_.next_key(&key)) {
    if (key == "version") {
      int64_t v = read_int("version");
      BRISK_CHECK(v == 1, kOp, quoted(path_), ": trace format version ", v, " is not supported (this brisk reads 1)");
    } else if (key == "duration_ns") {
      r.duration_ns = read_int("duration_ns");
      BRISK_CHECK(r.duration_ns >= 0, kOp, quoted(path_), ": negative duration_ns");
      *has_duration = true;
    } else if (key == "options") {
      expect(Kind::Object, "options");
      rd_.begin_object();
      std::string opt;
      while (rd_.next_key(&opt)) {
        if (opt == "record_shapes") r.options.record_shapes(read_bool("record_shapes"));
        else if (opt == "profile_memory") r.options.profile_memory(read_bool("profile_memory"));
        else if (opt == "with_stack") r.options.with_stack(read_bool("with_stack"));
        else if (opt == "activities") {
          expect(Kind::Array, "activities");
          rd_.begin_array();
          std::vector<Activity> acts;
          while (rd_.next_item()) {
            std::string a = read_string("activities");
            if (a == "cpu") acts.push_back(Activity::CPU);
            else if (a == "cuda") acts.push_back(Activity::CUDA);
            else fail_event("unknown activity '" + a + "' (expected cpu or cuda)");
          }
          r.options.activities(acts);
        } else skip_value(rd_);
      }
    } else if (key == "threads") {
      expect(Kind::Array, "threads");
      rd_.begin_array();
      while (rd_.next_item()) {
        BRISK_CHECK(static_cast<int64_t>(r.threads.size()) < kMaxThreads, kOp, quoted(path_), ": more than ",
                    kMaxThreads, " threads");
        r.threads.push_back(read_string("threads"));
      }
    } else if (key == "warnings") {
      expect(Kind::Array, "warnings");
      rd_.begin_array();
      while (rd_.next_item()) r.warnings.push_back(read_string("warnings"));
    } else {
      skip_value(rd_);
    }
  }
  in_header_ = false;
}

ProfileResult TraceReader::read() {
  ProfileResult r;
  bool has_events = false, has_duration = false;
  if (rd_.peek_kind() != Kind::Object) rd_.fail("a trace is a JSON object");
  rd_.begin_object();
  std::string key;
  while (rd_.next_key(&key)) {
    if (key == "traceEvents") {
      has_events = true;
      if (rd_.peek_kind() != Kind::Array) rd_.fail("'traceEvents' must be an array");
      rd_.begin_array();
      for (index_ = 0; rd_.next_item(); ++index_) {
        Raw raw;
        read_event(raw);
        add_event(raw, r);
      }
    } else if (key == "brisk") {
      read_brisk(r, &has_duration);
    } else {
      skip_value(rd_);
    }
  }
  rd_.finish();
  BRISK_CHECK(has_events, kOp, quoted(path_), ": no 'traceEvents' array: not a Chrome trace");

  // Thread names: the brisk header's list, then the metadata events, then a
  // made-up name for a thread neither names.
  size_t nthreads = std::max(r.threads.size(), meta_names_.size());
  for (const Event& e : r.events) nthreads = std::max<size_t>(nthreads, e.thread + 1);
  for (const MemorySample& m : r.memory) nthreads = std::max<size_t>(nthreads, m.thread + 1);
  r.threads.resize(nthreads);
  for (size_t t = 0; t < nthreads; ++t) {
    if (!r.threads[t].empty()) continue;
    r.threads[t] = t < meta_names_.size() && !meta_names_[t].empty() ? meta_names_[t] : "thread " + std::to_string(t);
  }
  if (!has_duration)
    for (const Event& e : r.events) r.duration_ns = std::max(r.duration_ns, e.end_ns);

  // Events by start time (file order among equal starts; the exporter
  // writes them in that order already), then the nesting on each thread: an
  // event's parent is the innermost one enclosing it.
  auto by_start = [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; };
  if (!std::is_sorted(r.events.begin(), r.events.end(), by_start))
    std::stable_sort(r.events.begin(), r.events.end(), by_start);
  std::vector<std::vector<int32_t>> per_thread(r.threads.size());
  for (size_t i = 0; i < r.events.size(); ++i) per_thread[r.events[i].thread].push_back(static_cast<int32_t>(i));
  std::vector<int32_t> open;
  for (std::vector<int32_t>& order : per_thread) {
    // At equal starts the enclosing (longer) event comes first.
    auto encloser_first = [&](int32_t a, int32_t b) {
      const Event &x = r.events[a], &y = r.events[b];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      return x.end_ns > y.end_ns;
    };
    if (!std::is_sorted(order.begin(), order.end(), encloser_first))
      std::stable_sort(order.begin(), order.end(), encloser_first);
    open.clear();
    for (int32_t i : order) {
      Event& e = r.events[i];
      while (!open.empty() && r.events[open.back()].end_ns < e.end_ns) open.pop_back();
      e.parent = open.empty() ? -1 : open.back();
      e.depth = static_cast<int32_t>(open.size());
      open.push_back(i);
    }
  }
  link_flows(r, per_thread);
  return r;
}

// Flow arrows back to links: the "f" end's GPU event (the one starting at its
// ts on its thread) was launched by the event the "s" end binds to (the
// innermost event enclosing its ts on its thread). Flows whose ends match
// nothing are ignored.
void TraceReader::link_flows(ProfileResult& r, const std::vector<std::vector<int32_t>>& per_thread) {
  if (flow_ends_.empty()) return;
  // per_thread[t]: indices by start, enclosing events first at equal starts.
  auto last_starting_by = [&](uint32_t t, int64_t ts) -> int32_t {
    if (t >= per_thread.size()) return -1;
    const std::vector<int32_t>& v = per_thread[t];
    auto it = std::upper_bound(v.begin(), v.end(), ts, [&](int64_t x, int32_t i) { return x < r.events[i].start_ns; });
    return it == v.begin() ? -1 : *(it - 1);
  };
  for (const auto& [id, f] : flow_ends_) {
    auto s = flow_starts_.find(id);
    if (s == flow_starts_.end()) continue;
    // The GPU event: starts at f's ts (the innermost of those that do).
    int32_t g = last_starting_by(f.tid, f.ts_ns);
    if (g < 0 || r.events[g].start_ns != f.ts_ns || !r.events[g].is_gpu()) continue;
    // The launching event: the innermost enclosing s's ts. It is the last
    // event starting by then or one of its ancestors (events nest).
    int32_t op = last_starting_by(s->second.tid, s->second.ts_ns);
    size_t steps = 0;
    while (op >= 0 && r.events[op].end_ns < s->second.ts_ns && steps++ < r.events.size()) op = r.events[op].parent;
    if (op < 0 || r.events[op].is_gpu()) continue;
    r.events[g].correlated_op = op;
  }
}

}  // namespace

ProfileResult load_chrome_trace(const std::string& path) {
  struct stat st;
  BRISK_CHECK(::stat(path.c_str(), &st) == 0, kOp, "cannot open '", path, "': ", std::strerror(errno));
  BRISK_CHECK(!S_ISDIR(st.st_mode), kOp, "'", path, "' is a directory, not a trace");
  std::ifstream in(path, std::ios::binary);
  BRISK_CHECK(in.good(), kOp, "cannot open '", path, "'");
  std::string text;
  if (S_ISREG(st.st_mode)) {
    // One read into a string of the file's size (traces run to hundreds of MB).
    text.resize(static_cast<size_t>(st.st_size));
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  } else {
    // A pipe or a device: read to the end.
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
  }
  BRISK_CHECK(!in.bad(), kOp, "reading '", path, "' failed");
  return TraceReader(text, path).read();
}

}  // namespace brisk::profiler
