#include "wrapper/proto_convert.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "ir/proto/proto_convert.h"
#include "support/status.h"
#include "wrapper/layout_math.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

absl::Status Bad(const std::string& where, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// ---- save ------------------------------------------------------------------

void LayoutToProto(const Layout& layout, proto::LayoutProto* out) {
  out->set_device(layout.device);
  out->set_dtype(static_cast<int32_t>(DTypeCode(layout.dtype)));
  for (int64_t s : layout.sizes) out->add_sizes(s);
  for (int64_t s : layout.strides) out->add_strides(s);
  out->set_offset(layout.offset);
}

absl::Status TensorToProto(const Tensor& tensor, proto::TensorProto* out) {
  if (!tensor.defined()) {
    out->set_undefined(true);
    return absl::OkStatus();
  }
  if (!tensor.has_data()) return absl::InvalidArgumentError("a tensor without data cannot be saved");
  const Tensor contiguous = tensor.Contiguous();
  out->set_dtype(static_cast<int32_t>(DTypeCode(contiguous.dtype())));
  for (int64_t s : contiguous.sizes()) out->add_sizes(s);
  out->set_raw_data(static_cast<const char*>(contiguous.raw_data()),
                    static_cast<size_t>(contiguous.numel()) * contiguous.element_size());
  return absl::OkStatus();
}

absl::Status ValueToProto(const ir::IValue& v, int depth, proto::ValueProto* out) {
  if (depth > kMaxProtoValueDepth) return absl::InvalidArgumentError("constant nests too deep");
  switch (v.tag()) {
    case ir::IValue::Tag::kNone: out->set_none(true); break;
    case ir::IValue::Tag::kBool: out->set_bool_value(v.toBool()); break;
    case ir::IValue::Tag::kInt: out->set_int_value(v.toInt()); break;
    case ir::IValue::Tag::kDouble: out->set_double_value(v.toDouble()); break;
    case ir::IValue::Tag::kString: out->set_string_value(v.toString()); break;
    case ir::IValue::Tag::kTensor: return TensorToProto(v.toTensor(), out->mutable_tensor());
    case ir::IValue::Tag::kDevice:
      out->mutable_device()->set_type(v.toDevice().type);
      out->mutable_device()->set_index(v.toDevice().index);
      break;
    case ir::IValue::Tag::kList:
    case ir::IValue::Tag::kTuple: {
      proto::ValueList* list = v.isList() ? out->mutable_list() : out->mutable_tuple();
      for (const ir::IValue& e : v.elements()) {
        RETURN_IF_ERROR(ValueToProto(e, depth + 1, list->add_values()));
      }
      break;
    }
  }
  return absl::OkStatus();
}

absl::Status ArgsToProto(const std::vector<lowering::ExternArg>& args,
                         google::protobuf::RepeatedPtrField<proto::ExternArgProto>* out) {
  for (const lowering::ExternArg& arg : args) {
    proto::ExternArgProto* p = out->Add();
    if (!arg.buffer.empty()) {
      p->set_buffer(arg.buffer);
    } else if (arg.is_buffer_list) {
      proto::BufferListProto* list = p->mutable_buffer_list();  // set even when empty
      for (const std::string& b : arg.buffer_list) list->add_buffers(b);
    } else if (arg.constant.has_value()) {
      RETURN_IF_ERROR(ValueToProto(*arg.constant, 0, p->mutable_constant()));
    }
  }
  return absl::OkStatus();
}

absl::Status LineToProto(const Line& line, proto::LineProto* out) {
  return std::visit(
      Overloaded{
          [&](const AllocateLine& l) {
            auto* p = out->mutable_allocate();
            p->set_buffer(l.buffer);
            LayoutToProto(l.layout, p->mutable_layout());
            return absl::OkStatus();
          },
          [&](const FreeIfNotReusedLine& l) {
            auto* p = out->mutable_free_if_not_reused();
            p->set_buffer(l.buffer);
            p->set_is_reused(l.is_reused);
            return absl::OkStatus();
          },
          [&](const ReuseLine& l) {
            auto* p = out->mutable_reuse();
            p->set_old_buffer(l.old_buffer);
            p->set_new_buffer(l.new_buffer);
            LayoutToProto(l.layout, p->mutable_layout());
            p->set_delete_old(l.delete_old);
            return absl::OkStatus();
          },
          [&](const FreeLine& l) {
            out->mutable_free()->set_buffer(l.buffer);
            return absl::OkStatus();
          },
          [&](const ReinterpretLine& l) {
            auto* p = out->mutable_reinterpret();
            p->set_buffer(l.buffer);
            p->set_base(l.base);
            LayoutToProto(l.layout, p->mutable_layout());
            return absl::OkStatus();
          },
          [&](const KernelDefinitionLine& l) {
            auto* p = out->mutable_kernel_definition();
            p->set_kernel_name(l.kernel_name);
            p->set_device(l.device);
            p->set_kernel_body(l.kernel_body);
            return absl::OkStatus();
          },
          [&](const KernelCallLine& l) {
            auto* p = out->mutable_kernel_call();
            p->set_kernel_name(l.kernel_name);
            p->set_device(l.device);
            for (const std::string& a : l.args) p->add_args(a);
            return absl::OkStatus();
          },
          [&](const ExternKernelLine& l) {
            auto* p = out->mutable_extern_kernel();
            if (l.island >= 0) p->set_island(l.island);
            p->set_op(l.op);
            for (const std::string& o : l.outputs) p->add_outputs(o);
            return ArgsToProto(l.args, p->mutable_args());
          },
          [&](const ExternKernelAllocLine& l) {
            auto* p = out->mutable_extern_kernel_alloc();
            if (l.island >= 0) p->set_island(l.island);
            p->set_op(l.op);
            for (const std::string& o : l.outputs) p->add_outputs(o);
            for (const Layout& layout : l.layouts) LayoutToProto(layout, p->add_layouts());
            return ArgsToProto(l.args, p->mutable_args());
          },
          [&](const MultiOutputLine& l) {
            auto* p = out->mutable_multi_output();
            p->set_result(l.result);
            p->set_source(l.source);
            for (int64_t i : l.indices) p->add_indices(i);
            return absl::OkStatus();
          },
          [&](const CommentLine& l) {
            out->mutable_comment()->set_text(l.text);
            return absl::OkStatus();
          },
          [&](const EnterDeviceContextManagerLine& l) {
            auto* p = out->mutable_enter_device_context();
            p->set_device(l.device);
            p->set_device_index(l.device_index);
            return absl::OkStatus();
          },
          [&](const ExitDeviceContextManagerLine&) {
            out->mutable_exit_device_context();
            return absl::OkStatus();
          },
          [&](const NullLine&) {
            out->mutable_null_line();
            return absl::OkStatus();
          },
      },
      line);
}

// ---- load ------------------------------------------------------------------

absl::StatusOr<DType> DTypeFromProto(int32_t code, const std::string& where) {
  std::optional<DType> dtype = DTypeFromCode(code);
  if (!dtype.has_value()) return Bad(where, absl::StrCat("unknown dtype code ", code));
  return *dtype;
}

absl::StatusOr<Layout> LayoutFromProto(const proto::LayoutProto& p, const std::string& where) {
  Layout layout;
  layout.device = p.device();
  ASSIGN_OR_RETURN(layout.dtype, DTypeFromProto(p.dtype(), where));
  layout.sizes.assign(p.sizes().begin(), p.sizes().end());
  layout.strides.assign(p.strides().begin(), p.strides().end());
  layout.offset = p.offset();
  RETURN_IF_ERROR(ValidateLayout(layout, where));
  return layout;
}

absl::StatusOr<Tensor> TensorFromProto(const proto::TensorProto& p, const std::string& where) {
  if (p.undefined()) return Tensor();
  ASSIGN_OR_RETURN(DType dtype, DTypeFromProto(p.dtype(), where));
  if (p.sizes_size() > kMaxLayoutRank) return Bad(where, "tensor rank above 64");
  std::vector<int64_t> sizes(p.sizes().begin(), p.sizes().end());
  int64_t numel = 1;
  for (int64_t s : sizes) {
    if (s < 0) return Bad(where, absl::StrCat("negative tensor size ", s));
    if (__builtin_mul_overflow(numel, s, &numel)) return Bad(where, "tensor size overflows");
  }
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(DTypeSize(dtype)), &nbytes) ||
      static_cast<uint64_t>(nbytes) != p.raw_data().size()) {
    return Bad(where, absl::StrCat("tensor of ", numel, " elements has ", p.raw_data().size(),
                                   " bytes of data"));
  }
  auto tensor = Tensor::FromBytes(dtype, std::move(sizes), p.raw_data().data(), p.raw_data().size());
  if (!tensor.ok()) return Bad(where, std::string(tensor.status().message()));
  return *std::move(tensor);
}

