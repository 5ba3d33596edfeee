#include "driver/initialize.h"

#include "ir/op_registry.h"
#include "passes/shape_functions.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::driver {

absl::Status Initialize() {
  static const absl::Status* status = [] {
    absl::Status s = ir::BuiltinOpsStatus();
    if (s.ok()) s = runtime::RegisterBuiltinKernels();
    if (s.ok()) s = passes::RegisterShapeFunctions();
    return new absl::Status(s);
  }();
  return *status;
}

}  // namespace kiln::driver
