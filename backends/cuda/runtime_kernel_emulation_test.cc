// The runtime's own convolution-epilogue and copy (transpose) kernels,
// checked without a GPU: their CUDA source compiled as host C++ against
// kernel_emulation.h and run over channels-last and NCHW buffers, against
// the interpreter's post-op semantics (runtime::nn::ApplyPostOps). float16
// storage is not emulated (its conversions are PTX; the GPU test covers it).
// Also the output difference's partial sums (output_difference.h).
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/conv_epilogue.h"
#include "backends/cuda/depthwise_conv.h"
#include "backends/cuda/kernel_emulation.h"
#include "backends/cuda/output_difference.h"
#include "backends/cuda/runtime_kernels.h"
#include "gtest/gtest.h"
#include "runtime/kernels.h"
#include "runtime/kernels_nn.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::backends::cuda {
namespace {

using ir::PostOp;
using ir::PostOpKind;
using lowering::Layout;

constexpr char kLaunchers[] = R"CC(
extern "C" void emu_epilogue(int bf16, void* y, const void* b, const void* const* o, const void* args,
                             long long grid, int block) {
  const kiln_rt_epilogue_args& a = *static_cast<const kiln_rt_epilogue_args*>(args);
  if (bf16) {
    typedef unsigned short u16;
    kiln_run_grid(grid, block, [&] {
      kiln_rt_epilogue_bf16((u16*)y, (const u16*)b, (const u16*)o[0], (const u16*)o[1], (const u16*)o[2],
                            (const u16*)o[3], a);
    });
  } else {
    kiln_run_grid(grid, block, [&] {
      kiln_rt_epilogue_f32((float*)y, (const float*)b, (const float*)o[0], (const float*)o[1], (const float*)o[2],
                           (const float*)o[3], a);
    });
  }
}
extern "C" void emu_difference(int bf16, const void* a, const void* b, long long n, double* partials,
                               long long grid) {
  kiln_run_grid(grid, 256, [&] {
    if (bf16) {
      kiln_rt_difference_bf16((const unsigned short*)a, (const unsigned short*)b, n, partials);
    } else {
      kiln_rt_difference_f32((const float*)a, (const float*)b, n, partials);
    }
  });
}
extern "C" void emu_pool(int is_max, const float* x, float* y, const void* args, long long grid, int block) {
  const kiln_rt_pool_args& a = *static_cast<const kiln_rt_pool_args*>(args);
  kiln_run_grid(grid, block, [&] {
    if (is_max) kiln_rt_max_pool2d_f32(x, y, a); else kiln_rt_avg_pool2d_f32(x, y, a);
  });
}
extern "C" void emu_depthwise(int bf16, int nhwc, int k, int s, const void* x, const void* w, const void* b, void* y,
                              const void* args, long long grid, int block) {
  const kiln_rt_dw_args& a = *static_cast<const kiln_rt_dw_args*>(args);
  typedef unsigned short u16;
#define EMU_DW_CALL(name, T) name((const T*)x, (const T*)w, (const T*)b, (T*)y, a)
#define EMU_DW(K, S)                                                                                  \
  if (k == K && s == S) {                                                                             \
    kiln_run_grid(grid, block, [&] {                                                                  \
      if (bf16 && nhwc) EMU_DW_CALL(kiln_rt_depthwise_nhwc##K##x##K##_s##S##_bf16, u16);              \
      if (bf16 && !nhwc) EMU_DW_CALL(kiln_rt_depthwise##K##x##K##_s##S##_bf16, u16);                  \
      if (!bf16 && nhwc) EMU_DW_CALL(kiln_rt_depthwise_nhwc##K##x##K##_s##S##_f32, float);            \
      if (!bf16 && !nhwc) EMU_DW_CALL(kiln_rt_depthwise##K##x##K##_s##S##_f32, float);                \
    });                                                                                               \
    return;                                                                                           \
  }
  EMU_DW(3, 1) EMU_DW(3, 2) EMU_DW(5, 1) EMU_DW(5, 2) EMU_DW(7, 1) EMU_DW(7, 2)
  abort();
}
extern "C" void emu_copy_u32(const void* src, void* dst, const void* view, long long n, long long grid, int block) {
  const kiln_rt_strided& v = *static_cast<const kiln_rt_strided*>(view);
  kiln_run_grid(grid, block, [&] { kiln_rt_copy_u32((const unsigned*)src, (unsigned*)dst, v, n); });
}
extern "C" void emu_copy_u128(const void* src, void* dst, const void* view, long long n, long long grid, int block) {
  const kiln_rt_strided& v = *static_cast<const kiln_rt_strided*>(view);
  kiln_run_grid(grid, block, [&] { kiln_rt_copy_u128((const kiln_rt_u128*)src, (kiln_rt_u128*)dst, v, n); });
}
)CC";

class RuntimeEmulator {
 public:
  absl::Status Build() {
    std::string src = absl::StrCat(RuntimeKernelPrelude(), RuntimeKernelSource(), EpilogueKernelSource(),
                                   AllDepthwiseKernelsSource(), DifferenceKernelSource());
    // float16's PTX conversions have no host form: those paths abort.
    const std::pair<std::string, std::string> ptx[] = {
        {R"(asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));)", "abort(); f = 0;"},
        {R"(asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));)", "abort(); h = 0;"}};
    for (const auto& [from, to] : ptx) {
      const size_t at = src.find(from);
      if (at == std::string::npos) return absl::InternalError("runtime kernels: PTX conversion not found");
      src.replace(at, from.size(), to);
    }
    const std::string tu = absl::StrCat(kEmulation, "#include <stdlib.h>\n", src, kLaunchers);
    const char* tmp = std::getenv("TEST_TMPDIR");
    const std::string dir = tmp != nullptr ? tmp : "/tmp";
    const std::string file = dir + "/kiln_runtime_emulation.cc", lib = dir + "/kiln_runtime_emulation.so";
    std::ofstream(file) << tu;
    const std::string cmd = absl::StrCat("g++ -std=c++17 -O1 -w -shared -fPIC -o ", lib, " ", file, " 2>&1");
    if (std::system(cmd.c_str()) != 0) return absl::InternalError("g++ failed on " + file);
    handle_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return absl::InternalError(dlerror());
    epilogue_ = reinterpret_cast<EpilogueFn>(dlsym(handle_, "emu_epilogue"));
    copy_ = reinterpret_cast<CopyFn>(dlsym(handle_, "emu_copy_u32"));
    copy128_ = reinterpret_cast<CopyFn>(dlsym(handle_, "emu_copy_u128"));
    pool_ = reinterpret_cast<PoolFn>(dlsym(handle_, "emu_pool"));
    depthwise_ = reinterpret_cast<DepthwiseFn>(dlsym(handle_, "emu_depthwise"));
    difference_ = reinterpret_cast<DifferenceFn>(dlsym(handle_, "emu_difference"));
    if (epilogue_ == nullptr || copy_ == nullptr || copy128_ == nullptr || pool_ == nullptr || depthwise_ == nullptr ||
        difference_ == nullptr) {
      return absl::InternalError("launchers not found");
    }
    return absl::OkStatus();
  }
  using EpilogueFn = void (*)(int, void*, const void*, const void* const*, const void*, long long, int);
  using CopyFn = void (*)(const void*, void*, const void*, long long, long long, int);
  using PoolFn = void (*)(int, const float*, float*, const void*, long long, int);
  using DepthwiseFn = void (*)(int, int, int, int, const void*, const void*, const void*, void*, const void*, long long,
                               int);
  EpilogueFn epilogue_ = nullptr;
  CopyFn copy_ = nullptr;
  CopyFn copy128_ = nullptr;
  PoolFn pool_ = nullptr;
  DepthwiseFn depthwise_ = nullptr;
  using DifferenceFn = void (*)(int, const void*, const void*, long long, double*, long long);
  DifferenceFn difference_ = nullptr;

 private:
  void* handle_ = nullptr;
};

RuntimeEmulator* Emulator() {
  static RuntimeEmulator* e = [] {
    auto* r = new RuntimeEmulator();
    absl::Status s = r->Build();
    if (!s.ok()) {
      ADD_FAILURE() << s;
      delete r;
      return static_cast<RuntimeEmulator*>(nullptr);
    }
    return r;
  }();
  return e;
}

Tensor RandomFloats(const std::vector<int64_t>& sizes, uint32_t seed) {
  Tensor t = Tensor::Empty(DType::kFloat32, sizes);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// Storage for `logical` (contiguous float32 of l.sizes) laid out as `l`
// (float32 or bfloat16 words).
std::vector<uint32_t> Store(const Tensor& logical, const Layout& l) {
  std::vector<uint32_t> words(static_cast<size_t>(std::max<int64_t>(l.StorageElements(), 1)), 0);
  Tensor strided = Tensor::View(logical, l.sizes, Tensor::ContiguousStrides(l.sizes), 0);
  const int64_t n = logical.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, at = l.offset;
    for (size_t d = l.sizes.size(); d-- > 0;) {
      at += (rem % l.sizes[d]) * l.strides[d];
      rem /= l.sizes[d];
    }
    const float v = strided.data<float>()[i];
    if (l.dtype == DType::kBFloat16) {
      reinterpret_cast<uint16_t*>(words.data())[at] = DoubleToBFloat16Bits(v);
    } else {
      std::memcpy(&words[static_cast<size_t>(at)], &v, 4);
    }
  }
  return words;
}

float Load(const std::vector<uint32_t>& words, const Layout& l, int64_t logical_index) {
  int64_t rem = logical_index, at = l.offset;
  for (size_t d = l.sizes.size(); d-- > 0;) {
    at += (rem % l.sizes[d]) * l.strides[d];
    rem /= l.sizes[d];
  }
  if (l.dtype == DType::kBFloat16) return BFloat16BitsToFloat(reinterpret_cast<const uint16_t*>(words.data())[at]);
  float v;
  std::memcpy(&v, &words[static_cast<size_t>(at)], 4);
  return v;
}

// Logical values rounded to the storage type (the reference's inputs).
Tensor Rounded(const Tensor& t, DType dtype) {
  if (dtype == DType::kFloat32) return t;
  Tensor r = Tensor::Empty(DType::kFloat32, t.sizes());
  for (int64_t i = 0; i < t.numel(); ++i) {
    r.data<float>()[i] = BFloat16BitsToFloat(DoubleToBFloat16Bits(t.data<float>()[i]));
  }
  return r;
}

PostOp Op(PostOpKind k, std::vector<double> scalars = {}, int operand = -1) {
  PostOp p;
  p.kind = k;
  p.scalars = std::move(scalars);
  p.operand = operand;
  return p;
}

struct EpilogueCase {
  std::string name;
  DType dtype;
  std::vector<int64_t> sizes;
  bool y_channels_last;
  bool operand_channels_last;  // operand 0's layout (full size)
  std::vector<PostOp> post;
  // y as channels [1, 1 + C) of a wider NCHW buffer (not packed: the kernel's general path).
  bool y_slice = false;
  bool vec4 = false;  // expected: the 4-wide path (y and the used operands packed alike)
};

void RunCase(const EpilogueCase& c, bool wide_index) {
  SCOPED_TRACE(absl::StrCat(c.name, wide_index ? " (64-bit index)" : ""));
  RuntimeEmulator* emu = Emulator();
  ASSERT_NE(emu, nullptr);
  const Layout plain = Layout::Contiguous(c.dtype, c.sizes, "cuda");
  Layout yl = c.y_channels_last ? ChannelsLastLayout(plain) : plain;
  if (c.y_slice) {
    const int64_t wide = c.sizes[1] + 3, hw = c.sizes[2] * c.sizes[3];
    yl.strides = {wide * hw, hw, c.sizes[3], 1};
    yl.offset = hw;
  }
  const int64_t channels = c.sizes[1];
  // Operand 0: a residual of y's size; operand 1: a per-channel gate [1, C, 1(, 1)].
  std::vector<int64_t> gate_sizes(c.sizes.size(), 1);
  gate_sizes[1] = channels;
  const Layout o0 = c.operand_channels_last ? ChannelsLastLayout(plain) : plain;
  const Layout o1 = Layout::Contiguous(c.dtype, gate_sizes, "cuda");
  Tensor y0 = Rounded(RandomFloats(c.sizes, 1), c.dtype);
  Tensor bias = Rounded(RandomFloats({channels}, 2), c.dtype);
  Tensor r0 = Rounded(RandomFloats(c.sizes, 3), c.dtype);
  Tensor r1 = Rounded(RandomFloats(gate_sizes, 4), c.dtype);

  // The operands the chain uses (a chain without the gate may take the 4-wide path).
  int used = 0;
  for (const PostOp& p : c.post) used = std::max(used, p.operand + 1);
  std::vector<Layout> operand_layouts = {o0, o1};
  operand_layouts.resize(static_cast<size_t>(used));
  std::optional<EpilogueArgs> args = MakeEpilogueArgs(yl, true, c.post, operand_layouts);
  ASSERT_TRUE(args.has_value());
  EXPECT_EQ(args->vec4, c.vec4 ? 1 : 0);
  EXPECT_EQ(args->narrow_index, 1) << "small tensors index in 32 bits";
  // The 64-bit path (tensors past 2^31 elements) on the same data.
  args->narrow_index = wide_index ? 0 : 1;
  std::vector<uint32_t> y = Store(y0, yl), b = Store(bias, Layout::Contiguous(c.dtype, {channels}, "cuda"));
  std::vector<uint32_t> s0 = Store(r0, o0), s1 = Store(r1, o1);
  const void* ops[4] = {s0.data(), s1.data(), nullptr, nullptr};
  // The launcher passes y at its offset (LaunchEpilogue adds it).
  unsigned char* y_at = reinterpret_cast<unsigned char*>(y.data()) + yl.offset * static_cast<int64_t>(DTypeSize(c.dtype));
  emu->epilogue_(c.dtype == DType::kBFloat16 ? 1 : 0, y_at, b.data(), ops, &*args, 3, 64);

  // Reference: bias, then the interpreter's post-ops, in float32.
  std::vector<int64_t> bias_shape(c.sizes.size(), 1);
  bias_shape[1] = channels;
  absl::StatusOr<Tensor> with_bias = runtime::Binary(runtime::BinaryOp::kAdd, runtime::Operand::FromTensor(y0),
                                                     runtime::Operand::FromTensor(Tensor::View(bias, bias_shape, Tensor::ContiguousStrides(bias_shape), 0)));
  ASSERT_TRUE(with_bias.ok()) << with_bias.status();
  absl::StatusOr<Tensor> want = runtime::nn::ApplyPostOps("test", *with_bias, c.post, {r0, r1});
  ASSERT_TRUE(want.ok()) << want.status();
  for (int64_t i = 0; i < want->numel(); ++i) {
    const double w = want->GetDouble(i), got = Load(y, yl, i);
    const double tol = c.dtype == DType::kBFloat16 ? 1e-2 * std::fabs(w) + 1e-2 : 1e-5 * std::fabs(w) + 1e-5;
    ASSERT_NEAR(got, w, tol) << "element " << i;
  }
}

TEST(RuntimeKernelEmulation, ConvEpilogueMatchesThePostOpSemantics) {
  const std::vector<PostOp> chain1 = {Op(PostOpKind::kAdd, {}, 0), Op(PostOpKind::kRelu), Op(PostOpKind::kMul, {}, 1),
                                      Op(PostOpKind::kHardswish), Op(PostOpKind::kLinear, {0.5, 0.25}),
                                      Op(PostOpKind::kGelu), Op(PostOpKind::kLeakyRelu, {0.1}),
                                      Op(PostOpKind::kElu, {0.7})};
  const std::vector<PostOp> chain2 = {Op(PostOpKind::kMul, {}, 1), Op(PostOpKind::kSigmoid), Op(PostOpKind::kTanh),
                                      Op(PostOpKind::kAdd, {}, 0), Op(PostOpKind::kSilu), Op(PostOpKind::kGeluTanh),
                                      Op(PostOpKind::kHardsigmoid), Op(PostOpKind::kClamp, {0.1, 0.6}),
                                      Op(PostOpKind::kClampMin, {0.2}), Op(PostOpKind::kClampMax, {0.5})};
  const std::vector<PostOp> chain3 = {Op(PostOpKind::kAdd, {}, 0), Op(PostOpKind::kRelu), Op(PostOpKind::kSilu),
                                      Op(PostOpKind::kClamp, {-0.5, 1.5})};
  const EpilogueCase cases[] = {
      {"f32 nhwc, residual nhwc", DType::kFloat32, {2, 5, 3, 4}, true, true, chain1},
      {"f32 nhwc, residual nchw", DType::kFloat32, {2, 5, 3, 4}, true, false, chain2},
      {"f32 nchw", DType::kFloat32, {2, 5, 3, 4}, false, false, chain1},
      {"f32 1-d", DType::kFloat32, {2, 5, 7}, false, false, chain2},
      {"bf16 nhwc", DType::kBFloat16, {2, 6, 3, 5}, true, true, chain1},
      {"bf16 nchw, residual nhwc", DType::kBFloat16, {1, 6, 5, 3}, false, true, chain2},
      {"bias only", DType::kFloat32, {2, 5, 3, 4}, true, true, {}, false, /*vec4=*/true},
      {"f32 y a channel slice", DType::kFloat32, {2, 5, 3, 4}, false, true, chain1, /*y_slice=*/true},
      {"f32 residual, 4-wide", DType::kFloat32, {2, 6, 3, 4}, true, true, chain3, false, /*vec4=*/true},
      {"bf16 residual, 4-wide", DType::kBFloat16, {2, 6, 3, 4}, false, false, chain3, false, /*vec4=*/true},
      {"f32 residual in another layout", DType::kFloat32, {2, 6, 3, 4}, true, false, chain3},
  };
  for (const EpilogueCase& c : cases) {
    RunCase(c, false);
    RunCase(c, true);
  }
}

// The boundary transposes (channels_last_conv.cc): the copy kernel over a
// permuted view turns NCHW into NHWC and back.
TEST(RuntimeKernelEmulation, CopyKernelTransposesBetweenLayouts) {
  RuntimeEmulator* emu = Emulator();
  ASSERT_NE(emu, nullptr);
  const std::vector<int64_t> sizes = {2, 5, 3, 4};
  const int64_t n = 2 * 5 * 3 * 4;
  std::vector<uint32_t> nchw(static_cast<size_t>(n)), nhwc(static_cast<size_t>(n)), back(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) nchw[static_cast<size_t>(i)] = static_cast<uint32_t>(i * 7 + 1);
  // NCHW -> NHWC: row-major over [N, H, W, C] of the NCHW strides.
  StridedView to = {};
  to.rank = 4;
  const int64_t s[4] = {60, 12, 4, 1};  // NCHW strides of [2, 5, 3, 4]
  const int64_t perm_sizes[4] = {2, 3, 4, 5}, perm_strides[4] = {s[0], s[2], s[3], s[1]};
  for (int d = 0; d < 4; ++d) to.sizes[d] = perm_sizes[d], to.strides[d] = perm_strides[d];
  emu->copy_(nchw.data(), nhwc.data(), &to, n, 2, 32);
  const Layout cl = ChannelsLastLayout(Layout::Contiguous(DType::kFloat32, sizes, "cuda"));
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, at = 0;
    for (int d = 3; d >= 0; --d) {
      at += (rem % sizes[static_cast<size_t>(d)]) * cl.strides[static_cast<size_t>(d)];
      rem /= sizes[static_cast<size_t>(d)];
    }
    ASSERT_EQ(nhwc[static_cast<size_t>(at)], nchw[static_cast<size_t>(i)]) << i;
  }
  // NHWC -> NCHW: row-major over [N, C, H, W] of the NHWC strides.
  StridedView from = {};
  from.rank = 4;
  for (int d = 0; d < 4; ++d) from.sizes[d] = sizes[static_cast<size_t>(d)], from.strides[d] = cl.strides[static_cast<size_t>(d)];
  emu->copy_(nhwc.data(), back.data(), &from, n, 2, 32);
  EXPECT_EQ(back, nchw);
}

// The attention matmul's copy of a bfloat16 head view ([B, H, S, D] of a
// [B, S, 3*H*D] projection, D = 16): PlanContiguousCopy packs 8 elements
// into each 16-byte unit, which the u128 kernel moves; the result is the
// element-by-element copy.
TEST(RuntimeKernelEmulation, CopyOfAHeadViewMovesSixteenByteUnits) {
  RuntimeEmulator* emu = Emulator();
  ASSERT_NE(emu, nullptr);
  const int64_t B = 2, S = 5, H = 3, D = 16;
  Layout view = Layout::Contiguous(DType::kBFloat16, {B, H, S, D}, "cuda");
  view.strides = {S * 3 * H * D, D, 3 * H * D, 1};
  view.offset = H * D;  // the k slice of the projection
  std::vector<uint16_t> src(static_cast<size_t>(B * S * 3 * H * D) + 8);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint16_t>(i * 13 + 5);
  // 16-byte aligned buffers, as the allocator's are.
  alignas(16) static uint16_t dst[B * H * S * D];
  const uint16_t* base = reinterpret_cast<const uint16_t*>((reinterpret_cast<uintptr_t>(src.data()) + 15) & ~uintptr_t{15});
  absl::StatusOr<ContiguousCopyPlan> plan =
      PlanContiguousCopy(view, reinterpret_cast<CUdeviceptr>(base), reinterpret_cast<CUdeviceptr>(dst));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->unit_bytes, 16);
  emu->copy128_(reinterpret_cast<const void*>(plan->src), dst, &plan->view, plan->units, 2, 32);
  int64_t i = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t t = 0; t < S; ++t) {
        for (int64_t d = 0; d < D; ++d, ++i) {
          const int64_t at = view.offset + b * view.strides[0] + h * view.strides[1] + t * view.strides[2] + d;
          ASSERT_EQ(dst[i], base[at]) << b << "," << h << "," << t << "," << d;
        }
      }
    }
  }
}

