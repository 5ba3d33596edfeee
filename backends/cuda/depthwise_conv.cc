#include "backends/cuda/depthwise_conv.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

// Thread i of the grid owns output column ox of strip `strip` (rows
// strip*R .. strip*R + R-1, R = StripRows(size, stride)) of plane (img,
// oc); consecutive threads take consecutive columns, so a warp's loads of
// one input row are adjacent. Below 2^31 threads the unravel divides in 32
// bits.
constexpr char kSource[] = R"CUDA(
struct kiln_rt_dw_args {
  i64 n, c, h, w, oh, ow, ph, pw, mult;
  i64 x_strides[4];
  i64 y_strides[4];
  int has_bias;
};
template <typename IO, typename T, int K, int S, int R, typename I>
__device__ void kiln_rt_dw_walk(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                                T* __restrict__ y, const kiln_rt_dw_args& a, I total) {
  constexpr int kRows = (R - 1) * S + K;  // input rows the strip's windows cover
  const I ow = (I)a.ow, c = (I)a.c, strips = (I)((a.oh + R - 1) / R);
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < total; i += (I)gridDim.x * blockDim.x) {
    const I ox = i % ow;
    I rest = i / ow;
    const I strip = rest % strips;
    rest /= strips;
    const I oc = rest % c, img = rest / c;
    const T* xp = x + (i64)img * a.x_strides[0] + (i64)(oc / (I)a.mult) * a.x_strides[1];
    float f[K * K];
#pragma unroll
    for (int k = 0; k < K * K; ++k) f[k] = IO::load(wt + (i64)oc * (K * K) + k);
    const float b = a.has_bias ? IO::load(bias + oc) : 0.0f;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = b;
    const i64 oy0 = (i64)strip * R, iy0 = oy0 * S - a.ph, ix0 = (i64)ox * S - a.pw;
    // Straight-line loads (no branch per load, so they issue together): an
    // index outside the input reads a clamped address and contributes 0.
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      const i64 iy = iy0 + j;
      const bool row_in = iy >= 0 && iy < a.h;
      const T* row = xp + (row_in ? iy : 0) * a.x_strides[2];
      float v[K];
#pragma unroll
      for (int kx = 0; kx < K; ++kx) {
        const i64 ix = ix0 + kx;
        const bool in = row_in && ix >= 0 && ix < a.w;
        const float loaded = IO::load(row + (in ? ix : 0) * a.x_strides[3]);
        v[kx] = in ? loaded : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int ky = j - r * S;  // a constant once unrolled
        if (ky < 0 || ky >= K) continue;
#pragma unroll
        for (int kx = 0; kx < K; ++kx) acc[r] = fmaf(f[ky * K + kx], v[kx], acc[r]);
      }
    }
    T* yp = y + (i64)img * a.y_strides[0] + (i64)oc * a.y_strides[1] + (i64)ox * a.y_strides[3];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (oy0 + r < a.oh) IO::store(yp + (oy0 + r) * a.y_strides[2], acc[r]);
    }
  }
}
template <typename IO, typename T, int K, int S, int R>
__device__ void kiln_rt_dw(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                           T* __restrict__ y, const kiln_rt_dw_args& a) {
  const i64 total = a.n * a.c * ((a.oh + R - 1) / R) * a.ow;
  if (total < (1LL << 31)) {
    kiln_rt_dw_walk<IO, T, K, S, R, unsigned>(x, wt, bias, y, a, (unsigned)total);
  } else {
    kiln_rt_dw_walk<IO, T, K, S, R, i64>(x, wt, bias, y, a, total);
  }
}
#define KILN_RT_DW(name, IO, T, K, S, R) \
  extern "C" __global__ void __launch_bounds__(256) name(const T* __restrict__ x, const T* __restrict__ wt, \
                                                         const T* __restrict__ bias, T* __restrict__ y, \
                                                         kiln_rt_dw_args a) { \
    kiln_rt_dw<IO, T, K, S, R>(x, wt, bias, y, a); \
  }
)CUDA";

// Per RuntimeStorageIndex.
constexpr const char* kStorageSuffix[3] = {"f32", "f16", "bf16"};
constexpr const char* kStorageIo[3] = {"kiln_rt_f32, float", "kiln_rt_f16<0>, unsigned short",
                                       "kiln_rt_f16<1>, unsigned short"};

int SizeIndex(int64_t k) {
  for (int i = 0; i < static_cast<int>(std::size(kDepthwiseSizes)); ++i) {
    if (kDepthwiseSizes[i] == k) return i;
  }
  return -1;
}

int StrideIndex(int64_t s) {
  for (int i = 0; i < static_cast<int>(std::size(kDepthwiseStrides)); ++i) {
    if (kDepthwiseStrides[i] == s) return i;
  }
  return -1;
}

