#include "lazy/kiln_lowering_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "lazy/kiln_computation.h"
#include "support/status.h"

namespace kiln::lazy {

KilnLoweringContext::KilnLoweringContext(std::string name, BackendDevice device,
                                         std::string device_name)
    : LoweringContext(std::move(name), std::move(device)),
      device_name_(std::move(device_name)),
      graph_(std::make_unique<ir::Graph>()),
      builder_(graph_.get()) {}

absl::StatusOr<size_t> KilnLoweringContext::AddParameter(const Node* data_node,
                                                         const std::string& name) {
  if (data_node == nullptr || !data_node->is_device_data()) {
    return absl::InvalidArgumentError("AddParameter: not a device-data node");
  }
  auto [index, is_new] = RecordParameter(data_node->data());
  if (is_new) {
    const Shape& s = data_node->shape();
    parameter_values_.push_back(
        builder_.AddInput(name, frontend::GraphBuilder::TensorTy(s.dtype, s.sizes)));
    parameter_shapes_.push_back(s);
    parameter_names_.push_back(name);
  }
  lowered_[data_node] = parameter_values_[index];
  ++emitted_nodes_;
  return index;
}

absl::Status KilnLoweringContext::LowerNode(const Node* node) {
  if (node->is_device_data()) {
    return AddParameter(node, absl::StrCat("p", parameters_.size())).status();
  }
  const OpKind& op = node->op();
  if (!op.lowerable) {
    return absl::UnimplementedError(absl::StrCat("lazy op ", op.name, " has no lowering"));
  }
  std::vector<ir::Value*> inputs;
  inputs.reserve(node->args().size());
  for (const Arg& a : node->args()) {
    if (a.operand >= 0) {
      auto it = lowered_.find(node->operands()[a.operand].get());
      if (it == lowered_.end()) {
        return absl::InternalError(absl::StrCat("lowering ", node->ToString(), ": operand ",
                                                a.operand, " not lowered first"));
      }
      inputs.push_back(it->second);
      continue;
    }
    switch (a.attr.kind) {
      case Attr::Kind::kNone:
        inputs.push_back(builder_.None());
        break;
      case Attr::Kind::kBool:
        inputs.push_back(builder_.Bool(a.attr.i != 0));
        break;
      case Attr::Kind::kInt:
        inputs.push_back(builder_.Int(a.attr.i));
        break;
      case Attr::Kind::kDouble:
        inputs.push_back(builder_.Double(a.attr.d));
        break;
      case Attr::Kind::kIntList:
        inputs.push_back(builder_.IntList(a.attr.ints));
        break;
    }
  }
  absl::StatusOr<ir::Value*> out = builder_.Op(op.aten_kind, inputs);
  if (!out.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("lowering lazy node ", node->ToString(), ": ", out.status().message()));
  }
  const Shape& s = node->shape();
  frontend::GraphBuilder::RefineType(*out, frontend::GraphBuilder::TensorTy(s.dtype, s.sizes));
  lowered_[node] = *out;
  ++emitted_nodes_;
  return absl::OkStatus();
}

absl::StatusOr<size_t> KilnLoweringContext::AddResult(const Node* output) {
  if (built_) return absl::FailedPreconditionError("AddResult after Build");
  if (output == nullptr) return absl::InvalidArgumentError("AddResult: null node");
  const Node* roots[] = {output};
  for (const Node* n : ComputePostOrder(roots)) {
    if (!lowered_.contains(n)) RETURN_IF_ERROR(LowerNode(n));
  }
  builder_.AddOutput(lowered_.at(output));
  result_shapes_.push_back(output->shape());
  return result_shapes_.size() - 1;
}

absl::StatusOr<ComputationPtr> KilnLoweringContext::Build() {
  if (built_) return absl::FailedPreconditionError("Build called twice");
  built_ = true;
  return std::make_shared<KilnComputation>(std::move(graph_), device_name_,
                                           std::move(parameter_shapes_),
                                           std::move(parameter_names_), std::move(result_shapes_));
}

}  // namespace kiln::lazy
