#include "support/allocator.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace kiln {

void KeepFreedMemoryInProcess() {
#if defined(__GLIBC__)
  // Large blocks from the heap rather than mmap (mmap'd blocks go back to the
  // kernel on free), no trimming of the heap top, and headroom on growth.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

}  // namespace kiln
