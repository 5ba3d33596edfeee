// What the CUDA program tests (cuda_program_test.cc, cuda_device_run_test.cc)
// share: registering ops, shape functions and the backend, compiling a
// graph's text for "cuda", and seeded random inputs.
#ifndef KILN_BACKENDS_CUDA_CUDA_TEST_UTIL_H_
#define KILN_BACKENDS_CUDA_CUDA_TEST_UTIL_H_

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "driver/compile_graph.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "passes/shape_functions.h"
#include "runtime/register_kernels.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::backends::cuda::test {

inline void RegisterAll() {
  ASSERT_TRUE(passes::RegisterShapeFunctions().ok());
  ASSERT_TRUE(runtime::RegisterReferenceKernels(ir::BuiltinOps()).ok());
  ASSERT_TRUE(RegisterCudaBackend().ok());
}

// Parses `text` and compiles it for cuda (up to the Wrapper IR when
// `generate_only`); the parsed graph (shape-propagated: the interpreter's
// input too) goes to *graph when given.
inline absl::StatusOr<driver::CompiledGraph> CompileForCuda(const std::string& text,
                                                            std::unique_ptr<ir::Graph>* graph = nullptr,
                                                            bool generate_only = false) {
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> parsed, ir::ParseGraph(text));
  driver::CompileOptions options;
  options.device = "cuda";
  options.generate_only = generate_only;
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(*parsed, options);
  if (graph != nullptr) *graph = std::move(parsed);
  return compiled;
}

// float32, uniform in [-1, 1), the same values for the same seed.
inline Tensor Random(std::vector<int64_t> sizes, uint32_t seed) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(sizes));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

}  // namespace kiln::backends::cuda::test

#endif  // KILN_BACKENDS_CUDA_CUDA_TEST_UTIL_H_
