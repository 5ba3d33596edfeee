// Forward convolutions through cuDNN 9's graph (backend) API, the API
// PyTorch drives cuDNN with: engine heuristics and runtime-compiled engines
// the legacy entry points (cudnn_conv.cc) may not reach.
//
// Per shape (dtype, dims, strides, byte alignment of each pointer, pads,
// strides, dilations, groups, layout, TF32): tensor descriptors for x, w, y
// (uids 1, 2, 3), a convolution descriptor (cross-correlation, float
// compute; groups implied by w's channel dim C/groups), one
// CONVOLUTION_FORWARD operation (alpha 1, beta 0) in an operation graph,
// engine configs from heuristics mode A (then FALLBACK when none of A's
// finalizes), the first kGraphPlanCandidates that pass the numerical filter
// finalized as execution plans, each run once as a warm-up and once timed
// with events on the call's own buffers, the fastest kept with its
// workspace size for the life of the process. Under a CUDA graph capture,
// where timing cannot synchronize, the first plan that finalizes is kept
// (under a key of its own: a later eager call still times).
//
// Numerics: engines whose notes say DOWN_CONVERT_INPUTS are never used (as
// PyTorch); for float32 data, engines with the TENSOR_CORE note (TF32) only
// when ConvContext::tf32 (CudaDevice::SetConvTf32, on by default as
// torch.backends.cudnn.allow_tf32). 16-bit data computes in float.
//
// A shape for which no plan finalizes or runs is remembered as refused and
// the caller (CudnnConvolution) takes the legacy path for it from then on.
// KILN_CUDNN_BACKEND=0 turns this path off (legacy only).
#ifndef KILN_BACKENDS_CUDA_CUDNN_GRAPH_CONV_H_
#define KILN_BACKENDS_CUDA_CUDNN_GRAPH_CONV_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/cuda_conv.h"

