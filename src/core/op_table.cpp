#include "core/op_table.h"

#include <string>
#include <unordered_map>

#include "core/dispatch.h"

namespace brisk {
namespace {

// The slot column names an OpId; `none` is -1.
namespace slots {
#define BRISK_SLOT(name, sig) constexpr int16_t name = static_cast<int16_t>(OpId::name);
BRISK_FORALL_OPS(BRISK_SLOT)
#undef BRISK_SLOT
constexpr int16_t none = -1;
}  // namespace slots

constexpr OpInfo kRows[] = {
#define BRISK_OP_ROW(name, kind, slot, dtypes, amp, cpu_amp, flags)                                   \
  {#name,          OpKind::kind,   slots::slot, DTypeClass::dtypes, AmpPolicy::amp, AmpPolicy::cpu_amp, \
   static_cast<uint8_t>(flags)},
    BRISK_FORALL_OP_ROWS(BRISK_OP_ROW)
#undef BRISK_OP_ROW
};
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kNumTableOps);

const std::unordered_map<std::string_view, const OpInfo*>& by_name() {
  static const auto* m = [] {
    auto* r = new std::unordered_map<std::string_view, const OpInfo*>();
    for (const OpInfo& i : kRows) r->emplace(i.name, &i);
    return r;
  }();
  return *m;
}

}  // namespace

const OpInfo& op_info(Op op) { return kRows[static_cast<int>(op)]; }

OpLookup find_op(std::string_view name) {
  const auto& m = by_name();
  if (auto it = m.find(name); it != m.end()) return {it->second, false, false};
  if (name.size() > 4 && name.substr(name.size() - 4) == "_out") {
    if (auto it = m.find(name.substr(0, name.size() - 4)); it != m.end() && it->second->has_out())
      return {it->second, false, true};
  }
  if (name.size() > 1 && name.back() == '_') {
    if (auto it = m.find(name.substr(0, name.size() - 1)); it != m.end() && it->second->has_inplace())
      return {it->second, true, false};
  }
  return {};
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Unary: return "Unary";
    case OpKind::Binary: return "Binary";
    case OpKind::Ternary: return "Ternary";
    case OpKind::Reduction: return "Reduction";
    case OpKind::Scan: return "Scan";
    case OpKind::Sort: return "Sort";
    case OpKind::View: return "View";
    case OpKind::Shape: return "Shape";
    case OpKind::Copy: return "Copy";
    case OpKind::Gemm: return "Gemm";
    case OpKind::Convolution: return "Convolution";
    case OpKind::Pooling: return "Pooling";
    case OpKind::Normalization: return "Normalization";
    case OpKind::Attention: return "Attention";
    case OpKind::Loss: return "Loss";
    case OpKind::Index: return "Index";
    case OpKind::Random: return "Random";
    case OpKind::Factory: return "Factory";
    case OpKind::Foreach: return "Foreach";
    case OpKind::Optimizer: return "Optimizer";
    case OpKind::Other: return "Other";
  }
  return "?";
}

const char* amp_policy_name(AmpPolicy a) {
  switch (a) {
    case AmpPolicy::Keep: return "Keep";
    case AmpPolicy::Lower: return "Lower";
    case AmpPolicy::Fp32: return "Fp32";
    case AmpPolicy::Promote: return "Promote";
    case AmpPolicy::Banned: return "Banned";
  }
  return "?";
}

}  // namespace brisk
