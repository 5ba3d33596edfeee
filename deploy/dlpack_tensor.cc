#include "deploy/dlpack_tensor.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln::capi {
namespace {

// Refuses absurd ranks and sizes before anything is multiplied.
constexpr int kMaxRank = 64;

struct Shape {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
  int64_t numel = 1;
};

absl::StatusOr<Shape> ShapeOf(const DLTensor& t, const std::string& what) {
  if (t.ndim < 0 || t.ndim > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": rank ", t.ndim, " (kiln takes 0 to ",
                                                   kMaxRank, ")"));
  }
  if (t.ndim > 0 && t.shape == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": rank ", t.ndim, " with no shape"));
  }
  Shape s;
  s.sizes.assign(t.shape, t.shape + t.ndim);
  for (int64_t d : s.sizes) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": negative size ", d));
    if (__builtin_mul_overflow(s.numel, d, &s.numel)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": too many elements"));
    }
  }
  s.strides = t.strides != nullptr ? std::vector<int64_t>(t.strides, t.strides + t.ndim)
                                   : Tensor::ContiguousStrides(s.sizes);
  return s;
}

// The number of elements from element 0 to the last one the strides reach
// (inclusive); nullopt for negative strides or overflow.
std::optional<int64_t> Extent(const Shape& s) {
  if (s.numel == 0) return 0;
  int64_t last = 0;
  for (size_t d = 0; d < s.sizes.size(); ++d) {
    if (s.strides[d] < 0) return std::nullopt;
    int64_t reach = 0;
    if (__builtin_mul_overflow(s.sizes[d] - 1, s.strides[d], &reach) ||
        __builtin_add_overflow(last, reach, &last)) {
      return std::nullopt;
    }
  }
  return last + 1;
}

// Copies the elements of a strided array (strides in elements, any sign)
// into contiguous `dst`.
void CopyStrided(const char* src, const Shape& s, size_t element_size, char* dst) {
  if (s.numel == 0) return;
  std::vector<int64_t> index(s.sizes.size(), 0);
  for (int64_t n = 0; n < s.numel; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * s.strides[d];
    std::memcpy(dst + n * element_size, src + offset * static_cast<int64_t>(element_size),
                element_size);
    for (size_t d = index.size(); d-- > 0;) {
      if (++index[d] < s.sizes[d]) break;
      index[d] = 0;
    }
  }
}

struct ManagedContext {
  std::shared_ptr<const void> owner;  // keeps the memory alive
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void DeleteManaged(DLManagedTensor* self) {
  if (self == nullptr) return;
  delete static_cast<ManagedContext*>(self->manager_ctx);
  delete self;
}

}  // namespace

absl::StatusOr<DType> DTypeFromDLPack(DLDataType t) {
  if (t.lanes != 1) {
    return absl::InvalidArgumentError(absl::StrCat("vector dtypes (", t.lanes, " lanes) are not supported"));
  }
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 16) return DType::kFloat16;
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 64) return DType::kFloat64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::kBFloat16;
      break;
    case kDLInt:
      if (t.bits == 8) return DType::kInt8;
      if (t.bits == 16) return DType::kInt16;
      if (t.bits == 32) return DType::kInt32;
      if (t.bits == 64) return DType::kInt64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::kUInt8;
      if (t.bits == 16) return DType::kUInt16;
      if (t.bits == 32) return DType::kUInt32;
      if (t.bits == 64) return DType::kUInt64;
      break;
    case kDLComplex:
      if (t.bits == 64) return DType::kComplex64;
      break;
    case kDLPackBool:
      if (t.bits == 8) return DType::kBool;
      break;
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported DLPack dtype (code ", t.code, ", ", t.bits, " bits)"));
}

absl::StatusOr<DLDataType> DTypeToDLPack(DType t) {
  auto make = [](int code, int bits) {
    DLDataType d;
    d.code = static_cast<uint8_t>(code);
    d.bits = static_cast<uint8_t>(bits);
    d.lanes = 1;
    return d;
  };
  switch (t) {
    case DType::kUInt8: return make(kDLUInt, 8);
    case DType::kInt8: return make(kDLInt, 8);
    case DType::kInt16: return make(kDLInt, 16);
    case DType::kInt32: return make(kDLInt, 32);
    case DType::kInt64: return make(kDLInt, 64);
    case DType::kFloat16: return make(kDLFloat, 16);
    case DType::kFloat32: return make(kDLFloat, 32);
    case DType::kFloat64: return make(kDLFloat, 64);
    case DType::kComplex64: return make(kDLComplex, 64);
    case DType::kBool: return make(kDLPackBool, 8);
    case DType::kBFloat16: return make(kDLBfloat, 16);
    case DType::kUInt16: return make(kDLUInt, 16);
    case DType::kUInt32: return make(kDLUInt, 32);
    case DType::kUInt64: return make(kDLUInt, 64);
  }
  return absl::InvalidArgumentError(absl::StrCat("dtype ", DTypeName(t), " has no DLPack code"));
}

