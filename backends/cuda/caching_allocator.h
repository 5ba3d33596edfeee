// A caching allocator for one device (PyTorch's CUDACachingAllocator in
// miniature): freed blocks stay cached per stream and are handed out again
// for a later request of a fitting size on the same stream, so a program
// that runs repeatedly allocates from the driver only on its first run.
//
// Sizes are rounded to size classes (512 bytes below 1 MiB, 2 MiB above)
// so that nearby sizes share blocks; a cached block serves a request when it
// is at least the rounded size and at most twice it (large blocks are not
// wasted on small requests). When the driver runs out of memory, the cache
// is released and the allocation retried once.
//
// The raw allocator is injected (cuMemAlloc/cuMemFree for CUDA; malloc in
// tests), so the policy and the statistics are testable without a GPU.
#ifndef KILN_BACKENDS_CUDA_CACHING_ALLOCATOR_H_
#define KILN_BACKENDS_CUDA_CACHING_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace kiln::backends::cuda {

struct AllocatorStats {
  int64_t allocated_bytes = 0;       // in blocks handed out (rounded sizes)
  int64_t peak_allocated_bytes = 0;  // max of allocated_bytes since reset
  int64_t cached_bytes = 0;          // in free blocks kept for reuse
  int64_t reserved_bytes = 0;        // allocated + cached (from the driver)
  int64_t driver_allocs = 0;         // raw allocations made
  int64_t driver_frees = 0;
  int64_t cache_hits = 0;            // requests served from the cache
  int64_t requests = 0;
};

class CachingAllocator {
 public:
  // Raw memory: returns the address, or an error (ResourceExhausted when
  // out of memory, which makes the allocator release its cache and retry).
  using RawAlloc = std::function<absl::StatusOr<uintptr_t>(size_t)>;
  using RawFree = std::function<void(uintptr_t)>;

  CachingAllocator(RawAlloc raw_alloc, RawFree raw_free);
  ~CachingAllocator();  // returns every cached block to the raw allocator
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  static size_t RoundSize(size_t nbytes);

  // A block of at least `nbytes` (never null; 0 bytes gives a minimal
  // block), associated with `stream` (an opaque key: the CUstream).
  absl::StatusOr<uintptr_t> Allocate(size_t nbytes, const void* stream);
  // Returns a block to its stream's cache. Unknown pointers are ignored
  // (returns false).
  bool Free(uintptr_t ptr);
  // Frees every cached block to the raw allocator.
  void EmptyCache();

  AllocatorStats stats() const;
  void ResetPeak();
  // The rounded size of a live block (0 when unknown).
  size_t BlockSize(uintptr_t ptr) const;

 private:
  struct Block {
    size_t size = 0;
    const void* stream = nullptr;
  };
  void EmptyCacheLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  RawAlloc raw_alloc_;
  RawFree raw_free_;
  mutable absl::Mutex mu_;
  std::unordered_map<uintptr_t, Block> live_ ABSL_GUARDED_BY(mu_);
  // Per stream: size -> free block addresses.
  std::map<const void*, std::multimap<size_t, uintptr_t>> cache_ ABSL_GUARDED_BY(mu_);
  AllocatorStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CACHING_ALLOCATOR_H_
