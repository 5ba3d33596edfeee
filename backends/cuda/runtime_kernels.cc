#include "backends/cuda/runtime_kernels.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cubin_cache.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_loader.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

// What every unit starts with: the index type and the storage helpers
// (float32, float16 and bfloat16 loads and stores with float math).
constexpr char kPrelude[] = R"CUDA(
typedef long long i64;
__device__ __forceinline__ float kiln_rt_load(const float* p) { return *p; }
__device__ __forceinline__ void kiln_rt_store(float* p, float v) { *p = v; }
__device__ __forceinline__ float kiln_rt_load(const unsigned short* p, int bf16) {
  if (bf16) return __uint_as_float(static_cast<unsigned>(*p) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
  return f;
}
__device__ __forceinline__ void kiln_rt_store(unsigned short* p, float f, int bf16) {
  if (bf16) {
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      *p = static_cast<unsigned short>((u >> 16) | 0x40u);
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    *p = static_cast<unsigned short>(u >> 16);
    return;
  }
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  *p = h;
}
struct kiln_rt_f32 {
  static __device__ float load(const float* p) { return *p; }
  static __device__ void store(float* p, float v) { *p = v; }
};
template <int kBf16> struct kiln_rt_f16 {
  static __device__ float load(const unsigned short* p) { return kiln_rt_load(p, kBf16); }
  static __device__ void store(unsigned short* p, float v) { kiln_rt_store(p, v, kBf16); }
};

)CUDA";

// The base unit. 64-bit indices throughout: activations of large batches
// pass 2^31.
constexpr char kSource[] = R"CUDA(

extern "C" __global__ void __launch_bounds__(256) kiln_rt_im2col(
    const float* __restrict__ x, float* __restrict__ cols, i64 n, i64 image_stride, i64 c, i64 h, i64 w,
    i64 kh, i64 kw, i64 oh, i64 ow, i64 sh, i64 sw, i64 ph, i64 pw, i64 dh, i64 dw) {
  const i64 spatial = oh * ow, rows = c * kh * kw, total = n * rows * spatial;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    const i64 s = i % spatial, r = (i / spatial) % rows, img = i / (spatial * rows);
    const i64 ox = s % ow, oy = s / ow;
    const i64 kx = r % kw, ky = (r / kw) % kh, ch = r / (kw * kh);
    const i64 iy = oy * sh - ph + ky * dh, ix = ox * sw - pw + kx * dw;
    float v = 0.0f;
    if (iy >= 0 && iy < h && ix >= 0 && ix < w) v = x[img * image_stride + (ch * h + iy) * w + ix];
    cols[i] = v;
  }
}

extern "C" __global__ void __launch_bounds__(256) kiln_rt_depthwise(
    const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias,
    float* __restrict__ y, i64 n, i64 cin, i64 cout, i64 h, i64 w, i64 kh, i64 kw, i64 oh, i64 ow,
    i64 sh, i64 sw, i64 ph, i64 pw, i64 dh, i64 dw) {
  const i64 total = n * cout * oh * ow, mult = cout / cin;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    const i64 ox = i % ow, oy = (i / ow) % oh, oc = (i / (ow * oh)) % cout, img = i / (ow * oh * cout);
    const float* xp = x + (img * cin + oc / mult) * h * w;
    const float* wp = wt + oc * kh * kw;
    float acc = bias != nullptr ? bias[oc] : 0.0f;
    for (i64 ky = 0; ky < kh; ++ky) {
      const i64 iy = oy * sh - ph + ky * dh;
      if (iy < 0 || iy >= h) continue;
      for (i64 kx = 0; kx < kw; ++kx) {
        const i64 ix = ox * sw - pw + kx * dw;
        if (ix >= 0 && ix < w) acc = fmaf(wp[ky * kw + kx], xp[iy * w + ix], acc);
      }
    }
    y[i] = acc;
  }
}

// out[r][c] = table[index[r]][c] over rows of `row_words` words; a
// negative index counts from the end, one out of range gives zeros (the
// device cannot report it; the host path raises).
template <typename Word, typename Index>
__device__ void kiln_rt_gather(const Word* __restrict__ table, const Index* __restrict__ index, Word* __restrict__ out,
                               i64 n, i64 rows, i64 row_words) {
  const i64 total = n * row_words;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    const i64 r = i / row_words, c = i - r * row_words;
    i64 j = (i64)index[r];
    if (j < 0) j += rows;
    out[i] = (j >= 0 && j < rows) ? table[j * row_words + c] : Word(0);
  }
}

