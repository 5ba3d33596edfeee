#include "backends/cuda/kernel_codegen.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "backends/cuda/cuda_expr_emitter.h"
#include "backends/cuda/kernel_collapse.h"
#include "backends/cuda/kernel_identifiers.h"
#include "backends/cuda/kernel_loops.h"
#include "backends/cuda/kernel_prelude.h"
#include "backends/cuda/kernel_reductions.h"
#include "backends/cuda/kernel_transpose.h"
#include "support/hash.h"
#include "support/status.h"

namespace kiln::backends::cuda {

using lowering::Buffer;
using lowering::BufferKind;
using lowering::ExprPtr;

namespace {

constexpr int kPointwiseThreads = 256;
constexpr int kThreadPerOutputThreads = 128;
constexpr int kWarpRowThreads = 256;  // 8 rows per block
constexpr int64_t kMaxGrid = std::numeric_limits<int32_t>::max();

const Buffer* FindBuffer(const lowering::LoopGraph& graph, const std::string& name) {
  for (const Buffer& b : graph.buffers) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

}  // namespace

namespace {

// Elements per group of a pointwise kernel: 8 when it touches 16-bit
// floats (one 16-byte access per group of them, as for 4 floats; 4 would
// give 8-byte accesses, half the bytes in flight per thread and twice the
// index arithmetic per element) and no 8-byte type (whose groups of 8
// would take four 16-byte accesses and many registers); else 4.
int PointwiseLanes(const KernelContext& ctx) {
  bool narrow = false;
  for (const auto& [name, ref] : ctx.refs) {
    if (DTypeSize(ref.dtype) >= 8) return kLanes;
    narrow = narrow || IsNarrowFloat(ref.dtype);
  }
  return narrow ? kNarrowLanes : kLanes;
}

// Stands for the function name until the text is complete.
constexpr char kKernelNamePlaceholder[] = "KILN_KERNEL_NAME";

absl::StatusOr<CudaKernelSource> Generate(const lowering::LoopGraph& graph, const lowering::FusedKernel& kernel,
                                          const CudaTarget& target) {
  if (kernel.buffers.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(KernelErrorPrefix(kernel.name), "writes no buffer"));
  }
  KernelContext ctx;
  std::vector<std::string> params;
  auto add_param = [&](const std::string& name, bool written) -> absl::Status {
    const Buffer* buf = FindBuffer(graph, name);
    if (buf == nullptr) {
      return absl::NotFoundError(
          absl::StrCat(KernelErrorPrefix(kernel.name), "names unknown buffer '", CudaSafeText(name), "'"));
    }
    if (ctx.refs.count(name) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(KernelErrorPrefix(kernel.name), "lists buffer '", CudaSafeText(name), "' twice"));
    }
    auto type = CudaStorageTypeName(buf->layout.dtype);
    if (!type.ok()) {
      return absl::UnimplementedError(absl::StrCat(KernelErrorPrefix(kernel.name), "buffer ", CudaSafeText(name), ": ",
                                                   type.status().message()));
    }
    // Parameters are named by position, never after their buffers: kernels
    // doing the same work on different buffers (a transformer's layers)
    // then have the same text, compiled once; and no model name reaches
    // the source.
    const std::string id = absl::StrCat("p", params.size());
    ctx.refs[name] = CudaBufferRef{id, buf->layout.dtype, "", buf->layout.dtype};
    params.push_back(absl::StrCat(written ? "" : "const ", *type, "* __restrict__ ", id));
    return absl::OkStatus();
  };
  for (const std::string& r : kernel.reads) RETURN_IF_ERROR(add_param(r, false));
  for (const std::string& b : kernel.buffers) RETURN_IF_ERROR(add_param(b, true));

