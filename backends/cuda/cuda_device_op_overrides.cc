#include "backends/cuda/cuda_device_op_overrides.h"

#include "absl/strings/str_cat.h"

namespace kiln::backends::cuda {

std::vector<std::string> CudaDeviceOpOverrides::HeaderLines() const {
  return {"empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda"};
}

std::vector<std::string> CudaDeviceOpOverrides::DefinedNames() const {
  return {"empty_strided_cuda"};
}

std::string CudaDeviceOpOverrides::ImportGetRawStreamAs(const std::string& name) const {
  return absl::StrCat("from torch._C import _cuda_getCurrentRawStream as ", name);
}

std::string CudaDeviceOpOverrides::SetDevice(int index) const {
  return absl::StrCat("torch.cuda.set_device(", index, ")");
}

std::string CudaDeviceOpOverrides::Synchronize() const { return "torch.cuda.synchronize()"; }

std::string CudaDeviceOpOverrides::DeviceGuard(int index) const {
  return absl::StrCat("torch.cuda._DeviceGuard(", index, ")");
}

std::vector<std::string> CudaDeviceOpOverrides::GuardPrologue(int index) const {
  // Inductor's "no-op to ensure context" after entering the guard.
  return {SetDevice(index)};
}

std::string CudaDeviceOpOverrides::EmptyStrided(const std::string& sizes,
                                                const std::string& strides,
                                                const std::string& dtype,
                                                const std::string& /*device*/) const {
  return absl::StrCat("empty_strided_cuda(", sizes, ", ", strides, ", ", dtype, ")");
}

}  // namespace kiln::backends::cuda
