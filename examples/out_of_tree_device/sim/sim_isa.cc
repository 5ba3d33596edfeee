#include "sim/sim_isa.h"

#include <cmath>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "support/status.h"

namespace kiln_sim {
namespace {

using kiln::DType;
using kiln::lowering::Expr;
using kiln::lowering::ExprOp;
using kiln::lowering::ExprPtr;
using kiln::lowering::ReductionType;

constexpr int kMaxDepth = 2000;
constexpr int64_t kMaxElements = int64_t{1} << 40;

int Arity(ExprOp op) {
  if (op == ExprOp::kIndexVar || op == ExprOp::kIntConst || op == ExprOp::kFloatConst) return 0;
  if (op == ExprOp::kLoad || op == ExprOp::kCast) return 1;
  if (op >= ExprOp::kNeg && op <= ExprOp::kSign) return 1;
  if (op >= ExprOp::kAdd && op <= ExprOp::kLogicalOr) return 2;
  if (op == ExprOp::kWhere) return 3;
  return -1;
}

bool OpFromName(absl::string_view name, ExprOp* op) {
  for (int i = 0; i <= static_cast<int>(ExprOp::kCast); ++i) {
    if (name == kiln::lowering::ExprOpName(static_cast<ExprOp>(i))) {
      *op = static_cast<ExprOp>(i);
      return true;
    }
  }
  return false;
}

bool ReductionFromName(absl::string_view name, ReductionType* type) {
  for (int i = 0; i <= static_cast<int>(ReductionType::kWelfordM2); ++i) {
    if (name == kiln::lowering::ReductionTypeName(static_cast<ReductionType>(i))) {
      *type = static_cast<ReductionType>(i);
      return true;
    }
  }
  return false;
}

std::string FloatText(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrFormat("%.17g", v);
}

// Expression DAG -> SSA registers (each distinct node once).
class SectionCompiler {
 public:
  SectionCompiler(const absl::flat_hash_map<std::string, int>& params, Section& section, int num_vars)
      : params_(params), section_(section), num_vars_(num_vars) {}

  absl::StatusOr<int> Emit(const ExprPtr& e, int depth) {
    if (e == nullptr) return absl::InvalidArgumentError("sim codegen: null expression");
    if (depth > kMaxDepth) return absl::InvalidArgumentError("sim codegen: expression nests too deep");
    auto known = registers_.find(e.get());
    if (known != registers_.end()) return known->second;
    if (!IsSimDtype(e->dtype)) {
      return absl::UnimplementedError(absl::StrCat("sim codegen: dtype ", kiln::DTypeName(e->dtype),
                                                   " in ", kiln::lowering::ExprOpName(e->op)));
    }
    const int arity = Arity(e->op);
    if (arity < 0 || static_cast<int>(e->args.size()) != arity) {
      return absl::InvalidArgumentError(
          absl::StrCat("sim codegen: malformed ", kiln::lowering::ExprOpName(e->op)));
    }
    Instr instr;
    instr.op = e->op;
    instr.dtype = e->dtype;
    for (const ExprPtr& arg : e->args) {
      ASSIGN_OR_RETURN(int r, Emit(arg, depth + 1));
      instr.args.push_back(r);
    }
    switch (e->op) {
      case ExprOp::kIndexVar:
        if (e->var < 0 || e->var >= num_vars_) {
          return absl::InvalidArgumentError(absl::StrCat("sim codegen: index variable v", e->var,
                                                         " out of range"));
        }
        instr.var = e->var;
        break;
      case ExprOp::kIntConst: instr.int_value = e->int_value; break;
      case ExprOp::kFloatConst: instr.float_value = e->float_value; break;
      case ExprOp::kLoad: {
        auto p = params_.find(e->buffer);
        if (p == params_.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("sim codegen: load of '", e->buffer, "', which is not a kernel parameter"));
        }
        instr.param = p->second;
        break;
      }
      default: break;
    }
    const int r = static_cast<int>(section_.code.size());
    section_.code.push_back(std::move(instr));
    registers_.emplace(e.get(), r);
    return r;
  }

 private:
  const absl::flat_hash_map<std::string, int>& params_;
  Section& section_;
  int num_vars_;
  absl::flat_hash_map<const Expr*, int> registers_;
};

std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  return strides;
}

