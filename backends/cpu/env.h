// The CPU backend's environment switches, each read once (at first use):
//
//   KILN_NUM_THREADS=N         default thread count of a program (threads.h)
//   KILN_CPU_LIBRARY=0         no library calls: every extern through its
//                              reference kernel (before/after comparisons)
//   KILN_CPU_LIBRARY_VERBOSE=1 print what runs each extern when a program loads
//   KILN_CPU_PROFILE=1         time each extern call; print the sums per
//                              extern when a program is destroyed
//   KILN_CPU_PACKED_CACHE=0    pack weights at every load, never through the
//                              on-disk cache (packed_cache.h)
//   KILN_CPU_WINOGRAD=0        no Winograd convolutions: every convolution
//                              direct (library_conv.cc says which take it)
#ifndef KILN_BACKENDS_CPU_ENV_H_
#define KILN_BACKENDS_CPU_ENV_H_

#include <optional>

namespace kiln::backends::cpu::env {

// KILN_NUM_THREADS when it is an integer in [1, 4096].
std::optional<int> NumThreads();
bool LibraryDisabled();
bool LibraryVerbose();
bool Profile();
bool PackedCacheDisabled();
bool WinogradDisabled();

}  // namespace kiln::backends::cpu::env

#endif  // KILN_BACKENDS_CPU_ENV_H_
