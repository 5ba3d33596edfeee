// DLPack tensors of a device model (a model compiled for "cuda": torch's
// CUDA tensors) <-> the device-neutral buffers of
// wrapper::CompiledProgram::RunOnDevice, for the C API (kiln_c.h).
//
// Which memory a model takes: a CPU model reads CPU memory only (kDLCPU,
// kDLCUDAHost); a model of a DLPack-known device (kDLCUDA for "cuda")
// reads that device's memory in place when the index matches, and also
// takes host tensors, which its program copies to the device (shape tensors
// whose values decide shapes must come this way). Anything else is an
// InvalidArgument naming the input, its device and the model's.
#ifndef KILN_PYTHON_DLPACK_DEVICE_H_
#define KILN_PYTHON_DLPACK_DEVICE_H_

#include <dlpack/dlpack.h>

#include <string>

#include "absl/status/statusor.h"
#include "devices/device_registry.h"
#include "wrapper/codegen.h"

namespace kiln::capi {

// The DLPack device of a kiln device: cpu -> kDLCPU, cuda:i -> kDLCUDA i;
// Unimplemented for devices DLPack has no code for here.
absl::StatusOr<DLDevice> DLDeviceOf(const devices::DeviceName& device);

// "cpu", "cuda:0", "cuda_host", "device type 7:0", for messages.
std::string DLDeviceName(DLDevice device);

// True for memory the host reads (kDLCPU, kDLCUDAHost).
bool IsHostMemory(DLDevice device);

// Input `what` of a model whose memory is `model` (not kDLCPU): a borrowed
// device buffer, or a host tensor (read in place where it can be, see
// deploy/dlpack_tensor.h) the program uploads.
absl::StatusOr<wrapper::DeviceRunInput> DeviceInputFromDLPack(const DLTensor& t, DLDevice model,
                                                             const std::string& what);

// An error for a tensor a CPU model cannot read (OK for host memory).
absl::Status CheckHostInput(const DLTensor& t, const std::string& what);

// A new DLManagedTensor over `buffer` on `device`; its deleter drops
// buffer.owner (returning the memory to the device's allocator once no one
// else holds it). No copy.
absl::StatusOr<DLManagedTensor*> DeviceBufferToDLPack(wrapper::DeviceBuffer buffer, DLDevice device);

}  // namespace kiln::capi

#endif  // KILN_PYTHON_DLPACK_DEVICE_H_
