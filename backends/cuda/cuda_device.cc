#include "backends/cuda/cuda_device.h"

#include <atomic>
#include <map>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "backends/cuda/cuda_loader.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

const CudaDriverApi& Driver() { return LoadCudaLibraries().driver; }

// Per device index: its primary context, allocator, default stream and
// cuBLAS handle, created on first use.
struct IndexState {
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::unique_ptr<CachingAllocator> allocator;
  std::unique_ptr<CudaStream> default_stream;
  std::unique_ptr<devices::DeviceAllocator> device_allocator;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublaslt = nullptr;
};

struct ProcessState {
  absl::Mutex mu;
  int count = 0;
  std::vector<std::unique_ptr<IndexState>> indices;
  // Live streams by (index, id), for SetStreamById.
  std::map<std::pair<int, int64_t>, CudaStream*> streams ABSL_GUARDED_BY(mu);
  std::atomic<int64_t> next_stream_id{1};
};

ProcessState& State() {
  static ProcessState* state = [] {
    auto* s = new ProcessState();
    if (LoadCudaLibraries().driver_status.ok()) {
      int count = 0;
      if (Driver().cuDeviceGetCount(&count) == kCudaSuccess && count > 0) s->count = count;
    }
    for (int i = 0; i < s->count; ++i) s->indices.push_back(std::make_unique<IndexState>());
    return s;
  }();
  return *state;
}

thread_local int t_current_device = 0;
// PyTorch's defaults: TF32 for convolutions (torch.backends.cudnn.allow_tf32),
// full float32 for matmuls (torch.backends.cuda.matmul.allow_tf32).
std::atomic<bool> g_matmul_tf32{false};
std::atomic<bool> g_conv_tf32{true};
thread_local std::unordered_map<int, CudaStream*>* t_current_streams = nullptr;

std::unordered_map<int, CudaStream*>& ThreadStreams() {
  if (t_current_streams == nullptr) t_current_streams = new std::unordered_map<int, CudaStream*>();
  return *t_current_streams;
}

// The allocator interface over the caching allocator, keyed by the calling
// thread's current stream.
class CudaDeviceAllocator : public devices::DeviceAllocator {
 public:
  explicit CudaDeviceAllocator(int index) : index_(index) {}
  absl::StatusOr<void*> Allocate(size_t nbytes, size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 256) {
      return absl::InvalidArgumentError("cuda allocator: alignment must be a power of two up to 256");
    }
    CudaDevice device;
    ASSIGN_OR_RETURN(CUstream stream, device.CurrentCuStream(index_));
    ASSIGN_OR_RETURN(CachingAllocator * allocator, device.caching_allocator(index_));
    ASSIGN_OR_RETURN(uintptr_t p, allocator->Allocate(nbytes, stream));
    return reinterpret_cast<void*>(p);
  }
  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    CudaDevice device;
    absl::StatusOr<CachingAllocator*> allocator = device.caching_allocator(index_);
    if (allocator.ok()) (*allocator)->Free(reinterpret_cast<uintptr_t>(ptr));
  }

 private:
  int index_;
};

absl::StatusOr<IndexState*> Index(int index) {
  ProcessState& s = State();
  if (index < 0 || index >= s.count) {
    return absl::NotFoundError(absl::StrCat("cuda:", index, " does not exist (", s.count, " cuda devices)"));
  }
  IndexState* st = s.indices[static_cast<size_t>(index)].get();
  absl::MutexLock lock(&s.mu);
  if (st->context == nullptr) {
    RETURN_IF_ERROR(CuCheck(Driver().cuDeviceGet(&st->device, index), "cuDeviceGet"));
    CUcontext ctx = nullptr;
    RETURN_IF_ERROR(CuCheck(Driver().cuDevicePrimaryCtxRetain(&ctx, st->device), "cuDevicePrimaryCtxRetain"));
    st->context = ctx;
    st->allocator = std::make_unique<CachingAllocator>(
        [ctx](size_t n) -> absl::StatusOr<uintptr_t> {
          RETURN_IF_ERROR(CuCheck(Driver().cuCtxSetCurrent(ctx), "cuCtxSetCurrent"));
          CUdeviceptr p = 0;
          RETURN_IF_ERROR(CuCheck(Driver().cuMemAlloc(&p, n), absl::StrCat("cuMemAlloc(", n, ")").c_str()));
          return static_cast<uintptr_t>(p);
        },
        [ctx](uintptr_t p) {
          Driver().cuCtxSetCurrent(ctx);
          Driver().cuMemFree(static_cast<CUdeviceptr>(p));
        });
    st->default_stream.reset(new CudaStream(index, 0, nullptr, false));
    st->device_allocator = std::make_unique<CudaDeviceAllocator>(index);
  }
  return st;
}

}  // namespace

