#include "wrapper/python_printer.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "support/status.h"
#include "wrapper/device_op_overrides.h"
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
      "inductor_ops", "assert_size_stride", "reinterpret_tensor", "call", "args", "fn", "times",
      "repeat", "rand_strided", "print_performance", "benchmark_compiled_module",
      "compiled_module_main", "_print_debugging_tensor_value_info", "print",
      // kiln's helpers (below)
      "kiln_interpret", "kiln_unsupported", "kiln_device_kernel", "kiln_load_constant", "kiln_constants_dir",
      "kiln_reduce"};
  return *names;
}

// island_<n> names an interpreter island (WriteHeader).
bool IsIslandName(absl::string_view name) {
  if (!absl::StartsWith(name, "island_") || name.size() == 7) return false;
  for (char c : name.substr(7)) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

absl::Status CheckName(const std::string& name, absl::string_view role,
                       const absl::flat_hash_set<std::string>& device_names) {
  if (!IsIdentifier(name) || ReservedNames().contains(name) || device_names.contains(name) ||
      IsIslandName(name)) {
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

absl::StatusOr<std::string> PyArg(const lowering::ExternArg& arg) {
  if (!arg.buffer.empty()) return arg.buffer;
  if (arg.is_buffer_list) return absl::StrCat("[", absl::StrJoin(arg.buffer_list, ", "), "]");
  if (arg.constant.has_value()) return PyValue(*arg.constant, 0);
  return std::string("None");
}

absl::StatusOr<std::vector<std::string>> PyArgList(const std::vector<lowering::ExternArg>& args) {
  std::vector<std::string> parts;
  for (const lowering::ExternArg& arg : args) {
    ASSIGN_OR_RETURN(std::string s, PyArg(arg));
    parts.push_back(std::move(s));
  }
  return parts;
}

// "aten::conv2d.padding" -> {"aten", "conv2d", "padding"}; the overload is
// "default" when absent. Op names are validated (IsQualifiedOpName).
struct OpName {
  std::string ns, name, overload;
};

OpName SplitOp(const std::string& op) {
  const size_t sep = op.find("::");
  OpName out;
  out.ns = op.substr(0, sep);
  const std::string rest = sep == std::string::npos ? op : op.substr(sep + 2);
  const size_t dot = rest.find('.');
  out.name = rest.substr(0, dot);
  out.overload = dot == std::string::npos ? "default" : rest.substr(dot + 1);
  return out;
}

// kiln ops (not ATen's) that the wrapper defines a PyTorch version of: a
// module-level function with the op's schema, written with torch calls.
struct KilnOpInPython {
  const char* op;
  const char* function;
  const char* definition;
};

constexpr KilnOpInPython kKilnOpsInPython[] = {
    // ONNX Reduce* (runtime/kernels_math.h OnnxReduce); keeps x's dtype.
    {"kiln::reduce", "kiln_reduce", R"PY(def kiln_reduce(x, kind, axes, keepdims, noop_with_empty_axes):
    if not axes and noop_with_empty_axes:
        return x.clone()
    v = x.reshape(1) if x.dim() == 0 else x
    dims = sorted({a % v.dim() for a in axes} if axes else range(v.dim()))
    w = v if v.is_floating_point() else v.double()
    if kind == 'sum': r = w.sum(dims, keepdim=True)
    elif kind == 'mean': r = w.mean(dims, keepdim=True)
    elif kind == 'max': r = w.amax(dims, keepdim=True)
    elif kind == 'min': r = w.amin(dims, keepdim=True)
    elif kind == 'prod':
        r = w
        for d in dims: r = r.prod(d, keepdim=True)
    elif kind == 'l1': r = w.abs().sum(dims, keepdim=True)
    elif kind == 'l2': r = (w * w).sum(dims, keepdim=True).sqrt()
    elif kind == 'log_sum': r = w.sum(dims, keepdim=True).log()
    elif kind == 'log_sum_exp': r = torch.logsumexp(w, dims, keepdim=True)
    elif kind == 'sum_square': r = (w * w).sum(dims, keepdim=True)
    else: raise NotImplementedError(f'kiln::reduce: unknown kind {kind!r}')
    if x.dim() == 0: return r.reshape(()).to(x.dtype)
    if not keepdims: r = r.reshape([n for i, n in enumerate(v.shape) if i not in dims])
    return r.to(x.dtype).contiguous())PY"},
};

const KilnOpInPython* FindKilnOpInPython(const std::string& op) {
  const std::string base = op.substr(0, op.find('.'));
  for (const KilnOpInPython& k : kKilnOpsInPython) {
    if (base == k.op) return &k;
  }
  return nullptr;
}

// The callable of an op that allocates its outputs: ATen (and prims)
// overloads through torch.ops, kiln ops with a Python version above; any
// other op (kiln's own) has no PyTorch equivalent, and calling it raises
// NotImplementedError naming the op.
std::string AllocatingOp(const std::string& op) {
  const OpName n = SplitOp(op);
  if (n.ns == "aten") return absl::StrCat("aten.", n.name, ".", n.overload);
  if (n.ns == "prims") return absl::StrCat("torch.ops.prims.", n.name, ".", n.overload);
  if (const KilnOpInPython* k = FindKilnOpInPython(op)) return k->function;
  return absl::StrCat("kiln_unsupported(", PyStr(op), ")");
}

// What call() runs for an ExternKernelLine (outputs preallocated), in
// Inductor's conventions: mm/bmm/addmm write through extern_kernels' out=
// (torch.mm & co.), matmul through torch.matmul(out=); convolution and
// linear allocate their result (Inductor's extern_kernels.convolution has no
// out variant), which then becomes the buffer; another ATen op uses its
// .out overload; a kiln op (one output) allocates as in AllocatingOp.
enum class ExternForm {
  kMmOut,           // extern_kernels.{mm,bmm}(a, b, out=)
  kAddmmOut,        // extern_kernels.addmm(c, a, b, alpha=, beta=, out=)
  kMatmulOut,       // torch.matmul(a, b, out=)
  kLinear,          // torch.nn.functional.linear(x, w, b)
  kConvNd,          // extern_kernels.convolution(...) / F.convNd (string padding)
  kConvolution,     // extern_kernels.convolution(...) from convolution's own arguments
  kAtenOut,         // aten.<op>.out(..., out=)
  kAllocating,      // AllocatingOp(op)(...)
};

ExternForm ClassifyExtern(const ExternKernelLine& line) {
  const OpName n = SplitOp(line.op);
  const size_t args = line.args.size();
  if (n.ns != "aten") return line.outputs.size() == 1 ? ExternForm::kAllocating : ExternForm::kAtenOut;
  if (line.outputs.size() != 1) return ExternForm::kAtenOut;
  if ((n.name == "mm" || n.name == "bmm") && args == 2) return ExternForm::kMmOut;
  if (n.name == "addmm" && args >= 3 && args <= 5) return ExternForm::kAddmmOut;
  if (n.name == "matmul" && args == 2) return ExternForm::kMatmulOut;
  if (n.name == "linear" && args >= 2 && args <= 3) return ExternForm::kLinear;
  if ((n.name == "conv1d" || n.name == "conv2d" || n.name == "conv3d") && args >= 2 && args <= 7) {
    return ExternForm::kConvNd;
  }
  if ((n.name == "convolution" && args == 9) || (n.name == "_convolution" && args >= 9)) {
    return ExternForm::kConvolution;
  }
  return ExternForm::kAtenOut;
}

// Whether the printed call allocates the output itself (so a preceding
// allocation of it is dropped, as Inductor prints `buf0 =
// extern_kernels.convolution(...)`).
bool ExternAllocatesOutput(const ExternKernelLine& line) {
  switch (ClassifyExtern(line)) {
    case ExternForm::kLinear:
    case ExternForm::kConvNd:
    case ExternForm::kConvolution:
    case ExternForm::kAllocating:
      return true;
    default:
      return false;
  }
}

std::string ArgOr(const std::vector<std::string>& args, size_t i, const std::string& fallback) {
  return i < args.size() ? args[i] : fallback;
}

// output_padding of a convNd: N zeros.
std::string ZeroPadding(int64_t spatial) {
  std::vector<int64_t> zeros(static_cast<size_t>(std::max<int64_t>(spatial, 1)), 0);
  return absl::StrCat("[", absl::StrJoin(zeros, ", "), "]");
}

std::string ConvolutionCall(const std::vector<std::string>& a, const std::string& bias,
                            const std::string& stride, const std::string& padding,
                            const std::string& dilation, const std::string& transposed,
                            const std::string& output_padding, const std::string& groups) {
  return absl::StrCat("extern_kernels.convolution(", a[0], ", ", a[1], ", stride=", stride,
                      ", padding=", padding, ", dilation=", dilation, ", transposed=", transposed,
                      ", output_padding=", output_padding, ", groups=", groups, ", bias=", bias, ")");
}

// The call of `line` (ClassifyExtern says whether it fills the output).
absl::StatusOr<std::string> ExternCall(const ExternKernelLine& line) {
  ASSIGN_OR_RETURN(std::vector<std::string> a, PyArgList(line.args));
  const OpName n = SplitOp(line.op);
  const std::string out = line.outputs.size() == 1 ? line.outputs[0]
                          : line.outputs.empty()    ? std::string("()")
                                                    : absl::StrCat("(", absl::StrJoin(line.outputs, ", "), ", )");
  switch (ClassifyExtern(line)) {
    case ExternForm::kMmOut:
      return absl::StrCat("extern_kernels.", n.name, "(", a[0], ", ", a[1], ", out=", out, ")");
    case ExternForm::kAddmmOut:
      // beta and alpha are keyword-only in torch.addmm.
      return absl::StrCat("extern_kernels.addmm(", a[0], ", ", a[1], ", ", a[2],
                          ", alpha=", ArgOr(a, 4, "1"), ", beta=", ArgOr(a, 3, "1"), ", out=", out, ")");
    case ExternForm::kMatmulOut:
      return absl::StrCat("torch.matmul(", a[0], ", ", a[1], ", out=", out, ")");
    case ExternForm::kLinear:
      return absl::StrCat("torch.nn.functional.linear(", a[0], ", ", a[1], ", ", ArgOr(a, 2, "None"), ")");
    case ExternForm::kConvNd: {
      // (input, weight, bias, stride, padding, dilation, groups)
      const bool string_padding = line.args.size() > 4 && line.args[4].constant.has_value() &&
                                  line.args[4].constant->isString();
      if (string_padding) {  // 'same' / 'valid': only the functional form takes it
        return absl::StrCat("torch.nn.functional.", n.name, "(", absl::StrJoin(a, ", "), ")");
      }
      return ConvolutionCall(a, ArgOr(a, 2, "None"), ArgOr(a, 3, "1"), ArgOr(a, 4, "0"),
                             ArgOr(a, 5, "1"), "False", ZeroPadding(n.name[4] - '0'), ArgOr(a, 6, "1"));
    }
    case ExternForm::kConvolution:
      // (input, weight, bias, stride, padding, dilation, transposed,
      //  output_padding, groups[, _convolution's backend flags])
      return ConvolutionCall(a, a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
    case ExternForm::kAtenOut: {
      const std::string callee =
          n.ns == "aten" ? absl::StrCat("aten.", n.name, ".out") : AllocatingOp(line.op);
      return absl::StrCat(callee, "(", absl::StrJoin(a, ", "), a.empty() ? "" : ", ", "out=", out, ")");
    }
    case ExternForm::kAllocating:
      return absl::StrCat(AllocatingOp(line.op), "(", absl::StrJoin(a, ", "), ")");
  }
  return absl::InternalError("unhandled extern form");
}

// "<index>_<name>.bin" with the name cut to its first 64 [A-Za-z0-9_]
// characters: a plain file name whatever the buffer is called, unique by the
// index, stable across runs.
std::string ConstantFileName(size_t index, const std::string& name) {
  std::string safe;
  for (char c : name) {
    if (safe.size() == 64) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    safe.push_back(ok ? c : '_');
  }
  return absl::StrCat(index, "_", safe, ".bin");
}

absl::Status CheckConstantsDir(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  bool ok = dir.size() <= 64 && dir != "." && dir != "..";
  for (char c : dir) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-' || c == '.');
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        "constants_dir must be a plain folder name ([A-Za-z0-9_.-], not '.' or '..')");
  }
  return absl::OkStatus();
}

// Constants printed as a file load: with a constants folder, every non-empty
// constant too large to print (or complex, which has no literal here).
bool LoadsFromFile(const Tensor& t, const PythonPrinterOptions& options) {
  if (options.constants_dir.empty() || !t.has_data() || t.numel() == 0) return false;
  return t.numel() > options.max_inline_constant_elements || IsComplex(t.dtype());
}

class Printer {
 public:
  Printer(const WrapperProgram& program, const PythonPrinterOptions& options)
      : program_(program), options_(options) {}

  absl::StatusOr<std::string> Print() {
    RETURN_IF_ERROR(ValidateWrapperProgram(program_));
    if (!IsIdentifier(options_.module_name)) {
      return absl::InvalidArgumentError("module_name must be an identifier");
    }
    RETURN_IF_ERROR(CheckConstantsDir(options_.constants_dir));
    for (const auto& [name, layout] : program_.layouts) layouts_.emplace(name, &layout);
    CollectDevices();
    RETURN_IF_ERROR(CheckNames());
    FindReplacedAllocations();
    WriteHeader();
    WriteKernelsAndConstants();
    RETURN_IF_ERROR(WriteCall());
    if (options_.benchmark_harness) WriteHarness();
    return std::move(out_);
  }

 private:
  // The device-op overrides (wrapper/device_op_overrides.h) of every device
  // type the program names, and the module-level names they define.
  void CollectDevices() {
    std::set<std::string> types;
    auto add = [&](const std::string& device) { types.insert(device.substr(0, device.find(':'))); };
    for (const auto& [name, layout] : program_.layouts) add(layout.device);
    for (const Line& line : program_.lines) {
      if (const auto* l = std::get_if<KernelDefinitionLine>(&line)) add(l->device);
      if (const auto* l = std::get_if<KernelCallLine>(&line)) add(l->device);
      if (const auto* l = std::get_if<EnterDeviceContextManagerLine>(&line)) add(l->device);
    }
    for (const std::string& type : types) {
      const DeviceOpOverrides& ops = DeviceOpOverridesOrGeneric(type);
      devices_.push_back(&ops);
      for (const std::string& name : ops.DefinedNames()) device_names_.insert(name);
    }
  }

  // An AllocateLine directly followed by an extern whose printed call
  // allocates that output itself is not printed (Inductor's `buf0 =
  // extern_kernels.convolution(...)`), when the result's layout is what the
  // call returns (contiguous); otherwise the call's result is copied into
  // the allocation.
  void FindReplacedAllocations() {
    // Debug hooks look at an extern's outputs before it runs.
    if (options_.debug.level != DebugPrinterLevel::kOff) return;
    for (size_t i = 0; i + 1 < program_.lines.size(); ++i) {
      const auto* alloc = std::get_if<AllocateLine>(&program_.lines[i]);
      const auto* ext = std::get_if<ExternKernelLine>(&program_.lines[i + 1]);
      if (alloc == nullptr || ext == nullptr || ext->outputs.size() != 1 ||
          ext->outputs[0] != alloc->buffer || !ExternAllocatesOutput(*ext) ||
          !IsContiguousLayout(alloc->layout)) {
        continue;
      }
      replaced_allocations_.insert(alloc->buffer);
    }
  }

  bool AnyConstantFromFile() const {
    for (const auto& [name, tensor] : program_.constants) {
      if (LoadsFromFile(tensor, options_)) return true;
    }
    return false;
  }

  // The extern ops call() runs (islands aside), sorted.
  std::set<std::string> ExternOps() const {
    std::set<std::string> ops;
    for (const Line& line : program_.lines) {
      if (const auto* l = std::get_if<ExternKernelLine>(&line)) ops.insert(l->op);
      if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
        if (l->island < 0) ops.insert(l->op);
      }
    }
    return ops;
  }

  const DeviceOpOverrides& Ops(const std::string& device) const {
    return DeviceOpOverridesOrGeneric(device);
  }

  absl::Status CheckNames() {
    for (const auto& [name, layout] : program_.layouts) {
      RETURN_IF_ERROR(CheckName(name, "buffer", device_names_));
    }
    for (const Line& line : program_.lines) {
      if (const auto* l = std::get_if<KernelDefinitionLine>(&line)) {
        RETURN_IF_ERROR(CheckName(l->kernel_name, "kernel", device_names_));
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
    absl::flat_hash_set<std::string> device_lines;
    for (const DeviceOpOverrides* ops : devices_) {
      for (const std::string& line : ops->HeaderLines()) {
        if (device_lines.insert(line).second) Emit(0, line);
      }
    }
    Emit(0, "reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor");
    Emit(0, "async_compile = AsyncCompile()");
    Emit(0, "");
    bool generic_kernels = false;
    for (const Line& line : program_.lines) {
      const auto* def = std::get_if<KernelDefinitionLine>(&line);
      if (def == nullptr) continue;
      const std::string probe = Ops(def->device).KernelDefinition(def->kernel_name, {}, "''");
      generic_kernels |= probe.find("kiln_device_kernel(") != std::string::npos;
    }
    if (generic_kernels) {
      // DeviceOpOverrides' default KernelDefinition: a device without its
      // own overrides has no way to run its kernels under PyTorch.
      Emit(0, "def kiln_device_kernel(device, arg_types, source):");
      Emit(1, "def run(*args):");
      Emit(2, "raise NotImplementedError(f'kiln kernels for device {device} do not run under PyTorch')");
      Emit(1, "return run");
      Emit(0, "");
    }
    if (!program_.islands.empty()) {
      // Interpreter islands are kiln IR graphs that kiln's interpreter runs;
      // they have no Python form.
      Emit(0, "def kiln_interpret(island, *args):");
      Emit(1, "raise NotImplementedError(f'kiln interpreter island {island} runs in kiln only')");
      for (size_t i = 0; i < program_.islands.size(); ++i) Emit(0, absl::StrCat("island_", i, " = ", i));
      Emit(0, "");
    }
    bool kiln_only = false;
    std::set<std::string> defined;
    for (const std::string& op : ExternOps()) {
      const KilnOpInPython* k = FindKilnOpInPython(op);
      if (k != nullptr && defined.insert(k->function).second) {
        Emit(0, k->definition);
        Emit(0, "");
      }
      kiln_only = kiln_only || absl::StartsWith(AllocatingOp(op), "kiln_unsupported");
    }
    if (kiln_only) {
      // kiln's own ops (not ATen's) have no PyTorch kernel: call() fails
      // where it reaches one, naming it.
      Emit(0, "def kiln_unsupported(op):");
      Emit(1, "def run(*args, **kwargs):");
      Emit(2, "raise NotImplementedError(f'{op} is a kiln operator with no PyTorch equivalent; "
              "run this model with kiln')");
      Emit(1, "return run");
      Emit(0, "");
    }
    if (AnyConstantFromFile()) {
      // Written by `kiln compile` next to this file (raw little-endian
      // elements, row-major).
      Emit(0, absl::StrCat("kiln_constants_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), ",
                           PyStr(options_.constants_dir), ")"));
      Emit(0, "def kiln_load_constant(file_name, numel, dtype):");
      Emit(1, "return torch.from_file(os.path.join(kiln_constants_dir, file_name), shared=False, "
              "size=numel, dtype=dtype)");
      Emit(0, "");
    }
  }

  std::string Allocation(const Layout& layout) const {
    const bool offset = layout.offset != 0;
    const std::vector<int64_t> sizes =
        offset ? std::vector<int64_t>{StorageBytesOrZero(layout) / std::max<int64_t>(1, static_cast<int64_t>(DTypeSize(layout.dtype)))}
               : layout.sizes;
    const std::vector<int64_t> strides = offset ? std::vector<int64_t>{1} : layout.strides;
    std::string alloc = Ops(layout.device).EmptyStrided(PyTuple(sizes), PyTuple(strides),
                                                        TorchDType(layout.dtype), PyStr(layout.device));
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
      Emit(0, Ops(def->device).KernelDefinition(def->kernel_name, arg_types[def->kernel_name],
                                                PyBlock(def->kernel_body)));
    }
    if (!program_.constants.empty()) Emit(0, "");
    for (size_t i = 0; i < program_.constants.size(); ++i) {
      const auto& [name, tensor] = program_.constants[i];
      const Layout& layout = *layouts_.at(name);
      if (LoadsFromFile(tensor, options_)) {
        std::string load = absl::StrCat("kiln_load_constant(", PyStr(ConstantFileName(i, name)), ", ",
                                        tensor.numel(), ", ", TorchDType(tensor.dtype()), ").reshape(",
                                        PyTuple(tensor.sizes()), ")");
        // The file holds the elements in row-major order; a constant laid
        // out otherwise is copied into its layout.
        Emit(0, IsContiguousLayout(layout)
                    ? absl::StrCat(name, " = ", load)
                    : absl::StrCat(name, " = ", Allocation(layout), "; ", name, ".copy_(", load, ")"));
      } else if (tensor.numel() <= options_.max_inline_constant_elements && !IsComplex(tensor.dtype())) {
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
        // A guard's prologue (CUDA's set_device) is already a statement.
        const auto& enter = std::get<EnterDeviceContextManagerLine>(line);
        block_has_statement.push_back(!Ops(enter.device).GuardPrologue(enter.device_index).empty());
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
      if (!replaced_allocations_.contains(l->buffer)) {
        Emit(indent, absl::StrCat(l->buffer, " = ", Allocation(l->layout)));
      }
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
      // kiln kernels take the base of each argument's storage and add the
      // layout's offset themselves; a PyTorch tensor's data pointer is at
      // its storage offset, so a view with an offset goes in as a view of
      // its storage base.
      std::vector<std::string> args;
      for (const std::string& arg : l->args) {
        args.push_back(layouts_.at(arg)->offset == 0 ? arg
                                                     : absl::StrCat(arg, ".as_strided((1, ), (1, ), 0)"));
      }
      Emit(indent, Ops(l->device).KernelLaunch(l->kernel_name, args));
    } else if (const auto* l = std::get_if<ExternKernelLine>(&line)) {
      ASSIGN_OR_RETURN(std::string call, ExternCall(*l));
      if (!ExternAllocatesOutput(*l)) {
        Emit(indent, call);
      } else if (const std::string& out = l->outputs[0]; replaced_allocations_.contains(out)) {
        Emit(indent, absl::StrCat(out, " = ", call));
        const Layout& layout = *layouts_.at(out);
        if (options_.size_asserts) {
          Emit(indent, absl::StrCat("assert_size_stride(", out, ", ", PyTuple(layout.sizes), ", ",
                                    PyTuple(layout.strides), ")"));
        }
      } else {
        Emit(indent, absl::StrCat(out, ".copy_(", call, ")"));
      }
    } else if (const auto* l = std::get_if<ExternKernelAllocLine>(&line)) {
      ASSIGN_OR_RETURN(std::vector<std::string> arg_list, PyArgList(l->args));
      const std::string args = absl::StrJoin(arg_list, ", ");
      std::vector<std::string> names;
      for (const std::string& out : l->outputs) names.push_back(out.empty() ? "_" : out);
      std::string lhs = absl::StrJoin(names, ", ");
      if (names.size() == 1 && names[0] == "_") lhs = "_";
      if (l->island >= 0) {
        Emit(indent, absl::StrCat(lhs, " = kiln_interpret(island_", l->island, args.empty() ? "" : ", ",
                                  args, ")"));
      } else {
        Emit(indent, absl::StrCat(lhs, " = ", AllocatingOp(l->op), "(", args, ")"));
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
      const DeviceOpOverrides& ops = Ops(l->device);
      Emit(indent, absl::StrCat("with ", ops.DeviceGuard(l->device_index), ":"));
      for (const std::string& statement : ops.GuardPrologue(l->device_index)) {
        Emit(indent + 1, statement);
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
  std::vector<const DeviceOpOverrides*> devices_;  // sorted by type
  absl::flat_hash_set<std::string> device_names_;
  absl::flat_hash_set<std::string> replaced_allocations_;  // see FindReplacedAllocations
  std::string out_;
};

}  // namespace

absl::StatusOr<std::string> PrintPythonWrapper(const WrapperProgram& program,
                                               const PythonPrinterOptions& options) {
  return Printer(program, options).Print();
}

absl::StatusOr<std::vector<PythonConstantFile>> PythonWrapperConstantFiles(
    const WrapperProgram& program, const PythonPrinterOptions& options) {
  RETURN_IF_ERROR(CheckConstantsDir(options.constants_dir));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
  if (!options.constants_dir.empty()) {
    return absl::UnimplementedError("constant files are little-endian; this host is not");
  }
#endif
  std::vector<PythonConstantFile> files;
  for (size_t i = 0; i < program.constants.size(); ++i) {
    const auto& [name, tensor] = program.constants[i];
    if (!LoadsFromFile(tensor, options)) continue;
    const Tensor dense = tensor.Contiguous();
    const size_t nbytes = static_cast<size_t>(dense.numel()) * dense.element_size();
    files.push_back(PythonConstantFile{
        name, ConstantFileName(i, name),
        std::string(static_cast<const char*>(dense.raw_data()), nbytes)});
  }
  return files;
}

}  // namespace kiln::wrapper
