#include "sim/sim_device.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln_sim {
namespace {

using kiln::devices::DeviceAllocator;
using kiln::devices::DeviceProperties;
using kiln::devices::Event;
using kiln::devices::Stream;

// Host memory standing in for one index's device memory, with a capacity.
class SimAllocator : public DeviceAllocator {
 public:
  absl::StatusOr<void*> Allocate(size_t nbytes, size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 4096) {
      return absl::InvalidArgumentError("sim allocator: alignment must be a power of two <= 4096");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (nbytes > static_cast<size_t>(kSimMemoryBytes - allocated_)) {
      return absl::ResourceExhaustedError(absl::StrCat("sim allocator: ", nbytes, " bytes requested, ",
                                                       kSimMemoryBytes - allocated_, " free"));
    }
    alignment = std::max<size_t>(alignment, 64);
    const size_t rounded = (std::max<size_t>(nbytes, 1) + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (p == nullptr) return absl::ResourceExhaustedError("sim allocator: host memory exhausted");
    sizes_.emplace(p, nbytes);
    allocated_ += static_cast<int64_t>(nbytes);
    peak_ = std::max(peak_, allocated_);
    return p;
  }
  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sizes_.find(ptr);
    if (it == sizes_.end()) return;  // not ours: ignore rather than corrupt the heap
    allocated_ -= static_cast<int64_t>(it->second);
    sizes_.erase(it);
    std::free(ptr);
  }
  int64_t allocated() {
    std::lock_guard<std::mutex> lock(mu_);
    return allocated_;
  }
  int64_t peak() {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_;
  }

 private:
  std::mutex mu_;
  std::map<void*, size_t> sizes_;
  int64_t allocated_ = 0;
  int64_t peak_ = 0;
};

std::atomic<int64_t> next_serial{1};
// Per thread: (device serial) -> current index; (serial, index) -> stream id.
thread_local std::map<int64_t, int> current_index;
thread_local std::map<std::pair<int64_t, int>, int64_t> current_stream;

// A stream's queue and its execution state, shared by the stream, the events
// recorded on it and the waits queued on other streams, so that those stay
// valid after the stream is destroyed (CUDA allows destroying a stream that
// still has events recorded on it).
//
// At most one thread runs a queue's work at a time (`running_`), item by
// item in queue order, so `completed_ >= k` means exactly that items 1..k
// are done. The runner gives the queue back between items instead of holding
// a lock across a drain: an item may wait on another stream whose own work
// waits on an earlier item of this one, and that waiter must see the earlier
// item complete rather than block behind the whole drain. Every wait targets
// work queued before the waiting item, so the waits cannot form a cycle.
class StreamQueue {
 public:
  // Queues `work`; returns its sequence number (1-based). After a failure
  // the work is dropped (it would never run), though it still counts.
  int64_t Enqueue(StreamWork work) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) queue_.push_back(std::move(work));
    return ++queued_;
  }

  // Blocks until items 1..min(sequence, items queued now) are done, running
  // them on this thread unless another thread already is. The first failure
  // is kept and returned from then on (later items never run). Work must not
  // synchronize its own stream (it would wait for itself).
  absl::Status RunUntil(int64_t sequence) {
    std::unique_lock<std::mutex> lock(mu_);
    const int64_t target = std::min(sequence, queued_);
    while (true) {
      if (!error_.ok()) return error_;
      if (completed_ >= target) return absl::OkStatus();
      if (running_) {
        ran_one_.wait(lock);
        continue;
      }
      RunNextLocked(lock);
    }
  }

  // Runs the next item if there is one and no other thread is running this
  // queue; never waits for another runner. Returns the sticky error.
  absl::Status Advance() {
    std::unique_lock<std::mutex> lock(mu_);
    if (error_.ok() && !running_ && completed_ < queued_) RunNextLocked(lock);
    return error_;
  }

  // Whether items 1..sequence are done (the sticky error if the queue failed
  // before reaching `sequence`). Runs nothing.
  absl::StatusOr<bool> Reached(int64_t sequence) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (completed_ >= sequence) return true;
    if (!error_.ok()) return error_;
    return false;
  }

  // Whether everything queued so far is done (the sticky error if any).
  absl::StatusOr<bool> Idle() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    return completed_ == queued_;
  }

  int64_t queued() const {
    std::lock_guard<std::mutex> lock(mu_);
    return queued_;
  }
  int64_t completed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_;
  }

 private:
  // Pops and runs the front item with `mu_` released (work may wait on other
  // streams); `lock` holds `mu_` on entry and on return.
  void RunNextLocked(std::unique_lock<std::mutex>& lock) {
    running_ = true;
    StreamWork work = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    absl::Status s = work();
    work = nullptr;  // release what the item captured before reporting it done
    lock.lock();
    running_ = false;
    ++completed_;
    std::deque<StreamWork> dropped;
    if (!s.ok() && error_.ok()) {
      error_ = s;
      // The rest never runs: drop it now, so that what it holds (waits hold
      // other streams' queues, which may hold this one) is released.
      dropped.swap(queue_);
    }
    ran_one_.notify_all();
    if (!dropped.empty()) {
      lock.unlock();
      dropped.clear();
      lock.lock();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable ran_one_;  // an item finished: `running_` is false again
  std::deque<StreamWork> queue_;
  int64_t queued_ = 0;
  int64_t completed_ = 0;
  bool running_ = false;
  absl::Status error_;
};

}  // namespace

