#include "lazy/lowering_context.h"

#include <utility>

#include "lazy/backend_interface.h"
#include "support/status.h"

namespace kiln::lazy {

LoweringContext::LoweringContext(std::string name, BackendDevice device)
    : name_(std::move(name)), device_(std::move(device)) {}

absl::StatusOr<std::unique_ptr<LoweringContext>> LoweringContext::Create(
    const std::string& name, const BackendDevice& device,
    absl::Span<const Node* const> post_order) {
  ASSIGN_OR_RETURN(BackendImplInterface * backend, GetBackend());
  return backend->CreateLoweringContext(name, device, post_order);
}

absl::StatusOr<std::unique_ptr<LoweringContext>> LoweringContext::Create(
    const std::string& name, const BackendDevice& device) {
  ASSIGN_OR_RETURN(BackendImplInterface * backend, GetBackend());
  return backend->CreateLoweringContext(name, device);
}

std::pair<size_t, bool> LoweringContext::RecordParameter(const BackendDataPtr& data) {
  auto [it, inserted] = parameter_index_.try_emplace(data->GetHandle(), parameters_.size());
  if (inserted) parameters_.push_back(data);
  parameter_sequence_.push_back(it->second);
  return {it->second, inserted};
}

}  // namespace kiln::lazy
