// CudaProgram::RunOnDevice (the C API's zero-copy path): device inputs read
// in place on the caller's stream, outputs owned by the caller, the same
// results as the host path. GPU only (skipped here, run by
// //testing:cuda_gpu_check on the GPU machine).
#include <memory>

#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cuda_program.h"
#include "backends/cuda/cuda_test_util.h"
#include "driver/compile_graph.h"
#include "gtest/gtest.h"

namespace kiln::backends::cuda {
namespace {

using test::Random;

// A matmul (cuBLAS), pointwise kernels, a row sum, and an output that is a
// view of an input.
constexpr char kGraph[] = R"(graph(%x : Float(8, 16), %w : Float(16, 4)):
  %one : int = prim::Constant[value=1]()
  %d : int[] = prim::Constant[value=[-1]]()
  %f : bool = prim::Constant[value=0]()
  %n : NoneType = prim::Constant()
  %a : Tensor = aten::add(%x, %x, %one)
  %m : Tensor = aten::mm(%a, %w)
  %s : Tensor = aten::sum(%m, %d, %f, %n)
  %wt : Tensor = aten::t(%w)
  return (%s, %m, %wt))";

class DeviceRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::RegisterAll();
    if (!CudaDevice().is_available()) GTEST_SKIP() << "no CUDA device: " << CudaDevice::UnavailableReason();
    absl::StatusOr<driver::CompiledGraph> c = test::CompileForCuda(kGraph);
    ASSERT_TRUE(c.ok()) << c.status();
    compiled_ = std::move(c->compiled);
    program_ = dynamic_cast<CudaProgram*>(compiled_.get());
    ASSERT_NE(program_, nullptr);
  }

  // A borrowed DeviceBuffer over an uploaded tensor.
  static wrapper::DeviceRunInput Borrow(const DeviceTensor& t) {
    wrapper::DeviceRunInput in;
    in.device.data = static_cast<uintptr_t>(t.base());
    in.device.dtype = t.layout.dtype;
    in.device.sizes = t.layout.sizes;
    in.device.strides = t.layout.strides;
    in.device.device_index = 0;
    return in;
  }

  // An output's elements on the host (synchronizes the current stream).
  Tensor Fetch(const wrapper::DeviceBuffer& b) {
    auto storage = std::const_pointer_cast<DeviceStorage>(std::static_pointer_cast<const DeviceStorage>(b.owner));
    lowering::Layout l;
    l.device = "cuda";
    l.dtype = b.dtype;
    l.sizes = b.sizes;
    l.strides = b.strides;
    const int64_t byte_offset = static_cast<int64_t>(b.data - storage->ptr());
    absl::StatusOr<Tensor> t = program_->Download(DeviceTensor{storage, byte_offset, l});
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? *t : Tensor();
  }

  static void ExpectSame(const Tensor& a, const Tensor& b) {
    ASSERT_EQ(a.sizes(), b.sizes());
    for (int64_t i = 0; i < a.numel(); ++i) ASSERT_EQ(a.GetDouble(i), b.GetDouble(i)) << "element " << i;
  }

  std::unique_ptr<wrapper::CompiledProgram> compiled_;
  CudaProgram* program_ = nullptr;
};

