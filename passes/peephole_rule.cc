#include "passes/peephole_rule.h"

#include "ir/constants.h"

namespace kiln::passes {

std::optional<DType> KnownDType(const ir::Value* v) {
  const ir::TypePtr& t = v->type();
  if (!t->is_tensor()) return std::nullopt;
  return t->tensor().dtype;
}

std::optional<int64_t> ConstantInt(const ir::Value* v) {
  if (!IsConstant(v)) return std::nullopt;
  std::optional<ir::IValue> c = ConstantValue(v);
  if (!c || !c->isInt()) return std::nullopt;
  return c->toInt();
}

std::optional<double> ConstantDouble(const ir::Value* v) {
  if (!IsConstant(v)) return std::nullopt;
  std::optional<ir::IValue> c = ConstantValue(v);
  if (!c || !c->isDouble()) return std::nullopt;
  return c->toDouble();
}

bool MustBeNone(const ir::Value* v) {
  if (v->type()->kind() == ir::TypeKind::kNone) return true;
  std::optional<ir::IValue> c = IsConstant(v) ? ConstantValue(v) : std::nullopt;
  return c && c->isNone();
}

bool MustNotBeNone(const ir::Value* v) {
  switch (v->type()->kind()) {
    case ir::TypeKind::kNone:
    case ir::TypeKind::kOptional:
    case ir::TypeKind::kAny:
      return false;
    default:
      return !MustBeNone(v);
  }
}

bool ForwardTo(ir::Node* root, ir::Value* v, RewriteContext& ctx) {
  ctx.Replace(root->output(), v);
  ctx.Erase(root);
  return true;
}

bool FoldTo(ir::Node* root, const ir::IValue& value, RewriteContext& ctx) {
  if (!root->output()->hasUses()) {  // no constant needed; the node is pure
    ctx.Erase(root);
    return true;
  }
  ir::Value* c = ctx.Constant(root, value);
  if (c == nullptr) return false;
  return ForwardTo(root, c, ctx);
}

}  // namespace kiln::passes
