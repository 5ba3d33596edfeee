#include "backends/cuda/conv_epilogue.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_loader.h"
#include "backends/cuda/runtime_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

using ir::PostOpKind;

// The kernel; its storage helpers (kiln_rt_f32, kiln_rt_f16) come earlier
// in the runtime kernels' unit. Unfused ops round to the narrow type after
// each op; here the chain runs in float and rounds once (closer to exact).
constexpr char kKernel[] = R"CUDA(
struct kiln_rt_epilogue_args {
  i64 sizes[4];
  i64 y_strides[4];
  i64 operand_strides[4][4];
  i64 bias_dim;
  i64 bias_inner;
  int dense;
  int operand_dense[4];
  int narrow_index;
  int vec4;
  int steps;
  int kinds[16];
  int first_scalar[16];
  int operand[16];
  float scalars[32];
};
__device__ __forceinline__ float kiln_rt_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
// One step without an operand (add / mul are applied by the callers).
__device__ __forceinline__ float kiln_rt_unary_step(int kind, const float* sc, float v) {
  switch (kind) {
    case KILN_PO_RELU: return v < 0.0f ? 0.0f : v;
    case KILN_PO_LEAKY_RELU: return v > 0.0f ? v : sc[0] * v;
    case KILN_PO_ELU: return v > 0.0f ? v : sc[0] * expm1f(v);
    case KILN_PO_SIGMOID: return kiln_rt_sigmoid(v);
    case KILN_PO_TANH: return tanhf(v);
    case KILN_PO_HARDSWISH: return v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    case KILN_PO_HARDSIGMOID: return fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f;
    case KILN_PO_SILU: return v * kiln_rt_sigmoid(v);
    case KILN_PO_GELU: return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case KILN_PO_GELU_TANH: return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    // NaN passes through the clamps, as PyTorch's.
    case KILN_PO_CLAMP: return v < sc[0] ? sc[0] : (v > sc[1] ? sc[1] : v);
    case KILN_PO_CLAMP_MIN: return v < sc[0] ? sc[0] : v;
    case KILN_PO_CLAMP_MAX: return v > sc[0] ? sc[0] : v;
    case KILN_PO_LINEAR: return sc[0] * v + sc[1];
    default: return v;
  }
}
// Four consecutive elements in one access (16 bytes of float, 8 of 16-bit).
template <typename T> struct alignas(4 * sizeof(T)) kiln_rt_vec4 { T v[4]; };
template <typename IO, typename T>
__device__ __forceinline__ void kiln_rt_load4(const T* p, float* out) {
  const kiln_rt_vec4<T> q = *reinterpret_cast<const kiln_rt_vec4<T>*>(p);
  for (int j = 0; j < 4; ++j) out[j] = IO::load(&q.v[j]);
}
template <typename IO, typename T>
__device__ __forceinline__ void kiln_rt_store4(T* p, const float* in) {
  kiln_rt_vec4<T> q;
  for (int j = 0; j < 4; ++j) IO::store(&q.v[j], in[j]);
  *reinterpret_cast<kiln_rt_vec4<T>*>(p) = q;
}
// I: the index type, unsigned when every offset fits 32 bits (a.narrow_index;
// 64-bit division costs several times more, per element).
template <typename IO, typename T, typename I>
__device__ void kiln_rt_epilogue_body(T* __restrict__ y, const T* __restrict__ bias, const T* __restrict__ o0,
                                      const T* __restrict__ o1, const T* __restrict__ o2, const T* __restrict__ o3,
                                      const kiln_rt_epilogue_args& a) {
  const T* ops[4] = {o0, o1, o2, o3};
  const I total = (I)(a.sizes[0] * a.sizes[1] * a.sizes[2] * a.sizes[3]);
  const I sizes[4] = {(I)a.sizes[0], (I)a.sizes[1], (I)a.sizes[2], (I)a.sizes[3]};
  const I first = blockIdx.x * (I)blockDim.x + threadIdx.x, step = (I)gridDim.x * blockDim.x;
  if (a.vec4) {
    // y and every operand packed in y's order and 4-element aligned, 4 | total.
    for (I g = first; g < total / 4; g += step) {
      const I i0 = g * 4;
      float v[4];
      kiln_rt_load4<IO>(y + i0, v);
      if (a.bias_dim >= 0) {
        for (int j = 0; j < 4; ++j) v[j] += IO::load(bias + ((i0 + j) / (I)a.bias_inner) % sizes[a.bias_dim]);
      }
      for (int s = 0; s < a.steps; ++s) {
        const int kind = a.kinds[s];
        if (kind == KILN_PO_ADD || kind == KILN_PO_MUL) {
          float t[4];
          kiln_rt_load4<IO>(ops[a.operand[s]] + i0, t);
          for (int j = 0; j < 4; ++j) v[j] = kind == KILN_PO_ADD ? v[j] + t[j] : v[j] * t[j];
        } else {
          const float* sc = a.scalars + a.first_scalar[s];
          for (int j = 0; j < 4; ++j) v[j] = kiln_rt_unary_step(kind, sc, v[j]);
        }
      }
      kiln_rt_store4<IO>(y + i0, v);
    }
    return;
  }
  for (I i = first; i < total; i += step) {
    // Dense y (the planned buffers: NCHW or NHWC, packed): element i is at
    // i, and so is a dense operand's; the per-dim index only for the rest.
    I idx[4] = {0, 0, 0, 0};
    I at = i;
    if (!a.dense) {
      I rem = i;
      for (int d = 3; d >= 0; --d) {
        idx[d] = rem % sizes[d];
        rem /= sizes[d];
      }
      at = 0;
      for (int d = 0; d < 4; ++d) at += idx[d] * (I)a.y_strides[d];
    }
    float v = IO::load(y + at);
    if (a.bias_dim >= 0) v += IO::load(bias + (i / (I)a.bias_inner) % sizes[a.bias_dim]);
    for (int s = 0; s < a.steps; ++s) {
      const int kind = a.kinds[s];
      if (kind != KILN_PO_ADD && kind != KILN_PO_MUL) {
        v = kiln_rt_unary_step(kind, a.scalars + a.first_scalar[s], v);
        continue;
      }
      const int k = a.operand[s];
      I o = i;
      if (!a.operand_dense[k]) {
        if (a.dense) {
          I rem = i;
          for (int d = 3; d >= 0; --d) {
            idx[d] = rem % sizes[d];
            rem /= sizes[d];
          }
        }
        o = 0;
        for (int d = 0; d < 4; ++d) o += idx[d] * (I)a.operand_strides[k][d];
      }
      const float t = IO::load(ops[k] + o);
      v = kind == KILN_PO_ADD ? v + t : v * t;
    }
    IO::store(y + at, v);
  }
}
template <typename IO, typename T>
__device__ void kiln_rt_epilogue(T* __restrict__ y, const T* __restrict__ bias, const T* __restrict__ o0,
                                 const T* __restrict__ o1, const T* __restrict__ o2, const T* __restrict__ o3,
                                 const kiln_rt_epilogue_args& a) {
  if (a.narrow_index) {
    kiln_rt_epilogue_body<IO, T, unsigned>(y, bias, o0, o1, o2, o3, a);
  } else {
    kiln_rt_epilogue_body<IO, T, i64>(y, bias, o0, o1, o2, o3, a);
  }
}
#define KILN_RT_EPILOGUE(name, IO, T) \
  extern "C" __global__ void __launch_bounds__(256) name(T* __restrict__ y, const T* __restrict__ bias, \
      const T* __restrict__ o0, const T* __restrict__ o1, const T* __restrict__ o2, const T* __restrict__ o3, \
      kiln_rt_epilogue_args a) { \
    kiln_rt_epilogue<IO>(y, bias, o0, o1, o2, o3, a); \
  }
