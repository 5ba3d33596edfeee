// The low device interface (Inductor's DeviceInterface, in C++): what core
// code may ask of a device without naming it. A device implements the pure
// virtual methods; every optional one has a default that returns
// `Unimplemented` (or the obvious answer for a single-device, synchronous
// device), so adding a method never breaks an existing device.
//
// Inductor name                -> kiln method
//   is_available, device_count    is_available(), device_count()
//   current_device, set_device    CurrentDevice(), SetDevice()
//   exchange_device               ExchangeDevice()
//   maybe_exchange_device         MaybeExchangeDevice() (negative index: no-op)
//   synchronize                   Synchronize(index)
//   Stream / Event                Stream / Event below, CreateStream/CreateEvent
//   current_stream, set_stream    CurrentStream(), SetStream()
//   set_stream_by_id              SetStreamById()
//   get_raw_stream                GetRawStream()
//   get_device_properties         GetDeviceProperties()
//   memory_allocated              MemoryAllocated() (and MaxMemoryAllocated())
//   is_bf16_supported             IsBf16Supported()
//   is_dtype_supported            IsDtypeSupported()
//   torch.set_float32_matmul_precision  SetFloat32MatmulPrecision()
#ifndef KILN_DEVICES_DEVICE_INTERFACE_H_
#define KILN_DEVICES_DEVICE_INTERFACE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "support/dtype.h"

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

class Event;

// An in-order queue of work on one device index. Owned by whoever created it
// (CreateStream) or by the device (CurrentStream's default stream).
class Stream {
 public:
  virtual ~Stream() = default;
  virtual int device_index() const = 0;
  // Stable within the process; SetStreamById finds the stream again by it.
  // The default stream of every device index has id 0.
  virtual int64_t id() const = 0;
  // The driver's handle (CUstream for CUDA; null for a synchronous device).
  virtual void* raw() const = 0;
  // Blocks until everything queued so far is done.
  virtual absl::Status Synchronize() = 0;
  // True when everything queued so far is done.
  virtual absl::StatusOr<bool> Query() = 0;
  // Work queued on this stream after the call waits for `event`.
  virtual absl::Status WaitEvent(Event& event) = 0;
};

// A marker in a stream's queue.
class Event {
 public:
  virtual ~Event() = default;
  // Marks the current end of `stream`'s queue.
  virtual absl::Status Record(Stream& stream) = 0;
  // Makes `stream` wait for this event (same as stream.WaitEvent(*this)).
  virtual absl::Status Wait(Stream& stream) { return stream.WaitEvent(*this); }
  // True when the recorded work is done (true for a never-recorded event).
  virtual absl::StatusOr<bool> Query() = 0;
  virtual absl::Status Synchronize() = 0;
  // Milliseconds from this event to `end`; both recorded, timing enabled,
  // and complete. FailedPrecondition otherwise.
  virtual absl::StatusOr<double> ElapsedTime(const Event& end) const = 0;
};

struct DeviceProperties {
  std::string name;
  // CUDA's compute capability (9, 0 on an H100); 0, 0 where meaningless.
  int major = 0;
  int minor = 0;
  int multiprocessor_count = 0;  // SMs; CPU: logical cores
  int64_t total_memory = 0;      // bytes
  int warp_size = 0;             // 0 where meaningless
  int max_threads_per_block = 0;
  int64_t shared_memory_per_block = 0;  // bytes
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

  // The calling thread's current index (0 for a single-index device).
  virtual int CurrentDevice() const { return 0; }
  virtual absl::Status SetDevice(int index) {
    if (index == 0 && device_count() > 0) return absl::OkStatus();
    return Unimplemented("SetDevice");
  }
  // Sets the current index and returns the previous one.
  virtual absl::StatusOr<int> ExchangeDevice(int index) {
    const int previous = CurrentDevice();
    if (index == previous) return previous;
    absl::Status s = SetDevice(index);
    if (!s.ok()) return s;
    return previous;
  }
  // ExchangeDevice, but a negative index changes nothing (returns -1).
  virtual absl::StatusOr<int> MaybeExchangeDevice(int index) {
    if (index < 0) return -1;
    return ExchangeDevice(index);
  }

  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream(int /*index*/) {
    return Unimplemented("CreateStream");
  }
  // The thread's current stream on `index` (the default stream until
  // SetStream); owned by the device or by whoever created it.
  virtual absl::StatusOr<Stream*> CurrentStream(int /*index*/) {
    return Unimplemented("CurrentStream");
  }
  // Makes `stream` current on its own device index for the calling thread.
  // The stream must outlive its use as current.
  virtual absl::Status SetStream(Stream* /*stream*/) { return Unimplemented("SetStream"); }
  // SetStream by Stream::id (0: the default stream); NotFound when no live
  // stream of `index` has that id.
  virtual absl::Status SetStreamById(int /*index*/, int64_t /*id*/) {
    return Unimplemented("SetStreamById");
  }
  // CurrentStream(index)->raw().
  virtual absl::StatusOr<void*> GetRawStream(int index) {
    absl::StatusOr<Stream*> stream = CurrentStream(index);
    if (!stream.ok()) return stream.status();
    return (*stream)->raw();
  }
  virtual absl::StatusOr<std::unique_ptr<Event>> CreateEvent(int /*index*/,
                                                            bool /*enable_timing*/) {
    return Unimplemented("CreateEvent");
  }

  virtual absl::StatusOr<DeviceProperties> GetDeviceProperties(int /*index*/) {
    return Unimplemented("GetDeviceProperties");
  }
  // Bytes currently allocated through allocator(index), and their peak.
  virtual absl::StatusOr<int64_t> MemoryAllocated(int /*index*/) {
    return Unimplemented("MemoryAllocated");
  }
  virtual absl::StatusOr<int64_t> MaxMemoryAllocated(int /*index*/) {
    return Unimplemented("MaxMemoryAllocated");
  }
  // torch.set_float32_matmul_precision, process-wide: "highest" (float32
  // products, every device's default), "high" / "medium" (TF32 tensor
  // cores where the device has them).
  virtual absl::Status SetFloat32MatmulPrecision(const std::string& precision) {
    if (precision == "highest") return absl::OkStatus();
    return Unimplemented("SetFloat32MatmulPrecision");
  }
  virtual bool IsBf16Supported() const { return false; }
  virtual bool IsDtypeSupported(DType dtype) const { return dtype == DType::kFloat32; }

 protected:
  absl::Status Unimplemented(const char* method) const {
    return absl::UnimplementedError(
        absl::StrCat("device '", type(), "' does not implement ", method));
  }
};

}  // namespace kiln::devices

#endif  // KILN_DEVICES_DEVICE_INTERFACE_H_
