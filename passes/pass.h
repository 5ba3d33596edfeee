// The pass interface.
//
// A pass has a stable name (used in pipeline strings, --disable-pass, logs,
// dumps and statistics) and `Run`, which returns whether it changed the graph.
// The changed bit drives verification, dumping and fixed points, so it must
// be exact: in debug builds and tests the pipeline checks it against a graph
// fingerprint and fails the pass that lies.
//
// Most passes are a function; FunctionPass wraps one:
//
//   absl::StatusOr<bool> EliminateDeadCode(ir::Graph& g, PassStatistics& stats);
//   registry.RegisterFunction("dead_code_elimination", {"dce"}, "...",
//                             EliminateDeadCode);
#ifndef KILN_PASSES_PASS_H_
#define KILN_PASSES_PASS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"

namespace kiln::passes {

// Named counters a pass increments ("nodes_removed", "constants_folded"),
// reported by `kiln opt --stats`. Counters keep first-use order.
class PassStatistics {
 public:
  void Add(absl::string_view counter, int64_t delta = 1);
  int64_t Get(absl::string_view counter) const;  // 0 if never added
  const std::vector<std::pair<std::string, int64_t>>& counters() const {
    return counters_;
  }
  void Merge(const PassStatistics& other);
  void Clear() { counters_.clear(); }

 private:
  std::vector<std::pair<std::string, int64_t>> counters_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  // Stable, snake_case, unique within a registry: "dead_code_elimination".
  virtual absl::string_view name() const = 0;
  // Returns true iff the graph changed. An error leaves the graph in an
  // unspecified (but destructible) state; the pipeline reports it, naming
  // the pass.
  virtual absl::StatusOr<bool> Run(ir::Graph& graph) = 0;

  // Accumulated over every Run of this instance.
  PassStatistics& statistics() { return statistics_; }
  const PassStatistics& statistics() const { return statistics_; }

 private:
  PassStatistics statistics_;
};

using PassFunction = std::function<absl::StatusOr<bool>(ir::Graph&, PassStatistics&)>;

// A pass made of a name and a function.
class FunctionPass final : public Pass {
 public:
  FunctionPass(std::string name, PassFunction function)
      : name_(std::move(name)), function_(std::move(function)) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(ir::Graph& graph) override {
    return function_(graph, statistics());
  }

 private:
  std::string name_;
  PassFunction function_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_PASS_H_
