// The CPU as a devices::DeviceInterface: streams, events, guards, properties, memory
// statistics, dtype support, and what RegisterCpuBackend registers.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "devices/device_guard.h"
#include "devices/device_registry.h"
#include "gtest/gtest.h"
#include "wrapper/codegen.h"
#include "wrapper/device_op_overrides.h"

namespace kiln::backends::cpu {
namespace {

TEST(CpuDevice, DefaultStreamIsIdZeroAndCreatedStreamsBecomeCurrentPerThread) {
  CpuDevice cpu;
  auto current = cpu.CurrentStream(0);
  ASSERT_TRUE(current.ok()) << current.status();
  devices::Stream* default_stream = *current;
  EXPECT_EQ(default_stream->id(), 0);
  EXPECT_EQ(default_stream->device_index(), 0);
  EXPECT_EQ(default_stream->raw(), nullptr);
  auto raw = cpu.GetRawStream(0);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(*raw, nullptr);

  auto s1 = cpu.CreateStream(0);
  auto s2 = cpu.CreateStream(0);
  ASSERT_TRUE(s1.ok() && s2.ok());
  EXPECT_EQ((*s1)->id(), 1);
  EXPECT_EQ((*s2)->id(), 2);
  ASSERT_TRUE(cpu.SetStream(s2->get()).ok());
  EXPECT_EQ(*cpu.CurrentStream(0), s2->get());
  // Another thread still sees the default stream.
  devices::Stream* other_thread_stream = nullptr;
  std::thread other([&] { other_thread_stream = *cpu.CurrentStream(0); });
  other.join();
  EXPECT_EQ(other_thread_stream, default_stream);

  ASSERT_TRUE(cpu.SetStreamById(0, 1).ok());
  EXPECT_EQ(*cpu.CurrentStream(0), s1->get());
  ASSERT_TRUE(cpu.SetStreamById(0, 0).ok());
  EXPECT_EQ(*cpu.CurrentStream(0), default_stream);
  EXPECT_TRUE(absl::IsNotFound(cpu.SetStreamById(0, 99)));
  EXPECT_TRUE(absl::IsNotFound(cpu.SetStreamById(1, 0)));

  // A destroyed current stream falls back to the default one.
  ASSERT_TRUE(cpu.SetStream(s1->get()).ok());
  s1->reset();
  EXPECT_EQ(*cpu.CurrentStream(0), default_stream);
  EXPECT_TRUE(absl::IsNotFound(cpu.SetStreamById(0, 1)));

  // Streams of another device are refused.
  CpuDevice other_cpu;
  auto foreign = other_cpu.CreateStream(0);
  ASSERT_TRUE(foreign.ok());
  EXPECT_FALSE(cpu.SetStream(foreign->get()).ok());
  EXPECT_FALSE(cpu.SetStream(nullptr).ok());
  ASSERT_TRUE(cpu.SetStream(default_stream).ok());
}

TEST(CpuDevice, StreamsAreSynchronous) {
  CpuDevice cpu;
  auto stream = cpu.CreateStream(0);
  ASSERT_TRUE(stream.ok());
  EXPECT_TRUE((*stream)->Synchronize().ok());
  auto idle = (*stream)->Query();
  ASSERT_TRUE(idle.ok());
  EXPECT_TRUE(*idle);
  auto event = cpu.CreateEvent(0, /*enable_timing=*/false);
  ASSERT_TRUE(event.ok());
  ASSERT_TRUE((*event)->Record(**stream).ok());
  EXPECT_TRUE((*stream)->WaitEvent(**event).ok());
  EXPECT_TRUE((*event)->Wait(**stream).ok());
  EXPECT_TRUE(*(*event)->Query());
  EXPECT_TRUE((*event)->Synchronize().ok());
  EXPECT_TRUE(cpu.Synchronize(0).ok());
  EXPECT_TRUE(absl::IsNotFound(cpu.Synchronize(1)));
  EXPECT_TRUE(absl::IsNotFound(cpu.CreateStream(1).status()));
}

TEST(CpuDevice, EventsTimeTheHost) {
  CpuDevice cpu;
  devices::Stream* stream = *cpu.CurrentStream(0);
  auto start = cpu.CreateEvent(0, /*enable_timing=*/true);
  auto end = cpu.CreateEvent(0, /*enable_timing=*/true);
  ASSERT_TRUE(start.ok() && end.ok());
  // Not recorded yet.
  EXPECT_TRUE(absl::IsFailedPrecondition((*start)->ElapsedTime(**end).status()));
  ASSERT_TRUE((*start)->Record(*stream).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE((*end)->Record(*stream).ok());
  auto ms = (*start)->ElapsedTime(**end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GE(*ms, 19.0);
  EXPECT_LT(*ms, 5000.0);
  auto backwards = (*end)->ElapsedTime(**start);
  ASSERT_TRUE(backwards.ok());
  EXPECT_LE(*backwards, -19.0);

  auto untimed = cpu.CreateEvent(0, /*enable_timing=*/false);
  ASSERT_TRUE(untimed.ok());
  ASSERT_TRUE((*untimed)->Record(*stream).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*start)->ElapsedTime(**untimed).status()));
  EXPECT_TRUE(absl::IsNotFound(cpu.CreateEvent(3, true).status()));
}

TEST(CpuDevice, PropertiesDescribeTheHost) {
  CpuDevice cpu;
  auto props = cpu.GetDeviceProperties(0);
  ASSERT_TRUE(props.ok()) << props.status();
  EXPECT_FALSE(props->name.empty());
  EXPECT_GE(props->multiprocessor_count, 1);
  EXPECT_EQ(props->multiprocessor_count, static_cast<int>(std::thread::hardware_concurrency()));
  EXPECT_GT(props->total_memory, int64_t{64} << 20);
  EXPECT_EQ(props->major, 0);
  EXPECT_TRUE(absl::IsNotFound(cpu.GetDeviceProperties(1).status()));
}

TEST(CpuDevice, MemoryStatisticsCountTheAllocator) {
  CpuDevice cpu;
  auto allocator = cpu.allocator(0);
  ASSERT_TRUE(allocator.ok());
  EXPECT_EQ(*cpu.MemoryAllocated(0), 0);
  auto a = (*allocator)->Allocate(1000, 64);
  auto b = (*allocator)->Allocate(24, 256);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*a) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*b) % 256, 0u);
  static_cast<char*>(*a)[999] = 1;  // the whole block is usable
  EXPECT_EQ(*cpu.MemoryAllocated(0), 1024);
  (*allocator)->Free(*a);
  EXPECT_EQ(*cpu.MemoryAllocated(0), 24);
  auto zero = (*allocator)->Allocate(0, 8);
  ASSERT_TRUE(zero.ok());
  EXPECT_NE(*zero, nullptr);
  (*allocator)->Free(*zero);
  (*allocator)->Free(*b);
  (*allocator)->Free(nullptr);
  EXPECT_EQ(*cpu.MemoryAllocated(0), 0);
  EXPECT_EQ(*cpu.MaxMemoryAllocated(0), 1024);
  EXPECT_FALSE((*allocator)->Allocate(8, 3).ok());
  EXPECT_FALSE((*allocator)->Allocate(size_t{1} << 62, 64).ok());
  EXPECT_TRUE(absl::IsNotFound(cpu.MemoryAllocated(1).status()));
  EXPECT_TRUE(absl::IsNotFound(cpu.allocator(1).status()));
}

