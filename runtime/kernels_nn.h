// Reference kernels of the nn family: convolution, pooling, normalization and
// resampling. Like the other reference kernels they read inputs of any
// strides, compute in double and store contiguous outputs of the input's
// dtype (ConvInteger / QLinearConv: the integer dtypes ONNX prescribes).
//
// Layouts are channels-first: x is [N, C, *spatial], and the number of
// spatial dims comes from the options (kernel / stride sizes). Callers that
// accept unbatched inputs (PyTorch's [C, *spatial]) add the batch dim first.
// Every function validates its arguments and returns InvalidArgumentError
// naming `op` instead of crashing.
#ifndef KILN_RUNTIME_KERNELS_NN_H_
#define KILN_RUNTIME_KERNELS_NN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/post_ops.h"
#include "support/tensor.h"

namespace kiln::runtime::nn {

// ------------------------------------------------------------ convolution

struct ConvOptions {
  // One entry per spatial dim. Pads may differ per side (ONNX); transposed
  // convolutions crop `pad_begin` / `pad_end` from the full output (a
  // negative end pad extends it, as ONNX's output_shape may ask).
  std::vector<int64_t> stride, pad_begin, pad_end, dilation;
  std::vector<int64_t> output_padding;  // transposed only; empty = zeros
  int64_t groups = 1;
  bool transposed = false;
};

// x [N, Cin, *S]; w [Cout, Cin/groups, *K] (transposed: [Cin, Cout/groups, *K]);
// bias [Cout]. The number of spatial dims is w.dim() - 2.
absl::StatusOr<Tensor> Convolution(const std::string& op, const Tensor& x, const Tensor& w,
                                   const std::optional<Tensor>& bias, const ConvOptions& o);

// The epilogue of a fused op (ir/post_ops.h) applied to `y` step by step
// with the reference kernels of the ops it replaces (aten::relu, aten::add,
// ...), so a fused op rounds exactly as its unfused chain does. Binary
// operands broadcast to `y` and must not change its shape or dtype.
absl::StatusOr<Tensor> ApplyPostOps(const std::string& op, Tensor y, const std::vector<ir::PostOp>& post_ops,
                                    const std::vector<Tensor>& operands);

// ONNX ConvInteger: sum((x - x_zero_point) * (w - w_zero_point)) as int32.
// w_zero_point may be a scalar or one value per output channel.
absl::StatusOr<Tensor> ConvInteger(const std::string& op, const Tensor& x, const Tensor& w,
                                   const std::optional<Tensor>& x_zero_point,
                                   const std::optional<Tensor>& w_zero_point,
                                   const ConvOptions& o);

// ONNX QLinearConv; the result has y_zero_point's dtype (uint8 / int8).
struct QLinearConvInputs {
  Tensor x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point;
  std::optional<Tensor> bias;  // int32
};
absl::StatusOr<Tensor> QLinearConv(const std::string& op, const QLinearConvInputs& in,
                                   const ConvOptions& o);

// ------------------------------------------------------------------ pooling

enum class PoolKind { kMax, kAvg, kLp };

// Where MaxPool's indices point.
enum class IndexStyle {
  kPlane,          // PyTorch: row-major offset within the (n, c) plane
  kFlatRowMajor,   // ONNX storage_order 0: offset in the whole input
  kFlatColMajor,   // ONNX storage_order 1: plane offset + column-major
};

struct PoolOptions {
  std::vector<int64_t> kernel, stride, pad_begin, pad_end, dilation;
  // Output sizes round up; a window that would start in the end padding is
  // dropped (PyTorch's rule, which ONNX runtimes follow too).
  bool ceil_mode = false;
  // Avg: whether padding counts in the divisor (padding past the end
  // padding, reached through ceil_mode, never counts).
  bool count_include_pad = true;
  std::optional<int64_t> divisor_override;  // avg
  double p = 2;                             // lp
  IndexStyle index_style = IndexStyle::kPlane;
};

struct PoolResult {
  Tensor values;
  Tensor indices;  // int64, max pooling only
};

absl::StatusOr<PoolResult> Pool(const std::string& op, PoolKind kind, const Tensor& x,
                                const PoolOptions& o);

// PyTorch's adaptive pooling over the trailing output_size.size() dims of
// [N, C, *S]: window i spans [floor(i*in/out), ceil((i+1)*in/out)).
absl::StatusOr<PoolResult> AdaptivePool(const std::string& op, bool max, const Tensor& x,
                                        const std::vector<int64_t>& output_size);

// Scatters x into zeros of shape [N, C, *output_spatial] at `indices`
// (kPlane: offsets within each plane, as PyTorch; kFlatRowMajor: offsets in
// the whole output, as ONNX). A non-empty `padded_spatial` (ONNX's
// output_shape) pads the result with zeros at the end of each spatial dim;
// indices still address the unpadded output.
absl::StatusOr<Tensor> MaxUnpool(const std::string& op, const Tensor& x, const Tensor& indices,
                                 const std::vector<int64_t>& output_spatial, IndexStyle style,
                                 const std::vector<int64_t>& padded_spatial = {});

// ------------------------------------------------------------ normalization

struct NormResult {
  Tensor y, mean, rstd;  // rstd = 1 / sqrt(var + eps)
};

// PyTorch's native_batch_norm over channel dim 1. Training uses the batch's
// statistics (mean / rstd results of shape [C]); eval uses the running ones
// (mean / rstd results empty, as ATen's CPU kernel returns).
absl::StatusOr<NormResult> BatchNorm(const std::string& op, const Tensor& x,
                                     const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias,
                                     const std::optional<Tensor>& running_mean,
                                     const std::optional<Tensor>& running_var, bool training,
                                     double eps);

// ONNX BatchNormalization with training_mode=1: y from the batch's
// statistics; the running statistics updated as
// running * momentum + batch * (1 - momentum) with the *biased* variance.
struct BatchNormTrainingResult {
  Tensor y, running_mean, running_var;
};
absl::StatusOr<BatchNormTrainingResult> BatchNormOnnxTraining(
    const std::string& op, const Tensor& x, const Tensor& scale, const Tensor& bias,
    const Tensor& mean, const Tensor& var, double momentum, double eps);

// Normalizes over dims [axis, rank); weight / bias broadcast against those
// dims. mean / rstd have x's shape with the normalized dims set to 1.
absl::StatusOr<NormResult> LayerNorm(const std::string& op, const Tensor& x, int64_t axis,
                                     const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias, double eps);

// PyTorch's native_group_norm: mean / rstd are [N, groups].
absl::StatusOr<NormResult> GroupNorm(const std::string& op, const Tensor& x, int64_t groups,
                                     const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias, double eps);

// ONNX LRN across channels.
absl::StatusOr<Tensor> LocalResponseNorm(const std::string& op, const Tensor& x, int64_t size,
                                         double alpha, double beta, double bias);
// ONNX LpNormalization: x / ||x||_p along `axis` (p is 1 or 2).
absl::StatusOr<Tensor> LpNormalize(const std::string& op, const Tensor& x, int64_t axis,
                                   int64_t p);
// ONNX MeanVarianceNormalization: (x - mean) / (sqrt(var) + 1e-9) over `axes`.
absl::StatusOr<Tensor> MeanVarianceNorm(const std::string& op, const Tensor& x,
                                        const std::vector<int64_t>& axes);

// ---------------------------------------------------------------- resampling

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class CoordMode {
  kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfCropAndResize,
  kTfHalfPixelForNn, kHalfPixelSymmetric,
  // PyTorch's upsample_* index rules (computed as ATen does, in float):
  kTorchNearest, kTorchNearestExact, kTorchLinear, kTorchLinearAlignCorners,
};
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil,
                         // ONNX Upsample / Resize-10: floor when upsampling,
                         // ceil when downsampling (as onnxruntime).
                         kSimple };

