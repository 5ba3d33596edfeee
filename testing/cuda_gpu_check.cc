// The CUDA backend on a GPU machine, in one self-contained binary (built
// here with -c opt, carried to the GPU machine with its shared libraries):
//   1. the device-interface and program gtests (streams, events, guards,
//      properties, allocator stats, a mixed graph);
//   2. correctness: graphs (pointwise chains, reductions, softmax,
//      layer_norm, gelu, matmul/linear/addmm/bmm) and the ONNX models of
//      testdata/onnx_models compiled for "cuda" through driver::CompileGraph,
//      each compared with runtime::Interpreter: PASS/FAIL lines;
//   3. benchmarks (device-resident inputs, CUDA events, median of runs):
//      pointwise chains K=4/8/16 on 64M float32 against a device-to-device
//      copy measured here, sum(-1) 8192^2, softmax 8192^2, layer_norm
//      32768x1024, gelu(x+bias) 8192^2, sgemm 4096^3, mobilenet_v2 batch 1
//      and 32, each with its compile latency (cold cache and warm).
// Flags: --models=DIR (default testdata/onnx_models), --no_tests,
// --no_bench, --reps=N; gtest flags pass through.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cubin_cache.h"
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

namespace kiln::testing {
namespace {

// The check drives the CUDA backend's own types (device, program, caches).
using namespace backends::cuda;  // NOLINT(build/namespaces)

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string models = "testdata/onnx_models";
  bool tests = true;
  bool bench = true;
  bool experiment = false;
  int reps = 20;
};
Flags g_flags;

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

Tensor Random(const std::vector<int64_t>& sizes, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  Tensor t = Tensor::Empty(DType::kFloat32, sizes);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

std::string TempCacheDir(const std::string& tag) {
  static int n = 0;
  const char* tmp = std::getenv("TMPDIR");
  return absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/kiln_cuda_check_", ::getpid(), "_", tag, "_", n++);
}

// ---------------------------------------------------------------- graphs

std::string ChainText(int k, int64_t n, bool transcendental) {
  std::string text = absl::StrCat("graph(%x : Float(", n, ")):\n", "  %one : int = prim::Constant[value=1]()\n",
                                  "  %ca : float = prim::Constant[value=", transcendental ? "0.5" : "0.1", "]()\n",
                                  "  %cm : float = prim::Constant[value=", transcendental ? "1.1" : "0.9", "]()\n");
  std::string prev = "%x";
  for (int i = 0; i < k; ++i) {
    const std::string v = absl::StrCat("%y", i);
    switch (transcendental ? i % 4 : i % 2) {
      case 0: absl::StrAppend(&text, "  ", v, " : Tensor = aten::add(", prev, ", %ca, %one)\n"); break;
      case 1: absl::StrAppend(&text, "  ", v, " : Tensor = aten::mul(", prev, ", %cm)\n"); break;
      case 2: absl::StrAppend(&text, "  ", v, " : Tensor = aten::tanh(", prev, ")\n"); break;
      default: absl::StrAppend(&text, "  ", v, " : Tensor = aten::sigmoid(", prev, ")\n"); break;
    }
    prev = v;
  }
  absl::StrAppend(&text, "  return (", prev, ")\n");
  return text;
}

std::string SumText(int64_t m, int64_t n, int dim) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, ")):\n  %d : int[] = prim::Constant[value=[", dim,
                      "]]()\n  %f : bool = prim::Constant[value=0]()\n  %n : NoneType = prim::Constant()\n"
                      "  %s : Tensor = aten::sum(%x, %d, %f, %n)\n  return (%s)\n");
}

std::string SoftmaxText(int64_t m, int64_t n) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, ")):\n  %d : int = prim::Constant[value=-1]()\n",
                      "  %n : NoneType = prim::Constant()\n  %s : Tensor = aten::softmax(%x, %d, %n)\n  return (%s)\n");
}

