#include "backends/cpu/cpu_backend.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_program.h"
#include "backends/cpu/kernel_codegen.h"
#include "backends/cpu/prelude.h"
#include "backends/cpu/wrapper_codegen.h"
#include "devices/device_registry.h"
#include "support/status.h"

namespace kiln::backends::cpu {
namespace {

// aligned_alloc with a header in front of each block recording its size,
// so Free can keep the byte counts.
class CountingCpuAllocator : public devices::DeviceAllocator {
 public:
  absl::StatusOr<void*> Allocate(size_t nbytes, size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
      return absl::InvalidArgumentError("cpu allocator: alignment must be a power of two");
    }
    if (nbytes > (size_t{1} << 48) || alignment > (size_t{1} << 20)) {
      return absl::ResourceExhaustedError(absl::StrCat("cpu allocator: ", nbytes, " bytes aligned to ",
                                                       alignment, " is too large"));
    }
    alignment = std::max(alignment, sizeof(Header));
    const size_t header = alignment;  // keeps the user pointer aligned
    const size_t rounded = (std::max<size_t>(nbytes, 1) + alignment - 1) / alignment * alignment;
    char* block = static_cast<char*>(std::aligned_alloc(alignment, header + rounded));
    if (block == nullptr) {
      return absl::ResourceExhaustedError(absl::StrCat("cpu allocator: ", nbytes, " bytes"));
    }
    char* user = block + header;
    const Header h{nbytes, header};
    std::memcpy(user - sizeof(Header), &h, sizeof(Header));
    const int64_t now = allocated_.fetch_add(static_cast<int64_t>(nbytes)) + static_cast<int64_t>(nbytes);
    int64_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return static_cast<void*>(user);
  }
  void Free(void* ptr) override {
    if (ptr == nullptr) return;
    char* user = static_cast<char*>(ptr);
    Header h;
    std::memcpy(&h, user - sizeof(Header), sizeof(Header));
    allocated_.fetch_sub(static_cast<int64_t>(h.nbytes));
    std::free(user - h.header);
  }
  int64_t allocated() const { return allocated_.load(); }
  int64_t peak() const { return peak_.load(); }

 private:
  struct Header {
    size_t nbytes;
    size_t header;
  };
  std::atomic<int64_t> allocated_{0};
  std::atomic<int64_t> peak_{0};
};

// A thread's current stream per CpuDevice, remembered by the device's serial
// number and the stream id (a stream destroyed while current falls back to
// the default stream instead of dangling).
std::atomic<int64_t> next_device_serial{1};
thread_local std::map<int64_t, int64_t> current_stream_ids;

absl::Status NoSuchIndex(int index) {
  return absl::NotFoundError(absl::StrCat("cpu:", index, " does not exist (1 cpu device: cpu:0)"));
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

struct CpuDevice::State {
  const int64_t serial = next_device_serial.fetch_add(1);
  CountingCpuAllocator allocator;
  std::mutex mu;
  std::map<int64_t, devices::Stream*> streams;  // created streams alive now, by id
  int64_t next_stream_id = 1;
  std::unique_ptr<devices::Stream> default_stream;
};

namespace {

// Work on a CPU stream runs when it is queued, so a stream is always idle.
class CpuStream : public devices::Stream {
 public:
  // `state` is null for the device's default stream (id 0), which the
  // device owns; created streams unregister themselves when destroyed.
  CpuStream(std::shared_ptr<CpuDevice::State> state, int64_t id) : state_(std::move(state)), id_(id) {}
  ~CpuStream() override {
    if (state_ == nullptr) return;
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->streams.erase(id_);
  }
  int device_index() const override { return 0; }
  int64_t id() const override { return id_; }
  void* raw() const override { return nullptr; }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::StatusOr<bool> Query() override { return true; }
  absl::Status WaitEvent(devices::Event& event) override { return event.Synchronize(); }

 private:
  std::shared_ptr<CpuDevice::State> state_;
  int64_t id_;
};

// Recording marks the host time (everything queued before is done then).
class CpuEvent : public devices::Event {
 public:
  explicit CpuEvent(bool enable_timing) : timing_(enable_timing) {}
  absl::Status Record(devices::Stream& stream) override {
    if (dynamic_cast<CpuStream*>(&stream) == nullptr) {
      return absl::InvalidArgumentError("cpu event: Record needs a cpu stream");
    }
    recorded_ = std::chrono::steady_clock::now();
    return absl::OkStatus();
  }
  absl::StatusOr<bool> Query() override { return true; }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::StatusOr<double> ElapsedTime(const devices::Event& end) const override {
    const auto* other = dynamic_cast<const CpuEvent*>(&end);
    if (other == nullptr) return absl::InvalidArgumentError("cpu event: ElapsedTime needs a cpu event");
    if (!timing_ || !other->timing_) {
      return absl::FailedPreconditionError("cpu event: created without timing (enable_timing=false)");
    }
    if (!recorded_.has_value() || !other->recorded_.has_value()) {
      return absl::FailedPreconditionError("cpu event: both events must be recorded first");
    }
    return std::chrono::duration<double, std::milli>(*other->recorded_ - *recorded_).count();
  }

 private:
  bool timing_;
  std::optional<std::chrono::steady_clock::time_point> recorded_;
};

std::string CpuModelName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!absl::StartsWith(line, "model name")) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name(absl::StripAsciiWhitespace(absl::string_view(line).substr(colon + 1)));
    if (!name.empty()) return name;
  }
  return "cpu";  // e.g. no /proc, or an architecture that names it otherwise
}

}  // namespace

