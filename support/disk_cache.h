// The one on-disk cache protocol of kiln's backends (the CPU's shared
// libraries, CUDA's cubins): where caches live, how keys are made, and how
// entries are found, built, published and evicted.
//
// Where: one root for every backend, a subdirectory per backend
// (CacheDirectory("cpu"), CacheDirectory("cuda")). The root is
//   KILN_CACHE_DIR                  when set (the root itself), else
//   $XDG_CACHE_HOME/kiln            when set, else
//   $HOME/.cache/kiln               when set, else
//   <home in the password database>/.cache/kiln, else
//   none: FailedPrecondition asking for KILN_CACHE_DIR (no fallback to a
//   predictable /tmp path, which another local user could create first).
// Directories are created with mode 0700 and checked before use
// (CheckPrivateDirectory): cached code gets loaded into the process, so a
// directory another user can write to is refused, with a message that says
// to set KILN_CACHE_DIR.
//
// Entries: `<key><suffix>` (the artifact, e.g. `.so`), a checksum sidecar
// `<key>.sum` ("<magic> <size> <XXH3-128 hex>") that says the artifact is
// complete and unchanged, extra files (`<key>.cc`: generated source kept
// for people) and `<key>.lock`. Every file is written to a temporary name
// (`*.tmp.<pid>.<thread>.<n>*`, support/atomic_file.h) and renamed into
// place, the artifact before its sidecar, so readers never see a partial
// entry. An entry that does not check out (missing, truncated, garbled) is
// rebuilt. Builds of one key are serialized across threads and processes by
// an flock on `<key>.lock`, and the lookup is repeated under it, so
// concurrent callers end with one build and one good entry.
//
// Housekeeping, after each build: temporaries older than
// `stale_temporary_seconds` (left by a process killed mid-compile) are
// removed, and while the directory holds more than `max_bytes`, the least
// recently used entries (by the artifact's access time, which every hit
// sets explicitly, so noatime/relatime mounts do not matter) are evicted,
// never the entry just built. The cap is per backend directory:
// KILN_CACHE_MAX_MB (0: unlimited), else 2048 MB, or the backend's option.
#ifndef KILN_SUPPORT_DISK_CACHE_H_
#define KILN_SUPPORT_DISK_CACHE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln {

// The root of every backend's cache (see above).
absl::StatusOr<std::string> CacheRoot();
// CacheRoot() + "/" + backend.
absl::StatusOr<std::string> CacheDirectory(absl::string_view backend);

// KILN_CACHE_MAX_MB in bytes when set (0: no cap), else 2048 MB.
// InvalidArgument when the variable is not a non-negative integer.
absl::StatusOr<uint64_t> DefaultCacheMaxBytes();

// OK when `path` is a directory (not a symlink) owned by this user and not
// writable by group or others, and each ancestor is owned by this user or
// root and, if others can write to it, sticky (/tmp). FailedPrecondition
// naming the directory and what is wrong otherwise.
absl::Status CheckPrivateDirectory(const std::string& path);

// Cache keys: XXH3-128 over length-prefixed fields (so field boundaries
// cannot shift), as 32 hex digits.
class CacheKeyBuilder {
 public:
  CacheKeyBuilder();
  ~CacheKeyBuilder();
  CacheKeyBuilder(const CacheKeyBuilder&) = delete;
  CacheKeyBuilder& operator=(const CacheKeyBuilder&) = delete;

  CacheKeyBuilder& Add(absl::string_view field);
  std::string Hex() const;

 private:
  void* state_;  // XXH3_state_t
};

// XXH3-128 of `data` as 32 hex digits.
std::string Xxh3Hex(absl::string_view data);

// Checksum sidecars: "<magic> <size> <checksum>\n": Xxh3Hex(contents) up to
// 8 MiB; above, XXH3-128 of each 8 MiB chunk's (canonical) XXH3-128, the
// chunks checked on up to 16 threads.
std::string ChecksumSidecar(absl::string_view magic, absl::string_view contents);
// The same for an artifact made of consecutive pieces.
std::string ChecksumSidecar(absl::string_view magic, const std::vector<absl::string_view>& pieces);
// OK when `sidecar` matches `contents` and `contents` starts with
// `content_prefix` (e.g. the ELF magic); DataLoss saying what does not.
absl::Status CheckChecksumSidecar(absl::string_view sidecar, absl::string_view magic, absl::string_view contents,
                                  absl::string_view content_prefix = "");

struct DiskCacheOptions {
  std::string directory;       // e.g. CacheDirectory("cpu")
  std::string magic;           // first field of every sidecar, e.g. "kiln-cpu-cache-v2"
  std::string suffix;          // of the artifact, e.g. ".so"
  std::string content_prefix;  // every valid artifact starts with it ("" for any)
  // 0: no cap; unset: DefaultCacheMaxBytes().
  std::optional<uint64_t> max_bytes;
  int64_t stale_temporary_seconds = 3600;
  bool sync = true;  // fsync artifacts before publishing them
};