std::string LayerNormText(int64_t m, int64_t n) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, "), %w : Float(", n, "), %b : Float(", n, ")):\n",
                      "  %shape : int[] = prim::Constant[value=[", n, "]]()\n",
                      "  %eps : float = prim::Constant[value=1.0000000000000001e-05]()\n",
                      "  %f : bool = prim::Constant[value=0]()\n",
                      "  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %f)\n  return (%y)\n");
}

std::string GeluBiasText(int64_t m, int64_t n) {
  return absl::StrCat("graph(%x : Float(", m, ", ", n, "), %b : Float(", n, ")):\n",
                      "  %one : int = prim::Constant[value=1]()\n",
                      "  %approx : str = prim::Constant[value=\"none\"]()\n",
                      "  %a : Tensor = aten::add(%x, %b, %one)\n  %g : Tensor = aten::gelu(%a, %approx)\n",
                      "  return (%g)\n");
}

std::string MmText(int64_t m, int64_t k, int64_t n) {
  return absl::StrCat("graph(%a : Float(", m, ", ", k, "), %b : Float(", k, ", ", n, ")):\n",
                      "  %c : Tensor = aten::mm(%a, %b)\n  return (%c)\n");
}

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

std::string FallbackSummary(CudaProgram* p) {
  if (p == nullptr) return "interpreted";
  std::lock_guard<std::mutex> lock(p->stats().mu);
  std::vector<std::string> parts;
  for (const auto& [op, n] : p->stats().fallback_ops) parts.push_back(absl::StrCat(op, "x", n));
  return absl::StrCat("launches/run=", p->stats().runs ? p->stats().launches / p->stats().runs : 0,
                      " cublas=", p->stats().cublas_calls.load(), " gpu_conv=", p->stats().gpu_convolutions.load(), " host_fallbacks=", p->stats().host_fallbacks.load(),
                      parts.empty() ? "" : absl::StrCat(" (", absl::StrJoin(parts, ", "), ")"));
}

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
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, frontend::onnx_import::ImportModel(model));
  ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> p, passes::Pipeline::Create("-O2", passes::DefaultPassRegistry()));
  ASSIGN_OR_RETURN(bool changed, p->Run(*graph));
  (void)changed;
  return graph;
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

// ---------------------------------------------------------------- benchmarks

struct Timer {
  std::unique_ptr<devices::Event> start, end;
  Timer() {
    CudaDevice d;
    start = std::move(*d.CreateEvent(0, true));
    end = std::move(*d.CreateEvent(0, true));
  }
};

devices::Stream* CurrentStream() { return *CudaDevice().CurrentStream(0); }

