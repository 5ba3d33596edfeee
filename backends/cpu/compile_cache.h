// The on-disk compile cache of the CPU backend: C++ source -> shared library.
//
// Key: a 128-bit hash of the source, the compiler's identity (its
// `--version` line), the flags, and the host CPU (-march=native code is
// only valid on the CPU it was built for). Entries are `<key>.so` with a
// checksum sidecar `<key>.sum` (size and hash of the library); both are
// written to temporary files and renamed into place. A program given as
// several translation units is compiled with one compiler process per unit,
// all at once (objects in temporary files), then linked; its key hashes
// every unit. Compiles of one key
// are serialized across threads and processes by an flock on
// `<key>.lock`, so concurrent compiles of the same program end with one good
// entry and one compiler run. An entry whose library or sidecar does not
// check out (truncated, garbled, missing) is rebuilt.
#ifndef KILN_BACKENDS_CPU_COMPILE_CACHE_H_
#define KILN_BACKENDS_CPU_COMPILE_CACHE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

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
  // KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln/cpu, else $HOME/.cache/kiln/cpu,
  // else /tmp/kiln-cache-<uid>/cpu.
  static std::string DefaultDirectory();

  explicit CompileCache(std::string directory, CompilerConfig config = CompilerConfig());

  const std::string& directory() const { return directory_; }
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
  absl::StatusOr<CacheEntry> CompileLocked(const std::string& key, const std::vector<std::string>& units);
  std::string PathFor(const std::string& key, const char* suffix) const;

  std::string directory_;
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
