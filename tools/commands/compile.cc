#include "tools/commands/compile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/cpu_program.h"
#include "backends/cuda/cuda_backend.h"
#include "deploy/artifact_writer.h"
#include "driver/precision.h"
#include "ir/ir.h"
#include "ir/text_printer.h"
#include "support/atomic_file.h"
#include "support/status.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "tools/graphviz.h"
#include "tools/json_output.h"
#include "tools/memory_limit.h"
#include "tools/staged_compile.h"
#include "tools/terminal.h"
#include "tools/trace.h"
#include "tools/version.h"
#include "wrapper/debug_printer.h"
#include "wrapper/proto_convert.h"
#include "wrapper/python_printer.h"

ABSL_DECLARE_FLAG(std::string, pipeline);
ABSL_FLAG(std::string, compile_to, "program",
          "Stop after this stage and write its output: graph, optimized, loops, wrapper, "
          "source or program (also --compile-to)");
ABSL_FLAG(bool, dot, false,
          "Also write graph.dot (kiln IR) and kernels.dot (fused kernels and buffers), and "
          "SVGs of them when Graphviz's `dot` is installed");
ABSL_FLAG(std::string, trace, "",
          "Write a Chrome trace (chrome://tracing, ui.perfetto.dev) of the compile here: "
          "import, each pass, lowering, scheduling, codegen, the C++ compiler");

namespace kiln::tools {
namespace {

// Lists the files a compile wrote into its directory, so that the next
// compile into it removes those it does not write again (the old model's
// constants, pictures of another stage).
constexpr char kManifest[] = ".kiln-manifest";

// "no interpreter islands" / "2 islands, 5 nodes interpreted" / "whole graph
// interpreted (12 nodes)".
std::string IslandSummary(const driver::CompiledGraph& c) {
  if (c.whole_graph_interpreted) {
    return absl::StrCat("whole graph interpreted (", c.num_island_nodes, " nodes)");
  }
  if (c.num_islands == 0) return "no interpreter islands";
  return absl::StrCat(c.num_islands, " interpreter island", c.num_islands == 1 ? "" : "s", ", ",
                      c.num_island_nodes, " nodes interpreted");
}

const backends::cpu::CompileStats* CpuStats(const driver::CompiledGraph& c) {
  auto* cpu = dynamic_cast<backends::cpu::CpuProgram*>(c.compiled.get());
  return cpu != nullptr ? &cpu->stats() : nullptr;
}

std::string Report(const StagedCompile& s) {
  const driver::CompiledGraph& c = *s.compiled;
  std::string r = absl::StrCat("# kiln compile report\n\n", VersionLine(), "; model ",
                               Printable(s.model.path), "\n\n## Kernels\n");
  for (const lowering::ScheduleStep& step : c.schedule.steps) {
    if (step.kind == lowering::ScheduleStep::Kind::kKernel) {
      absl::StrAppend(&r, "kernel ", step.kernel.name, ": buffers");
      for (const std::string& b : step.kernel.buffers) absl::StrAppend(&r, " ", b);
      absl::StrAppend(&r, "\n");
    } else {
      const lowering::Buffer* b = c.loop_graph.Find(step.buffer);
      absl::StrAppend(&r, "extern ", b && b->extern_call ? b->extern_call->op : "?", " -> ",
                      step.buffer, "\n");
    }
  }
  absl::StrAppend(&r, "\n## Interpreter islands\n", IslandSummary(c), "\n");
  absl::StrAppend(&r, "\n## Not compiled (islands and extern calls)\n", driver::NotCompiledReport(c));
  absl::StrAppend(&r, "\n## Memory\n", c.memory.ToString(), "\n\n## Time per stage (ms)\n");
  absl::StrAppendFormat(&r,
                        "import %.2f\npasses %.2f\nshape propagation %.2f\nlowering %.2f\n"
                        "scheduling (fusion) %.2f\nwrapper + kernel sources %.2f\n"
                        "memory planning %.2f\ndevice compile %.2f\n",
                        s.model.import_ms, s.passes_ms, c.times.shapes_ms, c.times.lower_ms,
                        c.times.schedule_ms, c.times.wrapper_ms, c.times.plan_ms,
                        c.times.compile_ms);
  if (c.compiled != nullptr) {
    for (const std::string& line : c.compiled->ReportLines()) absl::StrAppend(&r, "  (", line, ")\n");
  }
  return r;
}

// The files of one compile, relative to its directory.
class OutputDir {
 public:
  explicit OutputDir(std::string dir) : dir_(std::move(dir)) {}