absl::StatusOr<ir::IValue> ValueFromProto(const proto::ValueProto& p, int depth,
                                          const std::string& where) {
  if (depth > kMaxProtoValueDepth) return Bad(where, "constant nests deeper than 32");
  switch (p.value_case()) {
    case proto::ValueProto::kNone:
    case proto::ValueProto::VALUE_NOT_SET: return ir::IValue::None();
    case proto::ValueProto::kBoolValue: return ir::IValue::Bool(p.bool_value());
    case proto::ValueProto::kIntValue: return ir::IValue::Int(p.int_value());
    case proto::ValueProto::kDoubleValue: return ir::IValue::Double(p.double_value());
    case proto::ValueProto::kStringValue: return ir::IValue::String(p.string_value());
    case proto::ValueProto::kTensor: {
      ASSIGN_OR_RETURN(Tensor t, TensorFromProto(p.tensor(), where));
      return ir::IValue::FromTensor(std::move(t));
    }
    case proto::ValueProto::kDevice: {
      ir::Device d;
      d.type = p.device().type();
      d.index = p.device().index();
      if (d.index < -1) return Bad(where, "device index below -1");
      return ir::IValue::FromDevice(std::move(d));
    }
    case proto::ValueProto::kList:
    case proto::ValueProto::kTuple: {
      const bool is_list = p.value_case() == proto::ValueProto::kList;
      const proto::ValueList& list = is_list ? p.list() : p.tuple();
      std::vector<ir::IValue> elems;
      elems.reserve(static_cast<size_t>(list.values_size()));
      for (const proto::ValueProto& e : list.values()) {
        ASSIGN_OR_RETURN(ir::IValue v, ValueFromProto(e, depth + 1, where));
        elems.push_back(std::move(v));
      }
      return is_list ? ir::IValue::List(std::move(elems)) : ir::IValue::Tuple(std::move(elems));
    }
  }
  return Bad(where, "unknown constant kind");
}

