#include "backends/cuda/cudnn_conv.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

const CudnnApi& Cudnn() { return LoadCudaLibraries().cudnn; }

bool FitsInt(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

// A 4-D (N, C, H, W) view of a 3-D or 4-D layout: 1-D convolutions get H = 1.
bool Dims4(const lowering::Layout& l, int dims[4], int strides[4]) {
  const auto& s = l.sizes;
  const auto& st = l.strides;
  if (s.size() == 4) {
    for (int i = 0; i < 4; ++i) {
      if (!FitsInt(s[i]) || !FitsInt(st[i])) return false;
      dims[i] = static_cast<int>(s[i]);
      strides[i] = static_cast<int>(std::max<int64_t>(st[i], 1));
    }
    return true;
  }
  if (s.size() != 3) return false;
  const int64_t sizes4[4] = {s[0], s[1], 1, s[2]};
  const int64_t strides4[4] = {st[0], st[1], s[2] * st[2], st[2]};
  for (int i = 0; i < 4; ++i) {
    if (!FitsInt(sizes4[i]) || !FitsInt(strides4[i])) return false;
    dims[i] = static_cast<int>(sizes4[i]);
    strides[i] = static_cast<int>(std::max<int64_t>(strides4[i], 1));
  }
  return true;
}

// The descriptors and algorithm of one shape, kept for the process.
struct ConvPlan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int algo = 0;
  size_t workspace = 0;
  ~ConvPlan() {
    const CudnnApi& c = Cudnn();
    if (x != nullptr) c.cudnnDestroyTensorDescriptor(x);
    if (y != nullptr) c.cudnnDestroyTensorDescriptor(y);
    if (bias != nullptr) c.cudnnDestroyTensorDescriptor(bias);
    if (w != nullptr) c.cudnnDestroyFilterDescriptor(w);
    if (conv != nullptr) c.cudnnDestroyConvolutionDescriptor(conv);
  }
};

struct PlanCache {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<ConvPlan>> plans;
};

PlanCache& Plans() {
  static PlanCache* cache = new PlanCache();  // never destroyed: cuDNN may be gone at exit
  return *cache;
}

std::string Key(const ConvProblem& p, int device, bool tf32, bool searched, bool channels_last) {
  auto layout = [](const DeviceView& v) {
    return absl::StrCat(absl::StrJoin(v.layout.sizes, ","), "/", absl::StrJoin(v.layout.strides, ","), "@",
                        ViewAddress(v) % 256 == 0 ? "a" : absl::StrCat(ViewAddress(v) % 256));
  };
  return absl::StrCat(device, "|", DTypeName(p.x.layout.dtype), "|", tf32, searched ? "|find" : "|heur", "|",
                      layout(p.x), "|", layout(p.weight), "|", layout(p.y), "|", p.groups, "|", p.sh, ",", p.sw,
                      "|", p.ph, ",", p.pw, "|", p.dh, ",", p.dw, "|", p.bias ? "b" : "", channels_last ? "|nhwc" : "");
}

