#include "support/parallel.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace kiln {
namespace {

TEST(ParallelForTest, RunsEveryIndexOnce) {
  for (size_t threads : {0, 1, 3, 64}) {
    for (size_t n : {0, 1, 5, 1000}) {
      std::vector<std::atomic<int>> runs(n);
      ParallelFor(n, threads, [&](size_t i) { runs[i].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(runs[i].load(), 1) << "n " << n << " threads " << threads << " i " << i;
    }
  }
}

TEST(ParallelForTest, OneThreadRunsInOrderOnTheCaller) {
  std::vector<size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  ParallelFor(4, 1, [&](size_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3}));
}

TEST(ParallelForTest, UsesAtMostTheThreadsAskedFor) {
  std::mutex mu;
  std::set<std::thread::id> seen;
  ParallelFor(200, 3, [&](size_t) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_GE(seen.size(), 1u);
  EXPECT_LE(seen.size(), 3u);
  EXPECT_GE(HardwareThreads(), 1u);
}

}  // namespace
}  // namespace kiln