KILN_RT_EPILOGUE(kiln_rt_epilogue_f32, kiln_rt_f32, float)
KILN_RT_EPILOGUE(kiln_rt_epilogue_f16, kiln_rt_f16<0>, unsigned short)
KILN_RT_EPILOGUE(kiln_rt_epilogue_bf16, kiln_rt_f16<1>, unsigned short)
)CUDA";

struct KindName {
  PostOpKind kind;
  const char* macro;
};
constexpr KindName kKinds[] = {
    {PostOpKind::kRelu, "KILN_PO_RELU"},           {PostOpKind::kLeakyRelu, "KILN_PO_LEAKY_RELU"},
    {PostOpKind::kElu, "KILN_PO_ELU"},             {PostOpKind::kSigmoid, "KILN_PO_SIGMOID"},
    {PostOpKind::kTanh, "KILN_PO_TANH"},           {PostOpKind::kHardswish, "KILN_PO_HARDSWISH"},
    {PostOpKind::kHardsigmoid, "KILN_PO_HARDSIGMOID"}, {PostOpKind::kSilu, "KILN_PO_SILU"},
    {PostOpKind::kGelu, "KILN_PO_GELU"},           {PostOpKind::kGeluTanh, "KILN_PO_GELU_TANH"},
    {PostOpKind::kClamp, "KILN_PO_CLAMP"},         {PostOpKind::kClampMin, "KILN_PO_CLAMP_MIN"},
    {PostOpKind::kClampMax, "KILN_PO_CLAMP_MAX"},  {PostOpKind::kLinear, "KILN_PO_LINEAR"},
    {PostOpKind::kAdd, "KILN_PO_ADD"},             {PostOpKind::kMul, "KILN_PO_MUL"},
};

