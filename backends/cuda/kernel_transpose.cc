#include "backends/cuda/kernel_transpose.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_expr_emitter.h"
#include "support/status.h"

namespace kiln::backends::cuda {

using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = kTransposeTileThreads / kTile;  // 8: a block covers a tile in 4 passes
constexpr int64_t kMinExtent = 16;
constexpr size_t kMaxStaged = 4;  // 4 tiles of 32 x 33 floats: 16.5 KiB of shared memory

bool StoredAsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// Every load node under `e`, each once (shared subtrees are walked once:
// index DAGs share heavily), or false past a depth of 256.
bool Loads(const ExprPtr& e, int depth, std::set<const lowering::Expr*>* seen, std::vector<ExprPtr>* out) {
  if (e == nullptr || !seen->insert(e.get()).second) return true;
  if (depth > 256) return false;
  if (e->op == ExprOp::kLoad) out->push_back(e);
  for (const ExprPtr& a : e->args) {
    if (!Loads(a, depth + 1, seen, out)) return false;
  }
  return true;
}

}  // namespace

bool TransposeTilesEnabled() { return !env::TransposeTilesOff(); }

std::optional<TransposeTiling> PlanTransposeTiling(const std::vector<int64_t>& ranges,
                                                   const std::vector<StoreBody::Member>& members,
                                                   const std::set<std::string>& written) {
  TransposeTiling t;
  for (size_t i = ranges.size(); i-- > 0;) {
    if (ranges[i] == 1) continue;
    if (t.b < 0) {
      t.b = static_cast<int>(i);
    } else {
      t.a = static_cast<int>(i);
      break;
    }
  }
  if (t.a < 0 || ranges[t.a] < kMinExtent || ranges[t.b] < kMinExtent) return std::nullopt;
  std::vector<ExprPtr> loads;
  std::set<const lowering::Expr*> seen;
  for (const StoreBody::Member& m : members) {
    if (!HasUnitStride(m.store_index, t.b)) return std::nullopt;
    if (!Loads(m.body, 0, &seen, &loads)) return std::nullopt;
  }
  for (const ExprPtr& load : loads) {
    if (load->args.size() != 1 || written.count(load->buffer) != 0 || !StoredAsFloat(load->dtype)) continue;
    const ExprPtr& index = load->args[0];
    std::vector<ExprPtr> nested;
    std::set<const lowering::Expr*> index_seen;
    if (!Loads(index, 0, &index_seen, &nested) || !nested.empty()) continue;  // gathers stay as they are
    if (HasUnitStride(index, t.a) && DependsOnVar(index, t.b) && !HasUnitStride(index, t.b)) {
      t.staged.push_back(load);
    }
  }
  if (t.staged.empty() || t.staged.size() > kMaxStaged) return std::nullopt;
  return t;
}

