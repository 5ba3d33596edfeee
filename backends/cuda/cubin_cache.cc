#include "backends/cuda/cubin_cache.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_loader.h"
#include "support/atomic_file.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

constexpr char kSidecarMagic[] = "kiln-cubin-cache-v1";

// Keys and sidecar checksums; the seed keeps them apart from other caches'.
constexpr uint64_t kHashSeed = 0x63756461;

std::string Hash128(const void* data, size_t n) { return Hash128Hex(data, n, kHashSeed); }

// Cache files are private to the user.
constexpr FileWriteOptions kEntryFile{0600, false};

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

std::string CubinCache::DefaultDirectory() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
  };
  if (std::string d = env("KILN_CACHE_DIR"); !d.empty()) return absl::StrCat(d, "/cuda");
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return absl::StrCat(d, "/kiln/cuda");
  if (std::string d = env("HOME"); !d.empty()) return absl::StrCat(d, "/.cache/kiln/cuda");
  return absl::StrCat("/tmp/kiln-cache-", ::getuid(), "/cuda");
}

CubinCache::CubinCache(std::string directory, std::string compiler_identity, CubinCompiler compiler)
    : directory_(std::move(directory)), identity_(std::move(compiler_identity)), compiler_(std::move(compiler)) {
  while (directory_.size() > 1 && directory_.back() == '/') directory_.pop_back();
}

std::string CubinCache::PathFor(const std::string& key, const char* suffix) const {
  return absl::StrCat(directory_, "/", key, suffix);
}

std::string CubinCache::Key(const std::string& source, const std::vector<std::string>& options) const {
  const std::string material =
      absl::StrCat("source:", source.size(), ":", Hash128(source.data(), source.size()), "\ncompiler:", identity_,
                   "\noptions:", absl::StrJoin(options, "\x1f"));
  return Hash128(material.data(), material.size());
}

absl::StatusOr<std::string> CubinCache::Load(const std::string& key) const {
  ASSIGN_OR_RETURN(std::string sidecar, ReadFile(PathFor(key, ".sum")));
  ASSIGN_OR_RETURN(std::string cubin, ReadFile(PathFor(key, ".cubin")));
  const absl::Status valid = CheckChecksumSidecar(sidecar, kSidecarMagic, cubin, kHashSeed, "\x7f" "ELF");
  if (!valid.ok()) return absl::DataLossError(absl::StrCat("cubin cache entry ", key, ": ", valid.message()));
  return cubin;
}

absl::StatusOr<CubinEntry> CubinCache::GetOrCompile(const std::string& source,
                                                    const std::vector<std::string>& options) {
  const auto start = std::chrono::steady_clock::now();
  auto finish = [&](CubinEntry e) {
    e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return e;
  };
  CubinEntry entry;
  entry.key = Key(source, options);
  entry.path = PathFor(entry.key, ".cubin");
  if (absl::StatusOr<std::string> cubin = Load(entry.key); cubin.ok()) {
    entry.cubin = std::move(*cubin);
    entry.hit = true;
    return finish(std::move(entry));
  }
  RETURN_IF_ERROR(MakeDirectories(directory_));
  ExclusiveFileLock lock(PathFor(entry.key, ".lock"));
  if (absl::StatusOr<std::string> cubin = Load(entry.key); cubin.ok()) {
    entry.cubin = std::move(*cubin);
    entry.hit = true;
    return finish(std::move(entry));
  }
  const auto compile_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(entry.cubin, compiler_(source, options));
  entry.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();
  entry.compiled = true;
  // The cubin first, then the sidecar that validates it: a reader never
  // sees a sidecar for a cubin that is not complete.
  absl::Status s = WriteFileAtomically(entry.path, entry.cubin, kEntryFile);
  if (s.ok()) {
    s = WriteFileAtomically(PathFor(entry.key, ".sum"), ChecksumSidecar(kSidecarMagic, entry.cubin, kHashSeed),
                            kEntryFile);
  }
  // The source beside the entry, for people reading generated code.
  if (s.ok()) s = WriteFileAtomically(PathFor(entry.key, ".cu"), source, kEntryFile);
  // A cache that cannot be written still compiles: the cubin is in hand.
  (void)s;
  return finish(std::move(entry));
}

}  // namespace kiln::backends::cuda
