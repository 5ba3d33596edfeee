#include "backends/cpu/cpu_program.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/env.h"
#include "backends/cpu/extern_kernels.h"
#include "backends/cpu/identifiers.h"
#include "backends/cpu/layout_util.h"
#include "backends/cpu/packed_cache.h"
#include "backends/cpu/threads.h"
#include "runtime/tensor_ops.h"
#include "support/disk_cache.h"
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
  CpuProgram::RunState* run_state = nullptr;
  std::map<const void*, Base> bases;
  std::string error;
  // Profiling: seconds per step (summed), and when the open step began.
  std::vector<double>* step_seconds = nullptr;
  std::chrono::steady_clock::time_point step_start;

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

// KILN_CPU_PROFILE=1 (env.h): each extern call's time, summed per extern
// and printed (most expensive first) when the program is destroyed; the
// rest of a run is generated kernels and the wrapper.
class CallProfile {
 public:
  CallProfile(CpuProgram* program, size_t index) : program_(env::Profile() ? program : nullptr), index_(index) {
    if (program_ != nullptr) start_ = std::chrono::steady_clock::now();
  }
  ~CallProfile() {
    if (program_ != nullptr) {
      program_->AddExternTime(index_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
  }

 private:
  CpuProgram* program_;
  size_t index_;
  std::chrono::steady_clock::time_point start_;
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
    if (LibraryCall* call = ctx->program->library_call(static_cast<size_t>(index))) {
      CpuProgram::RunState& rs = *ctx->run_state;
      std::unique_ptr<CallState>& state = rs.calls[static_cast<size_t>(index)];
      if (!state) state = call->NewState();
      CallProfile profile(ctx->program, static_cast<size_t>(index));
      absl::Status s = call->Run(buffers, *state, rs.stream, rs.workspace);
      if (!s.ok()) {
        ctx->error = s.ToString();
        return 1;
      }
      return 0;
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
    CallProfile profile(ctx->program, static_cast<size_t>(index));
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

void HostStep(void* ctx_ptr, int64_t step, int64_t end) {
  auto* ctx = static_cast<RunContext*>(ctx_ptr);
  const auto now = std::chrono::steady_clock::now();
  if (end == 0) {
    ctx->step_start = now;
  } else if (ctx->step_seconds != nullptr && step >= 0 && static_cast<size_t>(step) < ctx->step_seconds->size()) {
    (*ctx->step_seconds)[static_cast<size_t>(step)] += std::chrono::duration<double>(now - ctx->step_start).count();
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
  const auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(program->PrepareLibraryCalls());
  program->stats_.prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return program;
}

absl::Status CpuProgram::SetNumThreads(int n) {
  if (n <= 0 || n > 4096) return absl::InvalidArgumentError(absl::StrCat("thread count ", n, " out of range"));
  if (n == num_threads_) return absl::OkStatus();
  num_threads_ = n;
  {
    std::lock_guard<std::mutex> lock(run_states_mu_);
    run_states_.clear();  // their call states belong to the old primitives
  }
  return PrepareLibraryCalls();
}

absl::Status CpuProgram::PrepareLibraryCalls() {
  const GeneratedProgram& g = generated_;
  library_stats_ = LibraryStats();
  LibraryStats& st = library_stats_;
  const size_t n = g.externs.size();
  library_calls_.clear();
  library_calls_.resize(n);
  st.calls.assign(n, "");
  // Primitives are made for the thread count the program runs with.
  if (num_threads_ <= 0) num_threads_ = DefaultNumThreads();
  ScopedNumThreads threads(num_threads_);
  // Primitives are made outside parallel regions: oneDNN sizes their
  // thread partitioning from the pool it sees when they are made.
  std::vector<absl::StatusOr<std::unique_ptr<LibraryCall>>> prepared(n);
  for (size_t i = 0; i < n; ++i) {
    const ExternCallSpec& spec = g.externs[i];
    std::vector<Tensor> constants(spec.buffer_arg_layouts.size());
    for (size_t k = 0; k < constants.size() && k < spec.buffer_arg_constants.size(); ++k) {
      const int c = spec.buffer_arg_constants[k];
      // The library reads a constant at its storage base, as generated code does.
      if (c >= 0 && static_cast<size_t>(c) < g.constants.size() &&
          g.constants[static_cast<size_t>(c)].storage_offset() == g.constant_layouts[static_cast<size_t>(c)].offset) {
        constants[k] = g.constants[static_cast<size_t>(c)];
      }
    }
    prepared[i] = PrepareLibraryCall(spec, constants);
  }
  for (size_t i = 0; i < n; ++i) {
    if (!prepared[i].ok()) {
      st.fallbacks.push_back(absl::StrCat("extern ", i, " (", g.externs[i].op, "): ", prepared[i].status().message()));
    } else {
      library_calls_[i] = *std::move(prepared[i]);
    }
  }
  RETURN_IF_ERROR(PackConstants());
  // The layout plan: a value stays channels-last when a library call that
  // computes channels-last writes it and only such calls read it.
  const size_t values = g.value_needs_plain.size();
  std::vector<int> cl(values, 0);  // 1: written channels-last by a library call
  for (size_t i = 0; i < n; ++i) {
    const LibraryCall* call = library_calls_[i].get();
    for (int v : g.externs[i].output_values) {
      if (v < 0 || static_cast<size_t>(v) >= values) continue;
      cl[static_cast<size_t>(v)] = call != nullptr && call->ChannelsLastOutput() && !g.value_needs_plain[static_cast<size_t>(v)] ? 1 : -1;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const LibraryCall* call = library_calls_[i].get();
    const std::vector<int>& args = g.externs[i].buffer_arg_values;
    const std::vector<bool> ok = call != nullptr ? call->ChannelsLastArgs() : std::vector<bool>(args.size(), false);
    for (size_t k = 0; k < args.size(); ++k) {
      if (args[k] >= 0 && static_cast<size_t>(args[k]) < values && !(k < ok.size() && ok[k])) {
        cl[static_cast<size_t>(args[k])] = -1;
      }
    }
  }
  auto format = [&](int v) {
    return v >= 0 && static_cast<size_t>(v) < values && cl[static_cast<size_t>(v)] == 1 ? ValueFormat::kChannelsLast
                                                                                         : ValueFormat::kPlain;
  };
  for (int v : cl) st.channels_last_values += v == 1;
  size_t workspace = 0;
  for (size_t i = 0; i < n; ++i) {
    LibraryCall* call = library_calls_[i].get();
    if (call == nullptr) {
      ++st.reference_externs;
      continue;
    }
    const ExternCallSpec& spec = g.externs[i];
    std::vector<ValueFormat> arg_formats;
    for (int v : spec.buffer_arg_values) arg_formats.push_back(format(v));
    const ValueFormat out = spec.output_values.empty() ? ValueFormat::kPlain : format(spec.output_values[0]);
    RETURN_IF_ERROR(call->SetFormats(arg_formats, out));
    ++st.library_calls;
    workspace = std::max(workspace, call->workspace_bytes());
    st.calls[i] = call->Describe();
    st.reorders += static_cast<int>(absl::StrContains(st.calls[i], "reorder in")) +
                   static_cast<int>(absl::StrContains(st.calls[i], "reorder out"));
  }
  st.workspace_bytes = static_cast<int64_t>(workspace);
  if (env::LibraryVerbose()) {
    for (size_t i = 0; i < n; ++i) {
      std::fprintf(stderr, "kiln cpu: extern %zu %s: %s\n", i, g.externs[i].op.c_str(),
                   st.calls[i].empty() ? "reference kernel" : st.calls[i].c_str());
    }
    for (const std::string& f : st.fallbacks) std::fprintf(stderr, "kiln cpu: fallback: %s\n", f.c_str());
  }
  return absl::OkStatus();
}

namespace {

// The disk cache of packed constants (packed_cache.h).
DiskCache PackedCache(const std::string& directory) {
  DiskCacheOptions o;
  o.directory = directory;
  o.magic = "kiln-cpu-packed-cache";
  o.suffix = ".entry";
  o.content_prefix = std::string(kPackedEntryMagic, 8);
  // No fsync, as the program cache: a torn entry fails its checksum.
  o.sync = false;
  return DiskCache(std::move(o));
}

// The slots of `constants` (at `offsets` in the arena), or why they cannot
// be cached: a source outside the program's constants, a layout without a
// fingerprint.
absl::StatusOr<std::vector<PackedSlot>> PackedSlots(const GeneratedProgram& g,
                                                    const std::vector<dnnl_util::PackedConstant*>& constants,
                                                    const std::vector<size_t>& offsets) {
  std::vector<PackedSlot> slots;
  for (size_t i = 0; i < constants.size(); ++i) {
    const dnnl_util::PackedConstant& c = *constants[i];
    PackedSlot slot;
    bool found = false;
    for (size_t k = 0; k < g.constants.size() && !found; ++k) {
      const Tensor& t = g.constants[k];
      // Contiguous from its storage's start, a constant's bytes are its
      // values alone, as the identity names them.
      if (!t.defined() || !t.has_data() || !t.is_contiguous() || t.storage_offset() != 0) continue;
      const char* base = static_cast<const char*>(t.storage()->data());
      const char* source = static_cast<const char*>(c.source);
      if (source >= base && source < base + t.storage()->nbytes()) {
        slot.constant = static_cast<uint32_t>(k);
        slot.source_offset = static_cast<uint64_t>(source - base);
        found = true;
      }
    }
    if (!found) return absl::FailedPreconditionError("a packed weight that is not a program constant");
    slot.offset = offsets[i];
    slot.bytes = c.bytes();
    slot.user = dnnl_util::DescFingerprint(c.user);
    slot.packed = dnnl_util::DescFingerprint(c.packed);
    if (slot.user.empty() || slot.packed.empty()) {
      return absl::FailedPreconditionError("a packed layout that is not blocked");
    }
    slots.push_back(std::move(slot));
  }
  return slots;
}

}  // namespace

absl::Status CpuProgram::PackConstants() {
  std::vector<dnnl_util::PackedConstant*> constants;
  for (const std::unique_ptr<LibraryCall>& call : library_calls_) {
    if (call == nullptr) continue;
    for (dnnl_util::PackedConstant* c : call->packed_constants()) constants.push_back(c);
  }
  dnnl_util::WorkspaceLayout layout;
  std::vector<size_t> offsets;
  for (const dnnl_util::PackedConstant* c : constants) offsets.push_back(layout.Add(c->bytes()));
  library_stats_.packed_bytes = static_cast<int64_t>(layout.total());
  packed_arena_.reset();
  packed_mapping_.reset();
  stats_.packed_cache.clear();
  if (constants.empty()) return absl::OkStatus();

  // A warm load maps what an earlier load of the same constants packed.
  std::optional<DiskCache> disk;
  std::string key;
  std::vector<PackedSlot> slots;
  if (generated_.constants_identity.empty()) {
    stats_.packed_cache = "not cached: the constants have no identity";
  } else if (env::PackedCacheDisabled()) {
    stats_.packed_cache = "not cached: KILN_CPU_PACKED_CACHE=0";
  } else if (absl::StatusOr<std::string> dir = CacheDirectory("cpu_packed"); !dir.ok()) {
    stats_.packed_cache = absl::StrCat("not cached: ", dir.status().message());
  } else if (absl::StatusOr<std::vector<PackedSlot>> s = PackedSlots(generated_, constants, offsets); !s.ok()) {
    stats_.packed_cache = absl::StrCat("not cached: ", s.status().message());
  } else {
    slots = *std::move(s);
    key = PackedEntryKey(generated_.constants_identity, dnnl_util::LibraryVersion(), slots, layout.total());
    disk.emplace(PackedCache(*dir));
    absl::StatusOr<MappedArtifact> mapped = disk->Map(key);
    absl::StatusOr<PackedEntry> entry =
        mapped.ok() ? ParsePackedEntry(mapped->bytes(), disk->PathFor(key, ".entry"))
                    : absl::StatusOr<PackedEntry>(mapped.status());
    if (entry.ok() && entry->slots == slots && entry->data_bytes == layout.total()) {
      const char* data = mapped->data + entry->data_offset;
      for (size_t i = 0; i < constants.size(); ++i) {
        // Read only: oneDNN reads weights, never writes them.
        constants[i]->storage = const_cast<char*>(data + offsets[i]);
      }
      packed_mapping_ = mapped->owner;
      stats_.packed_cache = "hit";
      return absl::OkStatus();
    }
    stats_.packed_cache = entry.ok()                     ? "replaced: its slots differ from the program's"
                          : absl::IsNotFound(entry.status()) ? "stored"
                                                         : absl::StrCat("replaced: ", entry.status().message());
  }

  constexpr size_t kHugePage = size_t{2} << 20;
  const bool huge = layout.total() >= kHugePage;
  const size_t alignment = huge ? kHugePage : 64;
  const size_t bytes = (layout.total() + alignment - 1) / alignment * alignment;
  void* block = nullptr;
  if (posix_memalign(&block, alignment, bytes) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("packing constants: ", bytes, " bytes"));
  }
  packed_arena_ = std::shared_ptr<void>(block, std::free);
  // Transparent huge pages where the kernel allows them (madvise mode).
  if (huge) (void)madvise(block, bytes, MADV_HUGEPAGE);
  std::vector<absl::Status> status(constants.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (size_t i = 0; i < constants.size(); ++i) {
    status[i] = constants[i]->Pack(static_cast<char*>(block) + offsets[i]);
  }
  for (const absl::Status& s : status) RETURN_IF_ERROR(s);
  if (disk.has_value()) {
    // Written while the program runs: the next process needs it, this
    // compile does not (BERT-base: 340 MB, 0.3-0.7 s on the 2-core machine).
    auto head = std::make_shared<const std::string>(PackedEntryHead(slots, layout.total()));
    std::vector<absl::string_view> pieces = {*head,
                                             absl::string_view(static_cast<const char*>(block), layout.total())};
    disk->PublishInBackground(key, std::move(pieces),
                              std::make_shared<std::pair<std::shared_ptr<const std::string>, std::shared_ptr<void>>>(
                                  head, packed_arena_));
  }
  return absl::OkStatus();
}

std::unique_ptr<CpuProgram::RunState> CpuProgram::TakeRunState() {
  {
    std::lock_guard<std::mutex> lock(run_states_mu_);
    if (!run_states_.empty()) {
      std::unique_ptr<RunState> s = std::move(run_states_.back());
      run_states_.pop_back();
      return s;
    }
  }
  auto s = std::make_unique<RunState>();
  const size_t bytes = static_cast<size_t>(library_stats_.workspace_bytes);
  if (bytes > 0) {
    s->workspace_storage.reset(new char[bytes + 64]);
    const uintptr_t p = reinterpret_cast<uintptr_t>(s->workspace_storage.get());
    s->workspace = reinterpret_cast<void*>((p + 63) / 64 * 64);
  }
  s->calls.resize(library_calls_.size());
  return s;
}

void CpuProgram::ReturnRunState(std::unique_ptr<RunState> state) {
  std::lock_guard<std::mutex> lock(run_states_mu_);
  run_states_.push_back(std::move(state));
}

CpuProgram::~CpuProgram() {
  if (env::Profile() && runs_ > 0) {
    std::vector<size_t> order;
    double total = 0;
    for (size_t i = 0; i < extern_seconds_.size(); ++i) {
      if (extern_seconds_[i] > 0) order.push_back(i);
      total += extern_seconds_[i];
    }
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return extern_seconds_[a] > extern_seconds_[b]; });
    std::fprintf(stderr, "kiln cpu profile: %lld runs, %.3f ms per run, externs %.3f ms per run\n",
                 static_cast<long long>(runs_), run_seconds_ / runs_ * 1e3, total / runs_ * 1e3);
    for (size_t i : order) {
      const std::string& what = i < library_stats_.calls.size() && !library_stats_.calls[i].empty()
                                    ? library_stats_.calls[i]
                                    : generated_.externs[i].op + " (reference)";
      std::fprintf(stderr, "  %8.3f ms  extern %zu %s\n", extern_seconds_[i] / runs_ * 1e3, i, what.c_str());
    }
  }
  if (handle_ != nullptr) ::dlclose(handle_);
}

void CpuProgram::AddExternTime(size_t index, double seconds) {
  std::lock_guard<std::mutex> lock(run_states_mu_);
  if (extern_seconds_.size() <= index) extern_seconds_.resize(index + 1, 0.0);
  extern_seconds_[index] += seconds;
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
  return RunTimed(inputs, nullptr);
}

absl::StatusOr<std::vector<wrapper::StepProfile>> CpuProgram::ProfileSteps(const std::vector<Tensor>& inputs,
                                                                           int iterations) {
  const GeneratedProgram& g = generated_;
  std::vector<double> seconds(g.steps.size(), 0.0);
  for (int i = 0; i < iterations; ++i) RETURN_IF_ERROR(RunTimed(inputs, &seconds).status());
  std::vector<wrapper::StepProfile> steps;
  for (size_t k = 0; k < g.steps.size(); ++k) {
    const ProgramStep& s = g.steps[k];
    wrapper::StepProfile p;
    p.name = s.name;
    p.kind = "kernel";
    if (s.extern_index >= 0) {
      const size_t e = static_cast<size_t>(s.extern_index);
      const bool library = e < library_stats_.calls.size() && !library_stats_.calls[e].empty();
      p.name = library ? library_stats_.calls[e] : s.name;
      p.kind = library ? "onednn" : e < g.externs.size() && g.externs[e].island ? "island" : "extern";
    }
    p.calls = iterations;
    p.total_ms = seconds[k] * 1e3;
    steps.push_back(std::move(p));
  }
  return steps;
}

absl::StatusOr<std::vector<Tensor>> CpuProgram::RunTimed(const std::vector<Tensor>& inputs,
                                                         std::vector<double>* step_seconds) {
  const GeneratedProgram& g = generated_;
  if (inputs.size() != g.input_layouts.size()) {
    return absl::InvalidArgumentError(absl::StrCat("compiled program takes ", g.input_layouts.size(),
                                                   " inputs, got ", inputs.size()));
  }
  ScopedNumThreads threads(num_threads_);
  std::unique_ptr<RunState> run_state = TakeRunState();
  RunContext ctx;
  ctx.program = this;
  ctx.run_state = run_state.get();
  ctx.step_seconds = step_seconds;
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
  KilnHostApi api{kHostAbiVersion, &ctx,      &HostAlloc,
                  &HostRelease,    &HostExtern, &HostFail, step_seconds != nullptr ? &HostStep : nullptr,
                  &HostSgemm};
  const auto run_start = std::chrono::steady_clock::now();
  const int rc = run_(&api, in_ptrs.data(), const_ptrs.data(), out_ptrs.data());
  if (env::Profile()) {
    std::lock_guard<std::mutex> lock(run_states_mu_);
    ++runs_;
    run_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  }
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
  ReturnRunState(std::move(run_state));
  RETURN_IF_ERROR(status);
  return outputs;
}

std::vector<std::pair<std::string, std::string>> CpuProgram::SourceFiles() const {
  return {{"program.cpp", generated_.source}};
}

std::map<std::string, wrapper::ExternRun> CpuProgram::ExternRuns() const {
  std::map<std::string, wrapper::ExternRun> runs;
  for (size_t i = 0; i < generated_.externs.size(); ++i) {
    const wrapper::ExternRun run =
        library_call(i) != nullptr ? wrapper::ExternRun::kLibrary : wrapper::ExternRun::kReference;
    for (const std::string& name : generated_.externs[i].outputs) runs[name] = run;
  }
  for (const std::string& name : generated_.generated_extern_outputs) runs[name] = wrapper::ExternRun::kGenerated;
  return runs;
}

std::vector<std::string> CpuProgram::ReportLines() const {
  std::vector<std::string> lines = {absl::StrFormat("C++ cache %s: %.2f ms; dlopen %.2f ms",
                                                    stats_.cache_hit ? "hit" : "miss", stats_.cache_seconds * 1e3,
                                                    stats_.load_seconds * 1e3)};
  if (!stats_.packed_cache.empty()) {
    lines.push_back(absl::StrFormat("packed weights (%.1f MB): %s; prepare %.2f ms",
                                    static_cast<double>(library_stats_.packed_bytes) / (1 << 20), stats_.packed_cache,
                                    stats_.prepare_seconds * 1e3));
  }
  return lines;
}

}  // namespace kiln::backends::cpu
