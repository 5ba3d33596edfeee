#include "backends/cuda/attention_kernel.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "backends/cuda/kernel_identifiers.h"
#include "lowering/attention_layouts.h"
#include "support/status.h"
#include "support/hash.h"

namespace kiln::backends::cuda {
namespace {

using lowering::EffectiveStride;
using lowering::Layout;

// The PTX in one place; KILN_ATTN_HOST_HELPERS (the emulation test) swaps
// in host versions. Guarded so that several attention kernels may share a
// file (kernels.cu without a device lists them one after another).
constexpr char kHelpers[] = R"KILN(#ifndef KILN_ATTN_HELPERS
#define KILN_ATTN_HELPERS
struct __align__(16) kiln_attn_f4 {
  float x, y, z, w;
};
#ifndef KILN_ATTN_HOST_HELPERS
__device__ __forceinline__ float kiln_attn_bf16_to_f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ unsigned short kiln_attn_f_to_bf16(float f) {
  unsigned short r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}
__device__ __forceinline__ float kiln_attn_f16_to_f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short kiln_attn_f_to_f16(float f) {
  unsigned short r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}
// c (16x8 fp32, this lane's 4) += a (16x16, 4 regs of 2) * b (16x8, 2 regs of 2).
__device__ __forceinline__ void kiln_attn_mma_bf16(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// r[i] = this lane's b16 pair of 8x8 matrix i transposed; lanes 8i..8i+7
// give matrix i's row addresses (16-byte aligned, shared memory).
__device__ __forceinline__ void kiln_attn_ldmatrix_x4_trans(unsigned* r, const unsigned short* row) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
__device__ __forceinline__ void kiln_attn_mma_f16(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif
#endif
)KILN";

// Tensor cores: 4 warps x 16 query rows, 64 keys per block.
constexpr int kMmaRows = 64;
constexpr int kMmaKeys = 64;
constexpr char kMmaTemplate[] = R"KILN(extern "C" __global__ void __launch_bounds__(128) @FN@(const unsigned short* __restrict__ q, const unsigned short* __restrict__ kt, const unsigned short* __restrict__ v, @MASKPARAM@unsigned short* __restrict__ out) {
  // 4-byte reads of pairs of keys' elements: aligned rows (pitch DP + 8 halves).
  __shared__ __align__(16) unsigned short ks[64][@DP@ + 8];
  __shared__ __align__(16) unsigned short vs[64][@DVP@ + 8];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, tg = lane & 3;
  const int qb = (int)(blockIdx.x % @QB@u);
  long long @REMDECL@qo = @QOFF@, ko = @KOFF@, vo = @VOFF@, @MODECL@oo = @OOFF@;
@UNRAVEL@  const int r0 = qb * 64 + warp * 16 + g, r1 = r0 + 8;
  const float kNegInf = -__int_as_float(0x7f800000);
  // This lane's A fragments of its 16 query rows (zero beyond S and D).
  unsigned qa[@DP@ / 16][4];
#pragma unroll
  for (int kc = 0; kc < @DP@ / 16; ++kc) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int row = (r & 1) ? r1 : r0, col = kc * 16 + tg * 2 + ((r & 2) ? 8 : 0);
      unsigned lo = 0, hi = 0;
      if (row < @S@) {
        if (col < @D@) lo = q[qo + (long long)row * @QSS@ + (long long)col * @QSD@];
        if (col + 1 < @D@) hi = q[qo + (long long)row * @QSS@ + (long long)(col + 1) * @QSD@];
      }
      qa[kc][r] = lo | (hi << 16);
    }
  }
  float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;
  float o[@DVP@ / 8][4];
#pragma unroll
  for (int nd = 0; nd < @DVP@ / 8; ++nd) o[nd][0] = o[nd][1] = o[nd][2] = o[nd][3] = 0.0f;
  for (int j0 = 0; j0 < @T@; j0 += 64) {
    __syncthreads();
@LOADK@@LOADV@    __syncthreads();
    // Scores of the block: s[n] is keys j0 + n*8 .. +7 of rows r0 and r1.
    float s[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
      for (int kc = 0; kc < @DP@ / 16; ++kc) {
        unsigned b[2];
        b[0] = *(const unsigned*)&ks[n * 8 + g][kc * 16 + tg * 2];
        b[1] = *(const unsigned*)&ks[n * 8 + g][kc * 16 + tg * 2 + 8];
        @MMA@(s[n], qa[kc], b);
      }
    }
    float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int key = j0 + n * 8 + tg * 2 + (i & 1);
        const int row = (i & 2) ? r1 : r0;
        float x = s[n][i] * @SCALE@;
        if (key >= @T@) x = kNegInf;
@MASK@        (void)row;
        s[n][i] = x;
        if (i & 2) mx1 = fmaxf(mx1, x); else mx0 = fmaxf(mx0, x);
      }
    }
    // The 4 lanes of a row group hold its 64 scores.
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    // Online softmax: rescale what is accumulated to the new row max (a
    // row masked so far has max -inf: exponents against 0 give zeros).
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    const float b0 = n0 == kNegInf ? 0.0f : n0, b1 = n1 == kNegInf ? 0.0f : n1;
    const float c0 = expf(m0 - b0), c1 = expf(m1 - b1);
    m0 = n0;
    m1 = n1;
    l0 *= c0;
    l1 *= c1;
