#include <ostream>

#include "brisk/device.h"
#include "brisk/error.h"

namespace brisk {

Device::Device(const std::string& spec) {
  std::string s = spec;
  auto colon = s.find(':');
  std::string kind = s.substr(0, colon);
  if (kind == "cpu") {
    type = kCPU;
  } else if (kind == "cuda") {
    type = kCUDA;
  } else {
    BRISK_FAIL("Device", "expected a device string like 'cpu', 'cuda' or 'cuda:1', got '", spec, "'");
  }
  if (colon != std::string::npos) {
    std::string idx = s.substr(colon + 1);
    BRISK_CHECK(!idx.empty() && idx.size() <= 3 && idx.find_first_not_of("0123456789") == std::string::npos,
                "Device", "invalid device index in '", spec, "'");
    int i = std::stoi(idx);
    BRISK_CHECK(i < 128, "Device", "device index ", i, " is too large");
    BRISK_CHECK(type != kCPU || i == 0, "Device", "cpu has only device index 0, got '", spec, "'");
    index = static_cast<int8_t>(i);
  }
}

std::string Device::str() const {
  std::string s = type == kCPU ? "cpu" : "cuda";
  if (index >= 0 && type != kCPU) s += ":" + std::to_string(index);
  return s;
}
std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
std::ostream& operator<<(std::ostream& os, DeviceType t) { return os << (t == kCPU ? "cpu" : "cuda"); }
namespace detail {
std::ostream& operator<<(std::ostream& os, DeviceTypeField t) { return os << t.value; }
std::ostream& operator<<(std::ostream& os, DeviceIndexField i) { return os << static_cast<int>(i.value); }
}  // namespace detail

}  // namespace brisk
