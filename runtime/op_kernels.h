// The typed kernel entry points that the op rows (ops/defs/*.def) name in
// their KERNEL column, where a reference kernel's C++ API (kernels*.h) does
// not already take the schema's arguments in order: factories for op
// families (one kernel, a parameter per row) and small adapters that turn
// schema arguments into kernel options. Each is bound with typed unboxing
// (runtime/unboxed.h); there is no positional argument decoding.
//
// One section per row family, implemented in op_kernels_<family>.cc.
#ifndef KILN_RUNTIME_OP_KERNELS_H_
#define KILN_RUNTIME_OP_KERNELS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ivalue.h"
#include "runtime/kernels.h"
#include "runtime/unboxed.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::runtime {

// A schema argument the reference kernel does not read (a Device, a
// non_blocking flag in the middle of the list...).
using Unused = ir::IValue;
using TensorPair = std::tuple<Tensor, Tensor>;
using TensorTriple = std::tuple<Tensor, Tensor, Tensor>;

// ---------------------------------------------------------------- pointwise
// (op_kernels_pointwise.cc)

KernelBinder UnaryKernel(UnaryOp op);
// MathUnary(name, x, params...) with `num_params` scalar arguments after self.
KernelBinder MathUnaryKernel(const char* name, int num_params);
// (self, other) and (self, other, alpha).
KernelBinder BinaryKernel(BinaryOp op);
KernelBinder BinaryAlphaKernel(BinaryOp op);
KernelBinder MathBinaryKernel(const char* name);

absl::StatusOr<Tensor> Rsub(const Operand& self, const Operand& other, const Operand& alpha);
absl::StatusOr<Tensor> DivMode(const std::string& op, const Operand& self, const Operand& other,
                               const std::optional<std::string>& rounding_mode);
absl::StatusOr<Tensor> Addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2,
                               const Operand& value);
absl::StatusOr<Tensor> Addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2,
                               const Operand& value);
absl::StatusOr<Tensor> ClampMin(const Tensor& self, const Operand& min);
absl::StatusOr<Tensor> ClampMax(const Tensor& self, const Operand& max);
// _to_copy(self, *, dtype): a copy, in dtype when given (placement
// arguments ignored: one device per program).
absl::StatusOr<Tensor> ToCopy(const Tensor& self, std::optional<DType> dtype);
absl::StatusOr<Tensor> ToDtype(const Tensor& self, std::optional<DType> dtype, bool non_blocking,
                               bool copy);
absl::StatusOr<Tensor> ToOther(const Tensor& self, const Tensor& other, bool non_blocking,
                               bool copy);
absl::StatusOr<Tensor> TypeAs(const Tensor& self, const Tensor& other);
absl::StatusOr<Tensor> ToDevice(const Tensor& self, const Unused& device, DType dtype,
                                bool non_blocking, bool copy);
absl::StatusOr<Tensor> ToDtypeLayout(const Tensor& self, std::optional<DType> dtype,
                                     const Unused& layout, const Unused& device,
                                     const Unused& pin_memory, bool non_blocking, bool copy);
absl::StatusOr<Tensor> ToPrimDevice(const Tensor& self, const Unused& device,
                                    std::optional<DType> dtype, bool non_blocking, bool copy);
absl::StatusOr<Tensor> ToPrimOther(const Tensor& self, bool non_blocking, bool copy);

// ---------------------------------------------------------------- activations
// (op_kernels_pointwise.cc)

absl::StatusOr<Tensor> Gelu(const std::string& op, const Tensor& self, const std::string& approximate);
absl::StatusOr<Tensor> LeakyRelu(const Tensor& self, double negative_slope);
absl::StatusOr<Tensor> Elu(const Tensor& self, double alpha, double scale, double input_scale);
absl::StatusOr<Tensor> Softplus(const Tensor& self, double beta, double threshold);

// ---------------------------------------------------------------- reductions
// (op_kernels_reduce.cc)

using Dims = std::optional<std::vector<int64_t>>;

// sum/mean/prod(self, *, dtype?).
KernelBinder ReduceAllKernel(ReduceOp op);
// max/min(self).
KernelBinder ReduceWholeKernel(ReduceOp op);
// sum.dim_IntList/mean.dim(self, int[1]? dim, keepdim, *, dtype?).
KernelBinder ReduceDimsKernel(ReduceOp op);
// amax/amin/logsumexp(self, int[1] dim, keepdim).
KernelBinder ReduceListKernel(ReduceOp op);
absl::StatusOr<Tensor> ProdDim(const Tensor& self, int64_t dim, bool keepdim,
                               std::optional<DType> dtype);
