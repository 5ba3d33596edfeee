#include "support/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "support/atomic_file.h"

namespace kiln {
namespace {

std::string FreshDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/disk_cache_test_", name, "_", ::getpid());
  std::string cmd = absl::StrCat("rm -rf '", dir, "'");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

DiskCacheOptions Options(const std::string& dir) {
  DiskCacheOptions o;
  o.directory = dir;
  o.magic = "kiln-test-cache-v1";
  o.suffix = ".bin";
  o.content_prefix = "ART";
  o.max_bytes = 0;
  o.sync = false;
  return o;
}

DiskCache::BuildFn Produces(const std::string& contents, std::atomic<int>* builds = nullptr) {
  return [contents, builds](const std::string&) -> absl::StatusOr<CacheArtifact> {
    if (builds != nullptr) ++*builds;
    return CacheArtifact{contents, {{".src", "source of " + contents}}};
  };
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Sets a file's access and modification times to `seconds_ago`.
void Age(const std::string& path, int64_t seconds_ago) {
  const struct timespec t = {::time(nullptr) - seconds_ago, 0};
  const struct timespec times[2] = {t, t};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

TEST(CacheKeyBuilder, IsXxh3OfLengthPrefixedFields) {
  const std::string a = CacheKeyBuilder().Add("ab").Add("c").Hex();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a, CacheKeyBuilder().Add("ab").Add("c").Hex());
  EXPECT_NE(a, CacheKeyBuilder().Add("a").Add("bc").Hex());  // boundaries count
  EXPECT_EQ(a, Xxh3Hex("2:ab1:c"));
  // XXH3-128 of the empty input (the reference value of the xxHash spec).
  EXPECT_EQ(Xxh3Hex(""), "99aa06d3014798d86001c324468d497f");
}

TEST(ChecksumSidecar, MatchesOnlyTheContentItWasWrittenFor) {
  const std::string elf = std::string("\x7f" "ELF") + "payload";
  const std::string sidecar = ChecksumSidecar("kiln-test-v1", elf);
  EXPECT_TRUE(CheckChecksumSidecar(sidecar, "kiln-test-v1", elf, "\x7f" "ELF").ok());
  EXPECT_TRUE(absl::IsDataLoss(CheckChecksumSidecar(sidecar, "kiln-test-v1", elf.substr(0, 6))));
  std::string flipped = elf;
  flipped.back() ^= 1;
  EXPECT_TRUE(absl::IsDataLoss(CheckChecksumSidecar(sidecar, "kiln-test-v1", flipped)));
  EXPECT_TRUE(absl::IsDataLoss(CheckChecksumSidecar(sidecar, "kiln-other-v1", elf)));
  EXPECT_TRUE(absl::IsDataLoss(CheckChecksumSidecar("garbage", "kiln-test-v1", elf)));
  const std::string text = "not elf";
  EXPECT_TRUE(absl::IsDataLoss(CheckChecksumSidecar(ChecksumSidecar("m", text), "m", text, "\x7f" "ELF")));
}

TEST(DiskCache, BuildsOnceThenHitsAndKeepsExtras) {
  DiskCache cache(Options(FreshDir("hit")));
  std::atomic<int> builds{0};
  auto first = cache.GetOrBuild("k1", Produces("ART one", &builds));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->built);
  EXPECT_FALSE(first->hit);
  EXPECT_EQ(first->contents, "ART one");
  EXPECT_EQ(*ReadFile(first->path), "ART one");
  EXPECT_EQ(*ReadFile(cache.PathFor("k1", ".src")), "source of ART one");
  auto second = cache.GetOrBuild("k1", Produces("ART other", &builds));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->hit);
  EXPECT_EQ(second->contents, "ART one");
  EXPECT_EQ(builds.load(), 1);
  struct stat st;
  ASSERT_EQ(::stat(cache.directory().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(first->path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
}

TEST(DiskCache, CorruptOrPartialEntriesAreRebuilt) {
  DiskCache cache(Options(FreshDir("corrupt")));
  std::atomic<int> builds{0};
  ASSERT_TRUE(cache.GetOrBuild("k", Produces("ART good", &builds)).ok());
  // Garbled artifact.
  ASSERT_TRUE(WriteFile(cache.PathFor("k", ".bin"), "ART evil").ok());
  EXPECT_TRUE(absl::IsDataLoss(cache.Load("k").status()));
  auto rebuilt = cache.GetOrBuild("k", Produces("ART good", &builds));
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_TRUE(rebuilt->built);
  // Truncated artifact, then a missing sidecar (a writer killed between the two renames).
  ASSERT_TRUE(WriteFile(cache.PathFor("k", ".bin"), "AR").ok());
  EXPECT_TRUE(cache.GetOrBuild("k", Produces("ART good", &builds))->built);
  ASSERT_EQ(::unlink(cache.PathFor("k", ".sum").c_str()), 0);
  EXPECT_TRUE(absl::IsNotFound(cache.Load("k").status()));
  EXPECT_TRUE(cache.GetOrBuild("k", Produces("ART good", &builds))->built);
  // Content of the wrong kind never validates.
  EXPECT_TRUE(cache.GetOrBuild("w", Produces("ELF?"))->built);
  EXPECT_TRUE(absl::IsDataLoss(cache.Load("w").status()));
  EXPECT_EQ(builds.load(), 4);
}

TEST(DiskCache, PublishedEntriesMapInPlaceAndCorruptionIsCaught) {
  DiskCache cache(Options(FreshDir("map")));
  EXPECT_TRUE(absl::IsNotFound(cache.Map("k").status()));
  ASSERT_TRUE(cache.Publish("k", CacheArtifact{"ART mapped bytes", {{".src", "kept"}}}).ok());
  absl::StatusOr<MappedArtifact> mapped = cache.Map("k");
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->bytes(), "ART mapped bytes");
  EXPECT_EQ(*ReadFile(cache.PathFor("k", ".src")), "kept");
  // The mapping outlives the entry (it is replaced by rename, never
  // rewritten in place).
  ASSERT_TRUE(cache.Publish("k", CacheArtifact{"ART other", {}}).ok());
  EXPECT_EQ(mapped->bytes(), "ART mapped bytes");
  EXPECT_EQ(cache.Map("k")->bytes(), "ART other");
  // Same size, one byte changed; then truncated; then not of its kind.
  for (const std::string& bad : {std::string("ART otheR"), std::string("ART oth"), std::string("XRT other")}) {
    ASSERT_TRUE(WriteFile(cache.PathFor("k", ".bin"), bad).ok());
    EXPECT_TRUE(absl::IsDataLoss(cache.Map("k").status())) << bad;
  }
  // An entry replaced by a symbolic link (to a valid artifact elsewhere) is
  // not followed: DataLoss, rebuilt by the caller.
  const std::string elsewhere = cache.directory() + "/elsewhere";
  ASSERT_TRUE(WriteFile(elsewhere, "ART other").ok());
  ::unlink(cache.PathFor("k", ".bin").c_str());
  ASSERT_EQ(::symlink(elsewhere.c_str(), cache.PathFor("k", ".bin").c_str()), 0);
  const absl::Status linked = cache.Map("k").status();
  EXPECT_TRUE(absl::IsDataLoss(linked)) << linked;
  ::unlink(cache.PathFor("k", ".sum").c_str());
  EXPECT_FALSE(cache.Map("k").ok());
}

// An artifact published as pieces is the same entry as their concatenation
// (the same file, the same sidecar): the program cache's hundreds of MB are
// written without a joined copy.
TEST(DiskCache, PiecesPublishTheirConcatenation) {
  DiskCache cache(Options(FreshDir("pieces")));
  const std::string big(100000, 'p');
  const std::vector<absl::string_view> pieces = {"ART ", "", "in ", big, "pieces"};
  const std::string joined = absl::StrJoin(pieces, "");
  EXPECT_EQ(ChecksumSidecar("m", pieces), ChecksumSidecar("m", joined));
  ASSERT_TRUE(cache.Publish("k", pieces).ok());
  absl::StatusOr<MappedArtifact> mapped = cache.Map("k");
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->bytes(), joined);
  EXPECT_EQ(*ReadFile(cache.PathFor("k", ".sum")), ChecksumSidecar(cache.options().magic, joined));
}

// Above 8 MiB the checksum is over chunks (checked on several threads);
// pieces split anywhere give the same sidecar, and a byte changed in any
// chunk is caught.
TEST(ChecksumSidecar, ChunkedAboveEightMiBAndTheSameFromPieces) {
  const size_t mib8 = size_t{8} << 20;
  for (size_t size : {mib8, mib8 + 1, 3 * mib8, 3 * mib8 + 12345}) {
    std::string data(size, '\0');
    for (size_t i = 0; i < size; ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
    const std::string whole = ChecksumSidecar("m", data);
    const absl::string_view v(data);
    const size_t cut = size - mib8 / 2;  // pieces of 7, mib8 / 2 - 7 + ..., mib8 / 2 bytes
    EXPECT_EQ(ChecksumSidecar("m", std::vector<absl::string_view>{v.substr(0, 7), v.substr(7, cut - 7),
                                                                    v.substr(cut)}),
              whole)
        << size;
    if (size <= mib8) {
      EXPECT_EQ(whole, absl::StrCat("m ", size, " ", Xxh3Hex(data), "\n"));
    }
    std::string changed = data;
    changed[size - 1] ^= 1;
    EXPECT_TRUE(absl::IsDataLoss(CheckChecksumSidecar(whole, "m", changed))) << size;
    EXPECT_TRUE(CheckChecksumSidecar(whole, "m", data).ok()) << size;
  }
}

// A background publish keeps its pieces' owner alive until written, and a
// lookup of this process waits for it.
TEST(DiskCache, BackgroundPublishesAreFoundByLaterLookups) {
  DiskCache cache(Options(FreshDir("background")));
  std::weak_ptr<const std::string> watch;
  {
    auto owner = std::make_shared<const std::string>("ART written " + std::string(1 << 20, 'b'));
    watch = owner;
    cache.PublishInBackground("k", {*owner}, owner);
  }
  absl::StatusOr<MappedArtifact> mapped = cache.Map("k");
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->size, 12u + (1u << 20));
  EXPECT_TRUE(watch.expired());
  cache.PublishInBackground("j", {"ART j"}, nullptr);
  WaitForBackgroundPublishes();
  EXPECT_EQ(*ReadFile(cache.PathFor("j", ".bin")), "ART j");
}

// A background publish that cannot write is reported by the next wait
// (its path and why), once; the kiln binary prints it as a warning.
TEST(DiskCache, FailedBackgroundPublishesAreReported) {
  const std::string dir = FreshDir("background_fails");
  DiskCache cache(Options(dir));
  // The cache directory's parent path is a regular file: nothing can be created under it.
  ASSERT_TRUE(WriteFileAtomically(dir + "_file", absl::string_view("x")).ok());
  DiskCache blocked(Options(dir + "_file/cache"));
  EXPECT_EQ(WaitForBackgroundPublishes().failed, 0);
  blocked.PublishInBackground("k", {"ART k"}, nullptr);
  cache.PublishInBackground("j", {"ART j"}, nullptr);
  const BackgroundPublishReport report = WaitForBackgroundPublishes();
  EXPECT_EQ(report.failed, 1);
  EXPECT_NE(report.first_failure.find(dir + "_file/cache/k"), std::string::npos) << report.first_failure;
  EXPECT_EQ(WaitForBackgroundPublishes().failed, 0) << "reported once";
  EXPECT_TRUE(cache.Map("j").ok());
}

// A child forked while a publish is in flight does not wait for the
// parent's thread (which it lacks: joining it would hang or crash); the
// parent's publish completes. (_exit: LeakSanitizer would count the
// parent's in-flight state the child inherited.)
TEST(DiskCache, ForkedChildrenForgetTheParentsBackgroundPublishes) {
  DiskCache cache(Options(FreshDir("fork")));
  auto owner = std::make_shared<const std::string>("ART " + std::string(64 << 20, 'f'));
  cache.PublishInBackground("k", {*owner}, owner);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    WaitForBackgroundPublishes();
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(cache.Map("k").ok());
}

// A process that exits right after starting a background publish still
// leaves the entry: its exit waits for the write.
TEST(DiskCache, ExitWaitsForBackgroundPublishes) {
  DiskCache cache(Options(FreshDir("exit")));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto owner = std::make_shared<const std::string>("ART " + std::string(32 << 20, 'e'));
    cache.PublishInBackground("k", {*owner}, owner);
    std::exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  absl::StatusOr<MappedArtifact> mapped = cache.Map("k");
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_EQ(mapped->size, 4u + (32u << 20));
}

TEST(DiskCache, FailedBuildLeavesNoEntry) {
  DiskCache cache(Options(FreshDir("fail")));
  std::string scratch;
  auto r = cache.GetOrBuild("k", [&](const std::string& s) -> absl::StatusOr<CacheArtifact> {
    scratch = s;
    return absl::InternalError("compiler said no");
  });
  EXPECT_EQ(r.status().message(), "compiler said no");
  EXPECT_TRUE(absl::StartsWith(scratch, cache.PathFor("k", ".tmp.")));
  EXPECT_FALSE(Exists(cache.PathFor("k", ".bin")));
  EXPECT_FALSE(Exists(cache.PathFor("k", ".sum")));
}

TEST(DiskCache, ConcurrentCallersBuildOnce) {
  const std::string dir = FreshDir("concurrent");
  std::atomic<int> builds{0};
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<DiskCacheEntry>> results(6, absl::UnknownError("not run"));
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      DiskCache cache(Options(dir));
      results[i] = cache.GetOrBuild("same", Produces("ART shared", &builds));
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->contents, "ART shared");
  }
  EXPECT_EQ(builds.load(), 1);
}

