#include "frontend/pt2/importer.h"

#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "frontend/pt2/importer_internal.h"
#include "frontend/pt2/weights.h"
#include "ir/constants.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {

using ir::IValue;
using ir::Type;
using ir::TypeKind;
using ir::TypePtr;
using ir::Value;

namespace {

// Views of views of ...: deeper chains are refused (a hostile file could
// otherwise recurse without bound when a base changes).
constexpr int kMaxViewDepth = 256;
constexpr int kMaxSubgraphDepth = 16;

bool IsInplaceSchema(const ir::FunctionSchema& s) {
  return !s.arguments.empty() && s.arguments[0].alias_info && s.arguments[0].alias_info->is_write &&
         absl::EndsWith(s.name, "_");
}

}  // namespace

// ---------------------------------------------------------------------------
// NodeContext

GraphBuilder& NodeContext::builder() { return importer_->builder(); }

absl::StatusOr<Value*> NodeContext::Arg(absl::string_view name) const {
  const int i = schema_.ArgumentIndex(name);
  if (i < 0 || static_cast<size_t>(i) >= args_.size()) {
    return absl::InternalError(absl::StrCat(schema_.QualifiedName(), " has no argument '", name, "'"));
  }
  return args_[i];
}

bool NodeContext::IsNone(absl::string_view name) const {
  absl::StatusOr<Value*> v = Arg(name);
  return v.ok() && (*v)->type()->kind() == TypeKind::kNone;
}

namespace {
std::optional<IValue> ConstArg(const NodeContext& ctx, absl::string_view name) {
  absl::StatusOr<Value*> v = ctx.Arg(name);
  if (!v.ok()) return std::nullopt;
  return ir::ConstantValue(*v);
}
}  // namespace

std::optional<int64_t> NodeContext::ConstInt(absl::string_view name) const {
  std::optional<IValue> v = ConstArg(*this, name);
  if (v && v->isInt()) return v->toInt();
  if (v && v->isBool()) return v->toBool() ? 1 : 0;
  return std::nullopt;
}

std::optional<double> NodeContext::ConstDouble(absl::string_view name) const {
  std::optional<IValue> v = ConstArg(*this, name);
  if (v && v->isDouble()) return v->toDouble();
  if (v && v->isInt()) return static_cast<double>(v->toInt());
  return std::nullopt;
}

std::optional<bool> NodeContext::ConstBool(absl::string_view name) const {
  std::optional<IValue> v = ConstArg(*this, name);
  if (v && v->isBool()) return v->toBool();
  return std::nullopt;
}

std::optional<std::vector<int64_t>> NodeContext::ConstIntList(absl::string_view name) const {
  std::optional<IValue> v = ConstArg(*this, name);
  if (!v || !v->isList()) return std::nullopt;
  std::vector<int64_t> out;
  for (const IValue& e : v->elements()) {
    if (!e.isInt()) return std::nullopt;
    out.push_back(e.toInt());
  }
  return out;
}

const TensorMeta* NodeContext::OutputMeta(size_t i) const {
  if (i >= node_.outputs.size() || node_.outputs[i].kind != Argument::Kind::kTensor) return nullptr;
  return importer_->MetaOf(node_.outputs[i].name);
}

const TensorMeta* NodeContext::InputMeta(absl::string_view name) const {
  for (const NamedArgument& na : node_.inputs) {
    if (na.name == name && na.arg.kind == Argument::Kind::kTensor) return importer_->MetaOf(na.arg.name);
  }
  return nullptr;
}

std::optional<std::vector<int64_t>> NodeContext::StaticSizes(const Value* v) {
  if (!v->type()->is_tensor()) return std::nullopt;
  const ir::TensorInfo& info = v->type()->tensor();
  if (!info.HasCompleteSizes()) return std::nullopt;
  return info.ConcreteSizes();
}

std::optional<DType> NodeContext::DTypeOf(const Value* v) {
  if (!v->type()->is_tensor()) return std::nullopt;
  return v->type()->tensor().dtype;
}

absl::StatusOr<Value*> NodeContext::Op(absl::string_view kind, std::vector<Value*> inputs) {
  absl::StatusOr<Value*> v = builder().Op(kind, inputs);
  if (!v.ok()) return Error(v.status().message());
  return v;
}

absl::Status NodeContext::Error(absl::string_view what) const {
  return importer_->NodeError(node_, what);
}

// ---------------------------------------------------------------------------
// Importer

Importer::Importer(ir::Graph* graph, std::string origin)
    : builder_(graph), origin_(std::move(origin)) {}

