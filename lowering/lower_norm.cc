// Normalization lowerings: softmax / log_softmax (max and exp-sum
// reductions, then a pointwise), layer_norm (Welford mean and m2, then a
// pointwise) and batch_norm in inference mode (a pointwise).
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lowering/elementwise.h"
#include "lowering/index_math.h"
#include "lowering/lower_context.h"
#include "lowering/reduce_builder.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

// Index helpers for a reduction of an input of `sizes` over `dims`, keeping
// the reduced dims as size 1. Variables: v0..v(rank-1) the kept-shape index,
// v(rank)... the reduced dims in order.
struct KeptIndex {
  std::vector<int64_t> kept_sizes;
  std::vector<int64_t> reduction_ranges;
  std::vector<int64_t> var_ranges;
  std::vector<ExprPtr> input_index;  // reduced dims read their reduction var
  std::vector<ExprPtr> kept_index;   // reduced dims read 0
};

KeptIndex MakeKeptIndex(const std::vector<int64_t>& sizes, const std::vector<int64_t>& dims) {
  KeptIndex k;
  int rank = static_cast<int>(sizes.size());
  std::vector<bool> reduced(sizes.size(), false);
  for (int64_t d : dims) reduced[d] = true;
  int red = 0;
  for (int d = 0; d < rank; ++d) {
    k.kept_sizes.push_back(reduced[d] ? 1 : sizes[d]);
    if (reduced[d]) {
      k.reduction_ranges.push_back(sizes[d]);
      k.input_index.push_back(Var(rank + red++));
      k.kept_index.push_back(IntConst(0));
    } else {
      k.input_index.push_back(Var(d));
      k.kept_index.push_back(Var(d));
    }
  }
  k.var_ranges = k.kept_sizes;
  k.var_ranges.insert(k.var_ranges.end(), k.reduction_ranges.begin(), k.reduction_ranges.end());
  return k;
}

TensorRef AddKept(LowerContext& ctx, const KeptIndex& k, const TensorRef& x, DType acc,
                  ReductionType type, ExprPtr body) {
  OutputInfo info;
  info.sizes = k.kept_sizes;
  info.dtype = acc;
  info.device = x.layout.device;
  return ctx.AddReduction(info, k.reduction_ranges, type, std::move(body));
}

// softmax / log_softmax of `x` over `dims` (one dim, or the trailing dims of
// ONNX's opset < 13 Softmax, which normalizes the flattened [axis:] block).
absl::StatusOr<bool> SoftmaxOver(LowerContext& ctx, const TensorRef& x,
                                 const std::vector<int64_t>& dims, bool log) {
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (!IsFloatingPoint(out.dtype) || out.sizes != x.layout.sizes) return false;
  DType acc = ComputeDType(out.dtype);
  KeptIndex k = MakeKeptIndex(x.layout.sizes, dims);
  ExprPtr x_red = Cast(ctx.LoadAt(x, k.input_index, k.var_ranges), acc);
  TensorRef m = AddKept(ctx, k, x, acc, ReductionType::kMax, x_red);
  ExprPtr m_red = ctx.LoadAt(m, k.kept_index, k.var_ranges);
  TensorRef s = AddKept(ctx, k, x, acc, ReductionType::kSum,
                        Unary(ExprOp::kExp, Binary(ExprOp::kSub, x_red, m_red)));
  ASSIGN_OR_RETURN(ExprPtr xv, ctx.LoadBroadcast(x, out.sizes));
  ASSIGN_OR_RETURN(ExprPtr mv, ctx.LoadBroadcast(m, out.sizes));
  ASSIGN_OR_RETURN(ExprPtr sv, ctx.LoadBroadcast(s, out.sizes));
  ExprPtr shifted = Binary(ExprOp::kSub, Cast(xv, acc), mv);
  ExprPtr value = log ? Binary(ExprOp::kSub, shifted, Unary(ExprOp::kLog, sv))
                      : Binary(ExprOp::kDiv, Unary(ExprOp::kExp, shifted), sv);
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, value));
  return true;
}

absl::StatusOr<bool> Softmax(LowerContext& ctx, bool log) {
  ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(int64_t dim_arg, ctx.IntArg("dim"));
  int64_t rank = static_cast<int64_t>(x.layout.sizes.size());
  ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReduceDims(ctx, std::vector<int64_t>{dim_arg}, rank));
  return SoftmaxOver(ctx, x, dims, log);
}

// kiln::flat_softmax(self, axis, kind): ONNX Softmax / LogSoftmax before
// opset 13 (kind 0 / 1) over the flattened dims [axis, rank). Hardmax
// (kind 2) stays with the reference kernel (its NaN ties differ from argmax's).
absl::StatusOr<bool> FlatSoftmax(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntArg("axis"));
  ASSIGN_OR_RETURN(int64_t kind, ctx.IntArg("kind"));
  const int64_t rank = static_cast<int64_t>(x.layout.sizes.size());
  if (kind != 0 && kind != 1) return false;
  if (axis < -rank || axis > rank) return ctx.Invalid("axis out of range");
  if (axis < 0) axis += rank;
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < rank; ++d) dims.push_back(d);
  if (dims.empty()) return false;  // a softmax over one element per row: left to the kernel
  return SoftmaxOver(ctx, x, dims, kind == 1);
}

absl::StatusOr<std::optional<ExprPtr>> OptionalTensorLoad(LowerContext& ctx, const char* name,
                                                          const OutputInfo& out, DType acc) {
  if (!ctx.HasArg(name) || ctx.IsNone(name)) return std::optional<ExprPtr>();
  ASSIGN_OR_RETURN(TensorRef t, ctx.TensorArg(name));
  ASSIGN_OR_RETURN(ExprPtr v, ctx.LoadBroadcast(t, out.sizes));
  return std::optional<ExprPtr>(Cast(v, acc));
}