// Median milliseconds of `fn` over reps (events around each call).
template <typename Fn>
absl::StatusOr<double> TimeMs(Fn fn, int reps, int warmup = 3) {
  for (int i = 0; i < warmup; ++i) RETURN_IF_ERROR(fn());
  Timer t;
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    RETURN_IF_ERROR(t.start->Record(*CurrentStream()));
    RETURN_IF_ERROR(fn());
    RETURN_IF_ERROR(t.end->Record(*CurrentStream()));
    RETURN_IF_ERROR(t.end->Synchronize());
    ASSIGN_OR_RETURN(double m, t.start->ElapsedTime(*t.end));
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double g_copy_gbs = 0;

void BenchCopy() {
  const size_t bytes = size_t{64} << 22;  // 64M float32
  CudaDevice d;
  absl::StatusOr<std::shared_ptr<DeviceStorage>> a = d.AllocateStorage(0, bytes), b = d.AllocateStorage(0, bytes);
  if (!a.ok() || !b.ok()) return;
  const CudaDriverApi& api = LoadCudaLibraries().driver;
  CUstream s = *d.CurrentCuStream(0);
  absl::StatusOr<double> ms = TimeMs([&] { return CuCheck(api.cuMemcpyDtoDAsync((*b)->ptr(), (*a)->ptr(), bytes, s), "copy"); },
                                     g_flags.reps);
  if (!ms.ok()) {
    std::printf("BENCH copy failed: %s\n", ms.status().ToString().c_str());
    return;
  }
  g_copy_gbs = 2.0 * static_cast<double>(bytes) / (*ms * 1e-3) / 1e9;
  std::printf("BENCH %-26s %9.4f ms  %7.0f GB/s (read+write, 256 MiB)\n", "d2d_copy_64M", *ms, g_copy_gbs);
}

struct BenchResult {
  std::string name;
  double ms = 0, gbs = 0, compile_cold_ms = 0, compile_warm_ms = 0;
};
std::vector<BenchResult> g_results;

// Compiles `graph` (cold: an empty cubin cache; then warm: a second compile
// of a fresh parse), times RunDevice on device-resident inputs.
// Inputs are made after compiling, so that filling hundreds of MB of host
// memory (which the GPU machine's VM grows slowly) stays out of the compile.
void BenchGraph(const std::string& name, const std::function<absl::StatusOr<std::unique_ptr<ir::Graph>>()>& make,
                const std::function<std::vector<Tensor>()>& make_inputs, double bytes_moved) {
  // Two cold compiles (each on an empty cache), then a warm one.
  double cold = 0, cold2 = 0, warm = 0;
  std::unique_ptr<driver::CompiledGraph> keep;
  for (int pass = 0; pass < 3; ++pass) {
    if (pass < 2) ::setenv("KILN_CACHE_DIR", TempCacheDir(name).c_str(), 1);
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = make();
    if (!graph.ok()) {
      std::printf("BENCH %-26s FAILED: %s\n", name.c_str(), graph.status().ToString().c_str());
      return;
    }
    driver::CompileOptions options;
    options.device = "cuda";
    auto t0 = Clock::now();
    absl::StatusOr<driver::CompiledGraph> c = driver::CompileGraph(**graph, options);
    (pass == 0 ? cold : pass == 1 ? cold2 : warm) = MsSince(t0);
    if (c.ok() && pass < 2) {
      if (auto* p = dynamic_cast<CudaProgram*>(c->compiled.get())) {
        std::printf("      %s cold compile: front half %.2f ms, device compile %.2f ms (units %d, nvrtc+cache %.2f ms "
                    "of which inside NVRTC %.2f ms summed over units, -minimal fallbacks %d, module load %.2f ms)\n",
                    name.c_str(), c->times.FrontHalfMs(), c->times.compile_ms, p->stats().translation_units,
                    p->stats().nvrtc_seconds * 1e3, p->stats().compiler_seconds * 1e3, p->stats().minimal_fallbacks,
                    p->stats().load_seconds * 1e3);
      }
    }
    if (!c.ok()) {
      std::printf("BENCH %-26s FAILED compile: %s\n", name.c_str(), std::string(c.status().message()).substr(0, 400).c_str());
      return;
    }
    keep = std::make_unique<driver::CompiledGraph>(std::move(*c));
  }
  ::unsetenv("KILN_CACHE_DIR");
  auto* program = dynamic_cast<CudaProgram*>(keep->compiled.get());
  if (program == nullptr) {
    std::printf("BENCH %-26s FAILED: not a CUDA program (whole graph interpreted)\n", name.c_str());
    return;
  }
  absl::StatusOr<std::vector<DeviceTensor>> dev = program->Upload(make_inputs());
  if (!dev.ok()) {
    std::printf("BENCH %-26s FAILED upload: %s\n", name.c_str(), dev.status().ToString().c_str());
    return;
  }
  absl::StatusOr<double> ms = TimeMs([&]() -> absl::Status { return program->RunDevice(*dev).status(); }, g_flags.reps);
  if (!ms.ok()) {
    std::printf("BENCH %-26s FAILED run: %s\n", name.c_str(), ms.status().ToString().c_str());
    return;
  }
  BenchResult r{name, *ms, bytes_moved > 0 ? bytes_moved / (*ms * 1e-3) / 1e9 : 0, cold, warm};
  g_results.push_back(r);
  std::printf("BENCH %-26s %9.4f ms  %7.0f GB/s %s compile cold %.1f / %.1f ms warm %.1f ms  kernels=%d %s\n",
              name.c_str(), r.ms, r.gbs,
              g_copy_gbs > 0 && r.gbs > 0 ? absl::StrFormat("(%.0f%% of copy)", 100 * r.gbs / g_copy_gbs).c_str() : "",
              cold, cold2, warm, keep->num_kernels, FallbackSummary(program).c_str());
  std::fflush(stdout);
}

std::function<absl::StatusOr<std::unique_ptr<ir::Graph>>()> FromText(std::string text) {
  return [text] { return ir::ParseGraph(text); };
}

// Where a cold compile's time goes, and what NVRTC options would save:
// the chain_k8 and softmax kernels compiled without the cache, per variant.
void ProbeCompileLatency() {
  const int64_t n64m = int64_t{64} << 20;
  const std::pair<const char*, std::string> graphs[] = {{"chain_k8", ChainText(8, n64m, false)},
                                                        {"softmax", SoftmaxText(8192, 8192)}};
  for (const auto& [label, text] : graphs) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(text);
    if (!graph.ok()) continue;
    driver::CompileOptions options;
    options.device = "cuda";
    options.generate_only = true;
    absl::StatusOr<driver::CompiledGraph> c = driver::CompileGraph(**graph, options);
    if (!c.ok()) continue;
    std::printf("PROBE %-9s front half %.2f ms (shapes %.2f lower %.2f schedule %.2f wrapper+kernel source %.2f plan %.2f)\n",
                label, c->times.FrontHalfMs(), c->times.shapes_ms, c->times.lower_ms, c->times.schedule_ms,
                c->times.wrapper_ms, c->times.plan_ms);
    std::string source;
    for (const wrapper::Line& line : c->program.lines) {
      if (const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line)) source = def->kernel_body;
    }
    const std::vector<std::vector<std::string>> variants = {
        {"--gpu-architecture=sm_90", "-std=c++17"},
        {"--gpu-architecture=sm_90", "-std=c++17", "-minimal"},
        {"--gpu-architecture=sm_90", "-std=c++17", "-minimal", "--ptxas-options=-O1"},
        {"--gpu-architecture=compute_90", "-std=c++17", "-minimal"},
    };
    const CudaDriverApi& d = LoadCudaLibraries().driver;
    for (const auto& v : variants) {
      const bool ptx = absl::StartsWith(v[0], "--gpu-architecture=compute");
      std::vector<double> compile_ms, load_ms;
      std::string error;
      for (int rep = 0; rep < 5; ++rep) {
        auto t0 = Clock::now();
        absl::StatusOr<std::string> image = ptx ? CompileToPtxWithNvrtc(source, v) : CompileWithNvrtc(source, v);
        compile_ms.push_back(MsSince(t0));
        if (!image.ok()) {
          error = std::string(image.status().message()).substr(0, 200);
          break;
        }
        auto t1 = Clock::now();
        CUmodule m = nullptr;
        absl::Status s = CuCheck(d.cuModuleLoadData(&m, image->data()), "cuModuleLoadData");
        load_ms.push_back(MsSince(t1));
        if (s.ok()) d.cuModuleUnload(m);
      }
      std::sort(compile_ms.begin(), compile_ms.end());
      std::sort(load_ms.begin(), load_ms.end());
      std::printf("PROBE %-9s nvrtc %7.2f ms (min %7.2f) load %6.2f ms  [%s]%s\n", label,
                  compile_ms[compile_ms.size() / 2], compile_ms[0], load_ms.empty() ? 0.0 : load_ms[load_ms.size() / 2],
                  absl::StrJoin(v, " ").c_str(), error.empty() ? "" : absl::StrCat(" FAILED: ", error).c_str());
    }
  }
  std::fflush(stdout);
}

