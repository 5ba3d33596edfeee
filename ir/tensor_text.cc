#include "ir/tensor_text.h"

#include <cinttypes>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "support/dtype.h"
#include "support/status.h"

namespace kiln::ir {
namespace {

// ------------------------------------------------------------------ printing

// The parts of an ostream's formatting state that at::print changes. The
// precision persists across the matrices of one tensor, as it does on the
// stream torch prints into.
enum class FloatStyle { kDefault, kFixed, kScientific };
struct StreamState {
  FloatStyle style = FloatStyle::kDefault;
  int precision = 6;
};

void AppendFormatted(double v, FloatStyle style, int precision, std::string* out) {
  if (std::isnan(v)) {
    out->append(std::signbit(v) ? "-nan" : "nan");
    return;
  }
  char buf[64];
  const char* fmt = style == FloatStyle::kFixed        ? "%.*f"
                    : style == FloatStyle::kScientific ? "%.*e"
                                                       : "%.*g";
  int n = std::snprintf(buf, sizeof(buf), fmt, precision, v);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(buf)) {
    out->append(buf, static_cast<size_t>(n));
    return;
  }
  // Huge fixed-point values (1e300 with %f) do not fit the stack buffer.
  std::vector<char> big(static_cast<size_t>(n) + 1);
  std::snprintf(big.data(), big.size(), fmt, precision, v);
  out->append(big.data(), static_cast<size_t>(n));
}

// `stream << std::setw(width) << v`.
void AppendPadded(double v, const StreamState& s, int64_t width, std::string* out) {
  const size_t start = out->size();
  AppendFormatted(v, s.style, s.precision, out);
  const size_t len = out->size() - start;
  if (width > 0 && len < static_cast<size_t>(width)) {
    out->insert(start, static_cast<size_t>(width) - len, ' ');
  }
}

struct Format {
  double scale = 1;
  int64_t width = 0;
};

// at::print's __printFormat: picks a common scale and column width and sets
// the float style. (The odd `p[i] > exp_max` comparison of a signed value with
// a magnitude is torch's, and changes which scale is chosen.)
Format ChooseFormat(const double* p, int64_t n, StreamState* state) {
  if (n == 0) return Format{1, 0};
  bool int_mode = true;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(p[i]) && p[i] != std::ceil(p[i])) {
      int_mode = false;
      break;
    }
  }
  int64_t offset = 0;
  while (!std::isfinite(p[offset])) {
    if (++offset == n) break;
  }
  double exp_min = 1;
  double exp_max = 1;
  if (offset != n) {
    exp_min = std::fabs(p[offset]);
    exp_max = std::fabs(p[offset]);
    for (int64_t i = offset; i < n; ++i) {
      const double z = std::fabs(p[i]);
      if (std::isfinite(z)) {
        if (z < exp_min) exp_min = z;
        if (p[i] > exp_max) exp_max = z;
      }
    }
    exp_min = exp_min != 0 ? std::floor(std::log10(exp_min)) + 1 : 1;
    exp_max = exp_max != 0 ? std::floor(std::log10(exp_max)) + 1 : 1;
  }
  Format f;
  f.width = 11;
  if (int_mode) {
    if (exp_max > 9) {
      f.width = 11;
      state->style = FloatStyle::kScientific;
      state->precision = 4;
    } else {
      f.width = static_cast<int64_t>(exp_max) + 1;
      state->style = FloatStyle::kDefault;
    }
  } else if (exp_max - exp_min > 4) {
    f.width = 11;
    if (std::fabs(exp_max) > 99 || std::fabs(exp_min) > 99) f.width += 1;
    state->style = FloatStyle::kScientific;
    state->precision = 4;
  } else {
    if (exp_max > 5 || exp_max < 0) {
      f.width = 7;
      f.scale = std::pow(10, exp_max - 1);
    } else {
      f.width = exp_max == 0 ? 7 : static_cast<int64_t>(exp_max) + 6;
    }
    state->style = FloatStyle::kFixed;
    state->precision = 4;
  }
  return f;
}

// printScale: default float style, the stream's current precision.
void AppendScale(double scale, const StreamState& s, std::string* out) {
  AppendFormatted(scale, FloatStyle::kDefault, s.precision, out);
  out->append(" * ");
}

void AppendIndent(int64_t indent, std::string* out) {
  out->append(static_cast<size_t>(indent), ' ');
}

