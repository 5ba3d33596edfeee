#include "backends/cpu/kernel_codegen.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/expr_emitter.h"
#include "backends/cpu/identifiers.h"
#include "backends/cpu/kept_values.h"
#include "backends/cpu/layout_util.h"
#include "backends/cpu/row_reciprocals.h"
#include "lowering/expr_rewrite.h"
#include "support/status.h"

namespace kiln::backends::cpu {

using lowering::Buffer;
using lowering::BufferKind;
using lowering::ReductionType;

namespace {

// Element count of an index space; error past int64 or for negative sizes.
absl::StatusOr<int64_t> SpaceSize(const std::vector<int64_t>& ranges, const std::string& what) {
  int64_t n = 1;
  for (int64_t r : ranges) {
    if (r < 0) return absl::InvalidArgumentError(absl::StrCat("cpu codegen: ", what, " has a negative range"));
    if (r != 0 && n > std::numeric_limits<int64_t>::max() / r) {
      return absl::InvalidArgumentError(absl::StrCat("cpu codegen: ", what, " overflows int64"));
    }
    n *= r;
  }
  return n;
}

// The flat storage offset a buffer stores index (v0..v{k-1}) of `ranges` at.
absl::StatusOr<std::string> StoreIndex(const Buffer& buf, const std::vector<int64_t>& ranges) {
  const lowering::Layout& l = buf.layout;
  if (l.strides.size() != l.sizes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu codegen: buffer ", SanitizeComment(buf.name), " has ", l.sizes.size(),
                     " sizes but ", l.strides.size(), " strides"));
  }
  std::vector<std::string> terms = {IntLiteral(l.offset)};
  if (l.sizes == ranges) {
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i] != 1) terms.push_back(absl::StrCat("l_v", i, " * ", IntLiteral(l.strides[i])));
    }
    return absl::StrCat("(", absl::StrJoin(terms, " + "), ")");
  }
  // Same element count, different shape (e.g. keepdim): row-major over the
  // ranges, which needs a contiguous layout.
  ASSIGN_OR_RETURN(int64_t n, SpaceSize(ranges, "loop"));
  ASSIGN_OR_RETURN(int64_t m, SpaceSize(l.sizes, "layout"));
  if (n != m || !IsContiguousLayout(l)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu codegen: buffer ", SanitizeComment(buf.name), " layout ", LayoutString(l),
        " does not match its loop ranges"));
  }
  int64_t stride = 1;
  for (size_t i = ranges.size(); i-- > 0;) {
    if (ranges[i] != 1) terms.push_back(absl::StrCat("l_v", i, " * ", IntLiteral(stride)));
    stride *= ranges[i];
  }
  return absl::StrCat("(", absl::StrJoin(terms, " + "), ")");
}

struct LoopSpec {
  std::vector<int64_t> ranges;
  int first_var = 0;
};

// Opens loops for `ranges` binding l_v{first}..; size-1 dims become
// constants. `pragma_outer` goes on the outermost loop (or is dropped when
// no loop is left); `pragma_inner` on the innermost. Returns the number of
// opened braces.
int OpenLoops(const std::vector<int64_t>& ranges, int first_var, const std::string& pragma_outer,
              const std::string& pragma_inner, std::string& indent, std::string* out) {
  std::vector<size_t> loops;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i] == 1) {
      absl::StrAppend(out, indent, "const int64_t l_v", first_var + i, " = 0;\n");
    } else {
      loops.push_back(i);
    }
  }
  for (size_t j = 0; j < loops.size(); ++j) {
    const size_t i = loops[j];
    if (j == 0 && !pragma_outer.empty()) {
      std::string p = pragma_outer;
      // collapse(@): all loops but the innermost (which keeps simd);
      // collapse(*): all loops.
      const size_t n = p.find("collapse(@)") != std::string::npos ? loops.size() - 1 : loops.size();
      for (const char* token : {"collapse(@)", "collapse(*)"}) {
        const size_t at = p.find(token);
        if (at == std::string::npos) continue;
        p.replace(at, 11, n > 1 ? absl::StrCat("collapse(", n, ")") : std::string());
      }
      absl::StrAppend(out, indent, p, "\n");
    } else if (j + 1 == loops.size() && !pragma_inner.empty()) {
      absl::StrAppend(out, indent, pragma_inner, "\n");
    }
    absl::StrAppend(out, indent, "for (int64_t l_v", first_var + i, " = 0; l_v", first_var + i,
                    " < ", IntLiteral(ranges[i]), "; ++l_v", first_var + i, ") {\n");
    indent += "  ";
  }
  return static_cast<int>(loops.size());
}

