#include "backends/cuda/cudnn_graph_conv.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cudnn_conv.h"
#include "backends/cuda/output_difference.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

const CudnnApi& Cudnn() { return LoadCudaLibraries().cudnn; }

// A 3-D [N, C, W] layout as 4-D [N, C, 1, W] (the unit dim's stride is
// normalized later); 4-D ones as they are.
absl::StatusOr<std::pair<std::vector<int64_t>, std::vector<int64_t>>> As4d(const lowering::Layout& l,
                                                                          const char* what) {
  if (l.sizes.size() == 4 && l.strides.size() == 4) return std::make_pair(l.sizes, l.strides);
  if (l.sizes.size() == 3 && l.strides.size() == 3) {
    return std::make_pair(std::vector<int64_t>{l.sizes[0], l.sizes[1], 1, l.sizes[2]},
                          std::vector<int64_t>{l.strides[0], l.strides[1], l.sizes[2] * l.strides[2], l.strides[2]});
  }
  return absl::InvalidArgumentError(absl::StrCat("cudnn graph conv: ", what, " is not 3-D or 4-D: ", l.ToString()));
}

// Whether `strides` never increase along `order` over the dims larger than 1.
bool FollowsOrder(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                  const std::vector<int>& order) {
  int64_t outer = std::numeric_limits<int64_t>::max();
  for (int d : order) {
    if (dims[static_cast<size_t>(d)] == 1) continue;
    if (strides[static_cast<size_t>(d)] > outer) return false;
    outer = strides[static_cast<size_t>(d)];
  }
  return true;
}

absl::StatusOr<GraphTensorSpec> TensorSpec(const DeviceView& v, int64_t uid, int data_type, bool channels_last,
                                           const char* what) {
  ASSIGN_OR_RETURN(auto dims_strides, As4d(v.layout, what));
  auto& [dims, strides] = dims_strides;
  for (size_t i = 0; i < 4; ++i) {
    if (dims[i] < 1 || strides[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("cudnn graph conv: ", what, " has an empty or negative dim: ",
                                                     v.layout.ToString()));
    }
  }
  // The layout's own order: channels-last (NHWC / KRSC) or plain, else
  // whatever the strides say (a plain convolution over NHWC buffers).
  const std::vector<int> nchw = {0, 1, 2, 3}, nhwc = {0, 2, 3, 1};
  std::vector<int> order = channels_last ? nhwc : nchw;
  if (!FollowsOrder(dims, strides, order)) {
    order = channels_last ? nchw : nhwc;
    if (!FollowsOrder(dims, strides, order)) {
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return strides[static_cast<size_t>(a)] > strides[static_cast<size_t>(b)];
      });
    }
  }
  GraphTensorSpec t;
  t.uid = uid;
  t.data_type = data_type;
  t.dims = dims;
  t.strides = NormalizeUnitStrides(dims, strides, order);
  t.alignment = ByteAlignment(ViewAddress(v));
  return t;
}

}  // namespace

std::optional<int> CudnnDataType(DType t) {
  switch (t) {
    case DType::kFloat32: return kCudnnDataFloat;
    case DType::kFloat16: return kCudnnDataHalf;
    case DType::kBFloat16: return kCudnnDataBfloat16;
    default: return std::nullopt;
  }
}

CUdeviceptr ViewAddress(const DeviceView& v) {
  return v.base + static_cast<CUdeviceptr>(v.layout.offset) * DTypeSize(v.layout.dtype);
}

bool CudnnGraphApiEnabled() { return !env::CudnnGraphApiOff(); }

bool CudnnGraphFusedEnabled() { return !env::CudnnGraphFusedOff(); }

int GraphPlanCandidates() { return env::CudnnGraphPlans().value_or(kGraphPlanCandidates); }

int64_t ByteAlignment(CUdeviceptr address) {
  int64_t a = 16;
  while (a > 1 && address % static_cast<CUdeviceptr>(a) != 0) a /= 2;
  return a;
}

std::vector<int64_t> NormalizeUnitStrides(const std::vector<int64_t>& dims, std::vector<int64_t> strides,
                                          const std::vector<int>& order) {
  int64_t inner_extent = 1;  // stride * size of the next inner dim in `order`
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const size_t d = static_cast<size_t>(*it);
    if (dims[d] == 1) strides[d] = inner_extent;
    inner_extent = std::max<int64_t>(strides[d] * dims[d], 1);
  }
  return strides;
}

absl::StatusOr<GraphConvSpec> DescribeGraphConv(const ConvProblem& p, bool channels_last) {
  const std::optional<int> dtype = CudnnDataType(p.x.layout.dtype);
  if (!dtype || p.weight.layout.dtype != p.x.layout.dtype || p.y.layout.dtype != p.x.layout.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("cudnn graph conv: dtype ", DTypeName(p.x.layout.dtype),
                                                   " (weight ", DTypeName(p.weight.layout.dtype), ", output ",
                                                   DTypeName(p.y.layout.dtype), ") not float32/float16/bfloat16"));
  }
  if (p.spatial_dims < 1 || p.spatial_dims > 2 || p.groups < 1 || p.cin % p.groups != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cudnn graph conv: ", p.spatial_dims, "-D convolution with ", p.groups, " groups over ", p.cin,
                     " channels"));
  }
  GraphConvSpec s;
  ASSIGN_OR_RETURN(s.x, TensorSpec(p.x, kGraphUidX, *dtype, channels_last, "x"));
  ASSIGN_OR_RETURN(s.w, TensorSpec(p.weight, kGraphUidW, *dtype, channels_last, "weight"));
  ASSIGN_OR_RETURN(s.y, TensorSpec(p.y, kGraphUidY, *dtype, channels_last, "y"));
  const std::vector<int64_t> want_x = {p.n, p.cin, p.h, p.w}, want_w = {p.cout, p.cin / p.groups, p.kh, p.kw},
                             want_y = {p.n, p.cout, p.oh, p.ow};
  if (s.x.dims != want_x || s.w.dims != want_w || s.y.dims != want_y) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cudnn graph conv: operand dims x [", absl::StrJoin(s.x.dims, ","), "] w [", absl::StrJoin(s.w.dims, ","),
        "] y [", absl::StrJoin(s.y.dims, ","), "] do not match the convolution's x [", absl::StrJoin(want_x, ","),
        "] w [", absl::StrJoin(want_w, ","), "] y [", absl::StrJoin(want_y, ","), "]"));
  }
  // Symmetric pads (kiln's convolutions); 1-D ones pad only W.
  s.pre_padding = {p.ph, p.pw};
  s.post_padding = {p.ph, p.pw};
  s.stride = {p.sh, p.sw};
  s.dilation = {p.dh, p.dw};
  return s;
}

