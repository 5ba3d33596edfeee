#include "lowering/expr_rewrite.h"

#include <memory>
#include <unordered_map>
#include <utility>

#include "lowering/index_math.h"

namespace kiln::lowering {
namespace {

using Memo = std::unordered_map<const Expr*, ExprPtr>;

// Rebuilds `e` bottom-up with `leaf` deciding each node first (non-null:
// that node's replacement, children not visited).
ExprPtr Rewrite(const ExprPtr& e, const std::function<ExprPtr(const ExprPtr&)>& leaf, Memo* memo) {
  auto it = memo->find(e.get());
  if (it != memo->end()) return it->second;
  ExprPtr out = leaf(e);
  if (!out) {
    bool changed = false;
    std::vector<ExprPtr> args;
    args.reserve(e->args.size());
    for (const ExprPtr& a : e->args) {
      args.push_back(Rewrite(a, leaf, memo));
      changed |= args.back() != a;
    }
    if (changed) {
      auto copy = std::make_shared<Expr>(*e);
      copy->args = std::move(args);
      out = std::move(copy);
    } else {
      out = e;
    }
  }
  memo->emplace(e.get(), out);
  return out;
}

}  // namespace

void CollectLoads(const ExprPtr& e, std::vector<const Expr*>* loads) {
  std::vector<const Expr*> stack = {e.get()};
  while (!stack.empty()) {
    const Expr* x = stack.back();
    stack.pop_back();
    if (x->op == ExprOp::kLoad) loads->push_back(x);
    for (const ExprPtr& a : x->args) stack.push_back(a.get());
  }
}

void CountLoads(const ExprPtr& e, std::map<std::string, int64_t>* counts) {
  std::vector<const Expr*> loads;
  CollectLoads(e, &loads);
  for (const Expr* l : loads) ++(*counts)[l->buffer];
}

ExprPtr SubstituteVars(const ExprPtr& e, absl::Span<const ExprPtr> values,
                       absl::Span<const int64_t> var_ranges) {
  Memo memo;
  std::function<ExprPtr(const ExprPtr&)> leaf = [&](const ExprPtr& x) -> ExprPtr {
    if (x->op == ExprOp::kIndexVar && x->var >= 0 && static_cast<size_t>(x->var) < values.size()) {
      return values[x->var];
    }
    if (x->op == ExprOp::kLoad) {
      ExprPtr index = Rewrite(x->args[0], leaf, &memo);
      return Load(x->buffer, x->dtype, SimplifyIndex(index, var_ranges));
    }
    return nullptr;
  };
  return Rewrite(e, leaf, &memo);
}

ExprPtr ReplaceLoads(const ExprPtr& e, const std::string& buffer,
                     const std::function<ExprPtr(const Expr& load)>& replace) {
  Memo memo;
  return Rewrite(
      e,
      [&](const ExprPtr& x) -> ExprPtr {
        if (x->op == ExprOp::kLoad && x->buffer == buffer) return replace(*x);
        return nullptr;
      },
      &memo);
}

ExprPtr ReplaceNode(const ExprPtr& e, const Expr* target, const ExprPtr& replacement) {
  Memo memo;
  return Rewrite(
      e, [&](const ExprPtr& x) -> ExprPtr { return x.get() == target ? replacement : nullptr; }, &memo);
}

}  // namespace kiln::lowering