absl::Status CheckRanges(const std::vector<int64_t>& ranges, const char* what) {
  int64_t n = 1;
  for (int64_t r : ranges) {
    if (r < 0) return absl::InvalidArgumentError(absl::StrCat("sim kernel: negative ", what));
    if (r > 0 && n > kMaxElements / r) {
      return absl::InvalidArgumentError(absl::StrCat("sim kernel: ", what, " too large"));
    }
    n *= r;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Int(absl::string_view token, absl::string_view line) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(token, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("sim kernel: expected an integer in '", line, "'"));
  }
  return v;
}

absl::StatusOr<DType> Dtype(absl::string_view token, absl::string_view line) {
  std::optional<DType> t = kiln::DTypeFromName(token);
  if (!t.has_value() || !IsSimDtype(*t)) {
    return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad dtype in '", line, "'"));
  }
  return *t;
}

absl::StatusOr<int> Register(absl::string_view token, int defined, absl::string_view line) {
  int64_t r = -1;
  if (token.size() < 2 || token[0] != '%' || !absl::SimpleAtoi(token.substr(1), &r) || r < 0 ||
      r >= defined) {
    return absl::InvalidArgumentError(
        absl::StrCat("sim kernel: '", token, "' is not an earlier register in '", line, "'"));
  }
  return static_cast<int>(r);
}

absl::Status ParseInstr(const std::vector<absl::string_view>& t, absl::string_view line,
                        const Kernel& kernel, Section& section, int num_vars) {
  const int index = static_cast<int>(section.code.size());
  if (t.size() < 4 || t[0] != absl::StrCat("%", index) || t[1] != "=") {
    return absl::InvalidArgumentError(
        absl::StrCat("sim kernel: expected '%", index, " = op dtype ...' in '", line, "'"));
  }
  Instr instr;
  if (!OpFromName(t[2], &instr.op)) {
    return absl::InvalidArgumentError(absl::StrCat("sim kernel: unknown op in '", line, "'"));
  }
  ASSIGN_OR_RETURN(instr.dtype, Dtype(t[3], line));
  size_t next = 4;
  auto need = [&](size_t count) -> absl::Status {
    if (t.size() != next + count) {
      return absl::InvalidArgumentError(absl::StrCat("sim kernel: wrong operand count in '", line, "'"));
    }
    return absl::OkStatus();
  };
  switch (instr.op) {
    case ExprOp::kIndexVar: {
      RETURN_IF_ERROR(need(1));
      ASSIGN_OR_RETURN(int64_t v, Int(t[next], line));
      if (v < 0 || v >= num_vars) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: variable out of range in '", line, "'"));
      }
      instr.var = static_cast<int>(v);
      break;
    }
    case ExprOp::kIntConst: {
      RETURN_IF_ERROR(need(1));
      ASSIGN_OR_RETURN(instr.int_value, Int(t[next], line));
      break;
    }
    case ExprOp::kFloatConst: {
      RETURN_IF_ERROR(need(1));
      if (t[next] == "nan") {
        instr.float_value = std::nan("");
      } else if (t[next] == "inf" || t[next] == "-inf") {
        instr.float_value = t[next] == "inf" ? INFINITY : -INFINITY;
      } else if (!absl::SimpleAtod(t[next], &instr.float_value)) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad float in '", line, "'"));
      }
      break;
    }
    case ExprOp::kLoad: {
      RETURN_IF_ERROR(need(2));
      int64_t p = -1;
      if (t[next].size() < 2 || t[next][0] != '@' || !absl::SimpleAtoi(t[next].substr(1), &p) || p < 0 ||
          p >= static_cast<int64_t>(kernel.params.size()) ||
          kernel.params[static_cast<size_t>(p)].second != instr.dtype) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad parameter in '", line, "'"));
      }
      instr.param = static_cast<int>(p);
      ASSIGN_OR_RETURN(int r, Register(t[next + 1], index, line));
      instr.args.push_back(r);
      break;
    }
    default: {
      RETURN_IF_ERROR(need(static_cast<size_t>(Arity(instr.op))));
      for (size_t i = next; i < t.size(); ++i) {
        ASSIGN_OR_RETURN(int r, Register(t[i], index, line));
        instr.args.push_back(r);
      }
    }
  }
  section.code.push_back(std::move(instr));
  return absl::OkStatus();
}

}  // namespace