  absl::Status Create() {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("compile: cannot create ", dir_, ": ", ec.message()));
    return absl::OkStatus();
  }
  std::string Path(absl::string_view name) const { return absl::StrCat(dir_, "/", name); }
  absl::Status Write(const std::string& name, absl::string_view contents) {
    written_.insert(name);
    return WriteFileAtomically(Path(name), contents);
  }
  // Counts a file something else wrote (an SVG from `dot`).
  void Adopt(const std::string& name) { written_.insert(name); }
  const std::set<std::string>& written() const { return written_; }

  // Removes what the previous compile here wrote and this one did not, then
  // records this one's files.
  absl::Status Finish() {
    absl::StatusOr<std::string> old = ReadFile(Path(kManifest));
    if (old.ok()) {
      for (absl::string_view line : absl::StrSplit(*old, '\n', absl::SkipEmpty())) {
        const std::string name(line);
        // Only plain relative names this tool writes ("constants/3_w.bin").
        if (name.empty() || name[0] == '/' || absl::StrContains(name, "..") ||
            written_.count(name) > 0) {
          continue;
        }
        ::unlink(Path(name).c_str());
      }
    }
    ::rmdir(Path("constants").c_str());  // only succeeds when it is empty
    std::string manifest;
    for (const std::string& name : written_) absl::StrAppend(&manifest, name, "\n");
    return WriteFileAtomically(Path(kManifest), manifest);
  }

