// LazyTensor: a C++ tensor whose ops record lazy IR nodes (with their shapes,
// inferred at once) instead of running. Reading a value (ToTensor) syncs the
// tensor's pending graph; MarkStep(device) syncs every live tensor of the
// device at once. A sync lowers the pending DAG through the registered lazy
// backend, compiles it (or finds it in the compile cache: the same program
// traced again with the same shapes compiles once) and executes it; the
// synced tensors then hold device data.
//
//   RETURN_IF_ERROR(RegisterKilnLazyBackend());
//   LazyTensor x = LazyTensor::FromTensor(host_x);
//   LazyTensor y = (x.Mm(w) + b).Relu();
//   ASSIGN_OR_RETURN(Tensor out, y.ToTensor());
//
// Errors never abort: an op whose inputs do not fit (shapes, dtypes,
// devices) returns a tensor holding the error; ops on it propagate the first
// error, and ToTensor / status() report it.
//
// Ops without a lowering (Flip here) run eagerly on the reference kernels at
// once (the eager fallback; counted in GlobalMetrics().fallbacks). Inside an
// EagerModeScope every op runs eagerly on the reference kernels: the same
// program then executes op by op, the reference a lazy run is checked
// against.
//
// Thread-safe: tensors may be used from several threads; syncs of one
// device are serialized by the device's lock.
#ifndef KILN_LAZY_LAZY_TENSOR_H_
#define KILN_LAZY_LAZY_TENSOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "lazy/backend_device.h"
#include "lazy/lazy_ir.h"
#include "lazy/shape.h"
#include "support/dtype.h"
#include "support/tensor.h"

namespace kiln::lazy {

class LazyTensorData;

class LazyTensor {
 public:
  // An undefined tensor (status() is FailedPrecondition).
  LazyTensor() = default;

  // Wraps a host tensor for `device` (the backend's default device when
  // absent). The data is uploaded when first used by a lazy op, through the
  // per-device data cache: the same host values are uploaded once.
  static LazyTensor FromTensor(const Tensor& tensor,
                               std::optional<BackendDevice> device = std::nullopt);
  // A 0-dim device tensor (through the data cache as well).
  static LazyTensor Scalar(double value, DType dtype = DType::kFloat32,
                           std::optional<BackendDevice> device = std::nullopt);
  // A tensor holding the error `status` (what failing ops return).
  static LazyTensor Error(absl::Status status);

  bool defined() const { return impl_ != nullptr; }
  // OK for a usable tensor; the error otherwise.
  absl::Status status() const;
  bool ok() const { return status().ok(); }

  // Undefined/errored tensors: an empty shape / default device.
  const Shape& shape() const;
  DType dtype() const { return shape().dtype; }
  const std::vector<int64_t>& sizes() const { return shape().sizes; }
  int64_t dim() const { return shape().dim(); }
  BackendDevice device() const;
  // Unique per tensor (creation order).
  int64_t id() const;
  // Whether the value is still a pending (unexecuted) computation.
  bool is_pending() const;
  // The pending/current IR node, uploading host data if needed (for tests
  // and the graph executor).
  absl::StatusOr<NodePtr> GetIrValue() const;

  // Syncs (if pending) and downloads the value.
  absl::StatusOr<Tensor> ToTensor() const;

  // --- elementwise (broadcasting, PyTorch type promotion) ---
  LazyTensor Add(const LazyTensor& other, double alpha = 1) const;
  LazyTensor Sub(const LazyTensor& other, double alpha = 1) const;
  LazyTensor Mul(const LazyTensor& other) const;
  LazyTensor Div(const LazyTensor& other) const;
  LazyTensor Maximum(const LazyTensor& other) const;
  LazyTensor Minimum(const LazyTensor& other) const;
  LazyTensor Add(double other) const;
  LazyTensor Sub(double other) const;
  LazyTensor Mul(double other) const;
  LazyTensor Div(double other) const;
  // other - this.
  LazyTensor RSub(double other) const;
  LazyTensor Pow(double exponent) const;
  LazyTensor Square() const;
  // Bool results.
  LazyTensor Gt(double other) const;
  LazyTensor Lt(double other) const;
  LazyTensor Gt(const LazyTensor& other) const;
  LazyTensor Eq(const LazyTensor& other) const;
  LazyTensor Relu() const;
  LazyTensor Tanh() const;
  LazyTensor Sigmoid() const;
  LazyTensor Exp() const;
  LazyTensor Log() const;
  LazyTensor Neg() const;
  LazyTensor Sqrt() const;
  LazyTensor Abs() const;
  LazyTensor Clamp(std::optional<double> min, std::optional<double> max) const;
  LazyTensor To(DType dtype) const;

