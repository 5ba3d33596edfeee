#include "driver/program_cache.h"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "driver/initialize.h"
#include "driver/program_cache.pb.h"
#include "driver/value_specialization.h"
#include "frontend/onnx/importer.h"
#include "support/atomic_file.h"
#include "support/disk_cache.h"
#include "support/dtype.h"
#include "support/status.h"
#include "wrapper/codegen.h"
#include "wrapper/debug_printer.h"
#include "wrapper/memory_planning.h"
#include "wrapper/proto_convert.h"

namespace kiln::driver {
namespace {

using Clock = std::chrono::steady_clock;

// Bumped when an entry's meaning changes (the magic covers the layout).
constexpr int kProgramCacheFormat = 1;
constexpr int kModelRecordFormat = 1;
constexpr char kModelRecordMagic[] = "KILNMOD1";
constexpr char kModelHashMagic[] = "KILNHSH1";
constexpr size_t kMagicBytes = 8;
// A header larger than this is not a header (real ones are a few MB).
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 30;
constexpr int kMaxConstantRank = 64;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

size_t AlignUp(size_t n) { return (n + kProgramEntryAlignment - 1) / kProgramEntryAlignment * kProgramEntryAlignment; }

absl::StatusOr<const lowering::Layout*> LayoutOf(const wrapper::WrapperProgram& program, const std::string& name) {
  for (const auto& [n, layout] : program.layouts) {
    if (n == name) return &layout;
  }
  return absl::InvalidArgumentError(absl::StrCat("the program has no layout for constant '", name, "'"));
}

std::string Shape(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

// The model file's bytes, mapped for hashing (no copy).
absl::Status HashFile(const std::string& path, CacheKeyBuilder& key) {
  ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  key.Add(file.bytes());
  return absl::OkStatus();
}

DiskCache Cache(const std::string& directory, const char* magic) {
  DiskCacheOptions o;
  o.directory = directory;
  o.magic = absl::StrCat("kiln-", magic, "-cache");
  o.suffix = ".entry";
  o.content_prefix = magic;
  // No fsync: a torn entry fails its checksum and is recompiled; syncing
  // hundreds of MB of constants would cost more than the compile it saves.
  o.sync = false;
  return DiskCache(std::move(o));
}

}  // namespace

absl::StatusOr<ProgramEntryPieces> SerializeProgramEntryPieces(const CompiledGraph& compiled) {
  if (compiled.whole_graph_interpreted) {
    return absl::FailedPreconditionError("program cache: a whole-graph interpreted program is not cached");
  }
  proto::CachedProgram header;
  header.set_format(kProgramCacheFormat);
  ASSIGN_OR_RETURN(std::string program, wrapper::SerializeWrapperProgramWithoutConstantData(compiled.program));
  header.set_wrapper_program(std::move(program));
  header.set_num_kernels(compiled.num_kernels);
  header.set_num_externs(compiled.num_externs);
  header.set_num_islands(compiled.num_islands);
  header.set_num_island_nodes(compiled.num_island_nodes);
  header.set_num_reference_externs(compiled.num_reference_externs);
  for (const NotCompiledNode& n : compiled.not_compiled) {
    proto::CachedNotCompiled* p = header.add_not_compiled();
    p->set_kind(static_cast<int32_t>(n.kind));
    p->set_island(n.island);
    p->set_op(n.op);
    p->set_node(n.node);
    p->set_reason(n.reason);
  }
  // Offsets are from the start of the entry, so the header's size must be
  // known first: lay the data out after a header whose offsets are
  // placeholders of the final width (fixed64 would do; two passes are
  // simpler and exact).
  ProgramEntryPieces out;
  std::vector<Tensor>& contiguous = out.constants;
  for (const auto& [name, tensor] : compiled.program.constants) {
    if (!tensor.defined() || !tensor.has_data()) {
      return absl::InvalidArgumentError(absl::StrCat("program cache: constant '", name, "' has no data"));
    }
    contiguous.push_back(tensor.Contiguous());
    proto::CachedConstant* c = header.add_constants();
    c->set_name(name);
    c->set_dtype(DTypeCode(tensor.dtype()));
    for (int64_t s : tensor.sizes()) c->add_sizes(s);
    c->set_bytes(static_cast<uint64_t>(tensor.numel()) * tensor.element_size());
  }
  size_t data_start = 0;
  for (int pass = 0; pass < 2; ++pass) {
    data_start = AlignUp(kMagicBytes + 8 + header.ByteSizeLong());
    uint64_t offset = data_start;
    for (proto::CachedConstant& c : *header.mutable_constants()) {
      c.set_offset(offset);
      offset = AlignUp(offset + c.bytes());
    }
  }
  const std::string header_bytes = header.SerializeAsString();
  if (AlignUp(kMagicBytes + 8 + header_bytes.size()) != data_start) {
    return absl::InternalError("program cache: the header's size changed while laying out the data");
  }
  uint64_t total = data_start;
  for (const proto::CachedConstant& c : header.constants()) total = AlignUp(c.offset() + c.bytes());
  static const char kZeros[kProgramEntryAlignment] = {};
  out.head.append(kProgramEntryMagic, kMagicBytes);
  PutU64(&out.head, header_bytes.size());
  out.head.append(header_bytes);
  out.head.resize(data_start, '\0');
  uint64_t at = data_start;
  for (size_t i = 0; i < contiguous.size(); ++i) {
    const proto::CachedConstant& c = header.constants(static_cast<int>(i));
    if (c.offset() != at) out.body.emplace_back(kZeros, c.offset() - at);
    out.body.emplace_back(static_cast<const char*>(contiguous[i].raw_data()), c.bytes());
    at = c.offset() + c.bytes();
  }
  if (total != at) out.body.emplace_back(kZeros, total - at);
  return out;
}

std::vector<absl::string_view> ProgramEntryPieces::Pieces() const {
  std::vector<absl::string_view> pieces = {head};
  pieces.insert(pieces.end(), body.begin(), body.end());
  return pieces;
}

absl::StatusOr<std::string> SerializeProgramEntry(const CompiledGraph& compiled) {
  ASSIGN_OR_RETURN(ProgramEntryPieces entry, SerializeProgramEntryPieces(compiled));
  return absl::StrJoin(entry.Pieces(), "");
}

absl::StatusOr<CompiledGraph> ParseProgramEntry(absl::string_view bytes, std::shared_ptr<const void> owner,
                                                absl::string_view display_name) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(display_name, ": ", what));
  };
  if (bytes.size() < kMagicBytes + 8 || bytes.substr(0, kMagicBytes) != absl::string_view(kProgramEntryMagic, kMagicBytes)) {
    return bad("not a program cache entry (magic)");
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % kProgramEntryAlignment != 0) {
    return bad("entry bytes are not 64-byte aligned");
  }
  const uint64_t header_bytes = GetU64(bytes.data() + kMagicBytes);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - kMagicBytes - 8) {
    return bad(absl::StrCat("header of ", header_bytes, " bytes runs past the entry's ", bytes.size()));
  }
  proto::CachedProgram header;
  if (!header.ParseFromArray(bytes.data() + kMagicBytes + 8, static_cast<int>(header_bytes))) {
    return bad("the header does not parse");
  }
  if (header.format() != kProgramCacheFormat) {
    return bad(absl::StrCat("format ", header.format(), ", expected ", kProgramCacheFormat));
  }
  const uint64_t data_start = AlignUp(kMagicBytes + 8 + header_bytes);
  std::map<std::string, Tensor> constants;
  for (const proto::CachedConstant& c : header.constants()) {
    const std::string named = absl::StrCat("constant '", c.name(), "'");
    const std::optional<DType> dtype = DTypeFromCode(c.dtype());
    if (!dtype.has_value()) return bad(absl::StrCat(named, ": unknown dtype code ", c.dtype()));
    if (c.sizes_size() > kMaxConstantRank) return bad(absl::StrCat(named, ": rank ", c.sizes_size()));
    std::vector<int64_t> sizes(c.sizes().begin(), c.sizes().end());
    int64_t numel = 1;
    for (int64_t s : sizes) {
      if (s < 0 || __builtin_mul_overflow(numel, s, &numel)) return bad(absl::StrCat(named, ": bad size ", s));
    }
    uint64_t expected = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(numel), static_cast<uint64_t>(DTypeSize(*dtype)), &expected) ||
        expected != c.bytes()) {
      return bad(absl::StrCat(named, ": ", c.bytes(), " bytes for ", numel, " ", DTypeName(*dtype), " elements"));
    }
    if (c.offset() % kProgramEntryAlignment != 0 || c.offset() < data_start || c.offset() > bytes.size() ||
        c.bytes() > bytes.size() - c.offset()) {
      return bad(absl::StrCat(named, ": data at offset ", c.offset(), " (", c.bytes(),
                              " bytes) outside the data region"));
    }
    // Read-only memory: Storage's pointer is mutable by type only; compiled
    // programs never write their constants.
    auto storage = Storage::WrapCpu(const_cast<char*>(bytes.data() + c.offset()), c.bytes(), owner);
    if (storage == nullptr) return bad(absl::StrCat(named, ": unaligned data"));
    absl::StatusOr<Tensor> tensor =
        Tensor::FromStorage(std::move(storage), *dtype, sizes, Tensor::ContiguousStrides(sizes), 0);
    if (!tensor.ok()) return bad(absl::StrCat(named, ": ", tensor.status().message()));
    if (!constants.emplace(c.name(), *std::move(tensor)).second) return bad(absl::StrCat(named, " repeated"));
  }
  CompiledGraph out;
  absl::StatusOr<wrapper::WrapperProgram> program =
      wrapper::DeserializeWrapperProgram(header.wrapper_program(), constants);
  if (!program.ok()) return bad(absl::StrCat("the Wrapper IR: ", program.status().message()));
  out.program = *std::move(program);
  if (out.program.interpreted_graph) return bad("a whole-graph interpreted program");
  for (const auto& [name, tensor] : out.program.constants) {
    absl::StatusOr<const lowering::Layout*> layout = LayoutOf(out.program, name);
    if (!layout.ok()) return bad(std::string(layout.status().message()));
    if (tensor.dtype() != (*layout)->dtype || tensor.sizes() != (*layout)->sizes) {
      return bad(absl::StrCat("constant '", name, "' is ", DTypeName(tensor.dtype()), Shape(tensor.sizes()),
                              "; the program expects ", DTypeName((*layout)->dtype), Shape((*layout)->sizes)));
    }
  }
  out.num_kernels = header.num_kernels();
  out.num_externs = header.num_externs();
  out.num_islands = header.num_islands();
  out.num_island_nodes = header.num_island_nodes();
  out.num_reference_externs = header.num_reference_externs();
  for (const proto::CachedNotCompiled& p : header.not_compiled()) {
    if (p.kind() < 0 || p.kind() > static_cast<int32_t>(NotCompiledNode::Kind::kGeneratedExtern)) {
      return bad(absl::StrCat("not-compiled node of unknown kind ", p.kind()));
    }
    out.not_compiled.push_back({static_cast<NotCompiledNode::Kind>(p.kind()), p.island(), p.op(), p.node(), p.reason()});
  }
  absl::StatusOr<wrapper::MemoryReport> memory = wrapper::ReportMemory(out.program);
  if (!memory.ok()) return bad(absl::StrCat("memory report: ", memory.status().message()));
  out.memory = *std::move(memory);
  return out;
}

