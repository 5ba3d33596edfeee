#include "frontend/pt2/signature.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {

absl::Status Signature::CheckInputs(absl::Span<const ir::IValue> values) const {
  return BindSymbols(values).status();
}

absl::StatusOr<absl::flat_hash_map<std::string, int64_t>> Signature::BindSymbols(
    absl::Span<const ir::IValue> values) const {
  if (values.size() != inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the program takes ", inputs.size(), " inputs, got ", values.size()));
  }
  absl::flat_hash_map<std::string, int64_t> bindings;
  auto bind = [&](const std::string& symbol, int64_t v, const std::string& where) -> absl::Status {
    auto [it, fresh] = bindings.emplace(symbol, v);
    if (!fresh && it->second != v) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is ", v, " but ", symbol,
                                                     " is already ", it->second));
    }
    auto range = ranges.find(symbol);
    if (range != ranges.end()) {
      const RangeConstraint& r = range->second;
      if ((r.min && v < *r.min) || (r.max && v > *r.max)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " (", symbol, ") is ", v, ", outside the exported range [",
            r.min ? absl::StrCat(*r.min) : "-inf", ", ", r.max ? absl::StrCat(*r.max) : "inf", "]"));
      }
    }
    return absl::OkStatus();
  };
  // Pass 1: types, ranks, constants, and the dims that are one symbol.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const SignatureInput& in = inputs[i];
    const ir::IValue& v = values[i];
    if (!in.is_tensor) {
      if (!v.isInt()) return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' must be an int"));
      if (in.sizes.size() == 1 && in.sizes[0].expr && in.sizes[0].expr->AsSymbol()) {
        RETURN_IF_ERROR(bind(*in.sizes[0].expr->AsSymbol(), v.toInt(), absl::StrCat("input '", in.name, "'")));
      }
      continue;
    }
    if (!v.isTensor()) return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' must be a tensor"));
    const Tensor& t = v.toTensor();
    if (t.dtype() != in.dtype) {
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' is ", DTypeName(t.dtype()),
                                                     ", the program takes ", DTypeName(in.dtype)));
    }
    if (t.dim() != static_cast<int64_t>(in.sizes.size())) {
      return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' has ", t.dim(),
                                                     " dims, the program takes ", in.sizes.size()));
    }
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      const SymSize& s = in.sizes[d];
      const std::string where = absl::StrCat("input '", in.name, "' dim ", d);
      if (s.value) {
        if (t.size(d) != *s.value) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " is ", t.size(d), ", the program takes ", *s.value));
        }
      } else if (s.expr && s.expr->AsSymbol()) {
        RETURN_IF_ERROR(bind(*s.expr->AsSymbol(), t.size(d), where));
      }
    }
  }
  // Pass 2: compound expressions whose symbols are now bound.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const SignatureInput& in = inputs[i];
    if (!in.is_tensor) continue;
    const Tensor& t = values[i].toTensor();
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      const SymSize& s = in.sizes[d];
      if (s.value || !s.expr || s.expr->AsSymbol()) continue;
      absl::StatusOr<int64_t> want = s.expr->Evaluate(bindings);
      if (!want.ok()) continue;  // a symbol no plain dim binds: not checkable here
      if (*want != t.size(d)) {
        return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' dim ", d, " is ",
                                                       t.size(d), ", the program takes ",
                                                       s.expr->ToString(), " = ", *want));
      }
    }
  }
  return bindings;
}

absl::Status Signature::Specialize(ir::Graph& graph, absl::Span<const ir::IValue> inputs) const {
  if (symbolic_values.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto bindings, BindSymbols(inputs));
  auto refine = [&](ir::Value* v) {
    if (!v->type()->is_tensor()) return;
    auto it = symbolic_values.find(v->debugNameRaw());
    if (it == symbolic_values.end()) return;
    ir::TensorInfo info = v->type()->tensor();
    // Only a value that still has the program's rank (names can move in
    // kiln when a subgraph reuses one).
    if (!info.sizes || info.sizes->size() != it->second.size()) return;
    for (size_t d = 0; d < it->second.size(); ++d) {
      const SymSize& s = it->second[d];
      std::optional<int64_t> size = s.value;
      if (!size && s.expr) {
        absl::StatusOr<int64_t> e = s.expr->Evaluate(bindings);
        if (e.ok() && *e >= 0) size = *e;
      }
      if (!size) continue;
      if ((*info.sizes)[d] && *(*info.sizes)[d] != *size) return;  // not the same value
      (*info.sizes)[d] = size;
    }
    v->setType(ir::Type::TensorWith(std::move(info)));
  };
  std::vector<ir::Block*> stack = {graph.block()};
  while (!stack.empty()) {
    ir::Block* b = stack.back();
    stack.pop_back();
    for (ir::Value* v : b->inputs()) refine(v);
    for (ir::Node* n : b->nodes()) {
      for (ir::Value* v : n->outputs()) refine(v);
      for (ir::Block* sub : n->blocks()) stack.push_back(sub);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<int64_t>>> Signature::ExampleShapes() const {
  std::vector<std::vector<int64_t>> out;
  for (const SignatureInput& in : inputs) {
    std::vector<int64_t> sizes;
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      const SymSize& s = in.sizes[d];
      if (s.value) {
        sizes.push_back(*s.value);
      } else if (s.hint) {
        sizes.push_back(*s.hint);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("input '", in.name, "' dim ", d,
                                                       " is symbolic with no example value"));
      }
    }
    out.push_back(std::move(sizes));
  }
  return out;
}

bool Signature::HasSymbolicSizes() const {
  for (const SignatureInput& in : inputs) {
    for (const SymSize& s : in.sizes) {
      if (!s.value) return true;
    }
  }
  return false;
}

}  // namespace kiln::frontend::pt2
