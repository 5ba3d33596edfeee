#include "backends/cpu/compile_cache.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kiln::backends::cpu {
namespace {

// Tiny, fast compiles: the cache logic does not depend on the flags.
CompilerConfig FastConfig() {
  CompilerConfig c;
  c.flags = {"-O0", "-shared", "-fPIC"};
  c.libs = {};
  return c;
}

std::string FreshDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/", name, "_", ::getpid());
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return dir + "/nested/cache";
}

std::string Source(int value) {
  return absl::StrCat("extern \"C\" int kiln_test_value() { return ", value, "; }\n");
}

int CallValue(const std::string& path) {
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) return -1;
  auto fn = reinterpret_cast<int (*)()>(::dlsym(h, "kiln_test_value"));
  const int v = fn != nullptr ? fn() : -2;
  ::dlclose(h);
  return v;
}

// A cache directory another user could write to is never loaded from.
TEST(CompileCache, RefusesDirectoriesOthersCanWrite) {
  const std::string dir = FreshDir("shared_dir");
  std::filesystem::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  CompileCache shared(dir, FastConfig());
  absl::StatusOr<CacheEntry> r = shared.GetOrCompile(Source(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();

  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  const std::string link = dir + "_link";
  std::filesystem::create_directory_symlink(dir, link);
  CompileCache via_link(link, FastConfig());
  EXPECT_FALSE(via_link.GetOrCompile(Source(1)).ok());

  const std::string parent = std::filesystem::path(dir).parent_path().string();
  ASSERT_EQ(::chmod(parent.c_str(), 0777), 0);  // writable, not sticky
  EXPECT_FALSE(shared.GetOrCompile(Source(1)).ok());
  ASSERT_EQ(::chmod(parent.c_str(), 0700), 0);
  EXPECT_TRUE(shared.GetOrCompile(Source(1)).ok());
}

TEST(CompileCache, MissThenHit) {
  CompileCache cache(FreshDir("miss_hit"), FastConfig());
  auto first = cache.GetOrCompile(Source(41));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->compiled);
  EXPECT_FALSE(first->hit);
  auto second = cache.GetOrCompile(Source(41));
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->hit);
  EXPECT_FALSE(second->compiled);
  EXPECT_EQ(second->library_path, first->library_path);
  EXPECT_EQ(CallValue(second->library_path), 41);
  // Different source, different key.
  auto other = cache.Key(Source(42));
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, first->key);
  // Different flags, different key.
  CompilerConfig flags = FastConfig();
  flags.flags.push_back("-g");
  auto flagged = CompileCache(cache.directory(), flags).Key(Source(41));
  ASSERT_TRUE(flagged.ok());
  EXPECT_NE(*flagged, first->key);
}

TEST(CompileCache, CorruptEntriesAreDetectedAndRebuilt) {
  CompileCache cache(FreshDir("corrupt"), FastConfig());
  auto built = cache.GetOrCompile(Source(7));
  ASSERT_TRUE(built.ok()) << built.status();
  const std::string so = built->library_path;
  const std::string sum = so.substr(0, so.size() - 3) + ".sum";

  // A truncated library.
  ASSERT_EQ(::truncate(so.c_str(), 100), 0);
  EXPECT_FALSE(cache.Validate(built->key).ok());
  auto rebuilt = cache.GetOrCompile(Source(7));
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_TRUE(rebuilt->compiled);
  EXPECT_TRUE(cache.Validate(built->key).ok());
  EXPECT_EQ(CallValue(so), 7);

  // A garbled sidecar.
  { std::ofstream(sum, std::ios::trunc) << "kiln-cpu-cache-v2 12 deadbeef\n"; }
  EXPECT_FALSE(cache.Validate(built->key).ok());
  auto again = cache.GetOrCompile(Source(7));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->compiled);

  // A flipped byte in the library with the size intact.
  {
    std::fstream f(so, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x5a');
  }
  EXPECT_FALSE(cache.Validate(built->key).ok());
  ASSERT_TRUE(cache.GetOrCompile(Source(7)).ok());

  // A missing sidecar.
  ASSERT_EQ(::unlink(sum.c_str()), 0);
  auto missing = cache.GetOrCompile(Source(7));
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->compiled);
  EXPECT_EQ(CallValue(so), 7);
}

