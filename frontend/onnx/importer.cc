#include "frontend/onnx/importer.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontend/onnx/importer_internal.h"
#include "frontend/onnx/inference_guard.h"
#include "frontend/onnx/tensor_proto.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "support/atomic_file.h"
#include "support/status.h"

namespace kiln::frontend::onnx_import {

using ir::Type;
using ir::TypePtr;
using ir::Value;

namespace {

std::string DomainName(const std::string& domain) {
  return domain.empty() ? "ai.onnx" : domain;
}

std::string CanonicalDomain(const std::string& domain) {
  return domain == "ai.onnx" ? "" : domain;
}

}  // namespace

std::string SanitizedName(absl::string_view onnx_name) {
  std::string out;
  for (char c : onnx_name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_';
    out.push_back(ok ? c : '_');
  }
  if (!out.empty() && out[0] >= '0' && out[0] <= '9') out.insert(0, "v");
  if (!ir::Value::isValidName(out)) return "";
  return out;
}

std::string NodeScope(const onnx::NodeProto& node) {
  std::string name = node.name();
  if (name.empty()) {
    name = node.op_type();
    if (node.output_size() > 0 && !node.output(0).empty()) absl::StrAppend(&name, "->", node.output(0));
  }
  // The scope is printed in IR text up to the end of the line or a " #"
  // comment: keep printable ASCII without '#', and a bounded length.
  constexpr size_t kMaxScope = 256;
  std::string out;
  for (char c : name) {
    if (out.size() >= kMaxScope) break;
    const bool printable = c >= 0x20 && c <= 0x7e && c != '#';
    out.push_back(printable ? c : '_');
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  while (!out.empty() && out.front() == ' ') out.erase(out.begin());
  return out;
}

void SetScope(ir::Node* n, absl::string_view scope) {
  if (n->scope().empty()) n->setScope(scope);
  for (ir::Block* b : n->blocks()) {
    for (ir::Node* inner : b->nodes()) SetScope(inner, scope);
  }
}

TypePtr TypeFromOnnx(const onnx::TypeProto& t) {
  switch (t.value_case()) {
    case onnx::TypeProto::kTensorType: {
      ir::TensorInfo info;
      const onnx::TypeProto::Tensor& tt = t.tensor_type();
      // String tensors are (int[] sizes, str[] data) values, not Tensors.
      if (tt.elem_type() == onnx::TensorProto::STRING) return Type::Any();
      if (tt.elem_type() != 0) {
        absl::StatusOr<DType> d = DTypeFromOnnx(tt.elem_type());
        if (d.ok()) info.dtype = *d;
      }
      if (tt.has_shape()) {
        std::vector<std::optional<int64_t>> sizes;
        for (const auto& dim : tt.shape().dim()) {
          if (dim.has_dim_value() && dim.dim_value() >= 0) {
            sizes.push_back(dim.dim_value());
          } else {
            sizes.push_back(std::nullopt);
          }
        }
        info.sizes = std::move(sizes);
      }
      return Type::TensorWith(std::move(info));
    }
    case onnx::TypeProto::kSequenceType:
      return Type::List(t.sequence_type().has_elem_type()
                            ? TypeFromOnnx(t.sequence_type().elem_type())
                            : Type::Tensor());
    case onnx::TypeProto::kOptionalType:
      return Type::Optional(t.optional_type().has_elem_type()
                                ? TypeFromOnnx(t.optional_type().elem_type())
                                : Type::Tensor());
    default:
      return Type::Any();
  }
}

absl::StatusOr<onnx::ModelProto> ParseModel(absl::string_view bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a valid ONNX model (", bytes.size(),
                     " bytes do not parse as onnx.ModelProto: corrupt or truncated)"));
  }
  if (!model.has_graph()) return absl::InvalidArgumentError("ONNX model has no graph");
  return model;
}