std::string GraphPlanKey(const GraphConvSpec& s, int device, bool tf32, bool timed) {
  auto tensor = [](const GraphTensorSpec& t) {
    return absl::StrCat(absl::StrJoin(t.dims, ","), "/", absl::StrJoin(t.strides, ","), "@", t.alignment);
  };
  return absl::StrCat(device, "|", s.x.data_type, "|", tf32 ? "tf32" : "fp32", timed ? "|timed|" : "|first|",
                      tensor(s.x), "|", tensor(s.w), "|", tensor(s.y), "|", absl::StrJoin(s.pre_padding, ","), "|",
                      absl::StrJoin(s.post_padding, ","), "|", absl::StrJoin(s.stride, ","), "|",
                      absl::StrJoin(s.dilation, ","));
}

bool GraphEngineAllowed(const std::vector<int>& notes, int data_type, bool tf32) {
  for (int note : notes) {
    // Inputs converted to a narrower type (e.g. float32 to half) change the result.
    if (note == kCudnnNumericalNoteDownConvertInputs) return false;
    // Tensor cores on float32 data are TF32.
    if (note == kCudnnNumericalNoteTensorCore && data_type == kCudnnDataFloat && !tf32) return false;
  }
  return true;
}

// ---- the epilogue's description

namespace {

// Dims outermost to innermost by stride (ties keep N, C, H, W order): the
// order a per-channel tensor takes to be read like `t`.
std::vector<int> StrideOrder(const GraphTensorSpec& t) {
  std::vector<int> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return t.strides[static_cast<size_t>(a)] > t.strides[static_cast<size_t>(b)];
  });
  return order;
}

// The cuDNN pointwise mode of a unary post-op whose math is post_ops.h's.
std::optional<int> UnaryPointwiseMode(ir::PostOpKind kind) {
  switch (kind) {
    case ir::PostOpKind::kRelu: return kCudnnPointwiseReluFwd;        // max(y, 0): lower clip 0
    case ir::PostOpKind::kSigmoid: return kCudnnPointwiseSigmoidFwd;
    case ir::PostOpKind::kTanh: return kCudnnPointwiseTanhFwd;
    case ir::PostOpKind::kSilu: return kCudnnPointwiseSwishFwd;       // y * sigmoid(beta y), beta 1
    case ir::PostOpKind::kGelu: return kCudnnPointwiseGeluFwd;        // erf form
    case ir::PostOpKind::kGeluTanh: return kCudnnPointwiseGeluApproxTanhFwd;
    case ir::PostOpKind::kElu: return kCudnnPointwiseEluFwd;          // alpha from the step's scalar
    default: return std::nullopt;
  }
}

}  // namespace

absl::StatusOr<GraphEpilogueSpec> DescribeGraphEpilogue(const ConvProblem& p, const GraphConvSpec& conv,
                                                        bool channels_last) {
  GraphEpilogueSpec e;
  if (p.bias) {
    const std::optional<int> dtype = CudnnDataType(p.bias->layout.dtype);
    if (!dtype || p.bias->layout.sizes != std::vector<int64_t>{p.cout} || !p.bias->layout.IsContiguous()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cudnn graph epilogue: bias ", p.bias->layout.ToString(), " is not a contiguous [", p.cout,
                       "] float32/float16/bfloat16 tensor"));
    }
    GraphTensorSpec b;
    b.uid = kGraphUidBias;
    b.data_type = *dtype;
    b.dims = {1, p.cout, 1, 1};
    b.strides = NormalizeUnitStrides(b.dims, {p.cout, 1, 1, 1}, StrideOrder(conv.y));
    b.alignment = ByteAlignment(ViewAddress(*p.bias));
    e.operands.push_back(std::move(b));
    e.steps.push_back(GraphPointwiseStep{kCudnnPointwiseAdd, kGraphUidBias, std::nullopt});
  }
  std::vector<bool> described(p.post_operands.size(), false);
  for (size_t i = 0; i < p.post.size(); ++i) {
    const ir::PostOp& op = p.post[i];
    if (op.kind == ir::PostOpKind::kAdd) {
      if (op.operand < 0 || static_cast<size_t>(op.operand) >= p.post_operands.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("cudnn graph epilogue: step ", i, " (add) reads operand ", op.operand, " of ",
                         p.post_operands.size()));
      }
      const size_t k = static_cast<size_t>(op.operand);
      const DeviceView& t = p.post_operands[k];
      const int64_t uid = kGraphUidFirstOperand + static_cast<int64_t>(k);
      if (!described[k]) {
        const std::optional<int> dtype = CudnnDataType(t.layout.dtype);
        if (!dtype || t.layout.sizes != p.y.layout.sizes) {
          return absl::UnimplementedError(
              absl::StrCat("cudnn graph epilogue: step ", i, " (add) operand ", t.layout.ToString(),
                           " is not a float32/float16/bfloat16 tensor of y's shape (broadcasts stay in the kernel)"));
        }
        for (size_t d = 0; d < t.layout.sizes.size(); ++d) {
          if (t.layout.sizes[d] > 1 && t.layout.strides[d] <= 0) {
            return absl::UnimplementedError(absl::StrCat("cudnn graph epilogue: step ", i,
                                                         " (add) operand broadcasts: ", t.layout.ToString()));
          }
        }
        ASSIGN_OR_RETURN(GraphTensorSpec spec, TensorSpec(t, uid, *dtype, channels_last, "add operand"));
        e.operands.push_back(std::move(spec));
        described[k] = true;
      }
      e.steps.push_back(GraphPointwiseStep{kCudnnPointwiseAdd, uid, std::nullopt});
      continue;
    }
    const std::optional<int> mode = UnaryPointwiseMode(op.kind);
    if (!mode) {
      return absl::UnimplementedError(absl::StrCat("cudnn graph epilogue: step ", i, " (", ir::PostOpName(op.kind),
                                                   ") has no cuDNN pointwise mode here"));
    }
    GraphPointwiseStep step{*mode, 0, std::nullopt};
    if (op.kind == ir::PostOpKind::kElu) {
      if (op.scalars.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat("cudnn graph epilogue: step ", i, " (elu) without its alpha"));
      }
      step.elu_alpha = static_cast<float>(op.scalars[0]);
    }
    e.steps.push_back(step);
  }
  if (e.steps.empty()) return absl::UnimplementedError("cudnn graph epilogue: no bias and an empty chain");
  return e;
}

std::string GraphEpilogueKey(const GraphEpilogueSpec& e) {
  std::string key = "epilogue";
  for (const GraphTensorSpec& t : e.operands) {
    absl::StrAppend(&key, "|t", t.uid, ":", t.data_type, ":", absl::StrJoin(t.dims, ","), "/",
                    absl::StrJoin(t.strides, ","), "@", t.alignment);
  }
  for (const GraphPointwiseStep& s : e.steps) {
    absl::StrAppend(&key, "|p", s.mode, ":", s.operand_uid);
    if (s.elu_alpha) absl::StrAppend(&key, ":", *s.elu_alpha);
  }
  return key;
}

// ---- descriptors

