#include "lowering/index_math.h"

#include <vector>

#include "gtest/gtest.h"

namespace kiln::lowering {
namespace {

// The value of an index expression (vars, constants, + - *, floor // and %).
int64_t EvalIndex(const ExprPtr& e, const std::vector<int64_t>& vars) {
  auto floordiv = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  switch (e->op) {
    case ExprOp::kIndexVar: return vars.at(static_cast<size_t>(e->var));
    case ExprOp::kIntConst: return e->int_value;
    case ExprOp::kAdd: return EvalIndex(e->args[0], vars) + EvalIndex(e->args[1], vars);
    case ExprOp::kSub: return EvalIndex(e->args[0], vars) - EvalIndex(e->args[1], vars);
    case ExprOp::kMul: return EvalIndex(e->args[0], vars) * EvalIndex(e->args[1], vars);
    case ExprOp::kFloorDiv: return floordiv(EvalIndex(e->args[0], vars), EvalIndex(e->args[1], vars));
    case ExprOp::kMod: {
      const int64_t a = EvalIndex(e->args[0], vars), b = EvalIndex(e->args[1], vars);
      return a - floordiv(a, b) * b;
    }
    default: ADD_FAILURE() << "unexpected op in " << ExprToString(e); return 0;
  }
}

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

TEST(IndexMathTest, DivModOfScaledIndexWithSmallRestFactorOut) {
  // (v0*256 + v1) // 8192 with v1 < 256 is v0 // 32; the % likewise.
  std::vector<int64_t> ranges = {64, 256};
  ExprPtr x = Binary(ExprOp::kAdd, Binary(ExprOp::kMul, Var(0), IntConst(256)), Var(1));
  EXPECT_EQ(ExprToString(SimplifyIndex(Binary(ExprOp::kFloorDiv, x, IntConst(8192)), ranges)), "v0 // 32");
  EXPECT_EQ(ExprToString(SimplifyIndex(Binary(ExprOp::kMod, x, IntConst(8192)), ranges)), "v1 + v0 % 32 * 256");
  // Without the bound on the rest nothing factors out.
  EXPECT_EQ(ExprToString(SimplifyIndex(Binary(ExprOp::kFloorDiv, x, IntConst(8192)), {64, 512})),
            "(v0 * 256 + v1) // 8192");
}

TEST(IndexMathTest, DivAndModOfOneValueRecombine) {
  // A [64, 256] reshape of [2, 32, 256] flattened again: the unravel's div
  // and mod of the same value meet and cancel (what autocast's casts between
  // reshapes left in gpt2's bfloat16 kernels).
  std::vector<int64_t> ranges = {64, 256};
  std::vector<ExprPtr> idx = UnravelIndex(
      Binary(ExprOp::kAdd, Binary(ExprOp::kMul, Var(0), IntConst(256)), Var(1)), {2, 32, 256}, ranges);
  Layout l = Layout::Contiguous(DType::kFloat32, {2, 32, 256});
  EXPECT_EQ(ExprToString(FlatIndex(l, idx, ranges)), "v0 * 256 + v1");
  // Coefficients that do not match stay apart: 6144 * (v0 // 2) + 32 * (v0 % 2).
  ExprPtr e = Binary(ExprOp::kAdd, Binary(ExprOp::kMul, Binary(ExprOp::kFloorDiv, Var(0), IntConst(2)), IntConst(6144)),
                     Binary(ExprOp::kMul, Binary(ExprOp::kMod, Var(0), IntConst(2)), IntConst(32)));
  EXPECT_EQ(ExprToString(SimplifyIndex(e, {4})), "v0 % 2 * 32 + v0 // 2 * 6144");
  // Negative values: floor semantics hold for any integer x, so the pair
  // cancels without bounds.
  ExprPtr y = Binary(ExprOp::kSub, Var(0), Var(1));
  ExprPtr f = Binary(ExprOp::kAdd, Binary(ExprOp::kMul, Binary(ExprOp::kFloorDiv, y, IntConst(3)), IntConst(6)),
                     Binary(ExprOp::kMul, Binary(ExprOp::kMod, y, IntConst(3)), IntConst(2)));
  EXPECT_EQ(ExprToString(SimplifyIndex(f, {})), "v0 * 2 - v1 * 2");
}

TEST(IndexMathTest, FactoredDivModAgreeWithIntegerArithmetic) {
  // Every value of small spaces, against the unsimplified arithmetic.
  auto floordiv = [](int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
  for (int64_t c0 : {4, 6, 8, 12}) {
    for (int64_t d : {8, 12, 24, 48}) {
      std::vector<int64_t> ranges = {7, c0};
      ExprPtr x = Binary(ExprOp::kAdd, Binary(ExprOp::kMul, Var(0), IntConst(c0)), Var(1));
      ExprPtr q = SimplifyIndex(Binary(ExprOp::kFloorDiv, x, IntConst(d)), ranges);
      ExprPtr r = SimplifyIndex(Binary(ExprOp::kMod, x, IntConst(d)), ranges);
      for (int64_t v0 = 0; v0 < 7; ++v0) {
        for (int64_t v1 = 0; v1 < c0; ++v1) {
          const int64_t value = v0 * c0 + v1;
          EXPECT_EQ(EvalIndex(q, {v0, v1}), floordiv(value, d)) << ExprToString(q) << " at " << v0 << "," << v1;
          EXPECT_EQ(EvalIndex(r, {v0, v1}), value - floordiv(value, d) * d) << ExprToString(r);
        }
      }
    }
  }
}

TEST(IndexMathTest, ConstantClampsAndSelectsFold) {
  // A constant gather index clamped into range (vit's q/k/v split):
  // max(min(where(0 < 0, 3, 0), 2), 0) is 0.
  ExprPtr zero = IntConst(0);
  ExprPtr cond = Binary(ExprOp::kLt, zero, zero);
  ExprPtr pick = std::make_shared<Expr>(Expr{ExprOp::kWhere, DType::kInt64, -1, 0, 0, "", {cond, IntConst(3), zero}});
  ExprPtr clamp = Binary(ExprOp::kMax, Binary(ExprOp::kMin, pick, IntConst(2)), zero);
  ExprPtr index = Binary(ExprOp::kAdd, Var(0), Binary(ExprOp::kMul, clamp, IntConst(64)));
  EXPECT_EQ(ExprToString(SimplifyIndex(index, {32})), "v0");
  // A clamp that bounds decide: min(max(v0 - 1, 0), 15) with v0 < 17 stays,
  // but is known to be below 16, so its // 16 vanishes.
  ExprPtr c = Binary(ExprOp::kMin, Binary(ExprOp::kMax, Binary(ExprOp::kSub, Var(0), IntConst(1)), zero), IntConst(15));
  EXPECT_EQ(ExprToString(SimplifyIndex(Binary(ExprOp::kFloorDiv, c, IntConst(16)), {17})), "0");
  EXPECT_EQ(ExprToString(SimplifyIndex(c, {17})), "max(v0 - 1, 0)");
  // Undecided conditions stay.
  ExprPtr open = std::make_shared<Expr>(
      Expr{ExprOp::kWhere, DType::kInt64, -1, 0, 0, "", {Binary(ExprOp::kLt, Var(0), IntConst(1)), IntConst(3), Var(0)}});
  EXPECT_EQ(ExprToString(SimplifyIndex(open, {4})), ExprToString(open));
  EXPECT_EQ(ExprToString(SimplifyIndex(open, {1})), "3");
}

}  // namespace
}  // namespace kiln::lowering
