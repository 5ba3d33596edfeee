// The CUDA backend's benchmarks on a GPU machine (built here with -c opt,
// carried with backends/cuda/make_gpu_carry.sh): device-resident inputs,
// CUDA events, the median of --reps runs, each graph's compile latency
// (cold cubin cache twice, then warm):
//   pointwise chains K=4/8/16 on 64M float32 against a device-to-device
//   copy measured here, sum(-1) 8192^2, softmax 8192^2, layer_norm
//   32768x1024, gelu(x+bias) 8192^2, sgemm 4096^3, mobilenet_v2 batch 1
//   and 32 (full float32, then TF32 convolutions and matmuls, PyTorch's
//   allow_tf32 settings both on).
// Plus a compile-latency probe (where a cold compile's time goes, per NVRTC
// option set). The correctness checks are testing/cuda_gpu_check.cc.
// Flags: --models=DIR (default testdata/onnx_models), --reps=N,
// --nvrtc_experiment (NVRTC timings after GPU work, idle, host traffic).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
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
#include "driver/compile_graph.h"
#include "driver/initialize.h"
#include "frontend/onnx/importer.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "support/allocator.h"
#include "support/status.h"
#include "testing/cuda_gpu_graphs.h"

namespace kiln::benchmarks {
namespace {

// The benchmarks drive the CUDA backend's own types (device, program, caches).
using namespace backends::cuda;  // NOLINT(build/namespaces)
using testing::ChainText;
using testing::FallbackSummary;
using testing::GeluBiasText;
using testing::ImportOptimized;
using testing::LayerNormText;
using testing::MmText;
using testing::SoftmaxText;
using testing::SumText;
using testing::TempCacheDir;

using Clock = std::chrono::steady_clock;

struct Flags {
  std::string models = "testdata/onnx_models";
  bool experiment = false;
  int reps = 20;
};
Flags g_flags;

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

Tensor Random(const std::vector<int64_t>& sizes, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  return testing::RandomFloats(sizes, seed, lo, hi);
}


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
  // Full float32 first (as issue 6 measured), then TF32 for convolutions
  // and matmuls.
  CudaDevice::SetAllowTf32(false);
  for (int64_t batch : {1, 32}) {
    BenchGraph(absl::StrCat("mobilenet_v2_b", batch), [&] { return ImportOptimized(*model, batch); },
               [&] { return std::vector<Tensor>{Random({batch, 3, 224, 224}, 19, -1.0f, 1.0f)}; }, 0);
  }
  CudaDevice::SetAllowTf32(true);
  for (int64_t batch : {1, 32}) {
    BenchGraph(absl::StrCat("mobilenet_v2_b", batch, "_tf32"), [&] { return ImportOptimized(*model, batch); },
               [&] { return std::vector<Tensor>{Random({batch, 3, 224, 224}, 19, -1.0f, 1.0f)}; }, 0);
  }
  // Back to PyTorch's defaults (TF32 for convolutions only).
  CudaDevice::SetMatmulTf32(false);
  CudaDevice::SetConvTf32(true);
}

void PrintSummary() {
  std::printf("\n==== summary ====\n");
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
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (absl::StartsWith(a, "--models=")) {
      g_flags.models = a.substr(9);
    } else if (a == "--nvrtc_experiment") {
      g_flags.experiment = true;
    } else if (absl::StartsWith(a, "--reps=")) {
      g_flags.reps = std::max(1, std::atoi(a.c_str() + 7));
    } else {
      std::fprintf(stderr, "cuda_bench: unknown flag %s (flags: --models=DIR --reps=N --nvrtc_experiment)\n",
                   a.c_str());
      return 2;
    }
  }
  absl::Status setup = driver::Initialize();
  if (setup.ok()) setup = RegisterCudaBackend();
  if (!setup.ok()) {
    std::printf("setup failed: %s\n", setup.ToString().c_str());
    return 2;
  }
  CudaDevice device;
  if (!device.is_available()) {
    std::printf("no CUDA device: %s\n", CudaDevice::UnavailableReason().ToString().c_str());
    return 1;
  }
  if (g_flags.experiment) {
    NvrtcExperiment();
    return 0;
  }
  std::printf("\n==== compile latency probe ====\n");
  ProbeCompileLatency();
  std::printf("\n==== benchmarks (median of %d, device-resident inputs, CUDA events) ====\n", g_flags.reps);
  RunBenchmarks();
  testing::PrintAllocatorStats();
  PrintSummary();
  return 0;
}

}  // namespace
}  // namespace kiln::benchmarks

int main(int argc, char** argv) { return kiln::benchmarks::Main(argc, argv); }
