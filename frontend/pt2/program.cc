#include "frontend/pt2/program.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "frontend/pt2/json_reader.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {

std::optional<std::vector<int64_t>> StaticValues(const std::vector<SymSize>& sizes) {
  std::vector<int64_t> out;
  out.reserve(sizes.size());
  for (const SymSize& s : sizes) {
    if (!s.value) return std::nullopt;
    out.push_back(*s.value);
  }
  return out;
}

std::optional<DType> DTypeFromSerialized(int64_t code) {
  switch (code) {
    case 1: return DType::kUInt8;
    case 2: return DType::kInt8;
    case 3: return DType::kInt16;
    case 4: return DType::kInt32;
    case 5: return DType::kInt64;
    case 6: return DType::kFloat16;
    case 7: return DType::kFloat32;
    case 8: return DType::kFloat64;
    case 10: return DType::kComplex64;
    case 12: return DType::kBool;
    case 13: return DType::kBFloat16;
    case 28: return DType::kUInt16;
    default: return std::nullopt;  // complex half/double, float8 kinds
  }
}

std::optional<int64_t> LayoutFromSerialized(int64_t code) {
  if (code == 7) return 0;  // Strided -> c10 kStrided
  return std::nullopt;      // sparse and mkldnn layouts
}

std::optional<int64_t> MemoryFormatFromSerialized(int64_t code) {
  switch (code) {
    case 1: return 0;  // contiguous_format
    case 2: return 2;  // channels_last
    case 3: return 3;  // channels_last_3d
    case 4: return 1;  // preserve_format
    default: return std::nullopt;
  }
}

namespace {

// Subgraphs of higher-order ops nest; so may a hostile file.
constexpr int kMaxGraphDepth = 16;

class ProgramParser {
 public:
  absl::StatusOr<SymSize> ParseSymInt(const JsonView& v) {
    ASSIGN_OR_RETURN(auto u, v.Union());
    SymSize s;
    if (u.first == "as_int") {
      ASSIGN_OR_RETURN(int64_t i, u.second.Int());
      s.value = i;
      return s;
    }
    if (u.first != "as_expr") return v.Error(absl::StrCat("unknown SymInt kind '", u.first, "'"));
    ASSIGN_OR_RETURN(JsonView text, u.second.Field("expr_str"));
    ASSIGN_OR_RETURN(std::string expr_str, text.String());
    auto cached = exprs_.find(expr_str);
    if (cached == exprs_.end()) {
      absl::StatusOr<SymExpr> e = SymExpr::Parse(expr_str);
      if (!e.ok()) return text.Error(e.status().message());
      cached = exprs_.emplace(expr_str, *std::move(e)).first;
    }
    s.expr = cached->second;
    s.value = cached->second.AsConstant();
    ASSIGN_OR_RETURN(std::optional<JsonView> hint, u.second.OptionalField("hint"));
    if (hint) {
      ASSIGN_OR_RETURN(auto h, hint->Union());
      if (h.first == "as_int") {
        ASSIGN_OR_RETURN(int64_t i, h.second.Int());
        s.hint = i;
      }
    }
    return s;
  }

  absl::StatusOr<std::vector<SymSize>> ParseSymInts(const JsonView& v) {
    ASSIGN_OR_RETURN(std::vector<JsonView> items, v.Array());
    std::vector<SymSize> out;
    out.reserve(items.size());
    for (const JsonView& i : items) {
      ASSIGN_OR_RETURN(SymSize s, ParseSymInt(i));
      out.push_back(std::move(s));
    }
    return out;
  }

  absl::StatusOr<ir::Device> ParseDevice(const JsonView& v) {
    ir::Device d;
    ASSIGN_OR_RETURN(JsonView type, v.Field("type"));
    ASSIGN_OR_RETURN(d.type, type.String());
    if (d.type.empty() || d.type.size() > 32) return type.Error("bad device type");
    ASSIGN_OR_RETURN(std::optional<JsonView> index, v.OptionalField("index"));
    if (index) {
      ASSIGN_OR_RETURN(d.index, index->Int());
      if (d.index < 0) return index->Error("negative device index");
    }
    return d;
  }

