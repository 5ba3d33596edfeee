// aten::matmul as the GEMM calls a BLAS runs: N-D by 2-D becomes one mm over
// the flattened leading dims (a view when the strides allow), batched N-D by
// N-D becomes one bmm over the broadcast batch dims; the result is a view
// back to matmul's shape. Devices run mm / bmm as library calls (OpenBLAS,
// cuBLAS); matmul's other forms (vectors, other dtypes) stay an extern call
// of the op itself.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

int64_t Product(const std::vector<int64_t>& v, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= v[i];
  return p;
}

// `t` broadcast to `sizes` (leading dims added, size-1 dims stretched): a
// view with zero strides.
absl::StatusOr<TensorRef> BroadcastView(LowerContext& ctx, const TensorRef& t,
                                        const std::vector<int64_t>& sizes) {
  if (t.layout.sizes == sizes) return t;
  const size_t shift = sizes.size() - t.layout.sizes.size();
  Layout l = t.layout;
  l.sizes = sizes;
  l.strides.assign(sizes.size(), 0);
  for (size_t k = 0; k < t.layout.sizes.size(); ++k) {
    if (t.layout.sizes[k] == sizes[k + shift]) {
      l.strides[k + shift] = t.layout.strides[k];
    } else if (t.layout.sizes[k] != 1) {
      return ctx.Invalid("matmul batch dims do not broadcast");
    }
  }
  return ctx.AddView(t, l);
}

absl::StatusOr<bool> Matmul(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef a, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(TensorRef b, ctx.TensorArg("other"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  const size_t ra = a.layout.sizes.size(), rb = b.layout.sizes.size();
  if (out.dtype != DType::kFloat32 || a.layout.dtype != DType::kFloat32 ||
      b.layout.dtype != DType::kFloat32 || ra < 2 || rb < 2 || (ra == 2 && rb == 2)) {
    return false;  // 2-D by 2-D is already one GEMM; vectors and other dtypes: the op's extern
  }
  const int64_t m = a.layout.sizes[ra - 2], k = a.layout.sizes[ra - 1];
  const int64_t n = b.layout.sizes[rb - 1];
  if (b.layout.sizes[rb - 2] != k) return ctx.Invalid("matmul inner dims differ");
  OutputInfo flat = out;
  if (rb == 2) {
    // [..., M, K] @ [K, N]: one [prod(...) * M, K] @ [K, N].
    const int64_t rows = Product(a.layout.sizes, 0, ra - 1);
    ASSIGN_OR_RETURN(TensorRef a2, ReshapeTo(ctx, a, {rows, k}));
    flat.sizes = {rows, n};
    TensorRef c = AddExternCall(ctx, "aten::mm", {a2, b}, flat);
    ASSIGN_OR_RETURN(TensorRef y, ReshapeTo(ctx, c, out.sizes));
    ctx.BindTensor(ctx.node().output(0), y);
    return true;
  }
  // Batched: broadcast the batch dims, then [B, M, K] @ [B, K, N].
  std::vector<int64_t> batch(out.sizes.begin(), out.sizes.end() - 2);
  const int64_t nb = Product(batch, 0, batch.size());
  std::vector<int64_t> a_full = batch, b_full = batch;
  a_full.insert(a_full.end(), {m, k});
  b_full.insert(b_full.end(), {k, n});
  ASSIGN_OR_RETURN(TensorRef ab, BroadcastView(ctx, a, a_full));
  ASSIGN_OR_RETURN(TensorRef bb, BroadcastView(ctx, b, b_full));
  ASSIGN_OR_RETURN(TensorRef a3, ReshapeTo(ctx, ab, {nb, m, k}));
  ASSIGN_OR_RETURN(TensorRef b3, ReshapeTo(ctx, bb, {nb, k, n}));
  flat.sizes = {nb, m, n};
  TensorRef c = AddExternCall(ctx, "aten::bmm", {a3, b3}, flat);
  ASSIGN_OR_RETURN(TensorRef y, ReshapeTo(ctx, c, out.sizes));
  ctx.BindTensor(ctx.node().output(0), y);
  return true;
}

}  // namespace

LoweringFn LowerMatmul() { return Matmul; }

}  // namespace kiln::lowering
