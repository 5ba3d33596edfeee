#include "backends/cuda/kernel_reductions.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/cuda_expr_emitter.h"
#include "backends/cuda/kernel_identifiers.h"
#include "support/status.h"

namespace kiln::backends::cuda {

using lowering::Buffer;
using lowering::ExprPtr;
using lowering::ReductionType;

namespace {

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64 || IsNarrowFloat(t); }
// Float accumulators: float16/bfloat16 values accumulate in float.
DType FloatAccumulator(DType t) { return IsNarrowFloat(t) ? DType::kFloat32 : t; }

// ---------------------------------------------------------------------------
// Reductions.

struct ReductionPlan {
  const Buffer* buf = nullptr;
  ReductionType type = ReductionType::kSum;
  DType value_type = DType::kFloat32;  // the body's
  DType acc_type = DType::kFloat32;
  std::string acc_type_name;
  std::string identity;
  std::string acc, arg;  // accumulator names
  std::string mean;      // kWelfordM2: the mean register
  bool is_max = true;    // kMax/kArgmax vs kMin/kArgmin
};

// The extreme values of a type as literals of the accumulator type.
std::string Lowest(DType t) {
  switch (t) {
    case DType::kInt64: return "(-9223372036854775807LL - 1LL)";
    case DType::kInt32: return "(-2147483647 - 1)";
    case DType::kInt16: return "(-32768)";
    case DType::kInt8: return "(-128)";
    default: return "0";  // unsigned and bool
  }
}
std::string Highest(DType t) {
  switch (t) {
    case DType::kInt64: return "9223372036854775807LL";
    case DType::kInt32: return "2147483647";
    case DType::kInt16: return "32767";
    case DType::kInt8: return "127";
    case DType::kUInt8: return "255";
    case DType::kUInt16: return "65535";
    case DType::kUInt32: return "4294967295LL";
    case DType::kUInt64: return "18446744073709551615ULL";
    case DType::kBool: return "1";
    default: return "0";
  }
}

absl::StatusOr<ReductionPlan> PlanReduction(const Buffer& buf, const std::string& kernel_name, int index) {
  const lowering::Reduction& red = *buf.reduction;
  ReductionPlan p;
  p.buf = &buf;
  p.type = red.type;
  p.value_type = red.body->dtype;
  const DType vt = p.value_type;
  RETURN_IF_ERROR(CudaTypeName(vt).status());
  const bool fp = IsFloat(vt);
  p.acc = absl::StrCat("l_acc", index);
  p.arg = absl::StrCat("l_arg", index);
  switch (red.type) {
    case ReductionType::kSum:
    case ReductionType::kProd:
      p.acc_type = fp ? FloatAccumulator(vt) : DType::kInt64;
      p.identity = red.type == ReductionType::kSum ? "0" : "1";
      break;
    case ReductionType::kMax:
    case ReductionType::kMin:
    case ReductionType::kArgmax:
    case ReductionType::kArgmin: {
      p.is_max = red.type == ReductionType::kMax || red.type == ReductionType::kArgmax;
      if (fp) {
        p.acc_type = FloatAccumulator(vt);
      } else if (vt == DType::kInt64 || vt == DType::kUInt32) {
        p.acc_type = DType::kInt64;
      } else if (vt == DType::kUInt64) {
        p.acc_type = DType::kUInt64;
      } else {
        p.acc_type = DType::kInt32;  // shuffles need 4-byte values
      }
      p.identity = fp ? CudaFloatLiteral(p.is_max ? -std::numeric_limits<double>::infinity()
                                                  : std::numeric_limits<double>::infinity(),
                                         vt)
                      : (p.is_max ? Lowest(vt) : Highest(vt));
      break;
    }
    case ReductionType::kWelfordMean:
    case ReductionType::kWelfordM2:
      if (!fp) {
        return absl::UnimplementedError(absl::StrCat("cuda codegen: kernel ", CudaSafeText(kernel_name), ": ",
                                                     ReductionTypeName(red.type), " over a non-float body (buffer ",
                                                     CudaSafeText(buf.name), ")"));
      }
      p.acc_type = FloatAccumulator(vt);
      p.identity = "0";
      break;
  }
  ASSIGN_OR_RETURN(p.acc_type_name, CudaTypeName(p.acc_type));
  return p;
}

std::string Declare(const ReductionPlan& p, const std::string& indent) {
  std::string s = absl::StrCat(indent, p.acc_type_name, " ", p.acc, " = static_cast<", p.acc_type_name, ">(",
                               p.identity, ");\n");
  if (p.type == ReductionType::kArgmax || p.type == ReductionType::kArgmin) {
    absl::StrAppend(&s, indent, "long long ", p.arg, " = 0x7fffffffffffffffLL;\n");
  }
  return s;
}

// Accumulates each plan's body over the loop's elements.
class AccumulateBody : public LoopBody {
 public:
  AccumulateBody(std::vector<ReductionPlan*> plans) : plans_(std::move(plans)) {}

