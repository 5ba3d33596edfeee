#include "backends/cpu/cpu_program.h"

#include <dlfcn.h>

#include <exception>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/extern_kernels.h"
#include "backends/cpu/identifiers.h"
#include "backends/cpu/layout_util.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"
#include "wrapper/host_fallback.h"

namespace kiln::backends::cpu {
namespace {

using lowering::Layout;

constexpr size_t kMaxPooled = 256;

// A storage base handed to generated code: the pointer is element
// `elem_offset` of `owner`'s storage.
struct Base {
  Tensor owner;
  int64_t elem_offset = 0;
  bool allocated = false;  // by the program (returns to the pool)
  bool constant = false;   // the program's own constant (outputs copy it)
};

void* BasePointer(const Base& b) {
  return static_cast<char*>(b.owner.storage()->data()) +
         b.elem_offset * static_cast<int64_t>(b.owner.element_size());
}

std::string Shape(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

// A base for `t` laid out as `l`: `t`'s own storage when its strides
// match, else a copy.
absl::StatusOr<Base> BaseFor(const Tensor& t, const Layout& l, const std::string& what) {
  if (StorageElementsOf(l) < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": malformed layout"));
  if (!t.defined() || !t.has_data()) return absl::InvalidArgumentError(absl::StrCat(what, " has no data"));
  if (t.dtype() != l.dtype || t.sizes() != l.sizes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", DTypeName(t.dtype()), Shape(t.sizes()),
                                                   "; the program expects ", DTypeName(l.dtype),
                                                   Shape(l.sizes)));
  }
  bool same = l.strides.size() == l.sizes.size() && t.storage_offset() >= l.offset;
  for (size_t i = 0; same && i < l.sizes.size(); ++i) {
    same = l.sizes[i] <= 1 || t.strides()[i] == l.strides[i];
  }
  Base b;
  if (same) {
    b.owner = t;
    b.elem_offset = t.storage_offset() - l.offset;
    return b;
  }
  b.owner = Tensor::Empty(l.dtype, {std::max<int64_t>(StorageElementsOf(l), 1)});
  Tensor view = Tensor::View(b.owner, l.sizes, l.strides, l.offset);
  RETURN_IF_ERROR(runtime::CopyInto(t, view));
  return b;
}

struct RunContext {
  CpuProgram* program = nullptr;
  std::map<const void*, Base> bases;
  std::string error;

  absl::StatusOr<Tensor> ViewOf(const void* p, const Layout& l) {
    auto it = bases.find(p);
    if (it == bases.end()) return absl::InternalError("generated code passed an unknown buffer pointer");
    if (it->second.owner.dtype() != l.dtype) {
      return absl::UnimplementedError(absl::StrCat("a ", DTypeName(l.dtype), " view of ",
                                                   DTypeName(it->second.owner.dtype()), " storage"));
    }
    return Tensor::View(it->second.owner, l.sizes, l.strides, it->second.elem_offset + l.offset);
  }
};

void* HostAlloc(void* ctx_ptr, int64_t nbytes, int64_t dtype_code) {
  auto* ctx = static_cast<RunContext*>(ctx_ptr);
  try {
    std::optional<DType> dtype = DTypeFromCode(dtype_code);
    if (!dtype || nbytes < 0) {
      ctx->error = "alloc: bad dtype or size";
      return nullptr;
    }
    const int64_t es = static_cast<int64_t>(DTypeSize(*dtype));
    const int64_t elements = std::max<int64_t>((nbytes + es - 1) / es, 1);
    Base b;
    b.owner = ctx->program->TakeFromPool(*dtype, elements);
    b.allocated = true;
    void* p = BasePointer(b);
    ctx->bases[p] = std::move(b);
    return p;
  } catch (const std::exception& e) {
    ctx->error = absl::StrCat("alloc of ", nbytes, " bytes failed: ", e.what());
    return nullptr;
  }
}

void HostRelease(void* ctx_ptr, void* p) {
  auto* ctx = static_cast<RunContext*>(ctx_ptr);
  auto it = ctx->bases.find(p);
  if (it == ctx->bases.end() || !it->second.allocated) return;
  ctx->program->ReturnToPool(std::move(it->second.owner));
  ctx->bases.erase(it);
}

int HostExtern(void* ctx_ptr, int64_t index, void* const* buffers) {
  auto* ctx = static_cast<RunContext*>(ctx_ptr);
  try {
    const auto& externs = ctx->program->generated().externs;
    if (index < 0 || static_cast<size_t>(index) >= externs.size()) {
      ctx->error = "extern call index out of range";
      return 1;
    }
    const ExternCallSpec& spec = externs[static_cast<size_t>(index)];
    std::vector<Tensor> args, outputs;
    size_t next = 0;
    for (const Layout& l : spec.buffer_arg_layouts) {
      absl::StatusOr<Tensor> t = ctx->ViewOf(buffers[next++], l);
      if (!t.ok()) {
        ctx->error = std::string(t.status().message());
        return 1;
      }
      args.push_back(*t);
    }
    for (const Layout& l : spec.output_layouts) {
      absl::StatusOr<Tensor> t = ctx->ViewOf(buffers[next++], l);
      if (!t.ok()) {
        ctx->error = std::string(t.status().message());
        return 1;
      }
      outputs.push_back(*t);
    }
    absl::Status s = spec.island ? wrapper::RunHostIsland(*spec.island, args, outputs)
                                 : RunExternKernel(spec.op, spec.args, args, outputs);
    if (!s.ok()) {
      ctx->error = s.ToString();
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    ctx->error = absl::StrCat("extern call failed: ", e.what());
    return 1;
  }
}

void HostFail(void* ctx_ptr, const char* message) {
  auto* ctx = static_cast<RunContext*>(ctx_ptr);
  ctx->error = SanitizeComment(message != nullptr ? message : "");
}

}  // namespace