absl::StatusOr<std::string> SerializeModelRecord(const ImportedModel& model) {
  if (!model.onnx.has_value()) {
    return absl::FailedPreconditionError("program cache: only ONNX models have a model record");
  }
  const onnx::ModelProto& full = *model.onnx;
  onnx::ModelProto interface;
  interface.set_ir_version(full.ir_version());
  *interface.mutable_opset_import() = full.opset_import();
  interface.mutable_graph()->set_name(full.graph().name());
  for (const onnx::ValueInfoProto* input : frontend::onnx_import::RuntimeInputs(full)) {
    *interface.mutable_graph()->add_input() = *input;
  }
  *interface.mutable_graph()->mutable_output() = full.graph().output();
  proto::CachedModel record;
  record.set_format(kModelRecordFormat);
  record.set_onnx_interface(interface.SerializeAsString());
  return absl::StrCat(absl::string_view(kModelRecordMagic, kMagicBytes), record.SerializeAsString());
}

absl::StatusOr<ImportedModel> ParseModelRecord(absl::string_view bytes, const std::string& path) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("model record for ", path, ": ", what));
  };
  if (bytes.size() < kMagicBytes || bytes.substr(0, kMagicBytes) != absl::string_view(kModelRecordMagic, kMagicBytes)) {
    return bad("bad magic");
  }
  bytes.remove_prefix(kMagicBytes);
  proto::CachedModel record;
  if (!record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return bad("does not parse");
  if (record.format() != kModelRecordFormat) return bad(absl::StrCat("format ", record.format()));
  ImportedModel model;
  model.path = path;
  model.format = ModelFormat::kOnnx;
  model.onnx.emplace();
  if (!model.onnx->ParseFromString(record.onnx_interface())) return bad("the interface does not parse");
  if (model.onnx->graph().node_size() > 0 || model.onnx->graph().initializer_size() > 0) {
    return bad("the interface holds nodes or initializers");
  }
  return model;
}

