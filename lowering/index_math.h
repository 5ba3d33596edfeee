// Index arithmetic over the loop IR's int64 expressions: building flat
// offsets from per-dimension indices, recovering per-dimension indices from
// a flat offset (unravel), and simplifying both.
//
// Expressions are simplified as linear forms `c + sum(coef_i * atom_i)`,
// where an atom is an index variable (with its extent from `var_ranges`) or
// an opaque sub-expression (a floordiv/mod that did not cancel, a min/max,
// a load). Knowing each atom's range lets `(v0*12 + v1*4 + v2) // 4` become
// `v0*3 + v1` when v2 < 4, and `(...) % 3` vanish when the value is below 3,
// so a permute or reshape of a contiguous buffer indexes without div/mod.
// The scheduler relies on this when it inlines a producer into a consumer
// that reads it through a view (see schedule.h).
#ifndef KILN_LOWERING_INDEX_MATH_H_
#define KILN_LOWERING_INDEX_MATH_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

// `e` simplified; v_k ranges over [0, var_ranges[k]) (variables past the
// span's end are unbounded). Non-index expressions are returned as they are.
ExprPtr SimplifyIndex(const ExprPtr& e, absl::Span<const int64_t> var_ranges);

// offset + sum(indices[k] * strides[k]) of `layout`, skipping size-1 dims
// (their index is 0 in any in-bounds access), simplified.
ExprPtr FlatIndex(const Layout& layout, absl::Span<const ExprPtr> indices,
                  absl::Span<const int64_t> var_ranges);

// The per-dimension indices of element `flat` of a contiguous row-major
// tensor with `sizes`: (flat // stride_d) % size_d, simplified.
std::vector<ExprPtr> UnravelIndex(const ExprPtr& flat, absl::Span<const int64_t> sizes,
                                  absl::Span<const int64_t> var_ranges);

// v_first, ..., v_first+n-1.
std::vector<ExprPtr> Vars(int first, int n);

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_INDEX_MATH_H_
