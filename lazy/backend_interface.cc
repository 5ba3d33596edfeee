#include "lazy/backend_interface.h"

#include <atomic>

namespace kiln::lazy {
namespace {

std::atomic<BackendImplInterface*>& ActiveBackend() {
  static std::atomic<BackendImplInterface*> backend{nullptr};
  return backend;
}

}  // namespace

BackendDataPtr BackendImplInterface::GetComputationDataFromNode(const Node* node) const {
  return node != nullptr && node->is_device_data() ? node->data() : nullptr;
}

BackendRegistrar::BackendRegistrar(BackendImplInterface* backend) {
  ActiveBackend().store(backend, std::memory_order_release);
}

bool HasBackend() { return ActiveBackend().load(std::memory_order_acquire) != nullptr; }

absl::StatusOr<BackendImplInterface*> GetBackend() {
  BackendImplInterface* backend = ActiveBackend().load(std::memory_order_acquire);
  if (backend == nullptr) {
    return absl::FailedPreconditionError(
        "no lazy backend is registered: call kiln::lazy::RegisterKilnLazyBackend() "
        "(lazy/kiln_backend.h) or install a backend with BackendRegistrar first");
  }
  return backend;
}

}  // namespace kiln::lazy
