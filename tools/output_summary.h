// What `kiln run` prints about each output: dtype, shape, min/max/mean,
// where the maximum is, the first values. Bounded like the comparisons
// (testing/output_compare.h): a dimension the tensor repeats along (stride 0)
// is read once, and at most kMaxSummarizedElements elements are read.
#ifndef KILN_TOOLS_OUTPUT_SUMMARY_H_
#define KILN_TOOLS_OUTPUT_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ivalue.h"
#include "support/tensor.h"
#include "tools/json_output.h"

namespace kiln::tools {

inline constexpr int64_t kMaxSummarizedElements = int64_t{1} << 26;

struct TensorSummary {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
  int64_t elements = 0;  // logical
  bool has_stats = false;  // false for empty tensors and placeholders
  // Elements read: distinct ones (a repeated dimension counts once), at most
  // kMaxSummarizedElements; min/max/mean are over these.
  int64_t read = 0;
  bool truncated = false;  // more distinct elements than were read
  double min = 0, max = 0, mean = 0;
  int64_t argmax = 0;  // logical row-major index of the first maximum
  std::vector<double> first;  // the first (up to) 5 elements
};

TensorSummary Summarize(const Tensor& tensor);

// "Float[2, 3] min 0 max 1 (at 4) mean 0.5; first 0 1 ..." (names are the
// caller's to escape; non-tensors print their value, cut to 200 bytes).
std::string SummaryText(const ir::IValue& value);
// {"kind": "tensor", "dtype": ..., "shape": [...], ...} (the "output" object
// of docs/cli_json.schema.json).
Json SummaryJson(const ir::IValue& value);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_OUTPUT_SUMMARY_H_
