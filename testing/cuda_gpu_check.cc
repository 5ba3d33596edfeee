// The CUDA backend's checks on a GPU machine, in one self-contained binary
// (built here with -c opt, carried to the GPU machine with its shared
// libraries):
//   1. the device-interface and program gtests (streams, events, guards,
//      properties, allocator stats, sessions and CUDA graphs, cuDNN
//      convolutions, float16/bfloat16 graphs);
//   2. correctness: graphs (pointwise chains, reductions, softmax,
//      layer_norm, gelu, matmul/linear/addmm/bmm) and the ONNX models of
//      testdata/onnx_models compiled for "cuda" through driver::CompileGraph,
//      each compared with runtime::Interpreter (full float32: TF32 off for
//      this check): PASS/FAIL lines.
// The benchmarks are benchmarks/cuda_bench.cc.
// Flags: --models=DIR (default testdata/onnx_models), --no_tests; gtest
// flags pass through.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cuda_program.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/tensor_proto.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "runtime/interpreter.h"
#include "support/allocator.h"
#include "support/status.h"
#include "driver/compile_graph.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "testing/cuda_gpu_graphs.h"

namespace kiln::testing {
namespace {

// The check drives the CUDA backend's own types (device, program, caches).
using namespace backends::cuda;  // NOLINT(build/namespaces)

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string models = "testdata/onnx_models";
  bool tests = true;
};
Flags g_flags;

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

Tensor Random(const std::vector<int64_t>& sizes, uint32_t seed) { return RandomFloats(sizes, seed); }

// ---------------------------------------------------------------- graphs

struct GraphCase {
  std::string name;
  std::string text;
  std::vector<std::vector<int64_t>> shapes;
};

std::vector<GraphCase> CorrectnessCases() {
  std::vector<GraphCase> c;
  c.push_back({"chain_k8_odd", ChainText(8, 1000003, false), {{1000003}}});
  c.push_back({"chain_transcendental_k4", ChainText(4, 65536, true), {{65536}}});
  c.push_back({"sum_last_513x1000", SumText(513, 1000, -1), {{513, 1000}}});
  c.push_back({"sum_first_300x257", SumText(300, 257, 0), {{300, 257}}});
  c.push_back({"softmax_128x1000", SoftmaxText(128, 1000), {{128, 1000}}});
  c.push_back({"softmax_64x8192", SoftmaxText(64, 8192), {{64, 8192}}});
  c.push_back({"layer_norm_256x768", LayerNormText(256, 768), {{256, 768}, {768}, {768}}});
  c.push_back({"gelu_bias_512x1024", GeluBiasText(512, 1024), {{512, 1024}, {1024}}});
  c.push_back({"mm_128x256x64", MmText(128, 256, 64), {{128, 256}, {256, 64}}});
  c.push_back({"linear_bias_64x96x48",
               "graph(%x : Float(64, 96), %w : Float(48, 96), %b : Float(48)):\n"
               "  %y : Tensor = aten::linear(%x, %w, %b)\n  %r : Tensor = aten::relu(%y)\n  return (%r)\n",
               {{64, 96}, {48, 96}, {48}}});
  c.push_back({"addmm_32x40x24",
               "graph(%s : Float(24), %a : Float(32, 40), %b : Float(40, 24)):\n"
               "  %beta : float = prim::Constant[value=0.5]()\n  %alpha : float = prim::Constant[value=2.]()\n"
               "  %y : Tensor = aten::addmm(%s, %a, %b, %beta, %alpha)\n  return (%y)\n",
               {{24}, {32, 40}, {40, 24}}});
  c.push_back({"addmm_lt_bias_256x512x384",
               "graph(%s : Float(384), %a : Float(256, 512), %b : Float(512, 384)):\n"
               "  %one : int = prim::Constant[value=1]()\n"
               "  %y : Tensor = aten::addmm(%s, %a, %b, %one, %one)\n  return (%y)\n",
               {{384}, {256, 512}, {512, 384}}});
  c.push_back({"linear_3d_lt_bias_4x33x96x80",
               "graph(%x : Float(4, 33, 96), %w : Float(80, 96), %b : Float(80)):\n"
               "  %y : Tensor = aten::linear(%x, %w, %b)\n  return (%y)\n",
               {{4, 33, 96}, {80, 96}, {80}}});
  c.push_back({"bmm_4x16x32x8",
               "graph(%a : Float(4, 16, 32), %b : Float(4, 32, 8)):\n"
               "  %c : Tensor = aten::bmm(%a, %b)\n  %t : Tensor = aten::tanh(%c)\n  return (%t)\n",
               {{4, 16, 32}, {4, 32, 8}}});
  c.push_back({"mm_transposed_operand",
               "graph(%a : Float(64, 32), %b : Float(48, 32)):\n  %bt : Tensor = aten::t(%b)\n"
               "  %c : Tensor = aten::mm(%a, %bt)\n  return (%c)\n",
               {{64, 32}, {48, 32}}});
  return c;
}

// ---------------------------------------------------------------- checking

struct Compare {
  bool ok = true;
  double max_abs = 0;
  double rel_l2 = 0;
  std::string why;
};

Compare CompareTensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  Compare c;
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    c.ok = false;
    c.why = absl::StrCat("shape/dtype ", DTypeName(got.dtype()), "[", absl::StrJoin(got.sizes(), ","), "] vs ",
                         DTypeName(want.dtype()), "[", absl::StrJoin(want.sizes(), ","), "]");
    return c;
  }
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.GetDouble(i), w = want.GetDouble(i);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) {
        c.ok = false;
        c.why = absl::StrCat("NaN mismatch at ", i);
      }
      continue;
    }
    const double d = std::fabs(g - w);
    if (std::isinf(w) && g == w) continue;
    c.max_abs = std::max(c.max_abs, d);
    num += d * d;
    den += w * w;
    if (d > atol + rtol * std::fabs(w) && c.why.empty()) c.why = absl::StrCat("element ", i, ": ", g, " vs ", w);
  }
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return c;
}

