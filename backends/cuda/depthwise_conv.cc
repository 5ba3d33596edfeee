#include "backends/cuda/depthwise_conv.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

// Thread i of the grid owns output column ox of strip `strip` (rows
// strip*R .. strip*R + R-1, R = StripRows(size, stride)) of plane (img,
// oc). Column order (x NCHW): consecutive threads take consecutive columns,
// so a warp's loads of one input row are adjacent. Channel order (x
// channels-last, kiln_rt_dw_args::channels_inner): consecutive threads take
// consecutive channels of one column, adjacent in memory; their filters,
// which would be 4*K*K bytes apart, are staged in shared memory as [K*K][c]
// first. The host keeps every offset and the thread count within 32 bits
// (DepthwiseKernelTakes): the index math is 32-bit, the padding tests one
// unsigned compare per window column (once per thread) and per row, and a
// unit-stride row's K loads take immediate offsets.
constexpr char kSource[] = R"CUDA(
struct kiln_rt_dw_args {
  i64 n, c, h, w, oh, ow, ph, pw, mult;
  i64 x_strides[4];
  i64 y_strides[4];
  int has_bias;
  int channels_inner;
};
template <typename IO, typename T, int K, int S, int R, bool kUnitW>
__device__ void kiln_rt_dw_walk(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                                T* __restrict__ y, const kiln_rt_dw_args& a, const float* staged) {
  constexpr int kRows = (R - 1) * S + K;  // input rows the strip's windows cover
  const unsigned c = (unsigned)a.c, ow = (unsigned)a.ow, oh = (unsigned)a.oh, strips = (oh + R - 1) / R;
  const unsigned total = (unsigned)a.n * c * strips * ow, mult = (unsigned)a.mult;
  const int h = (int)a.h, w = (int)a.w;
  const int xn = (int)a.x_strides[0], xc = (int)a.x_strides[1], xh = (int)a.x_strides[2];
  const int xw = kUnitW ? 1 : (int)a.x_strides[3];
  const int yn = (int)a.y_strides[0], yc = (int)a.y_strides[1], yh = (int)a.y_strides[2], yw = (int)a.y_strides[3];
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    unsigned ox, strip, oc, img, rest;
    if (a.channels_inner) {
      oc = i % c, rest = i / c;
      ox = rest % ow, rest /= ow;
      strip = rest % strips, img = rest / strips;
    } else {
      ox = i % ow, rest = i / ow;
      strip = rest % strips, rest /= strips;
      oc = rest % c, img = rest / c;
    }
    float f[K * K];
#pragma unroll
    for (int k = 0; k < K * K; ++k) f[k] = staged ? staged[k * c + oc] : IO::load(wt + oc * (K * K) + k);
    const float b = a.has_bias ? IO::load(bias + oc) : 0.0f;
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; ++r) acc[r] = b;
    const int oy0 = (int)strip * R, iy0 = oy0 * S - (int)a.ph, ix0 = (int)ox * S - (int)a.pw;
    bool col_in[K];  // the window's columns inside the row (the rest is padding)
#pragma unroll
    for (int kx = 0; kx < K; ++kx) col_in[kx] = (unsigned)(ix0 + kx) < (unsigned)w;
    // The window's first column: an address only formed, read where col_in.
    const T* xcol = x + (int)img * xn + (int)(oc / mult) * xc + ix0 * xw;
