#include "lowering/index_math.h"

#include <vector>

#include "gtest/gtest.h"

namespace kiln::lowering {
namespace {

TEST(IndexMathTest, FlatIndexSkipsSizeOneAndZeroStrideDims) {
  Layout l = Layout::Contiguous(DType::kFloat32, {2, 1, 3});
  std::vector<int64_t> ranges = {2, 1, 3};
  EXPECT_EQ(ExprToString(FlatIndex(l, Vars(0, 3), ranges)), "v0 * 3 + v2");
  l.strides = {0, 0, 1};
  l.offset = 5;
  EXPECT_EQ(ExprToString(FlatIndex(l, Vars(0, 3), ranges)), "v2 + 5");
}

TEST(IndexMathTest, UnravelOfContiguousFlatIndexIsIdentity) {
  std::vector<int64_t> sizes = {4, 5, 6};
  ExprPtr flat = IndexOf(Layout::Contiguous(DType::kFloat32, sizes));
  std::vector<ExprPtr> idx = UnravelIndex(flat, sizes, sizes);
  ASSERT_EQ(idx.size(), 3u);
  EXPECT_EQ(ExprToString(idx[0]), "v0");
  EXPECT_EQ(ExprToString(idx[1]), "v1");
  EXPECT_EQ(ExprToString(idx[2]), "v2");
}

TEST(IndexMathTest, UnravelThroughTransposeIsAffine) {
  // A [3, 4] buffer read through its transpose: the reader's v0 < 4, v1 < 3.
  Layout t;
  t.sizes = {4, 3};
  t.strides = {1, 4};
  std::vector<int64_t> ranges = {4, 3};
  ExprPtr flat = FlatIndex(t, Vars(0, 2), ranges);
  std::vector<ExprPtr> idx = UnravelIndex(flat, {3, 4}, ranges);
  EXPECT_EQ(ExprToString(idx[0]), "v1");
  EXPECT_EQ(ExprToString(idx[1]), "v0");
}

TEST(IndexMathTest, UnravelAcrossReshapeKeepsDivMod) {
  // [6] read as [2, 3] and unravelled by [3, 2]: no alignment, div/mod stay.
  std::vector<int64_t> ranges = {6};
  std::vector<ExprPtr> idx = UnravelIndex(Var(0), {3, 2}, ranges);
  EXPECT_EQ(ExprToString(idx[0]), "v0 // 2");
  EXPECT_EQ(ExprToString(idx[1]), "v0 % 2");
}

TEST(IndexMathTest, UnknownRangesStayCorrect) {
  ExprPtr e = Binary(ExprOp::kFloorDiv, Binary(ExprOp::kAdd, Var(0), Var(1)), IntConst(4));
  EXPECT_EQ(ExprToString(SimplifyIndex(e, {})), "(v0 + v1) // 4");
  EXPECT_EQ(ExprToString(SimplifyIndex(e, {4, 1})), "0");
}

TEST(IndexMathTest, PrintsPrecedence) {
  ExprPtr e = Binary(ExprOp::kMul, Binary(ExprOp::kAdd, Var(0), IntConst(1)), FloatConst(2.5));
  EXPECT_EQ(ExprToString(e), "(v0 + 1) * 2.5");
  EXPECT_EQ(ExprToString(Binary(ExprOp::kSub, Var(0), Binary(ExprOp::kSub, Var(1), Var(2)))),
            "v0 - (v1 - v2)");
  EXPECT_EQ(ExprToString(Unary(ExprOp::kTanh, Binary(ExprOp::kAdd, Load("x", DType::kFloat32, Var(0)),
                                                     FloatConst(1.0)))),
            "tanh(load(x, v0) + 1.0)");
}

}  // namespace
}  // namespace kiln::lowering
