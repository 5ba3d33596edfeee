// ConvertContext: what a converter sees of the node being converted.
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/converter.h"
#include "frontend/onnx/importer_internal.h"
#include "frontend/onnx/tensor_proto.h"
#include "ir/constants.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {

using ir::Value;

ir::Value* ConvertContext::input(int i) const {
  if (i < 0 || i >= node_->input_size() || node_->input(i).empty()) return nullptr;
  return importer_->Lookup(node_->input(i));
}

absl::StatusOr<ir::Value*> ConvertContext::RequiredInput(int i) const {
  Value* v = input(i);
  if (v == nullptr) return Error(absl::StrCat("input ", i, " is required"));
  return v;
}

std::optional<Tensor> ConvertContext::ConstantInput(int i) const {
  Value* v = input(i);
  if (v == nullptr) return std::nullopt;
  std::optional<ir::IValue> c = ir::ConstantValue(v);
  if (!c || !c->isTensor() || !c->toTensor().has_data()) return std::nullopt;
  return c->toTensor();
}

absl::StatusOr<ir::Value*> ConvertContext::IntListInput(int i) {
  ASSIGN_OR_RETURN(Value * v, RequiredInput(i));
  if (std::optional<Tensor> t = ConstantInput(i)) {
    if (t->dim() > 1) return Error(absl::StrCat("input ", i, " must be a 1-D integer tensor"));
    if (!IsIntegral(t->dtype(), /*include_bool=*/false)) {
      return Error(absl::StrCat("input ", i, " must be an integer tensor, got ",
                                DTypeName(t->dtype())));
    }
    std::vector<int64_t> values;
    for (int64_t k = 0; k < t->numel(); ++k) values.push_back(t->GetInt(k));
    return b().IntList(values);
  }
  return b().Op("kiln::tensor_to_int_list", {v});
}

ir::TensorInfo ConvertContext::InputInfo(int i) const {
  Value* v = input(i);
  ir::TensorInfo info;
  if (v != nullptr && v->type()->is_tensor()) info = v->type()->tensor();
  if (i < node_->input_size()) {
    if (const onnx::TypeProto* t = importer_->TypeOf(node_->input(i))) {
      ir::TypePtr ty = TypeFromOnnx(*t);
      if (ty->is_tensor()) {
        const ir::TensorInfo& inferred = ty->tensor();
        if (!info.dtype) info.dtype = inferred.dtype;
        if (!info.sizes || (inferred.sizes && !info.HasCompleteSizes() &&
                            inferred.HasCompleteSizes())) {
          info.sizes = inferred.sizes;
        }
      }
    }
  }
  return info;
}

absl::StatusOr<int64_t> ConvertContext::InputRank(int i) const {
  std::optional<size_t> r = InputInfo(i).rank();
  if (!r) return Unsupported(absl::StrCat("needs the rank of input ", i, " ('",
                                          i < num_inputs() ? node_->input(i) : "", "'), which shape inference did not determine"));
  return static_cast<int64_t>(*r);
}

absl::StatusOr<DType> ConvertContext::InputDType(int i) const {
  std::optional<DType> d = InputInfo(i).dtype;
  if (!d) return Unsupported(absl::StrCat("needs the dtype of input ", i, ", which shape inference did not determine"));
  return *d;
}

const onnx::AttributeProto* ConvertContext::FindAttr(absl::string_view name) const {
  for (const onnx::AttributeProto& a : node_->attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t ConvertContext::AttrInt(absl::string_view name, int64_t def) const {
  const onnx::AttributeProto* a = FindAttr(name);
  return a && a->has_i() ? a->i() : def;
}

float ConvertContext::AttrFloat(absl::string_view name, float def) const {
  const onnx::AttributeProto* a = FindAttr(name);
  return a && a->has_f() ? a->f() : def;
}

std::string ConvertContext::AttrString(absl::string_view name, absl::string_view def) const {
  const onnx::AttributeProto* a = FindAttr(name);
  return a && a->has_s() ? a->s() : std::string(def);
}

std::vector<int64_t> ConvertContext::AttrInts(absl::string_view name,
                                              std::vector<int64_t> def) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return def;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::vector<float> ConvertContext::AttrFloats(absl::string_view name,
                                              std::vector<float> def) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return def;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

std::vector<std::string> ConvertContext::AttrStrings(absl::string_view name) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return {};
  return std::vector<std::string>(a->strings().begin(), a->strings().end());
}

absl::StatusOr<std::optional<Tensor>> ConvertContext::AttrTensor(absl::string_view name) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr || !a->has_t()) return std::optional<Tensor>();
  absl::StatusOr<Tensor> t = TensorFromProto(a->t());
  if (!t.ok()) return Error(absl::StrCat("attribute '", name, "': ", t.status().message()));
  return std::optional<Tensor>(*std::move(t));
}

