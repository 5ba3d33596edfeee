// Memory planning over wrapper lines (Inductor's memory_plan_reuse and
// memory_planning.py's pool planner), and the memory report.
//
//   PlanBufferReuse  rewrites AllocateLine / FreeIfNotReusedLine pairs in
//                    place: a freed storage goes into a last-in-first-out
//                    pool keyed by (device, dtype, storage bytes, alignment);
//                    a later AllocateLine with the same key takes it over
//                    (ReuseLine, and the free is marked is_reused).
//   PlanMemoryPool   packs the live ranges of every planned storage into one
//                    arena, largest first, and gives each its byte offset.
//   ReportMemory     planned peak bytes against the sum of all buffers.
//
// All three validate the program first (wrapper/validate.h) and never crash
// on bad input.
#ifndef KILN_WRAPPER_MEMORY_PLANNING_H_
#define KILN_WRAPPER_MEMORY_PLANNING_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {

// kiln allocates every buffer at this alignment (bytes).
inline constexpr int64_t kBufferAlignment = 64;

// Inductor's buffer_reuse_key. Storage sizes are static in kiln, so they
// compare as numbers.
struct ReuseKey {
  std::string device;
  DType dtype = DType::kFloat32;
  int64_t storage_bytes = 0;
  int64_t alignment = kBufferAlignment;

  friend bool operator==(const ReuseKey& a, const ReuseKey& b) {
    return a.device == b.device && a.dtype == b.dtype && a.storage_bytes == b.storage_bytes &&
           a.alignment == b.alignment;
  }
  template <typename H>
  friend H AbslHashValue(H h, const ReuseKey& k) {
    return H::combine(std::move(h), k.device, static_cast<int>(k.dtype), k.storage_bytes,
                      k.alignment);
  }
};
ReuseKey ReuseKeyOf(const Layout& layout);

struct ReusePlanOptions {
  bool allow_reuse = true;
  // Inductor's EfficientPeakEstimate check: a storage freed before the
  // previous kernel is only reused when holding it until the new allocation
  // keeps the estimated peak where it was.
  bool check_peak = true;
  // Trailing frees of non-outputs do nothing useful; they become NullLines.
  bool drop_trailing_frees = true;
};

struct ReusePlanStats {
  int reused = 0;                  // AllocateLines turned into ReuseLines
  int refused_for_peak = 0;        // matches refused by the peak check
  int dropped_trailing_frees = 0;  // frees turned into NullLines
};

// Never reuses graph inputs, outputs or constants, storage an extern kernel
// allocated itself (its real layout is the kernel's business), or a base
// while any view of it is used later.
absl::StatusOr<ReusePlanStats> PlanBufferReuse(WrapperProgram& program,
                                               const ReusePlanOptions& options = {});

struct PoolOptions {
  int64_t alignment = kBufferAlignment;
  // Graph outputs outlive the call, so by default they get storage of their
  // own, outside the arena (Inductor's memory_pool="intermediates").
  bool include_outputs = false;
};

// One storage: the AllocateLine's buffer and every buffer that took it over
// through ReuseLines.
struct PoolAssignment {
  std::vector<std::string> buffers;
  int64_t bytes = 0;
  int64_t offset = 0;  // into the arena; -1 when outside it
  // Live range in line indices, inclusive: [allocation line, free line]
  // (the last line for storages never freed).
  int64_t begin = 0;
  int64_t end = 0;
  bool is_output = false;
};

struct PoolPlan {
  int64_t arena_bytes = 0;             // one arena for everything with offset >= 0
  int64_t outside_bytes = 0;           // storages kept out of the arena
  std::vector<PoolAssignment> assignments;  // in order of their allocation lines
  // The assignment holding `buffer`'s storage, if it is planned.
  const PoolAssignment* Find(const std::string& buffer) const;
  std::string ToString() const;
};

absl::StatusOr<PoolPlan> PlanMemoryPool(const WrapperProgram& program,
                                        const PoolOptions& options = {});

struct MemoryReport {
  int num_buffers = 0;             // buffers the program allocates (not inputs/constants/views)
  int num_reused = 0;              // of those, living in another one's storage
  int64_t total_buffer_bytes = 0;  // sum of their storage bytes, each on its own
  int64_t peak_bytes = 0;          // peak of live storage, following the lines
  std::optional<int64_t> pool_bytes;  // arena + outside storage, when a pool was planned
  std::string ToString() const;
};

absl::StatusOr<MemoryReport> ReportMemory(const WrapperProgram& program,
                                          const PoolPlan* pool = nullptr);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_MEMORY_PLANNING_H_