// Pooling with a channels-last output (the plan keeps resnet's max pool
// NHWC): the same values as the NCHW output, in NHWC order.
TEST(RuntimeKernelEmulation, PoolingWritesChannelsLast) {
  RuntimeEmulator* emu = Emulator();
  ASSERT_NE(emu, nullptr);
  const std::vector<int64_t> sizes = {2, 5, 7, 6};
  const Layout xl = ChannelsLastLayout(Layout::Contiguous(DType::kFloat32, sizes, "cuda"));
  std::vector<uint32_t> x = Store(RandomFloats(sizes, 9), xl);
  for (const int is_max : {1, 0}) {
    SCOPED_TRACE(is_max ? "max" : "avg");
    PoolArgs a = {};
    a.n = 2, a.c = 5, a.h = 7, a.w = 6, a.oh = 4, a.ow = 3, a.kh = 3, a.kw = 3, a.sh = 2, a.sw = 2, a.ph = 1, a.pw = 1;
    a.dh = 1, a.dw = 1;
    for (int d = 0; d < 4; ++d) a.x_strides[d] = xl.strides[static_cast<size_t>(d)];
    a.count_include_pad = 1;
    const std::vector<int64_t> ys = {2, 5, 4, 3};
    const int64_t n = 2 * 5 * 4 * 3;
    std::vector<uint32_t> nchw(static_cast<size_t>(n)), nhwc(static_cast<size_t>(n));
    emu->pool_(is_max, reinterpret_cast<const float*>(x.data()), reinterpret_cast<float*>(nchw.data()), &a, 2, 32);
    a.y_channels_last = 1;
    emu->pool_(is_max, reinterpret_cast<const float*>(x.data()), reinterpret_cast<float*>(nhwc.data()), &a, 2, 32);
    const Layout plain = Layout::Contiguous(DType::kFloat32, ys, "cuda");
    const Layout cl = ChannelsLastLayout(plain);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(Load(nhwc, cl, i), Load(nchw, plain, i)) << i;
  }
}