absl::StatusOr<std::unique_ptr<ConvPlan>> MakePlan(const ConvProblem& p, int dtype, const ConvContext& ctx,
                                                   bool search) {
  const CudnnApi& c = Cudnn();
  auto plan = std::make_unique<ConvPlan>();
  int xd[4], xs[4], yd[4], ys[4];
  if (!Dims4(p.x.layout, xd, xs) || !Dims4(p.y.layout, yd, ys)) {
    return absl::InvalidArgumentError("cudnn conv: sizes beyond int");
  }
  RETURN_IF_ERROR(CudnnCheck(c.cudnnCreateTensorDescriptor(&plan->x), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(CudnnCheck(c.cudnnSetTensorNdDescriptor(plan->x, dtype, 4, xd, xs), "cudnnSetTensorNdDescriptor(x)"));
  RETURN_IF_ERROR(CudnnCheck(c.cudnnCreateTensorDescriptor(&plan->y), "cudnnCreateTensorDescriptor"));
  RETURN_IF_ERROR(CudnnCheck(c.cudnnSetTensorNdDescriptor(plan->y, dtype, 4, yd, ys), "cudnnSetTensorNdDescriptor(y)"));
  const int wd[4] = {static_cast<int>(p.cout), static_cast<int>(p.cin / p.groups), static_cast<int>(p.kh),
                     static_cast<int>(p.kw)};
  RETURN_IF_ERROR(CudnnCheck(c.cudnnCreateFilterDescriptor(&plan->w), "cudnnCreateFilterDescriptor"));
  RETURN_IF_ERROR(
      CudnnCheck(c.cudnnSetFilterNdDescriptor(plan->w, dtype, ctx.channels_last ? kCudnnTensorNhwc : kCudnnTensorNchw,
                                              4, wd),
                 "cudnnSetFilterNdDescriptor"));
  if (p.bias) {
    const int bd[4] = {1, static_cast<int>(p.cout), 1, 1};
    const int bs[4] = {static_cast<int>(p.cout), 1, 1, 1};
    RETURN_IF_ERROR(CudnnCheck(c.cudnnCreateTensorDescriptor(&plan->bias), "cudnnCreateTensorDescriptor"));
    RETURN_IF_ERROR(
        CudnnCheck(c.cudnnSetTensorNdDescriptor(plan->bias, dtype, 4, bd, bs), "cudnnSetTensorNdDescriptor(bias)"));
  }
  const int pad[2] = {static_cast<int>(p.ph), static_cast<int>(p.pw)};
  const int stride[2] = {static_cast<int>(p.sh), static_cast<int>(p.sw)};
  const int dilation[2] = {static_cast<int>(p.dh), static_cast<int>(p.dw)};
  RETURN_IF_ERROR(CudnnCheck(c.cudnnCreateConvolutionDescriptor(&plan->conv), "cudnnCreateConvolutionDescriptor"));
  // Accumulation in float for every data type (PyTorch's choice for half).
  RETURN_IF_ERROR(CudnnCheck(c.cudnnSetConvolutionNdDescriptor(plan->conv, 2, pad, stride, dilation,
                                                               kCudnnCrossCorrelation, kCudnnDataFloat),
                             "cudnnSetConvolutionNdDescriptor"));
  RETURN_IF_ERROR(CudnnCheck(c.cudnnSetConvolutionGroupCount(plan->conv, static_cast<int>(p.groups)),
                             "cudnnSetConvolutionGroupCount"));
  // DEFAULT math keeps 16-bit data off the tensor cores in this API: a
  // [32,256,56,56] 1x1 bfloat16 convolution took 0.29 ms on an H100, six
  // times its float32 (TF32) time, and resnet50 at batch 32 in bfloat16 went
  // from 10.3 to 5.0 ms with TENSOR_OP.
  const bool fma_only = dtype == kCudnnDataFloat && !ctx.tf32;
  const int math = fma_only ? kCudnnFmaMath : dtype == kCudnnDataFloat ? kCudnnDefaultMath : kCudnnTensorOpMath;
  RETURN_IF_ERROR(CudnnCheck(c.cudnnSetConvolutionMathType(plan->conv, math), "cudnnSetConvolutionMathType"));
  constexpr int kCandidates = 8;
  CudnnConvolutionFwdAlgoPerf perf[kCandidates] = {};
  int returned = 0;
  if (search) {
    ASSIGN_OR_RETURN(CUdeviceptr ws, ctx.scratch(kCudnnFindWorkspaceBytes));
    RETURN_IF_ERROR(CudnnCheck(
        c.cudnnFindConvolutionForwardAlgorithmEx(ctx.cudnn, plan->x, reinterpret_cast<const void*>(ViewAddress(p.x)),
                                                 plan->w, reinterpret_cast<const void*>(ViewAddress(p.weight)),
                                                 plan->conv, plan->y, reinterpret_cast<void*>(ViewAddress(p.y)),
                                                 kCandidates, &returned, perf, reinterpret_cast<void*>(ws),
                                                 static_cast<size_t>(kCudnnFindWorkspaceBytes)),
        "cudnnFindConvolutionForwardAlgorithmEx"));
  } else {
    RETURN_IF_ERROR(CudnnCheck(c.cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, plan->x, plan->w, plan->conv,
                                                                         plan->y, kCandidates, &returned, perf),
                               "cudnnGetConvolutionForwardAlgorithm_v7"));
  }
  const CudnnConvolutionFwdAlgoPerf* chosen = nullptr;
  for (int i = 0; i < returned && i < kCandidates; ++i) {
    if (perf[i].status == kCudnnSuccess && static_cast<int64_t>(perf[i].memory) <= kCudnnFindWorkspaceBytes) {
      chosen = &perf[i];
      break;
    }
  }
  if (chosen == nullptr) return absl::NotFoundError("cudnn conv: no algorithm for this convolution");
  plan->algo = chosen->algo;
  // The math type the algorithm was measured with (float32 without TF32 stays FMA).
  RETURN_IF_ERROR(CudnnCheck(c.cudnnSetConvolutionMathType(plan->conv, fma_only ? kCudnnFmaMath : chosen->math_type),
                             "cudnnSetConvolutionMathType"));
  RETURN_IF_ERROR(CudnnCheck(c.cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, plan->x, plan->w, plan->conv,
                                                                        plan->y, plan->algo, &plan->workspace),
                             "cudnnGetConvolutionForwardWorkspaceSize"));
  return plan;
}

}  // namespace

