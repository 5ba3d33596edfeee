// Layout arithmetic the wrapper needs, overflow-checked.
//
// Wrapper programs also arrive from protobuf (untrusted), so every size here
// is computed with overflow checks instead of lowering::Layout's plain
// members; the wrapper package therefore never needs lowering's .cc files.
#ifndef KILN_WRAPPER_LAYOUT_MATH_H_
#define KILN_WRAPPER_LAYOUT_MATH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"

namespace kiln::wrapper {

// Largest rank a wrapper layout may have (PyTorch's limit is 64 as well).
inline constexpr int kMaxLayoutRank = 64;

// A contiguous layout (row-major strides, offset 0).
lowering::Layout ContiguousLayout(DType dtype, std::vector<int64_t> sizes,
                                  std::string device = "cpu");

// Checks rank, sizes >= 0, one non-negative stride per size, offset >= 0, a
// known dtype, a non-empty device name, and that the storage byte count fits
// in int64. `what` names the buffer in the error.
absl::Status ValidateLayout(const lowering::Layout& layout, const std::string& what);

// Elements/bytes of storage the layout touches (offset + extent; 0 when it
// has no elements). Errors on overflow or invalid layouts.
absl::StatusOr<int64_t> StorageElementsChecked(const lowering::Layout& layout);
absl::StatusOr<int64_t> StorageBytesChecked(const lowering::Layout& layout);
// The same, 0 for layouts that fail validation (for reports on programs that
// were validated before).
int64_t StorageBytesOrZero(const lowering::Layout& layout);
int64_t NumelOrZero(const lowering::Layout& layout);

// "Float[2, 3] strides [3, 1] offset 0 cpu" (lowering::Layout::ToString's
// format).
std::string FormatLayout(const lowering::Layout& layout);
bool SameLayout(const lowering::Layout& a, const lowering::Layout& b);
bool IsContiguousLayout(const lowering::Layout& layout);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_LAYOUT_MATH_H_
