#include "testing/output_compare.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::testing {
namespace {

using ir::IValue;

std::string Shape(const Tensor& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.sizes().size(); ++i) absl::StrAppend(&s, i ? ", " : "", t.sizes()[i]);
  return s + "]";
}

}  // namespace

Tensor CollapseDims(const Tensor& t, const std::vector<bool>& collapse) {
  std::vector<int64_t> sizes = t.sizes();
  for (size_t d = 0; d < sizes.size() && d < collapse.size(); ++d) {
    if (collapse[d] && sizes[d] > 1) sizes[d] = 1;
  }
  return Tensor::View(t, std::move(sizes), t.strides(), t.storage_offset());
}

int64_t UncollapsedIndex(const std::vector<int64_t>& sizes, const std::vector<bool>& collapse,
                         int64_t collapsed_index) {
  int64_t logical = 0;
  int64_t logical_stride = 1;
  for (size_t k = sizes.size(); k-- > 0;) {
    const bool collapsed = k < collapse.size() && collapse[k] && sizes[k] > 1;
    const int64_t size = collapsed ? 1 : sizes[k];
    const int64_t index = size > 0 ? collapsed_index % size : 0;
    if (size > 0) collapsed_index /= size;
    logical += index * logical_stride;
    logical_stride *= sizes[k];
  }
  return logical;
}

std::string CompareTensors(const Tensor& actual, const Tensor& expected, const Tolerance& tolerance,
                           bool random) {
  if (actual.dtype() != expected.dtype()) {
    return absl::StrCat("dtype ", DTypeName(actual.dtype()), ", expected ",
                        DTypeName(expected.dtype()));
  }
  if (actual.sizes() != expected.sizes()) {
    return absl::StrCat("shape ", Shape(actual), ", expected ", Shape(expected));
  }
  if (!actual.has_data()) return "output has no data";
  if (!expected.has_data()) return "expected output has no data";
  // Dimensions both repeat along hold the same pairs at every index.
  std::vector<bool> collapse(actual.sizes().size());
  for (size_t d = 0; d < collapse.size(); ++d) {
    collapse[d] = actual.strides()[d] == 0 && expected.strides()[d] == 0;
  }
  const Tensor a = CollapseDims(actual, collapse);
  const Tensor e = CollapseDims(expected, collapse);
  const int64_t n = a.numel();
  if (n > kMaxComparedElements) {
    return absl::StrCat("too large to compare: ", n, " distinct element pairs in shape ",
                        Shape(actual), " (the limit is ", kMaxComparedElements, ")");
  }
  const auto logical = [&](int64_t i) { return UncollapsedIndex(actual.sizes(), collapse, i); };
  if (random) {
    for (int64_t i = 0; i < n; ++i) {
      if (IsFloatingPoint(a.dtype()) && !std::isfinite(a.GetDouble(i))) {
        return absl::StrCat("random output element ", logical(i), " is not finite");
      }
    }
    return "";
  }
  const bool floating = IsFloatingPoint(e.dtype()) || IsComplex(e.dtype());
  int64_t mismatches = 0;
  int64_t first = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!floating) {
      if (a.GetInt(i) != e.GetInt(i)) {
        if (first < 0) first = i;
        ++mismatches;
      }
      continue;
    }
    const double x = a.GetDouble(i), y = e.GetDouble(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) {
        if (first < 0) first = i;
        ++mismatches;
      }
      continue;
    }
    const double diff = std::fabs(x - y);
    // Written so that a NaN on one side counts as a mismatch.
    if (!(diff <= tolerance.atol + tolerance.rtol * std::fabs(y))) {
      if (first < 0) first = i;
      ++mismatches;
      worst = std::max(worst, diff);
    }
  }
  if (mismatches == 0) return "";
  // Counts are of distinct pairs; over a repeated (expanded) dimension each
  // stands for as many logical elements.
  const std::string counted =
      n == actual.numel() ? absl::StrCat(mismatches, "/", n, " elements differ")
                          : absl::StrCat(mismatches, "/", n, " distinct elements differ (of ",
                                         actual.numel(), ")");
  if (!floating) {
    return absl::StrCat(counted, "; first at ", logical(first), ": ", a.GetInt(first),
                        " vs expected ", e.GetInt(first));
  }
  return absl::StrFormat("%s (max abs diff %g); first at %d: %.9g vs expected %.9g", counted,
                         worst, logical(first), a.GetDouble(first), e.GetDouble(first));
}

std::string CompareValues(const IValue& actual, const IValue& expected, const Tolerance& tolerance,
                          bool random) {
  if (expected.isNone() || actual.isNone()) {
    return expected.isNone() == actual.isNone()
               ? ""
               : absl::StrCat("got ", actual.DebugString().substr(0, 80), ", expected None");
  }
  if (expected.isTuple()) {  // a string tensor: exact match
    return actual == expected ? ""
                              : absl::StrCat("got ", actual.DebugString().substr(0, 200),
                                             ", expected ", expected.DebugString().substr(0, 200));
  }
  if (expected.isList()) {
    if (!actual.isList() && !actual.isTuple()) return "expected a sequence";
    if (actual.elements().size() != expected.elements().size()) {
      return absl::StrCat("sequence of ", actual.elements().size(), " elements, expected ",
                          expected.elements().size());
    }
    for (size_t i = 0; i < expected.elements().size(); ++i) {
      std::string r =
          CompareValues(actual.elements()[i], expected.elements()[i], tolerance, random);
      if (!r.empty()) return absl::StrCat("sequence element ", i, ": ", r);
    }
    return "";
  }
  if (!actual.isTensor()) {
    return absl::StrCat("expected a tensor, got ", actual.DebugString().substr(0, 80));
  }
  if (!expected.isTensor()) {
    return absl::StrCat("got a tensor, expected ", expected.DebugString().substr(0, 80));
  }
  return CompareTensors(actual.toTensor(), expected.toTensor(), tolerance, random);
}

}  // namespace kiln::testing