  absl::Status Emit(CudaExprEmitter& em, int lanes, int, bool, const std::vector<std::string>& pos,
                    const std::string& indent, std::string* out) override {
    for (ReductionPlan* p : plans_) {
      std::vector<std::string> values;
      for (int k = 0; k < lanes; ++k) {
        ASSIGN_OR_RETURN(std::string v, em.Emit(p->buf->reduction->body, k));
        values.push_back(v);
      }
      absl::StrAppend(out, em.TakeStatements());
      for (int k = 0; k < lanes; ++k) {
        const std::string v = p->value_type == p->acc_type
                                  ? values[k]
                                  : absl::StrCat("static_cast<", p->acc_type_name, ">(", values[k], ")");
        switch (p->type) {
          case ReductionType::kSum:
          case ReductionType::kWelfordMean:
            absl::StrAppend(out, indent, p->acc, " += ", v, ";\n");
            break;
          case ReductionType::kProd:
            absl::StrAppend(out, indent, p->acc, " *= ", v, ";\n");
            break;
          case ReductionType::kMax:
          case ReductionType::kMin:
            absl::StrAppend(out, indent, p->acc, " = ", p->is_max ? "kiln_reduce_max(" : "kiln_reduce_min(", p->acc, ", ", v, ");\n");
            break;
          case ReductionType::kArgmax:
          case ReductionType::kArgmin:
            absl::StrAppend(out, indent, "kiln_arg_take<", p->is_max ? "true" : "false", ">(", p->acc, ", ", p->arg,
                            ", ", v, ", ", pos[k], ");\n");
            break;
          case ReductionType::kWelfordM2:
            absl::StrAppend(out, indent, "{ const ", p->acc_type_name, " l_d = ", v, " - ", p->mean, "; ", p->acc,
                            " += l_d * l_d; }\n");
            break;
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  std::vector<ReductionPlan*> plans_;
};

}  // namespace

absl::StatusOr<ReductionKernelShape> ClassifyReductionKernel(const lowering::FusedKernel& kernel,
                                                             const std::vector<const Buffer*>& bufs) {
  ReductionKernelShape s;
  const Buffer* first = nullptr;
  for (const Buffer* b : bufs) {
    if (b->reduction) {
      first = b;
      break;
    }
  }
  s.ranges = first->reduction->ranges;
  s.reduction_ranges = first->reduction->reduction_ranges;
  s.outer = kernel.outer_ranges;
  if (s.outer.empty()) {
    // A hand-built kernel without outer ranges: the reductions' ranges, less
    // the trailing keepdim dims when an epilogue runs over the input space.
    s.outer = s.ranges;
    bool row_epilogue = false;
    for (const Buffer* b : bufs) row_epilogue = row_epilogue || (b->pointwise && b->pointwise->ranges != s.ranges);
    const size_t m = s.reduction_ranges.size();
    if (row_epilogue && m > 0 && s.outer.size() >= m &&
        std::all_of(s.outer.end() - static_cast<int64_t>(m), s.outer.end(), [](int64_t r) { return r == 1; })) {
      s.outer.resize(s.outer.size() - m);
    }
  }
  const size_t o = s.outer.size();
  bool ok = s.ranges.size() >= o && std::equal(s.outer.begin(), s.outer.end(), s.ranges.begin());
  for (size_t i = o; ok && i < s.ranges.size(); ++i) ok = s.ranges[i] == 1;
  if (!ok) {
    return absl::UnimplementedError(absl::StrCat(KernelErrorPrefix(kernel.name),
                                                 "outer ranges are not a prefix of the reduction's output ranges "
                                                 "followed by size-1 dims"));
  }
  std::vector<int64_t> row_space = s.outer;
  row_space.insert(row_space.end(), s.reduction_ranges.begin(), s.reduction_ranges.end());
  std::set<std::string> row_members;
  for (const Buffer* b : bufs) {
    if (b->reduction) {
      if (b->reduction->ranges != s.ranges || b->reduction->reduction_ranges != s.reduction_ranges) {
        return absl::UnimplementedError(
            absl::StrCat(KernelErrorPrefix(kernel.name), "reductions over different index spaces in one kernel"));
      }
      s.members.push_back({b, MemberKind::kReduction});
    } else if (b->pointwise->ranges == s.ranges) {
      s.members.push_back({b, MemberKind::kScalar});
    } else if (b->pointwise->ranges == row_space && !s.reduction_ranges.empty()) {
      s.members.push_back({b, MemberKind::kRow});
      row_members.insert(b->name);
    } else {
      return absl::UnimplementedError(absl::StrCat(KernelErrorPrefix(kernel.name), "pointwise member ", CudaSafeText(b->name),
                                                   " runs over neither the reduction's output nor its input space"));
    }
  }
  // Only row members may read row members (per-element values); everything
  // else reads them per outer index.
  for (const KernelMember& m : s.members) {
    if (m.kind == MemberKind::kRow) continue;
    std::vector<const lowering::Expr*> loads;
    const ExprPtr& body = m.buf->reduction ? m.buf->reduction->body : m.buf->pointwise->body;
    CollectLoadNodes(body, &loads);
    for (const lowering::Expr* l : loads) {
      if (row_members.count(l->buffer) != 0) {
        return absl::UnimplementedError(absl::StrCat(KernelErrorPrefix(kernel.name), "buffer ", CudaSafeText(m.buf->name),
                                                     " reads the per-element member ", CudaSafeText(l->buffer)));
      }
    }
  }
  return s;
}

namespace {

// `index` with each clamp of a term against a constant (min(x, c),
// max(x, c), as aten::cat's and padding's lowerings clamp a piece's index
// into range) replaced by the clamped term: the index walks memory as that
// term does everywhere but at the clamp's edges. Nodes past `budget` are
// kept as they are.
ExprPtr WithoutClamps(const ExprPtr& index, int* budget) {
  if (index == nullptr || --*budget < 0) return index;
  if ((index->op == lowering::ExprOp::kMin || index->op == lowering::ExprOp::kMax) && index->args.size() == 2) {
    for (int k = 0; k < 2; ++k) {
      const lowering::Expr* c = index->args[static_cast<size_t>(1 - k)].get();
      if (c->op == lowering::ExprOp::kIntConst) return WithoutClamps(index->args[static_cast<size_t>(k)], budget);
    }
  }
  // x - c as x + (-c): a piece's offset along the row is a constant term.
  if (index->op == lowering::ExprOp::kSub && index->args.size() == 2 &&
      index->args[1]->op == lowering::ExprOp::kIntConst) {
    return lowering::Binary(lowering::ExprOp::kAdd, WithoutClamps(index->args[0], budget),
                            lowering::IntConst(-index->args[1]->int_value, index->args[1]->dtype));
  }
  if (index->op != lowering::ExprOp::kAdd && index->op != lowering::ExprOp::kSub &&
      index->op != lowering::ExprOp::kMul) {
    return index;
  }
  std::vector<ExprPtr> args;
  bool changed = false;
  for (const ExprPtr& a : index->args) {
    args.push_back(WithoutClamps(a, budget));
    changed = changed || args.back() != a;
  }
  if (!changed) return index;
  auto copy = std::make_shared<lowering::Expr>(*index);
  copy->args = std::move(args);
  return copy;
}

}  // namespace

bool RowIsContiguous(const ReductionKernelShape& s) {
  int inner = -1;
  for (size_t i = s.reduction_ranges.size(); i-- > 0;) {
    if (s.reduction_ranges[i] != 1) {
      inner = static_cast<int>(s.ranges.size() + i);
      break;
    }
  }
  if (inner < 0) return false;
  for (const KernelMember& m : s.members) {
    if (m.kind != MemberKind::kReduction) continue;
    std::vector<const lowering::Expr*> loads;
    CollectLoadNodes(m.buf->reduction->body, &loads);
    for (const lowering::Expr* l : loads) {
      if (l->args.size() != 1) continue;
      // A concatenation along the row (swin's patch merging: four strided
      // slices of one tensor, then a layer norm over the joined channels)
      // reads each piece contiguously, so a warp per row reads coalesced
      // memory. With a thread per row (384-1536 elements each) these layer
      // norms took 0.30-0.61 ms a call at batch 32 on an H200, where the
      // model's warp-per-row layer norms took about 0.03 ms; with a warp per
      // row swin_t b32 bf16 went from 4.54 to 3.29 ms (backends/cuda/README.md).
      int budget = 256;
      if (HasUnitStride(l->args[0], inner) || HasUnitStride(WithoutClamps(l->args[0], &budget), inner)) {
        return true;
      }
    }
  }
  return false;
}

absl::Status EmitReductionMembers(KernelContext& ctx, const lowering::FusedKernel& kernel,
                                  const ReductionKernelShape& s, Cooperation coop, int threads,
                                  const std::string& indent, std::string* out) {
  const size_t o = s.outer.size();
  const size_t k = s.ranges.size();
  const size_t m = s.reduction_ranges.size();
  ASSIGN_OR_RETURN(int64_t rnumel, SpaceSize(s.reduction_ranges, "reduction ranges"));
  std::vector<std::string> outer_vars(o);
  for (size_t i = 0; i < o; ++i) outer_vars[i] = s.outer[i] == 1 ? "0LL" : absl::StrCat("l_o", i);
  const bool row_scheme = coop != Cooperation::kThread;
  const std::string loop_start =
      coop == Cooperation::kBlock ? "threadIdx.x" : (coop == Cooperation::kWarp ? "(threadIdx.x & 31U)" : "0U");
  const std::string loop_stride = absl::StrCat(threads, "U");
  const std::string store_guard = coop == Cooperation::kBlock
                                      ? "if (threadIdx.x == 0) "
                                      : (coop == Cooperation::kWarp ? "if ((threadIdx.x & 31U) == 0) " : "");

  // Bindings for a reduction's body (v0..v{k+m-1}) and a row member's (v0..v{o+m-1}).
  std::vector<std::string> red_bindings(k + m, "0LL");
  for (size_t i = 0; i < o; ++i) red_bindings[i] = outer_vars[i];
  std::vector<std::string> row_bindings(o + m, "0LL");
  for (size_t i = 0; i < o; ++i) row_bindings[i] = outer_vars[i];

  // Block rows of a few groups per thread: unrolled loops, and read-only
  // rows cached in registers across the kernel's passes.
  int64_t inner = 1;
  for (size_t j = m; j-- > 0;) {
    if (s.reduction_ranges[j] != 1) {
      inner = s.reduction_ranges[j];
      break;
    }
  }
  const int64_t row_groups = inner >= ctx.lanes ? rnumel / inner * ((inner + ctx.lanes - 1) / ctx.lanes) : rnumel;
  const int64_t trips = (row_groups + threads - 1) / threads;
  RowCache cache;
  cache.trips = static_cast<int>(trips);
  cache.lanes = ctx.lanes;
  cache.buffers.insert(kernel.reads.begin(), kernel.reads.end());
  const bool unroll = row_scheme && trips > 0 && trips <= kMaxRowTrips;
  auto configure = [&](SpaceLoop& loop) {
    if (!unroll) return;
    loop.unrolled_trips = static_cast<int>(trips);
    if (inner >= ctx.lanes) loop.cache = &cache;
  };

  const size_t out_start = out->size();
  std::vector<ReductionPlan> plans;
  plans.reserve(s.members.size());
  std::map<const lowering::Expr*, std::string> means;  // welford mean register by body
  size_t i = 0;
  int member_index = 0;
  while (i < s.members.size()) {
    const KernelMember& mem = s.members[i];
    if (mem.kind == MemberKind::kScalar) {
      const Buffer& b = *mem.buf;
      CudaExprEmitter em(&ctx.refs, red_bindings, &ctx.temps);
      em.set_indent(indent);
      ASSIGN_OR_RETURN(std::string v, em.Emit(b.pointwise->body));
      ASSIGN_OR_RETURN(ExprPtr store, StoreIndex(b, s.ranges));
      ASSIGN_OR_RETURN(std::string index, em.Emit(store));
      ASSIGN_OR_RETURN(std::string type, CudaTypeName(b.layout.dtype));
      const std::string reg = absl::StrCat("l_s", member_index++);
      absl::StrAppend(out, em.TakeStatements(), indent, "const ", type, " ", reg, " = ",
                      StoredValue(v, b.pointwise->body->dtype, b.layout.dtype, type), ";\n");
      absl::StrAppend(out, indent, store_guard, ctx.refs.at(b.name).identifier, "[", index,
                      "] = ", CudaStoreValue(reg, b.layout.dtype), ";\n");
      ctx.refs[b.name].scalar = reg;
      ctx.refs[b.name].scalar_dtype = b.layout.dtype;
      ++i;
      continue;
    }
    if (mem.kind == MemberKind::kRow) {
      // Consecutive row members share one pass over the row.
      std::vector<StoreBody::Member> group;
      std::vector<int64_t> row_ranges = s.outer;
      row_ranges.insert(row_ranges.end(), s.reduction_ranges.begin(), s.reduction_ranges.end());
      while (i < s.members.size() && s.members[i].kind == MemberKind::kRow) {
        const Buffer& b = *s.members[i].buf;
        ASSIGN_OR_RETURN(ExprPtr store, StoreIndex(b, row_ranges));
        group.push_back({&b, b.pointwise->body, store});
        ++i;
      }
      SpaceLoop loop;
      loop.sizes = s.reduction_ranges;
      for (size_t j = 0; j < m; ++j) loop.vars.push_back(static_cast<int>(o + j));
      loop.bindings = row_bindings;
      loop.prefix = "l_r";
      loop.start = loop_start;
      loop.stride = loop_stride;
      configure(loop);
      StoreBody body(&ctx, std::move(group));
      ASSIGN_OR_RETURN(std::string text, EmitSpaceLoop(ctx, loop, body, indent));
      absl::StrAppend(out, text);
      continue;
    }
    // Consecutive reductions that do not read each other share one pass; a
    // welford M2 needs its mean first (from an earlier pass, or its own).
    std::vector<size_t> group;
    std::set<std::string> in_group;
    while (i < s.members.size() && s.members[i].kind == MemberKind::kReduction) {
      const Buffer& b = *s.members[i].buf;
      std::vector<const lowering::Expr*> loads;
      CollectLoadNodes(b.reduction->body, &loads);
      bool reads_group = false;
      for (const lowering::Expr* l : loads) reads_group = reads_group || in_group.count(l->buffer) != 0;
      const bool needs_mean = b.reduction->type == ReductionType::kWelfordM2 &&
                              means.count(b.reduction->body.get()) == 0;
      bool mean_in_group = false;
      if (b.reduction->type == ReductionType::kWelfordM2) {
        for (size_t g : group) {
          const Buffer& gb = *s.members[g].buf;
          mean_in_group = mean_in_group || (gb.reduction->type == ReductionType::kWelfordMean &&
                                            gb.reduction->body.get() == b.reduction->body.get());
        }
      }
      if (!group.empty() && (reads_group || mean_in_group)) break;
      group.push_back(i);
      in_group.insert(b.name);
      ++i;
      if (needs_mean && !mean_in_group) break;  // its own mean pass comes first
    }
    std::vector<ReductionPlan*> group_plans;
    for (size_t g : group) {
      ASSIGN_OR_RETURN(ReductionPlan p, PlanReduction(*s.members[g].buf, kernel.name, member_index++));
      plans.push_back(std::move(p));
      group_plans.push_back(&plans.back());
    }
    SpaceLoop loop;
    loop.sizes = s.reduction_ranges;
    for (size_t j = 0; j < m; ++j) loop.vars.push_back(static_cast<int>(k + j));
    loop.bindings = red_bindings;
    loop.prefix = "l_r";
    loop.start = loop_start;
    loop.stride = loop_stride;
    configure(loop);
    const std::string n_text = absl::StrCat(rnumel);
    auto combine = [&](ReductionPlan& p) {
      if (!row_scheme) return std::string();
      const char* op = "kiln_op_sum()";
      switch (p.type) {
        case ReductionType::kProd: op = "kiln_op_prod()"; break;
        case ReductionType::kMax: op = "kiln_op_max()"; break;
        case ReductionType::kMin: op = "kiln_op_min()"; break;
        case ReductionType::kArgmax:
        case ReductionType::kArgmin:
          if (coop == Cooperation::kWarp) {
            return absl::StrCat(indent, "kiln_warp_arg_reduce<", p.is_max ? "true" : "false", ">(", p.acc, ", ",
                                p.arg, ");\n");
          }
          return absl::StrCat(indent, p.arg, " = kiln_block_arg_reduce<", p.is_max ? "true" : "false", ">(", p.acc,
                              ", ", p.arg, ", static_cast<", p.acc_type_name, ">(", p.identity, "));\n");
        default: break;
      }
      if (coop == Cooperation::kWarp) return absl::StrCat(indent, p.acc, " = kiln_warp_reduce(", p.acc, ", ", op, ");\n");
      return absl::StrCat(indent, p.acc, " = kiln_block_reduce(", p.acc, ", ", op, ", static_cast<", p.acc_type_name,
                          ">(", p.identity, "));\n");
    };
    // Welford M2 without a mean yet: a sum pass for the mean first.
    for (ReductionPlan* p : group_plans) {
      if (p->type != ReductionType::kWelfordM2) continue;
      auto it = means.find(p->buf->reduction->body.get());
      if (it != means.end()) {
        p->mean = it->second;
        continue;
      }
      ReductionPlan mean_plan = *p;
      mean_plan.type = ReductionType::kWelfordMean;
      mean_plan.acc = absl::StrCat(p->acc, "_mean");
      absl::StrAppend(out, Declare(mean_plan, indent));
      AccumulateBody mean_body({&mean_plan});
      ASSIGN_OR_RETURN(std::string text, EmitSpaceLoop(ctx, loop, mean_body, indent));
      absl::StrAppend(out, text, combine(mean_plan));
      p->mean = absl::StrCat(p->acc, "_m");
      absl::StrAppend(out, indent, "const ", p->acc_type_name, " ", p->mean, " = ", mean_plan.acc, " / static_cast<",
                      p->acc_type_name, ">(", n_text, ");\n");
      means[p->buf->reduction->body.get()] = p->mean;
    }
    for (ReductionPlan* p : group_plans) absl::StrAppend(out, Declare(*p, indent));
    AccumulateBody body(group_plans);
    ASSIGN_OR_RETURN(std::string text, EmitSpaceLoop(ctx, loop, body, indent));
    absl::StrAppend(out, text);
    for (ReductionPlan* p : group_plans) {
      absl::StrAppend(out, combine(*p));
      const Buffer& b = *p->buf;
      ASSIGN_OR_RETURN(std::string type, CudaTypeName(b.layout.dtype));
      std::string result = p->acc;
      DType result_type = p->acc_type;
      switch (p->type) {
        case ReductionType::kArgmax:
        case ReductionType::kArgmin:
          result = absl::StrCat("(", p->arg, " == 0x7fffffffffffffffLL ? 0LL : ", p->arg, ")");
          result_type = DType::kInt64;
          break;
        case ReductionType::kWelfordMean:
          result = absl::StrCat(p->acc, " / static_cast<", p->acc_type_name, ">(", n_text, ")");
          break;
        default:
          break;
      }
      const std::string reg = absl::StrCat("l_s", member_index++);
      absl::StrAppend(out, indent, "const ", type, " ", reg, " = ", StoredValue(result, result_type, b.layout.dtype, type),
                      ";\n");
      if (p->type == ReductionType::kWelfordMean) {
        means[b.reduction->body.get()] = absl::StrCat("l_mean", member_index);
        absl::StrAppend(out, indent, "const ", p->acc_type_name, " l_mean", member_index, " = ", result, ";\n");
      }
      CudaExprEmitter em(&ctx.refs, red_bindings, &ctx.temps);
      em.set_indent(indent);
      ASSIGN_OR_RETURN(ExprPtr store, StoreIndex(b, s.ranges));
      ASSIGN_OR_RETURN(std::string index, em.Emit(store));
      absl::StrAppend(out, em.TakeStatements(), indent, store_guard, ctx.refs.at(b.name).identifier, "[", index,
                      "] = ", CudaStoreValue(reg, b.layout.dtype), ";\n");
      ctx.refs[b.name].scalar = reg;
      ctx.refs[b.name].scalar_dtype = b.layout.dtype;
    }
  }
  // Cached rows no later pass reads: drop their arrays (declaration and
  // fill lines), which would only draw "set but never used" warnings.
  std::vector<std::string> unread;
  for (const auto& [key, array] : cache.arrays) {
    if (cache.read.count(array) == 0) unread.push_back(absl::StrCat(array, "["));
  }
  if (!unread.empty()) {
    std::string kept = out->substr(0, out_start);
    for (absl::string_view line : absl::StrSplit(absl::string_view(*out).substr(out_start), '\n', absl::SkipEmpty())) {
      bool drop = false;
      for (const std::string& u : unread) drop = drop || absl::StrContains(line, u);
      if (!drop) absl::StrAppend(&kept, line, "\n");
    }
    *out = std::move(kept);
  }
  return absl::OkStatus();
}

std::string UnravelOuter(const std::vector<int64_t>& outer, const std::string& flat, const std::string& indent,
                         bool narrow) {
  int remaining = 0;
  for (int64_t r : outer) remaining += r != 1;
  if (remaining == 0) return "";
  const char* suffix = narrow ? "U" : "ULL";
  std::string out = absl::StrCat(indent, narrow ? "unsigned int" : "unsigned long long", " l_orem = ", flat, ";\n");
  for (size_t i = outer.size(); i-- > 0;) {
    if (outer[i] == 1) continue;
    --remaining;
    absl::StrAppend(&out, indent, "const long long l_o", i, " = static_cast<long long>(",
                    remaining == 0 ? std::string("l_orem") : absl::StrCat("l_orem % ", outer[i], suffix), ");\n");
    if (remaining > 0) absl::StrAppend(&out, indent, "l_orem /= ", outer[i], suffix, ";\n");
  }
  return out;
}

}  // namespace kiln::backends::cuda
