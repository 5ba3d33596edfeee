#include "backends/cpu/kept_values.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

#include "backends/cpu/layout_util.h"
#include "lowering/expr_rewrite.h"
#include "lowering/index_math.h"

namespace kiln::backends::cpu {

using lowering::Buffer;
using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

// Bodies up to this many nodes (with multiplicity) are considered; the
// scheduler keeps inlined trees below 1024, and the recursive walks below
// then stay shallow.
constexpr int64_t kMaxBodySize = 4096;

// A body rewritten over canonical index variables: c0, c1, ... for the
// non-unit dims in order, 0 for unit dims. Every node but index variables
// gets a fresh canonical node, so `original` maps each back.
struct Canonical {
  ExprPtr root;
  std::vector<int64_t> ranges;  // the canonical variables' extents
  std::unordered_map<const Expr*, ExprPtr> memo;
  std::unordered_map<const Expr*, ExprPtr> original;  // canonical node -> original node
};

// `var_of[v]`: the canonical variable (or constant 0) of index variable v.
ExprPtr Canonicalize(const ExprPtr& e, const std::vector<ExprPtr>& var_of, Canonical* c) {
  auto it = c->memo.find(e.get());
  if (it != c->memo.end()) return it->second;
  ExprPtr out;
  if (e->op == ExprOp::kIndexVar && e->var >= 0 && static_cast<size_t>(e->var) < var_of.size()) {
    out = var_of[e->var];
  } else if (e->op == ExprOp::kLoad && e->args.size() == 1) {
    out = lowering::Load(e->buffer, e->dtype,
                         lowering::SimplifyIndex(Canonicalize(e->args[0], var_of, c), c->ranges));
    c->original.emplace(out.get(), e);
  } else {
    auto copy = std::make_shared<Expr>(*e);
    for (ExprPtr& a : copy->args) a = Canonicalize(a, var_of, c);
    out = std::move(copy);
    c->original.emplace(out.get(), e);
  }
  c->memo.emplace(e.get(), out);
  return out;
}

// The canonical variables of an index space: var_of[v] and, per canonical
// variable, the index variable it stands for.
struct CanonicalVars {
  std::vector<ExprPtr> var_of;
  std::vector<int> index_var;
  std::vector<int64_t> ranges;
};

CanonicalVars CanonicalVarsOf(const std::vector<int64_t>& space) {
  CanonicalVars v;
  for (size_t i = 0; i < space.size(); ++i) {
    if (space[i] == 1) {
      v.var_of.push_back(lowering::IntConst(0));
    } else {
      v.var_of.push_back(lowering::Var(static_cast<int>(v.ranges.size())));
      v.index_var.push_back(static_cast<int>(i));
      v.ranges.push_back(space[i]);
    }
  }
  return v;
}

// Structural hashing and equality of canonical trees (memoized: DAGs).
class Structure {
 public:
  size_t Hash(const Expr* e) {
    auto it = hashes_.find(e);
    if (it != hashes_.end()) return it->second;
    uint64_t bits = 0;
    static_assert(sizeof(bits) == sizeof(e->float_value));
    std::memcpy(&bits, &e->float_value, sizeof(bits));
    size_t h = std::hash<int>()(static_cast<int>(e->op) * 131 + static_cast<int>(e->dtype));
    auto mix = [&h](size_t x) { h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
    mix(std::hash<int>()(e->var));
    mix(std::hash<int64_t>()(e->int_value));
    mix(std::hash<uint64_t>()(bits));
    mix(std::hash<std::string>()(e->buffer));
    for (const ExprPtr& a : e->args) mix(Hash(a.get()));
    hashes_.emplace(e, h);
    return h;
  }

  bool Same(const Expr* a, const Expr* b) {
    if (a == b) return true;
    if (Hash(a) != Hash(b)) return false;
    if (same_.count({a, b}) != 0) return true;
    if (a->op != b->op || a->dtype != b->dtype || a->var != b->var || a->int_value != b->int_value ||
        std::memcmp(&a->float_value, &b->float_value, sizeof(a->float_value)) != 0 || a->buffer != b->buffer ||
        a->args.size() != b->args.size()) {
      return false;
    }
    for (size_t i = 0; i < a->args.size(); ++i) {
      if (!Same(a->args[i].get(), b->args[i].get())) return false;
    }
    same_.insert({a, b});
    return true;
  }

  bool ContainsExpensive(const Expr* e) {
    auto it = expensive_.find(e);
    if (it != expensive_.end()) return it->second;
    bool r = lowering::IsExpensiveOp(e->op);
    for (const ExprPtr& a : e->args) r = ContainsExpensive(a.get()) || r;
    expensive_.emplace(e, r);
    return r;
  }

 private:
  std::unordered_map<const Expr*, size_t> hashes_;
  std::unordered_map<const Expr*, bool> expensive_;
  std::set<std::pair<const Expr*, const Expr*>> same_;
};

// Every node of a DAG once.
std::vector<ExprPtr> Nodes(const ExprPtr& root) {
  std::vector<ExprPtr> nodes, stack = {root};
  std::set<const Expr*> seen;
  while (!stack.empty()) {
    ExprPtr x = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(x.get()).second) continue;
    for (const ExprPtr& a : x->args) stack.push_back(a);
    nodes.push_back(std::move(x));
  }
  return nodes;
}

// The flat offset `buf` stores index (v0..) of `ranges` at, as
// kernel_codegen's StoreIndex writes it; null when the layout does not
// match the ranges (codegen reports that).
ExprPtr OwnIndex(const Buffer& buf, const std::vector<int64_t>& ranges) {
  const lowering::Layout& l = buf.layout;
  if (l.strides.size() != l.sizes.size()) return nullptr;
  const std::vector<ExprPtr> vars = lowering::Vars(0, static_cast<int>(ranges.size()));
  if (l.sizes == ranges) return lowering::FlatIndex(l, vars, ranges);
  lowering::Layout row_major = lowering::Layout::Contiguous(l.dtype, ranges);
  if (row_major.numel() != l.numel() || !IsContiguousLayout(l)) return nullptr;
  row_major.offset = l.offset;
  return lowering::FlatIndex(row_major, vars, ranges);
}

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat64; }

}  // namespace