  absl::StatusOr<TensorMeta> ParseTensorMeta(const JsonView& v) {
    TensorMeta m;
    ASSIGN_OR_RETURN(JsonView dtype, v.Field("dtype"));
    ASSIGN_OR_RETURN(int64_t code, dtype.Int());
    std::optional<DType> d = DTypeFromSerialized(code);
    if (!d) return dtype.Error(absl::StrCat("unsupported dtype (ScalarType ", code, ")"));
    m.dtype = *d;
    ASSIGN_OR_RETURN(JsonView sizes, v.Field("sizes"));
    ASSIGN_OR_RETURN(m.sizes, ParseSymInts(sizes));
    ASSIGN_OR_RETURN(JsonView strides, v.Field("strides"));
    ASSIGN_OR_RETURN(m.strides, ParseSymInts(strides));
    if (m.strides.size() != m.sizes.size()) {
      return strides.Error(absl::StrCat(m.strides.size(), " strides for ", m.sizes.size(), " sizes"));
    }
    for (size_t i = 0; i < m.sizes.size(); ++i) {
      if (m.sizes[i].value && *m.sizes[i].value < 0) {
        return sizes.Error(absl::StrCat("negative size ", *m.sizes[i].value));
      }
    }
    ASSIGN_OR_RETURN(std::optional<JsonView> offset, v.OptionalField("storage_offset"));
    if (offset) {
      ASSIGN_OR_RETURN(m.storage_offset, ParseSymInt(*offset));
    } else {
      m.storage_offset.value = 0;
    }
    ASSIGN_OR_RETURN(std::optional<JsonView> device, v.OptionalField("device"));
    if (device) {
      ASSIGN_OR_RETURN(m.device, ParseDevice(*device));
    }
    ASSIGN_OR_RETURN(std::optional<JsonView> layout, v.OptionalField("layout"));
    if (layout) {
      ASSIGN_OR_RETURN(int64_t l, layout->Int());
      if (!LayoutFromSerialized(l)) {
        return layout->Error(absl::StrCat("unsupported layout ", l, " (only strided tensors)"));
      }
    }
    return m;
  }

  // A `{"name": ...}` object (TensorArgument and friends).
  static absl::StatusOr<std::string> NameOf(const JsonView& v) {
    ASSIGN_OR_RETURN(JsonView n, v.Field("name"));
    return n.String();
  }

  // SymIntArgument / SymFloatArgument / SymBoolArgument: a name or a value.
  static absl::StatusOr<Argument> ParseSymArgument(const JsonView& v, Argument::Kind named) {
    ASSIGN_OR_RETURN(auto u, v.Union());
    Argument a;
    a.path = v.path();
    if (u.first == "as_name") {
      a.kind = named;
      ASSIGN_OR_RETURN(a.name, u.second.String());
    } else if (u.first == "as_int") {
      a.kind = Argument::Kind::kInt;
      ASSIGN_OR_RETURN(a.int_value, u.second.Int());
    } else if (u.first == "as_float") {
      a.kind = Argument::Kind::kFloat;
      ASSIGN_OR_RETURN(a.float_value, u.second.Double());
    } else if (u.first == "as_bool") {
      a.kind = Argument::Kind::kBool;
      ASSIGN_OR_RETURN(a.bool_value, u.second.Bool());
    } else {
      return v.Error(absl::StrCat("unknown symbolic argument kind '", u.first, "'"));
    }
    return a;
  }