TEST_F(DeviceRunTest, BorrowedInputsOnACallerStreamMatchTheHostPath) {
  const std::vector<Tensor> host = {Random({8, 16}, 1), Random({16, 4}, 2)};
  absl::StatusOr<std::vector<Tensor>> want = program_->Run(host);
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<DeviceTensor>> uploaded = program_->Upload(host);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  CudaDevice device;
  absl::StatusOr<std::unique_ptr<devices::Stream>> stream = device.CreateStream(0);
  ASSERT_TRUE(stream.ok()) << stream.status();
  absl::StatusOr<CUstream> before = device.CurrentCuStream(0);
  ASSERT_TRUE(before.ok());
  ASSERT_TRUE(device.Synchronize(0).ok());
  absl::StatusOr<AllocatorStats> stats_before = device.allocator_stats(0);
  ASSERT_TRUE(stats_before.ok());
  const int64_t fallbacks = program_->stats().host_fallbacks.load();
  for (int call = 0; call < 2; ++call) {
    absl::StatusOr<std::vector<wrapper::DeviceBuffer>> got =
        program_->RunOnDevice({Borrow((*uploaded)[0]), Borrow((*uploaded)[1])}, (*stream)->raw());
    ASSERT_TRUE(got.ok()) << got.status();
    // The caller's current stream is back.
    EXPECT_EQ(*device.CurrentCuStream(0), *before);
    ASSERT_TRUE((*stream)->Synchronize().ok());
    ASSERT_EQ(got->size(), 3u);
    for (size_t o = 0; o < got->size(); ++o) {
      const wrapper::DeviceBuffer& b = (*got)[o];
      ASSERT_NE(b.owner, nullptr);
      EXPECT_EQ(b.device_index, 0);
      ExpectSame(Fetch(b), (*want)[o]);
    }
    // w^T is a view of input 1 in the program; the output is a copy the
    // caller owns, not the borrowed input memory.
    EXPECT_FALSE(std::static_pointer_cast<const DeviceStorage>((*got)[2].owner)->borrowed());
    EXPECT_NE((*got)[2].data, static_cast<uintptr_t>((*uploaded)[1].base()));
  }
  EXPECT_EQ(program_->stats().host_fallbacks.load(), fallbacks);
  // Every block of the calls went back to the cache; the borrowed inputs
  // were never freed into it.
  absl::StatusOr<AllocatorStats> stats_after = device.allocator_stats(0);
  ASSERT_TRUE(stats_after.ok());
  EXPECT_EQ(stats_after->allocated_bytes, stats_before->allocated_bytes);
}

TEST_F(DeviceRunTest, StridedDeviceInputsAreCopiedOnTheDeviceAndHostInputsUploaded) {
  const Tensor x = Random({8, 16}, 3);
  const Tensor w = Random({16, 4}, 4);
  absl::StatusOr<std::vector<Tensor>> want = program_->Run({x, w});
  ASSERT_TRUE(want.ok()) << want.status();
  // x stored transposed: a [16, 8] tensor whose [8, 16] view has strides [1, 8].
  Tensor xt = Tensor::Empty(DType::kFloat32, {16, 8});
  for (int64_t i = 0; i < 8; ++i) {
    for (int64_t j = 0; j < 16; ++j) xt.data<float>()[j * 8 + i] = x.data<float>()[i * 16 + j];
  }
  absl::StatusOr<std::vector<DeviceTensor>> uploaded = program_->Upload({x, w});
  ASSERT_TRUE(uploaded.ok());
  CudaDevice device;
  absl::StatusOr<std::shared_ptr<DeviceStorage>> xt_storage = device.AllocateStorage(0, 16 * 8 * sizeof(float));
  ASSERT_TRUE(xt_storage.ok());
  const CudaDriverApi& driver = LoadCudaLibraries().driver;
  ASSERT_EQ(driver.cuMemcpyHtoDAsync((*xt_storage)->ptr(), xt.raw_data(), 16 * 8 * sizeof(float), nullptr),
            kCudaSuccess);
  ASSERT_EQ(driver.cuStreamSynchronize(nullptr), kCudaSuccess);
  wrapper::DeviceRunInput strided;
  strided.device.data = static_cast<uintptr_t>((*xt_storage)->ptr());
  strided.device.sizes = {8, 16};
  strided.device.strides = {1, 8};
  wrapper::DeviceRunInput on_host;
  on_host.host = w;
  absl::StatusOr<std::vector<wrapper::DeviceBuffer>> got = program_->RunOnDevice({strided, on_host}, nullptr);
  ASSERT_TRUE(got.ok()) << got.status();
  for (size_t o = 0; o < got->size(); ++o) ExpectSame(Fetch((*got)[o]), (*want)[o]);
}

TEST_F(DeviceRunTest, InputsOfAnotherDeviceOrShapeAreErrors) {
  absl::StatusOr<std::vector<DeviceTensor>> uploaded = program_->Upload({Random({8, 16}, 5), Random({16, 4}, 6)});
  ASSERT_TRUE(uploaded.ok());
  wrapper::DeviceRunInput x = Borrow((*uploaded)[0]);
  x.device.device_index = 1;
  absl::StatusOr<std::vector<wrapper::DeviceBuffer>> got = program_->RunOnDevice({x, Borrow((*uploaded)[1])}, nullptr);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(got.status().message()).find("on cuda:1"), std::string::npos) << got.status();
  x.device.device_index = 0;
  x.device.sizes = {16, 8};
  got = program_->RunOnDevice({x, Borrow((*uploaded)[1])}, nullptr);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
  got = program_->RunOnDevice({x}, nullptr);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::backends::cuda
