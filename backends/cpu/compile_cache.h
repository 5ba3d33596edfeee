// The on-disk compile cache of the CPU backend: C++ source -> shared library,
// kept by the protocol of support/disk_cache.h (directory CacheDirectory("cpu")
// and its checks, entries `<key>.so` + checksum sidecar published by rename,
// builds of one key serialized by an flock, stale temporaries cleaned, LRU
// size cap).
//
// Key: XXH3-128 of the source(s), the compiler's identity (its `--version`
// line), the flags, and the host CPU (-march=native code is only valid on
// the CPU it was built for). A program given as several translation units is
// compiled with one compiler process per unit, all at once (objects in
// temporary files), then linked; its key hashes every unit. The sources stay
// beside the entry (`<key>.cc`, or `<key>.<i>.cc` per unit) for people
// reading generated code.
#ifndef KILN_BACKENDS_CPU_COMPILE_CACHE_H_
#define KILN_BACKENDS_CPU_COMPILE_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "support/disk_cache.h"

namespace kiln::backends::cpu {

struct CompilerConfig {
  std::string compiler = "g++";
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp",
                                    "-shared", "-fPIC", "-fno-math-errno", "-fno-trapping-math",
                                    "-fvisibility=hidden", "-w"};
  // After the source file on the command line.
  std::vector<std::string> libs = {"-lmvec", "-lm"};
  // Added (after `flags`) for the last unit of a multi-unit program: the
  // wrapper, straight-line calls into the kernels, needs no -O3.
  std::vector<std::string> glue_flags = {"-O1"};
};

struct CacheEntry {
  std::string library_path;
  std::string key;
  bool hit = false;       // found valid without compiling
  bool compiled = false;  // this call ran the compiler
  double seconds = 0;     // wall time of the call
};

class CompileCache {
 public:
  // `directory`: usually CacheDirectory("cpu"). `max_bytes`: the size cap
  // (0: none; unset: KILN_CACHE_MAX_MB or the default, support/disk_cache.h).
  explicit CompileCache(std::string directory, CompilerConfig config = CompilerConfig(),
                        std::optional<uint64_t> max_bytes = std::nullopt);

  const std::string& directory() const { return disk_.directory(); }
  const DiskCache& disk() const { return disk_; }
  absl::StatusOr<std::string> Key(const std::string& source) const;
  absl::StatusOr<CacheEntry> GetOrCompile(const std::string& source);
  // A program as translation units compiled concurrently and linked into one
  // library (the last unit with `glue_flags`). One unit is the same entry as
  // GetOrCompile(units[0]).
  absl::StatusOr<std::string> Key(const std::vector<std::string>& units) const;
  absl::StatusOr<CacheEntry> GetOrCompile(const std::vector<std::string>& units);
  // OK when `<key>.so` and its sidecar agree.
  absl::Status Validate(const std::string& key) const;

 private:
  // Compiles into files under `scratch` (a temporary prefix) and returns
  // the library's bytes and the sources to keep.
  absl::StatusOr<CacheArtifact> Build(const std::string& scratch, const std::vector<std::string>& units) const;

  DiskCache disk_;
  CompilerConfig config_;
};

// Runs argv (no shell), stdout and stderr into `output`; the exit status.
absl::StatusOr<int> RunProcess(const std::vector<std::string>& argv, std::string* output);

// Runs every argv at once (no shell) and waits for all; one exit status and
// output per command. An error only when a command could not be started
// (the others are still waited for).
absl::StatusOr<std::vector<int>> RunProcesses(const std::vector<std::vector<std::string>>& argvs,
                                              std::vector<std::string>* outputs);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_COMPILE_CACHE_H_
