// The reference interpreter: runs any verified graph on the CPU, the oracle
// every compiled path is checked against.
//
// Tensor ops run the kernel in the op registry's `kernel` slot of the
// overload the node matches (arguments in schema order, defaults filled);
// scalar, string and list ops run ir/scalar_eval; prim::If / prim::Loop and
// the list/tuple constructs are interpreted here. Each value is released
// right after its last use (a use inside a nested block counts as a use by
// the block's owning node), so peak memory follows the graph's live set.
//
//   Interpreter interp(graph);
//   RETURN_IF_ERROR(interp.Prepare());
//   ASSIGN_OR_RETURN(std::vector<ir::IValue> outs, interp.Run(inputs));
#ifndef KILN_RUNTIME_INTERPRETER_H_
#define KILN_RUNTIME_INTERPRETER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"

namespace kiln::runtime {

struct InterpreterStats {
  int64_t nodes_executed = 0;
  // Largest number of values alive at once.
  int64_t peak_live_values = 0;
};

class Interpreter {
 public:
  // The registry must have reference kernels registered
  // (RegisterReferenceKernels); the graph must outlive the interpreter and
  // not change after Prepare().
  explicit Interpreter(const ir::Graph& graph,
                       const ir::OpRegistry& registry = ir::BuiltinOps());

  // Resolves every node's operator and computes last uses. Errors name the
  // node that cannot run.
  absl::Status Prepare();
  // Runs the graph on `inputs` (one per graph input). Calls Prepare() first
  // if needed. Errors name the failing node.
  absl::StatusOr<std::vector<ir::IValue>> Run(absl::Span<const ir::IValue> inputs);

  const InterpreterStats& stats() const { return stats_; }

 private:
  struct NodePlan {
    const ir::Operator* op = nullptr;  // null for the ops interpreted here
    std::vector<const ir::Value*> release_after;
  };

  absl::Status PrepareBlock(const ir::Block& block, int depth);
  absl::Status RunBlock(const ir::Block& block, int depth);
  absl::Status RunNode(const ir::Node& node, int depth);
  absl::Status RunOp(const ir::Node& node, const NodePlan& plan);
  absl::Status RunIf(const ir::Node& node, int depth);
  absl::Status RunLoop(const ir::Node& node, int depth);
  const ir::IValue& Get(const ir::Value* v) const { return env_[v->unique()]; }
  void Set(const ir::Value* v, ir::IValue value);
  void Release(const ir::Value* v);

  const ir::Graph& graph_;
  const ir::OpRegistry& registry_;
  bool prepared_ = false;
  absl::flat_hash_map<const ir::Node*, NodePlan> plans_;
  std::vector<ir::IValue> env_;
  std::vector<bool> live_;
  int64_t live_count_ = 0;
  InterpreterStats stats_;
};

// Convenience: Prepare + Run with BuiltinOps() (reference kernels are
// registered on first use).
absl::StatusOr<std::vector<ir::IValue>> RunGraph(const ir::Graph& graph,
                                                 absl::Span<const ir::IValue> inputs);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_INTERPRETER_H_