bool IsSimDtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: case DType::kFloat64:
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kUInt8: case DType::kBool:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<Kernel> CompileKernel(const kiln::lowering::LoopGraph& graph,
                                     const kiln::lowering::FusedKernel& fused) {
  Kernel kernel;
  kernel.name = fused.name;
  absl::flat_hash_map<std::string, int> params;
  auto add_param = [&](const std::string& name) -> absl::Status {
    const kiln::lowering::Buffer* b = graph.Find(name);
    if (b == nullptr) return absl::InvalidArgumentError(absl::StrCat("sim codegen: unknown buffer ", name));
    if (!IsSimDtype(b->layout.dtype)) {
      return absl::UnimplementedError(absl::StrCat("sim codegen: buffer ", name, " has dtype ",
                                                   kiln::DTypeName(b->layout.dtype)));
    }
    params.emplace(name, static_cast<int>(kernel.params.size()));
    kernel.params.emplace_back(name, b->layout.dtype);
    return absl::OkStatus();
  };
  for (const std::string& name : fused.reads) RETURN_IF_ERROR(add_param(name));
  for (const std::string& name : fused.buffers) RETURN_IF_ERROR(add_param(name));

  for (const std::string& name : fused.buffers) {
    const kiln::lowering::Buffer& b = *graph.Find(name);
    Section section;
    section.param = params.at(name);
    ExprPtr body;
    if (b.pointwise.has_value()) {
      section.ranges = b.pointwise->ranges;
      body = b.pointwise->body;
    } else if (b.reduction.has_value()) {
      section.is_reduction = true;
      section.reduction = b.reduction->type;
      section.ranges = b.reduction->ranges;
      section.reduction_ranges = b.reduction->reduction_ranges;
      body = b.reduction->body;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("sim codegen: ", name, " is not computed"));
    }
    RETURN_IF_ERROR(CheckRanges(section.ranges, "ranges"));
    RETURN_IF_ERROR(CheckRanges(section.reduction_ranges, "reduction ranges"));
    // Where the element at index (v0..) goes: the buffer's own strides when
    // its sizes are the index space, else its (contiguous) storage order.
    if (b.layout.sizes == section.ranges) {
      section.store_strides = b.layout.strides;
    } else if (b.layout.numel() == [&] {
                 int64_t n = 1;
                 for (int64_t r : section.ranges) n *= r;
                 return n;
               }() && b.layout.IsContiguous()) {
      section.store_strides = ContiguousStrides(section.ranges);
    } else {
      return absl::UnimplementedError(absl::StrCat("sim codegen: ", name, "'s layout ",
                                                   b.layout.ToString(), " does not match its ranges"));
    }
    section.store_offset = b.layout.offset;
    const int num_vars = static_cast<int>(section.ranges.size() + section.reduction_ranges.size());
    SectionCompiler compiler(params, section, num_vars);
    ASSIGN_OR_RETURN(section.result, compiler.Emit(body, 0));
    kernel.sections.push_back(std::move(section));
  }
  return kernel;
}

std::string PrintKernel(const Kernel& kernel) {
  std::string out = absl::StrCat(".kernel ", kernel.name, "\n");
  for (const auto& [name, dtype] : kernel.params) {
    absl::StrAppend(&out, ".param ", name, " ", kiln::DTypeName(dtype), "\n");
  }
  for (const Section& s : kernel.sections) {
    absl::StrAppend(&out, ".section ", s.param, s.is_reduction ? " reduction" : " pointwise", "\n");
    absl::StrAppend(&out, ".ranges", s.ranges.empty() ? "" : " ", absl::StrJoin(s.ranges, " "), "\n");
    if (s.is_reduction) {
      absl::StrAppend(&out, ".reduce ", kiln::lowering::ReductionTypeName(s.reduction),
                      s.reduction_ranges.empty() ? "" : " ", absl::StrJoin(s.reduction_ranges, " "), "\n");
    }
    absl::StrAppend(&out, ".store ", absl::StrJoin(s.store_strides, " "), s.store_strides.empty() ? "" : " ",
                    s.store_offset, "\n");
    for (size_t i = 0; i < s.code.size(); ++i) {
      const Instr& in = s.code[i];
      absl::StrAppend(&out, "%", i, " = ", kiln::lowering::ExprOpName(in.op), " ",
                      kiln::DTypeName(in.dtype));
      switch (in.op) {
        case ExprOp::kIndexVar: absl::StrAppend(&out, " ", in.var); break;
        case ExprOp::kIntConst: absl::StrAppend(&out, " ", in.int_value); break;
        case ExprOp::kFloatConst: absl::StrAppend(&out, " ", FloatText(in.float_value)); break;
        case ExprOp::kLoad: absl::StrAppend(&out, " @", in.param); break;
        default: break;
      }
      for (int a : in.args) absl::StrAppend(&out, " %", a);
      absl::StrAppend(&out, "\n");
    }
    absl::StrAppend(&out, ".result %", s.result, "\n.end\n");
  }
  return out;
}