absl::StatusOr<Tensor> Argmax(const std::string& op, const Tensor& self,
                              std::optional<int64_t> dim, bool keepdim);
absl::StatusOr<Tensor> Argmin(const std::string& op, const Tensor& self,
                              std::optional<int64_t> dim, bool keepdim);
absl::StatusOr<TensorPair> MaxDim(const Tensor& self, int64_t dim, bool keepdim);
absl::StatusOr<TensorPair> MinDim(const Tensor& self, int64_t dim, bool keepdim);
absl::StatusOr<Tensor> AllWhole(const Tensor& self);
absl::StatusOr<Tensor> AnyWhole(const Tensor& self);
absl::StatusOr<Tensor> AllDim(const Tensor& self, int64_t dim, bool keepdim);
absl::StatusOr<Tensor> AnyDim(const Tensor& self, int64_t dim, bool keepdim);
// any.dims (torch 2.x): None or [] reduces every dim.
absl::StatusOr<Tensor> AnyDims(const Tensor& self, const std::optional<std::vector<int64_t>>& dim,
                               bool keepdim);
absl::StatusOr<Tensor> VarUnbiased(const Tensor& self, bool unbiased);
absl::StatusOr<Tensor> VarDim(const Tensor& self, const Dims& dim, bool unbiased, bool keepdim);
absl::StatusOr<Tensor> VarCorrection(const Tensor& self, const Dims& dim,
                                     std::optional<double> correction, bool keepdim);
enum class Moment { kStd, kVarMean, kStdMean };
// The three argument layouts of var/std/var_mean/std_mean.
enum class MomentLayout { kUnbiased, kDim, kCorrection };
KernelBinder MomentKernel(Moment moment, MomentLayout layout);
absl::StatusOr<Tensor> NormScalar(const Tensor& self, double p);
absl::StatusOr<Tensor> NormDim(const Tensor& self, std::optional<double> p,
                               const std::vector<int64_t>& dim, bool keepdim);
absl::StatusOr<Tensor> NormDimDtype(const Tensor& self, std::optional<double> p,
                                    const std::vector<int64_t>& dim, bool keepdim, DType dtype);
absl::StatusOr<Tensor> NormDtype(const Tensor& self, std::optional<double> p, DType dtype);
absl::StatusOr<Tensor> LinalgVectorNorm(const Tensor& self, double ord, const Dims& dim,
                                        bool keepdim, std::optional<DType> dtype);
absl::StatusOr<Tensor> FrobeniusNorm(const Tensor& self);
absl::StatusOr<Tensor> FrobeniusNormDim(const Tensor& self, const std::vector<int64_t>& dim,
                                        bool keepdim);
absl::StatusOr<Tensor> CountNonzeroDim(const Tensor& self, std::optional<int64_t> dim);
absl::StatusOr<Tensor> CountNonzeroDims(const Tensor& self, const std::vector<int64_t>& dim);
absl::StatusOr<Tensor> OnnxReduceKernel(const Tensor& self, const std::string& kind,
                                        const Dims& axes, bool keepdims,
                                        bool noop_with_empty_axes);

// ---------------------------------------------------------------- normalization
// (op_kernels_norm.cc)

using OptTensor = std::optional<Tensor>;

KernelBinder SoftmaxKernel(bool log);
// _softmax / _log_softmax(self, dim, half_to_float) (torch 2.x core ATen).
KernelBinder HalfToFloatSoftmaxKernel(bool log);
absl::StatusOr<Tensor> LayerNormKernel(const std::string& op, const Tensor& input,
                                       const std::vector<int64_t>& normalized_shape,
                                       const OptTensor& weight, const OptTensor& bias, double eps,
                                       bool cudnn_enable);
absl::StatusOr<TensorTriple> NativeLayerNorm(const std::string& op, const Tensor& input,
                                             const std::vector<int64_t>& normalized_shape,
                                             const OptTensor& weight, const OptTensor& bias,
                                             double eps);
absl::StatusOr<Tensor> BatchNormKernel(const std::string& op, const Tensor& input,
                                       const OptTensor& weight, const OptTensor& bias,
                                       const OptTensor& running_mean,
                                       const OptTensor& running_var, bool training,
                                       double momentum, double eps);
