#include "support/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "support/atomic_file.h"
#include "support/parallel.h"
#include "support/status.h"
#include "xxhash.h"
#if defined(__x86_64__)
// The same library's x86 dispatch entry points (the macros there replace
// XXH3_128bits and XXH3_128bits_update): the same hashes, computed with
// AVX2 / AVX-512 where the CPU has them. Debian builds the plain functions
// for SSE2: checking a 415 MB program cache entry took 70 ms, 26 ms here.
#include "xxh_x86dispatch.h"
#endif

namespace kiln {
namespace {

constexpr uint64_t kDefaultMaxBytes = 2048ull << 20;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

std::string WithoutTrailingSlashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// The home directory of the password database (not $HOME), "" if none.
std::string PasswdHome() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(static_cast<size_t>(size > 0 ? size : 16384));
  struct passwd pw;
  struct passwd* found = nullptr;
  if (::getpwuid_r(::getuid(), &pw, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->pw_dir == nullptr) {
    return "";
  }
  std::string home = found->pw_dir;
  return home == "/" ? "" : home;
}

absl::Status ErrnoStatus(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

std::string Hex128(XXH128_hash_t h) { return absl::StrFormat("%016x%016x", h.high64, h.low64); }

// A file of the cache directory, grouped by entry: the key is the name up
// to its first '.'.
struct FileInfo {
  std::string name;
  uint64_t bytes = 0;
  struct timespec atime {};
  struct timespec mtime {};
};

bool Older(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

}  // namespace

absl::StatusOr<std::string> CacheRoot() {
  if (std::string d = Env("KILN_CACHE_DIR"); !d.empty()) return WithoutTrailingSlashes(d);
  if (std::string d = Env("XDG_CACHE_HOME"); !d.empty()) return absl::StrCat(WithoutTrailingSlashes(d), "/kiln");
  if (std::string d = Env("HOME"); !d.empty()) return absl::StrCat(WithoutTrailingSlashes(d), "/.cache/kiln");
  if (std::string d = PasswdHome(); !d.empty()) return absl::StrCat(WithoutTrailingSlashes(d), "/.cache/kiln");
  return absl::FailedPreconditionError(
      "no directory for kiln's compile cache: HOME and XDG_CACHE_HOME are unset and the password database "
      "has no home directory for this user; set KILN_CACHE_DIR to a directory only you can write to");
}

absl::StatusOr<std::string> CacheDirectory(absl::string_view backend) {
  ASSIGN_OR_RETURN(std::string root, CacheRoot());
  return absl::StrCat(root, "/", backend);
}

absl::StatusOr<uint64_t> DefaultCacheMaxBytes() {
  const std::string v = Env("KILN_CACHE_MAX_MB");
  if (v.empty()) return kDefaultMaxBytes;
  uint64_t mb = 0;
  if (!absl::SimpleAtoi(v, &mb) || mb > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("KILN_CACHE_MAX_MB='", v, "': expected a size in megabytes (0: no limit)"));
  }
  return mb << 20;
}

// The cache holds code that gets loaded into the process, so nobody else
// may be able to put files in it: the directory must be ours, not a symlink,
// and not writable by group or others; each ancestor must be ours or root's
// and, if writable by others, sticky (/tmp). Otherwise another local user
// could plant an artifact whose checksum sidecar matches.
absl::Status CheckPrivateDirectory(const std::string& path) {
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
  if (ec) return absl::InternalError(absl::StrCat("cache directory ", path, ": ", ec.message()));
  const uid_t uid = ::getuid();
  struct stat st;
  if (::lstat(absolute.c_str(), &st) != 0) return ErrnoStatus(absl::StrCat("cannot stat ", absolute));
  if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cache directory ", absolute, " must be a directory (not a symlink) owned by uid ", uid,
        " and not writable by group or others; refusing to load code from it (set KILN_CACHE_DIR)"));
  }
  std::filesystem::path ancestor = std::filesystem::path(absolute).parent_path();
  while (true) {
    if (::stat(ancestor.c_str(), &st) != 0) return ErrnoStatus(absl::StrCat("cannot stat ", ancestor.string()));
    const bool owner_ok = st.st_uid == uid || st.st_uid == 0;
    const bool writable_by_others = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
    if (!owner_ok || (writable_by_others && (st.st_mode & S_ISVTX) == 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cache directory ", absolute, ": its ancestor ", ancestor.string(),
          " can be changed by another user; refusing to load code from it (set KILN_CACHE_DIR)"));
    }
    if (ancestor == ancestor.root_path() || !ancestor.has_relative_path()) break;
    ancestor = ancestor.parent_path();
  }
  return absl::OkStatus();
}