  absl::StatusOr<Argument> ParseArgument(const JsonView& v, int depth) {
    ASSIGN_OR_RETURN(auto u, v.Union());
    const std::string& key = u.first;
    const JsonView& x = u.second;
    Argument a;
    a.path = v.path();
    using K = Argument::Kind;
    auto list = [&](auto element) -> absl::StatusOr<Argument> {
      ASSIGN_OR_RETURN(std::vector<JsonView> items, x.Array());
      a.kind = K::kList;
      a.list_kind = key;
      for (const JsonView& i : items) {
        ASSIGN_OR_RETURN(Argument e, element(i));
        a.elements.push_back(std::move(e));
      }
      return a;
    };
    auto scalar = [&](K kind, const JsonView& item) -> absl::StatusOr<Argument> {
      Argument e;
      e.kind = kind;
      e.path = item.path();
      if (kind == K::kInt) {
        ASSIGN_OR_RETURN(e.int_value, item.Int());
      } else if (kind == K::kFloat) {
        ASSIGN_OR_RETURN(e.float_value, item.Double());
      } else if (kind == K::kBool) {
        ASSIGN_OR_RETURN(e.bool_value, item.Bool());
      } else if (kind == K::kString) {
        ASSIGN_OR_RETURN(e.name, item.String());
      } else if (kind == K::kTensor) {
        ASSIGN_OR_RETURN(e.name, NameOf(item));
      }
      return e;
    };
    if (key == "as_none") {
      a.kind = K::kNone;
      return a;
    }
    if (key == "as_tensor") return scalar(K::kTensor, x);
    if (key == "as_int") return scalar(K::kInt, x);
    if (key == "as_float") return scalar(K::kFloat, x);
    if (key == "as_bool") return scalar(K::kBool, x);
    if (key == "as_string") return scalar(K::kString, x);
    if (key == "as_tensors") return list([&](const JsonView& i) { return scalar(K::kTensor, i); });
    if (key == "as_ints") return list([&](const JsonView& i) { return scalar(K::kInt, i); });
    if (key == "as_floats") return list([&](const JsonView& i) { return scalar(K::kFloat, i); });
    if (key == "as_bools") return list([&](const JsonView& i) { return scalar(K::kBool, i); });
    if (key == "as_strings") return list([&](const JsonView& i) { return scalar(K::kString, i); });
    if (key == "as_sym_int") return ParseSymArgument(x, K::kSymInt);
    if (key == "as_sym_float") return ParseSymArgument(x, K::kSymFloat);
    if (key == "as_sym_bool") return ParseSymArgument(x, K::kSymBool);
    if (key == "as_sym_ints") {
      return list([&](const JsonView& i) { return ParseSymArgument(i, K::kSymInt); });
    }
    if (key == "as_sym_floats") {
      return list([&](const JsonView& i) { return ParseSymArgument(i, K::kSymFloat); });
    }
    if (key == "as_sym_bools") {
      return list([&](const JsonView& i) { return ParseSymArgument(i, K::kSymBool); });
    }
    if (key == "as_optional_tensor" || key == "as_optional_tensors") {
      auto optional = [&](const JsonView& i) -> absl::StatusOr<Argument> {
        ASSIGN_OR_RETURN(auto o, i.Union());
        if (o.first == "as_none") {
          Argument e;
          e.kind = K::kNone;
          e.path = i.path();
          return e;
        }
        if (o.first == "as_tensor") return scalar(K::kTensor, o.second);
        return i.Error(absl::StrCat("unknown optional tensor kind '", o.first, "'"));
      };
      if (key == "as_optional_tensor") return optional(x);
      return list(optional);
    }
    if (key == "as_scalar_type") {
      ASSIGN_OR_RETURN(int64_t code, x.Int());
      std::optional<DType> d = DTypeFromSerialized(code);
      if (!d) return x.Error(absl::StrCat("unsupported dtype (ScalarType ", code, ")"));
      a.kind = K::kScalarType;
      a.int_value = DTypeCode(*d);
      return a;
    }
    if (key == "as_layout") {
      ASSIGN_OR_RETURN(int64_t code, x.Int());
      std::optional<int64_t> l = LayoutFromSerialized(code);
      if (!l) return x.Error(absl::StrCat("unsupported layout ", code, " (only strided tensors)"));
      a.kind = K::kLayout;
      a.int_value = *l;
      return a;
    }
    if (key == "as_memory_format") {
      ASSIGN_OR_RETURN(int64_t code, x.Int());
      std::optional<int64_t> f = MemoryFormatFromSerialized(code);
      if (!f) return x.Error(absl::StrCat("unknown memory format ", code));
      a.kind = K::kMemoryFormat;
      a.int_value = *f;
      return a;
    }
    if (key == "as_device") {
      a.kind = K::kDevice;
      ASSIGN_OR_RETURN(a.device, ParseDevice(x));
      return a;
    }
    if (key == "as_graph") {
      if (depth >= kMaxGraphDepth) return x.Error("subgraphs nested too deeply");
      a.kind = K::kGraph;
      ASSIGN_OR_RETURN(a.name, NameOf(x));
      ASSIGN_OR_RETURN(JsonView g, x.Field("graph"));
      ASSIGN_OR_RETURN(Graph graph, ParseGraph(g, depth + 1));
      a.graph = std::make_shared<const Graph>(std::move(graph));
      return a;
    }
    if (key == "as_custom_obj") {
      a.kind = K::kCustomObj;
      ASSIGN_OR_RETURN(a.name, NameOf(x));
      return a;
    }
    if (key == "as_operator") {
      a.kind = K::kOperator;
      ASSIGN_OR_RETURN(a.name, x.String());
      return a;
    }
    return v.Error(absl::StrCat("unsupported argument kind '", key, "'"));
  }