absl::StatusOr<std::string> KilnBuildIdentity() {
  static std::mutex mu;
  static std::string* identity = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (identity != nullptr) return *identity;
  Dl_info info;
  if (::dladdr(reinterpret_cast<void*>(&KilnBuildIdentity), &info) == 0 || info.dli_fname == nullptr) {
    return absl::FailedPreconditionError("program cache: cannot find the file holding kiln's code (dladdr)");
  }
  // The main executable's name is its argv[0] (maybe relative, maybe
  // gone); its file is /proc/self/exe.
  std::string file = info.dli_fname;
  struct Search {
    const void* base;
    bool is_main = false;
  } search{info.dli_fbase};
  ::dl_iterate_phdr(
      [](struct dl_phdr_info* object, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = object->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && ph.p_offset == 0 &&
              reinterpret_cast<const void*>(object->dlpi_addr + ph.p_vaddr) == s->base) {
            s->is_main = object->dlpi_name == nullptr || object->dlpi_name[0] == '\0';
            return 1;
          }
        }
        return 0;
      },
      &search);
  if (search.is_main || file.empty()) file = "/proc/self/exe";
  CacheKeyBuilder key;
  key.Add("kiln-build");
  RETURN_IF_ERROR(HashFile(file, key));
  identity = new std::string(key.Hex());
  return *identity;
}

