#include "tools/output_summary.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "testing/output_compare.h"

namespace kiln::tools {

TensorSummary Summarize(const Tensor& tensor) {
  TensorSummary s;
  s.dtype = tensor.dtype();
  s.sizes = tensor.sizes();
  s.elements = tensor.numel();
  if (s.elements == 0 || !tensor.has_data()) return s;
  std::vector<bool> collapse(tensor.sizes().size());
  for (size_t d = 0; d < collapse.size(); ++d) collapse[d] = tensor.strides()[d] == 0;
  const Tensor distinct = testing::CollapseDims(tensor, collapse);
  const int64_t n = distinct.numel();
  s.read = std::min(n, kMaxSummarizedElements);
  s.truncated = s.read < n;
  double lo = distinct.GetDouble(0), hi = lo, sum = 0;
  int64_t argmax = 0;
  for (int64_t i = 0; i < s.read; ++i) {
    const double x = distinct.GetDouble(i);
    lo = std::min(lo, x);
    if (x > hi) {
      hi = x;
      argmax = i;
    }
    sum += x;
  }
  s.has_stats = true;
  s.min = lo;
  s.max = hi;
  // Over whole repeated dimensions every distinct element repeats equally
  // often, so this is the mean of all elements (when nothing was cut).
  s.mean = sum / static_cast<double>(s.read);
  s.argmax = testing::UncollapsedIndex(tensor.sizes(), collapse, argmax);
  for (int64_t i = 0; i < std::min<int64_t>(s.elements, 5); ++i) {
    s.first.push_back(tensor.GetDouble(i));
  }
  return s;
}

std::string SummaryText(const ir::IValue& value) {
  if (!value.isTensor()) return value.DebugString().substr(0, 200);
  const TensorSummary s = Summarize(value.toTensor());
  std::string text = absl::StrCat(DTypeName(s.dtype), "[");
  for (size_t i = 0; i < s.sizes.size(); ++i) absl::StrAppend(&text, i ? ", " : "", s.sizes[i]);
  absl::StrAppend(&text, "]");
  if (!s.has_stats) return text;
  absl::StrAppendFormat(&text, " min %.6g max %.6g (at %d) mean %.6g", s.min, s.max, s.argmax,
                        s.mean);
  if (s.truncated) {
    absl::StrAppendFormat(&text, " (of the first %d distinct elements)", s.read);
  }
  absl::StrAppend(&text, "; first");
  for (double v : s.first) absl::StrAppendFormat(&text, " %.6g", v);
  return text;
}

namespace {

// JSON has no NaN or infinity: those become the strings "nan", "inf", "-inf".
Json Number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

}  // namespace

Json SummaryJson(const ir::IValue& value) {
  if (!value.isTensor()) {
    return {{"kind", "value"}, {"text", value.DebugString().substr(0, 200)}};
  }
  const TensorSummary s = Summarize(value.toTensor());
  Json out = {{"kind", "tensor"}, {"dtype", DTypeName(s.dtype)}, {"shape", s.sizes},
              {"elements", s.elements}};
  if (s.has_stats) {
    Json first = Json::array();
    for (double v : s.first) first.push_back(Number(v));
    out["min"] = Number(s.min);
    out["max"] = Number(s.max);
    out["argmax"] = s.argmax;
    out["mean"] = Number(s.mean);
    out["elements_read"] = s.read;
    out["truncated"] = s.truncated;
    out["first"] = std::move(first);
  }
  return out;
}

}  // namespace kiln::tools
