#include "backends/cuda/cuda_env.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace kiln::backends::cuda::env {
namespace {

std::optional<std::string> Get(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// Set to exactly "0".
bool IsZero(const char* name) { return Get(name) == std::optional<std::string>("0"); }

Force Forced(const char* name) {
  const std::optional<std::string> v = Get(name);
  if (v == "0") return Force::kOff;
  if (v == "1") return Force::kOn;
  return Force::kDefault;
}

}  // namespace

bool CudaDisabled() {
  const std::optional<std::string> v = Get("KILN_CUDA_DISABLE");
  return v.has_value() && !v->empty() && (*v)[0] != '0';
}

bool CudnnDisabled() { return IsZero("KILN_CUDNN"); }
bool CudaGraphsOff() { return IsZero("KILN_CUDA_GRAPHS"); }
Force ChannelsLast() { return Forced("KILN_CUDA_CHANNELS_LAST"); }
Force Attention() { return Forced("KILN_CUDA_ATTENTION"); }
bool DepthwiseKernelOff() { return IsZero("KILN_CUDA_DEPTHWISE"); }
bool TransposeTilesOff() { return IsZero("KILN_CUDA_TRANSPOSE_TILES"); }

bool LtGemmOff() {
  static const bool off = IsZero("KILN_CUDA_LT_GEMM");
  return off;
}

bool GemmAutotuneOff() {
  static const bool off = IsZero("KILN_CUDA_GEMM_AUTOTUNE");
  return off;
}

bool GemmLog() {
  const std::optional<std::string> v = Get("KILN_CUDA_GEMM_LOG");
  return v.has_value() && *v != "0";
}

bool CudnnGraphApiOff() { return IsZero("KILN_CUDNN_BACKEND"); }
bool CudnnGraphFusedOff() { return IsZero("KILN_CUDNN_GRAPH_FUSED"); }

std::optional<int> CudnnGraphPlans() {
  const std::optional<std::string> v = Get("KILN_CUDNN_GRAPH_PLANS");
  int n = 0;
  if (v.has_value() && absl::SimpleAtoi(*v, &n) && n >= 1) return std::min(n, 64);
  return std::nullopt;
}

bool CudnnFindOff() { return IsZero("KILN_CUDNN_FIND"); }
bool CudnnLegacyFused() { return Get("KILN_CUDNN_FUSED") == std::optional<std::string>("1"); }
bool CudnnLog() { return Get("KILN_CUDNN_LOG").has_value(); }

std::vector<std::string> ExtraNvrtcOptions() {
  const std::optional<std::string> v = Get("KILN_NVRTC_OPTIONS");
  if (!v.has_value()) return {};
  return absl::StrSplit(*v, ' ', absl::SkipEmpty());
}

}  // namespace kiln::backends::cuda::env
