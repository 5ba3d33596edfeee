#include "runtime/tensor_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

absl::Status RequireData(const Tensor& t, const char* op) {
  if (!t.defined()) return absl::InvalidArgumentError(absl::StrCat(op, ": undefined tensor"));
  if (!t.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": tensor has no data (placeholder)"));
  }
  return absl::OkStatus();
}

int64_t SaturatingToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

std::string ShapeToString(absl::Span<const int64_t> sizes) {
  return absl::StrCat("[", absl::StrJoin(sizes, ", "), "]");
}

absl::StatusOr<int64_t> NormalizeDim(int64_t dim, int64_t rank, const char* op) {
  const int64_t r = rank == 0 ? 1 : rank;  // 0-dim tensors accept dim 0 / -1
  if (dim < -r || dim >= r) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": dim ", dim, " out of range for a tensor of rank ", rank));
  }
  return dim < 0 ? dim + r : dim;
}

absl::StatusOr<Tensor> AsStrided(const Tensor& t, std::vector<int64_t> sizes,
                                 std::vector<int64_t> strides, int64_t storage_offset) {
  RETURN_IF_ERROR(RequireData(t, "as_strided"));
  if (sizes.size() != strides.size()) {
    return absl::InvalidArgumentError("as_strided: sizes and strides differ in length");
  }
  if (storage_offset < 0) return absl::InvalidArgumentError("as_strided: negative offset");
  int64_t max_index = storage_offset;
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || strides[i] < 0) {
      return absl::InvalidArgumentError("as_strided: negative size or stride");
    }
    if (sizes[i] == 0) empty = true;
    else if (sizes[i] > 1) {
      if (strides[i] > 0 && (sizes[i] - 1) > (std::numeric_limits<int64_t>::max() / 4) / strides[i]) {
        return absl::InvalidArgumentError("as_strided: geometry overflows");
      }
      max_index += (sizes[i] - 1) * strides[i];
    }
  }
  const int64_t capacity = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  if (!empty && max_index >= capacity) {
    return absl::InvalidArgumentError(absl::StrCat("as_strided: view of sizes ",
                                                   ShapeToString(sizes), " reaches element ",
                                                   max_index, " of a storage of ", capacity));
  }
  return Tensor::View(t, std::move(sizes), std::move(strides), storage_offset);
}

absl::StatusOr<Tensor> Transpose(const Tensor& t, int64_t dim0, int64_t dim1) {
  RETURN_IF_ERROR(RequireData(t, "transpose"));
  if (t.dim() == 0) return t;
  ASSIGN_OR_RETURN(int64_t a, NormalizeDim(dim0, t.dim(), "transpose"));
  ASSIGN_OR_RETURN(int64_t b, NormalizeDim(dim1, t.dim(), "transpose"));
  std::vector<int64_t> sizes = t.sizes(), strides = t.strides();
  std::swap(sizes[a], sizes[b]);
  std::swap(strides[a], strides[b]);
  return Tensor::View(t, sizes, strides, t.storage_offset());
}

absl::StatusOr<Tensor> Permute(const Tensor& t, absl::Span<const int64_t> dims) {
  RETURN_IF_ERROR(RequireData(t, "permute"));
  if (static_cast<int64_t>(dims.size()) != t.dim()) {
    return absl::InvalidArgumentError(absl::StrCat("permute: ", dims.size(),
                                                   " dims for a tensor of rank ", t.dim()));
  }
  std::vector<int64_t> sizes, strides;
  std::vector<bool> seen(dims.size(), false);
  for (int64_t d : dims) {
    ASSIGN_OR_RETURN(int64_t n, NormalizeDim(d, t.dim(), "permute"));
    if (seen[n]) return absl::InvalidArgumentError("permute: repeated dim");
    seen[n] = true;
    sizes.push_back(t.sizes()[n]);
    strides.push_back(t.strides()[n]);
  }
  return Tensor::View(t, sizes, strides, t.storage_offset());
}

