#include "lowering/islands.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/constants.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

// Calls `fn` for every value `node` reads that is defined outside it: its
// inputs and the free values of its blocks (recursively), in order.
void ForEachExternalUse(const ir::Graph& graph, const ir::Node* node,
                        const std::function<void(const ir::Value*)>& fn) {
  std::function<void(const ir::Node*)> visit = [&](const ir::Node* n) {
    for (const ir::Value* v : n->inputs()) {
      if (TopLevelNode(graph, v->node()) != node) fn(v);
    }
    for (const ir::Block* b : n->blocks()) {
      for (const ir::Node* inner : b->nodes()) visit(inner);
      visit(b->return_node());
    }
  };
  visit(node);
}

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) {
    for (size_t i = 0; i < n; ++i) parent_[i] = i;
  }
  size_t Find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(size_t a, size_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

const ir::Node* TopLevelNode(const ir::Graph& graph, const ir::Node* n) {
  while (n != nullptr && n->owningBlock() != graph.block()) {
    const ir::Block* b = n->owningBlock();
    n = b == nullptr ? nullptr : b->owningNode();
  }
  if (n == graph.param_node()) return nullptr;
  return n;
}

bool IsStaticTensor(const ir::Value* v) {
  const ir::TypePtr& t = v->type();
  return t && t->is_tensor() && t->tensor().dtype && t->tensor().HasCompleteSizes();
}

std::string NodeName(const ir::Node& n) {
  if (!n.scope().empty()) return std::string(n.scope());
  if (!n.outputs().empty()) return absl::StrCat("%", n.output(0)->debugName());
  return std::string(n.kind().qualString());
}

std::string NodeOp(const ir::Node& n, const ir::OpRegistry& registry) {
  if (const ir::Operator* op = registry.Match(n)) return op->schema.QualifiedName();
  return std::string(n.kind().qualString());
}

int CountIslandNodes(const ir::Graph& island) {
  int n = 0;
  for (const ir::Node* node : island.nodes()) n += node->kind() != ir::sym::kConstant;
  return n;
}

void PlanLoweringUnits(const ir::Graph& graph, IslandSet& set, std::vector<LoweringUnit>* units) {
  std::vector<const ir::Node*> order;
  absl::flat_hash_map<const ir::Node*, size_t> index;
  for (const ir::Node* n : graph.nodes()) {
    index[n] = order.size();
    order.push_back(n);
  }
  const size_t n = order.size();
  // producers[i]: indices of the top-level nodes node i reads from.
  std::vector<std::vector<size_t>> producers(n);
  for (size_t i = 0; i < n; ++i) {
    ForEachExternalUse(graph, order[i], [&](const ir::Value* v) {
      const ir::Node* p = TopLevelNode(graph, v->node());
      if (p == nullptr) return;
      auto it = index.find(p);
      if (it != index.end()) producers[i].push_back(it->second);
    });
  }
  std::vector<std::vector<size_t>> consumers(n);
  for (size_t i = 0; i < n; ++i) {
    for (size_t p : producers[i]) consumers[p].push_back(i);
  }

  // Connected island nodes form one island; a node on a path between two
  // members joins it. Repeat until no island grows.
  UnionFind groups(n);
  for (bool grew = true; grew;) {
    grew = false;
    groups = UnionFind(n);
    for (size_t i = 0; i < n; ++i) {
      if (!set.nodes.contains(order[i])) continue;
      for (size_t p : producers[i]) {
        if (set.nodes.contains(order[p])) groups.Union(i, p);
      }
    }
    absl::flat_hash_map<size_t, std::pair<size_t, size_t>> span;  // root -> [first, last]
    for (size_t i = 0; i < n; ++i) {
      if (!set.nodes.contains(order[i])) continue;
      auto [it, inserted] = span.try_emplace(groups.Find(i), i, i);
      if (!inserted) it->second.second = i;
    }
    for (const auto& entry : span) {
      const size_t root = entry.first;  // a plain variable: lambdas capture it (C++17)
      const auto [first, last] = entry.second;
      if (first == last) continue;
      std::vector<char> from(n, 0), to(n, 0);
      auto member = [&](size_t i) {
        return set.nodes.contains(order[i]) && groups.Find(i) == root;
      };
      for (size_t i = first; i <= last; ++i) {
        from[i] = member(i);
        for (size_t p : producers[i]) from[i] |= p >= first && from[p];
      }
      for (size_t i = last + 1; i-- > first;) {
        to[i] = member(i);
        for (size_t c : consumers[i]) to[i] |= c <= last && to[c];
      }
      for (size_t i = first; i <= last; ++i) {
        if (from[i] && to[i] && !set.nodes.contains(order[i])) {
          set.Add(order[i], absl::StrCat("on a path between nodes of an island (through ",
                                         NodeName(*order[first]), ")"));
          grew = true;
        }
      }
    }
  }

  // Units, then a topological order of them (ties: graph position).
  absl::flat_hash_map<size_t, size_t> unit_of_root;
  std::vector<size_t> unit_of(n);
  units->clear();
  for (size_t i = 0; i < n; ++i) {
    if (set.nodes.contains(order[i])) {
      auto [it, inserted] = unit_of_root.try_emplace(groups.Find(i), units->size());
      if (inserted) units->push_back(LoweringUnit{{}, true});
      unit_of[i] = it->second;
    } else {
      unit_of[i] = units->size();
      units->push_back(LoweringUnit{{}, false});
    }
    (*units)[unit_of[i]].nodes.push_back(order[i]);
  }
  const size_t u = units->size();
  std::vector<std::vector<size_t>> succ(u);
  std::vector<size_t> pending(u, 0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t p : producers[i]) {
      if (unit_of[p] == unit_of[i]) continue;
      succ[unit_of[p]].push_back(unit_of[i]);
      ++pending[unit_of[i]];
    }
  }
  // Units are numbered by their first node's position: a min-heap on the
  // number keeps graph order wherever the dependencies allow.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t i = 0; i < u; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<LoweringUnit> sorted;
  sorted.reserve(u);
  while (!ready.empty()) {
    size_t next = ready.top();
    ready.pop();
    sorted.push_back(std::move((*units)[next]));
    for (size_t s : succ[next]) {
      if (--pending[s] == 0) ready.push(s);
    }
  }
  // Path-closed islands make the unit graph acyclic; if that ever failed,
  // interpret everything rather than lower out of order.
  if (sorted.size() != u) set.SetWholeGraph("islands could not be ordered");
  *units = std::move(sorted);
}

