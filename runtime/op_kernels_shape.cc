// Typed entry points of the view, indexing, creation and sorting rows
// (ops/defs/view.def, index.def, create.def, sort.def, scalar.def).
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
#include "runtime/kernels_math.h"
#include "runtime/kernels_shape.h"
#include "runtime/op_kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {

absl::StatusOr<Tensor> ViewAs(const Tensor& self, const Tensor& other) {
  return shape::View(self, other.sizes());
}

absl::StatusOr<Tensor> FlattenNamed(const Tensor& self, int64_t start_dim, int64_t end_dim,
                                    const std::string&) {
  return shape::Flatten(self, start_dim, end_dim);
}

absl::StatusOr<Tensor> SqueezeAll(const Tensor& self) { return Squeeze(self); }
absl::StatusOr<Tensor> SqueezeDim(const Tensor& self, int64_t dim) { return Squeeze(self, dim); }

absl::StatusOr<Tensor> SqueezeDims(const std::string& op, const Tensor& self,
                                   const std::vector<int64_t>& dim) {
  const int64_t rank = self.dim();
  std::vector<bool> listed(static_cast<size_t>(std::max<int64_t>(rank, 1)), false);
  for (int64_t d : dim) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeDim(d, std::max<int64_t>(rank, 1), op.c_str()));
    listed[static_cast<size_t>(n)] = true;
  }
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < rank; ++i) {
    if (!listed[static_cast<size_t>(i)] || self.size(i) != 1) sizes.push_back(self.size(i));
  }
  return Reshape(self, sizes);
}

absl::StatusOr<Tensor> CopyKernel(const std::string& op, const Tensor& self, const Tensor& src) {
  if (!src.has_data()) return absl::InvalidArgumentError(op + ": src has no data");
  ASSIGN_OR_RETURN(Tensor cast, To(src, self.dtype()));
  ASSIGN_OR_RETURN(Tensor broadcast, Expand(cast, self.sizes()));
  return broadcast.Contiguous();
}

absl::StatusOr<Tensor> ExpandKernel(const Tensor& self, const Ints& size, bool) {
  return Expand(self, size);
}

absl::StatusOr<Tensor> ExpandAs(const Tensor& self, const Tensor& other) {
  return Expand(self, other.sizes());
}

absl::StatusOr<Tensor> ContiguousKernel(const std::string& op, const Tensor& self) {
  if (!self.has_data()) return absl::InvalidArgumentError(op + ": tensor has no data");
  return self.Contiguous();
}

absl::StatusOr<Tensor> Identity(const Tensor& self) { return self; }

absl::StatusOr<Tensor> NarrowTensor(const std::string& op, const Tensor& self, int64_t dim,
                                    const Tensor& start, int64_t length) {
  ASSIGN_OR_RETURN(std::vector<int64_t> s, shape::TensorToIntList(start));
  if (s.size() != 1) return absl::InvalidArgumentError(op + ": start must hold one integer");
  return shape::Narrow(self, dim, s[0], length);
}

absl::StatusOr<Tensor> MovedimInt(const Tensor& self, int64_t source, int64_t destination) {
  return shape::Movedim(self, std::vector<int64_t>{source}, std::vector<int64_t>{destination});
}

// ---------------------------------------------------------------- factories

absl::StatusOr<Tensor> ArangeEnd(const Operand& end, std::optional<DType> dtype) {
  return shape::Arange(Tensor::ScalarInt(0), end.value, Tensor::ScalarInt(1), dtype);
}

absl::StatusOr<Tensor> ArangeStart(const Operand& start, const Operand& end,
                                   std::optional<DType> dtype) {
  return shape::Arange(start.value, end.value, Tensor::ScalarInt(1), dtype);
}

absl::StatusOr<Tensor> ArangeStartStep(const Operand& start, const Operand& end,
                                       const Operand& step, std::optional<DType> dtype) {
  return shape::Arange(start.value, end.value, step.value, dtype);
}

absl::StatusOr<Tensor> FullKernel(const Ints& size, const Operand& fill_value,
                                  std::optional<DType> dtype) {
  return shape::Full(size, fill_value.value, dtype);
}

KernelBinder ConstantFillKernel(int value) {
  return Unboxed([value](const Ints& size, std::optional<DType> dtype) {
    return shape::Full(size, Tensor::ScalarInt(value), dtype.value_or(DType::kFloat32));
  });
}

KernelBinder LikeKernel(int value) {
  return Unboxed([value](const Tensor& self, std::optional<DType> dtype) {
    return shape::Full(self.sizes(), Tensor::ScalarInt(value), dtype.value_or(self.dtype()));
  });
}

absl::StatusOr<Tensor> FullLike(const Tensor& self, const Operand& fill_value,
                                std::optional<DType> dtype) {
  return shape::Full(self.sizes(), fill_value.value, dtype.value_or(self.dtype()));
}

KernelBinder NewKernel(int value) {
  return Unboxed([value](const Tensor& self, const Ints& size, std::optional<DType> dtype) {
    return shape::Full(size, Tensor::ScalarInt(value), dtype.value_or(self.dtype()));
  });
}

