// The on-disk cubin cache of the CUDA backend: CUDA C++ source -> cubin
// (NVRTC), kept by the protocol of support/disk_cache.h, the same as the CPU
// backend's libraries: directory CacheDirectory("cuda") and its checks,
// entries `<key>.cubin` + checksum sidecar published by rename, builds of
// one key serialized by an flock, stale temporaries cleaned, LRU size cap.
// The key is XXH3-128 of the source, the compiler's identity (NVRTC
// version; the target architecture is among the options) and the options.
// The source stays beside the entry (`<key>.cu`).
#ifndef KILN_BACKENDS_CUDA_CUBIN_CACHE_H_
#define KILN_BACKENDS_CUDA_CUBIN_CACHE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/disk_cache.h"

namespace kiln::backends::cuda {

// Source + options -> cubin bytes (an ELF image).
using CubinCompiler =
    std::function<absl::StatusOr<std::string>(const std::string& source, const std::vector<std::string>& options)>;

// NVRTC: "--gpu-architecture=sm_90" etc. come in `options`. The error of a
// failed compile carries NVRTC's log.
absl::StatusOr<std::string> CompileWithNvrtc(const std::string& source, const std::vector<std::string>& options);
// The same to PTX (options name a virtual "compute_XY" architecture); the
// driver JIT-compiles it at cuModuleLoadData.
absl::StatusOr<std::string> CompileToPtxWithNvrtc(const std::string& source, const std::vector<std::string>& options);
// "nvrtc 13.0" (FailedPrecondition when NVRTC is not loadable).
absl::StatusOr<std::string> NvrtcIdentity();

struct CubinEntry {
  std::string cubin;
  std::string key;
  std::string path;
  bool hit = false;       // found valid without compiling
  bool compiled = false;  // this call ran the compiler
  double seconds = 0;          // wall time of the call
  double compile_seconds = 0;  // of which in the compiler
};

class CubinCache {
 public:
  // `directory`: usually CacheDirectory("cuda"). `compiler_identity` is part
  // of every key (the NVRTC version). `max_bytes`: the size cap (0: none;
  // unset: KILN_CACHE_MAX_MB or the default, support/disk_cache.h).
  CubinCache(std::string directory, std::string compiler_identity, CubinCompiler compiler,
             std::optional<uint64_t> max_bytes = std::nullopt);

  const std::string& directory() const { return disk_.directory(); }
  std::string Key(const std::string& source, const std::vector<std::string>& options) const;
  absl::StatusOr<CubinEntry> GetOrCompile(const std::string& source, const std::vector<std::string>& options);
  // The cubin of a valid entry; DataLoss/NotFound otherwise.
  absl::StatusOr<std::string> Load(const std::string& key) const;

 private:
  DiskCache disk_;
  std::string identity_;
  CubinCompiler compiler_;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUBIN_CACHE_H_
