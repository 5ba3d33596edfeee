#include "runtime/interpreter.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/constants.h"
#include "ir/scalar_eval.h"
#include "ir/symbol.h"
#include "ir/verifier.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

using ir::IValue;

// prim::If / prim::Loop nest at most this deep (graphs are untrusted).
constexpr int kMaxDepth = 256;

bool InterpretedHere(ir::Symbol k) {
  return k == ir::sym::kConstant || k == ir::sym::kListConstruct ||
         k == ir::sym::kListUnpack || k == ir::sym::kTupleConstruct ||
         k == ir::sym::kTupleUnpack || k == ir::sym::kTupleIndex || k == ir::sym::kIf ||
         k == ir::sym::kLoop || k == ir::sym::kUninitialized || k == ir::sym::kRaiseException;
}

absl::Status NodeError(const ir::Node& node, const absl::Status& s) {
  // The model's name for the node (an imported ONNX node's name is its
  // scope) first: users know it, not kiln's value names.
  if (!node.scope().empty()) {
    return absl::Status(s.code(), absl::StrCat("node '", node.scope(), "' (`", ir::DescribeNode(node),
                                               "`): ", s.message()));
  }
  return absl::Status(s.code(), absl::StrCat(ir::DescribeNode(node), ": ", s.message()));
}

// The node of `block` that contains `user` (itself, or the block-owning
// ancestor), or null if `user` is not inside `block`.
const ir::Node* AncestorIn(const ir::Node* user, const ir::Block* block) {
  while (user != nullptr && user->owningBlock() != block) {
    const ir::Block* b = user->owningBlock();
    user = b == nullptr ? nullptr : b->owningNode();
  }
  return user;
}

absl::StatusOr<bool> AsCondition(const IValue& v, const char* what) {
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  if (v.isTensor() && v.toTensor().has_data() && v.toTensor().numel() == 1) {
    return v.toTensor().GetDouble(0) != 0;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be a bool (or a one-element tensor), got ", v.DebugString()));
}

}  // namespace

Interpreter::Interpreter(const ir::Graph& graph, const ir::OpRegistry& registry)
    : graph_(graph), registry_(registry) {}

absl::Status Interpreter::PrepareBlock(const ir::Block& block, int depth) {
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat("blocks nest deeper than ", kMaxDepth));
  }
  // Values defined in this block (its inputs and its nodes' outputs) are
  // released after the last node of this block that uses them.
  auto plan_release = [&](const ir::Value* v) -> absl::Status {
    const ir::Node* last = nullptr;
    for (const ir::Use& use : v->uses()) {
      const ir::Node* a = AncestorIn(use.user, &block);
      if (a == nullptr) continue;
      if (a == block.return_node()) return absl::OkStatus();  // lives to the end
      if (last == nullptr || last->isBefore(a)) last = a;
    }
    if (last == nullptr) last = v->node()->kind() == ir::sym::kParam ? nullptr : v->node();
    if (last != nullptr) plans_[last].release_after.push_back(v);
    return absl::OkStatus();
  };
  for (const ir::Value* v : block.inputs()) RETURN_IF_ERROR(plan_release(v));
  for (const ir::Node* n : block.nodes()) {
    NodePlan& plan = plans_[n];
    if (!InterpretedHere(n->kind())) {
      plan.op = registry_.Match(*n);
      if (plan.op == nullptr && registry_.HasSchemas(n->kind())) {
        return NodeError(*n, absl::NotFoundError("no overload matches the input types"));
      }
    }
    for (const ir::Block* b : n->blocks()) RETURN_IF_ERROR(PrepareBlock(*b, depth + 1));
    for (const ir::Value* v : n->outputs()) RETURN_IF_ERROR(plan_release(v));
  }
  return absl::OkStatus();
}

absl::Status Interpreter::Prepare() {
  if (prepared_) return absl::OkStatus();
  plans_.clear();
  RETURN_IF_ERROR(PrepareBlock(*graph_.block(), 0));
  prepared_ = true;
  return absl::OkStatus();
}

void Interpreter::Set(const ir::Value* v, IValue value) {
  const size_t id = v->unique();
  if (!live_[id]) {
    live_[id] = true;
    ++live_count_;
    if (live_count_ > stats_.peak_live_values) stats_.peak_live_values = live_count_;
  }
  env_[id] = std::move(value);
}