absl::Status Importer::NodeError(const Node& node, absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(origin_, ": node '", node.name, "' (", node.target,
                                                 "): ", what));
}

const TensorMeta* Importer::MetaOf(const std::string& name) const {
  if (scope_->graph == nullptr) return nullptr;
  auto it = scope_->graph->tensor_values.find(name);
  return it == scope_->graph->tensor_values.end() ? nullptr : &it->second;
}

TypePtr Importer::TypeOfMeta(const TensorMeta& meta) const {
  ir::TensorInfo info;
  info.dtype = meta.dtype;
  std::vector<std::optional<int64_t>> sizes;
  for (const SymSize& s : meta.sizes) sizes.push_back(s.value);
  info.sizes = std::move(sizes);
  return Type::TensorWith(std::move(info));
}

void Importer::TypeFromMeta(Value* v, const std::string& name) const {
  const TensorMeta* meta = MetaOf(name);
  if (meta == nullptr || !v->type()->is_tensor()) return;
  if (symbolic_sizes_ != nullptr) {
    for (const SymSize& s : meta->sizes) {
      if (!s.value) {
        (*symbolic_sizes_)[name] = meta->sizes;
        break;
      }
    }
  }
  // Only values this node made (still unrefined): an input passed through
  // (alias, detach) keeps its own type.
  const ir::TensorInfo& info = v->type()->tensor();
  if (info.dtype && info.sizes) return;
  v->setType(TypeOfMeta(*meta));
}

void Importer::BindBase(const std::string& name, Value* v) {
  if (Value::isValidName(name) && !v->hasDebugName()) v->setDebugName(name);
  Binding b;
  b.value = v;
  b.root = name;
  scope_->bindings[name] = std::move(b);
  scope_->versions[name] = 0;
}

std::vector<Value*> Importer::Unpack(Value* list, size_t n) {
  // A rule that built the list itself: its elements, no unpacking.
  const ir::Node* producer = list->node();
  if (producer->kind() == ir::sym::kListConstruct && producer->inputs().size() == n) {
    return std::vector<Value*>(producer->inputs().begin(), producer->inputs().end());
  }
  return builder_.ListUnpack(list, n);
}

absl::StatusOr<Value*> Importer::Lookup(const std::string& name, const Node* user) {
  auto it = scope_->bindings.find(name);
  if (it == scope_->bindings.end()) {
    const std::string what = absl::StrCat("uses '", name, "', which nothing before it defines");
    if (user != nullptr) return NodeError(*user, what);
    return absl::InvalidArgumentError(absl::StrCat(origin_, ": the graph ", what));
  }
  Binding& b = it->second;
  if (b.parent.empty()) return b.value;
  const int64_t version = scope_->versions[b.root];
  if (b.version == version) return b.value;
  // The base was written since this view was taken: take it again.
  const std::string parent = b.parent;
  const Node* view_node = b.view_node;
  const int list_index = b.list_index;
  ASSIGN_OR_RETURN(Value* parent_value, Lookup(parent, user));
  Value* v = parent_value;  // an alias (the result of an in-place op)
  if (view_node != nullptr) {
    ASSIGN_OR_RETURN(std::vector<Value*> results, Emit(*view_node, parent_value));
    if (results.empty() || results[0] == nullptr) return NodeError(*view_node, "a view without a result");
    v = results[0];
    if (list_index >= 0) {
      const size_t n = view_node->outputs.empty() ? 0 : view_node->outputs[0].elements.size();
      v = Unpack(v, n)[list_index];
    }
  }
  TypeFromMeta(v, name);
  Binding& again = scope_->bindings[name];
  again.value = v;
  again.version = version;
  return v;
}

absl::Status Importer::Mutate(const std::string& name, Value* new_value, const Node& node) {
  auto it = scope_->bindings.find(name);
  if (it == scope_->bindings.end()) return NodeError(node, absl::StrCat("writes undefined '", name, "'"));
  if (it->second.parent.empty()) {
    it->second.value = new_value;
    it->second.version = ++scope_->versions[name];
    return absl::OkStatus();
  }
  const std::string parent = it->second.parent;
  const Node* view_node = it->second.view_node;
  const int list_index = it->second.list_index;
  ASSIGN_OR_RETURN(Value* parent_value, Lookup(parent, &node));
  absl::StatusOr<Value*> new_parent =
      view_node == nullptr ? new_value  // an alias
                           : ScatterIntoParent(*this, *view_node, list_index, parent_value, new_value);
  if (!new_parent.ok()) {
    return NodeError(node, absl::StrCat("writes '", name, "' in place: ", new_parent.status().message()));
  }
  TypeFromMeta(*new_parent, parent);
  RETURN_IF_ERROR(Mutate(parent, *new_parent, node));
  Binding& b = scope_->bindings[name];
  b.value = new_value;
  b.version = scope_->versions[b.root];
  return absl::OkStatus();
}

