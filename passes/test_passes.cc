#include "passes/test_passes.h"

#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::passes::testing {
namespace {

const ir::Symbol& Marker() {
  static const ir::Symbol s = ir::Symbol::FromQualString("test::marker");
  return s;
}
const ir::Symbol& Invalid() {
  static const ir::Symbol s = ir::Symbol::FromQualString("test::invalid");
  return s;
}

void AddNode(ir::Graph& g, ir::Symbol kind) {
  g.block()->appendNode(g.create(kind, 0));
}

bool RemoveMarker(ir::Graph& g) {
  for (ir::Node* n : g.nodes()) {
    if (n->kind() == Marker()) {
      n->destroy();
      return true;
    }
  }
  return false;
}

void Check(absl::Status s) {
  if (!s.ok()) std::abort();  // test setup bug
}

}  // namespace

PassRegistry MakeTestRegistry() {
  PassRegistry r;
  Check(r.RegisterFunction("noop", {"nop"}, "does nothing",
                           [](ir::Graph&, PassStatistics&) -> absl::StatusOr<bool> {
                             return false;
                           }));
  Check(r.RegisterFunction("fail", {}, "always fails",
                           [](ir::Graph&, PassStatistics&) -> absl::StatusOr<bool> {
                             return absl::InvalidArgumentError("test failure");
                           }));
  Check(r.RegisterFunction("add_marker", {}, "adds a marker",
                           [](ir::Graph& g, PassStatistics& stats) -> absl::StatusOr<bool> {
                             AddNode(g, Marker());
                             stats.Add("markers_added");
                             return true;
                           }));
  Check(r.RegisterFunction("remove_marker", {}, "removes a marker",
                           [](ir::Graph& g, PassStatistics& stats) -> absl::StatusOr<bool> {
                             bool removed = RemoveMarker(g);
                             if (removed) stats.Add("markers_removed");
                             return removed;
                           }));
  Check(r.RegisterFunction("toggle_marker", {}, "adds or removes a marker",
                           [](ir::Graph& g, PassStatistics&) -> absl::StatusOr<bool> {
                             if (!RemoveMarker(g)) AddNode(g, Marker());
                             return true;
                           }));
  Check(r.RegisterFunction("lie_unchanged", {}, "changes but says it did not",
                           [](ir::Graph& g, PassStatistics&) -> absl::StatusOr<bool> {
                             AddNode(g, Marker());
                             return false;
                           }));
  Check(r.RegisterFunction("lie_changed", {}, "says it changed but did not",
                           [](ir::Graph&, PassStatistics&) -> absl::StatusOr<bool> {
                             return true;
                           }));
  Check(r.RegisterFunction("make_invalid", {}, "adds a node the test verifier rejects",
                           [](ir::Graph& g, PassStatistics&) -> absl::StatusOr<bool> {
                             AddNode(g, Invalid());
                             return true;
                           }));
  Check(r.RegisterFunction("crash", {}, "aborts",
                           [](ir::Graph&, PassStatistics&) -> absl::StatusOr<bool> {
                             std::abort();
                           }));
  Check(r.RegisterFunction("count_nodes", {}, "counts nodes",
                           [](ir::Graph& g, PassStatistics& stats) -> absl::StatusOr<bool> {
                             stats.Add("nodes_seen", static_cast<int64_t>(g.numNodes()));
                             return false;
                           }));
  return r;
}

std::unique_ptr<ir::Graph> MakeSmallGraph() {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->addInput("x");
  ir::Node* relu = g->insertNode(g->create(ir::Symbol::FromQualString("aten::relu"), {x}));
  ir::Node* add =
      g->insertNode(g->create(ir::Symbol::FromQualString("aten::add"), {relu->output(), x}));
  g->registerOutput(add->output());
  return g;
}

size_t CountMarkers(const ir::Graph& g) {
  size_t n = 0;
  for (ir::Node* node : g.nodes()) n += node->kind() == Marker();
  return n;
}

absl::Status TestVerifier(const ir::Graph& g) {
  size_t index = 0;
  for (ir::Node* n : g.nodes()) {
    if (n->kind() == Invalid()) {
      return absl::FailedPreconditionError(
          absl::StrCat("node ", index, " (test::invalid) is not allowed"));
    }
    ++index;
  }
  return absl::OkStatus();
}

std::string TestPrintGraph(const ir::Graph& g) {
  std::string out = "graph:\n";
  for (ir::Node* n : g.nodes()) {
    std::vector<std::string> inputs;
    for (ir::Value* v : n->inputs()) inputs.push_back(absl::StrCat("%", v->debugName()));
    absl::StrAppend(&out, "  ", n->kind().qualString(), "(", absl::StrJoin(inputs, ", "), ")\n");
  }
  return out;
}

}  // namespace kiln::passes::testing
