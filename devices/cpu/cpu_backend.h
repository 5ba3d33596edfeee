// The CPU backend: its DeviceInterface, its wrapper::DeviceCodegen, and the
// registration function a binary calls to link the CPU device in.
//
//   RETURN_IF_ERROR(kiln::devices::cpu::RegisterCpuBackend());
//   ASSIGN_OR_RETURN(auto codegen, kiln::wrapper::CreateDeviceCodegen("cpu"));
#ifndef KILN_DEVICES_CPU_CPU_BACKEND_H_
#define KILN_DEVICES_CPU_CPU_BACKEND_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "devices/cpu/compile_cache.h"
#include "devices/device_interface.h"
#include "wrapper/codegen.h"

namespace kiln::devices::cpu {

struct CpuBackendOptions {
  // Empty: CompileCache::DefaultDirectory().
  std::string cache_dir;
  CompilerConfig compiler;
};

class CpuDevice : public DeviceInterface {
 public:
  std::string type() const override { return "cpu"; }
  bool is_available() const override { return true; }
  int device_count() const override { return 1; }
  absl::StatusOr<DeviceAllocator*> allocator(int index) override;
  absl::Status Synchronize(int index) override;
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

 private:
  CpuBackendOptions options_;
};

// Registers "cpu" with the devices registry and wrapper::RegisterDeviceCodegen.
// Idempotent and thread-safe.
absl::Status RegisterCpuBackend();

}  // namespace kiln::devices::cpu

#endif  // KILN_DEVICES_CPU_CPU_BACKEND_H_