extern "C" __global__ void __launch_bounds__(256) kiln_rt_gather_u32_i64(
    const unsigned* __restrict__ table, const long long* __restrict__ index, unsigned* __restrict__ out, i64 n,
    i64 rows, i64 row_words) {
  kiln_rt_gather(table, index, out, n, rows, row_words);
}
extern "C" __global__ void __launch_bounds__(256) kiln_rt_gather_u32_i32(
    const unsigned* __restrict__ table, const int* __restrict__ index, unsigned* __restrict__ out, i64 n,
    i64 rows, i64 row_words) {
  kiln_rt_gather(table, index, out, n, rows, row_words);
}
extern "C" __global__ void __launch_bounds__(256) kiln_rt_gather_u8_i64(
    const unsigned char* __restrict__ table, const long long* __restrict__ index, unsigned char* __restrict__ out,
    i64 n, i64 rows, i64 row_words) {
  kiln_rt_gather(table, index, out, n, rows, row_words);
}
extern "C" __global__ void __launch_bounds__(256) kiln_rt_gather_u8_i32(
    const unsigned char* __restrict__ table, const int* __restrict__ index, unsigned char* __restrict__ out, i64 n,
    i64 rows, i64 row_words) {
  kiln_rt_gather(table, index, out, n, rows, row_words);
}

// dst[i] = src at the i-th index (row-major over `sizes`) of a strided view.
struct kiln_rt_strided {
  long long sizes[8];
  long long strides[8];
  int rank;
};
// Units of 16 bytes (8 half/bfloat16, 4 float): one vector access each.
struct alignas(16) kiln_rt_u128 { unsigned long long lo, hi; };
template <typename T, typename I>
__device__ void kiln_rt_copy_walk(const T* __restrict__ src, T* __restrict__ dst, const kiln_rt_strided& v, I n) {
  for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
    I rem = i;
    i64 at = 0;
    for (int d = v.rank - 1; d >= 0; --d) {
      const I size = (I)v.sizes[d];
      at += (i64)(rem % size) * v.strides[d];
      rem /= size;
    }
    dst[i] = src[at];
  }
}
// Below 2^31 units the unravel divides in 32 bits (a 64-bit division by a
// runtime value is a ~70-instruction routine).
template <typename T>
__device__ void kiln_rt_copy(const T* __restrict__ src, T* __restrict__ dst, kiln_rt_strided v, i64 n) {
  if (n < (1LL << 31)) {
    kiln_rt_copy_walk<T, unsigned>(src, dst, v, (unsigned)n);
  } else {
    kiln_rt_copy_walk<T, i64>(src, dst, v, n);
  }
}
extern "C" __global__ void __launch_bounds__(256) kiln_rt_copy_u16(
    const unsigned short* __restrict__ src, unsigned short* __restrict__ dst, kiln_rt_strided v, i64 n) {
  kiln_rt_copy(src, dst, v, n);
}
extern "C" __global__ void __launch_bounds__(256) kiln_rt_copy_u32(
    const unsigned* __restrict__ src, unsigned* __restrict__ dst, kiln_rt_strided v, i64 n) {
  kiln_rt_copy(src, dst, v, n);
}
extern "C" __global__ void __launch_bounds__(256) kiln_rt_copy_u64(
    const unsigned long long* __restrict__ src, unsigned long long* __restrict__ dst, kiln_rt_strided v, i64 n) {
  kiln_rt_copy(src, dst, v, n);
}
extern "C" __global__ void __launch_bounds__(256) kiln_rt_copy_u128(
    const kiln_rt_u128* __restrict__ src, kiln_rt_u128* __restrict__ dst, kiln_rt_strided v, i64 n) {
  kiln_rt_copy(src, dst, v, n);
}

