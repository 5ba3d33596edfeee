// Tensor: the value type of tensor constants in the IR and of runtime values.
//
// A Tensor is a cheap-to-copy handle: dtype, sizes, strides and a storage
// offset over a reference-counted Storage. Copies share the storage (like
// at::Tensor). A *placeholder* tensor has a dtype and shape but no storage; it
// stands for a constant whose data the source text did not carry (TorchScript
// prints large constants as `<Tensor>`).
#ifndef KILN_SUPPORT_TENSOR_H_
#define KILN_SUPPORT_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "support/dtype.h"

namespace kiln {

// A block of bytes from a device allocator. CPU storage is 64-byte aligned.
class Storage {
 public:
  static constexpr size_t kAlignment = 64;
  // Zero-initialised CPU storage of `nbytes` bytes.
  static std::shared_ptr<Storage> AllocateCpu(size_t nbytes);
  // For callers that write every byte before reading any.
  static std::shared_ptr<Storage> AllocateCpuUninitialized(size_t nbytes);
  // CPU storage over `nbytes` at `data`, memory that `owner` keeps alive (a
  // mapped file's weights, read without copying). `data` must be
  // kAlignment-aligned like every CPU storage; nullptr otherwise.
  static std::shared_ptr<Storage> WrapCpu(void* data, size_t nbytes,
                                          std::shared_ptr<const void> owner);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }

 private:
  Storage(void* data, size_t nbytes) : data_(data), nbytes_(nbytes) {}
  void* data_;
  size_t nbytes_;
  std::shared_ptr<const void> owner_;  // set for wrapped memory (not freed here)
};

class Tensor {
 public:
  // An undefined tensor (no dtype meaning, no shape).
  Tensor() = default;

  // A new contiguous, zero-filled CPU tensor.
  static Tensor Empty(DType dtype, std::vector<int64_t> sizes);
  // A tensor of the given shape with no data (see file comment). Strides
  // default to contiguous.
  static Tensor Placeholder(DType dtype, std::vector<int64_t> sizes,
                            std::vector<int64_t> strides = {});
  // A contiguous tensor holding a copy of `bytes`, whose size must equal
  // numel * element size.
  static absl::StatusOr<Tensor> FromBytes(DType dtype,
                                          std::vector<int64_t> sizes,
                                          const void* bytes, size_t nbytes);
  // A 0-dim tensor.
  static Tensor ScalarDouble(double v, DType dtype = DType::kFloat64);
  static Tensor ScalarInt(int64_t v, DType dtype = DType::kInt64);

  // A tensor over `storage` (which must hold every element the sizes,
  // strides and offset reach; InvalidArgument otherwise).
  static absl::StatusOr<Tensor> FromStorage(std::shared_ptr<Storage> storage, DType dtype,
                                            std::vector<int64_t> sizes,
                                            std::vector<int64_t> strides,
                                            int64_t storage_offset);
  // A view over the same storage.
  static Tensor View(const Tensor& base, std::vector<int64_t> sizes,
                     std::vector<int64_t> strides, int64_t storage_offset);

  bool defined() const { return defined_; }
  bool has_data() const { return storage_ != nullptr; }
  bool is_placeholder() const { return defined_ && storage_ == nullptr; }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t storage_offset() const { return storage_offset_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t size(int64_t d) const { return sizes_[d]; }
  int64_t numel() const;
  size_t element_size() const { return DTypeSize(dtype_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Pointer to element 0 (storage base + offset); null for placeholders.
  void* raw_data();
  const void* raw_data() const;
  template <typename T>
  T* data() {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(raw_data());
  }

  // The element at a flat *logical* (row-major) index, widened to double /
  // int64. Works for any strides. Requires has_data().
  double GetDouble(int64_t flat_index) const;
  int64_t GetInt(int64_t flat_index) const;

  // A contiguous copy (or *this when already contiguous and offset 0).
  Tensor Contiguous() const;

  // Value equality: same dtype, sizes and elements (bitwise for floats, so
  // NaN == NaN and -0 != +0, as constant pooling needs). Placeholders are
  // equal to nothing but themselves (same storage-less identity is unknowable,
  // so they never compare equal).
  bool ValueEquals(const Tensor& other) const;
  // Consistent with ValueEquals.
  uint64_t ValueHash() const;

  static std::vector<int64_t> ContiguousStrides(absl::Span<const int64_t> sizes);

 private:
  bool defined_ = false;
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> sizes_;
  std::vector<int64_t> strides_;
  int64_t storage_offset_ = 0;
  std::shared_ptr<Storage> storage_;
};

}  // namespace kiln

#endif  // KILN_SUPPORT_TENSOR_H_
