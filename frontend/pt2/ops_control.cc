// Nodes that are not ATen ops: higher-order ops, whose subgraphs are
// inlined (wrap_with_set_grad_enabled, autocast-off regions) or become
// kiln control flow (cond -> prim::If, while_loop -> prim::Loop), and Python operators on symbolic
// sizes (_operator.mul -> aten::mul on ints, torch.sym_max -> prim::max).
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "frontend/pt2/importer_internal.h"
#include "ir/constants.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {
namespace {

using ir::Value;

// Binds the node's outputs (tensors, symbolic values; a single list of
// tensors) to `values`.
absl::Status BindResults(Importer& importer, const Node& node, const std::vector<Value*>& values) {
  std::vector<std::string> names;
  for (const Argument& o : node.outputs) {
    if (o.kind == Argument::Kind::kList) {
      for (const Argument& e : o.elements) names.push_back(e.kind == Argument::Kind::kNone ? "" : e.name);
    } else {
      names.push_back(o.kind == Argument::Kind::kNone ? "" : o.name);
    }
  }
  if (names.size() != values.size()) {
    return importer.NodeError(node, absl::StrCat("has ", names.size(), " outputs; its subgraph returns ",
                                                 values.size()));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) continue;
    if (importer.scope().bindings.contains(names[i])) {
      return importer.NodeError(node, absl::StrCat("defines '", names[i], "' a second time"));
    }
    importer.TypeFromMeta(values[i], names[i]);
    importer.BindBase(names[i], values[i]);
  }
  return absl::OkStatus();
}

// The positional operands after the subgraph arguments (tensors, symbolic
// values, or one list of them).
absl::StatusOr<std::vector<Value*>> Operands(Importer& importer, const Node& node, size_t first) {
  std::vector<Value*> out;
  for (size_t i = first; i < node.inputs.size(); ++i) {
    const Argument& a = node.inputs[i].arg;
    if (a.kind == Argument::Kind::kList) {
      for (const Argument& e : a.elements) {
        ASSIGN_OR_RETURN(Value* v, importer.ConvertScalar(e, node));
        out.push_back(v);
      }
    } else {
      ASSIGN_OR_RETURN(Value* v, importer.ConvertScalar(a, node));
      out.push_back(v);
    }
  }
  return out;
}

size_t FirstGraph(const Node& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].arg.kind == Argument::Kind::kGraph) return i;
  }
  return node.inputs.size();
}

// A predicate value as a bool (a 0-dim bool tensor from a subgraph).
absl::StatusOr<Value*> AsBool(Importer& importer, const Node& node, Value* v) {
  if (!v->type()->is_tensor()) return v;
  absl::StatusOr<Value*> b = importer.builder().Op("aten::Bool", {v});
  if (!b.ok()) return importer.NodeError(node, b.status().message());
  return b;
}

absl::Status Inline(Importer& importer, const Node& node) {
  const size_t g = FirstGraph(node);
  if (g == node.inputs.size()) return importer.NodeError(node, "has no subgraph");
  ASSIGN_OR_RETURN(std::vector<Value*> operands, Operands(importer, node, g + 1));
  ASSIGN_OR_RETURN(std::vector<Value*> results,
                   importer.InlineGraph(*node.inputs[g].arg.graph, operands, node));
  return BindResults(importer, node, results);
}

