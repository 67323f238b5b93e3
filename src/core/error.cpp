#include "brisk/error.h"

#include <cstdio>
#include <cstdlib>

#include "brisk/version.h"

namespace brisk {
namespace detail {
void internal_assert_fail(const char* file, int line, const char* cond) {
  std::ostringstream os;
  os << "[internal] brisk assertion failed: " << cond << " at " << file << ":" << line
     << " (this is a bug in brisk, please report it)";
  throw Error(os.str());
}
}  // namespace detail
const char* version() { return "0.1.0"; }
}  // namespace brisk