absl::Status LowerIsland(LowerContext& ctx, const ir::Graph& graph, const LoweringUnit& unit,
                         IslandSet& set, bool* retry) {
  const absl::flat_hash_set<const ir::Node*> members(unit.nodes.begin(), unit.nodes.end());
  auto island = std::make_shared<ir::Graph>();
  absl::flat_hash_map<const ir::Value*, ir::Value*> map;
  ExternCall call;
  call.op = kIslandOp;

  // Inputs: bound tensors become the call's buffer arguments; constants are
  // cloned in; anything else pulls its producer into the island.
  std::vector<const ir::Value*> inputs;
  absl::flat_hash_set<const ir::Value*> seen;
  for (const ir::Node* n : unit.nodes) {
    ForEachExternalUse(graph, n, [&](const ir::Value* v) {
      const ir::Node* p = TopLevelNode(graph, v->node());
      if (p != nullptr && members.contains(p)) return;
      if (seen.insert(v).second) inputs.push_back(v);
    });
  }
  for (const ir::Value* v : inputs) {
    ir::Value* mutable_v = const_cast<ir::Value*>(v);
    if (const TensorRef* t = ctx.FindTensor(v)) {
      ir::Value* in = island->addInput();
      in->copyMetadata(mutable_v);
      map[v] = in;
      ExternArg arg;
      arg.buffer = t->buffer;
      call.args.push_back(std::move(arg));
      continue;
    }
    if (v->node()->kind() == ir::sym::kConstant && v->node()->blocks().empty()) {
      ir::Node* c = island->createClone(v->node(), [](ir::Value* x) { return x; });
      island->block()->appendNode(c);
      map[v] = c->output(v->offset());
      continue;
    }
    if (const ir::IValue* c = ctx.FindConstant(v);
        c != nullptr && !c->isTensor() && ir::IsRepresentableConstant(*c)) {
      island->setInsertPoint(island->block());
      absl::StatusOr<ir::Value*> cv = ir::InsertConstant(*island, *c, v->type());
      if (cv.ok()) {
        map[v] = *cv;
        continue;
      }
    }
    const ir::Node* producer = TopLevelNode(graph, v->node());
    if (producer == nullptr) {
      set.SetWholeGraph(absl::StrCat("graph input %", v->debugName(),
                                     " is not a static-shape tensor"));
    } else {
      set.Add(producer, absl::StrCat("its output %", v->debugName(), " (",
                                     v->type() ? v->type()->ToString() : "?",
                                     ") feeds an island and is neither a tensor nor a constant"));
    }
    *retry = true;
    return absl::OkStatus();
  }

  // Outputs: values used outside the island, each a static-shape tensor;
  // otherwise the users join (a graph output: the whole graph does).
  std::vector<const ir::Value*> outputs;
  bool side_effects = false;
  for (const ir::Node* n : unit.nodes) {
    side_effects |= n->outputs().empty();
    for (const ir::Value* o : n->outputs()) {
      std::vector<const ir::Node*> outside;
      for (const ir::Use& use : o->uses()) {
        const ir::Node* user = TopLevelNode(graph, use.user);
        if (user != nullptr && !members.contains(user)) outside.push_back(user);
      }
      if (outside.empty()) continue;
      if (!IsStaticTensor(o)) {
        const std::string why = absl::StrCat(
            "reads %", o->debugName(), " (", o->type() ? o->type()->ToString() : "?",
            "), an island output that is not a static-shape tensor");
        for (const ir::Node* user : outside) {
          if (user == graph.return_node()) {
            set.SetWholeGraph(absl::StrCat("graph output %", o->debugName(), " (",
                                           o->type() ? o->type()->ToString() : "?",
                                           ") comes from an island and is not a static-shape tensor"));
          } else {
            set.Add(user, why);
          }
        }
        *retry = true;
        return absl::OkStatus();
      }
      outputs.push_back(o);
    }
  }
  if (outputs.empty()) {
    // Nothing outside reads it: dead, unless it exists for a side effect.
    if (side_effects) {
      set.SetWholeGraph("an island exists only for a side effect");
      *retry = true;
    }
    return absl::OkStatus();
  }

  for (const ir::Node* n : unit.nodes) {
    ir::Node* c = island->createClone(n, [&](ir::Value* x) -> ir::Value* {
      auto it = map.find(x);
      return it == map.end() ? x : it->second;
    });
    island->block()->appendNode(c);
    for (size_t i = 0; i < n->outputs().size(); ++i) map[n->output(i)] = c->output(i);
  }
  for (const ir::Value* o : outputs) island->registerOutput(map.at(o));

  call.num_outputs = static_cast<int>(outputs.size());
  call.island = island;
  std::string holder;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ir::TensorInfo& info = outputs[i]->type()->tensor();
    Buffer b;
    b.name = ctx.NewBufferName();
    b.kind = BufferKind::kExtern;
    b.layout = Layout::Contiguous(*info.dtype, info.ConcreteSizes(),
                                  info.device ? info.device->type : "cpu");
    for (int64_t s : b.layout.sizes) {
      if (s < 0) return absl::InvalidArgumentError("lowering: negative size at an island output");
    }
    b.origins = {"interpret"};
    b.extern_output = static_cast<int>(i);
    if (holder.empty()) {
      holder = b.name;
      b.extern_call = call;
    } else {
      b.extern_source = holder;
    }
    ctx.BindTensor(outputs[i], TensorRef{b.name, b.name, b.layout});
    ctx.AddBuffer(std::move(b));
  }
  const int index = ctx.graph().num_islands;
  for (const ir::Node* n : unit.nodes) {
    if (n->kind() == ir::sym::kConstant) continue;
    FallbackNote note;
    note.kind = FallbackNote::Kind::kIsland;
    note.island = index;
    note.buffer = holder;
    note.op = NodeOp(*n, ctx.registry());
    note.node = NodeName(*n);
    auto it = set.reasons.find(n);
    note.reason = it != set.reasons.end() ? it->second : "joined the island";
    ctx.graph().fallbacks.push_back(std::move(note));
  }
  ctx.graph().num_islands += 1;
  ctx.graph().num_island_nodes += CountIslandNodes(*island);
  return absl::OkStatus();
}

}  // namespace kiln::lowering
