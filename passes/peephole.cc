#include "passes/peephole.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/constants.h"
#include "passes/pass_log.h"

namespace kiln::passes {
namespace {

constexpr char kPass[] = "peephole";
// A rule firing on a node may enable another rule on the same node; this
// bounds the retries on one visit (rules shrink the graph, so it is never
// reached in practice).
constexpr int kMaxFiringsPerVisit = 16;

using Dispatch = absl::flat_hash_map<ir::Symbol, std::vector<size_t>>;

Dispatch BuildDispatch(const std::vector<PeepholeRule>& rules) {
  Dispatch d;
  for (size_t i = 0; i < rules.size(); ++i) d[rules[i].root].push_back(i);
  return d;
}

class Driver final : public RewriteContext {
 public:
  Driver(ir::Graph& graph, PassStatistics& stats, const ir::OpRegistry& ops,
         const std::vector<PeepholeRule>& rules, const Dispatch& dispatch)
      : graph_(graph), stats_(stats), ops_(ops), rules_(rules), dispatch_(dispatch),
        fired_(rules.size(), 0) {}

  bool Run() {
    std::vector<ir::Block*> blocks{graph_.block()};
    while (!blocks.empty()) {
      ir::Block* b = blocks.back();
      blocks.pop_back();
      for (ir::Node* n = b->front(); n != b->return_node();) {
        ir::Node* next = n->next();
        if (Visit(n) && !n->blocks().empty()) {
          for (size_t i = n->blocks().size(); i-- > 0;) blocks.push_back(n->block(i));
        }
        n = next;
      }
    }
    // Users of rewritten values that the walk had already passed (and
    // nodes whose blocks changed). Each pop either finds nothing or shrinks
    // the graph, so this ends; the cap is a guard against a rule bug.
    int64_t budget = 4 * static_cast<int64_t>(graph_.numNodes()) + 1024;
    while (!worklist_.empty() && budget-- > 0) {
      ir::Node* n = worklist_.back();
      worklist_.pop_back();
      if (queued_.erase(n) == 0) continue;  // destroyed since it was queued
      Visit(n);
    }
    if (!worklist_.empty()) {
      KILN_LOG_DEBUG(kPass, "worklist budget exhausted with ", worklist_.size(), " nodes left");
    }
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (fired_[i] > 0) stats_.Add(rules_[i].name, fired_[i]);
    }
    if (erased_ > 0) stats_.Add("nodes_erased", erased_);
    return changed_;
  }

  ir::Graph& graph() override { return graph_; }
  const ir::OpRegistry& ops() override { return ops_; }

  void Replace(ir::Value* from, ir::Value* to) override {
    if (from == to) return;
    for (const ir::Use& u : from->uses()) QueueUser(u.user);
    from->replaceAllUsesWith(to);
    changed_ = true;
  }

  void ReplaceInput(ir::Node* n, size_t i, ir::Value* v) override {
    ir::Value* old = n->replaceInput(i, v);
    if (old == v) return;
    changed_ = true;
    DestroyIfUnusedConstant(old);
  }

  ir::Value* Constant(ir::Node* before, const ir::IValue& value) override {
    ir::WithInsertPoint guard(before);
    absl::StatusOr<ir::Value*> c = InsertConstant(graph_, value);
    if (!c.ok()) {
      KILN_LOG_DEBUG(kPass, "no constant for ", value.DebugString(), ": ", c.status().message());
      return nullptr;
    }
    changed_ = true;
    return *c;
  }

  void Erase(ir::Node* n) override {
    if (n == current_) current_destroyed_ = true;
    if (ir::Node* owner = n->owningBlock() ? n->owningBlock()->owningNode() : nullptr) {
      Revisit(owner);
    }
    std::vector<ir::Value*> inputs(n->inputs().begin(), n->inputs().end());
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    queued_.erase(n);
    ForgetNestedNodes(n);
    n->destroy();
    ++erased_;
    changed_ = true;
    for (ir::Value* v : inputs) DestroyIfUnusedConstant(v);
  }

  void Revisit(ir::Node* n) override {
    if (!dispatch_.contains(n->kind())) return;
    if (queued_.insert(n).second) worklist_.push_back(n);
  }

 private:
  void QueueUser(ir::Node* user) {
    if (user->kind() == ir::sym::kReturn) {
      // A block output changed: the node owning the block may simplify.
      if (ir::Node* owner = user->owningBlock()->owningNode()) Revisit(owner);
      return;
    }
    Revisit(user);
  }

  // Nodes inside `n`'s blocks die with it: drop them from the worklist.
  void ForgetNestedNodes(ir::Node* n) {
    if (n->blocks().empty() || queued_.empty()) return;
    std::vector<ir::Block*> blocks(n->blocks().begin(), n->blocks().end());
    while (!blocks.empty()) {
      ir::Block* b = blocks.back();
      blocks.pop_back();
      for (ir::Node* m : b->nodes()) {
        queued_.erase(m);
        blocks.insert(blocks.end(), m->blocks().begin(), m->blocks().end());
      }
    }
  }

  // Runs the rules for `n`'s kind; returns whether `n` still exists.
  bool Visit(ir::Node* n) {
    auto it = dispatch_.find(n->kind());
    if (it == dispatch_.end()) return true;
    current_ = n;
    current_destroyed_ = false;
    for (int firings = 0; firings < kMaxFiringsPerVisit;) {
      bool fired = false;
      for (size_t rule : it->second) {
        if (!rules_[rule].apply(n, *this)) continue;
        ++fired_[rule];
        ++firings;
        fired = true;
        KILN_LOG_UPDATE(kPass, rules_[rule].name, " rewrote a ", it->first.qualString());
        break;
      }
      if (!fired || current_destroyed_) break;
    }
    current_ = nullptr;
    return !current_destroyed_;
  }

  ir::Graph& graph_;
  PassStatistics& stats_;
  const ir::OpRegistry& ops_;
  const std::vector<PeepholeRule>& rules_;
  const Dispatch& dispatch_;
  std::vector<int64_t> fired_;
  int64_t erased_ = 0;
  bool changed_ = false;
  ir::Node* current_ = nullptr;
  bool current_destroyed_ = false;
  std::vector<ir::Node*> worklist_;
  absl::flat_hash_set<ir::Node*> queued_;
};

}  // namespace

const std::vector<PeepholeRule>& AllPeepholeRules() {
  static const auto* rules = [] {
    auto* all = new std::vector<PeepholeRule>();
    for (auto family : {ArithPeepholeRules, ShapePeepholeRules, ControlPeepholeRules,
                        ListPeepholeRules}) {
      std::vector<PeepholeRule> rs = family();
      all->insert(all->end(), rs.begin(), rs.end());
    }
    return all;
  }();
  return *rules;
}

absl::StatusOr<bool> RunPeephole(ir::Graph& graph, PassStatistics& stats,
                                 const PeepholeOptions& options) {
  const ir::OpRegistry& ops = options.ops ? *options.ops : ir::BuiltinOps();
  if (options.rules == nullptr) {
    static const Dispatch* dispatch = new Dispatch(BuildDispatch(AllPeepholeRules()));
    return Driver(graph, stats, ops, AllPeepholeRules(), *dispatch).Run();
  }
  const Dispatch dispatch = BuildDispatch(*options.rules);
  return Driver(graph, stats, ops, *options.rules, dispatch).Run();
}

absl::Status RegisterPeepholePass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "peephole", {}, "local algebraic, shape, control-flow and list simplifications",
      [](ir::Graph& graph, PassStatistics& stats) { return RunPeephole(graph, stats); });
}

}  // namespace kiln::passes
