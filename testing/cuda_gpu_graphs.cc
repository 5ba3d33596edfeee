#include "testing/cuda_gpu_graphs.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_device.h"
#include "driver/model.h"
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "support/status.h"

namespace kiln::testing {

Tensor RandomFloats(const std::vector<int64_t>& sizes, uint32_t seed, float lo, float hi) {
  Tensor t = Tensor::Empty(DType::kFloat32, sizes);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOptimized(onnx::ModelProto model, int64_t batch) {
  if (batch > 0) {
    for (int i = 0; i < model.graph().input_size(); ++i) {
      auto* shape = model.mutable_graph()->mutable_input(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
      if (shape->dim_size() > 0) shape->mutable_dim(0)->set_dim_value(batch);
    }
    model.mutable_graph()->clear_value_info();
    for (int i = 0; i < model.graph().output_size(); ++i) {
      auto* shape = model.mutable_graph()->mutable_output(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
      if (shape->dim_size() > 0) shape->mutable_dim(0)->set_dim_value(batch);
    }
  }
  // kiln's own import path (its shape functions type what ONNX's inference
  // leaves unknown, as `kiln run` imports).
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, driver::ImportOnnxModel(model));
  ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> p, passes::Pipeline::Create("-O2", passes::DefaultPassRegistry()));
  ASSIGN_OR_RETURN(bool changed, p->Run(*graph));
  (void)changed;
  return graph;
}

std::string FallbackSummary(backends::cuda::CudaProgram* p) {
  if (p == nullptr) return "interpreted";
  std::lock_guard<std::mutex> lock(p->stats().mu);
  std::vector<std::string> parts;
  for (const auto& [op, n] : p->stats().fallback_ops) parts.push_back(absl::StrCat(op, "x", n));
  return absl::StrCat("launches/run=", p->stats().runs ? p->stats().launches / p->stats().runs : 0,
                      " cublas=", p->stats().cublas_calls.load(), " gpu_conv=", p->stats().gpu_convolutions.load(),
                      " cudnn=", p->stats().cudnn_convolutions.load(), " host_fallbacks=", p->stats().host_fallbacks.load(),
                      parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")"));
}

void PrintAllocatorStats() {
  absl::StatusOr<backends::cuda::AllocatorStats> s = backends::cuda::CudaDevice().allocator_stats(0);
  if (!s.ok()) return;
  std::printf("allocator: allocated %lld peak %lld cached %lld reserved %lld driver_allocs %lld hits %lld/%lld\n",
              static_cast<long long>(s->allocated_bytes), static_cast<long long>(s->peak_allocated_bytes),  // NOLINT
              static_cast<long long>(s->cached_bytes), static_cast<long long>(s->reserved_bytes),  // NOLINT
              static_cast<long long>(s->driver_allocs), static_cast<long long>(s->cache_hits),  // NOLINT
              static_cast<long long>(s->requests));  // NOLINT
}

std::string TempCacheDir(const std::string& tag) {
  static int n = 0;
  const char* tmp = std::getenv("TMPDIR");
  return absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/kiln_cuda_check_", ::getpid(), "_", tag, "_", n++);
}

}  // namespace kiln::testing
