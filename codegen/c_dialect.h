// What a C-family language (C++ for the CPU, CUDA C++ for NVIDIA GPUs, an
// out-of-tree device's C dialect) spells its own way when kiln prints the
// loop IR's expressions: type names, literals and the few math functions
// that differ. The expression emitter (c_expr_emitter.h) asks its dialect
// for these and writes everything else itself, so the devices share one
// switch over the loop IR's ops. Anchors: tinygrad's CStyleLanguage (a
// renderer parameterised by the language's spellings) and Inductor's
// OpOverrides (per-op methods a device overrides).
#ifndef KILN_CODEGEN_C_DIALECT_H_
#define KILN_CODEGEN_C_DIALECT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"
#include "support/dtype.h"

namespace kiln::codegen {

class CDialect {
 public:
  virtual ~CDialect() = default;

  // Starts error messages: "cpu codegen", "cuda codegen".
  virtual const char* label() const = 0;

  // The type expressions of `dtype` compute in: temporaries, casts. For
  // float16/bfloat16 a dialect that stores them narrow computes in float.
  virtual absl::StatusOr<std::string> TypeName(DType dtype) const = 0;

  // The type a buffer of `dtype` is stored as (pointer parameters). By
  // default TypeName; differs for narrow floats stored as 16-bit words.
  virtual absl::StatusOr<std::string> StorageTypeName(DType dtype) const { return TypeName(dtype); }

  // `element` (an lvalue of the buffer's storage type) as a value of the
  // compute type; by default the element itself.
  virtual std::string LoadValue(const std::string& element, DType storage) const { return element; }
  // `value` (of the compute type of `storage`) converted for a store into a
  // buffer of dtype `storage`; by default the value itself.
  virtual std::string StoreValue(const std::string& value, DType storage) const { return value; }

  // Literals that need no header and no locale: `v` as an int64 value, and
  // as a value of float type `dtype` (float32 or float64; NaN and the
  // infinities included).
  virtual std::string IntLiteral(int64_t v) const = 0;
  virtual std::string FloatLiteral(double v, DType dtype) const = 0;

  // `op` (a unary math op of the loop IR: kExp ... kExpm1, kSqrt, kRsqrt,
  // kFloor, kCeil, kTrunc, kRound) applied to `x`, of float type `t`. The
  // default spells the C99 function (`expf` for float32, `exp` for
  // float64), kRound as `nearbyint` (half to even) and kRsqrt as 1/sqrt.
  virtual std::string UnaryMath(lowering::ExprOp op, const std::string& x, DType t) const;
};

// The C99 math function `base` for float32 (`expf`) or float64 (`exp`).
std::string CMathFunction(const char* base, DType t);

// Whether expressions of `t` compute as float32/float64 (narrow floats
// compute as float32).
bool IsCFloat(DType t);

}  // namespace kiln::codegen

#endif  // KILN_CODEGEN_C_DIALECT_H_
