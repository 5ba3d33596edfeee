// Device-op strings for the Python wrapper (Inductor's DeviceOpOverrides):
// what the printed wrapper writes to talk to a device, so that no core file
// spells a device's API. A device backend registers one DeviceOpOverrides
// object for its type in its registration function (backends/cpu:
// RegisterCpuBackend); wrapper/python_printer.cc asks for the overrides of
// every device a program uses, and wrapper/codegen.cc asks whether the
// device needs device-guard lines at all.
//
//   Inductor                       kiln
//   import_get_raw_stream_as(n)    ImportGetRawStreamAs(n)
//   set_device(i)                  SetDevice(i)
//   synchronize()                  Synchronize()
//   device_guard(i)                DeviceGuard(i) (+ GuardPrologue(i))
//   kernel_header/kernel_driver    KernelHeader()/KernelDriver()
//   (async_compile.<kind>(...))    KernelDefinition(...)
//   (kernel.run(..., stream=))     KernelLaunch(...)
//   (empty_strided_<dev>)          EmptyStrided(...)
//
// Every method has a device-neutral default written with PyTorch's generic
// APIs (torch.get_device_module(type) and its device(i),
// empty_strided(..., device=)), so an unregistered device still prints
// readable code; GenericDeviceOpOverrides(type) is that default.
#ifndef KILN_WRAPPER_DEVICE_OP_OVERRIDES_H_
#define KILN_WRAPPER_DEVICE_OP_OVERRIDES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::wrapper {

class DeviceOpOverrides {
 public:
  explicit DeviceOpOverrides(std::string type) : type_(std::move(type)) {}
  virtual ~DeviceOpOverrides() = default;
  // The device type ("cpu"): a lowercase identifier.
  const std::string& type() const { return type_; }

  // Module-level lines the wrapper needs for this device (imports,
  // aliases), in order, and the names they define (the printer refuses
  // buffers and kernels with those names).
  virtual std::vector<std::string> HeaderLines() const { return {}; }
  virtual std::vector<std::string> DefinedNames() const { return {}; }

  // A statement binding `name` to a function index -> raw stream.
  virtual std::string ImportGetRawStreamAs(const std::string& name) const;
  virtual std::string SetDevice(int index) const;
  virtual std::string Synchronize() const;

  // Whether code on this device runs inside device-guard blocks
  // (EnterDeviceContextManagerLine / Exit...). False for a device with a
  // single implicit index such as the host.
  virtual bool NeedsDeviceGuard() const { return true; }
  // The context-manager expression of `with <DeviceGuard(i)>:`, and the
  // statements that open the block (CUDA: its set_device).
  virtual std::string DeviceGuard(int index) const;
  virtual std::vector<std::string> GuardPrologue(int /*index*/) const { return {}; }

  // An expression allocating an uninitialized tensor. `sizes` and
  // `strides` are Python tuples, `dtype` a torch dtype ("torch.float32"),
  // `device` the full device name ("cpu", "cuda:1") as a Python string
  // literal.
  virtual std::string EmptyStrided(const std::string& sizes, const std::string& strides,
                                   const std::string& dtype, const std::string& device) const;
  // The statement defining kernel `name` from its source (`body`, already a
  // Python string literal) and its argument types (Python string literals
  // of C pointer types, one per parameter).
  virtual std::string KernelDefinition(const std::string& name,
                                       const std::vector<std::string>& arg_types,
                                       const std::string& body) const;
  // The statement launching kernel `name` on `args` (buffer names).
  virtual std::string KernelLaunch(const std::string& name,
                                   const std::vector<std::string>& args) const;

  // Source text for a C++ wrapper (Inductor's kernel_header /
  // kernel_driver): includes, and the helpers that load and launch kernels.
  // Empty by default.
  virtual std::string KernelHeader() const { return ""; }
  virtual std::string KernelDriver() const { return ""; }

 protected:
  // `'type'` as a Python string literal (types are identifiers).
  std::string QuotedType() const { return "'" + type_ + "'"; }

 private:
  std::string type_;
};

// Registers `overrides` under its type. AlreadyExists when the type has
// overrides; InvalidArgument for null or a type that is not a lowercase
// identifier. Thread-safe; registered objects live until exit.
absl::Status RegisterDeviceOpOverrides(std::unique_ptr<DeviceOpOverrides> overrides);
// The registered overrides of `device` ("cuda" or "cuda:1": the index is
// dropped, as in Inductor). NotFound listing the registered types.
absl::StatusOr<const DeviceOpOverrides*> FindDeviceOpOverrides(absl::string_view device);
// The registered overrides, or GenericDeviceOpOverrides for the type.
const DeviceOpOverrides& DeviceOpOverridesOrGeneric(absl::string_view device);
// The device-neutral overrides of `type` (cached; never null).
const DeviceOpOverrides& GenericDeviceOpOverrides(absl::string_view type);
// Types with registered overrides, sorted.
std::vector<std::string> RegisteredDeviceOpOverrides();

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_DEVICE_OP_OVERRIDES_H_