// Normalizes `x` over `dims` (its trailing dims) with optional affine
// `weight`/`bias` arguments (broadcast against x): binds output 0 to y and,
// when the node has them (native_layer_norm, ONNX LayerNormalization),
// outputs 1 and 2 to the mean and the reciprocal standard deviation, shaped
// like x with the normalized dims 1.
absl::StatusOr<bool> NormalizeTrailingDims(LowerContext& ctx, const TensorRef& x,
                                           const std::vector<int64_t>& dims, double eps,
                                           const char* weight, const char* bias) {
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (!IsFloatingPoint(out.dtype) || out.sizes != x.layout.sizes) return false;
  DType acc = ComputeDType(out.dtype);
  KeptIndex k = MakeKeptIndex(x.layout.sizes, dims);
  ExprPtr x_red = Cast(ctx.LoadAt(x, k.input_index, k.var_ranges), acc);
  TensorRef mean = AddKept(ctx, k, x, acc, ReductionType::kWelfordMean, x_red);
  TensorRef m2 = AddKept(ctx, k, x, acc, ReductionType::kWelfordM2, x_red);
  double n = static_cast<double>(ReducedCount(x, dims));
  auto rstd_of = [&](ExprPtr m2v) {
    return Unary(ExprOp::kRsqrt,
                 Binary(ExprOp::kAdd, Binary(ExprOp::kDiv, std::move(m2v), Literal(n, acc)),
                        Literal(eps, acc)));
  };
  ASSIGN_OR_RETURN(ExprPtr xv, ctx.LoadBroadcast(x, out.sizes));
  ASSIGN_OR_RETURN(ExprPtr mv, ctx.LoadBroadcast(mean, out.sizes));
  ASSIGN_OR_RETURN(ExprPtr m2v, ctx.LoadBroadcast(m2, out.sizes));
  ExprPtr value = Binary(ExprOp::kMul, Binary(ExprOp::kSub, Cast(xv, acc), mv), rstd_of(m2v));
  ASSIGN_OR_RETURN(auto w, OptionalTensorLoad(ctx, weight, out, acc));
  ASSIGN_OR_RETURN(auto b, OptionalTensorLoad(ctx, bias, out, acc));
  if (w) value = Binary(ExprOp::kMul, value, *w);
  if (b) value = Binary(ExprOp::kAdd, value, *b);
  // The statistics outputs, when present and used.
  std::vector<std::pair<size_t, bool>> stats;  // (output, is rstd)
  for (size_t i = 1; i < ctx.node().outputs().size() && i < 3; ++i) stats.emplace_back(i, i == 2);
  std::vector<std::pair<const ir::Value*, TensorRef>> bound;
  for (const auto& [i, is_rstd] : stats) {
    ASSIGN_OR_RETURN(OutputInfo s, ctx.Output(i));
    if (s.sizes != k.kept_sizes) return ctx.Invalid("statistics shape disagrees with the output type");
    ExprPtr stat = ctx.LoadAt(is_rstd ? m2 : mean, Vars(0, static_cast<int>(s.sizes.size())), s.sizes);
    if (is_rstd) stat = rstd_of(stat);
    bound.emplace_back(ctx.node().output(i), ctx.AddPointwise(s, stat));
  }
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, value));
  for (auto& [v, t] : bound) ctx.BindTensor(v, t);
  return true;
}

// layer_norm / native_layer_norm(input, normalized_shape, weight?, bias?, eps).
absl::StatusOr<bool> LayerNorm(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("input"));
  ASSIGN_OR_RETURN(auto shape, ctx.IntListArg("normalized_shape"));
  ASSIGN_OR_RETURN(double eps, ctx.DoubleArg("eps"));
  int64_t rank = static_cast<int64_t>(x.layout.sizes.size());
  if (!shape || static_cast<int64_t>(shape->size()) > rank) {
    return ctx.Invalid("normalized_shape longer than the input");
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < shape->size(); ++i) {
    int64_t d = rank - static_cast<int64_t>(shape->size()) + static_cast<int64_t>(i);
    if (x.layout.sizes[d] != (*shape)[i]) return ctx.Invalid("normalized_shape mismatch");
    dims.push_back(d);
  }
  return NormalizeTrailingDims(ctx, x, dims, eps, "weight", "bias");
}

// kiln::layer_norm(x, axis, scale?, bias?, eps): ONNX LayerNormalization,
// normalizing dims [axis, rank).
absl::StatusOr<bool> OnnxLayerNorm(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("x"));
  ASSIGN_OR_RETURN(int64_t axis, ctx.IntArg("axis"));
  ASSIGN_OR_RETURN(double eps, ctx.DoubleArg("eps"));
  const int64_t rank = static_cast<int64_t>(x.layout.sizes.size());
  if (axis < -rank || axis >= rank) return ctx.Invalid("axis out of range");
  if (axis < 0) axis += rank;
  std::vector<int64_t> dims;
  for (int64_t d = axis; d < rank; ++d) dims.push_back(d);
  return NormalizeTrailingDims(ctx, x, dims, eps, "scale", "bias");
}

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

void AddNormLowerings(LoweringTable& t) {
  t["softmax"] = [](LowerContext& ctx) { return Softmax(ctx, false); };
  t["log_softmax"] = [](LowerContext& ctx) { return Softmax(ctx, true); };
  t["kiln::flat_softmax"] = FlatSoftmax;
  t["layer_norm"] = LayerNorm;
  t["native_layer_norm"] = LayerNorm;
  t["kiln::layer_norm"] = OnnxLayerNorm;
  t["batch_norm"] = BatchNormEval;
}

}  // namespace kiln::lowering
