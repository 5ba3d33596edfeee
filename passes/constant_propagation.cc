#include "passes/constant_propagation.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ir/op_traits.h"
#include "ir/constants.h"
#include "passes/pass_log.h"
#include "passes/shape_functions.h"
#include "ir/scalar_eval.h"
#include "support/status.h"

namespace kiln::passes {
namespace {

constexpr char kPass[] = "constant_propagation";
// TupleConstruct nesting followed when looking for constant tuples.
constexpr int kMaxTupleDepth = 8;

using ir::IValue;
using ir::Node;
using ir::Symbol;
using ir::Value;

// Kinds never evaluated here: control flow (handled separately), structure
// PyTorch's skip_list names, and prims whose meaning is not their inputs.
const absl::flat_hash_set<Symbol>& SkipKinds() {
  static const auto* kinds = [] {
    auto* s = new absl::flat_hash_set<Symbol>();
    for (const char* q :
         {"prim::If", "prim::Loop", "prim::Closure", "prim::Constant", "prim::AutogradZero",
          "prim::Uninitialized", "prim::Guard", "prim::profile", "prim::profile_ivalue",
          "prim::unchecked_unwrap_optional", "aten::dequantize", "prim::RaiseException",
          "prim::Print", "prim::GetAttr", "prim::SetAttr", "prim::CallMethod",
          "prim::CallFunction", "prim::PythonOp", "prim::Enter", "prim::Exit",
          "prim::DictConstruct", "prim::CreateObject", "prim::unchecked_cast"}) {
      s->insert(Symbol::FromQualString(q));
    }
    return s;
  }();
  return *kinds;
}

bool IsMutableKind(const IValue& v) { return v.isTensor() || v.isList(); }

int64_t TensorElements(const IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() ? v.toTensor().numel() : 0;
  int64_t n = 0;
  if (v.isList() || v.isTuple()) {
    for (const IValue& e : v.elements()) n += TensorElements(e);
  }
  return n;
}

// The elements of a tensor type whose sizes are all known (saturating at
// INT64_MAX); nullopt for other types and unknown sizes.
std::optional<int64_t> StaticElements(const ir::Type& type) {
  if (!type.is_tensor() || !type.tensor().HasCompleteSizes()) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : type.tensor().ConcreteSizes()) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}

bool HasPlaceholder(const IValue& v) {
  if (v.isTensor()) return v.toTensor().is_placeholder();
  if (v.isList() || v.isTuple()) {
    for (const IValue& e : v.elements()) {
      if (HasPlaceholder(e)) return true;
    }
  }
  return false;
}

class ConstantPropagator {
 public:
  ConstantPropagator(ir::Graph& graph, PassStatistics& stats,
                     const ConstantPropagationOptions& options)
      : graph_(graph),
        stats_(stats),
        options_(options),
        ops_(options.ops ? *options.ops : ir::BuiltinOps()) {}

  absl::StatusOr<bool> Run() {
    std::vector<ir::Block*> blocks{graph_.block()};
    while (!blocks.empty()) {
      ir::Block* b = blocks.back();
      blocks.pop_back();
      for (Node* n = b->front(); n != b->return_node();) {
        ASSIGN_OR_RETURN(n, Visit(n, &blocks));
      }
    }
    return changed_;
  }

 private:
  // Handles `n` and returns the next node of its block to visit.
  absl::StatusOr<Node*> Visit(Node* n, std::vector<ir::Block*>* blocks) {
    const Symbol kind = n->kind();
    if (kind == ir::sym::kIf) {
      std::optional<IValue> cond = ConstantValue(n->input(0));
      if (cond && cond->isBool()) return InlineIf(n, cond->toBool());
    } else if (kind == ir::sym::kLoop) {
      if (RunsZeroTimes(*n)) return RemoveLoop(n);
    }
    if (!n->blocks().empty()) {
      for (size_t i = n->blocks().size(); i-- > 0;) blocks->push_back(n->block(i));
      return n->next();
    }
    Node* next = n->next();
    RETURN_IF_ERROR(TryFold(n));
    return next;
  }

