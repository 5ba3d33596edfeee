// Typed entry points of the reduction rows (ops/defs/reduce.def).
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels_math.h"
#include "runtime/op_kernels.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

absl::StatusOr<Tensor> ReduceWith(ReduceOp op, const Tensor& x, Dims dims, bool keepdim,
                                  std::optional<DType> dtype) {
  ReduceOptions o;
  o.dims = std::move(dims);
  o.keepdim = keepdim;
  o.dtype = dtype;
  return Reduce(op, x, o);
}

absl::StatusOr<Tensor> ArgReduce(const std::string& op, ReduceOp kind, const Tensor& self,
                                 std::optional<int64_t> dim, bool keepdim) {
  // argmax(dim=None, keepdim=True) is not a plain "all dims" reduction.
  if (!dim && keepdim) return absl::UnimplementedError(absl::StrCat(op, ": dim=None with keepdim=True"));
  Dims dims;
  if (dim) dims = std::vector<int64_t>{*dim};
  return ReduceWith(kind, self, dims, keepdim, std::nullopt);
}

absl::StatusOr<Tensor> Variance(const Tensor& self, Dims dims, double correction, bool keepdim) {
  ReduceOptions o;
  o.dims = std::move(dims);
  o.keepdim = keepdim;
  o.correction = correction;
  return Reduce(ReduceOp::kVar, self, o);
}

absl::StatusOr<TensorPair> AsPair(absl::StatusOr<std::pair<Tensor, Tensor>> r) {
  if (!r.ok()) return r.status();
  return TensorPair(std::move(r->first), std::move(r->second));
}

}  // namespace

KernelBinder ReduceAllKernel(ReduceOp op) {
  return Unboxed([op](const Tensor& x, std::optional<DType> dtype) {
    return ReduceWith(op, x, std::nullopt, false, dtype);
  });
}

KernelBinder ReduceWholeKernel(ReduceOp op) {
  return Unboxed([op](const Tensor& x) { return ReduceWith(op, x, std::nullopt, false, std::nullopt); });
}

KernelBinder ReduceDimsKernel(ReduceOp op) {
  return Unboxed([op](const Tensor& x, const Dims& dims, bool keepdim, std::optional<DType> dtype) {
    return ReduceWith(op, x, dims, keepdim, dtype);
  });
}

KernelBinder ReduceListKernel(ReduceOp op) {
  return Unboxed([op](const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
    return ReduceWith(op, x, dims, keepdim, std::nullopt);
  });
}

absl::StatusOr<Tensor> ProdDim(const Tensor& self, int64_t dim, bool keepdim,
                               std::optional<DType> dtype) {
  return ReduceWith(ReduceOp::kProd, self, std::vector<int64_t>{dim}, keepdim, dtype);
}

absl::StatusOr<Tensor> Argmax(const std::string& op, const Tensor& self,
                              std::optional<int64_t> dim, bool keepdim) {
  return ArgReduce(op, ReduceOp::kArgmax, self, dim, keepdim);
}

absl::StatusOr<Tensor> Argmin(const std::string& op, const Tensor& self,
                              std::optional<int64_t> dim, bool keepdim) {
  return ArgReduce(op, ReduceOp::kArgmin, self, dim, keepdim);
}

absl::StatusOr<TensorPair> MaxDim(const Tensor& self, int64_t dim, bool keepdim) {
  return AsPair(MaxMinDim(self, dim, keepdim, /*is_max=*/true));
}

absl::StatusOr<TensorPair> MinDim(const Tensor& self, int64_t dim, bool keepdim) {
  return AsPair(MaxMinDim(self, dim, keepdim, /*is_max=*/false));
}

absl::StatusOr<Tensor> AllWhole(const Tensor& self) { return AllAny(self, std::nullopt, false, true); }
absl::StatusOr<Tensor> AnyWhole(const Tensor& self) { return AllAny(self, std::nullopt, false, false); }
absl::StatusOr<Tensor> AllDim(const Tensor& self, int64_t dim, bool keepdim) {
  return AllAny(self, std::vector<int64_t>{dim}, keepdim, true);
}
absl::StatusOr<Tensor> AnyDim(const Tensor& self, int64_t dim, bool keepdim) {
  return AllAny(self, std::vector<int64_t>{dim}, keepdim, false);
}
absl::StatusOr<Tensor> AnyDims(const Tensor& self, const std::optional<std::vector<int64_t>>& dim,
                               bool keepdim) {
  return AllAny(self, dim, keepdim, false);
}

