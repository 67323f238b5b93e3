// Stands in for bench_torch.cpp when CMake did not find libtorch: every
// libtorch column then reads "n/a" and the report says why.
#include "bench.h"

namespace bench {

std::string torch_version() { return ""; }
void torch_init() {}
Runner torch_runner(const Spec&) { return skip("built without libtorch"); }

}  // namespace bench
