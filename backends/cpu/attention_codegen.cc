#include "backends/cpu/attention_codegen.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "backends/cpu/expr_emitter.h"
#include "lowering/attention_layouts.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

using lowering::Layout;
using lowering::EffectiveStride;

constexpr int64_t kMaxHeadDim = 512;
constexpr int64_t kQueryBlock = 32;
// Keys per block: a whole row of scores up to here (one pass of the
// softmax), online rescaling across blocks beyond.
constexpr int64_t kKeyBlock = 512;

std::string I(int64_t v) { return IntLiteral(v); }

// The body's template; @NAME@-style holes are filled with constants. The
// block products go to the host's sgemm (host_api.h: oneDNN's; inside the
// parallel region it runs on the calling thread), passed in as `sgemm`.
constexpr char kTemplate[] = R"KILN(static void @FN@(KilnSgemmFn sgemm, const float* q, const float* kt, const float* v, const float* mask,
                 float* out) {
  (void)mask;
  const int64_t kBatches = @B@, kQueryBlocks = @QB@;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) num_threads(kiln_threads(@B@ * @QB@))
  for (int64_t b = 0; b < kBatches; ++b) {
    for (int64_t qb = 0; qb < kQueryBlocks; ++qb) {
      int64_t rem = b, qo = @QOFF@, ko = @KOFF@, vo = @VOFF@, mo = @MOFF@, oo = @OOFF@;
@UNRAVEL@      (void)rem; (void)mo;
      const int64_t i0 = qb * @BQ@;
      const int64_t ni = @S@ - i0 < @BQ@ ? @S@ - i0 : @BQ@;
      alignas(64) float s_tile[@BQ@ * @BK@];
      alignas(64) float acc[@BQ@ * @DV@];
      float row_max[@BQ@], row_sum[@BQ@];
      for (int64_t i = 0; i < @BQ@; ++i) {
        row_max[i] = -__builtin_inff();
        row_sum[i] = 0.0f;
      }
      for (int64_t e = 0; e < @BQ@ * @DV@; ++e) acc[e] = 0.0f;
      int failed = 0;  // sgemm rejects only malformed sizes, which the generator rules out
      for (int64_t j0 = 0; j0 < @T@; j0 += @BK@) {
        const int64_t nj = @T@ - j0 < @BK@ ? @T@ - j0 : @BK@;
        // Scores of the block: scale * q[i0.., :] @ kt[:, j0..].
        failed |= sgemm('N', @KT_TRANS@, ni, nj, @D@, @SCALE@, q + qo + i0 * @QSS@, @QSS@,
                        kt + ko + j0 * @KST@, @KLD@, 0.0f, s_tile, @BK@);
        for (int64_t i = 0; i < ni; ++i) {
          float* srow = s_tile + i * @BK@;
@MASK@          // Online softmax: rescale what is accumulated to the new row max.
          // (A NaN score may be skipped here; it still makes the sum NaN.)
          float mx = row_max[i];
#pragma omp simd reduction(max : mx)
          for (int64_t jj = 0; jj < nj; ++jj) mx = srow[jj] > mx ? srow[jj] : mx;
          if (mx == -__builtin_inff()) {  // every score so far is -inf (masked)
            for (int64_t jj = 0; jj < nj; ++jj) srow[jj] = 0.0f;
            continue;
          }
          const float corr = expf(row_max[i] - mx);
          float psum = 0.0f;
#pragma omp simd reduction(+ : psum)
          for (int64_t jj = 0; jj < nj; ++jj) {
            const float p = expf(srow[jj] - mx);
            srow[jj] = p;
            psum += p;
          }
          row_sum[i] = row_sum[i] * corr + psum;
          row_max[i] = mx;
          if (corr != 1.0f) {
            float* arow = acc + i * @DV@;
#pragma omp simd
            for (int64_t dd = 0; dd < @DV@; ++dd) arow[dd] *= corr;
          }
        }
        // acc += p @ v[j0.., :].
        failed |= sgemm('N', @V_TRANS@, ni, @DV@, nj, 1.0f, s_tile, @BK@, v + vo + j0 * @VST@, @VLD@, 1.0f,
                        acc, @DV@);
      }
      for (int64_t i = 0; i < ni; ++i) {
        const float inv = failed ? __builtin_nanf("") : 1.0f / row_sum[i];
        float* orow = out + oo + (i0 + i) * @OSS@;
#pragma omp simd
        for (int64_t dd = 0; dd < @DV@; ++dd) orow[dd * @OSD@] = acc[i * @DV@ + dd] * inv;
      }
    }
  }
}
)KILN";

}  // namespace