// at::print's __printMatrix over a rows x cols row-major block. Newlines are
// written as spaces, as the IR printer replaces them.
void AppendMatrix(const double* p, int64_t rows, int64_t cols, int64_t indent,
                  StreamState* state, std::string* out) {
  constexpr int64_t kLineSize = 80;
  const Format f = ChooseFormat(p, rows * cols, state);
  AppendIndent(indent, out);
  const int64_t per_line = (kLineSize - indent) / (f.width + 1);
  int64_t first = 0;
  while (first < cols) {
    int64_t last = first + per_line <= cols ? first + per_line - 1 : cols - 1;
    if (per_line < cols) {
      if (first != 0) out->push_back(' ');
      absl::StrAppend(out, "Columns ", first + 1, " to ", last + 1, " ");
      AppendIndent(indent, out);
    }
    if (f.scale != 1) {
      AppendScale(f.scale, *state, out);
      AppendIndent(indent, out);
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = first; c <= last; ++c) {
        AppendPadded(p[r * cols + c] / f.scale, *state, f.width, out);
        if (c == last) {
          out->push_back(' ');
          if (r != rows - 1) {
            AppendIndent(indent, out);
            if (f.scale != 1) out->push_back(' ');
          }
        } else {
          out->push_back(' ');
        }
      }
    }
    first = last + 1;
  }
}

// The flat offsets of the 2-d slices of an n-d (n >= 3) contiguous tensor in
// the order at::print's __printTensor visits them (leading index fastest).
std::vector<int64_t> SliceOrder(const std::vector<int64_t>& sizes,
                                std::vector<std::vector<int64_t>>* counters) {
  const size_t lead = sizes.size() - 2;
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * sizes[d + 1];
  std::vector<int64_t> offsets;
  std::vector<int64_t> counter(lead, 0);
  int64_t total = 1;
  for (size_t d = 0; d < lead; ++d) total *= sizes[d];
  for (int64_t k = 0; k < total; ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < lead; ++d) off += counter[d] * strides[d];
    offsets.push_back(off);
    if (counters) counters->push_back(counter);
    for (size_t d = 0; d < lead; ++d) {
      if (++counter[d] < sizes[d]) break;
      counter[d] = 0;
    }
  }
  return offsets;
}

void AppendTypeSuffix(const Tensor& t, std::string* out) {
  absl::StrAppend(out, "[ CPU", DTypeName(t.dtype()), "Type{");
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d > 0) out->push_back(',');
    absl::StrAppend(out, t.size(d));
  }
  out->append("} ]");
}

void AppendInlineTensor(const Tensor& t, std::string* out) {
  const int64_t n = t.numel();
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = t.GetDouble(i);
  StreamState state;
  if (n > 0) {
    if (t.dim() == 1) {
      const Format f = ChooseFormat(values.data(), n, &state);
      if (f.scale != 1) AppendScale(f.scale, state, out);
      for (int64_t i = 0; i < n; ++i) {
        AppendPadded(values[static_cast<size_t>(i)] / f.scale, state, f.width, out);
        out->push_back(' ');
      }
    } else if (t.dim() == 2) {
      AppendMatrix(values.data(), t.size(0), t.size(1), 0, &state, out);
    } else {
      std::vector<std::vector<int64_t>> counters;
      const std::vector<int64_t> offsets = SliceOrder(t.sizes(), &counters);
      const int64_t rows = t.size(t.dim() - 2);
      const int64_t cols = t.size(t.dim() - 1);
      for (size_t k = 0; k < offsets.size(); ++k) {
        if (k > 0) out->push_back(' ');
        out->push_back('(');
        for (int64_t c : counters[k]) absl::StrAppend(out, c + 1, ",");
        out->append(".,.) =  ");
        AppendMatrix(values.data() + offsets[k], rows, cols, 1, &state, out);
      }
    }
  }
  AppendTypeSuffix(t, out);
}

// ------------------------------------------------------------------ parsing

bool ParseDouble(absl::string_view text, double* out) {
  if (text == "nan" || text == "-nan") {
    *out = text[0] == '-' ? -std::nan("") : std::nan("");
    return true;
  }
  return absl::SimpleAtod(text, out);
}

absl::Status StoreValue(Tensor* t, int64_t i, double v) {
  void* base = t->raw_data();
  switch (t->dtype()) {
    case DType::kFloat32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::kFloat64: static_cast<double*>(base)[i] = v; break;
    case DType::kInt64: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); break;
    case DType::kInt32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case DType::kInt16: static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v); break;
    case DType::kInt8: static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v); break;
    case DType::kUInt8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); break;
    case DType::kBool: static_cast<bool*>(base)[i] = v != 0; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "inline tensor literals of dtype ", DTypeName(t->dtype()), " are not supported"));
  }
  return absl::OkStatus();
}

