// Writing a whole file atomically: readers see the old file or the new one,
// never a partial one.
#pragma once
#include <string>
#include <string_view>

namespace brisk::io {

/// Writes `data` to a temporary file next to `path`, fsyncs it, renames it
/// over `path` and fsyncs the directory. On any error the temporary file is
/// removed, `path` is untouched, and a brisk::Error "[op] ..." names the
/// file and the system's reason.
void write_file_atomic(const std::string& path, std::string_view data, const char* op);

}  // namespace brisk::io
