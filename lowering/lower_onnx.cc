// Lowerings of the ops ONNX models bring (issue 12): kiln::reduce (ONNX
// Reduce* with axes as an attribute or an input), splits into views,
// kiln::onnx_slice (negative steps too), padding, shape queries of static
// shapes, triangular masks (Trilu), ranges, flips, rolls and repeats. Each
// becomes reductions, views or one pointwise buffer that fuses with its
// neighbours.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/constants.h"
#include "lowering/elementwise.h"
#include "lowering/index_math.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "lowering/reduce_builder.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

// ------------------------------------------------------------ kiln::reduce

// kiln::reduce(self, kind, axes?, keepdims, noop_with_empty_axes): ONNX's
// Reduce* in the input's dtype. Floating inputs accumulate in float32 (or
// float64); integer sums, products and extremes in int64 (wrapping as the
// reference kernel does), integer means and norms in float64.
absl::StatusOr<bool> OnnxReduce(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef x, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  ASSIGN_OR_RETURN(std::string kind, ctx.StringArg("kind"));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> axes, ctx.IntListArg("axes"));
  ASSIGN_OR_RETURN(bool keepdims, ctx.BoolArg("keepdims"));
  ASSIGN_OR_RETURN(bool noop, ctx.BoolArg("noop_with_empty_axes"));
  const DType dt = x.layout.dtype;
  if (IsComplex(dt) || out.dtype != dt) return false;
  const int64_t rank = static_cast<int64_t>(x.layout.sizes.size());
  if ((!axes || axes->empty()) && noop) {
    if (out.sizes != x.layout.sizes) return ctx.Invalid("reduce with no axes changes the shape");
    ASSIGN_OR_RETURN(ExprPtr v, ctx.LoadBroadcast(x, out.sizes));
    ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, v));
    return true;
  }
  ReduceSpec spec;
  ASSIGN_OR_RETURN(spec.dims, ReduceDims(ctx, axes, rank));
  spec.keepdim = keepdims;
  const bool fp = IsFloatingPoint(dt);
  const bool exact = kind == "sum" || kind == "max" || kind == "min" || kind == "prod" ||
                     kind == "l1" || kind == "sum_square";
  const DType acc = fp ? ComputeDType(dt) : (exact ? DType::kInt64 : DType::kFloat64);
  spec.accumulate = acc;
  spec.stored = acc;
  ExprPtr identity_shift;  // log_sum_exp: the row max
  std::function<ExprPtr(ExprPtr)> epilogue;
  const double n = static_cast<double>(ReducedCount(x, spec.dims));
  if (kind == "sum" || kind == "mean" || kind == "log_sum") {
    spec.type = ReductionType::kSum;
    if (kind == "mean") epilogue = [&](ExprPtr s) { return Binary(ExprOp::kDiv, s, Literal(n, acc)); };
    if (kind == "log_sum") epilogue = [](ExprPtr s) { return Unary(ExprOp::kLog, s); };
  } else if (kind == "max" || kind == "min") {
    spec.type = kind == "max" ? ReductionType::kMax : ReductionType::kMin;
  } else if (kind == "prod") {
    spec.type = ReductionType::kProd;
  } else if (kind == "l1") {
    spec.type = ReductionType::kSum;
    spec.prologue = [](const ExprPtr& v) { return Unary(ExprOp::kAbs, v); };
  } else if (kind == "l2" || kind == "sum_square") {
    spec.type = ReductionType::kSum;
    spec.prologue = [](const ExprPtr& v) { return Binary(ExprOp::kMul, v, v); };
    if (kind == "l2") epilogue = [](ExprPtr s) { return Unary(ExprOp::kSqrt, s); };
  } else if (kind == "log_sum_exp") {
    if (!fp) return false;  // integer log_sum_exp: the reference kernel's rounding
    ASSIGN_OR_RETURN(TensorRef r, AddLogSumExp(ctx, x, spec.dims, keepdims, out));
    ctx.BindTensor(ctx.node().output(0), r);
    return true;
  } else {
    return ctx.Invalid(absl::StrCat("unknown reduce kind '", kind, "'"));
  }
  // Extremes over an empty set have no identity in float; leave them to the
  // reference kernel.
  if (n == 0 && (spec.type == ReductionType::kMax || spec.type == ReductionType::kMin)) return false;
  ASSIGN_OR_RETURN(TensorRef r, AddReduce(ctx, x, spec));
  if (r.layout.sizes != out.sizes) return ctx.Invalid("reduction shape disagrees with the output");
  if (!epilogue && acc == out.dtype) {
    ctx.BindTensor(ctx.node().output(0), r);
    return true;
  }
  ExprPtr v = ctx.LoadAt(r, Vars(0, static_cast<int>(out.sizes.size())), out.sizes);
  if (epilogue) v = epilogue(v);
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, v));
  return true;
}

