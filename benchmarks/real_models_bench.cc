// One real model through the path `kiln run --backend compiled` takes
// (driver::CompileModelFile with the whole-model program cache), for
// benchmarks/real_models.py: cold compile on an empty cache, warm compile on
// the same cache (`warm_compile_ms`, a program cache hit; and
// `warm_uncached_compile_ms`, the compile without that cache, where only the
// C++ compiler's cache hits), the run's median over
// --iterations calls, the error against the expected output (PyTorch's),
// the planned peak and the resident memory, and what the library runs.
// Prints one JSON line.
//
//   real_models_bench --model M.onnx --inputs DIR [--threads N] [--iterations I]
//                     [--warmup W] [--cache_dir D]
//
// --threads sets KILN_NUM_THREADS before anything starts (threads.h);
// --cache_dir sets KILN_CACHE_DIR (default: a fresh directory under /tmp,
// removed at the end).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_program.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "frontend/onnx/importer.h"
#include "testing/onnx_conformance.h"

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

struct Flags {
  std::string model, inputs, cache_dir;
  int threads = 0, iterations = 10, warmup = 2;
};

bool ParseFlags(int argc, char** argv, Flags* f) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") {
      f->model = v;
    } else if (k == "--inputs") {
      f->inputs = v;
    } else if (k == "--cache_dir") {
      f->cache_dir = v;
    } else if (k == "--threads") {
      f->threads = std::atoi(v.c_str());
    } else if (k == "--iterations") {
      f->iterations = std::max(1, std::atoi(v.c_str()));
    } else if (k == "--warmup") {
      f->warmup = std::max(0, std::atoi(v.c_str()));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return false;
    }
  }
  if (argc % 2 != 1) return false;
  return !f->model.empty() && !f->inputs.empty();
}

// VmRSS / VmHWM of this process, in MB.
double ProcStatusMb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::atof(line.c_str() + std::string(key).size()) / 1024.0;
  }
  return -1;
}

int Fail(const std::string& what) {
  std::printf("{\"error\": \"%s\"}\n", absl::CHexEscape(what).c_str());
  return 1;
}