#pragma unroll
    for (int nd = 0; nd < @DVP@ / 8; ++nd) {
      o[nd][0] *= c0;
      o[nd][1] *= c0;
      o[nd][2] *= c1;
      o[nd][3] *= c1;
    }
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      s[n][0] = expf(s[n][0] - b0);
      s[n][1] = expf(s[n][1] - b0);
      s[n][2] = expf(s[n][2] - b1);
      s[n][3] = expf(s[n][3] - b1);
      l0 += s[n][0] + s[n][1];
      l1 += s[n][2] + s[n][3];
    }
    // o += p @ v: the score accumulators are the A fragments of p.
#pragma unroll
    for (int kc = 0; kc < 4; ++kc) {
      unsigned a[4];
      a[0] = (unsigned)@TO16@(s[2 * kc][0]) | ((unsigned)@TO16@(s[2 * kc][1]) << 16);
      a[1] = (unsigned)@TO16@(s[2 * kc][2]) | ((unsigned)@TO16@(s[2 * kc][3]) << 16);
      a[2] = (unsigned)@TO16@(s[2 * kc + 1][0]) | ((unsigned)@TO16@(s[2 * kc + 1][1]) << 16);
      a[3] = (unsigned)@TO16@(s[2 * kc + 1][2]) | ((unsigned)@TO16@(s[2 * kc + 1][3]) << 16);
      // B fragments of v for two 8-column groups per ldmatrix: matrices
      // (keys +0..7 | +8..15) x (columns nd*8 | (nd+1)*8), transposed.
#pragma unroll
      for (int nd = 0; nd < @DVP@ / 8; nd += 2) {
        unsigned b[4];
        kiln_attn_ldmatrix_x4_trans(b, &vs[kc * 16 + (lane & 8) + (lane & 7)][nd * 8 + ((lane & 16) >> 1)]);
        @MMA@(o[nd], a, b);
        @MMA@(o[nd + 1], a, b + 2);
      }
    }
  }
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
  const float i0 = 1.0f / l0, i1 = 1.0f / l1;
#pragma unroll
  for (int nd = 0; nd < @DVP@ / 8; ++nd) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = (i & 2) ? r1 : r0, col = nd * 8 + tg * 2 + (i & 1);
      if (row < @S@ && col < @DV@) {
        out[oo + (long long)row * @OSS@ + (long long)col * @OSD@] = @TO16@(o[nd][i] * ((i & 2) ? i1 : i0));
      }
    }
  }
}
)KILN";

// CUDA cores: 4 warps x 4 query rows, 32 keys per block. A warp computes
// its 4 rows together: lane j scores key j for all 4 (one 16-byte load of
// the key per 4 head-dim steps, reused by the 4 rows), and accumulates its
// output columns for all 4 (one load of v per key, reused by the 4 rows).
constexpr int kFmaRows = 16;
constexpr int kFmaKeys = 32;
constexpr char kFmaTemplate[] = R"KILN(extern "C" __global__ void __launch_bounds__(128) @FN@(const @E@* __restrict__ q, const @E@* __restrict__ kt, const @E@* __restrict__ v, @MASKPARAM@@E@* __restrict__ out) {
  // Key rows padded by 4 floats: a quarter warp's 16-byte loads of 8 rows
  // fall in 8 different bank groups.
  __shared__ __align__(16) float ks[32][@D4@ + 4];
  __shared__ __align__(16) float vs[32][@DV@];
  __shared__ __align__(16) float qs[16][@D4@];
  __shared__ __align__(16) float ps[4][32][4];  // [warp][key][row]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int qb = (int)(blockIdx.x % @QB@u);
  long long @REMDECL@qo = @QOFF@, ko = @KOFF@, vo = @VOFF@, @MODECL@oo = @OOFF@;
