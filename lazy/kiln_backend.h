// kiln's lazy backend: BackendImplInterface over kiln's compiler.
//
//  * Data: KilnBackendData holds a kiln Tensor (the compiled programs take
//    and return host-addressable tensors on every device kiln has today).
//  * Lowering: KilnLoweringContext builds kiln graph IR with
//    frontend::GraphBuilder (device-data leaves -> graph inputs, each lazy
//    node -> its aten op with constant arguments, results -> outputs).
//  * Compile: the -O2 pass pipeline, then driver::CompileGraph for the
//    computation's device ("cpu" by default; any device whose codegen is
//    registered, e.g. "cuda" once backends/cuda is linked and registered).
//  * Execute: CompiledProgram::Run on the argument tensors.
//
// Devices are found by name through the device registry and the codegen
// registry; this file names none. A binary links a device implementation and
// registers it (backends::cpu::RegisterCpuBackend()) before calling
// RegisterKilnLazyBackend().
#ifndef KILN_LAZY_KILN_BACKEND_H_
#define KILN_LAZY_KILN_BACKEND_H_

#include <string>

#include "absl/status/status.h"
#include "lazy/backend_interface.h"

namespace kiln::lazy {

struct KilnBackendOptions {
  // The default device type ("cpu", "cuda"); its codegen must be registered.
  std::string device = "cpu";
  // The pass pipeline run before compiling (a preset or pipeline string).
  std::string pipeline = "-O2";
};

// Kiln's device type codes (BackendDeviceType::type).
enum KilnDeviceTypeCode : int8_t { kKilnCpu = 0, kKilnCuda = 1 };

// Installs kiln's backend (BackendRegistrar) with `options`; registers the
// reference kernels. Calling it again re-configures the same backend.
// FailedPrecondition when the device has no registered codegen.
absl::Status RegisterKilnLazyBackend(const KilnBackendOptions& options = {});

}  // namespace kiln::lazy

#endif  // KILN_LAZY_KILN_BACKEND_H_
