#include "wrapper/python_printer.h"

#include <cmath>
#include <cstdio>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "support/status.h"
#include "wrapper/layout_math.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

constexpr int kMaxValueDepth = 32;

// Python keywords and the module-level names the output defines or imports:
// a buffer or kernel with one of these names would shadow them.
const absl::flat_hash_set<std::string>& ReservedNames() {
  static const auto* names = new absl::flat_hash_set<std::string>{
      "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
      "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
      "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
      "try", "while", "with", "yield", "match", "case", "_",
      // header
      "torch", "math", "random", "os", "tempfile", "inf", "nan", "device", "empty_strided",
      "c_void_p", "c_long", "c_int", "AsyncCompile", "async_compile", "extern_kernels", "aten",
      "inductor_ops", "assert_size_stride", "empty_strided_cpu", "empty_strided_cuda",
      "reinterpret_tensor", "call", "args", "fn", "times", "repeat", "rand_strided",
      "print_performance", "benchmark_compiled_module", "compiled_module_main",
      "_print_debugging_tensor_value_info", "print"};
  return *names;
}

absl::Status CheckName(const std::string& name, absl::string_view role) {
  if (!IsIdentifier(name) || ReservedNames().contains(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " '", name, "' cannot be a Python name (reserved or not an identifier)"));
  }
  return absl::OkStatus();
}

// A Python string literal for arbitrary bytes.
std::string PyStr(absl::string_view s) {
  std::string out = "'";
  for (unsigned char c : s) {
    if (c == '\\' || c == '\'') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      out += absl::StrFormat("\\x%02x", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('\'');
  return out;
}

// A kernel body: a raw triple-quoted string when that is safe, else an
// escaped literal.
std::string PyBlock(absl::string_view body) {
  bool raw_ok = body.find("'''") == absl::string_view::npos;
  for (unsigned char c : body) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) raw_ok = false;
  }
  if (!raw_ok) return PyStr(body);
  return absl::StrCat("r'''\n", body, "\n'''");
}

std::string PyFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = absl::StrFormat("%.17g", v);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string PyTuple(const std::vector<int64_t>& v) {
  if (v.empty()) return "()";
  return absl::StrCat("(", absl::StrJoin(v, ", "), ", )");
}

std::string TorchDType(DType t) {
  switch (t) {
    case DType::kUInt8: return "torch.uint8";
    case DType::kInt8: return "torch.int8";
    case DType::kInt16: return "torch.int16";
    case DType::kInt32: return "torch.int32";
    case DType::kInt64: return "torch.int64";
    case DType::kFloat16: return "torch.float16";
    case DType::kFloat32: return "torch.float32";
    case DType::kFloat64: return "torch.float64";
    case DType::kComplex64: return "torch.complex64";
    case DType::kBool: return "torch.bool";
    case DType::kBFloat16: return "torch.bfloat16";
    case DType::kUInt16: return "torch.uint16";
    case DType::kUInt32: return "torch.uint32";
    case DType::kUInt64: return "torch.uint64";
  }
  return "torch.float32";
}

// cpp_pybinding argument types (Inductor's DTYPE_TO_CPP).
std::string CppPointerType(DType t) {
  switch (t) {
    case DType::kUInt8: return "uint8_t*";
    case DType::kInt8: return "int8_t*";
    case DType::kInt16: return "int16_t*";
    case DType::kInt32: return "int32_t*";
    case DType::kInt64: return "int64_t*";
    case DType::kFloat16: return "at::Half*";
    case DType::kFloat32: return "float*";
    case DType::kFloat64: return "double*";
    case DType::kComplex64: return "c10::complex<float>*";
    case DType::kBool: return "bool*";
    case DType::kBFloat16: return "at::BFloat16*";
    case DType::kUInt16: return "uint16_t*";
    case DType::kUInt32: return "uint32_t*";
    case DType::kUInt64: return "uint64_t*";
  }
  return "void*";
}

std::string TensorLiteral(const Tensor& t) {
  std::vector<std::string> values;
  const int64_t numel = t.numel();
  for (int64_t i = 0; i < numel; ++i) {
    if (t.dtype() == DType::kBool) {
      values.push_back(t.GetInt(i) != 0 ? "True" : "False");
    } else if (IsFloatingPoint(t.dtype())) {
      values.push_back(PyFloat(t.GetDouble(i)));
    } else {
      values.push_back(absl::StrCat(t.GetInt(i)));
    }
  }
  return absl::StrCat("torch.tensor([", absl::StrJoin(values, ", "), "], dtype=",
                      TorchDType(t.dtype()), ").reshape(", PyTuple(t.sizes()), ")");
}