CpuDevice::CpuDevice() : state_(std::make_shared<State>()) {
  state_->default_stream = std::make_unique<CpuStream>(nullptr, 0);
}

CpuDevice::~CpuDevice() = default;

absl::Status CpuDevice::CheckIndex(int index) const {
  return index == 0 ? absl::OkStatus() : NoSuchIndex(index);
}

absl::StatusOr<devices::DeviceAllocator*> CpuDevice::allocator(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  return &state_->allocator;
}

absl::Status CpuDevice::Synchronize(int index) {
  return CheckIndex(index);  // CPU kernels run synchronously.
}

absl::StatusOr<std::unique_ptr<devices::Stream>> CpuDevice::CreateStream(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  std::lock_guard<std::mutex> lock(state_->mu);
  const int64_t id = state_->next_stream_id++;
  auto stream = std::make_unique<CpuStream>(state_, id);
  state_->streams.emplace(id, stream.get());
  return std::unique_ptr<devices::Stream>(std::move(stream));
}

absl::StatusOr<devices::Stream*> CpuDevice::CurrentStream(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  auto current = current_stream_ids.find(state_->serial);
  if (current != current_stream_ids.end()) {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->streams.find(current->second);
    if (it != state_->streams.end()) return it->second;
  }
  return state_->default_stream.get();
}

absl::Status CpuDevice::SetStream(devices::Stream* stream) {
  if (stream == nullptr) return absl::InvalidArgumentError("cpu SetStream: null stream");
  if (stream == state_->default_stream.get()) {
    current_stream_ids.erase(state_->serial);
    return absl::OkStatus();
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->streams.find(stream->id());
    if (it == state_->streams.end() || it->second != stream) {
      return absl::InvalidArgumentError(
          absl::StrCat("cpu SetStream: stream ", stream->id(), " was not created by this device"));
    }
  }
  current_stream_ids[state_->serial] = stream->id();
  return absl::OkStatus();
}

absl::Status CpuDevice::SetStreamById(int index, int64_t id) {
  RETURN_IF_ERROR(CheckIndex(index));
  if (id == 0) {
    current_stream_ids.erase(state_->serial);
    return absl::OkStatus();
  }
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->streams.count(id) == 0) {
      return absl::NotFoundError(absl::StrCat("cpu:0 has no live stream with id ", id));
    }
  }
  current_stream_ids[state_->serial] = id;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<devices::Event>> CpuDevice::CreateEvent(int index, bool enable_timing) {
  RETURN_IF_ERROR(CheckIndex(index));
  return std::unique_ptr<devices::Event>(std::make_unique<CpuEvent>(enable_timing));
}