  absl::StatusOr<Node> ParseNode(const JsonView& v, int depth) {
    Node n;
    n.path = v.path();
    ASSIGN_OR_RETURN(JsonView target, v.Field("target"));
    ASSIGN_OR_RETURN(n.target, target.String());
    ASSIGN_OR_RETURN(std::optional<JsonView> name, v.OptionalField("name"));
    if (name) {
      ASSIGN_OR_RETURN(n.name, name->String());
    }
    ASSIGN_OR_RETURN(JsonView inputs, v.Field("inputs"));
    ASSIGN_OR_RETURN(std::vector<JsonView> ins, inputs.Array());
    for (const JsonView& i : ins) {
      NamedArgument na;
      ASSIGN_OR_RETURN(JsonView arg_name, i.Field("name"));
      ASSIGN_OR_RETURN(na.name, arg_name.String());
      ASSIGN_OR_RETURN(JsonView arg, i.Field("arg"));
      ASSIGN_OR_RETURN(na.arg, ParseArgument(arg, depth));
      ASSIGN_OR_RETURN(std::optional<JsonView> kind, i.OptionalField("kind"));
      if (kind) {
        ASSIGN_OR_RETURN(int64_t k, kind->Int());
        na.keyword = k == 2;
      }
      n.inputs.push_back(std::move(na));
    }
    ASSIGN_OR_RETURN(JsonView outputs, v.Field("outputs"));
    ASSIGN_OR_RETURN(std::vector<JsonView> outs, outputs.Array());
    for (const JsonView& o : outs) {
      ASSIGN_OR_RETURN(Argument a, ParseArgument(o, depth));
      n.outputs.push_back(std::move(a));
    }
    return n;
  }