// ------------------------------------------------------------ splits

// split_with_sizes / split.sizes / split.Tensor / chunk / unbind: the list
// output holds views of the input.
absl::StatusOr<bool> Split(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  const std::string op = ctx.Origin();
  const int64_t rank = static_cast<int64_t>(self.layout.sizes.size());
  if (rank == 0) return false;
  ASSIGN_OR_RETURN(int64_t d, ctx.IntArg("dim"));
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(ctx, d, rank));
  const int64_t size = self.layout.sizes[dim];
  std::vector<int64_t> pieces;
  bool drop_dim = false;
  if (op == "unbind") {
    pieces.assign(static_cast<size_t>(size), 1);
    drop_dim = true;
  } else if (op == "chunk") {
    ASSIGN_OR_RETURN(int64_t chunks, ctx.IntArg("chunks"));
    if (chunks <= 0) return ctx.Invalid("chunk count must be positive");
    const int64_t each = (size + chunks - 1) / chunks;
    for (int64_t left = size; left > 0; left -= each) pieces.push_back(std::min(each, left));
    if (pieces.empty()) pieces.push_back(0);
  } else {
    const char* arg = ctx.HasArg("split_sizes") ? "split_sizes" : "split_size";
    std::optional<ir::IValue> c = ctx.Const(arg);
    if (!c) return false;
    if (c->isInt()) {
      const int64_t each = c->toInt();
      if (each <= 0) return ctx.Invalid("split size must be positive");
      for (int64_t left = size; left > 0; left -= each) pieces.push_back(std::min(each, left));
      if (pieces.empty()) pieces.push_back(0);
    } else {
      ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> s, ctx.IntListArg(arg));
      if (!s) return false;
      pieces = *s;
    }
  }
  int64_t offset = 0;
  std::vector<TensorRef> views;
  for (int64_t p : pieces) {
    if (p < 0) return ctx.Invalid("negative split size");
    Layout l = self.layout;
    l.offset += offset * self.layout.strides[dim];
    if (drop_dim) {
      l.sizes.erase(l.sizes.begin() + dim);
      l.strides.erase(l.strides.begin() + dim);
    } else {
      l.sizes[dim] = p;
    }
    offset += p;
    ASSIGN_OR_RETURN(TensorRef v, ctx.AddView(self, l));
    views.push_back(v);
  }
  if (offset != size) return ctx.Invalid("split sizes do not add up to the dim");
  ctx.BindTensorList(ctx.node().output(0), std::move(views));
  return true;
}

// ------------------------------------------------------------ slices

