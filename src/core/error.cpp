#include "brisk/error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "brisk/version.h"

namespace brisk {
namespace detail {
namespace {
/// "src/nn/conv.cpp" from the build's absolute path of a brisk source.
const char* source_path(const char* file) {
  const char* best = nullptr;
  for (const char* dir : {"/src/", "/include/", "/tests/"})
    for (const char* p = std::strstr(file, dir); p; p = std::strstr(p + 1, dir))
      if (!best || p + 1 > best) best = p + 1;
  return best ? best : file;
}
}  // namespace

void internal_assert_fail_msg(const char* file, int line, const char* cond, const std::string& details) {
  std::ostringstream os;
  os << "internal assert failed at " << source_path(file) << ":" << line << ", please report a bug: " << cond;
  if (!details.empty()) os << " (" << details << ")";
  throw InternalError(os.str());
}
void internal_assert_fail(const char* file, int line, const char* cond) {
  internal_assert_fail_msg(file, line, cond, std::string());
}
}  // namespace detail
const char* version() { return "0.1.0"; }
}  // namespace brisk
