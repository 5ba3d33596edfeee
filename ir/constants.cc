#include "ir/constants.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace kiln::ir {
namespace {


// "cpu", "cuda", "cuda:1". Anything else is not a device.
std::optional<ir::Device> ParseDevice(absl::string_view s) {
  ir::Device d;
  const size_t colon = s.find(':');
  d.type = std::string(s.substr(0, colon));
  if (d.type.empty()) return std::nullopt;
  for (char c : d.type) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return std::nullopt;
  }
  if (colon != absl::string_view::npos) {
    int64_t index = 0;
    if (!absl::SimpleAtoi(s.substr(colon + 1), &index) || index < 0) return std::nullopt;
    d.index = index;
  }
  return d;
}

bool IsListOf(const TypePtr& t, TypeKind elem) {
  return t && t->kind() == TypeKind::kList && t->contained()[0]->kind() == elem;
}

// The list type kiln gives a constant list whose elements all carry `tag`.
TypePtr ListTypeFor(IValue::Tag tag) {
  switch (tag) {
    case IValue::Tag::kBool: return Type::List(Type::Bool());
    case IValue::Tag::kDouble: return Type::List(Type::Float());
    case IValue::Tag::kString: return Type::List(Type::Str());
    case IValue::Tag::kTensor: return Type::List(Type::Tensor());
    default: return Type::List(Type::Int());
  }
}

bool HintFits(const TypePtr& hint, IValue::Tag tag) {
  if (!hint || hint->kind() != TypeKind::kList) return false;
  const TypePtr& elem = hint->contained()[0];
  switch (tag) {
    case IValue::Tag::kInt: return elem->kind() == TypeKind::kInt;
    case IValue::Tag::kBool: return elem->kind() == TypeKind::kBool;
    case IValue::Tag::kDouble: return elem->kind() == TypeKind::kFloat;
    case IValue::Tag::kString: return elem->kind() == TypeKind::kStr;
    case IValue::Tag::kTensor: return elem->is_tensor();
    default: return false;
  }
}

// The common tag of a list's elements; nullopt when mixed or not a scalar /
// tensor kind.
std::optional<IValue::Tag> ElementTag(const std::vector<IValue>& elems) {
  if (elems.empty()) return std::nullopt;
  const IValue::Tag tag = elems[0].tag();
  switch (tag) {
    case IValue::Tag::kInt:
    case IValue::Tag::kBool:
    case IValue::Tag::kDouble:
    case IValue::Tag::kString:
    case IValue::Tag::kTensor:
      break;
    default:
      return std::nullopt;
  }
  for (const IValue& e : elems) {
    if (e.tag() != tag) return std::nullopt;
  }
  return tag;
}

// Whether some return of `schema` may alias one of `arg`'s (top-level)
// alias sets: then the call hands out `arg` itself under another name.
bool ReturnAliasesArgument(const ir::FunctionSchema& schema, const ir::AliasInfo& arg) {
  for (const ir::Argument& ret : schema.returns) {
    if (!ret.alias_info) continue;
    for (const std::string& set : ret.alias_info->before_sets) {
      for (const std::string& a : arg.before_sets) {
        if (set == a) return true;
      }
    }
  }
  return false;
}

bool IsNeverMutatedWithin(const ir::Value* v, const ir::OpRegistry& ops, int depth);

// Views (an op returning an alias of the argument without writing it) are
// followed this deep: a read through a chain of views is still a read.
constexpr int kMaxViewDepth = 8;

