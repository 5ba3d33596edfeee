// A compiled CUDA program: executes the (memory-planned) Wrapper IR lines on
// the GPU. The lines are resolved once into steps over numbered buffer slots;
// a run then allocates/reuses/frees device storage through the device's
// caching allocator, launches the kernels (cuLaunchKernel on the current
// stream), treats ReinterpretLines as views, runs matmul externs through
// cuBLAS, convolutions through runtime kernels + cuBLAS (cuda_conv.h), and
// every other extern and interpreter island on the host over copies of its
// arguments (counted in stats()).
//
// Run() takes and returns host tensors (copies around the device run);
// RunDevice() takes and returns device-resident tensors (benchmarks);
// RunOnDevice() is the device-neutral form of it for callers that hold
// device memory (the C API's DLPack tensors: torch's CUDA tensors read in
// place, outputs handed over, on the caller's stream);
// NewSession() uploads inputs once and runs calls on its own stream,
// replaying them as one CUDA graph after a warm-up call (cuda_session.h).
#ifndef KILN_BACKENDS_CUDA_CUDA_PROGRAM_H_
#define KILN_BACKENDS_CUDA_CUDA_PROGRAM_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cublas_matmul.h"
#include "backends/cuda/cuda_api.h"
#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_device.h"
#include "lowering/loop_ir.h"
#include "support/tensor.h"
#include "wrapper/codegen.h"
#include "wrapper/program_session.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::backends::cuda {

// A tensor on the device: element `layout.offset + sum(i * stride)` at
// storage->ptr() + byte_offset + that * element size.
struct DeviceTensor {
  std::shared_ptr<DeviceStorage> storage;
  int64_t byte_offset = 0;
  lowering::Layout layout;
  CUdeviceptr base() const { return storage ? storage->ptr() + static_cast<CUdeviceptr>(byte_offset) : 0; }
};

// Launch configuration of one kernel (grid and block dims, dynamic shared).
struct KernelLaunchConfig {
  int64_t grid[3] = {1, 1, 1};
  int block[3] = {1, 1, 1};
  int shared_bytes = 0;
};

// One step of the resolved program.
struct ProgramStep {
  enum class Kind {
    kAllocate,  // slot `dst` <- new storage of `bytes`
    kRelease,   // slot `dst` dropped (storage returns to the cache when unshared)
    kAlias,     // slot `dst` <- slot `src` (reuse, reinterpret, multi-output); `release_src`
    kLaunch,    // kernel `index` with slots `args`
    kExtern,    // extern `index`
    kSetDevice, // device index `index`
  };
  Kind kind = Kind::kAllocate;
  int dst = -1;
  int src = -1;
  bool release_src = false;
  bool only_if_empty = false;  // kAlias of a multi-output element
  bool view = false;           // kAlias of a view (reinterpret, multi-output): another layout of the same data
  int64_t bytes = 0;
  int index = -1;
  std::vector<int> args;
};

struct ExternStep {
  std::string op;
  std::vector<lowering::ExternArg> args;
  std::vector<int> buffer_slots;  // buffer arguments in order
  std::vector<int> output_slots;
  std::vector<int64_t> alloc_bytes;  // per output; empty for an out= extern
  std::shared_ptr<const ir::Graph> island;
  // A convolution computing channels-last (channels_last_plan.h): its
  // weight is `weight_constant` (index into ResolvedProgram::constants),
  // permuted to KRSC at load.
  bool channels_last = false;
  int weight_constant = -1;
};

// The lines resolved into steps; independent of the GPU (tested on the CPU).
struct ResolvedProgram {
  std::vector<std::string> slot_names;
  std::vector<lowering::Layout> slot_layouts;
  std::vector<int> input_slots;
  std::vector<int> output_slots;
  std::vector<std::pair<int, Tensor>> constants;  // slot, data
  std::vector<std::string> kernel_names;          // in definition order
  std::vector<ProgramStep> steps;
  std::vector<ExternStep> externs;
  // The layout plan applied (empty when off).
  std::vector<int> channels_last_slots;
  int boundary_transposes = 0;
  std::string channels_last_skipped;  // why the measured policy planned nothing
};
// `channels_last`: how to apply the layout plan (channels_last_plan.h).
absl::StatusOr<ResolvedProgram> ResolveProgram(const wrapper::WrapperProgram& program, ChannelsLastMode channels_last);
absl::StatusOr<ResolvedProgram> ResolveProgram(const wrapper::WrapperProgram& program);  // the environment's choice

// The convolutions of `resolved`'s extern steps as the backend will see
// them (layouts only, no addresses): what the compile prepares for
// (PrefetchDepthwiseUnits).
std::vector<ConvProblem> ConvProblemsOf(const ResolvedProgram& resolved);

