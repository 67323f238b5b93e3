// Internals of the profiler's advisor shared with the HTML report and the
// tests: the thresholds of the rules (docs/design/profiler.md, "Advisor") and
// the helpers that name where an event happened.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "brisk/profiler.h"

namespace brisk::profiler::advisor {

// Note [Advisor thresholds]
// Every threshold a rule uses is one of these constants; the docs list them.
// They are deliberately about counts and shapes rather than about time where
// a count says the same thing, so that a finding does not come and go with
// the machine's speed.

/// A call site (same name, same record_function scopes) seen this many times
/// is taken to be inside a loop.
inline constexpr int64_t kLoopMinRepeats = 3;
/// A record_function scope entered this many times is a loop body: a sync
/// inside it is in a loop even if the profile saw the sync fewer than
/// kLoopMinRepeats times.
inline constexpr int64_t kScopeMinRepeats = 2;
/// SyncInLoop: a call site is flagged only when it reads in more than this
/// share of the loop's iterations (reading every N >= 2 steps is the fix).
/// The iterations are the instances of the innermost repeated scope around
/// the call, else the optimizer steps or data-loader waits of the profile.
inline constexpr double kSyncMinIterationShare = 0.5;
/// LaunchBound: this many consecutive small ops on one thread make a stretch.
inline constexpr int64_t kLaunchBoundMinOps = 20;
/// Rule 10: consecutive pointwise ops, each over more than kSmallOpNumel
/// elements, that a compiled function would run as one pass over memory.
inline constexpr int64_t kFusableMinOps = 4;
/// LaunchBound, with record_shapes: an op is small when no tensor input has
/// more elements than this (4 KiB of float32: the work is far below the cost
/// of dispatching it, let alone of a GPU kernel launch).
inline constexpr int64_t kSmallOpNumel = 1024;
/// LaunchBound, for ops without recorded shapes: an op is small when it
/// takes less than this (a few microseconds: the order of a GPU launch).
inline constexpr int64_t kSmallOpNs = 5000;
/// AllocatingOps: an out-of-place op at one call site allocating this many
/// times is in a hot loop.
inline constexpr int64_t kAllocatingOpMinCount = 10;
/// AllocatingOps: events of one call site missing the allocator cache this
/// many times after warm-up (see rule_allocating_ops).
inline constexpr int64_t kCacheMissMinCount = kLoopMinRepeats;
/// AllocatingOps: ... and those misses are at least this share of the call
/// site's allocating events (a rare miss is the cache being trimmed, not a
/// pattern).
inline constexpr double kCacheMissMinShare = 0.25;
/// AllocatingOps, the estimated cost of an allocation the in-place or out=
/// form would avoid: an allocator round trip and a TensorImpl (the time is
/// not measured separately from the op's).
inline constexpr int64_t kAllocationCostNs = 200;
/// AllocatingOps, the estimated cost of first touching a fresh 4 KiB page
/// (a page fault and the kernel zeroing it), paid by allocations that miss
/// the cache.
inline constexpr int64_t kFirstTouchNsPerPage = 250;
/// GradModeInference: ops that recorded a graph no backward consumed, at
/// least this many.
inline constexpr int64_t kGradModeMinOps = kLoopMinRepeats;
/// DataLoaderStall: waits for batches taking more than this share of the
/// profile's duration.
inline constexpr double kDataLoaderStallShare = 0.10;
/// At most this many call sites are listed in Finding::where.
inline constexpr size_t kMaxWhere = 5;

/// The record_function scopes enclosing event `i`, outermost first: its
/// Event::stack when recorded (without the event itself), else the names of
/// its UserScope ancestors through the parent links.
std::vector<std::string> scopes_of(const ProfileResult& r, size_t i);
/// "name (outer > inner)", or "name" outside any scope.
std::string where_of(const ProfileResult& r, size_t i);
/// "12.345ms", "3.210us", "950ns": PyTorch's table units.
std::string format_duration(int64_t ns);

/// A Copy event's detail, "SRC->DST" followed by the words "non_blocking"
/// and/or "pinned" when they apply ("cpu->cuda:0 non_blocking pinned").
struct CopyDetail {
  std::string src, dst;
  bool non_blocking = false;
  bool pinned = false;
  bool valid = false;  ///< the detail had the "SRC->DST" form
  bool host_to_device() const;
};
CopyDetail parse_copy_detail(const std::string& detail);

}  // namespace brisk::profiler::advisor