absl::StatusOr<Tensor> Slice(const Tensor& t, int64_t dim, int64_t start, int64_t end,
                             int64_t step) {
  RETURN_IF_ERROR(RequireData(t, "slice"));
  if (t.dim() == 0) return absl::InvalidArgumentError("slice: cannot slice a 0-dim tensor");
  if (step <= 0) return absl::InvalidArgumentError("slice: step must be positive");
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, t.dim(), "slice"));
  const int64_t n = t.sizes()[d];
  auto clamp = [n](int64_t i) {
    if (i < 0) i += n;
    return i < 0 ? 0 : (i > n ? n : i);
  };
  start = clamp(start);
  end = clamp(end);
  const int64_t len = end > start ? (end - start + step - 1) / step : 0;
  std::vector<int64_t> sizes = t.sizes(), strides = t.strides();
  sizes[d] = len;
  strides[d] *= step;
  return Tensor::View(t, sizes, strides, t.storage_offset() + start * t.strides()[d]);
}

absl::StatusOr<Tensor> Expand(const Tensor& t, absl::Span<const int64_t> sizes) {
  RETURN_IF_ERROR(RequireData(t, "expand"));
  const int64_t rank = static_cast<int64_t>(sizes.size());
  if (rank < t.dim()) {
    return absl::InvalidArgumentError(absl::StrCat("expand: cannot expand ",
                                                   ShapeToString(t.sizes()), " to ",
                                                   ShapeToString(sizes)));
  }
  std::vector<int64_t> out_sizes(rank), out_strides(rank);
  for (int64_t i = rank - 1; i >= 0; --i) {
    const int64_t j = i - (rank - t.dim());
    const int64_t want = sizes[i];
    if (j < 0) {
      if (want < 0) return absl::InvalidArgumentError("expand: -1 for a new leading dim");
      out_sizes[i] = want;
      out_strides[i] = 0;
      continue;
    }
    const int64_t have = t.sizes()[j];
    if (want == -1 || want == have) {
      out_sizes[i] = have;
      out_strides[i] = t.strides()[j];
    } else if (have == 1 && want >= 0) {
      out_sizes[i] = want;
      out_strides[i] = 0;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("expand: cannot expand ",
                                                     ShapeToString(t.sizes()), " to ",
                                                     ShapeToString(sizes)));
    }
  }
  return Tensor::View(t, out_sizes, out_strides, t.storage_offset());
}

namespace {

// Strides for viewing `t` as `sizes` without copying (ATen's computeStride),
// or nullopt when impossible.
std::optional<std::vector<int64_t>> ViewStrides(const Tensor& t,
                                                const std::vector<int64_t>& sizes) {
  std::vector<int64_t> out(sizes.size(), 1);
  if (t.numel() == 0) return Tensor::ContiguousStrides(sizes);
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = t.dim() > 0 ? t.strides().back() : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    tensor_numel *= t.sizes()[d];
    if (d == 0 || (t.sizes()[d - 1] != 1 &&
                   t.strides()[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = t.strides()[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

absl::StatusOr<Tensor> Reshape(const Tensor& t, absl::Span<const int64_t> sizes) {
  RETURN_IF_ERROR(RequireData(t, "reshape"));
  std::vector<int64_t> out(sizes.begin(), sizes.end());
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0) return absl::InvalidArgumentError("reshape: more than one -1");
      infer = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      return absl::InvalidArgumentError("reshape: negative size");
    } else {
      if (out[i] > 0 && known > std::numeric_limits<int64_t>::max() / out[i]) {
        return absl::InvalidArgumentError("reshape: shape overflows");
      }
      known *= out[i];
    }
  }
  const int64_t numel = t.numel();
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      return absl::InvalidArgumentError(absl::StrCat("reshape: shape ", ShapeToString(sizes),
                                                     " is invalid for ", numel, " elements"));
    }
    out[infer] = numel / known;
  } else if (known != numel) {
    return absl::InvalidArgumentError(absl::StrCat("reshape: shape ", ShapeToString(sizes),
                                                   " is invalid for ", numel, " elements"));
  }
  if (std::optional<std::vector<int64_t>> strides = ViewStrides(t, out)) {
    return Tensor::View(t, out, *strides, t.storage_offset());
  }
  Tensor c = t.Contiguous();
  return Tensor::View(c, out, Tensor::ContiguousStrides(out), c.storage_offset());
}

Tensor Squeeze(const Tensor& t) {
  std::vector<int64_t> sizes, strides;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (t.sizes()[i] == 1) continue;
    sizes.push_back(t.sizes()[i]);
    strides.push_back(t.strides()[i]);
  }
  if (!t.has_data()) return t;
  return Tensor::View(t, sizes, strides, t.storage_offset());
}

