// Decompositions of composite ops into simpler aten ops: the op rows'
// DECOMP column (ops/defs/*.def), run as the "decompose" pass and, in
// Inductor's order, before lowering (PrepareForLowering).
//
// Each decomposition emits, before the node, nodes that compute the node's
// outputs, returning them. When a precondition does not hold it emits
// nothing and returns an empty vector, and the node stays. Constants the
// decomposition needs are emitted as prim::Constant nodes in place
// (constant pooling hoists them).
//
//   aten::addmm        beta*self + alpha*mm(mat1, mat2); beta and alpha must
//                      be constants (beta == 0 drops self, as addmm does);
//                      factors equal to 1 are not multiplied.
//   aten::linear       matmul(x, t(w)) (+ bias); bias must be statically
//                      present (a Tensor type) or absent (None).
//   aten::layer_norm   mean and (x-mean)^2 mean over the last
//                      len(normalized_shape) dims (keepdim), rsqrt(var+eps),
//                      then weight/bias; normalized_shape's length must be
//                      known and weight/bias statically present or None.
//   aten::native_layer_norm, kiln::layer_norm (ONNX LayerNormalization, dims
//                      >= axis, input rank known): the same, with the mean
//                      and rstd as outputs.
//   aten::batch_norm   inference only (training is the constant False), with
//                      running stats present and the input rank known:
//                      scale = weight*rsqrt(var+eps), shift = bias-mean*scale,
//                      both viewed as [C, 1, ...], then x*scale + shift.
//   aten::group_norm   reshape to [N, G, -1], normalize over the last dim,
//                      reshape back, then per-channel weight/bias (input rank
//                      known when either is present).
//   aten::gelu         'none': x*0.5*(1+erf(x/sqrt(2))); 'tanh':
//                      0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))); the
//                      approximate argument must be a constant.
//   aten::silu         x*sigmoid(x)
//   aten::hardswish    x*(clamp(x+3, 0, 6)/6)
//   aten::softmax.int / aten::log_softmax.int (and torch 2.x's _softmax /
//                      _log_softmax) stable forms from x - amax(x, dim,
//                      keepdim); dtype must be None (half_to_float false).
//   aten::copy         src cast to self's dtype, expanded to its static
//                      sizes, cloned.
//   kiln::flat_softmax softmax / log_softmax of the input reshaped to 2-D.
//   kiln::arg_extreme  argmax / argmin without select_last_index.
//   kiln::shrink       two wheres (floating inputs).
//   aten::celu         where(x > 0, x, alpha*expm1(x/alpha)) (floating x,
//                      constant alpha).
//   aten::isinf        abs(x) == inf (floating x).
//   aten::dropout (and dropout_, feature_dropout, alpha_dropout,
//   feature_alpha_dropout) with train the constant False: the input.
//
// The rewritten value keeps the original output's type and name.
#ifndef KILN_PASSES_DECOMPOSITIONS_H_
#define KILN_PASSES_DECOMPOSITIONS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "ir/schema.h"
#include "passes/pass.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

// Emits the replacement before `node` and returns one value per output of
// `node`, or an empty vector (having emitted nothing) when the
// decomposition does not apply. `schema` is the overload `node` matched
// (for default arguments the node leaves out).
using DecompositionFn = std::function<absl::StatusOr<std::vector<ir::Value*>>(
    ir::Node& node, const ir::FunctionSchema& schema)>;

class DecompositionTable {
 public:
  struct Entry {
    DecompositionFn fn;
    // The op's row also names a bespoke lowering or a library extern, which
    // the compile pipeline uses instead.
    bool bespoke = false;
  };
  void Add(absl::string_view qualified_name, DecompositionFn fn, bool bespoke = false);
  // Null when there is no decomposition for this overload.
  const Entry* Find(absl::string_view qualified_name) const;
  // Cheap pre-filter: some overload of `kind` has an entry.
  bool HasKind(ir::Symbol kind) const { return kinds_.contains(kind); }
  // Sorted qualified names.
  std::vector<std::string> Names() const;

 private:
  absl::flat_hash_map<std::string, Entry> by_name_;
  absl::flat_hash_set<ir::Symbol> kinds_;
};

const DecompositionTable& Decompositions();

// Applies the table to every node (sub-blocks included), replacing each
// decomposed node's outputs and removing it. Statistics: "nodes_decomposed".
absl::StatusOr<bool> Decompose(ir::Graph& graph, PassStatistics& stats);
// The same, skipping the ops whose rows name a bespoke lowering or extern.
absl::StatusOr<bool> DecomposeForLowering(ir::Graph& graph, PassStatistics& stats);

// The compile pipeline's step before lowering (driver/compile_graph):
// shape propagation, DecomposeForLowering, shape propagation of what it
// emitted. Composite ops reach the scheduler as pointwise ops and
// reductions that fuse.
absl::StatusOr<bool> PrepareForLowering(ir::Graph& graph, PassStatistics& stats);

// Registers "decompose" and "decompose_for_lowering".
absl::Status RegisterDecomposePass(PassRegistry& registry);

}  // namespace kiln::passes

#endif  // KILN_PASSES_DECOMPOSITIONS_H_
