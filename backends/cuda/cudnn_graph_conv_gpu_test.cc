// GPU cases of the graph-API convolutions (cudnn_graph_conv.h), in
// cuda_program_tests (so in //testing:cuda_gpu_check on the GPU machine;
// skipped here with "no CUDA device"): each convolution + relu with
// constant weights, float32 (TF32 off) and bfloat16, NCHW and channels-last
// (KILN_CUDA_CHANNELS_LAST=1), 3x3, 1x1, strided, grouped and depthwise, run
// through the graph API (KILN_CUDNN_BACKEND=1) and the legacy API (=0) in
// the same program: both against the interpreter and against each other.
// Each case prints the report's cuDNN line (which API ran it) and, with
// KILN_CUDNN_LOG=1 set for the graph run, the engine the timing chose.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/cuda_test_util.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "runtime/tensor_ops.h"

namespace kiln::backends::cuda {
namespace {

double RelativeL2(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = got.GetDouble(i) - want.GetDouble(i);
    num += d * d;
    den += want.GetDouble(i) * want.GetDouble(i);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

TEST(CudnnGraphGpuTest, GraphApiMatchesTheLegacyApiAndTheInterpreter) {
  test::RegisterAll();
  if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
  if (!LoadCudaLibraries().cudnn_status.ok()) GTEST_SKIP() << "no cuDNN: " << LoadCudaLibraries().cudnn_status;
  struct Case {
    const char* name;
    std::vector<int64_t> x, w;
    int stride, pad, groups;
  };
  const Case cases[] = {
      {"3x3", {4, 16, 12, 12}, {32, 16, 3, 3}, 1, 1, 1},
      {"1x1", {4, 64, 7, 7}, {32, 64, 1, 1}, 1, 0, 1},
      {"3x3 stride 2", {2, 16, 15, 15}, {24, 16, 3, 3}, 2, 1, 1},
      {"1x1 stride 2", {2, 32, 8, 8}, {64, 32, 1, 1}, 2, 0, 1},
      {"grouped", {2, 16, 9, 9}, {16, 4, 3, 3}, 1, 1, 4},
      {"depthwise stride 2", {2, 16, 10, 10}, {16, 1, 3, 3}, 2, 1, 16},
  };
  const bool tf32 = CudaDevice::ConvTf32();
  CudaDevice::SetConvTf32(false);
  for (const char* type : {"Float", "BFloat16"}) {
    const DType dtype = std::string(type) == "Float" ? DType::kFloat32 : DType::kBFloat16;
    for (const Case& c : cases) {
      for (const bool channels_last : {false, true}) {
        const std::string label = absl::StrCat(type, " ", c.name, channels_last ? " NHWC" : " NCHW");
        SCOPED_TRACE(label);
        const std::string text = absl::StrCat(
            "graph(%x : ", type, "(", c.x[0], ", ", c.x[1], ", ", c.x[2], ", ", c.x[3], "), %w : ", type, "(", c.w[0],
            ", ", c.w[1], ", ", c.w[2], ", ", c.w[3], "), %b : ", type, "(", c.w[0], ")):\n",
            "  %s : int[] = prim::Constant[value=[", c.stride, ", ", c.stride, "]]()\n",
            "  %p : int[] = prim::Constant[value=[", c.pad, ", ", c.pad, "]]()\n",
            "  %d : int[] = prim::Constant[value=[1, 1]]()\n",
            "  %g : int = prim::Constant[value=", c.groups, "]()\n",
            "  %y : Tensor = aten::conv2d(%x, %w, %b, %s, %p, %d, %g)\n",
            "  %r : Tensor = aten::relu(%y)\n  return (%r)\n");
        std::map<std::string, Tensor> weights = {{"w", test::Random(c.w, 21)}, {"b", test::Random({c.w[0]}, 22)}};
        for (auto& [name, t] : weights) t = *runtime::CastTo(t, dtype);
        absl::StatusOr<std::unique_ptr<ir::Graph>> graph = test::ParseWithConstants(text, weights);
        absl::StatusOr<std::unique_ptr<ir::Graph>> oracle = test::ParseWithConstants(text, weights);
        ASSERT_TRUE(graph.ok() && oracle.ok()) << text;
        absl::StatusOr<driver::CompiledGraph> compiled;
        {
          test::ScopedEnv plan("KILN_CUDA_CHANNELS_LAST", channels_last ? "1" : "0");
          compiled = test::CompileGraphForCuda(**graph);
        }
        ASSERT_TRUE(compiled.ok()) << compiled.status();
        const std::vector<Tensor> inputs = {*runtime::CastTo(test::Random(c.x, 23), dtype)};
        absl::StatusOr<std::vector<Tensor>> by_graph, by_legacy;
        // Depthwise shapes go to cuDNN, not kiln's own kernel (depthwise_conv.h).
        test::ScopedEnv cudnn_depthwise("KILN_CUDA_DEPTHWISE", "0");
        {
          test::ScopedEnv api("KILN_CUDNN_BACKEND", "1");
          test::ScopedEnv log("KILN_CUDNN_LOG", "1");
          by_graph = compiled->compiled->Run(inputs);
        }
        ASSERT_TRUE(by_graph.ok()) << by_graph.status();
        auto* program = dynamic_cast<CudaProgram*>(compiled->compiled.get());
        ASSERT_NE(program, nullptr);
        const CudaProgramStats& st = program->stats();
        const int64_t graph_runs = st.cudnn_graph_convolutions.load();
        std::printf("[cudnn graph test] %s, KILN_CUDNN_BACKEND=1: %s (%lld NHWC)\n", label.c_str(),
                    program->ReportLines()[0].c_str(), static_cast<long long>(st.nhwc_convolutions.load()));  // NOLINT
        {
          test::ScopedEnv api("KILN_CUDNN_BACKEND", "0");
          by_legacy = compiled->compiled->Run(inputs);
        }
        ASSERT_TRUE(by_legacy.ok()) << by_legacy.status();
        std::printf("[cudnn graph test] %s, KILN_CUDNN_BACKEND=0: %s\n", label.c_str(),
                    program->ReportLines()[0].c_str());
        std::vector<ir::IValue> args = {ir::IValue::FromTensor(inputs[0])};
        absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(**oracle, args);
        ASSERT_TRUE(want.ok()) << want.status();
        const Tensor& w = (*want)[0].toTensor();
        ASSERT_EQ((*by_graph)[0].sizes(), w.sizes());
        ASSERT_EQ((*by_legacy)[0].sizes(), w.sizes());
        // float32 without TF32: both exact to rounding; bfloat16: one
        // rounding of the output (and of the interpreter's own steps).
        const double tol = dtype == DType::kFloat32 ? 1e-5 : 1e-2;
        EXPECT_LE(RelativeL2((*by_graph)[0], w), tol) << "graph API against the interpreter";
        EXPECT_LE(RelativeL2((*by_legacy)[0], w), tol) << "legacy API against the interpreter";
        EXPECT_LE(RelativeL2((*by_graph)[0], (*by_legacy)[0]), tol) << "graph API against the legacy API";
        // The first run went through the graph API (a refusal is a finding:
        // its reason is in the report), the second through the legacy API.
        EXPECT_EQ(st.gpu_convolutions.load(), 2);
        EXPECT_EQ(st.cudnn_convolutions.load(), 2) << st.cudnn_error;
        EXPECT_EQ(graph_runs, 1) << program->ReportLines()[0];
        EXPECT_EQ(st.cudnn_graph_convolutions.load(), graph_runs) << "KILN_CUDNN_BACKEND=0 ran the graph API";
      }
    }
  }
  CudaDevice::SetConvTf32(tf32);
}

}  // namespace
}  // namespace kiln::backends::cuda