// 2-D pooling (PoolArgs of runtime_kernels.h, passed by value) over float,
// half and bfloat16 storage with float math.
struct kiln_rt_pool_args {
  i64 n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  i64 x_strides[4];
  int count_include_pad;
  i64 divisor;
  int y_channels_last;
};
template <typename IO, typename T>
__device__ void kiln_rt_pool(const T* __restrict__ x, T* __restrict__ y, const kiln_rt_pool_args& a, bool is_max) {
  const i64 total = a.n * a.c * a.oh * a.ow;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    // y packed NCHW, or NHWC (channels_last_plan.h): element i of y in its memory order.
    i64 ox, oy, ch, img;
    if (a.y_channels_last) {
      ch = i % a.c, ox = (i / a.c) % a.ow, oy = (i / (a.c * a.ow)) % a.oh, img = i / (a.c * a.ow * a.oh);
    } else {
      ox = i % a.ow, oy = (i / a.ow) % a.oh, ch = (i / (a.ow * a.oh)) % a.c, img = i / (a.ow * a.oh * a.c);
    }
    const T* xp = x + img * a.x_strides[0] + ch * a.x_strides[1];
    const i64 y0 = oy * a.sh - a.ph, x0 = ox * a.sw - a.pw;
    if (is_max) {
      float m = -__int_as_float(0x7f800000);
      for (i64 ky = 0; ky < a.kh; ++ky) {
        const i64 iy = y0 + ky * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (i64 kx = 0; kx < a.kw; ++kx) {
          const i64 ix = x0 + kx * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          const float v = IO::load(xp + iy * a.x_strides[2] + ix * a.x_strides[3]);
          if (v > m || v != v) m = v;
        }
      }
      IO::store(y + i, m);
    } else {
      // PyTorch's windows: clipped to the padded input, then to the input.
      i64 hs = y0, ws = x0;
      i64 he = hs + a.kh < a.h + a.ph ? hs + a.kh : a.h + a.ph;
      i64 we = ws + a.kw < a.w + a.pw ? ws + a.kw : a.w + a.pw;
      const i64 pool = (he - hs) * (we - ws);
      hs = hs > 0 ? hs : 0;
      ws = ws > 0 ? ws : 0;
      he = he < a.h ? he : a.h;
      we = we < a.w ? we : a.w;
      float sum = 0.0f;
      for (i64 iy = hs; iy < he; ++iy) {
        for (i64 ix = ws; ix < we; ++ix) sum += IO::load(xp + iy * a.x_strides[2] + ix * a.x_strides[3]);
      }
      const i64 count = a.divisor != 0 ? a.divisor : (a.count_include_pad ? pool : (he - hs) * (we - ws));
      IO::store(y + i, count > 0 ? sum / (float)count : 0.0f);
    }
  }
}

#define KILN_RT_POOL(name, IO, T, is_max) \
  extern "C" __global__ void __launch_bounds__(256) name(const T* __restrict__ x, T* __restrict__ y, \
                                                         kiln_rt_pool_args a) { \
    kiln_rt_pool<IO>(x, y, a, is_max); \
  }
KILN_RT_POOL(kiln_rt_max_pool2d_f32, kiln_rt_f32, float, true)
KILN_RT_POOL(kiln_rt_max_pool2d_f16, kiln_rt_f16<0>, unsigned short, true)
KILN_RT_POOL(kiln_rt_max_pool2d_bf16, kiln_rt_f16<1>, unsigned short, true)
KILN_RT_POOL(kiln_rt_avg_pool2d_f32, kiln_rt_f32, float, false)
KILN_RT_POOL(kiln_rt_avg_pool2d_f16, kiln_rt_f16<0>, unsigned short, false)
KILN_RT_POOL(kiln_rt_avg_pool2d_bf16, kiln_rt_f16<1>, unsigned short, false)

extern "C" __global__ void __launch_bounds__(256) kiln_rt_fill_bias(
    float* __restrict__ y, const float* __restrict__ bias, i64 total, i64 channels, i64 hw) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    y[i] = bias[(i / hw) % channels];
  }
}
)CUDA";

// One unit on one device: its module (kept for the life of the process)
// and the functions looked up so far.
struct LoadedUnit {
  std::mutex mu;  // held while it loads and while its functions are looked up
  bool loaded = false;
  absl::Status status;
  CUmodule module = nullptr;
  std::map<std::string, CUfunction> functions;
};

