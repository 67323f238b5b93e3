// libtorch's c10:: spellings that ported code keeps (the rename of torch::
// and at:: leaves c10:: alone): c10::optional, c10::nullopt,
// c10::IntArrayRef, c10::Device, c10::str, ...
//
// Left out where libtorch's own headers are in the same translation unit
// (they define namespace c10 themselves; brisk's parity tests include both),
// and when BRISK_NO_C10_COMPAT is defined before brisk/brisk.h.
// c10::ScalarType is added with brisk's dtype aliases (brisk/dtype.h), not
// here.
#pragma once
#if !defined(BRISK_NO_C10_COMPAT) && !defined(C10_MACROS_MACROS_H_)
#include <optional>

#include "brisk/device.h"
#include "brisk/functions.h"
#include "brisk/half.h"
#include "brisk/scalar.h"
#include "brisk/shape.h"

namespace c10 {
using std::make_optional;
using std::nullopt;
using std::nullopt_t;
using std::optional;
using IntArrayRef = brisk::IntArrayRef;
using brisk::BFloat16;
using brisk::Device;
using brisk::DeviceType;
using brisk::Half;
using brisk::Scalar;
using brisk::str;
using brisk::kCPU;
using brisk::kCUDA;
}  // namespace c10
#endif