  absl::StatusOr<Graph> ParseGraph(const JsonView& v, int depth) {
    Graph g;
    ASSIGN_OR_RETURN(JsonView inputs, v.Field("inputs"));
    ASSIGN_OR_RETURN(std::vector<JsonView> ins, inputs.Array());
    for (const JsonView& i : ins) {
      ASSIGN_OR_RETURN(Argument a, ParseArgument(i, depth));
      g.inputs.push_back(std::move(a));
    }
    ASSIGN_OR_RETURN(JsonView outputs, v.Field("outputs"));
    ASSIGN_OR_RETURN(std::vector<JsonView> outs, outputs.Array());
    for (const JsonView& o : outs) {
      ASSIGN_OR_RETURN(Argument a, ParseArgument(o, depth));
      g.outputs.push_back(std::move(a));
    }
    ASSIGN_OR_RETURN(JsonView nodes, v.Field("nodes"));
    ASSIGN_OR_RETURN(std::vector<JsonView> ns, nodes.Array());
    g.nodes.reserve(ns.size());
    for (const JsonView& n : ns) {
      ASSIGN_OR_RETURN(Node node, ParseNode(n, depth));
      g.nodes.push_back(std::move(node));
    }
    ASSIGN_OR_RETURN(JsonView tensors, v.Field("tensor_values"));
    ASSIGN_OR_RETURN(auto members, tensors.Members());
    for (const auto& [name, meta] : members) {
      ASSIGN_OR_RETURN(TensorMeta m, ParseTensorMeta(meta));
      g.tensor_values.emplace(name, std::move(m));
    }
    ASSIGN_OR_RETURN(std::optional<JsonView> sym_ints, v.OptionalField("sym_int_values"));
    if (sym_ints) {
      ASSIGN_OR_RETURN(auto syms, sym_ints->Members());
      for (const auto& [name, value] : syms) {
        ASSIGN_OR_RETURN(SymSize s, ParseSymInt(value));
        g.sym_int_values.emplace(name, std::move(s));
      }
    }
    ASSIGN_OR_RETURN(std::optional<JsonView> single, v.OptionalField("is_single_tensor_return"));
    if (single) {
      ASSIGN_OR_RETURN(g.is_single_tensor_return, single->Bool());
    }
    return g;
  }

  absl::StatusOr<InputSpec> ParseInputSpec(const JsonView& v) {
    ASSIGN_OR_RETURN(auto u, v.Union());
    InputSpec s;
    using K = InputSpec::Kind;
    const std::string& key = u.first;
    const JsonView& x = u.second;
    auto tensor_arg = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(JsonView arg, x.Field("arg"));
      s.arg.kind = Argument::Kind::kTensor;
      s.arg.path = arg.path();
      ASSIGN_OR_RETURN(s.arg.name, NameOf(arg));
      return absl::OkStatus();
    };
    auto target = [&](absl::string_view field) -> absl::Status {
      ASSIGN_OR_RETURN(JsonView t, x.Field(field));
      ASSIGN_OR_RETURN(s.target, t.String());
      return absl::OkStatus();
    };
    if (key == "user_input") {
      s.kind = K::kUserInput;
      ASSIGN_OR_RETURN(JsonView arg, x.Field("arg"));
      ASSIGN_OR_RETURN(s.arg, ParseArgument(arg, 0));
    } else if (key == "parameter") {
      s.kind = K::kParameter;
      RETURN_IF_ERROR(tensor_arg());
      RETURN_IF_ERROR(target("parameter_name"));
    } else if (key == "buffer") {
      s.kind = K::kBuffer;
      RETURN_IF_ERROR(tensor_arg());
      RETURN_IF_ERROR(target("buffer_name"));
    } else if (key == "tensor_constant") {
      s.kind = K::kTensorConstant;
      RETURN_IF_ERROR(tensor_arg());
      RETURN_IF_ERROR(target("tensor_constant_name"));
    } else if (key == "custom_obj") {
      s.kind = K::kCustomObj;
      ASSIGN_OR_RETURN(JsonView arg, x.Field("arg"));
      s.arg.kind = Argument::Kind::kCustomObj;
      ASSIGN_OR_RETURN(s.arg.name, NameOf(arg));
      RETURN_IF_ERROR(target("custom_obj_name"));
    } else if (key == "token") {
      s.kind = K::kToken;
      ASSIGN_OR_RETURN(JsonView arg, x.Field("arg"));
      ASSIGN_OR_RETURN(s.arg.name, NameOf(arg));
    } else if (key == "constant_input") {
      s.kind = K::kConstantInput;
      ASSIGN_OR_RETURN(JsonView name, x.Field("name"));
      ASSIGN_OR_RETURN(s.arg.name, name.String());
      ASSIGN_OR_RETURN(JsonView value, x.Field("value"));
      ASSIGN_OR_RETURN(s.constant, ParseArgument(value, 0));  // as_none/as_int/...
    } else {
      return v.Error(absl::StrCat("unknown input spec kind '", key, "'"));
    }
    return s;
  }