// How an extern step ran.
enum class ExternPath { kCublas, kCudnn, kConv, kGather, kPool, kMetadata, kHost };
// "cublas", "cudnn", "conv", "gather", "pool", "shape", "host".
const char* ExternPathName(ExternPath path);

// Externs whose outputs depend on their inputs' shapes alone (kiln::shape,
// kiln::size): computed once, kept on the device.
bool IsMetadataOnlyOp(const std::string& op);

// Per-step device timing of calls (CudaProgram::Profile): events recorded
// around every launch and extern step.
struct StepTimer;

struct CudaProgramStats {
  // Compile (seconds).
  double codegen_seconds = 0;  // kernel sources already generated: assembly of the translation units
  double nvrtc_seconds = 0;    // cubin cache lookups + NVRTC on misses (wall)
  double compiler_seconds = 0;  // inside NVRTC, summed over units
  int minimal_fallbacks = 0;    // units recompiled without -minimal
  double load_seconds = 0;     // cuModuleLoadData + cuModuleGetFunction
  int translation_units = 0;
  int cache_hits = 0;
  int kernels = 0;
  int distinct_kernels = 0;  // of `kernels`: distinct texts, each compiled once
  // Runs (cumulative).
  std::atomic<int64_t> runs{0};
  std::atomic<int64_t> launches{0};
  std::atomic<int64_t> cublas_calls{0};
  std::atomic<int64_t> gpu_convolutions{0};
  std::atomic<int64_t> cudnn_convolutions{0};  // of gpu_convolutions
  std::atomic<int64_t> cudnn_graph_convolutions{0};  // of cudnn_convolutions: through the graph API
  std::atomic<int64_t> nhwc_convolutions{0};   // of cudnn_convolutions: channels-last (channels_last_plan.h)
  std::atomic<int64_t> fused_epilogues{0};     // kiln::conv_post_ops run on the GPU
  std::atomic<int64_t> graph_epilogues{0};     // of fused_epilogues: inside cuDNN's graph (cudnn_graph_conv.h)
  std::atomic<int64_t> nhwc_refusals{0};       // channels-last convolutions cuDNN refused (then run plain)
  std::atomic<int64_t> host_fallbacks{0};
  std::mutex mu;
  std::map<std::string, int64_t> fallback_ops;  // op -> calls (islands as kiln::interpret)
  std::string cudnn_error;  // why cuDNN could not start, if it could not
  std::string nhwc_error;   // the first channels-last refusal's reason
  // How the program's kiln::attention calls run (attention_lines.h), set by
  // the codegen; empty when it has none.
  std::string attention;
};

