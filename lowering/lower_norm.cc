// batch_norm in inference mode as one pointwise (a bespoke lowering next to
// its decomposition: BM_BatchNorm, ops/defs/norm.def's note). softmax,
// log_softmax and layer_norm arrive decomposed (passes::PrepareForLowering)
// as reductions and pointwise ops that the scheduler fuses.
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lowering/elementwise.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

// Inference-mode batch_norm: per-channel (dim 1) affine map.
absl::StatusOr<bool> BatchNormEval(LowerContext& ctx) {
  ASSIGN_OR_RETURN(bool training, ctx.BoolArg("training"));
  if (training || ctx.IsNone("running_mean") || ctx.IsNone("running_var")) return false;
  ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("input"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (!IsFloatingPoint(out.dtype) || out.sizes != x.layout.sizes || out.sizes.size() < 2) {
    return false;
  }
  ASSIGN_OR_RETURN(double eps, ctx.DoubleArg("eps"));
  DType acc = ComputeDType(out.dtype);
  int64_t channels = out.sizes[1];
  auto channel_load = [&](const char* name) -> absl::StatusOr<std::optional<ExprPtr>> {
    if (ctx.IsNone(name)) return std::optional<ExprPtr>();
    ASSIGN_OR_RETURN(TensorRef t, ctx.TensorArg(name));
    if (t.layout.sizes != std::vector<int64_t>{channels}) {
      return ctx.Invalid(absl::StrCat("batch_norm ", name, " must have ", channels, " elements"));
    }
    return std::optional<ExprPtr>(Cast(ctx.LoadAt(t, {Var(1)}, out.sizes), acc));
  };
  ASSIGN_OR_RETURN(auto mean, channel_load("running_mean"));
  ASSIGN_OR_RETURN(auto var, channel_load("running_var"));
  ASSIGN_OR_RETURN(auto w, channel_load("weight"));
  ASSIGN_OR_RETURN(auto b, channel_load("bias"));
  ASSIGN_OR_RETURN(ExprPtr xv, ctx.LoadBroadcast(x, out.sizes));
  ExprPtr value = Binary(ExprOp::kMul, Binary(ExprOp::kSub, Cast(xv, acc), *mean),
                         Unary(ExprOp::kRsqrt, Binary(ExprOp::kAdd, *var, Literal(eps, acc))));
  if (w) value = Binary(ExprOp::kMul, value, *w);
  if (b) value = Binary(ExprOp::kAdd, value, *b);
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, value));
  return true;
}

}  // namespace

LoweringFn LowerBatchNormEval() { return BatchNormEval; }

}  // namespace kiln::lowering
