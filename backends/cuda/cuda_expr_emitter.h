// CUDA C++ for the loop IR's expression trees: the shared C-family emitter
// (codegen/c_expr_emitter.h) with CUDA's dialect, plus vector loads.
//
// In lane mode (the vectorized paths: one thread computes `lanes` (kLanes,
// or kNarrowLanes in kernels over 16-bit floats) consecutive values of the
// lane variable), a load whose index has unit stride in the lane variable
// (and a lane-0 offset that is a multiple of the lanes) becomes one
// kiln_load4/kiln_load8 (16-byte accesses for 4-byte elements, and for
// 2-byte ones in groups of 8) when vector loads are enabled.
#ifndef KILN_BACKENDS_CUDA_CUDA_EXPR_EMITTER_H_
#define KILN_BACKENDS_CUDA_CUDA_EXPR_EMITTER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/c_dialect.h"
#include "codegen/c_expr_emitter.h"
#include "lowering/loop_ir.h"
#include "support/dtype.h"

namespace kiln::backends::cuda {

// Deeper expressions are rejected (no unbounded recursion on input data).
inline constexpr int kCudaMaxExprDepth = codegen::kMaxExprDepth;
// Consecutive elements per thread in the vectorized paths; pointwise
// kernels over 16-bit floats take kNarrowLanes (16-byte accesses).
inline constexpr int kLanes = 4;
inline constexpr int kNarrowLanes = 8;

// A buffer a kernel may load from (its `scalar`: a register holding the
// value at the current outer index).
using CudaBufferRef = codegen::CBufferRef;

// Generated CUDA C++ as NVRTC compiles it: CudaTypeName, CudaIntLiteral,
// CudaFloatLiteral, and libdevice's rintf/rsqrtf.
const codegen::CDialect& CudaDialect();

// Index analysis, used to pick vector accesses.
//  - DependsOnVar: whether `e` mentions index variable `var`.
//  - HasUnitStride: `index` = var + (terms without var).
//  - IsVectorIndex: HasUnitStride, and the other terms are always multiples
//    of `lanes` (so lane 0 of a group starting at a multiple of `lanes` is
//    aligned to `lanes` elements).
bool DependsOnVar(const lowering::ExprPtr& e, int var);
bool HasUnitStride(const lowering::ExprPtr& index, int var);
bool IsVectorIndex(const lowering::ExprPtr& index, int var, int lanes = kLanes);
//  - IsGroupContiguous: within every group of `lanes` values of `var`
//    (extent `extent`, groups starting at multiples of `lanes`), `index`
//    is lane 0's plus the lane, lane 0's a multiple of `lanes`: var written
//    as lanes*g + l and the index simplified over those ranges is a vector
//    index in l. Catches div/mod of the lane variable that stay within a
//    group: a heads merge reading [B, H, S, D] as [B, S, H*D] indexes
//    v % D + v // D * (S*D), contiguous over 8 lanes when D % 8 == 0.
bool IsGroupContiguous(const lowering::ExprPtr& index, int var, int lanes, int64_t extent);
// Every load node reachable from `e` (each node once); false when the tree
// is deeper than kCudaMaxExprDepth.
bool CollectLoadNodes(const lowering::ExprPtr& e, std::vector<const lowering::Expr*>* loads);

// Row kernels whose rows fit in registers: vector loads of read-only
// buffers are kept in per-thread arrays (indexed by the unrolled loop
// counter `l_j`) so that later passes over the same row (softmax's sum and
// normalize after its max) reuse them instead of reading memory again; so
// are the values of expensive ops (lowering::IsExpensiveOp: softmax's exp,
// computed by the sum pass, is not computed again by the normalize pass)
// and the element loads of read-only buffers that are not vector loads
// (rows of odd length), keyed by their expression over the bound
// variables, per lane.
// Every pass's fast path then runs under the same condition
// (kRowCacheCondition), so a later pass reads only slots an earlier one
// filled.
inline constexpr char kRowCacheCondition[] = "KILN_ROW_CACHE_ALIGNED";
struct RowCache {
  int trips = 0;                           // the arrays' length (unrolled loop trips)
  int lanes = kLanes;                      // values per group
  std::map<std::string, std::string> values;  // expression key -> array name
  std::set<std::string> buffers;           // read-only buffers that may be cached
  std::map<std::string, std::string> arrays;  // "buffer|index" -> array name
  std::string declarations;                // arrays not yet declared
  std::set<std::string> read;              // arrays some later pass reads
  int count = 0;
};

class CudaExprEmitter : public codegen::CExprEmitter {
 public:
  // `vars[i]`: the C expression (long long) bound to index variable v{i}.
  // `temp_counter` numbers temporaries across emitters of one kernel.
  CudaExprEmitter(const std::map<std::string, CudaBufferRef>* buffers, std::vector<std::string> vars,
                  int* temp_counter)
      : codegen::CExprEmitter(&CudaDialect(), buffers, std::move(vars), temp_counter), refs_(buffers) {}