absl::StatusOr<GraphDescriptor> GraphDescriptor::Create(int type) {
  GraphDescriptor d;
  const CudnnApi& c = Cudnn();
  if (c.cudnnBackendCreateDescriptor == nullptr) return absl::UnavailableError("cuDNN's graph API is not loaded");
  RETURN_IF_ERROR(CudnnCheck(c.cudnnBackendCreateDescriptor(type, &d.d_),
                             absl::StrCat("cudnnBackendCreateDescriptor(", type, ")").c_str()));
  return d;
}

GraphDescriptor& GraphDescriptor::operator=(GraphDescriptor&& other) noexcept {
  if (this != &other) {
    if (d_ != nullptr) Cudnn().cudnnBackendDestroyDescriptor(d_);
    d_ = other.d_;
    other.d_ = nullptr;
  }
  return *this;
}

GraphDescriptor::~GraphDescriptor() {
  if (d_ != nullptr) Cudnn().cudnnBackendDestroyDescriptor(d_);
}

namespace {

absl::Status Set(const GraphDescriptor& d, int attribute, int type, int64_t count, const void* values,
                 const char* what) {
  return CudnnCheck(Cudnn().cudnnBackendSetAttribute(d.get(), attribute, type, count, values),
                    absl::StrCat("cudnnBackendSetAttribute(", what, ")").c_str());
}

absl::Status Finalize(const GraphDescriptor& d, const char* what) {
  return CudnnCheck(Cudnn().cudnnBackendFinalize(d.get()), absl::StrCat("cudnnBackendFinalize(", what, ")").c_str());
}

absl::StatusOr<GraphDescriptor> MakeTensor(const GraphTensorSpec& t) {
  ASSIGN_OR_RETURN(GraphDescriptor d, GraphDescriptor::Create(kCudnnBackendTensorDescriptor));
  const int64_t rank = static_cast<int64_t>(t.dims.size());
  RETURN_IF_ERROR(Set(d, kCudnnAttrTensorDataType, kCudnnTypeDataType, 1, &t.data_type, "tensor data type"));
  RETURN_IF_ERROR(Set(d, kCudnnAttrTensorDimensions, kCudnnTypeInt64, rank, t.dims.data(), "tensor dims"));
  RETURN_IF_ERROR(Set(d, kCudnnAttrTensorStrides, kCudnnTypeInt64, rank, t.strides.data(), "tensor strides"));
  RETURN_IF_ERROR(Set(d, kCudnnAttrTensorUniqueId, kCudnnTypeInt64, 1, &t.uid, "tensor uid"));
  RETURN_IF_ERROR(Set(d, kCudnnAttrTensorByteAlignment, kCudnnTypeInt64, 1, &t.alignment, "tensor alignment"));
  if (t.is_virtual) {
    const bool is_virtual = true;
    RETURN_IF_ERROR(Set(d, kCudnnAttrTensorIsVirtual, kCudnnTypeBoolean, 1, &is_virtual, "tensor virtual"));
  }
  RETURN_IF_ERROR(Finalize(d, "tensor"));
  return d;
}

}  // namespace

absl::StatusOr<GraphConvOperation> BuildGraphConvOperation(const GraphConvSpec& s) {
  GraphConvOperation g;
  ASSIGN_OR_RETURN(g.x, MakeTensor(s.x));
  ASSIGN_OR_RETURN(g.w, MakeTensor(s.w));
  ASSIGN_OR_RETURN(g.y, MakeTensor(s.y));
  ASSIGN_OR_RETURN(g.conv, GraphDescriptor::Create(kCudnnBackendConvolutionDescriptor));
  const int64_t spatial = static_cast<int64_t>(s.stride.size());
  const int compute = kCudnnDataFloat;  // float accumulation for every data type
  const int mode = kCudnnCrossCorrelation;
  RETURN_IF_ERROR(Set(g.conv, kCudnnAttrConvolutionSpatialDims, kCudnnTypeInt64, 1, &spatial, "spatial dims"));
  RETURN_IF_ERROR(Set(g.conv, kCudnnAttrConvolutionCompType, kCudnnTypeDataType, 1, &compute, "compute type"));
  RETURN_IF_ERROR(Set(g.conv, kCudnnAttrConvolutionConvMode, kCudnnTypeConvolutionMode, 1, &mode, "mode"));
  RETURN_IF_ERROR(
      Set(g.conv, kCudnnAttrConvolutionDilations, kCudnnTypeInt64, spatial, s.dilation.data(), "dilations"));
  RETURN_IF_ERROR(
      Set(g.conv, kCudnnAttrConvolutionFilterStrides, kCudnnTypeInt64, spatial, s.stride.data(), "strides"));
  RETURN_IF_ERROR(
      Set(g.conv, kCudnnAttrConvolutionPrePaddings, kCudnnTypeInt64, spatial, s.pre_padding.data(), "pre pads"));
  RETURN_IF_ERROR(
      Set(g.conv, kCudnnAttrConvolutionPostPaddings, kCudnnTypeInt64, spatial, s.post_padding.data(), "post pads"));
  RETURN_IF_ERROR(Finalize(g.conv, "convolution"));
  ASSIGN_OR_RETURN(g.op, GraphDescriptor::Create(kCudnnBackendOperationConvolutionForwardDescriptor));
  const float alpha = 1.0f, beta = 0.0f;  // float scalars for float, half and bfloat16 data
  RETURN_IF_ERROR(
      Set(g.op, kCudnnAttrOperationConvolutionForwardX, kCudnnTypeBackendDescriptor, 1, g.x.address(), "op x"));
  RETURN_IF_ERROR(
      Set(g.op, kCudnnAttrOperationConvolutionForwardW, kCudnnTypeBackendDescriptor, 1, g.w.address(), "op w"));
  RETURN_IF_ERROR(
      Set(g.op, kCudnnAttrOperationConvolutionForwardY, kCudnnTypeBackendDescriptor, 1, g.y.address(), "op y"));
  RETURN_IF_ERROR(Set(g.op, kCudnnAttrOperationConvolutionForwardConvDesc, kCudnnTypeBackendDescriptor, 1,
                      g.conv.address(), "op conv"));
  RETURN_IF_ERROR(Set(g.op, kCudnnAttrOperationConvolutionForwardAlpha, kCudnnTypeFloat, 1, &alpha, "op alpha"));
  RETURN_IF_ERROR(Set(g.op, kCudnnAttrOperationConvolutionForwardBeta, kCudnnTypeFloat, 1, &beta, "op beta"));
  RETURN_IF_ERROR(Finalize(g.op, "convolution forward operation"));
  return g;
}

std::vector<cudnnBackendDescriptor_t> GraphFusedOperation::ops() const {
  std::vector<cudnnBackendDescriptor_t> out = {conv.op.get()};
  for (const GraphDescriptor& d : operations) out.push_back(d.get());
  return out;
}