struct SimDevice::State {
  explicit State(int index) : index(index) {}
  // A created stream alive now, with its queue (which outlives it).
  struct LiveStream {
    SimStream* stream;
    std::shared_ptr<StreamQueue> queue;
  };
  const int index;
  SimAllocator allocator;
  std::mutex mu;
  std::map<int64_t, LiveStream> streams;
  int64_t next_stream_id = 1;
  std::unique_ptr<SimStream> default_stream;
};

namespace {

class SimStreamImpl : public SimStream {
 public:
  // `state` is null for a default stream (owned by its State).
  SimStreamImpl(std::shared_ptr<SimDevice::State> state, int index, int64_t id)
      : state_(std::move(state)), index_(index), id_(id), queue_(std::make_shared<StreamQueue>()) {}
  ~SimStreamImpl() override {
    Synchronize().IgnoreError();  // queued work still runs, like a device would
    if (state_ == nullptr) return;
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->streams.erase(id_);
  }

  int device_index() const override { return index_; }
  int64_t id() const override { return id_; }
  // The simulator has no driver handle; the stream object is its own.
  void* raw() const override { return const_cast<SimStreamImpl*>(this); }

  void Enqueue(StreamWork work) override { queue_->Enqueue(std::move(work)); }
  absl::Status RunUntil(int64_t sequence) override { return queue_->RunUntil(sequence); }
  int64_t queued() const override { return queue_->queued(); }
  int64_t completed() const override { return queue_->completed(); }

  absl::Status Synchronize() override { return queue_->RunUntil(queue_->queued()); }
  // Runs at most one pending item, then reports: the simulated device makes
  // progress while it is polled, so a Query loop ends.
  absl::StatusOr<bool> Query() override {
    queue_->Advance().IgnoreError();  // Idle reports the error
    return queue_->Idle();
  }
  absl::Status WaitEvent(Event& event) override;

  const std::shared_ptr<StreamQueue>& queue() const { return queue_; }

 private:
  std::shared_ptr<SimDevice::State> state_;
  int index_;
  int64_t id_;
  std::shared_ptr<StreamQueue> queue_;
};

using TimeStamp = std::optional<std::chrono::steady_clock::time_point>;

class SimEvent : public Event {
 public:
  SimEvent(int index, bool timing) : index_(index), timing_(timing) {}

  // What the event marks: item `sequence` of `queue` (no queue: never
  // recorded). `stamp` is written by that item, so it may be read only once
  // the queue has reached `sequence`.
  struct Mark {
    std::shared_ptr<StreamQueue> queue;
    int64_t sequence = 0;
    std::shared_ptr<TimeStamp> stamp;
    // Recorded, its item done, and the stamp written.
    bool Complete() const {
      if (queue == nullptr) return false;
      absl::StatusOr<bool> reached = queue->Reached(sequence);
      return reached.ok() && *reached && stamp->has_value();
    }
  };