CacheKeyBuilder::CacheKeyBuilder() : state_(XXH3_createState()) {
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

CacheKeyBuilder::~CacheKeyBuilder() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

CacheKeyBuilder& CacheKeyBuilder::Add(absl::string_view field) {
  const std::string length = absl::StrCat(field.size(), ":");
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), length.data(), length.size());
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), field.data(), field.size());
  return *this;
}

std::string CacheKeyBuilder::Hex() const { return Hex128(XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_))); }

std::string Xxh3Hex(absl::string_view data) { return Hex128(XXH3_128bits(data.data(), data.size())); }

namespace {

// A sidecar's checksum: XXH3-128 of the contents up to kChecksumChunk
// bytes; above, XXH3-128 of the chunks' XXH3-128s (canonical form), so that
// checking a large artifact hashes its chunks on several threads (a
// program cache hit checks a 435 MB entry and 340 MB of packed weights).
constexpr size_t kChecksumChunk = size_t{8} << 20;
constexpr size_t kMaxChecksumThreads = 16;

std::string CombinedChunks(const std::vector<XXH128_canonical_t>& chunks) {
  return Hex128(XXH3_128bits(chunks.data(), chunks.size() * sizeof(XXH128_canonical_t)));
}

std::string ContentChecksum(absl::string_view data) {
  if (data.size() <= kChecksumChunk) return Xxh3Hex(data);
  const size_t n = (data.size() + kChecksumChunk - 1) / kChecksumChunk;
  std::vector<XXH128_canonical_t> chunks(n);
  ParallelFor(n, std::min(kMaxChecksumThreads, HardwareThreads()), [&](size_t i) {
    const size_t at = i * kChecksumChunk;
    XXH128_canonicalFromHash(&chunks[i], XXH3_128bits(data.data() + at, std::min(kChecksumChunk, data.size() - at)));
  });
  return CombinedChunks(chunks);
}

// The same over consecutive pieces (one thread: publishing is not waited for).
std::string ContentChecksum(const std::vector<absl::string_view>& pieces) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  std::vector<XXH128_canonical_t> chunks;
  size_t in_chunk = 0;
  size_t size = 0;
  for (absl::string_view p : pieces) {
    size += p.size();
    while (!p.empty()) {
      if (in_chunk == kChecksumChunk) {
        chunks.emplace_back();
        XXH128_canonicalFromHash(&chunks.back(), XXH3_128bits_digest(state));
        XXH3_128bits_reset(state);
        in_chunk = 0;
      }
      const size_t take = std::min(p.size(), kChecksumChunk - in_chunk);
      XXH3_128bits_update(state, p.data(), take);
      in_chunk += take;
      p.remove_prefix(take);
    }
  }
  const XXH128_hash_t last = XXH3_128bits_digest(state);
  XXH3_freeState(state);
  if (size <= kChecksumChunk) return Hex128(last);
  chunks.emplace_back();
  XXH128_canonicalFromHash(&chunks.back(), last);
  return CombinedChunks(chunks);
}

}  // namespace

std::string ChecksumSidecar(absl::string_view magic, absl::string_view contents) {
  return absl::StrCat(magic, " ", contents.size(), " ", ContentChecksum(contents), "\n");
}

std::string ChecksumSidecar(absl::string_view magic, const std::vector<absl::string_view>& pieces) {
  size_t size = 0;
  for (absl::string_view p : pieces) size += p.size();
  return absl::StrCat(magic, " ", size, " ", ContentChecksum(pieces), "\n");
}

