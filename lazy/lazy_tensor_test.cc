// LazyTensor ops against the same ops run eagerly on the reference kernels,
// error propagation, and the eager fallback.
#include "lazy/lazy_tensor.h"

#include <functional>
#include <string>
#include <vector>

#include "lazy/backend_interface.h"
#include "lazy/graph_executor.h"
#include "lazy/metrics.h"
#include "lazy/test_util.h"
#include "gtest/gtest.h"
#include "support/tensor.h"

namespace kiln::lazy {
namespace {

using testing::MaxAbsDiff;
using testing::RandomTensor;

class LazyTensorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::Status s = testing::SetUpBackend();
    ASSERT_TRUE(s.ok()) << s;
  }
};

// Runs `program` lazily and eagerly on the same inputs; compares outputs.
void ExpectLazyMatchesEager(
    const std::vector<Tensor>& inputs,
    const std::function<std::vector<LazyTensor>(const std::vector<LazyTensor>&)>& program,
    double tolerance = 1e-5) {
  auto run = [&](bool eager) {
    std::vector<LazyTensor> in;
    for (const Tensor& t : inputs) in.push_back(LazyTensor::FromTensor(t));
    std::vector<Tensor> out;
    std::vector<LazyTensor> results;
    if (eager) {
      EagerModeScope scope;
      results = program(in);
    } else {
      results = program(in);
      EXPECT_TRUE(SyncTensors(results).ok());
    }
    for (const LazyTensor& r : results) {
      absl::StatusOr<Tensor> t = r.ToTensor();
      EXPECT_TRUE(t.ok()) << t.status();
      out.push_back(t.ok() ? *t : Tensor());
    }
    return out;
  };
  std::vector<Tensor> lazy = run(false);
  std::vector<Tensor> eager = run(true);
  ASSERT_EQ(lazy.size(), eager.size());
  for (size_t i = 0; i < lazy.size(); ++i) {
    EXPECT_LE(MaxAbsDiff(lazy[i], eager[i]), tolerance) << "output " << i;
  }
}

TEST_F(LazyTensorTest, OpsRecordInsteadOfRunning) {
  LazyTensor x = LazyTensor::FromTensor(RandomTensor({4, 8}, 1));
  LazyTensor w = LazyTensor::FromTensor(RandomTensor({8, 3}, 2));
  LazyTensor y = x.Mm(w).Relu();
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(y.is_pending());
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  absl::StatusOr<Tensor> out = y.ToTensor();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE(y.is_pending());
}

TEST_F(LazyTensorTest, ElementwiseAndBroadcastMatchEager) {
  ExpectLazyMatchesEager({RandomTensor({4, 8}, 3), RandomTensor({8}, 4), RandomTensor({4, 1}, 5)},
                         [](const std::vector<LazyTensor>& in) {
                           const LazyTensor &a = in[0], &b = in[1], &c = in[2];
                           return std::vector<LazyTensor>{
                               a + b, a - c, a * b, a / (c.Abs() + 1.0), (a * 2.5 + 1.0) / 3.0,
                               a.Tanh(), a.Sigmoid(), a.Exp(), (a.Abs() + 0.1).Log(), -a,
                               a.Relu(), a.Pow(2.0), a.Square(), a.Maximum(b), a.RSub(1.0),
                               (a.Abs() + 0.5).Sqrt(), a.Clamp(-0.5, 0.5), a.Minimum(b),
                               a.Lt(0.0), a.Gt(b), a.Eq(a), a.To(DType::kFloat64) * 2.0,
                               a.Add(b, 0.5), a.Sub(c, 2.0), a.Clamp(std::nullopt, 0.0)};
                         });
}

