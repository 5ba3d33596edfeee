// The graph executor: compile-cache hits and misses, the LRU bound, the
// aliasing pattern in the key, the data cache, MarkStep, and per-device
// thread safety.
#include "lazy/graph_executor.h"

#include <thread>
#include <vector>

#include "lazy/backend_interface.h"
#include "lazy/lazy_tensor.h"
#include "lazy/metrics.h"
#include "lazy/test_util.h"
#include "gtest/gtest.h"
#include "support/tensor.h"

namespace kiln::lazy {
namespace {

using testing::MaxAbsDiff;
using testing::RandomTensor;

class GraphExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = testing::SetUpBackend();
    ASSERT_TRUE(s.ok()) << s;
  }
  void SetUp() override {
    LazyGraphExecutor::Get().ClearCaches();
    LazyGraphExecutor::Get().SetCompileCacheSize(64);
    GlobalMetrics().Reset();
  }
};

uint64_t HashOf(const LazyTensor& t) {
  std::shared_ptr<LazyTensorData> impls[] = {t.impl()};
  absl::StatusOr<uint64_t> h = LazyGraphExecutor::Get().GetGraphHash(impls);
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *h : 0;
}

TEST_F(GraphExecutorTest, SameProgramCompilesOnceThenHitsTheCache) {
  Tensor w = RandomTensor({8, 4}, 1);
  for (int i = 0; i < 3; ++i) {
    LazyTensor x = LazyTensor::FromTensor(RandomTensor({2, 8}, 10 + i));
    absl::StatusOr<Tensor> out = (x.Mm(LazyTensor::FromTensor(w)) + 1.0).Tanh().ToTensor();
    ASSERT_TRUE(out.ok()) << out.status();
  }
  MetricsSnapshot m = GlobalMetrics().Snapshot();
  EXPECT_EQ(m.compiles, 1);
  EXPECT_EQ(m.cache_misses, 1);
  EXPECT_EQ(m.cache_hits, 2);
  EXPECT_EQ(m.executions, 3);
  // w was uploaded once, the three x once each.
  EXPECT_EQ(m.uploads, 4);
  EXPECT_EQ(m.upload_cache_hits, 2);
}

TEST_F(GraphExecutorTest, KeyCoversShapesConstantsAndOps) {
  LazyTensor a = LazyTensor::FromTensor(RandomTensor({2, 3}, 1));
  LazyTensor b = LazyTensor::FromTensor(RandomTensor({2, 3}, 2));
  LazyTensor c = LazyTensor::FromTensor(RandomTensor({3, 3}, 3));
  EXPECT_EQ(HashOf(a * 2.0 + b), HashOf(b * 2.0 + a));  // data differs, program does not
  EXPECT_NE(HashOf(a * 2.0 + b), HashOf(a * 3.0 + b));  // a constant
  EXPECT_NE(HashOf(a * 2.0 + b), HashOf(a * 2.0 - b));  // an op
  EXPECT_NE(HashOf(a * 2.0), HashOf(c * 2.0));          // a shape
  EXPECT_NE(HashOf(a.Sum({0})), HashOf(a.Sum({1})));    // a dim list
  EXPECT_NE(HashOf(a.To(DType::kFloat64) * 2.0), HashOf(a * 2.0));  // a dtype
  EXPECT_EQ(HashOf(a), 0u);  // nothing pending
}

TEST_F(GraphExecutorTest, AliasingPatternChangesTheKey) {
  LazyTensor a = LazyTensor::FromTensor(RandomTensor({2, 3}, 1));
  LazyTensor b = LazyTensor::FromTensor(RandomTensor({2, 3}, 2));
  // Same DAG (two leaves of the same shape), different aliasing: a+a reads one
  // buffer twice, a+b two buffers.
  LazyTensor same = a + a;
  LazyTensor distinct = a + b;
  EXPECT_NE(HashOf(same), HashOf(distinct));
  // Two tensors holding the same host values share one upload (data cache):
  // c+d has the DAG of a+b (two leaf nodes) but both leaves read one buffer,
  // so only the aliasing pattern tells the keys apart.
  Tensor host = RandomTensor({2, 3}, 3);
  LazyTensor c = LazyTensor::FromTensor(host);
  LazyTensor d = LazyTensor::FromTensor(host);
  LazyTensor aliased = c + d;
  EXPECT_NE(HashOf(aliased), HashOf(distinct));
  EXPECT_NE(HashOf(aliased), HashOf(same));
  absl::StatusOr<Tensor> u = aliased.ToTensor();
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_FLOAT_EQ(u->GetDouble(4), 2 * host.GetDouble(4));
  EXPECT_EQ(GlobalMetrics().compiles.load(), 1);

  absl::StatusOr<Tensor> s = same.ToTensor();
  absl::StatusOr<Tensor> t = distinct.ToTensor();
  ASSERT_TRUE(s.ok() && t.ok());
  EXPECT_EQ(GlobalMetrics().compiles.load(), 3);
  absl::StatusOr<Tensor> a_host = a.ToTensor();
  absl::StatusOr<Tensor> b_host = b.ToTensor();
  ASSERT_TRUE(a_host.ok() && b_host.ok());
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_FLOAT_EQ(s->GetDouble(i), 2 * a_host->GetDouble(i));
    EXPECT_FLOAT_EQ(t->GetDouble(i), a_host->GetDouble(i) + b_host->GetDouble(i));
  }
}

