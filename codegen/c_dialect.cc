#include "codegen/c_dialect.h"

#include "absl/strings/str_cat.h"

namespace kiln::codegen {

bool IsCFloat(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kFloat16 || t == DType::kBFloat16;
}

std::string CMathFunction(const char* base, DType t) {
  return t == DType::kFloat64 ? std::string(base) : absl::StrCat(base, "f");
}

std::string CDialect::UnaryMath(lowering::ExprOp op, const std::string& x, DType t) const {
  using lowering::ExprOp;
  auto call = [&](const char* base) { return absl::StrCat(CMathFunction(base, t), "(", x, ")"); };
  switch (op) {
    case ExprOp::kRound: return call("nearbyint");  // half to even in the default rounding mode
    case ExprOp::kRsqrt: return absl::StrCat(FloatLiteral(1.0, t), " / ", call("sqrt"));
    default: return call(lowering::ExprOpName(op));  // exp, log, tanh, ...: the C99 names
  }
}

}  // namespace kiln::codegen
