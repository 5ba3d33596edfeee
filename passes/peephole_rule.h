// The peephole rule interface: small rule objects, each with a name, the
// node kind it is rooted at and a test-and-rewrite function. The driver
// (passes/peephole.cc) dispatches on the node kind in one forward walk and
// revisits the users of rewritten values through a worklist.
//
// A rule's `apply` looks at its root node (and the producers of its inputs),
// and either returns false having changed nothing, or rewrites through the
// RewriteContext and returns true. Rules never scan the graph, and they
// destroy nothing but their root (RewriteContext::Erase) and producers that
// their rewrite left unused. The catalogue is passes/PEEPHOLE_RULES.md.
#ifndef KILN_PASSES_PEEPHOLE_RULE_H_
#define KILN_PASSES_PEEPHOLE_RULE_H_

#include <optional>
#include <vector>

#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "support/dtype.h"

namespace kiln::passes {

class RewriteContext {
 public:
  virtual ~RewriteContext() = default;

  virtual ir::Graph& graph() = 0;
  virtual const ir::OpRegistry& ops() = 0;

  // Replaces every use of `from` with `to`; the users get another look.
  virtual void Replace(ir::Value* from, ir::Value* to) = 0;
  // Sets input `i` of `n` to `v`; the old input's node is destroyed if it
  // was a prim::Constant left unused.
  virtual void ReplaceInput(ir::Node* n, size_t i, ir::Value* v) = 0;
  // A prim::Constant holding `value`, inserted just before `before`; null
  // when the value has no constant form.
  virtual ir::Value* Constant(ir::Node* before, const ir::IValue& value) = 0;
  // Destroys `n`, whose outputs must be unused, and the prim::Constant
  // inputs it leaves unused. The node owning `n`'s block gets another look.
  virtual void Erase(ir::Node* n) = 0;
  // Asks the driver to run the rules on `n` again.
  virtual void Revisit(ir::Node* n) = 0;
};

struct PeepholeRule {
  const char* name;  // snake_case; a statistics counter and log tag
  ir::Symbol root;   // the node kind the rule is tried on
  bool (*apply)(ir::Node* root, RewriteContext& ctx);
};

// The rule families (one file each).
std::vector<PeepholeRule> ArithPeepholeRules();
std::vector<PeepholeRule> ShapePeepholeRules();
std::vector<PeepholeRule> ControlPeepholeRules();
std::vector<PeepholeRule> ListPeepholeRules();

// ---- helpers shared by the rule files

// The known dtype of a tensor-typed value.
std::optional<DType> KnownDType(const ir::Value* v);
// The int / float / bool a scalar constant holds.
std::optional<int64_t> ConstantInt(const ir::Value* v);
std::optional<double> ConstantDouble(const ir::Value* v);
// `v` may be None (NoneType, Optional, Any) / can never be None.
bool MustBeNone(const ir::Value* v);
bool MustNotBeNone(const ir::Value* v);
// Replaces `root`'s only output with `v` and erases `root`.
bool ForwardTo(ir::Node* root, ir::Value* v, RewriteContext& ctx);
// Replaces `root`'s only output with a constant and erases `root`.
bool FoldTo(ir::Node* root, const ir::IValue& value, RewriteContext& ctx);

}  // namespace kiln::passes

#endif  // KILN_PASSES_PEEPHOLE_RULE_H_