TEST(DiskCache, StaleTemporariesOfKilledBuildsAreRemoved) {
  DiskCacheOptions options = Options(FreshDir("stale"));
  options.stale_temporary_seconds = 600;
  DiskCache cache(options);
  ASSERT_TRUE(cache.GetOrBuild("a", Produces("ART a")).ok());
  // What a `kill -9` mid-compile leaves: scratch files and a half-written
  // artifact under temporary names; one old, one fresh (a build in progress).
  const std::string old_scratch = cache.PathFor("b", ".tmp.123.4.5.cc");
  const std::string old_write = cache.PathFor("b", ".bin.tmp.123.4.6");
  const std::string fresh = cache.PathFor("c", ".tmp.124.4.7.o");
  for (const std::string& p : {old_scratch, old_write, fresh}) ASSERT_TRUE(WriteFile(p, "partial").ok());
  Age(old_scratch, 3600);
  Age(old_write, 601);
  auto stats = cache.Cleanup();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->stale_temporaries, 2);
  EXPECT_FALSE(Exists(old_scratch));
  EXPECT_FALSE(Exists(old_write));
  EXPECT_TRUE(Exists(fresh));
  EXPECT_TRUE(cache.Load("a").ok());
  // A build runs the cleanup too.
  Age(fresh, 700);
  ASSERT_TRUE(cache.GetOrBuild("d", Produces("ART d")).ok());
  EXPECT_FALSE(Exists(fresh));
}

