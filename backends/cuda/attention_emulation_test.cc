// The generated flash-attention kernels (attention_kernel.h) run without a
// GPU: their source compiled as host C++ against kernel_emulation.h, with
// host versions of the kernel's PTX helpers (16-bit conversions, and
// mma.sync m16n8k16 computed from the warp's fragments exchanged through
// the emulation's warp barrier), and compared with kiln::attention's
// reference kernel (runtime Attention: the replaced chain's kernels) on odd
// sizes, broadcast masks, strided q/k/v views and every operand dtype.
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/attention_kernel.h"
#include "backends/cuda/kernel_emulation.h"
#include "backends/cuda/kernel_test_nvrtc.h"
#include "gtest/gtest.h"
#include "runtime/kernels.h"
#include "runtime/op_kernels.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::backends::cuda {
namespace {

using lowering::Layout;

// Host forms of the kernel's helpers (KILN_ATTN_HOST_HELPERS). The mma
// follows the PTX ISA's fragment layout of m16n8k16 (.row.col): lane
// l = 4 * group + t holds A rows group and group + 8, columns 2t, 2t + 1
// (+ 8), B columns group, rows 2t, 2t + 1 (+ 8), C rows group (+ 8),
// columns 2t, 2t + 1; the lower-indexed element in the low half.
constexpr char kHostHelpers[] = R"CC(
#define KILN_ATTN_HOST_HELPERS 1
static float kiln_attn_bf16_to_f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
static unsigned short kiln_attn_f_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
static float kiln_attn_f16_to_f(unsigned short h) {
  const unsigned e = (h >> 10) & 31u, m = h & 1023u;
  float f = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024u), (int)e - 25);
  return (h & 0x8000u) ? -f : f;
}
static unsigned short kiln_attn_f_to_f16(float f) {
  if (isnan(f)) return 0x7e00;
  const unsigned short sign = signbit(f) ? 0x8000 : 0;
  const float a = fabsf(f);
  if (a < ldexpf(1.0f, -14)) return sign | (unsigned short)nearbyintf(a * ldexpf(1.0f, 24));
  int ex = 0;
  frexpf(a, &ex);
  int e = ex - 1;
  float m = nearbyintf(ldexpf(a, 10 - e));
  if (m >= 2048.0f) { m = 1024.0f; ++e; }
  if (e > 15) return sign | 0x7c00;
  return sign | (unsigned short)((e + 15) << 10) | (unsigned short)((unsigned)m - 1024u);
}
static unsigned kiln_mma_a[32][32][4], kiln_mma_b[32][32][2];
template <int kHalf> static void kiln_attn_mma_host(float* c, const unsigned* a, const unsigned* b) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  memcpy(kiln_mma_a[warp][lane], a, sizeof(unsigned) * 4);
  memcpy(kiln_mma_b[warp][lane], b, sizeof(unsigned) * 2);
  kiln_warp_barrier[warp].Wait();
  auto elem = [](unsigned reg, int k) {
    const unsigned short h = (unsigned short)((k & 1) ? reg >> 16 : reg & 0xffffu);
    return kHalf ? kiln_attn_f16_to_f(h) : kiln_attn_bf16_to_f(h);
  };
  const int g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {
    const int row = g + ((i & 2) ? 8 : 0), col = 2 * t + (i & 1);
    float acc = c[i];
    for (int k = 0; k < 16; ++k) {
      const float x = elem(kiln_mma_a[warp][(row % 8) * 4 + (k % 8) / 2][(k >= 8 ? 2 : 0) + (row >= 8 ? 1 : 0)], k);
      const float y = elem(kiln_mma_b[warp][col * 4 + (k % 8) / 2][k >= 8 ? 1 : 0], k);
      acc += x * y;
    }
    c[i] = acc;
  }
  kiln_warp_barrier[warp].Wait();
}
static const unsigned short* kiln_ldm_rows[32][32];
static void kiln_attn_ldmatrix_x4_trans(unsigned* r, const unsigned short* row) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  kiln_ldm_rows[warp][lane] = row;
  kiln_warp_barrier[warp].Wait();
  const int g = lane >> 2, t = lane & 3;
  for (int i = 0; i < 4; ++i) {
    // Matrix i's rows come from lanes 8i..8i+7; transposed, this lane holds
    // its column g at rows 2t and 2t + 1.
    r[i] = (unsigned)kiln_ldm_rows[warp][8 * i + 2 * t][g] | ((unsigned)kiln_ldm_rows[warp][8 * i + 2 * t + 1][g] << 16);
  }
  kiln_warp_barrier[warp].Wait();
}
static void kiln_attn_mma_bf16(float* c, const unsigned* a, const unsigned* b) { kiln_attn_mma_host<0>(c, a, b); }
static void kiln_attn_mma_f16(float* c, const unsigned* a, const unsigned* b) { kiln_attn_mma_host<1>(c, a, b); }
)CC";