absl::StatusOr<onnx::ModelProto> LoadModelFile(const std::string& path) {
  // The project's file readers: errors name the path and the reason
  // ("Is a directory", "No such file or directory"). Parsed in place from a
  // mapping (a model is mostly its weights: one copy of them less); what
  // cannot be mapped (a pipe) is read.
  absl::StatusOr<MappedFile> mapped = MappedFile::Open(path);
  std::string read;
  if (!mapped.ok() && absl::IsInvalidArgument(mapped.status())) {
    ASSIGN_OR_RETURN(read, ReadFile(path));
  } else if (!mapped.ok()) {
    return mapped.status();
  }
  absl::StatusOr<onnx::ModelProto> m = ParseModel(mapped.ok() ? mapped->bytes() : absl::string_view(read));
  if (!m.ok()) return absl::Status(m.status().code(), absl::StrCat(path, ": ", m.status().message()));
  return m;
}

std::vector<const onnx::ValueInfoProto*> RuntimeInputs(const onnx::ModelProto& model) {
  absl::flat_hash_set<std::string> initialized;
  for (const onnx::TensorProto& t : model.graph().initializer()) initialized.insert(t.name());
  for (const onnx::SparseTensorProto& t : model.graph().sparse_initializer()) {
    initialized.insert(t.values().name());
  }
  std::vector<const onnx::ValueInfoProto*> out;
  for (const onnx::ValueInfoProto& in : model.graph().input()) {
    if (!initialized.contains(in.name())) out.push_back(&in);
  }
  return out;
}

namespace {

// Initializers whose data shape inference may read: integer tensors small
// enough to be shapes, axes or indices.
bool KeepInitializerData(const onnx::TensorProto& t) {
  const int32_t dt = t.data_type();
  if (dt != onnx::TensorProto::INT64 && dt != onnx::TensorProto::INT32) return false;
  int64_t numel = 1;
  for (int64_t d : t.dims()) numel *= d < 0 ? 0 : d;
  return numel <= 64;
}

}  // namespace

onnx::ModelProto WeightlessCopy(const onnx::ModelProto& model) {
  onnx::ModelProto copy;
  copy.set_ir_version(model.ir_version());
  *copy.mutable_opset_import() = model.opset_import();
  const onnx::GraphProto& g = model.graph();
  onnx::GraphProto* cg = copy.mutable_graph();
  cg->set_name(g.name());
  *cg->mutable_node() = g.node();
  *cg->mutable_input() = g.input();
  *cg->mutable_output() = g.output();
  *cg->mutable_value_info() = g.value_info();
  *copy.mutable_functions() = model.functions();
  absl::flat_hash_set<std::string> listed;
  for (const onnx::ValueInfoProto& in : g.input()) listed.insert(in.name());
  for (const onnx::TensorProto& t : g.initializer()) {
    if (KeepInitializerData(t)) {
      *cg->add_initializer() = t;
      continue;
    }
    // Declared as a graph input of the initializer's type instead: shape
    // inference needs its type, not its data.
    if (!listed.contains(t.name())) {
      onnx::ValueInfoProto* in = cg->add_input();
      in->set_name(t.name());
      auto* tt = in->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(t.data_type());
      for (int64_t d : t.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
    }
  }
  return copy;
}

// --- Importer ---

Value* Importer::Lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return found->second;
  }
  return nullptr;
}

void Importer::Bind(const std::string& name, Value* v) {
  scopes_.back()[name] = v;
  if (v->debugNameRaw().empty()) {
    const std::string n = SanitizedName(name);
    if (!n.empty()) v->setDebugName(n);
  }
}

const onnx::TypeProto* Importer::TypeOf(const std::string& name) const {
  auto it = types_.find(name);
  return it == types_.end() ? nullptr : &it->second;
}

int64_t Importer::OpsetFor(const std::string& domain) const {
  auto it = opsets_.find(CanonicalDomain(domain));
  return it == opsets_.end() ? 0 : it->second;
}

void Importer::CollectValueInfo(const onnx::GraphProto& g, int depth) {
  if (depth > kMaxDepth) return;
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.has_type()) types_.emplace(vi.name(), vi.type());
  };
  for (const auto& vi : g.input()) add(vi);
  for (const auto& vi : g.output()) add(vi);
  for (const auto& vi : g.value_info()) add(vi);
  for (const onnx::NodeProto& n : g.node()) {
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) CollectValueInfo(a.g(), depth + 1);
      for (const onnx::GraphProto& sub : a.graphs()) CollectValueInfo(sub, depth + 1);
    }
  }
}