void Interpreter::Release(const ir::Value* v) {
  const size_t id = v->unique();
  if (!live_[id]) return;
  live_[id] = false;
  --live_count_;
  env_[id] = IValue();
}

absl::Status Interpreter::RunOp(const ir::Node& node, const NodePlan& plan) {
  std::vector<IValue> args;
  args.reserve(node.inputs().size());
  for (const ir::Value* v : node.inputs()) args.push_back(Get(v));
  absl::StatusOr<std::vector<IValue>> outs;
  if (plan.op != nullptr && plan.op->kernel) {
    const ir::FunctionSchema& schema = plan.op->schema;
    for (size_t i = args.size(); i < schema.arguments.size(); ++i) {
      if (!schema.arguments[i].default_value) {
        return NodeError(node, absl::InvalidArgumentError(absl::StrCat(
                                   "missing argument '", schema.arguments[i].name, "'")));
      }
      args.push_back(*schema.arguments[i].default_value);
    }
    outs = plan.op->kernel(args);
  } else {
    outs = ir::EvaluateScalarOp(node.kind(), args);
    if (!outs.ok() && absl::IsUnimplemented(outs.status())) {
      return NodeError(node, absl::UnimplementedError(
                                 plan.op ? absl::StrCat("no kernel for ",
                                                        plan.op->schema.QualifiedName())
                                         : "no kernel for this op"));
    }
  }
  if (!outs.ok()) return NodeError(node, outs.status());
  if (outs->size() != node.outputs().size()) {
    return NodeError(node, absl::InternalError(absl::StrCat("kernel returned ", outs->size(),
                                                            " values for ",
                                                            node.outputs().size(), " outputs")));
  }
  for (size_t i = 0; i < outs->size(); ++i) Set(node.output(i), std::move((*outs)[i]));
  return absl::OkStatus();
}

absl::Status Interpreter::RunIf(const ir::Node& node, int depth) {
  ASSIGN_OR_RETURN(bool cond, AsCondition(Get(node.input(0)), "prim::If condition"));
  const ir::Block* b = node.block(cond ? 0 : 1);
  RETURN_IF_ERROR(RunBlock(*b, depth + 1));
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    IValue v = Get(b->outputs()[i]);
    Set(node.output(i), std::move(v));
  }
  for (const ir::Value* v : b->outputs()) {
    if (v->node()->owningBlock() == b) Release(v);
  }
  return absl::OkStatus();
}

absl::Status Interpreter::RunLoop(const ir::Node& node, int depth) {
  const IValue& trip = Get(node.input(0));
  if (!trip.isInt()) {
    return absl::InvalidArgumentError("prim::Loop max trip count must be an int");
  }
  const int64_t max_trips = trip.toInt();
  ASSIGN_OR_RETURN(bool cond, AsCondition(Get(node.input(1)), "prim::Loop condition"));
  const ir::Block* body = node.block(0);
  const size_t n_carried = node.inputs().size() - 2;
  std::vector<IValue> carried;
  for (size_t i = 0; i < n_carried; ++i) carried.push_back(Get(node.input(2 + i)));
  for (int64_t it = 0; cond && it < max_trips; ++it) {
    Set(body->inputs()[0], IValue::Int(it));
    for (size_t i = 0; i < n_carried; ++i) Set(body->inputs()[1 + i], std::move(carried[i]));
    RETURN_IF_ERROR(RunBlock(*body, depth + 1));
    ASSIGN_OR_RETURN(cond, AsCondition(Get(body->outputs()[0]), "prim::Loop body condition"));
    for (size_t i = 0; i < n_carried; ++i) carried[i] = Get(body->outputs()[1 + i]);
    // Block inputs and block-local outputs die with the iteration.
    for (const ir::Value* v : body->inputs()) Release(v);
    for (const ir::Value* v : body->outputs()) {
      if (v->node()->owningBlock() == body) Release(v);
    }
  }
  for (size_t i = 0; i < n_carried; ++i) Set(node.output(i), std::move(carried[i]));
  return absl::OkStatus();
}

