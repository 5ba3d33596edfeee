// The CPU backend: its devices::DeviceInterface, its wrapper::DeviceCodegen, and the
// registration function a binary calls to link the CPU device in.
//
//   RETURN_IF_ERROR(kiln::backends::cpu::RegisterCpuBackend());
//   ASSIGN_OR_RETURN(auto codegen, kiln::wrapper::CreateDeviceCodegen("cpu"));
#ifndef KILN_BACKENDS_CPU_CPU_BACKEND_H_
#define KILN_BACKENDS_CPU_CPU_BACKEND_H_

#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "backends/cpu/compile_cache.h"
#include "devices/device_interface.h"
#include "wrapper/codegen.h"
#include "wrapper/device_op_overrides.h"

namespace kiln::backends::cpu {

// The compiler configuration generated programs build with: the cache's
// defaults plus -mprefer-vector-width=512, so that on AVX-512 hosts gcc
// vectorizes (and calls libmvec's) 16-wide instead of its default 8-wide:
// tanhf 0.72 -> 0.33 ns per element, expf 0.36 -> 0.29 (README.md). A
// no-op where 512-bit vectors do not exist.
CompilerConfig DefaultCpuCompilerConfig();

struct CpuBackendOptions {
  // Empty: CacheDirectory("cpu") (support/disk_cache.h: KILN_CACHE_DIR/cpu, ...).
  std::string cache_dir;
  // The cache's size cap in bytes (0: none); unset: KILN_CACHE_MAX_MB, else 2048 MB.
  std::optional<uint64_t> cache_max_bytes;
  CompilerConfig compiler = DefaultCpuCompilerConfig();
};

// The host as a device: one index, synchronous streams (everything queued
// is already done), events timed with the host's steady clock, properties
// from /proc/cpuinfo and sysconf, and memory statistics counted by its
// allocator (bytes allocated through allocator(0), not the compiled
// programs' own tensor pools).
class CpuDevice : public devices::DeviceInterface {
 public:
  CpuDevice();
  ~CpuDevice() override;
  std::string type() const override { return "cpu"; }
  bool is_available() const override { return true; }
  int device_count() const override { return 1; }
  absl::StatusOr<devices::DeviceAllocator*> allocator(int index) override;
  absl::Status Synchronize(int index) override;

  // Streams: id 0 is the default stream (owned by the device); created
  // streams get ids 1, 2, ... and are owned by the caller. The current
  // stream is per thread.
  absl::StatusOr<std::unique_ptr<devices::Stream>> CreateStream(int index) override;
  absl::StatusOr<devices::Stream*> CurrentStream(int index) override;
  absl::Status SetStream(devices::Stream* stream) override;
  absl::Status SetStreamById(int index, int64_t id) override;
  absl::StatusOr<std::unique_ptr<devices::Event>> CreateEvent(int index, bool enable_timing) override;

  // name: the CPU model from /proc/cpuinfo; multiprocessor_count: logical
  // cores online; total_memory: physical memory.
  absl::StatusOr<devices::DeviceProperties> GetDeviceProperties(int index) override;
  absl::StatusOr<int64_t> MemoryAllocated(int index) override;
  absl::StatusOr<int64_t> MaxMemoryAllocated(int index) override;
  // The dtypes the CPU kernel codegen emits (backends/cpu/identifiers.cc);
  // others (half, bfloat16, complex) run only in externs and islands.
  bool IsDtypeSupported(DType dtype) const override;

  // Streams, allocator and statistics (cpu_backend.cc); shared with the
  // streams the device created.
  struct State;

 private:
  absl::Status CheckIndex(int index) const;
  std::shared_ptr<State> state_;
};

// The CPU's strings for the Python wrapper (Inductor's CPU conventions):
// empty_strided_cpu allocations, kernels through async_compile.cpp_pybinding,
// no device guards, raw stream 0; for a C++ wrapper, the header and the
// dlopen-based driver of backends/cpu's compiled programs.
class CpuDeviceOpOverrides : public wrapper::DeviceOpOverrides {
 public:
  CpuDeviceOpOverrides() : DeviceOpOverrides("cpu") {}
  std::vector<std::string> HeaderLines() const override;
  std::vector<std::string> DefinedNames() const override;
  std::string ImportGetRawStreamAs(const std::string& name) const override;
  std::string SetDevice(int index) const override;
  std::string Synchronize() const override;
  bool NeedsDeviceGuard() const override { return false; }
  std::string DeviceGuard(int index) const override;
  std::string EmptyStrided(const std::string& sizes, const std::string& strides,
                           const std::string& dtype, const std::string& device) const override;
  std::string KernelDefinition(const std::string& name, const std::vector<std::string>& arg_types,
                               const std::string& body) const override;
  std::string KernelHeader() const override;
  std::string KernelDriver() const override;
};

class CpuCodegen : public wrapper::DeviceCodegen {
 public:
  explicit CpuCodegen(CpuBackendOptions options = CpuBackendOptions());
  std::string device() const override { return "cpu"; }
  absl::StatusOr<std::string> KernelSource(const lowering::LoopGraph& graph,
                                           const lowering::FusedKernel& kernel) override;
  // Returns a CpuProgram (cpu_program.h), whose stats() give the times.
  absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> Compile(
      const wrapper::WrapperProgram& program) override;
  // Epilogue fusion for the oneDNN library calls (passes/fuse_post_ops.h),
  // squeeze-excite means and gates as channels-last library calls
  // (library_channel_ops.h; after the epilogues, which take the gate
  // multiplies that fuse), attention for the generated attention kernel
  // (fuse_attention.h; torch.export's bmm form too), then dead-code
  // elimination of what the fused chains left.
  std::string PreLoweringPipeline(const ir::Graph&) const override {
    return "fuse_post_ops,library_channel_ops,fuse_attention_with_bmm,dce";
  }

 private:
  CpuBackendOptions options_;
};

// Registers "cpu" with the devices registry, its codegen with
// wrapper::RegisterDeviceCodegen, and CpuDeviceOpOverrides with
// wrapper::RegisterDeviceOpOverrides. Idempotent and thread-safe.
absl::Status RegisterCpuBackend();

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_CPU_BACKEND_H_
