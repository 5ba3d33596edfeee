#include "passes/library_channel_ops.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ir/constants.h"
#include "ir/ivalue.h"
#include "passes/fusion_match.h"
#include "support/status.h"

namespace kiln::passes {
namespace {

using fusion_match::IntList;
using fusion_match::IsNone;
using fusion_match::StaticFloat;
using ir::Node;
using ir::Value;

// Ops whose result the CPU's library writes channels-last (backends/cpu:
// its convolutions, max pooling and the channel multiply of this pass).
bool ComputedChannelsLast(const Value* v) {
  const std::string k(v->node()->kind().qualString());
  return k == "kiln::conv_post_ops" || k == "aten::convolution" || k == "aten::conv1d" || k == "aten::conv2d" ||
         k == "aten::conv3d" || k == "kiln::conv_nd" || k == "aten::max_pool1d" || k == "aten::max_pool2d" ||
         k == "aten::max_pool3d" || k == "kiln::channel_mul";
}

// A float32 [N, C, *S] value with 1 to 3 spatial dims, computed
// channels-last: its sizes, else nullopt.
std::optional<std::vector<int64_t>> ChannelsLastOperand(const Value* v) {
  const ir::TensorInfo* t = StaticFloat(v);
  if (t == nullptr || t->sizes->size() < 3 || t->sizes->size() > 5 || !ComputedChannelsLast(v)) {
    return std::nullopt;
  }
  return t->ConcreteSizes();
}

// [N, C, 1, ...] of `x`: its sizes with every spatial dim 1.
std::vector<int64_t> PooledSizes(const std::vector<int64_t>& x) {
  std::vector<int64_t> out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  return out;
}

bool ResultIs(const Node* n, const std::vector<int64_t>& sizes) {
  const ir::TensorInfo* t = StaticFloat(n->output());
  return t != nullptr && t->ConcreteSizes() == sizes;
}

// A global spatial mean: its operand, and whether the result drops the
// spatial dims ([N, C], keepdim false).
struct GlobalMean {
  Value* x = nullptr;
  bool flat = false;
};

// aten::mean(x, dims, keepdim[, dtype=None]) over exactly the spatial dims,
// or aten::adaptive_avg_poolNd(x, [1, ...]); x null otherwise.
GlobalMean GlobalMeanOf(const Node* n) {
  const std::string k(n->kind().qualString());
  if (n->outputs().size() != 1 || n->inputs().empty()) return {};
  Value* x = n->input(0);
  std::optional<std::vector<int64_t>> xs = ChannelsLastOperand(x);
  if (!xs) return {};
  const int64_t rank = static_cast<int64_t>(xs->size());
  if (k == "aten::mean") {
    if (n->inputs().size() < 3 || n->inputs().size() > 4) return {};
    if (n->inputs().size() == 4 && !IsNone(n->input(3))) return {};
    std::optional<ir::IValue> keepdim = ir::ConstantValue(n->input(2));
    std::optional<std::vector<int64_t>> dims = IntList(n->input(1));
    if (!keepdim || !keepdim->isBool() || !dims) return {};
    const bool flat = !keepdim->toBool();
    if (!ResultIs(n, flat ? std::vector<int64_t>{(*xs)[0], (*xs)[1]} : PooledSizes(*xs))) return {};
    std::vector<int64_t> d = *dims;
    for (int64_t& v : d) {
      if (v < -rank || v >= rank) return {};
      if (v < 0) v += rank;
    }
    std::sort(d.begin(), d.end());
    std::vector<int64_t> spatial;
    for (int64_t i = 2; i < rank; ++i) spatial.push_back(i);
    if (d != spatial) return {};
    return {x, flat};
  }
  const int64_t spatial = k == "aten::adaptive_avg_pool1d" ? 1
                          : k == "aten::adaptive_avg_pool2d" ? 2
                          : k == "aten::adaptive_avg_pool3d" ? 3
                                                             : 0;
  if (spatial == 0 || spatial != rank - 2 || n->inputs().size() != 2 || !ResultIs(n, PooledSizes(*xs))) return {};
  std::optional<std::vector<int64_t>> out = IntList(n->input(1));
  if (!out || out->empty()) return {};
  for (int64_t v : *out) {
    if (v != 1) return {};
  }
  return {x, false};
}

// aten::mul(a, b) of a channels-last value by one value per channel
// ([N or 1, C, 1, ...]), either order: {value, scale}, else nulls.
std::pair<Value*, Value*> ChannelMulOperands(const Node* n) {
  if (n->kind().qualString() != std::string("aten::mul") || n->inputs().size() != 2 || n->outputs().size() != 1) {
    return {nullptr, nullptr};
  }
  for (int order = 0; order < 2; ++order) {
    Value* x = n->input(order);
    Value* s = n->input(1 - order);
    std::optional<std::vector<int64_t>> xs = ChannelsLastOperand(x);
    const ir::TensorInfo* si = StaticFloat(s);
    if (!xs || si == nullptr || x == s || !ResultIs(n, *xs)) continue;
    const std::vector<int64_t> ss = si->ConcreteSizes();
    if (ss.size() != xs->size() || ss == *xs || ss[1] != (*xs)[1] || (ss[0] != 1 && ss[0] != (*xs)[0])) continue;
    if (std::all_of(ss.begin() + 2, ss.end(), [](int64_t v) { return v == 1; })) return {x, s};
  }
  return {nullptr, nullptr};
}

// Replaces `old`'s value by `replacement` (taking its name) and destroys it.
void ReplaceValue(Node* old, Value* replacement) {
  Value* out = old->output();
  const std::string name = out->hasDebugName() ? out->debugName() : "";
  out->replaceAllUsesWith(replacement);
  fusion_match::DestroyWithUnusedConstants({old});
  if (!name.empty()) replacement->setDebugName(name);
}

// kind(inputs) before `at`, typed `type`.
Value* Insert(ir::Graph& g, Node* at, const char* kind, std::vector<Value*> inputs, ir::TypePtr type) {
  ir::WithInsertPoint guard(at);
  Node* n = g.create(ir::Symbol::FromQualString(kind), inputs, 1);
  g.insertNode(n);
  n->output()->setType(std::move(type));
  return n->output();
}

absl::StatusOr<bool> RewriteBlock(ir::Graph& g, ir::Block* block, PassStatistics& stats) {
  bool changed = false;
  std::vector<Node*> nodes;
  for (Node* n : block->nodes()) nodes.push_back(n);
  for (Node* n : nodes) {
    for (ir::Block* sub : n->blocks()) {
      ASSIGN_OR_RETURN(bool sub_changed, RewriteBlock(g, sub, stats));
      changed |= sub_changed;
    }
    if (GlobalMean m = GlobalMeanOf(n); m.x != nullptr) {
      Value* out = n->output();
      if (!m.flat) {
        ReplaceValue(n, Insert(g, n, "kiln::global_avg_pool", {m.x}, out->type()));
      } else {
        // [N, C, 1, ...], then a reshape to the mean's [N, C] (a view).
        ir::TensorInfo pooled = out->type()->tensor();
        const std::vector<int64_t> sizes = PooledSizes(StaticFloat(m.x)->ConcreteSizes());
        pooled.sizes = std::vector<std::optional<int64_t>>(sizes.begin(), sizes.end());
        pooled.strides.reset();
        Value* p = Insert(g, n, "kiln::global_avg_pool", {m.x}, ir::Type::TensorWith(std::move(pooled)));
        ir::WithInsertPoint guard(n);
        ASSIGN_OR_RETURN(Value * shape, ir::InsertConstant(g, ir::IValue::IntList(out->type()->tensor().ConcreteSizes())));
        ReplaceValue(n, Insert(g, n, "aten::reshape", {p, shape}, out->type()));
      }
      stats.Add("global_avg_pools");
      changed = true;
    } else if (auto [x, s] = ChannelMulOperands(n); x != nullptr) {
      ReplaceValue(n, Insert(g, n, "kiln::channel_mul", {x, s}, n->output()->type()));
      stats.Add("channel_muls");
      changed = true;
    }
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> LibraryChannelOps(ir::Graph& graph, PassStatistics& stats) {
  return RewriteBlock(graph, graph.block(), stats);
}

absl::Status RegisterLibraryChannelOpsPass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "library_channel_ops", {},
      "Rewrites the global spatial mean and the per-channel gate multiply of a convolution's output "
      "(squeeze-excite blocks) into kiln::global_avg_pool / kiln::channel_mul for a device's library",
      LibraryChannelOps);
}

}  // namespace kiln::passes
