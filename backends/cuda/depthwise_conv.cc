#include "backends/cuda/depthwise_conv.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/parallel.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

// Two kernels. The column kernel (x NCHW): thread i of the grid owns output
// column ox of strip `strip` (rows strip*R .. strip*R + R-1, R =
// StripRows(size, stride)) of plane (img, oc); consecutive threads take
// consecutive columns, so a warp's loads of one input row are adjacent. The
// host keeps every offset and the thread count within 32 bits
// (DepthwiseKernelTakes): the index math is 32-bit, the padding tests one
// unsigned compare per window column (once per thread) and per row, and a
// unit-stride row's K loads take immediate offsets.
//
// The channels-last kernel (x NHWC, where a column walk reads a sector per
// element and a channel walk scatters its stores): a block stages the input
// window of 16 channels x a band of output rows x a band of columns in
// shared memory (float, zero padding written out), 16 channels of a pixel
// per half warp, so its global loads are adjacent; then each thread computes
// a 4 x 4 tile of one channel plane from it with 16-byte shared loads, and
// its stores walk columns.
constexpr char kSource[] = R"CUDA(
struct kiln_rt_dw_args {
  i64 n, c, h, w, oh, ow, ph, pw, mult;
  i64 x_strides[4];
  i64 y_strides[4];
  int has_bias;
  int band_tiles, block_tiles_w, row_bands, col_bands, staged_rows, pitch, channel_pitch;
};
template <typename IO, typename T, int K, int S, int R, bool kUnitW>
__device__ void kiln_rt_dw_walk(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                                T* __restrict__ y, const kiln_rt_dw_args& a) {
  constexpr int kRows = (R - 1) * S + K;  // input rows the strip's windows cover
  const unsigned c = (unsigned)a.c, ow = (unsigned)a.ow, oh = (unsigned)a.oh, strips = (oh + R - 1) / R;
  const unsigned total = (unsigned)a.n * c * strips * ow, mult = (unsigned)a.mult;
  const int h = (int)a.h, w = (int)a.w;
  const int xn = (int)a.x_strides[0], xc = (int)a.x_strides[1], xh = (int)a.x_strides[2];
  const int xw = kUnitW ? 1 : (int)a.x_strides[3];
  const int yn = (int)a.y_strides[0], yc = (int)a.y_strides[1], yh = (int)a.y_strides[2], yw = (int)a.y_strides[3];
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const unsigned ox = i % ow, rest = i / ow;
    const unsigned strip = rest % strips, plane = rest / strips;
    const unsigned oc = plane % c, img = plane / c;
    float f[K * K];
#pragma unroll
    for (int k = 0; k < K * K; ++k) f[k] = IO::load(wt + oc * (K * K) + k);
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
  if (a.x_strides[3] == 1) {
    kiln_rt_dw_walk<IO, T, K, S, R, true>(x, wt, bias, y, a);
  } else {
    kiln_rt_dw_walk<IO, T, K, S, R, false>(x, wt, bias, y, a);
  }
}
struct __align__(16) kiln_rt_dw_f4 { float x, y, z, w; };
// Block b: column band b % col_bands, then row band, 16-channel group and
// image. Shared tile: channel g's staged rows at g * channel_pitch (a
// multiple of 4 floats, not of 32: the half warp's 16 channels fall in
// different banks), row r of it at r * pitch.
template <typename IO, typename T, int K, int S>
__device__ void kiln_rt_dw_nhwc(const T* __restrict__ x, const T* __restrict__ wt, const T* __restrict__ bias,
                                T* __restrict__ y, const kiln_rt_dw_args& a) {
  constexpr int kTile = 4, kChannels = 16;
  constexpr int kVec = ((kTile - 1) * S + K + 3) / 4;  // 16-byte loads per window row of a tile
  __shared__ kiln_rt_dw_f4 staged4[KILN_RT_DW_STAGED / 4];
  float* staged = reinterpret_cast<float*>(staged4);
  const int SR = a.staged_rows, SP = a.pitch, CP = a.channel_pitch, BT = a.band_tiles, TW = a.block_tiles_w;
  const int c = (int)a.c, h = (int)a.h, w = (int)a.w, oh = (int)a.oh, ow = (int)a.ow, mult = (int)a.mult;
  unsigned b = blockIdx.x;
  const int col_band = (int)(b % (unsigned)a.col_bands);
  b /= (unsigned)a.col_bands;
  const int row_band = (int)(b % (unsigned)a.row_bands);
  b /= (unsigned)a.row_bands;
  const unsigned groups = ((unsigned)c + kChannels - 1) / kChannels;
  const int c0 = (int)(b % groups) * kChannels, img = (int)(b / groups);
  const int oy0 = row_band * BT * kTile, ox0 = col_band * TW * kTile;
  const int iy0 = oy0 * S - (int)a.ph, ix0 = ox0 * S - (int)a.pw;
  const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  {
    const int g = lane & 15, walker = (threadIdx.x >> 5) * 2 + (lane >> 4), walkers = warps * 2;
    const bool channel_in = c0 + g < c;
    const T* xg = x + img * (int)a.x_strides[0] + ((c0 + g) / mult) * (int)a.x_strides[1];
    const int xh = (int)a.x_strides[2], xw = (int)a.x_strides[3];
    for (int r = 0; r < SR; ++r) {
      const int iy = iy0 + r;
      const bool row_in = channel_in && (unsigned)iy < (unsigned)h;
      for (int col = walker; col < SP; col += walkers) {
        const int ix = ix0 + col;
        staged[g * CP + r * SP + col] = row_in && (unsigned)ix < (unsigned)w ? IO::load(xg + iy * xh + ix * xw) : 0.0f;
      }
    }
  }
  __syncthreads();
  const int yn = (int)a.y_strides[0], yc = (int)a.y_strides[1], yh = (int)a.y_strides[2], yw = (int)a.y_strides[3];
  for (int u = threadIdx.x; u < kChannels * BT * TW; u += blockDim.x) {
    const int tc = u % TW, rest = u / TW, tr = rest % BT, g = rest / BT;
    const int oc = c0 + g, ty = oy0 + tr * kTile, tx = ox0 + tc * kTile;
    if (oc >= c || ty >= oh || tx >= ow) continue;
    float f[K * K];
#pragma unroll
    for (int k = 0; k < K * K; ++k) f[k] = IO::load(wt + oc * (K * K) + k);
    const float b0 = a.has_bias ? IO::load(bias + oc) : 0.0f;
    float acc[kTile][kTile];
#pragma unroll
    for (int r = 0; r < kTile; ++r) {
#pragma unroll
      for (int q = 0; q < kTile; ++q) acc[r][q] = b0;
    }
    const float* window = staged + g * CP + tr * kTile * S * SP + tc * kTile * S;
#pragma unroll
    for (int j = 0; j < (kTile - 1) * S + K; ++j) {
      float v[4 * kVec];
      const kiln_rt_dw_f4* rp = reinterpret_cast<const kiln_rt_dw_f4*>(window + j * SP);
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        const kiln_rt_dw_f4 t = rp[q];
        v[4 * q] = t.x, v[4 * q + 1] = t.y, v[4 * q + 2] = t.z, v[4 * q + 3] = t.w;
      }
#pragma unroll
      for (int r = 0; r < kTile; ++r) {
        const int ky = j - r * S;  // a constant once unrolled
        if (ky < 0 || ky >= K) continue;
#pragma unroll
        for (int q = 0; q < kTile; ++q) {
#pragma unroll
          for (int kx = 0; kx < K; ++kx) acc[r][q] = fmaf(f[ky * K + kx], v[q * S + kx], acc[r][q]);
        }
      }
    }
    T* yp = y + img * yn + oc * yc;
#pragma unroll
    for (int r = 0; r < kTile; ++r) {
#pragma unroll
      for (int q = 0; q < kTile; ++q) {
        if (ty + r < oh && tx + q < ow) IO::store(yp + (ty + r) * yh + (tx + q) * yw, acc[r][q]);
      }
    }
  }
}
#define KILN_RT_DW_COLUMNS(name, IO, T, K, S, R) \
  extern "C" __global__ void __launch_bounds__(256) name(const T* __restrict__ x, const T* __restrict__ wt, \
                                                         const T* __restrict__ bias, T* __restrict__ y, \
                                                         kiln_rt_dw_args a) { \
    kiln_rt_dw<IO, T, K, S, R>(x, wt, bias, y, a); \
  }
