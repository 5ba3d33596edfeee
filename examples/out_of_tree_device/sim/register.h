// Registers the sim device with kiln, the way a vendor's binary links a new
// backend in (Inductor's register_backend_for_device, explicitly):
//   - the device (DeviceInterface) in kiln's device registry, as "sim",
//     "sim:0" and "sim:1";
//   - its kernel codegen and program builder (wrapper::DeviceCodegen) under
//     "sim", which CompileOptions{.device = "sim"} selects;
//   - its device-op strings (wrapper::DeviceOpOverrides) for the Python
//     wrapper printer and for device-guard decisions.
// It also makes sure kiln's reference kernels are registered (the host
// fallback for extern kernels). Idempotent and thread-safe.
#ifndef KILN_SIM_REGISTER_H_
#define KILN_SIM_REGISTER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "wrapper/device_op_overrides.h"

namespace kiln_sim {

absl::Status RegisterSimBackend();

// The sim device's Python-wrapper strings (a `kiln_sim` Python module is
// what a real vendor would ship; nothing in the tests runs Python).
class SimDeviceOpOverrides : public kiln::wrapper::DeviceOpOverrides {
 public:
  SimDeviceOpOverrides() : DeviceOpOverrides("sim") {}
  std::vector<std::string> HeaderLines() const override;
  std::vector<std::string> DefinedNames() const override;
  std::string ImportGetRawStreamAs(const std::string& name) const override;
  std::string SetDevice(int index) const override;
  std::string Synchronize() const override;
  std::string DeviceGuard(int index) const override;
  std::string EmptyStrided(const std::string& sizes, const std::string& strides,
                           const std::string& dtype, const std::string& device) const override;
  std::string KernelDefinition(const std::string& name, const std::vector<std::string>& arg_types,
                               const std::string& body) const override;
  std::string KernelLaunch(const std::string& name,
                           const std::vector<std::string>& args) const override;
  std::string KernelHeader() const override;
  std::string KernelDriver() const override;
};

}  // namespace kiln_sim

#endif  // KILN_SIM_REGISTER_H_
