// The CUDA device (devices::DeviceInterface over the driver API): primary contexts
// made current per thread (cuCtxSetCurrent), streams and events, device
// properties, and a caching allocator per device index. All CudaDevice
// objects share one process-wide state (contexts, allocators, live
// streams), so the registry's instance and any other are interchangeable.
//
// Without a usable driver (no libcuda, no GPU, KILN_CUDA_DISABLE=1) the
// device reports device_count() == 0 and every method returns
// Unavailable with the loader's reason (UnavailableReason()).
#ifndef KILN_BACKENDS_CUDA_CUDA_DEVICE_H_
#define KILN_BACKENDS_CUDA_CUDA_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/caching_allocator.h"
#include "backends/cuda/cuda_api.h"
#include "devices/device_interface.h"

namespace kiln::backends::cuda {

// Device memory from a device's caching allocator, returned to it when the
// last reference goes (views share the storage through shared_ptr). With a
// null allocator the memory is borrowed (a caller's tensor read in place:
// CudaProgram::RunOnDevice) and never freed here.
class DeviceStorage {
 public:
  DeviceStorage(CachingAllocator* allocator, uintptr_t ptr, size_t nbytes, int device_index)
      : allocator_(allocator), ptr_(ptr), nbytes_(nbytes), device_index_(device_index) {}
  ~DeviceStorage();
  DeviceStorage(const DeviceStorage&) = delete;
  DeviceStorage& operator=(const DeviceStorage&) = delete;

  CUdeviceptr ptr() const { return ptr_; }
  size_t nbytes() const { return nbytes_; }
  int device_index() const { return device_index_; }
  bool borrowed() const { return allocator_ == nullptr; }

 private:
  CachingAllocator* allocator_;
  uintptr_t ptr_;
  size_t nbytes_;
  int device_index_;
};

class CudaStream : public devices::Stream {
 public:
  // Made by CudaDevice (CreateStream, or the default stream with id 0 and a
  // null handle); `owned` streams are destroyed with the object.
  CudaStream(int index, int64_t id, CUstream stream, bool owned)
      : index_(index), id_(id), stream_(stream), owned_(owned) {}
  ~CudaStream() override;
  int device_index() const override { return index_; }
  int64_t id() const override { return id_; }
  void* raw() const override { return stream_; }
  CUstream cu() const { return stream_; }
  absl::Status Synchronize() override;
  absl::StatusOr<bool> Query() override;
  absl::Status WaitEvent(devices::Event& event) override;

 private:
  int index_;
  int64_t id_;
  CUstream stream_;
  bool owned_;
};

// Makes a stream that someone else owns (the CUstream of torch's current
// stream) the calling thread's current stream of device `index` while in
// scope, so that kiln's launches, library calls and caching-allocator
// blocks follow it; a null handle selects the legacy default stream (id 0,
// torch's default stream too). Also makes the device's primary context
// current. The previous current stream and context come back at the end of
// the scope. The handle is not destroyed.
class ScopedCallerStream {
 public:
  static absl::StatusOr<std::unique_ptr<ScopedCallerStream>> Enter(int index, CUstream raw);
  ~ScopedCallerStream();
  ScopedCallerStream(const ScopedCallerStream&) = delete;
  ScopedCallerStream& operator=(const ScopedCallerStream&) = delete;
  CUstream cu() const { return raw_; }

 private:
  ScopedCallerStream() = default;
  int index_ = 0;
  CUstream raw_ = nullptr;
  devices::Stream* previous_stream_ = nullptr;
  bool previous_is_default_ = true;
  CUcontext previous_context_ = nullptr;
  std::unique_ptr<CudaStream> stream_;  // wraps raw_ (not owned); null for the default stream
};

class CudaEvent : public devices::Event {
 public:
  ~CudaEvent() override;
  absl::Status Record(devices::Stream& stream) override;
  absl::StatusOr<bool> Query() override;
  absl::Status Synchronize() override;
  absl::StatusOr<double> ElapsedTime(const devices::Event& end) const override;
  CUevent cu() const { return event_; }