struct ResizeOptions {
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0;
  std::vector<double> roi;  // tf_crop_and_resize: starts then ends, per dim
};

// Resizes every dim of x to out_sizes[d]; scales[d] is the factor used in
// the coordinate transform (ONNX: the given scale, or out/in for sizes;
// PyTorch modes: the user's scale factor or 0 for "none given").
absl::StatusOr<Tensor> Resize(const std::string& op, const Tensor& x,
                              const std::vector<int64_t>& out_sizes,
                              const std::vector<double>& scales, const ResizeOptions& o);

// PyTorch's grid_sampler_2d: interpolation 0 bilinear / 1 nearest /
// 2 bicubic; padding 0 zeros / 1 border / 2 reflection.
absl::StatusOr<Tensor> GridSample2d(const std::string& op, const Tensor& x, const Tensor& grid,
                                    int64_t interpolation, int64_t padding,
                                    bool align_corners);

// ONNX RoiAlign: rois [R, 4] (x1, y1, x2, y2), batch_indices [R].
struct RoiAlignOptions {
  bool max_mode = false;
  int64_t output_height = 1, output_width = 1, sampling_ratio = 0;
  double spatial_scale = 1.0;
  bool half_pixel = true;
};
absl::StatusOr<Tensor> RoiAlign(const std::string& op, const Tensor& x, const Tensor& rois,
                                const Tensor& batch_indices, const RoiAlignOptions& o);

// Channel <-> space rearrangements of [*, C, H, W]. `dcr`: ONNX's
// DepthToSpace DCR order (depth, column, row); otherwise CRD (=
// pixel_shuffle). SpaceToDepth with dcr=true is ONNX's; dcr=false is
// pixel_unshuffle.
absl::StatusOr<Tensor> DepthToSpace(const std::string& op, const Tensor& x, int64_t block,
                                    bool dcr);
absl::StatusOr<Tensor> SpaceToDepth(const std::string& op, const Tensor& x, int64_t block,
                                    bool dcr);

}  // namespace kiln::runtime::nn

#endif  // KILN_RUNTIME_KERNELS_NN_H_
