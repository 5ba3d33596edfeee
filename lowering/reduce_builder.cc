#include "lowering/reduce_builder.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "lowering/elementwise.h"
#include "support/status.h"

namespace kiln::lowering {

absl::StatusOr<std::vector<int64_t>> ReduceDims(const LowerContext& ctx,
                                                const std::optional<std::vector<int64_t>>& dims,
                                                int64_t rank) {
  std::vector<int64_t> out;
  if (!dims || dims->empty()) {
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  int64_t r = std::max<int64_t>(rank, 1);
  for (int64_t d : *dims) {
    if (d < -r || d >= r) return ctx.Invalid(absl::StrCat("dim ", d, " out of range"));
    if (rank == 0) continue;  // dim 0 / -1 of a 0-dim tensor reduces nothing
    out.push_back(d < 0 ? d + r : d);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    return ctx.Invalid("repeated dim in reduction");
  }
  return out;
}

int64_t ReducedCount(const TensorRef& x, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= x.layout.sizes[d];
  return n;
}

absl::StatusOr<TensorRef> AddReduce(LowerContext& ctx, const TensorRef& x, const ReduceSpec& spec) {
  const std::vector<int64_t>& in = x.layout.sizes;
  std::vector<bool> reduced(in.size(), false);
  for (int64_t d : spec.dims) reduced[d] = true;
  OutputInfo out;
  out.dtype = spec.stored;
  out.device = x.layout.device;
  std::vector<int64_t> reduction_ranges;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) {
      out.sizes.push_back(in[d]);
    } else {
      reduction_ranges.push_back(in[d]);
      if (spec.keepdim) out.sizes.push_back(1);
    }
  }
  int num_out = static_cast<int>(out.sizes.size());
  std::vector<int64_t> var_ranges = out.sizes;
  var_ranges.insert(var_ranges.end(), reduction_ranges.begin(), reduction_ranges.end());
  std::vector<ExprPtr> idx;
  int out_pos = 0, red_pos = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      idx.push_back(Var(num_out + red_pos++));
      if (spec.keepdim) ++out_pos;
    } else {
      idx.push_back(Var(out_pos++));
    }
  }
  ExprPtr body = Cast(ctx.LoadAt(x, idx, var_ranges), spec.accumulate);
  if (spec.prologue) body = spec.prologue(body);
  return ctx.AddReduction(out, std::move(reduction_ranges), spec.type, std::move(body));
}


absl::StatusOr<TensorRef> AddLogSumExp(LowerContext& ctx, const TensorRef& x,
                                       const std::vector<int64_t>& dims, bool keepdim,
                                       const OutputInfo& out) {
  DType acc = ComputeDType(out.dtype);
  ReduceSpec spec;
  spec.dims = dims;
  spec.keepdim = true;
  spec.type = ReductionType::kMax;
  spec.accumulate = acc;
  spec.stored = acc;
  ASSIGN_OR_RETURN(TensorRef m, AddReduce(ctx, x, spec));
  auto finite_max = [acc](ExprPtr mx) {
    ExprPtr is_inf = Binary(ExprOp::kEq, Unary(ExprOp::kAbs, mx), FloatConst(INFINITY, acc));
    return Where(is_inf, Literal(0, acc), mx);
  };
  // The sum's body reads m at the input index with the reduced dims at 0.
  std::vector<int64_t> in = x.layout.sizes;
  std::vector<bool> reduced(in.size(), false);
  for (int64_t d : spec.dims) reduced[d] = true;
  OutputInfo kept;
  kept.dtype = acc;
  kept.device = x.layout.device;
  kept.sizes = m.layout.sizes;
  std::vector<int64_t> red_ranges, var_ranges = kept.sizes;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) red_ranges.push_back(in[d]);
  }
  var_ranges.insert(var_ranges.end(), red_ranges.begin(), red_ranges.end());
  std::vector<ExprPtr> x_idx, m_idx;
  int red = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      x_idx.push_back(Var(static_cast<int>(kept.sizes.size()) + red++));
      m_idx.push_back(IntConst(0));
    } else {
      x_idx.push_back(Var(static_cast<int>(d)));
      m_idx.push_back(Var(static_cast<int>(d)));
    }
  }
  ExprPtr xv = Cast(ctx.LoadAt(x, x_idx, var_ranges), acc);
  ExprPtr mv = finite_max(ctx.LoadAt(m, m_idx, var_ranges));
  TensorRef s = ctx.AddReduction(kept, red_ranges, ReductionType::kSum,
                                 Unary(ExprOp::kExp, Binary(ExprOp::kSub, xv, mv)));
  // Output: over `out` (keepdim or not); index the kept-dim buffers.
  std::vector<ExprPtr> k_idx;
  int pos = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      k_idx.push_back(IntConst(0));
      if (keepdim) ++pos;
    } else {
      k_idx.push_back(Var(pos++));
    }
  }
  if (static_cast<size_t>(pos) != out.sizes.size()) {
    return ctx.Invalid("reduction shape disagrees with the output");
  }
  ExprPtr value = Binary(ExprOp::kAdd, Unary(ExprOp::kLog, ctx.LoadAt(s, k_idx, out.sizes)),
                         finite_max(ctx.LoadAt(m, k_idx, out.sizes)));
  return ctx.AddPointwise(out, value);
}

}  // namespace kiln::lowering
