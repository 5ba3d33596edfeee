// Interpreter islands (graph breaks): the nodes lowering cannot turn into
// buffers run, grouped, as one extern call each that the device executes with
// runtime::Interpreter (see ExternCall::island in loop_ir.h). Internal to the
// lowering package; the driver (lower.cc) decides which nodes are islands by
// attempting to lower and growing the island set until every value that
// crosses an island boundary is a static-shape tensor:
//   * a node whose lowering fails joins (control flow, non-constant
//     non-tensor operands, outputs without static shape, Half/BFloat16 ops
//     without a reference kernel, ...);
//   * connected island nodes form one island, closed under paths (a lowered
//     node between two members of an island joins it, so islands and
//     lowered nodes form a DAG);
//   * an island input that is neither a bound tensor nor a constant pulls its
//     producer in; an island output that is not a static-shape tensor pulls
//     its consumers in;
//   * graph inputs/outputs that are not static-shape tensors make the whole
//     graph one island (LoopGraph::interpreted_graph).
#ifndef KILN_LOWERING_ISLANDS_H_
#define KILN_LOWERING_ISLANDS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "ir/ir.h"
#include "lowering/lower_context.h"

namespace kiln::lowering {

// What the driver learned so far about which nodes run in the interpreter.
struct IslandSet {
  absl::flat_hash_set<const ir::Node*> nodes;  // top-level nodes
  bool whole_graph = false;
  // Why each node joined (the first reason recorded wins), and why the
  // whole graph is one island.
  absl::flat_hash_map<const ir::Node*, std::string> reasons;
  std::string whole_graph_reason;

  void Add(const ir::Node* n, std::string reason) {
    nodes.insert(n);
    reasons.try_emplace(n, std::move(reason));
  }
  void SetWholeGraph(std::string reason) {
    if (!whole_graph) whole_graph_reason = std::move(reason);
    whole_graph = true;
  }
};

// The model's name for `n` (its scope, set by the ONNX importer), else
// "%<its first output>", else its kind.
std::string NodeName(const ir::Node& n);
// The node's kind, or the overload it matches in `registry` when one does.
std::string NodeOp(const ir::Node& n, const ir::OpRegistry& registry);

// The top-level node of `graph` that holds `n` (n itself when top-level);
// null for the graph's param node.
const ir::Node* TopLevelNode(const ir::Graph& graph, const ir::Node* n);

// A unit of lowering order: one lowered node, or one island (members in
// graph order).
struct LoweringUnit {
  std::vector<const ir::Node*> nodes;
  bool is_island = false;
};

// Groups island nodes into islands (connected components, closed under
// paths through other nodes, which join `set`) and orders all units
// topologically (ties by graph position).
void PlanLoweringUnits(const ir::Graph& graph, IslandSet& set, std::vector<LoweringUnit>* units);

// Emits `unit` (an island) as one kIslandOp extern call. When the island
// cannot be formed with these boundaries, grows `set` (or sets whole_graph)
// and sets *retry; the LoopGraph being built is then discarded.
absl::Status LowerIsland(LowerContext& ctx, const ir::Graph& graph, const LoweringUnit& unit,
                         IslandSet& set, bool* retry);

// Whether `v` is a tensor with dtype and complete static sizes.
bool IsStaticTensor(const ir::Value* v);

// Top-level nodes of an island graph, prim::Constant excluded.
int CountIslandNodes(const ir::Graph& island);

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_ISLANDS_H_