struct Case {
  std::string name;
  DType dtype = DType::kFloat32;
  int64_t batch = 2, heads = 3, s = 197, t = 197, d = 64, dv = 64;
  bool packed_qkv = true;   // q/k/v as head views of one [B, S, 3*H*D] projection (needs s == t, d == dv)
  int mask_kind = 0;        // 0 none, 1 [B,1,1,T] padding, 2 [S,T] causal, 3 [B,H,S,T] full
  DType mask_dtype = DType::kFloat32;
  double scale = 0.125;
};

struct Built {
  AttentionKernelShape shape;
  CudaKernelSource kernel;
  Tensor q, kt, v, mask, qkv_base, k_base, v_base, mask_base;
};

Tensor Random(DType dtype, std::vector<int64_t> sizes, std::mt19937& rng) {
  Tensor f = Tensor::Empty(DType::kFloat32, sizes);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  float* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i) p[i] = dist(rng);
  if (dtype == DType::kFloat32) return f;
  absl::StatusOr<Tensor> c = runtime::To(f, dtype);
  EXPECT_TRUE(c.ok()) << c.status();
  return *c;
}

Layout LayoutOf(const Tensor& t) {
  Layout l;
  l.dtype = t.dtype();
  l.sizes = t.sizes();
  l.strides = t.strides();
  l.offset = t.storage_offset();
  return l;
}

Built Make(const Case& c, std::mt19937& rng) {
  Built b;
  const int64_t B = c.batch, H = c.heads;
  if (c.packed_qkv) {
    // [B, S, 3, H, D] projection; q [B, H, S, D], kt [B, H, D, T] (k
    // transposed), v [B, H, T, D]: strided views, no copies.
    b.qkv_base = Random(c.dtype, {B, c.s, 3 * H * c.d}, rng);
    const int64_t row = 3 * H * c.d;
    b.q = Tensor::View(b.qkv_base, {B, H, c.s, c.d}, {c.s * row, c.d, row, 1}, 0);
    b.kt = Tensor::View(b.qkv_base, {B, H, c.d, c.t}, {c.s * row, c.d, 1, row}, H * c.d);
    b.v = Tensor::View(b.qkv_base, {B, H, c.t, c.dv}, {c.s * row, c.d, row, 1}, 2 * H * c.d);
  } else {
    b.qkv_base = Random(c.dtype, {B, H, c.s, c.d}, rng);
    b.q = b.qkv_base;
    b.k_base = Random(c.dtype, {B, H, c.d, c.t}, rng);  // kt contiguous: unit stride along T
    b.kt = b.k_base;
    b.v_base = Random(c.dtype, {B, H, c.t, c.dv}, rng);
    b.v = b.v_base;
  }
  if (c.mask_kind != 0) {
    std::vector<int64_t> sizes = c.mask_kind == 1 ? std::vector<int64_t>{B, 1, 1, c.t}
                                 : c.mask_kind == 2 ? std::vector<int64_t>{c.s, c.t}
                                                    : std::vector<int64_t>{B, H, c.s, c.t};
    Tensor m = Tensor::Empty(DType::kFloat32, sizes);
    float* p = m.data<float>();
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < m.numel(); ++i) {
      const int64_t j = i % c.t, r = (i / c.t) % c.s;
      if (c.mask_kind == 1) p[i] = j >= c.t - 5 * (i / c.t + 1) ? -10000.0f : 0.0f;  // padding
      if (c.mask_kind == 2) p[i] = j > r ? -INFINITY : 0.0f;                         // causal
      if (c.mask_kind == 3) p[i] = u(rng);
    }
    if (c.mask_dtype != DType::kFloat32) {
      absl::StatusOr<Tensor> mm = runtime::To(m, c.mask_dtype);
      EXPECT_TRUE(mm.ok());
      m = *mm;
    }
    b.mask_base = m;
    b.mask = m;
    b.shape.mask = LayoutOf(m);
  }
  b.shape.q = LayoutOf(b.q);
  b.shape.kt = LayoutOf(b.kt);
  b.shape.v = LayoutOf(b.v);
  b.shape.out = Layout::Contiguous(c.dtype, {B, H, c.s, c.dv});
  b.shape.scale = c.scale;
  absl::StatusOr<CudaKernelSource> k = GenerateAttentionKernel(b.shape);
  EXPECT_TRUE(k.ok()) << c.name << ": " << k.status();
  if (k.ok()) b.kernel = *k;
  return b;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  auto add = [&](Case c) { cases.push_back(c); };
  // vit-like: S = T = 197, packed q/k/v, no mask; every dtype.
  add(Case{"vit_f32", DType::kFloat32});
  add(Case{"vit_bf16", DType::kBFloat16});
  add(Case{"vit_f16", DType::kFloat16});
  // bert-like padding mask [B,1,1,T], float32 mask with 16-bit operands.
  Case bert{"bert_bf16_mask", DType::kBFloat16, 2, 2, 40, 40, 64, 64, true, 1};
  add(bert);
  bert.name = "bert_f32_mask";
  bert.dtype = DType::kFloat32;
  add(bert);
  // gpt2-like causal mask [S,T] (broadcast over batch and heads), in fp16.
  add(Case{"causal_f16_mask_f16", DType::kFloat16, 1, 2, 70, 70, 32, 32, true, 2, DType::kFloat16});
  add(Case{"causal_f32", DType::kFloat32, 1, 2, 70, 70, 32, 32, true, 2});
  // Unpadded head dims, S != T, contiguous kt [.., D, T], a full mask.
  add(Case{"odd_f32", DType::kFloat32, 1, 2, 33, 70, 40, 24, false, 3, DType::kFloat32, 0.3});
  add(Case{"odd_bf16", DType::kBFloat16, 1, 2, 33, 70, 40, 24, false, 3, DType::kBFloat16, 0.3});
  // Head dim 128, several key blocks.
  add(Case{"d128_bf16", DType::kBFloat16, 1, 1, 17, 130, 128, 128, false, 0});
  add(Case{"d128_f32", DType::kFloat32, 1, 1, 17, 130, 128, 128, false, 0});
  return cases;
}

