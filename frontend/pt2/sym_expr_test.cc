#include "frontend/pt2/sym_expr.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend::pt2 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int64_t Eval(const std::string& text, const absl::flat_hash_map<std::string, int64_t>& b = {}) {
  absl::StatusOr<SymExpr> e = SymExpr::Parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status();
  if (!e.ok()) return -999;
  absl::StatusOr<int64_t> v = e->Evaluate(b);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.ok() ? *v : -999;
}

TEST(SymExprTest, SreprFormAsTorch211WritesIt) {
  absl::StatusOr<SymExpr> e =
      SymExpr::Parse("Mul(Integer(64), Symbol('s27', positive=True, integer=True))");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_THAT(e->symbols(), ElementsAre("s27"));
  EXPECT_EQ(*e->Evaluate({{"s27", 3}}), 192);
  EXPECT_EQ(e->ToString(), "64*s27");
  EXPECT_EQ(e->AsConstant(), std::nullopt);
  EXPECT_EQ(Eval("Symbol('s23', positive=True, integer=True)", {{"s23", 5}}), 5);
  EXPECT_EQ(*SymExpr::Parse("Symbol('s23', positive=True)")->AsSymbol(), "s23");
  EXPECT_EQ(Eval("Pow(Symbol('s27'), Integer(2))", {{"s27", 7}}), 49);
  EXPECT_EQ(Eval("Min(Integer(64), Mul(Integer(64), Symbol('s27')))", {{"s27", 2}}), 64);
  EXPECT_EQ(Eval("Add(Symbol('s0'), Integer(-3))", {{"s0", 10}}), 7);
  EXPECT_EQ(Eval("FloorDiv(Symbol('s0'), Integer(2))", {{"s0", 7}}), 3);
  EXPECT_EQ(Eval("Integer(12)"), 12);
  EXPECT_EQ(SymExpr::Parse("Integer(12)")->AsConstant(), 12);
}

TEST(SymExprTest, StrForm) {
  const absl::flat_hash_map<std::string, int64_t> b = {{"s0", 7}, {"s1", 3}};
  EXPECT_EQ(Eval("s0 + 1", b), 8);
  EXPECT_EQ(Eval("2*s0 - s1", b), 11);
  EXPECT_EQ(Eval("s0**2", b), 49);
  EXPECT_EQ(Eval("(s0 + 1)//2", b), 4);
  EXPECT_EQ(Eval("s0 % 3", b), 1);
  EXPECT_EQ(Eval("Mod(s0, s1)", b), 1);
  EXPECT_EQ(Eval("Max(s0, 10*s1)", b), 30);
  EXPECT_EQ(Eval("-s0 + 10", b), 3);
  EXPECT_EQ(Eval("s0*s1/s1", b), 7);  // exact division
  EXPECT_EQ(SymExpr::Parse("2*s0 + 1")->ToString(), "2*s0 + 1");
  EXPECT_EQ(SymExpr::Parse("(s0 + 1)//2")->ToString(), "(s0 + 1)//2");
  EXPECT_EQ(SymExpr::Parse("2*(s0 + s1)")->ToString(), "2*(s0 + s1)");
  EXPECT_EQ(SymExpr::Parse("Min(64, 64*s27)")->ToString(), "Min(64, 64*s27)");
}

TEST(SymExprTest, PythonFloorSemantics) {
  EXPECT_EQ(Eval("FloorDiv(Integer(-7), Integer(2))"), -4);
  EXPECT_EQ(Eval("Mod(Integer(-7), Integer(2))"), 1);
  EXPECT_EQ(Eval("Mod(Integer(7), Integer(-2))"), -1);
  EXPECT_EQ(Eval("Pow(Integer(-1), Integer(3))"), -1);
}

TEST(SymExprTest, EvaluationErrors) {
  SymExpr e = *SymExpr::Parse("s0 + s1");
  EXPECT_EQ(e.Evaluate({{"s0", 1}}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(SymExpr::Parse("s0//0")->Evaluate({{"s0", 1}}).status().message()),
              HasSubstr("divides by zero"));
  EXPECT_THAT(std::string(SymExpr::Parse("9223372036854775807 + s0")->Evaluate({{"s0", 1}}).status().message()),
              HasSubstr("overflows"));
  EXPECT_THAT(std::string(SymExpr::Parse("s0**70")->Evaluate({{"s0", 2}}).status().message()),
              HasSubstr("overflows"));
  EXPECT_FALSE(SymExpr::Parse("s0/2")->Evaluate({{"s0", 3}}).ok());  // inexact
}

TEST(SymExprTest, ParseErrorsNameTheExpression) {
  for (const char* bad : {"", "s0 +", "Rational(1, 2)", "1.5", "oo", "Symbol(s0)", "(s0",
                          "Integer(s0)", "s0 s1", "Pow(s0)", "'s0'", "Symbol('s0'"}) {
    absl::StatusOr<SymExpr> e = SymExpr::Parse(bad);
    EXPECT_FALSE(e.ok()) << bad;
    EXPECT_THAT(std::string(e.status().message()), HasSubstr("symbolic expression")) << bad;
  }
  EXPECT_FALSE(SymExpr::Parse(std::string(1000, '(') + "s0" + std::string(1000, ')')).ok());
  std::string chain = "s0";
  for (int i = 0; i < 1000; ++i) chain += "*s0";
  absl::StatusOr<SymExpr> e = SymExpr::Parse(chain);
  EXPECT_FALSE(e.ok());  // nested too deeply (no unbounded recursion later)
}

}  // namespace
}  // namespace kiln::frontend::pt2