std::vector<KeptValue> PlanKeptValues(const lowering::LoopGraph& graph, const lowering::FusedKernel& kernel) {
  std::vector<KeptValue> kept;
  std::vector<const Buffer*> members;
  for (const std::string& name : kernel.buffers) {
    const Buffer* b = FindBuffer(graph, name);
    if (b == nullptr) return {};
    members.push_back(b);
  }
  for (size_t p = 0; p < members.size(); ++p) {
    const Buffer& pw = *members[p];
    if (!pw.pointwise.has_value() || pw.pointwise->body == nullptr || !IsFloat(pw.layout.dtype) ||
        std::find(kernel.reads.begin(), kernel.reads.end(), pw.name) != kernel.reads.end() ||
        lowering::ExprTreeSize(pw.pointwise->body, kMaxBodySize) >= kMaxBodySize) {
      continue;
    }
    const ExprPtr own_index = OwnIndex(pw, pw.pointwise->ranges);
    if (own_index == nullptr) continue;
    const CanonicalVars pvars = CanonicalVarsOf(pw.pointwise->ranges);
    Canonical pc;
    pc.ranges = pvars.ranges;
    pc.root = Canonicalize(pw.pointwise->body, pvars.var_of, &pc);
    // `structure` memoizes by node address: every canonical tree it sees
    // stays alive (in `reductions`) until it is gone.
    std::vector<std::unique_ptr<Canonical>> reductions;
    Structure structure;
    const std::vector<ExprPtr> candidates = Nodes(pc.root);

    // The largest match over the earlier reductions.
    int64_t best_size = 0;
    const Expr* best_p = nullptr;
    const Expr* best_r = nullptr;
    const Buffer* best_red = nullptr;
    const Canonical* best_rc = nullptr;
    CanonicalVars best_rvars;
    for (size_t r = 0; r < p; ++r) {
      const Buffer& red = *members[r];
      if (!red.reduction.has_value() || red.reduction->body == nullptr ||
          lowering::ExprTreeSize(red.reduction->body, kMaxBodySize) >= kMaxBodySize) {
        continue;
      }
      std::vector<int64_t> space = red.reduction->ranges;
      space.insert(space.end(), red.reduction->reduction_ranges.begin(), red.reduction->reduction_ranges.end());
      CanonicalVars rvars = CanonicalVarsOf(space);
      if (rvars.ranges != pvars.ranges) continue;  // not the same elements
      reductions.push_back(std::make_unique<Canonical>());
      Canonical* rc = reductions.back().get();
      rc->ranges = rvars.ranges;
      rc->root = Canonicalize(red.reduction->body, rvars.var_of, rc);
      std::unordered_multimap<size_t, const Expr*> by_hash;
      for (const ExprPtr& n : Nodes(rc->root)) by_hash.emplace(structure.Hash(n.get()), n.get());
      bool improved = false;
      for (const ExprPtr& n : candidates) {
        if (n->dtype != pw.layout.dtype || n->op == ExprOp::kLoad || !structure.ContainsExpensive(n.get())) {
          continue;
        }
        const int64_t size = lowering::ExprTreeSize(n, kMaxBodySize);
        if (size <= best_size) continue;
        auto [lo, hi] = by_hash.equal_range(structure.Hash(n.get()));
        for (auto it = lo; it != hi; ++it) {
          if (!structure.Same(n.get(), it->second)) continue;
          best_size = size;
          best_p = n.get();
          best_r = it->second;
          best_red = &red;
          improved = true;
          break;
        }
      }
      if (improved) {
        best_rc = rc;
        best_rvars = std::move(rvars);
      }
    }
    if (best_p == nullptr) continue;

    KeptValue k;
    k.reduction = best_red->name;
    k.value = best_rc->original.at(best_r);
    k.target = pw.name;
    k.target_body = lowering::ReplaceNode(pw.pointwise->body, pc.original.at(best_p).get(),
                                          lowering::Load(pw.name, pw.layout.dtype, own_index));
    // The pointwise's index variables in the reduction's: canonical
    // variable c is the reduction's index variable best_rvars.index_var[c].
    std::vector<ExprPtr> to_reduction;
    for (const ExprPtr& v : pvars.var_of) {
      to_reduction.push_back(v->op == ExprOp::kIndexVar ? lowering::Var(best_rvars.index_var[v->var]) : v);
    }
    std::vector<int64_t> rspace = best_red->reduction->ranges;
    rspace.insert(rspace.end(), best_red->reduction->reduction_ranges.begin(),
                  best_red->reduction->reduction_ranges.end());
    k.store_index = lowering::SubstituteVars(own_index, to_reduction, rspace);
    kept.push_back(std::move(k));
  }
  return kept;
}

}  // namespace kiln::backends::cpu
