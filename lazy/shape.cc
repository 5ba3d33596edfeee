#include "lazy/shape.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/hash.h"

namespace kiln::lazy {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

uint64_t Shape::Hash() const {
  uint64_t h = HashMix(static_cast<uint64_t>(DTypeCode(dtype)) + 0x51);
  h = HashCombine(h, sizes.size());
  for (int64_t s : sizes) h = HashCombine(h, static_cast<uint64_t>(s));
  return h;
}

std::string Shape::ToString() const {
  return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(sizes, ", "), "]");
}

}  // namespace kiln::lazy
