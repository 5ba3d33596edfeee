// The CPU's one threading runtime: libgomp's pool. Generated kernels
// (`#pragma omp parallel for`) and oneDNN (built with its OpenMP runtime)
// both run on it, so a program never starts threads of its own and the two
// agree on the pool and its size. The size is the calling thread's OpenMP
// thread count, which CpuProgram::Run sets for the duration of a call:
//
//   KILN_NUM_THREADS=N        the default for every program (env.h; else
//                             libgomp's default: OMP_NUM_THREADS, or the
//                             CPUs the process may run on)
//   CpuProgram::set_num_threads(n)   per program (0: the default)
#ifndef KILN_BACKENDS_CPU_THREADS_H_
#define KILN_BACKENDS_CPU_THREADS_H_

namespace kiln::backends::cpu {

// KILN_NUM_THREADS when set to a positive integer, else libgomp's default
// (read once, at the first call).
int DefaultNumThreads();

// Sets the calling thread's OpenMP thread count for the scope (restores it
// after), so parallel regions and oneDNN primitives started from this thread
// use `n` threads.
class ScopedNumThreads {
 public:
  explicit ScopedNumThreads(int n);
  ~ScopedNumThreads();
  ScopedNumThreads(const ScopedNumThreads&) = delete;
  ScopedNumThreads& operator=(const ScopedNumThreads&) = delete;

 private:
  int previous_;
};

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_THREADS_H_
