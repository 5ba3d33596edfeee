#include "devices/device_guard.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace kiln::devices {

absl::StatusOr<DeviceGuard> DeviceGuard::Create(DeviceInterface& device, int index) {
  if (index == -1) return DeviceGuard(&device, -1, -1);
  const int count = device.device_count();
  if (index < 0 || index >= count) {
    return absl::NotFoundError(absl::StrCat("DeviceGuard: device '", device.type(), ":", index,
                                            "' does not exist (", device.type(), " has ", count,
                                            count == 1 ? " index)" : " indices)"));
  }
  absl::StatusOr<int> previous = device.ExchangeDevice(index);
  if (!previous.ok()) return previous.status();
  return DeviceGuard(&device, index, *previous);
}

absl::StatusOr<DeviceGuard> DeviceGuard::Create(absl::string_view name,
                                                const DeviceRegistry& registry) {
  absl::StatusOr<DeviceRef> ref = registry.Find(name);
  if (!ref.ok()) return ref.status();
  return Create(*ref->device, ref->index);
}

DeviceGuard::DeviceGuard(DeviceGuard&& other) noexcept
    : device_(std::exchange(other.device_, nullptr)),
      index_(other.index_),
      previous_(other.previous_) {}

DeviceGuard& DeviceGuard::operator=(DeviceGuard&& other) noexcept {
  if (this != &other) {
    Restore().IgnoreError();
    device_ = std::exchange(other.device_, nullptr);
    index_ = other.index_;
    previous_ = other.previous_;
  }
  return *this;
}

DeviceGuard::~DeviceGuard() { Restore().IgnoreError(); }

absl::Status DeviceGuard::Restore() {
  DeviceInterface* device = std::exchange(device_, nullptr);
  if (device == nullptr || index_ == -1) return absl::OkStatus();
  // MaybeExchangeDevice: a negative previous index (none) changes nothing.
  absl::StatusOr<int> restored = device->MaybeExchangeDevice(previous_);
  return restored.status();
}

}  // namespace kiln::devices
