#include "passes/op_info_cache.h"

#include <utility>

#include "ir/op_traits.h"
#include "support/hash.h"

namespace kiln::passes {

uint64_t OpInfoCache::SignatureHash(const ir::Node& node) {
  uint64_t h = HashCombine(node.kind().id(), node.outputs().size());
  for (const ir::Value* v : node.inputs()) {
    h = HashCombine(h, reinterpret_cast<uintptr_t>(v->type().get()));
  }
  return h;
}

bool OpInfoCache::SameSignature(const Entry& e, const ir::Node& node) {
  if (e.kind != node.kind() || e.num_outputs != node.outputs().size() ||
      e.input_types.size() != node.inputs().size()) {
    return false;
  }
  for (size_t i = 0; i < e.input_types.size(); ++i) {
    if (e.input_types[i].get() != node.input(i)->type().get()) return false;
  }
  return true;
}

const OpInfo& OpInfoCache::Get(const ir::Node& node) {
  std::vector<Entry>& bucket = entries_[SignatureHash(node)];
  for (const Entry& e : bucket) {
    if (SameSignature(e, node)) return *e.info;
  }
  auto info = std::make_unique<OpInfo>();
  info->op = ops_.Match(node);
  info->has_side_effects = ir::HasSideEffects(node, ops_);
  info->mutates = ir::IsMutating(node, ops_);
  info->is_view = ir::IsView(node, ops_);
  info->alias_kind = ir::GetAliasKind(node, ops_);
  Entry e{node.kind(), node.outputs().size(), {}, std::move(info)};
  e.input_types.reserve(node.inputs().size());
  for (const ir::Value* v : node.inputs()) e.input_types.push_back(v->type());
  bucket.push_back(std::move(e));
  return *bucket.back().info;
}

bool OpInfoCache::IsNondeterministic(const ir::Node& node) {
  const OpInfo& info = Get(node);
  if (info.op == nullptr || !info.op->traits.nondeterministic) return false;
  return ir::IsNondeterministic(node, ops_);
}

bool OpInfoCache::IsCommutative(const ir::Node& node) {
  const OpInfo& info = Get(node);
  if (info.op == nullptr || !info.op->traits.commutative) return false;
  return ir::IsCommutative(node, ops_);
}

}  // namespace kiln::passes