bool IsReadOnlyUse(const ir::Use& use, const ir::OpRegistry& ops, int depth) {
  const ir::Node* user = use.user;
  const ir::Symbol k = user->kind();
  if (k == ir::sym::kListUnpack || k == ir::sym::kTupleUnpack || k == ir::sym::kTupleIndex) {
    // Elements of the value itself are handed out as they are (ints...); an
    // element of a container the value was put in (depth > 0) is the value.
    if (depth == 0) return true;
    for (const ir::Value* out : user->outputs()) {
      if (!IsNeverMutatedWithin(out, ops, depth + 1)) return false;
    }
    return true;
  }
  if (k == ir::sym::kListConstruct || k == ir::sym::kTupleConstruct) {
    // Put in a container: read-only when the container is (aten::cat's list).
    return depth < kMaxViewDepth && IsNeverMutatedWithin(user->output(), ops, depth + 1);
  }
  if (k == ir::sym::kReturn || k == ir::sym::kIf || k == ir::sym::kLoop) return false;
  const ir::Operator* op = ops.Match(*user);
  if (op == nullptr) return false;
  if (op->traits.alias_kind != ir::AliasKind::kFromSchema &&
      op->traits.alias_kind != ir::AliasKind::kPure) {
    return false;
  }
  if (op->traits.alias_kind == ir::AliasKind::kPure) return true;
  if (use.offset >= op->schema.arguments.size()) return false;  // a vararg
  const ir::Argument& arg = op->schema.arguments[use.offset];
  if (!arg.alias_info) return true;
  if (arg.alias_info->AnyWrite() || !arg.alias_info->after_sets.empty()) return false;
  if (!ReturnAliasesArgument(op->schema, *arg.alias_info)) return true;
  // A view of the value: read-only when nothing writes the view either.
  if (depth >= kMaxViewDepth) return false;
  for (const ir::Value* out : user->outputs()) {
    if (!IsNeverMutatedWithin(out, ops, depth + 1)) return false;
  }
  return true;
}

bool IsNeverMutatedWithin(const ir::Value* v, const ir::OpRegistry& ops, int depth) {
  for (const ir::Use& use : v->uses()) {
    if (!IsReadOnlyUse(use, ops, depth)) return false;
  }
  return true;
}

}  // namespace

bool IsConstant(const ir::Value* v) { return v->node()->kind() == ir::sym::kConstant; }

std::optional<IValue> ConstantValue(const ir::Value* v) {
  const ir::Node* n = v->node();
  if (n->kind() != ir::sym::kConstant) return std::nullopt;
  const ir::AttributeValue* attr = n->findAttribute(ir::sym::kValue);
  if (attr == nullptr) return IValue::None();
  const TypePtr& type = v->type();
  switch (ir::KindOf(*attr)) {
    case ir::AttributeKind::i: {
      const int64_t i = std::get<int64_t>(*attr);
      if (type->kind() == TypeKind::kBool) return IValue::Bool(i != 0);
      return IValue::Int(i);
    }
    case ir::AttributeKind::f:
      return IValue::Double(std::get<double>(*attr));
    case ir::AttributeKind::s: {
      const std::string& s = std::get<std::string>(*attr);
      if (type->kind() == TypeKind::kDevice) {
        std::optional<ir::Device> d = ParseDevice(s);
        if (!d) return std::nullopt;
        return IValue::FromDevice(*std::move(d));
      }
      return IValue::String(s);
    }
    case ir::AttributeKind::t:
      return IValue::FromTensor(std::get<Tensor>(*attr));
    case ir::AttributeKind::is: {
      const bool bools = IsListOf(type, TypeKind::kBool);
      std::vector<IValue> elems;
      elems.reserve(std::get<std::vector<int64_t>>(*attr).size());
      for (int64_t i : std::get<std::vector<int64_t>>(*attr)) {
        elems.push_back(bools ? IValue::Bool(i != 0) : IValue::Int(i));
      }
      return IValue::List(std::move(elems));
    }
    case ir::AttributeKind::fs: {
      std::vector<IValue> elems;
      for (double d : std::get<std::vector<double>>(*attr)) elems.push_back(IValue::Double(d));
      return IValue::List(std::move(elems));
    }
    case ir::AttributeKind::ss: {
      std::vector<IValue> elems;
      for (const std::string& s : std::get<std::vector<std::string>>(*attr)) {
        elems.push_back(IValue::String(s));
      }
      return IValue::List(std::move(elems));
    }
    case ir::AttributeKind::ts: {
      std::vector<IValue> elems;
      for (const Tensor& t : std::get<std::vector<Tensor>>(*attr)) {
        elems.push_back(IValue::FromTensor(t));
      }
      return IValue::List(std::move(elems));
    }
    default:
      return std::nullopt;  // types and complex numbers have no IValue form
  }
}

bool IsRepresentableConstant(const IValue& value) {
  switch (value.tag()) {
    case IValue::Tag::kTuple:
      return false;
    case IValue::Tag::kTensor:
      return value.toTensor().defined();
    case IValue::Tag::kList: {
      if (value.elements().empty()) return true;
      std::optional<IValue::Tag> tag = ElementTag(value.elements());
      if (!tag) return false;
      if (*tag == IValue::Tag::kTensor) {
        for (const IValue& e : value.elements()) {
          if (!e.toTensor().defined()) return false;
        }
      }
      return true;
    }
    default:
      return true;
  }
}

