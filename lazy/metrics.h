// Counters and timers of the lazy tensor core (PyTorch's LTC counters:
// CachedCompile / UncachedCompile, ExecuteComputation, eager fallbacks...).
// Process-wide, lock-free; Report() is what CreateMetricReport prints.
#ifndef KILN_LAZY_METRICS_H_
#define KILN_LAZY_METRICS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace kiln::lazy {

// A plain copy of the counters, for tests and reports.
struct MetricsSnapshot {
  int64_t syncs = 0;             // graph syncs that had something to compute
  int64_t mark_steps = 0;
  int64_t cache_hits = 0;        // compiled computation found (CachedCompile)
  int64_t cache_misses = 0;      // not found (UncachedCompile)
  int64_t compiles = 0;          // BackendImplInterface::Compile calls
  int64_t cache_evictions = 0;
  int64_t executions = 0;        // ExecuteComputation calls
  int64_t fallbacks = 0;         // ops without a lowering run eagerly
  int64_t eager_ops = 0;         // ops run eagerly in eager mode
  int64_t uploads = 0;           // host -> device transfers
  int64_t upload_cache_hits = 0; // host data found in the per-device data cache
  int64_t traced_ops = 0;        // ops recorded into the lazy graph
  // Nanoseconds.
  int64_t lookup_ns = 0;    // sync: collect, post order, hash, cache lookup
  int64_t compile_ns = 0;   // lowering + Compile on misses
  int64_t execute_ns = 0;
  int64_t fallback_ns = 0;
  int64_t eager_ns = 0;
  int64_t upload_ns = 0;

  std::string ToString() const;
};

class Metrics {
 public:
  std::atomic<int64_t> syncs{0}, mark_steps{0}, cache_hits{0}, cache_misses{0}, compiles{0},
      cache_evictions{0}, executions{0}, fallbacks{0}, eager_ops{0}, uploads{0},
      upload_cache_hits{0}, traced_ops{0};
  std::atomic<int64_t> lookup_ns{0}, compile_ns{0}, execute_ns{0}, fallback_ns{0}, eager_ns{0},
      upload_ns{0};

  MetricsSnapshot Snapshot() const;
  void Reset();
};

Metrics& GlobalMetrics();

// Adds the scope's wall time to a timer.
class ScopedTimer {
 public:
  explicit ScopedTimer(std::atomic<int64_t>* ns)
      : ns_(ns), start_(std::chrono::steady_clock::now()) {}
  ~ScopedTimer() {
    ns_->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now() - start_)
                       .count(),
                   std::memory_order_relaxed);
  }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  std::atomic<int64_t>* ns_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_METRICS_H_