 private:
  std::string dir_;
  std::set<std::string> written_;
};

std::string Stamp(absl::string_view comment) {
  return absl::StrCat(comment, " Generated by ", VersionLine(), " (kiln compile).\n");
}

// wrapper.py, its constants and wrapper.pb.
absl::Status WriteWrapper(const wrapper::WrapperProgram& program, OutputDir& out) {
  // wrapper.py loads the large constants from DIR/constants/ (raw
  // little-endian files, named by the printer: no path comes from the model).
  wrapper::PythonPrinterOptions python_options;
  python_options.constants_dir = "constants";
  // KILN_DEBUG_PRINTER / KILN_DEBUG_PRINTER_FILTER (wrapper/debug_printer.h).
  ASSIGN_OR_RETURN(python_options.debug, wrapper::ResolveDebugPrinterConfig());
  ASSIGN_OR_RETURN(std::string python, wrapper::PrintPythonWrapper(program, python_options));
  ASSIGN_OR_RETURN(std::vector<wrapper::PythonConstantFile> constant_files,
                   wrapper::PythonWrapperConstantFiles(program, python_options));
  if (!constant_files.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(out.Path(python_options.constants_dir), ec);
    if (ec) {
      return absl::InvalidArgumentError(absl::StrCat(
          "compile: cannot create ", out.Path(python_options.constants_dir), ": ", ec.message()));
    }
    for (const wrapper::PythonConstantFile& file : constant_files) {
      RETURN_IF_ERROR(
          out.Write(absl::StrCat(python_options.constants_dir, "/", file.file_name), file.contents));
    }
  }
  RETURN_IF_ERROR(out.Write("wrapper.py", Stamp("#") + python));
  ASSIGN_OR_RETURN(std::string proto, wrapper::SerializeWrapperProgram(program));
  return out.Write("wrapper.pb", proto);
}

// graph.dot (+ .svg) and kernels.dot (+ .svg). `svg_note` says why there
// are no SVGs, if there are none.
absl::Status WritePictures(const StagedCompile& s, OutputDir& out, std::string* svg_note) {
  std::vector<std::string> dots = {"graph.dot"};
  RETURN_IF_ERROR(out.Write("graph.dot",
                            GraphToDot(*s.model.graph, absl::StrCat(s.model.path, ": kiln IR (",
                                                                    CompileStageName(s.reached), ")"))));
  if (s.compiled.has_value() && !s.compiled->whole_graph_interpreted) {
    dots.push_back("kernels.dot");
    RETURN_IF_ERROR(out.Write("kernels.dot",
                              KernelsToDot(s.compiled->loop_graph, s.compiled->schedule,
                                           absl::StrCat(s.model.path, ": fused kernels"))));
  }
  for (const std::string& dot : dots) {
    const std::string svg = absl::StrCat(dot.substr(0, dot.size() - 4), ".svg");
    const absl::Status rendered = RenderSvg(out.Path(dot), out.Path(svg));
    if (absl::IsNotFound(rendered)) {
      *svg_note = std::string(rendered.message());
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(rendered);
    out.Adopt(svg);
  }
  return absl::OkStatus();
}

// The deployment artifact (deploy/README.md): DIR/libmodel.so, its kernels,
// program and weights, and kiln_model.h. `note` says why there is none
// (nothing compiled, or no runtime installed beside kiln).
absl::Status WriteDeployment(const StagedCompile& s, OutputDir& out, std::string* note) {
  auto* cpu = dynamic_cast<backends::cpu::CpuProgram*>(s.compiled->compiled.get());
  if (cpu == nullptr || s.compiled->whole_graph_interpreted) {
    *note = "nothing was compiled into a CPU library (the whole graph runs in the interpreter)";
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> runtime = deploy::FindDeployRuntime();
  if (!runtime.ok()) {
    *note = std::string(runtime.status().message());
    return absl::OkStatus();
  }
  deploy::ArtifactOptions options;
  options.kiln_version = VersionLine();
  options.runtime_path = *runtime;
  for (const ir::Value* v : s.model.graph->inputs()) {
    options.input_names.push_back(v->hasDebugName() ? v->debugName() : "");
  }
  for (const ir::Value* v : s.model.graph->outputs()) {
    options.output_names.push_back(v->hasDebugName() ? v->debugName() : "");
  }
  ASSIGN_OR_RETURN(std::vector<deploy::ArtifactFile> files,
                   deploy::DeployArtifactFiles(s.compiled->program, cpu->generated().source,
                                               cpu->stats().library_path, options));
  for (const deploy::ArtifactFile& file : files) RETURN_IF_ERROR(out.Write(file.name, file.contents));
  return absl::OkStatus();
}

Json CompileJson(const StagedCompile& s, const std::string& dir, const OutputDir& out,
                 const std::string& device) {
  Json doc = JsonDocument("compile");
  doc["model"] = s.model.path;
  doc["device"] = device;
  doc["stage"] = std::string(CompileStageName(s.reached));
  doc["output_dir"] = dir;
  doc["files"] = out.written();
  Json times = {{"import", s.model.import_ms}, {"passes", s.passes_ms}};
  if (s.compiled.has_value()) {
    const driver::CompiledGraph& c = *s.compiled;
    doc["kernels"] = c.num_kernels;
    doc["extern_calls"] = c.num_externs;
    doc["islands"] = {{"count", c.num_islands},
                      {"nodes", c.num_island_nodes},
                      {"whole_graph", c.whole_graph_interpreted}};
    doc["memory"] = {{"planned_peak_bytes", c.memory.peak_bytes},
                     {"total_buffer_bytes", c.memory.total_buffer_bytes},
                     {"buffers", c.memory.num_buffers},
                     {"reused", c.memory.num_reused}};
    times["shape_propagation"] = c.times.shapes_ms;
    times["lowering"] = c.times.lower_ms;
    times["scheduling"] = c.times.schedule_ms;
    times["wrapper"] = c.times.wrapper_ms;
    times["memory_planning"] = c.times.plan_ms;
    times["device_compile"] = c.times.compile_ms;
    if (const backends::cpu::CompileStats* cpu = CpuStats(c)) {
      doc["cpu"] = {{"cache_hit", cpu->cache_hit}, {"library", cpu->library_path}};
    }
  }
  doc["times_ms"] = std::move(times);
  return doc;
}

absl::Status RunCompile(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "compile", "one model file (.onnx or .pt2)"));
  const std::string out_dir = absl::GetFlag(FLAGS_o);
  if (out_dir.empty()) return absl::InvalidArgumentError("compile: missing -o DIR");
  if (out_dir == "-") {
    return absl::InvalidArgumentError(
        "compile: -o names a directory (compile writes several files), not '-' (stdout)");
  }
  StagedCompileOptions options;
  options.model_path = ResolveUserPath(args[0]);
  options.pipeline = absl::GetFlag(FLAGS_pipeline);
  options.device = absl::GetFlag(FLAGS_device);
  ASSIGN_OR_RETURN(options.stop_after, ParseCompileStage(absl::GetFlag(FLAGS_compile_to)));
  if (const std::string p = absl::GetFlag(FLAGS_precision); !p.empty()) {
    ASSIGN_OR_RETURN(options.precision, driver::ParsePrecision(p));
  }
  if (options.device != "cpu" && options.stop_after == CompileStage::kSource) {
    return absl::InvalidArgumentError(absl::StrCat(
        "compile: --compile-to=source writes the CPU's C++ without compiling it; for --device ",
        options.device, " compile to program (its kernels' sources are written too)"));
  }
  ASSIGN_OR_RETURN(options.max_peak_bytes, MaxMemoryBytes());
  options.dump_dir = ResolveUserPath(absl::GetFlag(FLAGS_dump_dir));
  if (!options.dump_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.dump_dir, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("compile: cannot create ", options.dump_dir, ": ", ec.message()));
    }
  }
  const std::string trace_path = absl::GetFlag(FLAGS_trace);
  TraceRecorder trace;
  if (!trace_path.empty()) options.trace = &trace;
  const bool json = absl::GetFlag(FLAGS_json);

  absl::StatusOr<StagedCompile> compiled = RunStagedCompile(options);
  // No GPU here: the CUDA kernels' sources still get written (kernels.cu
  // beside the Wrapper IR); only NVRTC's load and the program need a GPU.
  std::string no_device_note;
  if (!compiled.ok() && absl::IsUnavailable(compiled.status()) && absl::StartsWith(options.device, "cuda") &&
      options.stop_after == CompileStage::kProgram) {
    no_device_note = std::string(compiled.status().message());
    options.stop_after = CompileStage::kWrapper;
    compiled = RunStagedCompile(options);
  }
  if (!compiled.ok()) {
    if (absl::IsResourceExhausted(compiled.status())) {
      return absl::ResourceExhaustedError(absl::StrCat(args[0], ": ", compiled.status().message(),
                                                       " (see --max_memory)"));
    }
    return compiled.status();
  }
  const StagedCompile& s = *compiled;

  const std::string dir = ResolveUserPath(out_dir);
  OutputDir out(dir);
  RETURN_IF_ERROR(out.Create());
  const auto write_start = TraceRecorder::Clock::now();
  switch (s.reached) {
    case CompileStage::kGraph:
      RETURN_IF_ERROR(out.Write("graph.txt", ir::PrintGraph(*s.model.graph)));
      break;
    case CompileStage::kOptimized:
      RETURN_IF_ERROR(out.Write("optimized.txt", ir::PrintGraph(*s.model.graph)));
      break;
    case CompileStage::kLoops:
      RETURN_IF_ERROR(out.Write("loops.txt", LoopsText(*s.compiled)));
      break;
    case CompileStage::kWrapper: {
      if (!no_device_note.empty()) {
        RETURN_IF_ERROR(
            out.Write("kernels.cu", Stamp("//") + backends::cuda::KernelsFileWithoutDevice(s.compiled->program)));
      }
      RETURN_IF_ERROR(out.Write("wrapper.txt", s.compiled->program.ToString()));
      ASSIGN_OR_RETURN(std::string proto, wrapper::SerializeWrapperProgram(s.compiled->program));
      RETURN_IF_ERROR(out.Write("wrapper.pb", proto));
      break;
    }
    case CompileStage::kSource:
    case CompileStage::kProgram:
      if (options.device == "cpu") {
        RETURN_IF_ERROR(out.Write("program.cpp", Stamp("//") + s.program_source));
      } else if (s.compiled->compiled != nullptr) {
        // The device's generated sources (CUDA: kernels.cu).
        for (const auto& [name, contents] : s.compiled->compiled->SourceFiles()) {
          RETURN_IF_ERROR(out.Write(name, Stamp("//") + contents));
        }
      }
      RETURN_IF_ERROR(WriteWrapper(s.compiled->program, out));
      RETURN_IF_ERROR(out.Write("report.md", Report(s)));
      break;
  }
  std::string deploy_note;
  // CPU programs only: CUDA's have no deployment artifact yet.
  if (s.reached == CompileStage::kProgram && options.device == "cpu") {
    RETURN_IF_ERROR(WriteDeployment(s, out, &deploy_note));
  }
  std::string svg_note;
  if (absl::GetFlag(FLAGS_dot)) RETURN_IF_ERROR(WritePictures(s, out, &svg_note));
  if (options.trace != nullptr) {
    trace.Complete("write outputs", "stage", write_start, TraceRecorder::Clock::now(),
                   {{"dir", dir}});
  }
  RETURN_IF_ERROR(out.Finish());
  if (!trace_path.empty()) RETURN_IF_ERROR(trace.WriteTo(trace_path));
  if (!svg_note.empty()) std::fprintf(stderr, "kiln: note: no SVGs: %s\n", svg_note.c_str());
  if (!no_device_note.empty()) {
    std::fprintf(stderr,
                 "kiln: note: %s; wrote the kernels' sources (kernels.cu) and the Wrapper IR, no program\n",
                 Printable(no_device_note).c_str());
  }
  if (!deploy_note.empty()) {
    std::fprintf(stderr, "kiln: note: no deployment library: %s\n", Printable(deploy_note).c_str());
  }

  if (json) return PrintJson(CompileJson(s, dir, out, options.device));
  if (!s.compiled.has_value()) {
    std::printf("%s: import %.1f ms, passes %.1f ms -> %s\n", CompileStageName(s.reached).data(),
                s.model.import_ms, s.passes_ms, Printable(dir).c_str());
    return absl::OkStatus();
  }
  const driver::CompiledGraph& c = *s.compiled;
  std::printf("%d kernels, %d extern calls; planned peak %lld bytes of %lld (sum of buffers); %s\n",
              c.num_kernels, c.num_externs, static_cast<long long>(c.memory.peak_bytes),
              static_cast<long long>(c.memory.total_buffer_bytes), IslandSummary(c).c_str());
  std::printf("%s: import %.1f ms, passes %.1f ms, lower..plan %.1f ms, %s compile %.1f ms -> %s\n",
              CompileStageName(s.reached).data(), s.model.import_ms, s.passes_ms,
              c.times.FrontHalfMs(), options.device == "cpu" ? "C++" : Printable(options.device).c_str(),
              c.times.compile_ms, Printable(dir).c_str());
  return absl::OkStatus();
}

}  // namespace

