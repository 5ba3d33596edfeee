#include "backends/cuda/kernel_loops.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/kernel_identifiers.h"
#include "support/status.h"

namespace kiln::backends::cuda {

using lowering::Buffer;
using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

ExprPtr Add(ExprPtr a, ExprPtr b) { return lowering::Binary(ExprOp::kAdd, std::move(a), std::move(b)); }
ExprPtr Mul(ExprPtr a, ExprPtr b) { return lowering::Binary(ExprOp::kMul, std::move(a), std::move(b)); }

}  // namespace

std::string KernelErrorPrefix(const std::string& kernel_name) {
  return absl::StrCat("cuda codegen: kernel ", CudaSafeText(kernel_name), ": ");
}

// Element count of an index space; error past int64 or for negative sizes.
absl::StatusOr<int64_t> SpaceSize(const std::vector<int64_t>& ranges, const std::string& what) {
  int64_t n = 1;
  for (int64_t r : ranges) {
    if (r < 0) return absl::InvalidArgumentError(absl::StrCat("cuda codegen: ", what, " has a negative range"));
    if (r != 0 && n > std::numeric_limits<int64_t>::max() / r) {
      return absl::InvalidArgumentError(absl::StrCat("cuda codegen: ", what, " overflows int64"));
    }
    n *= r;
  }
  return n;
}

bool IsContiguousLayout(const lowering::Layout& l) {
  int64_t expected = 1;
  for (size_t i = l.sizes.size(); i-- > 0;) {
    if (l.sizes[i] != 1 && l.strides[i] != expected) return false;
    expected *= l.sizes[i];
  }
  return true;
}


// The flat storage offset a buffer stores index (v0..v{k-1}) of `ranges` at.
absl::StatusOr<ExprPtr> StoreIndex(const Buffer& buf, const std::vector<int64_t>& ranges) {
  const lowering::Layout& l = buf.layout;
  if (l.strides.size() != l.sizes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("cuda codegen: buffer ", CudaSafeText(buf.name), " has ",
                                                   l.sizes.size(), " sizes but ", l.strides.size(), " strides"));
  }
  ExprPtr index;
  auto add_term = [&](int var, int64_t stride) {
    ExprPtr term = lowering::Var(var);
    if (stride != 1) term = Mul(term, lowering::IntConst(stride));
    index = index == nullptr ? term : Add(index, term);
  };
  auto finish = [&]() {
    if (index == nullptr) return lowering::IntConst(l.offset);
    return l.offset == 0 ? index : Add(index, lowering::IntConst(l.offset));
  };
  if (l.sizes == ranges) {
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (ranges[i] != 1) add_term(static_cast<int>(i), l.strides[i]);
    }
    return finish();
  }
  // Same element count, different shape (keepdim): row-major over the
  // ranges, which needs a contiguous layout.
  ASSIGN_OR_RETURN(int64_t n, SpaceSize(ranges, "loop"));
  ASSIGN_OR_RETURN(int64_t m, SpaceSize(l.sizes, "layout"));
  if (n != m || !IsContiguousLayout(l)) {
    return absl::InvalidArgumentError(absl::StrCat("cuda codegen: buffer ", CudaSafeText(buf.name),
                                                   " layout does not match its loop ranges"));
  }
  std::vector<int64_t> strides(ranges.size(), 1);
  for (size_t i = ranges.size(); i-- > 1;) strides[i - 1] = strides[i] * ranges[i];
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i] != 1) add_term(static_cast<int>(i), strides[i]);
  }
  return finish();
}

std::string StoredValue(const std::string& value, DType from, DType to, const std::string& to_type) {
  if (from == to) return value;
  if (to == DType::kBool) return absl::StrCat("(", value, " != 0)");
  if (IsNarrowFloat(to)) {
    // Held in float, rounded to the stored precision.
    const std::string as_float = IsNarrowFloat(from) ? value : absl::StrCat("static_cast<float>(", value, ")");
    return CudaLoadValue(CudaStoreValue(as_float, to), to);
  }
  if (IsNarrowFloat(from) && to == DType::kFloat32) return value;
  return absl::StrCat("static_cast<", to_type, ">(", value, ")");
}