TEST(DiskCache, EvictsLeastRecentlyUsedEntriesPastTheCap) {
  DiskCacheOptions options = Options(FreshDir("evict"));
  DiskCache unlimited(options);
  const std::string big(1000, 'x');
  for (const char* key : {"old", "mid", "new"}) {
    ASSERT_TRUE(unlimited.GetOrBuild(key, Produces("ART" + big)).ok());
  }
  Age(unlimited.PathFor("old", ".bin"), 300);
  Age(unlimited.PathFor("mid", ".bin"), 200);
  Age(unlimited.PathFor("new", ".bin"), 100);
  // A hit makes "old" the most recently used, whatever the mount's atime policy.
  ASSERT_TRUE(unlimited.GetOrBuild("old", Produces("unused"))->hit);
  auto all = unlimited.Cleanup();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->evicted_entries, 0);
  const uint64_t per_entry = all->bytes / 3;

  options.max_bytes = per_entry * 2 + per_entry / 2;  // room for two entries
  DiskCache capped(options);
  auto stats = capped.Cleanup();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->evicted_entries, 1);
  EXPECT_LE(stats->bytes, *options.max_bytes);
  EXPECT_TRUE(absl::IsNotFound(capped.Load("mid").status()));  // least recently used
  EXPECT_FALSE(Exists(capped.PathFor("mid", ".src")));
  EXPECT_TRUE(capped.Load("old").ok());
  EXPECT_TRUE(capped.Load("new").ok());
  // A build past the cap evicts others, never the entry it just built.
  options.max_bytes = 1;
  DiskCache tiny(options);
  auto built = tiny.GetOrBuild("newest", Produces("ART" + big));
  ASSERT_TRUE(built.ok());
  EXPECT_TRUE(tiny.Load("newest").ok());
  EXPECT_FALSE(tiny.Load("old").ok());
  EXPECT_FALSE(tiny.Load("new").ok());
}

