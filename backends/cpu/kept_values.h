// Values a row kernel computes once instead of twice (issue 12).
//
// In a kernel whose members share an outer loop nest (softmax: max, sum of
// exp(x - max), then exp(x - max) / sum), a reduction member's body and a
// later pointwise member may contain the same expensive subexpression over
// the same elements. The reduction's pass then stores that value into the
// pointwise member's own output buffer, at the element the pointwise writes,
// and the pointwise reads it back instead of recomputing it:
//
//   sum pass:        t = exp(x[i] - max); acc += t; out[i] = t;
//   normalize pass:  out[i] = out[i] / sum;
//
// The rule (PlanKeptValues):
//  * the reduction comes before the pointwise in the kernel, and its index
//    space (ranges then reduction_ranges) and the pointwise's ranges have the
//    same non-unit sizes in the same order; both are rewritten over those
//    dims (unit dims are index 0), so "the same element" is the same
//    canonical index;
//  * the subexpression is structurally identical in both canonical bodies,
//    contains an expensive op (lowering::IsExpensiveOp; storing a cheap one
//    would cost more than recomputing it) and has the output buffer's float
//    dtype; the largest such subexpression is kept, one per pointwise;
//  * the output buffer is not among the kernel's reads. Nothing else in the
//    kernel loads it (members only read earlier members), and the memory
//    plan never lets a kernel's written buffer share storage with one it
//    reads (a kernel's outputs are allocated before its call, its inputs
//    freed after it), so the early stores clobber nothing the kernel reads.
//
// Each iteration of the shared outer nest runs the reduction's pass before
// the pointwise's, on the same thread, so every element is stored before it
// is read back, and the row is still in cache.
#ifndef KILN_BACKENDS_CPU_KEPT_VALUES_H_
#define KILN_BACKENDS_CPU_KEPT_VALUES_H_

#include <string>
#include <vector>

#include "lowering/loop_ir.h"
#include "lowering/schedule.h"

namespace kiln::backends::cpu {

struct KeptValue {
  std::string reduction;  // the reduction member whose pass stores the value
  // The node of the reduction's body whose value is stored (emitted with the
  // body, so it is computed once).
  lowering::ExprPtr value;
  // The flat element offset of `target`'s buffer to store at, over the
  // reduction's index variables.
  lowering::ExprPtr store_index;
  std::string target;  // the pointwise member whose output buffer holds it
  // The pointwise's body with the subexpression replaced by a load of its
  // own buffer at its own element.
  lowering::ExprPtr target_body;
};

// The kept values of `kernel` (at most one per pointwise member), for a
// kernel whose members run inside one shared outer nest. Members that do
// not match the rule above get none; this never fails.
std::vector<KeptValue> PlanKeptValues(const lowering::LoopGraph& graph, const lowering::FusedKernel& kernel);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_KEPT_VALUES_H_