#define KILN_RT_DW_NHWC(name, IO, T, K, S) \
  extern "C" __global__ void __launch_bounds__(256) name(const T* __restrict__ x, const T* __restrict__ wt, \
                                                         const T* __restrict__ bias, T* __restrict__ y, \
                                                         kiln_rt_dw_args a) { \
    kiln_rt_dw_nhwc<IO, T, K, S>(x, wt, bias, y, a); \
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

// The channels-last kernel's block: a band of tile rows and a band of
// tiles across, 16 channels, its staged window within
// kDepthwiseStagedFloats. Tiles are 4 x 4 outputs; a block takes at most
// 256 threads (one tile each) and as many tile rows as fit both limits.
struct NhwcBlocks {
  int band_tiles = 1, block_tiles_w = 1, row_bands = 1, col_bands = 1, staged_rows = 0, pitch = 0, channel_pitch = 0;
  int threads = 32;
  int64_t blocks = 0;
};

NhwcBlocks PlanNhwcBlocks(const ConvProblem& c) {
  constexpr int kTile = 4, kChannels = 16;
  const int k = static_cast<int>(c.kh), s = static_cast<int>(c.sh);
  const int tiles_w = static_cast<int>((c.ow + kTile - 1) / kTile), tiles_h = static_cast<int>((c.oh + kTile - 1) / kTile);
  const int vec = ((kTile - 1) * s + k + 3) / 4;
  NhwcBlocks b;
  auto size = [&] {
    b.staged_rows = (b.band_tiles * kTile - 1) * s + k;
    // The last tile's 16-byte loads end at (tiles - 1) * 4 * s + 4 * vec.
    b.pitch = (b.block_tiles_w - 1) * kTile * s + 4 * vec;
    // A multiple of 4 (16-byte loads) that is 4 more than one of 32.
    b.channel_pitch = (b.staged_rows * b.pitch + 31) / 32 * 32 + 4;
    return kChannels * b.channel_pitch <= kDepthwiseStagedFloats;
  };
  b.block_tiles_w = std::min(tiles_w, 256 / kChannels);
  while (!size() && b.block_tiles_w > 1) --b.block_tiles_w;
  b.band_tiles = std::clamp(256 / (kChannels * b.block_tiles_w), 1, tiles_h);
  while (!size() && b.band_tiles > 1) --b.band_tiles;
  b.row_bands = (tiles_h + b.band_tiles - 1) / b.band_tiles;
  b.col_bands = (tiles_w + b.block_tiles_w - 1) / b.block_tiles_w;
  b.threads = (kChannels * b.band_tiles * b.block_tiles_w + 31) / 32 * 32;
  b.blocks = c.n * ((c.cout + kChannels - 1) / kChannels) * b.row_bands * b.col_bands;
  return b;
}

// The kernels' templates (the body every unit starts with).
std::string Templates() {
  return absl::StrCat("#define KILN_RT_DW_STAGED ", kDepthwiseStagedFloats, "\n", kSource);
}

// The line that instantiates one kernel.
std::string Instance(int storage, int size, int stride, bool x_channels_last) {
  const std::string name = DepthwiseKernelName(storage, size, stride, x_channels_last);
  if (x_channels_last) {
    return absl::StrCat("KILN_RT_DW_NHWC(", name, ", ", kStorageIo[storage], ", ", size, ", ", stride, ")\n");
  }
  return absl::StrCat("KILN_RT_DW_COLUMNS(", name, ", ", kStorageIo[storage], ", ", size, ", ", stride, ", ",
                      StripRows(size, stride), ")\n");
}

}  // namespace