// What a build hands to the cache.
struct CacheArtifact {
  std::string contents;
  // Written beside the entry, unchecked: (suffix, contents), e.g. {".cc", source}.
  std::vector<std::pair<std::string, std::string>> extras;
};

// A valid entry's artifact mapped read-only (PROT_READ, MAP_PRIVATE), for
// artifacts read in place rather than copied (the driver's program cache:
// a model's constants). `owner` unmaps when its last holder lets go;
// tensors over the bytes hold it.
struct MappedArtifact {
  std::shared_ptr<const void> owner;
  const char* data = nullptr;
  size_t size = 0;
  absl::string_view bytes() const { return absl::string_view(data, size); }
};

struct DiskCacheEntry {
  std::string key;
  std::string path;      // of the artifact
  std::string contents;  // the artifact's bytes
  bool hit = false;      // found valid without building
  bool built = false;    // this call ran the build
};

// What the background publishes waited for came to: how many failed and
// the first failure (its key and why), so that the process can say its
// cache was not written instead of every later run silently compiling
// again.
struct BackgroundPublishReport {
  int failed = 0;
  std::string first_failure;  // "" when none failed
};

// Waits for every DiskCache::PublishInBackground of this process and
// reports the failures among those (then forgets them).
BackgroundPublishReport WaitForBackgroundPublishes();

class DiskCache {
 public:
  // Called with the key's lock held. `scratch` is a unique path prefix in
  // the cache directory for the build's own temporary files (they count as
  // temporaries, so a killed build's files are cleaned up later); the build
  // removes what it creates.
  using BuildFn = std::function<absl::StatusOr<CacheArtifact>(const std::string& scratch)>;

  explicit DiskCache(DiskCacheOptions options);

  const std::string& directory() const { return options_.directory; }
  const DiskCacheOptions& options() const { return options_; }
  std::string PathFor(absl::string_view key, absl::string_view suffix) const;

  // The artifact of a valid entry (NotFound, DataLoss otherwise).
  absl::StatusOr<std::string> Load(absl::string_view key) const;

  // Like Load, without copying: the artifact mapped and checked against its
  // sidecar (NotFound, DataLoss). A hit sets the entry's access time (LRU).
  // (A file truncated by another process after the check would still fault
  // on access; cache entries are only ever replaced by rename.)
  absl::StatusOr<MappedArtifact> Map(absl::string_view key) const;

  // Creates and checks the directory, then publishes `artifact` under `key`
  // (the artifact, then its sidecar, then the extras, each by rename) and
  // cleans up, keeping `key`. For caches that build outside GetOrBuild (the
  // program cache builds while compiling); a concurrent Publish of the same
  // key leaves one complete entry (last rename wins, both are valid).
  absl::Status Publish(const std::string& key, const CacheArtifact& artifact);
  // Publish for an artifact given as consecutive pieces, written and
  // checksummed in place (no concatenated copy of hundreds of MB).
  absl::Status Publish(const std::string& key, const std::vector<absl::string_view>& pieces);

  // Publish(key, pieces) on a background thread, so that a compile does not
  // wait while hundreds of MB are written and checksummed for the next
  // process; `keep_alive` owns what the pieces point into until then. A
  // failure goes to WaitForBackgroundPublishes' report (a later compile
  // misses and publishes again). Load
  // and Map first wait for every pending background publish (a process
  // finds what it stored), and so does the process's exit.
  void PublishInBackground(const std::string& key, std::vector<absl::string_view> pieces,
                           std::shared_ptr<const void> keep_alive) const;

  // Creates and checks the directory, then finds the entry or builds and
  // publishes it, then cleans up. A cache that cannot be written after a
  // successful build still returns the artifact (path then empty).
  absl::StatusOr<DiskCacheEntry> GetOrBuild(const std::string& key, const BuildFn& build);

  struct CleanupStats {
    int stale_temporaries = 0;  // removed
    int evicted_entries = 0;
    uint64_t bytes = 0;  // what the directory holds afterwards
  };
  // Removes stale temporaries and evicts least recently used entries until
  // the directory holds at most max_bytes; `keep`'s entry is never evicted.
  absl::StatusOr<CleanupStats> Cleanup(absl::string_view keep = "") const;

 private:
  // Writes the artifact, its sidecar and the extras by rename.
  absl::Status Write(const std::string& key, const CacheArtifact& artifact) const;

  DiskCacheOptions options_;
};

}  // namespace kiln

#endif  // KILN_SUPPORT_DISK_CACHE_H_