absl::StatusOr<GraphFusedOperation> BuildGraphFusedOperation(const GraphConvSpec& conv,
                                                             const GraphEpilogueSpec& epilogue) {
  if (epilogue.steps.empty()) return absl::InvalidArgumentError("cudnn graph epilogue: no steps");
  // Intermediates: float, y's dims and strides, no memory.
  auto intermediate = [&](size_t i) {
    GraphTensorSpec t = conv.y;
    t.uid = kGraphUidFirstVirtual + static_cast<int64_t>(i);
    t.data_type = kCudnnDataFloat;
    t.alignment = 16;
    t.is_virtual = true;
    return t;
  };
  GraphFusedOperation g;
  GraphConvSpec virtual_out = conv;
  virtual_out.y = intermediate(0);
  ASSIGN_OR_RETURN(g.conv, BuildGraphConvOperation(virtual_out));
  std::map<int64_t, size_t> operand_index;  // uid -> g.tensors
  for (const GraphTensorSpec& t : epilogue.operands) {
    ASSIGN_OR_RETURN(GraphDescriptor d, MakeTensor(t));
    operand_index[t.uid] = g.tensors.size();
    g.tensors.push_back(std::move(d));
  }
  // Raw handles: moving a GraphDescriptor (vector growth) keeps its handle.
  cudnnBackendDescriptor_t in = g.conv.y.get();
  for (size_t i = 0; i < epilogue.steps.size(); ++i) {
    const GraphPointwiseStep& step = epilogue.steps[i];
    const bool last = i + 1 == epilogue.steps.size();
    ASSIGN_OR_RETURN(GraphDescriptor out, MakeTensor(last ? conv.y : intermediate(i + 1)));
    cudnnBackendDescriptor_t y_raw = out.get();
    g.tensors.push_back(std::move(out));
    ASSIGN_OR_RETURN(GraphDescriptor pw, GraphDescriptor::Create(kCudnnBackendPointwiseDescriptor));
    const int math = kCudnnDataFloat;
    RETURN_IF_ERROR(Set(pw, kCudnnAttrPointwiseMode, kCudnnTypePointwiseMode, 1, &step.mode, "pointwise mode"));
    RETURN_IF_ERROR(Set(pw, kCudnnAttrPointwiseMathPrec, kCudnnTypeDataType, 1, &math, "pointwise precision"));
    if (step.elu_alpha) {
      const float alpha = *step.elu_alpha;  // float with float math precision
      RETURN_IF_ERROR(Set(pw, kCudnnAttrPointwiseEluAlpha, kCudnnTypeFloat, 1, &alpha, "elu alpha"));
    }
    RETURN_IF_ERROR(Finalize(pw, "pointwise descriptor"));
    ASSIGN_OR_RETURN(GraphDescriptor op, GraphDescriptor::Create(kCudnnBackendOperationPointwiseDescriptor));
    cudnnBackendDescriptor_t pw_raw = pw.get(), x_raw = in;
    RETURN_IF_ERROR(
        Set(op, kCudnnAttrOperationPointwisePwDescriptor, kCudnnTypeBackendDescriptor, 1, &pw_raw, "pointwise desc"));
    RETURN_IF_ERROR(Set(op, kCudnnAttrOperationPointwiseXDesc, kCudnnTypeBackendDescriptor, 1, &x_raw, "pointwise x"));
    if (step.operand_uid != 0) {
      auto it = operand_index.find(step.operand_uid);
      if (it == operand_index.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("cudnn graph epilogue: step ", i, " reads tensor ", step.operand_uid, ", not described"));
      }
      cudnnBackendDescriptor_t b_raw = g.tensors[it->second].get();
      RETURN_IF_ERROR(
          Set(op, kCudnnAttrOperationPointwiseBDesc, kCudnnTypeBackendDescriptor, 1, &b_raw, "pointwise b"));
    }
    RETURN_IF_ERROR(Set(op, kCudnnAttrOperationPointwiseYDesc, kCudnnTypeBackendDescriptor, 1, &y_raw, "pointwise y"));
    RETURN_IF_ERROR(Finalize(op, "pointwise operation"));
    g.pointwise.push_back(std::move(pw));
    g.operations.push_back(std::move(op));
    in = y_raw;
  }
  return g;
}

namespace {

struct Candidate {
  GraphDescriptor config;
  GraphDescriptor plan;  // destroyed before its config
  int64_t workspace = 0;
  int64_t engine = -1;
};

// The first `limit` engine configs of heuristics `mode` that the numerical
// filter allows and that finalize as execution plans on `handle`, within the
// workspace limit. Reasons for skipped configs go to *skipped.
absl::StatusOr<std::vector<Candidate>> PlanCandidates(cudnnHandle_t handle, const GraphDescriptor& graph, int mode,
                                                      int data_type, bool tf32, int limit, std::string* skipped) {
  const CudnnApi& c = Cudnn();
  ASSIGN_OR_RETURN(GraphDescriptor heur, GraphDescriptor::Create(kCudnnBackendEngineHeurDescriptor));
  cudnnBackendDescriptor_t g = graph.get();
  RETURN_IF_ERROR(Set(heur, kCudnnAttrEngineheurOperationGraph, kCudnnTypeBackendDescriptor, 1, &g, "heur graph"));
  RETURN_IF_ERROR(Set(heur, kCudnnAttrEngineheurMode, kCudnnTypeHeurMode, 1, &mode, "heur mode"));
  RETURN_IF_ERROR(Finalize(heur, "engine heuristics"));
  int64_t count = 0;
  RETURN_IF_ERROR(
      CudnnCheck(c.cudnnBackendGetAttribute(heur.get(), kCudnnAttrEngineheurResults, kCudnnTypeBackendDescriptor, 0,
                                            &count, nullptr),
                 "cudnnBackendGetAttribute(heuristic result count)"));
  count = std::min<int64_t>(count, 64);
  std::vector<GraphDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(GraphDescriptor d, GraphDescriptor::Create(kCudnnBackendEngineCfgDescriptor));
    raw.push_back(d.get());
    configs.push_back(std::move(d));
  }
  int64_t got = 0;
  if (count > 0) {
    RETURN_IF_ERROR(CudnnCheck(c.cudnnBackendGetAttribute(heur.get(), kCudnnAttrEngineheurResults,
                                                          kCudnnTypeBackendDescriptor, count, &got, raw.data()),
                               "cudnnBackendGetAttribute(heuristic results)"));
  }
  std::vector<Candidate> out;
  for (int64_t i = 0; i < std::min(got, count) && static_cast<int>(out.size()) < limit; ++i) {
    Candidate cand;
    cand.config = std::move(configs[static_cast<size_t>(i)]);
    ASSIGN_OR_RETURN(GraphDescriptor engine, GraphDescriptor::Create(kCudnnBackendEngineDescriptor));
    int64_t n = 0;
    absl::Status s = CudnnCheck(c.cudnnBackendGetAttribute(cand.config.get(), kCudnnAttrEnginecfgEngine,
                                                           kCudnnTypeBackendDescriptor, 1, &n, engine.address()),
                                "cudnnBackendGetAttribute(engine config's engine)");
    int notes[32] = {};
    int64_t note_count = 0;
    if (s.ok()) {
      s = CudnnCheck(c.cudnnBackendGetAttribute(engine.get(), kCudnnAttrEngineNumericalNote, kCudnnTypeNumericalNote,
                                                32, &note_count, notes),
                     "cudnnBackendGetAttribute(numerical notes)");
    }
    if (s.ok()) {
      s = CudnnCheck(c.cudnnBackendGetAttribute(engine.get(), kCudnnAttrEngineGlobalIndex, kCudnnTypeInt64, 1, &n,
                                                &cand.engine),
                     "cudnnBackendGetAttribute(engine index)");
    }
    if (!s.ok()) {
      absl::StrAppend(skipped, skipped->empty() ? "" : "; ", s.message());
      continue;
    }
    const std::vector<int> note_list(notes, notes + std::clamp<int64_t>(note_count, 0, 32));
    if (!GraphEngineAllowed(note_list, data_type, tf32)) continue;
    ASSIGN_OR_RETURN(cand.plan, GraphDescriptor::Create(kCudnnBackendExecutionPlanDescriptor));
    cudnnBackendDescriptor_t cfg = cand.config.get();
    s = Set(cand.plan, kCudnnAttrExecutionPlanHandle, kCudnnTypeHandle, 1, &handle, "plan handle");
    if (s.ok()) {
      s = Set(cand.plan, kCudnnAttrExecutionPlanEngineConfig, kCudnnTypeBackendDescriptor, 1, &cfg, "plan config");
    }
    if (s.ok()) s = Finalize(cand.plan, "execution plan");
    if (s.ok()) {
      s = CudnnCheck(c.cudnnBackendGetAttribute(cand.plan.get(), kCudnnAttrExecutionPlanWorkspaceSize,
                                                kCudnnTypeInt64, 1, &n, &cand.workspace),
                     "cudnnBackendGetAttribute(workspace size)");
    }
    if (s.ok() && (cand.workspace < 0 || cand.workspace > kCudnnFindWorkspaceBytes)) {
      s = absl::ResourceExhaustedError(absl::StrCat("engine ", cand.engine, " wants ", cand.workspace,
                                                    " bytes of workspace"));
    }
    if (!s.ok()) {
      absl::StrAppend(skipped, skipped->empty() ? "" : "; ", "engine ", cand.engine, ": ", s.message());
      continue;
    }
    out.push_back(std::move(cand));
  }
  return out;
}

