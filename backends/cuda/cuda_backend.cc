#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/attention_lines.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/conv_fusion_policy.h"
#include "backends/cuda/cubin_cache.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_device_op_overrides.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/depthwise_conv.h"
#include "backends/cuda/kernel_prelude.h"
#include "devices/device_registry.h"
#include "support/parallel.h"
#include "support/status.h"
#include "wrapper/device_op_overrides.h"

namespace kiln::backends::cuda {
namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

const CudaDriverApi& Driver() { return LoadCudaLibraries().driver; }

constexpr int kDefaultSharedLimit = 48 * 1024;

}  // namespace

CudaCodegen::CudaCodegen(std::string device, CudaBackendOptions options)
    : device_(std::move(device)), options_(std::move(options)) {
  CudaDevice cuda;
  index_ = cuda.CurrentDevice();
  if (const size_t colon = device_.find(':'); colon != std::string::npos) {
    int parsed = 0;
    if (absl::SimpleAtoi(device_.substr(colon + 1), &parsed) && parsed >= 0) index_ = parsed;
  }
  if (cuda.is_available()) {
    absl::StatusOr<devices::DeviceProperties> p = cuda.GetDeviceProperties(index_);
    if (p.ok()) {
      target_.sm_major = p->major;
      target_.sm_minor = p->minor;
      target_.multiprocessor_count = p->multiprocessor_count;
      target_.max_threads_per_block = p->max_threads_per_block;
    }
  }
}

std::vector<std::string> CudaCodegen::NvrtcOptions(bool minimal) const {
  std::vector<std::string> o = {absl::StrCat("--gpu-architecture=sm_", target_.sm_major, target_.sm_minor),
                                "-std=c++17"};
  if (minimal) o.push_back("-minimal");
  o.insert(o.end(), options_.nvrtc_options.begin(), options_.nvrtc_options.end());
  // Experiments: KILN_NVRTC_OPTIONS="-minimal --ptxas-options=-O2".
  for (std::string& opt : env::ExtraNvrtcOptions()) o.push_back(std::move(opt));
  return o;
}

absl::StatusOr<std::string> CudaCodegen::KernelSource(const lowering::LoopGraph& graph,
                                                      const lowering::FusedKernel& kernel) {
  ASSIGN_OR_RETURN(CudaKernelSource generated, GenerateCudaKernel(graph, kernel, target_));
  std::string source = generated.source;
  generated_[kernel.name] = std::move(generated);
  return source;
}

int CudaCodegen::CompileThreads() const {
  const int hardware = std::max(1, options_.hardware_threads > 0 ? options_.hardware_threads
                                                                 : static_cast<int>(HardwareThreads()));
  return std::max(1, std::min(options_.max_threads, hardware));
}

std::vector<CudaCodegen::Unit> CudaCodegen::MakeUnits(const std::vector<CudaKernelSource>& kernels) const {
  const std::string prelude = CudaKernelPrelude();
  std::vector<Unit> units;
  std::vector<const CudaKernelSource*> shared;
  for (const CudaKernelSource& k : kernels) {
    if (!prelude.empty() && absl::StartsWith(k.source, prelude)) {
      shared.push_back(&k);
    } else {
      units.push_back(Unit{k.source, {k.name}});
    }
  }
  // Which shared kernels go to which unit.
  std::vector<std::vector<const CudaKernelSource*>> groups;
  if (options_.kernels_per_unit > 0) {
    const size_t per_unit = static_cast<size_t>(options_.kernels_per_unit);
    for (size_t i = 0; i < shared.size(); i += per_unit) {
      groups.emplace_back(shared.begin() + static_cast<std::ptrdiff_t>(i),
                          shared.begin() + static_cast<std::ptrdiff_t>(std::min(shared.size(), i + per_unit)));
    }
  } else if (!shared.empty()) {
    // Longest first to the lightest unit (ties: the lower index, and the
    // kernels' order: the result does not depend on anything but the input).
    const size_t count = std::min(shared.size(), static_cast<size_t>(2 * CompileThreads()));
    std::vector<const CudaKernelSource*> by_size = shared;
    std::stable_sort(by_size.begin(), by_size.end(), [](const CudaKernelSource* a, const CudaKernelSource* b) {
      return a->source.size() > b->source.size();
    });
    groups.resize(count);
    std::vector<size_t> load(count, 0);
    for (const CudaKernelSource* k : by_size) {
      const size_t lightest = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      groups[lightest].push_back(k);
      load[lightest] += k->source.size() - prelude.size();
    }
    // Heaviest units first (the thread pool takes them in order).
    std::vector<size_t> order(count);
    for (size_t i = 0; i < count; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return load[a] > load[b]; });
    std::vector<std::vector<const CudaKernelSource*>> sorted;
    for (size_t i : order) sorted.push_back(std::move(groups[i]));
    groups = std::move(sorted);
  }
  for (const std::vector<const CudaKernelSource*>& group : groups) {
    Unit u;
    u.source = prelude;
    for (const CudaKernelSource* k : group) {
      absl::StrAppend(&u.source, "\n", absl::string_view(k->source).substr(prelude.size()));
      u.kernels.push_back(k->name);
    }
    units.push_back(std::move(u));
  }
  return units;
}

