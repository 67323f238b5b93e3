// The bookkeeping both code generators (codegen_cpu.cpp, codegen_cuda.cpp)
// keep while they emit a fused group's calls in order: with which geometry
// each buffer is read and written, and which value an earlier call of the
// group left in it. A buffer read and written with two geometries (a
// transposed read of what the group writes, a view as another dtype) would
// make one element's code read what another element's code writes: such a
// group is not generated.
#pragma once
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "compile/graph.h"

namespace brisk::jit {

/// An operand's geometry in a group: buffer, byte offset, the byte strides
/// of the group's (up to) two dims, dtype.
struct OperandGeometry {
  int buf = -1;
  int64_t offset = 0, s0 = 0, s1 = 0;
  ScalarType dt = kFloat;
  auto key() const { return std::make_tuple(buf, offset, s0, s1, static_cast<int>(dt)); }
  bool operator<(const OperandGeometry& o) const { return key() < o.key(); }
  bool operator==(const OperandGeometry& o) const { return key() == o.key(); }
};
inline OperandGeometry geometry_of(const Operand& op, int ndim) {
  return {op.buf, op.offset, op.strides[0], ndim > 1 ? op.strides[1] : 0, op.dtype};
}

/// Value: the generator's handle of a value (a block, a register variable).
template <class Value>
class GroupBuffers {
 public:
  explicit GroupBuffers(const Group& grp) : grp_(grp) {}

  /// A temp written and read only inside the group (never in memory).
  bool internal(int buf) const {
    for (int b : grp_.internal)
      if (b == buf) return true;
    return false;
  }
  /// A read of geometry gm: the value an earlier call of the group wrote
  /// there, or null when it comes from memory (then the read is noted).
  /// Sets `why` (and returns null) when the group cannot be generated.
  const Value* read(const OperandGeometry& gm, std::string& why) {
    if (auto w = written_geo_.find(gm.buf); w != written_geo_.end()) {
      if (!(w->second == gm))
        why = "buffer " + std::to_string(gm.buf) + " is written and read with two layouts or dtypes";
      return why.empty() ? &cur_.at(gm.buf) : nullptr;
    }
    if (internal(gm.buf)) why = "an internal temp is read before the group writes it";
    read_geos_[gm.buf].push_back(gm);
    return nullptr;
  }
  /// Whether a write of geometry gm is possible ("" if so, else why not).
  std::string check_write(const OperandGeometry& gm) {
    if (auto w = written_geo_.find(gm.buf); w != written_geo_.end()) {
      if (!(w->second == gm)) return "buffer " + std::to_string(gm.buf) + " is written with two layouts or dtypes";
    } else {
      for (const OperandGeometry& r : read_geos_[gm.buf])
        if (!(r == gm)) return "buffer " + std::to_string(gm.buf) + " is read and written with two layouts or dtypes";
    }
    return "";
  }
  /// Records a write (after check_write): v is the buffer's value from now
  /// on; returns whether it leaves the group (then last_write() has it).
  bool wrote(const OperandGeometry& gm, const Value& v) {
    written_geo_[gm.buf] = gm;
    cur_[gm.buf] = v;
    if (internal(gm.buf)) return false;
    last_write_[gm.buf] = v;
    return true;
  }
  /// The buffers the group stores, with their final values.
  const std::map<int, Value>& last_write() const { return last_write_; }
  const OperandGeometry& written_geometry(int buf) const { return written_geo_.at(buf); }

 private:
  const Group& grp_;
  std::map<int, OperandGeometry> written_geo_;              // buffer -> the one geometry the group writes it with
  std::map<int, std::vector<OperandGeometry>> read_geos_;  // buffer -> geometries read before any write
  std::map<int, Value> cur_;                               // buffer -> its current value
  std::map<int, Value> last_write_;                        // materialized buffer -> its final value
};

}  // namespace brisk::jit