std::string DepthwiseKernelName(int storage, int size, int stride, bool x_channels_last) {
  return absl::StrCat("kiln_rt_depthwise", x_channels_last ? "_nhwc" : "", size, "x", size, "_s", stride, "_",
                      kStorageSuffix[storage]);
}

const std::string& DepthwiseKernelSource(int storage, int size_index, int stride_index, bool x_channels_last) {
  // One unit per storage type, filter size, stride and kernel: a program
  // compiles only the kernels it runs (each fully unrolled), in parallel
  // (PrefetchDepthwiseUnits).
  constexpr int kSizes = std::size(kDepthwiseSizes), kStrides = std::size(kDepthwiseStrides);
  static const std::vector<std::string>* units = [] {
    auto* u = new std::vector<std::string>();
    for (int t = 0; t < 3; ++t) {
      for (int k : kDepthwiseSizes) {
        for (int st : kDepthwiseStrides) {
          for (const bool nhwc : {false, true}) u->push_back(absl::StrCat(Templates(), Instance(t, k, st, nhwc)));
        }
      }
    }
    return u;
  }();
  return (*units)[static_cast<size_t>(((storage * kSizes + size_index) * kStrides + stride_index) * 2 +
                                      (x_channels_last ? 1 : 0))];
}

std::string AllDepthwiseKernelsSource() {
  std::string s = Templates();
  for (int t = 0; t < 3; ++t) {
    for (int k : kDepthwiseSizes) {
      for (int st : kDepthwiseStrides) {
        for (const bool nhwc : {false, true}) absl::StrAppend(&s, Instance(t, k, st, nhwc));
      }
    }
  }
  return s;
}

