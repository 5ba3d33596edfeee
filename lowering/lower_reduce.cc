// Reduction lowerings: sum, mean, prod, amax/amin, max/min (full and .dim),
// argmax/argmin, all/any, var/std (Welford), logsumexp.
#include <optional>
#include <string>
#include <vector>

#include "lowering/elementwise.h"
#include "lowering/index_math.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "lowering/reduce_builder.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

// The dims argument (named `dim` in every overload), all dims when absent.
absl::StatusOr<std::vector<int64_t>> DimsArg(const LowerContext& ctx, int64_t rank) {
  std::optional<std::vector<int64_t>> dims;
  if (ctx.HasArg("dim")) {
    ASSIGN_OR_RETURN(dims, ctx.IntListArg("dim"));
  }
  return ReduceDims(ctx, dims, rank);
}

absl::StatusOr<bool> KeepdimArg(const LowerContext& ctx) {
  if (!ctx.HasArg("keepdim")) return false;
  return ctx.BoolArg("keepdim");
}

// A reduction whose result, cast, is the node's output `index`.
LoweringFn Simple(ReductionType type, bool to_bool = false) {
  return [type, to_bool](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    if (IsComplex(out.dtype) || IsComplex(x.layout.dtype)) return false;
    ReduceSpec spec;
    ASSIGN_OR_RETURN(spec.dims, DimsArg(ctx, static_cast<int64_t>(x.layout.sizes.size())));
    ASSIGN_OR_RETURN(spec.keepdim, KeepdimArg(ctx));
    spec.type = type;
    spec.accumulate = to_bool ? DType::kBool : ComputeDType(out.dtype);
    spec.stored = out.dtype;
    ASSIGN_OR_RETURN(TensorRef r, AddReduce(ctx, x, spec));
    if (r.layout.sizes != out.sizes) return ctx.Invalid("reduction shape disagrees with the output");
    ctx.BindTensor(ctx.node().output(0), r);
    return true;
  };
}

// argmax/argmin: `dim` None reduces the flattened tensor.
LoweringFn ArgReduce(ReductionType type) {
  return [type](LowerContext& ctx) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    if (IsComplex(x.layout.dtype)) return false;
    ReduceSpec spec;
    ASSIGN_OR_RETURN(spec.dims, DimsArg(ctx, static_cast<int64_t>(x.layout.sizes.size())));
    ASSIGN_OR_RETURN(spec.keepdim, KeepdimArg(ctx));
    spec.type = type;
    spec.accumulate = ComputeDType(x.layout.dtype);
    spec.stored = out.dtype;
    ASSIGN_OR_RETURN(TensorRef r, AddReduce(ctx, x, spec));
    if (r.layout.numel() != Layout::Contiguous(out.dtype, out.sizes).numel()) {
      return ctx.Invalid("reduction shape disagrees with the output");
    }
    r.layout.sizes = out.sizes;  // keepdim of a flattened argmax: all ones
    r.layout.strides = Tensor::ContiguousStrides(out.sizes);
    if (!ctx.graph().buffers.empty()) {
      Buffer& b = ctx.graph().buffers.back();
      b.layout = r.layout;
      b.reduction->ranges = out.sizes;
    }
    ctx.BindTensor(ctx.node().output(0), r);
    return true;
  };
}

