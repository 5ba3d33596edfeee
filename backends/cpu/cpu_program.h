// A compiled program loaded from the cache: runs `kiln_run` with a host API
// whose allocations are kiln Tensors (so outputs are ordinary Tensors that
// share the program's storage, never copies), pooled across runs.
#ifndef KILN_BACKENDS_CPU_CPU_PROGRAM_H_
#define KILN_BACKENDS_CPU_CPU_PROGRAM_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/host_api.h"
#include "backends/cpu/wrapper_codegen.h"
#include "support/tensor.h"
#include "wrapper/codegen.h"

namespace kiln::backends::cpu {

// Where the time of a compile went (seconds).
struct CompileStats {
  double codegen_seconds = 0;  // wrapper + source assembly
  double cache_seconds = 0;    // cache lookup, and the C++ compiler on a miss
  double load_seconds = 0;     // dlopen + symbol lookup
  bool cache_hit = false;
  std::string library_path;
  std::string source;
};

class CpuProgram : public wrapper::CompiledProgram {
 public:
  // Takes ownership of `handle` (a dlopen handle).
  static absl::StatusOr<std::unique_ptr<CpuProgram>> Load(GeneratedProgram generated,
                                                          const std::string& library_path);
  ~CpuProgram() override;

  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override;
  // program.cpp: the kernels and the C++ wrapper.
  std::vector<std::pair<std::string, std::string>> SourceFiles() const override;
  // The compile cache's hit or miss, the compiler's and dlopen's time.
  std::vector<std::string> ReportLines() const override;

  CompileStats& stats() { return stats_; }
  const GeneratedProgram& generated() const { return generated_; }

  // Host API plumbing (called through function pointers from generated code).
  Tensor TakeFromPool(DType dtype, int64_t elements);
  void ReturnToPool(Tensor base);

 private:
  CpuProgram() = default;

  GeneratedProgram generated_;
  void* handle_ = nullptr;
  KilnRunFn run_ = nullptr;
  CompileStats stats_;
  std::mutex pool_mu_;
  std::multimap<std::pair<int, int64_t>, Tensor> pool_;
};

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_CPU_PROGRAM_H_
