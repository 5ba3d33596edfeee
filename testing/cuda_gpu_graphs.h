// What the CUDA GPU check (testing/cuda_gpu_check.cc) and the CUDA
// benchmarks (benchmarks/cuda_bench.cc) share: the TorchScript text of their
// graphs (graph_texts.h), random inputs, ONNX models imported at a chosen batch size, and a
// one-line summary of where a program's steps ran.
#ifndef KILN_TESTING_CUDA_GPU_GRAPHS_H_
#define KILN_TESTING_CUDA_GPU_GRAPHS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/cuda_program.h"
#include "ir/ir.h"
#include "onnx/onnx_pb.h"
#include "support/tensor.h"
#include "testing/graph_texts.h"

namespace kiln::testing {

// Float32 values uniform in [lo, hi), seeded.
Tensor RandomFloats(const std::vector<int64_t>& sizes, uint32_t seed, float lo = -2.0f, float hi = 2.0f);

// `model` imported with dim 0 of every input and output set to `batch`
// (0: as exported), then -O2.
absl::StatusOr<std::unique_ptr<ir::Graph>> ImportOptimized(onnx::ModelProto model, int64_t batch);

// "launches/run=52 cublas=3 gpu_conv=52 cudnn=52 host_fallbacks=0 (...)";
// "interpreted" for null.
std::string FallbackSummary(backends::cuda::CudaProgram* p);

// "allocator: allocated ... hits N/M" for device 0 (nothing when unavailable).
void PrintAllocatorStats();

// A fresh directory name under $TMPDIR for a cold cubin cache.
std::string TempCacheDir(const std::string& tag);

}  // namespace kiln::testing

#endif  // KILN_TESTING_CUDA_GPU_GRAPHS_H_