std::string ProgramCacheRefusal(const std::string& path, const ModelCompileOptions& options) {
  absl::StatusOr<ModelFormat> format = ModelFormatOf(path);
  if (!format.ok() || *format != ModelFormat::kOnnx) return "only ONNX models are cached";
  if (options.precision.has_value()) return "--precision compiles are not cached";
  if (options.compile.device != "cpu") return "only CPU programs are cached";
  if (options.compile.generate_only) return "generate-only compiles are not cached";
  return "";
}

absl::StatusOr<std::string> ModelCacheKey(const std::string& path) {
  ASSIGN_OR_RETURN(std::string build, KilnBuildIdentity());
  // Hashing a large model's bytes is a third of a hit's time, so the
  // content key is remembered per file version, as git's index and ccache
  // do: (device, inode, size, mtime, ctime) in nanoseconds. ctime cannot be
  // set back by a user, so any write makes another version. A file changed
  // within the clock's granularity of its last change could look unchanged
  // ("racy"), so only versions older than kRacySeconds are remembered.
  constexpr int64_t kRacySeconds = 2;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  const std::string version =
      CacheKeyBuilder()
          .Add("kiln-model-version")
          .Add(build)
          .Add(absl::StrCat(st.st_dev, ":", st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                            st.st_mtim.tv_nsec, ":", st.st_ctim.tv_sec, ".", st.st_ctim.tv_nsec))
          .Hex();
  absl::StatusOr<std::string> memo_dir = CacheDirectory("model_hashes");
  std::optional<DiskCache> memo;
  if (memo_dir.ok()) memo.emplace(Cache(*memo_dir, kModelHashMagic));
  if (memo.has_value()) {
    if (absl::StatusOr<std::string> known = memo->Load(version); known.ok() && known->size() == kMagicBytes + 32) {
      return known->substr(kMagicBytes);
    }
  }
  CacheKeyBuilder key;
  key.Add("kiln-model").Add(absl::StrCat(kModelRecordFormat, ".", kProgramCacheFormat)).Add(build);
  RETURN_IF_ERROR(HashFile(path, key));
  const std::string content_key = key.Hex();
  const int64_t newest = std::max<int64_t>(st.st_mtim.tv_sec, st.st_ctim.tv_sec);
  if (memo.has_value() && ::time(nullptr) - newest >= kRacySeconds) {
    (void)memo->Publish(version, CacheArtifact{absl::StrCat(absl::string_view(kModelHashMagic, kMagicBytes), content_key), {}});
  }
  return content_key;
}

