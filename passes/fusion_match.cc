#include "passes/fusion_match.h"

#include <algorithm>

#include "ir/constants.h"
#include "ir/ivalue.h"

namespace kiln::passes::fusion_match {

using ir::IValue;

const ir::TensorInfo* StaticFloat(const ir::Value* v) {
  const ir::TypePtr& t = v->type();
  if (!t || !t->is_tensor()) return nullptr;
  const ir::TensorInfo& info = t->tensor();
  if (!info.dtype || *info.dtype != DType::kFloat32 || !info.HasCompleteSizes()) return nullptr;
  return &info;
}

std::optional<double> Number(const ir::Value* v) {
  std::optional<IValue> c = ir::ConstantValue(v);
  if (!c) return std::nullopt;
  if (c->isTensor()) {
    const Tensor& t = c->toTensor();
    if (!t.has_data() || t.numel() != 1 || !IsFloatingPoint(t.dtype())) return std::nullopt;
    return t.GetDouble(0);
  }
  if (c->isNumber()) return c->toNumberAsDouble();
  return std::nullopt;
}

bool IsNone(const ir::Value* v) {
  std::optional<IValue> c = ir::ConstantValue(v);
  return c && c->isNone();
}

std::optional<std::vector<int64_t>> IntList(const ir::Value* v) {
  if (v->node()->kind() == ir::sym::kListConstruct) {
    std::vector<int64_t> out;
    for (const ir::Value* e : v->node()->inputs()) {
      std::optional<IValue> c = ir::ConstantValue(e);
      if (!c || !c->isInt()) return std::nullopt;
      out.push_back(c->toInt());
    }
    return out;
  }
  std::optional<IValue> c = ir::ConstantValue(v);
  if (!c) return std::nullopt;
  if (c->isInt()) return std::vector<int64_t>{c->toInt()};
  if (!c->isList()) return std::nullopt;
  std::vector<int64_t> out;
  for (const IValue& e : c->elements()) {
    if (!e.isInt()) return std::nullopt;
    out.push_back(e.toInt());
  }
  return out;
}

std::optional<int64_t> Int(const ir::Value* v) {
  std::optional<IValue> c = ir::ConstantValue(v);
  if (!c || !c->isInt()) return std::nullopt;
  return c->toInt();
}

std::optional<Tensor> FloatConstant(const ir::Value* v) {
  std::optional<IValue> c = ir::ConstantValue(v);
  if (!c || !c->isTensor()) return std::nullopt;
  const Tensor& t = c->toTensor();
  if (!t.has_data() || t.dtype() != DType::kFloat32) return std::nullopt;
  return t.Contiguous();
}

bool OnlyUsedBy(const ir::Value* v, const ir::Node* user) {
  return v->uses().size() == 1 && v->uses()[0].user == user;
}

bool BroadcastsTo(const ir::TensorInfo& t, const std::vector<int64_t>& sizes) {
  if (!t.HasCompleteSizes() || t.sizes->size() > sizes.size()) return false;
  const std::vector<int64_t> ts = t.ConcreteSizes();
  const size_t shift = sizes.size() - ts.size();
  for (size_t i = 0; i < ts.size(); ++i) {
    if (ts[i] != 1 && ts[i] != sizes[shift + i]) return false;
  }
  return true;
}

void DestroyWithUnusedConstants(const std::vector<ir::Node*>& nodes) {
  // Constants only (collected before anything is destroyed), each once.
  std::vector<ir::Value*> constants;
  for (ir::Node* n : nodes) {
    for (ir::Value* v : n->inputs()) {
      if (v->node()->kind() == ir::sym::kConstant &&
          std::find(constants.begin(), constants.end(), v) == constants.end()) {
        constants.push_back(v);
      }
    }
  }
  for (ir::Node* n : nodes) n->destroy();
  for (ir::Value* v : constants) ir::DestroyIfUnusedConstant(v);
}

}  // namespace kiln::passes::fusion_match
