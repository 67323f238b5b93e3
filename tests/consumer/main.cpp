// Smoke test of an installed brisk: the headers compile on their own, the
// library links and loads, and a small computation gives the right numbers.
// Exits non-zero on any mismatch.
#include <brisk/brisk.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

int main() {
  using namespace brisk;
  int failures = 0;
  auto check = [&](bool ok, const char* what) {
    if (!ok) {
      std::cerr << "consumer: FAILED: " << what << "\n";
      ++failures;
    }
  };

  // The installed headers and library come from the same build.
  std::string header_version = std::to_string(BRISK_VERSION_MAJOR) + "." + std::to_string(BRISK_VERSION_MINOR) + "." +
                               std::to_string(BRISK_VERSION_PATCH);
  check(header_version == version(), "version() matches brisk/version.h");

  // x: (2, 3) = [[0, 1, 2], [3, 4, 5]]; x.t(): (3, 2), a non-contiguous view.
  Tensor x = arange(6, kFloat).view({2, 3});
  Tensor xt = x.t();
  check(xt.data_ptr() == x.data_ptr() && !xt.is_contiguous(), "t() is a view");
  // Broadcast a (2,) row over (3, 2), then scale: (x.t() + [10, 20]) * 2.
  Tensor y = (xt + arange(10, 30, 10, kFloat)) * 2;
  std::vector<float> expected = {20, 46, 22, 48, 24, 50};
  check(y.sizes() == IntArrayRef({3, 2}), "result shape is [3, 2]");
  check(y.to_vector<float>() == expected, "(x.t() + [10, 20]) * 2");

  // User errors are brisk::Error exceptions naming the op.
  bool threw = false;
  try {
    x.view({4, 2});
  } catch (const Error& e) {
    threw = std::strstr(e.what(), "[view]") != nullptr;
  }
  check(threw, "view({4, 2}) of 6 elements throws brisk::Error starting with [view]");

  // compile's generated code finds its headers in the install tree
  // (share/brisk/codegen), not in the source tree the library came from.
  auto f = compile([](const Tensor& t) { return (t * 0.5).exp() + t; });
  Tensor v = arange(64, kFloat) / 7;
  f(v);
  Tensor w = f(v);
  check(w.equal((v * 0.5).exp() + v), "compiled (x * 0.5).exp() + x equals eager");
  check(f.stats().generated == 1, "the compiled group runs generated code");
  check(codegen_header_dir().find("/share/brisk/codegen") != std::string::npos,
        "generated code includes the installed headers");
  std::cout << "consumer: compile generated code with the headers in " << codegen_header_dir() << "\n";

  if (failures) return 1;
  std::cout << "consumer: brisk " << version() << " found, linked and computing correctly\n";
  return 0;
}
