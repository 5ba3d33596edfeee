#include "devices/cpu/cpu_backend.h"

#include <chrono>
#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "devices/cpu/cpu_program.h"
#include "devices/cpu/kernel_codegen.h"
#include "devices/cpu/wrapper_codegen.h"
#include "devices/device_registry.h"
#include "support/status.h"

namespace kiln::devices::cpu {
namespace {

class CpuAllocator : public DeviceAllocator {
 public:
  absl::StatusOr<void*> Allocate(size_t nbytes, size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      return absl::InvalidArgumentError("cpu allocator: alignment must be a power of two");
    }
    alignment = std::max(alignment, sizeof(void*));
    const size_t rounded = (std::max<size_t>(nbytes, 1) + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("cpu allocator: ", nbytes, " bytes"));
    return p;
  }
  void Free(void* ptr) override { std::free(ptr); }
};

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

absl::StatusOr<DeviceAllocator*> CpuDevice::allocator(int index) {
  if (index != 0) return absl::NotFoundError(absl::StrCat("cpu:", index, " does not exist (1 cpu device)"));
  static CpuAllocator* allocator = new CpuAllocator();
  return allocator;
}

absl::Status CpuDevice::Synchronize(int index) {
  if (index != 0) return absl::NotFoundError(absl::StrCat("cpu:", index, " does not exist (1 cpu device)"));
  return absl::OkStatus();  // CPU kernels run synchronously.
}

CpuCodegen::CpuCodegen(CpuBackendOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::string> CpuCodegen::KernelSource(const lowering::LoopGraph& graph,
                                                     const lowering::FusedKernel& kernel) {
  return CpuKernelSource(graph, kernel);
}

absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> CpuCodegen::Compile(
    const wrapper::WrapperProgram& program) {
  auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(GeneratedProgram generated, GenerateProgramSource(program));
  const double codegen = Since(t0);
  CompileCache cache(options_.cache_dir.empty() ? CompileCache::DefaultDirectory() : options_.cache_dir,
                     options_.compiler);
  ASSIGN_OR_RETURN(CacheEntry entry, cache.GetOrCompile(generated.source));
  std::string source = generated.source;
  auto t1 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<CpuProgram> loaded, CpuProgram::Load(std::move(generated), entry.library_path));
  CompileStats& stats = loaded->stats();
  stats.codegen_seconds = codegen;
  stats.cache_seconds = entry.seconds;
  stats.load_seconds = Since(t1);
  stats.cache_hit = entry.hit;
  stats.library_path = entry.library_path;
  stats.source = std::move(source);
  return std::unique_ptr<wrapper::CompiledProgram>(std::move(loaded));
}

absl::Status RegisterCpuBackend() {
  static std::once_flag once;
  static absl::Status* status = new absl::Status();
  std::call_once(once, [] {
    absl::Status s = DeviceRegistry::Global().RegisterIfAbsent(std::make_unique<CpuDevice>());
    if (s.ok()) {
      s = wrapper::RegisterDeviceCodegen("cpu", [] { return std::make_unique<CpuCodegen>(); });
    }
    *status = s;
  });
  return *status;
}

}  // namespace kiln::devices::cpu