// The depthwise kernels (depthwise_conv.h) against the reference
// convolution: every filter size and stride, a channel multiplier, a bias,
// x read NCHW (the column kernel) and through a channels-last view (the
// channels-last kernel), launched as the backend plans them, y written
// into a wider buffer (strides are data), float32 and bfloat16
// storage (the reference rounds the same inputs), on odd planes (strips cut
// by the last row, columns by the pad), many small ones, and a large one.
TEST(RuntimeKernelEmulation, DepthwiseMatchesTheReferenceConvolution) {
  RuntimeEmulator* emu = Emulator();
  ASSERT_NE(emu, nullptr);
  struct Shape {
    int64_t n, cin, h, w;
  };
  const Shape shapes[] = {{2, 3, 13, 11}, {1, 37, 5, 6}, {1, 2, 75, 71}};
  for (const Shape& shape : shapes) {
    for (const bool x_channels_last : {false, true}) {
      for (const DType dtype : {DType::kFloat32, DType::kBFloat16}) {
        for (const int k : kDepthwiseSizes) {
          for (const int s : kDepthwiseStrides) {
            for (const int64_t mult : {1, 2}) {
              SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " k", k, " s", s, " mult", mult, " x [", shape.n, ",",
                                        shape.cin, ",", shape.h, ",", shape.w, "]",
                                        x_channels_last ? " NHWC" : " NCHW"));
              const int64_t n = shape.n, cin = shape.cin, cout = cin * mult, h = shape.h, w = shape.w, pad = k / 2;
              const int64_t oh = (h + 2 * pad - k) / s + 1, ow = (w + 2 * pad - k) / s + 1;
              const std::vector<int64_t> xs = {n, cin, h, w}, ws = {cout, 1, k, k}, ys = {n, cout, oh, ow};
              const Tensor x = Rounded(RandomFloats(xs, 11), dtype), wt = Rounded(RandomFloats(ws, 12), dtype);
              const Tensor bias = Rounded(RandomFloats({cout}, 13), dtype);
              runtime::nn::ConvOptions o;
              o.stride = {s, s};
              o.pad_begin = o.pad_end = {pad, pad};
              o.dilation = {1, 1};
              o.groups = cin;
              absl::StatusOr<Tensor> want = runtime::nn::Convolution("aten::convolution", x, wt, bias, o);
              ASSERT_TRUE(want.ok()) << want.status();
              const Layout plain = Layout::Contiguous(dtype, xs, "cuda");
              const Layout xl = x_channels_last ? ChannelsLastLayout(plain) : plain;
              const Layout wl = Layout::Contiguous(dtype, ws, "cuda");
              const Layout bl = Layout::Contiguous(dtype, {cout}, "cuda");
              // y: channels [0, cout) of a [n, cout + 1, oh, ow] buffer.
              Layout yl = Layout::Contiguous(dtype, {n, cout + 1, oh, ow}, "cuda");
              yl.sizes = ys;
              std::vector<uint32_t> xb = Store(x, xl), wb = Store(wt, wl), bb = Store(bias, bl);
              // The whole wider buffer, so that its last extra channel is checked too.
              std::vector<uint32_t> yb(static_cast<size_t>(n * (cout + 1) * oh * ow), 0);
              // The launch the backend plans: the channels-last kernel for
              // an NHWC x, the column kernel otherwise.
              ConvProblem problem;
              problem.n = n, problem.cin = cin, problem.h = h, problem.w = w, problem.cout = cout;
              problem.kh = problem.kw = k, problem.oh = oh, problem.ow = ow, problem.sh = problem.sw = s;
              problem.ph = problem.pw = pad, problem.groups = cin;
              problem.x.layout = xl, problem.weight.layout = wl, problem.y.layout = yl;
              problem.bias = DeviceView{0, bl};
              ASSERT_TRUE(DepthwiseKernelTakes(problem, /*channels_last=*/false));
              const DepthwiseLaunch launch = PlanDepthwise(problem);
              ASSERT_EQ(launch.x_channels_last, x_channels_last && cin > 1);
              emu->depthwise_(dtype == DType::kBFloat16, launch.x_channels_last, k, s, xb.data(), wb.data(), bb.data(),
                              yb.data(), &launch.args, launch.blocks, launch.threads);
              const float tol = dtype == DType::kBFloat16 ? 2e-2f : 1e-4f;
              for (int64_t i = 0; i < want->numel(); ++i) {
                const float expect = want->data<float>()[i];
                ASSERT_NEAR(Load(yb, yl, i), expect, tol * (1.0f + std::fabs(expect))) << i;
              }
              // The wider y's extra channel stays untouched.
              for (int64_t img = 0; img < n; ++img) {
                for (int64_t i = 0; i < oh * ow; ++i) {
                  const auto at = static_cast<size_t>((img * (cout + 1) + cout) * oh * ow + i);
                  ASSERT_EQ(dtype == DType::kBFloat16 ? reinterpret_cast<const uint16_t*>(yb.data())[at] : yb[at], 0u);
                }
              }
            }
          }
        }
      }
    }
  }
}