absl::StatusOr<std::string> ProgramCacheKey(const std::string& model_key, const ModelCompileOptions& options,
                            const std::vector<ir::IValue>* inputs) {
  CacheKeyBuilder key;
  key.Add("kiln-program").Add(model_key).Add(options.pipeline);
  key.Add(options.precision ? PrecisionName(*options.precision) : "");
  const CompileOptions& c = options.compile;
  key.Add(c.device).Add(c.plan_memory ? "plan" : "").Add(c.device_passes ? "device-passes" : "");
  for (const char* env : {wrapper::kDebugPrinterEnv, wrapper::kDebugPrinterFilterEnv}) {
    const char* v = std::getenv(env);
    key.Add(v != nullptr ? absl::StrCat("=", v) : "");
  }
  if (inputs == nullptr) {
    key.Add("no-inputs");
    return key.Hex();
  }
  key.Add(absl::StrCat(inputs->size()));
  for (const ir::IValue& v : *inputs) {
    if (!v.isTensor()) return absl::UnimplementedError("program cache: an input that is not a tensor");
    const Tensor& t = v.toTensor();
    key.Add(absl::StrCat(DTypeName(t.dtype()), Shape(t.sizes())));
    // Small integer inputs may be compiled in by value
    // (value_specialization.h): their values are part of the program.
    const bool integral = !IsFloatingPoint(t.dtype()) && !IsComplex(t.dtype());
    if (integral && t.has_data() && t.numel() <= kMaxValueSpecializedElements) {
      std::string values;
      for (int64_t i = 0; i < t.numel(); ++i) absl::StrAppend(&values, t.GetInt(i), ",");
      key.Add(values);
    } else {
      key.Add("");
    }
  }
  return key.Hex();
}

