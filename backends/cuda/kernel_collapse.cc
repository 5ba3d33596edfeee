#include "backends/cuda/kernel_collapse.h"

#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "backends/cuda/cuda_expr_emitter.h"

namespace kiln::backends::cuda {

using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

constexpr int kMaxDepth = 64;

// An offset split into sum(coef[v] * v) + constant + other terms (which
// mention the variables in `blocked` non-affinely).
struct Affine {
  std::map<int, int64_t> coef;
  int64_t constant = 0;
  std::vector<ExprPtr> others;
  std::set<int> blocked;
};

void CollectVars(const Expr* e, std::set<int>* vars, int depth, int* budget) {
  if (e == nullptr || --*budget < 0 || depth > kMaxDepth) return;
  if (e->op == ExprOp::kIndexVar) vars->insert(e->var);
  for (const ExprPtr& a : e->args) CollectVars(a.get(), vars, depth + 1, budget);
}

bool IsConst(const ExprPtr& e) { return e->op == ExprOp::kIntConst && e->dtype == DType::kInt64; }

// False when the offset is too large to analyse.
bool Decompose(const ExprPtr& e, Affine* a, int depth) {
  if (e == nullptr || depth > kMaxDepth) return false;
  if (e->op == ExprOp::kAdd && e->args.size() == 2 && e->dtype == DType::kInt64) {
    return Decompose(e->args[0], a, depth + 1) && Decompose(e->args[1], a, depth + 1);
  }
  if (IsConst(e)) {
    a->constant += e->int_value;
    return true;
  }
  if (e->op == ExprOp::kIndexVar) {
    a->coef[e->var] += 1;
    return true;
  }
  if (e->op == ExprOp::kMul && e->args.size() == 2) {
    for (int side = 0; side < 2; ++side) {
      const ExprPtr& v = e->args[side];
      const ExprPtr& c = e->args[1 - side];
      if (v->op == ExprOp::kIndexVar && IsConst(c)) {
        a->coef[v->var] += c->int_value;
        return true;
      }
    }
  }
  int budget = 4096;
  std::set<int> vars;
  CollectVars(e.get(), &vars, 0, &budget);
  if (budget < 0) return false;
  a->blocked.insert(vars.begin(), vars.end());
  a->others.push_back(e);
  return true;
}

ExprPtr Add(ExprPtr a, ExprPtr b) {
  if (a == nullptr) return b;
  return lowering::Binary(ExprOp::kAdd, std::move(a), std::move(b));
}

// Renames index variables (unmerged dims keep their meaning); null when
// too deep or a variable has no new name.
ExprPtr Rename(const ExprPtr& e, const std::vector<int>& new_var, int depth) {
  if (e == nullptr || depth > kMaxDepth) return nullptr;
  if (e->op == ExprOp::kIndexVar) {
    if (e->var < 0 || e->var >= static_cast<int>(new_var.size()) || new_var[e->var] < 0) return nullptr;
    return lowering::Var(new_var[e->var]);
  }
  if (e->args.empty()) return e;
  auto copy = std::make_shared<Expr>(*e);
  for (ExprPtr& a : copy->args) {
    a = Rename(a, new_var, depth + 1);
    if (a == nullptr) return nullptr;
  }
  return copy;
}

}  // namespace

