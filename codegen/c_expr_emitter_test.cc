#include "codegen/c_expr_emitter.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "codegen/c_dialect.h"
#include "gtest/gtest.h"
#include "lowering/loop_ir.h"

namespace kiln::codegen {
namespace {

using lowering::Binary;
using lowering::Cast;
using lowering::ExprOp;
using lowering::FloatConst;
using lowering::IntConst;
using lowering::Load;
using lowering::Unary;
using lowering::Var;

// A dialect with recognisable spellings, and narrow floats stored as words.
class TestDialect : public CDialect {
 public:
  const char* label() const override { return "test codegen"; }
  absl::StatusOr<std::string> TypeName(DType dtype) const override {
    switch (dtype) {
      case DType::kFloat32:
      case DType::kFloat16:
      case DType::kBFloat16: return std::string("float");
      case DType::kFloat64: return std::string("double");
      case DType::kInt64: return std::string("i64");
      case DType::kInt32: return std::string("i32");
      case DType::kBool: return std::string("bool");
      default: return absl::UnimplementedError(absl::StrCat("test codegen: ", DTypeName(dtype)));
    }
  }
  std::string LoadValue(const std::string& element, DType storage) const override {
    return storage == DType::kBFloat16 ? absl::StrCat("bf16_to_f(", element, ")") : element;
  }
  std::string StoreValue(const std::string& value, DType storage) const override {
    return storage == DType::kBFloat16 ? absl::StrCat("f_to_bf16(", value, ")") : value;
  }
  std::string IntLiteral(int64_t v) const override { return absl::StrCat(v, "L"); }
  std::string FloatLiteral(double v, DType dtype) const override {
    return absl::StrCat(v, dtype == DType::kFloat32 ? "f" : "");
  }
};

struct Fixture {
  TestDialect dialect;
  std::map<std::string, CBufferRef> buffers = {{"x", {"px", DType::kFloat32}},
                                               {"i", {"pi", DType::kInt32}},
                                               {"h", {"ph", DType::kBFloat16}},
                                               {"r", {"pr", DType::kFloat32, "l_s0", DType::kFloat32}}};
  int temps = 0;
};

TEST(CExprEmitter, SharedSubtreesAndEqualValuesAreEmittedOnce) {
  Fixture f;
  CExprEmitter em(&f.dialect, &f.buffers, {"v0"}, &f.temps);
  em.set_indent("");
  auto x = Load("x", DType::kFloat32, Var(0));
  auto x_again = Load("x", DType::kFloat32, Var(0));  // a distinct but equal subtree
  auto sum = Binary(ExprOp::kAdd, Unary(ExprOp::kTanh, x), Unary(ExprOp::kTanh, x_again));
  absl::StatusOr<std::string> v = em.Emit(sum);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, "l_t2");
  EXPECT_EQ(em.statements(),
            "const float l_t0 = px[v0];\n"
            "const float l_t1 = tanhf(l_t0);\n"
            "const float l_t2 = l_t1 + l_t1;\n");
}

TEST(CExprEmitter, IntegerSemanticsGoThroughThePreludeHelpers) {
  Fixture f;
  CExprEmitter em(&f.dialect, &f.buffers, {"v0"}, &f.temps);
  em.set_indent("");
  auto i = Load("i", DType::kInt32, Var(0));
  auto q = Binary(ExprOp::kFloorDiv, i, Cast(IntConst(3), DType::kInt32));
  auto m = Binary(ExprOp::kMod, q, Cast(IntConst(-2), DType::kInt32));
  ASSERT_TRUE(em.Emit(m).ok());
  EXPECT_NE(em.statements().find("const i32 l_t2 = kiln_ifloordiv(l_t0, l_t1);"), std::string::npos)
      << em.statements();
  EXPECT_NE(em.statements().find("kiln_imod("), std::string::npos) << em.statements();
}

TEST(CExprEmitter, MathOnIntegersRunsInDoubleAndReluPropagatesNaN) {
  Fixture f;
  CExprEmitter em(&f.dialect, &f.buffers, {"v0"}, &f.temps);
  em.set_indent("");
  // Expressions are memoized by address: they must outlive the emitter.
  auto exp = Unary(ExprOp::kExp, Load("i", DType::kInt32, Var(0)));
  ASSERT_TRUE(em.Emit(exp).ok());
  // Back to the integer through the saturating conversion (NaN gives 0).
  EXPECT_NE(em.statements().find(
                "static_cast<i32>(kiln_float_to_int64(static_cast<double>(exp(static_cast<double>(l_t0)))))"),
            std::string::npos)
      << em.statements();
  auto relu = Unary(ExprOp::kRelu, Load("x", DType::kFloat32, Var(0)));
  ASSERT_TRUE(em.Emit(relu).ok());
  EXPECT_NE(em.statements().find("((l_t2 > 0f || l_t2 != l_t2) ? l_t2 : 0f)"), std::string::npos)
      << em.statements();
}

TEST(CExprEmitter, NarrowFloatsLoadWidenAndCastsRound) {
  Fixture f;
  CExprEmitter em(&f.dialect, &f.buffers, {"v0"}, &f.temps);
  em.set_indent("");
  auto h = Load("h", DType::kBFloat16, Var(0));
  auto y = Cast(Binary(ExprOp::kMul, Cast(h, DType::kFloat32), FloatConst(2.0)), DType::kBFloat16);
  ASSERT_TRUE(em.Emit(y).ok());
  EXPECT_EQ(em.statements(),
            "const float l_t0 = bf16_to_f(ph[v0]);\n"
            "const float l_t1 = l_t0 * 2f;\n"
            "const float l_t2 = bf16_to_f(f_to_bf16(l_t1));\n");
}

TEST(CExprEmitter, LaneModeSharesLaneInvariantSubtrees) {
  Fixture f;
  CExprEmitter em(&f.dialect, &f.buffers, {"v0", "v1"}, &f.temps);
  em.set_indent("");
  em.SetLaneVar(1);
  auto row = Unary(ExprOp::kExp, Load("x", DType::kFloat32, Var(0)));  // no v1: lane-invariant
  auto e = Binary(ExprOp::kAdd, row, Load("x", DType::kFloat32, Binary(ExprOp::kAdd, Var(0), Var(1))));
  absl::StatusOr<std::string> lane0 = em.Emit(e, 0);
  absl::StatusOr<std::string> lane1 = em.Emit(e, 1);
  ASSERT_TRUE(lane0.ok() && lane1.ok());
  EXPECT_NE(*lane0, *lane1);
  const std::string s = em.statements();
  EXPECT_EQ(s.find("expf"), s.rfind("expf")) << "the lane-invariant exp is emitted once:\n" << s;
  EXPECT_NE(s.find("(v1 + 1L)"), std::string::npos) << s;
}

TEST(CExprEmitter, ScalarBuffersReadTheirRegister) {
  Fixture f;
  CExprEmitter em(&f.dialect, &f.buffers, {"v0"}, &f.temps);
  absl::StatusOr<std::string> v = em.Emit(Load("r", DType::kFloat32, Var(0)));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "l_s0");
  EXPECT_EQ(em.statements(), "");
}

