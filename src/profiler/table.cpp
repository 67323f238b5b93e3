// key_averages and PyTorch's profiler table.
#include <algorithm>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "brisk/profiler.h"

namespace brisk::profiler {

namespace {

// "[[3, 4], [4], []]"
std::string shapes_string(const Event& e) {
  std::string s = "[";
  for (size_t i = 0; i < e.shapes.size(); ++i) {
    if (i) s += ", ";
    s += '[';
    for (size_t d = 0; d < e.shapes[i].size(); ++d) {
      if (d) s += ", ";
      s += std::to_string(e.shapes[i][d]);
    }
    s += ']';
  }
  return s + "]";
}

// PyTorch's _format_time: microseconds with 3 decimals, as us, ms or s.
std::string format_time(int64_t ns) {
  const double us = static_cast<double>(ns) / 1000.0;
  char buf[64];
  if (us >= 1e6)
    std::snprintf(buf, sizeof buf, "%.3fs", us / 1e6);
  else if (us >= 1e3)
    std::snprintf(buf, sizeof buf, "%.3fms", us / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3fus", us);
  return buf;
}

// PyTorch's _format_memory: "1.50 Mb", "512 b".
std::string format_memory(int64_t bytes) {
  constexpr double kKb = 1024.0, kMb = 1024.0 * kKb, kGb = 1024.0 * kMb;
  const double b = static_cast<double>(bytes);
  const double a = b < 0 ? -b : b;
  char buf[64];
  if (a >= kGb)
    std::snprintf(buf, sizeof buf, "%.2f Gb", b / kGb);
  else if (a >= kMb)
    std::snprintf(buf, sizeof buf, "%.2f Mb", b / kMb);
  else if (a >= kKb)
    std::snprintf(buf, sizeof buf, "%.2f Kb", b / kKb);
  else
    return std::to_string(bytes) + " b";
  return buf;
}

std::string format_share(int64_t part, int64_t total) {
  if (total == 0) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100.0 * static_cast<double>(part) / static_cast<double>(total));
  return buf;
}

}  // namespace

KeyAverages key_averages(const ProfileResult& r, bool group_by_input_shape) {
  const size_t n = r.events.size();
  // Time in direct children, and net memory of each subtree. A parent comes
  // before its children in `events`, so one backward pass sums subtrees.
  std::vector<int64_t> child_ns(n, 0), tree_mem(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Event& e = r.events[i];
    tree_mem[i] = e.self_alloc_bytes - e.self_free_bytes;
    if (e.parent >= 0) child_ns[static_cast<size_t>(e.parent)] += e.duration_ns();
  }
  for (size_t i = n; i-- > 0;) {
    const int32_t p = r.events[i].parent;
    if (p >= 0) tree_mem[static_cast<size_t>(p)] += tree_mem[i];
  }
  // GPU time: each GPU event's duration goes to the host event that launched
  // it (self), then up its ancestors (total). GPU events have no parent.
  bool has_cuda = false;
  int64_t total_self_cuda = 0;
  std::vector<int64_t> self_cuda, tree_cuda;
  for (size_t i = 0; i < n; ++i) {
    const Event& e = r.events[i];
    if (!e.is_gpu()) continue;
    if (!has_cuda) {
      has_cuda = true;
      self_cuda.assign(n, 0);
    }
    total_self_cuda += e.duration_ns();
    const int32_t op = e.correlated_op;
    if (op >= 0 && static_cast<size_t>(op) < n && !r.events[static_cast<size_t>(op)].is_gpu())
      self_cuda[static_cast<size_t>(op)] += e.duration_ns();
  }
  if (has_cuda) {
    tree_cuda = self_cuda;
    for (size_t i = n; i-- > 0;) {
      const int32_t p = r.events[i].parent;
      if (p >= 0 && static_cast<size_t>(p) < i) tree_cuda[static_cast<size_t>(p)] += tree_cuda[i];
    }
  }
  std::vector<KeyAverage> rows;
  std::unordered_map<std::string, size_t> index;
  int64_t total_self = 0;
  for (size_t i = 0; i < n; ++i) {
    const Event& e = r.events[i];
    std::string shapes = group_by_input_shape ? shapes_string(e) : std::string();
    std::string key = e.name;
    if (group_by_input_shape) {
      key.push_back('\0');
      key.append(shapes);
    }
    auto [it, fresh] = index.emplace(std::move(key), rows.size());
    if (fresh) {
      rows.emplace_back();
      rows.back().name = e.name;
      rows.back().input_shapes = std::move(shapes);
    }
    KeyAverage& k = rows[it->second];
    ++k.count;
    if (e.is_gpu()) {
      // A GPU event has no CPU time: its duration is its (self) CUDA time.
      k.cuda_time_total_ns += e.duration_ns();
      k.self_cuda_time_total_ns += e.duration_ns();
      continue;
    }
    if (has_cuda) {
      k.cuda_time_total_ns += tree_cuda[i];
      k.self_cuda_time_total_ns += self_cuda[i];
    }
    const int64_t self = std::max<int64_t>(0, e.duration_ns() - child_ns[i]);
    k.cpu_time_total_ns += e.duration_ns();
    k.self_cpu_time_total_ns += self;
    k.cpu_memory_bytes += tree_mem[i];
    k.self_cpu_memory_bytes += e.self_alloc_bytes - e.self_free_bytes;
    total_self += self;
  }
  return KeyAverages(std::move(rows), total_self, total_self_cuda, has_cuda);
}

std::string KeyAverages::table(const std::string& sort_by, int row_limit) const {
  using Key = int64_t (*)(const KeyAverage&);
  static const std::pair<const char*, Key> kKeys[] = {
      {"cpu_time_total", [](const KeyAverage& k) { return k.cpu_time_total_ns; }},
      {"self_cpu_time_total", [](const KeyAverage& k) { return k.self_cpu_time_total_ns; }},
      {"cpu_time_avg", [](const KeyAverage& k) { return k.count ? k.cpu_time_total_ns / k.count : int64_t(0); }},
      {"cuda_time_total", [](const KeyAverage& k) { return k.cuda_time_total_ns; }},
      {"self_cuda_time_total", [](const KeyAverage& k) { return k.self_cuda_time_total_ns; }},
      {"cuda_time_avg", [](const KeyAverage& k) { return k.count ? k.cuda_time_total_ns / k.count : int64_t(0); }},
      // PyTorch 2.4 renamed the cuda keys device_*; both are accepted.
      {"device_time_total", [](const KeyAverage& k) { return k.cuda_time_total_ns; }},
      {"self_device_time_total", [](const KeyAverage& k) { return k.self_cuda_time_total_ns; }},
      {"device_time_avg", [](const KeyAverage& k) { return k.count ? k.cuda_time_total_ns / k.count : int64_t(0); }},
      {"count", [](const KeyAverage& k) { return k.count; }},
      {"cpu_memory_usage", [](const KeyAverage& k) { return k.cpu_memory_bytes; }},
      {"self_cpu_memory_usage", [](const KeyAverage& k) { return k.self_cpu_memory_bytes; }},
  };
  Key key = nullptr;
  for (const auto& [name, fn] : kKeys)
    if (sort_by == name) key = fn;
  BRISK_CHECK(key != nullptr, "table", "unknown sort_by '", sort_by,
              "': expected one of cpu_time_total, self_cpu_time_total, cpu_time_avg, cuda_time_total, "
              "self_cuda_time_total, cuda_time_avg, count, cpu_memory_usage, self_cpu_memory_usage");
  std::vector<const KeyAverage*> rows;
  rows.reserve(rows_.size());
  for (const KeyAverage& k : rows_) rows.push_back(&k);
  std::stable_sort(rows.begin(), rows.end(), [key](const KeyAverage* a, const KeyAverage* b) { return key(*a) > key(*b); });
  if (row_limit > 0 && rows.size() > static_cast<size_t>(row_limit)) rows.resize(static_cast<size_t>(row_limit));

  bool memory = false, shapes = false;
  for (const KeyAverage& k : rows_) {
    memory = memory || k.cpu_memory_bytes != 0 || k.self_cpu_memory_bytes != 0;
    shapes = shapes || !k.input_shapes.empty();
  }
  // Column layout as PyTorch's _build_table: right-aligned cells, two spaces after each.
  constexpr size_t kMaxName = 55, kCol = 12, kMaxShapes = 80;
  size_t name_w = 4, shapes_w = 12;
  for (const KeyAverage* k : rows) {
    name_w = std::max(name_w, k->name.size() + 4);
    shapes_w = std::max(shapes_w, k->input_shapes.size() + 4);
  }
  name_w = std::min(name_w, kMaxName);
  shapes_w = std::min(shapes_w, kMaxShapes);
  std::vector<std::string> headers = {"Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"};
  if (has_cuda_) {
    for (const char* h : {"Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"}) headers.push_back(h);
  }
  if (memory) {
    headers.push_back("CPU Mem");
    headers.push_back("Self CPU Mem");
  }
  headers.push_back("# of Calls");
  std::vector<size_t> widths(headers.size(), kCol);
  widths[0] = name_w;
  if (shapes) {
    headers.push_back("Input Shapes");
    widths.push_back(shapes_w);
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) {
      if (cells[c].size() < widths[c]) s.append(widths[c] - cells[c].size(), ' ');
      s += cells[c];
      s += "  ";
    }
    return s + "\n";
  };
  std::string sep;
  for (size_t w : widths) sep += std::string(w, '-') + "  ";
  sep += "\n";

