// brisk-prof: summarises a trace written by brisk::profiler::export_chrome_trace
// (or profile::export_chrome_trace): prints the key_averages table and the
// advisor's findings, and optionally renders the self-contained HTML report.
//
//   brisk-prof TRACE.json [--html REPORT.html] [--sort KEY] [--limit N] [--group-by-shape]
//
// Exit status: 0 on success, 1 when the trace cannot be read or the report
// cannot be written, 2 on a usage error.
#include <brisk/profiler.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

namespace prof = brisk::profiler;

namespace {

const char* kUsage =
    "usage: brisk-prof TRACE.json [--html REPORT.html] [--sort KEY] [--limit N] [--group-by-shape]\n"
    "\n"
    "Prints the op table and the advisor's findings for a trace written by\n"
    "brisk::profiler::export_chrome_trace.\n"
    "\n"
    "  --html PATH         also write a self-contained HTML report (timeline, chart, table, advice)\n"
    "  --sort KEY          sort the table by cpu_time_total (default), self_cpu_time_total,\n"
    "                      cpu_time_avg, cuda_time_total, self_cuda_time_total, cuda_time_avg,\n"
    "                      count, cpu_memory_usage or self_cpu_memory_usage\n"
    "  --limit N           print at most N rows (default 30; 0: all)\n"
    "  --group-by-shape    one row per op name and input shapes (needs record_shapes)\n";

int usage_error(const std::string& what) {
  std::cerr << "brisk-prof: " << what << "\n\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace, html, sort = "cpu_time_total";
  int limit = 30;
  bool by_shape = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--html") {
      const char* v = value();
      if (!v) return usage_error("--html needs a path");
      html = v;
    } else if (a == "--sort") {
      const char* v = value();
      if (!v) return usage_error("--sort needs a key");
      sort = v;
    } else if (a == "--limit") {
      const char* v = value();
      char* end = nullptr;
      long n = v ? std::strtol(v, &end, 10) : 0;
      if (!v || *v == '\0' || *end != '\0' || n < 0 || n > 1'000'000'000)
        return usage_error("--limit needs a count (0 for all rows)");
      limit = static_cast<int>(n);
    } else if (a == "--group-by-shape") {
      by_shape = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage_error("unknown option " + a);
    } else if (trace.empty()) {
      trace = a;
    } else {
      return usage_error("more than one trace given (" + trace + ", " + a + ")");
    }
  }
  if (trace.empty()) return usage_error("no trace given");

  try {
    prof::ProfileResult r = prof::load_chrome_trace(trace);
    std::cout << prof::key_averages(r, by_shape).table(sort, limit) << "\n";
    for (const std::string& w : r.warnings) std::cout << "warning: " << w << "\n";
    if (!r.warnings.empty()) std::cout << "\n";
    std::cout << prof::advice_text(prof::advise(r));
    if (!html.empty()) {
      prof::export_html_report(r, html);
      std::cout << "\nreport written to " << html << "\n";
    }
  } catch (const brisk::Error& e) {
    std::cerr << "brisk-prof: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
