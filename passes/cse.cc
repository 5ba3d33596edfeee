#include "passes/cse.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/verifier.h"
#include "passes/alias_sets.h"
#include "passes/node_equality.h"
#include "passes/op_info_cache.h"
#include "passes/pass_log.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Node;
using ir::Value;

// A node in a scope table with its hash and commutativity computed once.
struct Entry {
  uint64_t hash;
  Node* node;
  bool commutative;
};

struct EntryHash {
  size_t operator()(const Entry& e) const { return static_cast<size_t>(e.hash); }
};

struct EntryEq {
  bool operator()(const Entry& a, const Entry& b) const {
    return a.hash == b.hash && a.commutative == b.commutative &&
           NodesEqual(*a.node, *b.node, a.commutative);
  }
};

using ScopeTable = absl::flat_hash_set<Entry, EntryHash, EntryEq>;

class CommonSubexpressionEliminator {
 public:
  explicit CommonSubexpressionEliminator(ir::Graph& graph)
      : graph_(graph), alias_(graph, ops_) {}

  absl::StatusOr<bool> Run(PassStatistics& stats) {
    if (alias_.max_block_depth() > kMaxBlockDepth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "common_subexpression_elimination: blocks nested ", alias_.max_block_depth(),
          " deep; at most ", kMaxBlockDepth, " supported"));
    }
    ProcessBlock(graph_.block());
    stats.Add("nodes_merged", merged_);
    return merged_ > 0;
  }

 private:
  // Nodes CSE may merge at all.
  bool Candidate(const Node& n) {
    if (n.outputs().empty() || !n.blocks().empty()) return false;
    if (n.kind() == ir::sym::kConstant) return HasComparableAttributes(n);
    const OpInfo& info = ops_.Get(n);
    if (info.has_side_effects || info.mutates) return false;
    if (alias_.HasAnyWriters()) {
      if (!alias_.WrittenClasses(n).empty()) return false;
      for (const Value* v : n.inputs()) {
        if (alias_.IsMutated(v)) return false;
      }
      for (const Value* v : n.outputs()) {
        if (alias_.IsMutated(v)) return false;
      }
    }
    if (ops_.IsNondeterministic(n)) return false;
    return HasComparableAttributes(n);
  }

  bool AnyOutput(const Node& n, bool (AliasSets::*pred)(const Value*) const) const {
    for (const Value* v : n.outputs()) {
      if ((alias_.*pred)(v)) return true;
    }
    return false;
  }

  // Whether replacing `n` by `existing` keeps graph outputs from aliasing
  // each other (PyTorch: same block, "don't introduce new aliasing among
  // graph outputs"; enclosing block: safeToChangeAliasingRelationship).
  bool SafeToMerge(const Node& n, const Node& existing, bool same_block) const {
    if (same_block) {
      return !(AnyOutput(n, &AliasSets::MayAliasGraphOutput) &&
               AnyOutput(existing, &AliasSets::MayAliasGraphOutput));
    }
    return !AnyOutput(n, &AliasSets::Escapes) && !AnyOutput(existing, &AliasSets::Escapes);
  }

  void ProcessBlock(Block* b) {
    scopes_.push_back(std::make_unique<ScopeTable>());
    ScopeTable& table = *scopes_.back();
    for (Node* n = b->front(); n != b->return_node();) {
      Node* next = n->next();
      if (!n->blocks().empty()) {
        for (Block* sub : n->blocks()) ProcessBlock(sub);
      } else if (Candidate(*n)) {
        const bool commutative = n->kind() != ir::sym::kConstant && ops_.IsCommutative(*n);
        Entry e{HashNode(*n, commutative), n, commutative};
        if (!TryReplace(e, table)) table.insert(e);
      }
      n = next;
    }
    scopes_.pop_back();
  }

  // Looks `e` up in this block's table, then in the enclosing ones.
  bool TryReplace(const Entry& e, ScopeTable& table) {
    for (size_t depth = scopes_.size(); depth-- > 0;) {
      const ScopeTable& scope = *scopes_[depth];
      auto it = scope.find(e);
      if (it == scope.end()) continue;
      Node* existing = it->node;
      if (!SafeToMerge(*e.node, *existing, &scope == &table)) return false;
      for (size_t i = 0; i < existing->outputs().size(); ++i) {
        alias_.Merge(e.node->output(i), existing->output(i));
      }
      KILN_LOG_UPDATE("common_subexpression_elimination", "replaced ",
                      ir::DescribeNode(*e.node), " by ", ir::DescribeNode(*existing));
      e.node->replaceAllUsesWith(existing);
      e.node->destroy();
      ++merged_;
      return true;
    }
    return false;
  }

  ir::Graph& graph_;
  OpInfoCache ops_;
  AliasSets alias_;
  std::vector<std::unique_ptr<ScopeTable>> scopes_;
  int64_t merged_ = 0;
};

}  // namespace

absl::StatusOr<bool> EliminateCommonSubexpressions(ir::Graph& graph, PassStatistics& stats) {
  CommonSubexpressionEliminator cse(graph);
  return cse.Run(stats);
}

absl::Status RegisterCommonSubexpressionEliminationPass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "common_subexpression_elimination", {"cse"},
      "replaces a node by an equal earlier node in the same or an enclosing block",
      EliminateCommonSubexpressions);
}

}  // namespace kiln::passes
