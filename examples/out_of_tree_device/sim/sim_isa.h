// The sim accelerator's kernel format: a tiny register bytecode, one
// "section" per buffer a fused kernel writes. kiln's kernel codegen hook
// (SimCodegen::KernelSource) compiles a kernel's loop-level expressions into
// this form and prints it as text (the body kiln keeps in its
// KernelDefinitionLine); SimCodegen::Compile parses the text back
// (ParseKernel), exactly as a real driver would load a binary.
//
//   .kernel sim_fused_relu_0
//   .param arg0 Float            parameter 0: the kernel's reads, then
//   .param buf0 Float            parameter 1: the buffers it writes
//   .section 1 pointwise         writes parameter 1
//   .ranges 4 8                  index space (v0, v1)
//   .store 8 1 0                 output strides and offset (elements)
//   %0 = var Long 0
//   %1 = int Long 8
//   %2 = mul Long %0 %1
//   %3 = var Long 1
//   %4 = add Long %2 %3
//   %5 = load Float @0 %4        parameter 0 at flat element offset %4
//   %6 = relu Float %5
//   .result %6
//   .end
//
// A reduction section adds `.reduce <type> <reduction ranges...>` (its body
// is evaluated for every reduced index v_k.., accumulated per output
// element). Every register is assigned once, before its uses (SSA), so a
// shared subexpression is computed once per element.
#ifndef KILN_SIM_SIM_ISA_H_
#define KILN_SIM_SIM_ISA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"
#include "support/dtype.h"

namespace kiln_sim {

struct Instr {
  kiln::lowering::ExprOp op = kiln::lowering::ExprOp::kIntConst;
  kiln::DType dtype = kiln::DType::kInt64;
  int var = -1;             // kIndexVar
  int64_t int_value = 0;    // kIntConst
  double float_value = 0;   // kFloatConst
  int param = -1;           // kLoad
  std::vector<int> args;    // registers
};

struct Section {
  int param = -1;  // the parameter it writes
  bool is_reduction = false;
  kiln::lowering::ReductionType reduction = kiln::lowering::ReductionType::kSum;
  std::vector<int64_t> ranges;
  std::vector<int64_t> reduction_ranges;
  std::vector<int64_t> store_strides;  // one per range
  int64_t store_offset = 0;
  std::vector<Instr> code;
  int result = -1;  // register stored (cast to the parameter's dtype)
};

struct Kernel {
  std::string name;
  std::vector<std::pair<std::string, kiln::DType>> params;
  std::vector<Section> sections;
};

// The dtypes sim kernels load, compute and store.
bool IsSimDtype(kiln::DType dtype);

// Compiles one fused kernel (parameters: kernel.reads, then kernel.buffers).
absl::StatusOr<Kernel> CompileKernel(const kiln::lowering::LoopGraph& graph,
                                     const kiln::lowering::FusedKernel& kernel);
// Text form (above) and back. ParseKernel checks everything an executor
// relies on (register order, operand counts, parameter and variable
// indices, ranges), so a parsed kernel never indexes out of its tables.
std::string PrintKernel(const Kernel& kernel);
absl::StatusOr<Kernel> ParseKernel(absl::string_view text);

}  // namespace kiln_sim

#endif  // KILN_SIM_SIM_ISA_H_
