#include "backends/cpu/expr_emitter.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cpu/identifiers.h"

namespace kiln::backends::cpu {

std::string IntLiteral(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "(-INT64_C(9223372036854775807) - 1)";
  return absl::StrCat("INT64_C(", v, ")");
}

std::string FloatLiteral(double v, DType dtype) {
  const bool is_float = dtype == DType::kFloat32;
  // Compiler builtins rather than std::numeric_limits: generated code
  // includes no standard header (see prelude.cc).
  if (std::isnan(v)) return is_float ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v)) return absl::StrCat(v < 0 ? "-" : "", is_float ? "__builtin_inff()" : "__builtin_inf()");
  // Hex floats are exact and locale-independent.
  std::string s = absl::StrFormat("%a", is_float ? static_cast<double>(static_cast<float>(v)) : v);
  return is_float ? absl::StrCat("static_cast<float>(", s, ")") : s;
}

namespace {

class CpuDialectImpl : public codegen::CDialect {
 public:
  const char* label() const override { return "cpu codegen"; }
  absl::StatusOr<std::string> TypeName(DType dtype) const override { return CTypeName(dtype); }
  std::string IntLiteral(int64_t v) const override { return cpu::IntLiteral(v); }
  std::string FloatLiteral(double v, DType dtype) const override { return cpu::FloatLiteral(v, dtype); }
};

std::vector<std::string> LoopVariables(int n) {
  std::vector<std::string> vars;
  for (int i = 0; i < n; ++i) vars.push_back(absl::StrCat("l_v", i));
  return vars;
}

}  // namespace

const codegen::CDialect& CpuDialect() {
  static const CpuDialectImpl* dialect = new CpuDialectImpl();
  return *dialect;
}

ExprEmitter::ExprEmitter(const std::map<std::string, BufferRef>* buffers, int num_vars, int* temp_counter)
    : codegen::CExprEmitter(&CpuDialect(), buffers, LoopVariables(num_vars), temp_counter) {
  set_indent("      ");
}

}  // namespace kiln::backends::cpu