absl::Status Cond(Importer& importer, const Node& node) {
  // cond(pred, true_graph, false_graph, operands)
  if (node.inputs.size() != 4 || node.inputs[1].arg.kind != Argument::Kind::kGraph ||
      node.inputs[2].arg.kind != Argument::Kind::kGraph) {
    return importer.NodeError(node, "expected cond(pred, true_fn, false_fn, operands)");
  }
  ASSIGN_OR_RETURN(std::vector<Value*> operands, Operands(importer, node, 3));
  const Argument& pred = node.inputs[0].arg;
  if (pred.kind == Argument::Kind::kBool) {  // decided at export time
    const Graph& taken = *node.inputs[pred.bool_value ? 1 : 2].arg.graph;
    ASSIGN_OR_RETURN(std::vector<Value*> results, importer.InlineGraph(taken, operands, node));
    return BindResults(importer, node, results);
  }
  GraphBuilder& b = importer.builder();
  ASSIGN_OR_RETURN(Value* pred_value, importer.ConvertScalar(pred, node));
  ASSIGN_OR_RETURN(Value* p, AsBool(importer, node, pred_value));
  size_t num_outputs = 0;
  for (const Argument& o : node.outputs) {
    num_outputs += o.kind == Argument::Kind::kList ? o.elements.size() : 1;
  }
  ir::Node* n = b.If(p, num_outputs);
  ir::Block* outer = b.insertion_block();
  for (int branch = 0; branch < 2; ++branch) {
    b.SetInsertionBlock(n->blocks()[branch]);
    absl::StatusOr<std::vector<Value*>> results =
        importer.InlineGraph(*node.inputs[1 + branch].arg.graph, operands, node);
    if (!results.ok()) {
      b.SetInsertionBlock(outer);
      return results.status();
    }
    if (results->size() != num_outputs) {
      b.SetInsertionBlock(outer);
      return importer.NodeError(node, absl::StrCat("branch ", branch, " returns ", results->size(),
                                                   " values, the node has ", num_outputs));
    }
    GraphBuilder::SetBlockOutputs(n->blocks()[branch], *results);
  }
  b.SetInsertionBlock(outer);
  std::vector<Value*> outs(n->outputs().begin(), n->outputs().end());
  for (size_t i = 0; i < outs.size(); ++i) outs[i]->setType(n->blocks()[0]->outputs()[i]->type());
  return BindResults(importer, node, outs);
}

absl::Status WhileLoop(Importer& importer, const Node& node) {
  // while_loop(cond_fn, body_fn, carried_inputs, additional_inputs):
  //   while cond_fn(*carried, *additional): carried = body_fn(*carried, *additional)
  // as prim::Loop(max, cond_fn(initial), carried...) whose body runs body_fn
  // and then cond_fn on its results.
  if (node.inputs.size() != 4 || node.inputs[0].arg.kind != Argument::Kind::kGraph ||
      node.inputs[1].arg.kind != Argument::Kind::kGraph) {
    return importer.NodeError(node, "expected while_loop(cond_fn, body_fn, carried_inputs, additional_inputs)");
  }
  const Graph& cond_fn = *node.inputs[0].arg.graph;
  const Graph& body_fn = *node.inputs[1].arg.graph;
  ASSIGN_OR_RETURN(std::vector<Value*> carried, Operands(importer, node, 2));
  const size_t num_carried =
      node.inputs[2].arg.kind == Argument::Kind::kList ? node.inputs[2].arg.elements.size() : 1;
  std::vector<Value*> additional(carried.begin() + static_cast<long>(num_carried), carried.end());
  carried.resize(num_carried);
  auto with_additional = [&](std::vector<Value*> v) {
    v.insert(v.end(), additional.begin(), additional.end());
    return v;
  };
  ASSIGN_OR_RETURN(std::vector<Value*> first, importer.InlineGraph(cond_fn, with_additional(carried), node));
  if (first.size() != 1) return importer.NodeError(node, "cond_fn must return one value");
  ASSIGN_OR_RETURN(Value* go, AsBool(importer, node, first[0]));
  GraphBuilder& b = importer.builder();
  ir::Node* loop = b.Loop(b.Int(std::numeric_limits<int64_t>::max()), go, carried);
  ir::Block* body = loop->blocks()[0];
  ir::Block* outer = b.insertion_block();
  b.SetInsertionBlock(body);
  absl::Status status = [&]() -> absl::Status {
    std::vector<Value*> state(body->inputs().begin() + 1, body->inputs().end());
    ASSIGN_OR_RETURN(std::vector<Value*> next, importer.InlineGraph(body_fn, with_additional(state), node));
    if (next.size() != num_carried) {
      return importer.NodeError(node, absl::StrCat("body_fn returns ", next.size(), " values for ",
                                                   num_carried, " carried ones"));
    }
    ASSIGN_OR_RETURN(std::vector<Value*> again, importer.InlineGraph(cond_fn, with_additional(next), node));
    if (again.size() != 1) return importer.NodeError(node, "cond_fn must return one value");
    ASSIGN_OR_RETURN(Value* more, AsBool(importer, node, again[0]));
    std::vector<Value*> outs = {more};
    outs.insert(outs.end(), next.begin(), next.end());
    GraphBuilder::SetBlockOutputs(body, outs);
    return absl::OkStatus();
  }();
  b.SetInsertionBlock(outer);
  RETURN_IF_ERROR(status);
  return BindResults(importer, node, std::vector<Value*>(loop->outputs().begin(), loop->outputs().end()));
}

}  // namespace

