#include "ir/op_registry.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/schema_parser.h"
#include "support/status.h"

namespace kiln::ir {
namespace {

bool SharesSet(const AliasInfo& out, const AliasInfo& in) {
  for (const std::string& o : out.before_sets) {
    if (o == "*") continue;
    for (const std::string& i : in.before_sets) {
      if (o == i) return true;
    }
  }
  return false;
}

// True when some (possibly contained) set of `out` is a set of a non-written
// annotation in `in`.
bool AliasesWithoutWrite(const AliasInfo& out, const AliasInfo& in) {
  if (!in.is_write && SharesSet(out, in)) return true;
  for (const AliasInfo& c : in.contained) {
    if (AliasesWithoutWrite(out, c)) return true;
  }
  for (const AliasInfo& c : out.contained) {
    if (AliasesWithoutWrite(c, in)) return true;
  }
  return false;
}

// How well `actual` fits the formal argument: -1 no match, 0 via Any,
// 1 via subtyping, 2 same kind.
int ArgumentScore(const TypePtr& actual, const Argument& formal) {
  const Type& f = *formal.type;
  const Type& a = *actual;
  const TypeKind fk = f.kind();
  const TypeKind ak = a.kind();
  if (ak == fk) {
    switch (fk) {
      case TypeKind::kList:
      case TypeKind::kOptional:
      case TypeKind::kTuple:
      case TypeKind::kDict:
      case TypeKind::kClass:
        return IsSubtypeOf(actual, formal.type) ? 2 : -1;
      default:
        return 2;  // schema tensors are never refined, so any tensor fits
    }
  }
  if (fk == TypeKind::kAny || ak == TypeKind::kAny) return 0;
  // `int[2] stride` also takes a single int (TorchScript broadcasts it).
  if (formal.fixed_list_size && fk == TypeKind::kList &&
      IsSubtypeOf(actual, f.contained()[0])) {
    return 1;
  }
  return IsSubtypeOf(actual, formal.type) ? 1 : -1;
}

// Returns the match score of `op` for the inputs, or -1.
template <typename TypeAt>
int MatchScore(const Operator& op, size_t num_inputs, const TypeAt& type_at,
               std::optional<size_t> num_outputs) {
  const FunctionSchema& s = op.schema;
  if (num_outputs && !s.is_varret && *num_outputs != s.returns.size()) return -1;
  const size_t declared = s.arguments.size();
  if (num_inputs > declared && !s.is_vararg) return -1;
  for (size_t i = num_inputs; i < declared; ++i) {
    if (!s.arguments[i].default_value) return -1;
  }
  int score = 0;
  const size_t checked = num_inputs < declared ? num_inputs : declared;
  for (size_t i = 0; i < checked; ++i) {
    int a = ArgumentScore(type_at(i), s.arguments[i]);
    if (a < 0) return -1;
    score += a;
  }
  return score;
}

template <typename TypeAt>
const Operator* BestMatch(absl::Span<const std::unique_ptr<Operator>> overloads,
                          size_t num_inputs, const TypeAt& type_at,
                          std::optional<size_t> num_outputs) {
  const Operator* best = nullptr;
  int best_score = -1;
  for (const auto& op : overloads) {
    int score = MatchScore(*op, num_inputs, type_at, num_outputs);
    if (score > best_score) {
      best = op.get();
      best_score = score;
    }
  }
  return best;
}

}  // namespace

OpTraits TraitsFromSchema(const FunctionSchema& schema) {
  OpTraits t;
  t.mutates = schema.IsMutable();
  for (const Argument& r : schema.returns) {
    if (!r.alias_info) continue;
    for (const Argument& a : schema.arguments) {
      if (a.alias_info && AliasesWithoutWrite(*r.alias_info, *a.alias_info)) {
        t.is_view = true;
      }
    }
  }
  return t;
}

absl::StatusOr<Operator*> OpRegistry::Register(absl::string_view schema) {
  ASSIGN_OR_RETURN(FunctionSchema parsed, ParseSchema(schema));
  OpTraits traits = TraitsFromSchema(parsed);
  return Register(std::move(parsed), traits);
}

absl::StatusOr<Operator*> OpRegistry::Register(FunctionSchema schema, OpTraits traits) {
  const Symbol sym = schema.symbol();
  auto& overloads = ops_[sym];
  for (const auto& op : overloads) {
    if (op->schema.overload_name == schema.overload_name) {
      return absl::AlreadyExistsError(
          absl::StrCat("operator ", schema.QualifiedName(), " is already registered"));
    }
  }
  auto op = std::make_unique<Operator>();
  op->symbol = sym;
  op->schema = std::move(schema);
  op->traits = traits;
  overloads.push_back(std::move(op));
  ++num_operators_;
  return overloads.back().get();
}

void OpRegistry::LinkInplaceVariants() {
  for (auto& [sym, overloads] : ops_) {
    absl::string_view name = sym.name();
    if (name.size() < 2 || name.back() != '_' || name.substr(0, 2) == "__") continue;
    Symbol functional = Symbol::Make(sym.ns(), name.substr(0, name.size() - 1));
    auto it = ops_.find(functional);
    if (it == ops_.end()) continue;
    for (auto& op : overloads) op->traits.functional_variant = functional;
    for (auto& op : it->second) op->traits.inplace_variant = sym;
  }
}

const Operator* OpRegistry::Match(const Node& node) const {
  auto it = ops_.find(node.kind());
  if (it == ops_.end()) return nullptr;
  absl::Span<Value* const> inputs = node.inputs();
  return BestMatch(it->second, inputs.size(),
                   [&](size_t i) -> const TypePtr& { return inputs[i]->type(); },
                   node.outputs().size());
}

const Operator* OpRegistry::Match(Symbol kind, absl::Span<const TypePtr> input_types,
                                  std::optional<size_t> num_outputs) const {
  auto it = ops_.find(kind);
  if (it == ops_.end()) return nullptr;
  return BestMatch(it->second, input_types.size(),
                   [&](size_t i) -> const TypePtr& { return input_types[i]; }, num_outputs);
}

absl::Span<const std::unique_ptr<Operator>> OpRegistry::Overloads(Symbol kind) const {
  auto it = ops_.find(kind);
  if (it == ops_.end()) return {};
  return it->second;
}

const Operator* OpRegistry::Find(absl::string_view qualified_name) const {
  return const_cast<OpRegistry*>(this)->FindMutable(qualified_name);
}

Operator* OpRegistry::FindMutable(absl::string_view qualified_name) {
  size_t sep = qualified_name.find("::");
  if (sep == absl::string_view::npos) return nullptr;
  size_t dot = qualified_name.find('.', sep + 2);
  absl::string_view base = qualified_name.substr(0, dot);
  absl::string_view overload =
      dot == absl::string_view::npos ? absl::string_view() : qualified_name.substr(dot + 1);
  auto it = ops_.find(Symbol::FromQualString(base));
  if (it == ops_.end()) return nullptr;
  for (auto& op : it->second) {
    if (op->schema.overload_name == overload) return op.get();
  }
  return nullptr;
}

absl::Status OpRegistry::SetShapeFn(absl::string_view qualified_name, ShapeFn fn) {
  Operator* op = FindMutable(qualified_name);
  if (!op) return absl::NotFoundError(absl::StrCat("no operator ", qualified_name));
  op->shape_fn = std::move(fn);
  return absl::OkStatus();
}

absl::Status OpRegistry::SetKernel(absl::string_view qualified_name, KernelFn fn) {
  Operator* op = FindMutable(qualified_name);
  if (!op) return absl::NotFoundError(absl::StrCat("no operator ", qualified_name));
  op->kernel = std::move(fn);
  return absl::OkStatus();
}

std::vector<Symbol> OpRegistry::Symbols() const {
  std::vector<Symbol> out;
  out.reserve(ops_.size());
  for (const auto& [sym, overloads] : ops_) out.push_back(sym);
  return out;
}

}  // namespace kiln::ir