absl::StatusOr<Tensor> PlaceholderFromDLPack(const DLTensor& t, const std::string& what) {
  absl::StatusOr<DType> dtype = DTypeFromDLPack(t.dtype);
  if (!dtype.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", dtype.status().message()));
  ASSIGN_OR_RETURN(Shape s, ShapeOf(t, what));
  return Tensor::Placeholder(*dtype, s.sizes);
}

absl::StatusOr<Tensor> TensorFromDLPack(const DLTensor& t, const std::string& what, bool* copied) {
  if (copied != nullptr) *copied = false;
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost) {
    return absl::UnimplementedError(absl::StrCat(
        what, ": device type ", static_cast<int>(t.device.device_type),
        " (kiln's C API reads CPU tensors; move the tensor to the CPU first)"));
  }
  absl::StatusOr<DType> dtype_or = DTypeFromDLPack(t.dtype);
  if (!dtype_or.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", dtype_or.status().message()));
  }
  const DType dtype = *dtype_or;
  ASSIGN_OR_RETURN(Shape s, ShapeOf(t, what));
  const size_t es = DTypeSize(dtype);
  if (s.numel > 0 && t.data == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": no data"));
  }
  if (s.numel == 0) return Tensor::Empty(dtype, s.sizes);
  char* first = static_cast<char*>(t.data) + t.byte_offset;
  const std::optional<int64_t> extent = Extent(s);
  const uintptr_t address = reinterpret_cast<uintptr_t>(first);
  if (extent && address % es == 0) {
    // In place: the storage starts at the aligned address at or below
    // element 0 (kiln's CPU storage is 64-byte aligned).
    const uintptr_t base = address - address % Storage::kAlignment;
    const size_t lead = static_cast<size_t>(address - base);
    if (lead % es == 0) {
      char* base_ptr = first - lead;
      const size_t nbytes = lead + static_cast<size_t>(*extent) * es;
      // A non-null owner with no deleter: the caller owns the memory.
      std::shared_ptr<const void> owner(base_ptr, [](const void*) {});
      std::shared_ptr<Storage> storage = Storage::WrapCpu(base_ptr, nbytes, std::move(owner));
      if (storage != nullptr) {
        return Tensor::FromStorage(std::move(storage), dtype, s.sizes, s.strides,
                                   static_cast<int64_t>(lead / es));
      }
    }
  }
  if (copied != nullptr) *copied = true;
  Tensor out = Tensor::Empty(dtype, s.sizes);
  CopyStrided(first, s, es, static_cast<char*>(out.raw_data()));
  return out;
}

absl::StatusOr<DLManagedTensor*> TensorToDLPack(const Tensor& t) {
  if (!t.has_data()) return absl::InvalidArgumentError("output tensor has no data");
  DLDevice cpu;
  cpu.device_type = kDLCPU;
  cpu.device_id = 0;
  return NewManagedTensor(const_cast<void*>(t.raw_data()), cpu, t.dtype(), t.sizes(), t.strides(), t.storage());
}

absl::StatusOr<DLManagedTensor*> NewManagedTensor(void* data, DLDevice device, DType dtype,
                                                  std::vector<int64_t> sizes, std::vector<int64_t> strides,
                                                  std::shared_ptr<const void> owner) {
  if (owner == nullptr) return absl::InternalError("a DLPack tensor without an owner of its memory");
  if (strides.size() != sizes.size()) return absl::InternalError("DLPack tensor: strides and sizes differ in rank");
  ASSIGN_OR_RETURN(DLDataType dl_dtype, DTypeToDLPack(dtype));
  auto ctx = std::make_unique<ManagedContext>();
  ctx->owner = std::move(owner);
  ctx->shape = std::move(sizes);
  ctx->strides = std::move(strides);
  auto managed = std::make_unique<DLManagedTensor>();
  DLTensor& d = managed->dl_tensor;
  // Element 0 itself (byte_offset 0): some consumers ignore byte_offset.
  d.data = data;
  d.device = device;
  d.ndim = static_cast<int>(ctx->shape.size());
  d.dtype = dl_dtype;
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = 0;
  managed->manager_ctx = ctx.release();
  managed->deleter = &DeleteManaged;
  return managed.release();
}

}  // namespace kiln::capi