absl::StatusOr<Tensor> Squeeze(const Tensor& t, int64_t dim) {
  RETURN_IF_ERROR(RequireData(t, "squeeze"));
  if (t.dim() == 0) return t;
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, t.dim(), "squeeze"));
  if (t.sizes()[d] != 1) return t;
  std::vector<int64_t> sizes = t.sizes(), strides = t.strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return Tensor::View(t, sizes, strides, t.storage_offset());
}

absl::StatusOr<Tensor> Unsqueeze(const Tensor& t, int64_t dim) {
  RETURN_IF_ERROR(RequireData(t, "unsqueeze"));
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, t.dim() + 1, "unsqueeze"));
  std::vector<int64_t> sizes = t.sizes(), strides = t.strides();
  const int64_t stride = d < t.dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return Tensor::View(t, sizes, strides, t.storage_offset());
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(absl::Span<const int64_t> a,
                                                     absl::Span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t d;
    if (da == db || db == 1) d = da;
    else if (da == 1) d = db;
    else {
      return absl::InvalidArgumentError(absl::StrCat("shapes ", ShapeToString(a), " and ",
                                                     ShapeToString(b), " do not broadcast"));
    }
    out[rank - 1 - i] = d;
  }
  return out;
}

bool IsStorableDType(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
    case DType::kBool:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64: return true;
    case DType::kComplex64: return false;
  }
  return false;
}

namespace {

template <typename T>
void StoreAt(Tensor& t, int64_t i, T v) {
  std::memcpy(static_cast<char*>(t.raw_data()) + i * static_cast<int64_t>(sizeof(T)), &v,
              sizeof(T));
}

absl::Status NotStorable(DType dtype) {
  return absl::UnimplementedError(
      absl::StrCat("reference kernels do not store dtype ", DTypeName(dtype)));
}

}  // namespace

absl::Status CopyInto(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.sizes() != dst.sizes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy: ", DTypeName(src.dtype()), "[", absl::StrJoin(src.sizes(), ", "),
                     "] into ", DTypeName(dst.dtype()), "[", absl::StrJoin(dst.sizes(), ", "), "]"));
  }
  const int64_t n = src.numel();
  if (n == 0) return absl::OkStatus();
  if (!src.has_data() || !dst.has_data()) return absl::InvalidArgumentError("copy: tensor without data");
  const size_t es = src.element_size();
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(dst.raw_data(), src.raw_data(), static_cast<size_t>(n) * es);
    return absl::OkStatus();
  }
  // Odometer over the index space; both offsets move incrementally.
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  const int64_t rank = src.dim();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  int64_t so = 0, doff = 0;
  for (int64_t flat = 0; flat < n; ++flat) {
    std::memcpy(d + doff * static_cast<int64_t>(es), s + so * static_cast<int64_t>(es), es);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[i] < src.size(i)) {
        so += src.strides()[i];
        doff += dst.strides()[i];
        break;
      }
      so -= (idx[i] - 1) * src.strides()[i];
      doff -= (idx[i] - 1) * dst.strides()[i];
      idx[i] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status SetInt(Tensor& t, int64_t i, int64_t v) {
  switch (t.dtype()) {
    case DType::kUInt8: StoreAt(t, i, static_cast<uint8_t>(v)); break;
    case DType::kInt8: StoreAt(t, i, static_cast<int8_t>(v)); break;
    case DType::kInt16: StoreAt(t, i, static_cast<int16_t>(v)); break;
    case DType::kInt32: StoreAt(t, i, static_cast<int32_t>(v)); break;
    case DType::kInt64: StoreAt(t, i, v); break;
    case DType::kUInt16: StoreAt(t, i, static_cast<uint16_t>(v)); break;
    case DType::kUInt32: StoreAt(t, i, static_cast<uint32_t>(v)); break;
    case DType::kUInt64: StoreAt(t, i, static_cast<uint64_t>(v)); break;
    case DType::kBool: StoreAt(t, i, v != 0); break;
    case DType::kFloat16: StoreAt(t, i, DoubleToHalfBits(static_cast<double>(v))); break;
    case DType::kBFloat16: StoreAt(t, i, DoubleToBFloat16Bits(static_cast<double>(v))); break;
    case DType::kFloat32: StoreAt(t, i, static_cast<float>(v)); break;
    case DType::kFloat64: StoreAt(t, i, static_cast<double>(v)); break;
    case DType::kComplex64: return NotStorable(t.dtype());
  }
  return absl::OkStatus();
}

