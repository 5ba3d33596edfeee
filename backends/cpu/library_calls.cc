#include "backends/cpu/library_calls.h"

#include "backends/cpu/library_ops.h"

namespace kiln::backends::cpu {

absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareLibraryCall(const ExternCallSpec& spec,
                                                                const std::vector<Tensor>& constants) {
  if (spec.island || LibraryCallsDisabled()) return nullptr;
  if (IsConvolutionOp(spec.op)) return PrepareConvolution(spec, constants);
  if (IsGemmOp(spec.op)) return PrepareGemm(spec, constants);
  if (IsPoolOp(spec.op)) return PreparePool(spec);
  if (IsBinaryOp(spec.op)) return PrepareBinary(spec);
  return nullptr;
}

}  // namespace kiln::backends::cpu