// max.dim / min.dim: (values, indices).
LoweringFn ValuesAndIndices(ReductionType values, ReductionType indices) {
  return [values, indices](LowerContext& ctx) -> absl::StatusOr<bool> {
    if (ctx.node().outputs().size() != 2) return false;
    ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
    ASSIGN_OR_RETURN(OutputInfo out_values, ctx.Output(0));
    ASSIGN_OR_RETURN(OutputInfo out_indices, ctx.Output(1));
    if (IsComplex(x.layout.dtype)) return false;
    ReduceSpec spec;
    ASSIGN_OR_RETURN(spec.dims, DimsArg(ctx, static_cast<int64_t>(x.layout.sizes.size())));
    ASSIGN_OR_RETURN(spec.keepdim, KeepdimArg(ctx));
    spec.accumulate = ComputeDType(x.layout.dtype);
    spec.type = values;
    spec.stored = out_values.dtype;
    ASSIGN_OR_RETURN(TensorRef v, AddReduce(ctx, x, spec));
    spec.type = indices;
    spec.stored = out_indices.dtype;
    ASSIGN_OR_RETURN(TensorRef i, AddReduce(ctx, x, spec));
    if (v.layout.sizes != out_values.sizes || i.layout.sizes != out_indices.sizes) {
      return ctx.Invalid("reduction shape disagrees with the output");
    }
    ctx.BindTensor(ctx.node().output(0), v);
    ctx.BindTensor(ctx.node().output(1), i);
    return true;
  };
}

// mean = sum / n; var = welford m2 / (n - correction); std = sqrt(var).
LoweringFn MomentOp(Moment moment) {
  return [moment](LowerContext& ctx) -> absl::StatusOr<bool> {
    if (ctx.node().outputs().size() != 1) return false;  // var_mean & co: extern
    ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
    ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
    if (!IsFloatingPoint(out.dtype)) return false;
    double correction = 0;
    if (moment != Moment::kMean) {
      correction = 1;
      if (ctx.HasArg("correction")) {
        if (!ctx.IsNone("correction")) {
      ASSIGN_OR_RETURN(correction, ctx.DoubleArg("correction"));
    }
      } else if (ctx.HasArg("unbiased")) {
        ASSIGN_OR_RETURN(bool unbiased, ctx.BoolArg("unbiased"));
        correction = unbiased ? 1 : 0;
      }
    }
    ReduceSpec spec;
    ASSIGN_OR_RETURN(spec.dims, DimsArg(ctx, static_cast<int64_t>(x.layout.sizes.size())));
    ASSIGN_OR_RETURN(spec.keepdim, KeepdimArg(ctx));
    spec.type = moment == Moment::kMean ? ReductionType::kSum : ReductionType::kWelfordM2;
    spec.accumulate = ComputeDType(out.dtype);
    spec.stored = spec.accumulate;
    ASSIGN_OR_RETURN(TensorRef r, AddReduce(ctx, x, spec));
    if (r.layout.sizes != out.sizes) return ctx.Invalid("reduction shape disagrees with the output");
    double divisor = static_cast<double>(ReducedCount(x, spec.dims)) - correction;
    if (divisor < 0) divisor = 0;
    ExprPtr value = Binary(ExprOp::kDiv, ctx.LoadAt(r, Vars(0, static_cast<int>(out.sizes.size())),
                                                    out.sizes),
                           Literal(divisor, spec.accumulate));
    if (moment == Moment::kStd) value = Unary(ExprOp::kSqrt, value);
    ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, value));
    return true;
  };
}

// logsumexp(self, dim, keepdim): AddLogSumExp (reduce_builder.h).
absl::StatusOr<bool> LogSumExp(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (!IsFloatingPoint(out.dtype)) return false;
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, DimsArg(ctx, static_cast<int64_t>(x.layout.sizes.size())));
  ASSIGN_OR_RETURN(bool keepdim, KeepdimArg(ctx));
  ASSIGN_OR_RETURN(TensorRef r, AddLogSumExp(ctx, x, dims, keepdim, out));
  ctx.BindTensor(ctx.node().output(0), r);
  return true;
}

}  // namespace

LoweringFn LowerReduce(ReductionType type) { return Simple(type); }
LoweringFn LowerReduceToBool(ReductionType type) { return Simple(type, /*to_bool=*/true); }
LoweringFn LowerArgReduce(ReductionType type) { return ArgReduce(type); }
LoweringFn LowerValuesAndIndices(ReductionType values, ReductionType indices) {
  return ValuesAndIndices(values, indices);
}
LoweringFn LowerMoment(Moment moment) { return MomentOp(moment); }
LoweringFn LowerLogSumExp() { return LogSumExp; }

}  // namespace kiln::lowering