absl::StatusOr<TensorTriple> NativeBatchNorm(const std::string& op, const Tensor& input,
                                             const OptTensor& weight, const OptTensor& bias,
                                             const OptTensor& running_mean,
                                             const OptTensor& running_var, bool training,
                                             double momentum, double eps);
absl::StatusOr<Tensor> InstanceNorm(const std::string& op, const Tensor& input,
                                    const OptTensor& weight, const OptTensor& bias,
                                    const OptTensor& running_mean, const OptTensor& running_var,
                                    bool use_input_stats, double momentum, double eps);
absl::StatusOr<Tensor> GroupNormKernel(const std::string& op, const Tensor& input,
                                       int64_t num_groups, const OptTensor& weight,
                                       const OptTensor& bias, double eps);
absl::StatusOr<TensorTriple> NativeGroupNorm(const std::string& op, const Tensor& input,
                                             const OptTensor& weight, const OptTensor& bias,
                                             int64_t n, int64_t c, int64_t hxw, int64_t group,
                                             double eps);
absl::StatusOr<TensorTriple> BatchNormTraining(const std::string& op, const Tensor& x,
                                               const Tensor& scale, const Tensor& bias,
                                               const Tensor& mean, const Tensor& var,
                                               double momentum, double eps);
absl::StatusOr<TensorTriple> OnnxLayerNorm(const std::string& op, const Tensor& x, int64_t axis,
                                           const OptTensor& scale, const OptTensor& bias,
                                           double eps);

// ---------------------------------------------------------------- linear algebra
// (op_kernels_nn.cc)

absl::StatusOr<Tensor> EinsumKernel(const std::string& equation, const std::vector<Tensor>& tensors,
                                    const Dims& path);

// ---------------------------------------------------------------- convolution, pooling
// (op_kernels_nn.cc)

using Ints = std::vector<int64_t>;

// The fused library ops (passes/fuse_post_ops.h, fuse_attention.h): the
// op's reference kernel, then its epilogue (ir/post_ops.h) through the
// kernels of the ops it replaced (nn::ApplyPostOps), so a fused op rounds as
// its unfused chain does.
absl::StatusOr<Tensor> ConvPostOps(const std::string& op, const Tensor& x, const Tensor& w,
                                   const OptTensor& b, const Ints& stride, const Ints& pads,
                                   const Ints& dilation, int64_t groups,
                                   const std::vector<std::string>& post_ops,
                                   const std::vector<double>& post_scalars,
                                   const std::vector<Tensor>& post_operands);
absl::StatusOr<Tensor> LinearPostOps(const std::string& op, const Tensor& x, const Tensor& w,
                                     const OptTensor& b, const std::vector<std::string>& post_ops,
                                     const std::vector<double>& post_scalars,
                                     const std::vector<Tensor>& post_operands);
// The channels-last library forms of a squeeze-excite block's ops
// (passes/library_channel_ops.h): the mean over every spatial dim of
// [N, C, *S], kept as [N, C, 1, ...], and x * scale with scale
// [N or 1, C, 1, ...]. Each runs the kernel of the op it replaced
// (aten::mean.dim, aten::mul), so it rounds as that op does.
absl::StatusOr<Tensor> GlobalAvgPool(const std::string& op, const Tensor& x);
absl::StatusOr<Tensor> ChannelMul(const std::string& op, const Tensor& x, const Tensor& scale);
// softmax(q @ kt * scale + mask, -1) @ v, as the chain it replaces.
absl::StatusOr<Tensor> Attention(const Tensor& q, const Tensor& kt, const Tensor& v,
                                 const OptTensor& mask, double scale);

// convolution / _convolution(input, weight, bias, stride, padding, dilation,
// transposed, output_padding, groups, [implementation flags]).
absl::StatusOr<Tensor> ConvolutionKernel(const std::string& op, const Tensor& input,
                                         const Tensor& weight, const OptTensor& bias,
                                         const Ints& stride, const Ints& padding,
                                         const Ints& dilation, bool transposed,
                                         const Ints& output_padding, int64_t groups);
