// Element types of tensors, with TorchScript's names (`Float`, `Long`, ...).
#ifndef KILN_SUPPORT_DTYPE_H_
#define KILN_SUPPORT_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include "absl/strings/string_view.h"

namespace kiln {

// The numbering follows c10::ScalarType so that dtype codes read the same as
// PyTorch's when they appear as integers in graphs (e.g. `aten::to(x, 6)`).
enum class DType : int8_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kComplex64 = 9,
  kBool = 11,
  kBFloat16 = 15,
  kUInt16 = 27,
  kUInt32 = 28,
  kUInt64 = 29,
};

// TorchScript's name: "Float", "Long", "Half", "BFloat16", "ComplexFloat"...
absl::string_view DTypeName(DType t);
// Inverse of DTypeName.
std::optional<DType> DTypeFromName(absl::string_view name);
// From a c10::ScalarType code; nullopt for codes kiln does not support.
std::optional<DType> DTypeFromCode(int64_t code);
inline int64_t DTypeCode(DType t) { return static_cast<int64_t>(t); }

size_t DTypeSize(DType t);
bool IsFloatingPoint(DType t);  // float16/bfloat16/float32/float64
bool IsComplex(DType t);
bool IsIntegral(DType t, bool include_bool);
bool IsUnsigned(DType t);  // uint8/16/32/64 (not bool)

// IEEE binary16 and bfloat16 bit patterns. Narrowing rounds to nearest, ties
// to even (like numpy's astype and PyTorch's .half()/.bfloat16()); values
// past the largest finite become infinities; NaN stays a (quiet) NaN.
uint16_t DoubleToHalfBits(double v);
// DoubleToHalfBits(v) for a float, on its bits (no double arithmetic): what
// converting a large model's weights for --precision fp16 runs per element.
uint16_t FloatToHalfBits(float v);
float HalfBitsToFloat(uint16_t bits);
uint16_t DoubleToBFloat16Bits(double v);
// DoubleToBFloat16Bits(v) for a float, on its bits (no double arithmetic):
// what converting a large model's weights runs once per element.
uint16_t FloatToBFloat16Bits(float v);
float BFloat16BitsToFloat(uint16_t bits);

}  // namespace kiln

#endif  // KILN_SUPPORT_DTYPE_H_
