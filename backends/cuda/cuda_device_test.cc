// The CUDA device through the devices::DeviceInterface. On a machine without a GPU
// (CI) the unavailable-path tests run and the GPU tests skip; on the GPU
// machine (//backends/cuda:cuda_gpu_check links these tests) it is the
// reverse.
#include <cstring>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_loader.h"
#include "devices/device_registry.h"
#include "gtest/gtest.h"
#include "wrapper/codegen.h"
#include "wrapper/device_op_overrides.h"

namespace kiln::backends::cuda {
namespace {

#define SKIP_WITHOUT_GPU()                                                       \
  do {                                                                           \
    if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: "         \
                                                   << CudaDevice::UnavailableReason(); \
  } while (0)

TEST(CudaUnavailableTest, ReportsWhyAndRefusesWork) {
  CudaDevice device;
  if (device.is_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(device.type(), "cuda");
  EXPECT_EQ(device.device_count(), 0);
  absl::Status why = CudaDevice::UnavailableReason();
  EXPECT_FALSE(why.ok());
  EXPECT_FALSE(why.message().empty());
  absl::StatusOr<devices::Stream*> stream = device.CurrentStream(0);
  ASSERT_FALSE(stream.ok());
  EXPECT_TRUE(absl::IsUnavailable(stream.status())) << stream.status();
  EXPECT_TRUE(absl::StrContains(stream.status().message(), why.message())) << stream.status();
  EXPECT_FALSE(device.allocator(0).ok());
  EXPECT_FALSE(device.Synchronize(0).ok());
  EXPECT_FALSE(device.CreateEvent(0, true).ok());
  EXPECT_FALSE(device.GetDeviceProperties(0).ok());
  EXPECT_FALSE(device.MemoryAllocated(0).ok());
  EXPECT_FALSE(device.SetDevice(0).ok());
  EXPECT_FALSE(device.IsBf16Supported());
  EXPECT_TRUE(device.IsDtypeSupported(DType::kFloat32));
}

TEST(CudaLoaderTest, NeverThrowsAndNamesEachLibrary) {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (!libs.driver_status.ok()) {
    EXPECT_TRUE(absl::StrContains(libs.driver_status.message(), "libcuda") ||
                absl::StrContains(libs.driver_status.message(), "KILN_CUDA_DISABLE") ||
                absl::StrContains(libs.driver_status.message(), "cuInit"))
        << libs.driver_status;
  }
  if (libs.nvrtc_status.ok()) {
    EXPECT_GE(libs.nvrtc_major, 11);
    EXPECT_FALSE(libs.nvrtc_path.empty());
  }
  // Errors format with the call's name.
  absl::Status e = NvrtcCheck(3, "nvrtcCompileProgram");
  EXPECT_TRUE(absl::StrContains(e.message(), "nvrtcCompileProgram")) << e;
  EXPECT_TRUE(CuCheck(kCudaSuccess, "x").ok());
}

TEST(CudaRegistryTest, RegisteredWithItsIndexedNames) {
  ASSERT_TRUE(RegisterCudaBackend().ok());
  ASSERT_TRUE(RegisterCudaBackend().ok());  // idempotent
  devices::DeviceRegistry& registry = devices::DeviceRegistry::Global();
  EXPECT_TRUE(registry.Contains("cuda"));
  const int count = CudaDevice().device_count();
  std::vector<std::string> names = registry.Names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end()) << absl::StrJoin(names, ",");
  absl::StatusOr<devices::DeviceRef> past = registry.Find(absl::StrCat("cuda:", count));
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(absl::IsNotFound(past.status()));
  EXPECT_TRUE(absl::StrContains(past.status().message(), "cuda")) << past.status();
  if (count == 0) {
    absl::StatusOr<devices::DeviceRef> plain = registry.Find("cuda");
    EXPECT_TRUE(absl::IsNotFound(plain.status())) << plain.status();
    absl::StatusOr<devices::DeviceRef> zero = registry.Find("cuda:0");
    EXPECT_TRUE(absl::IsNotFound(zero.status())) << zero.status();
  } else {
    absl::StatusOr<devices::DeviceRef> zero = registry.Find("cuda:0");
    ASSERT_TRUE(zero.ok()) << zero.status();
    EXPECT_EQ(zero->device->type(), "cuda");
    EXPECT_EQ(zero->index, 0);
  }
  absl::StatusOr<std::unique_ptr<wrapper::DeviceCodegen>> codegen = wrapper::CreateDeviceCodegen("cuda");
  ASSERT_TRUE(codegen.ok()) << codegen.status();
  // Its device-op strings: guarded (so cuda:1 programs switch device).
  absl::StatusOr<const wrapper::DeviceOpOverrides*> ops = wrapper::FindDeviceOpOverrides("cuda");
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_TRUE((*ops)->NeedsDeviceGuard());
  EXPECT_EQ((*ops)->DeviceGuard(1), "torch.cuda._DeviceGuard(1)");
  EXPECT_EQ((*codegen)->device(), "cuda");
}

// ---------------------------------------------------------------- GPU

TEST(CudaGpuTest, Properties) {
  SKIP_WITHOUT_GPU();
  CudaDevice device;
  absl::StatusOr<devices::DeviceProperties> p = device.GetDeviceProperties(0);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->name.empty());
  EXPECT_GE(p->major, 3);
  EXPECT_GT(p->multiprocessor_count, 0);
  EXPECT_GT(p->total_memory, int64_t{1} << 30);
  EXPECT_EQ(p->warp_size, 32);
  EXPECT_GE(p->max_threads_per_block, 256);
  EXPECT_GE(p->shared_memory_per_block, 16 * 1024);
  EXPECT_EQ(device.IsBf16Supported(), p->major >= 8);
  std::printf("  device 0: %s sm_%d%d, %d SMs, %.1f GiB, warp %d\n", p->name.c_str(), p->major, p->minor,
              p->multiprocessor_count, static_cast<double>(p->total_memory) / (1 << 30), p->warp_size);
}

TEST(CudaGpuTest, ExchangeDeviceGuard) {
  SKIP_WITHOUT_GPU();
  CudaDevice device;
  ASSERT_TRUE(device.SetDevice(0).ok());
  absl::StatusOr<int> previous = device.ExchangeDevice(0);
  ASSERT_TRUE(previous.ok());
  EXPECT_EQ(*previous, 0);
  EXPECT_EQ(device.CurrentDevice(), 0);
  absl::StatusOr<int> none = device.MaybeExchangeDevice(-1);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, -1);
  absl::StatusOr<int> bad = device.ExchangeDevice(device.device_count());
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(device.CurrentDevice(), 0);
  // Per thread: a new thread starts on index 0 with its own context binding.
  std::thread t([&] {
    CudaDevice d;
    EXPECT_EQ(d.CurrentDevice(), 0);
    EXPECT_TRUE(d.Synchronize(0).ok());
  });
  t.join();
}

TEST(CudaGpuTest, StreamsAreCurrentPerThreadAndFoundById) {
  SKIP_WITHOUT_GPU();
  CudaDevice device;
  absl::StatusOr<devices::Stream*> default_stream = device.CurrentStream(0);
  ASSERT_TRUE(default_stream.ok());
  EXPECT_EQ((*default_stream)->id(), 0);
  absl::StatusOr<std::unique_ptr<devices::Stream>> s = device.CreateStream(0);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE((*s)->id(), 0);
  EXPECT_NE((*s)->raw(), nullptr);
  ASSERT_TRUE(device.SetStream(s->get()).ok());
  EXPECT_EQ(*device.CurrentStream(0), s->get());
  EXPECT_EQ(*device.GetRawStream(0), (*s)->raw());
  std::thread other([&] {
    CudaDevice d;
    EXPECT_EQ((*d.CurrentStream(0))->id(), 0);  // not this thread's stream
    EXPECT_TRUE(d.SetStreamById(0, (*s)->id()).ok());
    EXPECT_EQ(*d.CurrentStream(0), s->get());
  });
  other.join();
  ASSERT_TRUE(device.SetStreamById(0, 0).ok());
  EXPECT_EQ((*device.CurrentStream(0))->id(), 0);
  EXPECT_TRUE(absl::IsNotFound(device.SetStreamById(0, 987654321)));
  EXPECT_TRUE((*s)->Synchronize().ok());
  absl::StatusOr<bool> done = (*s)->Query();
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
}

TEST(CudaGpuTest, EventsTimeWorkOnAStream) {
  SKIP_WITHOUT_GPU();
  CudaDevice device;
  absl::StatusOr<std::unique_ptr<devices::Stream>> s = device.CreateStream(0);
  ASSERT_TRUE(s.ok());
  absl::StatusOr<std::unique_ptr<devices::Event>> start = device.CreateEvent(0, true);
  absl::StatusOr<std::unique_ptr<devices::Event>> end = device.CreateEvent(0, true);
  absl::StatusOr<std::unique_ptr<devices::Event>> untimed = device.CreateEvent(0, false);
  ASSERT_TRUE(start.ok() && end.ok() && untimed.ok());
  EXPECT_TRUE(*(*start)->Query());  // never recorded
  EXPECT_TRUE(absl::IsFailedPrecondition((*start)->ElapsedTime(**end).status()));
  // Some work: 256 MiB device-to-device copies between recordings.
  ASSERT_TRUE(device.SetStream(s->get()).ok());
  absl::StatusOr<std::shared_ptr<DeviceStorage>> a = device.AllocateStorage(0, 256 << 20);
  absl::StatusOr<std::shared_ptr<DeviceStorage>> b = device.AllocateStorage(0, 256 << 20);
  ASSERT_TRUE(a.ok() && b.ok());
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  ASSERT_TRUE((*start)->Record(**s).ok());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(CuCheck(d.cuMemcpyDtoDAsync((*b)->ptr(), (*a)->ptr(), 256 << 20, static_cast<CUstream>((*s)->raw())),
                        "copy").ok());
  }
  ASSERT_TRUE((*end)->Record(**s).ok());
  ASSERT_TRUE((*untimed)->Record(**s).ok());
  ASSERT_TRUE((*end)->Synchronize().ok());
  absl::StatusOr<double> ms = (*start)->ElapsedTime(**end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GT(*ms, 0.0);
  std::printf("  4 x 256 MiB device copies: %.3f ms (%.0f GB/s read+write)\n", *ms,
              4.0 * 2 * (256 << 20) / (*ms * 1e-3) / 1e9);
  EXPECT_TRUE(absl::IsFailedPrecondition((*start)->ElapsedTime(**untimed).status()));
  // A second stream waits for the event.
  absl::StatusOr<std::unique_ptr<devices::Stream>> s2 = device.CreateStream(0);
  ASSERT_TRUE(s2.ok());
  EXPECT_TRUE((*end)->Wait(**s2).ok());
  EXPECT_TRUE((*s2)->Synchronize().ok());
  a->reset();
  b->reset();
  ASSERT_TRUE(device.SetStreamById(0, 0).ok());
}

TEST(CudaGpuTest, AllocatorStatsFollowThePerStreamCache) {
  SKIP_WITHOUT_GPU();
  CudaDevice device;
  ASSERT_TRUE(device.Synchronize(0).ok());
  const int64_t before = *device.MemoryAllocated(0);
  ASSERT_TRUE(device.ResetPeakMemory(0).ok());
  absl::StatusOr<devices::DeviceAllocator*> alloc = device.allocator(0);
  ASSERT_TRUE(alloc.ok());
  absl::StatusOr<void*> p = (*alloc)->Allocate(10 << 20, 256);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*device.MemoryAllocated(0), before + (10 << 20));
  (*alloc)->Free(*p);
  EXPECT_EQ(*device.MemoryAllocated(0), before);
  EXPECT_EQ(*device.MaxMemoryAllocated(0), before + (10 << 20));
  const AllocatorStats before_reuse = *device.allocator_stats(0);
  absl::StatusOr<void*> q = (*alloc)->Allocate(10 << 20, 256);
  ASSERT_TRUE(q.ok());
  (*alloc)->Free(*q);
  absl::StatusOr<AllocatorStats> s = device.allocator_stats(0);
  ASSERT_TRUE(s.ok());
  // Served from the cache on the same stream: no new driver allocation.
  EXPECT_EQ(s->cache_hits, before_reuse.cache_hits + 1);
  EXPECT_EQ(s->driver_allocs, before_reuse.driver_allocs);
  EXPECT_GE(s->cached_bytes, 10 << 20);
  EXPECT_FALSE((*alloc)->Allocate(16, 3).ok());  // bad alignment
}

}  // namespace
}  // namespace kiln::backends::cuda
