#include "support/tensor.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"
#include "support/hash.h"
#include "xxhash.h"

namespace kiln {

std::shared_ptr<Storage> Storage::AllocateCpu(size_t nbytes) {
  std::shared_ptr<Storage> s = AllocateCpuUninitialized(nbytes);
  std::memset(s->data(), 0, nbytes);
  return s;
}

std::shared_ptr<Storage> Storage::AllocateCpuUninitialized(size_t nbytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded == 0) rounded = kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  return std::shared_ptr<Storage>(new Storage(p, nbytes));
}

std::shared_ptr<Storage> Storage::WrapCpu(void* data, size_t nbytes,
                                          std::shared_ptr<const void> owner) {
  if (reinterpret_cast<uintptr_t>(data) % kAlignment != 0) return nullptr;
  std::shared_ptr<Storage> s(new Storage(data, nbytes));
  s->owner_ = std::move(owner);
  return s;
}

Storage::~Storage() {
  if (!owner_) std::free(data_);
}

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
  Tensor t;
  t.defined_ = true;
  t.dtype_ = dtype;
  t.strides_ = ContiguousStrides(sizes);
  t.sizes_ = std::move(sizes);
  // Every byte is written next: zero-filling first would touch each page twice.
  t.storage_ = Storage::AllocateCpuUninitialized(nbytes);
  if (nbytes > 0) std::memcpy(t.raw_data(), bytes, nbytes);
  return t;
}

namespace {

template <typename T>
void Store(Tensor& t, T v) {
  std::memcpy(t.raw_data(), &v, sizeof(T));
}

}  // namespace

Tensor Tensor::ScalarDouble(double v, DType dtype) {
  Tensor t = Empty(dtype, {});
  switch (dtype) {
    case DType::kFloat32: Store(t, static_cast<float>(v)); break;
    case DType::kFloat64: Store(t, v); break;
    case DType::kFloat16: Store(t, DoubleToHalfBits(v)); break;
    case DType::kBFloat16: Store(t, DoubleToBFloat16Bits(v)); break;
    case DType::kComplex64: Store(t, std::complex<float>(static_cast<float>(v), 0.0f)); break;
    case DType::kBool: Store(t, v != 0); break;
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64: {
      // Integral dtypes truncate like a C cast (saturating; NaN -> 0).
      int64_t i = 0;
      if (std::isnan(v)) i = 0;
      else if (v >= 9.2233720368547758e18) i = INT64_MAX;
      else if (v <= -9.2233720368547758e18) i = INT64_MIN;
      else i = static_cast<int64_t>(v);
      return ScalarInt(i, dtype);
    }
  }
  return t;
}

Tensor Tensor::ScalarInt(int64_t v, DType dtype) {
  Tensor t = Empty(dtype, {});
  switch (dtype) {
    case DType::kUInt8: Store(t, static_cast<uint8_t>(v)); break;
    case DType::kInt8: Store(t, static_cast<int8_t>(v)); break;
    case DType::kInt16: Store(t, static_cast<int16_t>(v)); break;
    case DType::kInt32: Store(t, static_cast<int32_t>(v)); break;
    case DType::kInt64: Store(t, v); break;
    case DType::kUInt16: Store(t, static_cast<uint16_t>(v)); break;
    case DType::kUInt32: Store(t, static_cast<uint32_t>(v)); break;
    case DType::kUInt64: Store(t, static_cast<uint64_t>(v)); break;
    case DType::kBool: Store(t, v != 0); break;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kComplex64: return ScalarDouble(static_cast<double>(v), dtype);
  }
  return t;
}

