// Issue 7's overhead and speed goals for lazy tensors (lazy), side by
// side in one binary:
//
//   BM_TraceOnly/100        record a 100-op graph, no sync: tracing cost per op
//   BM_SyncLookup/100       the sync's lookup on a recorded 100-op graph
//                           (collect, post order, key, cache probe) per op
//   BM_TraceAndSync/100     record it and sync against a warm compile cache;
//                           counters split trace / lookup (collect, post order,
//                           hash, cache lookup) / execute. Goal: trace + lookup
//                           <= 2 us per recorded op.
//   BM_MlpStepLazy/B        one step of the 64 -> 32 -> 10 MLP (forward, MSE,
//                           hand-written backward, SGD) traced + MarkStep,
//                           cache warm
//   BM_MlpStepEager/B       the same ops op by op on the reference kernels
//                           (EagerModeScope). Goal: eager / lazy >= 3.
//
//   ./bazelw run -c opt //benchmarks:lazy_bench
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "benchmark/benchmark.h"
#include "backends/cpu/cpu_backend.h"
#include "lazy/graph_executor.h"
#include "lazy/kiln_backend.h"
#include "lazy/lazy_tensor.h"
#include "lazy/metrics.h"
#include "lazy/mlp_step.h"
#include "lazy/test_util.h"
#include "support/tensor.h"

