// BackendImplInterface: what a lazy-tensor backend provides (PyTorch's
// torch::lazy::BackendImplInterface, "add lazy:: backend interfaces"), plus
// the process-wide registration of the one active backend.
//
// Registration is explicit, as for devices: a binary calls its backend's
// registration function (kiln: RegisterKilnLazyBackend(), kiln_backend.h),
// which installs it with a BackendRegistrar. GetBackend() without a
// registered backend is a FailedPrecondition error, never an abort.
//
// Fallible methods return absl::Status(Or); the rest cannot fail.
#ifndef KILN_LAZY_BACKEND_INTERFACE_H_
#define KILN_LAZY_BACKEND_INTERFACE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "lazy/backend_data.h"
#include "lazy/backend_device.h"
#include "lazy/computation.h"
#include "lazy/lazy_ir.h"
#include "lazy/lowering_context.h"
#include "lazy/shape.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::lazy {

class BackendImplInterface {
 public:
  virtual ~BackendImplInterface() = default;

  // --- initialization and teardown ---
  // Releases what the backend holds (compiled programs, device buffers it
  // caches) before the process exits.
  virtual void PrepareToExit() const = 0;
  // Seeds the backend's random number generation.
  virtual void SetRngSeed(size_t seed) const = 0;

  // --- data transfer ---
  // Uploads a host tensor (of `shape`) to `device`.
  virtual absl::StatusOr<BackendDataPtr> MakeComputationDataFromTensor(
      const Tensor& tensor, const Shape& shape, const BackendDevice& device) const = 0;
  // A 0-dim tensor of `dtype` holding `value`, on `device`.
  virtual absl::StatusOr<BackendDataPtr> MakeComputationDataFromScalar(
      double value, DType dtype, const BackendDevice& device) const = 0;
  // Data of `shape` with no value yet (HasValue() false) to Assign later.
  virtual BackendDataPtr CreateDataPlaceholder(const BackendDevice& device,
                                               const Shape& shape) const = 0;
  // The data of a device-data node; null for any other node.
  virtual BackendDataPtr GetComputationDataFromNode(const Node* node) const;
  // Downloads data to a host tensor, converted to `logical_type` if given.
  virtual absl::StatusOr<Tensor> MakeTensorFromComputationData(
      const BackendDataPtr& data, std::optional<DType> logical_type) const = 0;

  // --- lowering ---
  virtual std::unique_ptr<LoweringContext> CreateLoweringContext(
      const std::string& name, const BackendDevice& device,
      absl::Span<const Node* const> post_order) const = 0;
  virtual std::unique_ptr<LoweringContext> CreateLoweringContext(
      const std::string& name, const BackendDevice& device) const = 0;
  // The devices a computation for `device` must be compiled for, among
  // `devices` (device strings); kiln compiles per device.
  virtual std::vector<std::string> GetCompilationDevices(
      const std::string& device, absl::Span<const std::string> devices) const = 0;
  // Compiles built computations; returns them ready to execute, in order.
  virtual absl::StatusOr<std::vector<ComputationPtr>> Compile(
      std::vector<ComputationPtr> instances) const = 0;
  // Runs a compiled computation on `arguments` (one per parameter); returns
  // one BackendData per result.
  virtual absl::StatusOr<std::vector<BackendDataPtr>> ExecuteComputation(
      const ComputationPtr& computation, absl::Span<const BackendDataPtr> arguments,
      const BackendDevice& device) const = 0;

  // --- device configuration ---
  virtual std::shared_ptr<const BackendDeviceType> GetDefaultDeviceType() const = 0;
  // InvalidArgument for a type the backend does not have (or that is not
  // available on this machine).
  virtual absl::Status SetDefaultDeviceType(int8_t type) = 0;
  virtual int64_t GetDefaultDeviceOrdinal() const = 0;
  virtual absl::Status SetDefaultDeviceOrdinal(int64_t ordinal) = 0;
  // Where ops without a lowering run (kiln: the host's reference kernels).
  virtual std::shared_ptr<const BackendDeviceType> EagerFallbackDeviceType() const = 0;
  // Every device the backend can run on.
  virtual std::vector<BackendDevice> GetBackendDevices() const = 0;
  // The backend device for a device name ("cpu", "cuda:1"; "" = the
  // default device); NotFound / InvalidArgument otherwise.
  virtual absl::StatusOr<BackendDevice> GetBackendDevice(absl::string_view device_name) const = 0;

  // --- debug ---
  // The computation in the backend's own form (kiln: graph IR text and the
  // compiled program's summary).
  virtual std::string GetComputationBackendText(const ComputationPtr& computation) const = 0;
  // Counters and timers as text; "" by default.
  virtual std::string CreateMetricReport() const { return ""; }
};

// Installs `backend` as the process's lazy backend (replacing any earlier
// one; the backend must outlive its use).
class BackendRegistrar {
 public:
  explicit BackendRegistrar(BackendImplInterface* backend);
};

bool HasBackend();
// FailedPrecondition naming the registration function when none is
// registered.
absl::StatusOr<BackendImplInterface*> GetBackend();

}  // namespace kiln::lazy

#endif  // KILN_LAZY_BACKEND_INTERFACE_H_
