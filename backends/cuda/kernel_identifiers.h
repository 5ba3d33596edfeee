// Type names, literals and comment-safe text for generated CUDA source.
// Nothing a model supplies (buffer names, op names) reaches a kernel:
// parameters are named by position (p0, p1, ...), functions after a hash of
// their text (kernel_codegen.cc), and model text appears only in error
// messages, through CudaSafeText.
#ifndef KILN_BACKENDS_CUDA_KERNEL_IDENTIFIERS_H_
#define KILN_BACKENDS_CUDA_KERNEL_IDENTIFIERS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/identifiers.h"
#include "support/dtype.h"

namespace kiln::backends::cuda {

// Text safe inside a `//` comment or an error message: printable ASCII minus
// backslash, at most 120 characters.
inline std::string CudaSafeText(absl::string_view text) { return devices::SanitizeComment(text); }

// The CUDA C++ type values of a dtype are computed in ("float", "long
// long", "bool", ...; "float" for float16/bfloat16); Unimplemented for
// complex.
absl::StatusOr<std::string> CudaTypeName(DType dtype);
// The type a buffer of `dtype` is stored as: CudaTypeName, except
// float16/bfloat16 as the prelude's 16-bit kiln_half/kiln_bf16.
absl::StatusOr<std::string> CudaStorageTypeName(DType dtype);
bool IsNarrowFloat(DType dtype);
// An element of a buffer of `storage` as its compute type, and a value of
// the compute type converted for a store into it (round to nearest even).
std::string CudaLoadValue(const std::string& element, DType storage);
std::string CudaStoreValue(const std::string& value, DType storage);

// Literals that need no header: `5LL`, hex floats, infinities and NaNs
// through bit-pattern intrinsics.
std::string CudaIntLiteral(int64_t v);
std::string CudaFloatLiteral(double v, DType dtype);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_IDENTIFIERS_H_
