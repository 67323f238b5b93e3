#include "brisk/error.h"

#include <cstdio>
#include <cstdlib>

#include "brisk/version.h"

namespace brisk {
namespace detail {
void internal_assert_fail_msg(const char* file, int line, const char* cond, const std::string& details) {
  std::ostringstream os;
  os << "internal assert failed at " << file << ":" << line << ", please report a bug: " << cond;
  if (!details.empty()) os << " (" << details << ")";
  throw InternalError(os.str());
}
void internal_assert_fail(const char* file, int line, const char* cond) {
  internal_assert_fail_msg(file, line, cond, std::string());
}
}  // namespace detail
const char* version() { return "0.1.0"; }
}  // namespace brisk