absl::StatusOr<devices::DeviceProperties> CpuDevice::GetDeviceProperties(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  devices::DeviceProperties props;
  props.name = CpuModelName();
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  props.multiprocessor_count = cores > 0 ? static_cast<int>(cores) : 1;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) props.total_memory = static_cast<int64_t>(pages) * page_size;
  return props;
}

absl::StatusOr<int64_t> CpuDevice::MemoryAllocated(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  return state_->allocator.allocated();
}

absl::StatusOr<int64_t> CpuDevice::MaxMemoryAllocated(int index) {
  RETURN_IF_ERROR(CheckIndex(index));
  return state_->allocator.peak();
}

bool CpuDevice::IsDtypeSupported(DType dtype) const {
  switch (dtype) {
    case DType::kFloat32: case DType::kFloat64:
    case DType::kInt8: case DType::kInt16: case DType::kInt32: case DType::kInt64:
    case DType::kUInt8: case DType::kUInt16: case DType::kUInt32: case DType::kUInt64:
    case DType::kBool:
      return true;
    default:
      return false;
  }
}

namespace {

// The Python wrapper's kernels (KernelDefinition) compile through
// Inductor's cpp_pybinding, which appends Python bindings that include
// <Python.h> and call `kernel(...)`. The standard headers come before kiln's
// prelude: glibc declares the libm functions noexcept, and g++ accepts the
// prelude's plain redeclarations only after those (not before). kiln_ptr
// converts the bindings' pointers to whatever a kernel's parameters are.
std::string PythonKernelPrelude() {
  std::string text = absl::StrCat(
      "#include <math.h>\n#include <stdint.h>\n#undef INT64_C\n", CpuPrelude(),
      "struct kiln_ptr {\n  void* p;\n"
      "  template <typename T> operator T*() const { return static_cast<T*>(p); }\n};\n");
  // A raw literal when it can be one (the prelude is kiln's own text).
  if (text.find("'''") == std::string::npos && text.find('\\') == std::string::npos) {
    return absl::StrCat("r'''\n", text, "'''");
  }
  std::string escaped = "'";
  for (char c : text) {
    if (c == '\\' || c == '\'') escaped.push_back('\\');
    if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped.push_back(c);
    }
  }
  return escaped + "'";
}

}  // namespace

std::vector<std::string> CpuDeviceOpOverrides::HeaderLines() const {
  return {"empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu",
          absl::StrCat("kiln_cpu_prelude = ", PythonKernelPrelude())};
}

std::vector<std::string> CpuDeviceOpOverrides::DefinedNames() const {
  return {"empty_strided_cpu", "kiln_cpu_prelude"};
}

std::string CpuDeviceOpOverrides::ImportGetRawStreamAs(const std::string& name) const {
  return absl::StrCat(name, " = lambda index: 0  # the host has no raw stream");
}

std::string CpuDeviceOpOverrides::SetDevice(int index) const {
  return absl::StrCat("pass  # cpu:", index, ": the host has one device index");
}

std::string CpuDeviceOpOverrides::Synchronize() const {
  return "pass  # cpu kernels run synchronously";
}

std::string CpuDeviceOpOverrides::DeviceGuard(int /*index*/) const {
  return "torch._ops.contextlib.nullcontext()";
}

std::string CpuDeviceOpOverrides::EmptyStrided(const std::string& sizes, const std::string& strides,
                                               const std::string& dtype,
                                               const std::string& /*device*/) const {
  return absl::StrCat("empty_strided_cpu(", sizes, ", ", strides, ", ", dtype, ")");
}

