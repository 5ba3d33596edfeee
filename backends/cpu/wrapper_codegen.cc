#include "backends/cpu/wrapper_codegen.h"

#include <algorithm>
#include <map>
#include <set>
#include <thread>
#include <type_traits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/attention_codegen.h"
#include "backends/cpu/expr_emitter.h"
#include "backends/cpu/host_api.h"
#include "backends/cpu/identifiers.h"
#include "backends/cpu/kernel_codegen.h"
#include "backends/cpu/layout_util.h"
#include "backends/cpu/prelude.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

using lowering::Layout;
namespace w = wrapper;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

class WrapperEmitter {
 public:
  explicit WrapperEmitter(const w::WrapperProgram& program) : program_(program) {}

  absl::StatusOr<GeneratedProgram> Run() {
    for (const auto& [name, layout] : program_.layouts) {
      RETURN_IF_ERROR(CheckLayout(name, layout));
      if (!layouts_.emplace(name, layout).second) {
        return Error(absl::StrCat("buffer '", SanitizeComment(name), "' has two layouts"));
      }
    }
    RETURN_IF_ERROR(ComputeRoots());
    GeneratedProgram out;
    out.constants_identity = program_.constants_identity;
    std::string kernels;
    std::string body;
    for (size_t i = 0; i < program_.inputs.size(); ++i) {
      ASSIGN_OR_RETURN(const Layout* l, LayoutOf(program_.inputs[i]));
      out.input_layouts.push_back(*l);
      MarkPlain(program_.inputs[i]);
      absl::StrAppend(&body, "  ", ids_.Get(program_.inputs[i]), " = inputs[", i, "];\n");
    }
    for (size_t i = 0; i < program_.constants.size(); ++i) {
      const auto& [name, tensor] = program_.constants[i];
      ASSIGN_OR_RETURN(const Layout* l, LayoutOf(name));
      if (!tensor.has_data()) {
        return Error(absl::StrCat("constant '", SanitizeComment(name), "' has no data"));
      }
      out.constants.push_back(tensor);
      out.constant_layouts.push_back(*l);
      constant_index_[name] = static_cast<int>(i);
      MarkPlain(name);
      absl::StrAppend(&body, "  ", ids_.Get(name), " = constants[", i, "];\n");
    }
    for (const w::Line& line : program_.lines) {
      RETURN_IF_ERROR(EmitLine(line, &kernels, &body, &out));
    }
    for (size_t i = 0; i < program_.outputs.size(); ++i) {
      ASSIGN_OR_RETURN(const Layout* l, LayoutOf(program_.outputs[i]));
      out.output_layouts.push_back(*l);
      MarkPlain(program_.outputs[i]);
      absl::StrAppend(&body, "  outputs[", i, "] = ", ids_.Get(program_.outputs[i]), ";\n");
    }
    // Declarations of every buffer variable up front: lines may assign a
    // name in any order (reuse, reinterpret) without redeclaring it.
    for (const auto& [name, layout] : layouts_) {
      absl::StrAppend(&decls_, "  void* ", ids_.Get(name), " = nullptr;\n");
    }
    const std::string wrapper = absl::StrCat(
        "extern \"C\" __attribute__((visibility(\"default\"))) int64_t kiln_abi_version() { return ",
        kHostAbiVersion, "; }\n\n",
        "extern \"C\" __attribute__((visibility(\"default\"))) int kiln_run(const KilnHostApi* api, "
        "void* const* inputs, void* const* constants, void** outputs) {\n",
        "  (void)inputs; (void)constants; (void)outputs;\n", decls_, body, "  return 0;\n}\n");
    out.value_needs_plain.assign(value_ids_.size(), false);
    for (int v : plain_values_) out.value_needs_plain[static_cast<size_t>(v)] = true;
    out.source = absl::StrCat(CpuPrelude(), "\n// ---- kernels ----\n", kernels, "\n// ---- wrapper ----\n", wrapper);
    out.units = SplitUnits(out.source, wrapper);
    return out;
  }

