#include "backends/cuda/cubin_cache.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_loader.h"
#include "gtest/gtest.h"

namespace kiln::backends::cuda {
namespace {

std::string TempDir() {
  static std::atomic<int> n{0};
  const char* t = std::getenv("TEST_TMPDIR");
  return absl::StrCat(t != nullptr ? t : "/tmp", "/cubin_cache_test_", ::getpid(), "_", n++);
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') out.push_back(e->d_name);
    }
    ::closedir(d);
  }
  return out;
}

// A fake compiler: an "ELF" image that embeds the source; counts calls.
struct FakeCompiler {
  std::atomic<int> calls{0};
  CubinCompiler Get() {
    return [this](const std::string& source, const std::vector<std::string>&) -> absl::StatusOr<std::string> {
      ++calls;
      if (absl::StrContains(source, "syntax error")) return absl::InternalError("fake: syntax error");
      return std::string("\x7f" "ELF fake cubin of ") + source;
    };
  }
};

const std::vector<std::string> kOptions = {"--gpu-architecture=sm_90"};

TEST(CubinCacheTest, CompilesOnceThenHits) {
  FakeCompiler fake;
  CubinCache cache(TempDir(), "fake 1.0", fake.Get());
  absl::StatusOr<CubinEntry> first = cache.GetOrCompile("kernel A", kOptions);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->compiled);
  EXPECT_FALSE(first->hit);
  absl::StatusOr<CubinEntry> second = cache.GetOrCompile("kernel A", kOptions);
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->hit);
  EXPECT_EQ(second->cubin, first->cubin);
  EXPECT_EQ(fake.calls.load(), 1);
  // No temporary file is left behind: exactly cubin, sidecar, source, lock.
  for (const std::string& f : Files(cache.directory())) EXPECT_FALSE(absl::StrContains(f, ".tmp.")) << f;
  EXPECT_EQ(Files(cache.directory()).size(), 4u);
}

TEST(CubinCacheTest, KeyCoversSourceOptionsAndCompiler) {
  FakeCompiler fake;
  CubinCache a(TempDir(), "nvrtc 13.0", fake.Get());
  CubinCache b(a.directory(), "nvrtc 12.9", fake.Get());
  EXPECT_NE(a.Key("k", kOptions), a.Key("k2", kOptions));
  EXPECT_NE(a.Key("k", kOptions), a.Key("k", {"--gpu-architecture=sm_80"}));
  EXPECT_NE(a.Key("k", kOptions), b.Key("k", kOptions));
  EXPECT_EQ(a.Key("k", kOptions), a.Key("k", kOptions));
}

TEST(CubinCacheTest, CorruptEntriesAreDetectedAndRebuilt) {
  FakeCompiler fake;
  CubinCache cache(TempDir(), "fake 1.0", fake.Get());
  absl::StatusOr<CubinEntry> e = cache.GetOrCompile("kernel B", kOptions);
  ASSERT_TRUE(e.ok());
  const std::string good = e->cubin;
  // Garble one byte of the cubin (same size): the checksum catches it.
  {
    std::fstream f(e->path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(6);
    f.put('#');
  }
  EXPECT_TRUE(absl::IsDataLoss(cache.Load(e->key).status()));
  absl::StatusOr<CubinEntry> rebuilt = cache.GetOrCompile("kernel B", kOptions);
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_TRUE(rebuilt->compiled);
  EXPECT_EQ(rebuilt->cubin, good);
  // Truncate it.
  { std::ofstream(e->path, std::ios::binary | std::ios::trunc) << "\x7f" "EL"; }
  EXPECT_FALSE(cache.Load(e->key).ok());
  // Garble the sidecar.
  ASSERT_TRUE(cache.GetOrCompile("kernel B", kOptions).ok());
  { std::ofstream(absl::StrCat(cache.directory(), "/", e->key, ".sum"), std::ios::trunc) << "nonsense\n"; }
  EXPECT_TRUE(absl::IsDataLoss(cache.Load(e->key).status()));
  absl::StatusOr<CubinEntry> again = cache.GetOrCompile("kernel B", kOptions);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cubin, good);
  EXPECT_EQ(fake.calls.load(), 4);  // first, garbled, truncated, bad sidecar
  EXPECT_TRUE(cache.Load(e->key).ok());
}

