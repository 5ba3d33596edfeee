// Reference kernels of the shape family: views, joins and splits, indexing,
// padding, generators (arange/full/eye...), sorting, cumulative ops and
// unique, plus the kiln:: ops that carry ONNX's semantics where ATen's differ.
//
// View kernels return tensors that share the input's storage (like ATen's view
// ops); every other kernel returns a new contiguous tensor. Data movement is
// bytewise, so every dtype is supported except where a kernel computes
// (reductions, sorting), which needs a dtype SetDouble/SetInt can store.
// Bad arguments (out-of-range dims or indices, mismatched shapes) are
// InvalidArgument errors naming the op.
#ifndef KILN_RUNTIME_KERNELS_SHAPE_H_
#define KILN_RUNTIME_KERNELS_SHAPE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::runtime::shape {

using Sizes = absl::Span<const int64_t>;

// --- views (share storage) ---
// `sizes` may hold one -1. A view when the strides allow, else a copy.
absl::StatusOr<Tensor> View(const Tensor& x, Sizes sizes);
absl::StatusOr<Tensor> Flatten(const Tensor& x, int64_t start_dim, int64_t end_dim);
absl::StatusOr<Tensor> T(const Tensor& x);
absl::StatusOr<Tensor> Select(const Tensor& x, int64_t dim, int64_t index);
absl::StatusOr<Tensor> Narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
// Python slicing; absent bounds mean the whole range. step > 0.
absl::StatusOr<Tensor> SliceDim(const Tensor& x, int64_t dim, std::optional<int64_t> start,
                                std::optional<int64_t> end, int64_t step);
absl::StatusOr<Tensor> Diagonal(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2);
absl::StatusOr<Tensor> Movedim(const Tensor& x, Sizes source, Sizes destination);
absl::StatusOr<std::vector<Tensor>> Unbind(const Tensor& x, int64_t dim);
absl::StatusOr<std::vector<Tensor>> SplitBySize(const Tensor& x, int64_t split_size,
                                                int64_t dim);
absl::StatusOr<std::vector<Tensor>> SplitWithSizes(const Tensor& x, Sizes split_sizes,
                                                   int64_t dim);
absl::StatusOr<std::vector<Tensor>> Chunk(const Tensor& x, int64_t chunks, int64_t dim);

// --- copies ---
// Always a new contiguous tensor (never aliases x).
absl::StatusOr<Tensor> Clone(const Tensor& x);
// Operands promote to a common dtype (torch.cat); 1-D empty tensors are
// skipped in the shape check, as ATen's legacy rule allows.
absl::StatusOr<Tensor> Cat(const std::vector<Tensor>& tensors, int64_t dim);
absl::StatusOr<Tensor> Stack(const std::vector<Tensor>& tensors, int64_t dim);

// `allow_negative`: index -k means size-k (ONNX); ATen rejects it.
absl::StatusOr<Tensor> Gather(const Tensor& x, int64_t dim, const Tensor& index,
                              bool allow_negative = false);
enum class ScatterReduce { kNone, kSum, kProd, kMean, kAmax, kAmin };
// A copy of `self` with src's elements (or `src` as a 0-dim scalar when
// `src_is_scalar`) written at `index` along `dim`, combined per `reduce`.
absl::StatusOr<Tensor> Scatter(const Tensor& self, int64_t dim, const Tensor& index,
                               const Tensor& src, bool src_is_scalar, ScatterReduce reduce,
                               bool include_self = true, bool allow_negative = false);
absl::StatusOr<Tensor> IndexSelect(const Tensor& x, int64_t dim, const Tensor& index);
// NumPy/PyTorch advanced indexing: x[indices...] with None for ":" and
// bool masks.
absl::StatusOr<Tensor> Index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices);
absl::StatusOr<Tensor> IndexPut(const Tensor& self,
                                const std::vector<std::optional<Tensor>>& indices,
                                const Tensor& values, bool accumulate);
// `value` is a 0-dim tensor (a number or a one-element tensor).
absl::StatusOr<Tensor> MaskedFill(const Tensor& self, const Tensor& mask, const Tensor& value);
absl::StatusOr<Tensor> MaskedSelect(const Tensor& self, const Tensor& mask);
absl::StatusOr<Tensor> TakeAlongDim(const Tensor& x, const Tensor& indices,
                                    std::optional<int64_t> dim);
absl::StatusOr<Tensor> Embedding(const Tensor& weight, const Tensor& indices);

enum class PadMode { kConstant, kReflect, kReplicate, kCircular };
// `pads` in PyTorch order: (last-dim begin, last-dim end, previous dim...).
// Negative pads crop. `value` (0-dim) is used by kConstant.
absl::StatusOr<Tensor> Pad(const Tensor& x, Sizes pads, PadMode mode, const Tensor& value,
                           const char* op = "pad");
