#include "tools/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln::tools {
namespace {

absl::Status ErrnoError(absl::string_view path, absl::string_view what, int error) {
  const std::string reason = strerror(error);
  std::string message = absl::StrCat(path, ": ", what, what.empty() ? "" : ": ", reason);
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

// Reads fd to the end, retrying short reads and EINTR.
absl::Status ReadAll(int fd, absl::string_view path, std::string* out) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    out->reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n == 0) return absl::OkStatus();
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path, "", errno);
    }
    out->append(buffer, static_cast<size_t>(n));
  }
}

absl::Status WriteAll(int fd, absl::string_view path, absl::string_view contents) {
  while (!contents.empty()) {
    const ssize_t n = write(fd, contents.data(), contents.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path, "write failed", errno);
    }
    contents.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ResolveUserPath(absl::string_view path) {
  if (path.empty() || path == "-" || path[0] == '/') return std::string(path);
  const char* base = std::getenv("BUILD_WORKING_DIRECTORY");
  if (base == nullptr || base[0] == '\0') return std::string(path);
  return absl::StrCat(base, "/", path);
}

absl::StatusOr<std::string> ReadFileToString(absl::string_view path) {
  std::string contents;
  if (path == "-") {
    RETURN_IF_ERROR(ReadAll(STDIN_FILENO, "<stdin>", &contents));
    return contents;
  }
  const std::string resolved = ResolveUserPath(path);
  const int fd = open(resolved.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "", errno);
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return ErrnoError(path, "", EISDIR);
  }
  absl::Status status = ReadAll(fd, path, &contents);
  close(fd);
  if (!status.ok()) return status;
  return contents;
}

absl::Status WriteFileAtomically(absl::string_view path, absl::string_view contents) {
  if (path == "-") {
    return WriteAll(STDOUT_FILENO, "<stdout>", contents);
  }
  const std::string resolved = ResolveUserPath(path);
  std::string temp_path = absl::StrCat(resolved, ".tmp.XXXXXX");
  const int fd = mkstemp(temp_path.data());
  if (fd < 0) return ErrnoError(path, "cannot create a temporary file next to it", errno);
  // mkstemp creates the file 0600; give it the permissions a plain create
  // would have had.
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);

  absl::Status status = WriteAll(fd, path, contents);
  if (close(fd) != 0 && status.ok()) status = ErrnoError(path, "write failed", errno);
  if (status.ok() && rename(temp_path.c_str(), resolved.c_str()) != 0) {
    status = ErrnoError(path, "cannot replace it", errno);
  }
  if (!status.ok()) unlink(temp_path.c_str());
  return status;
}

}  // namespace kiln::tools
