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

namespace detail {
// Note [Device fields that are also methods]
// brisk reads a device's parts as fields (`d.type`, `d.index`, also
// assigned); libtorch calls them (`d.type()`, `d.index()`). Each field is
// a one-byte value that converts to its value and is callable, so both
// spellings work, at no cost (Device stays two bytes, everything inline).
struct DeviceTypeField {
  DeviceType value = DeviceType::CPU;
  constexpr operator DeviceType() const { return value; }
  constexpr DeviceType operator()() const { return value; }
  constexpr explicit operator int() const { return static_cast<int>(value); }
  constexpr DeviceTypeField& operator=(DeviceType t) {
    value = t;
    return *this;
  }
};
struct DeviceIndexField {
  int8_t value = -1;
  constexpr operator int8_t() const { return value; }
  constexpr int8_t operator()() const { return value; }
  constexpr DeviceIndexField& operator=(int8_t i) {
    value = i;
    return *this;
  }
};
// Printed as their values (found by argument-dependent lookup here).
std::ostream& operator<<(std::ostream& os, DeviceTypeField t);
std::ostream& operator<<(std::ostream& os, DeviceIndexField i);
}  // namespace detail

/// A device: type plus index (-1 means "the current one" for cuda).
/// `d.type` / `d.index` (brisk) and `d.type()` / `d.index()` (libtorch)
/// both read them (Note [Device fields that are also methods]).
struct Device {
  detail::DeviceTypeField type;
  detail::DeviceIndexField index;

  Device() = default;
  Device(DeviceType t, int index = -1) : type{t}, index{static_cast<int8_t>(index)} {}
  /// Parses "cpu", "cuda", "cuda:1".
  Device(const std::string& spec);
  Device(const char* spec) : Device(std::string(spec)) {}

  bool is_cpu() const { return type == kCPU; }
  bool is_cuda() const { return type == kCUDA; }
  /// True unless the index is -1 ("the current device").
  bool has_index() const { return index >= 0; }
  std::string str() const;
  bool operator==(const Device& o) const {
    return type == o.type && (type == kCPU || index == o.index || index < 0 || o.index < 0);
  }
  bool operator!=(const Device& o) const { return !(*this == o); }
};
std::ostream& operator<<(std::ostream& os, const Device& d);
std::ostream& operator<<(std::ostream& os, DeviceType t);

}  // namespace brisk
