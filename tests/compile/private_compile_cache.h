// A private compile cache directory (BRISK_COMPILE_CACHE) for a test binary
// of the code generators, removed when its tests end.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace brisk::testing {

/// The directory (made, and set as BRISK_COMPILE_CACHE, on first use).
inline const std::string& private_compile_cache(const char* prefix) {
  static const std::string dir = [prefix] {
    std::string tmpl = std::string("/tmp/") + prefix + "_XXXXXX";
    const char* d = mkdtemp(tmpl.data());
    std::string s = d ? d : std::string("/tmp/") + prefix;
    setenv("BRISK_COMPILE_CACHE", s.c_str(), 1);
    return s;
  }();
  return dir;
}

/// Makes the directory before the tests and removes it after them:
/// `::testing::AddGlobalTestEnvironment(new PrivateCompileCache("name"))`.
struct PrivateCompileCache : ::testing::Environment {
  explicit PrivateCompileCache(const char* p) : prefix(p) {}
  void SetUp() override { private_compile_cache(prefix); }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(private_compile_cache(prefix), ec);
  }
  const char* prefix;
};

}  // namespace brisk::testing
