// Rewrites of loop-IR expression trees (DAGs of shared nodes): collecting
// loads, substituting index variables, and replacing the loads of one
// buffer. Shared sub-trees are rewritten once (memoized by node), so the
// result stays a DAG. Callers bound tree sizes first (ExprTreeSize): the
// rewrites recurse.
#ifndef KILN_LOWERING_EXPR_REWRITE_H_
#define KILN_LOWERING_EXPR_REWRITE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

// Number of loads of each buffer in `e`, counted with multiplicity.
void CountLoads(const ExprPtr& e, std::map<std::string, int64_t>* counts);

// Every load in `e` (with multiplicity), in no particular order.
void CollectLoads(const ExprPtr& e, std::vector<const Expr*>* loads);

// `e` with v_k replaced by `values[k]` (variables past the end are kept),
// and every load index re-simplified over `var_ranges`.
ExprPtr SubstituteVars(const ExprPtr& e, absl::Span<const ExprPtr> values,
                       absl::Span<const int64_t> var_ranges);

// `e` with each load of `buffer` replaced by `replace(load)`.
ExprPtr ReplaceLoads(const ExprPtr& e, const std::string& buffer,
                     const std::function<ExprPtr(const Expr& load)>& replace);

// `e` with every use of the node `target` (compared by address) replaced
// by `replacement`.
ExprPtr ReplaceNode(const ExprPtr& e, const Expr* target, const ExprPtr& replacement);

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_EXPR_REWRITE_H_
