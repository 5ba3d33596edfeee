// Shape inference for the lazy ops: each op computes its output shape when it
// is recorded (the shapes are part of the graph hash, and errors surface at
// the op that caused them rather than at sync time). Errors are
// InvalidArgument naming the op and the shapes.
#ifndef KILN_LAZY_SHAPE_INFERENCE_H_
#define KILN_LAZY_SHAPE_INFERENCE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lazy/shape.h"
#include "support/dtype.h"

namespace kiln::lazy {

// NumPy broadcasting of two size lists.
absl::StatusOr<std::vector<int64_t>> BroadcastSizes(absl::string_view op,
                                                    absl::Span<const int64_t> a,
                                                    absl::Span<const int64_t> b);
// Tensor (op) tensor: broadcast sizes, promoted dtype (0-dim operands
// promote as PyTorch's zero-dim class).
absl::StatusOr<Shape> BinaryShape(absl::string_view op, const Shape& a, const Shape& b);
// Tensor (op) Python float.
absl::StatusOr<Shape> ScalarShape(absl::string_view op, const Shape& a);
// Comparisons: broadcast sizes, Bool.
absl::StatusOr<Shape> CompareShape(absl::string_view op, const Shape& a, const Shape& b);
// Unary float math on an integral input gives float32.
Shape FloatUnaryShape(const Shape& a);

absl::StatusOr<Shape> MmShape(const Shape& a, const Shape& b);
// torch.matmul: 1-D/2-D and batched (broadcast batch dims).
absl::StatusOr<Shape> MatmulShape(const Shape& a, const Shape& b);

// A dim in [-rank, rank) wrapped to [0, rank).
absl::StatusOr<int64_t> WrapDim(absl::string_view op, int64_t dim, int64_t rank);
// Reduced sizes (empty `dims`: all).
absl::StatusOr<Shape> ReduceShape(absl::string_view op, const Shape& a,
                                  absl::Span<const int64_t> dims, bool keepdim,
                                  std::optional<DType> dtype);
absl::StatusOr<Shape> TransposeShape(const Shape& a, int64_t dim0, int64_t dim1);
// One -1 is inferred; numel must match.
absl::StatusOr<Shape> ReshapeShape(absl::string_view op, const Shape& a,
                                   absl::Span<const int64_t> sizes);
absl::StatusOr<Shape> ExpandShape(const Shape& a, absl::Span<const int64_t> sizes);

}  // namespace kiln::lazy

#endif  // KILN_LAZY_SHAPE_INFERENCE_H_