namespace kiln::lazy {
namespace {

void Setup() {
  static const bool ok = [] {
    absl::Status s = backends::cpu::RegisterCpuBackend();
    if (s.ok()) s = RegisterKilnLazyBackend();
    if (!s.ok()) {
      std::fprintf(stderr, "setup failed: %s\n", s.ToString().c_str());
      std::exit(1);
    }
    return true;
  }();
  (void)ok;
}


// A chain of `ops` elementwise ops (add/mul/tanh/sub with constants, and a
// binary op with the input every few steps) over a small tensor.
LazyTensor TraceChain(const LazyTensor& x, int ops) {
  LazyTensor y = x;
  for (int i = 0; i < ops; ++i) {
    switch (i % 5) {
      case 0: y = y * 0.5; break;
      case 1: y = y + 0.25; break;
      case 2: y = y.Tanh(); break;
      case 3: y = y + x; break;
      default: y = y - 0.125; break;
    }
  }
  return y;
}

void BM_TraceOnly(benchmark::State& state) {
  Setup();
  const int ops = static_cast<int>(state.range(0));
  LazyTensor x = LazyTensor::FromTensor(testing::RandomTensor({16, 16}, 1, 1.0f));
  (void)x.GetIrValue();  // uploaded once, outside the loop
  for (auto _ : state) {
    LazyTensor y = TraceChain(x, ops);
    benchmark::DoNotOptimize(y);
  }
  state.counters["per_op"] = benchmark::Counter(static_cast<double>(state.iterations()) * ops,
                                                benchmark::Counter::kIsRate |
                                                    benchmark::Counter::kInvert);
}
BENCHMARK(BM_TraceOnly)->Arg(100);

// The sync's lookup alone on a recorded 100-op graph: collect the pending
// roots, post order, parameters and aliasing, the key, the cache probe.
void BM_SyncLookup(benchmark::State& state) {
  Setup();
  const int ops = static_cast<int>(state.range(0));
  LazyTensor x = LazyTensor::FromTensor(testing::RandomTensor({16, 16}, 1, 1.0f));
  {
    LazyTensor warm = TraceChain(x, ops);
    if (!warm.ToTensor().ok()) {
      state.SkipWithError("warm-up sync failed");
      return;
    }
  }
  LazyTensor y = TraceChain(x, ops);
  std::shared_ptr<LazyTensorData> roots[] = {y.impl()};
  LazyGraphExecutor& executor = LazyGraphExecutor::Get();
  for (auto _ : state) {
    absl::StatusOr<uint64_t> key = executor.GetGraphHash(roots);
    if (!key.ok() || !executor.CompileCacheContains(*key)) {
      state.SkipWithError("graph not in the warm cache");
      return;
    }
  }
  state.counters["per_op"] = benchmark::Counter(static_cast<double>(state.iterations()) * ops,
                                                benchmark::Counter::kIsRate |
                                                    benchmark::Counter::kInvert);
}
BENCHMARK(BM_SyncLookup)->Arg(100);

double ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

void BM_TraceAndSync(benchmark::State& state) {
  Setup();
  const int ops = static_cast<int>(state.range(0));
  LazyTensor x = LazyTensor::FromTensor(testing::RandomTensor({16, 16}, 1, 1.0f));
  {
    LazyTensor warm = TraceChain(x, ops);  // compiles once
    if (!warm.ToTensor().ok()) {
      state.SkipWithError("warm-up sync failed");
      return;
    }
  }
  Metrics& m = GlobalMetrics();
  const int64_t lookup0 = m.lookup_ns.load(), execute0 = m.execute_ns.load(),
                compiles0 = m.compiles.load();
  double trace_ns = 0, trace_cpu_ns = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuNs();
    LazyTensor y = TraceChain(x, ops);
    trace_cpu_ns += ThreadCpuNs() - c0;
    trace_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    absl::Status s = SyncTensors({y});
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  const double n = static_cast<double>(state.iterations());
  const double lookup_ns = static_cast<double>(m.lookup_ns.load() - lookup0);
  // Wall time (steady clock) except trace_cpu_us_per_op (this thread's CPU
  // time): on a loaded machine the wall figures include waiting for a core.
  state.counters["trace_us_per_op"] = trace_ns / n / ops / 1e3;
  state.counters["trace_cpu_us_per_op"] = trace_cpu_ns / n / ops / 1e3;
  state.counters["lookup_us_per_op"] = lookup_ns / n / ops / 1e3;
  state.counters["trace+lookup_us_per_op"] = (trace_ns + lookup_ns) / n / ops / 1e3;
  state.counters["execute_us"] = static_cast<double>(m.execute_ns.load() - execute0) / n / 1e3;
  state.counters["compiles"] = static_cast<double>(m.compiles.load() - compiles0);
}
BENCHMARK(BM_TraceAndSync)->Arg(100);

// ------------------------------------------------------------- MLP step

using testing::InitialMlp;
using testing::kMlpIn;
using testing::kMlpOut;
using testing::Mlp;
constexpr double kLearningRate = 0.01;

LazyTensor TrainStep(Mlp& p, const LazyTensor& x, const LazyTensor& y) {
  return testing::TrainStep(p, x, y, kLearningRate);
}

void BM_MlpStepLazy(benchmark::State& state) {
  Setup();
  const int64_t batch = state.range(0);
  Mlp p = InitialMlp();
  LazyTensor x = LazyTensor::FromTensor(testing::RandomTensor({batch, kMlpIn}, 5, 1.0f));
  LazyTensor y = LazyTensor::FromTensor(testing::RandomTensor({batch, kMlpOut}, 6, 1.0f));
  LazyTensor loss;
  for (int i = 0; i < 2; ++i) {  // compile + first hit, outside the timing
    loss = TrainStep(p, x, y);
    if (!MarkStep().ok()) {
      state.SkipWithError("warm-up step failed");
      return;
    }
  }
  const int64_t compiles0 = GlobalMetrics().compiles.load();
  for (auto _ : state) {
    loss = TrainStep(p, x, y);
    absl::Status s = MarkStep();
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  state.counters["compiles"] = static_cast<double>(GlobalMetrics().compiles.load() - compiles0);
}
BENCHMARK(BM_MlpStepLazy)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);

void BM_MlpStepEager(benchmark::State& state) {
  Setup();
  const int64_t batch = state.range(0);
  EagerModeScope eager;
  Mlp p = InitialMlp();
  LazyTensor x = LazyTensor::FromTensor(testing::RandomTensor({batch, kMlpIn}, 5, 1.0f));
  LazyTensor y = LazyTensor::FromTensor(testing::RandomTensor({batch, kMlpOut}, 6, 1.0f));
  for (auto _ : state) {
    LazyTensor loss = TrainStep(p, x, y);
    if (!loss.ok()) {
      state.SkipWithError(loss.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(loss);
  }
}
BENCHMARK(BM_MlpStepEager)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace kiln::lazy

BENCHMARK_MAIN();
