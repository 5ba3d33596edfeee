// The CUDA backend: its wrapper::DeviceCodegen (kernel sources from
// kernel_codegen.h, NVRTC through the cubin cache, a CudaProgram that
// executes the wrapper lines) and the registration function a binary calls
// to link the CUDA device in. Core code never names this file.
//
//   RETURN_IF_ERROR(kiln::backends::cuda::RegisterCudaBackend());
//   options.device = "cuda";  // driver::CompileGraph
#ifndef KILN_BACKENDS_CUDA_CUDA_BACKEND_H_
#define KILN_BACKENDS_CUDA_CUDA_BACKEND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cuda/cubin_cache.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/kernel_codegen.h"
#include "wrapper/codegen.h"

namespace kiln::backends::cuda {

struct CudaBackendOptions {
  // Empty: CacheDirectory("cuda") (support/disk_cache.h: KILN_CACHE_DIR/cuda, ...).
  std::string cache_dir;
  // The cache's size cap in bytes (0: none); unset: KILN_CACHE_MAX_MB, else 2048 MB.
  std::optional<uint64_t> cache_max_bytes;
  // Extra NVRTC options (the architecture and -std are always set).
  std::vector<std::string> nvrtc_options;
  // NVRTC's -minimal (no texture/surface/device-runtime declarations: about
  // half the compile time of a small unit). A unit that fails to compile
  // with it is compiled again without.
  bool minimal = true;
  // Kernels per NVRTC translation unit; the units compile in parallel.
  // 0: balanced for the compile threads: up to two units per thread (one
  // kernel per unit at most), kernels dealt longest first to the unit with
  // the least source, units compiled largest first (NVRTC's time grows
  // with a kernel's text; a unit's fixed cost is ~20 ms). K > 0: K
  // consecutive kernels per unit.
  int kernels_per_unit = 0;
  // Compile threads: this, at most the machine's hardware threads.
  int max_threads = 16;
  // The machine's hardware threads; 0: std::thread::hardware_concurrency()
  // (a benchmark plans the units of a larger machine with it).
  int hardware_threads = 0;
};

class CudaCodegen : public wrapper::DeviceCodegen {
 public:
  // `device`: "cuda" (the calling thread's current index) or "cuda:N".
  explicit CudaCodegen(std::string device = "cuda", CudaBackendOptions options = CudaBackendOptions());
  std::string device() const override { return device_; }
  absl::StatusOr<std::string> KernelSource(const lowering::LoopGraph& graph,
                                           const lowering::FusedKernel& kernel) override;
  // Returns a CudaProgram (cuda_program.h). Without a GPU the kernels still
  // compile (NVRTC needs no GPU) and the result is Unavailable.
  absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> Compile(const wrapper::WrapperProgram& program) override;
  // Convolution epilogues (bias, activations, residual adds, in float32,
  // float16 and bfloat16) fused into kiln::conv_post_ops, which cuDNN + one
  // epilogue kernel run (cuda_conv.h) and whose values may stay
  // channels-last (channels_last_plan.h). GEMMs stay plain ops (cuBLAS).
  // Only for graphs whose convolutions measured faster that way
  // (conv_fusion_policy.h); elsewhere the epilogues stay generated kernels.
  std::string PreLoweringPipeline(const ir::Graph& graph) const override;
  // float16/bfloat16 buffers as 16-bit words computed in float; the biases
  // of convolutions left unfused go into the kernel after cuDNN's.
  lowering::LowerOptions LoweringOptions() const override {
    lowering::LowerOptions o;
    o.narrow_float_kernels = true;
    o.conv_bias_epilogue = true;
    return o;
  }

  // The target kernels are generated for: the device's, or sm_90 defaults.
  const CudaTarget& target() const { return target_; }
  // NVRTC options of every unit ("--gpu-architecture=sm_90", ...);
  // `minimal` adds -minimal.
  std::vector<std::string> NvrtcOptions(bool minimal = false) const;

  struct Unit {
    std::string source;
    std::vector<std::string> kernels;  // function names
  };
  // Groups the kernel sources into translation units (kernels_per_unit):
  // sources that start with the shared prelude share one (the prelude
  // once); others stay alone. In the order they should compile.
  std::vector<Unit> MakeUnits(const std::vector<CudaKernelSource>& kernels) const;
  // NVRTC threads: max_threads, at most the hardware's.
  int CompileThreads() const;

  // The cubins of `kernels` (distinct texts): MakeUnits, then each unit
  // through the cubin cache (NVRTC on a miss), units in parallel. Needs no
  // GPU: Compile loads the result; benchmarks time it alone.
  struct CubinBuild {
    std::vector<Unit> units;
    std::vector<CubinEntry> cubins;  // one per unit
    int cache_hits = 0;
    int minimal_fallbacks = 0;
    double seconds = 0;           // wall, cache lookups included
    double compiler_seconds = 0;  // inside NVRTC, summed over units
    int threads = 0;              // compile threads used
  };
  absl::StatusOr<CubinBuild> BuildCubins(const std::vector<CudaKernelSource>& kernels) const;

 private:
  std::string device_;
  int index_ = 0;
  CudaBackendOptions options_;
  CudaTarget target_;
  std::map<std::string, CudaKernelSource> generated_;  // by FusedKernel::name
};

// kernels.cu for `program`'s kernels without a GPU (`kiln compile --device
// cuda` on a machine without CUDA): each distinct kernel once, after the
// shared prelude, as one NVRTC translation unit (kernels that do not start
// with the prelude follow as their own units). The program's kernels must
// come from this backend's codegen (their "// kiln kernel NAME" line).
std::string KernelsFileWithoutDevice(const wrapper::WrapperProgram& program);

// Registers "cuda" with the devices registry (also without a GPU: it then
// reports device_count() == 0) and with wrapper::RegisterDeviceCodegen.
// Idempotent and thread-safe.
absl::Status RegisterCudaBackend();

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_BACKEND_H_
