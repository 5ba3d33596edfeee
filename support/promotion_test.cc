#include "support/promotion.h"

#include <vector>

#include "gtest/gtest.h"

namespace kiln {
namespace {

constexpr DType u1 = DType::kUInt8, i1 = DType::kInt8, i2 = DType::kInt16, i4 = DType::kInt32,
                i8 = DType::kInt64, f2 = DType::kFloat16, f4 = DType::kFloat32,
                f8 = DType::kFloat64, c8 = DType::kComplex64, b1 = DType::kBool,
                bf = DType::kBFloat16;

// c10's _promoteTypesLookup restricted to kiln's dtypes (c16 = complex128,
// which kiln does not have, is written as nullopt).
TEST(PromoteTypesTest, MatchesC10Table) {
  const std::vector<DType> order = {u1, i1, i2, i4, i8, f2, f4, f8, c8, b1, bf};
  const std::optional<DType> N;
  const std::vector<std::vector<std::optional<DType>>> table = {
      /* u1 */ {u1, i2, i2, i4, i8, f2, f4, f8, c8, u1, bf},
      /* i1 */ {i2, i1, i2, i4, i8, f2, f4, f8, c8, i1, bf},
      /* i2 */ {i2, i2, i2, i4, i8, f2, f4, f8, c8, i2, bf},
      /* i4 */ {i4, i4, i4, i4, i8, f2, f4, f8, c8, i4, bf},
      /* i8 */ {i8, i8, i8, i8, i8, f2, f4, f8, c8, i8, bf},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f4, f8, c8, f2, f4},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f8, c8, f4, f4},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, N, f8, f8},
      /* c8 */ {c8, c8, c8, c8, c8, c8, c8, N, c8, c8, c8},
      /* b1 */ {u1, i1, i2, i4, i8, f2, f4, f8, c8, b1, bf},
      /* bf */ {bf, bf, bf, bf, bf, f4, f4, f8, c8, bf, bf},
  };
  for (size_t a = 0; a < order.size(); ++a) {
    for (size_t b = 0; b < order.size(); ++b) {
      EXPECT_EQ(PromoteTypes(order[a], order[b]), table[a][b])
          << DTypeName(order[a]) << " with " << DTypeName(order[b]);
    }
  }
}

// torch 2.x: uint16/32/64 promote with themselves and with floating dtypes
// only; every other pair raises "Promotion for uint16, uint32, uint64 types
// is not supported".
TEST(PromoteTypesTest, BarebonesUnsignedFollowPyTorch) {
  for (DType u : {DType::kUInt16, DType::kUInt32, DType::kUInt64}) {
    EXPECT_EQ(PromoteTypes(u, u), u);
    for (DType f : {f2, f4, f8, bf}) {
      EXPECT_EQ(PromoteTypes(u, f), f);
      EXPECT_EQ(PromoteTypes(f, u), f);
    }
    for (DType other : {u1, i1, i2, i4, i8, b1, c8}) {
      EXPECT_EQ(PromoteTypes(u, other), std::nullopt) << DTypeName(u) << " " << DTypeName(other);
      EXPECT_EQ(PromoteTypes(other, u), std::nullopt);
    }
  }
  EXPECT_EQ(PromoteTypes(DType::kUInt16, DType::kUInt32), std::nullopt);
  EXPECT_EQ(PromoteTypes(DType::kUInt16, DType::kInt8), std::nullopt);
}

TEST(ResultTypeTest, ClassesAndCategories) {
  using C = OperandClass;
  auto rt = [](std::vector<DTypeOperand> ops) { return ResultType(ops); };
  EXPECT_EQ(*rt({{i8, C::kDimensioned}, {f8, C::kScalar}}), f4);  // float scalar: default dtype
  EXPECT_EQ(*rt({{f2, C::kDimensioned}, {f8, C::kScalar}}), f2);
  EXPECT_EQ(*rt({{i4, C::kDimensioned}, {i8, C::kZeroDim}}), i4);  // same category: higher wins
  EXPECT_EQ(*rt({{i4, C::kDimensioned}, {f8, C::kZeroDim}}), f8);  // higher category: the 0-dim dtype
  EXPECT_EQ(*rt({{f4, C::kDimensioned}, {f8, C::kZeroDim}}), f4);
  EXPECT_EQ(*rt({{b1, C::kDimensioned}, {i8, C::kScalar}}), i8);
  EXPECT_EQ(*rt({{i4, C::kZeroDim}, {f8, C::kZeroDim}}), f8);
  EXPECT_EQ(*rt({{u1, C::kDimensioned}, {b1, C::kScalar}}), u1);
  EXPECT_EQ(*rt({{f4, C::kDimensioned}, {c8, C::kScalar}}), c8);
  EXPECT_FALSE(rt({{f2, C::kDimensioned}, {c8, C::kScalar}}).ok());  // complex32
  // uint16 with an int scalar: the same category, so no promotion is asked.
  EXPECT_EQ(*rt({{DType::kUInt16, C::kDimensioned}, {i8, C::kScalar}}), DType::kUInt16);
  absl::StatusOr<DType> bad = rt({{DType::kUInt16, C::kDimensioned}, {i1, C::kDimensioned}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("UInt16, Char"), std::string::npos) << bad.status();
  EXPECT_FALSE(rt({}).ok());
}

}  // namespace
}  // namespace kiln
