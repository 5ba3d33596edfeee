// Typed entry points of the normalization rows (ops/defs/norm.def).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels_nn.h"
#include "runtime/kernels_shape.h"
#include "runtime/op_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

absl::Status Invalid(const std::string& op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

absl::StatusOr<TensorTriple> Triple(absl::StatusOr<nn::NormResult> r) {
  if (!r.ok()) return r.status();
  return TensorTriple(std::move(r->y), std::move(r->mean), std::move(r->rstd));
}

absl::StatusOr<nn::NormResult> LayerNormChecked(const std::string& op, const Tensor& x,
                                                const std::vector<int64_t>& shape,
                                                const OptTensor& w, const OptTensor& b,
                                                double eps) {
  const int64_t k = static_cast<int64_t>(shape.size());
  if (k == 0 || k > x.dim() || !std::equal(shape.begin(), shape.end(), x.sizes().end() - k)) {
    return Invalid(op, absl::StrCat("normalized_shape ", ShapeToString(shape),
                                    " does not match the end of input shape ",
                                    ShapeToString(x.sizes())));
  }
  for (const OptTensor* t : {&w, &b}) {
    if (*t && (*t)->defined() && (*t)->sizes() != shape) {
      return Invalid(op, absl::StrCat("weight and bias must have shape ", ShapeToString(shape)));
    }
  }
  return nn::LayerNorm(op, x, x.dim() - k, w, b, eps);
}

}  // namespace

KernelBinder SoftmaxKernel(bool log) {
  return Unboxed([log](const Tensor& x, int64_t dim, std::optional<DType> dtype) {
    return Softmax(x, dim, dtype, log);
  });
}

KernelBinder HalfToFloatSoftmaxKernel(bool log) {
  return Unboxed([log](const Tensor& x, int64_t dim, bool half_to_float) {
    return Softmax(x, dim, half_to_float ? std::optional<DType>(DType::kFloat32) : std::nullopt,
                   log);
  });
}

absl::StatusOr<Tensor> LayerNormKernel(const std::string& op, const Tensor& input,
                                       const std::vector<int64_t>& normalized_shape,
                                       const OptTensor& weight, const OptTensor& bias, double eps,
                                       bool) {
  ASSIGN_OR_RETURN(nn::NormResult r, LayerNormChecked(op, input, normalized_shape, weight, bias, eps));
  return r.y;
}

absl::StatusOr<TensorTriple> NativeLayerNorm(const std::string& op, const Tensor& input,
                                             const std::vector<int64_t>& normalized_shape,
                                             const OptTensor& weight, const OptTensor& bias,
                                             double eps) {
  return Triple(LayerNormChecked(op, input, normalized_shape, weight, bias, eps));
}

// Running-stat updates are side effects on the inputs; the functional
// reference kernels leave them alone.
absl::StatusOr<Tensor> BatchNormKernel(const std::string& op, const Tensor& input,
                                       const OptTensor& weight, const OptTensor& bias,
                                       const OptTensor& running_mean,
                                       const OptTensor& running_var, bool training, double,
                                       double eps) {
  ASSIGN_OR_RETURN(nn::NormResult r, nn::BatchNorm(op, input, weight, bias, running_mean,
                                                   running_var, training, eps));
  return r.y;
}

absl::StatusOr<TensorTriple> NativeBatchNorm(const std::string& op, const Tensor& input,
                                             const OptTensor& weight, const OptTensor& bias,
                                             const OptTensor& running_mean,
                                             const OptTensor& running_var, bool training, double,
                                             double eps) {
  return Triple(nn::BatchNorm(op, input, weight, bias, running_mean, running_var, training, eps));
}

absl::StatusOr<Tensor> InstanceNorm(const std::string& op, const Tensor& x, const OptTensor& w,
                                    const OptTensor& b, const OptTensor& rm,
                                    const OptTensor& rv, bool use_input_stats, double,
                                    double eps) {
  if (x.dim() < 2) return Invalid(op, "input must have at least 2 dims");
  if (!use_input_stats) {
    ASSIGN_OR_RETURN(nn::NormResult res, nn::BatchNorm(op, x, w, b, rm, rv, false, eps));
    return res.y;
  }
  // Each (n, c) plane is one channel of a batch-1 batch norm.
  const int64_t n = x.size(0), c = x.size(1);
  std::vector<int64_t> folded = x.sizes();
  folded.erase(folded.begin());
  folded[0] = n * c;
  folded.insert(folded.begin(), 1);
  ASSIGN_OR_RETURN(Tensor xf, Reshape(x, folded));
  auto repeat = [&](const OptTensor& t) -> absl::StatusOr<OptTensor> {
    if (!t || !t->defined()) return OptTensor();
    if (t->dim() != 1 || t->size(0) != c) {
      return Invalid(op, absl::StrCat("weight and bias must have ", c, " elements"));
    }
    ASSIGN_OR_RETURN(Tensor e, Expand(*t, {n, c}));
    ASSIGN_OR_RETURN(Tensor f, Reshape(e, {n * c}));
    return OptTensor(f);
  };
  ASSIGN_OR_RETURN(OptTensor wf, repeat(w));
  ASSIGN_OR_RETURN(OptTensor bf, repeat(b));
  ASSIGN_OR_RETURN(nn::NormResult res,
                   nn::BatchNorm(op, xf, wf, bf, std::nullopt, std::nullopt, true, eps));
  return Reshape(res.y, x.sizes());
}

absl::StatusOr<Tensor> GroupNormKernel(const std::string& op, const Tensor& input,
                                       int64_t num_groups, const OptTensor& weight,
                                       const OptTensor& bias, double eps) {
  ASSIGN_OR_RETURN(nn::NormResult r, nn::GroupNorm(op, input, num_groups, weight, bias, eps));
  return r.y;
}

absl::StatusOr<TensorTriple> NativeGroupNorm(const std::string& op, const Tensor& x,
                                             const OptTensor& weight, const OptTensor& bias,
                                             int64_t n, int64_t c, int64_t hw, int64_t group,
                                             double eps) {
  if (x.dim() < 2 || x.size(0) != n || x.size(1) != c || x.numel() != n * c * hw) {
    return Invalid(op, absl::StrCat("N, C, HxW = ", n, ", ", c, ", ", hw,
                                    " do not match input shape ", ShapeToString(x.sizes())));
  }
  return Triple(nn::GroupNorm(op, x, group, weight, bias, eps));
}

absl::StatusOr<TensorTriple> BatchNormTraining(const std::string& op, const Tensor& x,
                                               const Tensor& scale, const Tensor& bias,
                                               const Tensor& mean, const Tensor& var,
                                               double momentum, double eps) {
  ASSIGN_OR_RETURN(nn::BatchNormTrainingResult r,
                   nn::BatchNormOnnxTraining(op, x, scale, bias, mean, var, momentum, eps));
  return TensorTriple(std::move(r.y), std::move(r.running_mean), std::move(r.running_var));
}

absl::StatusOr<TensorTriple> OnnxLayerNorm(const std::string& op, const Tensor& x, int64_t axis,
                                           const OptTensor& scale, const OptTensor& bias,
                                           double eps) {
  return Triple(nn::LayerNorm(op, x, axis, scale, bias, eps));
}

}  // namespace kiln::runtime
