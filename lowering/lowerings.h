// The loop lowerings an op row may name in its LOWER column
// (ops/defs/*.def): each call returns the LoweringFn for that row's overload.
// lowering_table.cc expands the rows into the table LowerGraph consults,
// keyed by the overload's qualified name; an in-place overload is lowered
// through its functional variant's row. An op whose row names none runs as
// an extern call of its reference kernel (or of its library, EXTERN column).
//
// A LoweringFn returns false, binding nothing, when these arguments are not
// handled (an integer activation, a device change...): the node then runs
// as an extern call too.
#ifndef KILN_LOWERING_LOWERINGS_H_
#define KILN_LOWERING_LOWERINGS_H_

#include <optional>
#include <string>

#include "lowering/loop_ir.h"
#include "lowering/lower_context.h"

namespace kiln::lowering {

// The lowerings by qualified overload name, from the rows' LOWER column.
const LoweringTable& RowLowerings();

// ---- pointwise (lower_pointwise.cc)
LoweringFn LowerUnary(ExprOp op);                    // op(self)
LoweringFn LowerBinary(ExprOp op);                   // op(self, other) in the result dtype
LoweringFn LowerComparison(ExprOp op);               // bool result, promoted operands
LoweringFn LowerLogical(ExprOp op, bool bitwise);    // bitwise: bool tensors only
LoweringFn LowerAddSub(ExprOp op, bool reversed);    // self op alpha*other (rsub: reversed)
LoweringFn LowerDiv();                               // with rounding_mode
LoweringFn LowerPow();
LoweringFn LowerWhere();
LoweringFn LowerMaskedFill();
LoweringFn LowerClamp(bool has_min, bool has_max);
LoweringFn LowerCast();                              // to / type_as: the output dtype says
LoweringFn LowerFill(std::optional<double> value);   // nullopt: the fill_value argument
LoweringFn LowerLogicalNot();
LoweringFn LowerBitwiseNot();                        // bool tensors only
LoweringFn LowerIsNan();
LoweringFn LowerSquare();
LoweringFn LowerLog2();
LoweringFn LowerLog10();
LoweringFn LowerErfc();

// ---- activations without a decomposition (lower_activation.cc); floating
// point only
LoweringFn LowerHardsigmoid();
LoweringFn LowerLeakyRelu();
LoweringFn LowerElu();
LoweringFn LowerSelu();
LoweringFn LowerSoftplus();
LoweringFn LowerMish();
LoweringFn LowerLogSigmoid();
LoweringFn LowerHardtanh();
LoweringFn LowerRelu6();
LoweringFn LowerThreshold();

// ---- reductions (lower_reduce.cc)
enum class Moment { kMean, kVar, kStd };
LoweringFn LowerReduce(ReductionType type);          // sum/prod/amax/amin (dims or all)
LoweringFn LowerReduceToBool(ReductionType type);    // all (kMin) / any (kMax)
LoweringFn LowerArgReduce(ReductionType type);       // argmax / argmin
LoweringFn LowerValuesAndIndices(ReductionType values, ReductionType indices);  // max.dim
LoweringFn LowerMoment(Moment moment);               // mean / var / std
LoweringFn LowerLogSumExp();

// ---- views and copies (lower_views.cc): a kView buffer when the strides
// allow, else a copy
LoweringFn LowerReshape();
LoweringFn LowerSqueezeOrUnsqueeze();
LoweringFn LowerPermute();
LoweringFn LowerTranspose();                          // dim0, dim1
LoweringFn LowerMatrixTranspose();                    // t
LoweringFn LowerExpand();
LoweringFn LowerSlice();
LoweringFn LowerNarrow();
LoweringFn LowerSelect();
LoweringFn LowerContiguous();
LoweringFn LowerClone();
LoweringFn LowerAlias();
LoweringFn LowerCat();
LoweringFn LowerStack();

// ---- norms (lower_norm.cc)
LoweringFn LowerBatchNormEval();  // inference batch_norm: one pointwise pass

// ---- data-dependent reads (lower_gather.cc): an index tensor's values
// address the input
LoweringFn LowerIndex();           // index.Tensor (advanced indexing)
LoweringFn LowerIndexSelect();
LoweringFn LowerGatherElements();  // gather, ONNX GatherElements
LoweringFn LowerEmbedding();
LoweringFn LowerGatherNd();        // ONNX GatherND

// ---- ONNX's and ATen's shape-driven ops (lower_onnx.cc)
LoweringFn LowerOnnxReduce();      // kiln::reduce: ONNX Reduce*
LoweringFn LowerSplit();           // split / split_with_sizes / chunk / unbind: views
LoweringFn LowerOnnxSlice();
LoweringFn LowerOnnxPad();
LoweringFn LowerConstantPadNd();
LoweringFn LowerShapeQuery();      // kiln::shape / kiln::size: constants
LoweringFn LowerTrilu(bool upper);
LoweringFn LowerOnnxRange();       // constant ranges only
LoweringFn LowerArange();
LoweringFn LowerEyeLike();
LoweringFn LowerFlip();
LoweringFn LowerRoll();
LoweringFn LowerRepeat();          // repeat, tile

// ---- contractions
LoweringFn LowerEinsum();          // lower_einsum.cc: one reduction over the contracted labels
LoweringFn LowerMatmul();          // lower_matmul.cc: mm / bmm library externs over views

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_LOWERINGS_H_
