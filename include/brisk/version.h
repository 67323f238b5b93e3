#pragma once
#define BRISK_VERSION_MAJOR 0
#define BRISK_VERSION_MINOR 1
#define BRISK_VERSION_PATCH 0
namespace brisk {
/// "0.1.0"
const char* version();
}  // namespace brisk