// kiln::onnx_slice(self, starts, ends, axes, steps): a view for positive
// steps, a pointwise copy for negative ones (views keep positive strides).
absl::StatusOr<bool> OnnxSlice(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  ASSIGN_OR_RETURN(auto starts, ctx.IntListArg("starts"));
  ASSIGN_OR_RETURN(auto ends, ctx.IntListArg("ends"));
  ASSIGN_OR_RETURN(auto axes, ctx.IntListArg("axes"));
  ASSIGN_OR_RETURN(auto steps, ctx.IntListArg("steps"));
  if (!starts || !ends || !axes || !steps) return false;
  const int64_t rank = static_cast<int64_t>(self.layout.sizes.size());
  const size_t n = starts->size();
  if (ends->size() != n || (!axes->empty() && axes->size() != n) ||
      (!steps->empty() && steps->size() != n)) {
    return ctx.Invalid("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> start(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  std::vector<int64_t> sizes = self.layout.sizes;
  bool negative = false;
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(int64_t ax, NormalizeDim(ctx, axes->empty() ? static_cast<int64_t>(i) : (*axes)[i], rank));
    const int64_t st = steps->empty() ? 1 : (*steps)[i];
    if (st == 0) return ctx.Invalid("slice step 0");
    const int64_t size = self.layout.sizes[ax];
    int64_t s = (*starts)[i], e = (*ends)[i];
    if (s < 0) s += size;
    if (e < 0) e += size;
    int64_t len;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, size);
      e = std::clamp<int64_t>(e, 0, size);
      len = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, size - 1);
      e = std::clamp<int64_t>(e, -1, size - 1);
      len = s > e ? (s - e - st - 1) / -st : 0;
      negative = true;
    }
    start[ax] = len > 0 ? s : 0;
    step[ax] = st;
    sizes[ax] = len;
  }
  if (sizes != out.sizes) return ctx.Invalid("slice shape disagrees with the output type");
  if (!negative) {
    Layout l = self.layout;
    for (int64_t d = 0; d < rank; ++d) {
      l.offset += start[d] * self.layout.strides[d];
      l.strides[d] *= step[d];
    }
    l.sizes = sizes;
    ASSIGN_OR_RETURN(TensorRef v, ctx.AddView(self, l));
    ctx.BindTensor(ctx.node().output(0), v);
    return true;
  }
  std::vector<ExprPtr> index;
  for (int64_t d = 0; d < rank; ++d) {
    index.push_back(Binary(ExprOp::kAdd, IntConst(start[d]),
                           Binary(ExprOp::kMul, Var(static_cast<int>(d)), IntConst(step[d]))));
  }
  if (Layout::Contiguous(out.dtype, out.sizes).numel() == 0) {
    ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, Literal(0, ComputeDType(out.dtype))));
    return true;
  }
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, ctx.LoadAt(self, index, out.sizes)));
  return true;
}

// ------------------------------------------------------------ padding

enum class PadMode { kConstant, kEdge, kReflect, kWrap };

// Pads `self` by `begin[d]` / `end[d]` elements per dim (negative pads crop).
absl::StatusOr<bool> EmitPad(LowerContext& ctx, const TensorRef& self, const std::vector<int64_t>& begin,
                             PadMode mode, const ExprPtr& value) {
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  const size_t rank = self.layout.sizes.size();
  if (out.sizes.size() != rank) return ctx.Invalid("pad changes the rank");
  if (out.dtype != self.layout.dtype) return ctx.Invalid("pad changes the dtype");
  const DType compute = ComputeDType(out.dtype);
  if (Layout::Contiguous(out.dtype, out.sizes).numel() == 0) {
    ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, Literal(0, compute)));
    return true;
  }
  std::vector<ExprPtr> index;
  ExprPtr inside;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = self.layout.sizes[d];
    if (begin[d] == 0 && out.sizes[d] <= size) {  // not padded: in bounds as it is
      index.push_back(Var(static_cast<int>(d)));
      continue;
    }
    ExprPtr i = Binary(ExprOp::kSub, Var(static_cast<int>(d)), IntConst(begin[d]));
    if (size == 0) {
      if (mode != PadMode::kConstant) return false;
      index.push_back(IntConst(0));
      inside = IntConst(0, DType::kBool);
      continue;
    }
    switch (mode) {
      case PadMode::kConstant: {
        ExprPtr ok = Binary(ExprOp::kLogicalAnd, Binary(ExprOp::kGe, i, IntConst(0)),
                            Binary(ExprOp::kLt, i, IntConst(size)));
        inside = inside ? Binary(ExprOp::kLogicalAnd, inside, ok) : ok;
        index.push_back(Binary(ExprOp::kMax, Binary(ExprOp::kMin, i, IntConst(size - 1)), IntConst(0)));
        break;
      }
      case PadMode::kEdge:
        index.push_back(Binary(ExprOp::kMax, Binary(ExprOp::kMin, i, IntConst(size - 1)), IntConst(0)));
        break;
      case PadMode::kReflect: {
        if (size == 1) {
          index.push_back(IntConst(0));
          break;
        }
        // Period 2(size-1): fold into [0, 2(size-1)), then mirror. The
        // operand of % is kept non-negative (index arithmetic's contract).
        const int64_t period = 2 * (size - 1);
        const int64_t lift = (std::max<int64_t>(begin[d], 0) / period + 1) * period;
        ExprPtr m = Binary(ExprOp::kMod, Binary(ExprOp::kAdd, i, IntConst(lift)), IntConst(period));
        ExprPtr mirrored = Binary(ExprOp::kSub, IntConst(period), m);
        index.push_back(Where(Binary(ExprOp::kLt, m, IntConst(size)), m, mirrored));
        break;
      }
      case PadMode::kWrap: {
        const int64_t lift = (std::max<int64_t>(begin[d], 0) / size + 1) * size;
        index.push_back(Binary(ExprOp::kMod, Binary(ExprOp::kAdd, i, IntConst(lift)), IntConst(size)));
        break;
      }
    }
  }
  ExprPtr v = Cast(ctx.LoadAt(self, index, out.sizes), compute);
  if (inside) v = Where(inside, v, Cast(value, compute));
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, v));
  return true;
}