absl::StatusOr<const ir::Operator*> Importer::FindOperator(const Node& node) const {
  // torch.ops.<namespace>.<op>.<overload>
  absl::string_view t = node.target;
  if (!absl::ConsumePrefix(&t, "torch.ops.")) {
    return NodeError(node, "unsupported operator (not a torch.ops target)");
  }
  const size_t first = t.find('.');
  const size_t last = t.rfind('.');
  if (first == absl::string_view::npos || first == last) {
    return NodeError(node, "malformed operator target (expected torch.ops.<ns>.<op>.<overload>)");
  }
  const absl::string_view ns = t.substr(0, first);
  const absl::string_view op = t.substr(first + 1, last - first - 1);
  const absl::string_view overload = t.substr(last + 1);
  const std::string qualified =
      absl::StrCat(ns, "::", op, overload == "default" ? "" : ".", overload == "default" ? "" : overload);
  const ir::Operator* found = registry().Find(qualified);
  if (found == nullptr) {
    return NodeError(node, absl::StrCat("unknown operator ", qualified,
                                        " (not among kiln's builtin schemas)"));
  }
  return found;
}

absl::StatusOr<Value*> Importer::ConvertScalar(const Argument& arg, const Node& node) {
  using K = Argument::Kind;
  switch (arg.kind) {
    case K::kInt: return builder_.Int(arg.int_value);
    case K::kFloat: return builder_.Double(arg.float_value);
    case K::kBool: return builder_.Bool(arg.bool_value);
    case K::kSymInt:
    case K::kSymFloat:
    case K::kSymBool:
    case K::kTensor: return Lookup(arg.name, &node);
    case K::kNone: return builder_.None();
    default:
      return NodeError(node, absl::StrCat("unsupported argument at ", arg.path));
  }
}

absl::StatusOr<Value*> Importer::ConvertArgument(const Argument& arg, const TypePtr& declared,
                                                 std::optional<int64_t> fixed_list_size,
                                                 const Node& node) {
  using K = Argument::Kind;
  TypePtr type = declared;
  const bool optional = type->kind() == TypeKind::kOptional;
  if (optional) type = type->contained()[0];
  auto mismatch = [&](absl::string_view what) {
    return NodeError(node, absl::StrCat(arg.path, ": ", what, " where the schema takes ",
                                        declared->ToString()));
  };
  switch (arg.kind) {
    case K::kNone:
      if (optional || type->kind() == TypeKind::kNone || type->kind() == TypeKind::kAny) {
        return builder_.None();
      }
      return mismatch("None");
    case K::kTensor:
    case K::kSymInt:
    case K::kSymFloat:
    case K::kSymBool:
      return Lookup(arg.name, &node);
    case K::kInt:
      if (type->kind() == TypeKind::kFloat) return builder_.Double(static_cast<double>(arg.int_value));
      if (type->kind() == TypeKind::kList && fixed_list_size) {
        return builder_.IntList(std::vector<int64_t>(*fixed_list_size, arg.int_value));
      }
      return builder_.Int(arg.int_value);
    case K::kFloat:
      return builder_.Double(arg.float_value);
    case K::kBool:
      return builder_.Bool(arg.bool_value);
    case K::kString:
      return builder_.Str(arg.name);
    case K::kScalarType:
    case K::kLayout:
    case K::kMemoryFormat:
      return builder_.Int(arg.int_value);
    case K::kDevice:
      return builder_.Constant(IValue::FromDevice(arg.device));
    case K::kList: {
      if (type->kind() != TypeKind::kList) return mismatch("a list");
      const TypePtr elem = type->contained()[0];
      bool all_constant = true;
      for (const Argument& e : arg.elements) {
        if (e.kind != K::kInt && e.kind != K::kFloat && e.kind != K::kBool && e.kind != K::kString) {
          all_constant = false;
        }
      }
      if (all_constant && elem->kind() != TypeKind::kTensor &&
          elem->kind() != TypeKind::kOptional) {
        std::vector<IValue> items;
        for (const Argument& e : arg.elements) {
          switch (e.kind) {
            case K::kInt:
              items.push_back(elem->kind() == TypeKind::kFloat ? IValue::Double(static_cast<double>(e.int_value))
                                                               : IValue::Int(e.int_value));
              break;
            case K::kFloat: items.push_back(IValue::Double(e.float_value)); break;
            case K::kBool: items.push_back(IValue::Bool(e.bool_value)); break;
            default: items.push_back(IValue::String(e.name)); break;
          }
        }
        if (items.size() == 1 && fixed_list_size && *fixed_list_size > 1) {
          items.assign(*fixed_list_size, items[0]);
        }
        ir::WithInsertPoint guard(builder_.insertion_block());
        absl::StatusOr<Value*> c = ir::InsertConstant(*builder_.graph(), IValue::List(std::move(items)),
                                                      Type::List(elem));
        if (!c.ok()) return mismatch(c.status().message());
        return c;
      }
      std::vector<Value*> values;
      for (const Argument& e : arg.elements) {
        ASSIGN_OR_RETURN(Value* v, ConvertArgument(e, elem, std::nullopt, node));
        values.push_back(v);
      }
      return builder_.List(elem, values);
    }
    default:
      return mismatch(absl::StrCat("an argument of kind ", static_cast<int>(arg.kind)));
  }
}

