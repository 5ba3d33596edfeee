// kiln's hooks for the sim device: SimCodegen (a wrapper::DeviceCodegen)
// turns each fused kernel into sim bytecode (sim_isa.h) and the memory-
// planned wrapper lines into a SimProgram, which runs the lines against the
// sim device: buffers in its memory, kernels launched on its current stream
// with a grid (sim_launch.h), device guards from the lines' device
// contexts, and extern kernels / interpreter islands on the host (copied
// out of and back into device memory, as a real accelerator's fallback).
#ifndef KILN_SIM_SIM_CODEGEN_H_
#define KILN_SIM_SIM_CODEGEN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/sim_device.h"
#include "wrapper/codegen.h"

namespace kiln_sim {

class SimCodegen : public kiln::wrapper::DeviceCodegen {
 public:
  explicit SimCodegen(SimDevice& device) : device_(device) {}
  std::string device() const override { return "sim"; }
  absl::StatusOr<std::string> KernelSource(const kiln::lowering::LoopGraph& graph,
                                           const kiln::lowering::FusedKernel& kernel) override;
  absl::StatusOr<std::unique_ptr<kiln::wrapper::CompiledProgram>> Compile(
      const kiln::wrapper::WrapperProgram& program) override;

 private:
  SimDevice& device_;
};

// Counters of what a SimProgram did in its last Run (for tests).
struct SimRunStats {
  int kernel_launches = 0;
  int host_externs = 0;  // extern kernels and islands run on the host
  int64_t peak_device_bytes = 0;
};

// The SimProgram's statistics (null when `program` is not one).
const SimRunStats* SimProgramStats(const kiln::wrapper::CompiledProgram& program);

}  // namespace kiln_sim

#endif  // KILN_SIM_SIM_CODEGEN_H_