// A constant tensor argument's single value as a literal, or `def` when absent.
std::optional<ExprPtr> ScalarValue(const LowerContext& ctx, const char* name, DType dtype) {
  if (!ctx.HasArg(name) || ctx.IsNone(name)) return Literal(0, dtype);
  const ir::Value* v = ctx.Input(name);
  if (v == nullptr) return Literal(0, dtype);
  if (const ir::IValue* c = ctx.FindConstant(v); c != nullptr && c->isNumber()) {
    return Literal(c->toNumberAsDouble(), dtype);
  }
  if (const TensorRef* t = ctx.FindTensor(v)) {
    if (t->layout.numel() == 0) return Literal(0, dtype);
    if (t->layout.numel() != 1) return std::nullopt;
    std::vector<ExprPtr> zeros(t->layout.sizes.size(), IntConst(0));
    return Cast(ctx.LoadAt(*t, zeros, {}), dtype);
  }
  return std::nullopt;
}

// kiln::onnx_pad(self, pads, mode, value?): pads = all begins, then all ends.
absl::StatusOr<bool> OnnxPad(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(auto pads, ctx.IntListArg("pads"));
  ASSIGN_OR_RETURN(std::string mode, ctx.StringArg("mode"));
  const size_t rank = self.layout.sizes.size();
  if (!pads || pads->size() != 2 * rank) return false;
  PadMode m;
  if (mode == "constant") m = PadMode::kConstant;
  else if (mode == "edge") m = PadMode::kEdge;
  else if (mode == "reflect") m = PadMode::kReflect;
  else if (mode == "wrap") m = PadMode::kWrap;
  else return false;
  if (m == PadMode::kReflect) {
    for (size_t d = 0; d < rank; ++d) {
      if ((*pads)[d] >= self.layout.sizes[d] || (*pads)[rank + d] >= self.layout.sizes[d]) return false;
    }
  }
  std::optional<ExprPtr> value = ScalarValue(ctx, "value", ComputeDType(self.layout.dtype));
  if (!value) return false;
  std::vector<int64_t> begin(pads->begin(), pads->begin() + static_cast<std::ptrdiff_t>(rank));
  return EmitPad(ctx, self, begin, m, *value);
}

// aten::constant_pad_nd(self, pad, value): pad pairs from the last dim.
absl::StatusOr<bool> ConstantPadNd(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(auto pad, ctx.IntListArg("pad"));
  ASSIGN_OR_RETURN(double value, ctx.DoubleArg("value"));
  const size_t rank = self.layout.sizes.size();
  if (!pad || pad->size() % 2 != 0 || pad->size() / 2 > rank) return false;
  std::vector<int64_t> begin(rank, 0);
  for (size_t p = 0; p < pad->size() / 2; ++p) begin[rank - 1 - p] = (*pad)[2 * p];
  return EmitPad(ctx, self, begin, PadMode::kConstant, Literal(value, ComputeDType(self.layout.dtype)));
}

// ------------------------------------------------------------ shape queries

// kiln::shape / kiln::size of a tensor whose shape lowering knows: a
// constant buffer.
absl::StatusOr<bool> ShapeQuery(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  const std::vector<int64_t>& sizes = self.layout.sizes;
  std::vector<int64_t> values;
  if (ctx.node().kind().name() == std::string("size")) {
    values.push_back(self.layout.numel());
  } else {
    const int64_t rank = static_cast<int64_t>(sizes.size());
    ASSIGN_OR_RETURN(int64_t s, ctx.IntArg("start"));
    int64_t e = rank;
    if (!ctx.IsNone("end")) {
      ASSIGN_OR_RETURN(e, ctx.IntArg("end"));
    }
    if (s < 0) s += rank;
    if (e < 0) e += rank;
    s = std::clamp<int64_t>(s, 0, rank);
    e = std::clamp<int64_t>(e, 0, rank);
    for (int64_t i = s; i < e; ++i) values.push_back(sizes[static_cast<size_t>(i)]);
  }
  if (out.dtype != DType::kInt64 || Layout::Contiguous(out.dtype, out.sizes).numel() !=
                                        static_cast<int64_t>(values.size())) {
    return ctx.Invalid("shape result disagrees with the output type");
  }
  Tensor t = Tensor::Empty(DType::kInt64, out.sizes);
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  ctx.BindTensor(ctx.node().output(0), ctx.AddConstant(t, ctx.Origin()));
  return true;
}