std::optional<int> CudnnSupported(const ConvProblem& p, const ConvContext& ctx) {
  if (ctx.cudnn == nullptr || p.spatial_dims < 1 || p.spatial_dims > 2) return std::nullopt;
  const std::optional<int> dtype = CudnnDataType(p.x.layout.dtype);
  // The filter is packed NCHW (KCRS) or, for channels-last convolutions, NHWC (KRSC).
  const bool packed = ctx.channels_last ? p.spatial_dims == 2 && IsChannelsLastLayout(p.weight.layout)
                                        : p.weight.layout.IsContiguous();
  if (!dtype || !packed) return std::nullopt;
  if (p.bias && (p.bias->layout.dtype != p.x.layout.dtype || !p.bias->layout.IsContiguous())) return std::nullopt;
  for (int64_t v : {p.n, p.cin, p.cout, p.kh, p.kw, p.ph, p.pw, p.sh, p.sw, p.dh, p.dw, p.groups}) {
    if (!FitsInt(v)) return std::nullopt;
  }
  return dtype;
}

namespace {

struct LockedPlan {
  std::unique_lock<std::mutex> lock;
  const ConvPlan* plan = nullptr;
};

// The plan of `p` (made on first use) with the plan cache's lock, which the
// caller holds for its whole call, not only the lookup: the cached
// descriptors (and CudnnFusedConvolution's activation descriptors, made on
// first use) are shared by every thread, so one call at a time makes or
// uses them.
absl::StatusOr<LockedPlan> LockedPlanOf(const ConvProblem& p, int dtype, const ConvContext& ctx) {
  PlanCache& cache = Plans();
  std::unique_lock<std::mutex> lock(cache.mu);
  const bool search = !env::CudnnFindOff();
  // The searched plan when there is one (the warm-up call made it); a
  // capture, which cannot search, makes a heuristic one otherwise.
  auto it = cache.plans.find(Key(p, ctx.device_index, ctx.tf32, search, ctx.channels_last));
  if (it == cache.plans.end() && search && ctx.capturing) {
    it = cache.plans.find(Key(p, ctx.device_index, ctx.tf32, false, ctx.channels_last));
  }
  if (it == cache.plans.end()) {
    const bool searching = search && !ctx.capturing;
    const std::string key = Key(p, ctx.device_index, ctx.tf32, searching, ctx.channels_last);
    ASSIGN_OR_RETURN(std::unique_ptr<ConvPlan> plan, MakePlan(p, dtype, ctx, searching));
    it = cache.plans.emplace(key, std::move(plan)).first;
  }
  return LockedPlan{std::move(lock), it->second.get()};
}

absl::StatusOr<CUdeviceptr> Workspace(const ConvContext& ctx, size_t bytes) {
  if (bytes == 0) return CUdeviceptr{0};
  return ctx.scratch(static_cast<int64_t>(bytes));
}

// y += bias (broadcast over N, H, W) with cudnnAddTensor; the descriptors
// are kept per dtype and y layout.
absl::Status AddBias(const ConvProblem& p, int dtype, const ConvContext& ctx) {
  struct BiasDescriptors {
    cudnnTensorDescriptor_t bias = nullptr, y = nullptr;
  };
  static std::mutex mu;
  static auto* kept = new std::map<std::string, BiasDescriptors>();  // never destroyed, as the plans
  const CudnnApi& c = Cudnn();
  std::lock_guard<std::mutex> lock(mu);
  const std::string key = absl::StrCat(dtype, "|", absl::StrJoin(p.y.layout.sizes, ","), "/",
                                       absl::StrJoin(p.y.layout.strides, ","));
  auto it = kept->find(key);
  if (it == kept->end()) {
    int yd[4], ys[4];
    if (!Dims4(p.y.layout, yd, ys)) return absl::InvalidArgumentError("cudnn conv bias: sizes beyond int");
    BiasDescriptors d;
    const int bd[4] = {1, yd[1], 1, 1};
    const int bs[4] = {yd[1], 1, 1, 1};
    RETURN_IF_ERROR(CudnnCheck(c.cudnnCreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor"));
    absl::Status s = CudnnCheck(c.cudnnSetTensorNdDescriptor(d.y, dtype, 4, yd, ys), "cudnnSetTensorNdDescriptor(y)");
    if (s.ok()) s = CudnnCheck(c.cudnnCreateTensorDescriptor(&d.bias), "cudnnCreateTensorDescriptor");
    if (s.ok()) {
      s = CudnnCheck(c.cudnnSetTensorNdDescriptor(d.bias, dtype, 4, bd, bs), "cudnnSetTensorNdDescriptor(bias)");
    }
    if (!s.ok()) {
      c.cudnnDestroyTensorDescriptor(d.y);
      if (d.bias != nullptr) c.cudnnDestroyTensorDescriptor(d.bias);
      return s;
    }
    it = kept->emplace(key, d).first;
  }
  const float one = 1.0f;
  return CudnnCheck(c.cudnnAddTensor(ctx.cudnn, &one, it->second.bias,
                                     reinterpret_cast<const void*>(ViewAddress(*p.bias)), &one, it->second.y,
                                     reinterpret_cast<void*>(ViewAddress(p.y))),
                    "cudnnAddTensor");
}

}  // namespace

std::optional<absl::Status> CudnnConvolution(const ConvProblem& p, const ConvContext& ctx) {
  const std::optional<int> dtype = CudnnSupported(p, ctx);
  if (!dtype) return std::nullopt;
  // The graph API first; the legacy API for what it does not take.
  if (std::optional<absl::Status> done = CudnnGraphConvolution(p, ctx)) {
    if (!done->ok()) return done;
    if (ctx.used_cudnn_graph != nullptr) *ctx.used_cudnn_graph = true;
    if (!p.bias) return absl::OkStatus();
    return AddBias(p, *dtype, ctx);
  }
  ASSIGN_OR_RETURN(const LockedPlan locked, LockedPlanOf(p, *dtype, ctx));
  const ConvPlan& plan = *locked.plan;
  const CudnnApi& c = Cudnn();
  absl::StatusOr<CUdeviceptr> ws = Workspace(ctx, plan.workspace);
  if (!ws.ok()) return ws.status();
  // alpha/beta are float for float, half and bfloat16 data.
  const float one = 1.0f, zero = 0.0f;
  absl::Status s = CudnnCheck(
      c.cudnnConvolutionForward(ctx.cudnn, &one, plan.x, reinterpret_cast<const void*>(ViewAddress(p.x)), plan.w,
                                reinterpret_cast<const void*>(ViewAddress(p.weight)), plan.conv, plan.algo,
                                reinterpret_cast<void*>(*ws), plan.workspace, &zero, plan.y,
                                reinterpret_cast<void*>(ViewAddress(p.y))),
      "cudnnConvolutionForward");
  if (!s.ok() || !p.bias) return s;
  return CudnnCheck(c.cudnnAddTensor(ctx.cudnn, &one, plan.bias, reinterpret_cast<const void*>(ViewAddress(*p.bias)),
                                     &one, plan.y, reinterpret_cast<void*>(ViewAddress(p.y))),
                    "cudnnAddTensor");
}

bool CudnnFusedEnabled() { return env::CudnnLegacyFused(); }

std::optional<absl::Status> CudnnFusedConvolution(const ConvProblem& p, const ConvContext& ctx, bool relu,
                                                  const DeviceView* z) {
  const std::optional<int> dtype = CudnnSupported(p, ctx);
  if (!dtype || !p.bias) return std::nullopt;
  if (z != nullptr && (z->layout.dtype != p.y.layout.dtype || z->layout.sizes != p.y.layout.sizes ||
                       z->layout.strides != p.y.layout.strides)) {
    return std::nullopt;  // z is described by y's descriptor
  }
  ASSIGN_OR_RETURN(const LockedPlan locked, LockedPlanOf(p, *dtype, ctx));
  const ConvPlan& plan = *locked.plan;
  const CudnnApi& c = Cudnn();
  // One activation descriptor per mode for the process (under the cache's lock).
  static cudnnActivationDescriptor_t activations[2] = {nullptr, nullptr};
  cudnnActivationDescriptor_t& act = activations[relu ? 1 : 0];
  if (act == nullptr) {
    cudnnActivationDescriptor_t made = nullptr;
    RETURN_IF_ERROR(CudnnCheck(c.cudnnCreateActivationDescriptor(&made), "cudnnCreateActivationDescriptor"));
    absl::Status set = CudnnCheck(
        c.cudnnSetActivationDescriptor(made, relu ? kCudnnActivationRelu : kCudnnActivationIdentity,
                                       kCudnnPropagateNan, 0.0),
        "cudnnSetActivationDescriptor");
    if (!set.ok()) {
      c.cudnnDestroyActivationDescriptor(made);
      return set;
    }
    act = made;
  }
  // cuDNN runs the identity activation with IMPLICIT_PRECOMP_GEMM only.
  const int algo = relu ? plan.algo : kCudnnFwdAlgoImplicitPrecompGemm;
  size_t workspace = plan.workspace;
  if (algo != plan.algo) {
    RETURN_IF_ERROR(CudnnCheck(c.cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, plan.x, plan.w, plan.conv, plan.y,
                                                                          algo, &workspace),
                               "cudnnGetConvolutionForwardWorkspaceSize"));
  }
  absl::StatusOr<CUdeviceptr> ws = Workspace(ctx, workspace);
  if (!ws.ok()) return ws.status();
  const float one = 1.0f, alpha2 = z != nullptr ? 1.0f : 0.0f;
  const CUdeviceptr z_address = z != nullptr ? ViewAddress(*z) : ViewAddress(p.y);
  return CudnnCheck(
      c.cudnnConvolutionBiasActivationForward(
          ctx.cudnn, &one, plan.x, reinterpret_cast<const void*>(ViewAddress(p.x)), plan.w,
          reinterpret_cast<const void*>(ViewAddress(p.weight)), plan.conv, algo, reinterpret_cast<void*>(*ws),
          workspace, &alpha2, plan.y, reinterpret_cast<const void*>(z_address), plan.bias,
          reinterpret_cast<const void*>(ViewAddress(*p.bias)), act, plan.y, reinterpret_cast<void*>(ViewAddress(p.y))),
      "cudnnConvolutionBiasActivationForward");
}

}  // namespace kiln::backends::cuda