absl::StatusOr<std::string> PyValue(const ir::IValue& v, int depth) {
  if (depth > kMaxValueDepth) {
    return absl::InvalidArgumentError("extern argument nests deeper than 32");
  }
  switch (v.tag()) {
    case ir::IValue::Tag::kNone: return std::string("None");
    case ir::IValue::Tag::kBool: return std::string(v.toBool() ? "True" : "False");
    case ir::IValue::Tag::kInt: return absl::StrCat(v.toInt());
    case ir::IValue::Tag::kDouble: return PyFloat(v.toDouble());
    case ir::IValue::Tag::kString: return PyStr(v.toString());
    case ir::IValue::Tag::kDevice: {
      const ir::Device& d = v.toDevice();
      return d.index < 0 ? absl::StrCat("device(type=", PyStr(d.type), ")")
                         : absl::StrCat("device(type=", PyStr(d.type), ", index=", d.index, ")");
    }
    case ir::IValue::Tag::kTensor: {
      const Tensor& t = v.toTensor();
      if (!t.defined() || !t.has_data() || IsComplex(t.dtype()) || t.numel() > 4096) {
        return absl::InvalidArgumentError("extern tensor argument cannot be printed");
      }
      return TensorLiteral(t);
    }
    case ir::IValue::Tag::kList:
    case ir::IValue::Tag::kTuple: {
      std::vector<std::string> parts;
      for (const ir::IValue& e : v.elements()) {
        ASSIGN_OR_RETURN(std::string s, PyValue(e, depth + 1));
        parts.push_back(std::move(s));
      }
      if (v.isList()) return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
      if (parts.empty()) return std::string("()");
      return absl::StrCat("(", absl::StrJoin(parts, ", "), ", )");
    }
  }
  return absl::InvalidArgumentError("unknown extern argument kind");
}

absl::StatusOr<std::string> PyArgs(const std::vector<lowering::ExternArg>& args) {
  std::vector<std::string> parts;
  for (const lowering::ExternArg& arg : args) {
    if (!arg.buffer.empty()) {
      parts.push_back(arg.buffer);
    } else if (arg.constant.has_value()) {
      ASSIGN_OR_RETURN(std::string s, PyValue(*arg.constant, 0));
      parts.push_back(std::move(s));
    } else {
      parts.push_back("None");
    }
  }
  return absl::StrJoin(parts, ", ");
}

// "aten::mm" -> "extern_kernels.mm" (out=) / "aten.mm.default"; other
// namespaces go through torch.ops.
std::string PyOp(const std::string& op, bool out_variant) {
  const size_t sep = op.find("::");
  const std::string ns = op.substr(0, sep);
  const std::string rest = op.substr(sep + 2);
  const size_t dot = rest.find('.');
  const std::string name = rest.substr(0, dot);
  const std::string overload = dot == std::string::npos ? "default" : rest.substr(dot + 1);
  static const absl::flat_hash_set<std::string> kExternKernels = {"mm", "bmm", "addmm",
                                                                  "baddbmm", "convolution"};
  const std::string module = ns == "aten" ? "aten" : absl::StrCat("torch.ops.", ns);
  if (out_variant) {
    if (ns == "aten" && kExternKernels.contains(name)) return absl::StrCat("extern_kernels.", name);
    return absl::StrCat(module, ".", name);
  }
  return absl::StrCat(module, ".", name, ".", overload);
}

class Printer {
 public:
  Printer(const WrapperProgram& program, const PythonPrinterOptions& options)
      : program_(program), options_(options) {}

  absl::StatusOr<std::string> Print() {
    RETURN_IF_ERROR(ValidateWrapperProgram(program_));
    RETURN_IF_ERROR(CheckNames());
    if (!IsIdentifier(options_.module_name)) {
      return absl::InvalidArgumentError("module_name must be an identifier");
    }
    for (const auto& [name, layout] : program_.layouts) layouts_.emplace(name, &layout);
    WriteHeader();
    WriteKernelsAndConstants();
    RETURN_IF_ERROR(WriteCall());
    if (options_.benchmark_harness) WriteHarness();
    return std::move(out_);
  }

 private:
  absl::Status CheckNames() {
    for (const auto& [name, layout] : program_.layouts) RETURN_IF_ERROR(CheckName(name, "buffer"));
    for (const Line& line : program_.lines) {
      if (const auto* l = std::get_if<KernelDefinitionLine>(&line)) {
        RETURN_IF_ERROR(CheckName(l->kernel_name, "kernel"));
      }
    }
    return absl::OkStatus();
  }

