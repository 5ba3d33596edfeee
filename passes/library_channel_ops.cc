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

// aten::mean(x, dims, keepdim=True[, dtype=None]) over exactly the spatial
// dims, or aten::adaptive_avg_poolNd(x, [1, ...]): x, else null.
Value* GlobalMeanOperand(const Node* n) {
  const std::string k(n->kind().qualString());
  if (n->outputs().size() != 1 || n->inputs().empty()) return nullptr;
  Value* x = n->input(0);
  std::optional<std::vector<int64_t>> xs = ChannelsLastOperand(x);
  if (!xs || !ResultIs(n, PooledSizes(*xs))) return nullptr;
  const int64_t rank = static_cast<int64_t>(xs->size());
  if (k == "aten::mean") {
    if (n->inputs().size() < 3 || n->inputs().size() > 4) return nullptr;
    if (n->inputs().size() == 4 && !IsNone(n->input(3))) return nullptr;
    std::optional<ir::IValue> keepdim = ir::ConstantValue(n->input(2));
    std::optional<std::vector<int64_t>> dims = IntList(n->input(1));
    if (!keepdim || !keepdim->isBool() || !keepdim->toBool() || !dims) return nullptr;
    std::vector<int64_t> d = *dims;
    for (int64_t& v : d) {
      if (v < -rank || v >= rank) return nullptr;
      if (v < 0) v += rank;
    }
    std::sort(d.begin(), d.end());
    std::vector<int64_t> spatial;
    for (int64_t i = 2; i < rank; ++i) spatial.push_back(i);
    return d == spatial ? x : nullptr;
  }
  const int64_t spatial = k == "aten::adaptive_avg_pool1d" ? 1
                          : k == "aten::adaptive_avg_pool2d" ? 2
                          : k == "aten::adaptive_avg_pool3d" ? 3
                                                             : 0;
  if (spatial == 0 || spatial != rank - 2 || n->inputs().size() != 2) return nullptr;
  std::optional<std::vector<int64_t>> out = IntList(n->input(1));
  if (!out || out->empty()) return nullptr;
  for (int64_t v : *out) {
    if (v != 1) return nullptr;
  }
  return x;
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

// Replaces `old` by `kind`(inputs) with the same output type and name.
void Replace(ir::Graph& g, Node* old, const char* kind, std::vector<Value*> inputs) {
  ir::WithInsertPoint guard(old);
  Node* n = g.create(ir::Symbol::FromQualString(kind), inputs, 1);
  g.insertNode(n);
  Value* out = old->output();
  n->output()->setType(out->type());
  const std::string name = out->hasDebugName() ? out->debugName() : "";
  out->replaceAllUsesWith(n->output());
  fusion_match::DestroyWithUnusedConstants({old});
  if (!name.empty()) n->output()->setDebugName(name);
}

bool RewriteBlock(ir::Graph& g, ir::Block* block, PassStatistics& stats) {
  bool changed = false;
  std::vector<Node*> nodes;
  for (Node* n : block->nodes()) nodes.push_back(n);
  for (Node* n : nodes) {
    for (ir::Block* sub : n->blocks()) changed |= RewriteBlock(g, sub, stats);
    if (Value* x = GlobalMeanOperand(n)) {
      Replace(g, n, "kiln::global_avg_pool", {x});
      stats.Add("global_avg_pools");
      changed = true;
    } else if (auto [x, s] = ChannelMulOperands(n); x != nullptr) {
      Replace(g, n, "kiln::channel_mul", {x, s});
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