absl::Status Interpreter::RunNode(const ir::Node& node, int depth) {
  ++stats_.nodes_executed;
  const ir::Symbol k = node.kind();
  if (k == ir::sym::kConstant) {
    std::optional<IValue> c = ir::ConstantValue(node.output());
    if (!c) return NodeError(node, absl::UnimplementedError("constant kind not supported"));
    if (c->isTensor() && !c->toTensor().has_data()) {
      return NodeError(node, absl::FailedPreconditionError(
                                 "tensor constant has no data (a <Tensor> placeholder)"));
    }
    Set(node.output(), *std::move(c));
  } else if (k == ir::sym::kListConstruct || k == ir::sym::kTupleConstruct) {
    std::vector<IValue> elems;
    for (const ir::Value* v : node.inputs()) elems.push_back(Get(v));
    Set(node.output(), k == ir::sym::kListConstruct ? IValue::List(std::move(elems))
                                                    : IValue::Tuple(std::move(elems)));
  } else if (k == ir::sym::kListUnpack || k == ir::sym::kTupleUnpack) {
    const IValue& in = Get(node.input(0));
    if ((!in.isList() && !in.isTuple()) || in.elements().size() != node.outputs().size()) {
      return NodeError(node, absl::InvalidArgumentError(absl::StrCat(
                                 "cannot unpack ", in.DebugString(), " into ",
                                 node.outputs().size(), " values")));
    }
    for (size_t i = 0; i < node.outputs().size(); ++i) Set(node.output(i), in.elements()[i]);
  } else if (k == ir::sym::kTupleIndex) {
    const IValue& t = Get(node.input(0));
    const IValue& i = Get(node.input(1));
    if (!t.isTuple() || !i.isInt() || i.toInt() < 0 ||
        i.toInt() >= static_cast<int64_t>(t.elements().size())) {
      return NodeError(node, absl::InvalidArgumentError("tuple index out of range"));
    }
    Set(node.output(), t.elements()[i.toInt()]);
  } else if (k == ir::sym::kUninitialized) {
    Set(node.output(), IValue());
  } else if (k == ir::sym::kRaiseException) {
    const IValue& msg = node.inputs().empty() ? IValue() : Get(node.input(0));
    return NodeError(node, absl::AbortedError(absl::StrCat(
                               "exception raised: ", msg.isString() ? msg.toString()
                                                                    : msg.DebugString())));
  } else if (k == ir::sym::kIf) {
    RETURN_IF_ERROR(RunIf(node, depth));
  } else if (k == ir::sym::kLoop) {
    RETURN_IF_ERROR(RunLoop(node, depth));
  } else {
    return RunOp(node, plans_.at(&node));
  }
  return absl::OkStatus();
}

absl::Status Interpreter::RunBlock(const ir::Block& block, int depth) {
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat("blocks nest deeper than ", kMaxDepth));
  }
  for (const ir::Node* n : block.nodes()) {
    RETURN_IF_ERROR(RunNode(*n, depth));
    for (const ir::Value* v : plans_.at(n).release_after) Release(v);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<IValue>> Interpreter::Run(absl::Span<const IValue> inputs) {
  RETURN_IF_ERROR(Prepare());
  const ir::Block& top = *graph_.block();
  if (inputs.size() != top.inputs().size()) {
    return absl::InvalidArgumentError(absl::StrCat("the graph takes ", top.inputs().size(),
                                                   " inputs, got ", inputs.size()));
  }
  env_.assign(graph_.nextUnique(), IValue());
  live_.assign(graph_.nextUnique(), false);
  live_count_ = 0;
  stats_ = InterpreterStats();
  for (size_t i = 0; i < inputs.size(); ++i) Set(top.inputs()[i], inputs[i]);
  RETURN_IF_ERROR(RunBlock(top, 0));
  std::vector<IValue> outs;
  for (const ir::Value* v : top.outputs()) outs.push_back(Get(v));
  env_.clear();
  live_.clear();
  return outs;
}

absl::StatusOr<std::vector<IValue>> RunGraph(const ir::Graph& graph,
                                             absl::Span<const IValue> inputs) {
  RETURN_IF_ERROR(RegisterBuiltinKernels());
  Interpreter interp(graph);
  return interp.Run(inputs);
}

}  // namespace kiln::runtime
