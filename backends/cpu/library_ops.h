// The op families of library_calls.h, one file each (library_conv.cc,
// library_gemm.cc, library_pool.cc, library_binary.cc). Internal to backends/cpu.
#ifndef KILN_BACKENDS_CPU_LIBRARY_OPS_H_
#define KILN_BACKENDS_CPU_LIBRARY_OPS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cpu/library_calls.h"

namespace kiln::backends::cpu {

// Each returns null when the call is not one the family runs.
bool IsConvolutionOp(const std::string& op);
absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareConvolution(const ExternCallSpec& spec,
                                                                const std::vector<Tensor>& constants);
bool IsGemmOp(const std::string& op);
absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareGemm(const ExternCallSpec& spec,
                                                         const std::vector<Tensor>& constants);
bool IsPoolOp(const std::string& op);
absl::StatusOr<std::unique_ptr<LibraryCall>> PreparePool(const ExternCallSpec& spec);
bool IsBinaryOp(const std::string& op);
absl::StatusOr<std::unique_ptr<LibraryCall>> PrepareBinary(const ExternCallSpec& spec);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_LIBRARY_OPS_H_