bool FloatStorage(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

}  // namespace

const std::string& EpilogueKernelSource() {
  static const std::string* source = [] {
    auto* s = new std::string("\n");
    for (const KindName& k : kKinds) absl::StrAppend(s, "#define ", k.macro, " ", static_cast<int>(k.kind), "\n");
    absl::StrAppend(s, kKernel);
    return s;
  }();
  return *source;
}

std::optional<EpilogueArgs> MakeEpilogueArgs(const lowering::Layout& y, bool has_bias,
                                             const std::vector<ir::PostOp>& post,
                                             const std::vector<lowering::Layout>& operand_layouts) {
  const size_t rank = y.sizes.size();
  if ((rank != 3 && rank != 4) || y.strides.size() != rank || !FloatStorage(y.dtype)) return std::nullopt;
  if (post.size() > static_cast<size_t>(kEpilogueMaxSteps) ||
      operand_layouts.size() > static_cast<size_t>(kEpilogueMaxOperands)) {
    return std::nullopt;
  }
  // y as 4-D (a 1-D convolution's [N, C, W] gets H = 1 at dim 2).
  std::vector<int64_t> sizes = y.sizes, strides = y.strides;
  if (rank == 3) {
    sizes.insert(sizes.begin() + 2, 1);
    strides.insert(strides.begin() + 2, 0);
  }
  // Operands right-aligned against y's logical dims, broadcast at stride 0.
  std::vector<std::vector<int64_t>> op_strides;
  for (const lowering::Layout& l : operand_layouts) {
    if (l.dtype != y.dtype || l.sizes.size() > rank || l.strides.size() != l.sizes.size()) return std::nullopt;
    std::vector<int64_t> s(rank, 0);
    const size_t shift = rank - l.sizes.size();
    for (size_t d = 0; d < l.sizes.size(); ++d) {
      if (l.sizes[d] == 1) continue;
      if (l.sizes[d] != y.sizes[d + shift]) return std::nullopt;
      s[d + shift] = l.strides[d];
    }
    if (rank == 3) s.insert(s.begin() + 2, 0);
    op_strides.push_back(std::move(s));
  }
  // Iteration order: y's dims by decreasing stride (stable: NCHW stays NCHW,
  // channels-last iterates N, H, W, C).
  std::vector<int> order(4);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return strides[a] > strides[b]; });
  EpilogueArgs a = {};
  for (int d = 0; d < 4; ++d) {
    a.sizes[d] = sizes[static_cast<size_t>(order[d])];
    a.y_strides[d] = strides[static_cast<size_t>(order[d])];
    for (size_t k = 0; k < op_strides.size(); ++k) a.operand_strides[k][d] = op_strides[k][static_cast<size_t>(order[d])];
  }
  a.bias_dim = -1;
  a.bias_inner = 1;
  if (has_bias) {
    for (int d = 0; d < 4; ++d) {
      if (order[d] == 1) a.bias_dim = d;
    }
    for (int d = static_cast<int>(a.bias_dim) + 1; d < 4; ++d) a.bias_inner *= a.sizes[d];
  }
  // Packed in iteration order: the linear index is the offset (size-1 dims
  // have any stride).
  auto dense = [&](const long long* strides) {  // NOLINT(runtime/int)
    long long expect = 1;                       // NOLINT(runtime/int)
    for (int d = 3; d >= 0; --d) {
      if (a.sizes[d] != 1 && strides[d] != expect) return 0;
      expect *= a.sizes[d];
    }
    return 1;
  };
  a.dense = dense(a.y_strides);
  for (size_t k = 0; k < op_strides.size(); ++k) a.operand_dense[k] = a.dense && dense(a.operand_strides[k]);
  // Every index and offset below 2^31: 32-bit arithmetic (the grid-stride
  // step, at most 2^31 more, stays below 2^32).
  auto extent = [&](const long long* strides) {  // NOLINT(runtime/int)
    long long e = 0;                             // NOLINT(runtime/int)
    for (int d = 0; d < 4; ++d) e += (a.sizes[d] - 1) * strides[d];
    return e;
  };
  constexpr long long kLimit = (1LL << 31) - 1;  // NOLINT(runtime/int)
  bool narrow = a.sizes[0] * a.sizes[1] * a.sizes[2] * a.sizes[3] < kLimit && extent(a.y_strides) < kLimit;
  for (size_t k = 0; k < op_strides.size(); ++k) narrow = narrow && extent(a.operand_strides[k]) < kLimit;
  a.narrow_index = narrow ? 1 : 0;
  // Groups of 4 when y and every operand are packed alike (LaunchEpilogue
  // also needs the addresses aligned).
  bool vec4 = a.dense && (a.sizes[0] * a.sizes[1] * a.sizes[2] * a.sizes[3]) % 4 == 0;
  for (size_t k = 0; k < op_strides.size(); ++k) vec4 = vec4 && a.operand_dense[k];
  a.vec4 = vec4 ? 1 : 0;
  int scalar = 0;
  a.steps = static_cast<int>(post.size());
  for (size_t s = 0; s < post.size(); ++s) {
    const ir::PostOp& p = post[s];
    if (scalar + static_cast<int>(p.scalars.size()) > kEpilogueMaxScalars) return std::nullopt;
    if (ir::IsBinaryPostOp(p.kind) && (p.operand < 0 || static_cast<size_t>(p.operand) >= operand_layouts.size())) {
      return std::nullopt;
    }
    a.kinds[s] = static_cast<int>(p.kind);
    a.first_scalar[s] = scalar;
    a.operand[s] = ir::IsBinaryPostOp(p.kind) ? p.operand : -1;
    for (double v : p.scalars) a.scalars[scalar++] = static_cast<float>(v);
  }
  return a;
}

