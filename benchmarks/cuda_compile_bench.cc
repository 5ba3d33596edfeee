// Where a cold CUDA compile of a model goes (issue 15), without a GPU:
// import, -O2, the compile stages up to the wrapper (kernel sources
// generated), then the CUDA backend's NVRTC build (CudaCodegen::BuildCubins:
// translation units compiled in parallel) on an empty cubin cache with
// NVRTC's own cache off (CUDA_CACHE_DISABLE=1). Prints per model: stage
// times, kernels and distinct kernel texts (and how many would remain if
// sizes and other numbers were not baked in), units and NVRTC seconds per
// unit.
//
//   cuda_compile_bench [--threads=N] [--per_unit=K] [--nvrtc="-opt ..."]
//                      [--full] [--dump=DIR] [--simulate=N] MODEL.onnx...
//
// --threads: compile threads (default: the backend's); --per_unit:
// kernels per NVRTC unit (default: the backend's; 0 balanced); --nvrtc:
// extra NVRTC options; --full: without -minimal; --dump: writes
// DIR/<model>/unit_K.cu; --simulate=N: also the NVRTC wall time modelled
// for N idle cores (the units planned for N threads, each compiled alone
// here, thread CPU time, dealt to the first free thread).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_program.h"
#include "driver/compile_graph.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "ir/verifier.h"
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "runtime/tensor_ops.h"
#include "frontend/onnx/importer.h"
#include "support/atomic_file.h"
#include "support/allocator.h"
#include "support/status.h"
#include "testing/cuda_gpu_graphs.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::benchmarks {
namespace {

using Clock = std::chrono::steady_clock;
double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Flags {
  backends::cuda::CudaBackendOptions backend;
  std::string dump;
  int simulate = 0;
  std::vector<std::string> models;
};

// The function name the codegen put in the source ("// kiln kernel kk_...").
std::string FunctionName(const std::string& source) {
  const std::string kMarker = "// kiln kernel ";
  const size_t at = source.rfind(kMarker);
  if (at == std::string::npos) return "";
  const size_t begin = at + kMarker.size();
  return source.substr(begin, source.find('\n', begin) - begin);
}

double ThreadCpuMs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// A machine with `flags.simulate` idle cores, modelled on this one: the
// units the backend would make there, each compiled alone here (thread CPU
// time), then dealt in order to the first free thread.
void Simulate(const std::string& label, const std::vector<backends::cuda::CudaKernelSource>& kernels,
              const Flags& flags) {
  backends::cuda::CudaBackendOptions backend = flags.backend;
  backend.hardware_threads = flags.simulate;
  backend.max_threads = flags.simulate;
  backends::cuda::CudaCodegen codegen("cuda", backend);
  const std::vector<backends::cuda::CudaCodegen::Unit> units = codegen.MakeUnits(kernels);
  const std::vector<std::string> options = codegen.NvrtcOptions(backend.minimal);
  std::vector<double> free_at(static_cast<size_t>(flags.simulate), 0.0);
  double sum = 0;
  for (const backends::cuda::CudaCodegen::Unit& u : units) {
    const double t0 = ThreadCpuMs();
    absl::StatusOr<std::string> cubin = backends::cuda::CompileWithNvrtc(u.source, options);
    const double ms = ThreadCpuMs() - t0;
    if (!cubin.ok()) {
      std::printf("SIMULATE %s FAILED: %s\n", label.c_str(), cubin.status().ToString().c_str());
      return;
    }
    sum += ms;
    *std::min_element(free_at.begin(), free_at.end()) += ms;
  }
  std::printf("SIMULATE %-12s %d threads: %zu units, NVRTC CPU %.0f ms, modelled wall %.0f ms\n", label.c_str(),
              flags.simulate, units.size(), sum, *std::max_element(free_at.begin(), free_at.end()));
  std::fflush(stdout);
}

absl::Status BenchModel(const std::string& path, const Flags& flags) {
  const std::string label = std::filesystem::path(path).parent_path().filename().string();
  // The import's parts first (a second read of the file, for the split).
  auto t = Clock::now();
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  const double read_ms = MsSince(t);
  t = Clock::now();
  ASSIGN_OR_RETURN(onnx::ModelProto proto, frontend::onnx_import::ParseModel(bytes));
  const double parse_ms = MsSince(t);
  bytes.clear();
  bytes.shrink_to_fit();
  proto.Clear();
  t = Clock::now();
  {
    ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::Open(path));
    ASSIGN_OR_RETURN(onnx::ModelProto mapped_proto, frontend::onnx_import::ParseModel(mapped.bytes()));
  }
  const double map_parse_ms = MsSince(t);
  t = Clock::now();
  ASSIGN_OR_RETURN(driver::ImportedModel model, driver::ImportModelFile(path));
  const double import_ms = MsSince(t);
  t = Clock::now();
  RETURN_IF_ERROR(ir::Verify(*model.graph));
  const double verify_ms = MsSince(t);
  t = Clock::now();
  {
    ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> p, passes::Pipeline::Create("-O2", passes::DefaultPassRegistry()));
  }
  const double create_ms = MsSince(t);
  double passes_ms = 0;
  double in_passes_ms = 0;
  passes::PassObserver on_pass = [&](absl::string_view, Clock::time_point begin, Clock::time_point end, bool) {
    in_passes_ms += std::chrono::duration<double, std::milli>(end - begin).count();
  };
  RETURN_IF_ERROR(driver::RunPipeline(*model.graph, "-O2", &passes_ms, /*verify_each_pass=*/true, on_pass));
  driver::CompileOptions options;
  options.device = "cuda";
  options.generate_only = true;
  ASSIGN_OR_RETURN(driver::CompiledGraph c, driver::CompileGraph(*model.graph, options));

  // What CudaProgram::Create did for every weight before uploading it (a
  // zeroed staging tensor in the slot's layout and an element-wise copy),
  // which contiguous weights now skip.
  ASSIGN_OR_RETURN(backends::cuda::ResolvedProgram resolved, backends::cuda::ResolveProgram(c.program));
  t = Clock::now();
  int64_t constant_bytes = 0;
  for (const auto& [slot, tensor] : resolved.constants) {
    const lowering::Layout& l = resolved.slot_layouts[static_cast<size_t>(slot)];
    Tensor staging = Tensor::Empty(l.dtype, {std::max<int64_t>(l.StorageElements(), 1)});
    Tensor view = Tensor::View(staging, l.sizes, l.strides, l.offset);
    RETURN_IF_ERROR(runtime::CopyInto(tensor, view));
    constant_bytes += l.StorageBytes();
  }
  const double staging_ms = MsSince(t);
  std::printf("CONSTANTS %-12s %zu constants, %.1f MB: staging copies (before this branch, now skipped for contiguous "
              "ones) %.1f ms\n",
              label.c_str(), resolved.constants.size(), constant_bytes / 1e6, staging_ms);

  std::vector<backends::cuda::CudaKernelSource> kernels;
  std::set<std::string> names;
  std::set<std::string> shapes;  // texts with every number replaced
  int total = 0;
  const std::regex number("[0-9]+");
  for (const wrapper::Line& line : c.program.lines) {
    const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line);
    if (def == nullptr) continue;
    ++total;
    backends::cuda::CudaKernelSource k;
    k.source = def->kernel_body;
    k.name = FunctionName(k.source);
    if (k.name.empty()) return absl::InternalError(absl::StrCat(def->kernel_name, ": no '// kiln kernel' line"));
    if (names.insert(k.name).second) {
      const size_t body = k.source.find("extern \"C\"", k.source.rfind("// kiln kernel "));
      std::string text = k.source.substr(body);
      absl::StrReplaceAll({{k.name, "kk_"}}, &text);
      shapes.insert(std::regex_replace(text, number, "#"));
      kernels.push_back(std::move(k));
    }
  }
  const std::string cache = testing::TempCacheDir("compile_bench");
  backends::cuda::CudaBackendOptions backend = flags.backend;
  backend.cache_dir = cache;
  backends::cuda::CudaCodegen codegen("cuda", backend);
  ASSIGN_OR_RETURN(backends::cuda::CudaCodegen::CubinBuild build, codegen.BuildCubins(kernels));
  std::filesystem::remove_all(cache);
  std::vector<double> unit_ms;
  size_t source_bytes = 0;
  for (size_t i = 0; i < build.units.size(); ++i) {
    unit_ms.push_back(build.cubins[i].compile_seconds * 1e3);
    source_bytes += build.units[i].source.size();
    if (!flags.dump.empty()) {
      const std::string dir = absl::StrCat(flags.dump, "/", label);
      std::filesystem::create_directories(dir);
      std::ofstream(absl::StrCat(dir, "/unit_", i, ".cu")) << build.units[i].source;
    }
  }
  std::vector<double> sorted = unit_ms;
  std::sort(sorted.begin(), sorted.end());
  const double host_ms = import_ms + passes_ms + c.times.FrontHalfMs();
  std::printf(
      "COMPILE %-12s host %7.1f ms (import %.1f [alone: read %.1f parse %.1f, mapped + parse %.1f] passes %.1f [in passes %.1f; alone: verifier %.1f, pipeline creation %.1f] shapes %.1f lower %.1f schedule %.1f wrapper+sources "
      "%.1f plan %.1f) | kernels %d distinct %zu (%zu ignoring numbers) units %zu (%.0f KB) threads %d | nvrtc wall "
      "%.0f ms, per unit sum %.0f min %.0f median %.0f max %.0f ms | total %.0f ms\n",
      label.c_str(), host_ms, import_ms, read_ms, parse_ms, map_parse_ms, passes_ms, in_passes_ms, verify_ms, create_ms, c.times.shapes_ms, c.times.lower_ms, c.times.schedule_ms,
      c.times.wrapper_ms, c.times.plan_ms, total, kernels.size(), shapes.size(), build.units.size(),
      source_bytes / 1024.0, build.threads, build.seconds * 1e3, build.compiler_seconds * 1e3,
      sorted.empty() ? 0 : sorted.front(), sorted.empty() ? 0 : sorted[sorted.size() / 2],
      sorted.empty() ? 0 : sorted.back(), host_ms + build.seconds * 1e3);
  std::fflush(stdout);
  if (flags.simulate > 0) Simulate(label, kernels, flags);
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  KeepFreedMemoryInProcess();
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (absl::StartsWith(a, "--threads=")) {
      flags.backend.max_threads = std::max(1, std::atoi(a.c_str() + 10));
    } else if (absl::StartsWith(a, "--per_unit=")) {
      flags.backend.kernels_per_unit = std::max(0, std::atoi(a.c_str() + 11));
    } else if (absl::StartsWith(a, "--simulate=")) {
      flags.simulate = std::max(1, std::atoi(a.c_str() + 11));
    } else if (absl::StartsWith(a, "--nvrtc=")) {
      for (absl::string_view o : absl::StrSplit(a.substr(8), ' ', absl::SkipEmpty())) {
        flags.backend.nvrtc_options.emplace_back(o);
      }
    } else if (a == "--full") {
      flags.backend.minimal = false;
    } else if (absl::StartsWith(a, "--dump=")) {
      flags.dump = a.substr(7);
    } else if (absl::StartsWith(a, "--")) {
      std::fprintf(stderr, "cuda_compile_bench: unknown flag %s\n", a.c_str());
      return 2;
    } else {
      flags.models.push_back(a);
    }
  }
  // Cold: NVRTC's own disk cache off (it would hit on a rerun).
  setenv("CUDA_CACHE_DISABLE", "1", 1);
  absl::Status setup = driver::Initialize();
  if (setup.ok()) setup = backends::cuda::RegisterCudaBackend();
  if (!setup.ok()) {
    std::printf("setup failed: %s\n", setup.ToString().c_str());
    return 2;
  }
  int failures = 0;
  for (const std::string& m : flags.models) {
    absl::Status s = BenchModel(m, flags);
    if (!s.ok()) {
      std::printf("COMPILE %s FAILED: %s\n", m.c_str(), s.ToString().c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace kiln::benchmarks

int main(int argc, char** argv) { return kiln::benchmarks::Main(argc, argv); }
