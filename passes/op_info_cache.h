// Memoised operator traits for a pass run.
//
// ir::HasSideEffects / IsMutating / IsView / GetAliasKind and OpRegistry::Match
// depend only on a node's kind, its input types and its output count, but
// each call re-matches the overloads. Passes that ask several of them for
// every node of a large graph ask this cache instead: it calls the ir/
// predicates once per distinct signature and remembers the answers. The
// constant-dependent predicates (IsNondeterministic: dropout's `train`;
// IsCommutative: `alpha`) are asked per node, and only when the matched
// overload could say yes.
//
// Types are keyed by identity; the cache keeps them alive, so an address is
// never reused while the cache exists. Create one per pass run.
#ifndef KILN_PASSES_OP_INFO_CACHE_H_
#define KILN_PASSES_OP_INFO_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ir/ir.h"
#include "ir/op_registry.h"

namespace kiln::passes {

struct OpInfo {
  const ir::Operator* op = nullptr;  // null when no overload matches
  bool has_side_effects = false;
  bool mutates = false;
  bool is_view = false;
  ir::AliasKind alias_kind = ir::AliasKind::kConservative;
};

class OpInfoCache {
 public:
  explicit OpInfoCache(const ir::OpRegistry& ops = ir::BuiltinOps()) : ops_(ops) {}
  OpInfoCache(const OpInfoCache&) = delete;
  OpInfoCache& operator=(const OpInfoCache&) = delete;

  // The returned reference stays valid for the cache's lifetime.
  const OpInfo& Get(const ir::Node& node);

  bool IsNondeterministic(const ir::Node& node);
  bool IsCommutative(const ir::Node& node);

  const ir::OpRegistry& registry() const { return ops_; }

 private:
  struct Entry {
    ir::Symbol kind;
    size_t num_outputs;
    std::vector<ir::TypePtr> input_types;
    std::unique_ptr<OpInfo> info;  // stable address
  };
  static uint64_t SignatureHash(const ir::Node& node);
  static bool SameSignature(const Entry& e, const ir::Node& node);

  const ir::OpRegistry& ops_;
  // Signature hash -> entries with that hash (collisions are rare).
  absl::flat_hash_map<uint64_t, std::vector<Entry>> entries_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_OP_INFO_CACHE_H_
