// A parallel loop over independent indices: the few places that spread
// large, uneven work over threads (checksums of cache entries, ONNX
// initializer copies, weight hashes, NVRTC units) share this one.
#ifndef KILN_SUPPORT_PARALLEL_H_
#define KILN_SUPPORT_PARALLEL_H_

#include <cstddef>
#include <functional>

namespace kiln {

// The machine's hardware threads (at least 1).
size_t HardwareThreads();

// Runs body(i) once for every i in [0, n) on min(n, threads) threads, the
// caller's among them; each takes the next index from a shared counter, so
// callers order the indices largest first when the work is uneven. Returns
// when every call has returned. threads <= 1 runs them in order here.
void ParallelFor(size_t n, size_t threads, const std::function<void(size_t)>& body);

}  // namespace kiln

#endif  // KILN_SUPPORT_PARALLEL_H_
