// List and tuple idioms, after PyTorch's peephole_list_idioms: reads of a
// prim::ListConstruct (len, constant index, unpack) are answered from its
// inputs when nothing can mutate the list (constants.h IsNeverMutated), and
// reads of a prim::TupleConstruct (tuples are immutable) likewise.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "ir/ir.h"
#include "ir/constants.h"
#include "passes/peephole_rule.h"

namespace kiln::passes {
namespace {

using ir::IValue;
using ir::Node;
using ir::Value;

ir::Symbol S(const char* q) { return ir::Symbol::FromQualString(q); }

// The ListConstruct producing `list` when its contents are stable.
Node* StableListConstruct(Value* list, RewriteContext& ctx) {
  Node* p = list->node();
  if (p->kind() != ir::sym::kListConstruct || !IsNeverMutated(list, ctx.ops())) return nullptr;
  return p;
}

std::optional<size_t> ConstantIndex(const Value* index, size_t size) {
  std::optional<int64_t> i = ConstantInt(index);
  if (!i) return std::nullopt;
  const int64_t n = static_cast<int64_t>(size);
  const int64_t k = *i < 0 ? *i + n : *i;
  if (k < 0 || k >= n) return std::nullopt;  // raises at run time: keep it
  return static_cast<size_t>(k);
}

void EraseIfUnused(Node* n, RewriteContext& ctx) {
  if (!n->hasUses()) ctx.Erase(n);
}

// Replaces every output i of `unpack` with input i of `construct`.
bool UnpackFromConstruct(Node* unpack, Node* construct, RewriteContext& ctx) {
  if (construct->inputs().size() != unpack->outputs().size()) return false;
  for (size_t i = 0; i < unpack->outputs().size(); ++i) {
    ctx.Replace(unpack->output(i), construct->input(i));
  }
  ctx.Erase(unpack);
  EraseIfUnused(construct, ctx);
  return true;
}

bool ListUnpackOfConstruct(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1) return false;
  Node* construct = StableListConstruct(n->input(), ctx);
  return construct != nullptr && UnpackFromConstruct(n, construct, ctx);
}

bool GetItemOfConstruct(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  Node* construct = StableListConstruct(n->input(0), ctx);
  if (construct == nullptr) return false;
  std::optional<size_t> i = ConstantIndex(n->input(1), construct->inputs().size());
  if (!i) return false;
  ForwardTo(n, construct->input(*i), ctx);
  EraseIfUnused(construct, ctx);
  return true;
}

bool LenOfConstruct(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1 || n->outputs().size() != 1) return false;
  Node* construct = StableListConstruct(n->input(), ctx);
  if (construct == nullptr) return false;
  const int64_t size = static_cast<int64_t>(construct->inputs().size());
  if (!FoldTo(n, IValue::Int(size), ctx)) return false;
  EraseIfUnused(construct, ctx);
  return true;
}

bool TupleIndexOfConstruct(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 2 || n->outputs().size() != 1) return false;
  Node* construct = n->input(0)->node();
  if (construct->kind() != ir::sym::kTupleConstruct) return false;
  std::optional<size_t> i = ConstantIndex(n->input(1), construct->inputs().size());
  if (!i) return false;
  ForwardTo(n, construct->input(*i), ctx);
  EraseIfUnused(construct, ctx);
  return true;
}

bool TupleUnpackOfConstruct(Node* n, RewriteContext& ctx) {
  if (n->inputs().size() != 1) return false;
  Node* construct = n->input()->node();
  if (construct->kind() != ir::sym::kTupleConstruct) return false;
  return UnpackFromConstruct(n, construct, ctx);
}

}  // namespace

std::vector<PeepholeRule> ListPeepholeRules() {
  return {
      {"list_unpack_of_construct", ir::sym::kListUnpack, ListUnpackOfConstruct},
      {"getitem_of_construct", S("aten::__getitem__"), GetItemOfConstruct},
      {"len_of_construct", S("aten::len"), LenOfConstruct},
      {"tuple_index_of_construct", ir::sym::kTupleIndex, TupleIndexOfConstruct},
      {"tuple_unpack_of_construct", ir::sym::kTupleUnpack, TupleUnpackOfConstruct},
  };
}

}  // namespace kiln::passes
