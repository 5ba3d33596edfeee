// ONNX casts between numeric tensors and string tensors (StringTensor:
// sizes + one std::string per element, row-major).
#ifndef KILN_RUNTIME_KERNELS_STRINGS_H_
#define KILN_RUNTIME_KERNELS_STRINGS_H_

#include "absl/status/statusor.h"
#include "runtime/kernels_special.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::runtime {

// Cast to STRING. Floats print as the shortest decimal that reads back to
// the same value of their own dtype (float32 0.039187793f -> "0.039187793",
// as numpy's str), with ONNX's spellings "NaN", "INF" and "-INF"; integers
// in decimal; bool as "True"/"False". Complex is Unimplemented.
absl::StatusOr<StringTensor> TensorToStrings(const Tensor& x);

// Cast from STRING to `dtype`. Accepts decimal and scientific notation with
// optional sign and surrounding blanks, and "NaN"/"INF"/"Infinity" in any
// case. For integer dtypes the text must be an integer (or a float with no
// fractional part); bool reads "True"/"False"/"1"/"0". Anything else is
// InvalidArgument naming the element and its text.
absl::StatusOr<Tensor> StringsToTensor(const StringTensor& x, DType dtype);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_KERNELS_STRINGS_H_
