#include "backends/cuda/kernel_identifiers.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::backends::cuda {
absl::StatusOr<std::string> CudaTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return std::string("float");
    case DType::kFloat64: return std::string("double");
    case DType::kInt64: return std::string("long long");
    case DType::kInt32: return std::string("int");
    case DType::kInt16: return std::string("short");
    case DType::kInt8: return std::string("signed char");
    case DType::kUInt8: return std::string("unsigned char");
    case DType::kUInt16: return std::string("unsigned short");
    case DType::kUInt32: return std::string("unsigned int");
    case DType::kUInt64: return std::string("unsigned long long");
    case DType::kBool: return std::string("bool");
    // Computed in float; stored as 16-bit words (CudaStorageTypeName).
    case DType::kFloat16:
    case DType::kBFloat16: return std::string("float");
    default: break;
  }
  return absl::UnimplementedError(
      absl::StrCat("cuda codegen: dtype ", DTypeName(dtype), " is not supported in generated kernels"));
}

absl::StatusOr<std::string> CudaStorageTypeName(DType dtype) {
  if (dtype == DType::kFloat16) return std::string("kiln_half");
  if (dtype == DType::kBFloat16) return std::string("kiln_bf16");
  return CudaTypeName(dtype);
}

bool IsNarrowFloat(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

std::string CudaLoadValue(const std::string& element, DType storage) {
  return IsNarrowFloat(storage) ? absl::StrCat("kiln_to_float(", element, ")") : element;
}

std::string CudaStoreValue(const std::string& value, DType storage) {
  if (storage == DType::kFloat16) return absl::StrCat("kiln_to_half(", value, ")");
  if (storage == DType::kBFloat16) return absl::StrCat("kiln_to_bf16(", value, ")");
  return value;
}

std::string CudaIntLiteral(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1LL)";
  if (v < 0) return absl::StrCat("(", v, "LL)");
  return absl::StrCat(v, "LL");
}

std::string CudaFloatLiteral(double v, DType dtype) {
  const bool is_float = dtype == DType::kFloat32 || IsNarrowFloat(dtype);
  if (std::isnan(v)) return is_float ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  if (std::isinf(v)) {
    if (is_float) return v < 0 ? "__int_as_float(static_cast<int>(0xff800000u))" : "__int_as_float(0x7f800000)";
    return v < 0 ? "__longlong_as_double(static_cast<long long>(0xfff0000000000000ULL))" : "__longlong_as_double(0x7ff0000000000000LL)";
  }
  // Hex floats are exact and locale-independent.
  if (is_float) {
    const float f = static_cast<float>(v);
    if (std::isinf(f)) return f < 0 ? "__int_as_float(static_cast<int>(0xff800000u))" : "__int_as_float(0x7f800000)";
    return absl::StrCat("(", absl::StrFormat("%a", static_cast<double>(f)), "f)");
  }
  return absl::StrCat("(", absl::StrFormat("%a", v), ")");
}

}  // namespace kiln::backends::cuda