  void Emit(int indent, const std::string& text) {
    out_.append(static_cast<size_t>(indent) * 4, ' ');
    absl::StrAppend(&out_, text, "\n");
  }

  void WriteHeader() {
    Emit(0, absl::StrCat("# Output code generated by kiln (Inductor-style wrapper) for ",
                         options_.module_name));
    Emit(0, "from ctypes import c_void_p, c_long, c_int");
    Emit(0, "import torch");
    Emit(0, "import math");
    Emit(0, "import random");
    Emit(0, "import os");
    Emit(0, "import tempfile");
    Emit(0, "from math import inf, nan");
    Emit(0, "from torch import device, empty_strided");
    Emit(0, "from torch._inductor.async_compile import AsyncCompile");
    Emit(0, "from torch._inductor.select_algorithm import extern_kernels");
    if (options_.debug.level == DebugPrinterLevel::kPrintOnly) {
      Emit(0, "from torch._inductor.codegen.debug_utils import _print_debugging_tensor_value_info");
    }
    Emit(0, "");
    Emit(0, "aten = torch.ops.aten");
    Emit(0, "inductor_ops = torch.ops.inductor");
    Emit(0, "assert_size_stride = torch._C._dynamo.guards.assert_size_stride");
    Emit(0, "empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu");
    Emit(0, "empty_strided_cuda = torch._C._dynamo.guards._empty_strided_cuda");
    Emit(0, "reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor");
    Emit(0, "async_compile = AsyncCompile()");
    Emit(0, "");
    if (!program_.islands.empty()) {
      // Interpreter islands are kiln IR graphs that kiln's interpreter runs;
      // they have no Python form.
      Emit(0, "def kiln_interpret(island, *args):");
      Emit(1, "raise NotImplementedError(f'kiln interpreter island {island} runs in kiln only')");
      for (size_t i = 0; i < program_.islands.size(); ++i) Emit(0, absl::StrCat("island_", i, " = ", i));
      Emit(0, "");
    }
  }

  std::string Allocation(const Layout& layout) const {
    const std::string type = layout.device.substr(0, layout.device.find(':'));
    const bool offset = layout.offset != 0;
    const std::vector<int64_t> sizes =
        offset ? std::vector<int64_t>{StorageBytesOrZero(layout) / std::max<int64_t>(1, static_cast<int64_t>(DTypeSize(layout.dtype)))}
               : layout.sizes;
    const std::vector<int64_t> strides = offset ? std::vector<int64_t>{1} : layout.strides;
    std::string alloc;
    if (type == "cpu" || type == "cuda") {
      alloc = absl::StrCat("empty_strided_", type, "(", PyTuple(sizes), ", ", PyTuple(strides), ", ",
                           TorchDType(layout.dtype), ")");
    } else {
      alloc = absl::StrCat("empty_strided(", PyTuple(sizes), ", ", PyTuple(strides),
                           ", device=", PyStr(layout.device), ", dtype=", TorchDType(layout.dtype), ")");
    }
    if (offset) {
      absl::StrAppend(&alloc, ".as_strided(", PyTuple(layout.sizes), ", ", PyTuple(layout.strides),
                      ", ", layout.offset, ")");
    }
    return alloc;
  }

  void WriteKernelsAndConstants() {
    // Argument types from each kernel's first call.
    absl::flat_hash_map<std::string, std::vector<std::string>> arg_types;
    for (const Line& line : program_.lines) {
      const auto* call = std::get_if<KernelCallLine>(&line);
      if (call == nullptr || arg_types.contains(call->kernel_name)) continue;
      std::vector<std::string>& types = arg_types[call->kernel_name];
      for (const std::string& arg : call->args) {
        types.push_back(PyStr(CppPointerType(layouts_.at(arg)->dtype)));
      }
    }
    for (const Line& line : program_.lines) {
      const auto* def = std::get_if<KernelDefinitionLine>(&line);
      if (def == nullptr) continue;
      Emit(0, "");
      Emit(0, absl::StrCat(def->kernel_name, " = async_compile.cpp_pybinding([",
                           absl::StrJoin(arg_types[def->kernel_name], ", "), "], ",
                           PyBlock(def->kernel_body), ")"));
    }
    if (!program_.constants.empty()) Emit(0, "");
    for (const auto& [name, tensor] : program_.constants) {
      if (tensor.numel() <= options_.max_inline_constant_elements && !IsComplex(tensor.dtype())) {
        Emit(0, absl::StrCat(name, " = ", TensorLiteral(tensor)));
      } else {
        Emit(0, absl::StrCat(name, " = ", Allocation(*layouts_.at(name)), "  # constant with ",
                             tensor.numel(), " elements: values not printed"));
      }
    }
    Emit(0, "");
    Emit(0, "async_compile.wait(globals())");
    Emit(0, "del async_compile");
    Emit(0, "");
  }

