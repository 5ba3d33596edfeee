// The CPU's C++ for the loop IR's expression trees: the shared C-family
// emitter (codegen/c_expr_emitter.h) with the CPU's dialect (int64_t,
// INT64_C literals, compiler-builtin infinities and NaNs; no headers).
#ifndef KILN_BACKENDS_CPU_EXPR_EMITTER_H_
#define KILN_BACKENDS_CPU_EXPR_EMITTER_H_

#include <map>
#include <string>

#include "codegen/c_dialect.h"
#include "codegen/c_expr_emitter.h"
#include "support/dtype.h"

namespace kiln::backends::cpu {

using codegen::kMaxExprDepth;

// A buffer a kernel may load from: its C identifier and element type.
using BufferRef = codegen::CBufferRef;

// Literals of each type, never locale-dependent.
std::string IntLiteral(int64_t v);
std::string FloatLiteral(double v, DType dtype);

// Generated C++ as the CPU compiles it.
const codegen::CDialect& CpuDialect();

class ExprEmitter : public codegen::CExprEmitter {
 public:
  // `num_vars`: index variables v0..v{num_vars-1} are bound (as l_v0...).
  // `temp_counter` numbers temporaries across emitters of one kernel.
  ExprEmitter(const std::map<std::string, BufferRef>* buffers, int num_vars, int* temp_counter);
};

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_EXPR_EMITTER_H_