absl::StatusOr<Tensor> Repeat(const Tensor& x, Sizes repeats);
absl::StatusOr<Tensor> Tile(const Tensor& x, Sizes dims);
absl::StatusOr<Tensor> Flip(const Tensor& x, Sizes dims);
absl::StatusOr<Tensor> Roll(const Tensor& x, Sizes shifts, Sizes dims);
// Keeps elements on and below (tril) / above (triu) diagonal `k` of the
// last two dims; zeroes the rest.
absl::StatusOr<Tensor> Trilu(const Tensor& x, int64_t k, bool upper);
absl::StatusOr<Tensor> Diag(const Tensor& x, int64_t diagonal);
absl::StatusOr<Tensor> OneHot(const Tensor& x, int64_t num_classes);
// [count, rank] int64 coordinates of nonzero elements, row-major order.
absl::StatusOr<Tensor> Nonzero(const Tensor& x);

// --- generators ---
// start/end/step are 0-dim tensors; without `dtype` the result is int64 when
// all are integral, else float32 (torch.arange).
absl::StatusOr<Tensor> Arange(const Tensor& start, const Tensor& end, const Tensor& step,
                              std::optional<DType> dtype);
// `fill` is a 0-dim tensor; `dtype` defaults to the fill's kind (bool, int64,
// float32).
absl::StatusOr<Tensor> Full(Sizes sizes, const Tensor& fill, std::optional<DType> dtype);
absl::StatusOr<Tensor> Eye(int64_t n, int64_t m, int64_t k, DType dtype);

// --- sorting, scans, unique ---
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64
};
// Stable; NaN sorts above +inf.
absl::StatusOr<ValuesIndices> Sort(const Tensor& x, int64_t dim, bool descending);
absl::StatusOr<ValuesIndices> TopK(const Tensor& x, int64_t k, int64_t dim, bool largest);
// Cumulative sum/product along `dim`, in `dtype` (default: int64 for
// integral inputs, else the input's dtype). `exclusive` shifts by one;
// `reverse` scans from the end.
absl::StatusOr<Tensor> Cumulative(const Tensor& x, int64_t dim, std::optional<DType> dtype,
                                  bool product, bool exclusive = false, bool reverse = false);
struct UniqueResult {
  Tensor values;
  Tensor first_indices;  // first occurrence of each unique element (int64)
  Tensor inverse;        // int64, the input's shape (flattened case) or [size(dim)]
  Tensor counts;         // int64
};
// Unique elements (dim absent: of the flattened input) or unique slices along
// `dim`. `sorted`: ascending; else in order of first occurrence.
// `consecutive`: only adjacent duplicates merge (unique_consecutive).
absl::StatusOr<UniqueResult> Unique(const Tensor& x, std::optional<int64_t> dim, bool sorted,
                                    bool consecutive);

// --- ONNX semantics (kiln:: ops) ---
// 0 copies the input dim unless `allowzero`; one -1 is inferred.
absl::StatusOr<Tensor> OnnxReshape(const Tensor& x, Sizes shape, bool allowzero);
// 2-D [prod(dims < axis), prod(dims >= axis)], axis in [-rank, rank].
absl::StatusOr<Tensor> OnnxFlatten(const Tensor& x, int64_t axis);
absl::StatusOr<Tensor> OnnxSqueeze(const Tensor& x, std::optional<std::vector<int64_t>> axes);
absl::StatusOr<Tensor> OnnxUnsqueeze(const Tensor& x, Sizes axes);
// Bidirectional broadcast of x with `shape`.
absl::StatusOr<Tensor> OnnxExpand(const Tensor& x, Sizes shape);
// ONNX Slice: negative steps and out-of-range bounds clamp per the spec.
absl::StatusOr<Tensor> OnnxSlice(const Tensor& x, Sizes starts, Sizes ends, Sizes axes,
                                 Sizes steps);
absl::StatusOr<Tensor> GatherND(const Tensor& x, const Tensor& indices, int64_t batch_dims);
absl::StatusOr<Tensor> ScatterND(const Tensor& x, const Tensor& indices, const Tensor& updates,
                                 ScatterReduce reduce);
absl::StatusOr<Tensor> Compress(const Tensor& x, const Tensor& condition,
                                std::optional<int64_t> axis);
absl::StatusOr<Tensor> ReverseSequence(const Tensor& x, const Tensor& lengths,
                                       int64_t batch_axis, int64_t time_axis);
// values = [off, on]; negative indices count from depth; out-of-range
// indices give all-off rows.
absl::StatusOr<Tensor> OnnxOneHot(const Tensor& indices, const Tensor& depth,
                                  const Tensor& values, int64_t axis);
// Start/limit/delta are scalars (0-dim or one element) of one dtype.
absl::StatusOr<Tensor> Range(const Tensor& start, const Tensor& limit, const Tensor& delta);
// int64 1-D shape of x, dims [start, end) clamped as ONNX Shape-15 does.
absl::StatusOr<Tensor> ShapeOf(const Tensor& x, int64_t start, std::optional<int64_t> end);
// The elements of a tensor of at most one dim, as integers.
absl::StatusOr<std::vector<int64_t>> TensorToIntList(const Tensor& x);

}  // namespace kiln::runtime::shape

#endif  // KILN_RUNTIME_KERNELS_SHAPE_H_