  absl::StatusOr<Node*> InlineIf(Node* n, bool cond) {
    ir::Block* taken = n->block(cond ? 0 : 1);
    Node* first = taken->empty() ? n->next() : taken->front();
    for (Node* m = taken->front(); m != taken->return_node();) {
      Node* following = m->next();
      m->moveBefore(n);
      m = following;
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      n->output(i)->replaceAllUsesWith(taken->outputs()[i]);
    }
    KILN_LOG_UPDATE(kPass, "inlined the ", cond ? "then" : "else", " block of prim::If(",
                    n->input(0)->debugName(), ")");
    RemoveNode(n);
    // Uses moved to the block's outputs: mutation facts may have changed.
    never_mutated_.clear();
    stats_.Add("ifs_inlined");
    return first;
  }

  bool RunsZeroTimes(const Node& loop) const {
    if (loop.inputs().size() < 2) return false;
    std::optional<IValue> trips = ConstantValue(loop.input(0));
    if (trips && trips->isInt() && trips->toInt() <= 0) return true;
    std::optional<IValue> start = ConstantValue(loop.input(1));
    return start && start->isBool() && !start->toBool();
  }

  absl::StatusOr<Node*> RemoveLoop(Node* n) {
    if (n->outputs().size() + 2 != n->inputs().size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("prim::Loop with ", n->inputs().size(), " inputs and ",
                       n->outputs().size(), " outputs"));
    }
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      n->output(i)->replaceAllUsesWith(n->input(i + 2));
    }
    KILN_LOG_UPDATE(kPass, "removed a prim::Loop that runs zero times");
    Node* next = n->next();
    RemoveNode(n);
    never_mutated_.clear();
    stats_.Add("loops_removed");
    return next;
  }

  // Destroys `n` (its outputs are unused) and the constants it leaves dead.
  void RemoveNode(Node* n) {
    std::vector<Value*> inputs(n->inputs().begin(), n->inputs().end());
    // A value may feed `n` more than once; destroy its node only once.
    std::sort(inputs.begin(), inputs.end());
    inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    n->destroy();
    changed_ = true;
    for (Value* v : inputs) {
      never_mutated_.erase(v);  // the address may be reused by a new value
      DestroyIfUnusedConstant(v);
    }
  }

  // The value `v` is known to hold: a constant, or a TupleConstruct of
  // known values. Mutable constants qualify only if nothing writes them.
  std::optional<IValue> KnownValue(Value* v, int depth) {
    Node* p = v->node();
    if (p->kind() == ir::sym::kConstant) {
      std::optional<IValue> c = ConstantValue(v);
      if (c && IsMutableKind(*c) && !NeverMutated(v)) {
        KILN_LOG_DEBUG(kPass, "not folding a use of %", v->debugName(),
                       ": the constant may be written");
        return std::nullopt;
      }
      return c;
    }
    if (p->kind() == ir::sym::kTupleConstruct && depth < kMaxTupleDepth) {
      std::vector<IValue> elems;
      elems.reserve(p->inputs().size());
      for (Value* in : p->inputs()) {
        std::optional<IValue> e = KnownValue(in, depth + 1);
        if (!e) return std::nullopt;
        elems.push_back(*std::move(e));
      }
      return IValue::Tuple(std::move(elems));
    }
    return std::nullopt;
  }

  bool NeverMutated(const Value* v) {
    auto it = never_mutated_.find(v);
    if (it != never_mutated_.end()) return it->second;
    const bool result = IsNeverMutated(v, ops_);
    never_mutated_.emplace(v, result);
    return result;
  }

  static bool MayBeKnown(const Value* v) {
    const Symbol k = v->node()->kind();
    return k == ir::sym::kConstant || k == ir::sym::kTupleConstruct;
  }

  absl::Status TryFold(Node* n) {
    if (n->outputs().empty() || SkipKinds().contains(n->kind())) return absl::OkStatus();
    for (Value* in : n->inputs()) {
      if (!MayBeKnown(in)) return absl::OkStatus();
    }
    // A result whose size is known before evaluating it (its type, or the
    // op's shape function over the constant inputs' types) and is above the
    // cap would be evaluated only to be refused by CheckResult: a large
    // model's gather of a constant table (bert's token-type embedding, 3M
    // elements) cost as much as the rest of the pipeline, once per run.
    if (std::optional<std::pair<size_t, int64_t>> big = ResultAboveCap(*n)) {
      KILN_LOG_DEBUG(kPass, "not folding ", n->kind().qualString(), " -> %",
                     n->output(big->first)->debugName(), ": it would have ", big->second,
                     " elements, above the cap of ", options_.max_tensor_elements);
      return absl::OkStatus();
    }
    std::vector<IValue> inputs;
    inputs.reserve(n->inputs().size());
    for (Value* in : n->inputs()) {
      std::optional<IValue> v = KnownValue(in, 0);
      if (!v) return absl::OkStatus();
      inputs.push_back(*std::move(v));
    }
    absl::StatusOr<std::vector<IValue>> results = Evaluate(*n, inputs);
    if (!results.ok()) {
      KILN_LOG_DEBUG(kPass, "not folding ", n->kind().qualString(), " -> %",
                     n->output(0)->debugName(), ": ", results.status().message());
      return absl::OkStatus();
    }
    if (results->size() != n->outputs().size()) {
      KILN_LOG_DEBUG(kPass, "not folding ", n->kind().qualString(), ": ", results->size(),
                     " results for ", n->outputs().size(), " outputs");
      return absl::OkStatus();
    }
    for (size_t i = 0; i < results->size(); ++i) {
      absl::Status ok = CheckResult(*n->output(i), (*results)[i]);
      if (!ok.ok()) {
        KILN_LOG_DEBUG(kPass, "not folding ", n->kind().qualString(), " -> %",
                       n->output(i)->debugName(), ": ", ok.message());
        return absl::OkStatus();
      }
    }
    ir::WithInsertPoint guard(n);
    for (size_t i = 0; i < results->size(); ++i) {
      Value* out = n->output(i);
      if (!out->hasUses()) continue;
      ASSIGN_OR_RETURN(Value * c, InsertConstant(graph_, (*results)[i], out->type()));
      if ((*results)[i].isNone()) c->setType(out->type());
      out->replaceAllUsesWith(c);
      stats_.Add("constants_inserted");
    }
    KILN_LOG_UPDATE(kPass, "folded ", n->kind().qualString(), " -> %",
                    n->output(0)->debugName());
    RemoveNode(n);
    stats_.Add("nodes_folded");
    return absl::OkStatus();
  }

  // The first used output (index, elements) whose size, known without
  // evaluating `n`, is above the cap.
  std::optional<std::pair<size_t, int64_t>> ResultAboveCap(const Node& n) {
    std::vector<std::optional<int64_t>> elements;
    bool unknown = false;
    for (const Value* out : n.outputs()) {
      elements.push_back(StaticElements(*out->type()));
      unknown |= out->hasUses() && out->type()->is_tensor() && !elements.back();
    }
    if (unknown) {
      // The shape function, as shape propagation would run it; its answer
      // only decides whether to evaluate, the types stay as they are.
      const ir::Operator* op = ops_.Match(n);
      if (op != nullptr && op->shape_fn) {
        absl::StatusOr<std::vector<ir::TypePtr>> inferred = ShapeFunctionTypes(*op, n);
        if (inferred.ok()) {
          for (size_t i = 0; i < inferred->size() && i < elements.size(); ++i) {
            if (!elements[i] && (*inferred)[i] != nullptr) elements[i] = StaticElements(*(*inferred)[i]);
          }
        }
      }
    }
    for (size_t i = 0; i < elements.size(); ++i) {
      if (n.output(i)->hasUses() && elements[i] && *elements[i] > options_.max_tensor_elements) {
        return std::make_pair(i, *elements[i]);
      }
    }
    return std::nullopt;
  }

  absl::Status CheckResult(const Value& out, const IValue& v) {
    if (!out.hasUses()) return absl::OkStatus();
    if (!IsRepresentableConstant(v)) {
      return absl::FailedPreconditionError(
          absl::StrCat("result ", v.DebugString(), " has no constant form"));
    }
    if (HasPlaceholder(v)) return absl::FailedPreconditionError("result has no data");
    if (TensorElements(v) > options_.max_tensor_elements) {
      return absl::FailedPreconditionError(
          absl::StrCat("result has ", TensorElements(v), " elements, above the cap of ",
                       options_.max_tensor_elements));
    }
    if (IsMutableKind(v) && !IsNeverMutated(&out, ops_)) {
      return absl::FailedPreconditionError("the result may be written or aliased later");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<IValue>> Evaluate(const Node& n, std::vector<IValue>& inputs) {
    const Symbol kind = n.kind();
    if (kind == ir::sym::kListConstruct) {
      std::vector<IValue> out;
      out.push_back(IValue::List(std::move(inputs)));
      return out;
    }
    if (kind == ir::sym::kListUnpack || kind == ir::sym::kTupleUnpack) {
      if (inputs.size() != 1 || !(inputs[0].isList() || inputs[0].isTuple())) {
        return absl::FailedPreconditionError("unpack of a non-container");
      }
      if (inputs[0].elements().size() != n.outputs().size()) {
        return absl::FailedPreconditionError("unpack size mismatch");
      }
      return inputs[0].elements();
    }
    if (kind == ir::sym::kTupleIndex) {
      if (inputs.size() != 2 || !inputs[0].isTuple() || !inputs[1].isInt()) {
        return absl::FailedPreconditionError("TupleIndex needs a tuple and an int");
      }
      int64_t i = inputs[1].toInt();
      const int64_t size = static_cast<int64_t>(inputs[0].elements().size());
      if (i < 0) i += size;
      if (i < 0 || i >= size) return absl::FailedPreconditionError("tuple index out of range");
      return std::vector<IValue>{inputs[0].elements()[static_cast<size_t>(i)]};
    }
    if (kind == ir::sym::kTupleConstruct) {
      return absl::FailedPreconditionError("tuple constants have no attribute form");
    }
    absl::StatusOr<std::vector<IValue>> scalar = ir::EvaluateScalarOp(kind, inputs);
    if (!absl::IsUnimplemented(scalar.status())) return scalar;
    return RunKernel(n, inputs);
  }

  absl::StatusOr<std::vector<IValue>> RunKernel(const Node& n, std::vector<IValue>& inputs) {
    const ir::Operator* op = ops_.Match(n);
    if (op == nullptr) return absl::NotFoundError("no matching schema");
    if (!op->kernel) return absl::NotFoundError("the operator has no kernel");
    if (op->schema.is_vararg) return absl::FailedPreconditionError("vararg schema");
    if (ir::HasSideEffects(n, ops_)) return absl::FailedPreconditionError("has side effects");
    if (ir::IsNondeterministic(n, ops_)) return absl::FailedPreconditionError("nondeterministic");
    if (ir::IsMutating(n, ops_)) return absl::FailedPreconditionError("mutates an input");
    for (const IValue& v : inputs) {
      if (HasPlaceholder(v)) return absl::FailedPreconditionError("placeholder tensor input");
      if (TensorElements(v) > options_.max_tensor_elements) {
        return absl::FailedPreconditionError("tensor input above the element cap");
      }
    }
    // Kernels see the full argument list: trailing defaults filled in.
    const auto& args = op->schema.arguments;
    for (size_t i = inputs.size(); i < args.size(); ++i) {
      if (!args[i].default_value) return absl::FailedPreconditionError("missing argument");
      inputs.push_back(*args[i].default_value);
    }
    return op->kernel(inputs);
  }

  ir::Graph& graph_;
  PassStatistics& stats_;
  const ConstantPropagationOptions& options_;
  const ir::OpRegistry& ops_;
  bool changed_ = false;
  absl::flat_hash_map<const Value*, bool> never_mutated_;
};

}  // namespace

absl::StatusOr<bool> PropagateConstants(ir::Graph& graph, PassStatistics& stats,
                                        const ConstantPropagationOptions& options) {
  return ConstantPropagator(graph, stats, options).Run();
}

absl::Status RegisterConstantPropagationPass(PassRegistry& registry) {
  return registry.RegisterFunction(
      "constant_propagation", {"constprop"},
      "evaluates nodes whose inputs are constants; inlines constant ifs, drops zero-trip loops",
      [](ir::Graph& graph, PassStatistics& stats) { return PropagateConstants(graph, stats); });
}

}  // namespace kiln::passes
