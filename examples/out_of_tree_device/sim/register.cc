#include "sim/register.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/device_registry.h"
#include "ir/op_registry.h"
#include "runtime/register_kernels.h"
#include "sim/sim_codegen.h"
#include "sim/sim_device.h"
#include "support/status.h"
#include "wrapper/codegen.h"

namespace kiln_sim {
namespace {

std::atomic<SimDevice*> registered_device{nullptr};

}  // namespace

SimDevice* RegisteredSimDevice() { return registered_device.load(); }

absl::Status RegisterSimBackend() {
  static std::once_flag once;
  static absl::Status* status = new absl::Status();
  std::call_once(once, [] {
    absl::Status s = kiln::runtime::RegisterReferenceKernels(kiln::ir::BuiltinOps());
    if (s.ok()) {
      auto device = std::make_unique<SimDevice>();
      SimDevice* raw = device.get();
      s = kiln::devices::DeviceRegistry::Global().Register(std::move(device));
      if (s.ok()) registered_device.store(raw);
    }
    if (s.ok()) {
      s = kiln::wrapper::RegisterDeviceCodegen("sim", [] {
        return std::make_unique<SimCodegen>(*RegisteredSimDevice());
      });
    }
    if (s.ok()) s = kiln::wrapper::RegisterDeviceOpOverrides(std::make_unique<SimDeviceOpOverrides>());
    *status = s;
  });
  return *status;
}

std::vector<std::string> SimDeviceOpOverrides::HeaderLines() const {
  return {"import kiln_sim", "empty_strided_sim = kiln_sim.empty_strided"};
}

std::vector<std::string> SimDeviceOpOverrides::DefinedNames() const {
  return {"kiln_sim", "empty_strided_sim"};
}

std::string SimDeviceOpOverrides::ImportGetRawStreamAs(const std::string& name) const {
  return absl::StrCat("from kiln_sim import current_raw_stream as ", name);
}

std::string SimDeviceOpOverrides::SetDevice(int index) const {
  return absl::StrCat("kiln_sim.set_device(", index, ")");
}

std::string SimDeviceOpOverrides::Synchronize() const { return "kiln_sim.synchronize()"; }

std::string SimDeviceOpOverrides::DeviceGuard(int index) const {
  return absl::StrCat("kiln_sim.device_guard(", index, ")");
}

std::string SimDeviceOpOverrides::EmptyStrided(const std::string& sizes, const std::string& strides,
                                               const std::string& dtype, const std::string&) const {
  return absl::StrCat("empty_strided_sim(", sizes, ", ", strides, ", ", dtype, ")");
}

std::string SimDeviceOpOverrides::KernelDefinition(const std::string& name,
                                                   const std::vector<std::string>&,
                                                   const std::string& body) const {
  return absl::StrCat(name, " = kiln_sim.load_kernel(", body, ")");
}

std::string SimDeviceOpOverrides::KernelLaunch(const std::string& name,
                                               const std::vector<std::string>& args) const {
  return absl::StrCat("kiln_sim.launch(", name, ", kiln_sim.grid_for(", name, "), [",
                      absl::StrJoin(args, ", "), "], stream=kiln_sim.current_raw_stream())");
}

std::string SimDeviceOpOverrides::KernelHeader() const { return "#include \"sim/sim_launch.h\"\n"; }

std::string SimDeviceOpOverrides::KernelDriver() const {
  return "// load:   kiln_sim::ParseKernel(text)\n"
         "// launch: kiln_sim::Launch(stream, kernel, kiln_sim::GridFor(*kernel, props), args)\n";
}

}  // namespace kiln_sim
