#include "passes/type_promotion.h"

#include "gtest/gtest.h"
#include "ir/type.h"

namespace kiln::passes {
namespace {

using Kind = PromotionOperand::Kind;

PromotionOperand T(DType d, size_t rank) { return {Kind::kTensor, d, rank}; }
PromotionOperand TUnknownRank(DType d) { return {Kind::kTensor, d, std::nullopt}; }
PromotionOperand S(DType d) { return {Kind::kScalar, d, std::nullopt}; }
PromotionOperand AnyScalar() { return {Kind::kUnknownScalar, std::nullopt, std::nullopt}; }

TEST(PromoteTypesTest, Table) {
  EXPECT_EQ(PromoteTypes(DType::kUInt8, DType::kInt8), DType::kInt16);
  EXPECT_EQ(PromoteTypes(DType::kBool, DType::kUInt8), DType::kUInt8);
  EXPECT_EQ(PromoteTypes(DType::kInt32, DType::kInt64), DType::kInt64);
  EXPECT_EQ(PromoteTypes(DType::kInt64, DType::kFloat16), DType::kFloat16);
  EXPECT_EQ(PromoteTypes(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(PromoteTypes(DType::kFloat32, DType::kFloat64), DType::kFloat64);
  EXPECT_EQ(PromoteTypes(DType::kComplex64, DType::kFloat32), DType::kComplex64);
  EXPECT_EQ(PromoteTypes(DType::kComplex64, DType::kFloat64), std::nullopt);  // complex128
}

TEST(ResultTypeTest, CategoriesAndPriorities) {
  // Same category: the dimensioned tensor wins over 0-dim tensors and scalars.
  EXPECT_EQ(ResultType({T(DType::kInt32, 2), S(DType::kInt64)}), DType::kInt32);
  EXPECT_EQ(ResultType({T(DType::kInt32, 2), T(DType::kInt64, 0)}), DType::kInt32);
  EXPECT_EQ(ResultType({T(DType::kFloat16, 1), T(DType::kFloat64, 0)}), DType::kFloat16);
  EXPECT_EQ(ResultType({T(DType::kFloat16, 1), S(DType::kFloat64)}), DType::kFloat16);
  // A higher category raises the result.
  EXPECT_EQ(ResultType({T(DType::kInt64, 2), S(DType::kFloat64)}), DType::kFloat32);
  EXPECT_EQ(ResultType({T(DType::kInt32, 2), T(DType::kFloat64, 0)}), DType::kFloat64);
  EXPECT_EQ(ResultType({T(DType::kBool, 2), S(DType::kInt64)}), DType::kInt64);
  EXPECT_EQ(ResultType({T(DType::kUInt8, 2), S(DType::kBool)}), DType::kUInt8);
  EXPECT_EQ(ResultType({T(DType::kFloat32, 2), S(DType::kComplex64)}), DType::kComplex64);
  // 0-dim tensors beat scalars of their category.
  EXPECT_EQ(ResultType({T(DType::kInt32, 0), S(DType::kInt64)}), DType::kInt32);
  EXPECT_EQ(ResultType({T(DType::kFloat64, 0), T(DType::kFloat32, 0)}), DType::kFloat64);
  // Two dimensioned tensors promote normally.
  EXPECT_EQ(ResultType({T(DType::kUInt8, 1), T(DType::kInt8, 3)}), DType::kInt16);
}

TEST(ResultTypeTest, Unknowns) {
  EXPECT_EQ(ResultType({PromotionOperand{Kind::kTensor, std::nullopt, 2}, S(DType::kInt64)}),
            std::nullopt);
  // Unknown rank: both readings agree.
  EXPECT_EQ(ResultType({TUnknownRank(DType::kFloat32), T(DType::kInt64, 2)}), DType::kFloat32);
  EXPECT_EQ(ResultType({TUnknownRank(DType::kInt32), T(DType::kInt64, 2)}), DType::kInt64);
  // ... or disagree.
  EXPECT_EQ(ResultType({TUnknownRank(DType::kInt64), T(DType::kInt32, 2)}), std::nullopt);
  // A Scalar of unknown kind matters only when it could raise the category.
  EXPECT_EQ(ResultType({T(DType::kFloat32, 2), AnyScalar()}), std::nullopt);  // could be complex
  EXPECT_EQ(ResultType({T(DType::kComplex64, 2), AnyScalar()}), DType::kComplex64);
  EXPECT_EQ(ResultType({T(DType::kInt32, 2), AnyScalar()}), std::nullopt);
  EXPECT_EQ(ResultType({}), std::nullopt);
}

TEST(ResultTypeTest, OperandsFromIrTypes) {
  ir::TensorInfo info;
  info.dtype = DType::kFloat64;
  info.sizes = std::vector<std::optional<int64_t>>{2};
  auto op = PromotionOperandFor(*ir::Type::TensorWith(info));
  ASSERT_TRUE(op.has_value());
  EXPECT_EQ(op->kind, Kind::kTensor);
  EXPECT_EQ(op->rank, 1u);
  EXPECT_EQ(PromotionOperandFor(*ir::Type::Float())->dtype, DType::kFloat64);
  EXPECT_EQ(PromotionOperandFor(*ir::Type::Number())->kind, Kind::kUnknownScalar);
  EXPECT_FALSE(PromotionOperandFor(*ir::Type::None()).has_value());
}

TEST(BroadcastSizesTest, KnownUnknownAndErrors) {
  using D = std::optional<int64_t>;
  using V = std::vector<D>;
  auto b = [](SymbolicSizes x, SymbolicSizes y) { return BroadcastSizes(x, y); };
  EXPECT_EQ(*b(V{2, 1, 4}, V{3, 1}), SymbolicSizes(V{2, 3, 4}));
  EXPECT_EQ(*b(V{D(), 1}, V{1, 5}), SymbolicSizes(V{D(), 5}));
  EXPECT_EQ(*b(V{D(), 3}, V{4, 3}), SymbolicSizes(V{4, 3}));  // unknown vs known != 1
  EXPECT_EQ(*b(V{D()}, V{1}), SymbolicSizes(V{D()}));          // unknown vs 1
  EXPECT_EQ(*b(V{D()}, V{D()}), SymbolicSizes(V{D()}));
  EXPECT_EQ(*b(V{}, V{2, 2}), SymbolicSizes(V{2, 2}));
  EXPECT_EQ(*b(std::nullopt, V{2}), SymbolicSizes());
  absl::StatusOr<SymbolicSizes> bad = b(V{2, 3}, V{4});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("dims 3 and 4"), std::string::npos) << bad.status();
  EXPECT_EQ(SizesToString(V{2, D()}), "[2, ?]");
  EXPECT_EQ(SizesToString(std::nullopt), "[*]");
}

}  // namespace
}  // namespace kiln::passes
