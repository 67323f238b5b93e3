// TensorOptions: dtype, device, requires_grad, as in libtorch.
#pragma once
#include <optional>

#include "brisk/device.h"
#include "brisk/dtype.h"

namespace brisk {

enum class MemoryFormat : int8_t { Contiguous, ChannelsLast, Preserve };
constexpr MemoryFormat kContiguous = MemoryFormat::Contiguous;
constexpr MemoryFormat kChannelsLast = MemoryFormat::ChannelsLast;
constexpr MemoryFormat kPreserve = MemoryFormat::Preserve;

/// Options for factories: `brisk::dtype(kFloat16).device(kCUDA)`. A dtype or a
/// device converts to options implicitly.
struct TensorOptions {
  std::optional<ScalarType> dtype_;
  Device device_ = Device(kCPU);
  bool requires_grad_ = false;
  /// Whether device_ was given (the *_like factories keep the input's device otherwise).
  bool has_device_ = false;

  TensorOptions() = default;
  TensorOptions(ScalarType t) : dtype_(t) {}
  TensorOptions(Device d) : device_(d), has_device_(true) {}
  TensorOptions(DeviceType d) : device_(d), has_device_(true) {}

  TensorOptions dtype(ScalarType t) const {
    auto o = *this;
    o.dtype_ = t;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    o.has_device_ = true;
    return o;
  }
  TensorOptions requires_grad(bool r = true) const {
    auto o = *this;
    o.requires_grad_ = r;
    return o;
  }
  ScalarType dtype_or_default() const { return dtype_ ? *dtype_ : default_dtype(); }
};
inline TensorOptions dtype(ScalarType t) { return TensorOptions(t); }
inline TensorOptions device(Device d) { return TensorOptions(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

}  // namespace brisk
