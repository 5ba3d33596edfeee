#include "wrapper/device_op_overrides.h"

#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/device_registry.h"

namespace kiln::wrapper {
namespace {

// "cuda:1" -> "cuda".
absl::string_view TypeOf(absl::string_view device) {
  return device.substr(0, device.find(':'));
}

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<DeviceOpOverrides>> registered;
  std::map<std::string, std::unique_ptr<DeviceOpOverrides>> generic;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry;  // never destroyed: used at exit
  return *registry;
}

// The generic overrides of a name that is not a device type print a
// placeholder type instead of the raw text.
std::string SafeType(absl::string_view type) {
  return devices::IsValidDeviceType(type) ? std::string(type) : "unknown_device";
}

}  // namespace

std::string DeviceOpOverrides::ImportGetRawStreamAs(const std::string& name) const {
  return absl::StrCat(name, " = lambda index: torch.get_device_module(", QuotedType(),
                      ").current_stream(index)");
}

std::string DeviceOpOverrides::SetDevice(int index) const {
  return absl::StrCat("torch.get_device_module(", QuotedType(), ").set_device(", index, ")");
}

std::string DeviceOpOverrides::Synchronize() const {
  return absl::StrCat("torch.get_device_module(", QuotedType(), ").synchronize()");
}

std::string DeviceOpOverrides::DeviceGuard(int index) const {
  // torch.device(...) as a context manager only sets the default device of
  // new tensors; the device module's `device(i)` makes index i current.
  return absl::StrCat("torch.get_device_module(", QuotedType(), ").device(", index, ")");
}

std::string DeviceOpOverrides::EmptyStrided(const std::string& sizes, const std::string& strides,
                                            const std::string& dtype,
                                            const std::string& device) const {
  return absl::StrCat("empty_strided(", sizes, ", ", strides, ", device=", device, ", dtype=", dtype,
                      ")");
}

std::string DeviceOpOverrides::KernelDefinition(const std::string& name,
                                                const std::vector<std::string>& arg_types,
                                                const std::string& body) const {
  // No PyTorch API compiles an arbitrary device's kernel source: keep the
  // source readable, and fail when the kernel is called, not at import.
  return absl::StrCat(name, " = kiln_device_kernel(", QuotedType(), ", [",
                      absl::StrJoin(arg_types, ", "), "], ", body, ")");
}

std::string DeviceOpOverrides::KernelLaunch(const std::string& name,
                                            const std::vector<std::string>& args) const {
  return absl::StrCat(name, "(", absl::StrJoin(args, ", "), ")");
}

absl::Status RegisterDeviceOpOverrides(std::unique_ptr<DeviceOpOverrides> overrides) {
  if (overrides == nullptr) return absl::InvalidArgumentError("RegisterDeviceOpOverrides: null");
  const std::string type = overrides->type();
  if (!devices::IsValidDeviceType(type)) {
    return absl::InvalidArgumentError(absl::StrCat("RegisterDeviceOpOverrides: device type '",
                                                   absl::CHexEscape(type),
                                                   "' is not a lowercase identifier"));
  }
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  if (!registry.registered.emplace(type, std::move(overrides)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("device op overrides for '", type, "' are already registered"));
  }
  return absl::OkStatus();
}

absl::StatusOr<const DeviceOpOverrides*> FindDeviceOpOverrides(absl::string_view device) {
  const std::string type(TypeOf(device));
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  auto it = registry.registered.find(type);
  if (it != registry.registered.end()) return it->second.get();
  std::vector<std::string> known;
  for (const auto& entry : registry.registered) known.push_back(entry.first);
  return absl::NotFoundError(absl::StrCat("no device op overrides registered for '",
                                          absl::CHexEscape(device), "' (registered: [",
                                          absl::StrJoin(known, ", "), "])"));
}

const DeviceOpOverrides& GenericDeviceOpOverrides(absl::string_view type) {
  const std::string key = SafeType(TypeOf(type));
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::unique_ptr<DeviceOpOverrides>& slot = registry.generic[key];
  if (slot == nullptr) slot = std::make_unique<DeviceOpOverrides>(key);
  return *slot;
}

const DeviceOpOverrides& DeviceOpOverridesOrGeneric(absl::string_view device) {
  absl::StatusOr<const DeviceOpOverrides*> found = FindDeviceOpOverrides(device);
  if (found.ok()) return **found;
  return GenericDeviceOpOverrides(device);
}

std::vector<std::string> RegisteredDeviceOpOverrides() {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::vector<std::string> types;
  for (const auto& entry : registry.registered) types.push_back(entry.first);
  return types;
}

}  // namespace kiln::wrapper
