// Views, shape utilities and element access over support::Tensor.
//
// View functions share the input's storage (like ATen's view ops); Reshape
// copies only when the strides cannot express the new shape. All functions
// validate their arguments and return InvalidArgument instead of crashing.
#ifndef KILN_RUNTIME_TENSOR_OPS_H_
#define KILN_RUNTIME_TENSOR_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "support/tensor.h"

namespace kiln::runtime {

// "[2, 3]".
std::string ShapeToString(absl::Span<const int64_t> sizes);

// `dim` in [-rank, rank) made non-negative; an error names the op.
absl::StatusOr<int64_t> NormalizeDim(int64_t dim, int64_t rank, const char* op);

// A view with explicit geometry; fails when it reaches outside the storage.
absl::StatusOr<Tensor> AsStrided(const Tensor& t, std::vector<int64_t> sizes,
                                 std::vector<int64_t> strides, int64_t storage_offset);
absl::StatusOr<Tensor> Transpose(const Tensor& t, int64_t dim0, int64_t dim1);
absl::StatusOr<Tensor> Permute(const Tensor& t, absl::Span<const int64_t> dims);
// Python slicing t[start:end:step] along `dim` (step > 0; bounds clamp).
absl::StatusOr<Tensor> Slice(const Tensor& t, int64_t dim, int64_t start, int64_t end,
                             int64_t step = 1);
// Broadcast view to `sizes` (-1 keeps a dim; new leading dims allowed).
absl::StatusOr<Tensor> Expand(const Tensor& t, absl::Span<const int64_t> sizes);
// One size may be -1. A view when the strides allow, else a contiguous copy.
absl::StatusOr<Tensor> Reshape(const Tensor& t, absl::Span<const int64_t> sizes);
Tensor Squeeze(const Tensor& t);  // drops every size-1 dim
absl::StatusOr<Tensor> Squeeze(const Tensor& t, int64_t dim);
absl::StatusOr<Tensor> Unsqueeze(const Tensor& t, int64_t dim);

// NumPy broadcasting; the error names both shapes.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(absl::Span<const int64_t> a,
                                                     absl::Span<const int64_t> b);

// Writes element `flat_index` of a *contiguous* tensor (Empty()'s result).
// Unimplemented only for complex. Half and bfloat16 round to nearest even.
// Double -> integer conversion saturates to int64, then wraps to the
// narrower type like a C cast; NaN gives 0.
absl::Status SetDouble(Tensor& t, int64_t flat_index, double v);
absl::Status SetInt(Tensor& t, int64_t flat_index, int64_t v);
// Whether SetDouble/SetInt support `dtype`.
bool IsStorableDType(DType dtype);

// Copies `src` element by element into `dst` (same dtype and sizes, any
// strides on either side): how a kernel result lands in a planned buffer.
absl::Status CopyInto(const Tensor& src, Tensor& dst);

// A contiguous copy converted to `dtype` (values cast like a C cast, floats
// to ints saturating).
absl::StatusOr<Tensor> CastTo(const Tensor& t, DType dtype);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_TENSOR_OPS_H_