class CudaProgram : public wrapper::CompiledProgram {
 public:
  struct LoadedKernel {
    CUfunction function = nullptr;
    KernelLaunchConfig launch;
  };
  // `kernels` by kernel name (every KernelCallLine's); `modules` are owned
  // (unloaded with the program).
  static absl::StatusOr<std::unique_ptr<CudaProgram>> Create(ResolvedProgram resolved, int device_index,
                                                             std::map<std::string, LoadedKernel> kernels,
                                                             std::vector<CUmodule> modules);
  ~CudaProgram() override;

  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) override;
  absl::StatusOr<std::vector<DeviceTensor>> RunDevice(const std::vector<DeviceTensor>& inputs);
  // One call on `stream` (a CUstream the caller owns; null: the legacy
  // default stream), made current for the call (ScopedCallerStream).
  // Device inputs are borrowed: read in place when their strides match the
  // program's input layout (in every dim of size > 1), else copied on the
  // device into it (2/4/8-byte elements); host inputs are uploaded. Outputs
  // own their storage (an output that would alias a borrowed input or a
  // constant is a device copy); nothing waits for the stream.
  absl::StatusOr<std::vector<wrapper::DeviceBuffer>> RunOnDevice(const std::vector<wrapper::DeviceRunInput>& inputs,
                                                                 void* stream) override;
  absl::StatusOr<std::unique_ptr<wrapper::ProgramSession>> NewSession(std::vector<Tensor> inputs) override;
  // kernels.cu: the NVRTC translation units as compiled.
  std::vector<std::pair<std::string, std::string>> SourceFiles() const override;
  // NVRTC units, cubin cache hits, compiler and module-load time.
  std::vector<std::string> ReportLines() const override;
  // How each extern will run, predicted from the tests Execute dispatches on:
  // matmuls and convolutions of float types in cuBLAS / cuDNN (library),
  // pooling, gathers and shape queries in kiln's runtime kernels
  // (generated), the rest and islands on the host (reference).
  std::map<std::string, wrapper::ExternRun> ExternRuns() const override;

  // What a call may be asked to do besides running (cuda_session.h).
  struct CallHooks {
    // Every storage the call allocates is also appended here: a captured
    // CUDA graph keeps using those addresses on every replay.
    std::vector<std::shared_ptr<DeviceStorage>>* keep_alive = nullptr;
    // Events around each launch and extern step (Profile).
    StepTimer* timer = nullptr;
  };
  // One call on `stream` (which must be the device's current stream for
  // the calling thread: allocations are cached per stream).
  absl::StatusOr<std::vector<DeviceTensor>> Execute(const std::vector<DeviceTensor>& inputs, CUstream stream,
                                                    const CallHooks& hooks);
  // `iterations` eager calls with every step timed by events on `stream`;
  // the steps in program order.
  absl::StatusOr<std::vector<wrapper::StepProfile>> Profile(const std::vector<DeviceTensor>& inputs,
                                                            CUstream stream, int iterations);

  // Host tensors -> device tensors in the layouts the program expects.
  absl::StatusOr<std::vector<DeviceTensor>> Upload(const std::vector<Tensor>& inputs);
  // A device tensor -> a contiguous host tensor (synchronizes the stream).
  absl::StatusOr<Tensor> Download(const DeviceTensor& t);

  int device_index() const { return device_index_; }
  const ResolvedProgram& resolved() const { return resolved_; }
  CudaProgramStats& stats() { return stats_; }
  // The translation units' sources (for SourceFiles), set by the codegen.
  void set_sources(std::vector<std::string> units) { unit_sources_ = std::move(units); }

 private:
  CudaProgram() = default;
  struct Slot {
    std::shared_ptr<DeviceStorage> storage;
    int64_t byte_offset = 0;
  };
  // Input `i` of a RunOnDevice call as the program's input layout.
  absl::StatusOr<DeviceTensor> BorrowInput(const wrapper::DeviceBuffer& b, size_t i, CUstream stream);
  // Host tensor `t` uploaded as input `i` on the current stream.
  absl::StatusOr<DeviceTensor> UploadInput(const Tensor& t, size_t i, CUstream stream);
  // `bytes` of storage on the current stream, recorded in hooks.keep_alive.
  absl::StatusOr<std::shared_ptr<DeviceStorage>> Allocate(int64_t bytes, const CallHooks& hooks);
  absl::Status RunExtern(const ExternStep& e, std::vector<Slot>& slots, CUstream stream, const CallHooks& hooks,
                         ExternPath* path);
  // The (once computed, device-resident) result of a metadata-only extern.
  absl::StatusOr<const DeviceStorage*> MetadataResult(const ExternStep& e, const std::vector<DeviceView>& args,
                                                      const std::vector<DeviceView>& outs, CUstream stream);
  // `bytes` of scratch for cuBLASLt, kept by the program (one size).
  absl::StatusOr<CUdeviceptr> Workspace(int64_t bytes);
  // At least `n` ones of `dtype`, kept by the program.
  absl::StatusOr<CUdeviceptr> Ones(int64_t n, DType dtype, CUstream stream, const CallHooks& hooks);

  ResolvedProgram resolved_;
  int device_index_ = 0;
  std::vector<LoadedKernel> kernels_;  // by ProgramStep::index
  std::vector<CUmodule> modules_;
  std::vector<Slot> constant_slots_;  // uploaded once, parallel to resolved_.constants
  // Per extern: the KRSC copy of a channels-last convolution's weight
  // (uploaded once), null for others; a convolution cuDNN refused
  // channels-last is not tried again (a failed plan is not cached).
  std::vector<std::shared_ptr<DeviceStorage>> krsc_weights_;
  std::unique_ptr<std::atomic<bool>[]> nhwc_refused_;
  std::mutex ones_mu_;
  struct OnesVector {
    std::shared_ptr<DeviceStorage> storage;
    int64_t count = 0;
  };
  std::map<DType, OnesVector> ones_;
  std::shared_ptr<DeviceStorage> workspace_;
  std::map<const ExternStep*, std::shared_ptr<DeviceStorage>> metadata_results_;
  // RunOnDevice calls, one at a time: a call on another stream than the
  // previous one waits (on the device) for the previous call's end, since
  // calls share the buffers above (cuBLASLt workspace, ones, metadata).
  std::mutex device_run_mu_;
  CUevent last_call_end_ = nullptr;
  CUstream last_call_stream_ = nullptr;
  CudaProgramStats stats_;
  std::vector<std::string> unit_sources_;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_PROGRAM_H_
