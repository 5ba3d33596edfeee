#include "passes/alias_sets.h"

#include <string>

#include "ir/schema.h"
#include "ir/symbol.h"

namespace kiln::passes {
namespace {

using ir::Node;
using ir::Value;

bool NamesWildcard(const ir::AliasInfo& a) {
  for (const std::string& s : a.before_sets) {
    if (s == "*") return true;
  }
  for (const std::string& s : a.after_sets) {
    if (s == "*") return true;
  }
  return false;
}

bool ContainedWrites(const ir::AliasInfo& a) {
  for (const ir::AliasInfo& c : a.contained) {
    if (c.AnyWrite()) return true;
  }
  return false;
}

bool SharesSet(const ir::AliasInfo& a, const ir::AliasInfo& b) {
  for (const std::string& x : a.before_sets) {
    for (const std::string& y : b.before_sets) {
      if (x == y) return true;
    }
  }
  return false;
}

// Kinds whose effects alias analysis does not track: they may write anything
// reachable from their inputs.
bool HasUntrackedWrites(const Node& n, const OpInfo& info) {
  if (info.mutates || info.alias_kind == ir::AliasKind::kConservative) return true;
  // Printing and raising read their inputs but write nothing.
  if (n.kind() == ir::sym::kPrint || n.kind() == ir::sym::kRaiseException) return false;
  return info.has_side_effects;
}

}  // namespace

bool IsWellFormedIf(const Node& n) {
  if (n.kind() != ir::sym::kIf || n.blocks().size() != 2 || n.inputs().size() != 1) return false;
  for (const ir::Block* b : n.blocks()) {
    if (b->outputs().size() != n.outputs().size()) return false;
  }
  return true;
}

bool IsWellFormedLoop(const Node& n) {
  if (n.kind() != ir::sym::kLoop || n.blocks().size() != 1 || n.inputs().size() < 2) return false;
  const size_t carried = n.inputs().size() - 2;
  const ir::Block* body = n.block(0);
  return n.outputs().size() == carried && body->inputs().size() == carried + 1 &&
         body->outputs().size() == carried + 1;
}

bool IsMutableType(const ir::Type& type) {
  switch (type.kind()) {
    case ir::TypeKind::kTensor:
    case ir::TypeKind::kList:
    case ir::TypeKind::kDict:
    case ir::TypeKind::kClass:
    case ir::TypeKind::kAny:
    case ir::TypeKind::kGenerator:
      return true;
    case ir::TypeKind::kTuple:
    case ir::TypeKind::kOptional:
      // Nesting is bounded by the type parser's depth cap.
      for (const ir::TypePtr& t : type.contained()) {
        if (t && IsMutableType(*t)) return true;
      }
      return false;
    default:
      return false;
  }
}

AliasSets::AliasSets(const ir::Graph& graph, OpInfoCache& ops) {
  const size_t n = graph.nextUnique() + 1;
  parent_.resize(n);
  for (size_t i = 0; i < n; ++i) parent_[i] = static_cast<uint32_t>(i);
  flags_.assign(n, 0);
  wildcard_ = static_cast<uint32_t>(n - 1);

  for (const Value* in : graph.inputs()) MakeWildcard(in);

  std::vector<std::pair<const ir::Block*, int>> stack = {{graph.block(), 0}};
  while (!stack.empty()) {
    auto [b, depth] = stack.back();
    stack.pop_back();
    if (depth > max_block_depth_) max_block_depth_ = depth;
    for (const Node* node : b->nodes()) {
      AnalyzeNode(*node, ops);
      for (const ir::Block* sub : node->blocks()) stack.push_back({sub, depth + 1});
    }
  }

  for (auto& [node, classes] : writes_) {
    for (uint32_t c : classes) flags_[Find(c)] |= kWritten;
  }
  for (const Value* out : graph.outputs()) {
    uint32_t c = ClassOf(out);
    if (c != kNoClass) flags_[c] |= kGraphOutput;
  }
}

uint32_t AliasSets::Index(const Value* v) const {
  // A value created after the analysis is unknown: treat it as untracked.
  return v->unique() < wildcard_ ? static_cast<uint32_t>(v->unique()) : wildcard_;
}

uint32_t AliasSets::Find(uint32_t i) const {
  uint32_t root = i;
  while (parent_[root] != root) root = parent_[root];
  while (parent_[i] != root) {
    uint32_t next = parent_[i];
    parent_[i] = root;
    i = next;
  }
  return root;
}

void AliasSets::Union(uint32_t a, uint32_t b) {
  a = Find(a);
  b = Find(b);
  if (a == b) return;
  // Keep the wildcard sentinel as its own root so WildcardClass() is cheap.
  if (b == wildcard_) std::swap(a, b);
  parent_[b] = a;
  flags_[a] |= flags_[b];
}

void AliasSets::UnionValues(const Value* a, const Value* b) {
  if (!a->type() || !b->type() || !IsMutableType(*a->type()) || !IsMutableType(*b->type())) {
    return;
  }
  Union(Index(a), Index(b));
}

void AliasSets::MakeWildcard(const Value* v) {
  if (v->type() && IsMutableType(*v->type())) Union(wildcard_, Index(v));
}

void AliasSets::AddWrite(const Node& node, const Value* v) {
  if (!v->type() || !IsMutableType(*v->type())) return;
  writes_[&node].push_back(Index(v));
}

void AliasSets::AddWildcardWrite(const Node& node) { writes_[&node].push_back(wildcard_); }

uint32_t AliasSets::ClassOf(const Value* v) const {
  if (!v->type() || !IsMutableType(*v->type())) return kNoClass;
  return Find(Index(v));
}

bool AliasSets::IsMutated(const Value* v) const {
  uint32_t c = ClassOf(v);
  return c != kNoClass && (flags_[c] & kWritten);
}

bool AliasSets::MayAliasGraphOutput(const Value* v) const {
  uint32_t c = ClassOf(v);
  return c != kNoClass && (flags_[c] & kGraphOutput);
}

bool AliasSets::Escapes(const Value* v) const {
  uint32_t c = ClassOf(v);
  return c != kNoClass && (c == Find(wildcard_) || (flags_[c] & kGraphOutput));
}

std::vector<uint32_t> AliasSets::WrittenClasses(const Node& node) const {
  std::vector<uint32_t> out;
  if (writes_.empty()) return out;
  auto it = writes_.find(&node);
  if (it == writes_.end()) return out;
  out.reserve(it->second.size());
  for (uint32_t c : it->second) out.push_back(Find(c));
  return out;
}

void AliasSets::Merge(const Value* from, const Value* to) { UnionValues(from, to); }

void AliasSets::AnalyzeNode(const Node& node, OpInfoCache& ops) {
  const ir::Symbol kind = node.kind();
  if (kind == ir::sym::kConstant) return;
  if (IsWellFormedIf(node)) {
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      for (const ir::Block* b : node.blocks()) UnionValues(node.output(i), b->outputs()[i]);
    }
    return;
  }
  if (IsWellFormedLoop(node)) {
    const ir::Block* body = node.block(0);
    for (size_t i = 0; i < node.outputs().size(); ++i) {
      UnionValues(node.output(i), node.input(2 + i));
      UnionValues(node.output(i), body->inputs()[1 + i]);
      UnionValues(node.output(i), body->outputs()[1 + i]);
    }
    return;
  }
  static const ir::Symbol kDictConstruct = ir::Symbol::FromQualString("prim::DictConstruct");
  if (kind == ir::sym::kListConstruct || kind == ir::sym::kTupleConstruct ||
      kind == kDictConstruct) {
    // Elements of a container alias whatever is later taken out of it.
    for (const Value* in : node.inputs()) MakeWildcard(in);
    return;
  }
  const OpInfo& info = ops.Get(node);
  if (!node.blocks().empty() || info.op == nullptr ||
      (info.alias_kind != ir::AliasKind::kFromSchema && info.alias_kind != ir::AliasKind::kPure)) {
    AnalyzeUntracked(node, info);
    return;
  }
  if (info.alias_kind == ir::AliasKind::kPure) return;
  AnalyzeFromSchema(node, *info.op);
}

