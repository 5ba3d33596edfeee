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
#include "backends/cpu/library_calls.h"
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
  double prepare_seconds = 0;  // library calls: primitives, weights packed
  // The packed weights' disk cache (packed_cache.h): "hit", "stored" (in
  // the background), or why it was not used ("" when nothing is packed).
  std::string packed_cache;
};

// What the program runs in oneDNN (library_calls.h), from Load.
struct LibraryStats {
  int library_calls = 0;       // externs run as library calls
  int reference_externs = 0;   // externs through reference kernels / islands
  int channels_last_values = 0;  // values kept channels-last between calls
  int reorders = 0;            // layout changes at the calls' boundaries
  int64_t packed_bytes = 0;    // constants in the library's layouts
  int64_t workspace_bytes = 0; // per concurrent run
  std::vector<std::string> calls;  // LibraryCall::Describe per extern ("" = reference)
  std::vector<std::string> fallbacks;  // why a library op runs its reference kernel
};

class CpuProgram : public wrapper::CompiledProgram {
 public:
  // Takes ownership of `handle` (a dlopen handle).
  static absl::StatusOr<std::unique_ptr<CpuProgram>> Load(GeneratedProgram generated,
                                                          const std::string& library_path);
  ~CpuProgram() override;

  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override;
  // `iterations` runs with each kernel and extern call timed on the host
  // clock (`kiln run --profile N`): GeneratedProgram::steps in order, a
  // library call named by what it runs (LibraryCall::Describe).
  absl::StatusOr<std::vector<wrapper::StepProfile>> ProfileSteps(const std::vector<Tensor>& inputs,
                                                                 int iterations) override;
  // program.cpp: the kernels and the C++ wrapper.
  std::vector<std::pair<std::string, std::string>> SourceFiles() const override;
  // The compile cache's hit or miss, the compiler's and dlopen's time.
  std::vector<std::string> ReportLines() const override;
  // oneDNN calls, the generated attention kernels, the rest reference kernels.
  std::map<std::string, wrapper::ExternRun> ExternRuns() const override;

  CompileStats& stats() { return stats_; }
  const LibraryStats& library_stats() const { return library_stats_; }
  const GeneratedProgram& generated() const { return generated_; }

  // The threads each Run uses (threads.h): DefaultNumThreads() at Load.
  // Library primitives are made for the pool they run on, so changing it
  // prepares them again (not while a Run is in progress).
  absl::Status SetNumThreads(int n);
  int num_threads() const { return num_threads_; }

  // Host API plumbing (called through function pointers from generated code).
  Tensor TakeFromPool(DType dtype, int64_t elements);
  void ReturnToPool(Tensor base);
  // KILN_CPU_PROFILE=1 (cpu_program.cc): seconds spent in extern `index`.
  void AddExternTime(size_t index, double seconds);
  LibraryCall* library_call(size_t extern_index) const {
    return extern_index < library_calls_.size() ? library_calls_[extern_index].get() : nullptr;
  }

  // What one run needs besides buffers: the library's stream, workspace and
  // per-call states. Runs take one from a free list (several threads may
  // run one program).
  struct RunState {
    RunStream stream;
    std::unique_ptr<char[]> workspace_storage;
    void* workspace = nullptr;
    std::vector<std::unique_ptr<CallState>> calls;
  };

 private:
  CpuProgram() = default;
  // Prepares the library calls and the program's layout plan.
  absl::Status PrepareLibraryCalls();
  // Packs every call's constants into packed_arena_, or maps them from the
  // disk cache (packed_cache.h), storing them there after packing.
  absl::Status PackConstants();
  // Run, timing each step into `step_seconds` (summed) when not null.
  absl::StatusOr<std::vector<Tensor>> RunTimed(const std::vector<Tensor>& inputs, std::vector<double>* step_seconds);
  std::unique_ptr<RunState> TakeRunState();
  void ReturnRunState(std::unique_ptr<RunState> state);

  GeneratedProgram generated_;
  void* handle_ = nullptr;
  KilnRunFn run_ = nullptr;
  CompileStats stats_;
  LibraryStats library_stats_;
  int num_threads_ = 0;
  std::vector<std::unique_ptr<LibraryCall>> library_calls_;  // by extern index; null: reference
  // The library calls' packed constants, one block (huge pages when large:
  // packing 100 MB into fresh 4 KiB pages is mostly page faults); shared
  // with the disk cache's background publish of it.
  std::shared_ptr<void> packed_arena_;
  // Or the packed constants as the disk cache's mapped entry.
  std::shared_ptr<const void> packed_mapping_;
  std::mutex run_states_mu_;  // also guards the profile below
  std::vector<double> extern_seconds_;
  double run_seconds_ = 0;
  int64_t runs_ = 0;
  std::vector<std::unique_ptr<RunState>> run_states_;
  std::mutex pool_mu_;
  std::multimap<std::pair<int, int64_t>, Tensor> pool_;
};

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_CPU_PROGRAM_H_
