#include "ir/schema.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::ir {

bool AliasInfo::IsWildcard() const {
  for (const std::string& s : before_sets) {
    if (s == "*") return true;
  }
  return false;
}

bool AliasInfo::AnyWrite() const {
  if (is_write) return true;
  for (const AliasInfo& c : contained) {
    if (c.AnyWrite()) return true;
  }
  return false;
}

std::string FunctionSchema::QualifiedName() const {
  return overload_name.empty() ? name : absl::StrCat(name, ".", overload_name);
}

size_t FunctionSchema::NumRequiredArguments() const {
  size_t n = arguments.size();
  while (n > 0 && arguments[n - 1].default_value.has_value()) --n;
  return n;
}

int FunctionSchema::ArgumentIndex(absl::string_view arg_name) const {
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].name == arg_name) return static_cast<int>(i);
  }
  return -1;
}

bool FunctionSchema::IsMutable() const {
  for (const Argument& a : arguments) {
    if (a.alias_info && a.alias_info->AnyWrite()) return true;
  }
  return false;
}

namespace {

void AppendAlias(const AliasInfo& a, std::string* out) {
  out->push_back('(');
  absl::StrAppend(out, absl::StrJoin(a.before_sets, "|"));
  if (a.is_write) out->push_back('!');
  if (!a.after_sets.empty()) {
    absl::StrAppend(out, " -> ", absl::StrJoin(a.after_sets, "|"));
  }
  out->push_back(')');
}

// Prints `type` with its annotation where the schema language puts it:
// `Tensor(a!)`, `Tensor(a)[]`, `t[](*)`, `int[2]`, `Tensor?[]`.
void AppendType(const TypePtr& type, const AliasInfo* alias,
                std::optional<int64_t> fixed_size, std::string* out) {
  switch (type->kind()) {
    case TypeKind::kList: {
      const AliasInfo* elem_alias =
          alias && !alias->contained.empty() ? &alias->contained[0] : nullptr;
      AppendType(type->contained()[0], elem_alias, std::nullopt, out);
      out->push_back('[');
      if (fixed_size) absl::StrAppend(out, *fixed_size);
      out->push_back(']');
      break;
    }
    case TypeKind::kOptional:
      // The fixed size belongs to the list inside (`int[2]?`) and so does the
      // annotation (`t(a)?`).
      AppendType(type->contained()[0], alias, fixed_size, out);
      out->push_back('?');
      return;
    case TypeKind::kTuple: {
      out->push_back('(');
      for (size_t i = 0; i < type->contained().size(); ++i) {
        if (i) out->append(", ");
        AppendType(type->contained()[i], nullptr, std::nullopt, out);
      }
      out->push_back(')');
      break;
    }
    case TypeKind::kDict:
      out->append("Dict(");
      AppendType(type->contained()[0], nullptr, std::nullopt, out);
      out->append(", ");
      AppendType(type->contained()[1], nullptr, std::nullopt, out);
      out->push_back(')');
      break;
    case TypeKind::kTensor:
      out->append("Tensor");  // schemas never carry tensor refinements
      break;
    default:
      type->AppendTo(out);
  }
  if (alias && (!alias->before_sets.empty() || alias->is_write)) AppendAlias(*alias, out);
}

void AppendArgument(const Argument& a, std::string* out) {
  AppendType(a.type, a.alias_info ? &*a.alias_info : nullptr, a.fixed_list_size, out);
  if (!a.name.empty()) absl::StrAppend(out, " ", a.name);
  if (a.default_value) {
    out->push_back('=');
    a.default_value->AppendTo(out);
  }
}

}  // namespace

std::string FunctionSchema::ToString() const {
  std::string out = QualifiedName();
  out.push_back('(');
  bool first = true;
  bool in_kwargs = false;
  for (const Argument& a : arguments) {
    if (!first) out.append(", ");
    first = false;
    if (a.kwarg_only && !in_kwargs) {
      out.append("*, ");
      in_kwargs = true;
    }
    AppendArgument(a, &out);
  }
  if (is_vararg) out.append(first ? "..." : ", ...");
  out.append(") -> ");
  if (is_varret && returns.empty()) {
    out.append("...");
  } else if (is_varret) {
    out.push_back('(');
    for (const Argument& r : returns) {
      AppendArgument(r, &out);
      out.append(", ");
    }
    out.append("...)");
  } else if (returns.size() == 1 && returns[0].name.empty() &&
             returns[0].type->kind() != TypeKind::kTuple) {
    AppendArgument(returns[0], &out);
  } else {
    out.push_back('(');
    for (size_t i = 0; i < returns.size(); ++i) {
      if (i) out.append(", ");
      AppendArgument(returns[i], &out);
    }
    out.push_back(')');
  }
  return out;
}

bool operator==(const Argument& a, const Argument& b) {
  return a.name == b.name && TypeEquals(a.type, b.type) &&
         a.fixed_list_size == b.fixed_list_size && a.default_value == b.default_value &&
         a.kwarg_only == b.kwarg_only && a.alias_info == b.alias_info;
}

bool operator==(const FunctionSchema& a, const FunctionSchema& b) {
  return a.name == b.name && a.overload_name == b.overload_name &&
         a.arguments == b.arguments && a.returns == b.returns &&
         a.is_vararg == b.is_vararg && a.is_varret == b.is_varret;
}

}  // namespace kiln::ir
