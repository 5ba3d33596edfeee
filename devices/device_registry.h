// The process-wide device registry. Devices register explicitly (a
// registration function per device, called by the binary that links it in:
// backends/cpu's RegisterCpuBackend()); core code looks devices up by name
// only, so no core file names a specific device.
//
//   RETURN_IF_ERROR(DeviceRegistry::Global().Register(std::make_unique<CpuDevice>()));
//   ASSIGN_OR_RETURN(DeviceRef cpu, DeviceRegistry::Global().Find("cpu:0"));
//
// Names are `type` (index 0) or `type:index`. Thread-safe.
#ifndef KILN_DEVICES_DEVICE_REGISTRY_H_
#define KILN_DEVICES_DEVICE_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "devices/device_interface.h"

namespace kiln::devices {

// A device and one of its indices.
struct DeviceRef {
  DeviceInterface* device = nullptr;
  int index = 0;
};

// A device type: a lowercase identifier ([a-z][a-z0-9_]*, at most 64).
bool IsValidDeviceType(absl::string_view type);

// A parsed device name.
struct DeviceName {
  std::string type;
  int index = 0;
};
// "cpu" -> {cpu, 0}; "cuda:1" -> {cuda, 1}. InvalidArgument on anything
// else (empty, bad characters, negative or non-numeric index).
absl::StatusOr<DeviceName> ParseDeviceName(absl::string_view name);

class DeviceRegistry {
 public:
  DeviceRegistry() = default;
  DeviceRegistry(const DeviceRegistry&) = delete;
  DeviceRegistry& operator=(const DeviceRegistry&) = delete;

  static DeviceRegistry& Global();

  // AlreadyExists when the type is registered (registering twice is a bug
  // of the binary, but callers that may run twice use RegisterIfAbsent).
  absl::Status Register(std::unique_ptr<DeviceInterface> device);
  // OK when already registered (idempotent registration functions).
  absl::Status RegisterIfAbsent(std::unique_ptr<DeviceInterface> device);

  // NotFound for an unknown type or an index past the device's count; the
  // message lists what is registered.
  absl::StatusOr<DeviceRef> Find(absl::string_view name) const;
  // The interface registered for `name`'s type, whether or not a device of
  // it is present (its index is not checked): for type-wide settings, such
  // as the float32 matmul precision a compile for that type records.
  // NotFound for an unknown type, as Find.
  absl::StatusOr<DeviceInterface*> FindType(absl::string_view name) const;
  bool Contains(absl::string_view type) const;
  // Every registered name: each type and its `type:i` for i < count, sorted.
  std::vector<std::string> Names() const;

 private:
  std::vector<std::string> NamesLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // NamesLocked, joined for an error message ("(none)" when empty).
  std::string NamesForError() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<DeviceInterface>> devices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kiln::devices

#endif  // KILN_DEVICES_DEVICE_REGISTRY_H_
