#include "passes/shape_propagation.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "passes/shape_functions.h"
#include "support/status.h"

namespace kiln::passes {
namespace {

using ir::Block;
using ir::Node;
using ir::TypePtr;
using ir::Value;

// Deeper nesting of blocks is rejected rather than risking the stack.
constexpr int kMaxBlockDepth = 512;  // the text parser allows 256
// Loop rounds before widening the carried values that still change, and
// before widening all of them.
constexpr int kWidenChangingAfter = 2;
constexpr int kWidenAllAfter = 4;

bool ChangesOperandShape(const Node& n) {
  static const ir::Symbol kinds[] = {
      ir::Symbol::FromQualString("aten::t_"), ir::Symbol::FromQualString("aten::transpose_"),
      ir::Symbol::FromQualString("aten::squeeze_"),
      ir::Symbol::FromQualString("aten::unsqueeze_"), ir::Symbol::FromQualString("aten::resize_"),
      ir::Symbol::FromQualString("aten::set_"), ir::Symbol::FromQualString("aten::as_strided_")};
  for (ir::Symbol k : kinds) {
    if (n.kind() == k) return true;
  }
  return false;
}

class ShapePropagator {
 public:
  ShapePropagator(ir::Graph& graph, PassStatistics& stats, const ir::OpRegistry& ops)
      : graph_(graph), stats_(stats), ops_(ops), constant_slot_(graph.nextUnique(), kUnseen) {}

  absl::StatusOr<bool> Run() {
    if (HasShapeChangingInplaceOp()) {
      stats_.Add("skipped_shape_changing_inplace_graph");
      return false;
    }
    RETURN_IF_ERROR(ProcessBlock(graph_.block(), 0));
    // Values typed inside loops: compare with their type before the pass.
    absl::flat_hash_set<const Value*> seen;
    for (const auto& [value, original] : undo_log_) {
      if (!seen.insert(value).second) continue;
      if (!ir::TypeEquals(original, value->type())) {
        changed_ = true;
        ++refined_;
      }
    }
    if (refined_ > 0) stats_.Add("types_refined", refined_);
    if (without_shape_fn_ > 0) stats_.Add("nodes_without_shape_fn", without_shape_fn_);
    return changed_;
  }

 private:
  static constexpr int32_t kUnseen = -1;
  static constexpr int32_t kNotConstant = -2;

  bool HasShapeChangingInplaceOp() const {
    std::vector<const Block*> stack{graph_.block()};
    while (!stack.empty()) {
      const Block* b = stack.back();
      stack.pop_back();
      for (const Node* n : b->nodes()) {
        if (ChangesOperandShape(*n)) return true;
        for (const Block* sub : n->blocks()) stack.push_back(sub);
      }
    }
    return false;
  }

  // Sets a type that differs from the current one. Inside loops the old type
  // is logged so that a round can be undone.
  void SetType(Value* v, TypePtr t) {
    if (loop_depth_ > 0) {
      undo_log_.emplace_back(v, v->type());
    } else {
      changed_ = true;
      ++refined_;
    }
    v->setType(std::move(t));
  }

  void Rollback(size_t mark) {
    while (undo_log_.size() > mark) {
      undo_log_.back().first->setType(std::move(undo_log_.back().second));
      undo_log_.pop_back();
    }
  }

  // Refines v with `inferred` (contradictions are errors when strict).
  absl::Status Refine(Value* v, const TypePtr& inferred, bool strict, const Node& node) {
    absl::StatusOr<TypePtr> refined = RefineType(v->type(), inferred, strict);
    if (!refined.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(NodeLabel(node), ": output ", v->offset(),
                                                     ": ", refined.status().message()));
    }
    if (*refined != v->type()) SetType(v, *std::move(refined));
    return absl::OkStatus();
  }

  const ir::IValue* ConstantOf(const Value* v) {
    if (v->node()->kind() != ir::sym::kConstant) return nullptr;
    size_t u = v->unique();
    if (u >= constant_slot_.size()) constant_slot_.resize(u + 1, kUnseen);
    int32_t& slot = constant_slot_[u];
    if (slot == kUnseen) {
      std::optional<ir::IValue> c = ConstantValueOf(*v);
      if (c) {
        slot = static_cast<int32_t>(constants_.size());
        constants_.push_back(*std::move(c));
      } else {
        slot = kNotConstant;
      }
    }
    return slot >= 0 ? &constants_[static_cast<size_t>(slot)] : nullptr;
  }