std::string CpuDeviceOpOverrides::KernelDefinition(const std::string& name,
                                                   const std::vector<std::string>& arg_types,
                                                   const std::string& body) const {
  // cpp_pybinding binds `extern "C" void kernel(...)`; kiln's kernel is a
  // static function named after the kernel (kernel_codegen.cc), so a shim
  // forwards to it, after the prelude its body uses.
  std::vector<std::string> params, args;
  for (size_t i = 0; i < arg_types.size(); ++i) {
    params.push_back(absl::StrCat("void* a", i));
    args.push_back(absl::StrCat("kiln_ptr{a", i, "}"));
  }
  const std::string shim = absl::StrCat("extern \"C\" void kernel(", absl::StrJoin(params, ", "), ") { ",
                                        KernelFunctionName(name), "(", absl::StrJoin(args, ", "), "); }");
  return absl::StrCat(name, " = async_compile.cpp_pybinding([", absl::StrJoin(arg_types, ", "),
                      "], kiln_cpu_prelude + ", body, " + '\\n", shim, "\\n')");
}

std::string CpuDeviceOpOverrides::KernelHeader() const {
  return "#include \"backends/cpu/host_api.h\"\n";
}

std::string CpuDeviceOpOverrides::KernelDriver() const {
  // Kernels are static functions of one shared library per program; the
  // host loads it with dlopen and "launches" the whole program through
  // kiln_run (backends/cpu/cpu_program.cc).
  return "// load: void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);\n"
         "//       KilnRunFn run = (KilnRunFn)dlsym(lib, \"kiln_run\");\n"
         "// launch: run(&host_api, inputs, constants, outputs);\n";
}

CpuCodegen::CpuCodegen(CpuBackendOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::string> CpuCodegen::KernelSource(const lowering::LoopGraph& graph,
                                                     const lowering::FusedKernel& kernel) {
  return CpuKernelSource(graph, kernel);
}

CompilerConfig DefaultCpuCompilerConfig() {
  CompilerConfig c;
  c.flags.push_back("-mprefer-vector-width=512");
  return c;
}

absl::StatusOr<std::unique_ptr<wrapper::CompiledProgram>> CpuCodegen::Compile(
    const wrapper::WrapperProgram& program) {
  auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(GeneratedProgram generated, GenerateProgramSource(program));
  const double codegen = Since(t0);
  std::string cache_dir = options_.cache_dir;
  if (cache_dir.empty()) {
    ASSIGN_OR_RETURN(cache_dir, CacheDirectory("cpu"));
  }
  CompileCache cache(std::move(cache_dir), options_.compiler, options_.cache_max_bytes);
  ASSIGN_OR_RETURN(CacheEntry entry, generated.units.empty() ? cache.GetOrCompile(generated.source)
                                                             : cache.GetOrCompile(generated.units));
  std::string source = generated.source;
  auto t1 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::unique_ptr<CpuProgram> loaded, CpuProgram::Load(std::move(generated), entry.library_path));
  CompileStats& stats = loaded->stats();
  stats.codegen_seconds = codegen;
  stats.cache_seconds = entry.seconds;
  stats.load_seconds = Since(t1);
  stats.cache_hit = entry.hit;
  stats.library_path = entry.library_path;
  stats.source = std::move(source);
  return std::unique_ptr<wrapper::CompiledProgram>(std::move(loaded));
}

absl::Status RegisterCpuBackend() {
  static std::once_flag once;
  static absl::Status* status = new absl::Status();
  std::call_once(once, [] {
    absl::Status s = devices::DeviceRegistry::Global().RegisterIfAbsent(std::make_unique<CpuDevice>());
    if (s.ok()) {
      s = wrapper::RegisterDeviceCodegen("cpu", [] { return std::make_unique<CpuCodegen>(); });
    }
    if (s.ok()) s = wrapper::RegisterDeviceOpOverrides(std::make_unique<CpuDeviceOpOverrides>());
    *status = s;
  });
  return *status;
}

}  // namespace kiln::backends::cpu