TEST(CompileCache, RacingThreadsEndWithOneGoodEntryAndOneCompile) {
  const std::string dir = FreshDir("threads");
  constexpr int kThreads = 4;
  std::vector<absl::StatusOr<CacheEntry>> results(kThreads, absl::UnknownError("unset"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] { results[i] = CompileCache(dir, FastConfig()).GetOrCompile(Source(99)); });
  }
  for (auto& t : threads) t.join();
  int compiles = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    compiles += r->compiled;
  }
  EXPECT_EQ(compiles, 1);
  EXPECT_TRUE(CompileCache(dir, FastConfig()).Validate(results[0]->key).ok());
  EXPECT_EQ(CallValue(results[0]->library_path), 99);
}

TEST(CompileCache, RacingProcessesEndWithOneGoodEntry) {
  const std::string dir = FreshDir("procs");
  constexpr int kProcs = 3;
  std::vector<pid_t> pids;
  for (int i = 0; i < kProcs; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto r = CompileCache(dir, FastConfig()).GetOrCompile(Source(123));
      // Exit code: 0 hit, 1 compiled, 2 failed.
      ::_exit(!r.ok() ? 2 : (r->compiled ? 1 : 0));
    }
    pids.push_back(pid);
  }
  int compiles = 0;
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_NE(WEXITSTATUS(status), 2);
    compiles += WEXITSTATUS(status);
  }
  EXPECT_EQ(compiles, 1);
  CompileCache cache(dir, FastConfig());
  auto entry = cache.GetOrCompile(Source(123));
  ASSERT_TRUE(entry.ok());
  EXPECT_TRUE(entry->hit);
  EXPECT_EQ(CallValue(entry->library_path), 123);
  // No temporary files are left behind.
  std::string out;
  ASSERT_TRUE(RunProcess({"sh", "-c", absl::StrCat("ls '", dir, "' | grep -c tmp || true")}, &out).ok());
  EXPECT_EQ(out, "0\n");
}

TEST(CompileCache, CompilerErrorsAreStatusesWithTheLog) {
  CompileCache cache(FreshDir("errors"), FastConfig());
  auto r = cache.GetOrCompile("this is not C++;\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("error"), std::string::npos) << r.status();
  CompilerConfig missing = FastConfig();
  missing.compiler = "/nonexistent/kiln-no-such-compiler";
  EXPECT_FALSE(CompileCache(cache.directory(), missing).GetOrCompile(Source(1)).ok());
}

// A program as two translation units: a kernel unit and the glue unit that
// calls it.
std::vector<std::string> Units(int value) {
  return {absl::StrCat("int kiln_test_kernel() { return ", value, "; }\n"),
          "int kiln_test_kernel();\nextern \"C\" int kiln_test_value() { return kiln_test_kernel() + 1; }\n"};
}

TEST(CompileCache, UnitsCompileConcurrentlyAndLinkIntoOneEntry) {
  CompileCache cache(FreshDir("units"), FastConfig());
  auto first = cache.GetOrCompile(Units(10));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->compiled);
  EXPECT_EQ(CallValue(first->library_path), 11);
  EXPECT_TRUE(cache.Validate(first->key).ok());
  auto again = cache.GetOrCompile(Units(10));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->hit);
  // The key covers every unit, the glue flags, and the split itself.
  std::vector<std::string> changed = Units(10);
  changed[1] += "// changed\n";
  EXPECT_NE(*cache.Key(changed), first->key);
  EXPECT_NE(*cache.Key(Units(12)), first->key);
  CompilerConfig glue = FastConfig();
  glue.glue_flags = {"-O2"};
  EXPECT_NE(*CompileCache(cache.directory(), glue).Key(Units(10)), first->key);
  EXPECT_NE(*cache.Key(std::vector<std::string>{Units(10)[0] + Units(10)[1]}), first->key);
  // One unit is the single-source entry.
  EXPECT_EQ(*cache.Key(std::vector<std::string>{Source(5)}), *cache.Key(Source(5)));
  // A corrupt multi-unit entry is rebuilt like any other.
  ASSERT_EQ(::truncate(first->library_path.c_str(), 64), 0);
  auto rebuilt = cache.GetOrCompile(Units(10));
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_TRUE(rebuilt->compiled);
  EXPECT_EQ(CallValue(rebuilt->library_path), 11);
  // An error in one unit is reported with its log; nothing is left behind.
  std::vector<std::string> broken = Units(3);
  broken[0] = "this is not C++;\n";
  auto failed = cache.GetOrCompile(broken);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("error"), std::string::npos) << failed.status();
  std::string out;
  ASSERT_TRUE(RunProcess({"sh", "-c", absl::StrCat("ls '", cache.directory(), "' | grep -c tmp || true")}, &out).ok());
  EXPECT_EQ(out, "0\n");
}