absl::StatusOr<CompiledModel> CompileModelFileCached(const std::string& path, const ModelCompileOptions& options) {
  RETURN_IF_ERROR(Initialize());
  ModelCompileOptions plain = options;
  plain.program_cache = false;
  ProgramCacheUse use;
  std::vector<std::string> notes;
  auto finish = [&](CompiledModel m) {
    use.note = absl::StrJoin(notes, "; ");
    m.cache = std::move(use);
    return m;
  };
  if (std::string refusal = ProgramCacheRefusal(path, options); !refusal.empty()) {
    notes.push_back(std::move(refusal));
    ASSIGN_OR_RETURN(CompiledModel m, CompileModelFile(path, plain));
    return finish(std::move(m));
  }
  absl::StatusOr<std::string> models_dir = CacheDirectory("models");
  absl::StatusOr<std::string> programs_dir = CacheDirectory("programs");
  auto start = Clock::now();
  absl::StatusOr<std::string> model_key = ModelCacheKey(path);
  if (!models_dir.ok() || !programs_dir.ok() || !model_key.ok()) {
    // No cache directory, or a file the import will explain.
    notes.push_back((!models_dir.ok() ? models_dir : !programs_dir.ok() ? programs_dir : model_key).status().ToString());
    ASSIGN_OR_RETURN(CompiledModel m, CompileModelFile(path, plain));
    return finish(std::move(m));
  }
  use.used = true;
  DiskCache models = Cache(*models_dir, kModelRecordMagic);
  DiskCache programs = Cache(*programs_dir, kProgramEntryMagic);

  // The model: its record (no import), else a full import kept for the
  // compile.
  std::optional<ImportedModel> interface;
  if (absl::StatusOr<std::string> bytes = models.Load(*model_key); bytes.ok()) {
    absl::StatusOr<ImportedModel> parsed = ParseModelRecord(*bytes, path);
    if (parsed.ok()) {
      interface = *std::move(parsed);
    } else {
      notes.push_back(parsed.status().ToString());
    }
  } else if (!absl::IsNotFound(bytes.status())) {
    notes.push_back(bytes.status().ToString());
  }
  use.lookup_ms += MsSince(start);
  std::optional<ImportedModel> imported;
  if (!interface.has_value()) {
    ASSIGN_OR_RETURN(imported, ImportModelFile(path));
    start = Clock::now();
    absl::StatusOr<std::string> record = SerializeModelRecord(*imported);
    absl::Status stored = record.ok() ? models.Publish(*model_key, CacheArtifact{*std::move(record), {}}) : record.status();
    if (!stored.ok()) notes.push_back(stored.ToString());
    use.store_ms += MsSince(start);
  }
  std::vector<ir::IValue> inputs;
  if (options.inputs_for) {
    ASSIGN_OR_RETURN(inputs, options.inputs_for(imported.has_value() ? *imported : *interface));
  }
  const std::vector<ir::IValue>* call_inputs = options.inputs_for ? &inputs : nullptr;
  absl::StatusOr<std::string> program_key = ProgramCacheKey(*model_key, options, call_inputs);
  if (!program_key.ok()) {
    use.used = false;
    notes.push_back(program_key.status().ToString());
  } else {
    use.key = *program_key;
  }

  if (interface.has_value() && use.used) {
    start = Clock::now();
    absl::StatusOr<MappedArtifact> mapped = programs.Map(use.key);
    absl::StatusOr<CompiledGraph> cached =
        mapped.ok() ? ParseProgramEntry(mapped->bytes(), mapped->owner, programs.PathFor(use.key, ".entry"))
                    : absl::StatusOr<CompiledGraph>(mapped.status());
    use.lookup_ms += MsSince(start);
    if (cached.ok()) {
      RETURN_IF_ERROR(CheckPeakMemory(cached->memory, options.compile.max_peak_bytes));
      const auto t = Clock::now();
      ASSIGN_OR_RETURN(std::unique_ptr<wrapper::DeviceCodegen> codegen,
                       wrapper::CreateDeviceCodegen(options.compile.device));
      cached->program.constants_identity = use.key;
      ASSIGN_OR_RETURN(cached->compiled, codegen->Compile(cached->program));
      cached->times.compile_ms = MsSince(t);
      CompiledModel m;
      m.model = *std::move(interface);
      m.compiled = *std::move(cached);
      m.inputs = std::move(inputs);
      use.hit = true;
      return finish(std::move(m));
    }
    // Missing, or damaged (then recompiled and replaced).
    if (!absl::IsNotFound(cached.status())) notes.push_back(cached.status().ToString());
  }
  if (!imported.has_value()) {
    ASSIGN_OR_RETURN(imported, ImportModelFile(path));
  }
  // The constants' identity for what the device derives from them (the
  // CPU's packed weights): the program entry's key names them.
  if (use.used) plain.compile.constants_identity = use.key;
  ASSIGN_OR_RETURN(CompiledModel m, CompileImportedModel(*std::move(imported), plain, call_inputs));
  m.inputs = std::move(inputs);
  if (use.used && !m.compiled.whole_graph_interpreted && m.compiled.compiled != nullptr) {
    start = Clock::now();
    absl::StatusOr<ProgramEntryPieces> entry = SerializeProgramEntryPieces(m.compiled);
    if (entry.ok()) {
      // Written while the program runs (the next process needs it, this
      // one does not): 0.4-0.6 s for BERT-base's 435 MB on 2 cores.
      auto owner = std::make_shared<const ProgramEntryPieces>(*std::move(entry));
      programs.PublishInBackground(use.key, owner->Pieces(), owner);
    } else {
      notes.push_back(entry.status().ToString());
    }
    use.store_ms += MsSince(start);
  }
  return finish(std::move(m));
}

}  // namespace kiln::driver