absl::Status LoadUnit(int index, const std::string& body, LoadedUnit& unit) {
  CudaDevice device;
  ASSIGN_OR_RETURN(devices::DeviceProperties p, device.GetDeviceProperties(index));
  ASSIGN_OR_RETURN(std::string identity, NvrtcIdentity());
  ASSIGN_OR_RETURN(std::string cache_dir, CacheDirectory("cuda"));
  CubinCache cache(std::move(cache_dir), identity, CompileWithNvrtc);
  ASSIGN_OR_RETURN(CubinEntry entry, cache.GetOrCompile(absl::StrCat(kPrelude, body),
                                                        {absl::StrCat("--gpu-architecture=sm_", p.major, p.minor),
                                                         "-std=c++17"}));
  RETURN_IF_ERROR(device.MakeCurrent(index));
  return CuCheck(LoadCudaLibraries().driver.cuModuleLoadData(&unit.module, entry.cubin.data()),
                 "cuModuleLoadData (runtime kernels)");
}

}  // namespace

int RuntimeStorageIndex(DType t) {
  switch (t) {
    case DType::kFloat32: return 0;
    case DType::kFloat16: return 1;
    case DType::kBFloat16: return 2;
    default: return -1;
  }
}

const std::string& RuntimeKernelPrelude() {
  static const std::string* prelude = new std::string(kPrelude);
  return *prelude;
}

const std::string& RuntimeKernelSource() {
  static const std::string* source = new std::string(kSource);
  return *source;
}

absl::StatusOr<CUfunction> GetRuntimeFunction(int device_index, const std::string& body, const std::string& name) {
  // The map under one lock; each unit loads under its own, so that
  // different units compile concurrently (PrefetchDepthwiseUnits).
  static std::mutex mu;
  static auto* units = new std::map<std::pair<int, const std::string*>, std::unique_ptr<LoadedUnit>>();
  LoadedUnit* unit = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    std::unique_ptr<LoadedUnit>& u = (*units)[{device_index, &body}];
    if (u == nullptr) u = std::make_unique<LoadedUnit>();
    unit = u.get();
  }
  std::lock_guard<std::mutex> lock(unit->mu);
  if (!unit->loaded) {
    unit->status = LoadUnit(device_index, body, *unit);
    unit->loaded = true;
  }
  RETURN_IF_ERROR(unit->status);
  auto it = unit->functions.find(name);
  if (it != unit->functions.end()) return it->second;
  CUfunction f = nullptr;
  RETURN_IF_ERROR(CuCheck(LoadCudaLibraries().driver.cuModuleGetFunction(&f, unit->module, name.c_str()), name.c_str()));
  unit->functions.emplace(name, f);
  return f;
}

absl::StatusOr<ContiguousCopyPlan> PlanContiguousCopy(const lowering::Layout& l, CUdeviceptr src, CUdeviceptr dst) {
  const int64_t elem = static_cast<int64_t>(DTypeSize(l.dtype));
  if ((elem != 2 && elem != 4 && elem != 8) || l.sizes.size() != l.strides.size()) {
    return absl::UnimplementedError("copy to contiguous: element size or layout not handled");
  }
  // Size-1 dims dropped, dims a row-major walk crosses as one merged.
  std::vector<int64_t> sizes, strides;
  int64_t n = 1;
  for (size_t d = 0; d < l.sizes.size(); ++d) {
    n *= l.sizes[d];
    if (l.sizes[d] == 1) continue;
    if (!sizes.empty() && strides.back() == l.strides[d] * l.sizes[d]) {
      sizes.back() *= l.sizes[d];
      strides.back() = l.strides[d];
      continue;
    }
    sizes.push_back(l.sizes[d]);
    strides.push_back(l.strides[d]);
  }
  if (sizes.empty()) {
    sizes.push_back(1);
    strides.push_back(1);
  }
  if (sizes.size() > 8) return absl::UnimplementedError("copy to contiguous: more than 8 dims after merging");
  ContiguousCopyPlan plan;
  plan.src = src + static_cast<CUdeviceptr>(l.offset * elem);
  // Elements per unit: the widest (up to 16 bytes) that divides the
  // innermost dim (unit stride) and every other stride, with both
  // addresses aligned to it.
  int64_t per_unit = 1;
  if (strides.back() == 1) {
    for (int64_t v = 16 / elem; v > 1; v /= 2) {
      bool ok = sizes.back() % v == 0 && plan.src % static_cast<CUdeviceptr>(v * elem) == 0 &&
                dst % static_cast<CUdeviceptr>(v * elem) == 0;
      for (size_t d = 0; ok && d + 1 < strides.size(); ++d) ok = strides[d] % v == 0;
      if (ok) {
        per_unit = v;
        break;
      }
    }
  }
  plan.unit_bytes = static_cast<int>(per_unit * elem);
  plan.units = n / per_unit;
  plan.view = StridedView{};
  plan.view.rank = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    const bool inner = d + 1 == sizes.size();
    plan.view.sizes[d] = inner ? sizes[d] / per_unit : sizes[d];
    plan.view.strides[d] = inner ? strides[d] : strides[d] / per_unit;
  }
  return plan;
}

