// The LowerGraph driver: graph inputs and constants become buffers, scalar
// nodes fold to constants, every tensor op goes through its row's lowering
// (lowering/lowerings.h) or the extern fallback, and in-place ops lower
// through their functional variant.
#include "lowering/lower.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/constants.h"
#include "ir/scalar_eval.h"
#include "ir/verifier.h"
#include "lowering/islands.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "support/status.h"

namespace kiln::lowering {
namespace {

bool IsTensorType(const ir::Value* v) { return v->type() && v->type()->is_tensor(); }

// Tensor[] outputs (split, chunk, unbind) lower to lists of views.
bool IsTensorListType(const ir::Value* v) {
  const ir::TypePtr& t = v->type();
  return t && t->kind() == ir::TypeKind::kList && !t->contained().empty() &&
         t->contained()[0]->is_tensor();
}

absl::Status LowerInput(LowerContext& ctx, const ir::Value* v, size_t index) {
  const ir::TypePtr& type = v->type();
  if (!type || !type->is_tensor() || !type->tensor().dtype || !type->tensor().HasCompleteSizes()) {
    return absl::UnimplementedError(
        absl::StrCat("lowering: graph input %", v->debugName(), " (", type ? type->ToString() : "?",
                     ") is not a tensor with static shape and dtype"));
  }
  const ir::TensorInfo& info = type->tensor();
  Buffer b;
  b.name = absl::StrCat("arg", index);
  b.kind = BufferKind::kInput;
  b.layout = Layout::Contiguous(*info.dtype, info.ConcreteSizes(),
                                info.device ? info.device->type : "cpu");
  for (int64_t s : b.layout.sizes) {
    if (s < 0) return absl::InvalidArgumentError("lowering: negative size in graph input");
  }
  ctx.BindTensor(v, TensorRef{b.name, b.name, b.layout});
  ctx.graph().inputs.push_back(b.name);
  ctx.AddBuffer(std::move(b));
  return absl::OkStatus();
}

void LowerConstant(LowerContext& ctx, const ir::Node& node) {
  const ir::Value* out = node.output(0);
  std::optional<ir::IValue> value = ir::ConstantValue(out);
  if (!value) return;  // types, complex numbers: an error only if something uses it
  if (!value->isTensor()) {
    ctx.BindConstant(out, *std::move(value));
    return;
  }
  ctx.BindTensor(out, ctx.AddConstant(value->toTensor()));
}

// List and tuple constructs/unpacks of constants or tensors.
bool LowerContainer(LowerContext& ctx, const ir::Node& node) {
  absl::string_view kind = node.kind().qualString();
  if (kind == "prim::ListConstruct" || kind == "prim::TupleConstruct") {
    std::vector<ir::IValue> constants;
    std::vector<TensorRef> tensors;
    for (const ir::Value* v : node.inputs()) {
      if (const ir::IValue* c = ctx.FindConstant(v)) constants.push_back(*c);
      if (const TensorRef* t = ctx.FindTensor(v)) tensors.push_back(*t);
    }
    if (constants.size() == node.inputs().size()) {
      ctx.BindConstant(node.output(0), kind == "prim::ListConstruct"
                                           ? ir::IValue::List(std::move(constants))
                                           : ir::IValue::Tuple(std::move(constants)));
    } else if (tensors.size() == node.inputs().size()) {
      ctx.BindTensorList(node.output(0), std::move(tensors));
    }
    return true;
  }
  if (kind == "prim::ListUnpack" || kind == "prim::TupleUnpack") {
    const ir::Value* in = node.input(0);
    if (const std::vector<TensorRef>* list = ctx.FindTensorList(in)) {
      if (list->size() != node.outputs().size()) return true;
      for (size_t i = 0; i < list->size(); ++i) ctx.BindTensor(node.output(i), (*list)[i]);
    } else if (const ir::IValue* c = ctx.FindConstant(in)) {
      if ((!c->isList() && !c->isTuple()) || c->elements().size() != node.outputs().size()) {
        return true;
      }
      for (size_t i = 0; i < node.outputs().size(); ++i) {
        ctx.BindConstant(node.output(i), c->elements()[i]);
      }
    }
    return true;
  }
  return false;
}

// Scalar nodes fold to constants where their inputs are known (shape
// queries read the static shapes). Values that do not fold stay unbound:
// only a use that needs them is an error.
void FoldScalarNode(LowerContext& ctx, const ir::Node& node) {
  absl::string_view kind = node.kind().qualString();
  if (node.inputs().size() >= 1 && node.outputs().size() == 1) {
    if (const TensorRef* t = ctx.FindTensor(node.input(0))) {
      const std::vector<int64_t>& sizes = t->layout.sizes;
      int64_t rank = static_cast<int64_t>(sizes.size());
      if (kind == "aten::dim") {
        ctx.BindConstant(node.output(0), ir::IValue::Int(rank));
      } else if (kind == "aten::numel") {
        ctx.BindConstant(node.output(0), ir::IValue::Int(t->layout.numel()));
      } else if (kind == "aten::len" && rank > 0) {
        ctx.BindConstant(node.output(0), ir::IValue::Int(sizes[0]));
      } else if (kind == "aten::size" && node.inputs().size() == 1) {
        ctx.BindConstant(node.output(0), ir::IValue::IntList(sizes));
      } else if (kind == "aten::size" && node.inputs().size() == 2) {
        const ir::IValue* d = ctx.FindConstant(node.input(1));
        if (d && d->isInt() && d->toInt() >= -rank && d->toInt() < rank) {
          int64_t dim = d->toInt() < 0 ? d->toInt() + rank : d->toInt();
          ctx.BindConstant(node.output(0), ir::IValue::Int(sizes[dim]));
        }
      }
      return;
    }
  }
  std::vector<ir::IValue> inputs;
  for (const ir::Value* v : node.inputs()) {
    const ir::IValue* c = ctx.FindConstant(v);
    if (c == nullptr) return;
    inputs.push_back(*c);
  }
  absl::StatusOr<std::vector<ir::IValue>> results = ir::EvaluateScalarOp(node.kind(), inputs);
  if (!results.ok() || results->size() != node.outputs().size()) return;
  for (size_t i = 0; i < results->size(); ++i) ctx.BindConstant(node.output(i), (*results)[i]);
}

bool IsHalfPrecision(const ir::Value* v) {
  const ir::TypePtr& t = v->type();
  return t && t->is_tensor() && t->tensor().dtype &&
         (*t->tensor().dtype == DType::kFloat16 || *t->tensor().dtype == DType::kBFloat16);
}

bool TouchesHalfPrecision(const ir::Node& node) {
  for (const ir::Value* v : node.inputs()) {
    if (IsHalfPrecision(v)) return true;
  }
  for (const ir::Value* v : node.outputs()) {
    if (IsHalfPrecision(v)) return true;
  }
  return false;
}

absl::Status LowerTensorNode(LowerContext& ctx, const ir::Node& node) {
  const ir::Operator* op = ctx.registry().Match(node);
  ctx.SetNode(&node, op);
  const std::string name(node.kind().name());
  const bool in_place = op != nullptr && op->traits.mutates && absl::EndsWith(name, "_") &&
                        !absl::EndsWith(name, "__");
  bool handled = false;
  std::string why_extern = "no loop lowering for this op";
  // Unless the device's kernels store float16/bfloat16 (LowerOptions),
  // Half/BFloat16 computations run as extern calls of their reference
  // kernels (or, when there is none, in an interpreter island).
  const ir::Operator* lowered = FunctionalOverload(ctx, op);
  if (lowered != nullptr && !ctx.narrow_float_kernels() && TouchesHalfPrecision(node)) {
    why_extern = "Half/BFloat16 computation (this device's kernels compute in float32/float64/ints)";
  } else if (lowered != nullptr) {
    auto it = RowLowerings().find(lowered->schema.QualifiedName());
    if (it != RowLowerings().end()) {
      ASSIGN_OR_RETURN(handled, it->second(ctx));
      why_extern = "its loop lowering does not handle these arguments or dtypes";
    }
  }
  if (!handled) {
    const size_t before = ctx.graph().buffers.size();
    RETURN_IF_ERROR(LowerAsExtern(ctx));
    FallbackNote note;
    note.kind = FallbackNote::Kind::kExtern;
    note.buffer = before < ctx.graph().buffers.size() ? ctx.graph().buffers[before].name : "";
    note.op = ctx.op() != nullptr ? ctx.op()->schema.QualifiedName()
                                  : std::string(node.kind().qualString());
    note.node = NodeName(node);
    note.reason = why_extern;
    ctx.graph().fallbacks.push_back(std::move(note));
  }
  if (in_place) {
    // Later uses of the operand (and of its full aliases) see the updated
    // value: rebind them. Sound only when no view of the old storage is
    // read later, and the operand itself is not a view.
    const ir::Value* self = node.input(0);
    const TensorRef* before_ptr = ctx.FindTensor(self);
    const TensorRef* after_ptr = ctx.FindTensor(node.output(0));
    if (before_ptr == nullptr || after_ptr == nullptr) {
      return ctx.Unimplemented("in-place op on a non-tensor");
    }
    TensorRef before = *before_ptr, after = *after_ptr;
    if (before.is_view()) return ctx.Unimplemented("in-place update of a view");
    if (before.layout.sizes != after.layout.sizes) {
      return ctx.Invalid("in-place op changes its operand's shape");
    }
    for (const ir::Value* v : ctx.ValuesOnStorage(before.storage)) {
      const TensorRef* t = ctx.FindTensor(v);
      if (t->buffer == before.buffer && t->layout == before.layout) {
        ctx.BindTensor(v, after);
        continue;
      }
      for (const ir::Use& use : v->uses()) {
        if (use.user->isAfter(&node) || use.user == node.owningBlock()->return_node()) {
          return ctx.Unimplemented("in-place update of a tensor whose view is read later");
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status LowerNode(LowerContext& ctx, const ir::Node& node) {
  ctx.SetNode(&node, nullptr);
  if (!node.blocks().empty()) return ctx.Unimplemented("control flow is not lowered");
  if (node.kind().qualString() == "prim::Constant") {
    if (node.outputs().size() == 1) LowerConstant(ctx, node);
    return absl::OkStatus();
  }
  if (LowerContainer(ctx, node)) return absl::OkStatus();
  if (node.outputs().empty()) return ctx.Unimplemented("op without outputs (side effect)");
  bool any_tensor = false;
  for (const ir::Value* v : node.outputs()) any_tensor |= IsTensorType(v) || IsTensorListType(v);
  if (!any_tensor) {
    FoldScalarNode(ctx, node);
    return absl::OkStatus();
  }
  return LowerTensorNode(ctx, node);
}

// One attempt with the island set known so far; sets *retry (after growing
// `set`) when the islands must grow, discarding this attempt's LoopGraph.
absl::StatusOr<LoopGraph> TryLower(const ir::Graph& graph, const ir::OpRegistry& registry,
                                   const LowerOptions& options, IslandSet& set, bool* retry) {
  LoopGraph out;
  LowerContext ctx(registry, &out);
  ctx.set_narrow_float_kernels(options.narrow_float_kernels);
  ctx.set_conv_bias_epilogue(options.conv_bias_epilogue);
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    RETURN_IF_ERROR(LowerInput(ctx, graph.inputs()[i], i));
  }
  std::vector<LoweringUnit> units;
  PlanLoweringUnits(graph, set, &units);
  if (set.whole_graph) {
    *retry = true;
    return out;
  }
  for (const LoweringUnit& unit : units) {
    if (unit.is_island) {
      RETURN_IF_ERROR(LowerIsland(ctx, graph, unit, set, retry));
      if (*retry) return out;
      continue;
    }
    // Whatever does not lower runs in the interpreter instead.
    if (absl::Status s = LowerNode(ctx, *unit.nodes[0]); !s.ok()) {
      set.Add(unit.nodes[0], std::string(s.message()));
      *retry = true;
      return out;
    }
  }
  for (const ir::Value* v : graph.outputs()) {
    const TensorRef* t = ctx.FindTensor(v);
    if (t == nullptr) {  // a list, scalar, string... output
      set.SetWholeGraph(absl::StrCat("graph output %", v->debugName(), " (",
                                     v->type() ? v->type()->ToString() : "?",
                                     ") is not a tensor"));
      *retry = true;
      return out;
    }
    out.outputs.push_back(t->buffer);
  }
  return out;
}

LoopGraph WholeGraphIsland(const ir::Graph& graph, const ir::OpRegistry& registry,
                           const std::string& reason) {
  LoopGraph out;
  std::shared_ptr<ir::Graph> copy = graph.copy();
  out.num_island_nodes = CountIslandNodes(*copy);
  out.num_islands = 1;
  out.interpreted_graph = std::move(copy);
  for (const ir::Node* n : graph.nodes()) {
    if (n->kind() == ir::sym::kConstant) continue;
    FallbackNote note;
    note.kind = FallbackNote::Kind::kIsland;
    note.island = 0;
    note.op = NodeOp(*n, registry);
    note.node = NodeName(*n);
    note.reason = absl::StrCat("whole graph interpreted: ", reason);
    out.fallbacks.push_back(std::move(note));
  }
  return out;
}

}  // namespace

absl::StatusOr<LoopGraph> LowerGraph(const ir::Graph& graph, const ir::OpRegistry& registry) {
  return LowerGraph(graph, LowerOptions(), registry);
}

absl::StatusOr<LoopGraph> LowerGraph(const ir::Graph& graph, const LowerOptions& options,
                                     const ir::OpRegistry& registry) {
  IslandSet set;
  for (const ir::Value* v : graph.inputs()) {
    if (!IsStaticTensor(v)) {
      set.SetWholeGraph(absl::StrCat("graph input %", v->debugName(), " (",
                                     v->type() ? v->type()->ToString() : "?",
                                     ") is not a static-shape tensor"));
    }
  }
  // Each retry adds at least one node to the islands (or gives up on the
  // whole graph), so this ends.
  const size_t max_attempts = graph.numNodes() + 2;
  for (size_t attempt = 0; !set.whole_graph && attempt < max_attempts; ++attempt) {
    bool retry = false;
    ASSIGN_OR_RETURN(LoopGraph out, TryLower(graph, registry, options, set, &retry));
    if (!retry) return out;
  }
  if (set.whole_graph_reason.empty()) set.whole_graph_reason = "too many lowering attempts";
  return WholeGraphIsland(graph, registry, set.whole_graph_reason);
}

}  // namespace kiln::lowering
