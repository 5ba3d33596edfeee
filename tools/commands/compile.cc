#include "tools/commands/compile.h"

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "driver/model.h"
#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "wrapper/proto_convert.h"
#include "wrapper/python_printer.h"

ABSL_FLAG(std::string, device, "cpu", "Device to compile for and run on: cpu, cuda or cuda:N");
ABSL_DECLARE_FLAG(std::string, pipeline);

namespace kiln::tools {
namespace {

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

std::string Report(const driver::CompiledGraph& c, double import_ms, double passes_ms) {
  std::string r = "# kiln compile report\n\n## Kernels\n";
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
  absl::StrAppend(&r, "\n## Memory\n", c.memory.ToString(), "\n\n## Time per stage (ms)\n");
  absl::StrAppendFormat(&r,
                        "import %.2f\npasses %.2f\nshape propagation %.2f\nlowering %.2f\n"
                        "scheduling (fusion) %.2f\nwrapper + kernel sources %.2f\n"
                        "memory planning %.2f\ndevice compile %.2f\n",
                        import_ms, passes_ms, c.times.shapes_ms, c.times.lower_ms,
                        c.times.schedule_ms, c.times.wrapper_ms, c.times.plan_ms,
                        c.times.compile_ms);
  if (c.compiled != nullptr) {
    for (const std::string& line : c.compiled->ReportLines()) absl::StrAppend(&r, "  (", line, ")\n");
  }
  return r;
}

int RunCompile(const std::vector<std::string>& args) {
  if (!ExpectArgCount(args, 1, "compile", "one ONNX model file")) return kExitUsageError;
  const std::string out_dir = absl::GetFlag(FLAGS_o);
  if (out_dir.empty()) return ReportError("compile: missing -o DIR");
  const std::string device = absl::GetFlag(FLAGS_device);
  driver::ModelCompileOptions options;
  options.pipeline = absl::GetFlag(FLAGS_pipeline);
  options.compile.device = device;
  absl::StatusOr<driver::CompiledModel> model =
      driver::CompileModelFile(ResolveUserPath(args[0]), options);
  if (!model.ok()) return ReportError(model.status());
  const std::string dir = ResolveUserPath(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ReportError(absl::StrCat("compile: cannot create ", dir, ": ", ec.message()));
  const driver::CompiledGraph& c = model->compiled;
  // wrapper.py loads the large constants from DIR/constants/ (raw
  // little-endian files, named by the printer: no path comes from the model).
  wrapper::PythonPrinterOptions python_options;
  python_options.constants_dir = "constants";
  absl::StatusOr<std::string> python = wrapper::PrintPythonWrapper(c.program, python_options);
  if (!python.ok()) return ReportError(python.status());
  absl::StatusOr<std::vector<wrapper::PythonConstantFile>> constant_files =
      wrapper::PythonWrapperConstantFiles(c.program, python_options);
  if (!constant_files.ok()) return ReportError(constant_files.status());
  if (!constant_files->empty()) {
    const std::string constants_dir = absl::StrCat(dir, "/", python_options.constants_dir);
    std::filesystem::create_directories(constants_dir, ec);
    if (ec) {
      return ReportError(absl::StrCat("compile: cannot create ", constants_dir, ": ", ec.message()));
    }
    for (const wrapper::PythonConstantFile& file : *constant_files) {
      const absl::Status s =
          WriteFileAtomically(absl::StrCat(constants_dir, "/", file.file_name), file.contents);
      if (!s.ok()) return ReportError(s);
    }
  }
  absl::StatusOr<std::string> proto = wrapper::SerializeWrapperProgram(c.program);
  if (!proto.ok()) return ReportError(proto.status());
  // The device's generated source (the CPU's program.cpp, CUDA's kernels.cu).
  std::vector<std::pair<std::string, std::string>> files;
  if (c.compiled != nullptr) files = c.compiled->SourceFiles();
  files.push_back({"wrapper.py", *python});
  files.push_back({"wrapper.pb", *proto});
  files.push_back({"report.md", Report(c, model->model.import_ms, model->passes_ms)});
  for (const auto& [name, contents] : files) {
    const absl::Status s = WriteFileAtomically(absl::StrCat(dir, "/", name), contents);
    if (!s.ok()) return ReportError(s);
  }
  std::printf("%d kernels, %d extern calls; planned peak %lld bytes of %lld (sum of buffers); %s\n",
              c.num_kernels, c.num_externs, static_cast<long long>(c.memory.peak_bytes),
              static_cast<long long>(c.memory.total_buffer_bytes), IslandSummary(c).c_str());
  std::printf("import %.1f ms, passes %.1f ms, lower..plan %.1f ms, %s compile %.1f ms -> %s\n",
              model->model.import_ms, model->passes_ms, c.times.FrontHalfMs(), device.c_str(), c.times.compile_ms,
              dir.c_str());
  return kExitOk;
}

}  // namespace

Command CompileCommand() {
  Command command;
  command.name = "compile";
  command.summary = "Compile an ONNX model: generated C++, Python wrapper, Wrapper IR proto, report.";
  command.usage = "MODEL.onnx --device=cpu|cuda[:N] -o DIR [--pipeline -O2]";
  command.details =
      "Writes the device's source (DIR/program.cpp for cpu: kernels + C++ wrapper;\n"
      "DIR/kernels.cu for cuda: the NVRTC translation units), DIR/wrapper.py (Inductor-style\n"
      "output code, runnable under PyTorch 2.x; its large constants are raw files in\n"
      "DIR/constants/), DIR/wrapper.pb (the Wrapper IR lines) and DIR/report.md (kernels,\n"
      "fusion groups, planned memory, time per stage).";
  command.flags = {"device", "o", "pipeline"};
  command.run = RunCompile;
  return command;
}

}  // namespace kiln::tools
