#include "backends/cpu/row_reciprocals.h"

#include <set>
#include <unordered_map>

namespace kiln::backends::cpu {

using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

// Whether `e` reads an index variable >= `first` (memoized: DAGs; iterative
// over the nodes, children before parents).
class InnerDependence {
 public:
  explicit InnerDependence(int first) : first_(first) {}

  bool Of(const Expr* root) {
    std::vector<std::pair<const Expr*, bool>> stack = {{root, false}};
    while (!stack.empty()) {
      auto [e, expanded] = stack.back();
      stack.pop_back();
      if (memo_.count(e) != 0) continue;
      if (!expanded) {
        stack.push_back({e, true});
        for (const ExprPtr& a : e->args) stack.push_back({a.get(), false});
        continue;
      }
      bool d = e->op == ExprOp::kIndexVar && e->var >= first_;
      for (const ExprPtr& a : e->args) d = d || memo_.at(a.get());
      memo_.emplace(e, d);
    }
    return memo_.at(root);
  }

 private:
  int first_;
  std::unordered_map<const Expr*, bool> memo_;
};

}  // namespace

std::vector<ExprPtr> RowInvariantDivisions(const ExprPtr& body, int first_inner_var) {
  std::vector<ExprPtr> divisions;
  if (body == nullptr) return divisions;
  InnerDependence inner(first_inner_var);
  std::set<const Expr*> seen;
  std::vector<ExprPtr> stack = {body};
  while (!stack.empty()) {
    ExprPtr e = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(e.get()).second) continue;
    if (e->op == ExprOp::kDiv && e->args.size() == 2 &&
        (e->dtype == DType::kFloat32 || e->dtype == DType::kFloat64) && e->args[1]->dtype == e->dtype &&
        !inner.Of(e->args[1].get()) && inner.Of(e->args[0].get())) {
      divisions.push_back(e);
      stack.push_back(e->args[0]);  // the divisor holds no row-varying division
      continue;
    }
    for (const ExprPtr& a : e->args) stack.push_back(a);
  }
  return divisions;
}

}  // namespace kiln::backends::cpu
