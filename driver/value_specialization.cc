#include "driver/value_specialization.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/constants.h"
#include "passes/pass.h"
#include "passes/shape_resolution.h"
#include "support/status.h"

namespace kiln::driver {
namespace {

bool IsSmallIntegral(const Tensor& t) {
  return IsIntegral(t.dtype(), /*include_bool=*/true) && t.numel() <= kMaxValueSpecializedElements &&
         t.has_data();
}

// A node whose result needs a tensor's value at run time where compiled
// code needs a constant.
bool NeedsAValue(const ir::Node& n) {
  static const ir::Symbol kinds[] = {
      ir::Symbol::FromQualString("kiln::tensor_to_int_list"),
      ir::Symbol::FromQualString("kiln::tensor_to_int"),
      ir::Symbol::FromQualString("aten::Int"),
      ir::Symbol::FromQualString("aten::Bool"),
      ir::Symbol::FromQualString("aten::IntImplicit"),
      ir::Symbol::FromQualString("aten::item"),
      // Its length depends on the values (still here: they are not constant).
      ir::Symbol::FromQualString("kiln::range"),
  };
  for (ir::Symbol k : kinds) {
    if (n.kind() == k) return true;
  }
  return n.kind() == ir::sym::kIf;
}

bool HasStaticShape(const ir::Value& v) {
  return !v.type()->is_tensor() ||
         (v.type()->tensor().dtype && v.type()->tensor().HasCompleteSizes());
}

}  // namespace

bool MayValueSpecialize(const ir::Value& v) {
  if (!v.type()->is_tensor()) return false;
  const ir::TensorInfo& t = v.type()->tensor();
  if (t.dtype && !IsIntegral(*t.dtype, /*include_bool=*/true)) return false;
  if (t.HasCompleteSizes()) {
    int64_t n = 1;
    for (int64_t s : t.ConcreteSizes()) n *= s;
    if (n > kMaxValueSpecializedElements) return false;
  }
  return true;
}

absl::StatusOr<std::vector<size_t>> InputsToSpecializeOnValues(
    const ir::Graph& graph, const std::vector<ir::IValue>* inputs) {
  std::vector<size_t> candidates;
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    if (!MayValueSpecialize(*graph.inputs()[i])) continue;
    if (inputs != nullptr && (i >= inputs->size() || !(*inputs)[i].isTensor() ||
                              !IsSmallIntegral((*inputs)[i].toTensor()))) {
      continue;
    }
    candidates.push_back(i);
  }
  if (candidates.empty()) return candidates;
  std::unique_ptr<ir::Graph> probe = graph.copy();
  passes::PassStatistics stats;
  RETURN_IF_ERROR(passes::ResolveShapes(*probe, stats).status());
  // Backwards from what still needs a value (or has no static shape) to the
  // graph inputs it depends on.
  std::vector<const ir::Node*> stack;
  for (const ir::Node* n : probe->nodes()) {
    bool needy = NeedsAValue(*n) || !n->blocks().empty();
    for (const ir::Value* o : n->outputs()) needy |= !HasStaticShape(*o);
    if (needy) stack.push_back(n);
  }
  absl::flat_hash_set<const ir::Node*> seen(stack.begin(), stack.end());
  absl::flat_hash_set<const ir::Value*> reached;
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    for (const ir::Value* in : n->inputs()) {
      if (in->node() == probe->param_node()) {
        reached.insert(in);
        continue;
      }
      if (seen.insert(in->node()).second) stack.push_back(in->node());
    }
  }
  std::vector<size_t> out;
  for (size_t i : candidates) {
    if (reached.contains(probe->inputs()[i])) out.push_back(i);
  }
  return out;
}

absl::Status BindInputValue(ir::Graph& graph, size_t index, const Tensor& value) {
  if (index >= graph.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("no graph input ", index));
  }
  ir::Value* in = graph.inputs()[index];
  ir::WithInsertPoint guard(graph.block()->front());
  ASSIGN_OR_RETURN(ir::Value * c, ir::InsertConstant(graph, ir::IValue::FromTensor(value.Contiguous()),
                                                     in->type()));
  in->replaceAllUsesWith(c);
  return absl::OkStatus();
}

}  // namespace kiln::driver