std::optional<CollapsedSpace> CollapsePointwiseSpace(const std::vector<int64_t>& ranges,
                                                     const std::vector<ExprPtr>& bodies) {
  const int n = static_cast<int>(ranges.size());
  // Index variables may appear only inside load offsets.
  std::vector<const Expr*> loads;
  for (const ExprPtr& body : bodies) {
    if (body == nullptr || !CollectLoadNodes(body, &loads)) return std::nullopt;
    std::unordered_set<const Expr*> seen;
    std::vector<std::pair<const Expr*, int>> stack = {{body.get(), 0}};
    while (!stack.empty()) {
      auto [e, depth] = stack.back();
      stack.pop_back();
      if (!seen.insert(e).second) continue;
      if (depth > kCudaMaxExprDepth || e->op == ExprOp::kIndexVar) return std::nullopt;
      if (e->op == ExprOp::kLoad) continue;  // its offset is analysed below
      for (const ExprPtr& a : e->args) stack.push_back({a.get(), depth + 1});
    }
  }
  std::unordered_map<const Expr*, Affine> affine;
  std::set<int> blocked;
  for (const Expr* l : loads) {
    if (l->args.size() != 1 || affine.count(l) != 0) continue;
    Affine a;
    if (!Decompose(l->args[0], &a, 0)) return std::nullopt;
    for (const auto& [v, c] : a.coef) {
      if (v < 0 || v >= n) return std::nullopt;
    }
    for (int v : a.blocked) {
      if (v < 0 || v >= n) return std::nullopt;
    }
    blocked.insert(a.blocked.begin(), a.blocked.end());
    affine.emplace(l, std::move(a));
  }
  // Chains of mergeable non-unit dims, outermost first.
  std::vector<int> dims;
  for (int i = 0; i < n; ++i) {
    if (ranges[i] != 1) dims.push_back(i);
  }
  std::vector<std::vector<int>> groups;
  for (int d : dims) {
    bool merge = !groups.empty() && blocked.count(d) == 0 && blocked.count(groups.back().back()) == 0;
    const int prev = merge ? groups.back().back() : -1;
    for (const auto& entry : affine) {
      if (!merge) break;
      const auto& coef = entry.second.coef;
      auto get = [&](int v) {
        auto it = coef.find(v);
        return it == coef.end() ? int64_t{0} : it->second;
      };
      int64_t scaled = 0;
      merge = !__builtin_mul_overflow(get(d), ranges[d], &scaled) && get(prev) == scaled;
    }
    if (merge) {
      groups.back().push_back(d);
    } else {
      groups.push_back({d});
    }
  }
  if (groups.size() == dims.size()) return std::nullopt;  // nothing merges

  CollapsedSpace out;
  std::vector<int> new_var(n, -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    int64_t size = 1;
    for (int d : groups[g]) size *= ranges[d];
    out.ranges.push_back(size);
    for (int d : groups[g]) new_var[d] = static_cast<int>(g);
  }
  if (out.ranges.empty()) return std::nullopt;
  // Rebuild each load's offset over the new variables; size-1 dims are 0.
  std::unordered_map<const Expr*, ExprPtr> rewritten;
  for (const auto& [load, a] : affine) {
    ExprPtr index;
    for (size_t g = 0; g < groups.size(); ++g) {
      auto it = a.coef.find(groups[g].back());
      const int64_t c = it == a.coef.end() ? 0 : it->second;
      if (c == 0) continue;
      ExprPtr term = lowering::Var(static_cast<int>(g));
      if (c != 1) term = lowering::Binary(ExprOp::kMul, term, lowering::IntConst(c));
      index = Add(index, term);
    }
    for (const ExprPtr& other : a.others) {
      // Only unmerged dims appear here (blocked); a size-1 dim's variable
      // has no new name, and the space then stays as it is.
      ExprPtr r = Rename(other, new_var, 0);
      if (r == nullptr) return std::nullopt;
      index = Add(index, r);
    }
    if (a.constant != 0 || index == nullptr) index = Add(index, lowering::IntConst(a.constant));
    auto copy = std::make_shared<Expr>(*load);
    copy->args = {index};
    rewritten.emplace(load, copy);
  }
  // Rebuild the bodies around the new loads (memoized: the bodies are DAGs).
  std::unordered_map<const Expr*, ExprPtr> memo;
  std::function<ExprPtr(const ExprPtr&, int)> rebuild = [&](const ExprPtr& e, int depth) -> ExprPtr {
    auto r = rewritten.find(e.get());
    if (r != rewritten.end()) return r->second;
    if (e->args.empty()) return e;
    if (depth > kCudaMaxExprDepth) return nullptr;
    auto m = memo.find(e.get());
    if (m != memo.end()) return m->second;
    auto copy = std::make_shared<Expr>(*e);
    for (ExprPtr& a : copy->args) {
      a = rebuild(a, depth + 1);
      if (a == nullptr) return nullptr;
    }
    memo.emplace(e.get(), copy);
    return copy;
  };
  for (const ExprPtr& body : bodies) {
    ExprPtr b = rebuild(body, 0);
    if (b == nullptr) return std::nullopt;
    out.bodies.push_back(std::move(b));
  }
  return out;
}

}  // namespace kiln::backends::cuda
