// Symbolic integer expressions of torch.export programs: sizes such as
// `s0`, `s0 + 1`, `Min(64, 64*s27)`, written either as sympy's str() or as
// its srepr() (`Mul(Integer(64), Symbol('s27', positive=True, integer=True))`,
// what torch 2.11 writes).
//
//   ASSIGN_OR_RETURN(SymExpr e, SymExpr::Parse("Mul(Integer(2), Symbol('s0'))"));
//   e.symbols() -> {"s0"};  e.Evaluate({{"s0", 3}}) -> 6
//
// Supported: integers, symbols, + - * (also Add/Mul), ** with a constant
// non-negative exponent (Pow), // and FloorDiv, % and Mod/PythonMod,
// Min/Max, CleanDiv/IntTrueDiv when exact. Anything else (rationals, floats,
// relations) is an error naming the expression. Evaluation uses Python's
// floor semantics and fails on overflow or division by zero.
#ifndef KILN_FRONTEND_PT2_SYM_EXPR_H_
#define KILN_FRONTEND_PT2_SYM_EXPR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::frontend::pt2 {

class SymExpr {
 public:
  enum class Op { kConstant, kSymbol, kAdd, kMul, kPow, kFloorDiv, kMod, kMin, kMax, kExactDiv };

  static absl::StatusOr<SymExpr> Parse(absl::string_view text);
  static SymExpr Constant(int64_t v);
  static SymExpr Symbol(std::string name);

  Op op() const { return node_->op; }
  // The value of a constant expression (no symbols).
  std::optional<int64_t> AsConstant() const;
  // The name when the expression is one symbol.
  std::optional<std::string> AsSymbol() const;
  std::set<std::string> symbols() const;

  // NotFound when a symbol is unbound; InvalidArgument on overflow or a zero
  // divisor.
  absl::StatusOr<int64_t> Evaluate(const absl::flat_hash_map<std::string, int64_t>& bindings) const;
  // sympy's str() form: "2*s0 + 1", "Min(64, 64*s27)".
  std::string ToString() const;

 private:
  struct Node {
    Op op;
    int depth = 1;  // of the tree below (bounded by the parser)
    int64_t value = 0;
    std::string name;
    std::vector<std::shared_ptr<const Node>> args;
  };
  explicit SymExpr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  friend class SymExprParser;
  static absl::StatusOr<int64_t> Eval(const Node& n,
                                      const absl::flat_hash_map<std::string, int64_t>& bindings);
  static void Print(const Node& n, std::string* out);

  std::shared_ptr<const Node> node_;
};

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_SYM_EXPR_H_