// One finalized execution plan and what it needs kept alive (members
// destroyed in reverse: the plan before the graph before the operations).
struct GraphPlan {
  GraphConvOperation operation;  // a plain convolution's
  GraphFusedOperation fused;     // a fused graph's
  GraphDescriptor graph;
  GraphDescriptor config;
  GraphDescriptor plan;
  int64_t workspace = 0;
  int64_t engine = -1;  // cuDNN's global engine index
  float ms = -1;        // the timed run; -1 when not timed (capture)
};

// The variant pack's tensors: uid and device address of each.
struct GraphBuffers {
  std::vector<int64_t> uids;
  std::vector<void*> pointers;
  void Add(int64_t uid, const DeviceView& v) {
    uids.push_back(uid);
    pointers.push_back(reinterpret_cast<void*>(ViewAddress(v)));
  }
};

GraphBuffers ConvBuffers(const ConvProblem& p) {
  GraphBuffers b;
  b.Add(kGraphUidX, p.x);
  b.Add(kGraphUidW, p.weight);
  b.Add(kGraphUidY, p.y);
  return b;
}

// x, w, y and the epilogue's bias and operands (by their uids).
absl::StatusOr<GraphBuffers> FusedBuffers(const ConvProblem& p, const GraphEpilogueSpec& e) {
  GraphBuffers b = ConvBuffers(p);
  for (const GraphTensorSpec& t : e.operands) {
    if (t.uid == kGraphUidBias && p.bias) {
      b.Add(t.uid, *p.bias);
      continue;
    }
    const int64_t k = t.uid - kGraphUidFirstOperand;
    if (k < 0 || static_cast<size_t>(k) >= p.post_operands.size()) {
      return absl::InvalidArgumentError(absl::StrCat("cudnn graph epilogue: tensor uid ", t.uid, " has no buffer"));
    }
    b.Add(t.uid, p.post_operands[static_cast<size_t>(k)]);
  }
  return b;
}

absl::Status Execute(cudnnHandle_t handle, const GraphDescriptor& plan, const GraphBuffers& buffers,
                     CUdeviceptr workspace) {
  ASSIGN_OR_RETURN(GraphDescriptor pack, GraphDescriptor::Create(kCudnnBackendVariantPackDescriptor));
  const int64_t n = static_cast<int64_t>(buffers.uids.size());
  void* ws = reinterpret_cast<void*>(workspace);
  RETURN_IF_ERROR(Set(pack, kCudnnAttrVariantPackUniqueIds, kCudnnTypeInt64, n, buffers.uids.data(),
                      "variant pack uids"));
  RETURN_IF_ERROR(Set(pack, kCudnnAttrVariantPackDataPointers, kCudnnTypeVoidPtr, n, buffers.pointers.data(),
                      "variant pack data"));
  RETURN_IF_ERROR(Set(pack, kCudnnAttrVariantPackWorkspace, kCudnnTypeVoidPtr, 1, &ws, "variant pack workspace"));
  RETURN_IF_ERROR(Finalize(pack, "variant pack"));
  return CudnnCheck(Cudnn().cudnnBackendExecute(handle, plan.get(), pack.get()), "cudnnBackendExecute");
}

