// Device identifiers: cpu and cuda:N.
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>

namespace brisk {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

/// A device: type plus index (-1 means "the current one" for cuda).
struct Device {
  DeviceType type = kCPU;
  int8_t index = -1;

  Device() = default;
  Device(DeviceType t, int index = -1) : type(t), index(static_cast<int8_t>(index)) {}
  /// Parses "cpu", "cuda", "cuda:1".
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  bool is_cpu() const { return type == kCPU; }
  bool is_cuda() const { return type == kCUDA; }
  std::string str() const;
  bool operator==(const Device& o) const {
    return type == o.type && (type == kCPU || index == o.index || index < 0 || o.index < 0);
  }
  bool operator!=(const Device& o) const { return !(*this == o); }
};
std::ostream& operator<<(std::ostream& os, const Device& d);
std::ostream& operator<<(std::ostream& os, DeviceType t);

}  // namespace brisk