// Generated programs use OpenMP, so loading one loads libgomp, whose worker
// threads outlive any parallel region. If the last program using it were
// unloaded, libgomp would be unmapped under its idle threads (a crash at the
// next scheduling of one of them): pin it for the life of the process.
absl::Status PinOpenMpRuntime() {
  static const absl::Status pinned = [] {
    if (::dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) == nullptr) {
      const char* err = ::dlerror();
      return absl::InternalError(absl::StrCat("cannot load the OpenMP runtime libgomp.so.1: ",
                                              err != nullptr ? err : "dlopen failed"));
    }
    return absl::OkStatus();
  }();
  return pinned;
}

absl::StatusOr<std::unique_ptr<CpuProgram>> CpuProgram::Load(GeneratedProgram generated,
                                                             const std::string& library_path) {
  RETURN_IF_ERROR(PinOpenMpRuntime());
  std::unique_ptr<CpuProgram> program(new CpuProgram());
  program->generated_ = std::move(generated);
  program->handle_ = ::dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (program->handle_ == nullptr) {
    const char* err = ::dlerror();
    return absl::InternalError(absl::StrCat("dlopen ", library_path, ": ", err != nullptr ? err : "failed"));
  }
  auto version = reinterpret_cast<KilnAbiVersionFn>(::dlsym(program->handle_, "kiln_abi_version"));
  program->run_ = reinterpret_cast<KilnRunFn>(::dlsym(program->handle_, "kiln_run"));
  if (version == nullptr || program->run_ == nullptr || version() != kHostAbiVersion) {
    return absl::InternalError(absl::StrCat(library_path, " is not a kiln CPU program of ABI version ",
                                            kHostAbiVersion));
  }
  return program;
}

CpuProgram::~CpuProgram() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

Tensor CpuProgram::TakeFromPool(DType dtype, int64_t elements) {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    auto range = pool_.equal_range({static_cast<int>(dtype), elements});
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second.storage().use_count() == 1) {
        Tensor t = std::move(it->second);
        pool_.erase(it);
        return t;
      }
    }
  }
  return Tensor::Empty(dtype, {elements});
}

void CpuProgram::ReturnToPool(Tensor base) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (pool_.size() >= kMaxPooled) return;
  pool_.emplace(std::make_pair(static_cast<int>(base.dtype()), base.numel()), std::move(base));
}

absl::StatusOr<std::vector<Tensor>> CpuProgram::Run(const std::vector<Tensor>& inputs) {
  const GeneratedProgram& g = generated_;
  if (inputs.size() != g.input_layouts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("compiled program takes ", g.input_layouts.size(),
                                                   " inputs, got ", inputs.size()));
  }
  RunContext ctx;
  ctx.program = this;
  std::vector<void*> in_ptrs, const_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSIGN_OR_RETURN(Base b, BaseFor(inputs[i], g.input_layouts[i], absl::StrCat("input ", i)));
    void* p = BasePointer(b);
    in_ptrs.push_back(p);
    ctx.bases.emplace(p, std::move(b));
  }
  for (size_t i = 0; i < g.constants.size(); ++i) {
    ASSIGN_OR_RETURN(Base b, BaseFor(g.constants[i], g.constant_layouts[i], absl::StrCat("constant ", i)));
    b.constant = true;
    void* p = BasePointer(b);
    const_ptrs.push_back(p);
    ctx.bases.emplace(p, std::move(b));
  }
  std::vector<void*> out_ptrs(g.output_layouts.size(), nullptr);
  KilnHostApi api{kHostAbiVersion, &ctx, &HostAlloc, &HostRelease, &HostExtern, &HostFail};
  const int rc = run_(&api, in_ptrs.data(), const_ptrs.data(), out_ptrs.data());
  absl::Status status = absl::OkStatus();
  std::vector<Tensor> outputs;
  if (rc != 0) {
    status = absl::InternalError(absl::StrCat("compiled program failed: ",
                                              ctx.error.empty() ? "unknown error" : ctx.error));
  }
  for (size_t i = 0; status.ok() && i < out_ptrs.size(); ++i) {
    const Layout& l = g.output_layouts[i];
    auto it = ctx.bases.find(out_ptrs[i]);
    if (it == ctx.bases.end()) {
      status = absl::InternalError(absl::StrCat("output ", i, " points at no live buffer"));
      break;
    }
    absl::StatusOr<Tensor> view = ctx.ViewOf(out_ptrs[i], l);
    if (!view.ok()) {
      status = view.status();
      break;
    }
    if (it->second.constant) {
      // Callers may write outputs; never hand out the program's constants.
      Tensor copy = Tensor::Empty(l.dtype, l.sizes);
      status = runtime::CopyInto(*view, copy);
      outputs.push_back(copy);
    } else {
      outputs.push_back(*view);
    }
  }
  for (auto& [p, b] : ctx.bases) {
    if (b.allocated) ReturnToPool(std::move(b.owner));
  }
  RETURN_IF_ERROR(status);
  return outputs;
}

std::vector<std::pair<std::string, std::string>> CpuProgram::SourceFiles() const {
  return {{"program.cpp", generated_.source}};
}

std::vector<std::string> CpuProgram::ReportLines() const {
  return {absl::StrFormat("C++ cache %s: %.2f ms; dlopen %.2f ms", stats_.cache_hit ? "hit" : "miss",
                          stats_.cache_seconds * 1e3, stats_.load_seconds * 1e3)};
}

}  // namespace kiln::backends::cpu
