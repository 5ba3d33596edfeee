// Lowering: kiln IR (with static shapes, after shape propagation) -> LoopGraph.
//
// Pointwise aten ops and reductions (sum, mean, amax/amin, prod,
// argmax/argmin, var via Welford) become Pointwise / Reduction buffers
// (composite ops such as softmax and layer_norm arrive decomposed:
// passes::PrepareForLowering); views (view/reshape/permute/transpose/
// expand/slice/select/squeeze/unsqueeze/flatten/t) become kView buffers when
// the strides allow, else a copy. mm/bmm/matmul/linear/addmm/convolution are
// extern kernels. Every other op with a registry kernel becomes an extern call
// of that kernel. Nodes that cannot lower at all (prim::If / prim::Loop,
// non-constant non-tensor operands, outputs without static shapes, sequence /
// string / optional values) run in interpreter islands (islands.h,
// ExternCall::island); graphs whose inputs or outputs are not static-shape
// tensors become one whole-graph island (LoopGraph::interpreted_graph). So
// whatever the interpreter runs also compiles.
#ifndef KILN_LOWERING_LOWER_H_
#define KILN_LOWERING_LOWER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/op_registry.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

struct LowerOptions {
  // The device's kernels load and store float16/bfloat16 (computing in
  // float32, lowering/elementwise.h's ComputeDType). Otherwise ops that
  // touch them run as extern calls of their reference kernels.
  bool narrow_float_kernels = false;
  // Convolutions with a bias run without it, and the bias is added by a
  // pointwise buffer instead, which fuses with what follows (ReLU, residual
  // adds): the device's convolution writes its output once, and one kernel
  // reads it back for bias + activation, instead of a bias pass of its own.
  bool conv_bias_epilogue = false;
};

absl::StatusOr<LoopGraph> LowerGraph(const ir::Graph& graph,
                                     const ir::OpRegistry& registry = ir::BuiltinOps());
absl::StatusOr<LoopGraph> LowerGraph(const ir::Graph& graph, const LowerOptions& options,
                                     const ir::OpRegistry& registry = ir::BuiltinOps());

// The overloads with a loop lowering (the op rows' LOWER column), sorted.
std::vector<std::string> LoweredOverloads();

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_LOWER_H_