  absl::Status Record(Stream& stream) override {
    auto* sim = dynamic_cast<SimStreamImpl*>(&stream);
    if (sim == nullptr || stream.device_index() != index_) {
      return absl::InvalidArgumentError(
          absl::StrCat("sim event: Record needs a stream of sim:", index_));
    }
    Mark mark;
    mark.queue = sim->queue();
    mark.stamp = std::make_shared<TimeStamp>();
    mark.sequence = mark.queue->Enqueue([stamp = mark.stamp] {
      *stamp = std::chrono::steady_clock::now();
      return absl::OkStatus();
    });
    std::lock_guard<std::mutex> lock(mu_);
    mark_ = std::move(mark);
    return absl::OkStatus();
  }
  // Runs at most one pending item of the recorded stream, then reports.
  absl::StatusOr<bool> Query() override {
    const Mark mark = Marked();
    if (mark.queue == nullptr) return true;
    absl::StatusOr<bool> reached = mark.queue->Reached(mark.sequence);
    if (!reached.ok() || *reached) return reached;
    mark.queue->Advance().IgnoreError();  // Reached reports the error
    return mark.queue->Reached(mark.sequence);
  }
  absl::Status Synchronize() override {
    const Mark mark = Marked();
    return mark.queue == nullptr ? absl::OkStatus() : mark.queue->RunUntil(mark.sequence);
  }
  absl::StatusOr<double> ElapsedTime(const Event& end) const override {
    const auto* other = dynamic_cast<const SimEvent*>(&end);
    if (other == nullptr) return absl::InvalidArgumentError("sim event: ElapsedTime needs a sim event");
    if (!timing_ || !other->timing_) {
      return absl::FailedPreconditionError("sim event: created without timing");
    }
    const Mark from = Marked();
    const Mark to = other->Marked();
    if (!from.Complete() || !to.Complete()) {
      return absl::FailedPreconditionError("sim event: both events must be recorded and complete");
    }
    return std::chrono::duration<double, std::milli>(**to.stamp - **from.stamp).count();
  }

  Mark Marked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return mark_;
  }

 private:
  int index_;
  bool timing_;
  mutable std::mutex mu_;  // Record may race with Query/Synchronize/Wait
  Mark mark_;              // where it was last recorded
};

absl::Status SimStreamImpl::WaitEvent(Event& event) {
  auto* sim_event = dynamic_cast<SimEvent*>(&event);
  if (sim_event == nullptr) return absl::InvalidArgumentError("sim stream: WaitEvent needs a sim event");
  SimEvent::Mark mark = sim_event->Marked();
  if (mark.queue == nullptr || mark.queue == queue_) return absl::OkStatus();  // in order already
  // The wait holds the other queue, not the stream: the stream may be gone
  // by the time this runs.
  queue_->Enqueue([other = std::move(mark.queue), sequence = mark.sequence] {
    return other->RunUntil(sequence);
  });
  return absl::OkStatus();
}

}  // namespace

SimDevice::SimDevice() : serial_(next_serial.fetch_add(1)) {
  for (int i = 0; i < kSimDeviceCount; ++i) {
    states_[i] = std::make_shared<State>(i);
    states_[i]->default_stream = std::make_unique<SimStreamImpl>(nullptr, i, 0);
  }
}

SimDevice::~SimDevice() = default;

absl::Status SimDevice::CheckIndex(int index) const {
  if (index >= 0 && index < kSimDeviceCount) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat("sim:", index, " does not exist (", kSimDeviceCount, " sim devices)"));
}

absl::StatusOr<kiln::devices::DeviceAllocator*> SimDevice::allocator(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  return &states_[index]->allocator;
}