  void EmitHooks(int indent, const std::vector<DebugHook>& hooks, DebugPhase phase) {
    for (const DebugHook& hook : hooks) {
      if (hook.phase != phase) continue;
      switch (hook.action) {
        case DebugAction::kPrintKernelName:
          Emit(indent, absl::StrCat("print(", PyStr(hook.message), ")"));
          break;
        case DebugAction::kPrintTensorStats:
          Emit(indent, absl::StrCat("_print_debugging_tensor_value_info(", PyStr(hook.message), ", ",
                                    hook.arg, ")"));
          break;
        case DebugAction::kSaveTensor:
          Emit(indent, absl::StrCat("torch.save(", hook.arg, ", ", PyStr(hook.save_path), ")"));
          break;
      }
    }
  }

  absl::Status WriteCall() {
    Emit(0, "def call(args):");
    int indent = 1;
    if (program_.inputs.size() == 1) {
      Emit(indent, absl::StrCat(program_.inputs[0], ", = args"));
    } else if (!program_.inputs.empty()) {
      Emit(indent, absl::StrCat(absl::StrJoin(program_.inputs, ", "), " = args"));
    }
    Emit(indent, "args.clear()");
    if (options_.size_asserts) {
      for (const std::string& in : program_.inputs) {
        const Layout& layout = *layouts_.at(in);
        if (NumelOrZero(layout) == 0) continue;  // as Inductor: zero-size inputs are not checked
        Emit(indent, absl::StrCat("assert_size_stride(", in, ", ", PyTuple(layout.sizes), ", ",
                                  PyTuple(layout.strides), ")"));
      }
    }
    std::vector<bool> block_has_statement;
    for (const Line& line : program_.lines) {
      const std::vector<DebugHook> hooks = DebugHooksForLine(line, options_.debug);
      const size_t before = out_.size();
      EmitHooks(indent, hooks, DebugPhase::kBeforeLaunch);
      ASSIGN_OR_RETURN(bool opened, WriteLine(line, indent));
      EmitHooks(indent, hooks, DebugPhase::kAfterLaunch);
      if (opened) {
        ++indent;
        // The CUDA guard's block already holds its set_device call.
        block_has_statement.push_back(std::get<EnterDeviceContextManagerLine>(line).device == "cuda");
      } else if (std::holds_alternative<ExitDeviceContextManagerLine>(line)) {
        if (!block_has_statement.back()) Emit(indent, "pass");
        block_has_statement.pop_back();
        --indent;
        if (!block_has_statement.empty()) block_has_statement.back() = true;
      } else if (out_.size() != before && !block_has_statement.empty()) {
        block_has_statement.back() = true;
      }
    }
    std::vector<std::string> outputs = program_.outputs;
    Emit(indent, outputs.empty() ? std::string("return ()")
                                 : absl::StrCat("return (", absl::StrJoin(outputs, ", "), ", )"));
    return absl::OkStatus();
  }

