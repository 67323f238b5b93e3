// The profiler handbook's case, in brisk: a model of three Linear layers
// whose output goes through a threshold and nonzero() every iteration.
//
//   profile_handbook [OUT_DIR]
//
// 1. Profiles ten iterations of the handbook's loop (record_shapes,
//    profile_memory, with_stack, record_function scopes), prints the op
//    table, writes OUT_DIR/trace.json (open it in https://ui.perfetto.dev or
//    chrome://tracing, or summarise it with `brisk-prof trace.json`) and
//    OUT_DIR/report.html, and prints the advisor's findings: the item() and
//    nonzero() calls synchronise with the device in every iteration.
// 2. Runs the corrected loop (the threshold and the mask stay tensors; the
//    count is read once after the loop) and shows that the finding is gone.
//
// On the CPU the calls cost little; on a GPU each of them makes the host wait
// until every queued kernel has run, so the GPU idles once per iteration.
// The advisor flags them on a CPU-only run so that a loop can be made
// sync-free before it moves to a GPU.
#include <brisk/brisk.h>

#include <cstdio>
#include <iostream>
#include <string>

using namespace brisk;
namespace prof = brisk::profiler;

namespace {

struct Model : nn::Module {
  Model() : nn::Module("Model") {
    fc1 = register_module("fc1", std::make_shared<nn::LinearImpl>(512, 1024));
    fc2 = register_module("fc2", std::make_shared<nn::LinearImpl>(1024, 1024));
    fc3 = register_module("fc3", std::make_shared<nn::LinearImpl>(1024, 256));
  }
  Tensor forward(const Tensor& x) override {
    prof::record_function scope("LINEAR PASS");
    // relu_ in place: nothing else needs the pre-activation here.
    return fc3->forward(fc2->forward(fc1->forward(x).relu_()).relu_());
  }
  std::shared_ptr<nn::LinearImpl> fc1, fc2, fc3;
};

prof::ProfileOptions options() {
  return prof::ProfileOptions().record_shapes(true).profile_memory(true).with_stack(true);
}

bool has_rule(const std::vector<prof::Finding>& findings, prof::Rule rule) {
  for (const prof::Finding& f : findings)
    if (f.rule == rule) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  manual_seed(0);
  auto model = std::make_shared<Model>();
  Tensor x = randn({128, 512});
  InferenceMode inference;  // no backward here: the forward records no graph

  // ---- 1. the handbook's loop ----------------------------------------------
  int64_t selected_slow = 0;
  prof::profile slow(options());
  for (int i = 0; i < 10; ++i) {
    prof::record_function iteration("iteration");
    Tensor out = model->forward(x);
    prof::record_function mask("MASK INDICES");
    // The threshold comes back to the host (item), and nonzero's output
    // size depends on the data: two waits for the device per iteration.
    const double threshold = out.sum(1).mean().item<double>();
    Tensor hi_idx = out.gt(threshold).nonzero();
    selected_slow += hi_idx.size(0);
  }
  slow.stop();

  std::cout << "== The handbook's loop: ten iterations ==\n\n"
            << slow.key_averages().table("self_cpu_time_total", 12) << "\n";
  const std::string trace = dir + "/trace.json", report = dir + "/report.html";
  slow.export_chrome_trace(trace);
  prof::export_html_report(slow.result(), report);
  std::cout << "Trace written to " << trace << " (Perfetto, chrome://tracing or `brisk-prof " << trace << "`)\n"
            << "Report written to " << report << "\n\n";
  const std::vector<prof::Finding> before = prof::advise(slow.result());
  std::cout << prof::advice_text(before) << "\n";

  // ---- 2. the corrected loop -------------------------------------------------
  // The threshold and the mask stay tensors; the count is accumulated on the
  // tensor and read once, after the loop.
  Tensor selected = zeros({}, kLong);
  prof::profile fast(options());
  for (int i = 0; i < 10; ++i) {
    prof::record_function iteration("iteration");
    Tensor out = model->forward(x);
    prof::record_function mask("MASK INDICES");
    Tensor threshold = out.sum(1).mean();
    Tensor hi = out.gt(threshold);  // a mask of static shape instead of indices
    selected += hi.sum();
  }
  const int64_t selected_fast = selected.item<int64_t>();  // one read, outside the loop
  fast.stop();

  const std::vector<prof::Finding> after = prof::advise(fast.result());
  std::cout << "== The corrected loop ==\n\n" << fast.key_averages().table("self_cpu_time_total", 12) << "\n"
            << prof::advice_text(after) << "\n";
  std::printf("elements above the threshold: %lld (handbook loop) and %lld (corrected loop)\n",
              static_cast<long long>(selected_slow), static_cast<long long>(selected_fast));
  const bool found = has_rule(before, prof::Rule::SyncInLoop), gone = !has_rule(after, prof::Rule::SyncInLoop);
  std::printf("SyncInLoop: %s in the handbook loop, %s in the corrected loop\n", found ? "found" : "NOT found",
              gone ? "gone" : "STILL PRESENT");
  return found && gone && selected_slow == selected_fast ? 0 : 1;
}
