// The IR verifier: checks every structural invariant of a Graph (what
// PyTorch's Graph::lint / Node::lint check, plus prim::If / prim::Loop shape
// rules and, optionally, operator schemas).
//
//   RETURN_IF_ERROR(Verify(*graph));
//
// Checked:
//  * SSA dominance across nested blocks: an input is defined earlier in the
//    same block or in an enclosing block before the owning node; a node's
//    own outputs are not visible inside its blocks.
//  * Use lists: every input slot has exactly one matching Use and every Use
//    points back at its slot; nodes the graph owns are all reachable.
//  * Structure: block sentinels (prim::Param / prim::Return), owner links,
//    list links, topological positions increasing along each block, value
//    node/offset back-pointers, uniques unique and below nextUnique().
//  * prim::Constant has no inputs or blocks; prim::If has one bool input,
//    two input-less blocks whose output counts equal the node's; prim::Loop
//    (max_trip_count: int, cond: bool, carried...) has one body block with
//    inputs (int, carried...) and outputs (bool, carried...).
//  * With check_schemas: a node whose kind has registered schemas must
//    match one (OpRegistry::Match); the error lists the candidates.
//
// The first violation is reported as InvalidArgumentError naming the node
// (`%y : Tensor = aten::relu(%x)`). Linear time, no recursion (any nesting
// depth is fine).
#ifndef KILN_IR_VERIFIER_H_
#define KILN_IR_VERIFIER_H_

#include <string>

#include "absl/status/status.h"
#include "ir/ir.h"
#include "ir/op_registry.h"

namespace kiln::ir {

struct VerifyOptions {
  bool check_schemas = true;
  // Registry for schema checks; null means BuiltinOps().
  const OpRegistry* ops = nullptr;
};

absl::Status Verify(const Graph& graph, const VerifyOptions& options = {});

// `%y : Tensor = aten::relu(%x)`: one node (without its blocks), for messages.
std::string DescribeNode(const Node& node);

}  // namespace kiln::ir

#endif  // KILN_IR_VERIFIER_H_