// Why is the first compile after a benchmark slower than the next? NVRTC on
// one kernel source after: nothing, GPU work, an idle pause, host memory
// traffic.
void NvrtcExperiment() {
  absl::StatusOr<std::unique_ptr<ir::Graph>> graph = ir::ParseGraph(SoftmaxText(8192, 8192));
  if (!graph.ok()) return;
  driver::CompileOptions options;
  options.device = "cuda";
  options.generate_only = true;
  absl::StatusOr<driver::CompiledGraph> c = driver::CompileGraph(**graph, options);
  if (!c.ok()) return;
  std::string source;
  for (const wrapper::Line& line : c->program.lines) {
    if (const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line)) source = def->kernel_body;
  }
  const std::vector<std::string> opts = {"--gpu-architecture=sm_90", "-std=c++17", "-minimal"};
  auto compile = [&](const char* after) {
    auto t0 = Clock::now();
    absl::StatusOr<std::string> cubin = CompileWithNvrtc(source, opts);
    std::printf("EXPERIMENT nvrtc softmax after %-32s %8.2f ms %s\n", after, MsSince(t0), cubin.ok() ? "" : "FAILED");
    std::fflush(stdout);
  };
  compile("start");
  compile("a compile");
  compile("a compile");
  CudaDevice d;
  const size_t bytes = size_t{256} << 20;
  absl::StatusOr<std::shared_ptr<DeviceStorage>> a = d.AllocateStorage(0, bytes), b = d.AllocateStorage(0, bytes);
  const CudaDriverApi& api = LoadCudaLibraries().driver;
  CUstream s = *d.CurrentCuStream(0);
  auto gpu_work = [&](int n) {
    Timer t;
    for (int i = 0; i < n; ++i) {
      (void)t.start->Record(*CurrentStream());
      (void)api.cuMemcpyDtoDAsync((*b)->ptr(), (*a)->ptr(), bytes, s);
      (void)t.end->Record(*CurrentStream());
      (void)t.end->Synchronize();
    }
  };
  gpu_work(30);
  compile("30 timed GPU copies (6 ms)");
  compile("a compile");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  compile("100 ms sleep");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  compile("1 s sleep");
  {
    Tensor big = Random({int64_t{64} << 20}, 5);
  }
  compile("256 MB host fill + free");
  gpu_work(200);
  compile("200 timed GPU copies (40 ms)");
  auto spin_until = Clock::now() + std::chrono::milliseconds(300);
  volatile double x = 0;
  while (Clock::now() < spin_until) x = x + 1.0;
  compile("300 ms CPU spin");
  gpu_work(1000);
  compile("1000 timed GPU copies (190 ms)");
  compile("a compile");
  // New sources (a distinct extra kernel each) back to back, then the first
  // again: is it the source's novelty that costs?
  const std::string base = source;
  for (int i = 0; i < 4; ++i) {
    source = absl::StrCat(base, "\nextern \"C\" __global__ void kiln_unique_", i, "(float* p) { p[0] = ", i, ".5f; }\n");
    compile(absl::StrCat("new source ", i).c_str());
  }
  source = absl::StrCat(base, "\nextern \"C\" __global__ void kiln_unique_0(float* p) { p[0] = 0.5f; }\n");
  compile("new source 0 again");
  source = absl::StrCat(base, "\nextern \"C\" __global__ void kiln_unique_0(float* p) { p[0] = 0.5f; }\n// a comment\n");
  compile("new source 0 + a comment");
  // The chain kernel (another graph) for the first time, then again.
  absl::StatusOr<std::unique_ptr<ir::Graph>> chain = ir::ParseGraph(ChainText(8, int64_t{64} << 20, false));
  if (chain.ok()) {
    absl::StatusOr<driver::CompiledGraph> cc = driver::CompileGraph(**chain, options);
    if (cc.ok()) {
      for (const wrapper::Line& line : cc->program.lines) {
        if (const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line)) source = def->kernel_body;
      }
      compile("chain_k8 first time");
      compile("chain_k8 again");
    }
  }
  // NVRTC options against novel sources (no compute-cache hits).
  const std::string chain_base = source;
  const std::vector<std::vector<std::string>> variants = {
      {"--gpu-architecture=sm_90", "-std=c++17"},
      {"--gpu-architecture=sm_90", "-std=c++17", "-minimal"},
      {"--gpu-architecture=sm_90", "-std=c++17", "-minimal", "--Ofast-compile=max"},
      {"--gpu-architecture=sm_90", "-std=c++17", "-minimal", "--Ofast-compile=mid"},
      {"--gpu-architecture=sm_90", "-std=c++17", "-minimal", "--Ofast-compile=min"},
      {"--gpu-architecture=sm_90", "-std=c++17", "-minimal", "--ptxas-options=-O1"},
  };
  int unique = 100;
  for (const auto& v : variants) {
    for (const auto& [label, src] : {std::pair<const char*, std::string>{"softmax", base}, {"chain_k8", chain_base}}) {
      std::vector<double> ms;
      std::string error;
      for (int rep = 0; rep < 3; ++rep) {
        const std::string novel = absl::StrCat(src, "\nextern \"C\" __global__ void kiln_unique_", unique,
                                               "(float* p) { p[0] = ", unique, ".5f; }\n");
        ++unique;
        auto t0 = Clock::now();
        absl::StatusOr<std::string> cubin = CompileWithNvrtc(novel, v);
        ms.push_back(MsSince(t0));
        if (!cubin.ok()) error = std::string(cubin.status().message()).substr(0, 160);
      }
      std::sort(ms.begin(), ms.end());
      std::printf("EXPERIMENT novel %-8s median %7.2f ms [%s]%s\n", label, ms[1], absl::StrJoin(v, " ").c_str(),
                  error.empty() ? "" : absl::StrCat(" FAILED ", error).c_str());
      std::fflush(stdout);
    }
  }
}

