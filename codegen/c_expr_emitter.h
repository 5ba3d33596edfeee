// Prints the loop IR's expression trees as C-family source, for every device
// whose kernels are C (the CPU's C++, CUDA C++, out-of-tree C dialects). One
// switch over the loop IR's ops; what a language spells its own way comes
// from its CDialect (c_dialect.h), and a device that loads differently
// (vector loads, registers) overrides EmitLoad.
//
// Shared subexpressions (the trees are DAGs after inlining) become one
// `const T l_tN = ...;` each, and equal expressions over the same
// temporaries are emitted once (value numbering), so the generated code
// stays linear in the DAG's size.
//
// Lane mode: one thread (or SIMD loop body) computes several consecutive
// values of an innermost index variable, the lane variable. Emit(e, k) gives
// lane k's value; subtrees that do not depend on the lane variable are
// emitted once and shared by all lanes.
//
// Semantics are lowering/loop_ir.h's: integer division, modulo and power
// through the helpers of c_prelude.h (Python floor semantics, no traps);
// NaN-propagating max/min and relu; math on integer values in double.
#ifndef KILN_CODEGEN_C_EXPR_EMITTER_H_
#define KILN_CODEGEN_C_EXPR_EMITTER_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/c_dialect.h"
#include "lowering/loop_ir.h"
#include "support/dtype.h"

namespace kiln::codegen {

// Deeper expressions are rejected (no unbounded recursion on input data).
inline constexpr int kMaxExprDepth = 400;

// A buffer a kernel may load from.
struct CBufferRef {
  std::string identifier;  // its pointer parameter
  DType dtype = DType::kFloat32;
  // When set, loads of this buffer read this register instead: a value the
  // kernel already computed for the current outer index (a reduction result
  // or a per-row pointwise value). Loads between members of one kernel are
  // always at the member's own index (FusedKernel's contract).
  std::string scalar;
  DType scalar_dtype = DType::kFloat32;
};

// `value` of type `from` converted to `to` (whose compute type name is
// `to_type`): a test against zero for bool, a static_cast otherwise, and
// nothing when the types are equal.
std::string CCast(const std::string& value, DType from, DType to, const std::string& to_type);

class CExprEmitter {
 public:
  // `vars[i]`: the C expression (an int64 value) bound to index variable
  // v{i}. `temp_counter` numbers temporaries across the emitters of one
  // kernel. `dialect`, `buffers` and the emitted expressions must outlive
  // the emitter (values are memoized by node address).
  CExprEmitter(const CDialect* dialect, const std::map<std::string, CBufferRef>* buffers,
               std::vector<std::string> vars, int* temp_counter)
      : dialect_(dialect), buffers_(buffers), vars_(std::move(vars)), temp_counter_(temp_counter) {}
  virtual ~CExprEmitter() = default;
  CExprEmitter(const CExprEmitter&) = delete;
  CExprEmitter& operator=(const CExprEmitter&) = delete;

  // Lane mode over index variable `var` (see the file comment).
  void SetLaneVar(int var) { lane_var_ = var; }
  void set_indent(std::string indent) { indent_ = std::move(indent); }

  // A C expression for `e` in `lane` (a literal, a variable or a
  // temporary); the statements it needs are appended to the pending
  // statements.
  absl::StatusOr<std::string> Emit(const lowering::ExprPtr& e, int lane = 0);
  // The pending statements.
  const std::string& statements() const { return statements_; }
  // The pending statements, cleared.
  std::string TakeStatements() { return std::exchange(statements_, std::string()); }

 protected:
  // A load of `ref` (already found; e.args[0] is the flat index) in `lane`
  // (-1 when the load does not depend on the lane variable). The default
  // reads the register of a scalar ref, else `identifier[index]`.
  virtual absl::StatusOr<std::string> EmitLoad(const lowering::Expr& e, const CBufferRef& ref, int lane,
                                               int depth);

  // The value of `e` (memoized per lane).
  absl::StatusOr<std::string> EmitAt(const lowering::ExprPtr& e, int lane, int depth);
  // Hooks around each node's first emission (per lane; `lane` is -1 for a
  // value shared by all lanes): a device that keeps values across emitters
  // (CUDA's row kernels keep exp() of a softmax row from one pass to the
  // next) returns a kept value from Reused, and sees each new one in
  // Emitted. By default nothing is kept.
  virtual std::optional<std::string> Reused(const lowering::Expr& /*e*/, int /*lane*/, int /*depth*/) {
    return std::nullopt;
  }
  virtual void Emitted(const lowering::Expr& /*e*/, int /*lane*/, const std::string& /*value*/) {}
  // `const type l_tN = value;` (or the temporary that already holds it).
  std::string Temp(const std::string& type, const std::string& value);
  // `type`-typed temporary of element `element` of a buffer of `storage`.
  absl::StatusOr<std::string> LoadTemp(const std::string& element, DType storage, DType to);
  // CCast through the dialect's compute type of `to`; a narrow float is
  // rounded to its precision (stored and loaded back).
  absl::StatusOr<std::string> CastTo(const std::string& value, DType from, DType to) const;
  // An error naming the dialect: "cuda codegen: <what>".
  absl::Status Invalid(const std::string& what) const;

  const CDialect& dialect() const { return *dialect_; }
  const std::vector<std::string>& vars() const { return vars_; }
  int lane_var() const { return lane_var_; }
  const std::string& indent() const { return indent_; }
  void AppendStatement(const std::string& text) { statements_ += text; }

 private:
  absl::StatusOr<std::string> EmitNode(const lowering::Expr& e, int lane, int depth);
  bool DependsOnLane(const lowering::Expr* e, int depth);

  const CDialect* dialect_;
  const std::map<std::string, CBufferRef>* buffers_;
  std::vector<std::string> vars_;
  int* temp_counter_;
  int lane_var_ = -1;
  std::string indent_ = "    ";
  std::string statements_;
  std::map<std::pair<const lowering::Expr*, int>, std::string> memo_;
  std::map<std::string, std::string> values_;  // "type|expression" -> temporary
  std::map<const lowering::Expr*, bool> depends_;
};

}  // namespace kiln::codegen

#endif  // KILN_CODEGEN_C_EXPR_EMITTER_H_