void CloseLoops(int n, std::string& indent, std::string* out) {
  for (int i = 0; i < n; ++i) {
    indent.resize(indent.size() - 2);
    absl::StrAppend(out, indent, "}\n");
  }
}

int NonUnitDims(const std::vector<int64_t>& r) {
  int n = 0;
  for (int64_t v : r) n += v != 1;
  return n;
}

// Elements of work per scheduling chunk of a parallel loop: about 1/32 of
// the loop, clamped to [16K, 256K] elements.
constexpr int64_t kMinChunkElements = 16384;
constexpr int64_t kMaxChunkElements = 262144;
constexpr int64_t kChunksPerLoop = 32;

// ` schedule(dynamic, C)` for a parallel loop whose iterations each do
// `work_per_iteration` elements of work, `total_work` in all. Chunks rather
// than static halves: on a shared 2-core machine one thread is often
// descheduled for milliseconds, and with static halves the other then idles
// at the barrier; with chunks it takes over the rest. Large chunks (up to
// 1 MB of float32) keep each thread streaming long contiguous runs, which
// the hardware prefetchers need: 4-row (64 KB) chunks of sum(-1) over
// [4096, 4096] ran ~15% slower than 64-row ones.
//
// The team is the pool, or one thread for one chunk (kiln_threads in the
// prelude says why never a size in between).
std::string DynamicSchedule(int64_t work_per_iteration, int64_t total_work) {
  const int64_t target =
      std::clamp<int64_t>(total_work / kChunksPerLoop, kMinChunkElements, kMaxChunkElements);
  const int64_t per = std::max<int64_t>(work_per_iteration, 1);
  const int64_t chunk = std::max<int64_t>(1, target / per);
  const int64_t iterations = std::max<int64_t>(1, total_work / per);
  const int64_t chunks = (iterations + chunk - 1) / chunk;
  return absl::StrCat(" schedule(dynamic, ", chunk, ") num_threads(kiln_threads(", chunks, "))");
}

int64_t InnermostRange(const std::vector<int64_t>& r) {
  for (size_t i = r.size(); i-- > 0;) {
    if (r[i] != 1) return r[i];
  }
  return 1;
}

// `shared`: the number of leading dims whose loops the kernel already opened
// (a shared outer nest, see CpuKernelSource); those loops own the threads.
// `body`: the pointwise's body, or its rewrite that reads back a kept value.
absl::Status EmitPointwise(const Buffer& buf, const lowering::ExprPtr& body,
                           const std::map<std::string, BufferRef>& refs, int* temps, size_t shared,
                           std::string* out) {
  const lowering::Pointwise& pw = *buf.pointwise;
  ASSIGN_OR_RETURN(int64_t numel, SpaceSize(pw.ranges, "pointwise ranges"));
  if (numel == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string store, StoreIndex(buf, pw.ranges));
  ASSIGN_OR_RETURN(std::string type, CTypeName(buf.layout.dtype));
  const BufferRef& self = refs.at(buf.name);
  const std::vector<int64_t> own(pw.ranges.begin() + static_cast<int64_t>(shared), pw.ranges.end());
  const bool parallel = shared == 0 && numel >= kParallelThreshold;
  const int dims = NonUnitDims(own);
  std::string outer, inner = "#pragma omp simd";
  if (parallel) {
    outer = dims == 1 ? absl::StrCat("#pragma omp parallel for simd", DynamicSchedule(1, numel))
                      : absl::StrCat("#pragma omp parallel for collapse(@)",
                                     DynamicSchedule(InnermostRange(own), numel));
  }
  else if (dims == 1) outer = "#pragma omp simd";
  std::string indent(2 * (shared + 1), ' ');
  absl::StrAppend(out, indent, "{\n");
  indent += "  ";
  // The loop nest computing `b`, loads resolved through `r`.
  auto nest = [&](const lowering::ExprPtr& b, const std::map<std::string, BufferRef>& r) -> absl::Status {
    const int opened = OpenLoops(own, static_cast<int>(shared), outer, inner, indent, out);
    ExprEmitter em(&r, static_cast<int>(pw.ranges.size()), temps);
    em.set_indent(indent);
    ASSIGN_OR_RETURN(std::string value, em.Emit(b));
    ASSIGN_OR_RETURN(std::string body_type, CTypeName(b->dtype));
    absl::StrAppend(out, em.statements());
    const std::string stored = b->dtype == buf.layout.dtype
                                   ? value
                                   : (buf.layout.dtype == DType::kBool
                                          ? absl::StrCat("(", value, " != 0)")
                                          : absl::StrCat("static_cast<", type, ">(", value, ")"));
    absl::StrAppend(out, indent, self.identifier, "[", store, "] = ", stored, ";\n");
    CloseLoops(opened, indent, out);
    return absl::OkStatus();
  };
  // Inside a shared nest, divisions by a value of the row multiply by its
  // reciprocal, computed once (row_reciprocals.h); a row whose reciprocal
  // overflows runs the divisions.
  const std::vector<lowering::ExprPtr> divisions =
      shared > 0 ? RowInvariantDivisions(body, static_cast<int>(shared)) : std::vector<lowering::ExprPtr>();
  if (divisions.empty()) {
    RETURN_IF_ERROR(nest(body, refs));
  } else {
    ExprEmitter em(&refs, static_cast<int>(pw.ranges.size()), temps);
    em.set_indent(indent);
    std::map<std::string, BufferRef> with_reciprocals = refs;
    lowering::ExprPtr multiplied = body;
    std::string reciprocals, exact;
    for (size_t i = 0; i < divisions.size(); ++i) {
      const lowering::ExprPtr& d = divisions[i];
      ASSIGN_OR_RETURN(std::string divisor, em.Emit(d->args[1]));
      ASSIGN_OR_RETURN(std::string dtype_name, CTypeName(d->dtype));
      const std::string r = absl::StrCat("l_r", i);
      absl::StrAppend(&reciprocals, indent, "const ", dtype_name, " ", r, " = ", FloatLiteral(1.0, d->dtype), " / ",
                      divisor, ";\n");
      absl::StrAppend(&exact, i == 0 ? "" : " && ", "(__builtin_isinf(", r, ") == 0 || ", divisor, " == 0)");
      // A name no buffer has (not a C identifier): loads of it read `r`.
      const std::string name = absl::StrCat("#", r);
      with_reciprocals[name] = BufferRef{"", d->dtype, r, d->dtype};
      multiplied = lowering::ReplaceNode(
          multiplied, d.get(),
          lowering::Binary(lowering::ExprOp::kMul, d->args[0], lowering::Load(name, d->dtype, lowering::IntConst(0))));
    }
    absl::StrAppend(out, em.statements(), reciprocals, indent, "if (", exact, ") {\n");
    indent += "  ";
    RETURN_IF_ERROR(nest(multiplied, with_reciprocals));
    indent.resize(indent.size() - 2);
    absl::StrAppend(out, indent, "} else {\n");
    indent += "  ";
    RETURN_IF_ERROR(nest(body, refs));
    indent.resize(indent.size() - 2);
    absl::StrAppend(out, indent, "}\n");
  }
  indent.resize(indent.size() - 2);
  absl::StrAppend(out, indent, "}\n");
  return absl::OkStatus();
}