// One warm-up run, then one run timed with events on ctx.stream (as
// cudnnFindConvolutionForwardAlgorithmEx times its candidates).
absl::StatusOr<float> TimePlan(const Candidate& cand, const GraphBuffers& buffers, const ConvContext& ctx,
                               CUdeviceptr workspace) {
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  RETURN_IF_ERROR(Execute(ctx.cudnn, cand.plan, buffers, workspace));
  CUevent start = nullptr, stop = nullptr;
  RETURN_IF_ERROR(CuCheck(d.cuEventCreate(&start, kEventDefault), "cuEventCreate"));
  absl::Status s = CuCheck(d.cuEventCreate(&stop, kEventDefault), "cuEventCreate");
  float ms = 0;
  if (s.ok()) s = CuCheck(d.cuEventRecord(start, ctx.stream), "cuEventRecord");
  if (s.ok()) s = Execute(ctx.cudnn, cand.plan, buffers, workspace);
  if (s.ok()) s = CuCheck(d.cuEventRecord(stop, ctx.stream), "cuEventRecord");
  if (s.ok()) s = CuCheck(d.cuEventSynchronize(stop), "cuEventSynchronize");
  if (s.ok()) s = CuCheck(d.cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  d.cuEventDestroy(start);
  if (stop != nullptr) d.cuEventDestroy(stop);
  RETURN_IF_ERROR(s);
  return ms;
}

// A 4-byte device-to-device copy on ctx's stream (one memcpy node in a
// CUDA graph): a stream operation that is not a kernel, so that the
// kernels before and after it cannot overlap. Fused graphs run between
// two of these (see the header for why). The bytes copied are 64 per
// device, allocated (and zeroed) on the first eager call and kept for the
// process; under a capture before that, FailedPrecondition.
absl::Status SeparateOnStream(const ConvContext& ctx) {
  static std::mutex mu;
  static std::map<int, CUdeviceptr>* buffers = new std::map<int, CUdeviceptr>();  // never freed: see GraphPlans
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  CUdeviceptr b = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = buffers->find(ctx.device_index);
    if (it == buffers->end()) {
      if (ctx.capturing) return absl::FailedPreconditionError("stream separator: not allocated before the capture");
      RETURN_IF_ERROR(CuCheck(d.cuMemAlloc(&b, 64), "cuMemAlloc (stream separator)"));
      static const unsigned char kZeros[64] = {};
      RETURN_IF_ERROR(CuCheck(d.cuMemcpyHtoDAsync(b, kZeros, sizeof(kZeros), ctx.stream), "cuMemcpyHtoDAsync"));
      RETURN_IF_ERROR(CuCheck(d.cuStreamSynchronize(ctx.stream), "cuStreamSynchronize"));
      it = buffers->emplace(ctx.device_index, b).first;
    }
    b = it->second;
  }
  return CuCheck(d.cuMemcpyDtoDAsync(b + 32, b, 4, ctx.stream), "cuMemcpyDtoDAsync (stream separator)");
}

// What a fused graph's candidates are checked against (see the header),
// and what the check found.
struct PlanCheck {
  CUdeviceptr y = 0;          // the candidate's output: `elements` packed
  CUdeviceptr reference = 0;  // the kernel path's, laid out alike
  CUdeviceptr partials = 0;   // kDifferencePartialBytes
  int64_t elements = 0;
  DType dtype = DType::kFloat32;
  double tolerance = 0;
  // Out: candidates dropped for their output, the first one's description.
  int64_t rejected = 0;
  std::string first_rejection;
};

