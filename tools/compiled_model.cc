#include "tools/compiled_model.h"

#include <chrono>

#include "backends/cpu/cpu_backend.h"
#include "frontend/onnx/importer.h"
#include "passes/all_passes.h"
#include "passes/pipeline.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::tools {

absl::StatusOr<CompiledModel> CompileModelFile(const std::string& path, const std::string& pipeline) {
  RETURN_IF_ERROR(runtime::RegisterReferenceKernels(ir::BuiltinOps()));
  RETURN_IF_ERROR(backends::cpu::RegisterCpuBackend());
  using Clock = std::chrono::steady_clock;
  CompiledModel m;
  auto t = Clock::now();
  ASSIGN_OR_RETURN(m.model, frontend::onnx_import::LoadModelFile(path));
  ASSIGN_OR_RETURN(m.graph, frontend::onnx_import::ImportModel(m.model));
  m.import_ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  t = Clock::now();
  if (!pipeline.empty()) {
    ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> p,
                     passes::Pipeline::Create(pipeline, passes::DefaultPassRegistry()));
    ASSIGN_OR_RETURN(bool changed, p->Run(*m.graph));
    (void)changed;
  }
  m.passes_ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  ASSIGN_OR_RETURN(m.compiled, driver::CompileGraph(*m.graph));
  return m;
}

}  // namespace kiln::tools