absl::StatusOr<std::string> EmitSpaceLoop(KernelContext& ctx, SpaceLoop loop, LoopBody& body,
                                          const std::string& indent) {
  ASSIGN_OR_RETURN(int64_t numel, SpaceSize(loop.sizes, "loop space"));
  const int width = ctx.lanes;  // elements per group
  std::string out;
  if (numel == 0) return out;
  int inner = -1;  // the grouped dim
  for (size_t i = loop.sizes.size(); i-- > 0;) {
    if (loop.sizes[i] != 1) {
      inner = static_cast<int>(i);
      break;
    }
  }
  const bool lanes = loop.lanes_allowed && inner >= 0 && loop.sizes[inner] >= width;
  const int64_t inner_size = inner >= 0 ? loop.sizes[inner] : 1;
  const int64_t groups_per_row = lanes ? (inner_size + width - 1) / width : inner_size;
  const int64_t groups = inner >= 0 ? numel / inner_size * groups_per_row : 1;
  // 32-bit counters (cheap division) when the counter plus one stride
  // (at most a few million) cannot wrap.
  const std::string idx = groups < (int64_t{1} << 31) ? "unsigned int" : "unsigned long long";
  const std::string in = indent + "  ";
  if (loop.unrolled_trips > 0) {
    absl::StrAppend(&out, indent, "#pragma unroll\n", indent, "for (int l_j = 0; l_j < ", loop.unrolled_trips,
                    "; ++l_j) {\n", in, "const ", idx, " l_g = ", loop.start, " + static_cast<", idx, ">(l_j) * ",
                    loop.stride, ";\n", in, "if (l_g >= ", groups, "ULL) break;\n");
  } else {
    absl::StrAppend(&out, indent, "for (", idx, " l_g = ", loop.start, "; l_g < ", groups, "ULL; l_g += ",
                    loop.stride, ") {\n");
  }
  int non_unit = 0;
  for (int64_t r : loop.sizes) non_unit += r != 1;
  if (non_unit > 0) absl::StrAppend(&out, in, idx, " l_rem = l_g;\n");
  // Unravel (innermost first); size-1 dims are constant 0.
  std::vector<std::string> dim_text(loop.sizes.size(), "0LL");
  int remaining = 0;
  for (size_t i = 0; i < loop.sizes.size(); ++i) remaining += loop.sizes[i] != 1;
  std::string lane_base;
  for (size_t i = loop.sizes.size(); i-- > 0;) {
    if (loop.sizes[i] == 1) continue;
    --remaining;
    const std::string name = absl::StrCat(loop.prefix, i);
    const int64_t extent = static_cast<int>(i) == inner ? groups_per_row : loop.sizes[i];
    const std::string value = remaining == 0 ? "l_rem" : absl::StrCat("l_rem % ", extent, "U");
    if (static_cast<int>(i) == inner && lanes) {
      lane_base = absl::StrCat(loop.prefix, "b", i);
      absl::StrAppend(&out, in, "const long long ", lane_base, " = static_cast<long long>(", value, ") * ", width,
                      "LL;\n");
    } else {
      absl::StrAppend(&out, in, "const long long ", name, " = static_cast<long long>(", value, ");\n");
    }
    dim_text[i] = name;
    if (remaining > 0) absl::StrAppend(&out, in, "l_rem /= ", extent, "U;\n");
  }
  const int lane_var = lanes ? loop.vars[inner] : -1;
  // Row-major strides of the space for positions.
  std::vector<int64_t> strides(loop.sizes.size(), 1);
  for (size_t i = loop.sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * loop.sizes[i];
  auto position = [&](const std::string& inner_text) {
    std::vector<std::string> terms;
    for (size_t i = 0; i < loop.sizes.size(); ++i) {
      if (loop.sizes[i] == 1) continue;
      const std::string v = static_cast<int>(i) == inner ? inner_text : dim_text[i];
      terms.push_back(strides[i] == 1 ? v : absl::StrCat(v, " * ", strides[i], "LL"));
    }
    return terms.empty() ? std::string("0LL") : absl::StrCat("(", absl::StrJoin(terms, " + "), ")");
  };
  for (size_t i = 0; i < loop.sizes.size(); ++i) {
    loop.bindings[loop.vars[i]] = dim_text[i];
  }
  if (!lanes) {
    CudaExprEmitter em(&ctx.refs, loop.bindings, &ctx.temps);
    em.set_indent(in);
    std::string body_text;
    RETURN_IF_ERROR(body.Emit(em, 1, -1, false, {position(inner >= 0 ? dim_text[inner] : "0LL")}, in, &body_text));
    absl::StrAppend(&out, body_text, indent, "}\n");
    return out;
  }
  // Fast path: all `width` lanes, vector accesses where possible.
  const std::string in2 = in + "  ";
  std::vector<std::string> fast_bindings = loop.bindings;
  fast_bindings[lane_var] = lane_base;
  CudaExprEmitter fast(&ctx.refs, fast_bindings, &ctx.temps);
  fast.SetLanes(lane_var, true, width, inner_size);
  if (loop.cache != nullptr && loop.unrolled_trips > 0) fast.SetRowCache(loop.cache);
  fast.set_indent(in2);
  std::vector<std::string> fast_pos;
  for (int k = 0; k < width; ++k) {
    fast_pos.push_back(position(k == 0 ? lane_base : absl::StrCat("(", lane_base, " + ", k, "LL)")));
  }
  std::string fast_text;
  RETURN_IF_ERROR(body.Emit(fast, width, lane_var, true, fast_pos, in2, &fast_text));
  for (const std::string& b : fast.vector_buffers()) ctx.vector_buffers.insert(b);
  const bool uses_vectors = !fast.vector_buffers().empty();
  std::vector<std::string> conditions;
  const bool cached = loop.cache != nullptr && loop.unrolled_trips > 0;
  if (cached) {
    // Every pass of a cached row under one condition (see RowCache).
    conditions.push_back(kRowCacheCondition);
  } else if (uses_vectors) {
    conditions.push_back("l_aligned");
  }
  if (inner_size % width != 0) conditions.push_back(absl::StrCat(lane_base, " + ", width, "LL <= ", inner_size, "LL"));
  if (loop.cache != nullptr && !loop.cache->declarations.empty()) {
    // Arrays this loop fills, declared before it (at the row's scope).
    std::string decls;
    for (absl::string_view line : absl::StrSplit(loop.cache->declarations, '\n', absl::SkipEmpty())) {
      absl::StrAppend(&decls, indent, line, "\n");
    }
    out = decls + out;
    loop.cache->declarations.clear();
  }
  if (conditions.empty() && !uses_vectors) {
    // Every group is full and nothing is vectorized: the unrolled lanes are
    // the whole loop body.
    absl::StrAppend(&out, fast_text, indent, "}\n");
    return out;
  }
  if (conditions.empty()) conditions.push_back("true");
  absl::StrAppend(&out, in, "if (", absl::StrJoin(conditions, " && "), ") {\n", fast_text, in, "} else {\n");
  // Scalar path: one lane at a time.
  const std::string lane_name = absl::StrCat(loop.prefix, inner);
  // The row's end is in the loop condition: a `break` on it inside the body
  // made NVRTC/cicc of CUDA 13.0 crash (SIGSEGV) on convnext_tiny's
  // layer-norm reductions at batch 1.
  absl::StrAppend(&out, in2, "for (int l_k = 0; l_k < ", width);
  if (inner_size % width != 0) absl::StrAppend(&out, " && ", lane_base, " + l_k < ", inner_size, "LL");
  absl::StrAppend(&out, "; ++l_k) {\n");
  const std::string in3 = in2 + "  ";
  absl::StrAppend(&out, in3, "const long long ", lane_name, " = ", lane_base, " + l_k;\n");
  std::vector<std::string> slow_bindings = loop.bindings;
  slow_bindings[lane_var] = lane_name;
  CudaExprEmitter slow(&ctx.refs, slow_bindings, &ctx.temps);
  slow.set_indent(in3);
  std::string slow_text;
  RETURN_IF_ERROR(body.Emit(slow, 1, -1, false, {position(lane_name)}, in3, &slow_text));
  absl::StrAppend(&out, slow_text, in2, "}\n", in, "}\n", indent, "}\n");
  return out;
}

absl::Status StoreBody::Emit(CudaExprEmitter& em, int lanes, int lane_var, bool vector,
                             const std::vector<std::string>&, const std::string& indent, std::string* out) {
  for (const Member& m : members_) {
    const CudaBufferRef& ref = ctx_->refs.at(m.buf->name);
    const DType dtype = m.buf->layout.dtype;
    ASSIGN_OR_RETURN(std::string type, CudaTypeName(dtype));
    ASSIGN_OR_RETURN(std::string storage_type, CudaStorageTypeName(dtype));
    // A body that ends in a cast to the stored narrow type from float is
    // rounded by the store alone: rounding twice gives the same bits, and
    // the cast's round trip (round, widen) per element is saved.
    const ExprPtr& value_expr = IsNarrowFloat(dtype) && m.body->op == ExprOp::kCast && m.body->dtype == dtype &&
                                        m.body->args.size() == 1 && m.body->args[0]->dtype == DType::kFloat32
                                    ? m.body->args[0]
                                    : m.body;
    std::vector<std::string> values;
    for (int k = 0; k < lanes; ++k) {
      ASSIGN_OR_RETURN(std::string v, em.Emit(value_expr, k));
      // Narrow floats: rounded once, by the conversion of the store.
      const DType vt = value_expr->dtype;
      values.push_back(CudaStoreValue(IsNarrowFloat(dtype) && vt != dtype
                                          ? (IsNarrowFloat(vt) || vt == DType::kFloat32
                                                 ? v
                                                 : absl::StrCat("static_cast<float>(", v, ")"))
                                          : StoredValue(v, vt, dtype, type),
                                      dtype));
    }
    if (vector && lanes == ctx_->lanes && IsVectorIndex(m.store_index, lane_var, lanes)) {
      ASSIGN_OR_RETURN(std::string index, em.Emit(m.store_index, 0));
      absl::StrAppend(out, em.TakeStatements());
      absl::StrAppend(out, indent, "kiln_store", lanes, "<", storage_type, ">(", ref.identifier, " + ", index, ", ",
                      absl::StrJoin(values, ", "), ");\n");
      em.NoteVectorBuffer(m.buf->name);
      continue;
    }
    std::vector<std::string> indices;
    for (int k = 0; k < lanes; ++k) {
      ASSIGN_OR_RETURN(std::string index, em.Emit(m.store_index, k));
      indices.push_back(index);
    }
    absl::StrAppend(out, em.TakeStatements());
    for (int k = 0; k < lanes; ++k) {
      absl::StrAppend(out, indent, ref.identifier, "[", indices[k], "] = ", values[k], ";\n");
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::backends::cuda