@UNRAVEL@  const float kNegInf = -__int_as_float(0x7f800000);
  for (int e = tid; e < 16 * @D4@; e += 128) {
    const int r = e / @D4@, d = e % @D4@, row = qb * 16 + r;
    qs[r][d] = row < @S@ && d < @D@ ? @LOAD@(q[qo + (long long)row * @QSS@ + (long long)d * @QSD@]) : 0.0f;
  }
  float m[4], l[4], acc[4][@DVL@];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = kNegInf;
    l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < @DVL@; ++c) acc[i][c] = 0.0f;
  }
  for (int j0 = 0; j0 < @T@; j0 += 32) {
    __syncthreads();
@LOADK@@LOADV@    __syncthreads();
    const int key = j0 + lane;
    float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int d = 0; d < @D4@; d += 4) {
      const kiln_attn_f4 k4 = *(const kiln_attn_f4*)&ks[lane][d];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const kiln_attn_f4 q4 = *(const kiln_attn_f4*)&qs[warp * 4 + i][d];
        x[i] = fmaf(q4.x, k4.x, x[i]);
        x[i] = fmaf(q4.y, k4.y, x[i]);
        x[i] = fmaf(q4.z, k4.z, x[i]);
        x[i] = fmaf(q4.w, k4.w, x[i]);
      }
    }
    float corr[4], p[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int row = qb * 16 + warp * 4 + i;
      x[i] *= @SCALE@;
      if (key >= @T@) x[i] = kNegInf;
@MASK@      (void)row;
      float mx = x[i];
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
      // Online softmax (see the tensor-core path).
      const float nm = fmaxf(m[i], mx), base = nm == kNegInf ? 0.0f : nm;
      corr[i] = expf(m[i] - base);
      p[i] = expf(x[i] - base);
      m[i] = nm;
      l[i] = l[i] * corr[i] + p[i];
    }
    kiln_attn_f4 p4;
    p4.x = p[0];
    p4.y = p[1];
    p4.z = p[2];
    p4.w = p[3];
    *(kiln_attn_f4*)&ps[warp][lane][0] = p4;
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
      for (int c = 0; c < @DVL@; ++c) acc[i][c] *= corr[i];
    }
    for (int jj = 0; jj < 32; ++jj) {
      const kiln_attn_f4 pj = *(const kiln_attn_f4*)&ps[warp][jj][0];
#pragma unroll
      for (int c = 0; c < @DVL@; ++c) {
        const int col = lane + 32 * c;
        const float vv = col < @DV@ ? vs[jj][col] : 0.0f;
        acc[0][c] = fmaf(pj.x, vv, acc[0][c]);
        acc[1][c] = fmaf(pj.y, vv, acc[1][c]);
        acc[2][c] = fmaf(pj.z, vv, acc[2][c]);
        acc[3][c] = fmaf(pj.w, vv, acc[3][c]);
      }
    }
    __syncwarp();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float sum = l[i];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    const int row = qb * 16 + warp * 4 + i;
    if (row >= @S@) continue;
#pragma unroll
    for (int c = 0; c < @DVL@; ++c) {
      const int col = lane + 32 * c;
      if (col < @DV@) out[oo + (long long)row * @OSS@ + (long long)col * @OSD@] = @STORE@(acc[i][c] / sum);
    }
  }
}
)KILN";

std::string I(int64_t v) { return absl::StrCat(v); }

