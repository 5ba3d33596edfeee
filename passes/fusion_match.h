// Matching helpers the fusion passes share (fuse_post_ops, fuse_attention):
// static float32 tensors, compile-time numbers and lists, use checks.
// Internal to passes/.
#ifndef KILN_PASSES_FUSION_MATCH_H_
#define KILN_PASSES_FUSION_MATCH_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"
#include "support/tensor.h"

namespace kiln::passes::fusion_match {

// A float32 tensor value with a complete static shape, else null.
const ir::TensorInfo* StaticFloat(const ir::Value* v);
// A number known at compile time: an int/float/bool constant or a constant
// floating tensor of one element (ONNX's scalars are tensors).
std::optional<double> Number(const ir::Value* v);
bool IsNone(const ir::Value* v);
// An int[] known at compile time (a constant, or a ListConstruct of them);
// an int constant is a one-element list.
std::optional<std::vector<int64_t>> IntList(const ir::Value* v);
std::optional<int64_t> Int(const ir::Value* v);
// A float32 constant tensor with data (contiguous).
std::optional<Tensor> FloatConstant(const ir::Value* v);
// `v`'s only use is by `user` (so it is no block output either).
bool OnlyUsedBy(const ir::Value* v, const ir::Node* user);
// `t` broadcasts to `sizes` without changing them.
bool BroadcastsTo(const ir::TensorInfo& t, const std::vector<int64_t>& sizes);
// Destroys `nodes` (users before producers: each node's outputs must have
// no uses left by then), then the prim::Constant nodes they read that no
// longer have a use.
void DestroyWithUnusedConstants(const std::vector<ir::Node*>& nodes);

}  // namespace kiln::passes::fusion_match

#endif  // KILN_PASSES_FUSION_MATCH_H_