absl::StatusOr<CudaCodegen::CubinBuild> CudaCodegen::BuildCubins(const std::vector<CudaKernelSource>& kernels) const {
  auto t1 = std::chrono::steady_clock::now();
  CubinBuild build;
  build.units = MakeUnits(kernels);
  const std::vector<Unit>& units = build.units;
  ASSIGN_OR_RETURN(std::string identity, NvrtcIdentity());
  std::string cache_dir = options_.cache_dir;
  if (cache_dir.empty()) {
    ASSIGN_OR_RETURN(cache_dir, CacheDirectory("cuda"));
  }
  CubinCache cache(std::move(cache_dir), identity, CompileWithNvrtc, options_.cache_max_bytes);
  const std::vector<std::string> nvrtc_options = NvrtcOptions(options_.minimal);
  const std::vector<std::string> full_options = NvrtcOptions(false);
  std::vector<absl::StatusOr<CubinEntry>> cubins(units.size(), absl::UnknownError("not compiled"));
  std::atomic<int> minimal_fallbacks{0};
  auto compile_unit = [&](size_t i) {
    cubins[i] = cache.GetOrCompile(units[i].source, nvrtc_options);
    if (!cubins[i].ok() && options_.minimal) {
      ++minimal_fallbacks;
      cubins[i] = cache.GetOrCompile(units[i].source, full_options);
    }
  };
  const size_t threads = std::min<size_t>(units.size(), static_cast<size_t>(CompileThreads()));
  ParallelFor(units.size(), threads, compile_unit);
  for (absl::StatusOr<CubinEntry>& c : cubins) {
    RETURN_IF_ERROR(c.status());
    build.cache_hits += c->hit ? 1 : 0;
    build.compiler_seconds += c->compile_seconds;
    build.cubins.push_back(*std::move(c));
  }
  build.minimal_fallbacks = minimal_fallbacks.load();
  build.threads = static_cast<int>(threads);
  build.seconds = Since(t1);
  return build;
}

std::string CudaCodegen::PreLoweringPipeline(const ir::Graph& graph) const {
  std::vector<std::string> passes;
  if (FuseConvolutionEpilogues(graph)) passes.push_back("fuse_conv_post_ops");
  // kiln::attention runs as a generated flash-attention kernel
  // (attention_lines.h) in 16-bit graphs (FuseAttentionIn says why).
  // (dce first: a dead use of the probabilities, such as the reshape
  // autocast's cast leaves behind in torch.export graphs, blocks the match.)
  if (FuseAttentionIn(graph)) passes.insert(passes.end(), {"dce", "fuse_attention_with_bmm"});
  if (passes.empty()) return "";
  passes.push_back("dce");
  return absl::StrJoin(passes, ",");
}

absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> CudaCodegen::Compile(
    const wrapper::WrapperProgram& original) {
  auto t0 = std::chrono::steady_clock::now();
  // kiln::attention lines become generated kernels first (attention_lines.h).
  ASSIGN_OR_RETURN(AttentionLowering attention, LowerAttentionExterns(original, target_));
  const wrapper::WrapperProgram& program = attention.program;
  for (auto& [name, kernel] : attention.kernels) generated_[name] = kernel;
  // Channels-last values need cuDNN's NHWC convolutions (kiln's own
  // convolutions take NCHW only: without cuDNN the plan would send every
  // convolution to the host).
  ASSIGN_OR_RETURN(ResolvedProgram resolved,
                   ResolveProgram(program, LoadCudaLibraries().cudnn_status.ok() ? ChannelsLastSetting()
                                                                                  : ChannelsLastMode::kOff));
  std::vector<CudaKernelSource> kernels;
  std::map<std::string, CudaProgram::LoadedKernel> loaded;
  std::map<std::string, std::string> function_of;  // kernel name -> function name
  std::set<std::string> distinct;                   // function names
  for (const wrapper::Line& line : program.lines) {
    const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line);
    if (def == nullptr) continue;
    auto it = generated_.find(def->kernel_name);
    if (it == generated_.end() || it->second.source != def->kernel_body) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cuda codegen: kernel '", def->kernel_name,
          "' was not generated by this codegen (its launch configuration is unknown)"));
    }
    // Kernels with the same text share a function (compiled once).
    if (distinct.insert(it->second.name).second) kernels.push_back(it->second);
    function_of[def->kernel_name] = it->second.name;
  }
  const double codegen_seconds = Since(t0);

  // The depthwise runtime-kernel units its convolutions will launch
  // compile beside the generated kernels (else one after another in the
  // first call); joined before any return.
  absl::Status prefetched = absl::OkStatus();
  std::thread prefetch;
  if (CudaDevice().is_available()) {
    prefetch = std::thread([&prefetched, this, convs = ConvProblemsOf(resolved)] {
      prefetched = PrefetchDepthwiseUnits(index_, convs);
    });
  }
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();
    }
  } join{prefetch};
  ASSIGN_OR_RETURN(CubinBuild build, BuildCubins(kernels));
  std::vector<Unit>& units = build.units;
  const std::vector<CubinEntry>& cubins = build.cubins;

  CudaDevice cuda;
  if (!cuda.is_available()) {
    return absl::UnavailableError(absl::StrCat("cuda is unavailable (", units.size(),
                                               " kernel units compiled for ", NvrtcOptions()[0],
                                               "): ", CudaDevice::UnavailableReason().message()));
  }
  auto t2 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(cuda.MakeCurrent(index_));
  std::vector<CUmodule> modules;
  absl::Status status = absl::OkStatus();
  std::map<std::string, CUfunction> functions;
  for (size_t i = 0; i < units.size() && status.ok(); ++i) {
    CUmodule module = nullptr;
    status = CuCheck(Driver().cuModuleLoadData(&module, cubins[i].cubin.data()), "cuModuleLoadData");
    if (!status.ok()) break;
    modules.push_back(module);
    for (const std::string& fn : units[i].kernels) {
      CUfunction f = nullptr;
      status = CuCheck(Driver().cuModuleGetFunction(&f, module, fn.c_str()),
                       absl::StrCat("cuModuleGetFunction(", fn, ")").c_str());
      if (!status.ok()) break;
      functions[fn] = f;
    }
  }
  for (const auto& [kernel_name, fn] : function_of) {
    if (!status.ok()) break;
    const CudaKernelSource& k = generated_.at(kernel_name);
    CudaProgram::LoadedKernel lk;
    lk.function = functions[fn];
    lk.launch.grid[0] = k.launch.grid_x, lk.launch.grid[1] = k.launch.grid_y, lk.launch.grid[2] = k.launch.grid_z;
    lk.launch.block[0] = k.launch.block_x, lk.launch.block[1] = k.launch.block_y, lk.launch.block[2] = k.launch.block_z;
    lk.launch.shared_bytes = k.launch.shared_bytes;
    if (k.launch.shared_bytes > kDefaultSharedLimit) {
      status = CuCheck(Driver().cuFuncSetAttribute(lk.function, kFuncAttrMaxDynamicSharedBytes, k.launch.shared_bytes),
                       "cuFuncSetAttribute");
    }
    loaded[kernel_name] = lk;
  }
  if (!status.ok()) {
    for (CUmodule m : modules) Driver().cuModuleUnload(m);
    return status;
  }
  const double load_seconds = Since(t2);
  if (prefetch.joinable()) prefetch.join();
  RETURN_IF_ERROR(prefetched);
  ASSIGN_OR_RETURN(std::unique_ptr<CudaProgram> p,
                   CudaProgram::Create(std::move(resolved), index_, std::move(loaded), std::move(modules)));
  std::vector<std::string> unit_sources;
  for (Unit& u : units) unit_sources.push_back(std::move(u.source));
  p->set_sources(std::move(unit_sources));
  CudaProgramStats& stats = p->stats();
  stats.codegen_seconds = codegen_seconds;
  stats.nvrtc_seconds = build.seconds;
  stats.load_seconds = load_seconds;
  stats.translation_units = static_cast<int>(units.size());
  stats.distinct_kernels = static_cast<int>(kernels.size());
  stats.cache_hits = build.cache_hits;
  stats.compiler_seconds = build.compiler_seconds;
  stats.minimal_fallbacks = build.minimal_fallbacks;
  stats.attention = AttentionSummary(attention);
  return std::unique_ptr<wrapper::CompiledProgram>(std::move(p));
}