absl::StatusOr<std::vector<Value*>> Importer::EmitGeneric(NodeContext& ctx) {
  const ir::FunctionSchema& schema = ctx.schema();
  std::vector<Value*>& args = ctx.args();
  const size_t num_outputs = schema.is_varret ? ctx.node().outputs.size() : schema.returns.size();
  ir::Node* n = builder_.graph()->create(schema.symbol(), args, num_outputs);
  builder_.insertion_block()->appendNode(n);
  auto retype = [&](const ir::Operator* op) {
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      TypePtr t = i < op->schema.returns.size() ? op->schema.returns[i].type : Type::Any();
      n->output(i)->setType(t->kind() == TypeKind::kTensor ? Type::Tensor() : t);
    }
  };
  const ir::Operator* matched = registry().Match(*n);
  const std::string want = schema.QualifiedName();
  if (matched != nullptr && matched->schema.QualifiedName() == want) {
    retype(matched);
    return std::vector<Value*>(n->outputs().begin(), n->outputs().end());
  }
  // A Python number where the schema takes a Tensor (add.Tensor(x, 2)) is a
  // "wrapped number": kiln's Scalar overload means the same. Accept a match
  // that differs only there; else pass 0-dim tensors and match again.
  auto differs_only_in_wrapped_scalars = [&](const ir::Operator* op) {
    if (op == nullptr || op->schema.arguments.size() != schema.arguments.size()) return false;
    for (size_t i = 0; i < args.size(); ++i) {
      const TypeKind want_kind = schema.arguments[i].type->kind();
      const TypeKind got_kind = op->schema.arguments[i].type->kind();
      const bool wrapped = want_kind == TypeKind::kTensor && !args[i]->type()->is_tensor();
      if (wrapped ? got_kind != TypeKind::kNumber : got_kind != want_kind) return false;
    }
    return true;
  };
  if (differs_only_in_wrapped_scalars(matched)) {
    retype(matched);
    return std::vector<Value*>(n->outputs().begin(), n->outputs().end());
  }
  for (size_t i = 0; i < args.size(); ++i) {
    if (schema.arguments[i].type->kind() != TypeKind::kTensor || args[i]->type()->is_tensor()) continue;
    std::optional<IValue> c = ir::ConstantValue(args[i]);
    if (!c || !c->isNumber()) continue;
    // Python's int, float and bool as the 0-dim tensors torch wraps them in.
    Tensor t = c->isBool() ? Tensor::ScalarInt(c->toBool(), DType::kBool)
               : c->isInt() ? Tensor::ScalarInt(c->toInt(), DType::kInt64)
                            : Tensor::ScalarDouble(c->toDouble(), DType::kFloat32);
    ir::WithInsertPoint guard(n);
    ASSIGN_OR_RETURN(Value* wrapped, ir::InsertConstant(*builder_.graph(), IValue::FromTensor(t)));
    n->replaceInput(i, wrapped);
  }
  matched = registry().Match(*n);
  if (matched != nullptr && matched->schema.QualifiedName() == want) {
    retype(matched);
    return std::vector<Value*>(n->outputs().begin(), n->outputs().end());
  }
  std::string got = matched ? matched->schema.QualifiedName() : "no overload";
  n->destroy();
  return ctx.Error(absl::StrCat("kiln resolves these arguments to ", got, ", not ", want));
}