// ------------------------------------------------------------ generators and masks

// triu / tril(self, diagonal): keep elements with col - row >= k (triu) or
// <= k (tril) of the last two dims, zero the rest.
absl::StatusOr<bool> Trilu(LowerContext& ctx, bool upper) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  ASSIGN_OR_RETURN(int64_t k, ctx.IntArg("diagonal"));
  const int rank = static_cast<int>(out.sizes.size());
  if (rank < 2 || out.sizes != self.layout.sizes) return false;
  const DType compute = ComputeDType(out.dtype);
  ExprPtr diff = Binary(ExprOp::kSub, Var(rank - 1), Var(rank - 2));
  ExprPtr keep = Binary(upper ? ExprOp::kGe : ExprOp::kLe, diff, IntConst(k));
  ExprPtr v = Cast(ctx.LoadAt(self, Vars(0, rank), out.sizes), compute);
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, Where(keep, v, Literal(0, compute))));
  return true;
}

// start + i * step over the output's single dim.
absl::StatusOr<bool> EmitRange(LowerContext& ctx, double start, double step) {
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (out.sizes.size() != 1) return ctx.Invalid("range output must be 1-D");
  const DType compute = ComputeDType(out.dtype);
  ExprPtr i = Var(0);
  ExprPtr v;
  if (IsFloatingPoint(compute)) {
    // Computed in float64 as the reference kernel does, then rounded.
    v = Binary(ExprOp::kAdd, FloatConst(start, DType::kFloat64),
               Binary(ExprOp::kMul, Cast(i, DType::kFloat64), FloatConst(step, DType::kFloat64)));
  } else {
    if (start != std::floor(start) || step != std::floor(step)) return false;
    v = Binary(ExprOp::kAdd, IntConst(static_cast<int64_t>(start)),
               Binary(ExprOp::kMul, i, IntConst(static_cast<int64_t>(step))));
  }
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, Cast(v, compute)));
  return true;
}

// kiln::range(start, limit, delta): 0-dim tensor constants. (With values
// known only at run time the length is data-dependent: the reference kernel
// computes it, and a length that disagrees with the static type is an error
// there rather than a wrong-sized result here.)
absl::StatusOr<bool> OnnxRange(LowerContext& ctx) {
  double values[3];
  const char* names[3] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    const ir::Value* v = ctx.Input(names[i]);
    std::optional<ir::IValue> c = v ? ir::ConstantValue(v) : std::nullopt;
    if (!c || !c->isTensor() || !c->toTensor().has_data() || c->toTensor().numel() != 1) return false;
    values[i] = c->toTensor().GetDouble(0);
  }
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  if (values[2] == 0 || out.sizes.size() != 1 ||
      out.sizes[0] != static_cast<int64_t>(std::max(0.0, std::ceil((values[1] - values[0]) / values[2])))) {
    return ctx.Invalid("range length disagrees with the output type");
  }
  return EmitRange(ctx, values[0], values[2]);
}

// aten::arange / arange.start / arange.start_step with constant numbers.
absl::StatusOr<bool> Arange(LowerContext& ctx) {
  double start = 0, step = 1;
  if (ctx.HasArg("start")) {
    ASSIGN_OR_RETURN(start, ctx.DoubleArg("start"));
  }
  if (ctx.HasArg("step")) {
    ASSIGN_OR_RETURN(step, ctx.DoubleArg("step"));
  }
  return EmitRange(ctx, start, step);
}

// kiln::eye_like(self, k, dtype?): ones where col - row == k.
absl::StatusOr<bool> EyeLike(LowerContext& ctx) {
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  ASSIGN_OR_RETURN(int64_t k, ctx.IntArg("k"));
  if (out.sizes.size() != 2) return false;
  const DType compute = ComputeDType(out.dtype);
  ExprPtr on = Binary(ExprOp::kEq, Binary(ExprOp::kSub, Var(1), Var(0)), IntConst(k));
  ctx.BindTensor(ctx.node().output(0),
                 ctx.AddPointwise(out, Where(on, Literal(1, compute), Literal(0, compute))));
  return true;
}