absl::Status Importer::ConvertNode(const onnx::NodeProto& node, GraphBuilder& builder) {
  const int64_t opset = OpsetFor(node.domain());
  const std::string where =
      absl::StrCat(node.op_type(), " (domain ", DomainName(node.domain()), ", opset ", opset,
                   ", node '", node.name(), "')");
  if (opset == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the model imports no opset for domain ", DomainName(node.domain())));
  }
  const ConverterFn* fn = converters_->Find(node.domain(), node.op_type(), opset);
  if (fn == nullptr) {
    if (converters_->Knows(node.domain(), node.op_type())) {
      return absl::UnimplementedError(absl::StrCat(where, ": unsupported opset ", opset));
    }
    return absl::UnimplementedError(absl::StrCat(where, ": unsupported op"));
  }
  for (const std::string& in : node.input()) {
    if (!in.empty() && Lookup(in) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": input '", in, "' is not defined before its use"));
    }
  }
  ir::Block* block = builder.insertion_block();
  ir::Node* before = block->return_node()->prev();
  ConvertContext ctx(this, &node, opset, &builder);
  absl::Status s = (*fn)(ctx);
  if (!s.ok()) {
    // Converter errors made with ctx.Error() already name the node.
    if (absl::StartsWith(s.message(), node.op_type() + " (domain")) return s;
    return absl::Status(s.code(), absl::StrCat(where, ": ", s.message()));
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (!node.output(i).empty() && Lookup(node.output(i)) == nullptr) {
      return absl::InternalError(
          absl::StrCat(where, ": converter did not produce output '", node.output(i), "'"));
    }
  }
  // The nodes this converter emitted carry the ONNX node's name as their
  // scope, so that reports (islands, externs) and errors at run time name
  // the node users know ("/encoder/Gather_7").
  const std::string scope = NodeScope(node);
  for (ir::Node* n = before->next(); n != block->return_node(); n = n->next()) {
    SetScope(n, scope);
    if (infer_node_types_) RETURN_IF_ERROR(infer_node_types_(*n));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Value*>> Importer::ConvertGraph(const onnx::GraphProto& g,
                                                           absl::Span<Value* const> inputs,
                                                           GraphBuilder& builder) {
  if (depth() >= kMaxDepth) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph '", g.name(), "': subgraphs nest deeper than ", kMaxDepth));
  }
  const bool main = scopes_.empty();
  scopes_.emplace_back();
  struct PopScope {
    std::vector<absl::flat_hash_map<std::string, Value*>>* s;
    ~PopScope() { s->pop_back(); }
  } pop{&scopes_};

  std::vector<const onnx::TensorProto*> initializers;
  std::vector<std::optional<absl::string_view>> raw_data;
  for (int i = 0; i < g.initializer_size(); ++i) {
    const size_t at = static_cast<size_t>(i);
    initializers.push_back(&g.initializer(i));
    raw_data.push_back(main && at < main_raw_data_.size() ? main_raw_data_[at] : std::nullopt);
  }
  std::vector<absl::StatusOr<Tensor>> tensors = TensorsFromProtos(initializers, raw_data);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].ok()) {
      return absl::Status(tensors[i].status().code(), absl::StrCat("initializer '", initializers[i]->name(),
                                                                   "': ", tensors[i].status().message()));
    }
    Bind(initializers[i]->name(), builder.TensorConstant(*tensors[i]));
  }
  if (g.sparse_initializer_size() > 0) {
    return absl::UnimplementedError(
        absl::StrCat("graph '", g.name(), "': sparse initializers are not supported"));
  }
  if (inputs.size() != static_cast<size_t>(g.input_size())) {
    // Main graph: inputs cover the runtime inputs only (initializer-backed
    // inputs are already bound).
    size_t k = 0;
    for (const onnx::ValueInfoProto& in : g.input()) {
      if (scopes_.back().contains(in.name())) continue;
      if (k >= inputs.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph '", g.name(), "' has more inputs than provided"));
      }
      Bind(in.name(), inputs[k++]);
    }
  } else {
    for (int i = 0; i < g.input_size(); ++i) Bind(g.input(i).name(), inputs[i]);
  }
  for (const onnx::NodeProto& node : g.node()) RETURN_IF_ERROR(ConvertNode(node, builder));
  std::vector<Value*> outs;
  for (const onnx::ValueInfoProto& out : g.output()) {
    Value* v = Lookup(out.name());
    if (v == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph '", g.name(), "': output '", out.name(), "' is never produced"));
    }
    outs.push_back(v);
  }
  return outs;
}