std::string KernelsFileWithoutDevice(const wrapper::WrapperProgram& original) {
  const std::string& prelude = CudaKernelPrelude();
  // The attention kernels Compile would generate (a program it cannot
  // lower keeps its extern lines here too).
  absl::StatusOr<AttentionLowering> attention = LowerAttentionExterns(original);
  const wrapper::WrapperProgram& program = attention.ok() ? attention->program : original;
  std::set<std::string> seen;
  std::string shared, alone;
  int kernels = 0;
  for (const wrapper::Line& line : program.lines) {
    const auto* def = std::get_if<wrapper::KernelDefinitionLine>(&line);
    if (def == nullptr) continue;
    const absl::string_view body = def->kernel_body;
    const size_t mark = body.find("// kiln kernel ");
    const absl::string_view name =
        mark == absl::string_view::npos ? body : body.substr(mark, body.find('\n', mark) - mark);
    if (!seen.insert(std::string(name)).second) continue;
    ++kernels;
    if (absl::StartsWith(body, prelude)) {
      absl::StrAppend(&shared, "\n", body.substr(prelude.size()));
    } else {
      absl::StrAppend(&alone, "// ==== a translation unit of its own\n", body, "\n");
    }
  }
  return absl::StrCat("// No CUDA device here: the ", kernels,
                      " distinct kernels as generated, in one translation unit (with a GPU, kernels.cu lists the "
                      "units NVRTC compiled).\n",
                      shared.empty() ? "" : prelude, shared, alone);
}

absl::Status RegisterCudaBackend() {
  static std::once_flag once;
  static absl::Status* status = new absl::Status();
  std::call_once(once, [] {
    absl::Status s = devices::DeviceRegistry::Global().RegisterIfAbsent(std::make_unique<CudaDevice>());
    if (s.ok()) {
      s = wrapper::RegisterDeviceCodegen("cuda", [] { return std::make_unique<CudaCodegen>("cuda"); });
    }
    // Without overrides the wrapper would get no device guards, and a
    // program for cuda:1 would run on the current device.
    if (s.ok()) s = wrapper::RegisterDeviceOpOverrides(std::make_unique<CudaDeviceOpOverrides>());
    *status = s;
  });
  return *status;
}

}  // namespace kiln::backends::cuda
