// File mechanics for on-disk caches and output files: whole-file reads and
// writes, atomic replacement (temporary file + rename, so readers never see
// a half-written file) and an exclusive flock held for a scope. The caches'
// protocol on top of them is support/disk_cache.h.
#ifndef KILN_SUPPORT_ATOMIC_FILE_H_
#define KILN_SUPPORT_ATOMIC_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln {

struct FileWriteOptions {
  // Of a newly created file, before the umask (as for open(2)).
  int permissions = 0666;
  // fsync before closing, so the data is on disk before a rename publishes it.
  bool sync = false;
};

// The whole file. NotFound / PermissionDenied / Unavailable naming the path
// and the reason ("No such file or directory", "Is a directory", ...).
absl::StatusOr<std::string> ReadFile(absl::string_view path);

// A whole file mapped read-only (MAP_PRIVATE), for large inputs parsed in
// place: no copy into the heap, whose fresh pages cost more than the page
// cache's. Regular files only; an empty file maps to an empty view.
struct MapOptions {
  // Refuse a path whose last component is a symbolic link (O_NOFOLLOW; the
  // caches, whose directories others could have planted links in).
  bool no_follow = false;
};

class MappedFile {
 public:
  // The errors of ReadFile; InvalidArgument for what is not a regular file
  // (or, with no_follow, a symbolic link).
  static absl::StatusOr<MappedFile> Open(absl::string_view path, const MapOptions& options = MapOptions());
  MappedFile() = default;  // empty
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  absl::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  void* data_ = nullptr;
  size_t size_ = 0;
};

// Reads `fd` to its end (retrying short reads); `name` is for errors.
absl::StatusOr<std::string> ReadAllFrom(int fd, absl::string_view name);

// Writes all of `contents` to `fd` (retrying short writes).
absl::Status WriteAllTo(int fd, absl::string_view name, absl::string_view contents);

// Creates or truncates `path` and writes `contents` (not atomic).
absl::Status WriteFile(absl::string_view path, absl::string_view contents,
                       const FileWriteOptions& options = FileWriteOptions());

// Writes `contents` to a temporary file next to `path` and renames it over
// `path`: readers see the old file or the new one, never a part, and a failed
// write leaves the old file alone (and no temporary behind).
absl::Status WriteFileAtomically(absl::string_view path, absl::string_view contents,
                                 const FileWriteOptions& options = FileWriteOptions());

// The same for a file made of consecutive pieces (no concatenated copy: the
// program cache writes hundreds of MB of constants this way).
absl::Status WriteFileAtomically(absl::string_view path, const std::vector<absl::string_view>& pieces,
                                 const FileWriteOptions& options = FileWriteOptions());

// A name suffix (".tmp.<pid>.<thread>.<n>") unique among the threads and
// processes of this machine, for temporary files next to their target.
std::string UniqueTempSuffix();

// Creates `path` and its missing parents with `permissions` (before the
// umask); an error when it exists but is not a directory.
absl::Status MakeDirectories(absl::string_view path, int permissions = 0700);

// Holds an exclusive flock on `path` (created if missing) for its lifetime,
// serializing threads and processes. Best effort: when the lock file cannot
// be opened the scope runs unlocked (locked() is false).
class ExclusiveFileLock {
 public:
  explicit ExclusiveFileLock(const std::string& path);
  ~ExclusiveFileLock();
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;

  bool locked() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace kiln

#endif  // KILN_SUPPORT_ATOMIC_FILE_H_
