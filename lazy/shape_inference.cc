#include "lazy/shape_inference.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/promotion.h"
#include "support/status.h"

namespace kiln::lazy {
namespace {

std::string Sizes(absl::Span<const int64_t> s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

runtime::DTypeOperand TensorOperand(const Shape& s) {
  return {s.dtype, s.dim() == 0 ? runtime::OperandClass::kZeroDim
                                : runtime::OperandClass::kDimensioned};
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> BroadcastSizes(absl::string_view op,
                                                    absl::Span<const int64_t> a,
                                                    absl::Span<const int64_t> b) {
  const size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": sizes ", Sizes(a), " and ", Sizes(b),
                                                     " do not broadcast (dim ", i, ")"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<Shape> BinaryShape(absl::string_view op, const Shape& a, const Shape& b) {
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, BroadcastSizes(op, a.sizes, b.sizes));
  runtime::DTypeOperand operands[] = {TensorOperand(a), TensorOperand(b)};
  absl::StatusOr<DType> dtype = runtime::ResultType(operands);
  if (!dtype.ok()) return absl::InvalidArgumentError(absl::StrCat(op, ": ", dtype.status().message()));
  return Shape(*dtype, std::move(sizes));
}

absl::StatusOr<Shape> ScalarShape(absl::string_view op, const Shape& a) {
  runtime::DTypeOperand operands[] = {TensorOperand(a),
                                      {DType::kFloat64, runtime::OperandClass::kScalar}};
  absl::StatusOr<DType> dtype = runtime::ResultType(operands);
  if (!dtype.ok()) return absl::InvalidArgumentError(absl::StrCat(op, ": ", dtype.status().message()));
  return Shape(*dtype, a.sizes);
}

absl::StatusOr<Shape> CompareShape(absl::string_view op, const Shape& a, const Shape& b) {
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes, BroadcastSizes(op, a.sizes, b.sizes));
  return Shape(DType::kBool, std::move(sizes));
}

Shape FloatUnaryShape(const Shape& a) {
  return Shape(IsFloatingPoint(a.dtype) ? a.dtype : DType::kFloat32, a.sizes);
}

absl::StatusOr<Shape> MmShape(const Shape& a, const Shape& b) {
  if (a.dim() != 2 || b.dim() != 2 || a.sizes[1] != b.sizes[0]) {
    return absl::InvalidArgumentError(absl::StrCat("mm: expected [n, k] and [k, m], got ",
                                                   Sizes(a.sizes), " and ", Sizes(b.sizes)));
  }
  if (a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("mm: dtypes differ (", DTypeName(a.dtype),
                                                   " and ", DTypeName(b.dtype), ")"));
  }
  return Shape(a.dtype, {a.sizes[0], b.sizes[1]});
}

absl::StatusOr<Shape> MatmulShape(const Shape& a, const Shape& b) {
  if (a.dim() == 0 || b.dim() == 0) {
    return absl::InvalidArgumentError("matmul: both operands need at least one dim");
  }
  if (a.dtype != b.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: dtypes differ (", DTypeName(a.dtype),
                                                   " and ", DTypeName(b.dtype), ")"));
  }
  std::vector<int64_t> as = a.sizes, bs = b.sizes;
  const bool a_vec = as.size() == 1, b_vec = bs.size() == 1;
  if (a_vec) as.insert(as.begin(), 1);
  if (b_vec) bs.push_back(1);
  const int64_t k_a = as.back(), k_b = bs[bs.size() - 2];
  if (k_a != k_b) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: inner dims differ: ", Sizes(a.sizes),
                                                   " @ ", Sizes(b.sizes)));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> batch,
                   BroadcastSizes("matmul", absl::MakeSpan(as).subspan(0, as.size() - 2),
                                  absl::MakeSpan(bs).subspan(0, bs.size() - 2)));
  if (!a_vec) batch.push_back(as[as.size() - 2]);
  if (!b_vec) batch.push_back(bs.back());
  return Shape(a.dtype, std::move(batch));
}

absl::StatusOr<int64_t> WrapDim(absl::string_view op, int64_t dim, int64_t rank) {
  const int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": dim ", dim, " out of range for a tensor of rank ", rank));
  }
  return dim < 0 ? dim + r : dim;
}

absl::StatusOr<Shape> ReduceShape(absl::string_view op, const Shape& a,
                                  absl::Span<const int64_t> dims, bool keepdim,
                                  std::optional<DType> dtype) {
  std::vector<bool> reduced(a.sizes.size(), dims.empty());
  for (int64_t d : dims) {
    ASSIGN_OR_RETURN(int64_t w, WrapDim(op, d, a.dim()));
    if (a.dim() == 0) continue;
    if (reduced[w]) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": dim ", d, " appears twice"));
    }
    reduced[w] = true;
  }
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < a.sizes.size(); ++i) {
    if (!reduced[i]) {
      sizes.push_back(a.sizes[i]);
    } else if (keepdim) {
      sizes.push_back(1);
    }
  }
  DType out = dtype.value_or(IsIntegral(a.dtype, /*include_bool=*/true) ? DType::kInt64 : a.dtype);
  return Shape(out, std::move(sizes));
}

absl::StatusOr<Shape> TransposeShape(const Shape& a, int64_t dim0, int64_t dim1) {
  ASSIGN_OR_RETURN(int64_t d0, WrapDim("transpose", dim0, a.dim()));
  ASSIGN_OR_RETURN(int64_t d1, WrapDim("transpose", dim1, a.dim()));
  Shape out = a;
  if (a.dim() > 0) std::swap(out.sizes[d0], out.sizes[d1]);
  return out;
}

absl::StatusOr<Shape> ReshapeShape(absl::string_view op, const Shape& a,
                                   absl::Span<const int64_t> sizes) {
  std::vector<int64_t> out(sizes.begin(), sizes.end());
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) return absl::InvalidArgumentError(absl::StrCat(op, ": more than one -1 in ", Sizes(sizes)));
      infer = static_cast<int>(i);
    } else if (out[i] < 0) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": negative size in ", Sizes(sizes)));
    } else {
      known *= out[i];
    }
  }
  const int64_t numel = a.numel();
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": cannot infer -1 in ", Sizes(sizes),
                                                     " for ", numel, " elements"));
    }
    out[infer] = numel / known;
  } else if (known != numel) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": ", Sizes(sizes), " does not have the ",
                                                   numel, " elements of ", Sizes(a.sizes)));
  }
  return Shape(a.dtype, std::move(out));
}

absl::StatusOr<Shape> ExpandShape(const Shape& a, absl::Span<const int64_t> sizes) {
  if (sizes.size() < a.sizes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("expand: ", Sizes(sizes), " has fewer dims than ",
                                                   Sizes(a.sizes)));
  }
  std::vector<int64_t> out(sizes.begin(), sizes.end());
  const size_t lead = sizes.size() - a.sizes.size();
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t have = i < lead ? 1 : a.sizes[i - lead];
    if (out[i] == -1) {
      if (i < lead) return absl::InvalidArgumentError("expand: -1 in a new leading dim");
      out[i] = have;
    } else if (have != 1 && have != out[i]) {
      return absl::InvalidArgumentError(absl::StrCat("expand: cannot expand ", Sizes(a.sizes),
                                                     " to ", Sizes(sizes)));
    }
  }
  return Shape(a.dtype, std::move(out));
}

}  // namespace kiln::lazy
