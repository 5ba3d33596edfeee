#include "frontend/graph_builder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/constants.h"
#include "ir/symbol.h"

namespace kiln::frontend {

using ir::IValue;
using ir::Type;
using ir::TypePtr;
using ir::Value;

GraphBuilder::GraphBuilder(ir::Graph* graph, const ir::OpRegistry* registry)
    : graph_(graph), registry_(registry), block_(graph->block()) {}

ir::Node* GraphBuilder::Append(ir::Node* n) { return block_->appendNode(n); }

Value* GraphBuilder::AddInput(absl::string_view name, TypePtr type) {
  Value* v = graph_->addInput(name);
  v->setType(std::move(type));
  return v;
}

void GraphBuilder::AddOutput(Value* v) { graph_->block()->registerOutput(v); }

absl::StatusOr<Value*> GraphBuilder::Constant(const IValue& v) {
  ir::WithInsertPoint guard(block_);
  return ir::InsertConstant(*graph_, v);
}

// Scalars and homogeneous lists are always representable.
Value* GraphBuilder::None() { return *Constant(IValue::None()); }
Value* GraphBuilder::Bool(bool v) { return *Constant(IValue::Bool(v)); }
Value* GraphBuilder::Int(int64_t v) { return *Constant(IValue::Int(v)); }
Value* GraphBuilder::Double(double v) { return *Constant(IValue::Double(v)); }
Value* GraphBuilder::Str(absl::string_view v) { return *Constant(IValue::String(std::string(v))); }

Value* GraphBuilder::IntList(absl::Span<const int64_t> v) {
  std::vector<IValue> elems;
  elems.reserve(v.size());
  for (int64_t x : v) elems.push_back(IValue::Int(x));
  ir::WithInsertPoint guard(block_);
  return *ir::InsertConstant(*graph_, IValue::List(std::move(elems)), Type::List(Type::Int()));
}

Value* GraphBuilder::DoubleList(absl::Span<const double> v) {
  std::vector<IValue> elems;
  for (double x : v) elems.push_back(IValue::Double(x));
  ir::WithInsertPoint guard(block_);
  return *ir::InsertConstant(*graph_, IValue::List(std::move(elems)), Type::List(Type::Float()));
}

Value* GraphBuilder::BoolList(absl::Span<const bool> v) {
  std::vector<IValue> elems;
  for (bool x : v) elems.push_back(IValue::Bool(x));
  ir::WithInsertPoint guard(block_);
  return *ir::InsertConstant(*graph_, IValue::List(std::move(elems)), Type::List(Type::Bool()));
}

Value* GraphBuilder::TensorConstant(const Tensor& t) { return *Constant(IValue::FromTensor(t)); }

absl::StatusOr<Value*> GraphBuilder::Op(absl::string_view kind,
                                        absl::Span<Value* const> inputs) {
  ASSIGN_OR_RETURN(std::vector<Value*> outs, OpN(kind, inputs, 1));
  return outs[0];
}

absl::StatusOr<std::vector<Value*>> GraphBuilder::OpN(absl::string_view kind,
                                                      absl::Span<Value* const> inputs,
                                                      size_t num_outputs) {
  const size_t ns_end = kind.find("::");
  if (ns_end != absl::string_view::npos && kind.find('.', ns_end) != absl::string_view::npos) {
    // Nodes do not record overloads: the registry picks one from the input
    // types, at build time here and again in every consumer.
    return absl::InvalidArgumentError(absl::StrCat(
        "GraphBuilder::Op takes an op name without overload ('", kind.substr(0, kind.find('.', ns_end)),
        "'), got '", kind, "'"));
  }
  const ir::Symbol sym = ir::Symbol::FromQualString(kind);
  std::vector<TypePtr> types;
  types.reserve(inputs.size());
  for (Value* v : inputs) types.push_back(v->type());
  const ir::Operator* op = registry_->Match(sym, types, num_outputs);
  if (op == nullptr) {
    std::vector<std::string> names;
    for (const TypePtr& t : types) names.push_back(t->ToString());
    std::string candidates;
    for (const auto& o : registry_->Overloads(sym)) {
      absl::StrAppend(&candidates, "\n  ", o->schema.ToString());
    }
    return absl::NotFoundError(absl::StrCat(
        "no overload of ", kind, " takes (", absl::StrJoin(names, ", "), ") with ", num_outputs,
        " output(s)", candidates.empty() ? " (unknown op)" : "; candidates:", candidates));
  }
  ir::Node* n = Append(graph_->create(sym, inputs, num_outputs));
  std::vector<Value*> outs(n->outputs().begin(), n->outputs().end());
  for (size_t i = 0; i < outs.size(); ++i) {
    TypePtr t = i < op->schema.returns.size() ? op->schema.returns[i].type : Type::Any();
    outs[i]->setType(t->kind() == ir::TypeKind::kTensor ? Type::Tensor() : t);
  }
  return outs;
}

Value* GraphBuilder::List(TypePtr element_type, absl::Span<Value* const> elements) {
  ir::Node* n = Append(graph_->create(ir::sym::kListConstruct, elements, 1));
  n->output()->setType(Type::List(std::move(element_type)));
  return n->output();
}

Value* GraphBuilder::Tuple(absl::Span<Value* const> elements) {
  ir::Node* n = Append(graph_->create(ir::sym::kTupleConstruct, elements, 1));
  std::vector<TypePtr> types;
  for (Value* v : elements) types.push_back(v->type());
  n->output()->setType(Type::Tuple(std::move(types)));
  return n->output();
}

std::vector<Value*> GraphBuilder::ListUnpack(Value* list, size_t n) {
  Value* in[] = {list};
  ir::Node* node = Append(graph_->create(ir::sym::kListUnpack, in, n));
  const TypePtr elem = list->type()->kind() == ir::TypeKind::kList
                           ? list->type()->contained()[0]
                           : Type::Any();
  for (Value* o : node->outputs()) o->setType(elem);
  return std::vector<Value*>(node->outputs().begin(), node->outputs().end());
}

std::vector<Value*> GraphBuilder::TupleUnpack(Value* tuple) {
  const size_t n = tuple->type()->kind() == ir::TypeKind::kTuple
                       ? tuple->type()->contained().size()
                       : 0;
  Value* in[] = {tuple};
  ir::Node* node = Append(graph_->create(ir::sym::kTupleUnpack, in, n));
  for (size_t i = 0; i < n; ++i) node->output(i)->setType(tuple->type()->contained()[i]);
  return std::vector<Value*>(node->outputs().begin(), node->outputs().end());
}

ir::Node* GraphBuilder::If(Value* condition, size_t num_outputs) {
  Value* in[] = {condition};
  ir::Node* n = Append(graph_->create(ir::sym::kIf, in, num_outputs));
  n->addBlock();
  n->addBlock();
  return n;
}

ir::Node* GraphBuilder::Loop(Value* max_trip_count, Value* initial_condition,
                             absl::Span<Value* const> carried) {
  std::vector<Value*> in = {max_trip_count, initial_condition};
  in.insert(in.end(), carried.begin(), carried.end());
  ir::Node* n = Append(graph_->create(ir::sym::kLoop, in, carried.size()));
  ir::Block* body = n->addBlock();
  body->addInput()->setType(Type::Int());
  for (size_t i = 0; i < carried.size(); ++i) {
    body->addInput()->setType(carried[i]->type());
    n->output(i)->setType(carried[i]->type());
  }
  return n;
}

void GraphBuilder::SetBlockOutputs(ir::Block* block, absl::Span<Value* const> outputs) {
  while (!block->outputs().empty()) block->eraseOutput(block->outputs().size() - 1);
  for (Value* v : outputs) block->registerOutput(v);
}

TypePtr GraphBuilder::TensorTy(std::optional<DType> dtype,
                               std::optional<std::vector<std::optional<int64_t>>> sizes) {
  ir::TensorInfo info;
  info.dtype = dtype;
  info.sizes = std::move(sizes);
  return Type::TensorWith(std::move(info));
}

TypePtr GraphBuilder::TensorTy(DType dtype, absl::Span<const int64_t> sizes) {
  std::vector<std::optional<int64_t>> s(sizes.begin(), sizes.end());
  return TensorTy(dtype, std::move(s));
}

}  // namespace kiln::frontend
