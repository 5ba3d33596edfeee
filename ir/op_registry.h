// The operator registry: Symbol -> overloads, each with its schema, traits
// and two slots filled by higher layers (shape functions from passes,
// constant-evaluation kernels from the runtime).
//
//   const OpRegistry& ops = BuiltinOps();
//   if (const Operator* op = ops.Match(*node)) { ... op->schema ... }
//
// Thread safety: registration and slot filling happen at start-up; after
// that the registry is read-only and safe to share.
#ifndef KILN_IR_OP_REGISTRY_H_
#define KILN_IR_OP_REGISTRY_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "ir/ir.h"
#include "ir/ivalue.h"
#include "ir/schema.h"
#include "ops/row.h"

namespace kiln::ir {

// How alias analysis treats an op (PyTorch's AliasAnalysisKind).
enum class AliasKind : uint8_t {
  kPure,                 // no aliasing, no mutation, whatever the schema says
  kFromSchema,           // the schema's alias annotations are the truth
  kConservative,         // may read/write anything: counts as a side effect
  kInternalSpecialCase,  // alias analysis has dedicated code (prim::If, ...)
};

struct OpTraits {
  bool has_side_effects = false;
  bool nondeterministic = false;
  AliasKind alias_kind = AliasKind::kFromSchema;
  // Some output may alias an input that is not written (view ops, and ops
  // such as `to` that may return their input).
  bool is_view = false;
  // Some argument is written (`Tensor(a!)`).
  bool mutates = false;
  // The first two arguments may be swapped (add/mul/eq/ne/max.other/...). For
  // ops with an `alpha` argument this holds only when alpha == 1; use
  // IsCommutative(node) (ir/op_traits.h), which checks.
  bool commutative = false;
  Symbol inplace_variant;     // on aten::relu: aten::relu_
  Symbol functional_variant;  // on aten::relu_: aten::relu
};

// Output types from input types and constant inputs (null where the input
// is not a constant). Filled by the passes layer.
using ShapeFn = std::function<absl::StatusOr<std::vector<TypePtr>>(
    const Node& node, absl::Span<const TypePtr> input_types,
    absl::Span<const IValue* const> constant_inputs)>;
// Evaluates the op on constant inputs. Filled by the runtime layer.
using KernelFn =
    std::function<absl::StatusOr<std::vector<IValue>>(absl::Span<const IValue> inputs)>;

struct Operator {
  Symbol symbol;
  FunctionSchema schema;
  OpTraits traits;
  ShapeFn shape_fn;
  KernelFn kernel;
  // The library call compiled code makes for the op (its row's EXTERN
  // column, ops/README.md); Library::kNone for most ops.
  ops::ExternForm extern_form;
};

class OpRegistry {
 public:
  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Parses `schema` and registers it with traits derived from the schema
  // (mutates, is_view; alias kind FROM_SCHEMA). Fails on a parse error or
  // when the qualified name (ns::name.overload) is already registered.
  absl::StatusOr<Operator*> Register(absl::string_view schema);
  absl::StatusOr<Operator*> Register(FunctionSchema schema, OpTraits traits);
  // Links `foo` and `foo_` of every registered pair (traits.inplace_variant /
  // functional_variant). Idempotent.
  void LinkInplaceVariants();

  // The overload a node calls: inputs are matched positionally against the
  // arguments (missing trailing arguments must have defaults, varargs take
  // any extra), each input type must be a subtype of the argument type (an
  // input typed Any matches anything), and the output count must equal the
  // return count unless the schema returns `...`. Among several matches the
  // most specific wins (most exact type-kind matches), then the earliest
  // registered. Null when nothing matches or the kind is unknown.
  const Operator* Match(const Node& node) const;
  const Operator* Match(Symbol kind, absl::Span<const TypePtr> input_types,
                        std::optional<size_t> num_outputs = std::nullopt) const;

  // All overloads of `kind`, in registration order (empty if unknown).
  absl::Span<const std::unique_ptr<Operator>> Overloads(Symbol kind) const;
  bool HasSchemas(Symbol kind) const { return ops_.contains(kind); }
  // By "aten::add.Tensor" ("aten::add" names the overload-less one).
  const Operator* Find(absl::string_view qualified_name) const;
  Operator* FindMutable(absl::string_view qualified_name);

  // Slot filling by qualified name; NotFound when no such overload.
  absl::Status SetShapeFn(absl::string_view qualified_name, ShapeFn fn);
  absl::Status SetKernel(absl::string_view qualified_name, KernelFn fn);

  size_t NumOperators() const { return num_operators_; }
  size_t NumSymbols() const { return ops_.size(); }
  // Every registered symbol (unordered).
  std::vector<Symbol> Symbols() const;

 private:
  // Operators are heap-allocated so that pointers handed out stay valid
  // when more overloads are registered.
  absl::flat_hash_map<Symbol, std::vector<std::unique_ptr<Operator>>> ops_;
  size_t num_operators_ = 0;
};

// Derives mutates / is_view from the schema's alias annotations.
OpTraits TraitsFromSchema(const FunctionSchema& schema);

// The process-wide registry with kiln's builtin op set (ir/builtin_ops.cc),
// populated on first use. Mutable so that higher layers can fill the
// shape_fn / kernel slots at start-up.
OpRegistry& BuiltinOps();
// OK unless a builtin schema failed to register (a bug; tested).
absl::Status BuiltinOpsStatus();

}  // namespace kiln::ir

#endif  // KILN_IR_OP_REGISTRY_H_
