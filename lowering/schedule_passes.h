// The graph-rewriting half of scheduling (schedule.h): dead-buffer
// elimination and pointwise inlining. Internal to the lowering package.
#ifndef KILN_LOWERING_SCHEDULE_PASSES_H_
#define KILN_LOWERING_SCHEDULE_PASSES_H_

#include <cstdint>
#include <vector>

#include "lowering/loop_ir.h"

namespace kiln::lowering {

// Drops computed, view, extern and constant buffers that no graph output
// depends on (inputs always stay).
void EliminateDeadBuffers(LoopGraph& graph);

// Inlines pointwise buffers into their consumers (rules in schedule.h) and
// removes them. Returns how many were inlined.
int InlinePointwise(LoopGraph& graph);

// The index-variable ranges of a computed buffer: ranges, then a
// reduction's reduction_ranges.
std::vector<int64_t> VarRanges(const Buffer& b);

// The body of a computed buffer (null for other kinds).
const ExprPtr* BodyOf(const Buffer& b);
ExprPtr* MutableBodyOf(Buffer& b);

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_SCHEDULE_PASSES_H_
