// A small thread-safe LRU map (the compile cache and the upload cache).
// Get() refreshes an entry; Put() evicts the least recently used entries
// beyond the capacity and says how many went.
#ifndef KILN_LAZY_LRU_CACHE_H_
#define KILN_LAZY_LRU_CACHE_H_

#include <cstddef>
#include <list>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace kiln::lazy {

template <typename K, typename V>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {}

  // Null when absent.
  std::shared_ptr<V> Get(const K& key) {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  // Inserts or replaces; returns the number of entries evicted.
  size_t Put(const K& key, std::shared_ptr<V> value) {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      it->second->second = std::move(value);
      order_.splice(order_.begin(), order_, it->second);
      return 0;
    }
    order_.emplace_front(key, std::move(value));
    index_[key] = order_.begin();
    return TrimLocked();
  }

  // Returns the number of entries evicted by shrinking.
  size_t SetCapacity(size_t capacity) {
    absl::MutexLock lock(&mu_);
    capacity_ = capacity;
    return TrimLocked();
  }
  size_t capacity() const {
    absl::MutexLock lock(&mu_);
    return capacity_;
  }
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return index_.size();
  }
  bool Contains(const K& key) const {
    absl::MutexLock lock(&mu_);
    return index_.contains(key);
  }
  void Clear() {
    absl::MutexLock lock(&mu_);
    index_.clear();
    order_.clear();
  }

 private:
  size_t TrimLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    size_t evicted = 0;
    while (index_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
      ++evicted;
    }
    return evicted;
  }

  mutable absl::Mutex mu_;
  size_t capacity_ ABSL_GUARDED_BY(mu_);
  std::list<std::pair<K, std::shared_ptr<V>>> order_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<K, typename std::list<std::pair<K, std::shared_ptr<V>>>::iterator> index_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_LRU_CACHE_H_