// conv{n}d(input, weight, bias, stride, padding, dilation, groups).
KernelBinder ConvNdKernel(size_t n);
// conv{n}d.padding: padding "valid" or "same".
KernelBinder ConvNdStringPaddingKernel(size_t n);
// conv_transpose{n}d(input, weight, bias, stride, padding, output_padding, groups, dilation).
KernelBinder ConvTransposeNdKernel(size_t n);
absl::StatusOr<Tensor> OnnxConv(const std::string& op, const Tensor& input, const Tensor& weight,
                                const OptTensor& bias, const Ints& stride, const Ints& pads,
                                const Ints& dilation, int64_t groups);
absl::StatusOr<Tensor> OnnxConvTranspose(const std::string& op, const Tensor& input,
                                         const Tensor& weight, const OptTensor& bias,
                                         const Ints& stride, const Ints& pads,
                                         const Ints& dilation, const Ints& output_padding,
                                         int64_t groups);
absl::StatusOr<Tensor> OnnxConvInteger(const std::string& op, const Tensor& x, const Tensor& w,
                                       const OptTensor& x_zero_point,
                                       const OptTensor& w_zero_point, const Ints& stride,
                                       const Ints& pads, const Ints& dilation, int64_t groups);
absl::StatusOr<Tensor> OnnxQLinearConv(const std::string& op, const Tensor& x,
                                       const Tensor& x_scale, const Tensor& x_zero_point,
                                       const Tensor& w, const Tensor& w_scale,
                                       const Tensor& w_zero_point, const Tensor& y_scale,
                                       const Tensor& y_zero_point, const OptTensor& bias,
                                       const Ints& stride, const Ints& pads, const Ints& dilation,
                                       int64_t groups);
// max_pool{n}d[_with_indices](self, kernel_size, stride, padding, dilation, ceil_mode).
KernelBinder MaxPoolKernel(size_t n, bool with_indices);
// avg_pool{n}d(self, kernel_size, stride, padding, ceil_mode, count_include_pad[, divisor_override]).
KernelBinder AvgPoolKernel(size_t n);
// adaptive_{avg,max}_pool{n}d(self, output_size).
KernelBinder AdaptivePoolKernel(size_t n, bool max);
absl::StatusOr<Tensor> MaxUnpool2d(const std::string& op, const Tensor& self,
                                   const Tensor& indices, const Ints& output_size);
absl::StatusOr<Tensor> MaxUnpool3d(const std::string& op, const Tensor& self,
                                   const Tensor& indices, const Ints& output_size,
                                   const Ints& stride, const Ints& padding);
absl::StatusOr<TensorPair> OnnxMaxPool(const std::string& op, const Tensor& x, const Ints& kernel,
                                       const Ints& stride, const Ints& pads, const Ints& dilation,
                                       bool ceil_mode, int64_t storage_order);
absl::StatusOr<Tensor> OnnxAvgPool(const std::string& op, const Tensor& x, const Ints& kernel,
                                   const Ints& stride, const Ints& pads, const Ints& dilation,
                                   bool ceil_mode, bool count_include_pad);
absl::StatusOr<Tensor> OnnxLpPool(const std::string& op, const Tensor& x, const Ints& kernel,
                                  const Ints& stride, const Ints& pads, const Ints& dilation,
                                  bool ceil_mode, double p);
absl::StatusOr<Tensor> OnnxGlobalLpPool(const std::string& op, const Tensor& x, double p);
absl::StatusOr<Tensor> OnnxMaxUnpool(const std::string& op, const Tensor& x,
                                     const Tensor& indices, const Ints& kernel,
                                     const Ints& stride, const Ints& pads,
                                     const OptTensor& output_shape);

// ---------------------------------------------------------------- resampling
// (op_kernels_resample.cc)

enum class Resample { kNearest, kNearestExact, kLinear, kCubic };
// upsample_*{n}d(self, output_size, [align_corners,] scales...).
KernelBinder UpsampleKernel(size_t n, Resample mode);
// upsample_*{n}d.vec(input, output_size?, [align_corners,] scale_factors?).
KernelBinder UpsampleVecKernel(size_t n, Resample mode);
absl::StatusOr<Tensor> GridSampler(const std::string& op, const Tensor& input,
                                   const Tensor& grid, int64_t interpolation_mode,
                                   int64_t padding_mode, bool align_corners);