  // Overload resolution depends only on the kind, the output count and
  // the kinds of the input types (list/optional element kinds included), so
  // its result is memoized on those; other input types go to Match.
  const ir::Operator* MatchCached(const Node& n) {
    std::string& key = match_key_;
    key.clear();
    uint32_t id = n.kind().id();
    key.append(reinterpret_cast<const char*>(&id), sizeof(id));
    key.push_back(static_cast<char>(std::min<size_t>(n.outputs().size(), 255)));
    for (const Value* in : n.inputs()) {
      const ir::Type& t = *in->type();
      ir::TypeKind k = t.kind();
      if (k == ir::TypeKind::kTuple || k == ir::TypeKind::kDict || k == ir::TypeKind::kClass) {
        return ops_.Match(n);
      }
      key.push_back(static_cast<char>(k));
      if (k == ir::TypeKind::kList || k == ir::TypeKind::kOptional) {
        ir::TypeKind e = t.contained().empty() ? ir::TypeKind::kAny : t.contained()[0]->kind();
        if (e == ir::TypeKind::kList || e == ir::TypeKind::kOptional ||
            e == ir::TypeKind::kTuple || e == ir::TypeKind::kDict || e == ir::TypeKind::kClass) {
          return ops_.Match(n);
        }
        key.push_back(static_cast<char>(e));
      }
    }
    auto it = match_cache_.find(key);
    if (it != match_cache_.end()) return it->second;
    const ir::Operator* op = ops_.Match(n);
    match_cache_.emplace(key, op);
    return op;
  }