// ---------------------------------------------------------------- storage

DeviceStorage::~DeviceStorage() {
  if (allocator_ != nullptr) allocator_->Free(ptr_);
}

// ---------------------------------------------------------------- streams

CudaStream::~CudaStream() {
  {
    ProcessState& s = State();
    absl::MutexLock lock(&s.mu);
    s.streams.erase({index_, id_});
  }
  auto& mine = ThreadStreams();
  auto it = mine.find(index_);
  if (it != mine.end() && it->second == this) mine.erase(it);
  if (owned_ && stream_ != nullptr) Driver().cuStreamDestroy(stream_);
}

absl::Status CudaStream::Synchronize() {
  return CuCheck(Driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

absl::StatusOr<bool> CudaStream::Query() {
  const CUresult r = Driver().cuStreamQuery(stream_);
  if (r == kCudaErrorNotReady) return false;
  RETURN_IF_ERROR(CuCheck(r, "cuStreamQuery"));
  return true;
}

absl::Status CudaStream::WaitEvent(devices::Event& event) {
  auto* e = dynamic_cast<CudaEvent*>(&event);
  if (e == nullptr) return absl::InvalidArgumentError("a cuda stream can only wait for a cuda event");
  return CuCheck(Driver().cuStreamWaitEvent(stream_, e->cu(), 0), "cuStreamWaitEvent");
}

absl::StatusOr<std::unique_ptr<ScopedCallerStream>> ScopedCallerStream::Enter(int index, CUstream raw) {
  CudaDevice device;
  absl::Status why = CudaDevice::UnavailableReason();
  if (!why.ok()) return absl::UnavailableError(absl::StrCat("cuda is unavailable: ", why.message()));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  std::unique_ptr<ScopedCallerStream> scope(new ScopedCallerStream());
  scope->index_ = index;
  scope->raw_ = raw;
  RETURN_IF_ERROR(CuCheck(Driver().cuCtxGetCurrent(&scope->previous_context_), "cuCtxGetCurrent"));
  RETURN_IF_ERROR(device.MakeCurrent(index));
  auto& mine = ThreadStreams();
  auto it = mine.find(index);
  scope->previous_is_default_ = it == mine.end();
  scope->previous_stream_ = scope->previous_is_default_ ? st->default_stream.get() : it->second;
  if (raw == nullptr) {
    mine.erase(index);
  } else {
    scope->stream_ = std::make_unique<CudaStream>(index, State().next_stream_id.fetch_add(1), raw, /*owned=*/false);
    mine[index] = scope->stream_.get();
  }
  return scope;
}

ScopedCallerStream::~ScopedCallerStream() {
  auto& mine = ThreadStreams();
  if (previous_is_default_) {
    mine.erase(index_);
  } else {
    mine[index_] = static_cast<CudaStream*>(previous_stream_);
  }
  stream_.reset();
  if (previous_context_ != nullptr) Driver().cuCtxSetCurrent(previous_context_);
}

// ---------------------------------------------------------------- events

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) Driver().cuEventDestroy(event_);
}

absl::Status CudaEvent::Record(devices::Stream& stream) {
  if (stream.device_index() != index_) {
    return absl::InvalidArgumentError(absl::StrCat("event of cuda:", index_, " recorded on a stream of cuda:",
                                                   stream.device_index()));
  }
  RETURN_IF_ERROR(CuCheck(Driver().cuEventRecord(event_, static_cast<CUstream>(stream.raw())), "cuEventRecord"));
  recorded_ = true;
  return absl::OkStatus();
}

absl::StatusOr<bool> CudaEvent::Query() {
  if (!recorded_) return true;
  const CUresult r = Driver().cuEventQuery(event_);
  if (r == kCudaErrorNotReady) return false;
  RETURN_IF_ERROR(CuCheck(r, "cuEventQuery"));
  return true;
}