// Finishes `plan` over the finalized operations `ops`: the operation
// graph, heuristics mode A, then FALLBACK when none of A's configs gives a
// plan; timed (`timed`) on `buffers` or the first one. With `check`, a
// timed candidate whose output is off is not kept.
absl::Status PlanGraph(GraphPlan& plan, const std::vector<cudnnBackendDescriptor_t>& ops, int data_type,
                       const GraphBuffers& buffers, const ConvContext& ctx, bool timed, PlanCheck* check) {
  ASSIGN_OR_RETURN(plan.graph, GraphDescriptor::Create(kCudnnBackendOperationGraphDescriptor));
  cudnnHandle_t handle = ctx.cudnn;
  RETURN_IF_ERROR(Set(plan.graph, kCudnnAttrOperationgraphOps, kCudnnTypeBackendDescriptor,
                      static_cast<int64_t>(ops.size()), ops.data(), "graph ops"));
  RETURN_IF_ERROR(Set(plan.graph, kCudnnAttrOperationgraphHandle, kCudnnTypeHandle, 1, &handle, "graph handle"));
  RETURN_IF_ERROR(Finalize(plan.graph, "operation graph"));
  const int limit = timed ? GraphPlanCandidates() : 1;
  std::string skipped;
  std::vector<Candidate> candidates;
  for (int mode : {kCudnnHeurModeA, kCudnnHeurModeFallback}) {
    absl::StatusOr<std::vector<Candidate>> found =
        PlanCandidates(ctx.cudnn, plan.graph, mode, data_type, ctx.tf32, limit, &skipped);
    if (!found.ok()) {
      absl::StrAppend(&skipped, skipped.empty() ? "" : "; ", "heuristics mode ", mode, ": ", found.status().message());
      continue;
    }
    candidates = std::move(*found);
    if (!candidates.empty()) break;
  }
  if (candidates.empty()) {
    return absl::NotFoundError(absl::StrCat("no engine config of heuristics A or FALLBACK finalized",
                                            skipped.empty() ? "" : ": ", skipped));
  }
  size_t best = 0;
  float best_ms = -1;
  if (timed) {
    int64_t most = 0;
    for (const Candidate& c : candidates) most = std::max(most, c.workspace);
    CUdeviceptr ws = 0;
    if (most > 0) {
      ASSIGN_OR_RETURN(ws, ctx.scratch(most));
    }
    std::string failures;
    for (size_t i = 0; i < candidates.size(); ++i) {
      // A fused candidate is fenced from the reference's kernels as it will
      // be from its neighbours when it runs.
      if (check != nullptr) RETURN_IF_ERROR(SeparateOnStream(ctx));
      absl::StatusOr<float> ms = TimePlan(candidates[i], buffers, ctx, ws);
      if (!ms.ok()) {
        absl::StrAppend(&failures, failures.empty() ? "" : "; ", "engine ", candidates[i].engine, ": ",
                        ms.status().message());
        continue;
      }
      if (check != nullptr) {
        ASSIGN_OR_RETURN(OutputDifference diff,
                         DeviceDifference(check->y, check->reference, check->elements, check->dtype, check->partials,
                                          ctx.device_index, ctx.stream));
        if (env::CudnnLog()) {
          std::fprintf(stderr,
                       "[cudnn graph] fused candidate engine %lld: workspace %lld bytes, %.4f ms, relative L2 %.3g, "
                       "%lld finite/non-finite mismatches\n",
                       static_cast<long long>(candidates[i].engine),     // NOLINT(runtime/int)
                       static_cast<long long>(candidates[i].workspace),  // NOLINT(runtime/int)
                       static_cast<double>(*ms), diff.relative_l2,
                       static_cast<long long>(diff.finiteness_mismatches));  // NOLINT(runtime/int)
        }
        if (diff.finiteness_mismatches > 0 || !(diff.relative_l2 <= check->tolerance)) {
          const std::string why =
              absl::StrCat("engine ", candidates[i].engine, ": output at relative L2 ", diff.relative_l2, " with ",
                           diff.finiteness_mismatches, " finite/non-finite mismatches (tolerance ", check->tolerance,
                           ")");
          if (check->rejected++ == 0) check->first_rejection = why;
          absl::StrAppend(&failures, failures.empty() ? "" : "; ", why);
          continue;
        }
      }
      if (best_ms < 0 || *ms < best_ms) {
        best = i;
        best_ms = *ms;
      }
    }
    if (best_ms < 0) return absl::InternalError(absl::StrCat("no execution plan ran and passed: ", failures));
  }
  plan.config = std::move(candidates[best].config);
  plan.plan = std::move(candidates[best].plan);
  plan.workspace = candidates[best].workspace;
  plan.engine = candidates[best].engine;
  plan.ms = best_ms;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GraphPlan>> MakeGraphPlan(const GraphConvSpec& spec, const ConvProblem& p,
                                                         const ConvContext& ctx, bool timed) {
  auto plan = std::make_unique<GraphPlan>();
  ASSIGN_OR_RETURN(plan->operation, BuildGraphConvOperation(spec));
  RETURN_IF_ERROR(
      PlanGraph(*plan, {plan->operation.op.get()}, spec.x.data_type, ConvBuffers(p), ctx, timed, /*check=*/nullptr));
  return plan;
}

absl::StatusOr<std::unique_ptr<GraphPlan>> MakeFusedGraphPlan(const GraphConvSpec& spec,
                                                              const GraphEpilogueSpec& epilogue, const ConvProblem& p,
                                                              const ConvContext& ctx, PlanCheck& check) {
  auto plan = std::make_unique<GraphPlan>();
  ASSIGN_OR_RETURN(plan->fused, BuildGraphFusedOperation(spec, epilogue));
  ASSIGN_OR_RETURN(GraphBuffers buffers, FusedBuffers(p, epilogue));
  RETURN_IF_ERROR(PlanGraph(*plan, plan->fused.ops(), spec.x.data_type, buffers, ctx, /*timed=*/true, &check));
  return plan;
}

// Plans by key; a null plan marks a refused shape (or shape and chain).
struct GraphPlanCache {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<GraphPlan>> plans;
  GraphApiSummary summary;
};

GraphPlanCache& GraphPlans() {
  static GraphPlanCache* cache = new GraphPlanCache();  // never destroyed: cuDNN may be gone at exit
  return *cache;
}

void Refuse(GraphPlanCache& cache, const std::string& key, const GraphConvSpec& spec, const absl::Status& why,
            bool fused) {
  cache.plans[key] = nullptr;
  ++(fused ? cache.summary.fused_refused : cache.summary.refused);
  std::string& first = fused ? cache.summary.first_fused_refusal : cache.summary.first_refusal;
  if (first.empty()) {
    first = absl::StrCat("x [", absl::StrJoin(spec.x.dims, ","), "] w [", absl::StrJoin(spec.w.dims, ","), "]: ",
                         why.message());
  }
  if (env::CudnnLog()) {
    std::fprintf(stderr, "[cudnn graph] refused %s: %s\n", key.c_str(), std::string(why.message()).c_str());
  }
}

// The cache's key of a plan for `spec` + `key_tail` on ctx's handle.
// Plans are finalized for a handle (a handle per device and stream): one
// executes only with its own.
std::string PlanKey(const ConvContext& ctx, const GraphConvSpec& spec, const std::string& key_tail, bool timed) {
  return absl::StrCat(reinterpret_cast<uintptr_t>(ctx.cudnn), "|",
                      GraphPlanKey(spec, ctx.device_index, ctx.tf32, timed), key_tail);
}

// The cached plan for `key_tail` on ctx's handle (made on first use: timed,
// or the first that finalizes under a capture); nullptr when refused, now
// or before. *key is the entry's key. The cache's lock must be held.
const GraphPlan* FindOrMakePlan(GraphPlanCache& cache, const ConvContext& ctx, const GraphConvSpec& spec,
                                const std::string& key_tail, bool fused,
                                const std::function<absl::StatusOr<std::unique_ptr<GraphPlan>>(bool timed)>& make,
                                std::string* key) {
  const std::string timed_key = PlanKey(ctx, spec, key_tail, /*timed=*/true);
  const std::string first_key = PlanKey(ctx, spec, key_tail, /*timed=*/false);
  auto it = cache.plans.find(timed_key);
  if (it == cache.plans.end() && ctx.capturing) it = cache.plans.find(first_key);
  if (it == cache.plans.end()) {
    // Timing synchronizes, which a capture cannot: the first plan then.
    const bool timed = !ctx.capturing;
    *key = timed ? timed_key : first_key;
    absl::StatusOr<std::unique_ptr<GraphPlan>> made = make(timed);
    if (!made.ok()) {
      Refuse(cache, *key, spec, made.status(), fused);
      return nullptr;
    }
    ++(fused ? cache.summary.fused_planned : cache.summary.planned);
    if (env::CudnnLog()) {
      std::fprintf(stderr, "[cudnn graph] %s: engine %lld, workspace %lld bytes, %.4f ms\n", key->c_str(),
                   static_cast<long long>((*made)->engine), static_cast<long long>((*made)->workspace),  // NOLINT
                   static_cast<double>((*made)->ms));
    }
    it = cache.plans.emplace(*key, std::move(*made)).first;
  }
  *key = it->first;
  return it->second.get();
}

// Runs `plan` on `buffers`; nullopt (the key refused from now on) when
// cuDNN would not execute it: nothing ran, the caller's path takes it.
std::optional<absl::Status> RunPlan(GraphPlanCache& cache, const GraphPlan& plan, const std::string& key,
                                    const GraphConvSpec& spec, const GraphBuffers& buffers, const ConvContext& ctx,
                                    bool fused) {
  CUdeviceptr ws = 0;
  if (plan.workspace > 0) {
    absl::StatusOr<CUdeviceptr> got = ctx.scratch(plan.workspace);
    if (!got.ok()) return got.status();
    ws = *got;
  }
  absl::Status s = Execute(ctx.cudnn, plan.plan, buffers, ws);
  if (!s.ok()) {
    Refuse(cache, key, spec, s, fused);
    return std::nullopt;
  }
  return absl::OkStatus();
}

// Device memory for a fused graph's reference output and the difference's
// partial sums, freed with its owner once `stream`'s work is done.
class ReferenceOutput {
 public:
  explicit ReferenceOutput(CUstream stream) : stream_(stream) {}
  ReferenceOutput(const ReferenceOutput&) = delete;
  ReferenceOutput& operator=(const ReferenceOutput&) = delete;
  ~ReferenceOutput() {
    if (base_ == 0) return;
    const CudaDriverApi& d = LoadCudaLibraries().driver;
    (void)d.cuStreamSynchronize(stream_);
    (void)d.cuMemFree(base_);
  }
  absl::StatusOr<CUdeviceptr> Allocate(int64_t bytes) {
    RETURN_IF_ERROR(CuCheck(LoadCudaLibraries().driver.cuMemAlloc(&base_, static_cast<size_t>(bytes)),
                            "cuMemAlloc (fused plan reference)"));
    return base_;
  }

 private:
  CUstream stream_;
  CUdeviceptr base_ = 0;
};

// The kernel path's output of `p` in `out`'s memory, and `check` set to
// compare candidates with it. Unimplemented for a y that is not packed.
absl::Status WriteReference(const ConvProblem& p, const ConvContext& ctx, const FusedConvReference& reference,
                            ReferenceOutput& out, PlanCheck& check) {
  if (!reference) return absl::FailedPreconditionError("cudnn graph epilogue: no reference to check plans with");
  const lowering::Layout& y = p.y.layout;
  if (!IsPackedLayout(y)) {
    return absl::UnimplementedError(
        absl::StrCat("cudnn graph epilogue: y ", y.ToString(), " is not packed (fused plans are checked on packed outputs)"));
  }
  const int64_t n = y.numel();
  const int64_t data_bytes = (n * static_cast<int64_t>(DTypeSize(y.dtype)) + 255) / 256 * 256;
  ASSIGN_OR_RETURN(CUdeviceptr base, out.Allocate(data_bytes + kDifferencePartialBytes));
  DeviceView view{base, y};
  view.layout.offset = 0;  // packed with positive strides: the first element is the lowest address
  RETURN_IF_ERROR(reference(view));
  check.y = ViewAddress(p.y);
  check.reference = base;
  check.partials = base + static_cast<CUdeviceptr>(data_bytes);
  check.elements = n;
  check.dtype = y.dtype;
  check.tolerance = FusedPlanTolerance(y.dtype, ctx.tf32);
  return absl::OkStatus();
}

}  // namespace