// Each block's partial sums over its grid-stride slice, added on the host:
// the relative L2 over the elements finite in both (a NaN in both is a
// match), and the elements finite in only one counted.
TEST(RuntimeKernelEmulation, DifferenceSumsMatchTheHostsOverFiniteElements) {
  RuntimeEmulator* emu = Emulator();
  ASSERT_NE(emu, nullptr);
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    SCOPED_TRACE(DTypeName(dtype));
    const int64_t n = 2000;
    const Tensor b = Rounded(RandomFloats({n}, 31), dtype);
    Tensor a = Rounded(RandomFloats({n}, 32), dtype);
    for (int64_t i = 0; i < n; ++i) a.data<float>()[i] = b.data<float>()[i] + 0.01f * a.data<float>()[i];
    a = Rounded(a, dtype);
    Tensor bb = b;
    a.data<float>()[5] = bb.data<float>()[5] = NAN;  // NaN in both: no mismatch
    a.data<float>()[7] = INFINITY;                    // finite in b only: one
    bb.data<float>()[1999] = -INFINITY;               // finite in a only: two
    double sq = 0, ref = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i == 5 || i == 7 || i == 1999) continue;
      const double d = static_cast<double>(a.data<float>()[i]) - bb.data<float>()[i];
      sq += d * d;
      ref += static_cast<double>(bb.data<float>()[i]) * bb.data<float>()[i];
    }
    const Layout l = Layout::Contiguous(dtype, {n}, "cuda");
    const std::vector<uint32_t> as = Store(a, l), bs = Store(bb, l);
    const int blocks = 3;  // fewer than the elements need: each block strides
    std::vector<double> partials(3 * blocks, -1.0);
    emu->difference_(dtype == DType::kBFloat16, as.data(), bs.data(), n, partials.data(), blocks);
    const OutputDifference diff = SumDifferencePartials(partials.data(), blocks);
    EXPECT_EQ(diff.finiteness_mismatches, 2);
    EXPECT_NEAR(diff.relative_l2, std::sqrt(sq / ref), 1e-9);
    EXPECT_GT(diff.relative_l2, 1e-3);
    // Equal tensors, and all-zero ones.
    emu->difference_(dtype == DType::kBFloat16, bs.data(), bs.data(), n, partials.data(), blocks);
    EXPECT_EQ(SumDifferencePartials(partials.data(), blocks).relative_l2, 0.0);
    const std::vector<uint32_t> zeros(as.size(), 0);
    emu->difference_(dtype == DType::kBFloat16, zeros.data(), zeros.data(), n, partials.data(), blocks);
    EXPECT_EQ(SumDifferencePartials(partials.data(), blocks).relative_l2, 0.0);
    emu->difference_(dtype == DType::kBFloat16, as.data(), zeros.data(), n, partials.data(), blocks);
    EXPECT_TRUE(std::isinf(SumDifferencePartials(partials.data(), blocks).relative_l2)) << "b all zero, a not";
  }
}

}  // namespace
}  // namespace kiln::backends::cuda