absl::StatusOr<NodeContext> Importer::ContextFor(const Node& node, Value* self_override) {
  ASSIGN_OR_RETURN(const ir::Operator* op, FindOperator(node));
  const ir::FunctionSchema* schema = &op->schema;
  if (IsInplaceSchema(*schema)) {
    // The functional form computes the written value (add_ -> add).
    std::string functional = schema->name.substr(0, schema->name.size() - 1);
    if (!schema->overload_name.empty()) absl::StrAppend(&functional, ".", schema->overload_name);
    const ir::Operator* f = registry().Find(functional);
    if (f == nullptr) {
      return NodeError(node, absl::StrCat("in-place op with no functional form ", functional, " in kiln"));
    }
    schema = &f->schema;
  }
  absl::flat_hash_map<std::string, const Argument*> given;
  for (const NamedArgument& na : node.inputs) {
    if (schema->ArgumentIndex(na.name) < 0) {
      return NodeError(node, absl::StrCat("argument '", na.name, "' is not in the schema ",
                                          schema->ToString()));
    }
    if (!given.emplace(na.name, &na.arg).second) {
      return NodeError(node, absl::StrCat("argument '", na.name, "' is given twice"));
    }
  }
  std::vector<Value*> args;
  for (size_t i = 0; i < schema->arguments.size(); ++i) {
    const ir::Argument& a = schema->arguments[i];
    if (i == 0 && self_override != nullptr) {
      args.push_back(self_override);
      continue;
    }
    auto it = given.find(a.name);
    if (it != given.end()) {
      ASSIGN_OR_RETURN(Value* v, ConvertArgument(*it->second, a.type, a.fixed_list_size, node));
      args.push_back(v);
    } else if (a.default_value) {
      IValue d = *a.default_value;
      if (a.fixed_list_size && d.isInt() && a.type->kind() == TypeKind::kList) {
        d = IValue::IntList(std::vector<int64_t>(*a.fixed_list_size, d.toInt()));
      }
      ir::WithInsertPoint guard(builder_.insertion_block());
      absl::StatusOr<Value*> v = ir::InsertConstant(*builder_.graph(), d, a.type);
      if (!v.ok()) return NodeError(node, absl::StrCat("default of '", a.name, "': ", v.status().message()));
      args.push_back(*v);
    } else if (a.type->kind() == TypeKind::kOptional) {
      args.push_back(builder_.None());
    } else {
      return NodeError(node, absl::StrCat("missing argument '", a.name, "' of ", schema->ToString()));
    }
  }
  return NodeContext(this, node, *schema, std::move(args));
}

absl::StatusOr<std::vector<Value*>> Importer::Emit(const Node& node, Value* self_override) {
  ASSIGN_OR_RETURN(NodeContext ctx, ContextFor(node, self_override));
  const auto& rules = Rules();
  auto rule = rules.find(ctx.schema().QualifiedName());
  if (rule != rules.end()) return rule->second(ctx);
  return EmitGeneric(ctx);
}

void Importer::CollectUses(const Graph& graph) {
  std::vector<const Argument*> stack;
  for (const Node& n : graph.nodes) {
    for (const NamedArgument& na : n.inputs) stack.push_back(&na.arg);
  }
  for (const Argument& a : graph.outputs) stack.push_back(&a);
  while (!stack.empty()) {
    const Argument* a = stack.back();
    stack.pop_back();
    if (!a->name.empty()) used_.insert(a->name);
    for (const Argument& e : a->elements) stack.push_back(&e);
    if (a->graph) CollectUses(*a->graph);
  }
}

