#include "deploy/c_api_tensors.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "deploy/dlpack_tensor.h"
#include "support/status.h"

namespace kiln::deploy {
namespace {

std::string Shape(const int64_t* shape, int ndim) {
  std::vector<int64_t> v(shape, shape + (ndim > 0 ? ndim : 0));
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

std::string DLTypeName(DLDataType t) {
  const char* code = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float"
                   : t.code == kDLBfloat ? "bfloat" : t.code == kDLComplex ? "complex"
                   : t.code == capi::kDLPackBool ? "bool" : "code";
  return absl::StrCat(code, static_cast<int>(t.bits), t.lanes != 1 ? absl::StrCat("x", t.lanes) : "");
}

// The strides of `t` in elements (compact when null).
std::vector<int64_t> StridesOf(const DLTensor& t) {
  if (t.strides != nullptr) return std::vector<int64_t>(t.strides, t.strides + t.ndim);
  return Tensor::ContiguousStrides(std::vector<int64_t>(t.shape, t.shape + t.ndim));
}

}  // namespace

absl::Status CheckDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what) {
  const std::string who = absl::StrCat(what, " '", info.name, "'");
  if (t.device.device_type != kDLCPU) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": device type ", static_cast<int>(t.device.device_type),
                                                   " (only kDLCPU)"));
  }
  ASSIGN_OR_RETURN(const DLDataType want, capi::DTypeToDLPack(info.dtype));
  if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": dtype ", DLTypeName(t.dtype), ", the model's is ",
                                                   DLTypeName(want), " (", DTypeName(info.dtype), ")"));
  }
  const int rank = static_cast<int>(info.shape.size());
  if (t.ndim != rank || (rank > 0 && t.shape == nullptr) ||
      (rank > 0 && !std::equal(info.shape.begin(), info.shape.end(), t.shape))) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, ": shape ", t.shape != nullptr ? Shape(t.shape, t.ndim) : "(null)", ", the model's is ",
        Shape(info.shape.data(), rank),
        " (shapes are fixed at compile time; a .pt2 program with symbolic sizes is compiled at its traced sizes)"));
  }
  int64_t numel = 1;
  for (int64_t s : info.shape) numel *= s;
  if (numel > 0 && t.data == nullptr) return absl::InvalidArgumentError(absl::StrCat(who, ": null data"));
  const std::vector<int64_t> strides = StridesOf(t);
  // The furthest element the strides reach must be addressable arithmetic.
  int64_t reach = 0;
  for (int k = 0; k < rank; ++k) {
    if (strides[k] < 0) return absl::InvalidArgumentError(absl::StrCat(who, ": negative strides are not supported"));
    int64_t term = 0;
    if (info.shape[k] > 0 && (__builtin_mul_overflow(info.shape[k] - 1, strides[k], &term) ||
                              __builtin_add_overflow(reach, term, &reach))) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": strides overflow"));
    }
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(reach + 1, static_cast<int64_t>(DTypeSize(info.dtype)), &bytes) ||
      t.byte_offset > static_cast<uint64_t>(INT64_MAX - bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": strides overflow"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> InputFromDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what) {
  RETURN_IF_ERROR(CheckDLTensor(t, info, what));
  return capi::TensorFromDLPack(t, absl::StrCat(what, " '", info.name, "'"));
}

absl::Status CopyToDLTensor(const Tensor& value, const DLTensor& out) {
  if (!value.defined() || !value.has_data()) return absl::InternalError("the program returned no data");
  if (value.numel() == 0) return absl::OkStatus();
  // Element by element, from a contiguous copy to the caller's strides.
  const Tensor src = value.Contiguous();
  const std::vector<int64_t> dst_strides = StridesOf(out);
  const std::vector<int64_t>& sizes = src.sizes();
  const int64_t es = static_cast<int64_t>(src.element_size());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(out.data) + out.byte_offset;
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t n = 0; n < src.numel(); ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * dst_strides[d];
    std::memcpy(to + offset * es, from + n * es, static_cast<size_t>(es));
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::deploy
