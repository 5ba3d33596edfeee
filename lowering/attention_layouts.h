// The buffers of a kiln::attention call (passes/fuse_attention.h) as the
// devices' generated attention kernels take them (backends/cpu
// attention_codegen.h, backends/cuda attention_kernel.h): shapes checked
// against each other, the batch dims counted, the mask padded to q's rank.
// dtypes and head-dim limits are each kernel's own.
#ifndef KILN_LOWERING_ATTENTION_LAYOUTS_H_
#define KILN_LOWERING_ATTENTION_LAYOUTS_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"

namespace kiln::lowering {

struct AttentionDims {
  int64_t batches = 1;  // product of the leading dims
  int64_t s = 0, d = 0, t = 0, dv = 0;
  std::optional<Layout> mask;  // with q's rank (size-1 dims of stride 0 on the left)
};

// q [.., S, D], kt [.., D, T], v [.., T, Dv], out [.., S, Dv] with the same
// leading dims, every dim positive; the mask broadcasting to [.., S, T].
// Unimplemented naming what does not fit (callers fall back).
absl::StatusOr<AttentionDims> CheckAttentionLayouts(const Layout& q, const Layout& kt, const Layout& v,
                                                    const Layout& out, const std::optional<Layout>& mask);

// `l` with `rank` dims: size-1, stride-0 dims added on the left.
Layout PadLayoutTo(const Layout& l, size_t rank);

// The stride of dim `d`, 0 when its size is 1 (any stride reads the same
// element; 0 keeps generated index expressions short).
inline int64_t EffectiveStride(const Layout& l, size_t d) { return l.sizes[d] == 1 ? 0 : l.strides[d]; }

}  // namespace kiln::lowering

#endif  // KILN_LOWERING_ATTENTION_LAYOUTS_H_
