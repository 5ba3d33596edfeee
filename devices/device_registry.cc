#include "devices/device_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::devices {

bool IsValidDeviceType(absl::string_view type) {
  if (type.empty() || type.size() > 64) return false;
  if (!absl::ascii_islower(static_cast<unsigned char>(type[0]))) return false;
  for (char c : type) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!absl::ascii_islower(u) && !absl::ascii_isdigit(u) && c != '_') return false;
  }
  return true;
}

absl::StatusOr<DeviceName> ParseDeviceName(absl::string_view name) {
  DeviceName out;
  absl::string_view type = name;
  const size_t colon = name.find(':');
  if (colon != absl::string_view::npos) {
    type = name.substr(0, colon);
    absl::string_view index = name.substr(colon + 1);
    int value = 0;
    const bool digits_only =
        !index.empty() && index.size() <= 6 &&
        std::all_of(index.begin(), index.end(),
                    [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); });
    if (!digits_only || !absl::SimpleAtoi(index, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device name '", absl::CHexEscape(name),
                       "': expected type or type:index with a non-negative index"));
    }
    out.index = value;
  }
  if (!IsValidDeviceType(type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("device name '", absl::CHexEscape(name),
                     "': the type must be a lowercase identifier ([a-z][a-z0-9_]*)"));
  }
  out.type = std::string(type);
  return out;
}

DeviceRegistry& DeviceRegistry::Global() {
  static DeviceRegistry* registry = new DeviceRegistry();
  return *registry;
}

absl::Status DeviceRegistry::Register(std::unique_ptr<DeviceInterface> device) {
  if (device == nullptr) return absl::InvalidArgumentError("Register: null device");
  const std::string type = device->type();
  if (!IsValidDeviceType(type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Register: device type '", absl::CHexEscape(type), "' is not a lowercase identifier"));
  }
  absl::MutexLock lock(&mu_);
  if (devices_.count(type) != 0) {
    return absl::AlreadyExistsError(absl::StrCat("device '", type, "' is already registered"));
  }
  devices_.emplace(type, std::move(device));
  return absl::OkStatus();
}

absl::Status DeviceRegistry::RegisterIfAbsent(std::unique_ptr<DeviceInterface> device) {
  absl::Status s = Register(std::move(device));
  if (absl::IsAlreadyExists(s)) return absl::OkStatus();
  return s;
}

std::vector<std::string> DeviceRegistry::NamesLocked() const {
  std::vector<std::string> names;
  for (const auto& [type, device] : devices_) {
    names.push_back(type);
    const int count = device->device_count();
    for (int i = 0; i < count; ++i) names.push_back(absl::StrCat(type, ":", i));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string DeviceRegistry::NamesForError() const {
  std::vector<std::string> names = NamesLocked();
  return names.empty() ? "(none)" : absl::StrJoin(names, ", ");
}

absl::StatusOr<DeviceRef> DeviceRegistry::Find(absl::string_view name) const {
  absl::StatusOr<DeviceInterface*> found = FindType(name);
  if (!found.ok()) return found.status();
  DeviceInterface* const device = *found;
  const int index = ParseDeviceName(name)->index;  // FindType parsed it
  const int count = device->device_count();
  if (index >= count) {
    absl::ReaderMutexLock lock(&mu_);
    return absl::NotFoundError(absl::StrCat("device '", name, "': index ", index, " is past the device count ", count,
                                            "; registered: ", NamesForError()));
  }
  return DeviceRef{device, index};
}

absl::StatusOr<DeviceInterface*> DeviceRegistry::FindType(absl::string_view name) const {
  auto parsed = ParseDeviceName(name);
  absl::ReaderMutexLock lock(&mu_);
  if (!parsed.ok()) {
    return absl::NotFoundError(absl::StrCat(parsed.status().message(), "; registered: ", NamesForError()));
  }
  auto it = devices_.find(parsed->type);
  if (it == devices_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no device '", parsed->type, "' is registered; registered: ", NamesForError()));
  }
  return it->second.get();
}

bool DeviceRegistry::Contains(absl::string_view type) const {
  absl::ReaderMutexLock lock(&mu_);
  return devices_.count(std::string(type)) != 0;
}

std::vector<std::string> DeviceRegistry::Names() const {
  absl::ReaderMutexLock lock(&mu_);
  return NamesLocked();
}

}  // namespace kiln::devices
