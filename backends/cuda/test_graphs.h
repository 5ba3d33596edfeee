// Test helpers for the CUDA kernel codegen: TorchScript IR text -> shape
// propagation and decomposition (passes::PrepareForLowering) -> LoopGraph -> Schedule (device "cuda"). Builders for
// hand-written loop IR: lowering/test_graphs.h.
#ifndef KILN_BACKENDS_CUDA_TEST_GRAPHS_H_
#define KILN_BACKENDS_CUDA_TEST_GRAPHS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "lowering/loop_ir.h"
#include "lowering/lower.h"
#include "lowering/schedule.h"
#include "passes/decompositions.h"
#include "passes/pass.h"
#include "passes/shape_functions.h"
#include "passes/shape_propagation.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::backends::cuda::testing {

struct Scheduled {
  std::unique_ptr<ir::Graph> ir;  // after shape propagation and decomposition (the interpreter's oracle input)
  lowering::LoopGraph graph;
  lowering::Schedule schedule;
};

inline absl::StatusOr<Scheduled> LowerAndSchedule(const std::string& text) {
  RETURN_IF_ERROR(passes::RegisterShapeFunctions());
  RETURN_IF_ERROR(runtime::RegisterReferenceKernels(ir::BuiltinOps()));
  Scheduled s;
  ASSIGN_OR_RETURN(s.ir, ir::ParseGraph(text));
  passes::PassStatistics stats;
  RETURN_IF_ERROR(passes::PrepareForLowering(*s.ir, stats).status());
  // With CudaCodegen's options (float16/bfloat16 ops lower into kernels).
  lowering::LowerOptions options;
  options.narrow_float_kernels = true;
  options.conv_bias_epilogue = true;
  ASSIGN_OR_RETURN(s.graph, lowering::LowerGraph(*s.ir, options));
  ASSIGN_OR_RETURN(s.schedule, lowering::ScheduleGraph(s.graph, "cuda"));
  return s;
}

}  // namespace kiln::backends::cuda::testing

#endif  // KILN_BACKENDS_CUDA_TEST_GRAPHS_H_