absl::StatusOr<std::string> AttentionKernelSource(const std::string& function, const AttentionShape& a) {
  auto bad = [](const char* why) { return absl::UnimplementedError(absl::StrCat("attention kernel: ", why)); };
  ASSIGN_OR_RETURN(const lowering::AttentionDims dims, lowering::CheckAttentionLayouts(a.q, a.kt, a.v, a.out, a.mask));
  const size_t r = a.q.sizes.size();
  for (const Layout* l : {&a.q, &a.kt, &a.v, &a.out}) {
    if (l->dtype != DType::kFloat32) return bad("not float32");
  }
  const int64_t s = dims.s, d = dims.d, t = dims.t, dv = dims.dv, batches = dims.batches;
  if (d > kMaxHeadDim || dv > kMaxHeadDim) return bad("head dims out of range");
  if (a.mask && a.mask->dtype != DType::kFloat32) return bad("mask");
  const Layout mask = dims.mask.value_or(Layout());
  // sgemm reads row-major operands, or transposed ones: each matrix needs a
  // unit stride along one of its two dims (q: along D).
  auto unit = [](const Layout& l, size_t dim) { return l.sizes[dim] == 1 || l.strides[dim] == 1; };
  if (!unit(a.q, r - 1)) return bad("q is not contiguous along its head dim");
  const bool kt_rows = unit(a.kt, r - 1), v_rows = unit(a.v, r - 1);
  if (!kt_rows && !unit(a.kt, r - 2)) return bad("keys have no unit stride");
  if (!v_rows && !unit(a.v, r - 2)) return bad("values have no unit stride");
  // Leading dimensions (at least the row length, as sgemm checks).
  const int64_t kt_ld = std::max<int64_t>(EffectiveStride(a.kt, r - 2), t);
  const int64_t v_ld = std::max<int64_t>(EffectiveStride(a.v, r - 2), dv);
  const int64_t bq = std::min<int64_t>(kQueryBlock, s);
  const int64_t t16 = (t + 15) / 16 * 16;
  const int64_t bk = std::min<int64_t>(t16, kKeyBlock);
  // The batch index unravelled into the leading dims (last fastest).
  std::string unravel;
  for (size_t i = r - 2; i-- > 0;) {
    if (a.q.sizes[i] == 1) continue;
    absl::StrAppend(&unravel, "      {\n        const int64_t x = rem % ", I(a.q.sizes[i]), ";\n        rem /= ",
                    I(a.q.sizes[i]), ";\n        qo += x * ", I(EffectiveStride(a.q, i)), "; ko += x * ", I(EffectiveStride(a.kt, i)),
                    "; vo += x * ", I(EffectiveStride(a.v, i)), "; oo += x * ", I(EffectiveStride(a.out, i)), ";");
    if (a.mask) absl::StrAppend(&unravel, " mo += x * ", I(EffectiveStride(mask, i)), ";");
    absl::StrAppend(&unravel, "\n      }\n");
  }
  std::string mask_code;
  if (a.mask) {
    mask_code = absl::StrCat("          {\n            const float* mrow = mask + mo + (i0 + i) * ", I(EffectiveStride(mask, r - 2)),
                             " + j0 * ", I(EffectiveStride(mask, r - 1)), ";\n            for (int64_t jj = 0; jj < nj; ++jj) srow[jj] += mrow[jj * ",
                             I(EffectiveStride(mask, r - 1)), "];\n          }\n");
  }
  return absl::StrReplaceAll(
      kTemplate,
      {{"@FN@", function},
       {"@B@", I(batches)},
       {"@QB@", I((s + bq - 1) / bq)},
       {"@BQ@", I(bq)},
       {"@BK@", I(bk)},
       {"@S@", I(s)},
       {"@T@", I(t)},
       {"@D@", I(d)},
       {"@DV@", I(dv)},
       {"@QOFF@", I(a.q.offset)},
       {"@KOFF@", I(a.kt.offset)},
       {"@VOFF@", I(a.v.offset)},
       {"@MOFF@", I(a.mask ? mask.offset : 0)},
       {"@OOFF@", I(a.out.offset)},
       {"@UNRAVEL@", unravel},
       {"@QSS@", I(std::max<int64_t>(EffectiveStride(a.q, r - 2), d))},
              {"@KST@", I(EffectiveStride(a.kt, r - 1))},
       {"@KT_TRANS@", kt_rows ? "'N'" : "'T'"},
       {"@KLD@", I(kt_rows ? kt_ld : std::max<int64_t>(EffectiveStride(a.kt, r - 1), d))},
       {"@VST@", I(EffectiveStride(a.v, r - 2))},
       {"@V_TRANS@", v_rows ? "'N'" : "'T'"},
       {"@VLD@", I(v_rows ? v_ld : std::max<int64_t>(EffectiveStride(a.v, r - 1), t))},
       {"@OSS@", I(EffectiveStride(a.out, r - 2))},
       {"@OSD@", I(EffectiveStride(a.out, r - 1))},
       {"@SCALE@", FloatLiteral(a.scale, DType::kFloat32)},
       {"@MASK@", mask_code}});
}

}  // namespace kiln::backends::cpu