absl::Status CheckChecksumSidecar(absl::string_view sidecar, absl::string_view magic, absl::string_view contents,
                                  absl::string_view content_prefix) {
  const std::vector<absl::string_view> fields = absl::StrSplit(absl::StripTrailingAsciiWhitespace(sidecar), ' ');
  uint64_t size = 0;
  if (fields.size() != 3 || fields[0] != magic || !absl::SimpleAtoi(fields[1], &size)) {
    return absl::DataLossError("malformed checksum sidecar");
  }
  if (size != contents.size() || !absl::StartsWith(contents, content_prefix)) {
    return absl::DataLossError(absl::StrCat("size ", contents.size(), " does not match the sidecar's ", size,
                                            content_prefix.empty() ? "" : " or the content is not of its kind"));
  }
  if (ContentChecksum(contents) != fields[2]) return absl::DataLossError("checksum mismatch");
  return absl::OkStatus();
}

namespace {

// The background publishes in flight; the process's exit (this object's
// destructor, a function-local static) joins them. A forked child has none
// of the parent's threads: it forgets them (never joins them at its exit).
class BackgroundPublishes {
 public:
  static BackgroundPublishes& Get() {
    static BackgroundPublishes publishes;
    static const int registered = ::pthread_atfork(nullptr, nullptr, [] { Get().ForgetAfterFork(); });
    (void)registered;
    return publishes;
  }
  ~BackgroundPublishes() { Wait(); }
  void Start(std::function<void()> work) {
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back(std::move(work));
  }
  BackgroundPublishReport Wait() {
    std::vector<std::thread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(threads_);
    }
    for (std::thread& t : threads) t.join();
    std::lock_guard<std::mutex> lock(mu_);
    BackgroundPublishReport report;
    std::swap(report, report_);
    return report;
  }
  void Fail(const std::string& why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (report_.failed++ == 0) report_.first_failure = why;
  }
  void ForgetAfterFork() {
    // The parent's lock may have been held by a thread the child lacks.
    new (&mu_) std::mutex();
    // Neither joinable nor detachable here; destroying a joinable
    // std::thread would terminate.
    new std::vector<std::thread>(std::move(threads_));
    threads_.clear();
    report_ = BackgroundPublishReport();
  }

 private:
  std::mutex mu_;
  std::vector<std::thread> threads_;
  BackgroundPublishReport report_;
};

}  // namespace

BackgroundPublishReport WaitForBackgroundPublishes() { return BackgroundPublishes::Get().Wait(); }

void DiskCache::PublishInBackground(const std::string& key, std::vector<absl::string_view> pieces,
                                    std::shared_ptr<const void> keep_alive) const {
  BackgroundPublishes::Get().Start([cache = *this, key, pieces = std::move(pieces),
                                    keep_alive = std::move(keep_alive)]() mutable {
    const absl::Status published = cache.Publish(key, pieces);
    keep_alive.reset();
    if (!published.ok()) {
      BackgroundPublishes::Get().Fail(absl::StrCat(cache.PathFor(key, cache.options().suffix), ": ",
                                                   published.message()));
    }
  });
}

DiskCache::DiskCache(DiskCacheOptions options) : options_(std::move(options)) {
  options_.directory = WithoutTrailingSlashes(options_.directory);
}

std::string DiskCache::PathFor(absl::string_view key, absl::string_view suffix) const {
  return absl::StrCat(options_.directory, "/", key, suffix);
}

absl::StatusOr<std::string> DiskCache::Load(absl::string_view key) const {
  WaitForBackgroundPublishes();
  ASSIGN_OR_RETURN(std::string sidecar, ReadFile(PathFor(key, ".sum")));
  ASSIGN_OR_RETURN(std::string artifact, ReadFile(PathFor(key, options_.suffix)));
  const absl::Status valid = CheckChecksumSidecar(sidecar, options_.magic, artifact, options_.content_prefix);
  if (!valid.ok()) {
    return absl::DataLossError(absl::StrCat("cache entry ", PathFor(key, options_.suffix), ": ", valid.message()));
  }
  return artifact;
}