absl::StatusOr<std::vector<lowering::ExternArg>> ArgsFromProto(
    const google::protobuf::RepeatedPtrField<proto::ExternArgProto>& args, const std::string& where) {
  std::vector<lowering::ExternArg> out;
  for (const proto::ExternArgProto& p : args) {
    lowering::ExternArg arg;
    arg.buffer = p.buffer();
    if (arg.buffer.empty() && p.has_buffer_list()) {
      arg.is_buffer_list = true;
      arg.buffer_list.assign(p.buffer_list().buffers().begin(), p.buffer_list().buffers().end());
    } else if (arg.buffer.empty() && p.has_constant()) {
      ASSIGN_OR_RETURN(ir::IValue v, ValueFromProto(p.constant(), 0, where));
      arg.constant = std::move(v);
    }
    out.push_back(std::move(arg));
  }
  return out;
}

absl::StatusOr<Line> LineFromProto(const proto::LineProto& p, const std::string& where) {
  switch (p.line_case()) {
    case proto::LineProto::kAllocate: {
      ASSIGN_OR_RETURN(Layout layout, LayoutFromProto(p.allocate().layout(), where));
      return Line(AllocateLine{p.allocate().buffer(), std::move(layout)});
    }
    case proto::LineProto::kFreeIfNotReused:
      return Line(FreeIfNotReusedLine{p.free_if_not_reused().buffer(),
                                      p.free_if_not_reused().is_reused()});
    case proto::LineProto::kReuse: {
      const auto& r = p.reuse();
      ASSIGN_OR_RETURN(Layout layout, LayoutFromProto(r.layout(), where));
      return Line(ReuseLine{r.old_buffer(), r.new_buffer(), std::move(layout), r.delete_old()});
    }
    case proto::LineProto::kFree: return Line(FreeLine{p.free().buffer()});
    case proto::LineProto::kReinterpret: {
      const auto& r = p.reinterpret();
      ASSIGN_OR_RETURN(Layout layout, LayoutFromProto(r.layout(), where));
      return Line(ReinterpretLine{r.buffer(), r.base(), std::move(layout)});
    }
    case proto::LineProto::kKernelDefinition: {
      const auto& d = p.kernel_definition();
      return Line(KernelDefinitionLine{d.kernel_name(), d.device(), d.kernel_body()});
    }
    case proto::LineProto::kKernelCall: {
      const auto& c = p.kernel_call();
      return Line(KernelCallLine{c.kernel_name(), c.device(), {c.args().begin(), c.args().end()}});
    }
    case proto::LineProto::kExternKernel: {
      const auto& e = p.extern_kernel();
      ASSIGN_OR_RETURN(auto args, ArgsFromProto(e.args(), where));
      ExternKernelLine line{e.op(), std::move(args), {e.outputs().begin(), e.outputs().end()}};
      if (e.has_island()) line.island = e.island();  // range checked by the validator
      return Line(std::move(line));
    }
    case proto::LineProto::kExternKernelAlloc: {
      const auto& e = p.extern_kernel_alloc();
      ASSIGN_OR_RETURN(auto args, ArgsFromProto(e.args(), where));
      ExternKernelAllocLine line{e.op(), std::move(args), {e.outputs().begin(), e.outputs().end()}, {}};
      for (const proto::LayoutProto& l : e.layouts()) {
        ASSIGN_OR_RETURN(Layout layout, LayoutFromProto(l, where));
        line.layouts.push_back(std::move(layout));
      }
      if (e.has_island()) line.island = e.island();
      return Line(std::move(line));
    }
    case proto::LineProto::kMultiOutput: {
      const auto& m = p.multi_output();
      return Line(MultiOutputLine{m.result(), m.source(), {m.indices().begin(), m.indices().end()}});
    }
    case proto::LineProto::kComment: return Line(CommentLine{p.comment().text()});
    case proto::LineProto::kEnterDeviceContext:
      return Line(EnterDeviceContextManagerLine{p.enter_device_context().device(),
                                                p.enter_device_context().device_index()});
    case proto::LineProto::kExitDeviceContext: return Line(ExitDeviceContextManagerLine{});
    case proto::LineProto::kNullLine: return Line(NullLine{});
    case proto::LineProto::LINE_NOT_SET: break;
  }
  return Bad(where, "line has no kind");
}