absl::Status Importer::BindOutputs(const Node& node, const ir::FunctionSchema& schema,
                                   const std::vector<Value*>& results, bool view_of_first,
                                   const std::string& first_input) {
  using K = Argument::Kind;
  auto bind = [&](const std::string& name, Value* v, int list_index) -> absl::Status {
    if (v == nullptr) return absl::OkStatus();  // an unused result a rule dropped
    if (scope_->bindings.contains(name)) {
      return NodeError(node, absl::StrCat("defines '", name, "' a second time"));
    }
    TypeFromMeta(v, name);
    if (Value::isValidName(name) && !v->hasDebugName()) v->setDebugName(name);
    if (!view_of_first) {
      BindBase(name, v);
      return absl::OkStatus();
    }
    const Binding& parent = scope_->bindings.at(first_input);
    if (parent.depth + 1 > kMaxViewDepth) {
      return NodeError(node, absl::StrCat("views nested deeper than ", kMaxViewDepth));
    }
    Binding b;
    b.value = v;
    b.parent = first_input;
    b.root = parent.root;
    b.view_node = &node;
    b.list_index = list_index;
    b.version = scope_->versions[parent.root];
    b.depth = parent.depth + 1;
    scope_->bindings[name] = std::move(b);
    return absl::OkStatus();
  };
  const std::vector<Argument>& outs = node.outputs;
  if (outs.size() == 1 && outs[0].kind == K::kList) {
    if (results.size() != 1 || results[0] == nullptr) {
      return NodeError(node, "returns a list but kiln's form returns no list");
    }
    std::vector<Value*> elems = Unpack(results[0], outs[0].elements.size());
    for (size_t k = 0; k < elems.size(); ++k) {
      const Argument& e = outs[0].elements[k];
      if (e.kind != K::kTensor) continue;
      RETURN_IF_ERROR(bind(e.name, elems[k], static_cast<int>(k)));
    }
    return absl::OkStatus();
  }
  if (outs.empty()) return absl::OkStatus();
  if (outs.size() != results.size()) {
    return NodeError(node, absl::StrCat("has ", outs.size(), " outputs; ", schema.QualifiedName(),
                                        " returns ", results.size()));
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    switch (outs[i].kind) {
      case K::kNone:
        break;
      case K::kTensor:
        if (i > 0 && view_of_first) {
          // Only the first result of a multi-result view aliases.
          if (results[i] != nullptr) {
            if (scope_->bindings.contains(outs[i].name)) {
              return NodeError(node, absl::StrCat("defines '", outs[i].name, "' a second time"));
            }
            TypeFromMeta(results[i], outs[i].name);
            BindBase(outs[i].name, results[i]);
          }
          break;
        }
        RETURN_IF_ERROR(bind(outs[i].name, results[i], -1));
        break;
      case K::kSymInt:
      case K::kSymFloat:
      case K::kSymBool:
        if (results[i] == nullptr) return NodeError(node, "a symbolic result kiln did not compute");
        if (scope_->bindings.contains(outs[i].name)) {
          return NodeError(node, absl::StrCat("defines '", outs[i].name, "' a second time"));
        }
        BindBase(outs[i].name, results[i]);
        break;
      default:
        return NodeError(node, absl::StrCat("unsupported output at ", outs[i].path));
    }
  }
  return absl::OkStatus();
}