absl::StatusOr<ir::Value*> InsertConstant(ir::Graph& graph, const IValue& value,
                                          const TypePtr& type_hint) {
  if (!IsRepresentableConstant(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot make a prim::Constant of ", value.DebugString()));
  }
  ir::Node* n = graph.create(ir::sym::kConstant, 1);
  ir::Value* out = n->output();
  switch (value.tag()) {
    case IValue::Tag::kNone:
      out->setType(Type::None());
      break;
    case IValue::Tag::kBool:
      n->i_(ir::sym::kValue, value.toBool() ? 1 : 0);
      out->setType(Type::Bool());
      break;
    case IValue::Tag::kInt:
      n->i_(ir::sym::kValue, value.toInt());
      out->setType(Type::Int());
      break;
    case IValue::Tag::kDouble:
      n->f_(ir::sym::kValue, value.toDouble());
      out->setType(Type::Float());
      break;
    case IValue::Tag::kString:
      n->s_(ir::sym::kValue, value.toString());
      out->setType(Type::Str());
      break;
    case IValue::Tag::kDevice:
      n->s_(ir::sym::kValue, value.toDevice().ToString());
      out->setType(Type::DeviceType());
      break;
    case IValue::Tag::kTensor: {
      n->t_(ir::sym::kValue, value.toTensor());
      // As PyTorch types a constant: complete, on the CPU, no grad.
      ir::TensorInfo info = value.type()->tensor();
      info.device = ir::Device{"cpu", -1};
      info.requires_grad = false;
      out->setType(Type::TensorWith(std::move(info)));
      break;
    }
    case IValue::Tag::kList: {
      const std::vector<IValue>& elems = value.elements();
      IValue::Tag tag = IValue::Tag::kInt;
      if (elems.empty()) {
        const TypeKind hinted = type_hint && type_hint->kind() == TypeKind::kList
                                    ? type_hint->contained()[0]->kind()
                                    : TypeKind::kInt;
        if (hinted == TypeKind::kFloat) tag = IValue::Tag::kDouble;
        if (hinted == TypeKind::kStr) tag = IValue::Tag::kString;
        if (hinted == TypeKind::kBool) tag = IValue::Tag::kBool;
        if (hinted == TypeKind::kTensor) tag = IValue::Tag::kTensor;
      } else {
        tag = *ElementTag(elems);
      }
      switch (tag) {
        case IValue::Tag::kDouble: {
          std::vector<double> v;
          v.reserve(elems.size());
          for (const IValue& e : elems) v.push_back(e.toDouble());
          n->fs_(ir::sym::kValue, std::move(v));
          break;
        }
        case IValue::Tag::kString: {
          std::vector<std::string> v;
          v.reserve(elems.size());
          for (const IValue& e : elems) v.push_back(e.toString());
          n->ss_(ir::sym::kValue, std::move(v));
          break;
        }
        case IValue::Tag::kTensor: {
          std::vector<Tensor> v;
          v.reserve(elems.size());
          for (const IValue& e : elems) v.push_back(e.toTensor());
          n->setAttribute(ir::sym::kValue, ir::AttributeValue(std::move(v)));
          break;
        }
        default: {  // int or bool
          std::vector<int64_t> v;
          v.reserve(elems.size());
          for (const IValue& e : elems) {
            v.push_back(e.isBool() ? (e.toBool() ? 1 : 0) : e.toInt());
          }
          n->is_(ir::sym::kValue, std::move(v));
          break;
        }
      }
      out->setType(HintFits(type_hint, tag) ? type_hint : ListTypeFor(tag));
      break;
    }
    case IValue::Tag::kTuple:
      break;  // rejected above
  }
  return graph.insertNode(n)->output();
}

bool DestroyIfUnusedConstant(ir::Value* v) {
  ir::Node* n = v->node();
  if (n->kind() != ir::sym::kConstant || n->hasUses()) return false;
  n->destroy();
  return true;
}

bool IsNeverMutated(const ir::Value* v, const ir::OpRegistry& ops) {
  return IsNeverMutatedWithin(v, ops, 0);
}

}  // namespace kiln::ir