void Importer::AddValueInfo(const onnx::GraphProto& g) { CollectValueInfo(g, 0); }

absl::Status Importer::ImportMain(const onnx::ModelProto& model) {
  // The newest opset kiln knows of a domain: the newer of this libonnx's
  // schemas and kiln's own converters. A model that claims a newer one was
  // written for operators kiln cannot know (their semantics may have
  // changed); domains neither knows are left to the converters.
  const auto& schemas = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  for (const onnx::OperatorSetIdProto& o : model.opset_import()) {
    const std::string domain = CanonicalDomain(o.domain());
    auto range = schemas.find(domain);
    const int64_t newest = std::max<int64_t>(range != schemas.end() ? range->second.second : 0,
                                             converters_->NewestOpset(domain));
    if (newest > 0 && o.version() > newest) {
      return absl::InvalidArgumentError(absl::StrCat("the model imports opset ", o.version(),
                                                     " of domain ", DomainName(o.domain()),
                                                     "; kiln knows opsets up to ", newest));
    }
    if (o.version() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("the model imports opset ", o.version(),
                                                     " of domain ", DomainName(o.domain()),
                                                     "; opsets start at 1"));
    }
    opsets_[CanonicalDomain(o.domain())] = o.version();
  }
  if (model.opset_import_size() == 0) opsets_[""] = 1;  // IR version 1/2 models
  CollectValueInfo(model.graph(), 0);
  GraphBuilder builder(graph_);
  std::vector<Value*> inputs;
  for (const onnx::ValueInfoProto* in : RuntimeInputs(model)) {
    Value* v = builder.AddInput(SanitizedName(in->name()),
                                in->has_type() ? TypeFromOnnx(in->type()) : Type::Tensor());
    inputs.push_back(v);
  }
  ASSIGN_OR_RETURN(std::vector<Value*> outs, ConvertGraph(model.graph(), inputs, builder));
  for (Value* v : outs) builder.AddOutput(v);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ir::Graph>> ImportModel(const onnx::ModelProto& model,
                                                       const ImportOptions& options) {
  if (!model.has_graph()) return absl::InvalidArgumentError("ONNX model has no graph");
  auto graph = std::make_unique<ir::Graph>();
  Importer importer(graph.get(), options.converters ? options.converters : &DefaultConverters(),
                    options.infer_node_types);
  importer.SetMainRawData(options.main_raw_data);
  if (options.shape_inference) {
    // Inference runs on a copy without the large weights (it reads only
    // small integer initializers, e.g. Reshape's shape); its facts are
    // merged by value name.
    // Inference is advisory: when libonnx's inference would crash on this
    // model (inference_guard.h) or throws, converters that need a rank
    // report it.
    if (CheckSafeForOnnxInference(model).ok()) {
      onnx::ModelProto skeleton = WeightlessCopy(model);
      try {
        // Data propagation computes shape tensors (Shape -> Gather -> Concat
        // -> Reshape), so reshaped values keep their ranks and sizes.
        onnx::shape_inference::InferShapes(skeleton, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(false, 0, true));
        importer.AddValueInfo(skeleton.graph());
      } catch (const std::exception&) {
      }
    }
  }
  RETURN_IF_ERROR(importer.ImportMain(model));
  return graph;
}

}  // namespace kiln::frontend::onnx_import