bool IsFloatType(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

// Lanes of partial accumulators a blocked reduction keeps per accumulator:
// 64 floats are 4 AVX-512 / 8 AVX2 registers, i.e. that many independent
// add chains instead of one (a single vector accumulator is bound by the
// add latency: ~40% slower on sum(-1) of a cache-resident 64 MB).
constexpr int64_t kReductionBlock = 64;

// One accumulator of a reduction pass. The caller declares `name`; a
// blocked pass adds `name`_p[kReductionBlock] partials and folds them into
// `name` with `op` (an OpenMP reduction operator: + * max min |).
struct Accumulator {
  std::string name;
  std::string type;
  std::string init;
  std::string op;
};

std::string FoldPartial(const Accumulator& a) {
  const std::string p = absl::StrCat(a.name, "_p[l_vi]");
  if (a.op == "max" || a.op == "min") {
    return absl::StrCat(a.name, " = ", p, a.op == "max" ? " > " : " < ", a.name, " ? ", p, " : ", a.name, ";");
  }
  return absl::StrCat(a.name, " ", a.op, "= ", p, ";");
}

// The accumulation statement(s) of one element: update(indent, value, sfx)
// where accumulator `x` is spelled `x` + sfx ("" or "_p[l_vi]").
using UpdateFn = std::function<std::string(const std::string&, const std::string&, const std::string&)>;

// A value of a reduction's body that a later member reads back (kept_values.h):
// stored as `target`[`index`] = `value` for every element of the reduced space.
struct KeptStore {
  lowering::ExprPtr value;  // a node of the reduction's body
  lowering::ExprPtr index;  // over the reduction's index variables
  std::string target;       // the C identifier of the member's buffer
};

// Emits the body of `red` for one element of its reduced space, the stores
// of its kept values, and the update.
absl::Status EmitReducedBody(const lowering::Reduction& red, const std::map<std::string, BufferRef>& refs,
                             int* temps, int num_vars, const std::string& indent, const std::string& sfx,
                             const std::vector<KeptStore>& kept, const UpdateFn& update, std::string* out) {
  ExprEmitter em(&refs, num_vars, temps);
  em.set_indent(indent);
  ASSIGN_OR_RETURN(std::string value, em.Emit(red.body));
  std::string stores;
  for (const KeptStore& k : kept) {
    // `value` is a node of the body: the emitter returns the body's temporary.
    ASSIGN_OR_RETURN(std::string v, em.Emit(k.value));
    ASSIGN_OR_RETURN(std::string index, em.Emit(k.index));
    absl::StrAppend(&stores, indent, k.target, "[", index, "] = ", v, ";\n");
  }
  absl::StrAppend(out, em.statements(), stores);
  absl::StrAppend(out, update(indent, value, sfx));
  return absl::OkStatus();
}

// One pass over the reduced index space inside the output loops.
// Unblocked: the loops with `pragma_outer`/`pragma_inner` and one scalar
// accumulator per Accumulator (an `omp simd reduction` gives one vector
// register of partials). Blocked: the innermost reduced loop runs in blocks
// of kReductionBlock whose lanes accumulate into partial arrays (several
// independent vector registers), a scalar tail, then the partials fold into
// the accumulators.
absl::Status EmitReductionPass(const lowering::Reduction& red, const std::map<std::string, BufferRef>& refs,
                               int* temps, const std::string& pragma_outer, const std::string& pragma_inner,
                               const std::vector<Accumulator>& accs, bool blocked,
                               const std::vector<KeptStore>& kept, std::string& indent, std::string* out,
                               const UpdateFn& update) {
  const int k = static_cast<int>(red.ranges.size());
  const int num_vars = k + static_cast<int>(red.reduction_ranges.size());
  // Each pass in its own scope: a two-pass reduction (Welford's mean then M2)
  // declares the same loop constants for size-1 dims twice.
  absl::StrAppend(out, indent, "{\n");
  const std::string outer_indent = indent;
  indent += "  ";
  if (!blocked) {
    const int opened = OpenLoops(red.reduction_ranges, k, pragma_outer, pragma_inner, indent, out);
    RETURN_IF_ERROR(EmitReducedBody(red, refs, temps, num_vars, indent, "", kept, update, out));
    CloseLoops(opened, indent, out);
    indent = outer_indent;
    absl::StrAppend(out, indent, "}\n");
    return absl::OkStatus();
  }
  const std::vector<int64_t>& rr = red.reduction_ranges;
  size_t last = rr.size();
  while (last > 0 && rr[last - 1] == 1) --last;
  if (last == 0) return absl::InternalError("cpu codegen: blocked reduction without a reduced loop");
  --last;
  const int64_t n = rr[last];
  const int64_t full = n / kReductionBlock * kReductionBlock;
  const std::string block = IntLiteral(kReductionBlock);
  for (const Accumulator& a : accs) {
    absl::StrAppend(out, indent, a.type, " ", a.name, "_p[", kReductionBlock, "];\n", indent,
                    "#pragma omp simd\n", indent, "for (int64_t l_vi = 0; l_vi < ", block, "; ++l_vi) ", a.name,
                    "_p[l_vi] = ", a.init, ";\n");
  }
  const std::vector<int64_t> prefix(rr.begin(), rr.begin() + static_cast<int64_t>(last));
  const int opened = OpenLoops(prefix, k, "", "", indent, out);
  for (size_t i = last + 1; i < rr.size(); ++i) {
    absl::StrAppend(out, indent, "const int64_t l_v", k + static_cast<int>(i), " = 0;\n");
  }
  const std::string var = absl::StrCat("l_v", k + static_cast<int>(last));
  absl::StrAppend(out, indent, "for (int64_t l_vb = 0; l_vb < ", IntLiteral(full), "; l_vb += ", block, ") {\n");
  absl::StrAppend(out, indent, "  #pragma omp simd\n", indent, "  for (int64_t l_vi = 0; l_vi < ", block,
                  "; ++l_vi) {\n", indent, "    const int64_t ", var, " = l_vb + l_vi;\n");
  RETURN_IF_ERROR(EmitReducedBody(red, refs, temps, num_vars, indent + "    ", "_p[l_vi]", kept, update, out));
  absl::StrAppend(out, indent, "  }\n", indent, "}\n");
  if (full < n) {
    absl::StrAppend(out, indent, "for (int64_t ", var, " = ", IntLiteral(full), "; ", var, " < ", IntLiteral(n),
                    "; ++", var, ") {\n");
    RETURN_IF_ERROR(EmitReducedBody(red, refs, temps, num_vars, indent + "  ", "", kept, update, out));
    absl::StrAppend(out, indent, "}\n");
  }
  CloseLoops(opened, indent, out);
  std::string clauses;
  std::string folds;
  for (const Accumulator& a : accs) {
    absl::StrAppend(&clauses, " reduction(", a.op, ":", a.name, ")");
    absl::StrAppend(&folds, " ", FoldPartial(a));
  }
  absl::StrAppend(out, indent, "#pragma omp simd", clauses, "\n", indent, "for (int64_t l_vi = 0; l_vi < ", block,
                  "; ++l_vi) {", folds, " }\n");
  indent = outer_indent;
  absl::StrAppend(out, indent, "}\n");
  return absl::OkStatus();
}

// `kept`: values of the body that later members read back (stored in the
// first pass over the reduced space).
absl::Status EmitReduction(const Buffer& buf, const std::map<std::string, BufferRef>& refs, int* temps,
                           size_t shared, const std::vector<KeptStore>& kept, std::string* out) {
  const lowering::Reduction& red = *buf.reduction;
  if (red.body == nullptr) return absl::InvalidArgumentError("cpu codegen: reduction without a body");
  ASSIGN_OR_RETURN(int64_t numel, SpaceSize(red.ranges, "reduction output ranges"));
  ASSIGN_OR_RETURN(int64_t rnumel, SpaceSize(red.reduction_ranges, "reduction ranges"));
  if (numel == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::string store, StoreIndex(buf, red.ranges));
  ASSIGN_OR_RETURN(std::string out_type, CTypeName(buf.layout.dtype));
  const DType vt = red.body->dtype;
  ASSIGN_OR_RETURN(std::string vtype, CTypeName(vt));
  const bool fp = IsFloatType(vt);
  // Accumulators: the body's float type, or int64 for integers and bools.
  const DType at = fp ? vt : DType::kInt64;
  ASSIGN_OR_RETURN(std::string atype, CTypeName(at));
  const std::string& self = refs.at(buf.name).identifier;

  const int64_t total = numel * std::max<int64_t>(rnumel, 1);
  const bool parallel = shared == 0 && total >= kParallelThreshold;
  const std::vector<int64_t> own(red.ranges.begin() + static_cast<int64_t>(shared), red.ranges.end());
  const int outer_dims = NonUnitDims(red.ranges);
  const int red_dims = NonUnitDims(red.reduction_ranges);
  // Parallelize over outputs, or (a full reduction) over the reduced loop.
  const bool parallel_outputs = parallel && outer_dims > 0;
  const bool parallel_reduce = parallel && outer_dims == 0;
  // Float reductions over long enough rows keep several vector registers
  // of partials (a full reduction already has one accumulator per thread).
  const bool blocked = fp && !parallel_reduce && InnermostRange(red.reduction_ranges) >= 2 * kReductionBlock;

  std::string indent(2 * (shared + 1), ' ');
  absl::StrAppend(out, indent, "{\n");
  indent += "  ";
  std::string outer_pragma =
      parallel_outputs ? absl::StrCat("#pragma omp parallel for collapse(*)", DynamicSchedule(rnumel, total)) : "";
  // Outer loops: a dummy inner pragma is never placed (the innermost output
  // loop holds the reduction), so pass the same pragma only on the outermost.
  const int opened = OpenLoops(own, static_cast<int>(shared), outer_pragma, "", indent, out);

  auto red_pragmas = [&](const std::string& clause) {
    // Returns {outer, inner} pragmas for the reduced loops.
    std::string simd = absl::StrCat("#pragma omp simd ", clause);
    if (parallel_reduce) {
      if (red_dims == 1) {
        return std::make_pair(absl::StrCat("#pragma omp parallel for simd ", clause, DynamicSchedule(1, rnumel)),
                              std::string());
      }
      return std::make_pair(absl::StrCat("#pragma omp parallel for ", clause,
                                         DynamicSchedule(InnermostRange(red.reduction_ranges), rnumel)),
                            simd);
    }
    if (red_dims == 1) return std::make_pair(simd, std::string());
    return std::make_pair(std::string(), simd);
  };
  const std::string n_literal = fp ? FloatLiteral(static_cast<double>(rnumel), vt) : IntLiteral(rnumel);
  std::string result;

  switch (red.type) {
    case ReductionType::kSum:
    case ReductionType::kProd: {
      const bool sum = red.type == ReductionType::kSum;
      const std::string init = fp ? FloatLiteral(sum ? 0.0 : 1.0, at) : (sum ? "0" : "1");
      absl::StrAppend(out, indent, atype, " l_acc = ", init, ";\n");
      auto [po, pi] = red_pragmas(sum ? "reduction(+:l_acc)" : "reduction(*:l_acc)");
      RETURN_IF_ERROR(EmitReductionPass(
          red, refs, temps, po, pi, {{"l_acc", atype, init, sum ? "+" : "*"}}, blocked, kept, indent, out,
          [&](const std::string& ind, const std::string& v, const std::string& sfx) {
            return absl::StrCat(ind, "l_acc", sfx, sum ? " += " : " *= ", "static_cast<", atype, ">(", v, ");\n");
          }));
      result = "l_acc";
      break;
    }
    case ReductionType::kMax:
    case ReductionType::kMin: {
      const bool mx = red.type == ReductionType::kMax;
      const std::string init = fp ? FloatLiteral(mx ? -std::numeric_limits<double>::infinity()
                                                     : std::numeric_limits<double>::infinity(),
                                                  vt)
                                  : absl::StrCat("kiln_limits<", vtype, ">::", mx ? "lowest()" : "max()");
      absl::StrAppend(out, indent, vtype, " l_acc = ", init, ";\n");
      absl::StrAppend(out, indent, "int l_nan = 0;\n");
      // -0 and +0 compare equal, so which one `<` keeps depends on the
      // order the (vectorized, threaded) loop meets them. kiln orders -0
      // below +0 (IEEE 754-2019 minimum/maximum), as the interpreter does
      // (runtime/kernels_reduce.cc): l_zs says whether the preferred zero
      // (-0 for min, +0 for max) occurred, which fixes a zero result's sign.
      std::vector<Accumulator> accs = {{"l_acc", vtype, init, mx ? "max" : "min"}, {"l_nan", "int", "0", "|"}};
      if (fp) {
        absl::StrAppend(out, indent, "int l_zs = 0;\n");
        accs.push_back({"l_zs", "int", "0", "|"});
      }
      std::string clauses;
      for (const Accumulator& a : accs) absl::StrAppend(&clauses, " reduction(", a.op, ":", a.name, ")");
      auto [po, pi] = red_pragmas(clauses.substr(1));
      RETURN_IF_ERROR(EmitReductionPass(
          red, refs, temps, po, pi, accs, blocked, kept, indent, out,
          [&](const std::string& ind, const std::string& v, const std::string& sfx) {
            const std::string acc = absl::StrCat("l_acc", sfx);
            std::string s = absl::StrCat(ind, acc, " = ", v, mx ? " > " : " < ", acc, " ? ", v, " : ", acc, ";\n");
            if (fp) {
              absl::StrAppend(&s, ind, "l_nan", sfx, " |= (", v, " != ", v, ");\n");
              // The preferred zero's exact bit pattern (+0: all clear; -0:
              // the sign bit only): one integer compare, which vectorizes
              // (`v == 0 && signbit(v)` made gcc 12 leave the loop scalar,
              // ~60% of softmax's time).
              const bool f32 = vt == DType::kFloat32;
              absl::StrAppend(&s, ind, "l_zs", sfx, " |= (__builtin_bit_cast(",
                              f32 ? "unsigned int" : "unsigned long long", ", ", v, ") == ",
                              mx ? "0" : (f32 ? "0x80000000u" : "0x8000000000000000ull"), ");\n");
            }
            return s;
          }));
      const std::string zero = FloatLiteral(mx ? 0.0 : -0.0, vt), other_zero = FloatLiteral(mx ? -0.0 : 0.0, vt);
      result = fp ? absl::StrCat("(l_nan ? ", FloatLiteral(std::numeric_limits<double>::quiet_NaN(), vt),
                                 " : l_acc == 0 ? (l_zs ? ", zero, " : ", other_zero, ") : l_acc)")
                  : "l_acc";
      break;
    }
    case ReductionType::kArgmax:
    case ReductionType::kArgmin: {
      // First index of the extreme value; NaN counts as the extreme (torch).
      const bool mx = red.type == ReductionType::kArgmax;
      const std::string init = fp ? FloatLiteral(mx ? -std::numeric_limits<double>::infinity()
                                                     : std::numeric_limits<double>::infinity(),
                                                  vt)
                                  : absl::StrCat("kiln_limits<", vtype, ">::", mx ? "lowest()" : "max()");
      absl::StrAppend(out, indent, vtype, " l_best = ", init, ";\n");
      absl::StrAppend(out, indent, "int64_t l_arg = 0, l_pos = 0;\n");
      RETURN_IF_ERROR(EmitReductionPass(
          red, refs, temps, "", "", {}, false, kept, indent, out,
          [&](const std::string& ind, const std::string& v, const std::string&) {
            std::string better = absl::StrCat(v, mx ? " > " : " < ", "l_best");
            if (fp) better = absl::StrCat("l_best == l_best && (", better, " || ", v, " != ", v, ")");
            return absl::StrCat(ind, "if (l_pos == 0 || ", better, ") { l_best = ", v, "; l_arg = l_pos; }\n",
                                ind, "++l_pos;\n");
          }));
      result = "l_arg";
      break;
    }
    case ReductionType::kWelfordMean:
    case ReductionType::kWelfordM2: {
      // Two passes (mean, then centred squares): as accurate as Welford's
      // update, and both passes vectorize.
      if (!fp) return absl::UnimplementedError("cpu codegen: welford over a non-float body");
      const std::string zero = FloatLiteral(0.0, vt);
      absl::StrAppend(out, indent, vtype, " l_acc = ", zero, ";\n");
      auto [po, pi] = red_pragmas("reduction(+:l_acc)");
      RETURN_IF_ERROR(EmitReductionPass(red, refs, temps, po, pi, {{"l_acc", vtype, zero, "+"}}, blocked, kept,
                                        indent, out, [&](const std::string& ind, const std::string& v, const std::string& sfx) {
                                          return absl::StrCat(ind, "l_acc", sfx, " += ", v, ";\n");
                                        }));
      absl::StrAppend(out, indent, "const ", vtype, " l_mean = l_acc / ", n_literal, ";\n");
      if (red.type == ReductionType::kWelfordMean) {
        result = "l_mean";
        break;
      }
      absl::StrAppend(out, indent, vtype, " l_m2 = ", zero, ";\n");
      auto [po2, pi2] = red_pragmas("reduction(+:l_m2)");
      RETURN_IF_ERROR(EmitReductionPass(
          red, refs, temps, po2, pi2, {{"l_m2", vtype, zero, "+"}}, blocked, {}, indent, out,
          [&](const std::string& ind, const std::string& v, const std::string& sfx) {
            return absl::StrCat(ind, "{ const ", vtype, " l_d = ", v, " - l_mean; l_m2", sfx, " += l_d * l_d; }\n");
          }));
      result = "l_m2";
      break;
    }
  }
  const DType result_type = (red.type == ReductionType::kArgmax || red.type == ReductionType::kArgmin)
                                ? DType::kInt64
                                : (red.type == ReductionType::kSum || red.type == ReductionType::kProd ? at : vt);
  std::string stored = result;
  if (result_type != buf.layout.dtype) {
    stored = buf.layout.dtype == DType::kBool ? absl::StrCat("(", result, " != 0)")
                                              : absl::StrCat("static_cast<", out_type, ">(", result, ")");
  }
  absl::StrAppend(out, indent, self, "[", store, "] = ", stored, ";\n");
  CloseLoops(opened, indent, out);
  indent.resize(indent.size() - 2);
  absl::StrAppend(out, indent, "}\n");
  return absl::OkStatus();
}

}  // namespace

