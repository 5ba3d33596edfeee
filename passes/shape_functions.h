// Per-op shape and dtype inference, installed in the op registry's
// `shape_fn` slots (ir/op_registry.h).
//
// A shape function maps a node's input types (and its constant inputs) to
// output types carrying what can be inferred: dtype, sizes (rank and dims,
// each possibly unknown) and device. Strides and requires_grad are never
// inferred. Unknown stays unknown: a shape function answers with a plain
// `Tensor` rather than guess. Inputs that contradict each other (cat of
// tensors whose other dims differ, linear whose in-features do not match
// the weight, dims that do not broadcast, a view whose element count is
// wrong) are InvalidArgument errors naming the node.
//
// Ops covered (see kShapeOps in shape_functions.cc for the exact overloads):
//   elementwise unary (relu, tanh, sigmoid, gelu, hardtanh, clamp, neg, ...,
//     and their in-place forms), int->float unary math (exp, log, sqrt, erf,
//     ...), bool-valued predicates (isnan, logical_not, ...);
//   binary arithmetic with broadcasting and PyTorch's type promotion
//     (add/sub/mul/div/rsub/pow/remainder/maximum/..., Tensor and Scalar
//     overloads, in-place forms), comparisons and logical ops (bool), where;
//   conv1d/2d/3d (int and string padding), convolution, _convolution,
//     conv_transpose1d/2d/3d; max/avg pooling 1d/2d/3d (ceil_mode), adaptive
//     avg/max pooling 1d/2d/3d;
//   linear, matmul, mm, bmm, addmm, t, transpose, permute, flatten,
//     view/reshape (with -1), view_as/reshape_as/expand_as, expand,
//     unsqueeze, squeeze, select, cat, stack;
//   reductions: mean, sum, prod, amax, amin, argmax, argmin, max.dim,
//     min.dim, all, any, logsumexp, var, std (dims or all, keepdim, dtype);
//   softmax/log_softmax (dtype argument), layer_norm, batch_norm,
//     group_norm, instance_norm, dropout family, contiguous, clone, detach,
//     to.dtype/to.other/type_as, masked_fill;
//   kiln:: ops of the ONNX importer (shape_functions_onnx.cc: reshapes,
//     Expand, Slice, Shape, Range, Reduce*, LayerNormalization, Pad,
//     GatherND, pooling, conv_nd, ...) and aten indexing / generator ops
//     (shape_functions_indexing.cc: index.Tensor, slice, gather, embedding,
//     native_layer_norm, full/zeros/ones/arange, repeat, topk, ...);
//   prim::ListUnpack of split / chunk / unbind (ListUnpackElementTypes);
//   scalars: size, len, dim, numel, gt/lt/ge/le/eq/ne on ints and floats
//     (their schema return types).
#ifndef KILN_PASSES_SHAPE_FUNCTIONS_H_
#define KILN_PASSES_SHAPE_FUNCTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"

namespace kiln::passes {

// Installs every shape function into ir::BuiltinOps(). Idempotent and
// thread-safe; an error (a named overload missing from the registry) is a
// bug and is returned on every call.
absl::Status RegisterShapeFunctions();
// Installs them into `ops` (for registries other than the builtin one).
absl::Status RegisterShapeFunctionsInto(ir::OpRegistry& ops);
// The qualified overload names that get a shape function, in table order.
std::vector<std::string> ShapeFunctionOverloads();

// The value of a prim::Constant output: None, bool, int, float, str and
// lists of those. nullopt for anything else (tensor constants included:
// their type already says what shape functions need).
std::optional<ir::IValue> ConstantValueOf(const ir::Value& v);

// `inferred` refines `existing`: dtype, sizes (rank and each unknown dim)
// and device are taken from `inferred` where `existing` does not know them;
// everything else stays. Returns `existing` itself when nothing is added.
// A known fact contradicted by `inferred` is an error when `strict`
// (message without the node; callers add it), otherwise `existing` keeps
// its own fact. Non-tensor types stay as they are, except that `Any`
// becomes `inferred`.
absl::StatusOr<ir::TypePtr> RefineType(const ir::TypePtr& existing, const ir::TypePtr& inferred,
                                       bool strict);

// What two types agree on (a tensor type keeping the facts equal in both;
// equal types otherwise). Null when two non-tensor types differ.
ir::TypePtr JoinTypes(const ir::TypePtr& a, const ir::TypePtr& b);

// The types of prim::ListUnpack `unpack`'s outputs when its list comes from
// split / split_with_sizes / chunk / unbind with constant arguments over an
// input of known rank; nullopt otherwise.
std::optional<std::vector<ir::TypePtr>> ListUnpackElementTypes(const ir::Node& unpack);

// "aten::linear node %x.17 (torch/nn/modules/linear.py:114:15)".
std::string NodeLabel(const ir::Node& node);

}  // namespace kiln::passes

#endif  // KILN_PASSES_SHAPE_FUNCTIONS_H_