absl::Status CudaEvent::Synchronize() {
  if (!recorded_) return absl::OkStatus();
  return CuCheck(Driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

absl::StatusOr<double> CudaEvent::ElapsedTime(const devices::Event& end) const {
  const auto* e = dynamic_cast<const CudaEvent*>(&end);
  if (e == nullptr) return absl::InvalidArgumentError("elapsed time between a cuda event and another kind");
  if (!timing_ || !e->timing_) return absl::FailedPreconditionError("elapsed time needs timing-enabled events");
  if (!recorded_ || !e->recorded_) return absl::FailedPreconditionError("elapsed time needs recorded events");
  float ms = 0;
  const CUresult r = Driver().cuEventElapsedTime(&ms, event_, e->event_);
  if (r == kCudaErrorNotReady) return absl::FailedPreconditionError("elapsed time of events not yet complete");
  RETURN_IF_ERROR(CuCheck(r, "cuEventElapsedTime"));
  return static_cast<double>(ms);
}

// ---------------------------------------------------------------- device

absl::Status CudaDevice::UnavailableReason() {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (!libs.driver_status.ok()) return libs.driver_status;
  if (State().count == 0) return absl::UnavailableError("CUDA driver loaded but no CUDA device is visible");
  return absl::OkStatus();
}

bool CudaDevice::is_available() const { return State().count > 0; }
int CudaDevice::device_count() const { return State().count; }

absl::Status CudaDevice::CheckIndex(int index) const {
  if (State().count == 0) {
    absl::Status why = UnavailableReason();
    return absl::UnavailableError(absl::StrCat("cuda is unavailable: ", why.message()));
  }
  return Index(index).status();
}

absl::Status CudaDevice::MakeCurrent(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  CUcontext current = nullptr;
  RETURN_IF_ERROR(CuCheck(Driver().cuCtxGetCurrent(&current), "cuCtxGetCurrent"));
  if (current == st->context) return absl::OkStatus();
  return CuCheck(Driver().cuCtxSetCurrent(st->context), "cuCtxSetCurrent");
}

absl::StatusOr<devices::DeviceAllocator*> CudaDevice::allocator(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  return st->device_allocator.get();
}

absl::Status CudaDevice::Synchronize(int index) {
  RETURN_IF_ERROR(MakeCurrent(index));
  return CuCheck(Driver().cuCtxSynchronize(), "cuCtxSynchronize");
}

int CudaDevice::CurrentDevice() const { return t_current_device; }

absl::Status CudaDevice::SetDevice(int index) {
  RETURN_IF_ERROR(MakeCurrent(index));
  t_current_device = index;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<devices::Stream>> CudaDevice::CreateStream(int index) {
  RETURN_IF_ERROR(MakeCurrent(index));
  CUstream raw = nullptr;
  RETURN_IF_ERROR(CuCheck(Driver().cuStreamCreate(&raw, kStreamNonBlocking), "cuStreamCreate"));
  ProcessState& s = State();
  const int64_t id = s.next_stream_id.fetch_add(1);
  std::unique_ptr<CudaStream> stream(new CudaStream(index, id, raw, true));
  absl::MutexLock lock(&s.mu);
  s.streams[{index, id}] = stream.get();
  return std::unique_ptr<devices::Stream>(std::move(stream));
}

absl::StatusOr<devices::Stream*> CudaDevice::CurrentStream(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  auto& mine = ThreadStreams();
  auto it = mine.find(index);
  if (it != mine.end()) return it->second;
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  return st->default_stream.get();
}

absl::StatusOr<CUstream> CudaDevice::CurrentCuStream(int index) {
  ASSIGN_OR_RETURN(devices::Stream * stream, CurrentStream(index));
  return static_cast<CUstream>(stream->raw());
}

absl::Status CudaDevice::SetStream(devices::Stream* stream) {
  auto* s = dynamic_cast<CudaStream*>(stream);
  if (s == nullptr) return absl::InvalidArgumentError("SetStream needs a cuda stream");
  RETURN_IF_ERROR(CheckIndex(s->device_index()));
  ASSIGN_OR_RETURN(IndexState * st, Index(s->device_index()));
  auto& mine = ThreadStreams();
  if (s == st->default_stream.get()) {
    mine.erase(s->device_index());
  } else {
    mine[s->device_index()] = s;
  }
  return absl::OkStatus();
}

absl::Status CudaDevice::SetStreamById(int index, int64_t id) {
  RETURN_IF_ERROR(CheckIndex(index));
  if (id == 0) {
    ThreadStreams().erase(index);
    return absl::OkStatus();
  }
  ProcessState& s = State();
  CudaStream* found = nullptr;
  {
    absl::MutexLock lock(&s.mu);
    auto it = s.streams.find({index, id});
    if (it != s.streams.end()) found = it->second;
  }
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("cuda:", index, " has no live stream with id ", id));
  }
  ThreadStreams()[index] = found;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<devices::Event>> CudaDevice::CreateEvent(int index, bool enable_timing) {
  RETURN_IF_ERROR(MakeCurrent(index));
  CUevent raw = nullptr;
  RETURN_IF_ERROR(CuCheck(Driver().cuEventCreate(&raw, enable_timing ? kEventDefault : kEventDisableTiming),
                          "cuEventCreate"));
  return std::unique_ptr<devices::Event>(new CudaEvent(index, raw, enable_timing));
}

absl::StatusOr<devices::DeviceProperties> CudaDevice::GetDeviceProperties(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  const CudaDriverApi& d = Driver();
  devices::DeviceProperties p;
  char name[256] = {0};
  RETURN_IF_ERROR(CuCheck(d.cuDeviceGetName(name, sizeof(name) - 1, st->device), "cuDeviceGetName"));
  p.name = name;
  auto attr = [&](int a, int* out) { return CuCheck(d.cuDeviceGetAttribute(out, a, st->device), "cuDeviceGetAttribute"); };
  int shared = 0;
  RETURN_IF_ERROR(attr(kAttrComputeCapabilityMajor, &p.major));
  RETURN_IF_ERROR(attr(kAttrComputeCapabilityMinor, &p.minor));
  RETURN_IF_ERROR(attr(kAttrMultiprocessorCount, &p.multiprocessor_count));
  RETURN_IF_ERROR(attr(kAttrWarpSize, &p.warp_size));
  RETURN_IF_ERROR(attr(kAttrMaxThreadsPerBlock, &p.max_threads_per_block));
  RETURN_IF_ERROR(attr(kAttrMaxSharedMemoryPerBlock, &shared));
  p.shared_memory_per_block = shared;
  size_t total = 0;
  RETURN_IF_ERROR(CuCheck(d.cuDeviceTotalMem(&total, st->device), "cuDeviceTotalMem"));
  p.total_memory = static_cast<int64_t>(total);
  return p;
}

absl::StatusOr<int64_t> CudaDevice::L2CacheBytes(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  int l2 = 0;
  RETURN_IF_ERROR(CuCheck(Driver().cuDeviceGetAttribute(&l2, kAttrL2CacheSize, st->device), "cuDeviceGetAttribute"));
  return static_cast<int64_t>(l2);
}

absl::StatusOr<CachingAllocator*> CudaDevice::caching_allocator(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  return st->allocator.get();
}

absl::StatusOr<AllocatorStats> CudaDevice::allocator_stats(int index) {
  ASSIGN_OR_RETURN(CachingAllocator * a, caching_allocator(index));
  return a->stats();
}

absl::Status CudaDevice::ResetPeakMemory(int index) {
  ASSIGN_OR_RETURN(CachingAllocator * a, caching_allocator(index));
  a->ResetPeak();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> CudaDevice::MemoryAllocated(int index) {
  ASSIGN_OR_RETURN(AllocatorStats s, allocator_stats(index));
  return s.allocated_bytes;
}

absl::StatusOr<int64_t> CudaDevice::MaxMemoryAllocated(int index) {
  ASSIGN_OR_RETURN(AllocatorStats s, allocator_stats(index));
  return s.peak_allocated_bytes;
}

bool CudaDevice::IsBf16Supported() const {
  if (State().count == 0) return false;
  CudaDevice self;
  absl::StatusOr<devices::DeviceProperties> p = self.GetDeviceProperties(t_current_device);
  return p.ok() && p->major >= 8;
}

bool CudaDevice::IsDtypeSupported(DType dtype) const {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kFloat16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kBool:
      return true;
    case DType::kBFloat16:
      return IsBf16Supported();
    default:
      return false;
  }
}

absl::StatusOr<std::shared_ptr<DeviceStorage>> CudaDevice::AllocateStorage(int index, size_t nbytes) {
  RETURN_IF_ERROR(MakeCurrent(index));
  ASSIGN_OR_RETURN(CUstream stream, CurrentCuStream(index));
  ASSIGN_OR_RETURN(CachingAllocator * allocator, caching_allocator(index));
  ASSIGN_OR_RETURN(uintptr_t p, allocator->Allocate(nbytes, stream));
  return std::make_shared<DeviceStorage>(allocator, p, nbytes, index);
}

absl::StatusOr<cudnnHandle_t> CudaDevice::CudnnHandle(int index, CUstream stream) {
  const CudaLibraries& libs = LoadCudaLibraries();
  RETURN_IF_ERROR(libs.cudnn_status);
  RETURN_IF_ERROR(MakeCurrent(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  ProcessState& s = State();
  absl::MutexLock lock(&s.mu);
  if (st->cudnn == nullptr) {
    cudnnHandle_t h = nullptr;
    RETURN_IF_ERROR(CudnnCheck(libs.cudnn.cudnnCreate(&h), "cudnnCreate"));
    st->cudnn = h;
  }
  RETURN_IF_ERROR(CudnnCheck(libs.cudnn.cudnnSetStream(st->cudnn, stream), "cudnnSetStream"));
  return st->cudnn;
}

absl::StatusOr<cublasLtHandle_t> CudaDevice::CublasLtHandle(int index) {
  const CudaLibraries& libs = LoadCudaLibraries();
  RETURN_IF_ERROR(libs.cublaslt_status);
  RETURN_IF_ERROR(MakeCurrent(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  ProcessState& s = State();
  absl::MutexLock lock(&s.mu);
  if (st->cublaslt == nullptr) {
    cublasLtHandle_t h = nullptr;
    RETURN_IF_ERROR(CublasCheck(libs.cublaslt.cublasLtCreate(&h), "cublasLtCreate"));
    st->cublaslt = h;
  }
  return st->cublaslt;
}

absl::StatusOr<cublasHandle_t> CudaDevice::CublasHandle(int index, CUstream stream) {
  return CublasHandle(index, stream, g_matmul_tf32.load());
}

absl::StatusOr<cublasHandle_t> CudaDevice::CublasHandle(int index, CUstream stream, bool tf32) {
  const CudaLibraries& libs = LoadCudaLibraries();
  RETURN_IF_ERROR(libs.cublas_status);
  RETURN_IF_ERROR(MakeCurrent(index));
  ASSIGN_OR_RETURN(IndexState * st, Index(index));
  ProcessState& s = State();
  absl::MutexLock lock(&s.mu);
  if (st->cublas == nullptr) {
    cublasHandle_t h = nullptr;
    RETURN_IF_ERROR(CublasCheck(libs.cublas.cublasCreate(&h), "cublasCreate"));
    st->cublas = h;
  }
  RETURN_IF_ERROR(CublasCheck(libs.cublas.cublasSetStream(st->cublas, stream), "cublasSetStream"));
  RETURN_IF_ERROR(CublasCheck(
      libs.cublas.cublasSetMathMode(st->cublas, tf32 ? kCublasTf32TensorOpMath : kCublasDefaultMath),
      "cublasSetMathMode"));
  return st->cublas;
}

void CudaDevice::SetAllowTf32(bool allow) {
  g_matmul_tf32.store(allow);
  g_conv_tf32.store(allow);
}
bool CudaDevice::AllowTf32() { return g_matmul_tf32.load() && g_conv_tf32.load(); }
void CudaDevice::SetMatmulTf32(bool allow) { g_matmul_tf32.store(allow); }
absl::Status CudaDevice::SetFloat32MatmulPrecision(const std::string& precision) {
  if (precision != "highest" && precision != "high" && precision != "medium") {
    return absl::InvalidArgumentError(absl::StrCat("float32 matmul precision '", precision,
                                                   "' (expected highest, high or medium)"));
  }
  SetMatmulTf32(precision != "highest");
  return absl::OkStatus();
}
bool CudaDevice::MatmulTf32() { return g_matmul_tf32.load(); }
void CudaDevice::SetConvTf32(bool allow) { g_conv_tf32.store(allow); }
bool CudaDevice::ConvTf32() { return g_conv_tf32.load(); }

}  // namespace kiln::backends::cuda
