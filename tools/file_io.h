// Reading and writing the files named on kiln's command line.
#ifndef KILN_TOOLS_FILE_IO_H_
#define KILN_TOOLS_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::tools {

// `bazel run` starts the binary in its runfiles directory; relative paths the
// user typed are meant relative to where they ran bazel, which Bazel passes in
// BUILD_WORKING_DIRECTORY. Absolute paths and "-" are returned unchanged.
std::string ResolveUserPath(absl::string_view path);

// The whole file ("-" reads stdin). Errors name the path and the
// reason ("no such file or directory", "is a directory", ...).
absl::StatusOr<std::string> ReadFileToString(absl::string_view path);

// Writes `contents` to a temporary file next to `path` and renames it over
// `path`, so readers never see a half-written file and a failed write leaves
// the old file alone. "-" writes to stdout. (support/atomic_file.h with the
// user's path resolved.)
absl::Status WriteFileAtomically(absl::string_view path, absl::string_view contents);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_FILE_IO_H_
