// Safe identifiers, type names and literals for generated CUDA source.
// Nothing a model supplies (buffer names, op names) reaches a kernel as is:
// identifiers keep only [A-Za-z0-9_], and names that are not the lowering's
// own (argN, bufN, constN, viewN) get a `b_` prefix, so they can collide
// neither with CUDA keywords and built-ins nor with the math library's
// functions (a buffer named `expf` would otherwise shadow expf()).
// The sanitizer is devices/identifiers.h (shared with the CPU device); the
// rules and what is CUDA's own live here.
#ifndef KILN_BACKENDS_CUDA_KERNEL_IDENTIFIERS_H_
#define KILN_BACKENDS_CUDA_KERNEL_IDENTIFIERS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/identifiers.h"
#include "support/dtype.h"

namespace kiln::backends::cuda {

// `name` with characters outside [A-Za-z0-9_] mapped to '_', no "__", and a
// `b_` prefix unless it is one of the lowering's buffer names (argN, bufN,
// constN, viewN). Long names are shortened to a prefix plus a hash of the
// whole name (devices::SanitizeIdentifier).
std::string CudaBufferIdentifier(absl::string_view name);

// The kernel's function name: sanitized like a buffer name, but names of the
// scheduler's form (`<device>_fused_...`) are kept as they are.
std::string CudaKernelName(absl::string_view name);

// Assigns each distinct buffer name a unique identifier.
class CudaIdentifierTable : public devices::IdentifierTable {
 public:
  CudaIdentifierTable();
};

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
