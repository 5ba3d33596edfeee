// The helpers that give generated C-family code the loop IR's integer and
// NaN semantics (lowering/loop_ir.h), written once for every device: the
// CPU's and CUDA's preludes include this text, and an out-of-tree device's
// can too.
//
// Before the text, the including prelude must define KILN_FN (the helpers'
// qualifiers: `static inline __attribute__((always_inline))` for the CPU,
// `__device__ __forceinline__` for CUDA) and make fmodf/fmod visible.
//
//   kiln_max / kiln_min   NaN-propagating maximum/minimum (torch.maximum)
//   kiln_idiv             truncating integer division; by zero gives 0,
//                         INT_MIN / -1 wraps instead of trapping
//   kiln_ifloordiv        Python floor division (same edge cases)
//   kiln_imod             Python remainder (sign of the divisor; by 0 or -1: 0)
//   kiln_fmod_py          Python float remainder (float and double)
//   kiln_ipow             integer power by squaring (negative exponents as torch)
//   kiln_sign             -1/0/1, NaN stays NaN
//   kiln_float_to_int64   float to integer: NaN gives 0, saturates at int64's
//   kiln_float_to_uint64  range (narrower integers wrap from that), as the
//                         interpreter converts
#ifndef KILN_CODEGEN_C_PRELUDE_H_
#define KILN_CODEGEN_C_PRELUDE_H_

namespace kiln::codegen {

extern const char kCSemanticsPrelude[];

}  // namespace kiln::codegen

#endif  // KILN_CODEGEN_C_PRELUDE_H_
