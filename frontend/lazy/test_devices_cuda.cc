// Test binaries that also link the CUDA device (KILN_LAZY_DEVICE=cuda).
#include "devices/cuda/cuda_backend.h"
#include "frontend/lazy/test_util.h"

namespace kiln::lazy::testing {

absl::Status RegisterTestDevices() { return devices::cuda::RegisterCudaBackend(); }

}  // namespace kiln::lazy::testing
