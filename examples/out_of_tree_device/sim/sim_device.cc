#include "sim/sim_device.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

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

}  // namespace

struct SimDevice::State {
  explicit State(int index) : index(index) {}
  const int index;
  SimAllocator allocator;
  std::mutex mu;
  std::map<int64_t, SimStream*> streams;  // created streams alive now
  int64_t next_stream_id = 1;
  std::unique_ptr<SimStream> default_stream;
};

namespace {

class SimStreamImpl : public SimStream {
 public:
  // `state` is null for a default stream (owned by its State).
  SimStreamImpl(std::shared_ptr<SimDevice::State> state, int index, int64_t id)
      : state_(std::move(state)), index_(index), id_(id) {}
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

  void Enqueue(StreamWork work) override {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
    ++queued_;
  }
  absl::Status RunUntil(int64_t sequence) override {
    while (true) {
      StreamWork work;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_.ok()) return error_;
        if (completed_ >= sequence || queue_.empty()) return absl::OkStatus();
        work = std::move(queue_.front());
        queue_.pop_front();
      }
      absl::Status s = work();  // outside the lock: work may wait on other streams
      std::lock_guard<std::mutex> lock(mu_);
      ++completed_;
      if (!s.ok() && error_.ok()) error_ = s;
    }
  }
  int64_t queued() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return queued_;
  }
  int64_t completed() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return completed_;
  }

  absl::Status Synchronize() override { return RunUntil(queued()); }
  absl::StatusOr<bool> Query() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!error_.ok()) return error_;
    return completed_ == queued_;
  }
  absl::Status WaitEvent(Event& event) override;

 private:
  std::shared_ptr<SimDevice::State> state_;
  int index_;
  int64_t id_;
  mutable std::mutex mu_;
  std::deque<StreamWork> queue_;
  int64_t queued_ = 0;
  int64_t completed_ = 0;
  absl::Status error_;
};

class SimEvent : public Event {
 public:
  SimEvent(int index, bool timing) : index_(index), timing_(timing) {}

  absl::Status Record(Stream& stream) override {
    auto* sim = dynamic_cast<SimStream*>(&stream);
    if (sim == nullptr || stream.device_index() != index_) {
      return absl::InvalidArgumentError(
          absl::StrCat("sim event: Record needs a stream of sim:", index_));
    }
    auto stamp = std::make_shared<std::optional<std::chrono::steady_clock::time_point>>();
    sim->Enqueue([stamp] {
      *stamp = std::chrono::steady_clock::now();
      return absl::OkStatus();
    });
    stream_ = sim;
    sequence_ = sim->queued();
    stamp_ = std::move(stamp);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Query() override {
    if (stream_ == nullptr) return true;
    return stream_->completed() >= sequence_;
  }
  absl::Status Synchronize() override {
    return stream_ == nullptr ? absl::OkStatus() : stream_->RunUntil(sequence_);
  }
  absl::StatusOr<double> ElapsedTime(const Event& end) const override {
    const auto* other = dynamic_cast<const SimEvent*>(&end);
    if (other == nullptr) return absl::InvalidArgumentError("sim event: ElapsedTime needs a sim event");
    if (!timing_ || !other->timing_) {
      return absl::FailedPreconditionError("sim event: created without timing");
    }
    if (stamp_ == nullptr || other->stamp_ == nullptr || !stamp_->has_value() ||
        !other->stamp_->has_value()) {
      return absl::FailedPreconditionError("sim event: both events must be recorded and complete");
    }
    return std::chrono::duration<double, std::milli>(**other->stamp_ - **stamp_).count();
  }

  SimStream* stream() const { return stream_; }
  int64_t sequence() const { return sequence_; }

 private:
  int index_;
  bool timing_;
  SimStream* stream_ = nullptr;  // the stream it was last recorded on
  int64_t sequence_ = 0;
  std::shared_ptr<std::optional<std::chrono::steady_clock::time_point>> stamp_;
};

absl::Status SimStreamImpl::WaitEvent(Event& event) {
  auto* sim_event = dynamic_cast<SimEvent*>(&event);
  if (sim_event == nullptr) return absl::InvalidArgumentError("sim stream: WaitEvent needs a sim event");
  SimStream* other = sim_event->stream();
  if (other == nullptr || other == this) return absl::OkStatus();  // in order already
  const int64_t sequence = sim_event->sequence();
  Enqueue([other, sequence] { return other->RunUntil(sequence); });
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
  std::vector<SimStream*> streams;
  {
    std::lock_guard<std::mutex> lock(state.mu);
    for (const auto& [id, stream] : state.streams) streams.push_back(stream);
  }
  for (SimStream* stream : streams) RETURN_IF_ERROR(stream->Synchronize());
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
  state.streams.emplace(id, stream.get());
  return std::unique_ptr<Stream>(std::move(stream));
}

absl::StatusOr<Stream*> SimDevice::CurrentStream(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  State& state = *states_[index];
  auto it = current_stream.find({serial_, index});
  if (it != current_stream.end()) {
    std::lock_guard<std::mutex> lock(state.mu);
    auto found = state.streams.find(it->second);
    if (found != state.streams.end()) return found->second;
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
    if (it == state.streams.end() || it->second != stream) {
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
