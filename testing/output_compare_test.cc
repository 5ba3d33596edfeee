#include "testing/output_compare.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "support/tensor.h"

namespace kiln::testing {
namespace {

Tensor Floats(std::vector<float> values) {
  Tensor t = Tensor::Empty(DType::kFloat32, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<float>()[i] = values[i];
  return t;
}

TEST(OutputCompareTest, ToleranceIsOnnxRule) {
  const Tensor expected = Floats({1.0f, 2.0f});
  EXPECT_EQ(CompareTensors(Floats({1.0005f, 2.0f}), expected, {}), "");
  EXPECT_NE(CompareTensors(Floats({1.01f, 2.0f}), expected, {}), "");
  EXPECT_EQ(CompareTensors(Floats({1.01f, 2.0f}), expected, Tolerance{0, 0.05}), "");
  EXPECT_EQ(CompareTensors(Floats({1.01f, 2.0f}), expected, Tolerance{0.02, 0}), "");
}

TEST(OutputCompareTest, NanOnOneSideIsAMismatch) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(CompareTensors(Floats({nan}), Floats({nan}), {}), "");
  EXPECT_NE(CompareTensors(Floats({nan}), Floats({1.0f}), {}), "");
  EXPECT_NE(CompareTensors(Floats({1.0f}), Floats({nan}), {}), "");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_NE(CompareTensors(Floats({inf}), Floats({-inf}), {}), "");
}

TEST(OutputCompareTest, ReportsLogicalIndexOfFirstMismatch) {
  const std::string diff = CompareTensors(Floats({1, 2, 3, 9}), Floats({1, 2, 3, 4}), {});
  EXPECT_NE(diff.find("1/4 elements differ"), std::string::npos) << diff;
  EXPECT_NE(diff.find("first at 3"), std::string::npos) << diff;
}

// A [2^24, 2^16] broadcast of 2^16 values (2^40 logical elements): the
// comparison reads each distinct pair once, so it finishes at once.
TEST(OutputCompareTest, ExpandedViewsCompareTheirData) {
  const int64_t rows = int64_t{1} << 24, columns = int64_t{1} << 16;
  Tensor row = Tensor::Empty(DType::kFloat32, {1, columns});
  for (int64_t i = 0; i < columns; ++i) row.data<float>()[i] = static_cast<float>(i);
  const Tensor a = Tensor::View(row, {rows, columns}, {0, 1}, 0);
  Tensor other = Tensor::Empty(DType::kFloat32, {1, columns});
  for (int64_t i = 0; i < columns; ++i) other.data<float>()[i] = static_cast<float>(i);
  const Tensor b = Tensor::View(other, {rows, columns}, {0, 1}, 0);
  EXPECT_EQ(CompareTensors(a, b, {}), "");
  other.data<float>()[5] = -1;
  const std::string diff = CompareTensors(a, b, {});
  EXPECT_NE(diff.find("1/65536 distinct elements differ"), std::string::npos) << diff;
  EXPECT_NE(diff.find("first at 5:"), std::string::npos) << diff;
}

TEST(OutputCompareTest, DifferentBroadcastsOfTooManyElementsAreRefused) {
  const int64_t n = int64_t{1} << 20;
  Tensor column = Tensor::Empty(DType::kFloat32, {n, 1});
  Tensor row = Tensor::Empty(DType::kFloat32, {1, n});
  const Tensor a = Tensor::View(column, {n, n}, {1, 0}, 0);
  const Tensor b = Tensor::View(row, {n, n}, {0, 1}, 0);
  const std::string diff = CompareTensors(a, b, {});
  EXPECT_NE(diff.find("too large to compare"), std::string::npos) << diff;
}

TEST(OutputCompareTest, UncollapsedIndex) {
  // [3, 4, 5] with the middle dimension collapsed: collapsed index 7 is
  // (1, 0, 2), logical 1*20 + 0*5 + 2.
  EXPECT_EQ(UncollapsedIndex({3, 4, 5}, {false, true, false}, 7), 22);
  EXPECT_EQ(UncollapsedIndex({3, 4, 5}, {false, false, false}, 7), 7);
}

TEST(OutputCompareTest, DtypeAndShapeMustMatch) {
  EXPECT_NE(CompareTensors(Floats({1}), Tensor::Empty(DType::kFloat64, {1}), {}), "");
  EXPECT_NE(CompareTensors(Floats({1, 2}), Floats({1}), {}), "");
}

}  // namespace
}  // namespace kiln::testing