  // Writes one line's statements; true when it opened a block.
  absl::StatusOr<bool> WriteLine(const Line& line, int indent) {
    if (const auto* l = std::get_if<AllocateLine>(&line)) {
      Emit(indent, absl::StrCat(l->buffer, " = ", Allocation(l->layout)));
    } else if (const auto* l = std::get_if<FreeIfNotReusedLine>(&line)) {
      if (!l->is_reused) Emit(indent, absl::StrCat("del ", l->buffer));
    } else if (const auto* l = std::get_if<FreeLine>(&line)) {
      Emit(indent, absl::StrCat("del ", l->buffer));
    } else if (const auto* l = std::get_if<ReuseLine>(&line)) {
      const Layout& old = *layouts_.at(l->old_buffer);
      std::string text =
          SameLayout(old, l->layout)
              ? absl::StrCat(l->new_buffer, " = ", l->old_buffer)
              : absl::StrCat(l->new_buffer, " = reinterpret_tensor(", l->old_buffer, ", ",
                             PyTuple(l->layout.sizes), ", ", PyTuple(l->layout.strides), ", ",
                             l->layout.offset - old.offset, ")");
      if (l->delete_old) absl::StrAppend(&text, "; del ", l->old_buffer);
      Emit(indent, absl::StrCat(text, "  # reuse"));
    } else if (const auto* l = std::get_if<ReinterpretLine>(&line)) {
      const Layout& base = *layouts_.at(l->base);
      Emit(indent, absl::StrCat(l->buffer, " = reinterpret_tensor(", l->base, ", ",
                                PyTuple(l->layout.sizes), ", ", PyTuple(l->layout.strides), ", ",
                                l->layout.offset - base.offset, ")  # alias"));
    } else if (const auto* l = std::get_if<KernelCallLine>(&line)) {
      Emit(indent, absl::StrCat(l->kernel_name, "(", absl::StrJoin(l->args, ", "), ")"));
    } else if (const auto* l = std::get_if<ExternKernelLine>(&line)) {
      ASSIGN_OR_RETURN(std::string args, PyArgs(l->args));
      const std::string out = l->outputs.size() == 1
                                  ? l->outputs[0]
                                  : absl::StrCat("(", absl::StrJoin(l->outputs, ", "), ", )");
      Emit(indent, absl::StrCat(PyOp(l->op, /*out_variant=*/true), "(", args,
                                args.empty() ? "" : ", ", "out=", out, ")"));
    } else if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
      ASSIGN_OR_RETURN(std::string args, PyArgs(l->args));
      std::vector<std::string> names;
      for (const std::string& out : l->outputs) names.push_back(out.empty() ? "_" : out);
      std::string lhs = absl::StrJoin(names, ", ");
      if (names.size() == 1 && names[0] == "_") lhs = "_";
      if (l->island >= 0) {
        Emit(indent, absl::StrCat(lhs, " = kiln_interpret(island_", l->island, args.empty() ? "" : ", ",
                                  args, ")"));
      } else {
        Emit(indent, absl::StrCat(lhs, " = ", PyOp(l->op, /*out_variant=*/false), "(", args, ")"));
      }
    } else if (const auto* l = std::get_if<MultiOutputLine>(&line)) {
      std::string text = absl::StrCat(l->result, " = ", l->source);
      for (int64_t index : l->indices) absl::StrAppend(&text, "[", index, "]");
      Emit(indent, text);
    } else if (const auto* l = std::get_if<CommentLine>(&line)) {
      std::string text = l->text;
      for (char& c : text) {
        if (c == '\n' || c == '\r' || static_cast<unsigned char>(c) < 0x20) c = ' ';
      }
      Emit(indent, absl::StrCat("# ", text));
    } else if (const auto* l = std::get_if<EnterDeviceContextManagerLine>(&line)) {
      if (l->device == "cuda") {
        Emit(indent, absl::StrCat("with torch.cuda._DeviceGuard(", l->device_index, "):"));
        Emit(indent + 1, absl::StrCat("torch.cuda.set_device(", l->device_index, ")"));
      } else {
        Emit(indent, absl::StrCat("with torch.device(", PyStr(l->device), ", ", l->device_index,
                                  "):"));
      }
      return true;
    }
    return false;
  }

  void WriteHarness() {
    Emit(0, "");
    Emit(0, "");
    Emit(0, "def benchmark_compiled_module(times=10, repeat=10):");
    Emit(1, "from torch._dynamo.testing import rand_strided");
    Emit(1, "from torch._inductor.utils import print_performance");
    for (const std::string& in : program_.inputs) {
      const Layout& layout = *layouts_.at(in);
      Emit(1, absl::StrCat(in, " = rand_strided(", PyTuple(layout.sizes), ", ",
                           PyTuple(layout.strides), ", device=", PyStr(layout.device),
                           ", dtype=", TorchDType(layout.dtype), ")"));
    }
    Emit(1, absl::StrCat("fn = lambda: call([", absl::StrJoin(program_.inputs, ", "), "])"));
    Emit(1, "return print_performance(fn, times=times, repeat=repeat)");
    Emit(0, "");
    Emit(0, "");
    Emit(0, "if __name__ == \"__main__\":");
    Emit(1, "from torch._inductor.wrapper_benchmark import compiled_module_main");
    Emit(1, absl::StrCat("compiled_module_main(", PyStr(options_.module_name),
                         ", benchmark_compiled_module)"));
  }

  const WrapperProgram& program_;
  const PythonPrinterOptions& options_;
  absl::flat_hash_map<std::string, const Layout*> layouts_;
  std::string out_;
};

}  // namespace

absl::StatusOr<std::string> PrintPythonWrapper(const WrapperProgram& program,
                                               const PythonPrinterOptions& options) {
  return Printer(program, options).Print();
}

}  // namespace kiln::wrapper