absl::StatusOr<Tensor> PixelShuffle(const std::string& op, const Tensor& self, int64_t factor);
absl::StatusOr<Tensor> PixelUnshuffle(const std::string& op, const Tensor& self, int64_t factor);
absl::StatusOr<Tensor> OnnxResize(const std::string& op, const Tensor& x, const OptTensor& roi,
                                  const OptTensor& scales, const OptTensor& sizes,
                                  const std::string& mode, const std::string& coordinate_mode,
                                  const std::string& nearest_mode, double cubic_coeff_a,
                                  bool exclude_outside, double extrapolation_value);
absl::StatusOr<Tensor> OnnxRoiAlign(const std::string& op, const Tensor& x, const Tensor& rois,
                                    const Tensor& batch_indices, const std::string& mode,
                                    int64_t output_height, int64_t output_width,
                                    int64_t sampling_ratio, double spatial_scale,
                                    const std::string& coordinate_mode);
absl::StatusOr<Tensor> OnnxDepthToSpace(const std::string& op, const Tensor& x, int64_t blocksize,
                                        const std::string& mode);
absl::StatusOr<Tensor> OnnxSpaceToDepth(const std::string& op, const Tensor& x,
                                        int64_t blocksize);

// ---------------------------------------------------------------- views
// (op_kernels_shape.cc)

absl::StatusOr<Tensor> ViewAs(const Tensor& self, const Tensor& other);
absl::StatusOr<Tensor> FlattenNamed(const Tensor& self, int64_t start_dim, int64_t end_dim,
                                    const std::string& out_dim);
absl::StatusOr<Tensor> SqueezeAll(const Tensor& self);
absl::StatusOr<Tensor> SqueezeDim(const Tensor& self, int64_t dim);
// squeeze.dims (torch 2.x): each listed dim of size 1 is dropped.
absl::StatusOr<Tensor> SqueezeDims(const std::string& op, const Tensor& self,
                                   const std::vector<int64_t>& dim);
// copy(self, src): src cast to self's dtype and broadcast to its sizes, as
// a new tensor (the functional form of copy_).
absl::StatusOr<Tensor> CopyKernel(const std::string& op, const Tensor& self, const Tensor& src);
absl::StatusOr<Tensor> ExpandKernel(const Tensor& self, const Ints& size, bool implicit);
absl::StatusOr<Tensor> ExpandAs(const Tensor& self, const Tensor& other);
absl::StatusOr<Tensor> ContiguousKernel(const std::string& op, const Tensor& self);
absl::StatusOr<Tensor> Identity(const Tensor& self);
absl::StatusOr<Tensor> NarrowTensor(const std::string& op, const Tensor& self, int64_t dim,
                                    const Tensor& start, int64_t length);
absl::StatusOr<Tensor> MovedimInt(const Tensor& self, int64_t source, int64_t destination);

// ---------------------------------------------------------------- indexing
// (op_kernels_index.cc)

absl::StatusOr<Tensor> GatherKernel(const Tensor& self, int64_t dim, const Tensor& index,
                                    bool sparse_grad);
// scatter.src / .value / .reduce / .value_reduce / scatter_add.
enum class ScatterForm { kSrc, kValue, kSrcReduce, kValueReduce, kAdd };
KernelBinder ScatterKernel(ScatterForm form);
absl::StatusOr<Tensor> ScatterReduceTwo(const std::string& op, const Tensor& self, int64_t dim,
                                        const Tensor& index, const Tensor& src,
                                        const std::string& reduce, bool include_self);
absl::StatusOr<Tensor> IndexTwin(const Tensor& self, const std::vector<Tensor>& indices);
absl::StatusOr<Tensor> IndexPutTwin(const Tensor& self, const std::vector<Tensor>& indices,
                                    const Tensor& values, bool accumulate);
absl::StatusOr<Tensor> MaskedFillKernel(const std::string& op, const Tensor& self,
                                        const Tensor& mask, const Operand& value);
absl::StatusOr<Tensor> EmbeddingKernel(const Tensor& weight, const Tensor& indices,
                                       int64_t padding_idx, bool scale_grad_by_freq,
                                       bool sparse);
absl::StatusOr<Tensor> ConstantPadNd(const Tensor& self, const Ints& pad, const Operand& value);
absl::StatusOr<Tensor> PadKernel(const std::string& op, const Tensor& self, const Ints& pad,
                                 const std::string& mode, std::optional<double> value);