 private:
  static absl::Status Error(const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("cpu wrapper codegen: ", what));
  }

  static absl::Status CheckLayout(const std::string& name, const Layout& layout) {
    if (StorageBytesOf(layout) < 0) {
      return Error(absl::StrCat("buffer '", SanitizeComment(name), "' has a malformed layout ",
                                LayoutString(layout)));
    }
    // Half/BFloat16 buffers only meet extern calls and interpreter islands
    // (lowering routes their computations there); kernels check their own.
    if (layout.dtype == DType::kFloat16 || layout.dtype == DType::kBFloat16) return absl::OkStatus();
    return CTypeName(layout.dtype).status();
  }

  absl::StatusOr<const Layout*> LayoutOf(const std::string& name) {
    auto it = layouts_.find(name);
    if (it == layouts_.end()) {
      return Error(absl::StrCat("buffer '", SanitizeComment(name), "' has no layout"));
    }
    return &it->second;
  }

  // Storage identity of every name (reinterprets and reuses share their
  // base's); outputs' storages are never released.
  absl::Status ComputeRoots() {
    auto root = [&](const std::string& n) {
      auto it = roots_.find(n);
      return it == roots_.end() ? n : it->second;
    };
    for (const w::Line& line : program_.lines) {
      if (const auto* r = std::get_if<w::ReinterpretLine>(&line)) content_[r->buffer] = r->base;
      if (const auto* m = std::get_if<w::MultiOutputLine>(&line)) content_[m->result] = m->source;
      if (const auto* r = std::get_if<w::ReinterpretLine>(&line)) roots_[r->buffer] = root(r->base);
      if (const auto* r = std::get_if<w::ReuseLine>(&line)) roots_[r->new_buffer] = root(r->old_buffer);
      if (const auto* m = std::get_if<w::MultiOutputLine>(&line)) roots_[m->result] = root(m->source);
    }
    for (const std::string& o : program_.outputs) protected_.insert(root(o));
    return absl::OkStatus();
  }
  // The value a name holds: views and multi-output aliases share their
  // base's (reuse does not: the reusing buffer is a new value).
  std::string ContentRoot(const std::string& name) const {
    std::string n = name;
    for (int hops = 0; hops < 1 << 20; ++hops) {  // bounded: a cycle is malformed input
      auto it = content_.find(n);
      if (it == content_.end() || it->second == n) break;
      n = it->second;
    }
    return n;
  }
  int ValueOf(const std::string& name) {
    auto [it, inserted] = value_ids_.emplace(ContentRoot(name), static_cast<int>(value_ids_.size()));
    return it->second;
  }
  void MarkPlain(const std::string& name) { plain_values_.insert(ValueOf(name)); }
  // The program constant a name shows (directly or through views), or -1.
  int ConstantIndexOf(const std::string& name) const {
    auto c = constant_index_.find(ContentRoot(name));
    return c == constant_index_.end() ? -1 : c->second;
  }

  std::string Root(const std::string& n) const {
    auto it = roots_.find(n);
    return it == roots_.end() ? n : it->second;
  }

  absl::StatusOr<std::string> Typed(const std::string& name) {
    ASSIGN_OR_RETURN(const Layout* l, LayoutOf(name));
    ASSIGN_OR_RETURN(std::string type, CTypeName(l->dtype));
    return absl::StrCat("static_cast<", type, "*>(", ids_.Get(name), ")");
  }

  std::string Alloc(const std::string& name, const Layout& layout) {
    owned_.insert(name);
    const std::string& id = ids_.Get(name);
    return absl::StrCat("  ", id, " = api->alloc(api->ctx, ", IntLiteral(StorageBytesOf(layout)), ", ",
                        IntLiteral(DTypeCode(layout.dtype)), ");\n  if (", id, " == nullptr) return 1;\n");
  }

  std::string Release(const std::string& name) {
    if (owned_.count(name) == 0 || protected_.count(Root(name)) != 0) return "";
    owned_.erase(name);
    return absl::StrCat("  api->release(api->ctx, ", ids_.Get(name), ");\n");
  }

  absl::Status EmitExtern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                          const std::vector<std::string>& outputs, const std::vector<Layout>* alloc_layouts,
                          std::string* body, GeneratedProgram* out, int island = -1) {
    ExternCallSpec spec;
    spec.op = op;
    spec.outputs = outputs;
    if (island >= 0) {
      if (static_cast<size_t>(island) >= program_.islands.size() || !program_.islands[island]) {
        return Error(absl::StrCat("extern line names island ", island, ", which does not exist"));
      }
      spec.island = program_.islands[static_cast<size_t>(island)];
    }
    spec.args = args;
    std::vector<std::string> ptrs;
    for (const lowering::ExternArg& a : args) {
      // A Tensor[] argument passes its buffers in order (RunExternKernel
      // regroups them into a list).
      std::vector<std::string> names = a.buffer_list;
      if (!a.buffer.empty()) names = {a.buffer};
      for (const std::string& name : names) {
        ASSIGN_OR_RETURN(const Layout* l, LayoutOf(name));
        spec.buffer_arg_layouts.push_back(*l);
        spec.buffer_arg_constants.push_back(ConstantIndexOf(name));
        spec.buffer_arg_values.push_back(ValueOf(name));
        ptrs.push_back(ids_.Get(name));
      }
    }
    if (alloc_layouts != nullptr && alloc_layouts->size() != outputs.size()) {
      return Error(absl::StrCat("extern ", SanitizeComment(op), ": ", outputs.size(), " outputs but ",
                                alloc_layouts->size(), " layouts"));
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Layout* l = nullptr;
      if (alloc_layouts != nullptr) {
        l = &(*alloc_layouts)[i];
        RETURN_IF_ERROR(CheckLayout(outputs[i], *l));
        layouts_.emplace(outputs[i], *l);
        absl::StrAppend(body, Alloc(outputs[i], *l));
      } else {
        ASSIGN_OR_RETURN(l, LayoutOf(outputs[i]));
      }
      spec.output_layouts.push_back(*l);
      spec.output_values.push_back(ValueOf(outputs[i]));
      ptrs.push_back(ids_.Get(outputs[i]));
    }
    const size_t index = out->externs.size();
    out->externs.push_back(std::move(spec));
    const std::string arr = absl::StrCat("l_extern", index);
    if (ptrs.empty()) ptrs.push_back("nullptr");
    absl::StrAppend(body, "  {\n    void* const ", arr, "[] = {", absl::StrJoin(ptrs, ", "), "};\n",
                    "    if (api->extern_call(api->ctx, ", index, ", ", arr, ") != 0) return 1;\n  }\n");
    return absl::OkStatus();
  }

  // Adds a generated kernel definition, `text` defining `static void fn(`,
  // and returns the function to call: an earlier kernel with the same text
  // up to its name, or `fn`, compiled once.
  absl::StatusOr<std::string> DefineKernel(const std::string& fn, const std::string& text, std::string* kernels) {
    if (!defined_.insert(fn).second) {
      return Error(absl::StrCat("kernel '", SanitizeComment(fn), "' is defined twice"));
    }
    const std::string head = absl::StrCat("static void ", fn, "(");
    const size_t at = text.find(head);
    const size_t params_end = at == std::string::npos ? at : text.find(") {\n", at);
    if (params_end == std::string::npos) {
      return Error(absl::StrCat("kernel body does not define ", SanitizeComment(fn)));
    }
    std::string canonical = text;
    canonical.replace(at + 12, fn.size(), "@");
    auto [first, inserted] = distinct_.emplace(std::move(canonical), fn);
    if (!inserted) return first->second;
    const size_t params_begin = at + head.size();
    kernel_defs_.push_back({fn, text, at, text.substr(params_begin, params_end - params_begin)});
    absl::StrAppend(kernels, text, "\n");
    return fn;
  }

  // kiln::attention as a generated kernel (attention_codegen.h); false when
  // the kernel does not take the call's shapes (it then runs as an extern).
  absl::StatusOr<bool> EmitAttention(const std::vector<lowering::ExternArg>& args,
                                     const std::vector<std::string>& outputs, std::string* kernels,
                                     std::string* body) {
    if (args.size() != 5 || outputs.size() != 1 || args[0].buffer.empty() || args[1].buffer.empty() ||
        args[2].buffer.empty() || !args[4].constant || !args[4].constant->isNumber()) {
      return false;
    }
    const bool has_mask = !args[3].buffer.empty();
    if (!has_mask && !(args[3].constant && args[3].constant->isNone())) return false;
    AttentionShape shape;
    ASSIGN_OR_RETURN(const Layout* q, LayoutOf(args[0].buffer));
    ASSIGN_OR_RETURN(const Layout* kt, LayoutOf(args[1].buffer));
    ASSIGN_OR_RETURN(const Layout* v, LayoutOf(args[2].buffer));
    ASSIGN_OR_RETURN(const Layout* o, LayoutOf(outputs[0]));
    shape.q = *q;
    shape.kt = *kt;
    shape.v = *v;
    shape.out = *o;
    if (has_mask) {
      ASSIGN_OR_RETURN(const Layout* m, LayoutOf(args[3].buffer));
      shape.mask = *m;
    }
    shape.scale = args[4].constant->toNumberAsDouble();
    const std::string fn = KernelFunctionName(absl::StrCat("cpp_attention_", attention_kernels_++));
    absl::StatusOr<std::string> text = AttentionKernelSource(fn, shape);
    if (!text.ok()) {
      if (absl::IsUnimplemented(text.status())) return false;
      return text.status();
    }
    ASSIGN_OR_RETURN(std::string callee, DefineKernel(fn, *text, kernels));
    std::vector<std::string> call_args = {"api->sgemm"};
    for (const std::string& name : {args[0].buffer, args[1].buffer, args[2].buffer}) {
      MarkPlain(name);
      ASSIGN_OR_RETURN(std::string typed, Typed(name));
      call_args.push_back(std::move(typed));
    }
    if (has_mask) {
      MarkPlain(args[3].buffer);
      ASSIGN_OR_RETURN(std::string typed, Typed(args[3].buffer));
      call_args.push_back(std::move(typed));
    } else {
      call_args.push_back("nullptr");
    }
    MarkPlain(outputs[0]);
    ASSIGN_OR_RETURN(std::string typed, Typed(outputs[0]));
    call_args.push_back(std::move(typed));
    absl::StrAppend(body, "  ", callee, "(", absl::StrJoin(call_args, ", "), ");  // kiln::attention\n");
    return true;
  }

  // Emits `emit`'s code between the KILN_STEP marks of a new step.
  template <typename F>
  absl::Status Step(std::string name, std::string* body, GeneratedProgram* out, F&& emit) {
    const size_t k = out->steps.size();
    out->steps.push_back(ProgramStep{std::move(name), -1});
    absl::StrAppend(body, "  KILN_STEP(", k, ", 0);\n");
    const size_t externs = out->externs.size();
    RETURN_IF_ERROR(emit());
    if (out->externs.size() > externs) out->steps[k].extern_index = static_cast<int>(externs);
    absl::StrAppend(body, "  KILN_STEP(", k, ", 1);\n");
    return absl::OkStatus();
  }

  absl::Status EmitLine(const w::Line& line, std::string* kernels, std::string* body, GeneratedProgram* out) {
    return std::visit(
        Overloaded{
            [&](const w::AllocateLine& l) -> absl::Status {
              RETURN_IF_ERROR(CheckLayout(l.buffer, l.layout));
              layouts_.emplace(l.buffer, l.layout);
              absl::StrAppend(body, Alloc(l.buffer, l.layout));
              return absl::OkStatus();
            },
            [&](const w::FreeIfNotReusedLine& l) -> absl::Status {
              if (!l.is_reused) absl::StrAppend(body, Release(l.buffer));
              return absl::OkStatus();
            },
            [&](const w::ReuseLine& l) -> absl::Status {
              if (owned_.count(l.old_buffer) == 0) {
                return Error(absl::StrCat("reuse of '", SanitizeComment(l.old_buffer),
                                          "', which the program does not own"));
              }
              RETURN_IF_ERROR(CheckLayout(l.new_buffer, l.layout));
              layouts_.emplace(l.new_buffer, l.layout);
              owned_.erase(l.old_buffer);
              owned_.insert(l.new_buffer);
              absl::StrAppend(body, "  ", ids_.Get(l.new_buffer), " = ", ids_.Get(l.old_buffer), ";\n");
              return absl::OkStatus();
            },
            [&](const w::FreeLine& l) -> absl::Status {
              absl::StrAppend(body, Release(l.buffer));
              return absl::OkStatus();
            },
            [&](const w::ReinterpretLine& l) -> absl::Status {
              RETURN_IF_ERROR(CheckLayout(l.buffer, l.layout));
              layouts_.emplace(l.buffer, l.layout);
              RETURN_IF_ERROR(LayoutOf(l.base).status());
              MarkPlain(l.base);  // a view reads the storage in its own layout
              absl::StrAppend(body, "  ", ids_.Get(l.buffer), " = ", ids_.Get(l.base), ";\n");
              return absl::OkStatus();
            },
            [&](const w::KernelDefinitionLine& l) -> absl::Status {
              // The body is this backend's own KernelSource output; it must
              // define exactly the sanitized name. Kernels name their
              // parameters by position, so a kernel with the text of an
              // earlier one (up to its name) computes the same function of
              // its arguments: calls go to the earlier one.
              const std::string fn = KernelFunctionName(l.kernel_name);
              ASSIGN_OR_RETURN(std::string callee, DefineKernel(fn, l.kernel_body, kernels));
              if (callee != fn) same_as_[fn] = callee;
              return absl::OkStatus();
            },
            [&](const w::KernelCallLine& l) -> absl::Status {
              const std::string fn = KernelFunctionName(l.kernel_name);
              if (defined_.count(fn) == 0) {
                return Error(absl::StrCat("call of undefined kernel '", SanitizeComment(l.kernel_name), "'"));
              }
              std::vector<std::string> args;
              for (const std::string& a : l.args) {
                MarkPlain(a);
                ASSIGN_OR_RETURN(std::string typed, Typed(a));
                args.push_back(std::move(typed));
              }
              return Step(fn, body, out, [&]() -> absl::Status {
                auto same = same_as_.find(fn);
                if (same == same_as_.end()) {
                  absl::StrAppend(body, "  ", fn, "(", absl::StrJoin(args, ", "), ");\n");
                } else {
                  absl::StrAppend(body, "  ", same->second, "(", absl::StrJoin(args, ", "), ");  // ", fn, "\n");
                }
                return absl::OkStatus();
              });
            },
            [&](const w::ExternKernelLine& l) -> absl::Status {
              return Step(l.op, body, out, [&]() -> absl::Status {
                if (l.op == "kiln::attention" && l.island < 0) {
                  ASSIGN_OR_RETURN(bool emitted, EmitAttention(l.args, l.outputs, kernels, body));
                  if (emitted) {
                    out->generated_extern_outputs.insert(out->generated_extern_outputs.end(), l.outputs.begin(),
                                                         l.outputs.end());
                    return absl::OkStatus();
                  }
                }
                return EmitExtern(l.op, l.args, l.outputs, nullptr, body, out, l.island);
              });
            },
            [&](const w::ExternKernelAllocLine& l) -> absl::Status {
              return Step(l.op, body, out, [&]() -> absl::Status {
                return EmitExtern(l.op, l.args, l.outputs, &l.layouts, body, out, l.island);
              });
            },
            [&](const w::MultiOutputLine& l) -> absl::Status {
              // Multi-output externs name each output buffer directly; the
              // element is its own buffer unless the line aliases it.
              MarkPlain(l.source);
              if (l.result != l.source) {
                RETURN_IF_ERROR(LayoutOf(l.source).status());
                RETURN_IF_ERROR(LayoutOf(l.result).status());
                absl::StrAppend(body, "  if (", ids_.Get(l.result), " == nullptr) ", ids_.Get(l.result), " = ",
                                ids_.Get(l.source), ";\n");
              }
              return absl::OkStatus();
            },
            [&](const w::CommentLine& l) -> absl::Status {
              absl::StrAppend(body, "  // ", SanitizeComment(l.text), "\n");
              return absl::OkStatus();
            },
            [&](const w::EnterDeviceContextManagerLine&) -> absl::Status { return absl::OkStatus(); },
            [&](const w::ExitDeviceContextManagerLine&) -> absl::Status { return absl::OkStatus(); },
            [&](const w::NullLine&) -> absl::Status { return absl::OkStatus(); },
        },
        line);
  }

  // The program as separately compiled translation units: kernel shards of
  // about equal size, then the wrapper, which declares the kernels. One unit
  // (the whole source) when the kernels are too small to pay for more
  // compiler processes.
  std::vector<std::string> SplitUnits(const std::string& whole, const std::string& wrapper) const {
    size_t kernel_bytes = 0;
    for (const KernelDef& k : kernel_defs_) kernel_bytes += k.body.size();
    const size_t cores = std::max<size_t>(1, std::min<size_t>(std::thread::hardware_concurrency(), kMaxShards));
    const size_t shards = std::min({cores, kernel_defs_.size(), kernel_bytes / kMinShardBytes});
    if (shards < 2) return {whole};
    // Largest first onto the least loaded shard; source order within one.
    std::vector<size_t> order(kernel_defs_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return kernel_defs_[a].body.size() > kernel_defs_[b].body.size();
    });
    std::vector<size_t> load(shards, 0);
    std::vector<std::vector<size_t>> members(shards);
    for (size_t i : order) {
      const size_t s = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      load[s] += kernel_defs_[i].body.size();
      members[s].push_back(i);
    }
    std::vector<std::string> units;
    std::string declarations;
    for (size_t s = 0; s < shards; ++s) {
      std::sort(members[s].begin(), members[s].end());
      std::string unit = absl::StrCat(CpuPrelude(), "\n// ---- kernels (unit ", s + 1, " of ", shards, ") ----\n");
      for (size_t i : members[s]) {
        const KernelDef& k = kernel_defs_[i];
        // External linkage (hidden by -fvisibility=hidden): the wrapper
        // unit calls it.
        absl::StrAppend(&unit, k.body.substr(0, k.at), k.body.substr(k.at + 7), "\n");
        absl::StrAppend(&declarations, "void ", k.name, "(", k.params, ");\n");
      }
      units.push_back(std::move(unit));
    }
    units.push_back(absl::StrCat(CpuPrelude(), "\n// ---- kernels (other units) ----\n", declarations,
                                 "\n// ---- wrapper ----\n", wrapper));
    return units;
  }

  // A distinct kernel: its name, body, where "static void name(" starts in
  // the body, and its parameter list.
  struct KernelDef {
    std::string name;
    std::string body;
    size_t at = 0;
    std::string params;
  };
  static constexpr size_t kMaxShards = 8;
  // Below this much kernel code per shard another g++ process (~0.1 s of
  // startup and linking) costs more than it saves.
  static constexpr size_t kMinShardBytes = 8192;

  const w::WrapperProgram& program_;
  std::vector<KernelDef> kernel_defs_;
  std::map<std::string, std::string> distinct_;  // body with the name as '@' -> name
  std::map<std::string, std::string> same_as_;   // kernel -> the earlier kernel with its text
  std::map<std::string, Layout> layouts_;
  std::map<std::string, std::string> roots_;
  std::map<std::string, std::string> content_;  // view / alias -> what it shows
  std::map<std::string, int> value_ids_;
  std::set<int> plain_values_;
  std::map<std::string, int> constant_index_;
  std::set<std::string> protected_;
  std::set<std::string> owned_;
  std::set<std::string> defined_;
  int attention_kernels_ = 0;
  IdentifierTable ids_;
  std::string decls_;
};

}  // namespace

absl::StatusOr<GeneratedProgram> GenerateProgramSource(const wrapper::WrapperProgram& program) {
  return WrapperEmitter(program).Run();
}

}  // namespace kiln::backends::cpu
