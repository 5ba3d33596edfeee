// The loop machinery of the CUDA kernel codegen: a loop over an index
// space in groups of lanes (4, or 8 for 16-bit floats) consecutive elements of its innermost non-unit
// dimension, with a vectorized fast path (all lanes, 16-byte accesses where
// contiguous and aligned) and a scalar path (tails, misaligned pointers),
// and what runs per element (stores of pointwise members; reductions add
// their own LoopBody in kernel_reductions.cc).
#ifndef KILN_BACKENDS_CUDA_KERNEL_LOOPS_H_
#define KILN_BACKENDS_CUDA_KERNEL_LOOPS_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cuda/cuda_expr_emitter.h"
#include "lowering/loop_ir.h"

namespace kiln::backends::cuda {

// "cuda codegen: kernel NAME: " for error messages.
std::string KernelErrorPrefix(const std::string& kernel_name);

// Element count of an index space; error past int64 or for negative sizes.
absl::StatusOr<int64_t> SpaceSize(const std::vector<int64_t>& ranges, const std::string& what);
bool IsContiguousLayout(const lowering::Layout& l);
// The flat storage offset a buffer stores index (v0..v{k-1}) of `ranges` at.
absl::StatusOr<lowering::ExprPtr> StoreIndex(const lowering::Buffer& buf, const std::vector<int64_t>& ranges);
// `value` (of dtype `from`) converted for a store of dtype `to`.
std::string StoredValue(const std::string& value, DType from, DType to, const std::string& to_type);

// Everything one kernel's generation shares.
struct KernelContext {
  std::string name;
  std::map<std::string, CudaBufferRef> refs;
  std::set<std::string> vector_buffers;  // accessed with 16-byte vectors: alignment checked
  int temps = 0;
  // Elements per group of the vectorized paths: kLanes, or kNarrowLanes
  // in pointwise kernels over 16-bit floats (16-byte accesses).
  int lanes = kLanes;
};

// ---------------------------------------------------------------------------
// Loops over an index space in groups of ctx.lanes along its innermost non-unit
// dimension. `vars` binds the body's index variables: the loop's own dims
// get names here; other entries (outer indices, unit dims) are given.

struct SpaceLoop {
  std::vector<int64_t> sizes;  // the space
  std::vector<int> vars;       // the body variable each dim binds
  std::vector<std::string> bindings;  // per body variable; loop dims filled by EmitSpaceLoop
  std::string prefix;          // name prefix of the loop's variables ("l_v", "l_r")
  std::string start, stride;   // of the flat group counter
  bool lanes_allowed = true;
  // > 0: the loop runs at most this many trips per thread; it is emitted as
  // an unrolled loop over l_j (and `cache`, when set, keeps rows in registers).
  int unrolled_trips = 0;
  RowCache* cache = nullptr;
};

// What runs for each element (or group of ctx.lanes elements) of a loop.
class LoopBody {
 public:
  virtual ~LoopBody() = default;
  // `lanes`: the lanes to compute (0..ctx.lanes-1 in the fast path, {0} in the
  // scalar path); `lane_var` is the grouped variable (-1 without lanes);
  // `pos[k]`: lane k's row-major position in the space.
  virtual absl::Status Emit(CudaExprEmitter& em, int lanes, int lane_var, bool vector,
                            const std::vector<std::string>& pos, const std::string& indent, std::string* out) = 0;
};

// Emits the loop (text at `indent`); `loop.bindings` gets the loop's own
// variables.
absl::StatusOr<std::string> EmitSpaceLoop(KernelContext& ctx, SpaceLoop loop, LoopBody& body,
                                          const std::string& indent);

// Pointwise members stored at each element of the loop.
class StoreBody : public LoopBody {
 public:
  struct Member {
    const lowering::Buffer* buf;
    lowering::ExprPtr body;
    lowering::ExprPtr store_index;
  };
  explicit StoreBody(KernelContext* ctx, std::vector<Member> members) : ctx_(ctx), members_(std::move(members)) {}

  absl::Status Emit(CudaExprEmitter& em, int lanes, int lane_var, bool vector, const std::vector<std::string>& pos,
                    const std::string& indent, std::string* out) override;

 private:
  KernelContext* ctx_;
  std::vector<Member> members_;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_LOOPS_H_
