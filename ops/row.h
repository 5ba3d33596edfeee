// The vocabulary of the op rows (ops/defs/*.def, ops/README.md): the values
// a row writes in the columns that are not a layer's own expression. Data
// only; every layer may include it.
#ifndef KILN_OPS_ROW_H_
#define KILN_OPS_ROW_H_

#include <cstdint>

namespace kiln::ops {

// Traits the schema does not say (mutation, views and aliasing come from
// its annotations).
enum TraitBits : uint32_t {
  kNoTraits = 0,
  kCommutative = 1u << 0,  // the first two arguments may be swapped
  kRandom = 1u << 1,       // nondeterministic: never merged, folded or hoisted
  kSideEffects = 1u << 2,  // never removed or reordered
};

// A library the compiled program calls for the op.
enum class Library : uint8_t {
  kNone,
  kBlas,  // GEMM (OpenBLAS on the CPU, cuBLAS on CUDA)
  kConv,  // a convolution library (im2col + GEMM on the CPU, the GPU's own)
  kDnn,   // a neural-network primitives library's pooling and broadcast
          // elementwise ops (oneDNN on the CPU)
};

// How the compiled program calls it: into a buffer the program allocated
// (Inductor's out= form, which memory planning can reuse), or letting the
// library allocate the result.
struct ExternForm {
  Library library = Library::kNone;
  bool out_variant = false;
};

// "blas", "conv (allocating)", "dnn", "none".
const char* ExternName(const ExternForm& e);

namespace row {

// An empty column.
struct None {};
inline constexpr None none{};
// SCHEMA: the schema comes from PyTorch's generated list (ir/builtin_schemas.inc).
struct AtenSchema {};
inline constexpr AtenSchema aten_schema{};
// SHAPE: the schema's return types say everything (int, int[], bool...).
struct SchemaReturns {};
inline constexpr SchemaReturns schema_returns{};

inline constexpr uint32_t plain = kNoTraits;
inline constexpr uint32_t commutative = kCommutative;
inline constexpr uint32_t nondeterministic = kRandom;
inline constexpr uint32_t side_effects = kSideEffects;

inline constexpr ExternForm blas{Library::kBlas, /*out_variant=*/true};
inline constexpr ExternForm conv{Library::kConv, /*out_variant=*/true};
inline constexpr ExternForm conv_allocating{Library::kConv, /*out_variant=*/false};
inline constexpr ExternForm dnn{Library::kDnn, /*out_variant=*/true};

}  // namespace row
}  // namespace kiln::ops

#endif  // KILN_OPS_ROW_H_
