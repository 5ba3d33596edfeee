// A corpus model on the sim device: kiln's testdata squeezenet1_1 (ONNX,
// 26 convolutions) imported by kiln, compiled for "sim" (kiln's lowering,
// fusion and wrapper; the sim's bytecode kernels and launches), and
// compared with kiln's interpreter and with PyTorch's stored output.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "sim/register.h"
#include "sim/sim_codegen.h"
#include "driver/compile_graph.h"

namespace kiln_sim {
namespace {

using kiln::Tensor;

// kiln's files in this test's runfiles (@kiln//testdata/onnx_models).
std::string KilnFile(const std::string& path) {
  const char* root = std::getenv("TEST_SRCDIR");
  const std::string base = root != nullptr ? root : ".";
  for (const std::string& candidate :
       {base + "/kiln/" + path, base + "/kiln_sim_device/external/kiln/" + path}) {
    if (std::ifstream(candidate).good()) return candidate;
  }
  return base + "/kiln/" + path;
}

double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(a.GetDouble(i) - b.GetDouble(i)));
  return worst;
}

TEST(SimModel, Squeezenet11MatchesTheInterpreterAndPyTorch) {
  ASSERT_TRUE(RegisterSimBackend().ok());
  const std::string dir = "testdata/onnx_models/squeezenet1_1/";
  auto model = kiln::frontend::onnx_import::LoadModelFile(KilnFile(dir + "model.onnx"));
  ASSERT_TRUE(model.ok()) << model.status();
  auto input = kiln::frontend::onnx_import::ReadTensorFile(KilnFile(dir + "test_data_set_0/input_0.pb"));
  auto torch_output =
      kiln::frontend::onnx_import::ReadTensorFile(KilnFile(dir + "test_data_set_0/output_0.pb"));
  ASSERT_TRUE(input.ok()) << input.status();
  ASSERT_TRUE(torch_output.ok()) << torch_output.status();

  auto reference_graph = kiln::frontend::onnx_import::ImportModel(*model);
  ASSERT_TRUE(reference_graph.ok()) << reference_graph.status();
  auto want = kiln::runtime::RunGraph(**reference_graph, {kiln::ir::IValue::FromTensor(*input)});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->size(), 1u);

  auto graph = kiln::frontend::onnx_import::ImportModel(*model);
  ASSERT_TRUE(graph.ok());
  kiln::driver::CompileOptions options;
  options.device = "sim";
  auto compiled = kiln::driver::CompileGraph(**graph, options);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_GT(compiled->num_kernels, 10);
  EXPECT_EQ(compiled->num_islands, 0);
  auto got = compiled->compiled->Run({*input});
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 1u);
  const Tensor& out = (*got)[0];
  const Tensor& interpreted = (*want)[0].toTensor();
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{1, 1000}));
  ASSERT_EQ(out.sizes(), interpreted.sizes());
  EXPECT_LT(MaxAbsDiff(out, interpreted), 1e-4);
  EXPECT_LT(MaxAbsDiff(out, *torch_output), 1e-3);

  const SimRunStats* stats = SimProgramStats(*compiled->compiled);
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->kernel_launches, compiled->num_kernels);
  EXPECT_EQ(stats->host_externs, compiled->num_externs);  // the convolutions
  std::cout << "squeezenet1_1 on sim: " << compiled->num_kernels << " kernels launched, "
            << compiled->num_externs << " externs on the host, peak device memory "
            << stats->peak_device_bytes << " bytes\n";
}

}  // namespace
}  // namespace kiln_sim
