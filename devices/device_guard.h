// DeviceGuard: makes a region run on one index of a device (Inductor's
// DeviceGuard / torch.cuda._DeviceGuard, in C++ RAII). Creation exchanges
// the calling thread's current index (DeviceInterface::ExchangeDevice) and
// the guard's destruction restores the previous one.
//
//   ASSIGN_OR_RETURN(DeviceGuard guard, DeviceGuard::Create("cuda:1"));
//   ... work on cuda:1 ...
//   // leaving the scope makes the previous index current again
//
// A guard for index -1 changes nothing (like a guard over None). Guards are
// movable (the moved-from guard restores nothing) and not copyable.
#ifndef KILN_DEVICES_DEVICE_GUARD_H_
#define KILN_DEVICES_DEVICE_GUARD_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/device_interface.h"
#include "devices/device_registry.h"

namespace kiln::devices {

class DeviceGuard {
 public:
  // Makes `index` current on `device`. NotFound for an index outside
  // [0, device_count()) (other than -1); the device's own error when the
  // exchange fails.
  static absl::StatusOr<DeviceGuard> Create(DeviceInterface& device, int index);
  // By name ("cuda:1"; "cuda" is index 0) through `registry`: NotFound for
  // an unregistered type or an index past the count, listing what is
  // registered.
  static absl::StatusOr<DeviceGuard> Create(
      absl::string_view name, const DeviceRegistry& registry = DeviceRegistry::Global());

  DeviceGuard(DeviceGuard&& other) noexcept;
  DeviceGuard& operator=(DeviceGuard&& other) noexcept;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  // Restores the previous index; a failure there cannot be reported from a
  // destructor (call Restore() to see it).
  ~DeviceGuard();

  // Restores the previous index now; the guard then does nothing more.
  absl::Status Restore();

  DeviceInterface* device() const { return device_; }
  int index() const { return index_; }
  // The index current before the guard (-1 for a no-op guard).
  int previous_index() const { return previous_; }

 private:
  DeviceGuard(DeviceInterface* device, int index, int previous)
      : device_(device), index_(index), previous_(previous) {}

  DeviceInterface* device_ = nullptr;  // null once moved from or restored
  int index_ = -1;
  int previous_ = -1;
};

}  // namespace kiln::devices

#endif  // KILN_DEVICES_DEVICE_GUARD_H_
