// The loader resolves every function kiln calls, checked without a GPU
// against the CUDA toolkit installed here: the driver's stub library
// (KILN_CUDA_DRIVER_LIB, set by the BUILD rule; cuInit then fails, after
// resolution), NVRTC, cuBLAS and cuDNN 9. Each case skips when the library
// is not installed.
#include <cstdlib>
#include <filesystem>

#include "absl/strings/match.h"
#include "backends/cuda/cuda_loader.h"
#include "gtest/gtest.h"

namespace kiln::backends::cuda {
namespace {

TEST(CudaLoaderTest, DriverStubResolvesEveryFunction) {
  const char* stub = std::getenv("KILN_CUDA_DRIVER_LIB");
  if (stub == nullptr || !std::filesystem::exists(stub)) GTEST_SKIP() << "no driver stub library";
  const CudaLibraries& libs = LoadCudaLibraries();
  // The stub exports every symbol; only cuInit (a stub) may fail.
  EXPECT_FALSE(absl::StrContains(libs.driver_status.message(), "lacks")) << libs.driver_status;
  EXPECT_NE(libs.driver.cuStreamBeginCapture, nullptr);
  EXPECT_NE(libs.driver.cuGraphInstantiateWithFlags, nullptr);
  EXPECT_NE(libs.driver.cuGraphLaunch, nullptr);
}

TEST(CudaLoaderTest, CublasResolvesEveryFunction) {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (absl::IsUnavailable(libs.cublas_status)) GTEST_SKIP() << libs.cublas_status;
  EXPECT_TRUE(libs.cublas_status.ok()) << libs.cublas_status;
}

TEST(CudaLoaderTest, CublasLtResolvesEveryFunction) {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (absl::IsUnavailable(libs.cublaslt_status)) GTEST_SKIP() << libs.cublaslt_status;
  EXPECT_TRUE(libs.cublaslt_status.ok()) << libs.cublaslt_status;
}

TEST(CudaLoaderTest, CudnnResolvesEveryFunction) {
  const CudaLibraries& libs = LoadCudaLibraries();
  if (absl::IsUnavailable(libs.cudnn_status)) GTEST_SKIP() << libs.cudnn_status;
  ASSERT_TRUE(libs.cudnn_status.ok()) << libs.cudnn_status;
  EXPECT_GE(libs.cudnn_version, 90000u);
  EXPECT_NE(libs.cudnn.cudnnFindConvolutionForwardAlgorithmEx, nullptr);
  EXPECT_NE(libs.cudnn.cudnnConvolutionBiasActivationForward, nullptr);
  // The graph (backend) API.
  EXPECT_NE(libs.cudnn.cudnnBackendCreateDescriptor, nullptr);
  EXPECT_NE(libs.cudnn.cudnnBackendSetAttribute, nullptr);
  EXPECT_NE(libs.cudnn.cudnnBackendGetAttribute, nullptr);
  EXPECT_NE(libs.cudnn.cudnnBackendFinalize, nullptr);
  EXPECT_NE(libs.cudnn.cudnnBackendExecute, nullptr);
  EXPECT_NE(libs.cudnn.cudnnBackendDestroyDescriptor, nullptr);
}

}  // namespace
}  // namespace kiln::backends::cuda