TEST_F(GraphExecutorTest, LruEvictsAtItsSize) {
  LazyGraphExecutor& executor = LazyGraphExecutor::Get();
  executor.SetCompileCacheSize(2);
  EXPECT_EQ(executor.CompileCacheSize(), 2u);
  LazyTensor x = LazyTensor::FromTensor(RandomTensor({4}, 1));
  auto run = [&](double k) {
    absl::StatusOr<Tensor> out = (x * k).ToTensor();
    ASSERT_TRUE(out.ok()) << out.status();
  };
  run(1.0);  // miss: {1}
  run(2.0);  // miss: {1, 2}
  run(1.0);  // hit: 1 is now the most recent
  run(3.0);  // miss, evicts 2: {1, 3}
  EXPECT_EQ(executor.CompileCacheEntries(), 2u);
  run(1.0);  // hit
  run(2.0);  // miss again: it was evicted
  MetricsSnapshot m = GlobalMetrics().Snapshot();
  EXPECT_EQ(m.cache_hits, 2);
  EXPECT_EQ(m.cache_misses, 4);
  EXPECT_EQ(m.compiles, 4);
  EXPECT_EQ(m.cache_evictions, 2);
  EXPECT_EQ(executor.CompileCacheEntries(), 2u);
}

TEST_F(GraphExecutorTest, MarkStepSyncsAllLiveTensorsInOneComputation) {
  LazyTensor x = LazyTensor::FromTensor(RandomTensor({3, 3}, 1));
  LazyTensor y = x.Relu();
  LazyTensor z = x.Mm(x) * 0.5;
  {
    LazyTensor dropped = x.Exp();  // dies before the step: not computed
  }
  ASSERT_TRUE(y.is_pending() && z.is_pending());
  ASSERT_TRUE(MarkStep().ok());
  EXPECT_FALSE(y.is_pending());
  EXPECT_FALSE(z.is_pending());
  MetricsSnapshot m = GlobalMetrics().Snapshot();
  EXPECT_EQ(m.executions, 1);
  EXPECT_EQ(m.mark_steps, 1);
  std::string report = (*GetBackend())->CreateMetricReport();
  EXPECT_NE(report.find("UncachedCompile"), std::string::npos) << report;
  EXPECT_NE(report.find("EagerFallback"), std::string::npos) << report;
}

TEST_F(GraphExecutorTest, ComputationIsInspectable) {
  BackendImplInterface* backend = *GetBackend();
  absl::StatusOr<BackendDevice> device = backend->GetBackendDevice("");
  ASSERT_TRUE(device.ok());
  EXPECT_EQ(device->ToString(), testing::TestDeviceName() + ":0");
  EXPECT_FALSE(backend->GetBackendDevice("tpu").ok());
  EXPECT_FALSE(backend->GetBackendDevice("cpu:7").ok());
  EXPECT_FALSE(backend->GetBackendDevices().empty());

  LazyTensor x = LazyTensor::FromTensor(RandomTensor({2, 2}, 1));
  LazyTensor y = (x + x) * 3.0;
  absl::StatusOr<NodePtr> root = y.GetIrValue();
  ASSERT_TRUE(root.ok());
  std::unique_ptr<LoweringContext> ctx = backend->CreateLoweringContext("t", *device);
  absl::StatusOr<size_t> index = ctx->AddResult(root->get());
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 0u);
  EXPECT_EQ(ctx->GetParametersData().size(), 1u);    // x once
  EXPECT_EQ(ctx->GetParameterSequence().size(), 1u);  // one leaf node (cached per tensor)
  EXPECT_EQ(ctx->GetEmittedNodeCount(), 3u);          // x, add, mul
  absl::StatusOr<ComputationPtr> c = ctx->Build();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->parameters_size(), 1u);
  EXPECT_EQ((*c)->parameter_names()[0], "p0");
  EXPECT_EQ((*c)->parameter_shapes()[0], Shape(DType::kFloat32, {2, 2}));
  EXPECT_EQ((*c)->result_shape().size(), 1u);
  EXPECT_NE((*c)->ToString().find("aten::mul"), std::string::npos) << (*c)->ToString();
  absl::StatusOr<std::vector<ComputationPtr>> compiled = backend->Compile({*c});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  absl::StatusOr<std::vector<BackendDataPtr>> out =
      backend->ExecuteComputation((*compiled)[0], ctx->GetParametersData(), *device);
  ASSERT_TRUE(out.ok()) << out.status();
  absl::StatusOr<Tensor> host = backend->MakeTensorFromComputationData((*out)[0], std::nullopt);
  absl::StatusOr<Tensor> x_host = x.ToTensor();
  ASSERT_TRUE(host.ok() && x_host.ok());
  EXPECT_FLOAT_EQ(host->GetDouble(3), x_host->GetDouble(3) * 6);
  EXPECT_NE(backend->GetComputationBackendText((*compiled)[0]).find("compiled:"), std::string::npos);
  // Wrong argument count: an error, not a crash.
  EXPECT_FALSE(backend->ExecuteComputation((*compiled)[0], {}, *device).ok());
}