absl::StatusOr<int64_t> ConvertContext::RequiredAttrInt(absl::string_view name) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr || !a->has_i()) {
    return Error(absl::StrCat("required int attribute '", name, "' is missing"));
  }
  return a->i();
}

absl::StatusOr<std::vector<int64_t>> ConvertContext::RequiredAttrInts(
    absl::string_view name) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return Error(absl::StrCat("required ints attribute '", name, "' is missing"));
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

const onnx::GraphProto* ConvertContext::AttrGraph(absl::string_view name) const {
  const onnx::AttributeProto* a = FindAttr(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

absl::StatusOr<std::vector<ir::Value*>> ConvertContext::ConvertSubgraph(absl::string_view name,
                                                                        ir::Block* block) {
  const onnx::GraphProto* g = AttrGraph(name);
  if (g == nullptr) return Error(absl::StrCat("graph attribute '", name, "' is missing"));
  if (block->inputs().size() != static_cast<size_t>(g->input_size())) {
    return Error(absl::StrCat("subgraph '", name, "' takes ", g->input_size(), " inputs, the block has ",
                              block->inputs().size()));
  }
  GraphBuilder sub(builder_->graph(), &builder_->registry());
  sub.SetInsertionBlock(block);
  std::vector<Value*> inputs(block->inputs().begin(), block->inputs().end());
  return importer_->ConvertGraph(*g, inputs, sub);
}

absl::StatusOr<std::vector<ir::Value*>> ConvertContext::ConvertSubgraphInline(
    absl::string_view name, absl::Span<ir::Value* const> inputs) {
  const onnx::GraphProto* g = AttrGraph(name);
  if (g == nullptr) return Error(absl::StrCat("graph attribute '", name, "' is missing"));
  if (inputs.size() != static_cast<size_t>(g->input_size())) {
    return Error(absl::StrCat("subgraph '", name, "' takes ", g->input_size(), " inputs, got ",
                              inputs.size()));
  }
  return importer_->ConvertGraph(*g, inputs, *builder_);
}

ir::Value* ConvertContext::LookupName(absl::string_view onnx_name) const {
  return importer_->Lookup(std::string(onnx_name));
}

bool ConvertContext::has_output(int i) const {
  return i >= 0 && i < node_->output_size() && !node_->output(i).empty();
}

absl::Status ConvertContext::SetOutput(int i, ir::Value* v) {
  if (!has_output(i)) return absl::OkStatus();
  if (v == nullptr) return Error(absl::StrCat("output ", i, " bound to nothing"));
  const std::string& name = node_->output(i);
  if (const onnx::TypeProto* t = importer_->TypeOf(name)) {
    ir::TypePtr inferred = TypeFromOnnx(*t);
    // Refine only what the converter left unrefined: a value that already
    // has facts (a constant, a forwarded input) keeps them.
    if (inferred->is_tensor() && v->type()->is_tensor() && !v->type()->tensor().dtype &&
        !v->type()->tensor().sizes) {
      v->setType(inferred);
    }
  }
  importer_->Bind(name, v);
  return absl::OkStatus();
}

absl::Status ConvertContext::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(
      node_->op_type(), " (domain ", node_->domain().empty() ? "ai.onnx" : node_->domain(),
      ", opset ", opset_, ", node '", node_->name(), "'): ", what));
}

absl::Status ConvertContext::Unsupported(absl::string_view what) const {
  return absl::UnimplementedError(absl::StrCat(
      node_->op_type(), " (domain ", node_->domain().empty() ? "ai.onnx" : node_->domain(),
      ", opset ", opset_, ", node '", node_->name(), "'): ", what));
}

}  // namespace kiln::frontend::onnx_import