  std::vector<const Buffer*> bufs;
  bool has_reduction = false;
  for (const std::string& name : kernel.buffers) {
    const Buffer* buf = FindBuffer(graph, name);
    if (buf->kind != BufferKind::kComputed) {
      return absl::InvalidArgumentError(
          absl::StrCat(KernelErrorPrefix(kernel.name), "buffer '", CudaSafeText(name), "' is not a computed buffer"));
    }
    if (buf->pointwise.has_value()) {
      if (buf->pointwise->body == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(KernelErrorPrefix(kernel.name), "pointwise ", CudaSafeText(name),
                                                       " has no body"));
      }
    } else if (buf->reduction.has_value()) {
      if (buf->reduction->body == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(KernelErrorPrefix(kernel.name), "reduction ", CudaSafeText(name),
                                                       " has no body"));
      }
      has_reduction = true;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(KernelErrorPrefix(kernel.name), "computed buffer '", CudaSafeText(name),
                                                     "' has neither a pointwise nor a reduction"));
    }
    bufs.push_back(buf);
  }
  const int sms = std::max(1, target.multiprocessor_count);
  const int max_threads = std::max(32, std::min(1024, target.max_threads_per_block)) / 32 * 32;

  CudaKernelSource result;
  std::string body;
  int threads = 1;
  std::string indent = "  ";
  if (!has_reduction) {
    // Pointwise: every member over the same ranges, one grid-stride loop.
    std::vector<int64_t> ranges = bufs[0]->pointwise->ranges;
    std::vector<ExprPtr> bodies;
    bool contiguous_stores = true;
    for (const Buffer* b : bufs) {
      if (b->pointwise->ranges != ranges) {
        return absl::UnimplementedError(
            absl::StrCat(KernelErrorPrefix(kernel.name), "pointwise members over different ranges"));
      }
      bodies.push_back(b->pointwise->body);
      contiguous_stores = contiguous_stores && b->layout.strides.size() == b->layout.sizes.size() &&
                          IsContiguousLayout(b->layout) && b->layout.sizes == ranges;
    }
    // Dims every access walks as one merge (longer rows: full groups, vectors).
    if (contiguous_stores) {
      if (std::optional<CollapsedSpace> c = CollapsePointwiseSpace(ranges, bodies)) {
        ranges = c->ranges;
        bodies = c->bodies;
      }
    }
    std::vector<StoreBody::Member> members;
    for (size_t i = 0; i < bufs.size(); ++i) {
      ASSIGN_OR_RETURN(ExprPtr store, StoreIndex(*bufs[i], ranges));
      members.push_back({bufs[i], bodies[i], store});
    }
    ASSIGN_OR_RETURN(int64_t numel, SpaceSize(ranges, "pointwise ranges"));
    // A transposed operand: 32x32 tiles through shared memory.
    const std::set<std::string> written(kernel.buffers.begin(), kernel.buffers.end());
    std::optional<TransposeTiling> tiling;
    if (numel > 0 && max_threads >= kTransposeTileThreads && TransposeTilesEnabled()) {
      tiling = PlanTransposeTiling(ranges, members, written);
    }
    if (tiling.has_value()) {
      threads = kTransposeTileThreads;
      StoreBody store_body(&ctx, std::move(members));
      int64_t grid = 1;
      ASSIGN_OR_RETURN(body, EmitTransposeTiled(ctx, ranges, *tiling, store_body, indent,
                                                static_cast<int64_t>(sms) * (2048 / threads), &grid));
      result.launch.grid_x = grid;
      result.launch.block_x = threads;
    } else {
      ctx.lanes = PointwiseLanes(ctx);
      threads = std::min(kPointwiseThreads, max_threads);
      int64_t inner = 1;
      for (size_t i = ranges.size(); i-- > 0;) {
        if (ranges[i] != 1) {
          inner = ranges[i];
          break;
        }
      }
      const int64_t groups = inner >= ctx.lanes ? numel / inner * ((inner + ctx.lanes - 1) / ctx.lanes) : numel;
      const int64_t blocks_needed = (groups + threads - 1) / threads;
      // One full wave of resident blocks at most; the loop strides over the rest.
      const int64_t max_blocks = static_cast<int64_t>(sms) * (2048 / threads);
      result.launch.grid_x = std::max<int64_t>(1, std::min(blocks_needed, max_blocks));
      result.launch.block_x = threads;
      SpaceLoop loop;
      loop.sizes = ranges;
      loop.bindings.assign(ranges.size(), "0LL");
      for (size_t i = 0; i < ranges.size(); ++i) loop.vars.push_back(static_cast<int>(i));
      loop.prefix = "l_v";
      loop.start = absl::StrCat("blockIdx.x * ", threads, "U + threadIdx.x");
      loop.stride = absl::StrCat("gridDim.x * ", threads, "U");
      StoreBody store_body(&ctx, std::move(members));
      if (numel > 0) {
        ASSIGN_OR_RETURN(std::string text, EmitSpaceLoop(ctx, loop, store_body, indent));
        body = text;
      }
    }
  } else {
    ASSIGN_OR_RETURN(ReductionKernelShape shape, ClassifyReductionKernel(kernel, bufs));
    ASSIGN_OR_RETURN(int64_t outer_numel, SpaceSize(shape.outer, "kernel outer ranges"));
    ASSIGN_OR_RETURN(int64_t rnumel, SpaceSize(shape.reduction_ranges, "reduction ranges"));
    const bool row_scheme = (RowIsContiguous(shape) && rnumel >= 32) || outer_numel < 4 * sms;
    // 32-bit outer counters while the counter plus a grid's stride (below
    // twice the count) cannot wrap.
    const bool narrow = outer_numel < (int64_t{1} << 30);
    const std::string o_type = narrow ? "unsigned int" : "unsigned long long";
    const std::string o_suffix = narrow ? "U" : "ULL";
    if (row_scheme) {
      int64_t inner = 1;
      for (size_t i = shape.reduction_ranges.size(); i-- > 0;) {
        if (shape.reduction_ranges[i] != 1) {
          inner = shape.reduction_ranges[i];
          break;
        }
      }
      const int64_t groups = inner >= kLanes ? rnumel / inner * ((inner + kLanes - 1) / kLanes) : rnumel;
      // About four groups of kLanes elements per thread: four independent
      // 16-byte loads in flight per thread, and rows up to 4 groups per
      // thread stay in registers (kMaxRowTrips).
      const int64_t wanted = NextPow2((groups + 3) / 4);
      if (wanted <= 32 && max_threads >= kWarpRowThreads && outer_numel > 1) {
        // Short rows: a warp per row, several rows per block, no barriers.
        const int warps = kWarpRowThreads / 32;
        threads = kWarpRowThreads;
        result.launch.grid_x = std::max<int64_t>(1, std::min((outer_numel + warps - 1) / warps, kMaxGrid));
        result.launch.block_x = threads;
        absl::StrAppend(&body, indent, "for (", o_type, " l_o = blockIdx.x * ", warps, o_suffix,
                        " + (threadIdx.x >> 5); l_o < ", outer_numel, o_suffix, "; l_o += static_cast<", o_type,
                        ">(gridDim.x) * ", warps, o_suffix, ") {\n");
        absl::StrAppend(&body, UnravelOuter(shape.outer, "l_o", indent + "  ", narrow));
        RETURN_IF_ERROR(EmitReductionMembers(ctx, kernel, shape, Cooperation::kWarp, 32, indent + "  ", &body));
        absl::StrAppend(&body, indent, "}\n");
      } else {
        threads = static_cast<int>(std::min<int64_t>(max_threads, std::max<int64_t>(32, wanted)));
        result.launch.grid_x = std::max<int64_t>(1, std::min(outer_numel, kMaxGrid));
        result.launch.block_x = threads;
        if (outer_numel > 0) {
          absl::StrAppend(&body, indent, "for (", o_type, " l_o = blockIdx.x; l_o < ", outer_numel, o_suffix,
                          "; l_o += gridDim.x) {\n");
          absl::StrAppend(&body, UnravelOuter(shape.outer, "l_o", indent + "  ", narrow));
          RETURN_IF_ERROR(
              EmitReductionMembers(ctx, kernel, shape, Cooperation::kBlock, threads, indent + "  ", &body));
          absl::StrAppend(&body, indent, "}\n");
        }
      }
    } else {
      // Smaller blocks when the outputs are few: spread them over every SM.
      threads = static_cast<int>(std::min<int64_t>(
          std::min(kThreadPerOutputThreads, max_threads),
          std::max<int64_t>(32, NextPow2(outer_numel / (2 * static_cast<int64_t>(sms))))));
      const int64_t blocks = (outer_numel + threads - 1) / threads;
      result.launch.grid_x = std::max<int64_t>(1, std::min(blocks, kMaxGrid));
      result.launch.block_x = threads;
      if (outer_numel > 0) {
        absl::StrAppend(&body, indent, "for (", o_type, " l_o = blockIdx.x * ", threads, o_suffix,
                        " + threadIdx.x; l_o < ", outer_numel, o_suffix, "; l_o += static_cast<", o_type,
                        ">(gridDim.x) * ", threads, o_suffix, ") {\n");
        absl::StrAppend(&body, UnravelOuter(shape.outer, "l_o", indent + "  ", narrow));
        RETURN_IF_ERROR(EmitReductionMembers(ctx, kernel, shape, Cooperation::kThread, 1, indent + "  ", &body));
        absl::StrAppend(&body, indent, "}\n");
      }
    }
  }

  // The function is named after its text (kKernelNamePlaceholder hashed),
  // so identical kernels share one name and one compile.
  std::string kernel_text = absl::StrCat("extern \"C\" __global__ void __launch_bounds__(", threads, ") ",
                                         kKernelNamePlaceholder, "(", absl::StrJoin(params, ", "), ") {\n");
  if (!ctx.vector_buffers.empty()) {
    std::vector<std::string> checks;
    for (const std::string& b : ctx.vector_buffers) {
      const CudaBufferRef& ref = ctx.refs.at(b);
      const int64_t bytes = std::min<int64_t>(16, ctx.lanes * static_cast<int64_t>(DTypeSize(ref.dtype)));
      checks.push_back(absl::StrCat("kiln_aligned(", ref.identifier, ", ", bytes, "ULL)"));
    }
    absl::StrAppend(&kernel_text, indent, "const bool l_aligned = ", absl::StrJoin(checks, " && "), ";\n");
  }
  absl::StrAppend(&kernel_text, body, "}\n");
  absl::StrReplaceAll({{kRowCacheCondition, ctx.vector_buffers.empty() ? "true" : "l_aligned"}}, &kernel_text);
  ctx.name = absl::StrFormat("kk_%016x", HashString(kernel_text));
  absl::StrReplaceAll({{kKernelNamePlaceholder, ctx.name}}, &kernel_text);
  result.name = ctx.name;
  result.source = absl::StrCat(CudaKernelPrelude(), "\n// kiln kernel ", ctx.name, "\n", kernel_text);
  return result;
}

}  // namespace

absl::StatusOr<CudaKernelSource> GenerateCudaKernel(const lowering::LoopGraph& graph,
                                                    const lowering::FusedKernel& kernel,
                                                    const CudaTarget& target) {
  absl::StatusOr<CudaKernelSource> result = Generate(graph, kernel, target);
  if (result.ok()) return result;
  // Every error names the kernel (expression-level errors do not know it).
  const std::string prefix = KernelErrorPrefix(kernel.name);
  const absl::string_view message = result.status().message();
  if (message.substr(0, prefix.size()) == prefix) return result;
  std::string detail(message.data(), message.size());
  const std::string generic = "cuda codegen: ";
  if (detail.compare(0, generic.size(), generic) == 0) detail = detail.substr(generic.size());
  return absl::Status(result.status().code(), absl::StrCat(prefix, detail));
}

}  // namespace kiln::backends::cuda
