// CUDA's device-op strings for the Python wrapper (Inductor's
// CUDADeviceOpOverrides): torch.cuda's guard, set_device, synchronize, raw
// stream and allocation. Kernels stay kiln's CUDA C, which no PyTorch API
// loads: their definitions use the generic `kiln_device_kernel`, which
// raises when a printed wrapper calls one.
#ifndef KILN_BACKENDS_CUDA_CUDA_DEVICE_OP_OVERRIDES_H_
#define KILN_BACKENDS_CUDA_CUDA_DEVICE_OP_OVERRIDES_H_

#include <string>
#include <vector>

#include "wrapper/device_op_overrides.h"

namespace kiln::backends::cuda {

class CudaDeviceOpOverrides : public wrapper::DeviceOpOverrides {
 public:
  CudaDeviceOpOverrides() : DeviceOpOverrides("cuda") {}
  std::vector<std::string> HeaderLines() const override;
  std::vector<std::string> DefinedNames() const override;
  std::string ImportGetRawStreamAs(const std::string& name) const override;
  std::string SetDevice(int index) const override;
  std::string Synchronize() const override;
  std::string DeviceGuard(int index) const override;
  std::vector<std::string> GuardPrologue(int index) const override;
  std::string EmptyStrided(const std::string& sizes, const std::string& strides,
                           const std::string& dtype, const std::string& device) const override;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_DEVICE_OP_OVERRIDES_H_