absl::StatusOr<std::string> EmitTransposeTiled(KernelContext& ctx, const std::vector<int64_t>& ranges,
                                               const TransposeTiling& tiling, StoreBody& body,
                                               const std::string& indent, int64_t max_blocks, int64_t* grid) {
  const int64_t extent_a = ranges[static_cast<size_t>(tiling.a)], extent_b = ranges[static_cast<size_t>(tiling.b)];
  const int64_t tiles_a = (extent_a + kTile - 1) / kTile, tiles_b = (extent_b + kTile - 1) / kTile;
  int64_t tiles = tiles_a * tiles_b;
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (static_cast<int>(i) != tiling.a && static_cast<int>(i) != tiling.b) tiles *= ranges[i];
  }
  *grid = std::max<int64_t>(1, std::min(tiles, max_blocks));
  const bool narrow = tiles < (int64_t{1} << 31);
  const std::string counter = narrow ? "unsigned int" : "unsigned long long";
  const std::string suffix = narrow ? "U" : "ULL";
  const std::string in = indent + "  ", in2 = in + "  ", in3 = in2 + "  ";
  std::string out;
  for (size_t k = 0; k < tiling.staged.size(); ++k) {
    absl::StrAppend(&out, indent, "__shared__ float l_tile", k, "[", kTile, "][", kTile + 1, "];\n");
  }
  absl::StrAppend(&out, indent, "const int l_x = threadIdx.x & ", kTile - 1, ", l_y = threadIdx.x >> 5;\n");
  absl::StrAppend(&out, indent, "for (", counter, " l_t = blockIdx.x; l_t < ", tiles, suffix, "; l_t += gridDim.x) {\n");
  // Unravel the tile counter: b's tiles fastest, then a's, then the other
  // dims innermost first.
  absl::StrAppend(&out, in, counter, " l_rem = l_t;\n");
  absl::StrAppend(&out, in, "const long long l_tb = static_cast<long long>(l_rem % ", tiles_b, suffix, ") * ", kTile,
                  "LL;\n", in, "l_rem /= ", tiles_b, suffix, ";\n");
  absl::StrAppend(&out, in, "const long long l_ta = static_cast<long long>(l_rem % ", tiles_a, suffix, ") * ", kTile,
                  "LL;\n", in, "l_rem /= ", tiles_a, suffix, ";\n");
  std::vector<std::string> bindings(ranges.size(), "0LL");
  for (size_t i = ranges.size(); i-- > 0;) {
    if (static_cast<int>(i) == tiling.a || static_cast<int>(i) == tiling.b || ranges[i] == 1) continue;
    const std::string name = absl::StrCat("l_v", i);
    absl::StrAppend(&out, in, "const long long ", name, " = static_cast<long long>(l_rem % ", ranges[i], suffix,
                    ");\n", in, "l_rem /= ", ranges[i], suffix, ";\n");
    bindings[i] = name;
  }
  const std::string bound = absl::StrCat("l_va < ", extent_a, "LL && l_vb < ", extent_b, "LL");
  bindings[static_cast<size_t>(tiling.a)] = "l_va";
  bindings[static_cast<size_t>(tiling.b)] = "l_vb";
  // Stage: thread (x, y) loads (a0 + x, b0 + y + r), adjacent in a.
  {
    CudaExprEmitter em(&ctx.refs, bindings, &ctx.temps);
    em.set_indent(in3);
    std::string stores;
    for (size_t k = 0; k < tiling.staged.size(); ++k) {
      ASSIGN_OR_RETURN(std::string value, em.Emit(tiling.staged[k], 0));
      absl::StrAppend(&stores, in3, "l_tile", k, "[l_y + l_r][l_x] = ", value, ";\n");
    }
    absl::StrAppend(&out, in, "#pragma unroll\n", in, "for (int l_r = 0; l_r < ", kTile, "; l_r += ", kRowsPerPass,
                    ") {\n", in2, "const long long l_va = l_ta + l_x, l_vb = l_tb + l_y + l_r;\n", in2, "if (", bound,
                    ") {\n", em.TakeStatements(), stores, in2, "}\n", in, "}\n", in, "__syncthreads();\n");
  }
  // Compute: thread (x, y) stores (a0 + y + r, b0 + x), adjacent in b,
  // reading the staged loads transposed.
  {
    CudaExprEmitter em(&ctx.refs, bindings, &ctx.temps);
    em.set_indent(in3);
    std::map<const lowering::Expr*, std::string> staged;
    for (size_t k = 0; k < tiling.staged.size(); ++k) {
      staged[tiling.staged[k].get()] = absl::StrCat("l_tile", k, "[l_x][l_y + l_r]");
    }
    em.SetStagedLoads(std::move(staged));
    std::string text;
    RETURN_IF_ERROR(body.Emit(em, 1, -1, false, {"0LL"}, in3, &text));
    absl::StrAppend(&out, in, "#pragma unroll\n", in, "for (int l_r = 0; l_r < ", kTile, "; l_r += ", kRowsPerPass,
                    ") {\n", in2, "const long long l_va = l_ta + l_y + l_r, l_vb = l_tb + l_x;\n", in2, "if (", bound,
                    ") {\n", text, in2, "}\n", in, "}\n", in, "__syncthreads();\n");
  }
  absl::StrAppend(&out, indent, "}\n");
  return out;
}

}  // namespace kiln::backends::cuda
