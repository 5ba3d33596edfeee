#include "runtime/kernels_strings.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

bool IsFloating(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 ||
         t == DType::kFloat64;
}

// Whether `text` read back and stored in `dtype` gives `v` exactly
// (locale-independent parsing).
bool ReadsBack(const char* text, double v, DType dtype) {
  double parsed = 0;
  if (!absl::SimpleAtod(text, &parsed)) return false;
  if (dtype == DType::kFloat64) return parsed == v;
  if (dtype == DType::kFloat32) return static_cast<float>(parsed) == static_cast<float>(v);
  Tensor one = Tensor::Empty(dtype, {1});  // half, bfloat16: round like a store
  return SetDouble(one, 0, parsed).ok() && one.GetDouble(0) == v;
}

std::string FloatToString(double v, DType dtype) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  const int max_digits = dtype == DType::kFloat64 ? 17 : 9;
  char buf[64];
  for (int digits = 1; digits <= max_digits; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    if (ReadsBack(buf, v, dtype)) break;
  }
  return buf;
}

absl::Status BadElement(int64_t i, const std::string& text, const char* expected) {
  return absl::InvalidArgumentError(absl::StrCat("Cast from STRING: element ", i, " '",
                                                 absl::CHexEscape(text.substr(0, 64)),
                                                 "' is not ", expected));
}

absl::StatusOr<double> ParseFloating(int64_t i, const std::string& raw) {
  const std::string text(absl::StripAsciiWhitespace(raw));
  std::string lower = absl::AsciiStrToLower(text);
  const bool negative = !lower.empty() && lower[0] == '-';
  if (!lower.empty() && (lower[0] == '+' || lower[0] == '-')) lower.erase(0, 1);
  if (lower == "nan") return std::nan("");
  if (lower == "inf" || lower == "infinity") {
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (text.empty()) return BadElement(i, raw, "a number");
  // Decimal only (no hex, no "nan(...)"), whatever the process locale.
  double v = 0;
  const bool decimal = text.find_first_of("xXnNiI") == std::string::npos;
  if (!decimal || !absl::SimpleAtod(text, &v)) return BadElement(i, raw, "a number");
  return v;  // overflow gives +-inf, as a float cast would
}

}  // namespace

absl::StatusOr<StringTensor> TensorToStrings(const Tensor& x) {
  const DType dtype = x.dtype();
  if (dtype == DType::kComplex64) {
    return absl::UnimplementedError("Cast to STRING: complex tensors are not supported");
  }
  const Tensor c = x.Contiguous();
  StringTensor out;
  out.sizes = x.sizes();
  const int64_t n = c.numel();
  out.data.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (IsFloating(dtype)) {
      out.data.push_back(FloatToString(c.GetDouble(i), dtype));
    } else if (dtype == DType::kBool) {
      out.data.push_back(c.GetInt(i) != 0 ? "True" : "False");
    } else if (dtype == DType::kUInt64) {
      out.data.push_back(absl::StrCat(static_cast<uint64_t>(c.GetInt(i))));
    } else {
      out.data.push_back(absl::StrCat(c.GetInt(i)));
    }
  }
  return out;
}

absl::StatusOr<Tensor> StringsToTensor(const StringTensor& x, DType dtype) {
  int64_t n = 1;
  for (int64_t s : x.sizes) {
    if (s < 0 || (s > 0 && n > INT64_MAX / s)) {
      return absl::InvalidArgumentError("Cast from STRING: bad string tensor sizes");
    }
    n *= s;
  }
  if (n != static_cast<int64_t>(x.data.size())) {
    return absl::InvalidArgumentError(absl::StrCat("Cast from STRING: sizes hold ", n,
                                                   " elements but there are ", x.data.size(),
                                                   " strings"));
  }
  if (!IsStorableDType(dtype)) {
    return absl::UnimplementedError(
        absl::StrCat("Cast from STRING to ", DTypeName(dtype), " is not supported"));
  }
  Tensor out = Tensor::Empty(dtype, x.sizes);
  for (int64_t i = 0; i < n; ++i) {
    const std::string& text = x.data[static_cast<size_t>(i)];
    if (IsFloating(dtype)) {
      ASSIGN_OR_RETURN(double v, ParseFloating(i, text));
      RETURN_IF_ERROR(SetDouble(out, i, v));
      continue;
    }
    if (dtype == DType::kBool) {
      const std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
      if (t != "true" && t != "false" && t != "1" && t != "0") {
        return BadElement(i, text, "a bool (True, False, 1 or 0)");
      }
      RETURN_IF_ERROR(SetInt(out, i, t == "true" || t == "1" ? 1 : 0));
      continue;
    }
    const absl::string_view stripped = absl::StripAsciiWhitespace(text);
    uint64_t big = 0;
    if (dtype == DType::kUInt64 && absl::SimpleAtoi(stripped, &big)) {
      RETURN_IF_ERROR(SetInt(out, i, static_cast<int64_t>(big)));  // stored bit for bit
      continue;
    }
    int64_t v = 0;
    if (!absl::SimpleAtoi(stripped, &v)) {
      // "3.0" is an integer written as a float.
      ASSIGN_OR_RETURN(double d, ParseFloating(i, text));
      if (!std::isfinite(d) || d != std::trunc(d) || std::fabs(d) > 9.2e18) {
        return BadElement(i, text, "an integer");
      }
      v = static_cast<int64_t>(d);
    }
    RETURN_IF_ERROR(SetInt(out, i, v));
  }
  return out;
}

}  // namespace kiln::runtime