bool DepthwiseKernelTakes(const ConvProblem& c, bool channels_last) {
  if (env::DepthwiseKernelOff() || channels_last || c.spatial_dims != 2) return false;
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
  // norm's NHWC output): the channels-last kernel takes it.
  return c.x.layout.sizes.size() == 4 && c.y.layout.sizes.size() == 4 && Fits32Bits(c.x.layout) &&
         Fits32Bits(c.y.layout);
}

bool DepthwiseReadsChannelsLast(const ConvProblem& c) {
  return c.x.layout.strides.size() == 4 && c.x.layout.strides[1] == 1 && c.cin > 1;
}

DepthwiseLaunch PlanDepthwise(const ConvProblem& c) {
  DepthwiseLaunch l;
  l.x_channels_last = DepthwiseReadsChannelsLast(c);
  DepthwiseArgs& a = l.args;
  a.n = c.n, a.c = c.cout, a.h = c.h, a.w = c.w, a.oh = c.oh, a.ow = c.ow, a.ph = c.ph, a.pw = c.pw;
  a.mult = c.cout / c.cin;
  for (int d = 0; d < 4; ++d) {
    a.x_strides[d] = c.x.layout.strides[d];
    a.y_strides[d] = c.y.layout.strides[d];
  }
  a.has_bias = c.bias ? 1 : 0;
  if (l.x_channels_last) {
    const NhwcBlocks b = PlanNhwcBlocks(c);
    a.band_tiles = b.band_tiles, a.block_tiles_w = b.block_tiles_w, a.row_bands = b.row_bands;
    a.col_bands = b.col_bands, a.staged_rows = b.staged_rows, a.pitch = b.pitch, a.channel_pitch = b.channel_pitch;
    l.blocks = b.blocks, l.threads = b.threads;
  } else {
    // A grid-stride loop: the grid is capped, not the work.
    const int64_t rows = StripRows(c.kh, c.sh);
    l.blocks = std::min<int64_t>((c.n * c.cout * ((c.oh + rows - 1) / rows) * c.ow + 255) / 256, int64_t{1} << 30);
  }
  return l;
}

absl::Status PrefetchDepthwiseUnits(int device_index, const std::vector<ConvProblem>& problems) {
  std::set<std::tuple<int, int, int, bool>> units;  // storage, size, stride, x channels-last
  for (const ConvProblem& c : problems) {
    if (!DepthwiseKernelTakes(c, /*channels_last=*/false)) continue;
    units.emplace(RuntimeStorageIndex(c.x.layout.dtype), SizeIndex(c.kh), StrideIndex(c.sh),
                  DepthwiseReadsChannelsLast(c));
  }
  const std::vector<std::tuple<int, int, int, bool>> list(units.begin(), units.end());
  std::vector<absl::Status> results(list.size());
  ParallelFor(list.size(), list.size(), [&](size_t i) {
    const auto [storage, size, stride, nhwc] = list[i];
    results[i] = GetRuntimeFunction(device_index, DepthwiseKernelSource(storage, size, stride, nhwc),
                                    DepthwiseKernelName(storage, kDepthwiseSizes[size], kDepthwiseStrides[stride], nhwc))
                     .status();
  });
  for (const absl::Status& r : results) RETURN_IF_ERROR(r);
  return absl::OkStatus();
}

absl::Status LaunchDepthwise(const ConvProblem& c, int device_index, CUstream stream) {
  const int storage = RuntimeStorageIndex(c.x.layout.dtype), size = SizeIndex(c.kh), stride = StrideIndex(c.sh);
  DepthwiseLaunch l = PlanDepthwise(c);
  if (l.blocks <= 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(const CUfunction f,
                   GetRuntimeFunction(device_index, DepthwiseKernelSource(storage, size, stride, l.x_channels_last),
                                      DepthwiseKernelName(storage, kDepthwiseSizes[size], kDepthwiseStrides[stride],
                                                          l.x_channels_last)));
  const size_t elem = DTypeSize(c.x.layout.dtype);
  auto address = [&](const DeviceView& v) { return v.base + static_cast<CUdeviceptr>(v.layout.offset) * elem; };
  CUdeviceptr xp = address(c.x), wp = address(c.weight), yp = address(c.y);
  CUdeviceptr bp = c.bias ? address(*c.bias) : wp;  // unread without a bias
  std::vector<void*> params = {&xp, &wp, &bp, &yp, &l.args};
  const CudaDriverApi& d = LoadCudaLibraries().driver;
  return CuCheck(d.cuLaunchKernel(f, static_cast<unsigned>(l.blocks), 1, 1, static_cast<unsigned>(l.threads), 1, 1, 0,
                                  stream, params.data(), nullptr),
                 "cuLaunchKernel (depthwise convolution)");
}

}  // namespace kiln::backends::cuda