absl::StatusOr<CUdeviceptr> CopyToContiguous(const DeviceView& view, int device_index, CUstream stream,
                                             const std::function<absl::StatusOr<CUdeviceptr>(int64_t)>& allocate) {
  const lowering::Layout& l = view.layout;
  int64_t n = 1;
  for (int64_t s : l.sizes) n *= s;
  const int64_t elem = static_cast<int64_t>(DTypeSize(l.dtype));
  ASSIGN_OR_RETURN(CUdeviceptr dst, allocate(std::max<int64_t>(n, 1) * elem));
  if (n == 0) return dst;
  ASSIGN_OR_RETURN(ContiguousCopyPlan plan, PlanContiguousCopy(l, view.base, dst));
  ASSIGN_OR_RETURN(const RuntimeKernels* k, GetRuntimeKernels(device_index));
  const int which = plan.unit_bytes == 2 ? 0 : plan.unit_bytes == 4 ? 1 : plan.unit_bytes == 8 ? 2 : 3;
  CUdeviceptr src = plan.src;
  int64_t count = plan.units;
  std::vector<void*> params = {&src, &dst, &plan.view, &count};
  const unsigned blocks =
      static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((count + 255) / 256, 132 * 64)));
  RETURN_IF_ERROR(CuCheck(LoadCudaLibraries().driver.cuLaunchKernel(k->copy[which], blocks, 1, 1, 256, 1, 1, 0, stream,
                                                                    params.data(), nullptr),
                          "cuLaunchKernel (copy to contiguous)"));
  return dst;
}

absl::StatusOr<const RuntimeKernels*> GetRuntimeKernels(int index) {
  static std::mutex mu;
  static auto* loaded = new std::map<int, std::unique_ptr<absl::StatusOr<RuntimeKernels>>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<absl::StatusOr<RuntimeKernels>>& l = (*loaded)[index];
  if (l == nullptr) {
    l = std::make_unique<absl::StatusOr<RuntimeKernels>>([&]() -> absl::StatusOr<RuntimeKernels> {
      RuntimeKernels k;
      auto get = [&](CUfunction& f, const char* name) -> absl::Status {
        ASSIGN_OR_RETURN(f, GetRuntimeFunction(index, RuntimeKernelSource(), name));
        return absl::OkStatus();
      };
      RETURN_IF_ERROR(get(k.im2col, "kiln_rt_im2col"));
      RETURN_IF_ERROR(get(k.depthwise, "kiln_rt_depthwise"));
      RETURN_IF_ERROR(get(k.fill_bias, "kiln_rt_fill_bias"));
      const char* const pools[2][3] = {{"kiln_rt_max_pool2d_f32", "kiln_rt_max_pool2d_f16", "kiln_rt_max_pool2d_bf16"},
                                       {"kiln_rt_avg_pool2d_f32", "kiln_rt_avg_pool2d_f16", "kiln_rt_avg_pool2d_bf16"}};
      for (int t = 0; t < 3; ++t) {
        RETURN_IF_ERROR(get(k.max_pool2d[t], pools[0][t]));
        RETURN_IF_ERROR(get(k.avg_pool2d[t], pools[1][t]));
      }
      const char* const copies[4] = {"kiln_rt_copy_u16", "kiln_rt_copy_u32", "kiln_rt_copy_u64", "kiln_rt_copy_u128"};
      for (int i = 0; i < 4; ++i) RETURN_IF_ERROR(get(k.copy[i], copies[i]));
      RETURN_IF_ERROR(get(k.gather[0][0], "kiln_rt_gather_u32_i64"));
      RETURN_IF_ERROR(get(k.gather[0][1], "kiln_rt_gather_u32_i32"));
      RETURN_IF_ERROR(get(k.gather[1][0], "kiln_rt_gather_u8_i64"));
      RETURN_IF_ERROR(get(k.gather[1][1], "kiln_rt_gather_u8_i32"));
      return k;
    }());
  }
  RETURN_IF_ERROR(l->status());
  return &**l;
}

}  // namespace kiln::backends::cuda