int Main(int argc, char** argv) {
  Flags f;
  if (!ParseFlags(argc, argv, &f)) {
    std::fprintf(stderr, "usage: %s --model M.onnx --inputs DIR [--threads N] [--iterations I] [--warmup W] "
                 "[--cache_dir D]\n", argv[0]);
    return 2;
  }
  bool own_cache = false;
  if (f.cache_dir.empty()) {
    char tmpl[] = "/tmp/kiln_bench_cache_XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Fail("mkdtemp failed");
    f.cache_dir = tmpl;
    own_cache = true;
  }
  setenv("KILN_CACHE_DIR", f.cache_dir.c_str(), 1);
  if (f.threads > 0) setenv("KILN_NUM_THREADS", std::to_string(f.threads).c_str(), 1);
  absl::Status s = driver::Initialize();
  if (s.ok()) s = backends::cpu::RegisterCpuBackend();
  if (!s.ok()) return Fail(s.ToString());

  // Cold (empty cache), then warm (the same cache): import -> loaded program,
  // through the whole-model compile cache (driver/program_cache.h) as `kiln
  // run` compiles. Between them, a compile without that cache (import,
  // passes and lowering again; only the C++ compiler's cache hits).
  driver::ModelCompileOptions cached;
  cached.program_cache = true;
  auto t0 = Clock::now();
  absl::StatusOr<driver::CompiledModel> cold = driver::CompileModelFile(f.model, cached);
  auto t1 = Clock::now();
  if (!cold.ok()) return Fail(cold.status().ToString());
  const double cold_cxx = cold->compiled.times.compile_ms;
  const double cold_total = Ms(t0, t1);
  const double import_ms = cold->model.import_ms, passes_ms = cold->passes_ms;
  const double front_half_ms = cold->compiled.times.FrontHalfMs();
  cold = absl::StatusOr<driver::CompiledModel>(absl::CancelledError("dropped"));  // its memory back first
  t0 = Clock::now();
  absl::StatusOr<driver::CompiledModel> uncached = driver::CompileModelFile(f.model);
  t1 = Clock::now();
  if (!uncached.ok()) return Fail(uncached.status().ToString());
  const double warm_uncached = Ms(t0, t1);
  uncached = absl::StatusOr<driver::CompiledModel>(absl::CancelledError("dropped"));
  t0 = Clock::now();
  absl::StatusOr<driver::CompiledModel> m = driver::CompileModelFile(f.model, cached);
  t1 = Clock::now();
  if (!m.ok()) return Fail(m.status().ToString());
  const double warm_total = Ms(t0, t1);
  if (!m->cache.note.empty()) std::fprintf(stderr, "program cache: %s\n", m->cache.note.c_str());
  const driver::CompileTimes& times = m->compiled.times;

  const onnx::ModelProto& model = *m->model.onnx;
  const auto runtime_inputs = frontend::onnx_import::RuntimeInputs(model);
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < runtime_inputs.size(); ++k) {
    absl::StatusOr<ir::IValue> v =
        testing::ReadTestValue(absl::StrCat(f.inputs, "/input_", k, ".pb"), &runtime_inputs[k]->type());
    if (!v.ok() || !v->isTensor()) return Fail(absl::StrCat("input ", k, ": ", v.status().ToString()));
    inputs.push_back(v->toTensor());
  }
  wrapper::CompiledProgram& program = *m->compiled.compiled;
  std::vector<Tensor> outs;
  for (int i = 0; i < f.warmup; ++i) {
    absl::StatusOr<std::vector<Tensor>> r = program.Run(inputs);
    if (!r.ok()) return Fail(r.status().ToString());
  }
  std::vector<double> ms;
  for (int i = 0; i < f.iterations; ++i) {
    outs.clear();
    const auto a = Clock::now();
    absl::StatusOr<std::vector<Tensor>> r = program.Run(inputs);
    ms.push_back(Ms(a, Clock::now()));
    if (!r.ok()) return Fail(r.status().ToString());
    outs = *std::move(r);
  }
  std::sort(ms.begin(), ms.end());

  // Against the expected outputs (PyTorch's), as onnxruntime is judged:
  // relative L2 and max abs.
  double max_abs = 0, err2 = 0, ref2 = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    const std::string path = absl::StrCat(f.inputs, "/output_", k, ".pb");
    if (!std::filesystem::exists(path)) continue;
    absl::StatusOr<ir::IValue> want = testing::ReadTestValue(path, nullptr);
    if (!want.ok() || !want->isTensor()) return Fail(absl::StrCat("output ", k, ": ", want.status().ToString()));
    const Tensor& w = want->toTensor();
    if (w.numel() != outs[k].numel()) return Fail(absl::StrCat("output ", k, " has the wrong size"));
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double d = outs[k].GetDouble(i) - w.GetDouble(i);
      max_abs = std::max(max_abs, std::fabs(d));
      err2 += d * d;
      ref2 += w.GetDouble(i) * w.GetDouble(i);
    }
  }
  const auto* cpu = dynamic_cast<const backends::cpu::CpuProgram*>(&program);
  backends::cpu::LibraryStats lib;
  double prepare_ms = 0;
  if (cpu != nullptr) {
    lib = cpu->library_stats();
    prepare_ms = const_cast<backends::cpu::CpuProgram*>(cpu)->stats().prepare_seconds * 1e3;
  }
  std::printf(
      "{\"median_ms\": %.3f, \"min_ms\": %.3f, \"threads\": %d, \"cold_compile_s\": %.3f, "
      "\"cold_cxx_compile_ms\": %.1f, \"warm_compile_ms\": %.1f, \"warm_cache_hit\": %s, \"warm_lookup_ms\": %.1f, "
      "\"warm_uncached_compile_ms\": %.1f, \"warm_device_compile_ms\": %.1f, "
      "\"library_prepare_ms\": %.1f, \"import_ms\": %.1f, \"passes_ms\": %.1f, \"front_half_ms\": %.1f, "
      "\"rel_l2\": %.3g, \"max_abs\": %.3g, \"planned_peak_mb\": %.1f, \"rss_mb\": %.1f, \"peak_rss_mb\": %.1f, "
      "\"packed_weights_mb\": %.1f, \"workspace_mb\": %.2f, \"kernels\": %d, \"externs\": %d, \"islands\": %d, "
      "\"library_calls\": %d, \"reference_externs\": %d, \"channels_last_values\": %d, \"reorders\": %d}\n",
      ms[ms.size() / 2], ms.front(), f.threads, cold_total / 1e3, cold_cxx, warm_total,
      m->cache.hit ? "true" : "false", m->cache.lookup_ms, warm_uncached, times.compile_ms, prepare_ms, import_ms,
      passes_ms, front_half_ms, ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2),
      max_abs, m->compiled.memory.peak_bytes / 1048576.0, ProcStatusMb("VmRSS:"), ProcStatusMb("VmHWM:"),
      lib.packed_bytes / 1048576.0, lib.workspace_bytes / 1048576.0, m->compiled.num_kernels,
      m->compiled.num_externs, m->compiled.num_islands, lib.library_calls, lib.reference_externs,
      lib.channels_last_values, lib.reorders);
  if (own_cache) {
    std::error_code ec;
    std::filesystem::remove_all(f.cache_dir, ec);
  }
  return 0;
}

}  // namespace
}  // namespace kiln

int main(int argc, char** argv) { return kiln::Main(argc, argv); }
