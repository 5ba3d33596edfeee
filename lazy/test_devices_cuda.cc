// Test binaries that also link the CUDA device (KILN_LAZY_DEVICE=cuda).
#include "backends/cuda/cuda_backend.h"
#include "lazy/test_util.h"

namespace kiln::lazy::testing {

absl::Status RegisterTestDevices() { return backends::cuda::RegisterCudaBackend(); }

}  // namespace kiln::lazy::testing