TEST_F(GraphExecutorTest, PlaceholdersAndScalars) {
  BackendImplInterface* backend = *GetBackend();
  BackendDevice device = *backend->GetBackendDevice("");
  BackendDataPtr placeholder = backend->CreateDataPlaceholder(device, Shape(DType::kFloat32, {2}));
  EXPECT_FALSE(placeholder->HasValue());
  absl::StatusOr<BackendDataPtr> value = backend->MakeComputationDataFromScalar(2.5, DType::kFloat32, device);
  ASSERT_TRUE(value.ok());
  placeholder->Assign(**value);
  EXPECT_TRUE(placeholder->HasValue());
  EXPECT_EQ(placeholder->GetHandle(), (*value)->GetHandle());
  LazyTensor s = LazyTensor::Scalar(4.0);
  LazyTensor x = LazyTensor::FromTensor(RandomTensor({3}, 1));
  absl::StatusOr<Tensor> out = (x * s).ToTensor();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ(out->GetDouble(0), x.ToTensor()->GetDouble(0) * 4);
}

TEST_F(GraphExecutorTest, SyncIsThreadSafePerDevice) {
  constexpr int kThreads = 4, kSteps = 10;
  Tensor w_host = RandomTensor({6, 6}, 7, 0.3f);
  std::vector<std::vector<Tensor>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LazyTensor w = LazyTensor::FromTensor(w_host);
      LazyTensor x = LazyTensor::FromTensor(RandomTensor({2, 6}, 100 + t));
      for (int s = 0; s < kSteps; ++s) {
        x = (x.Mm(w) + 0.1).Tanh();
        EXPECT_TRUE(x.ToTensor().ok());
      }
      absl::StatusOr<Tensor> out = x.ToTensor();
      EXPECT_TRUE(out.ok());
      if (out.ok()) results[t].push_back(*out);
    });
  }
  for (std::thread& th : threads) th.join();
  // Each thread's result equals the same computation run alone, eagerly.
  for (int t = 0; t < kThreads; ++t) {
    EagerModeScope eager;
    LazyTensor w = LazyTensor::FromTensor(w_host);
    LazyTensor x = LazyTensor::FromTensor(RandomTensor({2, 6}, 100 + t));
    for (int s = 0; s < kSteps; ++s) x = (x.Mm(w) + 0.1).Tanh();
    ASSERT_EQ(results[t].size(), 1u);
    EXPECT_LE(MaxAbsDiff(*x.ToTensor(), results[t][0]), 1e-5) << "thread " << t;
  }
  // One program: the device lock makes the other threads wait for the first
  // compile, then hit the cache.
  EXPECT_EQ(GlobalMetrics().compiles.load(), 1);
  EXPECT_EQ(GlobalMetrics().executions.load(), kThreads * kSteps);
}

// MarkStep from several threads at once: each step also syncs the other
// threads' pending tensors (in whatever combination is live), and every
// thread's values still come out right.
TEST_F(GraphExecutorTest, ConcurrentMarkStepsStayCorrect) {
  constexpr int kThreads = 3, kSteps = 3;
  std::vector<Tensor> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      LazyTensor x = LazyTensor::FromTensor(RandomTensor({4}, 200 + t));
      for (int s = 0; s < kSteps; ++s) {
        x = x * 0.5 + 1.0;
        EXPECT_TRUE(MarkStep().ok());
      }
      absl::StatusOr<Tensor> out = x.ToTensor();
      EXPECT_TRUE(out.ok());
      if (out.ok()) results[t] = *out;
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    Tensor start = RandomTensor({4}, 200 + t);
    for (int64_t i = 0; i < 4; ++i) {
      double v = start.GetDouble(i);
      for (int s = 0; s < kSteps; ++s) v = v * 0.5 + 1.0;
      ASSERT_TRUE(results[t].defined());
      EXPECT_NEAR(results[t].GetDouble(i), v, 1e-6) << "thread " << t;
    }
  }
}

}  // namespace
}  // namespace kiln::lazy