  std::string out = sep + line(headers) + sep;
  for (const KeyAverage* k : rows) {
    std::string name = k->name;
    if (name.size() >= kMaxName - 3) name = name.substr(0, kMaxName - 3) + "...";
    std::vector<std::string> cells = {name,
                                      format_share(k->self_cpu_time_total_ns, total_self_ns_),
                                      format_time(k->self_cpu_time_total_ns),
                                      format_share(k->cpu_time_total_ns, total_self_ns_),
                                      format_time(k->cpu_time_total_ns),
                                      format_time(k->count ? k->cpu_time_total_ns / k->count : 0)};
    if (has_cuda_) {
      cells.push_back(format_time(k->self_cuda_time_total_ns));
      cells.push_back(format_share(k->self_cuda_time_total_ns, total_self_cuda_ns_));
      cells.push_back(format_time(k->cuda_time_total_ns));
      cells.push_back(format_time(k->count ? k->cuda_time_total_ns / k->count : 0));
    }
    if (memory) {
      cells.push_back(format_memory(k->cpu_memory_bytes));
      cells.push_back(format_memory(k->self_cpu_memory_bytes));
    }
    cells.push_back(std::to_string(k->count));
    if (shapes) cells.push_back(k->input_shapes.substr(0, shapes_w));
    out += line(cells);
  }
  out += sep;
  out += "Self CPU time total: " + format_time(total_self_ns_) + "\n";
  if (has_cuda_) out += "Self CUDA time total: " + format_time(total_self_cuda_ns_) + "\n";
  return out;
}

}  // namespace brisk::profiler
