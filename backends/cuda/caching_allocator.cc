#include "backends/cuda/caching_allocator.h"

#include <algorithm>
#include <utility>

namespace kiln::backends::cuda {
namespace {

constexpr size_t kSmallRound = 512;
constexpr size_t kLargeThreshold = size_t{1} << 20;
constexpr size_t kLargeRound = size_t{2} << 20;

}  // namespace

CachingAllocator::CachingAllocator(RawAlloc raw_alloc, RawFree raw_free)
    : raw_alloc_(std::move(raw_alloc)), raw_free_(std::move(raw_free)) {}

CachingAllocator::~CachingAllocator() {
  absl::MutexLock lock(&mu_);
  EmptyCacheLocked();
  // Live blocks belong to tensors that outlive the allocator only at process
  // exit; they are left to the driver's teardown.
}

size_t CachingAllocator::RoundSize(size_t nbytes) {
  nbytes = std::max<size_t>(nbytes, 1);
  const size_t unit = nbytes < kLargeThreshold ? kSmallRound : kLargeRound;
  return (nbytes + unit - 1) / unit * unit;
}

absl::StatusOr<uintptr_t> CachingAllocator::Allocate(size_t nbytes, const void* stream) {
  const size_t size = RoundSize(nbytes);
  absl::MutexLock lock(&mu_);
  ++stats_.requests;
  auto& pool = cache_[stream];
  auto it = pool.lower_bound(size);
  uintptr_t ptr = 0;
  size_t block_size = size;
  if (it != pool.end() && it->first <= 2 * size) {
    ptr = it->second;
    block_size = it->first;
    pool.erase(it);
    stats_.cached_bytes -= static_cast<int64_t>(block_size);
    ++stats_.cache_hits;
  } else {
    absl::StatusOr<uintptr_t> raw = raw_alloc_(size);
    if (!raw.ok() && absl::IsResourceExhausted(raw.status()) && stats_.cached_bytes > 0) {
      EmptyCacheLocked();
      raw = raw_alloc_(size);
    }
    if (!raw.ok()) return raw.status();
    ptr = *raw;
    ++stats_.driver_allocs;
    stats_.reserved_bytes += static_cast<int64_t>(size);
  }
  live_[ptr] = Block{block_size, stream};
  stats_.allocated_bytes += static_cast<int64_t>(block_size);
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  return ptr;
}

bool CachingAllocator::Free(uintptr_t ptr) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(ptr);
  if (it == live_.end()) return false;
  const Block block = it->second;
  live_.erase(it);
  stats_.allocated_bytes -= static_cast<int64_t>(block.size);
  stats_.cached_bytes += static_cast<int64_t>(block.size);
  cache_[block.stream].emplace(block.size, ptr);
  return true;
}

void CachingAllocator::EmptyCache() {
  absl::MutexLock lock(&mu_);
  EmptyCacheLocked();
}

void CachingAllocator::EmptyCacheLocked() {
  for (auto& [stream, pool] : cache_) {
    for (auto& [size, ptr] : pool) {
      raw_free_(ptr);
      ++stats_.driver_frees;
      stats_.reserved_bytes -= static_cast<int64_t>(size);
    }
  }
  cache_.clear();
  stats_.cached_bytes = 0;
}

AllocatorStats CachingAllocator::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

void CachingAllocator::ResetPeak() {
  absl::MutexLock lock(&mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

size_t CachingAllocator::BlockSize(uintptr_t ptr) const {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(ptr);
  return it == live_.end() ? 0 : it->second.size;
}

}  // namespace kiln::backends::cuda
