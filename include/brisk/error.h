// brisk::Error and the check macros used by every op front end.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace brisk {

/// The exception every user mistake raises. The message starts with the op
/// name in brackets: "[add] shapes [2, 3] and [4] cannot be broadcast".
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

/// A broken invariant inside brisk (BRISK_INTERNAL_ASSERT): a bug in brisk,
/// never the caller's mistake. Derived from Error so that code catching
/// brisk::Error still sees it; tests and tools can tell the two apart.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& msg) : Error(msg) {}
};

namespace detail {
template <class... Args>
[[noreturn]] __attribute__((noinline, cold)) void throw_error(const char* op, const Args&... args) {
  std::ostringstream os;
  os << '[' << op << "] ";
  (os << ... << args);
  throw Error(os.str());
}
[[noreturn]] void internal_assert_fail(const char* file, int line, const char* cond);
/// Throws InternalError("internal assert failed at file:line, please report a
/// bug: cond (details)").
[[noreturn]] void internal_assert_fail_msg(const char* file, int line, const char* cond, const std::string& details);
template <class... Args>
[[noreturn]] __attribute__((noinline, cold)) void internal_assert_fail_args(const char* file, int line,
                                                                            const char* cond, const Args&... args) {
  std::ostringstream os;
  ((os << args), ...);
  internal_assert_fail_msg(file, line, cond, os.str());
}
}  // namespace detail

}  // namespace brisk

#define BRISK_LIKELY(x) __builtin_expect(!!(x), 1)
#define BRISK_UNLIKELY(x) __builtin_expect(!!(x), 0)
/// For the few-instruction checks every op runs (grad mode, requires grad,
/// version bumps): a call there costs more than the check.
#define BRISK_ALWAYS_INLINE inline __attribute__((always_inline))
/// Thread-locals on the per-op path: the initial-exec model makes an access
/// one %fs-relative load instead of a call to __tls_get_addr (which took 15%
/// of `empty({3,3})`). brisk is linked at program start, not dlopen'ed.
#define BRISK_TLS_FAST [[gnu::tls_model("initial-exec")]]

/// User error: `BRISK_CHECK(cond, "add", "shapes ", a, " and ", b, " differ")`.
#define BRISK_CHECK(cond, op, ...)                                  \
  do {                                                              \
    if (BRISK_UNLIKELY(!(cond))) ::brisk::detail::throw_error(op, __VA_ARGS__); \
  } while (0)

/// Unconditional user error.
#define BRISK_FAIL(op, ...) ::brisk::detail::throw_error(op, __VA_ARGS__)

/// Broken invariant inside brisk, not a user mistake (those are BRISK_CHECK):
/// `BRISK_INTERNAL_ASSERT(plan.ndim <= kMaxDims, "ndim ", plan.ndim)` throws
/// brisk::InternalError "internal assert failed at file:line, please report a
/// bug: <cond> (<message>)". Kept on in release builds: a broken invariant must
/// not turn into a wrong value.
#define BRISK_INTERNAL_ASSERT(cond, ...)                                                                  \
  do {                                                                                                    \
    if (BRISK_UNLIKELY(!(cond)))                                                                          \
      ::brisk::detail::internal_assert_fail_args(__FILE__, __LINE__, #cond __VA_OPT__(, ) __VA_ARGS__);  \
  } while (0)

/// The older spelling of BRISK_INTERNAL_ASSERT without a message.
#define BRISK_ASSERT(cond) BRISK_INTERNAL_ASSERT(cond)