std::string KernelFunctionName(const std::string& kernel_name) {
  return SanitizeIdentifier(kernel_name);
}

absl::StatusOr<std::string> CpuKernelSource(const lowering::LoopGraph& graph,
                                            const lowering::FusedKernel& kernel) {
  if (kernel.buffers.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu codegen: kernel ", SanitizeComment(kernel.name), " writes no buffer"));
  }
  std::map<std::string, BufferRef> refs;
  std::vector<std::string> params;
  auto add_param = [&](const std::string& name, bool written) -> absl::Status {
    const Buffer* buf = FindBuffer(graph, name);
    if (buf == nullptr) {
      return absl::NotFoundError(absl::StrCat("cpu codegen: kernel ", SanitizeComment(kernel.name),
                                              " names unknown buffer '", SanitizeComment(name), "'"));
    }
    if (refs.count(name) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("cpu codegen: kernel ", SanitizeComment(kernel.name),
                                                     " lists buffer '", SanitizeComment(name), "' twice"));
    }
    ASSIGN_OR_RETURN(std::string type, CTypeName(buf->layout.dtype));
    // Parameters are named by position, not after their buffers: kernels
    // that do the same work on different buffers then have the same text
    // (mobilenet_v2: 52 kernels, 27 distinct), and the wrapper compiles each
    // distinct kernel once (wrapper_codegen.cc).
    const std::string id = absl::StrCat("p", params.size());
    refs[name] = BufferRef{id, buf->layout.dtype};
    params.push_back(absl::StrCat(written ? "" : "const ", type, "* ", id));
    return absl::OkStatus();
  };
  for (const std::string& r : kernel.reads) RETURN_IF_ERROR(add_param(r, false));
  for (const std::string& b : kernel.buffers) RETURN_IF_ERROR(add_param(b, true));

  std::string out = absl::StrCat("static void ", KernelFunctionName(kernel.name), "(",
                                 absl::StrJoin(params, ", "), ") {\n");
  for (const std::string& name : kernel.buffers) {
    const Buffer& buf = *FindBuffer(graph, name);
    if (buf.kind != BufferKind::kComputed) {
      return absl::InvalidArgumentError(absl::StrCat("cpu codegen: kernel buffer '", SanitizeComment(name),
                                                     "' is not a computed buffer"));
    }
    if (buf.pointwise.has_value()) {
      if (buf.pointwise->body == nullptr) return absl::InvalidArgumentError("cpu codegen: pointwise without a body");
    } else if (!buf.reduction.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("cpu codegen: computed buffer '", SanitizeComment(name),
                                                     "' has neither a pointwise nor a reduction"));
    }
  }
  // One shared outer nest over `outer_ranges` when the kernel has several
  // buffers over it (softmax: max, sum, normalize; layer_norm: mean, M2,
  // normalize): each outer iteration runs the buffers in order on the same
  // row, which stays in L1/L2, so the input is read from memory once instead
  // of once per buffer, and there is one parallel region instead of one per
  // buffer. FusedKernel's contract guarantees members read each other only
  // at the current outer index.
  size_t shared = 0;
  ASSIGN_OR_RETURN(int64_t outer_numel, SpaceSize(kernel.outer_ranges, "kernel outer ranges"));
  if (kernel.buffers.size() > 1 && !kernel.outer_ranges.empty() && outer_numel > 1) {
    bool prefix = true;
    int64_t work = 0;
    for (const std::string& name : kernel.buffers) {
      const Buffer& buf = *FindBuffer(graph, name);
      const std::vector<int64_t>& r = buf.pointwise.has_value() ? buf.pointwise->ranges : buf.reduction->ranges;
      prefix = prefix && r.size() >= kernel.outer_ranges.size() &&
               std::equal(kernel.outer_ranges.begin(), kernel.outer_ranges.end(), r.begin());
      if (!prefix) break;
      ASSIGN_OR_RETURN(int64_t n, SpaceSize(r, "buffer ranges"));
      int64_t rn = 1;
      if (buf.reduction.has_value()) {
        ASSIGN_OR_RETURN(rn, SpaceSize(buf.reduction->reduction_ranges, "reduction ranges"));
      }
      if (n == 0) prefix = false;  // an empty member: keep the separate nests
      work = std::max(work, n > 0 && rn > std::numeric_limits<int64_t>::max() / n ? std::numeric_limits<int64_t>::max()
                                                                                    : n * std::max<int64_t>(rn, 1));
    }
    if (prefix) {
      shared = kernel.outer_ranges.size();
      const std::string pragma =
          work >= kParallelThreshold
              ? absl::StrCat("#pragma omp parallel for collapse(*)", DynamicSchedule(work / outer_numel, work))
              : "";
      std::string indent = "  ";
      const int opened = OpenLoops(kernel.outer_ranges, 0, pragma, "", indent, &out);
      // Expensive values a reduction's pass computes that a later member
      // needs again (softmax's exp(x - max)) are kept, not recomputed.
      std::map<std::string, std::vector<KeptStore>> stores;   // reduction -> its stores
      std::map<std::string, lowering::ExprPtr> kept_bodies;  // pointwise -> its body reading them
      for (KeptValue& k : PlanKeptValues(graph, kernel)) {
        stores[k.reduction].push_back({k.value, k.store_index, refs.at(k.target).identifier});
        kept_bodies[k.target] = std::move(k.target_body);
      }
      std::string body;
      int temps = 0;
      for (const std::string& name : kernel.buffers) {
        const Buffer& buf = *FindBuffer(graph, name);
        if (buf.pointwise.has_value()) {
          auto kb = kept_bodies.find(name);
          RETURN_IF_ERROR(EmitPointwise(buf, kb != kept_bodies.end() ? kb->second : buf.pointwise->body, refs,
                                        &temps, shared, &body));
        } else {
          RETURN_IF_ERROR(EmitReduction(buf, refs, &temps, shared, stores[name], &body));
        }
      }
      absl::StrAppend(&out, body);
      CloseLoops(opened, indent, &out);
      absl::StrAppend(&out, "}\n");
      // gcc 12's partial redundancy elimination moves the loop-invariant
      // loads of earlier members' results (softmax's max and sum) into the
      // latch of a later member's simd loop, which then no longer vectorizes
      // ("latch block not empty"); without PRE every member vectorizes.
      return absl::StrCat("__attribute__((optimize(\"no-tree-pre\")))\n", out);
    }
  }
  int temps = 0;
  for (const std::string& name : kernel.buffers) {
    const Buffer& buf = *FindBuffer(graph, name);
    if (buf.pointwise.has_value()) {
      RETURN_IF_ERROR(EmitPointwise(buf, buf.pointwise->body, refs, &temps, 0, &out));
    } else {
      RETURN_IF_ERROR(EmitReduction(buf, refs, &temps, 0, {}, &out));
    }
  }
  absl::StrAppend(&out, "}\n");
  return out;
}

}  // namespace kiln::backends::cpu