void RunBenchmarks() {
  BenchCopy();
  const int64_t n64m = int64_t{64} << 20;
  for (int k : {4, 8, 16}) {
    BenchGraph(absl::StrCat("chain_k", k, "_64M"), FromText(ChainText(k, n64m, false)),
               [&] { return std::vector<Tensor>{Random({n64m}, 11)}; }, 8.0 * n64m);
  }
  const int64_t n = 8192;
  BenchGraph("sum_last_8192^2", FromText(SumText(n, n, -1)), [&] { return std::vector<Tensor>{Random({n, n}, 12)}; },
             4.0 * n * n + 4.0 * n);
  BenchGraph("softmax_8192^2", FromText(SoftmaxText(n, n)), [&] { return std::vector<Tensor>{Random({n, n}, 12)}; },
             8.0 * n * n);
  BenchGraph("gelu_bias_8192^2", FromText(GeluBiasText(n, n)),
             [&] { return std::vector<Tensor>{Random({n, n}, 12), Random({n}, 13)}; }, 8.0 * n * n + 4.0 * n);
  BenchGraph("layer_norm_32768x1024", FromText(LayerNormText(32768, 1024)),
             [&] { return std::vector<Tensor>{Random({32768, 1024}, 14), Random({1024}, 15), Random({1024}, 16)}; },
             8.0 * 32768 * 1024);
  BenchGraph("sgemm_4096^3", FromText(MmText(4096, 4096, 4096)),
             [&] { return std::vector<Tensor>{Random({4096, 4096}, 17), Random({4096, 4096}, 18)}; }, 0);
  if (!g_results.empty() && g_results.back().name == "sgemm_4096^3") {
    std::printf("      sgemm_4096^3: %.1f TFLOP/s (fp32, cuBLAS)\n", 2.0 * 4096.0 * 4096 * 4096 / (g_results.back().ms * 1e-3) / 1e12);
  }
  absl::StatusOr<onnx::ModelProto> model =
      frontend::onnx_import::LoadModelFile(absl::StrCat(g_flags.models, "/mobilenet_v2/model.onnx"));
  if (!model.ok()) {
    std::printf("BENCH mobilenet_v2 FAILED: %s\n", model.status().ToString().c_str());
    return;
  }
  for (int64_t batch : {1, 32}) {
    BenchGraph(absl::StrCat("mobilenet_v2_b", batch), [&] { return ImportOptimized(*model, batch); },
               [&] { return std::vector<Tensor>{Random({batch, 3, 224, 224}, 19, -1.0f, 1.0f)}; }, 0);
  }
  // Like for like with PyTorch's defaults, whose convolutions use TF32
  // (torch.backends.cudnn.allow_tf32 = True): the GEMMs on TF32 tensor cores.
  CudaDevice::SetAllowTf32(true);
  for (int64_t batch : {1, 32}) {
    BenchGraph(absl::StrCat("mobilenet_v2_b", batch, "_tf32"), [&] { return ImportOptimized(*model, batch); },
               [&] { return std::vector<Tensor>{Random({batch, 3, 224, 224}, 19, -1.0f, 1.0f)}; }, 0);
  }
  CudaDevice::SetAllowTf32(false);
}