  absl::StatusOr<OutputSpec> ParseOutputSpec(const JsonView& v) {
    ASSIGN_OR_RETURN(auto u, v.Union());
    OutputSpec s;
    using K = OutputSpec::Kind;
    static const std::pair<const char*, std::pair<K, const char*>> kKinds[] = {
        {"user_output", {K::kUserOutput, nullptr}},
        {"loss_output", {K::kLossOutput, nullptr}},
        {"buffer_mutation", {K::kBufferMutation, "buffer_name"}},
        {"gradient_to_parameter", {K::kGradientToParameter, "parameter_name"}},
        {"gradient_to_user_input", {K::kGradientToUserInput, "user_input_name"}},
        {"user_input_mutation", {K::kUserInputMutation, "user_input_name"}},
        {"token", {K::kToken, nullptr}},
        {"parameter_mutation", {K::kParameterMutation, "parameter_name"}},
    };
    for (const auto& [key, kind] : kKinds) {
      if (u.first != key) continue;
      s.kind = kind.first;
      ASSIGN_OR_RETURN(JsonView arg, u.second.Field("arg"));
      if (s.kind == K::kUserOutput) {
        ASSIGN_OR_RETURN(s.arg, ParseArgument(arg, 0));
      } else {
        s.arg.kind = Argument::Kind::kTensor;
        s.arg.path = arg.path();
        ASSIGN_OR_RETURN(s.arg.name, NameOf(arg));
      }
      if (kind.second != nullptr) {
        ASSIGN_OR_RETURN(JsonView t, u.second.Field(kind.second));
        ASSIGN_OR_RETURN(s.target, t.String());
      }
      return s;
    }
    return v.Error(absl::StrCat("unknown output spec kind '", u.first, "'"));
  }

  absl::StatusOr<std::optional<int64_t>> Bound(const JsonView& parent, absl::string_view key) {
    ASSIGN_OR_RETURN(std::optional<JsonView> b, parent.OptionalField(key));
    if (!b) return std::optional<int64_t>();
    // Unbounded ranges may be written as integers past int64.
    if (b->json().is_number_unsigned() &&
        b->json().get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return std::optional<int64_t>();
    }
    ASSIGN_OR_RETURN(int64_t v, b->Int());
    return std::optional<int64_t>(v);
  }