absl::StatusOr<Tensor> VarUnbiased(const Tensor& self, bool unbiased) {
  return Variance(self, std::nullopt, unbiased ? 1 : 0, false);
}

absl::StatusOr<Tensor> VarDim(const Tensor& self, const Dims& dim, bool unbiased, bool keepdim) {
  return Variance(self, dim, unbiased ? 1 : 0, keepdim);
}

absl::StatusOr<Tensor> VarCorrection(const Tensor& self, const Dims& dim,
                                     std::optional<double> correction, bool keepdim) {
  return Variance(self, dim, correction.value_or(1.0), keepdim);
}

KernelBinder MomentKernel(Moment moment, MomentLayout layout) {
  const bool take_sqrt = moment != Moment::kVarMean;
  // std returns one tensor; var_mean / std_mean return (moment, mean).
  auto run = [moment, take_sqrt](const Tensor& x, const Dims& dims, double correction,
                                 bool keepdim) -> absl::StatusOr<std::vector<ir::IValue>> {
    ASSIGN_OR_RETURN(auto r, VarStdMean(x, dims, correction, keepdim, take_sqrt));
    std::vector<ir::IValue> out{ir::IValue::FromTensor(std::move(r.first))};
    if (moment != Moment::kStd) out.push_back(ir::IValue::FromTensor(std::move(r.second)));
    return out;
  };
  switch (layout) {
    case MomentLayout::kUnbiased:
      return Unboxed([run](const Tensor& x, bool unbiased) {
        return run(x, std::nullopt, unbiased ? 1 : 0, false);
      });
    case MomentLayout::kDim:
      return Unboxed([run](const Tensor& x, const Dims& dims, bool unbiased, bool keepdim) {
        return run(x, dims, unbiased ? 1 : 0, keepdim);
      });
    case MomentLayout::kCorrection:
      break;
  }
  return Unboxed([run](const Tensor& x, const Dims& dims, std::optional<double> correction,
                       bool keepdim) {
    return run(x, dims, correction.value_or(1.0), keepdim);
  });
}

absl::StatusOr<Tensor> NormScalar(const Tensor& self, double p) {
  return VectorNorm(self, p, std::nullopt, false, std::nullopt);
}

absl::StatusOr<Tensor> NormDim(const Tensor& self, std::optional<double> p,
                               const std::vector<int64_t>& dim, bool keepdim) {
  return VectorNorm(self, p.value_or(2.0), dim, keepdim, std::nullopt);
}

absl::StatusOr<Tensor> NormDimDtype(const Tensor& self, std::optional<double> p,
                                    const std::vector<int64_t>& dim, bool keepdim, DType dtype) {
  return VectorNorm(self, p.value_or(2.0), dim, keepdim, dtype);
}

absl::StatusOr<Tensor> NormDtype(const Tensor& self, std::optional<double> p, DType dtype) {
  return VectorNorm(self, p.value_or(2.0), std::nullopt, false, dtype);
}

absl::StatusOr<Tensor> LinalgVectorNorm(const Tensor& self, double ord, const Dims& dim,
                                        bool keepdim, std::optional<DType> dtype) {
  return VectorNorm(self, ord, dim, keepdim, dtype);
}

absl::StatusOr<Tensor> FrobeniusNorm(const Tensor& self) {
  return VectorNorm(self, 2.0, std::nullopt, false, std::nullopt);
}

absl::StatusOr<Tensor> FrobeniusNormDim(const Tensor& self, const std::vector<int64_t>& dim,
                                        bool keepdim) {
  return VectorNorm(self, 2.0, dim, keepdim, std::nullopt);
}

// An empty dim list counts over every dim (as ATen).
absl::StatusOr<Tensor> CountNonzeroDim(const Tensor& self, std::optional<int64_t> dim) {
  Dims dims;
  if (dim) dims = std::vector<int64_t>{*dim};
  return CountNonzero(self, dims);
}

absl::StatusOr<Tensor> CountNonzeroDims(const Tensor& self, const std::vector<int64_t>& dim) {
  return CountNonzero(self, dim);
}

absl::StatusOr<Tensor> OnnxReduceKernel(const Tensor& self, const std::string& kind,
                                        const Dims& axes, bool keepdims,
                                        bool noop_with_empty_axes) {
  return OnnxReduce(kind, self, axes, keepdims, noop_with_empty_axes);
}

}  // namespace kiln::runtime
