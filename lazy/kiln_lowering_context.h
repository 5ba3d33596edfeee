// Lazy IR -> kiln graph IR (internal to the kiln lazy backend). Device-data
// leaves become graph inputs (one per distinct data handle), every other node
// the aten op its OpKind names with its constant arguments as prim::Constant
// inputs, typed with the node's static shape; results become graph outputs.
#ifndef KILN_LAZY_KILN_LOWERING_CONTEXT_H_
#define KILN_LAZY_KILN_LOWERING_CONTEXT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "frontend/graph_builder.h"
#include "lazy/lowering_context.h"
#include "ir/ir.h"

namespace kiln::lazy {

class KilnLoweringContext : public LoweringContext {
 public:
  // `device_name` is the kiln device the computation compiles for.
  KilnLoweringContext(std::string name, BackendDevice device, std::string device_name);

  absl::StatusOr<size_t> AddResult(const Node* output) override;
  absl::StatusOr<size_t> AddParameter(const Node* data_node, const std::string& name) override;
  absl::StatusOr<ComputationPtr> Build() override;

 private:
  absl::Status LowerNode(const Node* node);

  std::string device_name_;
  std::unique_ptr<ir::Graph> graph_;
  frontend::GraphBuilder builder_;
  absl::flat_hash_map<const Node*, ir::Value*> lowered_;
  std::vector<ir::Value*> parameter_values_;
  std::vector<Shape> parameter_shapes_;
  std::vector<std::string> parameter_names_;
  std::vector<Shape> result_shapes_;
  bool built_ = false;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_KILN_LOWERING_CONTEXT_H_
