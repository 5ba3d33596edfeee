#include "support/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace kiln {

size_t HardwareThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

void ParallelFor(size_t n, size_t threads, const std::function<void(size_t)>& body) {
  threads = std::min(n, threads);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) body(i);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace kiln