absl::StatusOr<Kernel> ParseKernel(absl::string_view text) {
  Kernel kernel;
  Section* section = nullptr;
  int num_vars = 0;
  bool ended = true;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> t = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (t.empty()) continue;
    const absl::string_view d = t[0];
    if (d == ".kernel") {
      if (t.size() != 2 || !kernel.name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad '", line, "'"));
      }
      kernel.name = std::string(t[1]);
    } else if (d == ".param") {
      if (t.size() != 3 || !kernel.sections.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad '", line, "'"));
      }
      ASSIGN_OR_RETURN(DType dtype, Dtype(t[2], line));
      kernel.params.emplace_back(std::string(t[1]), dtype);
    } else if (d == ".section") {
      if (!ended || t.size() != 3 || (t[2] != "pointwise" && t[2] != "reduction")) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad '", line, "'"));
      }
      ASSIGN_OR_RETURN(int64_t p, Int(t[1], line));
      if (p < 0 || p >= static_cast<int64_t>(kernel.params.size())) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad parameter in '", line, "'"));
      }
      kernel.sections.emplace_back();
      section = &kernel.sections.back();
      section->param = static_cast<int>(p);
      section->is_reduction = t[2] == "reduction";
      ended = false;
    } else if (section == nullptr || ended) {
      return absl::InvalidArgumentError(absl::StrCat("sim kernel: '", line, "' outside a section"));
    } else if (d == ".ranges" || d == ".reduce") {
      if (!section->code.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: '", line, "' after code"));
      }
      std::vector<int64_t>& out = d == ".ranges" ? section->ranges : section->reduction_ranges;
      size_t first = 1;
      if (d == ".reduce") {
        if (!section->is_reduction || t.size() < 2 || !ReductionFromName(t[1], &section->reduction)) {
          return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad '", line, "'"));
        }
        first = 2;
      }
      if (t.size() - first > 64) return absl::InvalidArgumentError("sim kernel: too many dimensions");
      out.clear();
      for (size_t i = first; i < t.size(); ++i) {
        ASSIGN_OR_RETURN(int64_t r, Int(t[i], line));
        out.push_back(r);
      }
      RETURN_IF_ERROR(CheckRanges(out, "ranges"));
      num_vars = static_cast<int>(section->ranges.size() + section->reduction_ranges.size());
    } else if (d == ".store") {
      if (t.size() != section->ranges.size() + 2) {
        return absl::InvalidArgumentError(absl::StrCat("sim kernel: .store needs one stride per range "
                                                       "and an offset in '", line, "'"));
      }
      section->store_strides.clear();
      for (size_t i = 1; i + 1 < t.size(); ++i) {
        ASSIGN_OR_RETURN(int64_t s, Int(t[i], line));
        section->store_strides.push_back(s);
      }
      ASSIGN_OR_RETURN(section->store_offset, Int(t.back(), line));
    } else if (d == ".result") {
      if (t.size() != 2) return absl::InvalidArgumentError(absl::StrCat("sim kernel: bad '", line, "'"));
      ASSIGN_OR_RETURN(section->result, Register(t[1], static_cast<int>(section->code.size()), line));
    } else if (d == ".end") {
      if (section->result < 0 || section->store_strides.size() != section->ranges.size()) {
        return absl::InvalidArgumentError("sim kernel: section without .result or .store");
      }
      ended = true;
    } else {
      RETURN_IF_ERROR(ParseInstr(t, line, kernel, *section, num_vars));
    }
  }
  if (kernel.name.empty() || !ended) {
    return absl::InvalidArgumentError("sim kernel: missing .kernel or unterminated section");
  }
  return kernel;
}

}  // namespace kiln_sim