void PrintSummary() {
  std::printf("\n==== summary: correctness %d passed, %d failed ====\n", g_pass, g_fail);
  std::printf("%-26s %10s %9s %8s %12s %12s\n", "benchmark", "ms", "GB/s", "%copy", "compile_cold", "compile_warm");
  std::printf("(compile_cold: the first compile on an empty cubin cache, in ms; compile_warm: a cubin cache hit)\n");
  std::printf("%-26s %10s %9.0f %8s\n", "d2d_copy_64M", "", g_copy_gbs, "100");
  for (const BenchResult& r : g_results) {
    std::printf("%-26s %10.4f %9.0f %8.1f %12.1f %12.1f\n", r.name.c_str(), r.ms, r.gbs,
                g_copy_gbs > 0 ? 100 * r.gbs / g_copy_gbs : 0.0, r.compile_cold_ms, r.compile_warm_ms);
  }
}

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
    } else if (a == "--nvrtc_experiment") {
      g_flags.experiment = true;
    } else if (a == "--no_bench") {
      g_flags.bench = false;
    } else if (absl::StartsWith(a, "--reps=")) {
      g_flags.reps = std::max(1, std::atoi(a.c_str() + 7));
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
  std::printf("driver: %s (version %d)\nnvrtc: %s %d.%d (%s)\ncublas: %s (%s)\n",
              libs.driver_status.ToString().c_str(), libs.driver_version, libs.nvrtc_status.ToString().c_str(),
              libs.nvrtc_major, libs.nvrtc_minor, libs.nvrtc_path.c_str(), libs.cublas_status.ToString().c_str(),
              libs.cublas_path.c_str());
  if (g_flags.experiment) {
    if (CudaDevice().is_available()) NvrtcExperiment();
    return 0;
  }
  int test_rc = 0;
  if (g_flags.tests) test_rc = RUN_ALL_TESTS();
  CudaDevice device;
  if (!device.is_available()) {
    std::printf("no CUDA device: %s\n", CudaDevice::UnavailableReason().ToString().c_str());
    return test_rc;
  }
  std::printf("\n==== correctness (compiled for cuda vs runtime::Interpreter) ====\n");
  CheckTextCases();
  CheckModels();
  std::fflush(stdout);
  if (g_flags.bench) {
    std::printf("\n==== compile latency probe ====\n");
    ProbeCompileLatency();
    std::printf("\n==== benchmarks (median of %d, device-resident inputs, CUDA events) ====\n", g_flags.reps);
    RunBenchmarks();
  }
  absl::StatusOr<AllocatorStats> s = device.allocator_stats(0);
  if (s.ok()) {
    std::printf("allocator: allocated %lld peak %lld cached %lld reserved %lld driver_allocs %lld hits %lld/%lld\n",
                static_cast<long long>(s->allocated_bytes), static_cast<long long>(s->peak_allocated_bytes),  // NOLINT
                static_cast<long long>(s->cached_bytes), static_cast<long long>(s->reserved_bytes),  // NOLINT
                static_cast<long long>(s->driver_allocs), static_cast<long long>(s->cache_hits),  // NOLINT
                static_cast<long long>(s->requests));  // NOLINT
  }
  PrintSummary();
  return test_rc != 0 || g_fail != 0 ? 1 : 0;
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) { return kiln::testing::Main(argc, argv); }
