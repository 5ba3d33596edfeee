#include "ir/op_traits.h"

#include "absl/container/flat_hash_set.h"

namespace kiln::ir {
namespace {

// Node::hasSideEffects' fixed list (ir.cpp), whether registered or not.
const absl::flat_hash_set<Symbol>& SideEffectKinds() {
  static const auto* kinds = [] {
    auto* s = new absl::flat_hash_set<Symbol>();
    for (const char* q :
         {"prim::PythonOp", "prim::IgnoredPythonOp", "prim::Print", "prim::RaiseException",
          "aten::warn", "aten::save", "aten::manual_seed", "prim::AddStatValue",
          "prim::TimePoint", "prim::CallFunction", "prim::CallMethod",
          "prim::BailoutTemplate", "prim::BailOut", "prim::rpc_async", "prim::rpc_sync",
          "prim::rpc_remote", "aten::wait", "cuda::set_stream", "cuda::_set_device",
          "cuda::_current_device", "cuda::synchronize", "prim::Enter", "prim::Exit",
          "prim::SetAttr"}) {
      s->insert(Symbol::FromQualString(q));
    }
    return s;
  }();
  return *kinds;
}

// The constant a value holds when it is a prim::Constant int/bool/float.
const AttributeValue* ConstantOf(const Value* v) {
  const Node* n = v->node();
  if (n->kind() != sym::kConstant) return nullptr;
  return n->findAttribute(sym::kValue);
}

bool IsPrim(Symbol s) { return s.is_prim(); }

}  // namespace

bool HasSideEffects(const Node& node, const OpRegistry& ops) {
  if (SideEffectKinds().contains(node.kind())) return true;
  if (const Operator* op = ops.Match(node)) {
    return op->traits.has_side_effects || op->traits.alias_kind == AliasKind::kConservative;
  }
  return !IsPrim(node.kind());
}

bool IsNondeterministic(const Node& node, const OpRegistry& ops) {
  const Operator* op = ops.Match(node);
  if (!op || !op->traits.nondeterministic) return false;
  int train = op->schema.ArgumentIndex("train");
  if (train >= 0 && static_cast<size_t>(train) < node.inputs().size() &&
      op->schema.arguments[static_cast<size_t>(train)].type->kind() == TypeKind::kBool) {
    const AttributeValue* c = ConstantOf(node.input(static_cast<size_t>(train)));
    if (c && std::holds_alternative<int64_t>(*c) && std::get<int64_t>(*c) == 0) return false;
  }
  return true;
}

bool IsMutating(const Node& node, const OpRegistry& ops) {
  if (const Operator* op = ops.Match(node)) return op->traits.mutates;
  return !IsPrim(node.kind());
}

bool IsView(const Node& node, const OpRegistry& ops) {
  const Operator* op = ops.Match(node);
  return op && op->traits.is_view;
}

bool IsCommutative(const Node& node, const OpRegistry& ops) {
  const Operator* op = ops.Match(node);
  if (!op || !op->traits.commutative || node.inputs().size() < 2) return false;
  int alpha = op->schema.ArgumentIndex("alpha");
  if (alpha < 0 || static_cast<size_t>(alpha) >= node.inputs().size()) return true;
  const AttributeValue* c = ConstantOf(node.input(static_cast<size_t>(alpha)));
  if (!c) return false;
  if (std::holds_alternative<int64_t>(*c)) return std::get<int64_t>(*c) == 1;
  if (std::holds_alternative<double>(*c)) return std::get<double>(*c) == 1.0;
  return false;
}

AliasKind GetAliasKind(const Node& node, const OpRegistry& ops) {
  if (const Operator* op = ops.Match(node)) return op->traits.alias_kind;
  return IsPrim(node.kind()) ? AliasKind::kInternalSpecialCase : AliasKind::kConservative;
}

Symbol InplaceVariant(Symbol functional, const OpRegistry& ops) {
  auto overloads = ops.Overloads(functional);
  return overloads.empty() ? Symbol() : overloads[0]->traits.inplace_variant;
}

Symbol FunctionalVariant(Symbol inplace, const OpRegistry& ops) {
  auto overloads = ops.Overloads(inplace);
  return overloads.empty() ? Symbol() : overloads[0]->traits.functional_variant;
}

}  // namespace kiln::ir