int g_pass = 0, g_fail = 0;

// Compiles `graph` for cuda, runs it on `inputs` and compares every output
// with the interpreter (on a copy of the graph made before compiling).
void CheckGraph(const std::string& name, ir::Graph& graph, const std::vector<Tensor>& inputs, double rtol,
                double atol, const std::vector<Tensor>* expected = nullptr) {
  std::vector<ir::IValue> args;
  for (const Tensor& t : inputs) args.push_back(ir::IValue::FromTensor(t));
  driver::CompileOptions options;
  options.device = "cuda";
  auto t0 = Clock::now();
  absl::StatusOr<driver::CompiledGraph> compiled = driver::CompileGraph(graph, options);
  const double compile_ms = MsSince(t0);
  if (!compiled.ok()) {
    ++g_fail;
    std::printf("FAIL %-28s compile: %s\n", name.c_str(), std::string(compiled.status().message()).substr(0, 600).c_str());
    return;
  }
  absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(graph, args);
  if (!want.ok()) {
    ++g_fail;
    std::printf("FAIL %-28s interpreter: %s\n", name.c_str(), want.status().ToString().c_str());
    return;
  }
  absl::StatusOr<std::vector<Tensor>> got = compiled->compiled->Run(inputs);
  if (!got.ok()) {
    ++g_fail;
    std::printf("FAIL %-28s run: %s\n", name.c_str(), std::string(got.status().message()).substr(0, 600).c_str());
    return;
  }
  bool ok = got->size() == want->size();
  double max_abs = 0, rel = 0;
  std::string why = ok ? "" : "output count";
  for (size_t i = 0; ok && i < got->size(); ++i) {
    Compare c = CompareTensors((*got)[i], (*want)[i].toTensor(), rtol, atol);
    max_abs = std::max(max_abs, c.max_abs);
    rel = std::max(rel, c.rel_l2);
    if (!c.ok || !c.why.empty()) {
      ok = c.ok && rel <= rtol;  // large models: judged by the relative L2 error
      if (!ok) why = c.why;
    }
  }
  std::string vs_file;
  if (ok && expected != nullptr && expected->size() == got->size()) {
    double rel_file = 0;
    for (size_t i = 0; i < got->size(); ++i) rel_file = std::max(rel_file, CompareTensors((*got)[i], (*expected)[i], 1, 1).rel_l2);
    vs_file = absl::StrCat(" rel_l2_vs_torch_output=", rel_file);
  }
  (ok ? g_pass : g_fail)++;
  std::printf("%s %-28s max_abs=%.3g rel_l2=%.3g kernels=%d externs=%d islands=%d compile_ms=%.1f %s%s%s\n",
              ok ? "PASS" : "FAIL", name.c_str(), max_abs, rel, compiled->num_kernels, compiled->num_externs,
              compiled->num_islands, compile_ms, FallbackSummary(dynamic_cast<CudaProgram*>(compiled->compiled.get())).c_str(),
              vs_file.c_str(), why.empty() ? "" : absl::StrCat(" why: ", why).c_str());
}

