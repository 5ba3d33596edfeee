#include "backends/cpu/layout_util.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::backends::cpu {

int64_t StorageElementsOf(const lowering::Layout& l) {
  if (l.sizes.size() != l.strides.size() || l.offset < 0) return -1;
  int64_t extent = 0;
  for (size_t i = 0; i < l.sizes.size(); ++i) {
    if (l.sizes[i] < 0 || l.strides[i] < 0) return -1;
    if (l.sizes[i] == 0) return 0;
    const int64_t span = l.sizes[i] - 1;
    if (span != 0 && l.strides[i] > (std::numeric_limits<int64_t>::max() / 4 - extent) / span) return -1;
    extent += span * l.strides[i];
  }
  if (l.offset > std::numeric_limits<int64_t>::max() / 4 - extent) return -1;
  return l.offset + extent + 1;
}

int64_t StorageBytesOf(const lowering::Layout& l) {
  const int64_t n = StorageElementsOf(l);
  return n < 0 ? -1 : n * static_cast<int64_t>(DTypeSize(l.dtype));
}

bool IsContiguousLayout(const lowering::Layout& l) {
  if (l.sizes.size() != l.strides.size()) return false;
  int64_t expected = 1;
  for (size_t i = l.sizes.size(); i-- > 0;) {
    if (l.sizes[i] != 1 && l.strides[i] != expected) return false;
    expected *= l.sizes[i];
  }
  return true;
}

std::string LayoutString(const lowering::Layout& l) {
  return absl::StrCat(DTypeName(l.dtype), "[", absl::StrJoin(l.sizes, ", "), "] strides [",
                      absl::StrJoin(l.strides, ", "), "] offset ", l.offset);
}

const lowering::Buffer* FindBuffer(const lowering::LoopGraph& graph, const std::string& name) {
  for (const lowering::Buffer& b : graph.buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

}  // namespace kiln::backends::cpu