absl::Status LaunchEpilogue(const DeviceView& y, const std::optional<DeviceView>& bias,
                            const std::vector<DeviceView>& operands, const EpilogueArgs& args, int device_index,
                            CUstream stream) {
  const int64_t total = args.sizes[0] * args.sizes[1] * args.sizes[2] * args.sizes[3];
  if (total <= 0) return absl::OkStatus();
  const DType t = y.layout.dtype;
  const size_t elem = DTypeSize(t);
  auto address = [&](const DeviceView& v) { return v.base + static_cast<CUdeviceptr>(v.layout.offset) * elem; };
  CUdeviceptr yp = address(y), bp = bias ? address(*bias) : 0;
  CUdeviceptr op[kEpilogueMaxOperands] = {};
  for (size_t i = 0; i < operands.size() && i < static_cast<size_t>(kEpilogueMaxOperands); ++i) {
    op[i] = address(operands[i]);
  }
  EpilogueArgs a = args;
  const CUdeviceptr vector_bytes = static_cast<CUdeviceptr>(4 * elem);
  bool aligned = yp % vector_bytes == 0;
  for (size_t i = 0; i < operands.size() && i < static_cast<size_t>(kEpilogueMaxOperands); ++i) {
    aligned = aligned && op[i] % vector_bytes == 0;
  }
  if (!aligned) a.vec4 = 0;
  std::vector<void*> params = {&yp, &bp, &op[0], &op[1], &op[2], &op[3], &a};
  const int storage = RuntimeStorageIndex(t);
  if (storage < 0) return absl::InvalidArgumentError("conv epilogue: no kernel for this storage type");
  const char* const names[3] = {"kiln_rt_epilogue_f32", "kiln_rt_epilogue_f16", "kiln_rt_epilogue_bf16"};
  ASSIGN_OR_RETURN(const CUfunction f, GetRuntimeFunction(device_index, EpilogueKernelSource(), names[storage]));
  const int64_t work = a.vec4 ? total / 4 : total;  // elements or groups of 4
  const unsigned blocks = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((work + 255) / 256, 132 * 64)));
  return CuCheck(LoadCudaLibraries().driver.cuLaunchKernel(f, blocks, 1, 1, 256, 1, 1, 0, stream, params.data(), nullptr),
                 "cuLaunchKernel (conv epilogue)");
}

}  // namespace kiln::backends::cuda