absl::StatusOr<Tensor> NewFull(const Tensor& self, const Ints& size, const Operand& fill_value,
                               std::optional<DType> dtype) {
  return shape::Full(size, fill_value.value, dtype.value_or(self.dtype()));
}

// torch.scalar_tensor: the default dtype (float32) unless told otherwise.
absl::StatusOr<Tensor> ScalarTensor(const Operand& s, std::optional<DType> dtype) {
  return shape::Full({}, s.value, dtype.value_or(DType::kFloat32));
}

absl::StatusOr<Tensor> EyeN(int64_t n, std::optional<DType> dtype) {
  return shape::Eye(n, n, 0, dtype.value_or(DType::kFloat32));
}

absl::StatusOr<Tensor> EyeNM(int64_t n, int64_t m, std::optional<DType> dtype) {
  return shape::Eye(n, m, 0, dtype.value_or(DType::kFloat32));
}

absl::StatusOr<Tensor> OnnxEyeLike(const std::string& op, const Tensor& self, int64_t k,
                                   std::optional<DType> dtype) {
  if (self.dim() != 2) return absl::InvalidArgumentError(op + ": input must be 2-D");
  return shape::Eye(self.size(0), self.size(1), k, dtype.value_or(self.dtype()));
}

// ---------------------------------------------------------------- sorting

namespace {

absl::StatusOr<TensorPair> Pair(absl::StatusOr<shape::ValuesIndices> r) {
  if (!r.ok()) return r.status();
  return TensorPair(std::move(r->values), std::move(r->indices));
}

absl::StatusOr<TensorPair> Pair(absl::StatusOr<std::pair<Tensor, Tensor>> r) {
  if (!r.ok()) return r.status();
  return TensorPair(std::move(r->first), std::move(r->second));
}

absl::StatusOr<TensorTriple> UniqueOutputs(absl::StatusOr<shape::UniqueResult> u, bool inverse,
                                           bool counts) {
  if (!u.ok()) return u.status();
  const Tensor empty = Tensor::Empty(DType::kInt64, {0});
  return TensorTriple(u->values, inverse ? u->inverse : empty, counts ? u->counts : empty);
}

}  // namespace

absl::StatusOr<TensorPair> TopK(const Tensor& self, int64_t k, int64_t dim, bool largest, bool) {
  return Pair(shape::TopK(self, k, dim, largest));
}

absl::StatusOr<TensorPair> SortKernel(const Tensor& self, int64_t dim, bool descending) {
  return Pair(shape::Sort(self, dim, descending));
}

absl::StatusOr<TensorPair> SortStable(const Tensor& self, std::optional<bool>, int64_t dim,
                                      bool descending) {
  return Pair(shape::Sort(self, dim, descending));  // the sort is always stable
}

absl::StatusOr<Tensor> Argsort(const Tensor& self, int64_t dim, bool descending) {
  ASSIGN_OR_RETURN(shape::ValuesIndices s, shape::Sort(self, dim, descending));
  return s.indices;
}

absl::StatusOr<Tensor> ArgsortStable(const Tensor& self, bool, int64_t dim, bool descending) {
  return Argsort(self, dim, descending);
}

KernelBinder CumulativeKernel(bool prod) {
  return Unboxed([prod](const Tensor& self, int64_t dim, std::optional<DType> dtype) {
    return shape::Cumulative(self, dim, dtype, prod);
  });
}

absl::StatusOr<TensorPair> Cummax(const Tensor& self, int64_t dim) {
  return Pair(CumMaxMin(self, dim, /*is_max=*/true));
}

absl::StatusOr<TensorPair> Cummin(const Tensor& self, int64_t dim) {
  return Pair(CumMaxMin(self, dim, /*is_max=*/false));
}

// ATen's unique_dim computes inverse and counts whatever the flags say.
absl::StatusOr<TensorTriple> UniqueDim(const Tensor& self, int64_t dim, bool, bool, bool) {
  return UniqueOutputs(shape::Unique(self, dim, true, false), true, true);
}

absl::StatusOr<TensorTriple> Unique2(const Tensor& self, bool, bool return_inverse,
                                     bool return_counts) {
  return UniqueOutputs(shape::Unique(self, std::nullopt, true, false), return_inverse,
                       return_counts);
}

absl::StatusOr<TensorTriple> UniqueConsecutive(const Tensor& self, bool return_inverse,
                                               bool return_counts, std::optional<int64_t> dim) {
  return UniqueOutputs(shape::Unique(self, dim, true, true), return_inverse, return_counts);
}

absl::StatusOr<Tensor> OnnxCumsum(const Tensor& self, int64_t axis, bool exclusive, bool reverse) {
  return shape::Cumulative(self, axis, self.dtype(), false, exclusive, reverse);
}

absl::StatusOr<std::tuple<Tensor, Tensor, Tensor, Tensor>> OnnxUnique(
    const Tensor& self, std::optional<int64_t> axis, bool sorted) {
  ASSIGN_OR_RETURN(shape::UniqueResult u, shape::Unique(self, axis, sorted, false));
  return std::make_tuple(u.values, u.first_indices, u.inverse, u.counts);
}

}  // namespace kiln::runtime