// Integral dtypes only hold values that fit; anything else would be UB to
// convert.
bool FitsDType(DType dtype, double v) {
  switch (dtype) {
    case DType::kFloat32:
      return !std::isfinite(v) || std::fabs(v) <= FLT_MAX;
    case DType::kFloat64:
    case DType::kBool:
      return true;
    case DType::kInt64: return v >= -9.2e18 && v <= 9.2e18;
    case DType::kInt32: return v >= -2147483648.0 && v <= 2147483647.0;
    case DType::kInt16: return v >= -32768.0 && v <= 32767.0;
    case DType::kInt8: return v >= -128.0 && v <= 127.0;
    case DType::kUInt8: return v >= 0 && v <= 255.0;
    default: return false;
  }
}

struct Slice {
  double scale = 1;
  std::vector<double> numbers;
};

}  // namespace

void AppendDoubleRepr(double d, std::string* out) {
  if (std::isnan(d)) {
    out->append("nan");
    return;
  }
  if (std::isinf(d)) {
    out->append(d < 0 ? "-inf" : "inf");
    return;
  }
  const int c = std::fpclassify(d);
  if ((c == FP_NORMAL || c == FP_ZERO) && std::fabs(d) < 1e10) {
    const int64_t i = static_cast<int64_t>(d);
    if (static_cast<double>(i) == d) {
      if (i == 0 && std::signbit(d)) out->push_back('-');
      absl::StrAppend(out, i);
      out->push_back('.');
      return;
    }
  }
  char buf[40];
  const int n = std::snprintf(buf, sizeof(buf), "%.17g", d);
  if (n > 0) out->append(buf, static_cast<size_t>(n));
}

void AppendTensorAttribute(const Tensor& t, std::string* out) {
  if (!t.defined() || !t.has_data() || t.numel() > kMaxTensorDisplaySize) {
    out->append("<Tensor>");
    return;
  }
  if (t.numel() == 1) {
    out->push_back('{');
    if (IsFloatingPoint(t.dtype()) || IsComplex(t.dtype())) {
      AppendFormatted(t.GetDouble(0), FloatStyle::kDefault, 6, out);
    } else {
      absl::StrAppend(out, t.GetInt(0));
    }
    out->push_back('}');
    return;
  }
  AppendInlineTensor(t, out);
}

