#include "passes/constant_pooling.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "passes/alias_sets.h"
#include "passes/node_equality.h"
#include "passes/op_info_cache.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Node;

struct Entry {
  uint64_t hash;
  Node* node;
};

struct EntryHash {
  size_t operator()(const Entry& e) const { return static_cast<size_t>(e.hash); }
};

struct EntryEq {
  bool operator()(const Entry& a, const Entry& b) const {
    return a.hash == b.hash && NodesEqual(*a.node, *b.node, /*commutative=*/false);
  }
};

bool HasMutableOutput(const Node& n) {
  for (const ir::Value* v : n.outputs()) {
    if (v->type() && IsMutableType(*v->type())) return true;
  }
  return false;
}

class ConstantPooler {
 public:
  explicit ConstantPooler(ir::Graph& graph) : graph_(graph) {}

  absl::StatusOr<bool> Run(PassStatistics& stats) {
    std::vector<Node*> survivors;
    // Pre-order over blocks with an explicit stack (any nesting depth).
    std::vector<std::pair<Node*, Node*>> stack;  // (next node, block end)
    stack.push_back({graph_.block()->front(), graph_.block()->return_node()});
    while (!stack.empty()) {
      auto& [n, end] = stack.back();
      if (n == end) {
        stack.pop_back();
        continue;
      }
      Node* node = n;
      n = node->next();
      if (node->kind() == ir::sym::kConstant) {
        if (!MergeIntoEarlier(node)) survivors.push_back(node);
        continue;
      }
      // Blocks are pushed last-first so that they are visited in order.
      for (size_t i = node->blocks().size(); i-- > 0;) {
        Block* b = node->block(i);
        stack.push_back({b->front(), b->return_node()});
      }
    }
    const int64_t moved = Hoist(survivors);
    stats.Add("constants_merged", merged_);
    stats.Add("constants_moved", moved);
    return merged_ > 0 || moved > 0;
  }

 private:
  bool MergeIntoEarlier(Node* node) {
    if (!node->blocks().empty() || !node->inputs().empty() || !HasComparableAttributes(*node)) {
      return false;
    }
    Entry e{HashNode(*node, /*commutative=*/false), node};
    auto [it, inserted] = table_.insert(e);
    if (inserted) return false;
    Node* existing = it->node;
    if (HasMutableOutput(*node) && !SafeToMerge(*node, *existing)) return false;
    for (size_t i = 0; i < node->outputs().size(); ++i) {
      if (alias_) alias_->Merge(node->output(i), existing->output(i));
    }
    node->replaceAllUsesWith(existing);
    node->destroy();
    ++merged_;
    return true;
  }

  // PyTorch's safeToChangeAliasingRelationship: neither is written and they
  // do not both escape the graph.
  bool SafeToMerge(const Node& a, const Node& b) {
    if (!alias_) alias_ = std::make_unique<AliasSets>(graph_, ops_);
    bool a_escapes = false;
    bool b_escapes = false;
    for (size_t i = 0; i < a.outputs().size(); ++i) {
      if (alias_->IsMutated(a.output(i)) || alias_->IsMutated(b.output(i))) return false;
      a_escapes = a_escapes || alias_->Escapes(a.output(i));
      b_escapes = b_escapes || alias_->Escapes(b.output(i));
    }
    return !(a_escapes && b_escapes);
  }

  // Moves the survivors, in order, to the start of the top-level block.
  // Returns how many nodes were not already in place.
  int64_t Hoist(const std::vector<Node*>& survivors) {
    Block* top = graph_.block();
    size_t in_place = 0;
    for (Node* n = top->front(); in_place < survivors.size() && n == survivors[in_place];
         n = n->next()) {
      ++in_place;
    }
    if (in_place == survivors.size()) return 0;
    // Prepending in reverse order is O(1) per node (no topological
    // re-spacing), unlike inserting each one after the previous.
    for (size_t i = survivors.size(); i-- > in_place;) {
      survivors[i]->moveBefore(top->front());
    }
    for (size_t i = in_place; i-- > 0;) survivors[i]->moveBefore(top->front());
    return static_cast<int64_t>(survivors.size() - in_place);
  }

  ir::Graph& graph_;
  OpInfoCache ops_;
  std::unique_ptr<AliasSets> alias_;  // built on first need
  absl::flat_hash_set<Entry, EntryHash, EntryEq> table_;
  int64_t merged_ = 0;
};

}  // namespace

absl::StatusOr<bool> PoolConstants(ir::Graph& graph, PassStatistics& stats) {
  ConstantPooler pooler(graph);
  return pooler.Run(stats);
}

absl::Status RegisterConstantPoolingPass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "constant_pooling", {"pool"},
      "merges equal prim::Constant nodes and moves all constants to the start of the graph",
      PoolConstants);
}

}  // namespace kiln::passes
