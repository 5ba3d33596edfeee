// The on-disk cubin cache of the CUDA backend: CUDA C++ source -> cubin
// (NVRTC), with the rules of the CPU backend's cache (backends/cpu/
// compile_cache.h): the key hashes the source, the compiler's identity (NVRTC
// version), the target architecture and the options; an entry is
// `<key>.cubin` plus a checksum sidecar `<key>.sum` (magic, size, 128-bit
// hash), both written to temporary files and renamed into place; compiles
// of one key are serialized by an flock on `<key>.lock`; an entry whose
// cubin or sidecar does not check out is rebuilt.
#ifndef KILN_BACKENDS_CUDA_CUBIN_CACHE_H_
#define KILN_BACKENDS_CUDA_CUBIN_CACHE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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
  // KILN_CACHE_DIR/cuda, else $XDG_CACHE_HOME/kiln/cuda, else
  // $HOME/.cache/kiln/cuda, else /tmp/kiln-cache-<uid>/cuda.
  static std::string DefaultDirectory();

  // `compiler_identity` is part of every key (the NVRTC version).
  CubinCache(std::string directory, std::string compiler_identity, CubinCompiler compiler);

  const std::string& directory() const { return directory_; }
  std::string Key(const std::string& source, const std::vector<std::string>& options) const;
  absl::StatusOr<CubinEntry> GetOrCompile(const std::string& source, const std::vector<std::string>& options);
  // The cubin of a valid entry; DataLoss/NotFound otherwise.
  absl::StatusOr<std::string> Load(const std::string& key) const;

 private:
  std::string PathFor(const std::string& key, const char* suffix) const;

  std::string directory_;
  std::string identity_;
  CubinCompiler compiler_;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUBIN_CACHE_H_
