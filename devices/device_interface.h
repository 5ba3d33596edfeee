// The low device interface (Inductor's DeviceInterface, in C++): what core
// code may ask of a device without naming it. This first version holds what
// the CPU backend needs (identity, availability, an allocator, synchronize);
// the devices issue adds streams, events and guards as more virtual methods
// with `Unimplemented` defaults, so existing devices keep compiling.
#ifndef KILN_DEVICES_DEVICE_INTERFACE_H_
#define KILN_DEVICES_DEVICE_INTERFACE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kiln::devices {

// Raw device memory. Device memory is opaque to the host unless the device
// says otherwise (the CPU's is plain host memory).
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // `nbytes` bytes aligned to at least `alignment` (a power of two). Zero
  // bytes gives a valid, unique pointer.
  virtual absl::StatusOr<void*> Allocate(size_t nbytes, size_t alignment) = 0;
  // Frees a pointer from Allocate (null is a no-op).
  virtual void Free(void* ptr) = 0;
};

class DeviceInterface {
 public:
  virtual ~DeviceInterface() = default;
  // The device type ("cpu", "cuda"): a lowercase identifier.
  virtual std::string type() const = 0;
  // False where the device's driver or hardware is missing; such a device
  // stays registered (so lookups name it) but refuses work.
  virtual bool is_available() const = 0;
  virtual int device_count() const = 0;
  // The allocator of device `index` (owned by the device).
  virtual absl::StatusOr<DeviceAllocator*> allocator(int index) = 0;
  // Waits until all work queued on device `index` is done.
  virtual absl::Status Synchronize(int index) = 0;
};

}  // namespace kiln::devices

#endif  // KILN_DEVICES_DEVICE_INTERFACE_H_