void CheckTextCases() {
  for (const GraphCase& c : CorrectnessCases()) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(c.text);
    if (!graph.ok()) {
      ++g_fail;
      std::printf("FAIL %-28s parse: %s\n", c.name.c_str(), graph.status().ToString().c_str());
      continue;
    }
    std::vector<Tensor> inputs;
    uint32_t seed = 7;
    for (const auto& s : c.shapes) inputs.push_back(Random(s, seed++));
    CheckGraph(c.name, **graph, inputs, 1e-4, 1e-4);
  }
}


void CheckModels() {
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(g_flags.models, ec)) {
    if (std::filesystem::exists(e.path() / "model.onnx")) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) std::printf("FAIL models: none found under %s\n", g_flags.models.c_str());
  for (const std::string& name : names) {
    const std::string dir = absl::StrCat(g_flags.models, "/", name);
    absl::StatusOr<onnx::ModelProto> model = frontend::onnx_import::LoadModelFile(dir + "/model.onnx");
    if (!model.ok()) {
      ++g_fail;
      std::printf("FAIL %-28s load: %s\n", name.c_str(), model.status().ToString().c_str());
      continue;
    }
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ImportOptimized(*model, 0);
    if (!graph.ok()) {
      ++g_fail;
      std::printf("FAIL %-28s import: %s\n", name.c_str(), graph.status().ToString().c_str());
      continue;
    }
    std::vector<Tensor> inputs, expected;
    for (int i = 0;; ++i) {
      absl::StatusOr<Tensor> t = frontend::onnx_import::ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/input_", i, ".pb"));
      if (!t.ok()) break;
      inputs.push_back(*t);
    }
    for (int i = 0;; ++i) {
      absl::StatusOr<Tensor> t = frontend::onnx_import::ReadTensorFile(absl::StrCat(dir, "/test_data_set_0/output_", i, ".pb"));
      if (!t.ok()) break;
      expected.push_back(*t);
    }
    CheckGraph(absl::StrCat("onnx/", name), **graph, inputs, 1e-3, 1e-3, &expected);
  }
}

void PrintSummary() { std::printf("\n==== summary: correctness %d passed, %d failed ====\n", g_pass, g_fail); }

int Main(int argc, char** argv) {
  // As kiln's own main does: freed heap memory stays in the process (fresh
  // pages cost tens of microseconds each on the GPU machine's VM, and NVRTC
  // allocates plenty of them per compile).
  KeepFreedMemoryInProcess();
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (absl::StartsWith(a, "--models=")) {
      g_flags.models = a.substr(9);
    } else if (a == "--no_tests") {
      g_flags.tests = false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  int gargc = static_cast<int>(rest.size());
  ::testing::InitGoogleTest(&gargc, rest.data());
  absl::Status setup = driver::Initialize();
  if (setup.ok()) setup = RegisterCudaBackend();
  if (!setup.ok()) {
    std::printf("setup failed: %s\n", setup.ToString().c_str());
    return 2;
  }
  const CudaLibraries& libs = LoadCudaLibraries();
  std::printf("driver: %s (version %d)\nnvrtc: %s %d.%d (%s)\ncublas: %s (%s)\ncudnn: %s %zu (%s)\n",
              libs.driver_status.ToString().c_str(), libs.driver_version, libs.nvrtc_status.ToString().c_str(),
              libs.nvrtc_major, libs.nvrtc_minor, libs.nvrtc_path.c_str(), libs.cublas_status.ToString().c_str(),
              libs.cublas_path.c_str(), libs.cudnn_status.ToString().c_str(), libs.cudnn_version,
              libs.cudnn_path.c_str());
  int test_rc = 0;
  if (g_flags.tests) test_rc = RUN_ALL_TESTS();
  CudaDevice device;
  if (!device.is_available()) {
    std::printf("no CUDA device: %s\n", CudaDevice::UnavailableReason().ToString().c_str());
    return test_rc;
  }
  std::printf("\n==== correctness (compiled for cuda vs runtime::Interpreter, full float32) ====\n");
  CudaDevice::SetAllowTf32(false);
  CheckTextCases();
  CheckModels();
  CudaDevice::SetConvTf32(true);  // PyTorch's default again
  std::fflush(stdout);
  PrintAllocatorStats();
  PrintSummary();
  return test_rc != 0 || g_fail != 0 ? 1 : 0;
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) { return kiln::testing::Main(argc, argv); }
