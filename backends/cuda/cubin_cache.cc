#include "backends/cuda/cubin_cache.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_loader.h"
#include "support/disk_cache.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

// Bumped when the entry format changes (v2: XXH3-128 keys and checksums).
constexpr char kSidecarMagic[] = "kiln-cubin-cache-v2";

}  // namespace

absl::StatusOr<std::string> NvrtcIdentity() {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (!libs.nvrtc_status.ok()) return absl::FailedPreconditionError(libs.nvrtc_status.message());
  return absl::StrCat("nvrtc ", libs.nvrtc_major, ".", libs.nvrtc_minor);
}

namespace {

absl::StatusOr<std::string> RunNvrtc(const std::string& source, const std::vector<std::string>& options, bool ptx) {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (!libs.nvrtc_status.ok()) return absl::FailedPreconditionError(libs.nvrtc_status.message());
  const NvrtcApi& n = libs.nvrtc;
  nvrtcProgram prog = nullptr;
  RETURN_IF_ERROR(NvrtcCheck(n.nvrtcCreateProgram(&prog, source.c_str(), "kiln_kernels.cu", 0, nullptr, nullptr),
                             "nvrtcCreateProgram"));
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled = n.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  absl::Status status = absl::OkStatus();
  std::string cubin;
  if (compiled != kNvrtcSuccess) {
    size_t log_size = 0;
    std::string log;
    if (n.nvrtcGetProgramLogSize(prog, &log_size) == kNvrtcSuccess && log_size > 1) {
      log.resize(log_size);
      n.nvrtcGetProgramLog(prog, log.data());
      log.resize(log_size - 1);
    }
    if (log.size() > 6000) log = log.substr(0, 6000) + "\n...";
    status = absl::InternalError(absl::StrCat(NvrtcCheck(compiled, "nvrtcCompileProgram").message(), ":\n", log));
  } else if (ptx) {
    size_t size = 0;
    status = NvrtcCheck(n.nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize");
    if (status.ok()) {
      cubin.resize(size);  // includes the terminating NUL the driver needs
      status = NvrtcCheck(n.nvrtcGetPTX(prog, cubin.data()), "nvrtcGetPTX");
    }
  } else {
    size_t size = 0;
    status = NvrtcCheck(n.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
    if (status.ok()) {
      cubin.resize(size);
      status = NvrtcCheck(n.nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
    }
    if (status.ok() && cubin.empty()) {
      status = absl::InternalError("NVRTC produced no cubin (is the architecture a real sm_XX?)");
    }
  }
  n.nvrtcDestroyProgram(&prog);
  RETURN_IF_ERROR(status);
  return cubin;
}

}  // namespace

absl::StatusOr<std::string> CompileWithNvrtc(const std::string& source, const std::vector<std::string>& options) {
  return RunNvrtc(source, options, false);
}

absl::StatusOr<std::string> CompileToPtxWithNvrtc(const std::string& source, const std::vector<std::string>& options) {
  return RunNvrtc(source, options, true);
}

CubinCache::CubinCache(std::string directory, std::string compiler_identity, CubinCompiler compiler,
                       std::optional<uint64_t> max_bytes)
    : disk_([&] {
        DiskCacheOptions o;
        o.directory = std::move(directory);
        o.magic = kSidecarMagic;
        o.suffix = ".cubin";
        o.content_prefix = "\x7f" "ELF";
        o.max_bytes = max_bytes;
        o.sync = false;
        return o;
      }()),
      identity_(std::move(compiler_identity)),
      compiler_(std::move(compiler)) {}

std::string CubinCache::Key(const std::string& source, const std::vector<std::string>& options) const {
  return CacheKeyBuilder().Add("kiln-cuda").Add(source).Add(identity_).Add(absl::StrJoin(options, "\x1f")).Hex();
}

absl::StatusOr<std::string> CubinCache::Load(const std::string& key) const { return disk_.Load(key); }

absl::StatusOr<CubinEntry> CubinCache::GetOrCompile(const std::string& source,
                                                    const std::vector<std::string>& options) {
  const auto start = std::chrono::steady_clock::now();
  CubinEntry entry;
  entry.key = Key(source, options);
  ASSIGN_OR_RETURN(DiskCacheEntry found, disk_.GetOrBuild(entry.key, [&](const std::string&) -> absl::StatusOr<CacheArtifact> {
    const auto compile_start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(std::string cubin, compiler_(source, options));
    entry.compile_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
    return CacheArtifact{std::move(cubin), {{".cu", source}}};
  }));
  // An empty path: a cache that cannot be written still compiles (the
  // cubin is in hand).
  entry.path = found.path;
  entry.cubin = std::move(found.contents);
  entry.hit = found.hit;
  entry.compiled = found.built;
  entry.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return entry;
}

}  // namespace kiln::backends::cuda