// aten::flip(self, dims).
absl::StatusOr<bool> Flip(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  ASSIGN_OR_RETURN(auto dims, ctx.IntListArg("dims"));
  if (!dims || out.sizes != self.layout.sizes) return false;
  const int64_t rank = static_cast<int64_t>(out.sizes.size());
  std::vector<ExprPtr> index = Vars(0, static_cast<int>(rank));
  std::vector<bool> flipped(static_cast<size_t>(std::max<int64_t>(rank, 1)), false);
  for (int64_t d : *dims) {
    ASSIGN_OR_RETURN(int64_t w, NormalizeDim(ctx, d, rank));
    if (rank == 0) continue;
    if (flipped[w]) return ctx.Invalid("repeated dim in flip");
    flipped[w] = true;
    index[w] = Binary(ExprOp::kSub, IntConst(out.sizes[w] - 1), Var(static_cast<int>(w)));
  }
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, ctx.LoadAt(self, index, out.sizes)));
  return true;
}

// aten::roll(self, shifts, dims): dims [] rolls the flattened tensor.
absl::StatusOr<bool> Roll(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  ASSIGN_OR_RETURN(auto shifts, ctx.IntListArg("shifts"));
  ASSIGN_OR_RETURN(auto dims, ctx.IntListArg("dims"));
  if (!shifts || !dims || out.sizes != self.layout.sizes || dims->empty()) return false;
  if (shifts->size() != dims->size()) return ctx.Invalid("roll: shifts and dims differ in length");
  const int64_t rank = static_cast<int64_t>(out.sizes.size());
  std::vector<ExprPtr> index = Vars(0, static_cast<int>(rank));
  for (size_t i = 0; i < dims->size(); ++i) {
    ASSIGN_OR_RETURN(int64_t w, NormalizeDim(ctx, (*dims)[i], rank));
    const int64_t size = out.sizes[w];
    if (size == 0) continue;
    const int64_t shift = (((*shifts)[i] % size) + size) % size;
    index[w] = Binary(ExprOp::kMod, Binary(ExprOp::kAdd, index[w], IntConst(size - shift)), IntConst(size));
  }
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, ctx.LoadAt(self, index, out.sizes)));
  return true;
}

// aten::repeat(self, repeats) / aten::tile(self, dims): the input indexed
// modulo its sizes.
absl::StatusOr<bool> Repeat(LowerContext& ctx) {
  ASSIGN_OR_RETURN(TensorRef self, ctx.TensorArg("self"));
  ASSIGN_OR_RETURN(OutputInfo out, ctx.Output(0));
  const size_t rank = self.layout.sizes.size();
  if (out.sizes.size() < rank || out.dtype != self.layout.dtype) return false;
  const size_t lead = out.sizes.size() - rank;
  std::vector<ExprPtr> index;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t size = self.layout.sizes[d];
    if (size == 0) return false;
    if (out.sizes[lead + d] % size != 0) return ctx.Invalid("repeat shape disagrees with the output");
    index.push_back(Binary(ExprOp::kMod, Var(static_cast<int>(lead + d)), IntConst(size)));
  }
  if (Layout::Contiguous(out.dtype, out.sizes).numel() == 0) return false;
  ctx.BindTensor(ctx.node().output(0), ctx.AddPointwise(out, ctx.LoadAt(self, index, out.sizes)));
  return true;
}

}  // namespace

LoweringFn LowerOnnxReduce() { return OnnxReduce; }
LoweringFn LowerSplit() { return Split; }
LoweringFn LowerOnnxSlice() { return OnnxSlice; }
LoweringFn LowerOnnxPad() { return OnnxPad; }
LoweringFn LowerConstantPadNd() { return ConstantPadNd; }
LoweringFn LowerShapeQuery() { return ShapeQuery; }
LoweringFn LowerTrilu(bool upper) {
  return [upper](LowerContext& ctx) { return Trilu(ctx, upper); };
}
LoweringFn LowerOnnxRange() { return OnnxRange; }
LoweringFn LowerArange() { return Arange; }
LoweringFn LowerEyeLike() { return EyeLike; }
LoweringFn LowerFlip() { return Flip; }
LoweringFn LowerRoll() { return Roll; }
LoweringFn LowerRepeat() { return Repeat; }

}  // namespace kiln::lowering