enum class PadKind { kReflect, kReplicate };
// reflection_pad{n}d / replication_pad{n}d(self, padding).
KernelBinder ModePadKernel(int n, PadKind kind);
absl::StatusOr<Tensor> Tril(const Tensor& self, int64_t diagonal);
absl::StatusOr<Tensor> Triu(const Tensor& self, int64_t diagonal);
absl::StatusOr<Tensor> OnnxGatherElements(const Tensor& self, int64_t dim, const Tensor& index);
absl::StatusOr<Tensor> OnnxScatterElements(const std::string& op, const Tensor& self,
                                           int64_t dim, const Tensor& index, const Tensor& src,
                                           const std::string& reduction);
absl::StatusOr<Tensor> OnnxScatterNd(const std::string& op, const Tensor& self,
                                     const Tensor& indices, const Tensor& updates,
                                     const std::string& reduction);
absl::StatusOr<Tensor> OnnxPad(const std::string& op, const Tensor& self, const Ints& pads,
                               const std::string& mode, const OptTensor& value);

// ---------------------------------------------------------------- factories
// (op_kernels_shape.cc)

absl::StatusOr<Tensor> ArangeEnd(const Operand& end, std::optional<DType> dtype);
absl::StatusOr<Tensor> ArangeStart(const Operand& start, const Operand& end,
                                   std::optional<DType> dtype);
absl::StatusOr<Tensor> ArangeStartStep(const Operand& start, const Operand& end,
                                       const Operand& step, std::optional<DType> dtype);
absl::StatusOr<Tensor> FullKernel(const Ints& size, const Operand& fill_value,
                                  std::optional<DType> dtype);
// zeros / ones / empty(size, dtype...): float32 by default.
KernelBinder ConstantFillKernel(int value);
// *_like(self, dtype...): self's shape and dtype by default.
KernelBinder LikeKernel(int value);
absl::StatusOr<Tensor> FullLike(const Tensor& self, const Operand& fill_value,
                                std::optional<DType> dtype);
// new_*(self, size, dtype...): self's dtype by default.
KernelBinder NewKernel(int value);
absl::StatusOr<Tensor> NewFull(const Tensor& self, const Ints& size, const Operand& fill_value,
                               std::optional<DType> dtype);
absl::StatusOr<Tensor> ScalarTensor(const Operand& s, std::optional<DType> dtype);
absl::StatusOr<Tensor> EyeN(int64_t n, std::optional<DType> dtype);
absl::StatusOr<Tensor> EyeNM(int64_t n, int64_t m, std::optional<DType> dtype);
absl::StatusOr<Tensor> OnnxEyeLike(const std::string& op, const Tensor& self, int64_t k,
                                   std::optional<DType> dtype);

// ---------------------------------------------------------------- sorting
// (op_kernels_shape.cc)

absl::StatusOr<TensorPair> TopK(const Tensor& self, int64_t k, int64_t dim, bool largest,
                                bool sorted);
absl::StatusOr<TensorPair> SortKernel(const Tensor& self, int64_t dim, bool descending);
absl::StatusOr<TensorPair> SortStable(const Tensor& self, std::optional<bool> stable, int64_t dim,
                                      bool descending);
absl::StatusOr<Tensor> Argsort(const Tensor& self, int64_t dim, bool descending);
absl::StatusOr<Tensor> ArgsortStable(const Tensor& self, bool stable, int64_t dim,
                                     bool descending);
// cumsum / cumprod(self, dim, dtype?).
KernelBinder CumulativeKernel(bool prod);
absl::StatusOr<TensorPair> Cummax(const Tensor& self, int64_t dim);
absl::StatusOr<TensorPair> Cummin(const Tensor& self, int64_t dim);
absl::StatusOr<TensorTriple> UniqueDim(const Tensor& self, int64_t dim, bool sorted,
                                       bool return_inverse, bool return_counts);
absl::StatusOr<TensorTriple> Unique2(const Tensor& self, bool sorted, bool return_inverse,
                                     bool return_counts);
absl::StatusOr<TensorTriple> UniqueConsecutive(const Tensor& self, bool return_inverse,
                                               bool return_counts, std::optional<int64_t> dim);
absl::StatusOr<Tensor> OnnxCumsum(const Tensor& self, int64_t axis, bool exclusive, bool reverse);
absl::StatusOr<std::tuple<Tensor, Tensor, Tensor, Tensor>> OnnxUnique(
    const Tensor& self, std::optional<int64_t> axis, bool sorted);

// ---------------------------------------------------------------- special
// (op_kernels_special.cc)

