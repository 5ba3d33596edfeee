#include "wrapper/layout_math.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::wrapper {

using lowering::Layout;

Layout ContiguousLayout(DType dtype, std::vector<int64_t> sizes, std::string device) {
  Layout layout;
  layout.device = std::move(device);
  layout.dtype = dtype;
  layout.strides.assign(sizes.size(), 1);
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    layout.strides[i] = stride;
    // On overflow the stride stays put; ValidateLayout rejects such sizes.
    if (sizes[i] > 1 && __builtin_mul_overflow(stride, sizes[i], &stride)) break;
  }
  layout.sizes = std::move(sizes);
  return layout;
}

absl::StatusOr<int64_t> StorageElementsChecked(const Layout& layout) {
  if (layout.sizes.size() > static_cast<size_t>(kMaxLayoutRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("layout rank ", layout.sizes.size(), " exceeds ", kMaxLayoutRank));
  }
  if (layout.strides.size() != layout.sizes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("layout has ", layout.sizes.size(),
                                                   " sizes but ", layout.strides.size(),
                                                   " strides"));
  }
  if (layout.offset < 0) {
    return absl::InvalidArgumentError(absl::StrCat("negative layout offset ", layout.offset));
  }
  int64_t last = 0;  // largest element index touched, relative to offset
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    const int64_t size = layout.sizes[i];
    const int64_t stride = layout.strides[i];
    if (size < 0) return absl::InvalidArgumentError(absl::StrCat("negative size ", size));
    if (stride < 0) return absl::InvalidArgumentError(absl::StrCat("negative stride ", stride));
    if (size == 0) return 0;
    int64_t extent = 0;
    if (__builtin_mul_overflow(size - 1, stride, &extent) ||
        __builtin_add_overflow(last, extent, &last)) {
      return absl::InvalidArgumentError("layout extent overflows int64");
    }
  }
  int64_t total = 0;
  if (__builtin_add_overflow(layout.offset, last, &total) ||
      __builtin_add_overflow(total, int64_t{1}, &total)) {
    return absl::InvalidArgumentError("layout extent overflows int64");
  }
  return total;
}

absl::StatusOr<int64_t> StorageBytesChecked(const Layout& layout) {
  const int64_t element_size = static_cast<int64_t>(DTypeSize(layout.dtype));
  if (element_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown dtype code ", static_cast<int>(layout.dtype)));
  }
  auto elements = StorageElementsChecked(layout);
  if (!elements.ok()) return elements.status();
  int64_t bytes = 0;
  if (__builtin_mul_overflow(*elements, element_size, &bytes)) {
    return absl::InvalidArgumentError("layout byte size overflows int64");
  }
  return bytes;
}

absl::Status ValidateLayout(const Layout& layout, const std::string& what) {
  if (layout.device.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": layout has an empty device"));
  }
  auto bytes = StorageBytesChecked(layout);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", bytes.status().message()));
  }
  int64_t numel = 1;
  for (int64_t size : layout.sizes) {
    if (__builtin_mul_overflow(numel, size, &numel)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": element count overflows int64"));
    }
  }
  return absl::OkStatus();
}

int64_t StorageBytesOrZero(const Layout& layout) {
  auto bytes = StorageBytesChecked(layout);
  return bytes.ok() ? *bytes : 0;
}

int64_t NumelOrZero(const Layout& layout) {
  int64_t numel = 1;
  for (int64_t size : layout.sizes) {
    if (size < 0 || __builtin_mul_overflow(numel, size, &numel)) return 0;
  }
  return numel;
}

std::string FormatLayout(const Layout& layout) {
  return absl::StrCat(DTypeName(layout.dtype), "[", absl::StrJoin(layout.sizes, ", "),
                      "] strides [", absl::StrJoin(layout.strides, ", "), "] offset ",
                      layout.offset, " ", layout.device);
}

bool SameLayout(const Layout& a, const Layout& b) {
  return a.device == b.device && a.dtype == b.dtype && a.sizes == b.sizes &&
         a.strides == b.strides && a.offset == b.offset;
}

bool IsContiguousLayout(const Layout& layout) {
  if (layout.strides.size() != layout.sizes.size()) return false;
  int64_t expected = 1;
  for (size_t i = layout.sizes.size(); i-- > 0;) {
    if (layout.sizes[i] == 1) continue;
    if (layout.strides[i] != expected) return false;
    if (__builtin_mul_overflow(expected, layout.sizes[i], &expected)) return false;
  }
  return true;
}

}  // namespace kiln::wrapper