namespace kiln::backends::cuda {

// False when KILN_CUDNN_BACKEND=0 (read at each call, so tests can switch).
bool CudnnGraphApiEnabled();

// Execution plans finalized and timed per shape (KILN_CUDNN_GRAPH_PLANS
// overrides; at least 1).
inline constexpr int kGraphPlanCandidates = 8;
int GraphPlanCandidates();

// cuDNN's data type for float32, float16 and bfloat16 (both cuDNN APIs).
std::optional<int> CudnnDataType(DType t);
// The address of a view's first element.
CUdeviceptr ViewAddress(const DeviceView& v);

// One tensor of the graph: dims and strides in cuDNN's order (N, C, H, W;
// the filter K, C/groups, R, S) whatever the memory layout.
struct GraphTensorSpec {
  int64_t uid = 0;
  int data_type = 0;  // cudnnDataType_t
  std::vector<int64_t> dims, strides;
  int64_t alignment = 0;  // bytes: the largest power of two <= 16 dividing the address
  bool is_virtual = false;  // an intermediate of the graph (no memory)
};

// A 2-D forward convolution as the graph API takes it (1-D ones have H = R = 1).
struct GraphConvSpec {
  GraphTensorSpec x, w, y;
  std::vector<int64_t> pre_padding, post_padding, stride, dilation;
};

inline constexpr int64_t kGraphUidX = 1, kGraphUidW = 2, kGraphUidY = 3;

// The largest power of two <= 16 that divides `address` (cuDNN's
// BYTE_ALIGNMENT; 16 for address 0).
int64_t ByteAlignment(CUdeviceptr address);

// Strides of size-1 dims do not address memory but cuDNN reads the layout
// from the stride order: each size-1 dim gets the stride it would have in
// `order` (dims outermost to innermost), e.g. NHWC order {0, 2, 3, 1}.
std::vector<int64_t> NormalizeUnitStrides(const std::vector<int64_t>& dims, std::vector<int64_t> strides,
                                          const std::vector<int>& order);

// The spec of `p`; channels-last convolutions order size-1 dims NHWC / KRSC.
// InvalidArgument for a dtype the graph API path does not take or a shape
// that is not 1-D/2-D.
absl::StatusOr<GraphConvSpec> DescribeGraphConv(const ConvProblem& p, bool channels_last);

// The plan cache's key: every fact a plan depends on.
std::string GraphPlanKey(const GraphConvSpec& spec, int device, bool tf32, bool timed);

// Whether an engine with these numerical notes may run a convolution of
// `data_type` (see above).
bool GraphEngineAllowed(const std::vector<int>& numerical_notes, int data_type, bool tf32);

// cuDNN descriptors, destroyed with their owner.
class GraphDescriptor {
 public:
  GraphDescriptor() = default;
  static absl::StatusOr<GraphDescriptor> Create(int type);
  GraphDescriptor(GraphDescriptor&& other) noexcept : d_(other.d_) { other.d_ = nullptr; }
  GraphDescriptor& operator=(GraphDescriptor&& other) noexcept;
  GraphDescriptor(const GraphDescriptor&) = delete;
  GraphDescriptor& operator=(const GraphDescriptor&) = delete;
  ~GraphDescriptor();
  cudnnBackendDescriptor_t get() const { return d_; }
  cudnnBackendDescriptor_t* address() { return &d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The finalized x, w, y tensors, convolution descriptor and forward
// operation of `spec` (no handle or GPU needed).
struct GraphConvOperation {
  GraphDescriptor x, w, y, conv, op;
};
absl::StatusOr<GraphConvOperation> BuildGraphConvOperation(const GraphConvSpec& spec);

// ---- Fused epilogues in the graph (kiln::conv_post_ops)
//
// CONVOLUTION_FORWARD into a virtual float tensor, then one POINTWISE
// operation per step, each into a virtual float tensor, the last into y
// (y's dtype: the only rounding): ADD of the bias (a [1, C, 1, 1] tensor
// ordered like y), then the chain of ir/post_ops.h mapped step by step:
// add of an operand of y's shape (its own dtype and strides) -> ADD, relu ->
// RELU_FWD, sigmoid -> SIGMOID_FWD, tanh -> TANH_FWD, silu -> SWISH_FWD
// (beta 1), gelu -> GELU_FWD (erf), gelu_tanh -> GELU_APPROX_TANH_FWD, elu
// -> ELU_FWD (alpha). Any other step (mul, linear, clamps, hard*, leaky_relu,
// a broadcast operand) is refused: the caller runs the convolution, then
// conv_epilogue's kernel. Plans as for the plain graph (heuristics A then
// FALLBACK, timed), keyed by the convolution's key and the chain; a chain
// whose graph gives no plan is remembered and takes the kernel path.

// Two safeguards, both measured on resnet50 at batch 32 on an NVIDIA H200:
//
// Fenced execution. Each fused graph runs between two 4-byte
// device-to-device copies on the stream (one memcpy node each in a CUDA
// graph), so its kernels cannot overlap the kernels next to them. Without
// the fences the model's output was off by relative L2 0.13-0.23 from the
// kernel path's, with and without CUDA graphs and varying from run to run,
// while every convolution's own output matched the kernel path when its
// plan was checked; a stream synchronize after each fused graph, or a copy
// on either side of it, made the output match (6.5e-5 in float32 with
// TF32, 3.4e-3 in bfloat16). So neighbouring kernels raced with cuDNN's
// runtime-fusion kernels (which ones, and through what, is not known; the
// plain convolution graphs did not need it). The fences cost about 0.1 ms
// of resnet50's 2.2 (float32).
//
// Checked plans. Every candidate plan is checked before it may be kept:
// the caller's kernel path (convolution, then conv_epilogue's kernel)
// writes a reference output once, each candidate's output is compared with
// it on the device (output_difference.h), and candidates further off than
// FusedPlanTolerance are dropped; a graph none of whose candidates passes
// takes the kernel path. No engine failed the check on resnet50; it stays
// because a wrong engine would otherwise go unnoticed until the model's
// output is compared. Checking synchronizes, so under a CUDA graph capture
// a fused graph with no checked plan yet takes the kernel path (not
// remembered: the next eager call plans it).
//
// On unless KILN_CUDNN_GRAPH_FUSED=0 (read at each call).
bool CudnnGraphFusedEnabled();

inline constexpr int64_t kGraphUidBias = 4;
inline constexpr int64_t kGraphUidFirstOperand = 5;  // + the post operand's index
inline constexpr int64_t kGraphUidFirstVirtual = 100;

struct GraphPointwiseStep {
  int mode = 0;              // cudnnPointwiseMode_t
  int64_t operand_uid = 0;   // ADD: the tensor added (bias or an operand); 0 for unary steps
  std::optional<float> elu_alpha;
};

// The epilogue's real tensors (bias, operands, each once) and its steps.
struct GraphEpilogueSpec {
  std::vector<GraphTensorSpec> operands;
  std::vector<GraphPointwiseStep> steps;
};

// The in-graph epilogue of `p` (its bias and post-op chain) for a
// convolution described as `conv`. Unimplemented (naming the step) for a
// chain the graph path does not take, InvalidArgument for malformed input.
absl::StatusOr<GraphEpilogueSpec> DescribeGraphEpilogue(const ConvProblem& p, const GraphConvSpec& conv,
                                                        bool channels_last);

// The epilogue's part of a plan's key.
std::string GraphEpilogueKey(const GraphEpilogueSpec& epilogue);

// The finalized descriptors of a fused graph: the convolution (its y a
// virtual float tensor), the epilogue's tensors, pointwise descriptors and
// operations. ops() lists the operations in graph order.
struct GraphFusedOperation {
  GraphConvOperation conv;
  std::vector<GraphDescriptor> tensors;     // operands, intermediates, y
  std::vector<GraphDescriptor> pointwise;   // one per step
  std::vector<GraphDescriptor> operations;  // one per step
  std::vector<cudnnBackendDescriptor_t> ops() const;
};
absl::StatusOr<GraphFusedOperation> BuildGraphFusedOperation(const GraphConvSpec& conv,
                                                             const GraphEpilogueSpec& epilogue);

// The relative L2 distance from the reference a fused plan may have:
// float32 1e-4 (TF32 5e-3: two TF32 algorithms differ that much), float16
// 1e-2, bfloat16 2e-2 (a rounding step of the output is 0.4-0.8%).
double FusedPlanTolerance(DType dtype, bool tf32);

// Whether `layout`'s elements fill numel() consecutive elements from its
// first one, in some order of its dims (NCHW, NHWC, ...): no gaps, no
// overlaps, no negative strides.
bool IsPackedLayout(const lowering::Layout& layout);

// Writes the kernel path's result of the fused convolution to `y`: a view
// with p.y's sizes and strides at another address.
using FusedConvReference = std::function<absl::Status(const DeviceView& y)>;

// Runs a fused convolution (p.bias and p.post, p.post_operands) as one
// graph. nullopt when this path does not take it (switched off, no cuDNN,
// a chain it does not map, y not packed, no candidate within tolerance of
// `reference`, a graph refused now or before: reasons counted by
// CudnnGraphSummary); the caller then runs conv + epilogue kernel. Sets
// *ctx.used_cudnn, *ctx.used_cudnn_graph and *ctx.used_graph_epilogue.
std::optional<absl::Status> CudnnGraphFusedConvolution(const ConvProblem& p, const ConvContext& ctx,
                                                       const FusedConvReference& reference);

// Runs `p`'s convolution through the graph API (its bias is not added:
// CudnnConvolution adds it). nullopt when this path does not take
// it (switched off, dtype, a shape refused before or now: the reason is
// counted by CudnnGraphSummary); an error only for a failure after the
// convolution ran.
std::optional<absl::Status> CudnnGraphConvolution(const ConvProblem& p, const ConvContext& ctx);

// This process's graph-API plans: shapes planned, shapes refused (run by the
// legacy API) and the first refusal's reason.
struct GraphApiSummary {
  int64_t planned = 0;
  int64_t refused = 0;
  std::string first_refusal;
  // Fused graphs (convolution + epilogue): planned, refused (then run as
  // convolution + epilogue kernel), and the first chain not mapped at all.
  int64_t fused_planned = 0;
  int64_t fused_refused = 0;
  std::string first_fused_refusal;
  // Candidate plans of fused graphs dropped for their output (and the first
  // such: engine and distance).
  int64_t fused_candidates_rejected = 0;
  std::string first_rejected_candidate;
  std::string first_unmapped_chain;
};
GraphApiSummary CudnnGraphSummary();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDNN_GRAPH_CONV_H_