  absl::Status ProcessBlock(Block* b, int depth) {
    if (depth > kMaxBlockDepth) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape propagation: blocks nested deeper than ", kMaxBlockDepth, " at ",
          b->owningNode() ? NodeLabel(*b->owningNode()) : std::string("graph")));
    }
    for (Node* n : b->nodes()) RETURN_IF_ERROR(ProcessNode(n, depth));
    return absl::OkStatus();
  }

  absl::Status ProcessNode(Node* n, int depth) {
    if (n->kind() == ir::sym::kConstant) return absl::OkStatus();
    if (n->kind() == ir::sym::kIf) return ProcessIf(n, depth);
    if (n->kind() == ir::sym::kLoop) return ProcessLoop(n, depth);
    for (Block* sub : n->blocks()) RETURN_IF_ERROR(ProcessBlock(sub, depth + 1));
    const ir::Operator* op = MatchCached(*n);
    if (!op || !op->shape_fn) {
      ++without_shape_fn_;
      return absl::OkStatus();
    }
    input_types_.clear();
    input_constants_.clear();
    for (const Value* in : n->inputs()) {
      input_types_.push_back(in->type());
      input_constants_.push_back(ConstantOf(in));
    }
    absl::StatusOr<std::vector<TypePtr>> out =
        op->shape_fn(*n, input_types_, input_constants_);
    if (!out.ok()) return out.status();
    size_t count = std::min(out->size(), n->outputs().size());
    for (size_t i = 0; i < count; ++i) {
      RETURN_IF_ERROR(Refine(n->output(i), (*out)[i], /*strict=*/true, *n));
    }
    return absl::OkStatus();
  }

  absl::Status ProcessIf(Node* n, int depth) {
    if (n->blocks().size() != 2) return absl::OkStatus();
    Block* then_block = n->block(0);
    Block* else_block = n->block(1);
    RETURN_IF_ERROR(ProcessBlock(then_block, depth + 1));
    RETURN_IF_ERROR(ProcessBlock(else_block, depth + 1));
    size_t count = std::min({n->outputs().size(), then_block->outputs().size(),
                             else_block->outputs().size()});
    for (size_t i = 0; i < count; ++i) {
      TypePtr joined =
          JoinTypes(then_block->outputs()[i]->type(), else_block->outputs()[i]->type());
      if (joined) RETURN_IF_ERROR(Refine(n->output(i), joined, /*strict=*/false, *n));
    }
    return absl::OkStatus();
  }

  // Loop inputs: (max_trips, cond, carried...); body inputs: (trip,
  // carried...); body outputs: (cond, carried...); outputs: carried.
  absl::Status ProcessLoop(Node* n, int depth) {
    if (n->blocks().size() != 1) return absl::OkStatus();
    Block* body = n->block(0);
    size_t carried = n->outputs().size();
    if (n->inputs().size() != carried + 2 || body->inputs().size() != carried + 1 ||
        body->outputs().size() != carried + 1) {
      return absl::OkStatus();  // malformed; the verifier reports it
    }
    std::vector<TypePtr> current(carried);
    for (size_t i = 0; i < carried; ++i) current[i] = n->input(i + 2)->type();

    ++loop_depth_;
    for (int round = 0;; ++round) {
      size_t mark = undo_log_.size();
      for (size_t i = 0; i < carried; ++i) {
        RETURN_IF_ERROR(Refine(body->inputs()[i + 1], current[i], /*strict=*/false, *n));
      }
      RETURN_IF_ERROR(ProcessBlock(body, depth + 1));
      bool stable = true;
      std::vector<TypePtr> next(carried);
      for (size_t i = 0; i < carried; ++i) {
        TypePtr joined = JoinTypes(current[i], body->outputs()[i + 1]->type());
        next[i] = joined ? joined : current[i];
        if (!ir::TypeEquals(next[i], current[i])) {
          stable = false;
          if (round + 1 >= kWidenAllAfter ||
              (round + 1 >= kWidenChangingAfter && next[i]->is_tensor())) {
            next[i] = ir::UnrefinedTensor();
          }
        }
      }
      if (stable) break;
      if (round + 1 >= kWidenAllAfter) {
        for (size_t i = 0; i < carried; ++i) {
          if (current[i]->is_tensor()) next[i] = ir::UnrefinedTensor();
        }
      }
      Rollback(mark);
      current = std::move(next);
      stats_.Add("loop_rounds");
    }
    --loop_depth_;
    for (size_t i = 0; i < carried; ++i) {
      RETURN_IF_ERROR(Refine(n->output(i), current[i], /*strict=*/false, *n));
    }
    return absl::OkStatus();
  }

  ir::Graph& graph_;
  PassStatistics& stats_;
  const ir::OpRegistry& ops_;
  bool changed_ = false;
  int64_t refined_ = 0;
  int64_t without_shape_fn_ = 0;
  int loop_depth_ = 0;
  std::vector<std::pair<Value*, TypePtr>> undo_log_;
  std::vector<int32_t> constant_slot_;  // by Value::unique()
  std::deque<ir::IValue> constants_;
  std::vector<TypePtr> input_types_;
  std::vector<const ir::IValue*> input_constants_;
  std::string match_key_;
  absl::flat_hash_map<std::string, const ir::Operator*> match_cache_;
};

}  // namespace

absl::StatusOr<bool> PropagateShapes(ir::Graph& graph, PassStatistics& stats) {
  RETURN_IF_ERROR(RegisterShapeFunctions());
  return ShapePropagator(graph, stats, ir::BuiltinOps()).Run();
}

absl::Status InferNodeTypes(ir::Node& node) {
  RETURN_IF_ERROR(RegisterShapeFunctions());
  if (!node.blocks().empty() || node.kind() == ir::sym::kConstant) return absl::OkStatus();
  // prim::ListUnpack too: its row's shape function types the pieces of a
  // split (ops/defs/scalar.def).
  const ir::Operator* op = ir::BuiltinOps().Match(node);
  if (op == nullptr || !op->shape_fn) return absl::OkStatus();
  absl::StatusOr<std::vector<TypePtr>> inferred = ShapeFunctionTypes(*op, node);
  // Inputs that contradict each other surface when the graph is compiled.
  if (!inferred.ok()) return absl::OkStatus();
  std::vector<TypePtr> out = *std::move(inferred);
  for (size_t i = 0; i < out.size() && i < node.outputs().size(); ++i) {
    absl::StatusOr<TypePtr> refined = RefineType(node.output(i)->type(), out[i], /*strict=*/false);
    if (refined.ok() && *refined != node.output(i)->type()) node.output(i)->setType(*refined);
  }
  return absl::OkStatus();
}

absl::Status RegisterShapePropagationPass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "shape_propagation", {"shape_prop"},
      "refines tensor dtypes, sizes and devices from inputs and constants", PropagateShapes);
}

}  // namespace kiln::passes