TEST(CExprEmitter, MalformedExpressionsAreErrorsNamingTheDialect) {
  Fixture f;
  CExprEmitter em(&f.dialect, &f.buffers, {"v0"}, &f.temps);
  absl::StatusOr<std::string> unbound = em.Emit(Var(3));
  EXPECT_EQ(unbound.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unbound.status().message().find("test codegen: index variable v3 is not bound"), std::string::npos);
  absl::StatusOr<std::string> unknown = em.Emit(Load("nope\n", DType::kFloat32, Var(0)));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message().find('\n'), std::string::npos) << "model names are sanitized";
  lowering::ExprPtr deep = Load("x", DType::kFloat32, Var(0));
  for (int i = 0; i < kMaxExprDepth + 5; ++i) deep = Unary(ExprOp::kNeg, deep);
  EXPECT_EQ(em.Emit(deep).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::string> bad_type = em.Emit(Cast(Load("x", DType::kFloat32, Var(0)), DType::kUInt16));
  EXPECT_EQ(bad_type.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(CDialect, DefaultMathSpellings) {
  TestDialect d;
  EXPECT_EQ(d.UnaryMath(ExprOp::kTanh, "x", DType::kFloat32), "tanhf(x)");
  EXPECT_EQ(d.UnaryMath(ExprOp::kTanh, "x", DType::kFloat64), "tanh(x)");
  EXPECT_EQ(d.UnaryMath(ExprOp::kRound, "x", DType::kFloat32), "nearbyintf(x)");
  EXPECT_EQ(d.UnaryMath(ExprOp::kRsqrt, "x", DType::kFloat64), "1 / sqrt(x)");
}

}  // namespace
}  // namespace kiln::codegen