  // Enters lane mode (see the file comment) for groups of `lanes` over a
  // lane variable of extent `lane_extent` (0: unknown).
  void SetLanes(int lane_var, bool vector_loads, int lanes = kLanes, int64_t lane_extent = 0) {
    SetLaneVar(lane_var);
    vector_loads_ = vector_loads;
    lanes_ = lanes;
    lane_extent_ = lane_extent;
  }
  // Lane mode inside an unrolled loop over `cache->trips` groups: cache
  // vector loads (see RowCache).
  void SetRowCache(RowCache* cache) { cache_ = cache; }

  // Buffers read with vector loads so far (the kernel checks their alignment).
  const std::set<std::string>& vector_buffers() const { return vector_buffers_; }
  // Records a vector access the caller emitted itself (a kiln_store4).
  void NoteVectorBuffer(const std::string& buffer) { vector_buffers_.insert(buffer); }
  // Load nodes whose values the kernel staged itself (kernel_transpose.h):
  // each reads as the given expression instead of from its buffer.
  void SetStagedLoads(std::map<const lowering::Expr*, std::string> staged) { staged_ = std::move(staged); }

 protected:
  absl::StatusOr<std::string> EmitLoad(const lowering::Expr& e, const CudaBufferRef& ref, int lane,
                                       int depth) override;
  std::optional<std::string> Reused(const lowering::Expr& e, int lane, int depth) override;
  void Emitted(const lowering::Expr& e, int lane, const std::string& value) override;

 private:
  // The index expression printed over the variable bindings (lane 0), for
  // cache keys; false for anything but small integer index arithmetic.
  bool IndexText(const lowering::Expr* e, int depth, std::string* out) const;
  // An expression over the variable bindings and the registers of scalar
  // refs, for RowCache's values; false when too deep, too long or opaque.
  bool ValueKey(const lowering::Expr* e, int depth, std::string* out) const;
  // The RowCache key of `e` when its value may be kept (an expensive op,
  // in a lane, with a cache); empty otherwise.
  std::string KeptValueKey(const lowering::Expr& e, int lane) const;
  // Whether load `e` (in lane mode) is read as a vector.
  bool IsVectorLoad(const lowering::Expr& e) const;

  const std::map<std::string, CudaBufferRef>* refs_;
  bool vector_loads_ = false;
  int lanes_ = kLanes;
  int64_t lane_extent_ = 0;
  std::set<std::string> own_arrays_;  // RowCache value arrays this emitter fills
  RowCache* cache_ = nullptr;
  std::map<const lowering::Expr*, std::string> vector_memo_;
  std::set<std::string> vector_buffers_;
  std::map<const lowering::Expr*, std::string> staged_;
};

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CUDA_EXPR_EMITTER_H_