TEST(CpuDevice, DtypesAreThoseTheKernelCodegenEmits) {
  CpuDevice cpu;
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32, DType::kInt8,
                  DType::kUInt8, DType::kBool}) {
    EXPECT_TRUE(cpu.IsDtypeSupported(t)) << DTypeName(t);
  }
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kComplex64}) {
    EXPECT_FALSE(cpu.IsDtypeSupported(t)) << DTypeName(t);
  }
  EXPECT_FALSE(cpu.IsBf16Supported());
}

TEST(CpuDevice, GuardAndExchangeOnTheSingleIndex) {
  CpuDevice cpu;
  EXPECT_EQ(cpu.CurrentDevice(), 0);
  EXPECT_TRUE(cpu.SetDevice(0).ok());
  EXPECT_FALSE(cpu.SetDevice(1).ok());
  auto previous = cpu.ExchangeDevice(0);
  ASSERT_TRUE(previous.ok());
  EXPECT_EQ(*previous, 0);
  EXPECT_EQ(*cpu.MaybeExchangeDevice(-1), -1);
  {
    auto guard = devices::DeviceGuard::Create(cpu, 0);
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_EQ(guard->previous_index(), 0);
  }
  auto bad = devices::DeviceGuard::Create(cpu, 1);
  EXPECT_TRUE(absl::IsNotFound(bad.status()));
}

TEST(CpuBackendRegistration, RegistersDeviceCodegenAndDeviceOps) {
  ASSERT_TRUE(RegisterCpuBackend().ok());
  ASSERT_TRUE(RegisterCpuBackend().ok());
  EXPECT_EQ(devices::DeviceRegistry::Global().Names(), (std::vector<std::string>{"cpu", "cpu:0"}));
  auto guard = devices::DeviceGuard::Create("cpu:0");
  EXPECT_TRUE(guard.ok()) << guard.status();
  auto past = devices::DeviceGuard::Create("cpu:1");
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().message().find("registered: cpu, cpu:0"), std::string::npos)
      << past.status();
  auto ops = wrapper::FindDeviceOpOverrides("cpu:0");
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_FALSE((*ops)->NeedsDeviceGuard());
  EXPECT_EQ((*ops)->EmptyStrided("(4, )", "(1, )", "torch.float32", "'cpu'"),
            "empty_strided_cpu((4, ), (1, ), torch.float32)");
  const std::string definition = (*ops)->KernelDefinition("k", {"'float*'"}, "r'''\nbody\n'''");
  EXPECT_EQ(definition.rfind("k = async_compile.cpp_pybinding(['float*'], ", 0), 0u) << definition;
  EXPECT_NE(definition.find("body"), std::string::npos) << definition;
  const std::vector<std::string> header = (*ops)->HeaderLines();
  ASSERT_FALSE(header.empty());
  EXPECT_EQ(header[0], "empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu");
  for (const std::string& name : (*ops)->DefinedNames()) {
    bool defined = false;
    for (const std::string& line : header) defined = defined || line.rfind(name + " = ", 0) == 0;
    EXPECT_TRUE(defined) << name << " is reserved but no header line defines it";
  }
  EXPECT_NE((*ops)->KernelDriver().find("kiln_run"), std::string::npos);
  EXPECT_EQ(wrapper::RegisteredDeviceOpOverrides(), (std::vector<std::string>{"cpu"}));
}

}  // namespace
}  // namespace kiln::backends::cpu
