// From a schedule to wrapper lines, and the device-backend hooks that fill in
// kernel bodies and turn the lines into something that runs. Core code
// reaches a device only through the codegen registry below
// (RegisterDeviceCodegen / CreateDeviceCodegen); a binary registers its
// devices at start-up (backends::RegisterBuiltinBackends(), or one
// backend's Register*Backend(): see backends/cpu/README.md).
#ifndef KILN_WRAPPER_CODEGEN_H_
#define KILN_WRAPPER_CODEGEN_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"
#include "lowering/lower.h"
#include "lowering/schedule.h"
#include "support/tensor.h"
#include "wrapper/program_session.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {

// A device's code generator and runner.
class DeviceCodegen {
 public:
  virtual ~DeviceCodegen() = default;
  virtual std::string device() const = 0;
  // The source of one fused kernel (its parameters: the kernel's `reads`
  // then its `buffers`, as KernelCallLine args list them).
  virtual absl::StatusOr<std::string> KernelSource(const lowering::LoopGraph& graph,
                                                   const lowering::FusedKernel& kernel) = 0;
  // Turns the (memory-planned) lines into a runnable program: for the CPU,
  // one C++ translation unit (kernels + the C++ wrapper), compiled through
  // the on-disk cache and loaded with dlopen.
  virtual absl::StatusOr<std::unique_ptr<class CompiledProgram>> Compile(
      const WrapperProgram& program) = 0;
  // Graph passes (a pipeline spec, passes/pipeline_spec.h) the driver runs
  // on `graph` after shape propagation and before lowering, for ops this
  // device runs in a library: the CPU's "fuse_post_ops" (convolution/GEMM
  // epilogues for oneDNN); CUDA's depend on the graph (where they measured
  // faster). Empty: none.
  virtual std::string PreLoweringPipeline(const ir::Graph& graph) const {
    (void)graph;
    return "";
  }
  // How the driver should lower graphs for this device: whether
  // KernelSource handles float16/bfloat16 buffers, whether convolution
  // biases become pointwise epilogues (lowering/lower.h).
  virtual lowering::LowerOptions LoweringOptions() const { return lowering::LowerOptions(); }
};

// How a device runs one extern call of its program.
enum class ExternRun : uint8_t {
  kReference,  // a reference kernel (runtime/), over the extern's arguments
  kLibrary,    // a library made for it (oneDNN, cuBLAS, cuDNN)
  kGenerated,  // code the device generated for it (the CPU's attention kernel)
};

// A tensor in a device's memory, described without naming the device: how
// a caller (the C API's DLPack tensors) hands a program device memory to
// read in place and gets device memory back (CompiledProgram::RunOnDevice).
// The host never dereferences `data`.
struct DeviceBuffer {
  uintptr_t data = 0;  // device address of element 0 (0 for no elements)
  DType dtype = DType::kFloat32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements, non-negative
  int device_index = 0;
  // Outputs: keeps the memory alive, returning it to the device's allocator
  // when the last reference goes. Inputs: null (borrowed from the caller).
  std::shared_ptr<const void> owner;
};

// An input of RunOnDevice: a tensor in the program's device memory (read in
// place) or, when `host` is defined, a host tensor the program copies to the
// device itself.
struct DeviceRunInput {
  DeviceBuffer device;
  Tensor host;
};

// A compiled program ready to run.
class CompiledProgram {
 public:
  virtual ~CompiledProgram() = default;
  // Inputs in WrapperProgram::inputs order (any strides; they are made
  // contiguous when the layout requires); outputs in ::outputs order.
  virtual absl::StatusOr<std::vector<Tensor>> Run(const std::vector<Tensor>& inputs) = 0;
  // [Added for interpreter islands] Runs with any graph inputs and returns
  // any graph outputs: a whole-graph island (lowering::LoopGraph::
  // interpreted_graph) takes and returns sequences, strings, optionals. By
  // default the values must be tensors and go through Run.
  virtual absl::StatusOr<std::vector<ir::IValue>> RunValues(const std::vector<ir::IValue>& inputs);
  // Repeated calls on `inputs` (program_session.h): placed on the device
  // once, timed and profiled there. By default a host session over Run.
  virtual absl::StatusOr<std::unique_ptr<ProgramSession>> NewSession(std::vector<Tensor> inputs) {
    return MakeHostSession(*this, std::move(inputs));
  }
  // The host session's ProgramSession::Profile: `iterations` calls on
  // `inputs` with each step timed. Unimplemented where the program cannot.
  virtual absl::StatusOr<std::vector<StepProfile>> ProfileSteps(const std::vector<Tensor>& inputs, int iterations) {
    return absl::UnimplementedError("this device does not profile steps");
  }
  // Generated source a `kiln compile -o DIR` writes: file name -> text
  // (the CPU's program.cpp, CUDA's kernels.cu).
  virtual std::vector<std::pair<std::string, std::string>> SourceFiles() const { return {}; }
  // Device-specific lines of the compile report (caches, compiler time).
  virtual std::vector<std::string> ReportLines() const { return {}; }
  // How the device runs each extern call, keyed by each of the call's output
  // buffer names. Empty when the device does not say: the driver's report
  // then goes by the op table (GEMM and convolution rows are library calls).
  virtual std::map<std::string, ExternRun> ExternRuns() const { return {}; }
  // One call with inputs and outputs in the device's memory (no host round
  // trip), queued on `stream` (the device's raw stream handle, e.g. a
  // CUstream a caller such as torch owns; null: the device's default
  // stream). Returns once the work is queued: the outputs are ready in
  // stream order. The caller keeps borrowed inputs alive and unchanged
  // until the stream has run the call. Unimplemented by default (programs
  // that run on host memory: the CPU's, a whole-graph interpreter).
  virtual absl::StatusOr<std::vector<DeviceBuffer>> RunOnDevice(const std::vector<DeviceRunInput>& inputs,
                                                                void* stream);
};

// Device name -> codegen. devices/<impl> registers itself at start-up
// (backends/cpu: RegisterCpuBackend()); core code looks devices up here only.
using DeviceCodegenFactory = std::function<std::unique_ptr<DeviceCodegen>()>;
absl::Status RegisterDeviceCodegen(const std::string& device, DeviceCodegenFactory factory);
// `device` is a type ("cuda") or an indexed name ("cuda:1", which finds
// the type's codegen).
absl::StatusOr<std::unique_ptr<DeviceCodegen>> CreateDeviceCodegen(const std::string& device);

// Whether GenerateWrapper runs `call` as an out= extern (AllocateLine +
// ExternKernelLine, so memory planning can reuse its output's storage; the
// BLAS-backed matmul and convolution ops: the op rows whose EXTERN column
// names an out-variant library call) rather than an allocating one
// (ExternKernelAllocLine: every other extern, and all multi-output externs).
// [Added by the wrapper engineer.]
bool ExternUsesOutVariant(const lowering::ExternCall& call);

// Builds the lines: definitions of every kernel, then per step its
// allocations, the call, and frees after each buffer's last use (graph
// outputs and inputs are never freed by the program).
absl::StatusOr<WrapperProgram> GenerateWrapper(const lowering::LoopGraph& graph,
                                               const lowering::Schedule& schedule,
                                               DeviceCodegen& codegen);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_CODEGEN_H_