#pragma unroll
    for (int j = 0; j < kRows; ++j) {
      const int iy = iy0 + j;
      const bool row_in = (unsigned)iy < (unsigned)h;
      const T* row = xcol + iy * xh;
      float v[K];
#pragma unroll
      for (int kx = 0; kx < K; ++kx) v[kx] = row_in && col_in[kx] ? IO::load(row + kx * xw) : 0.0f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int ky = j - r * S;  // a constant once unrolled
        if (ky < 0 || ky >= K) continue;
#pragma unroll
        for (int kx = 0; kx < K; ++kx) acc[r] = fmaf(f[ky * K + kx], v[kx], acc[r]);
      }
    }
    T* yp = y + (int)img * yn + (int)oc * yc + (int)ox * yw;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if ((unsigned)(oy0 + r) < oh) IO::store(yp + (oy0 + r) * yh, acc[r]);
    }
  }
}
template <typename IO, typename T, int K, int S, int R>
__device__ void kiln_rt_dw(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                           T* __restrict__ y, const kiln_rt_dw_args& a) {
  __shared__ float shared[KILN_RT_DW_STAGED];
  const float* staged = nullptr;
  if (a.channels_inner) {
    const unsigned taps = (unsigned)a.c * (K * K);
    for (unsigned t = threadIdx.x; t < taps; t += blockDim.x) {
      shared[(t % (K * K)) * (unsigned)a.c + t / (K * K)] = IO::load(wt + t);
    }
    __syncthreads();
    staged = shared;
  }
  if (a.x_strides[3] == 1) {
    kiln_rt_dw_walk<IO, T, K, S, R, true>(x, wt, bias, y, a, staged);
  } else {
    kiln_rt_dw_walk<IO, T, K, S, R, false>(x, wt, bias, y, a, staged);
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

// Every element offset of `l` is below 2^30, so the kernel's 32-bit index
// math also holds the offsets a window forms past the plane's edges.
bool Fits32Bits(const lowering::Layout& l) {
  int64_t last = l.offset;
  for (size_t d = 0; d < l.sizes.size(); ++d) {
    if (l.strides[d] < 0) return false;
    last += (l.sizes[d] - 1) * l.strides[d];
  }
  return l.offset >= 0 && last < (int64_t{1} << 30);
}

// KILN_CUDA_DEPTHWISE=0 sends every depthwise convolution to cuDNN. Read
// per call (tests switch it; a replayed CUDA graph does not call it).
bool KernelSwitchedOff() {
  const char* v = std::getenv("KILN_CUDA_DEPTHWISE");
  return v != nullptr && std::string(v) == "0";
}

}  // namespace

std::string DepthwiseKernelName(int storage, int size, int stride) {
  return absl::StrCat("kiln_rt_depthwise", size, "x", size, "_s", stride, "_", kStorageSuffix[storage]);
}

const std::string& DepthwiseKernelSource() {
  static const std::string* source = [] {
    auto* s = new std::string(absl::StrCat("#define KILN_RT_DW_STAGED ", kDepthwiseStagedTaps, "\n", kSource));
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
  if (KernelSwitchedOff() || channels_last || c.spatial_dims != 2) return false;
  if (c.groups != c.cin || c.cout % c.cin != 0) return false;
  if (c.kh != c.kw || c.sh != c.sw || c.dh != 1 || c.dw != 1 || SizeIndex(c.kh) < 0 || StrideIndex(c.sh) < 0) {
    return false;
  }
  const DType t = c.x.layout.dtype;
  if (RuntimeStorageIndex(t) < 0 || c.weight.layout.dtype != t || c.y.layout.dtype != t) return false;
  if (c.bias && (c.bias->layout.dtype != t || !c.bias->layout.IsContiguous())) return false;
  // [K, 1, R, S] packed: filter plane oc at oc * K * K.
  const lowering::Layout& w = c.weight.layout;
  if (w.sizes.size() != 4 || w.sizes[1] != 1 || !w.IsContiguous()) return false;
  // x may be channels-last (convnext's first block reads the permuted layer
  // norm's NHWC output): the kernel then walks channels fastest.
  return c.x.layout.sizes.size() == 4 && c.y.layout.sizes.size() == 4 && Fits32Bits(c.x.layout) &&
         Fits32Bits(c.y.layout);
}

bool DepthwiseChannelsInner(const ConvProblem& c) {
  return c.x.layout.strides.size() == 4 && c.x.layout.strides[1] == 1 && c.cin > 1 &&
         c.cout * c.kh * c.kw <= kDepthwiseStagedTaps;
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
  a.channels_inner = DepthwiseChannelsInner(c) ? 1 : 0;
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