absl::StatusOr<DiskCacheEntry> DiskCache::GetOrBuild(const std::string& key, const BuildFn& build) {
  if (options_.directory.empty()) return absl::InvalidArgumentError("disk cache: no directory");
  RETURN_IF_ERROR(MakeDirectories(options_.directory, 0700));
  RETURN_IF_ERROR(CheckPrivateDirectory(options_.directory));
  DiskCacheEntry entry;
  entry.key = key;
  entry.path = PathFor(key, options_.suffix);
  auto hit = [&](std::string contents) {
    entry.contents = std::move(contents);
    entry.hit = true;
    // The access time orders eviction; set it here, whatever the mount's
    // atime policy.
    const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    ::utimensat(AT_FDCWD, entry.path.c_str(), times, 0);
    return entry;
  };
  if (absl::StatusOr<std::string> found = Load(key); found.ok()) return hit(std::move(*found));
  ExclusiveFileLock lock(PathFor(key, ".lock"));
  // Another thread or process may have built it while we waited.
  if (absl::StatusOr<std::string> found = Load(key); found.ok()) return hit(std::move(*found));

  ASSIGN_OR_RETURN(CacheArtifact artifact, build(PathFor(key, UniqueTempSuffix())));
  entry.built = true;
  const absl::Status s = Write(key, artifact);
  entry.contents = std::move(artifact.contents);
  if (!s.ok()) {
    // The artifact is in hand; only the cache could not keep it.
    entry.path.clear();
    return entry;
  }
  // Housekeeping failures (a file removed by a concurrent cleanup, ...) do
  // not fail the build.
  (void)Cleanup(key);
  return entry;
}

absl::Status DiskCache::Write(const std::string& key, const CacheArtifact& artifact) const {
  const FileWriteOptions file{0600, options_.sync};
  // The artifact first, then the sidecar that validates it: a reader never
  // sees a sidecar for an artifact that is not complete.
  absl::Status s = WriteFileAtomically(PathFor(key, options_.suffix), artifact.contents, file);
  if (s.ok()) s = WriteFileAtomically(PathFor(key, ".sum"), ChecksumSidecar(options_.magic, artifact.contents), file);
  for (size_t i = 0; s.ok() && i < artifact.extras.size(); ++i) {
    s = WriteFileAtomically(PathFor(key, artifact.extras[i].first), artifact.extras[i].second,
                            FileWriteOptions{0600, false});
  }
  return s;
}

absl::Status DiskCache::Publish(const std::string& key, const std::vector<absl::string_view>& pieces) {
  if (options_.directory.empty()) return absl::InvalidArgumentError("disk cache: no directory");
  RETURN_IF_ERROR(MakeDirectories(options_.directory, 0700));
  RETURN_IF_ERROR(CheckPrivateDirectory(options_.directory));
  const FileWriteOptions file{0600, options_.sync};
  // The artifact, then the sidecar that validates it (as Write).
  RETURN_IF_ERROR(WriteFileAtomically(PathFor(key, options_.suffix), pieces, file));
  RETURN_IF_ERROR(WriteFileAtomically(PathFor(key, ".sum"), ChecksumSidecar(options_.magic, pieces), file));
  (void)Cleanup(key);
  return absl::OkStatus();
}

absl::Status DiskCache::Publish(const std::string& key, const CacheArtifact& artifact) {
  if (options_.directory.empty()) return absl::InvalidArgumentError("disk cache: no directory");
  RETURN_IF_ERROR(MakeDirectories(options_.directory, 0700));
  RETURN_IF_ERROR(CheckPrivateDirectory(options_.directory));
  RETURN_IF_ERROR(Write(key, artifact));
  (void)Cleanup(key);
  return absl::OkStatus();
}

