#include "python/dlpack_device.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "deploy/dlpack_tensor.h"
#include "support/status.h"

namespace kiln::capi {
absl::StatusOr<DLDevice> DLDeviceOf(const devices::DeviceName& device) {
  DLDevice d;
  d.device_id = device.index;
  if (device.type == "cpu") {
    d.device_type = kDLCPU;
  } else if (device.type == "cuda") {
    d.device_type = kDLCUDA;
  } else {
    return absl::UnimplementedError(
        absl::StrCat("device '", device.type, "' has no DLPack device type in kiln's C API (cpu and cuda do)"));
  }
  return d;
}

std::string DLDeviceName(DLDevice device) {
  switch (device.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return absl::StrCat("cuda:", device.device_id);
    case kDLCUDAHost: return "cuda_host (pinned host memory)";
    default: return absl::StrCat("DLPack device type ", static_cast<int>(device.device_type), ":", device.device_id);
  }
}

bool IsHostMemory(DLDevice device) { return device.device_type == kDLCPU || device.device_type == kDLCUDAHost; }

absl::Status CheckHostInput(const DLTensor& t, const std::string& what) {
  if (IsHostMemory(t.device)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " is in ", DLDeviceName(t.device),
      " memory, but the model was compiled for cpu: compile it for that device (device \"cuda\") or pass a "
      "CPU tensor"));
}

absl::StatusOr<wrapper::DeviceRunInput> DeviceInputFromDLPack(const DLTensor& t, DLDevice model,
                                                             const std::string& what) {
  wrapper::DeviceRunInput in;
  if (IsHostMemory(t.device)) {
    ASSIGN_OR_RETURN(in.host, TensorFromDLPack(t, what));
    return in;
  }
  if (t.device.device_type != model.device_type || t.device.device_id != model.device_id) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is in ", DLDeviceName(t.device),
                                                   " memory, but the model was compiled for ", DLDeviceName(model),
                                                   ": pass a tensor on ", DLDeviceName(model),
                                                   " (or a CPU tensor, copied) or compile for the tensor's device"));
  }
  // Dtype, rank and sizes checked as for host tensors.
  ASSIGN_OR_RETURN(Tensor shape, PlaceholderFromDLPack(t, what));
  wrapper::DeviceBuffer& b = in.device;
  b.dtype = shape.dtype();
  b.device_index = t.device.device_id;
  b.sizes = shape.sizes();
  b.strides = t.strides != nullptr ? std::vector<int64_t>(t.strides, t.strides + t.ndim)
                                   : Tensor::ContiguousStrides(b.sizes);
  for (int64_t stride : b.strides) {
    if (stride < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": negative stride ", stride, " (device tensors need non-negative strides)"));
    }
  }
  const int64_t numel = shape.numel();
  if (numel > 0 && t.data == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, ": no data"));
  b.data = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(t.byte_offset);
  if (numel > 0 && b.data % DTypeSize(b.dtype) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": device address not aligned to its ",
                                                   DTypeSize(b.dtype), "-byte elements"));
  }
  return in;
}

absl::StatusOr<DLManagedTensor*> DeviceBufferToDLPack(wrapper::DeviceBuffer buffer, DLDevice device) {
  device.device_id = buffer.device_index;
  return NewManagedTensor(reinterpret_cast<void*>(buffer.data), device, buffer.dtype, std::move(buffer.sizes),
                          std::move(buffer.strides), std::move(buffer.owner));
}

}  // namespace kiln::capi
