// The kernel codegen on real models: every fused kernel of the ONNX corpus
// models (mobilenet_v2, squeezenet1_1, small_cnn, mlp, ln_gelu_softmax),
// lowered and scheduled for "cuda", must generate (no Unimplemented) and
// compile with NVRTC for sm_90 (one translation unit per model, the way the
// backend groups kernels; skipped when NVRTC is absent).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/kernel_codegen.h"
#include "backends/cuda/kernel_prelude.h"
#include "backends/cuda/kernel_test_nvrtc.h"
#include "frontend/onnx/importer.h"
#include "gtest/gtest.h"
#include "lowering/lower.h"
#include "lowering/schedule.h"
#include "passes/decompositions.h"
#include "passes/pass.h"
#include "passes/shape_functions.h"
#include "passes/shape_propagation.h"
#include "runtime/register_kernels.h"
#include "ir/op_registry.h"

namespace kiln::backends::cuda {
namespace {

class CorpusTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CorpusTest, EveryKernelGeneratesAndCompiles) {
  ASSERT_TRUE(passes::RegisterShapeFunctions().ok());
  ASSERT_TRUE(runtime::RegisterReferenceKernels(ir::BuiltinOps()).ok());
  const std::string path = absl::StrCat("testdata/onnx_models/", GetParam(), "/model.onnx");
  auto model = frontend::onnx_import::LoadModelFile(path);
  ASSERT_TRUE(model.ok()) << path << ": " << model.status();
  auto graph = frontend::onnx_import::ImportModel(*model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  passes::PassStatistics stats;
  ASSERT_TRUE(passes::PrepareForLowering(**graph, stats).ok());
  auto loop_graph = lowering::LowerGraph(**graph);
  ASSERT_TRUE(loop_graph.ok()) << loop_graph.status();
  auto schedule = lowering::ScheduleGraph(*loop_graph, "cuda");
  ASSERT_TRUE(schedule.ok()) << schedule.status();

  const std::string prelude = CudaKernelPrelude();
  std::string unit = prelude;
  int kernels = 0;
  std::set<std::string> distinct;  // kernels of identical text compile once, as CudaCodegen does
  const auto start = std::chrono::steady_clock::now();
  for (const lowering::ScheduleStep& step : schedule->steps) {
    if (step.kind != lowering::ScheduleStep::Kind::kKernel) continue;
    auto k = GenerateCudaKernel(*loop_graph, step.kernel, CudaTarget());
    ASSERT_TRUE(k.ok()) << step.kernel.name << ": " << k.status();
    ASSERT_EQ(k->source.compare(0, prelude.size(), prelude), 0);
    ++kernels;
    if (distinct.insert(k->name).second) absl::StrAppend(&unit, "\n", k->source.substr(prelude.size()));
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: %d kernels (%zu distinct) generated in %.1f ms\n", GetParam(), kernels, distinct.size(), ms);
  // KILN_DUMP_CUDA_DIR=dir writes each model's unit there (for timing NVRTC).
  if (const char* dir = std::getenv("KILN_DUMP_CUDA_DIR")) {
    std::ofstream(absl::StrCat(dir, "/", GetParam(), ".cu")) << unit;
  }
  testing::Nvrtc& nvrtc = testing::Nvrtc::Get();
  if (!nvrtc.ok()) GTEST_SKIP() << "skipping the NVRTC compile: " << nvrtc.why();
  const std::string error = nvrtc.Compile(unit, GetParam());
  EXPECT_EQ(error, "") << unit.substr(prelude.size(), 20000);
}

INSTANTIATE_TEST_SUITE_P(OnnxModels, CorpusTest,
                         ::testing::Values("mobilenet_v2", "squeezenet1_1", "small_cnn", "mlp", "ln_gelu_softmax"));

}  // namespace
}  // namespace kiln::backends::cuda