// nll_loss(self, target, weight?, reduction, ignore_index) for inputs of
// min_dim..max_dim dims.
KernelBinder NllLossKernel(int min_dim, int max_dim);
absl::StatusOr<Tensor> CrossEntropyLossKernel(const Tensor& self, const Tensor& target,
                                              const OptTensor& weight, int64_t reduction,
                                              int64_t ignore_index, double label_smoothing);
enum class WindowKind { kHann, kHamming, kBlackman };
// *_window(window_length, [periodic, [alpha, [beta]]], dtype...): `params` after the length.
KernelBinder TorchWindowKernel(WindowKind kind, int params);
absl::StatusOr<Tensor> OnnxWindow(const std::string& op, const Tensor& size,
                                  const std::string& kind, bool periodic, DType dtype);
absl::StatusOr<Tensor> OnnxMelWeightMatrix(const std::string& op, const Tensor& num_mel_bins,
                                           const Tensor& dft_length, const Tensor& sample_rate,
                                           const Tensor& lower_edge_hertz,
                                           const Tensor& upper_edge_hertz, DType dtype);
absl::StatusOr<Tensor> OnnxDft(const std::string& op, const Tensor& input,
                               const OptTensor& dft_length, int64_t axis, bool inverse,
                               bool onesided);
absl::StatusOr<Tensor> OnnxStft(const std::string& op, const Tensor& signal,
                                const Tensor& frame_step, const OptTensor& window,
                                const OptTensor& frame_length, bool onesided);
absl::StatusOr<Tensor> OnnxNonMaxSuppression(const std::string& op, const Tensor& boxes,
                                             const Tensor& scores,
                                             const OptTensor& max_output_boxes_per_class,
                                             const OptTensor& iou_threshold,
                                             const OptTensor& score_threshold,
                                             int64_t center_point_box);
absl::StatusOr<Tensor> OnnxQuantizeLinear(const Tensor& x, const Tensor& scale,
                                          const OptTensor& zero_point, int64_t axis, DType dtype);
absl::StatusOr<Tensor> OnnxTfIdfVectorizer(const Tensor& input, int64_t min_gram_length,
                                           int64_t max_gram_length, int64_t max_skip_count,
                                           const std::string& mode, const Ints& ngram_counts,
                                           const Ints& ngram_indexes, const Ints& pool_int64s,
                                           const std::vector<double>& weights);
absl::StatusOr<ir::IValue> OnnxStringNormalizer(const std::string& op, const ir::IValue& input,
                                                const std::vector<std::string>& stopwords,
                                                bool is_case_sensitive,
                                                const std::string& case_change_action);
absl::StatusOr<ir::IValue> TensorToStringsKernel(const Tensor& self);
absl::StatusOr<Tensor> StringsToTensorKernel(const std::string& op, const ir::IValue& input,
                                             DType dtype);
// rand / randn(size, dtype...) and rand_like / randn_like(self, dtype...).
KernelBinder RandomKernel(bool normal);
KernelBinder RandomLikeKernel(bool normal);
absl::StatusOr<Tensor> BernoulliKernel(const Tensor& self);
absl::StatusOr<Tensor> BernoulliP(const Tensor& self, double p);
absl::StatusOr<Tensor> MultinomialKernel(const Tensor& self, int64_t num_samples,
                                         bool replacement);
absl::StatusOr<Tensor> DropoutKernel(const Tensor& input, double p, bool train);
absl::StatusOr<std::vector<Tensor>> NativeDropout(const Tensor& input, double p,
                                                  std::optional<bool> train);
absl::StatusOr<std::vector<Tensor>> OnnxDropout(const std::string& op, const Tensor& input,
                                                const OptTensor& ratio,
                                                const OptTensor& training_mode,
                                                std::optional<double> seed);
// kiln::random_{uniform,normal}(shape, a, b, dtype, seed?) and the _like forms.
KernelBinder OnnxRandomKernel(bool normal);
KernelBinder OnnxRandomLikeKernel(bool normal);
absl::StatusOr<Tensor> OnnxBernoulli(const Tensor& input, std::optional<DType> dtype,
                                     std::optional<double> seed);
absl::StatusOr<Tensor> OnnxMultinomial(const Tensor& input, int64_t sample_size, DType dtype,
                                       std::optional<double> seed);
absl::StatusOr<std::vector<Tensor>> OnnxAdagrad(const std::string& op, const Tensor& r,
                                                const Tensor& t, const Tensor& x,
                                                const Tensor& g, const Tensor& h,
                                                double decay_factor, double epsilon,
                                                double norm_coefficient);
