#include "runtime/kernels_strings.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"
#include "runtime/tensor_ops.h"

namespace kiln::runtime {
namespace {

TEST(TensorToStringsTest, FloatsUseTheShortestFormThatReadsBack) {
  Tensor x = Tensor::Empty(DType::kFloat32, {2, 3});
  const float values[] = {0.039187793f, 0.5f, -3.0f, std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity(), 1e-5f};
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(SetDouble(x, i, values[i]).ok());
  absl::StatusOr<StringTensor> s = TensorToStrings(x);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->sizes, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s->data, (std::vector<std::string>{"0.039187793", "0.5", "-3", "NaN", "INF", "1e-05"}));
}

TEST(TensorToStringsTest, IntegersAndBools) {
  Tensor i = Tensor::Empty(DType::kInt64, {2});
  ASSERT_TRUE(SetInt(i, 0, -42).ok());
  ASSERT_TRUE(SetInt(i, 1, 7).ok());
  EXPECT_EQ(TensorToStrings(i)->data, (std::vector<std::string>{"-42", "7"}));
  Tensor b = Tensor::Empty(DType::kBool, {2});
  ASSERT_TRUE(SetInt(b, 0, 1).ok());
  ASSERT_TRUE(SetInt(b, 1, 0).ok());
  EXPECT_EQ(TensorToStrings(b)->data, (std::vector<std::string>{"True", "False"}));
}

TEST(StringsToTensorTest, ParsesNumbersAndSpecialValues) {
  StringTensor s{{5}, {"0.47892547", " -1e3 ", "NaN", "-inf", "+2.5"}};
  absl::StatusOr<Tensor> t = StringsToTensor(s, DType::kFloat32);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_FLOAT_EQ(static_cast<float>(t->GetDouble(0)), 0.47892547f);
  EXPECT_EQ(t->GetDouble(1), -1000.0);
  EXPECT_TRUE(std::isnan(t->GetDouble(2)));
  EXPECT_EQ(t->GetDouble(3), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(t->GetDouble(4), 2.5);
  absl::StatusOr<Tensor> i = StringsToTensor(StringTensor{{2}, {"12", "3.0"}}, DType::kInt32);
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ(i->GetInt(0), 12);
  EXPECT_EQ(i->GetInt(1), 3);
}

TEST(StringsToTensorTest, RoundTripsFloats) {
  Tensor x = Tensor::Empty(DType::kFloat32, {3});
  const float values[] = {0.1f, 3.4028235e38f, -1.17549435e-38f};
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(SetDouble(x, i, values[i]).ok());
  absl::StatusOr<Tensor> back = StringsToTensor(*TensorToStrings(x), DType::kFloat32);
  ASSERT_TRUE(back.ok()) << back.status();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(static_cast<float>(back->GetDouble(i)), values[i]);
}

TEST(TensorToStringsTest, HalfUsesItsOwnShortestForm) {
  Tensor h = Tensor::Empty(DType::kFloat16, {1});
  ASSERT_TRUE(SetDouble(h, 0, 0.1).ok());
  EXPECT_EQ(TensorToStrings(h)->data, (std::vector<std::string>{"0.1"}));
}

TEST(StringsToTensorTest, Uint64AboveInt64Max) {
  absl::StatusOr<Tensor> t =
      StringsToTensor(StringTensor{{1}, {"18446744073709551615"}}, DType::kUInt64);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(static_cast<uint64_t>(t->GetInt(0)), UINT64_MAX);
  EXPECT_EQ(TensorToStrings(*t)->data, (std::vector<std::string>{"18446744073709551615"}));
}

TEST(StringsToTensorTest, RejectsBadTextAndSizes) {
  absl::StatusOr<Tensor> bad = StringsToTensor(StringTensor{{2}, {"1", "abc"}}, DType::kFloat32);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("element 1 'abc'"), std::string::npos);
  EXPECT_FALSE(StringsToTensor(StringTensor{{2}, {"0x10", "1"}}, DType::kFloat32).ok());
  EXPECT_FALSE(StringsToTensor(StringTensor{{2}, {"1.5", "1"}}, DType::kInt64).ok());
  EXPECT_FALSE(StringsToTensor(StringTensor{{3}, {"1", "1"}}, DType::kFloat32).ok());
  EXPECT_FALSE(StringsToTensor(StringTensor{{-1}, {}}, DType::kFloat32).ok());
}

}  // namespace
}  // namespace kiln::runtime
