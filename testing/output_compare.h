// Comparing outputs with expected ones: ONNX's rule for floats
// (|actual - expected| <= atol + rtol * |expected|; NaN matches only NaN,
// an infinity only itself), exact for integers and bools; dtype and shape
// must match. Used by the conformance runner and by `kiln run`.
//
// The work is bounded by the data, not by the logical shape: a dimension
// along which both tensors repeat one value (stride 0, an expanded view) is
// compared once, so a [2^24, 2^16] broadcast of 2^16 values costs 2^16
// element reads, not 2^40.
#ifndef KILN_TESTING_OUTPUT_COMPARE_H_
#define KILN_TESTING_OUTPUT_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "ir/ivalue.h"
#include "support/tensor.h"

namespace kiln::testing {

struct Tolerance {
  double rtol = 1e-3;  // ONNX's backend-test runner's defaults
  double atol = 1e-7;
};

// At most this many element pairs are read per tensor comparison; a
// comparison that would need more reports that instead of running for hours.
inline constexpr int64_t kMaxComparedElements = int64_t{1} << 31;

// A view of `t` with each dimension d where collapse[d] is true cut to size
// 1 (the first index). `collapse` has one entry per dimension.
Tensor CollapseDims(const Tensor& t, const std::vector<bool>& collapse);

// The logical row-major flat index in `sizes` of element `collapsed_index`
// of the tensor collapsed by `collapse` (its collapsed dimensions at 0).
int64_t UncollapsedIndex(const std::vector<int64_t>& sizes, const std::vector<bool>& collapse,
                         int64_t collapsed_index);

// An empty string when `actual` matches `expected`, else why not ("3/10
// elements differ (max abs diff 0.5); first at 4: 1.5 vs expected 1").
// `random`: outputs of random ops, checked by dtype, shape and finiteness.
std::string CompareTensors(const Tensor& actual, const Tensor& expected, const Tolerance& tolerance,
                           bool random = false);
// Tensors, sequences (element by element), None, and string tensors (exact).
std::string CompareValues(const ir::IValue& actual, const ir::IValue& expected,
                          const Tolerance& tolerance, bool random = false);

}  // namespace kiln::testing

#endif  // KILN_TESTING_OUTPUT_COMPARE_H_
