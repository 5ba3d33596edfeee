#include "passes/dce.h"

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/verifier.h"
#include "passes/alias_sets.h"
#include "passes/op_info_cache.h"
#include "passes/pass_log.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Node;
using ir::Value;

class DeadCodeEliminator {
 public:
  explicit DeadCodeEliminator(ir::Graph& graph)
      : graph_(graph), alias_(graph, ops_) {}

  absl::StatusOr<bool> Run(PassStatistics& stats) {
    if (alias_.max_block_depth() > kMaxBlockDepth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "dead_code_elimination: blocks nested ", alias_.max_block_depth(),
          " deep; at most ", kMaxBlockDepth, " supported"));
    }
    live_value_.assign(graph_.nextUnique(), 0);
    live_class_.assign(alias_.NumClassIds(), 0);
    // Whatever may alias a graph input is visible to the caller.
    live_class_[alias_.WildcardClass()] = 1;
    for (Value* out : graph_.outputs()) MarkValue(out);
    MarkBlock(graph_.block());
    SweepBlock(graph_.block());
    stats.Add("nodes_removed", nodes_removed_);
    stats.Add("outputs_removed", outputs_removed_);
    return nodes_removed_ > 0 || outputs_removed_ > 0;
  }

 private:
  bool IsLive(const Value* v) const {
    return v->unique() >= live_value_.size() || live_value_[v->unique()];
  }

  void MarkValue(const Value* v) {
    if (IsLive(v)) return;
    live_value_[v->unique()] = 1;
    uint32_t c = alias_.ClassOf(v);
    if (c != AliasSets::kNoClass && !live_class_[c]) {
      live_class_[c] = 1;
      if (alias_.ClassHasWriters(c)) ++writer_class_events_;
    }
  }

  bool AnyOutputLive(const Node* n) const {
    for (const Value* out : n->outputs()) {
      if (IsLive(out)) return true;
    }
    return false;
  }

  bool NodeIsLive(const Node* n) const {
    return AnyOutputLive(n) || (!forced_.empty() && forced_.contains(n));
  }

  // Live for a reason other than its outputs; its owners are live too.
  void Force(const Node* n) {
    while (n != nullptr && forced_.insert(n).second) {
      n = n->owningBlock()->owningNode();
    }
  }

  bool WritesLiveClass(const Node* n) const {
    if (!alias_.HasAnyWriters()) return false;
    for (uint32_t c : alias_.WrittenClasses(*n)) {
      if (live_class_[c]) return true;
    }
    return false;
  }

  // Marks inputs of a node that is live (If: only the condition; Loop: the
  // trip count, condition and the initial values of live carried slots).
  void MarkLiveNodeInputs(Node* n) {
    if (IsWellFormedIf(*n)) {
      MarkValue(n->input(0));
    } else if (IsWellFormedLoop(*n)) {
      MarkValue(n->input(0));
      MarkValue(n->input(1));
      const Block* body = n->block(0);
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        if (IsLive(n->output(i)) || IsLive(body->inputs()[1 + i])) MarkValue(n->input(2 + i));
      }
    } else {
      for (const Value* in : n->inputs()) MarkValue(in);
    }
    // A node inside a block keeps its owners (and their conditions) alive.
    if (n->owningBlock()->owningNode() != nullptr) Force(n->owningBlock()->owningNode());
  }

  void MarkBlock(Block* b) {
    for (Node* n : b->reverse_nodes()) MarkNode(n);
  }

  void MarkNode(Node* n) {
    if (n->kind() == ir::sym::kConstant) {
      if (AnyOutputLive(n)) MarkLiveNodeInputs(n);
      return;
    }
    if (IsWellFormedIf(*n)) {
      for (size_t i = 0; i < n->outputs().size(); ++i) {
        if (!IsLive(n->output(i))) continue;
        for (const Block* b : n->blocks()) MarkValue(b->outputs()[i]);
      }
      for (Block* b : n->blocks()) MarkBlock(b);
      if (NodeIsLive(n)) MarkLiveNodeInputs(n);
      return;
    }
    if (IsWellFormedLoop(*n)) {
      MarkLoop(n);
      return;
    }
    if (!n->blocks().empty()) {
      // Control flow kiln does not model: keep it and everything it returns.
      Force(n);
      for (Block* b : n->blocks()) {
        for (const Value* v : b->outputs()) MarkValue(v);
        MarkBlock(b);
      }
      MarkLiveNodeInputs(n);
      return;
    }
    if (AnyOutputLive(n) || ops_.Get(*n).has_side_effects || WritesLiveClass(n)) {
      if (n->outputs().empty() || !AnyOutputLive(n)) Force(n);
      MarkLiveNodeInputs(n);
    }
  }

  // Re-marks the body until neither a carried slot, the loop condition nor
  // a written alias class becomes live anew.
  void MarkLoop(Node* loop) {
    Block* body = loop->block(0);
    const size_t carried = loop->outputs().size();
    std::vector<uint8_t> slot_live(carried, 0);
    bool cond_live = false;
    while (true) {
      for (size_t i = 0; i < carried; ++i) {
        if (!slot_live[i] && (IsLive(loop->output(i)) || IsLive(body->inputs()[1 + i]))) {
          slot_live[i] = 1;
          MarkValue(body->outputs()[1 + i]);
        }
      }
      if (!cond_live && NodeIsLive(loop)) {
        cond_live = true;
        MarkValue(body->outputs()[0]);
      }
      const uint64_t events = writer_class_events_;
      MarkBlock(body);
      bool again = writer_class_events_ != events || (!cond_live && NodeIsLive(loop));
      for (size_t i = 0; i < carried && !again; ++i) {
        again = !slot_live[i] && IsLive(body->inputs()[1 + i]);
      }
      if (!again) break;
    }
    if (NodeIsLive(loop)) MarkLiveNodeInputs(loop);
  }

  // --- sweep ---

  void SweepBlock(Block* b) {
    for (Node* n = b->back(); n != b->return_node();) {
      Node* prev = n->prev();
      SweepNode(n);
      n = prev;
    }
  }

  void SweepNode(Node* n) {
    if (!NodeIsLive(n)) {
      for (const Value* out : n->outputs()) {
        // Only reachable from inconsistent graphs; leave such nodes alone.
        if (out->hasUses()) return;
      }
      size_t count = 1;
      for (const Block* sub : n->blocks()) count += ir::CountNodes(sub);
      nodes_removed_ += static_cast<int64_t>(count);
      KILN_LOG_UPDATE("dead_code_elimination", "removed ", ir::DescribeNode(*n));
      n->destroy();
      return;
    }
    if (IsWellFormedIf(*n)) {
      for (size_t i = n->outputs().size(); i-- > 0;) {
        if (IsLive(n->output(i)) || n->output(i)->hasUses()) continue;
        KILN_LOG_UPDATE("dead_code_elimination", "removed unused output ", i, " of ",
                        ir::DescribeNode(*n));
        for (Block* b : n->blocks()) b->eraseOutput(i);
        n->eraseOutput(i);
        ++outputs_removed_;
      }
      for (Block* b : n->blocks()) SweepBlock(b);
      return;
    }
    if (IsWellFormedLoop(*n)) {
      SweepLoop(n);
      return;
    }
    for (Block* b : n->blocks()) SweepBlock(b);
  }

  void SweepLoop(Node* loop) {
    Block* body = loop->block(0);
    std::vector<size_t> dead;
    for (size_t i = 0; i < loop->outputs().size(); ++i) {
      Value* in = body->inputs()[1 + i];
      if (IsLive(loop->output(i)) || IsLive(in) || loop->output(i)->hasUses()) continue;
      // Feed the slot its own input for now, so that what computed the old
      // body output becomes unused and is swept with the body.
      body->replaceOutput(1 + i, in);
      dead.push_back(i);
    }
    SweepBlock(body);
    for (size_t k = dead.size(); k-- > 0;) {
      const size_t i = dead[k];
      Value* in = body->inputs()[1 + i];
      // Its only use is the body output set above (always so in a valid
      // graph); otherwise the slot stays as a harmless pass-through.
      if (in->uses().size() != 1) continue;
      body->eraseOutput(1 + i);
      body->eraseInput(1 + i);
      loop->removeInput(2 + i);
      loop->eraseOutput(i);
      ++outputs_removed_;
    }
  }

  ir::Graph& graph_;
  OpInfoCache ops_;
  AliasSets alias_;
  std::vector<uint8_t> live_value_;
  std::vector<uint8_t> live_class_;
  absl::flat_hash_set<const Node*> forced_;
  uint64_t writer_class_events_ = 0;
  int64_t nodes_removed_ = 0;
  int64_t outputs_removed_ = 0;
};

}  // namespace

absl::StatusOr<bool> EliminateDeadCode(ir::Graph& graph, PassStatistics& stats) {
  DeadCodeEliminator dce(graph);
  return dce.Run(stats);
}

absl::Status RegisterDeadCodeEliminationPass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "dead_code_elimination", {"dce"},
      "removes nodes whose results are unused and that have no side effects, "
      "and unused prim::If / prim::Loop outputs",
      EliminateDeadCode);
}

}  // namespace kiln::passes