TEST(DiskCache, SizeCapComesFromTheEnvironment) {
  ::unsetenv("KILN_CACHE_MAX_MB");
  EXPECT_EQ(*DefaultCacheMaxBytes(), 2048ull << 20);
  ::setenv("KILN_CACHE_MAX_MB", "3", 1);
  EXPECT_EQ(*DefaultCacheMaxBytes(), 3ull << 20);
  ::setenv("KILN_CACHE_MAX_MB", "0", 1);
  EXPECT_EQ(*DefaultCacheMaxBytes(), 0u);
  ::setenv("KILN_CACHE_MAX_MB", "lots", 1);
  EXPECT_TRUE(absl::IsInvalidArgument(DefaultCacheMaxBytes().status()));
  DiskCache cache(Options(FreshDir("env")));
  DiskCacheOptions from_env = cache.options();
  from_env.max_bytes.reset();
  EXPECT_TRUE(absl::IsInvalidArgument(DiskCache(from_env).Cleanup().status()));
  ::unsetenv("KILN_CACHE_MAX_MB");
}

TEST(DiskCache, RefusesDirectoriesOthersCanWrite) {
  const std::string dir = FreshDir("unsafe");
  ASSERT_TRUE(MakeDirectories(dir, 0700).ok());
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  DiskCache cache(Options(dir));
  auto r = cache.GetOrBuild("k", Produces("ART x"));
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "KILN_CACHE_DIR")) << r.status();
  // A subdirectory of a directory others can write to (not sticky) is
  // refused too: they could swap it.
  ASSERT_TRUE(MakeDirectories(dir + "/sub", 0700).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(CheckPrivateDirectory(dir + "/sub")));
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);  // sticky, like /tmp
  EXPECT_TRUE(CheckPrivateDirectory(dir + "/sub").ok());
  // A symlink to a private directory is refused (it can be re-pointed).
  ASSERT_EQ(::symlink((dir + "/sub").c_str(), (dir + "/link").c_str()), 0);
  EXPECT_TRUE(absl::IsFailedPrecondition(CheckPrivateDirectory(dir + "/link")));
  // Another user's directory (only where this process may give one away:
  // root outside a user namespace).
  ASSERT_TRUE(MakeDirectories(dir + "/theirs", 0700).ok());
  if (::chown((dir + "/theirs").c_str(), 65534, 65534) == 0) {
    EXPECT_TRUE(absl::IsFailedPrecondition(CheckPrivateDirectory(dir + "/theirs")));
  }
}

TEST(CacheRoot, OneRootWithPerBackendDirectories) {
  ::setenv("KILN_CACHE_DIR", "/some/where/", 1);
  EXPECT_EQ(*CacheRoot(), "/some/where");
  EXPECT_EQ(*CacheDirectory("cpu"), "/some/where/cpu");
  EXPECT_EQ(*CacheDirectory("cuda"), "/some/where/cuda");
  ::unsetenv("KILN_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(*CacheDirectory("cpu"), "/xdg/kiln/cpu");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(*CacheDirectory("cuda"), "/home/u/.cache/kiln/cuda");
  // HOME unset: the password database's home, never a guessable /tmp path.
  ::unsetenv("HOME");
  absl::StatusOr<std::string> root = CacheRoot();
  if (root.ok()) {
    EXPECT_TRUE(absl::EndsWith(*root, "/.cache/kiln")) << *root;
    EXPECT_FALSE(absl::StartsWith(*root, "/tmp")) << *root;
  } else {
    EXPECT_TRUE(absl::IsFailedPrecondition(root.status()));
    EXPECT_TRUE(absl::StrContains(root.status().message(), "KILN_CACHE_DIR")) << root.status();
  }
}

}  // namespace
}  // namespace kiln
