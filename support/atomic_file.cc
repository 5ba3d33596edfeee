#include "support/atomic_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kiln {
namespace {

absl::Status ErrnoError(absl::string_view path, absl::string_view what, int error) {
  const std::string message = absl::StrCat(path, ": ", what, what.empty() ? "" : ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::UnavailableError(message);
}

// Writes into a file opened with `flags` plus write-only, create and close
// on exec; errors name `name` (the file the caller asked for).
absl::Status WriteWithFlags(const std::string& path, absl::string_view name,
                            const std::vector<absl::string_view>& pieces, const FileWriteOptions& options, int flags,
                            absl::string_view create_error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, options.permissions);
  if (fd < 0) return ErrnoError(name, create_error, errno);
  absl::Status status = absl::OkStatus();
  for (size_t i = 0; status.ok() && i < pieces.size(); ++i) status = WriteAllTo(fd, name, pieces[i]);
  if (status.ok() && options.sync && ::fsync(fd) != 0) status = ErrnoError(name, "fsync failed", errno);
  if (::close(fd) != 0 && status.ok()) status = ErrnoError(name, "write failed", errno);
  return status;
}

}  // namespace

absl::StatusOr<std::string> ReadAllFrom(int fd, absl::string_view name) {
  std::string out;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    out.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) return out;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(name, "", errno);
    }
    out.append(buffer, static_cast<size_t>(n));
  }
}

absl::Status WriteAllTo(int fd, absl::string_view name, absl::string_view contents) {
  while (!contents.empty()) {
    const ssize_t n = ::write(fd, contents.data(), contents.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(name, "write failed", errno);
    }
    contents.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFile(absl::string_view path) {
  const std::string p(path);
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "", errno);
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return ErrnoError(path, "", EISDIR);
  }
  absl::StatusOr<std::string> contents = ReadAllFrom(fd, path);
  ::close(fd);
  return contents;
}

absl::StatusOr<MappedFile> MappedFile::Open(absl::string_view path, const MapOptions& options) {
  const std::string p(path);
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (options.no_follow ? O_NOFOLLOW : 0));
  if (fd < 0 && errno == ELOOP && options.no_follow) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": a symbolic link (refused)"));
  }
  if (fd < 0) return ErrnoError(path, "", errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(path, "", error);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return ErrnoError(path, "", EISDIR);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file (it cannot be mapped)"));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return MappedFile(nullptr, 0);
  }
  // Populated: the whole file is read by its callers, and one call maps it
  // cheaper than a fault per page.
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  const int error = errno;
  ::close(fd);  // the mapping keeps the file
  if (data == MAP_FAILED) return ErrnoError(path, "cannot map it", error);
  return MappedFile(data, size);
}

MappedFile::MappedFile(MappedFile&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

absl::Status WriteFile(absl::string_view path, absl::string_view contents, const FileWriteOptions& options) {
  return WriteWithFlags(std::string(path), path, {contents}, options, O_TRUNC, "cannot create");
}

absl::Status WriteFileAtomically(absl::string_view path, absl::string_view contents,
                                 const FileWriteOptions& options) {
  return WriteFileAtomically(path, std::vector<absl::string_view>{contents}, options);
}

absl::Status WriteFileAtomically(absl::string_view path, const std::vector<absl::string_view>& pieces,
                                 const FileWriteOptions& options) {
  // A fresh name per call (O_EXCL): concurrent writers never share a
  // temporary, and open() applies the umask itself (no process-wide umask
  // juggling, which would race with other threads).
  const std::string target(path);
  const std::string temp = absl::StrCat(target, UniqueTempSuffix());
  absl::Status status =
      WriteWithFlags(temp, path, pieces, options, O_EXCL, "cannot create a temporary file next to it");
  if (status.ok() && ::rename(temp.c_str(), target.c_str()) != 0) {
    status = ErrnoError(path, "cannot replace it", errno);
  }
  if (!status.ok()) ::unlink(temp.c_str());
  return status;
}

std::string UniqueTempSuffix() {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(".tmp.", ::getpid(), ".", std::hash<std::thread::id>()(std::this_thread::get_id()) % 1000000,
                      ".", counter.fetch_add(1));
}

absl::Status MakeDirectories(absl::string_view path, int permissions) {
  std::string partial;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    absl::StrAppend(&partial, part, "/");
    if (part.empty()) continue;
    if (::mkdir(partial.c_str(), static_cast<mode_t>(permissions)) != 0 && errno != EEXIST) {
      return ErrnoError(partial, "cannot create directory", errno);
    }
  }
  struct stat st;
  const std::string p(path);
  if (::stat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
  }
  return absl::OkStatus();
}

ExclusiveFileLock::ExclusiveFileLock(const std::string& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ >= 0) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
}

ExclusiveFileLock::~ExclusiveFileLock() {
  if (fd_ >= 0) {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
}

}  // namespace kiln