// `constant_data` false: the constants' names only (the program cache
// stores their bytes apart; copying them into the proto first cost 0.6 s
// for a BERT-base program).
absl::StatusOr<proto::WrapperProgramProto> ToProtoImpl(const WrapperProgram& program, bool constant_data) {
  proto::WrapperProgramProto out;
  out.set_format_version(kWrapperProtoVersion);
  for (size_t i = 0; i < program.islands.size(); ++i) {
    if (program.islands[i] == nullptr) return absl::InvalidArgumentError(absl::StrCat("island ", i, " is null"));
    RETURN_IF_ERROR(ir::ToProto(*program.islands[i], out.add_islands()));
  }
  if (program.interpreted_graph) {
    RETURN_IF_ERROR(ir::ToProto(*program.interpreted_graph, out.mutable_interpreted_graph()));
  }
  for (const std::string& in : program.inputs) out.add_inputs(in);
  for (const std::string& o : program.outputs) out.add_outputs(o);
  for (const auto& [name, layout] : program.layouts) {
    auto* p = out.add_layouts();
    p->set_name(name);
    LayoutToProto(layout, p->mutable_layout());
  }
  for (const auto& [name, tensor] : program.constants) {
    auto* p = out.add_constants();
    p->set_name(name);
    if (constant_data) RETURN_IF_ERROR(TensorToProto(tensor, p->mutable_tensor()));
  }
  for (const Line& line : program.lines) RETURN_IF_ERROR(LineToProto(line, out.add_lines()));
  return out;
}

}  // namespace

absl::StatusOr<proto::WrapperProgramProto> WrapperToProto(const WrapperProgram& program) {
  return ToProtoImpl(program, /*constant_data=*/true);
}

