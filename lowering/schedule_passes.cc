#include "lowering/schedule_passes.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "lowering/expr_rewrite.h"
#include "lowering/index_math.h"

namespace kiln::lowering {
namespace {

// Inlined trees stay below this many nodes (counted with multiplicity), so
// generated code stays small and rewrites never recurse deeply.
constexpr int64_t kMaxTreeSize = 1024;
// A cheap producer may be recomputed in up to this many places.
constexpr int64_t kMaxCheapReads = 4;
// An expensive one (exp, tanh...) in two, when it is small: softmax's
// exp(x - max) feeds both its sum and the division, and inlining it into
// the one fused kernel beats a round trip through memory (Inductor inlines
// up to 4 reads; BM_Softmax measures this case). A device need not compute
// it twice: the CPU keeps the sum pass's values for the division
// (backends/cpu/kept_values.h).
constexpr int64_t kMaxExpensiveReads = 2;
constexpr int64_t kMaxRecomputedTreeSize = 32;

bool IsCheap(const ExprPtr& e) {
  std::vector<const Expr*> stack = {e.get()};
  while (!stack.empty()) {
    const Expr* x = stack.back();
    stack.pop_back();
    if (IsExpensiveOp(x->op)) return false;
    for (const ExprPtr& a : x->args) stack.push_back(a.get());
  }
  return true;
}

// Buffers `b` reads directly.
std::vector<std::string> Dependencies(const Buffer& b) {
  std::vector<std::string> deps;
  if (const ExprPtr* body = BodyOf(b)) {
    std::vector<const Expr*> loads;
    CollectLoads(*body, &loads);
    for (const Expr* l : loads) deps.push_back(l->buffer);
  }
  if (b.kind == BufferKind::kView) deps.push_back(b.view_of);
  if (!b.extern_source.empty()) deps.push_back(b.extern_source);
  if (b.extern_call) {
    for (const ExternArg& a : b.extern_call->args) {
      if (!a.buffer.empty()) deps.push_back(a.buffer);
      for (const std::string& s : a.buffer_list) deps.push_back(s);
    }
  }
  return deps;
}

}  // namespace

std::vector<int64_t> VarRanges(const Buffer& b) {
  if (b.pointwise) return b.pointwise->ranges;
  if (b.reduction) {
    std::vector<int64_t> r = b.reduction->ranges;
    r.insert(r.end(), b.reduction->reduction_ranges.begin(), b.reduction->reduction_ranges.end());
    return r;
  }
  return {};
}

const ExprPtr* BodyOf(const Buffer& b) {
  if (b.pointwise) return &b.pointwise->body;
  if (b.reduction) return &b.reduction->body;
  return nullptr;
}

ExprPtr* MutableBodyOf(Buffer& b) {
  if (b.pointwise) return &b.pointwise->body;
  if (b.reduction) return &b.reduction->body;
  return nullptr;
}

void EliminateDeadBuffers(LoopGraph& graph) {
  absl::flat_hash_map<std::string, const Buffer*> by_name;
  absl::flat_hash_map<std::string, std::vector<std::string>> extern_outputs;
  for (const Buffer& b : graph.buffers) {
    by_name[b.name] = &b;
    if (!b.extern_source.empty()) extern_outputs[b.extern_source].push_back(b.name);
  }
  absl::flat_hash_set<std::string> needed;
  std::vector<std::string> work(graph.outputs.begin(), graph.outputs.end());
  while (!work.empty()) {
    std::string name = std::move(work.back());
    work.pop_back();
    if (!needed.insert(name).second) continue;
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    for (std::string& d : Dependencies(*it->second)) work.push_back(std::move(d));
    // A needed extern call keeps all of its outputs.
    auto outs = extern_outputs.find(name);
    if (outs != extern_outputs.end()) {
      for (const std::string& o : outs->second) work.push_back(o);
    }
  }
  std::vector<Buffer> kept;
  for (Buffer& b : graph.buffers) {
    if (b.kind == BufferKind::kInput || needed.contains(b.name)) kept.push_back(std::move(b));
  }
  graph.buffers = std::move(kept);
}

int InlinePointwise(LoopGraph& graph) {
  absl::flat_hash_set<std::string> pinned(graph.outputs.begin(), graph.outputs.end());
  absl::flat_hash_map<std::string, size_t> index;
  std::map<std::string, std::set<std::string>> consumers;
  for (size_t i = 0; i < graph.buffers.size(); ++i) {
    const Buffer& b = graph.buffers[i];
    index[b.name] = i;
    if (b.kind == BufferKind::kView) pinned.insert(b.view_of);
    if (b.extern_call) {
      for (const ExternArg& a : b.extern_call->args) {
        if (!a.buffer.empty()) pinned.insert(a.buffer);
        for (const std::string& s : a.buffer_list) pinned.insert(s);
      }
    }
    if (const ExprPtr* body = BodyOf(b)) {
      std::vector<const Expr*> loads;
      CollectLoads(*body, &loads);
      for (const Expr* l : loads) consumers[l->buffer].insert(b.name);
    }
  }
  std::vector<bool> removed(graph.buffers.size(), false);
  int inlined = 0;
  // Consumers first (buffers are in topological order): a producer is judged
  // by the readers it has once everything after it has been inlined, so
  // softmax's exp(x - max) is inlined into its sum and division before x
  // itself is considered (x then has three readers and stays a buffer).
  for (size_t i = graph.buffers.size(); i-- > 0;) {
    Buffer& p = graph.buffers[i];
    if (p.kind != BufferKind::kComputed || !p.pointwise || pinned.contains(p.name)) continue;
    const std::set<std::string> users = consumers[p.name];
    if (users.empty()) continue;
    int64_t p_size = ExprTreeSize(p.pointwise->body, kMaxTreeSize + 1);
    int64_t total_reads = 0;
    bool fits = p_size <= kMaxTreeSize;
    for (const std::string& c : users) {
      const Buffer& consumer = graph.buffers[index[c]];
      std::map<std::string, int64_t> counts;
      CountLoads(*BodyOf(consumer), &counts);
      int64_t reads = counts[p.name];
      total_reads += reads;
      int64_t c_size = ExprTreeSize(*BodyOf(consumer), kMaxTreeSize + 1);
      if (c_size + reads * p_size > kMaxTreeSize) fits = false;
    }
    if (!fits || total_reads == 0) continue;
    if (total_reads > 1) {
      const bool cheap = IsCheap(p.pointwise->body);
      if (total_reads > kMaxCheapReads) continue;
      if (!cheap && (total_reads > kMaxExpensiveReads || p_size > kMaxRecomputedTreeSize)) continue;
    }

    std::vector<const Expr*> p_loads;
    CollectLoads(p.pointwise->body, &p_loads);
    for (const std::string& c : users) {
      Buffer& consumer = graph.buffers[index[c]];
      std::vector<int64_t> ranges = VarRanges(consumer);
      ExprPtr* body = MutableBodyOf(consumer);
      const std::vector<int64_t>& sizes = p.pointwise->ranges;
      const ExprPtr& p_body = p.pointwise->body;
      *body = ReplaceLoads(*body, p.name, [&](const Expr& load) {
        std::vector<ExprPtr> idx = UnravelIndex(load.args[0], sizes, ranges);
        return SubstituteVars(p_body, idx, ranges);
      });
      for (const std::string& o : p.origins) {
        if (std::find(consumer.origins.begin(), consumer.origins.end(), o) ==
            consumer.origins.end()) {
          consumer.origins.push_back(o);
        }
      }
      for (const Expr* l : p_loads) consumers[l->buffer].insert(c);
    }
    for (const Expr* l : p_loads) consumers[l->buffer].erase(p.name);
    consumers.erase(p.name);
    removed[i] = true;
    ++inlined;
  }
  std::vector<Buffer> kept;
  for (size_t i = 0; i < graph.buffers.size(); ++i) {
    if (!removed[i]) kept.push_back(std::move(graph.buffers[i]));
  }
  graph.buffers = std::move(kept);
  return inlined;
}

}  // namespace kiln::lowering