// A cooperative load of a [keys, cols] tile into shared `dst` (zeros
// outside [T, cols_valid]); `src` element (key, col) at
// base + key * key_stride + col * col_stride. The dim with unit stride runs
// fastest across threads (coalesced).
std::string TileLoad(const std::string& dst, const std::string& src, const std::string& base, int keys, int64_t cols,
                     int64_t cols_valid, int64_t t, int64_t key_stride, int64_t col_stride, const std::string& load,
                     const std::string& zero) {
  const bool col_fastest = col_stride == 1 || key_stride != 1;
  const std::string key = col_fastest ? absl::StrCat("e / ", cols) : absl::StrCat("e % ", keys);
  const std::string col = col_fastest ? absl::StrCat("e % ", cols) : absl::StrCat("e / ", keys);
  return absl::StrCat("    for (int e = threadIdx.x; e < ", keys * cols, "; e += 128) {\n      const int key = ", key,
                      ", col = ", col, ";\n      ", dst, "[key][col] = (j0 + key < ", t, " && col < ", cols_valid,
                      ") ? ", load, "(", src, "[", base, " + (long long)(j0 + key) * ", key_stride,
                      " + (long long)col * ", col_stride, "]) : ", zero, ";\n    }\n");
}

}  // namespace

absl::StatusOr<CudaKernelSource> GenerateAttentionKernel(const AttentionKernelShape& a, const CudaTarget& target) {
  auto bad = [](const std::string& why) { return absl::UnimplementedError(absl::StrCat("cuda attention kernel: ", why)); };
  ASSIGN_OR_RETURN(const lowering::AttentionDims dims, lowering::CheckAttentionLayouts(a.q, a.kt, a.v, a.out, a.mask));
  const size_t r = a.q.sizes.size();
  const DType dt = a.q.dtype;
  if (dt != DType::kFloat32 && dt != DType::kFloat16 && dt != DType::kBFloat16) {
    return bad(absl::StrCat("operands are ", DTypeName(dt), " (float32, float16 or bfloat16 only)"));
  }
  for (const Layout* l : {&a.kt, &a.v, &a.out}) {
    if (l->dtype != dt) return bad("operands of different dtypes");
  }
  const int64_t s = dims.s, d = dims.d, t = dims.t, dv = dims.dv, batches = dims.batches;
  if (d > kAttentionMaxHeadDim || dv > kAttentionMaxHeadDim) {
    return bad(absl::StrCat("head dims ", d, "/", dv, " above ", kAttentionMaxHeadDim));
  }
  if (s > (1 << 30) || t > (1 << 30)) return bad("sequence too long");
  if (a.mask && a.mask->dtype != DType::kFloat32 && a.mask->dtype != dt) return bad("mask dtype");
  const Layout mask = dims.mask.value_or(Layout());
  const bool mma = dt != DType::kFloat32;
  if (mma && target.sm_major < 8) {
    return bad(absl::StrCat("16-bit operands need the tensor cores' bf16/f16 mma of sm_80 or later (target sm_",
                            target.sm_major, target.sm_minor, ")"));
  }
  const int rows = mma ? kMmaRows : kFmaRows;
  const int64_t qblocks = (s + rows - 1) / rows;
  if (batches * qblocks >= (int64_t{1} << 31)) return bad("grid too large");

  const char* load16 = dt == DType::kBFloat16 ? "kiln_attn_bf16_to_f" : "kiln_attn_f16_to_f";
  const char* store16 = dt == DType::kBFloat16 ? "kiln_attn_f_to_bf16" : "kiln_attn_f_to_f16";
  auto load_of = [&](DType t_) -> std::string {
    if (t_ == DType::kFloat32) return "";
    return t_ == DType::kBFloat16 ? "kiln_attn_bf16_to_f" : "kiln_attn_f16_to_f";
  };

  std::string unravel;
  for (size_t i = r - 2; i-- > 0;) {
    if (a.q.sizes[i] == 1) continue;
    absl::StrAppend(&unravel, "  {\n    const long long x = rem % ", a.q.sizes[i], "LL;\n    rem /= ", a.q.sizes[i],
                    "LL;\n    qo += x * ", EffectiveStride(a.q, i), "LL; ko += x * ", EffectiveStride(a.kt, i), "LL; vo += x * ",
                    EffectiveStride(a.v, i), "LL; oo += x * ", EffectiveStride(a.out, i), "LL;");
    if (a.mask) absl::StrAppend(&unravel, " mo += x * ", EffectiveStride(mask, i), "LL;");
    absl::StrAppend(&unravel, "\n  }\n");
  }
  std::string mask_param, mask_code;
  if (a.mask) {
    const std::string mtype = a.mask->dtype == DType::kFloat32 ? "float" : "unsigned short";
    mask_param = absl::StrCat("const ", mtype, "* __restrict__ mask, ");
    mask_code = absl::StrCat(mma ? "        " : "      ", "if (key < ", t, " && row < ", s, ") ", mma ? "x" : "x[i]", " += ",
                             load_of(a.mask->dtype), "(mask[mo + (long long)row * ", EffectiveStride(mask, r - 2),
                             " + (long long)key * ", EffectiveStride(mask, r - 1), "]);\n");
  }
  const int64_t dp = (d + 15) / 16 * 16, dvp = (dv + 15) / 16 * 16;
  const int keys = mma ? kMmaKeys : kFmaKeys;
  const int64_t d4 = (d + 3) / 4 * 4;
  const int64_t tile_d = mma ? dp : d4, tile_dv = mma ? dvp : dv;
  const std::string raw_zero = mma ? "(unsigned short)0" : "0.0f";
  const std::string tile_load = mma ? "" : (dt == DType::kFloat32 ? "" : load16);
  const std::string load_k = TileLoad("ks", "kt", "ko", keys, tile_d, d, t, EffectiveStride(a.kt, r - 1), EffectiveStride(a.kt, r - 2),
                                      tile_load, raw_zero);
  const std::string load_v = TileLoad("vs", "v", "vo", keys, tile_dv, dv, t, EffectiveStride(a.v, r - 2), EffectiveStride(a.v, r - 1),
                                      tile_load, raw_zero);
  const std::string elem = dt == DType::kFloat32 ? "float" : "unsigned short";
  std::string text = absl::StrReplaceAll(
      mma ? kMmaTemplate : kFmaTemplate,
      {{"@MASKPARAM@", mask_param},
       {"@MASK@", mask_code},
       {"@LOADK@", load_k},
       {"@LOADV@", load_v},
       {"@UNRAVEL@", unravel},
       {"@REMDECL@", unravel.empty() ? "" : absl::StrCat("rem = (long long)(blockIdx.x / ", qblocks, "u), ")},
       {"@MMA@", dt == DType::kBFloat16 ? "kiln_attn_mma_bf16" : "kiln_attn_mma_f16"},
       {"@TO16@", store16},
       {"@E@", elem},
       {"@LOAD@", dt == DType::kFloat32 ? "" : load16},
       {"@STORE@", dt == DType::kFloat32 ? "" : store16},
       {"@QB@", I(qblocks)},
       {"@S@", I(s)},
       {"@T@", I(t)},
       {"@D@", I(d)},
       {"@DV@", I(dv)},
       {"@DP@", I(dp)},
       {"@D4@", I(d4)},
       {"@DVP@", I(dvp)},
       {"@DVL@", I((dv + 31) / 32)},
       {"@QOFF@", absl::StrCat(a.q.offset, "LL")},
       {"@KOFF@", absl::StrCat(a.kt.offset, "LL")},
       {"@VOFF@", absl::StrCat(a.v.offset, "LL")},
       {"@MODECL@", a.mask ? absl::StrCat("mo = ", mask.offset, "LL, ") : ""},
       {"@OOFF@", absl::StrCat(a.out.offset, "LL")},
       {"@QSS@", I(EffectiveStride(a.q, r - 2))},
       {"@QSD@", I(EffectiveStride(a.q, r - 1))},
       {"@OSS@", I(EffectiveStride(a.out, r - 2))},
       {"@OSD@", I(EffectiveStride(a.out, r - 1))},
       {"@SCALE@", CudaFloatLiteral(a.scale, DType::kFloat32)}});
  CudaKernelSource k;
  k.name = absl::StrFormat("kiln_attn_%016x", HashString(text));
  absl::StrReplaceAll({{"@FN@", k.name}}, &text);
  k.source = absl::StrCat(kHelpers, "// kiln kernel ", k.name, " (kiln::attention, ",
                          mma ? "tensor cores" : "float32 FMA", ")\n", text);
  k.launch.grid_x = batches * qblocks;
  k.launch.block_x = 128;
  return k;
}

}  // namespace kiln::backends::cuda
