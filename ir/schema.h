// FunctionSchema: an operator signature in TorchScript's schema language,
//
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//
// with kiln types (TypePtr), default values (IValue) and alias annotations.
// Parse one with ParseSchema (ir/schema_parser.h).
#ifndef KILN_IR_SCHEMA_H_
#define KILN_IR_SCHEMA_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ivalue.h"
#include "ir/symbol.h"
#include "ir/type.h"

namespace kiln::ir {

// `Tensor(a!)`, `Tensor(a -> *)`, `Tensor(a|b)`, `t[](*)`, `Tensor(a)[]`.
// Sets are alias-set names; "*" is the wildcard set.
struct AliasInfo {
  std::vector<std::string> before_sets;
  // Non-empty only for `(a -> b)`: the sets after the call (PyTorch uses
  // `a -> *` for values that enter a container).
  std::vector<std::string> after_sets;
  bool is_write = false;
  // For containers: the annotation of the element type (`Tensor(a)[]`).
  std::vector<AliasInfo> contained;

  bool IsWildcard() const;
  // This annotation or a contained one writes.
  bool AnyWrite() const;
  friend bool operator==(const AliasInfo& a, const AliasInfo& b) {
    return a.before_sets == b.before_sets && a.after_sets == b.after_sets &&
           a.is_write == b.is_write && a.contained == b.contained;
  }
};

struct Argument {
  std::string name;  // empty for unnamed returns
  TypePtr type;
  // `int[2]`: the declared fixed list size (a scalar default or actual is
  // broadcast to this many elements).
  std::optional<int64_t> fixed_list_size;
  std::optional<IValue> default_value;
  bool kwarg_only = false;
  std::optional<AliasInfo> alias_info;
};

struct FunctionSchema {
  std::string name;           // "aten::add"
  std::string overload_name;  // "Tensor", or "" for the default overload
  std::vector<Argument> arguments;
  std::vector<Argument> returns;
  bool is_vararg = false;  // `(..., ...)`: any further inputs are accepted
  bool is_varret = false;  // `-> ...`: any number of outputs

  Symbol symbol() const { return Symbol::FromQualString(name); }
  // "aten::add.Tensor" (or "aten::add").
  std::string QualifiedName() const;
  // Number of leading arguments without a default value.
  size_t NumRequiredArguments() const;
  // The index of the named argument, or -1.
  int ArgumentIndex(absl::string_view name) const;
  // Any argument (or a contained type of one) has a `!` annotation.
  bool IsMutable() const;
  // Prints back in PyTorch's form (types as kiln prints them, `Scalar` for
  // numbers). ParseSchema(ToString()) reproduces an equal schema.
  std::string ToString() const;
};

bool operator==(const Argument& a, const Argument& b);
bool operator==(const FunctionSchema& a, const FunctionSchema& b);

}  // namespace kiln::ir

#endif  // KILN_IR_SCHEMA_H_
