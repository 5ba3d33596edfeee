#include "driver/measure.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "support/tensor.h"
#include "wrapper/codegen.h"

namespace kiln::driver {
namespace {

Tensor Floats(std::vector<float> v) {
  Tensor t = Tensor::Empty(DType::kFloat32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

// A host program: doubles its input, counting calls.
class Doubler : public wrapper::CompiledProgram {
 public:
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override {
    ++calls;
    Tensor out = Tensor::Empty(DType::kFloat32, inputs[0].sizes());
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] = 2 * inputs[0].data<float>()[i];
    return std::vector<Tensor>{out};
  }
  int calls = 0;
};

TEST(MeasureProgram, HostSessionRunsWarmupAndTimedCallsAndFetchesTheLastOutputs) {
  Doubler program;
  MeasureOptions options;
  options.warmup = 2;
  options.iterations = 5;
  options.profile_iterations = 1;
  absl::StatusOr<Measurement> m = MeasureProgram(program, {Floats({1, 2, 3})}, options);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(program.calls, 7) << "the first call counts as a warm-up call";
  EXPECT_EQ(m->ms.size(), 5u);
  EXPECT_GT(m->first_call_ms, 0.0);
  EXPECT_LE(m->min_ms, m->median_ms);
  EXPECT_LE(m->median_ms, m->max_ms);
  EXPECT_EQ(m->timer, "host clock");
  ASSERT_EQ(m->outputs.size(), 1u);
  EXPECT_EQ(m->outputs[0].data<float>()[2], 6.0f);
  EXPECT_TRUE(m->profile.empty());
  EXPECT_NE(m->profile_error.find("does not profile"), std::string::npos);
}

TEST(CompareOutputs, RelativeL2AndMaxAbs) {
  absl::StatusOr<OutputError> e = CompareOutputs({Floats({1, 2, 4})}, {Floats({1, 2, 3})});
  ASSERT_TRUE(e.ok());
  EXPECT_DOUBLE_EQ(e->max_abs, 1.0);
  EXPECT_NEAR(e->rel_l2, 1.0 / std::sqrt(14.0), 1e-12);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isinf(CompareOutputs({Floats({nan, 1})}, {Floats({0, 1})})->rel_l2));
  EXPECT_EQ(CompareOutputs({Floats({nan, 1})}, {Floats({nan, 1})})->rel_l2, 0.0);
  EXPECT_EQ(CompareOutputs({Floats({1})}, {Floats({1, 2})}).status().code(), absl::StatusCode::kInvalidArgument);
  // A narrow run against its float32 reference compares by value.
  Tensor half = Tensor::Empty(DType::kFloat16, {2});
  half.data<uint16_t>()[0] = DoubleToHalfBits(1.0);
  half.data<uint16_t>()[1] = DoubleToHalfBits(3.0);
  EXPECT_DOUBLE_EQ(CompareOutputs({half}, {Floats({1, 2})})->max_abs, 1.0);
  Tensor ints = Tensor::Empty(DType::kInt64, {2});
  EXPECT_EQ(CompareOutputs({ints}, {Floats({1, 2})}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(FormatProfile, GroupsByNameAndSortsByTime) {
  std::vector<wrapper::StepProfile> steps = {{"k_small", "kernel", 2, 0.2},
                                             {"aten::mm", "cublas", 2, 1.0},
                                             {"aten::mm", "cublas", 2, 1.0},
                                             {"k_big", "kernel", 2, 1.6}};
  const std::string table = FormatProfile(steps, 2, 2);
  EXPECT_LT(table.find("aten::mm"), table.find("k_big")) << table;  // 2.0 ms before 1.6 ms
  EXPECT_NE(table.find("(1 more steps)"), std::string::npos) << table;
  EXPECT_NE(table.find("1.0000"), std::string::npos) << "aten::mm: 2 ms over 2 calls\n" << table;
  EXPECT_NE(table.find("2.0"), std::string::npos) << "two launches per call\n" << table;
}

}  // namespace
}  // namespace kiln::driver
