// Scheduling: which computed buffers run together in one generated kernel,
// and in what order everything runs.
//
// Fusion rules (Inductor's, simplified): a pointwise buffer is inlined into
// its consumers' inner functions (expression substitution, the buffer
// disappears) when it has a single use, or when it is cheap (no
// transcendental ops) and is read at most a few times; reductions fuse with
// their pointwise prologue (inlined) and epilogue (a following pointwise over
// the same output index space joins the same kernel). Nothing fuses across an
// extern kernel. Kernels are named after the ops they hold:
// cpp_fused_add_mul_tanh_0 (device prefix + sorted unique origins + index).
//
// Inlining works on flat loads: a consumer's load of producer P at flat
// offset f becomes P's body with P's index variables replaced by
// unravel(f, P's sizes) (computed buffers are contiguous), simplified with
// the consumer's variable ranges (index_math.h) so that reads through a
// permute/expand/slice/reshape come out as plain affine indices. Buffers
// that must exist are never inlined: graph outputs, extern arguments, bases
// of views that are used, and anything whose inlined tree would exceed a
// size cap. Dead buffers (not reaching an output) are dropped first.
#ifndef KILN_LOWERING_SCHEDULE_H_
#define KILN_LOWERING_SCHEDULE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

struct FusedKernel {
  std::string name;
  std::string device = "cpu";
  // Computed buffers this kernel writes, in execution order (one loop nest
  // each, or a shared nest when the index spaces match).
  std::vector<std::string> buffers;
  // Buffers it reads that other steps produce (inputs, constants, externs,
  // views, earlier kernels' buffers), sorted.
  std::vector<std::string> reads;
  // Added by lowering: the loop nest the buffers share. Every buffer's
  // `ranges` is outer_ranges followed by inner dims: none for a pointwise
  // kernel and for a reduction's same-space epilogue; trailing size-1
  // (keepdim) dims for a reduction, whose reduction_ranges run inside; the
  // reduction_ranges themselves for an epilogue over the reduced input space
  // (softmax's final pointwise, layer_norm's normalize). Inside one outer
  // iteration the buffers run in `buffers` order and read each other only
  // at that outer index, so one parallel loop over outer_ranges with each
  // buffer's inner loops in sequence computes the kernel.
  std::vector<int64_t> outer_ranges;
};

struct ScheduleStep {
  enum class Kind { kKernel, kExtern };
  Kind kind = Kind::kKernel;
  FusedKernel kernel;  // kKernel
  std::string buffer;  // kExtern: the buffer holding the call
};

struct Schedule {
  std::vector<ScheduleStep> steps;
};

// Fuses and orders `graph` (inlined buffers are removed from it). Views need
// no step: their base is computed before them.
absl::StatusOr<Schedule> ScheduleGraph(LoopGraph& graph, const std::string& device = "cpu");

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_SCHEDULE_H_