TEST(AttentionEmulationTest, MatchesTheReferenceKernel) {
  std::mt19937 rng(7);
  const std::vector<Case> cases = Cases();
  std::vector<Built> built;
  std::string tu = absl::StrCat(kEmulation, kHostHelpers);
  for (size_t i = 0; i < cases.size(); ++i) {
    built.push_back(Make(cases[i], rng));
    const Built& b = built.back();
    ASSERT_FALSE(b.kernel.name.empty()) << cases[i].name;
    absl::StrAppend(&tu, b.kernel.source, "\n");
    const char* e = cases[i].dtype == DType::kFloat32 ? "float" : "unsigned short";
    const char* m = !b.shape.mask ? nullptr : b.shape.mask->dtype == DType::kFloat32 ? "float" : "unsigned short";
    absl::StrAppend(&tu, "extern \"C\" void emu_", i, "(const void* q, const void* kt, const void* v, const void* mask, void* out) {\n",
                    "  kiln_run_grid(", b.kernel.launch.grid_x, ", ", b.kernel.launch.block_x, ", [&] { ", b.kernel.name,
                    "((const ", e, "*)q, (const ", e, "*)kt, (const ", e, "*)v, ",
                    m == nullptr ? "" : absl::StrCat("(const ", m, "*)mask, "), "(", e, "*)out); });\n  (void)mask;\n}\n");
  }
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp != nullptr ? tmp : "/tmp";
  const std::string file = dir + "/kiln_attention_emulation.cc", lib = dir + "/kiln_attention_emulation.so";
  std::ofstream(file) << tu;
  const std::string cmd = absl::StrCat("g++ -std=c++17 -O1 -w -shared -fPIC -o ", lib, " ", file, " 2>&1");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "g++ failed on " << file;
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  using Fn = void (*)(const void*, const void*, const void*, const void*, void*);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Built& b = built[i];
    SCOPED_TRACE(c.name);
    auto fn = reinterpret_cast<Fn>(dlsym(handle, absl::StrCat("emu_", i).c_str()));
    ASSERT_NE(fn, nullptr);
    Tensor out = Tensor::Empty(c.dtype, b.shape.out.sizes);
    const void* kbase = c.packed_qkv ? b.qkv_base.storage()->data() : b.k_base.storage()->data();
    const void* vbase = c.packed_qkv ? b.qkv_base.storage()->data() : b.v_base.storage()->data();
    fn(b.qkv_base.storage()->data(), kbase, vbase, b.shape.mask ? b.mask_base.storage()->data() : nullptr,
       out.storage()->data());
    absl::StatusOr<Tensor> want =
        runtime::Attention(b.q, b.kt, b.v, b.shape.mask ? runtime::OptTensor(b.mask) : std::nullopt, c.scale);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(want->sizes(), out.sizes());
    // float32: exact math in another order; 16-bit: the reference rounds
    // the scores to the dtype, the kernel keeps them in float.
    const double tol = c.dtype == DType::kFloat32 ? 1e-5 : c.dtype == DType::kFloat16 ? 4e-3 : 3e-2;
    int bad = 0;
    double worst = 0;
    for (int64_t e = 0; e < out.numel(); ++e) {
      const double got = out.GetDouble(e), ref = want->GetDouble(e);
      const double err = std::fabs(got - ref);
      worst = std::max(worst, err);
      if (!(err <= tol * (1.0 + std::fabs(ref)))) {
        if (++bad <= 5) ADD_FAILURE() << "element " << e << ": got " << got << ", want " << ref;
      }
    }
    EXPECT_EQ(bad, 0) << "worst error " << worst;
  }
}

