#include "backends/builtin.h"

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "support/status.h"

namespace kiln::backends {

absl::Status RegisterBuiltinBackends() {
  RETURN_IF_ERROR(cpu::RegisterCpuBackend());
  // Unavailable hardware is not an error: the device registers and says so
  // when asked (is_available, device_count).
  (void)cuda::RegisterCudaBackend();
  return absl::OkStatus();
}

}  // namespace kiln::backends