absl::Status SetDouble(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kBool: StoreAt(t, i, v != 0); return absl::OkStatus();
    case DType::kFloat16: StoreAt(t, i, DoubleToHalfBits(v)); return absl::OkStatus();
    case DType::kBFloat16: StoreAt(t, i, DoubleToBFloat16Bits(v)); return absl::OkStatus();
    case DType::kFloat32: StoreAt(t, i, static_cast<float>(v)); return absl::OkStatus();
    case DType::kFloat64: StoreAt(t, i, v); return absl::OkStatus();
    case DType::kUInt64:
      // The upper half of uint64's range is past int64's saturation point.
      if (v >= 9.2233720368547758e18) {
        StoreAt(t, i, v >= 1.8446744073709552e19 ? UINT64_MAX : static_cast<uint64_t>(v));
        return absl::OkStatus();
      }
      return SetInt(t, i, SaturatingToInt64(v));
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt16:
    case DType::kUInt32: return SetInt(t, i, SaturatingToInt64(v));
    case DType::kComplex64: return NotStorable(t.dtype());
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> CastTo(const Tensor& t, DType dtype) {
  RETURN_IF_ERROR(RequireData(t, "to"));
  if (!IsStorableDType(dtype) || !IsStorableDType(t.dtype())) {
    return absl::UnimplementedError(absl::StrCat("to: conversion from ", DTypeName(t.dtype()),
                                                 " to ", DTypeName(dtype), " is not supported"));
  }
  Tensor out = Tensor::Empty(dtype, t.sizes());
  const int64_t n = t.numel();
  if (t.dtype() == DType::kFloat32 && (dtype == DType::kBFloat16 || dtype == DType::kFloat16) && t.is_contiguous()) {
    // --precision bf16 / fp16's weights: the same bits as the element loop
    // below, without a double and a dtype dispatch per element.
    const float* from = t.data<float>();
    uint16_t* to = out.data<uint16_t>();
    if (dtype == DType::kBFloat16) {
      for (int64_t i = 0; i < n; ++i) to[i] = FloatToBFloat16Bits(from[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) to[i] = FloatToHalfBits(from[i]);
    }
    return out;
  }
  // uint64 values past INT64_MAX read exactly only as doubles.
  const bool from_float = IsFloatingPoint(t.dtype()) ||
                          (t.dtype() == DType::kUInt64 && IsFloatingPoint(dtype));
  for (int64_t i = 0; i < n; ++i) {
    if (from_float) {
      RETURN_IF_ERROR(SetDouble(out, i, t.GetDouble(i)));
    } else {
      RETURN_IF_ERROR(SetInt(out, i, t.GetInt(i)));
    }
  }
  return out;
}

}  // namespace kiln::runtime