Command CompileCommand() {
  Command command;
  command.name = "compile";
  command.summary =
      "Compile a model (ONNX or .pt2): generated C++, Python wrapper, Wrapper IR proto, report.";
  command.usage =
      "MODEL.onnx|MODEL.pt2 -o DIR [--device=cpu|cuda[:N]] [--pipeline -O2]\n"
      "           [--precision bf16|fp16|tf32|fp32]\n"
      "           [--compile-to=graph|optimized|loops|wrapper|source|program]\n"
      "           [--dump-dir=DIR] [--dot] [--trace FILE] [--max_memory SIZE] [--json]";
  command.details =
      "Writes the device's source (DIR/program.cpp for cpu: kernels + C++ wrapper;\n"
      "DIR/kernels.cu for cuda), DIR/wrapper.py (Inductor-style\n"
      "output code, runnable under PyTorch 2.x; its large constants are raw files in\n"
      "DIR/constants/; KILN_DEBUG_PRINTER=0-3 and KILN_DEBUG_PRINTER_FILTER add the\n"
      "debug printer's calls), DIR/wrapper.pb (the Wrapper IR lines) and DIR/report.md\n"
      "(kernels, fusion groups, planned memory, time per stage), and for cpu the\n"
      "deployment artifact: DIR/libmodel.so (C API: DIR/kiln_model.h; deploy/README.md) with the\n"
      "model's kernels (model_kernels.so), program (model_program.pb) and weights\n"
      "(model.weights, mapped at load).\n"
      "--compile-to stops early and writes that stage's output instead: graph.txt,\n"
      "optimized.txt, loops.txt, wrapper.txt + wrapper.pb, or the sources without\n"
      "running the C++ compiler (source). --dump-dir writes the IR after every stage.\n"
      "--dot adds graph.dot and kernels.dot (and .svg with Graphviz); --trace writes a\n"
      "Chrome trace of the compile. Files an earlier compile wrote into DIR and this\n"
      "one does not are removed. A program whose planned peak memory exceeds\n"
      "--max_memory is refused (exit 2) before the C++ compiler runs. A .pt2 program\n"
      "with symbolic sizes is compiled at the sizes torch traced it with.\n"
      "--precision casts a float32 model as `kiln run --precision` does (bf16/fp16 as\n"
      "torch.autocast, weights converted once), so the 16-bit kernels can be read.";
  command.flags = {"device", "o",     "pipeline",   "precision", "compile_to",
                   "dump_dir", "dot", "trace", "max_memory", "json"};
  command.run = RunCompile;
  return command;
}

}  // namespace kiln::tools