  // --- linear algebra ---
  LazyTensor Mm(const LazyTensor& other) const;
  LazyTensor Matmul(const LazyTensor& other) const;

  // --- reductions ---
  LazyTensor Sum() const;
  LazyTensor Sum(std::vector<int64_t> dims, bool keepdim = false) const;
  LazyTensor Mean() const;
  LazyTensor Mean(std::vector<int64_t> dims, bool keepdim = false) const;
  LazyTensor Softmax(int64_t dim) const;
  LazyTensor LogSoftmax(int64_t dim) const;

  // --- views and shapes (values, not aliases: there are no in-place ops) ---
  LazyTensor Transpose(int64_t dim0, int64_t dim1) const;
  LazyTensor T() const;
  LazyTensor Reshape(std::vector<int64_t> sizes) const;
  LazyTensor View(std::vector<int64_t> sizes) const;
  LazyTensor Expand(std::vector<int64_t> sizes) const;

  // --- no lowering: always runs eagerly (the eager fallback) ---
  LazyTensor Flip(std::vector<int64_t> dims) const;

  // For the graph executor.
  const std::shared_ptr<LazyTensorData>& impl() const { return impl_; }
  explicit LazyTensor(std::shared_ptr<LazyTensorData> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<LazyTensorData> impl_;
};

// bias + mat1 @ mat2 (beta, alpha as in torch.addmm).
LazyTensor Addmm(const LazyTensor& bias, const LazyTensor& mat1, const LazyTensor& mat2,
                 double beta = 1, double alpha = 1);
// x @ weight^T + bias (weight [out, in]; bias may be undefined).
LazyTensor Linear(const LazyTensor& x, const LazyTensor& weight, const LazyTensor& bias);
LazyTensor Where(const LazyTensor& condition, const LazyTensor& a, const LazyTensor& b);
// mean((prediction - target)^2).
LazyTensor MseLoss(const LazyTensor& prediction, const LazyTensor& target);
// mean over rows of -sum(target * log_softmax(logits, 1), 1) (target: one-hot
// or soft labels, same shape as logits).
LazyTensor SoftmaxCrossEntropy(const LazyTensor& logits, const LazyTensor& target);

LazyTensor operator+(const LazyTensor& a, const LazyTensor& b);
LazyTensor operator-(const LazyTensor& a, const LazyTensor& b);
LazyTensor operator*(const LazyTensor& a, const LazyTensor& b);
LazyTensor operator/(const LazyTensor& a, const LazyTensor& b);
LazyTensor operator+(const LazyTensor& a, double b);
LazyTensor operator-(const LazyTensor& a, double b);
LazyTensor operator*(const LazyTensor& a, double b);
LazyTensor operator*(double a, const LazyTensor& b);
LazyTensor operator/(const LazyTensor& a, double b);
LazyTensor operator-(const LazyTensor& a);

// Syncs every live tensor of `device` (the backend's default device when
// absent) in one computation and ends the step (PyTorch's mark_step).
absl::Status MarkStep(std::optional<BackendDevice> device = std::nullopt);
// Syncs these tensors (their pending graphs) in one computation.
absl::Status SyncTensors(absl::Span<const LazyTensor> tensors);

// While alive (per thread), every op runs at once on the reference kernels.
class EagerModeScope {
 public:
  EagerModeScope();
  ~EagerModeScope();
  EagerModeScope(const EagerModeScope&) = delete;
  EagerModeScope& operator=(const EagerModeScope&) = delete;
  static bool Active();

 private:
  bool previous_;
};

}  // namespace kiln::lazy

#endif  // KILN_LAZY_LAZY_TENSOR_H_
