#include "backends/cuda/attention_lines.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "backends/cuda/attention_kernel.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/kernel_identifiers.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

absl::StatusOr<const lowering::Layout*> LayoutOf(const std::map<std::string, const lowering::Layout*>& layouts,
                                                 const std::string& name) {
  auto it = layouts.find(name);
  if (it == layouts.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuda attention: buffer '", CudaSafeText(name), "' has no layout"));
  }
  return it->second;
}

}  // namespace

bool FuseAttentionIn(const ir::Graph& graph) {
  if (env::Attention() != env::Force::kDefault) return env::Attention() == env::Force::kOn;
  for (const ir::Node* n : graph.nodes()) {
    const std::string kind(n->kind().qualString());
    if (kind != "aten::matmul" && kind != "aten::bmm") continue;
    const ir::TypePtr& t = n->output()->type();
    if (t && t->is_tensor() && (t->tensor().dtype == DType::kBFloat16 || t->tensor().dtype == DType::kFloat16)) {
      return true;
    }
  }
  return false;
}

std::string AttentionSummary(const AttentionLowering& lowering) {
  if (lowering.fused == 0 && lowering.refused.empty()) return "";
  std::string line = absl::StrCat("attention: ", lowering.fused,
                                  " kiln::attention calls as generated flash-attention kernels");
  if (!lowering.refused.empty()) {
    absl::StrAppend(&line, "; ", lowering.refused.size(), " left to the host's reference kernel (first: ",
                    lowering.refused[0], ")");
  }
  return line;
}

absl::StatusOr<AttentionLowering> LowerAttentionExterns(const wrapper::WrapperProgram& program,
                                                       const CudaTarget& target) {
  AttentionLowering out;
  out.program = program;
  std::map<std::string, const lowering::Layout*> layouts;
  for (const auto& [name, layout] : program.layouts) layouts.emplace(name, &layout);
  std::vector<wrapper::Line> lines;
  lines.reserve(program.lines.size());
  for (const wrapper::Line& line : program.lines) {
    const auto* ext = std::get_if<wrapper::ExternKernelLine>(&line);
    if (ext == nullptr || ext->op != "kiln::attention" || ext->island >= 0) {
      lines.push_back(line);
      continue;
    }
    const std::vector<lowering::ExternArg>& args = ext->args;
    const std::string who = ext->outputs.empty() ? std::string("?") : CudaSafeText(ext->outputs[0]);
    const bool has_mask = args.size() == 5 && !args[3].buffer.empty();
    if (args.size() != 5 || ext->outputs.size() != 1 || args[0].buffer.empty() || args[1].buffer.empty() ||
        args[2].buffer.empty() || !args[4].constant || !args[4].constant->isNumber() ||
        (!has_mask && !(args[3].constant && args[3].constant->isNone()))) {
      out.refused.push_back(absl::StrCat(who, ": arguments are not (q, kt, v, mask?, scale)"));
      lines.push_back(line);
      continue;
    }
    AttentionKernelShape shape;
    ASSIGN_OR_RETURN(const lowering::Layout* q, LayoutOf(layouts, args[0].buffer));
    ASSIGN_OR_RETURN(const lowering::Layout* kt, LayoutOf(layouts, args[1].buffer));
    ASSIGN_OR_RETURN(const lowering::Layout* v, LayoutOf(layouts, args[2].buffer));
    ASSIGN_OR_RETURN(const lowering::Layout* o, LayoutOf(layouts, ext->outputs[0]));
    shape.q = *q;
    shape.kt = *kt;
    shape.v = *v;
    shape.out = *o;
    if (has_mask) {
      ASSIGN_OR_RETURN(const lowering::Layout* m, LayoutOf(layouts, args[3].buffer));
      shape.mask = *m;
    }
    shape.scale = args[4].constant->toNumberAsDouble();
    absl::StatusOr<CudaKernelSource> k = GenerateAttentionKernel(shape, target);
    if (!k.ok()) {
      if (!absl::IsUnimplemented(k.status())) return k.status();
      out.refused.push_back(absl::StrCat(who, ": ", k.status().message()));
      lines.push_back(line);
      continue;
    }
    const std::string name = absl::StrCat("kiln_attention_", out.fused++);
    std::vector<std::string> call_args = {args[0].buffer, args[1].buffer, args[2].buffer};
    if (has_mask) call_args.push_back(args[3].buffer);
    call_args.push_back(ext->outputs[0]);
    lines.push_back(wrapper::CommentLine{absl::StrCat("kiln::attention -> ", k->name)});
    lines.push_back(wrapper::KernelDefinitionLine{name, "cuda", k->source});
    lines.push_back(wrapper::KernelCallLine{name, "cuda", std::move(call_args)});
    out.kernels.emplace(name, *std::move(k));
  }
  out.program.lines = std::move(lines);
  return out;
}

}  // namespace kiln::backends::cuda
