#include "backends/cuda/caching_allocator.h"

#include <cstdlib>
#include <map>
#include <set>

#include "gtest/gtest.h"

namespace kiln::backends::cuda {
namespace {

// Host memory standing in for the device; counts what is outstanding.
struct FakeMemory {
  std::set<uintptr_t> live;
  size_t limit = size_t{1} << 40;
  size_t used = 0;
  CachingAllocator Make() {
    return CachingAllocator(
        [this](size_t n) -> absl::StatusOr<uintptr_t> {
          if (used + n > limit) return absl::ResourceExhaustedError("fake out of memory");
          void* p = std::malloc(n);
          used += n;
          live.insert(reinterpret_cast<uintptr_t>(p));
          sizes[reinterpret_cast<uintptr_t>(p)] = n;
          return reinterpret_cast<uintptr_t>(p);
        },
        [this](uintptr_t p) {
          live.erase(p);
          used -= sizes[p];
          std::free(reinterpret_cast<void*>(p));
        });
  }
  std::map<uintptr_t, size_t> sizes;
};

const int kStreamA = 1, kStreamB = 2;
const void* A() { return &kStreamA; }
const void* B() { return &kStreamB; }

TEST(CachingAllocatorTest, RoundsToSizeClasses) {
  EXPECT_EQ(CachingAllocator::RoundSize(0), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(1), 512u);
  EXPECT_EQ(CachingAllocator::RoundSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::RoundSize((1u << 20) + 1), 2u << 20);
  EXPECT_EQ(CachingAllocator::RoundSize(5u << 20), 6u << 20);
}

TEST(CachingAllocatorTest, ReusesFreedBlocksOnTheSameStreamOnly) {
  FakeMemory mem;
  {
    CachingAllocator alloc = mem.Make();
    absl::StatusOr<uintptr_t> p = alloc.Allocate(1000, A());
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(alloc.Free(*p));
    // Another stream never gets it.
    absl::StatusOr<uintptr_t> q = alloc.Allocate(1000, B());
    ASSERT_TRUE(q.ok());
    EXPECT_NE(*q, *p);
    // The same stream and size class does.
    absl::StatusOr<uintptr_t> r = alloc.Allocate(900, A());
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, *p);
    AllocatorStats s = alloc.stats();
    EXPECT_EQ(s.driver_allocs, 2);
    EXPECT_EQ(s.cache_hits, 1);
    EXPECT_EQ(s.allocated_bytes, 2048);
    EXPECT_EQ(s.peak_allocated_bytes, 2048);
    EXPECT_EQ(s.cached_bytes, 0);
    EXPECT_FALSE(alloc.Free(12345));  // unknown pointer
    EXPECT_TRUE(alloc.Free(*q));
    EXPECT_TRUE(alloc.Free(*r));
  }
  // Destruction returned the cached blocks to the raw allocator.
  EXPECT_TRUE(mem.live.empty());
}

TEST(CachingAllocatorTest, DoesNotServeSmallRequestsFromHugeBlocks) {
  FakeMemory mem;
  CachingAllocator alloc = mem.Make();
  absl::StatusOr<uintptr_t> big = alloc.Allocate(64 << 20, A());
  ASSERT_TRUE(big.ok());
  alloc.Free(*big);
  absl::StatusOr<uintptr_t> small = alloc.Allocate(4096, A());
  ASSERT_TRUE(small.ok());
  EXPECT_NE(*small, *big);
  EXPECT_EQ(alloc.stats().cached_bytes, 64 << 20);
  alloc.Free(*small);
}

TEST(CachingAllocatorTest, StatsTrackPeakAndCache) {
  FakeMemory mem;
  CachingAllocator alloc = mem.Make();
  absl::StatusOr<uintptr_t> a = alloc.Allocate(3 << 20, A());
  absl::StatusOr<uintptr_t> b = alloc.Allocate(1 << 10, A());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(alloc.stats().allocated_bytes, (4 << 20) + 1024);
  alloc.Free(*a);
  AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.allocated_bytes, 1024);
  EXPECT_EQ(s.peak_allocated_bytes, (4 << 20) + 1024);
  EXPECT_EQ(s.cached_bytes, 4 << 20);
  EXPECT_EQ(s.reserved_bytes, (4 << 20) + 1024);
  alloc.ResetPeak();
  EXPECT_EQ(alloc.stats().peak_allocated_bytes, 1024);
  alloc.EmptyCache();
  EXPECT_EQ(alloc.stats().cached_bytes, 0);
  EXPECT_EQ(mem.live.size(), 1u);
  alloc.Free(*b);
}

TEST(CachingAllocatorTest, ReleasesTheCacheAndRetriesWhenOutOfMemory) {
  FakeMemory mem;
  mem.limit = 8 << 20;
  CachingAllocator alloc = mem.Make();
  absl::StatusOr<uintptr_t> a = alloc.Allocate(6 << 20, A());
  ASSERT_TRUE(a.ok());
  alloc.Free(*a);  // cached, 6 MiB still held from the "driver"
  absl::StatusOr<uintptr_t> b = alloc.Allocate(4 << 20, B());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(alloc.stats().cached_bytes, 0);
  absl::StatusOr<uintptr_t> c = alloc.Allocate(6 << 20, B());
  EXPECT_TRUE(absl::IsResourceExhausted(c.status())) << c.status();
  alloc.Free(*b);
}

}  // namespace
}  // namespace kiln::backends::cuda