  absl::StatusOr<ExportedProgram> ParseProgram(const JsonView& root) {
    ExportedProgram p;
    ASSIGN_OR_RETURN(JsonView version, root.Field("schema_version"));
    ASSIGN_OR_RETURN(JsonView major, version.Field("major"));
    ASSIGN_OR_RETURN(int64_t major_v, major.Int());
    ASSIGN_OR_RETURN(JsonView minor, version.Field("minor"));
    ASSIGN_OR_RETURN(int64_t minor_v, minor.Int());
    if (major_v != kSchemaMajorVersion) {
      return major.Error(absl::StrCat("export schema version ", major_v, ".", minor_v,
                                      "; kiln reads version ", kSchemaMajorVersion, ".x"));
    }
    p.schema_major = static_cast<int>(major_v);
    p.schema_minor = static_cast<int>(minor_v);
    ASSIGN_OR_RETURN(std::optional<JsonView> torch_version, root.OptionalField("torch_version"));
    if (torch_version) {
      ASSIGN_OR_RETURN(p.torch_version, torch_version->String());
    }
    ASSIGN_OR_RETURN(std::optional<JsonView> verifiers, root.OptionalField("verifiers"));
    if (verifiers) {
      ASSIGN_OR_RETURN(std::vector<JsonView> vs, verifiers->Array());
      for (const JsonView& v : vs) {
        ASSIGN_OR_RETURN(std::string s, v.String());
        p.verifiers.push_back(std::move(s));
      }
    }
    ASSIGN_OR_RETURN(std::optional<JsonView> ranges, root.OptionalField("range_constraints"));
    if (ranges) {
      ASSIGN_OR_RETURN(auto members, ranges->Members());
      for (const auto& [name, r] : members) {
        RangeConstraint c;
        ASSIGN_OR_RETURN(c.min, Bound(r, "min_val"));
        ASSIGN_OR_RETURN(c.max, Bound(r, "max_val"));
        p.range_constraints[name] = c;
      }
    }
    ASSIGN_OR_RETURN(JsonView module, root.Field("graph_module"));
    ASSIGN_OR_RETURN(JsonView graph, module.Field("graph"));
    ASSIGN_OR_RETURN(p.graph, ParseGraph(graph, 0));
    ASSIGN_OR_RETURN(JsonView signature, module.Field("signature"));
    ASSIGN_OR_RETURN(JsonView input_specs, signature.Field("input_specs"));
    ASSIGN_OR_RETURN(std::vector<JsonView> ins, input_specs.Array());
    for (const JsonView& i : ins) {
      ASSIGN_OR_RETURN(InputSpec s, ParseInputSpec(i));
      p.input_specs.push_back(std::move(s));
    }
    ASSIGN_OR_RETURN(JsonView output_specs, signature.Field("output_specs"));
    ASSIGN_OR_RETURN(std::vector<JsonView> outs, output_specs.Array());
    for (const JsonView& o : outs) {
      ASSIGN_OR_RETURN(OutputSpec s, ParseOutputSpec(o));
      p.output_specs.push_back(std::move(s));
    }
    return p;
  }

  absl::StatusOr<std::map<std::string, PayloadMeta>> ParsePayloads(const JsonView& root) {
    std::map<std::string, PayloadMeta> out;
    ASSIGN_OR_RETURN(JsonView config, root.Field("config"));
    ASSIGN_OR_RETURN(auto members, config.Members());
    for (const auto& [fqn, v] : members) {
      PayloadMeta m;
      ASSIGN_OR_RETURN(JsonView path, v.Field("path_name"));
      ASSIGN_OR_RETURN(m.path_name, path.String());
      ASSIGN_OR_RETURN(std::optional<JsonView> is_param, v.OptionalField("is_param"));
      if (is_param) {
        ASSIGN_OR_RETURN(m.is_param, is_param->Bool());
      }
      ASSIGN_OR_RETURN(std::optional<JsonView> use_pickle, v.OptionalField("use_pickle"));
      if (use_pickle) {
        ASSIGN_OR_RETURN(m.use_pickle, use_pickle->Bool());
      }
      ASSIGN_OR_RETURN(std::optional<JsonView> meta, v.OptionalField("tensor_meta"));
      if (meta) {
        ASSIGN_OR_RETURN(TensorMeta t, ParseTensorMeta(*meta));
        m.tensor_meta = std::move(t);
      }
      out[fqn] = std::move(m);
    }
    return out;
  }

 private:
  absl::flat_hash_map<std::string, SymExpr> exprs_;
};

}  // namespace

absl::StatusOr<ExportedProgram> ParseExportedProgram(absl::string_view json_text,
                                                     absl::string_view origin) {
  ASSIGN_OR_RETURN(Json json, ParseJson(json_text, origin));
  ProgramParser parser;
  return parser.ParseProgram(JsonView::Root(json, origin));
}

absl::StatusOr<std::map<std::string, PayloadMeta>> ParsePayloadConfig(absl::string_view json_text,
                                                                      absl::string_view origin) {
  ASSIGN_OR_RETURN(Json json, ParseJson(json_text, origin));
  ProgramParser parser;
  return parser.ParsePayloads(JsonView::Root(json, origin));
}

}  // namespace kiln::frontend::pt2