std::optional<absl::Status> CudnnGraphConvolution(const ConvProblem& p, const ConvContext& ctx) {
  if (!CudnnGraphApiEnabled() || ctx.cudnn == nullptr || !LoadCudaLibraries().cudnn_status.ok()) return std::nullopt;
  absl::StatusOr<GraphConvSpec> spec = DescribeGraphConv(p, ctx.channels_last);
  if (!spec.ok()) return std::nullopt;  // the legacy path's preconditions decide
  GraphPlanCache& cache = GraphPlans();
  std::lock_guard<std::mutex> lock(cache.mu);
  std::string key;
  const GraphPlan* plan = FindOrMakePlan(
      cache, ctx, *spec, "", /*fused=*/false, [&](bool timed) { return MakeGraphPlan(*spec, p, ctx, timed); }, &key);
  if (plan == nullptr) return std::nullopt;
  return RunPlan(cache, *plan, key, *spec, ConvBuffers(p), ctx, /*fused=*/false);
}

std::optional<absl::Status> CudnnGraphFusedConvolution(const ConvProblem& p, const ConvContext& ctx,
                                                       const FusedConvReference& reference) {
  if (!CudnnGraphApiEnabled() || !CudnnGraphFusedEnabled() || ctx.cudnn == nullptr ||
      !LoadCudaLibraries().cudnn_status.ok() || !CudnnSupported(p, ctx)) {
    return std::nullopt;
  }
  absl::StatusOr<GraphConvSpec> spec = DescribeGraphConv(p, ctx.channels_last);
  if (!spec.ok()) return std::nullopt;
  absl::StatusOr<GraphEpilogueSpec> epilogue = DescribeGraphEpilogue(p, *spec, ctx.channels_last);
  GraphPlanCache& cache = GraphPlans();
  if (!epilogue.ok()) {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (cache.summary.first_unmapped_chain.empty()) {
      cache.summary.first_unmapped_chain = std::string(epilogue.status().message());
    }
    return std::nullopt;
  }
  absl::StatusOr<GraphBuffers> buffers = FusedBuffers(p, *epilogue);
  if (!buffers.ok()) return std::nullopt;
  const std::string key_tail = "|" + GraphEpilogueKey(*epilogue);
  const std::string timed_key = PlanKey(ctx, *spec, key_tail, /*timed=*/true);
  bool planned = false;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    planned = cache.plans.count(timed_key) > 0;
  }
  // Checking candidates synchronizes, which a capture cannot: the kernel
  // path until an eager call has planned this graph.
  if (!planned && ctx.capturing) return std::nullopt;
  ReferenceOutput ref(ctx.stream);
  PlanCheck check;
  if (!planned) {
    // Outside the lock: the reference may run graph-API convolutions.
    absl::Status written = WriteReference(p, ctx, reference, ref, check);
    if (!written.ok()) {
      std::lock_guard<std::mutex> lock(cache.mu);
      if (cache.plans.count(timed_key) == 0) Refuse(cache, timed_key, *spec, written, /*fused=*/true);
      return std::nullopt;
    }
  }
  std::lock_guard<std::mutex> lock(cache.mu);
  std::string key;
  const GraphPlan* plan = FindOrMakePlan(
      cache, ctx, *spec, key_tail, /*fused=*/true,
      [&](bool timed) -> absl::StatusOr<std::unique_ptr<GraphPlan>> {
        if (!timed || check.reference == 0) {
          return absl::FailedPreconditionError("cudnn graph epilogue: a fused plan is only made checked");
        }
        return MakeFusedGraphPlan(*spec, *epilogue, p, ctx, check);
      },
      &key);
  cache.summary.fused_candidates_rejected += check.rejected;
  if (cache.summary.first_rejected_candidate.empty() && !check.first_rejection.empty()) {
    cache.summary.first_rejected_candidate = absl::StrCat("x [", absl::StrJoin(spec->x.dims, ","), "] w [",
                                                          absl::StrJoin(spec->w.dims, ","), "]: ",
                                                          check.first_rejection);
  }
  if (plan == nullptr) return std::nullopt;
  // Fenced on both sides (the header says why); without the fence the
  // kernel path runs it.
  if (!SeparateOnStream(ctx).ok()) return std::nullopt;
  std::optional<absl::Status> done = RunPlan(cache, *plan, key, *spec, *buffers, ctx, /*fused=*/true);
  if (done && done->ok()) done = SeparateOnStream(ctx);
  if (done && done->ok()) {
    if (ctx.used_cudnn != nullptr) *ctx.used_cudnn = true;
    if (ctx.used_cudnn_graph != nullptr) *ctx.used_cudnn_graph = true;
    if (ctx.used_graph_epilogue != nullptr) *ctx.used_graph_epilogue = true;
  }
  return done;
}

double FusedPlanTolerance(DType dtype, bool tf32) {
  switch (dtype) {
    case DType::kFloat16: return 1e-2;
    case DType::kBFloat16: return 2e-2;
    default: return tf32 ? 5e-3 : 1e-4;
  }
}

bool IsPackedLayout(const lowering::Layout& l) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims that address memory
  for (size_t d = 0; d < l.sizes.size(); ++d) {
    if (l.sizes[d] == 0) return false;
    if (l.sizes[d] == 1) continue;
    if (d >= l.strides.size() || l.strides[d] <= 0) return false;
    dims.emplace_back(l.strides[d], l.sizes[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t expect = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expect) return false;
    expect *= size;
  }
  return true;
}

GraphApiSummary CudnnGraphSummary() {
  GraphPlanCache& cache = GraphPlans();
  std::lock_guard<std::mutex> lock(cache.mu);
  return cache.summary;
}

}  // namespace kiln::backends::cuda
