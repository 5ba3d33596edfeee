#include "backends/cuda/output_difference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {

namespace {

constexpr int kThreads = 256;  // the kernel's block (its shared arrays' size)

constexpr char kSource[] = R"CUDA(
// partials[block] = {sum (a-b)^2, sum b^2, elements finite in only one of
// a and b} over the block's grid-stride slice. `v - v == 0` is true exactly
// for finite v (no intrinsic needed, and the emulation test runs it as is).
template <typename IO, typename T>
__device__ void kiln_rt_difference(const T* __restrict__ a, const T* __restrict__ b, i64 n,
                                   double* __restrict__ partials) {
  double sq = 0.0, ref = 0.0, bad = 0.0;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    const float x = IO::load(a + i), y = IO::load(b + i);
    const bool fx = x - x == 0.0f, fy = y - y == 0.0f;
    if (fx && fy) {
      const double d = (double)x - (double)y;
      sq += d * d;
      ref += (double)y * (double)y;
    } else if (fx != fy) {
      bad += 1.0;
    }
  }
  __shared__ double s[3][256];
  s[0][threadIdx.x] = sq;
  s[1][threadIdx.x] = ref;
  s[2][threadIdx.x] = bad;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      for (int k = 0; k < 3; ++k) s[k][threadIdx.x] += s[k][threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int k = 0; k < 3; ++k) partials[blockIdx.x * 3 + k] = s[k][0];
  }
}
#define KILN_RT_DIFFERENCE(name, IO, T)                                                                      \
  extern "C" __global__ void __launch_bounds__(256) name(const T* __restrict__ a, const T* __restrict__ b, \
                                                         i64 n, double* __restrict__ partials) {          \
    kiln_rt_difference<IO>(a, b, n, partials);                                                            \
  }
KILN_RT_DIFFERENCE(kiln_rt_difference_f32, kiln_rt_f32, float)
KILN_RT_DIFFERENCE(kiln_rt_difference_f16, kiln_rt_f16<0>, unsigned short)
KILN_RT_DIFFERENCE(kiln_rt_difference_bf16, kiln_rt_f16<1>, unsigned short)
)CUDA";

}  // namespace

const std::string& DifferenceKernelSource() {
  static const std::string* source = new std::string(kSource);
  return *source;
}

OutputDifference SumDifferencePartials(const double* partials, int blocks) {
  double sq = 0, ref = 0, bad = 0;
  for (int b = 0; b < blocks; ++b) {
    sq += partials[3 * b];
    ref += partials[3 * b + 1];
    bad += partials[3 * b + 2];
  }
  OutputDifference d;
  d.finiteness_mismatches = static_cast<int64_t>(bad);
  if (ref > 0) {
    d.relative_l2 = std::sqrt(sq / ref);
  } else {
    d.relative_l2 = sq > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  return d;
}

absl::StatusOr<OutputDifference> DeviceDifference(CUdeviceptr a, CUdeviceptr b, int64_t n, DType dtype,
                                                  CUdeviceptr partials, int device_index, CUstream stream) {
  const int t = RuntimeStorageIndex(dtype);
  if (t < 0) return absl::InvalidArgumentError(absl::StrCat("output difference: no kernel for ", DTypeName(dtype)));
  const char* const names[3] = {"kiln_rt_difference_f32", "kiln_rt_difference_f16", "kiln_rt_difference_bf16"};
  ASSIGN_OR_RETURN(CUfunction f, GetRuntimeFunction(device_index, DifferenceKernelSource(), names[t]));
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  const int blocks = static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kDifferenceBlocks));
  void* params[] = {&a, &b, &n, &partials};
  RETURN_IF_ERROR(CuCheck(d.cuLaunchKernel(f, static_cast<unsigned>(blocks), 1, 1, kThreads, 1, 1, 0,
                                           stream, params, nullptr),
                          "cuLaunchKernel (output difference)"));
  std::vector<double> host(static_cast<size_t>(blocks) * 3);
  RETURN_IF_ERROR(CuCheck(d.cuMemcpyDtoHAsync(host.data(), partials, host.size() * sizeof(double), stream),
                          "cuMemcpyDtoHAsync (output difference)"));
  RETURN_IF_ERROR(CuCheck(d.cuStreamSynchronize(stream), "cuStreamSynchronize (output difference)"));
  return SumDifferencePartials(host.data(), blocks);
}

}  // namespace kiln::backends::cuda
