// The "sim" device: a simulated accelerator backed by host memory, with
// kiln's DeviceInterface. It has two indices (sim:0, sim:1), each with its
// own memory (a counting allocator over host memory, 1 GiB each) and its
// own streams. Unlike the CPU, its streams are asynchronous: work queued on
// a stream (kernel launches, copies, event records) runs only when the
// stream is synchronized, when something waits on it, or one item per
// Query() while it is polled, so the stream and event semantics are
// observable (Query is false while work is queued) and a polling loop ends.
// A stream's work runs on one thread at a time, in queue order, whichever
// threads synchronize it; events and waits keep the stream's queue alive, so
// they stay usable after the stream is destroyed.
#ifndef KILN_SIM_SIM_DEVICE_H_
#define KILN_SIM_SIM_DEVICE_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/device_interface.h"

namespace kiln_sim {

inline constexpr int kSimDeviceCount = 2;
inline constexpr int64_t kSimMemoryBytes = int64_t{1} << 30;

// Work queued on a sim stream.
using StreamWork = std::function<absl::Status()>;

class SimStream : public kiln::devices::Stream {
 public:
  // Queues `work`; it runs in order when the stream is synchronized. Work
  // may wait on other streams but must not synchronize its own.
  virtual void Enqueue(StreamWork work) = 0;
  // Blocks until queued work up to and including item `sequence` (1-based
  // count of items ever queued) is done, running it on the calling thread
  // unless another thread is running this stream's work already; the first
  // failure is kept and returned from then on (later items never run).
  virtual absl::Status RunUntil(int64_t sequence) = 0;
  virtual int64_t queued() const = 0;  // items ever queued
  // Items done. Items finish in queue order, so item k is done exactly when
  // completed() >= k.
  virtual int64_t completed() const = 0;
};

class SimDevice : public kiln::devices::DeviceInterface {
 public:
  SimDevice();
  ~SimDevice() override;
  std::string type() const override { return "sim"; }
  bool is_available() const override { return true; }
  int device_count() const override { return kSimDeviceCount; }
  absl::StatusOr<kiln::devices::DeviceAllocator*> allocator(int index) override;
  absl::Status Synchronize(int index) override;

  int CurrentDevice() const override;
  absl::Status SetDevice(int index) override;

  absl::StatusOr<std::unique_ptr<kiln::devices::Stream>> CreateStream(int index) override;
  absl::StatusOr<kiln::devices::Stream*> CurrentStream(int index) override;
  absl::Status SetStream(kiln::devices::Stream* stream) override;
  absl::Status SetStreamById(int index, int64_t id) override;
  absl::StatusOr<std::unique_ptr<kiln::devices::Event>> CreateEvent(int index,
                                                                    bool enable_timing) override;

  absl::StatusOr<kiln::devices::DeviceProperties> GetDeviceProperties(int index) override;
  absl::StatusOr<int64_t> MemoryAllocated(int index) override;
  absl::StatusOr<int64_t> MaxMemoryAllocated(int index) override;
  bool IsDtypeSupported(kiln::DType dtype) const override;

  struct State;  // per index: memory, streams (sim_device.cc)

 private:
  absl::Status CheckIndex(int index) const;
  std::shared_ptr<State> states_[kSimDeviceCount];
  int64_t serial_;
};

// The sim device registered as "sim" (null before RegisterSimBackend).
SimDevice* RegisteredSimDevice();

}  // namespace kiln_sim

#endif  // KILN_SIM_SIM_DEVICE_H_