TEST(CompileCache, RunProcessesRunsAllAndReportsEach) {
  std::vector<std::string> outputs;
  auto codes = RunProcesses({{"sh", "-c", "echo one"}, {"sh", "-c", "echo two >&2; exit 3"}}, &outputs);
  ASSERT_TRUE(codes.ok()) << codes.status();
  EXPECT_EQ(*codes, (std::vector<int>{0, 3}));
  EXPECT_EQ(outputs[0], "one\n");
  EXPECT_EQ(outputs[1], "two\n");
  EXPECT_FALSE(RunProcesses({{"sh", "-c", "true"}, {"/nonexistent/kiln-no-such-tool"}}, &outputs).ok());
}

int CountTemporaries(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    n += e.path().filename().string().find(".tmp.") != std::string::npos;
  }
  return n;
}

// A compile killed with SIGKILL leaves its temporaries; once they are stale
// the next compile removes them.
TEST(CompileCache, TemporariesOfAKilledCompileAreCleanedLater) {
  const std::string dir = FreshDir("killed");
  const std::string base = std::filesystem::path(dir).parent_path().parent_path().string();
  const std::string ready = base + "/compiler_started";
  const std::string slow = base + "/slow_cxx";
  std::filesystem::create_directories(base);
  {
    std::ofstream script(slow);
    script << "#!/bin/sh\nif [ \"$1\" = --version ]; then exec g++ --version; fi\n"
           << "touch '" << ready << "'\nsleep 60\nexec g++ \"$@\"\n";
  }
  ASSERT_EQ(::chmod(slow.c_str(), 0700), 0);
  CompilerConfig slow_config = FastConfig();
  slow_config.compiler = slow;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setpgid(0, 0);  // the compiler's group too, for one kill
    auto r = CompileCache(dir, slow_config).GetOrCompile(Source(5));
    ::_exit(r.ok() ? 0 : 1);
  }
  for (int i = 0; i < 600 && ::access(ready.c_str(), F_OK) != 0; ++i) ::usleep(50 * 1000);
  ASSERT_EQ(::access(ready.c_str(), F_OK), 0) << "the slow compiler never started";
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_GT(CountTemporaries(dir), 0);

  CompileCache cache(dir, FastConfig());
  ASSERT_TRUE(cache.GetOrCompile(Source(6)).ok());
  EXPECT_GT(CountTemporaries(dir), 0);  // fresh: the compile may still be running
  const struct timespec old = {::time(nullptr) - 2 * 3600, 0};
  const struct timespec times[2] = {old, old};
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().find(".tmp.") != std::string::npos) {
      ASSERT_EQ(::utimensat(AT_FDCWD, e.path().c_str(), times, 0), 0);
    }
  }
  ASSERT_TRUE(cache.GetOrCompile(Source(7)).ok());
  EXPECT_EQ(CountTemporaries(dir), 0);
  // The killed compile's key builds normally afterwards.
  auto r = cache.GetOrCompile(Source(5));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(CallValue(r->library_path), 5);
}

TEST(CompileCache, SizeCapEvictsLeastRecentlyUsedLibraries) {
  const std::string dir = FreshDir("capped");
  CompileCache unlimited(dir, FastConfig(), 0);
  auto a = unlimited.GetOrCompile(Source(1));
  ASSERT_TRUE(a.ok()) << a.status();
  auto stats = unlimited.disk().Cleanup();
  ASSERT_TRUE(stats.ok());
  // Room for a bit more than two entries.
  CompileCache capped(dir, FastConfig(), stats->bytes * 5 / 2);
  auto b = capped.GetOrCompile(Source(2));
  ASSERT_TRUE(b.ok()) << b.status();
  // File times have the kernel's coarse clock: set them apart explicitly
  // (1 used 200 s ago, 2 100 s ago), then a hit makes 1 the most recent.
  for (const auto& [path, seconds_ago] : {std::make_pair(a->library_path, 200), std::make_pair(b->library_path, 100)}) {
    const struct timespec t = {::time(nullptr) - seconds_ago, 0};
    const struct timespec times[2] = {t, t};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  ASSERT_TRUE(capped.GetOrCompile(Source(1))->hit);
  auto c = capped.GetOrCompile(Source(3));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(capped.Validate(*capped.Key(Source(1))).ok());
  EXPECT_FALSE(capped.Validate(*capped.Key(Source(2))).ok());
  EXPECT_EQ(CallValue(c->library_path), 3);
}

}  // namespace
}  // namespace kiln::backends::cpu