absl::StatusOr<Tensor> Tensor::FromStorage(std::shared_ptr<Storage> storage, DType dtype,
                                           std::vector<int64_t> sizes,
                                           std::vector<int64_t> strides,
                                           int64_t storage_offset) {
  if (storage == nullptr) return absl::InvalidArgumentError("tensor over a null storage");
  if (strides.size() != sizes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor has ", sizes.size(), " sizes but ",
                                                   strides.size(), " strides"));
  }
  if (storage_offset < 0) return absl::InvalidArgumentError("negative storage offset");
  // The largest element index the view reaches, with overflow checks (the
  // sizes may come from a file).
  int64_t last = storage_offset;
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0 || strides[d] < 0) {
      return absl::InvalidArgumentError("negative tensor size or stride");
    }
    if (sizes[d] == 0) empty = true;
    int64_t reach = 0;
    if (sizes[d] > 0 && (__builtin_mul_overflow(sizes[d] - 1, strides[d], &reach) ||
                         __builtin_add_overflow(last, reach, &last))) {
      return absl::InvalidArgumentError("tensor extent overflows");
    }
  }
  const uint64_t elem = DTypeSize(dtype);
  if (!empty) {
    const uint64_t end = (static_cast<uint64_t>(last) + 1) * elem;
    if (static_cast<uint64_t>(last) + 1 > UINT64_MAX / elem || end > storage->nbytes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          DTypeName(dtype), " tensor reaches byte ", end, " of a storage of ",
          storage->nbytes(), " bytes"));
    }
  }
  Tensor t;
  t.defined_ = true;
  t.dtype_ = dtype;
  t.sizes_ = std::move(sizes);
  t.strides_ = std::move(strides);
  t.storage_offset_ = storage_offset;
  t.storage_ = std::move(storage);
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

template <typename T>
T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

double Tensor::GetDouble(int64_t flat_index) const {
  const char* base = static_cast<const char*>(raw_data());
  const char* p = base + StridedOffset(sizes_, strides_, flat_index) * element_size();
  switch (dtype_) {
    case DType::kUInt8: return Load<uint8_t>(p);
    case DType::kInt8: return Load<int8_t>(p);
    case DType::kInt16: return Load<int16_t>(p);
    case DType::kInt32: return Load<int32_t>(p);
    case DType::kInt64: return static_cast<double>(Load<int64_t>(p));
    case DType::kUInt16: return Load<uint16_t>(p);
    case DType::kUInt32: return Load<uint32_t>(p);
    case DType::kUInt64: return static_cast<double>(Load<uint64_t>(p));
    case DType::kBool: return Load<bool>(p) ? 1.0 : 0.0;
    case DType::kFloat16: return HalfBitsToFloat(LoadU16(p));
    case DType::kBFloat16: return BFloat16BitsToFloat(LoadU16(p));
    case DType::kFloat32: return Load<float>(p);
    case DType::kFloat64: return Load<double>(p);
    case DType::kComplex64: return Load<std::complex<float>>(p).real();
  }
  return 0;
}

int64_t Tensor::GetInt(int64_t flat_index) const {
  const char* base = static_cast<const char*>(raw_data());
  const char* p = base + StridedOffset(sizes_, strides_, flat_index) * element_size();
  switch (dtype_) {
    case DType::kUInt8: return Load<uint8_t>(p);
    case DType::kInt8: return Load<int8_t>(p);
    case DType::kInt16: return Load<int16_t>(p);
    case DType::kInt32: return Load<int32_t>(p);
    case DType::kInt64: return Load<int64_t>(p);
    case DType::kUInt16: return Load<uint16_t>(p);
    case DType::kUInt32: return Load<uint32_t>(p);
    // Values past INT64_MAX keep their bit pattern (two's complement wrap).
    case DType::kUInt64: return static_cast<int64_t>(Load<uint64_t>(p));
    case DType::kBool: return Load<bool>(p) ? 1 : 0;
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kComplex64: {
      // Saturating, NaN -> 0: a plain cast of an out-of-range double is UB.
      const double v = GetDouble(flat_index);
      if (std::isnan(v)) return 0;
      if (v >= 9.2233720368547758e18) return INT64_MAX;
      if (v <= -9.2233720368547758e18) return INT64_MIN;
      return static_cast<int64_t>(v);
    }
  }
  return 0;
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
  // XXH3: weights are hashed whole (graph fingerprints of every fixpoint
  // iteration), and at ~10x the speed of HashBytes' serial multiply chain.
  return HashCombine(h, XXH3_64bits(c.raw_data(), static_cast<size_t>(numel()) * element_size()));
}

}  // namespace kiln
