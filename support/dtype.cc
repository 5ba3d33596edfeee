#include "support/dtype.h"

#include <cmath>
#include <cstring>

namespace kiln {
namespace {

struct DTypeInfo {
  DType type;
  absl::string_view name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kUInt8, "Byte", 1},        {DType::kInt8, "Char", 1},
    {DType::kInt16, "Short", 2},       {DType::kInt32, "Int", 4},
    {DType::kInt64, "Long", 8},        {DType::kFloat16, "Half", 2},
    {DType::kFloat32, "Float", 4},     {DType::kFloat64, "Double", 8},
    {DType::kComplex64, "ComplexFloat", 8},
    {DType::kBool, "Bool", 1},         {DType::kBFloat16, "BFloat16", 2},
    {DType::kUInt16, "UInt16", 2},     {DType::kUInt32, "UInt32", 4},
    {DType::kUInt64, "UInt64", 8},
};

const DTypeInfo* Find(DType t) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.type == t) return &info;
  }
  return nullptr;
}

}  // namespace

absl::string_view DTypeName(DType t) {
  const DTypeInfo* info = Find(t);
  return info ? info->name : "Undefined";
}

std::optional<DType> DTypeFromName(absl::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

std::optional<DType> DTypeFromCode(int64_t code) {
  for (const DTypeInfo& info : kDTypes) {
    if (static_cast<int64_t>(info.type) == code) return info.type;
  }
  return std::nullopt;
}

size_t DTypeSize(DType t) {
  const DTypeInfo* info = Find(t);
  return info ? info->size : 0;
}

bool IsFloatingPoint(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 ||
         t == DType::kFloat32 || t == DType::kFloat64;
}

bool IsComplex(DType t) { return t == DType::kComplex64; }

bool IsIntegral(DType t, bool include_bool) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
      return true;
    case DType::kBool:
      return include_bool;
    case DType::kFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kBFloat16:
    case DType::kComplex64:
      return false;
  }
  return false;
}

bool IsUnsigned(DType t) {
  return t == DType::kUInt8 || t == DType::kUInt16 || t == DType::kUInt32 ||
         t == DType::kUInt64;
}

namespace {

// Rounds |v| (finite, non-negative) to a float format with `mant_bits`
// explicit mantissa bits and normals from 2^min_exp, returning the unsigned
// bit pattern. Scaling by powers of two is exact, so nearbyint (ties to even
// in the default rounding mode) does the only rounding.
uint32_t RoundToSmallFloat(double a, int mant_bits, int min_exp, int bias) {
  if (a < std::ldexp(1.0, min_exp)) {
    // Subnormal: units of 2^(min_exp - mant_bits). A result equal to
    // 2^mant_bits is the smallest normal's encoding, which is right.
    return static_cast<uint32_t>(std::nearbyint(std::ldexp(a, mant_bits - min_exp)));
  }
  int e = 0;
  std::frexp(a, &e);  // a = f * 2^e with f in [0.5, 1)
  const uint32_t one = 1u << mant_bits;
  // In [2^mant_bits, 2^(mant_bits+1)]; the top value carries into the exponent.
  const uint32_t m = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, mant_bits + 1 - e)));
  return (static_cast<uint32_t>(e - 1 + bias) << mant_bits) + (m - one);
}

}  // namespace

uint16_t DoubleToHalfBits(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  const double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7c00;  // halfway past 65504 rounds to inf
  return static_cast<uint16_t>(sign | RoundToSmallFloat(a, 10, -14, 15));
}

uint16_t DoubleToBFloat16Bits(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7fc0;
  const double a = std::fabs(v);
  // Halfway between the largest finite bfloat16 and 2^128.
  if (a >= std::ldexp(2.0 - std::ldexp(1.0, -8), 127)) return sign | 0x7f80;
  return static_cast<uint16_t>(sign | RoundToSmallFloat(a, 7, -126, 127));
}

uint16_t FloatToBFloat16Bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return sign | 0x7fc0;  // NaN
  // Round the low 16 bits away, to nearest, ties to even: a carry out of the
  // mantissa steps the exponent, up to infinity past the largest finite; a
  // subnormal float rounds to the bfloat16 subnormal it truncates to.
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t FloatToHalfBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00;  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00;  // 65520 and up: halfway past 65504 rounds to inf
  if (a >= 0x38800000u) {
    // A normal half (2^-14 and up): rebias the exponent (127 - 15) and round
    // the low 13 mantissa bits away, to nearest, ties to even; a carry steps
    // the exponent (below 65520 it never reaches infinity's).
    const uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
  }
  // Below the smallest normal half: units of 2^-24, to nearest, ties to
  // even (2^-25 itself rounds to 0; 0x400 is the smallest normal's encoding).
  if (a <= 0x33000000u) return sign;
  const uint32_t exponent = a >> 23;  // 102 .. 112 here
  const uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14 .. 24
  uint32_t q = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
  return static_cast<uint16_t>(sign | q);
}

float HalfBitsToFloat(uint16_t h) {
  const float sign = (h & 0x8000u) ? -1.0f : 1.0f;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 0x1f) {
    return mant == 0 ? sign * INFINITY : std::copysign(NAN, sign);
  }
  return sign * std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
}

float BFloat16BitsToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace kiln
