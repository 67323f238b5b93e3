// The profiler's CUDA side (Activity::CUDA): GPU events (Kernel, Memcpy,
// Memset) on per-stream tracks linked to the ops that launched them, the
// CUDA columns of the table, flow arrows in the Chrome trace and their
// reading back, the CUPTI loader and its host-side helpers.
//
// Host tests (every machine, every build): the table and the trace are
// checked on hand-made profiles with GPU events; the clock map, the record
// names and the correlation ids on known values; a profile asking for
// Activity::CUDA where it cannot be recorded warns and records the host side.
// The loader tests need a build with the CUDA backend (they skip without
// one) but no GPU. The GPU tests (ProfilerCudaGpu.*) skip without a device.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "backend/cuda/cupti_activity.h"
#include "io/json.h"
#include "profiler/gpu_activity.h"
#include "test_util.h"

namespace brisk {
namespace {

namespace prof = brisk::profiler;
namespace cu = brisk::cuda::detail;
using prof::Activity;
using prof::Event;
using prof::EventKind;
using prof::ProfileOptions;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/brisk_profiler_cuda_" + std::to_string(::getpid()) + "_" + name;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// ---- a hand-made profile with GPU activity ------------------------------------------------

Event host(const std::string& name, int64_t start, int64_t end, int32_t parent = -1, int32_t depth = 0) {
  Event e;
  e.name = name;
  e.kind = EventKind::Op;
  e.start_ns = start;
  e.end_ns = end;
  e.thread = 0;
  e.parent = parent;
  e.depth = depth;
  return e;
}
Event gpu(EventKind kind, const std::string& name, int64_t start, int64_t end, uint32_t track, int32_t op,
          uint64_t correlation, int64_t bytes = 0) {
  Event e;
  e.name = name;
  e.kind = kind;
  e.start_ns = start;
  e.end_ns = end;
  e.thread = track;
  e.device = 0;
  e.stream = track == 1 ? 7 : 13;
  e.correlation_id = correlation;
  e.correlated_op = op;
  e.bytes = bytes;
  return e;
}

// matmul [0, 1000] encloses mm [100, 900], which launched gemm_kernel on
// stream 7; add [1100, 1500] launched add_kernel; copy_ [1600, 2600]
// launched a device-to-host copy on stream 13; a memset nobody launched
// (correlated_op -1). Events sorted by start.
prof::ProfileResult gpu_profile() {
  prof::ProfileResult r;
  r.threads = {"main", "cuda:0 stream 7", "cuda:0 stream 13"};
  r.duration_ns = 4000;
  r.options.activities({Activity::CPU, Activity::CUDA});
  r.events.push_back(host("matmul", 0, 1000));                                          // 0
  r.events.push_back(host("mm", 100, 900, 0, 1));                                       // 1
  r.events.push_back(gpu(EventKind::Kernel, "gemm_kernel", 950, 1950, 1, 1, 41));      // 2
  r.events.back().detail = "grid [8, 8, 1] block [256, 1, 1] registers 96 shared memory 49152";
  r.events.push_back(host("add", 1100, 1500));                                          // 3
  r.events.push_back(host("copy_", 1600, 2600));                                        // 4
  r.events.push_back(gpu(EventKind::Kernel, "add_kernel", 2000, 2300, 1, 3, 42));       // 5
  r.events.push_back(gpu(EventKind::Memcpy, "Memcpy DtoH (Device -> Pageable)", 2400, 2550, 2, 4, 43, 4096));  // 6
  r.events.push_back(gpu(EventKind::Memset, "Memset (Device)", 3000, 3050, 1, -1, 44, 512));  // 7
  return r;
}

const prof::KeyAverage* row(const prof::KeyAverages& ka, const std::string& name) {
  for (const prof::KeyAverage& k : ka.rows())
    if (k.name == name) return &k;
  return nullptr;
}

// The table's line for a row name (the name is right-aligned in its column).
std::string table_line(const std::string& table, const std::string& name) {
  std::istringstream in(table);
  std::string line;
  while (std::getline(in, line)) {
    const size_t p = line.find(name + "  ");
    if (p != std::string::npos && (p == 0 || line[p - 1] == ' ')) return line;
  }
  return "";
}
size_t line_index(const std::string& table, const std::string& name) {
  std::istringstream in(table);
  std::string line;
  for (size_t i = 0; std::getline(in, line); ++i)
    if (contains(line, " " + name + "  ")) return i;
  return std::string::npos;
}

TEST(ProfilerCudaTable, CudaTimeOfOpsKernelsAndTotals) {
  const prof::ProfileResult r = gpu_profile();
  const prof::KeyAverages ka = prof::key_averages(r);
  ASSERT_TRUE(ka.has_cuda());
  // Self CUDA: the kernels an op launched itself; total: with its descendants'.
  const prof::KeyAverage* matmul = row(ka, "matmul");
  const prof::KeyAverage* mm = row(ka, "mm");
  const prof::KeyAverage* add = row(ka, "add");
  const prof::KeyAverage* copy = row(ka, "copy_");
  ASSERT_TRUE(matmul && mm && add && copy);
  EXPECT_EQ(matmul->self_cuda_time_total_ns, 0);
  EXPECT_EQ(matmul->cuda_time_total_ns, 1000);
  EXPECT_EQ(mm->self_cuda_time_total_ns, 1000);
  EXPECT_EQ(mm->cuda_time_total_ns, 1000);
  EXPECT_EQ(add->self_cuda_time_total_ns, 300);
  EXPECT_EQ(add->cuda_time_total_ns, 300);
  EXPECT_EQ(copy->self_cuda_time_total_ns, 150);
  // Host times are untouched by GPU events.
  EXPECT_EQ(matmul->cpu_time_total_ns, 1000);
  EXPECT_EQ(matmul->self_cpu_time_total_ns, 200);
  EXPECT_EQ(mm->self_cpu_time_total_ns, 800);
  // GPU rows: their durations as (self) CUDA time, no CPU time.
  const prof::KeyAverage* gemm = row(ka, "gemm_kernel");
  const prof::KeyAverage* memset = row(ka, "Memset (Device)");
  ASSERT_TRUE(gemm && memset);
  EXPECT_EQ(gemm->count, 1);
  EXPECT_EQ(gemm->self_cuda_time_total_ns, 1000);
  EXPECT_EQ(gemm->cuda_time_total_ns, 1000);
  EXPECT_EQ(gemm->cpu_time_total_ns, 0);
  EXPECT_EQ(gemm->self_cpu_time_total_ns, 0);
  EXPECT_EQ(memset->self_cuda_time_total_ns, 50);

  const std::string t = ka.table("cpu_time_total", 0);
  for (const char* h : {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"}) EXPECT_TRUE(contains(t, h)) << t;
  // CPU total: host self times only (200 + 800 + 400 + 1000); CUDA total:
  // every GPU event (1000 + 300 + 150 + 50).
  EXPECT_TRUE(contains(t, "Self CPU time total: 2.400us")) << t;
  EXPECT_TRUE(contains(t, "Self CUDA time total: 1.500us")) << t;
  // mm: Self CPU %, Self CPU, CPU total %, CPU total, avg, Self CUDA, Self CUDA %, CUDA total, avg, calls.
  const std::string mm_line = table_line(t, "mm");
  std::istringstream cells(mm_line);
  std::vector<std::string> c;
  for (std::string w; cells >> w;) c.push_back(w);
  ASSERT_EQ(c.size(), 11u) << mm_line;
  EXPECT_EQ(c[1], "33.33%");
  EXPECT_EQ(c[2], "0.800us");
  EXPECT_EQ(c[6], "1.000us");
  EXPECT_EQ(c[7], "66.67%");
  EXPECT_EQ(c[8], "1.000us");
  EXPECT_EQ(c[9], "1.000us");
  EXPECT_EQ(c[10], "1");
  const std::string gemm_line = table_line(t, "gemm_kernel");
  EXPECT_TRUE(contains(gemm_line, "0.000us")) << gemm_line;
}

TEST(ProfilerCudaTable, SortsByCudaTime) {
  const prof::KeyAverages ka = prof::key_averages(gpu_profile());
  // cuda_time_total: matmul, mm, gemm_kernel (1000 each, first seen first), add, add_kernel (300), ...
  const std::string t = ka.table("cuda_time_total", 0);
  EXPECT_LT(line_index(t, "matmul"), line_index(t, "add"));
  EXPECT_LT(line_index(t, "gemm_kernel"), line_index(t, "add_kernel"));
  EXPECT_LT(line_index(t, "add_kernel"), line_index(t, "copy_"));
  EXPECT_LT(line_index(t, "copy_"), line_index(t, "Memset (Device)"));
  // self_cuda_time_total: matmul launched nothing itself, so it sorts last
  // among the rows with CUDA time.
  const std::string s = ka.table("self_cuda_time_total", 0);
  EXPECT_LT(line_index(s, "mm"), line_index(s, "add"));
  EXPECT_LT(line_index(s, "Memset (Device)"), line_index(s, "matmul"));
  // row_limit keeps the first rows of the order.
  const std::string top = ka.table("self_cuda_time_total", 2);
  EXPECT_NE(line_index(top, "mm"), std::string::npos);
  EXPECT_NE(line_index(top, "gemm_kernel"), std::string::npos);
  EXPECT_EQ(line_index(top, "add"), std::string::npos);
  EXPECT_NO_THROW((void)ka.table("cuda_time_avg"));
  EXPECT_NO_THROW((void)ka.table("device_time_total"));
  brisk::testing::expect_error([&] { (void)ka.table("cuda_memory_usage"); },
                               {"[table]", "cuda_memory_usage", "cuda_time_total", "self_cuda_time_total"});
}

TEST(ProfilerCudaTable, NoCudaColumnsWithoutGpuEvents) {
  prof::ProfileResult r = gpu_profile();
  r.events.erase(std::remove_if(r.events.begin(), r.events.end(), [](const Event& e) { return e.is_gpu(); }),
                 r.events.end());
  const prof::KeyAverages ka = prof::key_averages(r);
  EXPECT_FALSE(ka.has_cuda());
  const std::string t = ka.table();
  EXPECT_FALSE(contains(t, "CUDA")) << t;
  for (const prof::KeyAverage& k : ka.rows()) EXPECT_EQ(k.cuda_time_total_ns, 0);
}

TEST(ProfilerCudaTable, BadLinksAreIgnored) {
  prof::ProfileResult r = gpu_profile();
  r.events[2].correlated_op = 99;  // out of range
  r.events[5].correlated_op = 2;   // a GPU event
  r.events[6].correlated_op = -5;
  const prof::KeyAverages ka = prof::key_averages(r);
  EXPECT_EQ(row(ka, "mm")->self_cuda_time_total_ns, 0);
  EXPECT_EQ(row(ka, "gemm_kernel")->self_cuda_time_total_ns, 1000);
  EXPECT_EQ(row(ka, "add")->cuda_time_total_ns, 0);
  (void)ka.table();
  (void)prof::advise(r);
  const std::string path = temp_path("bad_links.json");
  prof::export_chrome_trace(r, path);
  const prof::ProfileResult back = prof::load_chrome_trace(path);
  for (const Event& e : back.events) EXPECT_EQ(e.correlated_op, -1) << e.name;  // no flows were written
  std::remove(path.c_str());
}

// ---- Chrome trace: GPU tracks and flows ------------------------------------------------------

struct JValue {
  json::Reader::Kind kind = json::Reader::Kind::Null;
  std::string text;
  bool b = false;
  std::vector<JValue> items;
  std::vector<std::pair<std::string, JValue>> fields;
  const JValue& at(const std::string& k) const {
    for (const auto& [name, v] : fields)
      if (name == k) return v;
    throw std::runtime_error("no field " + k);
  }
  bool has(const std::string& k) const {
    for (const auto& f : fields)
      if (f.first == k) return true;
    return false;
  }
  int64_t i() const { return std::stoll(text); }
};

JValue read_value(json::Reader& r) {
  JValue v;
  v.kind = r.peek_kind();
  switch (v.kind) {
    case json::Reader::Kind::Null: r.read_null(); break;
    case json::Reader::Kind::Bool: v.b = r.read_bool(); break;
    case json::Reader::Kind::Number: v.text = r.read_number(); break;
    case json::Reader::Kind::String: v.text = r.read_string(); break;
    case json::Reader::Kind::Array:
      r.begin_array();
      while (r.next_item()) v.items.push_back(read_value(r));
      break;
    case json::Reader::Kind::Object: {
      r.begin_object();
      std::string k;
      while (r.next_key(&k)) {
        JValue item = read_value(r);
        v.fields.emplace_back(k, std::move(item));
      }
      break;
    }
  }
  return v;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
JValue read_json_file(const std::string& path) {
  const std::string text = read_text(path);
  json::Reader r(text, "test", path);
  JValue v = read_value(r);
  r.finish();
  return v;
}
void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

struct Flow {
  std::string id;
  int64_t pid = -1, tid = -1;
  std::string ts, bp;
};

TEST(ProfilerCudaTrace, GpuTracksAndFlows) {
  prof::ProfileResult r = gpu_profile();
  r.warnings = {"Activity::CUDA: example warning"};
  const std::string path = temp_path("gpu_trace.json");
  prof::export_chrome_trace(r, path);
  const JValue doc = read_json_file(path);
  const JValue& evs = doc.at("traceEvents");
  std::map<std::string, Flow> starts, ends;
  std::map<int64_t, std::string> process_names;
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;
  std::vector<const JValue*> complete;
  for (const JValue& e : evs.items) {
    const std::string ph = e.at("ph").text;
    if (ph == "M" && e.at("name").text == "process_name")
      process_names[e.at("pid").i()] = e.at("args").at("name").text;
    if (ph == "M" && e.at("name").text == "thread_name")
      thread_names[{e.at("pid").i(), e.at("tid").i()}] = e.at("args").at("name").text;
    if (ph == "X") complete.push_back(&e);
    if (ph == "s" || ph == "f") {
      Flow f{e.at("id").text, e.at("pid").i(), e.at("tid").i(), e.at("ts").text, e.has("bp") ? e.at("bp").text : ""};
      EXPECT_EQ(e.at("name").text, "launch");
      EXPECT_EQ(e.at("cat").text, "flow");
      (ph == "s" ? starts : ends)[f.id] = f;
    }
  }
  // A process per device, the host first; a thread per stream in the device's process.
  EXPECT_EQ(process_names[0], "host");
  EXPECT_EQ(process_names[1], "cuda:0");
  EXPECT_EQ((thread_names[{0, 0}]), "main");
  EXPECT_EQ((thread_names[{1, 1}]), "cuda:0 stream 7");
  EXPECT_EQ((thread_names[{1, 2}]), "cuda:0 stream 13");
  // GPU complete events: pid 1, their track, category, device/stream/correlation args.
  int gpu_events = 0;
  for (const JValue* e : complete) {
    const std::string cat = e->at("cat").text;
    const bool is_gpu = cat == "kernel" || cat == "memcpy" || cat == "memset";
    EXPECT_EQ(e->at("pid").i(), is_gpu ? 1 : 0) << e->at("name").text;
    if (!is_gpu) continue;
    ++gpu_events;
    EXPECT_EQ(e->at("args").at("device").i(), 0);
    EXPECT_TRUE(e->at("args").has("stream"));
    EXPECT_TRUE(e->at("args").has("correlation"));
    if (e->at("name").text == "gemm_kernel") {
      EXPECT_EQ(e->at("cat").text, "kernel");
      EXPECT_EQ(e->at("tid").i(), 1);
      EXPECT_EQ(e->at("args").at("stream").i(), 7);
      EXPECT_EQ(e->at("args").at("correlation").i(), 41);
      EXPECT_EQ(e->at("args").at("detail").text, "grid [8, 8, 1] block [256, 1, 1] registers 96 shared memory 49152");
      EXPECT_EQ(e->at("ts").text, "0.950");
    }
    if (cat == "memcpy") EXPECT_EQ(e->at("args").at("bytes").i(), 4096);
  }
  EXPECT_EQ(gpu_events, 4);
  // One arrow per linked GPU event (three: the memset has no launcher): "s"
  // at the launching op's start on its thread, "f" at the GPU event's start
  // on its stream, bound to the enclosing slice.
  ASSERT_EQ(starts.size(), 3u);
  ASSERT_EQ(ends.size(), 3u);
  std::set<std::pair<std::string, std::string>> arrows;  // (s ts, f ts)
  for (const auto& [id, s] : starts) {
    ASSERT_TRUE(ends.count(id)) << id;
    const Flow& f = ends[id];
    EXPECT_EQ(s.pid, 0);
    EXPECT_EQ(s.tid, 0);
    EXPECT_EQ(f.pid, 1);
    EXPECT_EQ(f.bp, "e");
    arrows.insert({s.ts, f.ts});
  }
  const std::set<std::pair<std::string, std::string>> want = {
      {"0.100", "0.950"}, {"1.100", "2.000"}, {"1.600", "2.400"}};  // mm->gemm, add->add_kernel, copy_->memcpy
  EXPECT_EQ(arrows, want);
  // The header keeps the activities and the warnings.
  const JValue& acts = doc.at("brisk").at("options").at("activities");
  ASSERT_EQ(acts.items.size(), 2u);
  EXPECT_EQ(acts.items[1].text, "cuda");
  ASSERT_EQ(doc.at("brisk").at("warnings").items.size(), 1u);
  std::remove(path.c_str());
}

TEST(ProfilerCudaTrace, LoadsBackGpuEventsAndLinks) {
  prof::ProfileResult r = gpu_profile();
  r.warnings = {"w1", "w2"};
  const std::string path = temp_path("gpu_roundtrip.json");
  prof::export_chrome_trace(r, path);
  const prof::ProfileResult back = prof::load_chrome_trace(path);
  ASSERT_EQ(back.events.size(), r.events.size());
  EXPECT_EQ(back.threads, r.threads);
  EXPECT_EQ(back.warnings, r.warnings);
  ASSERT_EQ(back.options.activities().size(), 2u);
  EXPECT_EQ(back.options.activities()[1], Activity::CUDA);
  for (size_t i = 0; i < r.events.size(); ++i) {
    const Event &a = r.events[i], &b = back.events[i];
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.kind, a.kind) << a.name;
    EXPECT_EQ(b.start_ns, a.start_ns) << a.name;
    EXPECT_EQ(b.end_ns, a.end_ns) << a.name;
    EXPECT_EQ(b.thread, a.thread) << a.name;
    EXPECT_EQ(b.device, a.device) << a.name;
    EXPECT_EQ(b.stream, a.stream) << a.name;
    EXPECT_EQ(b.correlation_id, a.correlation_id) << a.name;
    EXPECT_EQ(b.bytes, a.bytes) << a.name;
    EXPECT_EQ(b.correlated_op, a.correlated_op) << a.name;  // from the flows
    EXPECT_EQ(b.parent, a.parent) << a.name;
    EXPECT_EQ(b.detail, a.detail) << a.name;
  }
  // The same table from the file.
  EXPECT_EQ(prof::key_averages(back).table("self_cuda_time_total"), prof::key_averages(r).table("self_cuda_time_total"));
  std::remove(path.c_str());
}

TEST(ProfilerCudaTrace, FlowsFromOtherToolsLoad) {
  // Flows with string ids, flows without an id, and flows whose ends match
  // nothing are read without error; only matching pairs link.
  const std::string path = temp_path("flows.json");
  write_text(path, R"({"traceEvents": [
 {"ph": "X", "name": "outer", "cat": "op", "pid": 0, "tid": 0, "ts": 0, "dur": 10},
 {"ph": "X", "name": "inner", "cat": "op", "pid": 0, "tid": 0, "ts": 2, "dur": 3},
 {"ph": "X", "name": "k1", "cat": "kernel", "pid": 1, "tid": 1, "ts": 4, "dur": 2, "args": {"device": 0, "stream": 7}},
 {"ph": "X", "name": "k2", "cat": "kernel", "pid": 1, "tid": 1, "ts": 8, "dur": 1},
 {"ph": "s", "id": "0x1", "pid": 0, "tid": 0, "ts": 3},
 {"ph": "f", "id": "0x1", "bp": "e", "pid": 1, "tid": 1, "ts": 4},
 {"ph": "s", "id": 2, "pid": 0, "tid": 0, "ts": 6},
 {"ph": "f", "id": 2, "bp": "e", "pid": 1, "tid": 1, "ts": 8},
 {"ph": "s", "pid": 0, "tid": 0, "ts": 1},
 {"ph": "f", "id": 3, "pid": 1, "tid": 1, "ts": 9},
 {"ph": "s", "id": 4, "pid": 0, "tid": 0, "ts": 1},
 {"ph": "f", "id": 4, "pid": 1, "tid": 1, "ts": 5}
]})");
  const prof::ProfileResult r = prof::load_chrome_trace(path);
  ASSERT_EQ(r.events.size(), 4u);
  std::map<std::string, const Event*> by;
  for (const Event& e : r.events) by[e.name] = &e;
  // ts 3 lies in inner (the innermost enclosing event); ts 6 only in outer.
  ASSERT_GE(by["k1"]->correlated_op, 0);
  EXPECT_EQ(r.events[by["k1"]->correlated_op].name, "inner");
  ASSERT_GE(by["k2"]->correlated_op, 0);
  EXPECT_EQ(r.events[by["k2"]->correlated_op].name, "outer");
  EXPECT_EQ(by["k1"]->device, 0);
  EXPECT_EQ(by["k1"]->stream, 7);
  EXPECT_EQ(by["outer"]->device, -1);
  // A flow without ts is malformed.
  write_text(path, R"({"traceEvents": [{"ph": "s", "id": 1, "pid": 0, "tid": 0}]})");
  brisk::testing::expect_error([&] { (void)prof::load_chrome_trace(path); }, {"[load_chrome_trace]", "flow", "ts"});
  // An unknown activity in the header is an error.
  write_text(path, R"({"traceEvents": [], "brisk": {"version": 1, "options": {"activities": ["tpu"]}}})");
  brisk::testing::expect_error([&] { (void)prof::load_chrome_trace(path); }, {"[load_chrome_trace]", "tpu"});
  std::remove(path.c_str());
}

TEST(ProfilerCudaTrace, HtmlReportWithGpuTracks) {
  const std::string path = temp_path("gpu_report.html");
  prof::export_html_report(gpu_profile(), path);
  const std::string html = read_text(path);
  EXPECT_TRUE(contains(html, "cuda:0 stream 7"));
  EXPECT_TRUE(contains(html, "kernel"));
  EXPECT_TRUE(contains(html, "launched by: mm"));
  std::remove(path.c_str());
}

// ---- recording without a GPU ------------------------------------------------------------------

TEST(ProfilerCuda, CudaActivityUnavailableWarnsAndRecordsHost) {
  if (brisk::cuda::is_available()) GTEST_SKIP() << "a GPU is present: ProfilerCudaGpu covers recording";
  prof::profile p(ProfileOptions().activities({Activity::CPU, Activity::CUDA}));
  Tensor a = ones({4, 4});
  Tensor b = a + a;
  {
    prof::record_function scope("scope");
    (void)b.sum().item<float>();
  }
  p.stop();
  const prof::ProfileResult& r = p.result();
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_TRUE(contains(r.warnings[0], "Activity::CUDA")) << r.warnings[0];
  EXPECT_TRUE(contains(r.warnings[0], "no GPU activity was recorded")) << r.warnings[0];
  bool add = false;
  for (const Event& e : r.events) {
    EXPECT_FALSE(e.is_gpu()) << e.name;
    add = add || e.name == "add";
  }
  EXPECT_TRUE(add);
  EXPECT_FALSE(prof::key_averages(r).has_cuda());
  // A CPU-only profile warns about nothing.
  prof::profile q;
  (void)(a * a);
  q.stop();
  EXPECT_TRUE(q.result().warnings.empty());
}

TEST(ProfilerCuda, RecorderRegisteredExactlyInCudaBuilds) {
  const bool built_with_cuda = &cu::cupti_library != nullptr;
  EXPECT_EQ(prof::detail::gpu_activity_backend() != nullptr, built_with_cuda);
}

// ---- host-side helpers -------------------------------------------------------------------------

TEST(ProfilerCudaHelpers, ExternalIds) {
  using prof::detail::decode_external_id;
  using prof::detail::external_id;
  uint32_t t = 0, i = 0;
  for (uint32_t gen : {1u, 2u, 0x7FFFu, 0x8000u, 0x10000u, 123456u}) {
    for (uint32_t thread : {0u, 1u, 65535u})
      for (uint32_t index : {0u, 1u, 2047u, 0xFFFFFFFFu}) {
        const uint64_t id = external_id(gen, thread, index);
        EXPECT_NE(id, 0u);
        ASSERT_TRUE(decode_external_id(id, gen, &t, &i));
        EXPECT_EQ(t, thread);
        EXPECT_EQ(i, index);
        EXPECT_FALSE(decode_external_id(id, gen + 1, &t, &i));  // a stale id of another profile
      }
  }
  EXPECT_FALSE(decode_external_id(0, 0, &t, &i));
  EXPECT_FALSE(decode_external_id(12345, 1, &t, &i));
}

TEST(ProfilerCudaHelpers, ClockMap) {
  cu::ClockMap m;
  m.host0 = 5'000'000'000;
  m.gpu0 = 1'700'000'000'000'000'000ull;
  // One reading: an offset.
  EXPECT_EQ(m.to_host(m.gpu0), m.host0);
  EXPECT_EQ(m.to_host(m.gpu0 + 1234), m.host0 + 1234);
  EXPECT_EQ(m.to_host(m.gpu0 - 1000), m.host0 - 1000);
  // Two readings 1 s apart on clocks 100 ppm apart: a linear map.
  m.has_end = true;
  m.gpu1 = m.gpu0 + 1'000'000'000;
  m.host1 = m.host0 + 1'000'100'000;
  EXPECT_EQ(m.to_host(m.gpu0), m.host0);
  EXPECT_EQ(m.to_host(m.gpu1), m.host1);
  EXPECT_EQ(m.to_host(m.gpu0 + 500'000'000), m.host0 + 500'050'000);
  // Rates that disagree (a clock step) or readings too close: the offset.
  m.host1 = m.host0 + 2'000'000'000;
  EXPECT_EQ(m.to_host(m.gpu0 + 500'000'000), m.host0 + 500'000'000);
  m.host1 = m.host0 + 500;
  m.gpu1 = m.gpu0 + 500;
  EXPECT_EQ(m.to_host(m.gpu0 + 700), m.host0 + 700);
}

TEST(ProfilerCudaHelpers, RecordNames) {
  EXPECT_EQ(cu::cupti_memcpy_name(cu::kCopyHtoD, cu::kMemPageable, cu::kMemDevice), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(cu::cupti_memcpy_name(cu::kCopyDtoH, cu::kMemDevice, cu::kMemPinned), "Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(cu::cupti_memcpy_name(cu::kCopyDtoD, cu::kMemDevice, cu::kMemDevice), "Memcpy DtoD (Device -> Device)");
  EXPECT_EQ(cu::cupti_memcpy_name(99, 0, 42), "Memcpy unknown (Unknown -> Unknown)");
  EXPECT_EQ(cu::cupti_memset_name(cu::kMemDevice), "Memset (Device)");
  EXPECT_EQ(cu::cupti_kernel_name("_Z6kernelPfi"), "kernel(float*, int)");
  EXPECT_EQ(cu::cupti_kernel_name("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n"), "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n");
  EXPECT_EQ(cu::cupti_kernel_name("_Znot a mangled name"), "_Znot a mangled name");
  EXPECT_EQ(cu::cupti_kernel_name(nullptr), "<unnamed kernel>");
  EXPECT_EQ(cu::cupti_kernel_detail(128, 2, 1, 256, 1, 1, 32, 1024),
            "grid [128, 2, 1] block [256, 1, 1] registers 32 shared memory 1024");
}

// ---- the CUPTI loader (a CUDA build; no GPU needed) -------------------------------------------

bool built_with_cuda() { return &cu::cupti_library != nullptr; }

bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (contains(line, name)) return true;
  return false;
}

TEST(CuptiLoader, NotMappedUntilFirstUseThenLoaded) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build of brisk has no CUDA backend";
  // Using brisk, and profiling without Activity::CUDA, does not map CUPTI.
  (void)brisk::cuda::is_available();
  {
    prof::profile p;
    (void)(ones({2, 2}) + 1);
  }
  ASSERT_FALSE(mapped("libcupti")) << "libcupti is mapped before any CUDA profile: is it linked?";
  const cu::CuptiLibrary& lib = cu::cupti_library();
  if (!lib.loaded) {
    for (const std::string& p : cu::cupti_search_paths())
      if (p.find('/') != std::string::npos)
        EXPECT_FALSE(std::ifstream(p).good()) << p << " exists but did not load: " << lib.error;
    GTEST_SKIP() << "CUPTI not installed here: " << lib.error;
  }
  EXPECT_TRUE(lib.error.empty()) << lib.error;
  EXPECT_TRUE(contains(lib.path, "libcupti.so.13")) << lib.path;
  EXPECT_TRUE(mapped("libcupti"));  // the soname may link to a file named by CUPTI's own version
  const std::set<std::string> got(lib.symbols.begin(), lib.symbols.end());
  for (const char* sym : {"cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiActivityDisable",
                          "cuptiActivityFlushAll", "cuptiActivityGetNextRecord", "cuptiActivityGetNumDroppedRecords",
                          "cuptiActivityPushExternalCorrelationId", "cuptiActivityPopExternalCorrelationId",
                          "cuptiGetTimestamp", "cuptiGetResultString"})
    EXPECT_TRUE(got.count(sym)) << sym << " not resolved";
  EXPECT_EQ(&cu::cupti_library(), &lib);  // once per process
}

TEST(CuptiLoader, SearchPaths) {
  if (!built_with_cuda()) GTEST_SKIP() << "this build of brisk has no CUDA backend";
  const std::vector<std::string> paths = cu::cupti_search_paths();
  ASSERT_FALSE(paths.empty());
  EXPECT_EQ(paths.front(), "libcupti.so.13");
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/usr/local/cuda/lib64/libcupti.so.13"), paths.end());
  EXPECT_NE(std::find(paths.begin(), paths.end(), "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"), paths.end());
  for (size_t i = 0; i < paths.size(); ++i)
    for (size_t j = i + 1; j < paths.size(); ++j) EXPECT_NE(paths[i], paths[j]);
}

// ---- on a GPU ---------------------------------------------------------------------------------

ProfileOptions cuda_options() { return ProfileOptions().activities({Activity::CPU, Activity::CUDA}); }

// Whether event `i` is `anc` or lies inside it (parent links).
bool within(const prof::ProfileResult& r, int32_t i, int32_t anc) {
  for (size_t steps = 0; i >= 0 && steps <= r.events.size(); ++steps, i = r.events[static_cast<size_t>(i)].parent)
    if (i == anc) return true;
  return false;
}

void print_gpu_events(const prof::ProfileResult& r) {
  for (const std::string& w : r.warnings) std::printf("warning: %s\n", w.c_str());
  for (const Event& e : r.events) {
    if (!e.is_gpu()) continue;
    const std::string op = e.correlated_op >= 0 ? r.events[static_cast<size_t>(e.correlated_op)].name : "-";
    std::printf("  %-7s %-60.60s %8lld ns  %s  <- %s\n", prof::kind_name(e.kind), e.name.c_str(),
                static_cast<long long>(e.duration_ns()), r.threads[e.thread].c_str(), op.c_str());
  }
}

TEST(ProfilerCudaGpu, KernelsAndCopiesLinkedToTheirOps) {
  REQUIRE_CUDA();
  const int64_t n = 256;
  Tensor a = randn({n, n}).to(Device(kCUDA)), b = randn({n, n}).to(Device(kCUDA));
  (void)matmul(a, b).add(a).cpu();  // warm-up: cuBLAS is opened, handles made, outside the profile
  prof::profile p(cuda_options().record_shapes(true));
  Tensor c = matmul(a, b);
  Tensor d = c.add(a);
  Tensor h = d.cpu();
  p.stop();
  const prof::ProfileResult& r = p.result();
  print_gpu_events(r);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_TRUE(testing::close(h, matmul(a.cpu(), b.cpu()).add(a.cpu()), 1e-3, 1e-3));

  int32_t matmul_op = -1, add_op = -1, cpu_op = -1;
  for (size_t i = 0; i < r.events.size(); ++i) {
    const Event& e = r.events[i];
    if (e.kind != EventKind::Op || e.depth != 0) continue;
    if (e.name == "matmul") matmul_op = static_cast<int32_t>(i);
    if (e.name == "add") add_op = static_cast<int32_t>(i);
    if (e.name == "to") cpu_op = static_cast<int32_t>(i);
  }
  ASSERT_GE(matmul_op, 0);
  ASSERT_GE(add_op, 0);
  ASSERT_GE(cpu_op, 0);
  int matmul_kernels = 0, add_kernels = 0, unlinked = 0;
  bool gemm_named = false, dtoh = false;
  for (const Event& e : r.events) {
    if (!e.is_gpu()) continue;
    EXPECT_EQ(e.device, 0);
    EXPECT_TRUE(r.threads[e.thread].rfind("cuda:0 stream ", 0) == 0) << r.threads[e.thread];
    EXPECT_LE(e.start_ns, e.end_ns);
    EXPECT_GE(e.start_ns, 0);
    EXPECT_LE(e.end_ns, r.duration_ns);
    if (e.correlated_op < 0) {
      ++unlinked;
      continue;
    }
    const Event& op = r.events[static_cast<size_t>(e.correlated_op)];
    EXPECT_FALSE(op.is_gpu());
    // Causality, with room for the clock conversion (1 ms): a launch
    // precedes its work.
    EXPECT_GE(e.start_ns, op.start_ns - 1000000) << e.name << " <- " << op.name;
    if (e.kind == EventKind::Kernel && within(r, e.correlated_op, matmul_op)) {
      ++matmul_kernels;
      std::string lower = e.name;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
      gemm_named = gemm_named || contains(lower, "gemm") || contains(lower, "kernel") || contains(lower, "nvjet") ||
                   contains(lower, "xmma") || contains(lower, "cutlass");
    }
    if (e.kind == EventKind::Kernel && within(r, e.correlated_op, add_op)) ++add_kernels;
    if (e.kind == EventKind::Memcpy && within(r, e.correlated_op, cpu_op)) {
      dtoh = dtoh || e.name.rfind("Memcpy DtoH", 0) == 0;
      if (e.name.rfind("Memcpy DtoH", 0) == 0) EXPECT_EQ(e.bytes, n * n * 4);
    }
  }
  EXPECT_GE(matmul_kernels, 1);
  EXPECT_TRUE(gemm_named) << "no GEMM-like kernel name under matmul";
  EXPECT_GE(add_kernels, 1);
  EXPECT_TRUE(dtoh) << "no device-to-host Memcpy linked to to()";
  EXPECT_EQ(unlinked, 0);

  // The CUDA columns.
  const prof::KeyAverages ka = prof::key_averages(r);
  ASSERT_TRUE(ka.has_cuda());
  ASSERT_NE(row(ka, "matmul"), nullptr);
  EXPECT_GT(row(ka, "matmul")->cuda_time_total_ns, 0);
  EXPECT_GT(row(ka, "add")->self_cuda_time_total_ns, 0);
  EXPECT_GT(row(ka, "to")->cuda_time_total_ns, 0);
  int64_t kernel_rows = 0;
  for (const prof::KeyAverage& k : ka.rows()) kernel_rows += k.cpu_time_total_ns == 0 && k.self_cuda_time_total_ns > 0;
  EXPECT_GE(kernel_rows, 3);  // the GEMM, the add and the copy
  const std::string t = ka.table("cuda_time_total", 15);
  std::printf("%s", t.c_str());
  EXPECT_TRUE(contains(t, "Self CUDA time total"));

  // The trace: an arrow per linked GPU event, read back to the same links.
  const std::string path = temp_path("gpu_profile.json");
  prof::export_chrome_trace(r, path);
  const std::string text = read_text(path);
  size_t s = 0, f = 0, linked = 0;
  for (size_t pos = 0; (pos = text.find("\"ph\": \"s\"", pos)) != std::string::npos; ++pos) ++s;
  for (size_t pos = 0; (pos = text.find("\"ph\": \"f\"", pos)) != std::string::npos; ++pos) ++f;
  for (const Event& e : r.events) linked += e.is_gpu() && e.correlated_op >= 0;
  EXPECT_GT(linked, 0u);
  EXPECT_EQ(s, linked);
  EXPECT_EQ(f, linked);
  const prof::ProfileResult back = prof::load_chrome_trace(path);
  ASSERT_EQ(back.events.size(), r.events.size());
  std::multiset<std::pair<std::string, std::string>> want, got;
  for (const Event& e : r.events)
    if (e.is_gpu() && e.correlated_op >= 0) want.insert({e.name, r.events[e.correlated_op].name});
  for (const Event& e : back.events)
    if (e.is_gpu() && e.correlated_op >= 0) got.insert({e.name, back.events[e.correlated_op].name});
  EXPECT_EQ(got, want);
  std::remove(path.c_str());
}

TEST(ProfilerCudaGpu, ThreadsAndConsecutiveProfiles) {
  REQUIRE_CUDA();
  Tensor x = randn({1000}).to(Device(kCUDA));
  (void)(x * 2).cpu();
  for (int round = 0; round < 2; ++round) {
    prof::profile p(cuda_options());
    {
      prof::record_function scope("outer");
      Tensor y = x.mul(3);
      std::thread t([&] { Tensor z = x.exp(); (void)z.sum(); });
      t.join();
      (void)y.neg();
    }
    p.stop();
    const prof::ProfileResult& r = p.result();
    print_gpu_events(r);
    EXPECT_TRUE(r.warnings.empty());
    std::map<std::string, int> kernels_by_op;
    for (const Event& e : r.events)
      if (e.kind == EventKind::Kernel && e.correlated_op >= 0) {
        const Event& op = r.events[e.correlated_op];
        ++kernels_by_op[op.name];
        if (op.name == "exp" || op.name == "sum") EXPECT_NE(op.thread, 0u) << "launched on the std::thread";
        if (op.name == "mul" || op.name == "neg") EXPECT_EQ(op.thread, 0u);
      }
    EXPECT_GE(kernels_by_op["mul"], 1) << "round " << round;
    EXPECT_GE(kernels_by_op["neg"], 1) << "round " << round;
    EXPECT_GE(kernels_by_op["exp"], 1) << "round " << round;
    EXPECT_GE(kernels_by_op["sum"], 1) << "round " << round;
  }
  // A profile without Activity::CUDA records no GPU events and warns not.
  prof::profile q;
  (void)(x + 1);
  q.stop();
  EXPECT_TRUE(q.result().warnings.empty());
  for (const Event& e : q.result().events) EXPECT_FALSE(e.is_gpu());
}

TEST(ProfilerCudaGpu, AdvisorFindsSyncsAndHostTensorsInALoop) {
  REQUIRE_CUDA();
  Tensor w = randn({64, 64}).to(Device(kCUDA));
  (void)matmul(w, w).sum().item<float>();
  prof::profile p(cuda_options().record_shapes(true));
  float total = 0;
  for (int step = 0; step < 5; ++step) {
    prof::record_function scope("step");
    Tensor x = randn({64, 64}).to(Device(kCUDA));  // made on the host, then copied
    Tensor loss = matmul(x, w).relu().mean();
    total += loss.item<float>();           // a sync every iteration
  }
  p.stop();
  const prof::ProfileResult& r = p.result();
  EXPECT_TRUE(r.warnings.empty());
  const std::vector<prof::Finding> findings = prof::advise(r);
  std::printf("%s\n", prof::advice_text(findings).c_str());
  std::set<prof::Rule> rules;
  for (const prof::Finding& f : findings) rules.insert(f.rule);
  EXPECT_TRUE(rules.count(prof::Rule::SyncInLoop));
  EXPECT_TRUE(rules.count(prof::Rule::CpuTensorThenCopy));
  // The host-to-device copies ran on the GPU, linked to to().
  int htod = 0;
  for (const Event& e : r.events)
    if (e.kind == EventKind::Memcpy && e.name.rfind("Memcpy HtoD", 0) == 0 && e.correlated_op >= 0) ++htod;
  EXPECT_GE(htod, 5);
  EXPECT_TRUE(std::isfinite(total));
}

}  // namespace
}  // namespace brisk
