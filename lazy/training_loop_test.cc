// The acceptance loop: an MLP (64 -> 32 -> 10, relu), an MSE loss, a
// hand-written backward pass and an SGD update, all LazyTensor ops, for 100
// steps with one MarkStep each. It must compile once and hit the cache 99
// times, agree with the same ops run eagerly on the reference kernels within
// 1e-5, and recompile exactly once for a new batch size.
//
// The device is KILN_LAZY_DEVICE (default cpu).
#include <vector>

#include "lazy/graph_executor.h"
#include "lazy/lazy_tensor.h"
#include "lazy/metrics.h"
#include "lazy/mlp_step.h"
#include "lazy/test_util.h"
#include "gtest/gtest.h"
#include "support/tensor.h"

namespace kiln::lazy {
namespace {

using testing::MaxAbsDiff;
using testing::RandomTensor;

constexpr double kLearningRate = 0.05;
using testing::InitialMlp;
using testing::kMlpIn;
using testing::kMlpOut;
using testing::Mlp;

struct Result {
  std::vector<Tensor> params;  // w1, b1, w2, b2
  Tensor first_loss, last_loss;
};

Result Train(int steps, int64_t batch, bool eager) {
  std::unique_ptr<EagerModeScope> scope;
  if (eager) scope = std::make_unique<EagerModeScope>();
  Mlp p = InitialMlp();
  LazyTensor x = LazyTensor::FromTensor(RandomTensor({batch, kMlpIn}, 5));
  LazyTensor y = LazyTensor::FromTensor(RandomTensor({batch, kMlpOut}, 6));
  Result r;
  LazyTensor loss;
  for (int s = 0; s < steps; ++s) {
    loss = testing::TrainStep(p, x, y, kLearningRate);
    if (!eager) {
      EXPECT_TRUE(MarkStep().ok());
    }
    if (s == 0) r.first_loss = *loss.ToTensor();
  }
  absl::StatusOr<Tensor> last = loss.ToTensor();
  EXPECT_TRUE(last.ok()) << last.status();
  if (last.ok()) r.last_loss = *last;
  for (const LazyTensor* t : {&p.w1, &p.b1, &p.w2, &p.b2}) {
    absl::StatusOr<Tensor> v = t->ToTensor();
    EXPECT_TRUE(v.ok()) << v.status();
    r.params.push_back(v.ok() ? *v : Tensor());
  }
  return r;
}

class TrainingLoopTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = testing::SetUpBackend();
    ASSERT_TRUE(s.ok()) << s;
  }
};

TEST_F(TrainingLoopTest, HundredStepsCompileOnceAndMatchEager) {
  LazyGraphExecutor::Get().ClearCaches();
  GlobalMetrics().Reset();
  Result lazy = Train(100, /*batch=*/16, /*eager=*/false);
  MetricsSnapshot m = GlobalMetrics().Snapshot();
  EXPECT_EQ(m.compiles, 1);
  EXPECT_EQ(m.cache_misses, 1);
  EXPECT_EQ(m.cache_hits, 99);
  EXPECT_EQ(m.executions, 100);
  EXPECT_EQ(m.fallbacks, 0);
  EXPECT_EQ(m.eager_ops, 0);

  Result eager = Train(100, 16, /*eager=*/true);
  EXPECT_GT(GlobalMetrics().eager_ops.load(), 100 * 20);
  ASSERT_EQ(lazy.params.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_LE(MaxAbsDiff(lazy.params[i], eager.params[i]), 1e-5) << "parameter " << i;
  }
  EXPECT_LE(MaxAbsDiff(lazy.last_loss, eager.last_loss), 1e-5);
  // It trains.
  EXPECT_LT(lazy.last_loss.GetDouble(0), lazy.first_loss.GetDouble(0));

  // A new batch size is a new program: exactly one more compile.
  GlobalMetrics().Reset();
  Result other = Train(3, /*batch=*/8, /*eager=*/false);
  m = GlobalMetrics().Snapshot();
  EXPECT_EQ(m.compiles, 1);
  EXPECT_EQ(m.cache_hits, 2);
  // And the first batch size is still cached.
  GlobalMetrics().Reset();
  Train(2, 16, /*eager=*/false);
  EXPECT_EQ(GlobalMetrics().compiles.load(), 0);
  EXPECT_EQ(GlobalMetrics().cache_hits.load(), 2);
}

}  // namespace
}  // namespace kiln::lazy