TEST(CubinCacheTest, ConcurrentCompilesOfOneKeyRunTheCompilerOnce) {
  FakeCompiler fake;
  const std::string dir = TempDir();
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      CubinCache cache(dir, "fake 1.0", fake.Get());
      if (cache.GetOrCompile("kernel C", kOptions).ok()) ++ok;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 6);
  EXPECT_EQ(fake.calls.load(), 1);
}

TEST(CubinCacheTest, CompileErrorsAreReportedAndNothingIsCached) {
  FakeCompiler fake;
  CubinCache cache(TempDir(), "fake 1.0", fake.Get());
  absl::StatusOr<CubinEntry> e = cache.GetOrCompile("syntax error here", kOptions);
  EXPECT_FALSE(e.ok());
  EXPECT_FALSE(cache.Load(cache.Key("syntax error here", kOptions)).ok());
}

// The CPU cache's directory checks (support/disk_cache.h): cubins are
// loaded into the GPU, so a directory others can write to is refused.
TEST(CubinCacheTest, RefusesDirectoriesOthersCanWrite) {
  FakeCompiler fake;
  const std::string dir = TempDir();
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  absl::StatusOr<CubinEntry> e = CubinCache(dir, "fake 1.0", fake.Get()).GetOrCompile("kernel D", kOptions);
  EXPECT_TRUE(absl::IsFailedPrecondition(e.status())) << e.status();
  EXPECT_EQ(fake.calls.load(), 0);
}

TEST(CubinCacheTest, SizeCapEvictsLeastRecentlyUsedCubins) {
  FakeCompiler fake;
  const std::string dir = TempDir();
  const std::string pad(4000, 'p');
  ASSERT_TRUE(CubinCache(dir, "fake 1.0", fake.Get(), 0).GetOrCompile("kernel E" + pad, kOptions).ok());
  // Room for one entry: the next compile evicts the first.
  CubinCache capped(dir, "fake 1.0", fake.Get(), 4000 * 2 + 2000);
  absl::StatusOr<CubinEntry> f = capped.GetOrCompile("kernel F" + pad, kOptions);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(capped.Load(f->key).ok());
  EXPECT_FALSE(capped.Load(capped.Key("kernel E" + pad, kOptions)).ok());
}

// NVRTC needs no GPU: a real cubin for sm_90.
TEST(NvrtcTest, CompilesATinyKernelToACubin) {
  if (!LoadCudaLibraries().nvrtc_status.ok()) GTEST_SKIP() << LoadCudaLibraries().nvrtc_status;
  absl::StatusOr<std::string> id = NvrtcIdentity();
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(absl::StartsWith(*id, "nvrtc ")) << *id;
  CubinCache cache(TempDir(), *id, CompileWithNvrtc);
  const std::string source = "extern \"C\" __global__ void kiln_scale(float* x, int n) {\n"
                             "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                             "  if (i < n) x[i] *= 2.0f;\n}\n";
  absl::StatusOr<CubinEntry> e = cache.GetOrCompile(source, {"--gpu-architecture=sm_90", "-std=c++17"});
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(absl::StartsWith(e->cubin, "\x7f" "ELF"));
  EXPECT_TRUE(cache.GetOrCompile(source, {"--gpu-architecture=sm_90", "-std=c++17"})->hit);
  absl::StatusOr<std::string> bad = CompileWithNvrtc("__global__ void broken( {", {"--gpu-architecture=sm_90"});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "error")) << bad.status();
}

}  // namespace
}  // namespace kiln::backends::cuda