// Outputs per thread, down one column: the strip's rows share input rows
// (stride 1: K - 1 of a K x K window's rows with the next output). 7x7
// filters take 4 so that filter, sums and a row stay in registers (8 takes
// 163 registers on sm_90, and capping it spills).
int64_t StripRows(int64_t size, int64_t stride) { return stride == 1 && size <= 5 ? 8 : 4; }

// KILN_CUDA_DEPTHWISE: "0" none, "1" every storage type, unset the
// measured policy (DepthwiseKernelTakes). Read per call (tests switch it; a
// replayed CUDA graph does not call it).
std::string Switch() {
  const char* v = std::getenv("KILN_CUDA_DEPTHWISE");
  return v == nullptr ? "" : v;
}

}  // namespace

std::string DepthwiseKernelName(int storage, int size, int stride) {
  return absl::StrCat("kiln_rt_depthwise", size, "x", size, "_s", stride, "_", kStorageSuffix[storage]);
}

const std::string& DepthwiseKernelSource() {
  static const std::string* source = [] {
    auto* s = new std::string(kSource);
    for (int t = 0; t < 3; ++t) {
      for (int k : kDepthwiseSizes) {
        for (int st : kDepthwiseStrides) {
          absl::StrAppend(s, "KILN_RT_DW(", DepthwiseKernelName(t, k, st), ", ", kStorageIo[t], ", ", k, ", ", st,
                          ", ", StripRows(k, st), ")\n");
        }
      }
    }
    return s;
  }();
  return *source;
}

bool DepthwiseKernelTakes(const ConvProblem& c, bool channels_last) {
  const std::string on = Switch();
  if (on == "0" || channels_last || c.spatial_dims != 2) return false;
  if (c.groups != c.cin || c.cout % c.cin != 0) return false;
  if (c.kh != c.kw || c.sh != c.sw || c.dh != 1 || c.dw != 1 || SizeIndex(c.kh) < 0 || StrideIndex(c.sh) < 0) {
    return false;
  }
  const DType t = c.x.layout.dtype;
  if (RuntimeStorageIndex(t) < 0 || c.weight.layout.dtype != t || c.y.layout.dtype != t) return false;
  // 16-bit ones measured faster through cuDNN's graph API (depthwise_conv.h).
  if (t != DType::kFloat32 && CudnnGraphApiEnabled() && on != "1") return false;
  if (c.bias && (c.bias->layout.dtype != t || !c.bias->layout.IsContiguous())) return false;
  // [K, 1, R, S] packed: filter plane oc at oc * K * K.
  const lowering::Layout& w = c.weight.layout;
  if (w.sizes.size() != 4 || w.sizes[1] != 1 || !w.IsContiguous()) return false;
  // x may be channels-last (convnext's first block of each stage reads the
  // permuted layer norm's NHWC output): a warp's loads then each take a
  // sector of their own, yet handing those to cuDNN measured slower
  // (convnext_tiny b32 float32 on an H200: 11.80 ms against 10.56).
  return c.x.layout.sizes.size() == 4 && c.y.layout.sizes.size() == 4;
}

absl::Status LaunchDepthwise(const ConvProblem& c, int device_index, CUstream stream) {
  ASSIGN_OR_RETURN(const RuntimeKernels* k, GetRuntimeKernels(device_index));
  const int storage = RuntimeStorageIndex(c.x.layout.dtype);
  const CUfunction f = k->depthwise_tiled[storage][SizeIndex(c.kh)][StrideIndex(c.sh)];
  DepthwiseArgs a{};
  a.n = c.n, a.c = c.cout, a.h = c.h, a.w = c.w, a.oh = c.oh, a.ow = c.ow, a.ph = c.ph, a.pw = c.pw;
  a.mult = c.cout / c.cin;
  for (int d = 0; d < 4; ++d) {
    a.x_strides[d] = c.x.layout.strides[d];
    a.y_strides[d] = c.y.layout.strides[d];
  }
  a.has_bias = c.bias ? 1 : 0;
  const size_t elem = DTypeSize(c.x.layout.dtype);
  auto address = [&](const DeviceView& v) { return v.base + static_cast<CUdeviceptr>(v.layout.offset) * elem; };
  CUdeviceptr xp = address(c.x), wp = address(c.weight), yp = address(c.y);
  CUdeviceptr bp = c.bias ? address(*c.bias) : wp;  // unread without a bias
  const int64_t rows = StripRows(c.kh, c.sh);
  const int64_t total = c.n * c.cout * ((c.oh + rows - 1) / rows) * c.ow;
  if (total <= 0) return absl::OkStatus();
  std::vector<void*> params = {&xp, &wp, &bp, &yp, &a};
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, int64_t{1} << 30));
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  return CuCheck(d.cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, stream, params.data(), nullptr),
                 "cuLaunchKernel (depthwise convolution)");
}

}  // namespace kiln::backends::cuda
