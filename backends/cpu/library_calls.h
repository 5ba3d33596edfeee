// Library calls: the extern ops a compiled CPU program runs in oneDNN rather
// than through their reference kernels -- float32 convolutions
// (kiln::conv_post_ops with its fused epilogue, aten::convolution,
// aten::conv1d/2d/3d, kiln::conv_nd), GEMMs (aten::mm/bmm/matmul/linear,
// aten::addmm with a 1-D bias, kiln::linear_post_ops), max pooling and the
// squeeze-excite block's kiln::global_avg_pool and kiln::channel_mul
// (passes/library_channel_ops.h).
//
// Each call is prepared once, when the program loads (PrepareLibraryCall):
// the primitive with its post-ops, constant weights reordered into the
// primitive's own layout (packed once, never per call), and the reorders
// between the buffers' layouts and the primitive's. Convolutions and pooling
// compute channels-last (NHWC); a value that only flows between such calls
// stays channels-last in its buffer (the program's layout plan, below), so
// chains of convolutions reorder only where a generated kernel, a reference
// extern or the caller touches a value.
//
// Calls run on the calling thread's OpenMP pool (threads.h). A call keeps
// no per-run state of its own: memory handles and the stream live in a
// CallState, and temporaries in a workspace the caller provides, so one
// program may run on several threads at once.
#ifndef KILN_BACKENDS_CPU_LIBRARY_CALLS_H_
#define KILN_BACKENDS_CPU_LIBRARY_CALLS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/wrapper_codegen.h"
#include "support/tensor.h"

namespace kiln::backends::cpu {
namespace dnnl_util {
struct PackedConstant;
}  // namespace dnnl_util

// How a value is laid out in its buffer.
enum class ValueFormat : uint8_t {
  kPlain,         // the buffer's layout (strides) from the Wrapper IR
  kChannelsLast,  // [N, C, *S] stored as [N, *S, C], contiguous
};

// Per-run, per-call state (memory handles, argument maps).
class CallState {
 public:
  virtual ~CallState() = default;
};

// Per-run state shared by the calls of one run (the oneDNN stream).
class RunStream {
 public:
  RunStream();
  ~RunStream();
  void* handle() { return stream_; }

 private:
  void* stream_;  // dnnl::stream*
};

class LibraryCall {
 public:
  virtual ~LibraryCall() = default;

  // Which buffer arguments (in the order generated code passes them) may
  // hold a channels-last value, and whether the output may be written so.
  virtual std::vector<bool> ChannelsLastArgs() const = 0;
  virtual bool ChannelsLastOutput() const = 0;

  // Fixes the formats of the buffer arguments and the output (after the
  // program's layout plan) and prepares the reorders they need.
  virtual absl::Status SetFormats(const std::vector<ValueFormat>& args, ValueFormat output) = 0;

  // Bytes of workspace Run needs (64-byte aligned by the caller).
  virtual size_t workspace_bytes() const = 0;
  // The constants the call keeps in its primitive's layout (packed
  // weights). The program packs them all into one arena before the first
  // NewState (CpuProgram::Load), and never again.
  virtual std::vector<dnnl_util::PackedConstant*> packed_constants() { return {}; }
  // "conv 3x3/1 [1, 64, 56, 56] -> [1, 64, 56, 56] + relu (brgconv:avx512_core)".
  virtual std::string Describe() const = 0;

  virtual std::unique_ptr<CallState> NewState() const = 0;
  // `buffers`: the call's buffer arguments, then its outputs, as generated
  // code passes them (storage bases; the layouts' offsets apply).
  virtual absl::Status Run(void* const* buffers, CallState& state, RunStream& stream, void* workspace) = 0;
};

// A prepared call for `spec`, or null when the op (or its dtype, arguments,
// ...) is not one the library runs; then the reference kernel runs it.
// `constants[i]` is the program constant behind buffer argument i (an
// undefined Tensor when the argument is not a constant). An error means the
// op is the library's but malformed (the caller may fall back).
absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(const ExternCallSpec& spec,
                                                                const std::vector<Tensor>& constants);

// Whether library calls are disabled (KILN_CPU_LIBRARY=0: every extern
// through its reference kernel, for before/after comparisons).
bool LibraryCallsDisabled();

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_LIBRARY_CALLS_H_