absl::StatusOr<std::vector<Tensor>> OnnxAdam(const std::string& op, const Tensor& r,
                                             const Tensor& t, const Tensor& x, const Tensor& g,
                                             const Tensor& v, const Tensor& h, double alpha,
                                             double beta, double epsilon,
                                             double norm_coefficient,
                                             double norm_coefficient_post);
absl::StatusOr<std::vector<Tensor>> OnnxMomentum(const std::string& op, const Tensor& r,
                                                 const Tensor& t, const Tensor& x,
                                                 const Tensor& g, const Tensor& v, double alpha,
                                                 double beta, double norm_coefficient,
                                                 bool nesterov);

// ---------------------------------------------------------------- sequences
// (op_kernels_sequence.cc)

using Strings = std::vector<std::string>;
using Doubles = std::vector<double>;

absl::StatusOr<TensorTriple> OnnxLstm(const Tensor& x, const Tensor& w, const Tensor& r,
                                      const OptTensor& b, const OptTensor& sequence_lens,
                                      const OptTensor& initial_h, const OptTensor& initial_c,
                                      const OptTensor& p, const Strings& activations,
                                      const Doubles& activation_alpha,
                                      const Doubles& activation_beta, std::optional<double> clip,
                                      const std::string& direction, int64_t hidden_size,
                                      int64_t input_forget, int64_t layout);
absl::StatusOr<TensorPair> OnnxGru(const Tensor& x, const Tensor& w, const Tensor& r,
                                   const OptTensor& b, const OptTensor& sequence_lens,
                                   const OptTensor& initial_h, const Strings& activations,
                                   const Doubles& activation_alpha,
                                   const Doubles& activation_beta, std::optional<double> clip,
                                   const std::string& direction, int64_t hidden_size,
                                   int64_t linear_before_reset, int64_t layout);
absl::StatusOr<TensorPair> OnnxRnn(const Tensor& x, const Tensor& w, const Tensor& r,
                                   const OptTensor& b, const OptTensor& sequence_lens,
                                   const OptTensor& initial_h, const Strings& activations,
                                   const Doubles& activation_alpha,
                                   const Doubles& activation_beta, std::optional<double> clip,
                                   const std::string& direction, int64_t hidden_size,
                                   int64_t layout);
absl::StatusOr<Tensor> SequenceLength(const std::vector<Tensor>& seq);
absl::StatusOr<std::vector<Tensor>> OnnxSplitToSequence(const Tensor& input,
                                                        const OptTensor& split, int64_t axis,
                                                        int64_t keepdims);
absl::StatusOr<Tensor> OnnxConcatFromSequence(const std::vector<Tensor>& seq, int64_t axis,
                                              int64_t new_axis);
absl::StatusOr<Tensor> OnnxStackScanOutputs(const std::vector<Tensor>& seq, int64_t axis,
                                            int64_t dtype, const Dims& element_shape);
absl::StatusOr<Tensor> OptionalHasElement(const ir::IValue& input);
absl::StatusOr<ir::IValue> OptionalGetElement(const std::string& op, const ir::IValue& input);

// ---------------------------------------------------------------- shape queries
// (op_kernels_sequence.cc)

absl::StatusOr<int64_t> SizeInt(const std::string& op, const Tensor& self, int64_t dim);
absl::StatusOr<std::vector<int64_t>> SizeList(const Tensor& self);
absl::StatusOr<int64_t> DimKernel(const Tensor& self);
absl::StatusOr<int64_t> NumelKernel(const Tensor& self);
absl::StatusOr<int64_t> StrideInt(const std::string& op, const Tensor& self, int64_t dim);
absl::StatusOr<int64_t> StorageOffset(const Tensor& self);
absl::StatusOr<int64_t> LenTensor(const std::string& op, const Tensor& self);
absl::StatusOr<bool> BoolTensor(const std::string& op, const Tensor& self);
absl::StatusOr<int64_t> IntTensor(const std::string& op, const Tensor& self);
absl::StatusOr<std::vector<int64_t>> TensorToIntList(const Tensor& self);
absl::StatusOr<int64_t> TensorToInt(const std::string& op, const Tensor& self);
absl::StatusOr<Tensor> NumelTensor(const Tensor& self);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_OP_KERNELS_H_