namespace {

// `external`: where constants without a tensor in the proto come from (null:
// every constant must carry its tensor).
absl::StatusOr<WrapperProgram> FromProto(const proto::WrapperProgramProto& p,
                                         const std::map<std::string, Tensor>* external) {
  if (p.format_version() < 1 || p.format_version() > kWrapperProtoVersion) {
    return absl::InvalidArgumentError(absl::StrCat("wrapper proto format_version ",
                                                   p.format_version(), ": expected 1 to ",
                                                   kWrapperProtoVersion));
  }
  WrapperProgram program;
  program.inputs.assign(p.inputs().begin(), p.inputs().end());
  program.outputs.assign(p.outputs().begin(), p.outputs().end());
  for (int i = 0; i < p.layouts_size(); ++i) {
    const auto& named = p.layouts(i);
    ASSIGN_OR_RETURN(Layout layout,
                     LayoutFromProto(named.layout(), absl::StrCat("layouts[", i, "] '", named.name(), "'")));
    program.layouts.emplace_back(named.name(), std::move(layout));
  }
  for (int i = 0; i < p.constants_size(); ++i) {
    const auto& named = p.constants(i);
    if (external != nullptr && !named.has_tensor()) {
      auto it = external->find(named.name());
      if (it == external->end()) {
        return Bad(absl::StrCat("constants[", i, "] '", named.name(), "'"),
                   "no data in the program and none supplied");
      }
      program.constants.emplace_back(named.name(), it->second);
      continue;
    }
    ASSIGN_OR_RETURN(Tensor tensor, TensorFromProto(named.tensor(), absl::StrCat("constants[", i, "]")));
    program.constants.emplace_back(named.name(), std::move(tensor));
  }
  if (p.format_version() < 2 && (p.islands_size() > 0 || p.has_interpreted_graph())) {
    return absl::InvalidArgumentError("wrapper proto format_version 1 cannot hold islands");
  }
  for (int i = 0; i < p.islands_size(); ++i) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> island = ir::FromProto(p.islands(i));
    if (!island.ok()) return Bad(absl::StrCat("islands[", i, "]"), std::string(island.status().message()));
    program.islands.push_back(std::shared_ptr<const ir::Graph>(std::move(*island)));
  }
  if (p.has_interpreted_graph()) {
    absl::StatusOr<std::unique_ptr<ir::Graph>> whole = ir::FromProto(p.interpreted_graph());
    if (!whole.ok()) return Bad("interpreted_graph", std::string(whole.status().message()));
    program.interpreted_graph = std::shared_ptr<const ir::Graph>(std::move(*whole));
  }
  program.lines.reserve(static_cast<size_t>(p.lines_size()));
  for (int i = 0; i < p.lines_size(); ++i) {
    ASSIGN_OR_RETURN(Line line, LineFromProto(p.lines(i), absl::StrCat("line ", i)));
    program.lines.push_back(std::move(line));
  }
  RETURN_IF_ERROR(ValidateWrapperProgram(program));
  return program;
}

absl::StatusOr<proto::WrapperProgramProto> ParseProgramProto(absl::string_view bytes) {
  proto::WrapperProgramProto p;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("not a wrapper program proto (parse failed)");
  }
  return p;
}

}  // namespace

absl::StatusOr<WrapperProgram> WrapperFromProto(const proto::WrapperProgramProto& p) {
  return FromProto(p, nullptr);
}

absl::StatusOr<std::string> SerializeWrapperProgram(const WrapperProgram& program) {
  ASSIGN_OR_RETURN(proto::WrapperProgramProto p, WrapperToProto(program));
  std::string bytes;
  if (!p.SerializeToString(&bytes)) return absl::InternalError("wrapper proto serialization failed");
  return bytes;
}

absl::StatusOr<WrapperProgram> DeserializeWrapperProgram(absl::string_view bytes) {
  ASSIGN_OR_RETURN(proto::WrapperProgramProto p, ParseProgramProto(bytes));
  return FromProto(p, nullptr);
}

absl::StatusOr<std::string> SerializeWrapperProgramWithoutConstantData(const WrapperProgram& program) {
  ASSIGN_OR_RETURN(proto::WrapperProgramProto p, ToProtoImpl(program, /*constant_data=*/false));
  std::string bytes;
  if (!p.SerializeToString(&bytes)) return absl::InternalError("wrapper proto serialization failed");
  return bytes;
}

absl::StatusOr<WrapperProgram> DeserializeWrapperProgram(absl::string_view bytes,
                                                         const std::map<std::string, Tensor>& constants) {
  ASSIGN_OR_RETURN(proto::WrapperProgramProto p, ParseProgramProto(bytes));
  return FromProto(p, &constants);
}

absl::StatusOr<std::string> WrapperProgramToTextProto(const WrapperProgram& program) {
  ASSIGN_OR_RETURN(proto::WrapperProgramProto p, WrapperToProto(program));
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(p, &text)) {
    return absl::InternalError("wrapper proto text printing failed");
  }
  return text;
}

absl::StatusOr<WrapperProgram> WrapperProgramFromTextProto(absl::string_view text) {
  proto::WrapperProgramProto p;
  if (!google::protobuf::TextFormat::ParseFromString(std::string(text), &p)) {
    return absl::InvalidArgumentError("not a wrapper program text proto (parse failed)");
  }
  return WrapperFromProto(p);
}

}  // namespace kiln::wrapper
