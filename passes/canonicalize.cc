#include "passes/canonicalize.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kiln::passes {
namespace {

bool IsNumberName(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<bool> Canonicalize(ir::Graph& graph, PassStatistics& stats,
                                  const CanonicalizeOptions& options) {
  // Target name per value, in definition order.
  std::vector<std::pair<ir::Value*, std::string>> targets;
  size_t counter = 0;
  auto assign = [&](ir::Value* v) {
    const std::string& name = v->debugNameRaw();
    if (options.keep_names && !name.empty() && !IsNumberName(name)) return;
    std::string number = absl::StrCat(counter++);
    if (name != number) targets.emplace_back(v, std::move(number));
  };
  for (ir::Value* v : graph.inputs()) assign(v);
  // Frames walk one block each; a block's inputs are numbered when its
  // frame is first reached, so that blocks are numbered in order.
  struct Frame {
    ir::Block* block;
    ir::Node* next;  // null until the block is entered
  };
  std::vector<Frame> stack{{graph.block(), graph.block()->front()}};
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next == nullptr) {
      for (ir::Value* v : top.block->inputs()) assign(v);
      top.next = top.block->front();
    }
    if (top.next == top.block->return_node()) {
      stack.pop_back();
      continue;
    }
    ir::Node* n = top.next;
    top.next = n->next();
    for (ir::Value* out : n->outputs()) assign(out);
    auto blocks = n->blocks();
    for (size_t i = blocks.size(); i-- > 0;) stack.push_back({blocks[i], nullptr});
  }
  if (targets.empty()) return false;
  // Free every name being replaced first, so that no target is still held
  // by a value that has not been renamed yet.
  for (auto& [v, number] : targets) {
    if (v->hasDebugName()) v->setDebugName("");
  }
  for (auto& [v, number] : targets) ir::GraphInternals::SetNameUnchecked(v, number);
  ir::GraphInternals::FinishNaming(&graph);
  stats.Add("values_renamed", static_cast<int64_t>(targets.size()));
  return true;
}

absl::Status RegisterCanonicalizePass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "canonicalize", {}, "numbers anonymous values in definition order so equal graphs print equal",
      [](ir::Graph& graph, PassStatistics& stats) { return Canonicalize(graph, stats); });
}

}  // namespace kiln::passes