TEST_F(LazyTensorTest, ReductionsSoftmaxViewsMatchEager) {
  ExpectLazyMatchesEager(
      {RandomTensor({4, 6}, 6), RandomTensor({6, 5}, 7), RandomTensor({5}, 8)},
      [](const std::vector<LazyTensor>& in) {
        const LazyTensor &a = in[0], &w = in[1], &b = in[2];
        return std::vector<LazyTensor>{
            a.Sum(),          a.Sum({1}),          a.Sum({0}, true),     a.Mean(),
            a.Mean({1}, true), a.Softmax(1),       a.LogSoftmax(-1),     a.T(),
            a.Transpose(0, 1), a.Reshape({2, -1}), a.View({24}),         b.Expand({3, 5}),
            a.Matmul(w),      Addmm(b, a, w),      Linear(a, w.T(), b),  Where(a.Gt(0.0), a, a * 0.1),
            MseLoss(a, a * 0.5), SoftmaxCrossEntropy(a, a.Softmax(1))};
      });
}

// Programs the passes may reduce to their input or a view of it.
TEST_F(LazyTensorTest, IdentityLikeProgramsMatchEager) {
  ExpectLazyMatchesEager({RandomTensor({3, 4}, 11)}, [](const std::vector<LazyTensor>& in) {
    const LazyTensor& a = in[0];
    return std::vector<LazyTensor>{a * 1.0, a + 0.0, a.Reshape({3, 4}), a.T().T(), a.T(),
                                   a.Expand({2, 3, 4}), a.Sum({0}, true)};
  });
}

TEST_F(LazyTensorTest, ResultsOfOneSyncFeedTheNext) {
  LazyTensor x = LazyTensor::FromTensor(RandomTensor({4, 4}, 12));
  LazyTensor y = x.T();
  ASSERT_TRUE(y.ToTensor().ok());  // y: device data, possibly a strided view
  LazyTensor z = y.Mm(x) + y;
  absl::StatusOr<Tensor> lazy = z.ToTensor();
  ASSERT_TRUE(lazy.ok()) << lazy.status();
  EagerModeScope eager;
  LazyTensor xe = LazyTensor::FromTensor(*x.ToTensor());
  absl::StatusOr<Tensor> ref = (xe.T().Mm(xe) + xe.T()).ToTensor();
  ASSERT_TRUE(ref.ok());
  EXPECT_LE(MaxAbsDiff(*lazy, *ref), 1e-5);
}

TEST_F(LazyTensorTest, ShapeErrorsPropagateWithoutAborting) {
  LazyTensor a = LazyTensor::FromTensor(RandomTensor({4, 8}, 1));
  LazyTensor b = LazyTensor::FromTensor(RandomTensor({3, 8}, 2));
  LazyTensor bad = a.Mm(b);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("mm"), std::string::npos) << bad.status();
  LazyTensor worse = (bad + 1.0).Relu();
  EXPECT_EQ(worse.status(), bad.status());
  EXPECT_FALSE(worse.ToTensor().ok());
  EXPECT_FALSE((a + b).ok());
  EXPECT_FALSE(a.Reshape({5, -1}).ok());
  EXPECT_FALSE(a.Sum({2}).ok());
  EXPECT_FALSE(LazyTensor().Relu().ok());
}

TEST_F(LazyTensorTest, OpWithoutLoweringFallsBackEagerlyAndIsCounted) {
  Tensor host = RandomTensor({3, 4}, 9);
  const int64_t before = GlobalMetrics().fallbacks.load();
  LazyTensor x = LazyTensor::FromTensor(host);
  LazyTensor flipped = (x * 2.0).Flip({1});  // syncs x * 2, flips on the host
  ASSERT_TRUE(flipped.ok()) << flipped.status();
  EXPECT_EQ(GlobalMetrics().fallbacks.load(), before + 1);
  EXPECT_FALSE(flipped.is_pending());
  LazyTensor y = flipped + 1.0;  // the result feeds lazy ops again
  absl::StatusOr<Tensor> out = y.ToTensor();
  ASSERT_TRUE(out.ok()) << out.status();
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_NEAR(out->GetDouble(r * 4 + c), host.GetDouble(r * 4 + (3 - c)) * 2.0 + 1.0, 1e-6);
    }
  }
}

}  // namespace
}  // namespace kiln::lazy