 private:
  friend class CudaDevice;
  CudaEvent(int index, CUevent event, bool timing) : index_(index), event_(event), timing_(timing) {}
  int index_;
  CUevent event_;
  bool timing_;
  bool recorded_ = false;
};

class CudaDevice : public devices::DeviceInterface {
 public:
  CudaDevice() = default;

  std::string type() const override { return "cuda"; }
  bool is_available() const override;
  int device_count() const override;
  absl::StatusOr<devices::DeviceAllocator*> allocator(int index) override;
  absl::Status Synchronize(int index) override;

  int CurrentDevice() const override;
  absl::Status SetDevice(int index) override;

  absl::StatusOr<std::unique_ptr<devices::Stream>> CreateStream(int index) override;
  absl::StatusOr<devices::Stream*> CurrentStream(int index) override;
  absl::Status SetStream(devices::Stream* stream) override;
  absl::Status SetStreamById(int index, int64_t id) override;
  absl::StatusOr<std::unique_ptr<devices::Event>> CreateEvent(int index, bool enable_timing) override;

  absl::StatusOr<devices::DeviceProperties> GetDeviceProperties(int index) override;
  absl::StatusOr<int64_t> MemoryAllocated(int index) override;
  absl::StatusOr<int64_t> MaxMemoryAllocated(int index) override;
  // "highest": full float32 matmuls; "high"/"medium": TF32 (SetMatmulTf32).
  absl::Status SetFloat32MatmulPrecision(const std::string& precision) override;
  bool IsBf16Supported() const override;
  bool IsDtypeSupported(DType dtype) const override;

  // ---- kiln's CUDA runtime (beyond the interface)
  // Why the device is unavailable (OK when it is available).
  static absl::Status UnavailableReason();
  // Makes `index`'s primary context current on this thread if it is not
  // (without changing CurrentDevice()).
  absl::Status MakeCurrent(int index);
  absl::StatusOr<CUstream> CurrentCuStream(int index);
  absl::StatusOr<CachingAllocator*> caching_allocator(int index);
  absl::StatusOr<AllocatorStats> allocator_stats(int index);
  absl::Status ResetPeakMemory(int index);
  // `nbytes` of device memory on the current stream of `index`.
  absl::StatusOr<std::shared_ptr<DeviceStorage>> AllocateStorage(int index, size_t nbytes);
  // The device's cuBLAS handle (created on first use; bound to `stream`),
  // its math mode TF32 when `tf32` (else MatmulTf32()).
  absl::StatusOr<cublasHandle_t> CublasHandle(int index, CUstream stream);
  absl::StatusOr<cublasHandle_t> CublasHandle(int index, CUstream stream, bool tf32);
  // The device's cuBLASLt handle (created on first use; streams are per call).
  absl::StatusOr<cublasLtHandle_t> CublasLtHandle(int index);
  // The device's cuDNN handle (created on first use; bound to `stream`);
  // Unavailable without cuDNN 9.
  absl::StatusOr<cudnnHandle_t> CudnnHandle(int index, CUstream stream);
  // TF32 tensor cores for float32, process-wide, with PyTorch's defaults:
  // matmuls full float32 (torch.backends.cuda.matmul.allow_tf32 = False),
  // convolutions TF32 (torch.backends.cudnn.allow_tf32 = True).
  // SetAllowTf32 sets both.
  static void SetMatmulTf32(bool allow);
  static bool MatmulTf32();
  static void SetConvTf32(bool allow);
  static bool ConvTf32();
  static void SetAllowTf32(bool allow);
  static bool AllowTf32();
  // L2 cache size in bytes (0 when unknown).
  absl::StatusOr<int64_t> L2CacheBytes(int index);

 private:
  absl::Status CheckIndex(int index) const;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_DEVICE_H_