absl::StatusOr<Tensor> ParseInlineTensor(Lexer& lex) {
  std::vector<Slice> slices(1);
  bool saw_header = false;
  // Numbers, `scale *` prefixes and `(i,j,.,.) =` slice headers, up to `[`.
  while (true) {
    lex.SkipBlanks();
    const TextPosition at = lex.position();
    const char c = lex.Peek();
    if (c == '[') break;
    if (c == '(') {
      // A slice header such as `(1,2,.,.) =`.
      lex.Advance(1);
      while (lex.Peek() != ')') {
        const char h = lex.Peek();
        if (!IsDigit(h) && h != ',' && h != '.') return lex.Expected("a slice header");
        lex.Advance(1);
      }
      lex.Advance(1);
      lex.SkipBlanks();
      if (!lex.TryConsume('=')) return lex.Expected("'='");
      if (saw_header || !slices.back().numbers.empty()) slices.emplace_back();
      saw_header = true;
      continue;
    }
    if (c == 'C' && lex.TryConsume("Columns")) {
      return Lexer::ErrorAt(at, "inline tensor literals split into columns are not supported");
    }
    absl::string_view num = lex.ReadNumber();
    if (num.empty()) return lex.Expected("a number or '[' in the tensor literal");
    double v = 0;
    if (!ParseDouble(num, &v)) return Lexer::ErrorAt(at, "invalid number");
    lex.SkipBlanks();
    if (lex.TryConsume('*')) {
      if (!slices.back().numbers.empty() || slices.back().scale != 1) {
        return Lexer::ErrorAt(at, "unexpected scale factor in tensor literal");
      }
      slices.back().scale = v;
      continue;
    }
    slices.back().numbers.push_back(v);
    if (slices.back().numbers.size() > static_cast<size_t>(kMaxTensorDisplaySize)) {
      return Lexer::ErrorAt(at, "too many elements in an inline tensor literal");
    }
  }
  // `[ CPUFloatType{2,3} ]`
  lex.Advance(1);
  lex.SkipBlanks();
  const TextPosition type_at = lex.position();
  absl::string_view type_name = lex.ReadIdentifier();
  if (type_name.size() < 8 || type_name.substr(0, 3) != "CPU" ||
      type_name.substr(type_name.size() - 4) != "Type") {
    return lex.ExpectedAt(type_at, "a tensor type such as 'CPUFloatType'");
  }
  std::optional<DType> dtype =
      DTypeFromName(type_name.substr(3, type_name.size() - 7));
  if (!dtype) return Lexer::ErrorAt(type_at, "unknown tensor dtype");
  if (!lex.TryConsume('{')) return lex.Expected("'{'");
  std::vector<int64_t> sizes;
  int64_t numel = 1;
  while (lex.Peek() != '}') {
    if (!sizes.empty() && !lex.TryConsume(',')) return lex.Expected("',' or '}'");
    const TextPosition dim_at = lex.position();
    absl::string_view dim = lex.ReadNumber();
    int64_t size = 0;
    if (dim.empty() || !absl::SimpleAtoi(dim, &size) || size < 0 ||
        size > kMaxTensorDisplaySize) {
      return lex.ExpectedAt(dim_at, "a small tensor dimension");
    }
    sizes.push_back(size);
    numel *= size;
    if (sizes.size() > 16) return Lexer::ErrorAt(dim_at, "too many tensor dimensions");
  }
  lex.Advance(1);
  lex.SkipBlanks();
  if (!lex.TryConsume(']')) return lex.Expected("']'");
  if (sizes.empty()) return Lexer::ErrorAt(type_at, "an inline tensor needs at least one dimension");
  if (numel > kMaxTensorDisplaySize) {
    return Lexer::ErrorAt(type_at, "inline tensor literals have at most 10 elements");
  }

  if (numel == 0) {
    if (slices.size() != 1 || !slices[0].numbers.empty() || saw_header) {
      return Lexer::ErrorAt(type_at, "tensor literal does not match its shape");
    }
    return Tensor::Empty(*dtype, sizes);
  }
  // Put the numbers back in row-major order.
  std::vector<int64_t> slice_offsets{0};
  if (sizes.size() >= 3) slice_offsets = SliceOrder(sizes, nullptr);
  const int64_t per_slice =
      sizes.size() >= 3 ? sizes[sizes.size() - 2] * sizes[sizes.size() - 1] : numel;
  if (slices.size() != slice_offsets.size()) {
    return Lexer::ErrorAt(type_at, "tensor literal does not match its shape");
  }
  Tensor t = Tensor::Empty(*dtype, sizes);
  for (size_t k = 0; k < slices.size(); ++k) {
    const Slice& s = slices[k];
    if (static_cast<int64_t>(s.numbers.size()) != per_slice) {
      return Lexer::ErrorAt(type_at, "tensor literal does not match its shape");
    }
    for (int64_t i = 0; i < per_slice; ++i) {
      const double v = s.numbers[static_cast<size_t>(i)] * s.scale;
      if (!FitsDType(*dtype, v)) {
        return Lexer::ErrorAt(type_at, "tensor literal value out of range for its dtype");
      }
      RETURN_IF_ERROR(StoreValue(&t, slice_offsets[k] + i, v));
    }
  }
  return t;
}

absl::StatusOr<Tensor> MakeSingleElementTensor(DType dtype, std::vector<int64_t> sizes,
                                               absl::string_view number) {
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  if (t.numel() != 1) return absl::InvalidArgumentError("expected a single-element shape");
  if (IsIntegral(dtype, /*include_bool=*/false)) {
    int64_t v = 0;
    // int64's own range is SimpleAtoi's; through a double, INT64_MAX (which
    // PyTorch prints for open slice ends) would round past it.
    if (!absl::SimpleAtoi(number, &v) ||
        (dtype != DType::kInt64 && !FitsDType(dtype, static_cast<double>(v)))) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", number, "' is not a valid ", DTypeName(dtype), " value"));
    }
    if (dtype == DType::kInt64) {
      *t.data<int64_t>() = v;
      return t;
    }
    RETURN_IF_ERROR(StoreValue(&t, 0, static_cast<double>(v)));
    return t;
  }
  double v = 0;
  if (!ParseDouble(number, &v) || !FitsDType(dtype, v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", number, "' is not a valid ", DTypeName(dtype), " value"));
  }
  RETURN_IF_ERROR(StoreValue(&t, 0, v));
  return t;
}

}  // namespace kiln::ir