// Every case's source compiles with NVRTC for sm_90 (no GPU needed), with
// the real PTX helpers; without NVRTC the test says so and skips.
TEST(AttentionEmulationTest, EverySourceCompilesWithNvrtc) {
  testing::Nvrtc& nvrtc = testing::Nvrtc::Get();
  if (!nvrtc.ok()) GTEST_SKIP() << "skipping the NVRTC compile: " << nvrtc.why();
  std::mt19937 rng(7);
  for (const Case& c : Cases()) {
    const Built b = Make(c, rng);
    ASSERT_FALSE(b.kernel.name.empty()) << c.name;
    const std::string error = nvrtc.Compile(b.kernel.source, b.kernel.name);
    EXPECT_EQ(error, "") << c.name << "\n" << b.kernel.source;
  }
  if (!nvrtc.warnings().empty()) std::printf("NVRTC warnings:\n%s\n", nvrtc.warnings().c_str());
}

// What the kernel does not take is Unimplemented with a reason, never a crash.
TEST(AttentionEmulationTest, RefusesWhatItDoesNotTake) {
  AttentionKernelShape a;
  a.q = Layout::Contiguous(DType::kFloat32, {2, 8, 256});
  a.kt = Layout::Contiguous(DType::kFloat32, {2, 256, 8});
  a.v = Layout::Contiguous(DType::kFloat32, {2, 8, 256});
  a.out = Layout::Contiguous(DType::kFloat32, {2, 8, 256});
  absl::StatusOr<CudaKernelSource> k = GenerateAttentionKernel(a);
  EXPECT_TRUE(absl::IsUnimplemented(k.status())) << k.status();
  EXPECT_NE(k.status().message().find("head dims"), std::string::npos);
  a.q = Layout::Contiguous(DType::kFloat64, {2, 8, 16});
  EXPECT_TRUE(absl::IsUnimplemented(GenerateAttentionKernel(a).status()));
  a.q = Layout::Contiguous(DType::kFloat32, {2, 8, 16});
  a.kt = Layout::Contiguous(DType::kFloat32, {2, 16, 8});
  a.v = Layout::Contiguous(DType::kBFloat16, {2, 8, 16});
  a.out = Layout::Contiguous(DType::kFloat32, {2, 8, 16});
  EXPECT_TRUE(absl::IsUnimplemented(GenerateAttentionKernel(a).status()));
  a.v = Layout::Contiguous(DType::kFloat32, {2, 8, 16});
  a.mask = Layout::Contiguous(DType::kFloat32, {3, 8, 8});
  EXPECT_TRUE(absl::IsUnimplemented(GenerateAttentionKernel(a).status()));
  a.mask = Layout::Contiguous(DType::kFloat32, {8, 8});
  EXPECT_TRUE(GenerateAttentionKernel(a).ok());
}

}  // namespace
}  // namespace kiln::backends::cuda