absl::Status ConvertHigherOrderNode(Importer& importer, const Node& node) {
  absl::string_view op = node.target;
  absl::ConsumePrefix(&op, "torch.ops.higher_order.");
  if (op == "wrap_with_set_grad_enabled") return Inline(importer, node);  // grad mode: no effect here
  if (op == "wrap_with_autocast") {
    // (device_type, dtype, enabled, cache_enabled, graph, *args)
    if (node.inputs.size() > 2 && node.inputs[2].arg.kind == Argument::Kind::kBool &&
        !node.inputs[2].arg.bool_value) {
      return Inline(importer, node);
    }
    return importer.NodeError(node, "autocast regions are not supported (export without autocast)");
  }
  if (op == "cond") return Cond(importer, node);
  if (op == "while_loop") return WhileLoop(importer, node);
  return importer.NodeError(node, absl::StrCat("the higher-order op '", op,
                                               "' is not supported (cond and while_loop are; map, "
                                               "scan and effectful ops are not yet)"));
}

absl::Status ConvertSymbolicNode(Importer& importer, const Node& node) {
  static const std::pair<const char*, const char*> kOps[] = {
      {"_operator.add", "aten::add"},       {"_operator.sub", "aten::sub"},
      {"_operator.mul", "aten::mul"},       {"_operator.floordiv", "aten::floordiv"},
      {"_operator.mod", "aten::remainder"}, {"_operator.truediv", "aten::div"},
      {"_operator.pow", "aten::pow"},       {"_operator.neg", "aten::neg"},
      {"_operator.eq", "aten::eq"},         {"_operator.ne", "aten::ne"},
      {"_operator.lt", "aten::lt"},         {"_operator.le", "aten::le"},
      {"_operator.gt", "aten::gt"},         {"_operator.ge", "aten::ge"},
      {"_operator.and_", "aten::__and__"},  {"_operator.or_", "aten::__or__"},
      {"_operator.not_", "aten::__not__"},  {"torch.sym_not", "aten::__not__"},
      {"torch.sym_max", "prim::max"},       {"torch.sym_min", "prim::min"},
      {"torch.sym_float", "aten::Float"},   {"torch.sym_int", "aten::Int"},
      {"math.ceil", "aten::ceil"},          {"math.floor", "aten::floor"},
  };
  const char* kind = nullptr;
  for (const auto& [target, k] : kOps) {
    if (node.target == target) kind = k;
  }
  if (kind == nullptr) {
    return importer.NodeError(node, "unsupported operator (neither torch.ops nor a known Python operator)");
  }
  std::vector<Value*> args;
  for (const NamedArgument& na : node.inputs) {
    ASSIGN_OR_RETURN(Value* v, importer.ConvertScalar(na.arg, node));
    args.push_back(v);
  }
  absl::StatusOr<Value*> out = importer.builder().Op(kind, args);
  if (!out.ok()) return importer.NodeError(node, out.status().message());
  return BindResults(importer, node, {*out});
}

}  // namespace kiln::frontend::pt2
