// LoweringContext: turns a post-ordered lazy graph into a backend
// Computation (PyTorch's torch::lazy::LoweringContext). The graph executor
// creates one per cache miss through the backend, adds one result per synced
// tensor and calls Build().
//
// Parameters: every device-data leaf is a parameter; leaves whose data has
// the same handle share one (GetParametersData lists the distinct data, in
// first-use order; GetParameterSequence maps each leaf occurrence to its
// parameter).
#ifndef KILN_LAZY_LOWERING_CONTEXT_H_
#define KILN_LAZY_LOWERING_CONTEXT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lazy/backend_data.h"
#include "lazy/backend_device.h"
#include "lazy/computation.h"
#include "lazy/lazy_ir.h"

namespace kiln::lazy {

class LoweringContext {
 public:
  LoweringContext(std::string name, BackendDevice device);
  virtual ~LoweringContext() = default;

  // Through GetBackend(): FailedPrecondition when no backend is registered.
  static absl::StatusOr<std::unique_ptr<LoweringContext>> Create(
      const std::string& name, const BackendDevice& device,
      absl::Span<const Node* const> post_order);
  static absl::StatusOr<std::unique_ptr<LoweringContext>> Create(const std::string& name,
                                                                 const BackendDevice& device);

  const std::string& name() const { return name_; }
  const BackendDevice& device() const { return device_; }
  const std::vector<BackendDataPtr>& GetParametersData() const { return parameters_; }
  const std::vector<size_t>& GetParameterSequence() const { return parameter_sequence_; }
  // Nodes lowered so far (device-data leaves included).
  size_t GetEmittedNodeCount() const { return emitted_nodes_; }

  // Lowers `output` (and whatever it needs that is not lowered yet) and makes
  // it the next result; returns the result's index.
  virtual absl::StatusOr<size_t> AddResult(const Node* output) = 0;
  // Makes the device-data leaf `data_node` a parameter (deduplicated by its
  // data's handle); returns the parameter index. `name` names the graph input.
  virtual absl::StatusOr<size_t> AddParameter(const Node* data_node, const std::string& name) = 0;
  // The computation of everything added so far.
  virtual absl::StatusOr<ComputationPtr> Build() = 0;

 protected:
  // Records `data` as a parameter (or finds it by handle); returns
  // {index, is_new}.
  std::pair<size_t, bool> RecordParameter(const BackendDataPtr& data);

  std::string name_;
  BackendDevice device_;
  std::vector<BackendDataPtr> parameters_;
  std::vector<size_t> parameter_sequence_;
  absl::flat_hash_map<BackendData::Handle, size_t> parameter_index_;
  size_t emitted_nodes_ = 0;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_LOWERING_CONTEXT_H_
