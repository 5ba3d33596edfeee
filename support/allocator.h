// Process-wide allocator settings for a compiler process.
#ifndef KILN_SUPPORT_ALLOCATOR_H_
#define KILN_SUPPORT_ALLOCATOR_H_

namespace kiln {

// Keeps freed heap memory in the process instead of returning it to the
// kernel after every large graph. Fresh pages are expensive (on small VMs a
// page fault costs tens of microseconds), and a compiler frees and rebuilds
// large graphs repeatedly. Call once from main(); a no-op off glibc.
void KeepFreedMemoryInProcess();

}  // namespace kiln

#endif  // KILN_SUPPORT_ALLOCATOR_H_
