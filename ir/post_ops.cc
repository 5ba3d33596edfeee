#include "ir/post_ops.h"

#include "absl/strings/str_cat.h"

namespace kiln::ir {
namespace {

struct KindInfo {
  PostOpKind kind;
  const char* name;
  int scalars;
  int operands;
};

constexpr KindInfo kKinds[] = {
    {PostOpKind::kRelu, "relu", 0, 0},
    {PostOpKind::kLeakyRelu, "leaky_relu", 1, 0},
    {PostOpKind::kElu, "elu", 1, 0},
    {PostOpKind::kSigmoid, "sigmoid", 0, 0},
    {PostOpKind::kTanh, "tanh", 0, 0},
    {PostOpKind::kHardswish, "hardswish", 0, 0},
    {PostOpKind::kHardsigmoid, "hardsigmoid", 0, 0},
    {PostOpKind::kSilu, "silu", 0, 0},
    {PostOpKind::kGelu, "gelu", 0, 0},
    {PostOpKind::kGeluTanh, "gelu_tanh", 0, 0},
    {PostOpKind::kClamp, "clamp", 2, 0},
    {PostOpKind::kClampMin, "clamp_min", 1, 0},
    {PostOpKind::kClampMax, "clamp_max", 1, 0},
    {PostOpKind::kLinear, "linear", 2, 0},
    {PostOpKind::kAdd, "add", 0, 1},
    {PostOpKind::kMul, "mul", 0, 1},
};

const KindInfo& Info(PostOpKind kind) {
  for (const KindInfo& k : kKinds) {
    if (k.kind == kind) return k;
  }
  return kKinds[0];  // unreachable: every enumerator has a row
}

}  // namespace

const char* PostOpName(PostOpKind kind) { return Info(kind).name; }
int PostOpScalarCount(PostOpKind kind) { return Info(kind).scalars; }
int PostOpOperandCount(PostOpKind kind) { return Info(kind).operands; }

absl::StatusOr<std::vector<PostOp>> ParsePostOps(const std::vector<std::string>& names,
                                                 const std::vector<double>& scalars,
                                                 size_t num_operands) {
  std::vector<PostOp> ops;
  size_t next_scalar = 0, next_operand = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    const KindInfo* info = nullptr;
    for (const KindInfo& k : kKinds) {
      if (names[i] == k.name) info = &k;
    }
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("post-op ", i, ": unknown step '", names[i], "'"));
    }
    PostOp op;
    op.kind = info->kind;
    if (next_scalar + static_cast<size_t>(info->scalars) > scalars.size()) {
      return absl::InvalidArgumentError(absl::StrCat("post-op ", i, " (", info->name, ") needs ",
                                                     info->scalars, " scalars; post_scalars has too few"));
    }
    op.scalars.assign(scalars.begin() + static_cast<int64_t>(next_scalar),
                      scalars.begin() + static_cast<int64_t>(next_scalar + info->scalars));
    next_scalar += static_cast<size_t>(info->scalars);
    if (info->operands > 0) {
      if (next_operand >= num_operands) {
        return absl::InvalidArgumentError(
            absl::StrCat("post-op ", i, " (", info->name, ") needs an operand; post_operands has too few"));
      }
      op.operand = static_cast<int>(next_operand++);
    }
    ops.push_back(std::move(op));
  }
  if (next_scalar != scalars.size() || next_operand != num_operands) {
    return absl::InvalidArgumentError(absl::StrCat("post-ops use ", next_scalar, " scalars and ", next_operand,
                                                   " operands, but ", scalars.size(), " and ", num_operands,
                                                   " were given"));
  }
  return ops;
}

void AppendPostOp(const PostOp& op, std::vector<std::string>* names, std::vector<double>* scalars) {
  names->push_back(PostOpName(op.kind));
  scalars->insert(scalars->end(), op.scalars.begin(), op.scalars.end());
}

}  // namespace kiln::ir