absl::StatusOr<MappedArtifact> DiskCache::Map(absl::string_view key) const {
  WaitForBackgroundPublishes();
  ASSIGN_OR_RETURN(std::string sidecar, ReadFile(PathFor(key, ".sum")));
  const std::string path = PathFor(key, options_.suffix);
  MapOptions no_links;
  no_links.no_follow = true;
  absl::StatusOr<MappedFile> file = MappedFile::Open(path, no_links);
  if (absl::IsInvalidArgument(file.status())) {  // a link or not a regular file: not an entry of ours
    return absl::DataLossError(absl::StrCat("cache entry ", file.status().message()));
  }
  if (!file.ok()) return file.status();
  // Shared: the artifact's users keep the mapping alive.
  auto owner = std::make_shared<const MappedFile>(*std::move(file));
  MappedArtifact mapped;
  mapped.data = owner->bytes().data();
  mapped.size = owner->bytes().size();
  mapped.owner = std::move(owner);
  const absl::Status valid = CheckChecksumSidecar(sidecar, options_.magic, mapped.bytes(), options_.content_prefix);
  if (!valid.ok()) return absl::DataLossError(absl::StrCat("cache entry ", path, ": ", valid.message()));
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ::utimensat(AT_FDCWD, path.c_str(), times, 0);
  return mapped;
}

absl::StatusOr<DiskCache::CleanupStats> DiskCache::Cleanup(absl::string_view keep) const {
  uint64_t max_bytes = 0;
  if (options_.max_bytes.has_value()) {
    max_bytes = *options_.max_bytes;
  } else {
    ASSIGN_OR_RETURN(max_bytes, DefaultCacheMaxBytes());
  }
  DIR* dir = ::opendir(options_.directory.c_str());
  if (dir == nullptr) return ErrnoStatus(absl::StrCat("cannot list ", options_.directory));
  std::vector<FileInfo> files;
  while (struct dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(::dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    files.push_back({name, static_cast<uint64_t>(st.st_size), st.st_atim, st.st_mtim});
  }
  ::closedir(dir);

  CleanupStats stats;
  const time_t now = ::time(nullptr);
  struct Entry {
    uint64_t bytes = 0;
    struct timespec used {};  // the artifact's access time
    std::vector<std::pair<std::string, uint64_t>> files;  // name, bytes
  };
  std::map<std::string, Entry> entries;
  for (const FileInfo& f : files) {
    if (absl::StrContains(f.name, ".tmp.")) {
      // A temporary: a build or write in progress, or left by a process
      // killed mid-build once it is old enough.
      if (now - f.mtime.tv_sec >= options_.stale_temporary_seconds &&
          ::unlink(PathFor(f.name, "").c_str()) == 0) {
        ++stats.stale_temporaries;
        continue;
      }
      stats.bytes += f.bytes;
      continue;
    }
    const std::string key = f.name.substr(0, f.name.find('.'));
    Entry& entry = entries[key];
    entry.bytes += f.bytes;
    entry.files.emplace_back(f.name, f.bytes);
    if (f.name == key + options_.suffix) entry.used = f.atime;
    stats.bytes += f.bytes;
  }
  if (max_bytes == 0 || stats.bytes <= max_bytes) return stats;
  std::vector<std::pair<std::string, const Entry*>> order;
  for (const auto& [key, entry] : entries) {
    if (key != keep) order.emplace_back(key, &entry);
  }
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return Older(a.second->used, b.second->used); });
  for (const auto& [key, entry] : order) {
    if (stats.bytes <= max_bytes) break;
    // The sidecar first: from then on readers treat the entry as missing.
    std::vector<std::pair<std::string, uint64_t>> doomed = entry->files;
    const std::string sidecar = key + ".sum";  // (C++17 lambdas cannot capture `key`)
    std::stable_partition(doomed.begin(), doomed.end(), [&](const auto& f) { return f.first == sidecar; });
    for (const auto& [name, bytes] : doomed) {
      if (::unlink(PathFor(name, "").c_str()) == 0) stats.bytes -= bytes;
    }
    ++stats.evicted_entries;
  }
  return stats;
}

}  // namespace kiln