void AliasSets::AnalyzeUntracked(const Node& node, const OpInfo& info) {
  for (const Value* in : node.inputs()) MakeWildcard(in);
  for (const Value* out : node.outputs()) MakeWildcard(out);
  for (const ir::Block* b : node.blocks()) {
    for (const Value* v : b->inputs()) MakeWildcard(v);
    for (const Value* v : b->outputs()) MakeWildcard(v);
  }
  if (HasUntrackedWrites(node, info)) AddWildcardWrite(node);
}

void AliasSets::AnalyzeFromSchema(const Node& node, const ir::Operator& op) {
  const ir::FunctionSchema& s = op.schema;
  const size_t num_args = std::min(node.inputs().size(), s.arguments.size());
  for (size_t i = 0; i < num_args; ++i) {
    const auto& a = s.arguments[i].alias_info;
    if (!a) continue;
    const Value* in = node.input(i);
    if (NamesWildcard(*a) || !a->contained.empty()) MakeWildcard(in);
    if (a->is_write) AddWrite(node, in);
    if (ContainedWrites(*a)) AddWildcardWrite(node);
  }
  // Inputs a vararg schema does not describe.
  for (size_t i = num_args; i < node.inputs().size(); ++i) MakeWildcard(node.input(i));

  const size_t num_rets = std::min(node.outputs().size(), s.returns.size());
  for (size_t j = 0; j < num_rets; ++j) {
    const auto& r = s.returns[j].alias_info;
    if (!r) continue;
    const Value* out = node.output(j);
    if (NamesWildcard(*r) || !r->contained.empty()) MakeWildcard(out);
    for (size_t i = 0; i < num_args; ++i) {
      const auto& a = s.arguments[i].alias_info;
      if (!a) continue;
      if (SharesSet(*r, *a)) UnionValues(out, node.input(i));
      // A list of views of the input (`Tensor(a)[]`): its elements escape
      // tracking, and so does what they view.
      for (const ir::AliasInfo& c : r->contained) {
        if (SharesSet(c, *a)) MakeWildcard(node.input(i));
      }
    }
  }
  for (size_t j = num_rets; j < node.outputs().size(); ++j) MakeWildcard(node.output(j));
}

}  // namespace kiln::passes
