// Emits C++ for the loop IR's expression trees. Shared subexpressions (the
// trees are DAGs after inlining) become one `const T l_tN = ...;` each, so
// the generated code stays linear in the DAG's size.
#ifndef KILN_BACKENDS_CPU_EXPR_EMITTER_H_
#define KILN_BACKENDS_CPU_EXPR_EMITTER_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"
#include "support/dtype.h"

namespace kiln::backends::cpu {

// Deeper expressions are rejected (no unbounded recursion on input data).
inline constexpr int kMaxExprDepth = 400;

// A buffer a kernel may load from: its C identifier and element type.
struct BufferRef {
  std::string identifier;
  DType dtype = DType::kFloat32;
};

// Literals of each type, never locale-dependent.
std::string IntLiteral(int64_t v);
std::string FloatLiteral(double v, DType dtype);

class ExprEmitter {
 public:
  // `num_vars`: index variables v0..v{num_vars-1} are bound (as l_v0...).
  // `temp_counter` numbers temporaries across emitters of one kernel.
  ExprEmitter(const std::map<std::string, BufferRef>* buffers, int num_vars, int* temp_counter)
      : buffers_(buffers), num_vars_(num_vars), temp_counter_(temp_counter) {}

  // A C++ expression for `e` (a literal, a variable or a temporary); the
  // statements it needs are appended to `statements()`.
  absl::StatusOr<std::string> Emit(const lowering::ExprPtr& e);
  const std::string& statements() const { return statements_; }
  void set_indent(std::string indent) { indent_ = std::move(indent); }

 private:
  absl::StatusOr<std::string> EmitAt(const lowering::ExprPtr& e, int depth);
  absl::StatusOr<std::string> EmitNode(const lowering::Expr& e, int depth);
  std::string Temp(DType dtype, const std::string& type, const std::string& value);

  const std::map<std::string, BufferRef>* buffers_;
  int num_vars_;
  int* temp_counter_;
  std::string indent_ = "      ";
  std::string statements_;
  std::map<const lowering::Expr*, std::string> memo_;
};

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_EXPR_EMITTER_H_