absl::Status Importer::ConvertNode(const Node& node) {
  ++nodes_converted_;
  absl::string_view target = node.target;
  if (absl::StartsWith(target, "torch.ops.higher_order.")) return ConvertHigherOrderNode(*this, node);
  if (!absl::StartsWith(target, "torch.ops.")) return ConvertSymbolicNode(*this, node);
  ASSIGN_OR_RETURN(const ir::Operator* op, FindOperator(node));
  const ir::FunctionSchema& schema = op->schema;
  std::string first_input;
  if (!schema.arguments.empty()) {
    for (const NamedArgument& na : node.inputs) {
      if (na.name == schema.arguments[0].name && na.arg.kind == Argument::Kind::kTensor) {
        first_input = na.arg.name;
      }
    }
  }
  if (IsInplaceSchema(schema)) {
    if (first_input.empty()) return NodeError(node, "an in-place op whose first argument is no tensor");
    ASSIGN_OR_RETURN(Value* current, Lookup(first_input, &node));
    Value* written = current;
    if (schema.name != "aten::detach_") {  // detach_ changes no values
      ASSIGN_OR_RETURN(std::vector<Value*> results, Emit(node, nullptr));
      if (results.empty() || results[0] == nullptr) return NodeError(node, "no result");
      written = results[0];
      TypeFromMeta(written, first_input);
      RETURN_IF_ERROR(Mutate(first_input, written, node));
    }
    // The op returns its (now updated) first argument.
    for (const Argument& out : node.outputs) {
      if (out.kind != Argument::Kind::kTensor) continue;
      if (scope_->bindings.contains(out.name)) {
        return NodeError(node, absl::StrCat("defines '", out.name, "' a second time"));
      }
      const Binding& self = scope_->bindings.at(first_input);
      Binding b;
      b.value = written;
      b.parent = first_input;
      b.root = self.root;
      b.version = scope_->versions[self.root];
      b.depth = self.depth + 1;
      if (b.depth > kMaxViewDepth) {
        return NodeError(node, absl::StrCat("views nested deeper than ", kMaxViewDepth));
      }
      scope_->bindings[out.name] = std::move(b);
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<Value*> results, Emit(node, nullptr));
  const bool view = !first_input.empty() && IsViewNode(*this, node, schema);
  return BindOutputs(node, schema, results, view, first_input);
}

absl::Status Importer::ConvertNodes(const Graph& graph) {
  for (const Node& node : graph.nodes) RETURN_IF_ERROR(ConvertNode(node));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Value*>> Importer::InlineGraph(const Graph& graph,
                                                          const std::vector<Value*>& inputs,
                                                          const Node& owner) {
  if (depth_ >= kMaxSubgraphDepth) return NodeError(owner, "subgraphs nested too deeply");
  if (graph.inputs.size() != inputs.size()) {
    return NodeError(owner, absl::StrCat("passes ", inputs.size(), " values to a subgraph taking ",
                                         graph.inputs.size()));
  }
  Scope inner;
  inner.graph = &graph;
  Scope* outer = scope_;
  scope_ = &inner;
  ++depth_;
  absl::Status status = absl::OkStatus();
  std::vector<Value*> outputs;
  for (size_t i = 0; i < inputs.size() && status.ok(); ++i) {
    const Argument& in = graph.inputs[i];
    if (in.kind != Argument::Kind::kTensor && in.kind != Argument::Kind::kSymInt &&
        in.kind != Argument::Kind::kSymBool && in.kind != Argument::Kind::kSymFloat) {
      status = NodeError(owner, absl::StrCat("unsupported subgraph input at ", in.path));
      break;
    }
    BindBase(in.name, inputs[i]);
  }
  if (status.ok()) status = ConvertNodes(graph);
  for (size_t i = 0; i < graph.outputs.size() && status.ok(); ++i) {
    absl::StatusOr<Value*> v = ConvertScalar(graph.outputs[i], owner);
    if (!v.ok()) {
      status = v.status();
    } else {
      outputs.push_back(*v);
    }
  }
  --depth_;
  scope_ = outer;
  RETURN_IF_ERROR(status);
  return outputs;
}

// ---------------------------------------------------------------------------
// Whole programs

namespace {

absl::StatusOr<ImportedProgram> ImportParsed(const ExportedProgram& program,
                                             const absl::flat_hash_map<std::string, Tensor>& payloads,
                                             const std::string& origin) {
  ImportedProgram out;
  out.graph = std::make_unique<ir::Graph>();
  out.verifiers = program.verifiers;
  Importer importer(out.graph.get(), origin);
  importer.scope().graph = &program.graph;
  importer.CollectUses(program.graph);
  importer.RecordSymbolicSizes(&out.signature.symbolic_values);
  GraphBuilder& b = importer.builder();
  const Graph& g = program.graph;
  if (program.input_specs.size() != g.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": the signature lists ",
                                                   program.input_specs.size(),
                                                   " inputs, the graph has ", g.inputs.size()));
  }
  Signature& sig = out.signature;
  sig.ranges = program.range_constraints;
  for (size_t i = 0; i < program.input_specs.size(); ++i) {
    const InputSpec& spec = program.input_specs[i];
    const std::string& name = spec.arg.name;
    if (g.inputs[i].name != name && spec.kind != InputSpec::Kind::kConstantInput) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ": input spec ", i, " names '", name,
                                                     "', the graph's input is '", g.inputs[i].name, "'"));
    }
    using K = InputSpec::Kind;
    switch (spec.kind) {
      case K::kParameter:
      case K::kBuffer:
      case K::kTensorConstant: {
        auto it = payloads.find(spec.target);
        if (it == payloads.end()) {
          return absl::NotFoundError(absl::StrCat(origin, ": no data for '", spec.target, "'"));
        }
        const TensorMeta* meta = importer.MetaOf(name);
        if (meta != nullptr) {
          const Tensor& t = it->second;
          bool same = t.dtype() == meta->dtype && t.dim() == static_cast<int64_t>(meta->sizes.size());
          for (size_t d = 0; same && d < meta->sizes.size(); ++d) {
            same = meta->sizes[d].value && *meta->sizes[d].value == t.size(d);
          }
          if (!same) {
            return absl::InvalidArgumentError(absl::StrCat(
                origin, ": '", spec.target, "' holds a ", DTypeName(t.dtype()), " tensor of ", t.dim(),
                " dims, but the graph's '", name, "' has other metadata"));
          }
        }
        importer.BindBase(name, b.TensorConstant(it->second));
        ++out.stats.constants;
        break;
      }
      case K::kUserInput: {
        SignatureInput in;
        in.name = name;
        if (spec.arg.kind == Argument::Kind::kTensor) {
          const TensorMeta* meta = importer.MetaOf(name);
          if (meta == nullptr) {
            return absl::InvalidArgumentError(absl::StrCat(origin, ": input '", name, "' has no tensor_values entry"));
          }
          in.dtype = meta->dtype;
          in.sizes = meta->sizes;
          importer.BindBase(name, b.AddInput(name, importer.TypeOfMeta(*meta)));
        } else if (spec.arg.kind == Argument::Kind::kSymInt) {
          in.is_tensor = false;
          auto sym = g.sym_int_values.find(name);
          if (sym != g.sym_int_values.end()) in.sizes.push_back(sym->second);
          importer.BindBase(name, b.AddInput(name, Type::Int()));
        } else {
          return absl::UnimplementedError(absl::StrCat(origin, ": user input '", name,
                                                       "' is neither a tensor nor a symbolic int"));
        }
        sig.inputs.push_back(std::move(in));
        break;
      }
      case K::kConstantInput: {
        ASSIGN_OR_RETURN(Value* v, importer.ConvertScalar(spec.constant, Node{}));
        importer.BindBase(name, v);
        break;
      }
      case K::kCustomObj:
      case K::kToken:
        return absl::UnimplementedError(absl::StrCat(
            origin, ": input '", name, "' is a ",
            spec.kind == K::kCustomObj ? "custom object" : "side-effect token",
            "; kiln imports tensor programs without them"));
    }
  }
  RETURN_IF_ERROR(importer.ConvertNodes(g));
  if (program.output_specs.size() != g.outputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": the signature lists ",
                                                   program.output_specs.size(),
                                                   " outputs, the graph has ", g.outputs.size()));
  }
  for (size_t i = 0; i < program.output_specs.size(); ++i) {
    const OutputSpec& spec = program.output_specs[i];
    using K = OutputSpec::Kind;
    if (spec.kind == K::kBufferMutation || spec.kind == K::kParameterMutation) {
      sig.mutated_buffers.push_back(spec.target);
      continue;
    }
    if (spec.kind == K::kUserInputMutation || spec.kind == K::kToken) continue;
    if (spec.kind != K::kUserOutput && spec.kind != K::kLossOutput) {
      return absl::UnimplementedError(absl::StrCat(origin, ": output ", i,
                                                   " is a gradient (a training program)"));
    }
    ASSIGN_OR_RETURN(Value* v, importer.ConvertScalar(g.outputs[i], Node{}));
    b.AddOutput(v);
    sig.outputs.push_back(g.outputs[i].name);
  }
  out.stats.nodes = importer.nodes_converted();
  return out;
}

