#include "support/tensor.h"

#include <complex>
#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "support/hash.h"

namespace kiln {

std::shared_ptr<Storage> Storage::AllocateCpu(size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return std::shared_ptr<Storage>(new Storage(p, nbytes));
}

Storage::~Storage() { std::free(data_); }

std::vector<int64_t> Tensor::ContiguousStrides(absl::Span<const int64_t> sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    s *= sizes[i] > 1 ? sizes[i] : 1;
  }
  return strides;
}

Tensor Tensor::Empty(DType dtype, std::vector<int64_t> sizes) {
  Tensor t;
  t.defined_ = true;
  t.dtype_ = dtype;
  t.strides_ = ContiguousStrides(sizes);
  t.sizes_ = std::move(sizes);
  t.storage_ = Storage::AllocateCpu(static_cast<size_t>(t.numel()) * DTypeSize(dtype));
  return t;
}

Tensor Tensor::Placeholder(DType dtype, std::vector<int64_t> sizes,
                           std::vector<int64_t> strides) {
  Tensor t;
  t.defined_ = true;
  t.dtype_ = dtype;
  t.strides_ = strides.size() == sizes.size() ? std::move(strides)
                                              : ContiguousStrides(sizes);
  t.sizes_ = std::move(sizes);
  return t;
}

absl::StatusOr<Tensor> Tensor::FromBytes(DType dtype, std::vector<int64_t> sizes,
                                         const void* bytes, size_t nbytes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) return absl::InvalidArgumentError("negative tensor size");
    n *= s;
  }
  size_t want = static_cast<size_t>(n) * DTypeSize(dtype);
  if (want != nbytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor data has ", nbytes, " bytes but ", DTypeName(dtype), " of ",
        n, " elements needs ", want));
  }
  Tensor t = Empty(dtype, std::move(sizes));
  if (nbytes > 0) std::memcpy(t.raw_data(), bytes, nbytes);
  return t;
}

Tensor Tensor::ScalarDouble(double v, DType dtype) {
  Tensor t = Empty(dtype, {});
  switch (dtype) {
    case DType::kFloat32:
      *t.data<float>() = static_cast<float>(v);
      break;
    case DType::kFloat64:
      *t.data<double>() = v;
      break;
    default:  // integral dtypes truncate like a C cast
      return ScalarInt(static_cast<int64_t>(v), dtype);
  }
  return t;
}

Tensor Tensor::ScalarInt(int64_t v, DType dtype) {
  Tensor t = Empty(dtype, {});
  switch (dtype) {
    case DType::kUInt8: *t.data<uint8_t>() = static_cast<uint8_t>(v); break;
    case DType::kInt8: *t.data<int8_t>() = static_cast<int8_t>(v); break;
    case DType::kInt16: *t.data<int16_t>() = static_cast<int16_t>(v); break;
    case DType::kInt32: *t.data<int32_t>() = static_cast<int32_t>(v); break;
    case DType::kInt64: *t.data<int64_t>() = v; break;
    case DType::kBool: *t.data<bool>() = v != 0; break;
    case DType::kFloat32: *t.data<float>() = static_cast<float>(v); break;
    case DType::kFloat64: *t.data<double>() = static_cast<double>(v); break;
    default: break;  // half types: left zero; runtime owns conversions
  }
  return t;
}

Tensor Tensor::View(const Tensor& base, std::vector<int64_t> sizes,
                    std::vector<int64_t> strides, int64_t storage_offset) {
  Tensor t = base;
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.storage_offset_ = storage_offset;
  return t;
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  return n;
}

bool Tensor::is_contiguous() const {
  return strides_ == ContiguousStrides(sizes_);
}

void* Tensor::raw_data() {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + storage_offset_ * element_size();
}

const void* Tensor::raw_data() const {
  if (!storage_) return nullptr;
  return static_cast<const char*>(storage_->data()) +
         storage_offset_ * element_size();
}

namespace {

// Offset in elements of logical element `flat` under `sizes`/`strides`.
int64_t StridedOffset(const std::vector<int64_t>& sizes,
                      const std::vector<int64_t>& strides, int64_t flat) {
  int64_t off = 0;
  for (size_t d = sizes.size(); d-- > 0;) {
    int64_t idx = flat % sizes[d];
    flat /= sizes[d];
    off += idx * strides[d];
  }
  return off;
}

uint16_t LoadU16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

double Tensor::GetDouble(int64_t flat_index) const {
  const char* base = static_cast<const char*>(raw_data());
  const char* p = base + StridedOffset(sizes_, strides_, flat_index) * element_size();
  switch (dtype_) {
    case DType::kUInt8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::kInt8: return *reinterpret_cast<const int8_t*>(p);
    case DType::kInt16: return *reinterpret_cast<const int16_t*>(p);
    case DType::kInt32: return *reinterpret_cast<const int32_t*>(p);
    case DType::kInt64: return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case DType::kBool: return *reinterpret_cast<const bool*>(p) ? 1.0 : 0.0;
    case DType::kFloat16: return HalfToFloat(LoadU16(p));
    case DType::kBFloat16: return BFloat16ToFloat(LoadU16(p));
    case DType::kFloat32: return *reinterpret_cast<const float*>(p);
    case DType::kFloat64: return *reinterpret_cast<const double*>(p);
    case DType::kComplex64: return reinterpret_cast<const std::complex<float>*>(p)->real();
  }
  return 0;
}

int64_t Tensor::GetInt(int64_t flat_index) const {
  const char* base = static_cast<const char*>(raw_data());
  const char* p = base + StridedOffset(sizes_, strides_, flat_index) * element_size();
  switch (dtype_) {
    case DType::kUInt8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::kInt8: return *reinterpret_cast<const int8_t*>(p);
    case DType::kInt16: return *reinterpret_cast<const int16_t*>(p);
    case DType::kInt32: return *reinterpret_cast<const int32_t*>(p);
    case DType::kInt64: return *reinterpret_cast<const int64_t*>(p);
    case DType::kBool: return *reinterpret_cast<const bool*>(p) ? 1 : 0;
    default: return static_cast<int64_t>(GetDouble(flat_index));
  }
}

Tensor Tensor::Contiguous() const {
  if (!has_data() || (is_contiguous() && storage_offset_ == 0)) return *this;
  Tensor out = Empty(dtype_, sizes_);
  const size_t es = element_size();
  const char* src = static_cast<const char*>(raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const int64_t n = numel();
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(dst + i * es, src + StridedOffset(sizes_, strides_, i) * es, es);
  }
  return out;
}

bool Tensor::ValueEquals(const Tensor& other) const {
  if (!defined_ || !other.defined_) return defined_ == other.defined_;
  if (dtype_ != other.dtype_ || sizes_ != other.sizes_) return false;
  if (!has_data() || !other.has_data()) return false;
  Tensor a = Contiguous();
  Tensor b = other.Contiguous();
  size_t n = static_cast<size_t>(numel()) * element_size();
  return n == 0 || std::memcmp(a.raw_data(), b.raw_data(), n) == 0;
}

uint64_t Tensor::ValueHash() const {
  uint64_t h = HashCombine(static_cast<uint64_t>(dtype_), sizes_.size());
  for (int64_t s : sizes_) h = HashCombine(h, static_cast<uint64_t>(s));
  if (!has_data()) return h;
  Tensor c = Contiguous();
  return HashCombine(
      h, HashBytes(c.raw_data(), static_cast<size_t>(numel()) * element_size()));
}

}  // namespace kiln