absl::Status SimDevice::Synchronize(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  State& state = *states_[index];
  RETURN_IF_ERROR(state.default_stream->Synchronize());
  // The queues, not the streams: another thread may destroy a stream
  // meanwhile (its destructor drains it anyway).
  std::vector<std::shared_ptr<StreamQueue>> queues;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    for (const auto& [id, live] : state.streams) queues.push_back(live.queue);
  }
  for (const auto& queue : queues) RETURN_IF_ERROR(queue->RunUntil(queue->queued()));
  return absl::OkStatus();
}

int SimDevice::CurrentDevice() const {
  auto it = current_index.find(serial_);
  return it == current_index.end() ? 0 : it->second;
}

absl::Status SimDevice::SetDevice(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  current_index[serial_] = index;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Stream>> SimDevice::CreateStream(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  State& state = *states_[index];
  std::lock_guard<std::mutex> lock(state.mu);
  const int64_t id = state.next_stream_id++;
  auto stream = std::make_unique<SimStreamImpl>(states_[index], index, id);
  state.streams.emplace(id, State::LiveStream{stream.get(), stream->queue()});
  return std::unique_ptr<Stream>(std::move(stream));
}

absl::StatusOr<Stream*> SimDevice::CurrentStream(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  State& state = *states_[index];
  auto it = current_stream.find({serial_, index});
  if (it != current_stream.end()) {
    std::lock_guard<std::mutex> lock(state.mu);
    auto found = state.streams.find(it->second);
    if (found != state.streams.end()) return found->second.stream;
  }
  return state.default_stream.get();
}

absl::Status SimDevice::SetStream(Stream* stream) {
  if (stream == nullptr) return absl::InvalidArgumentError("sim SetStream: null stream");
  const int index = stream->device_index();
  RETURN_IF_ERROR(CheckIndex(index));
  State& state = *states_[index];
  if (stream == state.default_stream.get()) {
    current_stream.erase({serial_, index});
    return absl::OkStatus();
  }
  {
    std::lock_guard<std::mutex> lock(state.mu);
    auto it = state.streams.find(stream->id());
    if (it == state.streams.end() || it->second.stream != stream) {
      return absl::InvalidArgumentError("sim SetStream: not a stream of this device");
    }
  }
  current_stream[{serial_, index}] = stream->id();
  return absl::OkStatus();
}

absl::Status SimDevice::SetStreamById(int index, int64_t id) {
  RETURN_IF_ERROR(CheckIndex(index));
  if (id == 0) {
    current_stream.erase({serial_, index});
    return absl::OkStatus();
  }
  {
    std::lock_guard<std::mutex> lock(states_[index]->mu);
    if (states_[index]->streams.count(id) == 0) {
      return absl::NotFoundError(absl::StrCat("sim:", index, " has no live stream ", id));
    }
  }
  current_stream[{serial_, index}] = id;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Event>> SimDevice::CreateEvent(int index, bool enable_timing) {
  RETURN_IF_ERROR(CheckIndex(index));
  return std::unique_ptr<Event>(std::make_unique<SimEvent>(index, enable_timing));
}

absl::StatusOr<DeviceProperties> SimDevice::GetDeviceProperties(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  DeviceProperties props;
  props.name = "kiln sim accelerator (host memory)";
  props.major = 1;
  props.minor = 0;
  props.multiprocessor_count = 4;
  props.total_memory = kSimMemoryBytes;
  props.warp_size = 32;
  props.max_threads_per_block = 256;
  props.shared_memory_per_block = 48 * 1024;
  return props;
}

absl::StatusOr<int64_t> SimDevice::MemoryAllocated(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  return states_[index]->allocator.allocated();
}

absl::StatusOr<int64_t> SimDevice::MaxMemoryAllocated(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  return states_[index]->allocator.peak();
}

bool SimDevice::IsDtypeSupported(kiln::DType dtype) const {
  switch (dtype) {
    case kiln::DType::kFloat32: case kiln::DType::kFloat64:
    case kiln::DType::kInt8: case kiln::DType::kInt16: case kiln::DType::kInt32:
    case kiln::DType::kInt64: case kiln::DType::kUInt8: case kiln::DType::kBool:
      return true;
    default:
      return false;
  }
}

}  // namespace kiln_sim
