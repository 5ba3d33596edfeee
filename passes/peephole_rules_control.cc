// Control-flow and None peepholes: `is` / `is not` decided by types, and
// prim::If outputs that do not depend on the branch (both branches yield the
// same outer value, or the branches yield True / False for the condition);
// an If left with no outputs and two empty blocks is removed. Blocks that
// still hold nodes are kept: they may have side effects.
#include <cstddef>

#include "ir/ir.h"
#include "ir/constants.h"
#include "passes/peephole_rule.h"

namespace kiln::passes {
namespace {

using ir::IValue;
using ir::Node;
using ir::Value;

ir::Symbol S(const char* q) { return ir::Symbol::FromQualString(q); }

bool IsNone(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  static const ir::Symbol kIsNot = S("aten::__isnot__");
  const Value* a = n->input(0);
  const Value* b = n->input(1);
  bool same;
  if (MustBeNone(a) && MustBeNone(b)) {
    same = true;
  } else if ((MustBeNone(a) && MustNotBeNone(b)) || (MustNotBeNone(a) && MustBeNone(b))) {
    same = false;
  } else {
    return false;
  }
  return FoldTo(n, IValue::Bool(n->kind() == kIsNot ? !same : same), ctx);
}

bool IsConstantBool(const Value* v, bool expected) {
  if (!IsConstant(v)) return false;
  std::optional<IValue> c = ConstantValue(v);
  return c && c->isBool() && c->toBool() == expected;
}

// Output i of the If can be replaced by `replacement(i)` (non-null): do it
// and drop the output from the node and both blocks.
template <typename Replacement>
bool ForwardIfOutputs(Node* n, RewriteContext& ctx, Replacement replacement) {
  if (n->blocks().size() != 2) return false;
  bool changed = false;
  for (size_t i = n->outputs().size(); i-- > 0;) {
    Value* v = replacement(i);
    if (v == nullptr) continue;
    ctx.Replace(n->output(i), v);
    n->eraseOutput(i);
    Value* then_value = n->block(0)->outputs()[i];
    Value* else_value = n->block(1)->outputs()[i];
    n->block(0)->eraseOutput(i);
    n->block(1)->eraseOutput(i);
    DestroyIfUnusedConstant(then_value);
    if (else_value != then_value) DestroyIfUnusedConstant(else_value);
    changed = true;
  }
  if (changed) ctx.Revisit(n);
  return changed;
}

// Both branches yield the same value (necessarily defined outside the If).
bool IfSameOutputs(Node* n, RewriteContext& ctx) {
  return ForwardIfOutputs(n, ctx, [n](size_t i) -> Value* {
    Value* t = n->block(0)->outputs()[i];
    return t == n->block(1)->outputs()[i] ? t : nullptr;
  });
}

// `c ? True : False` is c (how `x and True` / `x or False` compile).
bool IfYieldsItsCondition(Node* n, RewriteContext& ctx) {
  Value* cond = n->input(0);
  return ForwardIfOutputs(n, ctx, [n, cond](size_t i) -> Value* {
    const bool yields_cond = IsConstantBool(n->block(0)->outputs()[i], true) &&
                             IsConstantBool(n->block(1)->outputs()[i], false);
    return yields_cond ? cond : nullptr;
  });
}

bool EmptyIf(Node* n, RewriteContext& ctx) {
  if (!n->outputs().empty() || n->blocks().size() != 2 || !n->block(0)->empty() ||
      !n->block(1)->empty()) {
    return false;
  }
  ctx.Erase(n);
  return true;
}

}  // namespace

std::vector<PeepholeRule> ControlPeepholeRules() {
  return {
      {"is_none", S("aten::__is__"), IsNone},
      {"is_none", S("aten::__isnot__"), IsNone},
      {"if_same_outputs", ir::sym::kIf, IfSameOutputs},
      {"if_yields_condition", ir::sym::kIf, IfYieldsItsCondition},
      {"empty_if", ir::sym::kIf, EmptyIf},
  };
}

}  // namespace kiln::passes
