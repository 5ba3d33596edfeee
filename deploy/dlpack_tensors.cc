#include "deploy/dlpack_tensors.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status.h"

namespace kiln::deploy {
namespace {

std::string Shape(const int64_t* shape, int ndim) {
  std::vector<int64_t> v(shape, shape + (ndim > 0 ? ndim : 0));
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

std::string DLTypeName(DLDataType t) {
  const char* code = t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint" : t.code == kDLFloat ? "float"
                   : t.code == kDLBfloat ? "bfloat" : t.code == kDLComplex ? "complex" : "code";
  return absl::StrCat(code, static_cast<int>(t.bits), t.lanes != 1 ? absl::StrCat("x", t.lanes) : "");
}

// The strides of `t` in elements (compact when null).
std::vector<int64_t> StridesOf(const DLTensor& t) {
  if (t.strides != nullptr) return std::vector<int64_t>(t.strides, t.strides + t.ndim);
  return Tensor::ContiguousStrides(std::vector<int64_t>(t.shape, t.shape + t.ndim));
}

// Copies every element of `sizes` from `src` to `dst` (byte pointers,
// strides in elements).
void CopyStrided(const char* src, const std::vector<int64_t>& src_strides, char* dst,
                 const std::vector<int64_t>& dst_strides, const std::vector<int64_t>& sizes, size_t es) {
  for (int64_t s : sizes) {
    if (s == 0) return;
  }
  std::vector<int64_t> index(sizes.size(), 0);
  while (true) {
    int64_t so = 0, d = 0;
    for (size_t k = 0; k < sizes.size(); ++k) {
      so += index[k] * src_strides[k];
      d += index[k] * dst_strides[k];
    }
    std::memcpy(dst + d * static_cast<int64_t>(es), src + so * static_cast<int64_t>(es), es);
    size_t k = sizes.size();
    while (k > 0) {
      --k;
      if (++index[k] < sizes[k]) break;
      index[k] = 0;
      if (k == 0) return;
    }
    if (sizes.empty()) return;
  }
}

}  // namespace

DLDataType DLDataTypeOf(DType dtype) {
  const uint8_t bits = static_cast<uint8_t>(DTypeSize(dtype) * 8);
  switch (dtype) {
    case DType::kFloat16: case DType::kFloat32: case DType::kFloat64:
      return {static_cast<uint8_t>(kDLFloat), bits, 1};
    case DType::kBFloat16:
      return {static_cast<uint8_t>(kDLBfloat), bits, 1};
    case DType::kComplex64:
      return {static_cast<uint8_t>(kDLComplex), bits, 1};
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
      return {static_cast<uint8_t>(kDLInt), bits, 1};
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64: case DType::kBool:
      return {static_cast<uint8_t>(kDLUInt), bits, 1};
  }
  return {static_cast<uint8_t>(kDLOpaqueHandle), 0, 0};
}

absl::Status CheckDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what) {
  const std::string who = absl::StrCat(what, " '", info.name, "'");
  if (t.device.device_type != kDLCPU) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": device type ", static_cast<int>(t.device.device_type),
                                                   " (only kDLCPU)"));
  }
  const DLDataType want = DLDataTypeOf(info.dtype);
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
  // The furthest byte the strides reach must be addressable arithmetic.
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

absl::StatusOr<Tensor> TensorFromDLTensor(const DLTensor& t, const TensorInfo& info, const std::string& what) {
  RETURN_IF_ERROR(CheckDLTensor(t, info, what));
  const size_t es = DTypeSize(info.dtype);
  const std::vector<int64_t> strides = StridesOf(t);
  int64_t numel = 1, reach = 0;
  for (size_t k = 0; k < info.shape.size(); ++k) {
    numel *= info.shape[k];
    if (info.shape[k] > 0) reach += (info.shape[k] - 1) * strides[k];
  }
  if (numel == 0) return Tensor::Empty(info.dtype, info.shape);
  char* data = static_cast<char*>(t.data) + t.byte_offset;
  // The caller's memory, read in place: kiln never writes inputs. The owner
  // is a no-op (the caller owns the memory for the call's duration).
  static const int kNoOwner = 0;
  std::shared_ptr<const void> owner(&kNoOwner, [](const void*) {});
  auto storage = Storage::WrapCpu(data, static_cast<size_t>(reach + 1) * es, std::move(owner));
  if (storage != nullptr) {
    absl::StatusOr<Tensor> view = Tensor::FromStorage(std::move(storage), info.dtype, info.shape, strides, 0);
    if (view.ok()) return view;
  }
  Tensor copy = Tensor::Empty(info.dtype, info.shape);
  CopyStrided(data, strides, static_cast<char*>(copy.raw_data()), copy.strides(), info.shape, es);
  return copy;
}

absl::Status CopyToDLTensor(const Tensor& value, const DLTensor& out) {
  if (!value.defined() || !value.has_data()) return absl::InternalError("the program returned no data");
  if (value.numel() == 0) return absl::OkStatus();
  const Tensor src = value.Contiguous();
  CopyStrided(static_cast<const char*>(src.raw_data()), src.strides(),
              static_cast<char*>(out.data) + out.byte_offset, StridesOf(out), src.sizes(), src.element_size());
  return absl::OkStatus();
}

}  // namespace kiln::deploy