std::set<std::string> PayloadNames(const ExportedProgram& p) {
  std::set<std::string> out;
  for (const InputSpec& s : p.input_specs) {
    if (s.kind == InputSpec::Kind::kParameter || s.kind == InputSpec::Kind::kBuffer ||
        s.kind == InputSpec::Kind::kTensorConstant) {
      out.insert(s.target);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<ImportedProgram> ImportProgram(const ExportedProgram& program,
                                              const absl::flat_hash_map<std::string, Tensor>& payloads,
                                              const std::string& origin) {
  return ImportParsed(program, payloads, origin);
}

absl::StatusOr<ImportedProgram> ImportPt2Archive(const Archive& archive, const Pt2Options& options) {
  std::string model = options.model_name;
  if (model.empty()) {
    const std::vector<std::string> models = archive.List("models/");
    if (archive.Has("models/model.json")) {
      model = "model";
    } else if (models.size() == 1 && absl::EndsWith(models[0], ".json")) {
      model = models[0].substr(7, models[0].size() - 7 - 5);
    } else {
      return absl::NotFoundError(absl::StrCat(archive.name(), ": ", models.empty() ? "no" : "several",
                                              " models/<name>.json entries; name the model"));
    }
  }
  const std::string entry = absl::StrCat("models/", model, ".json");
  ASSIGN_OR_RETURN(std::string json, archive.ReadText(entry));
  const std::string origin = absl::StrCat(archive.name(), ": ", archive.root(), "/", entry);
  ASSIGN_OR_RETURN(ExportedProgram program, ParseExportedProgram(json, origin));
  json.clear();
  json.shrink_to_fit();
  ASSIGN_OR_RETURN(Payloads payloads, LoadPayloads(archive, model, PayloadNames(program)));
  ASSIGN_OR_RETURN(ImportedProgram out, ImportParsed(program, payloads.tensors, origin));
  out.stats.zero_copy_files = payloads.zero_copy_files;
  out.stats.copied_files = payloads.copied_files;
  out.stats.weight_bytes = payloads.bytes;
  return out;
}

absl::StatusOr<ImportedProgram> LoadPt2File(const std::string& path, const Pt2Options& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<Archive> archive, Archive::OpenFile(path, options.archive));
  return ImportPt2Archive(*archive, options);
}

}  // namespace kiln::frontend::pt2
