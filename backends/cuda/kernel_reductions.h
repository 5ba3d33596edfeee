// Reduction kernels of the CUDA codegen: the members of a kernel with
// reductions (reductions, per-row pointwise values, per-element epilogues
// over the reduced row) emitted for one outer index, cooperatively by a
// block or a warp (warp shuffles, shared-memory block reduce) or by one
// thread. See README.md "Kernel codegen".
#ifndef KILN_BACKENDS_CUDA_KERNEL_REDUCTIONS_H_
#define KILN_BACKENDS_CUDA_KERNEL_REDUCTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/kernel_loops.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"

namespace kiln::backends::cuda {

// Rows of at most this many groups per thread are unrolled and cached in
// registers (kLanes elements per group and cached buffer).
inline constexpr int64_t kMaxRowTrips = 4;

enum class MemberKind { kReduction, kScalar, kRow };

struct KernelMember {
  const lowering::Buffer* buf;
  MemberKind kind;
};

struct ReductionKernelShape {
  std::vector<int64_t> outer;
  std::vector<int64_t> ranges;            // the reductions' output ranges (outer + unit dims)
  std::vector<int64_t> reduction_ranges;  // their reduced space
  std::vector<KernelMember> members;
};

// Who computes one outer index of a reduction kernel: a block, a warp (short
// rows, several per block), or a single thread (strided reductions).
enum class Cooperation { kBlock, kWarp, kThread };

// Checks and sorts the members of a kernel that has a reduction: every
// reduction over the same spaces, pointwise members per outer index
// (kScalar) or per element of the reduced row (kRow).
absl::StatusOr<ReductionKernelShape> ClassifyReductionKernel(const lowering::FusedKernel& kernel,
                                                             const std::vector<const lowering::Buffer*>& bufs);

// Whether a reduction body reads contiguous elements along its innermost
// reduced dimension (then a block per row reads coalesced memory), also
// where the index is clamped into pieces (a concatenation along the row).
bool RowIsContiguous(const ReductionKernelShape& s);

// Emits the members for one outer index (bound to l_o<i> variables).
// `threads`: the cooperating threads (block size, 32, 1); thread 0 of the
// group stores per-row values, every thread keeps them in registers.
absl::Status EmitReductionMembers(KernelContext& ctx, const lowering::FusedKernel& kernel,
                                  const ReductionKernelShape& s, Cooperation coop, int threads,
                                  const std::string& indent, std::string* out);

// Declares l_o<i> for the outer index held in `flat`, unravelled in 32 bits
// when `narrow` (a 64-bit division by a constant is a multi-word multiply
// sequence, paid per row by every thread of a row).
std::string UnravelOuter(const std::vector<int64_t>& outer, const std::string& flat, const std::string& indent,
                         bool narrow = false);

inline int64_t NextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_REDUCTIONS_H_
