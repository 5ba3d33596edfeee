// Test-only: the CUDA built-ins kiln's kernels use, as host C++ (g++), so
// that kernel_emulation_test (generated kernels) and
// runtime_kernel_emulation_test (the runtime's own kernels) check kernel
// logic without a GPU. A block's threads are fibers (ucontext) on one OS
// thread, switched at barriers; kiln_run_grid(grid, block, f) runs f as
// every thread of every block.
#ifndef KILN_BACKENDS_CUDA_KERNEL_EMULATION_H_
#define KILN_BACKENDS_CUDA_KERNEL_EMULATION_H_

namespace kiln::backends::cuda {

inline constexpr char kEmulation[] = R"EMU(
#include <math.h>
#include <string.h>
#include <ucontext.h>
#include <functional>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct kiln_dim3 { unsigned x = 0, y = 0, z = 0; };
kiln_dim3 threadIdx, blockIdx, blockDim, gridDim;
struct KilnFiber {
  ucontext_t context;
  std::vector<char> stack;
  bool done = false;
};
static std::vector<KilnFiber> kiln_fibers;
static ucontext_t kiln_scheduler;
static int kiln_current = 0;
static std::function<void()>* kiln_body = nullptr;
static void kiln_yield() { swapcontext(&kiln_fibers[kiln_current].context, &kiln_scheduler); }
struct KilnBarrier {
  int n = 0, count = 0, generation = 0;
  void Reset(int threads) { n = threads; count = 0; generation = 0; }
  void Wait() {
    const int g = generation;
    if (++count == n) {
      count = 0;
      ++generation;
      return;
    }
    while (g == generation) kiln_yield();
  }
};
static KilnBarrier kiln_block_barrier;
static KilnBarrier kiln_warp_barrier[32];
static unsigned long long kiln_warp_slot[32][32];
inline void __syncthreads() { kiln_block_barrier.Wait(); }
template <typename T> T __shfl_xor_sync(unsigned, T v, int offset) {
  const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long bits = 0;
  memcpy(&bits, &v, sizeof(T));
  kiln_warp_slot[warp][lane] = bits;
  kiln_warp_barrier[warp].Wait();
  bits = kiln_warp_slot[warp][lane ^ offset];
  kiln_warp_barrier[warp].Wait();
  T r;
  memcpy(&r, &bits, sizeof(T));
  return r;
}
inline void __syncwarp(unsigned = 0xffffffffu) { kiln_warp_barrier[threadIdx.x >> 5].Wait(); }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, 8); return d; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, 8); return i; }
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static void kiln_fiber_entry() {
  (*kiln_body)();
  kiln_fibers[kiln_current].done = true;
}
template <typename F> void kiln_run_grid(long long grid, int block, F f) {
  std::function<void()> body = f;
  kiln_body = &body;
  blockDim.x = block;
  gridDim.x = static_cast<unsigned>(grid);
  kiln_fibers.resize(block);
  for (long long b = 0; b < grid; ++b) {
    kiln_block_barrier.Reset(block);
    for (int w = 0; w < 32; ++w) kiln_warp_barrier[w].Reset(32);
    blockIdx.x = static_cast<unsigned>(b);
    for (int t = 0; t < block; ++t) {
      KilnFiber& fiber = kiln_fibers[t];
      fiber.done = false;
      fiber.stack.resize(64 * 1024);
      getcontext(&fiber.context);
      fiber.context.uc_stack.ss_sp = fiber.stack.data();
      fiber.context.uc_stack.ss_size = fiber.stack.size();
      fiber.context.uc_link = &kiln_scheduler;
      makecontext(&fiber.context, kiln_fiber_entry, 0);
    }
    for (bool running = true; running;) {
      running = false;
      for (int t = 0; t < block; ++t) {
        if (kiln_fibers[t].done) continue;
        kiln_current = t;
        threadIdx.x = t;
        swapcontext(&kiln_scheduler, &kiln_fibers[t].context);
        running = running || !kiln_fibers[t].done;
      }
    }
  }
}
)EMU";

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_KERNEL_EMULATION_H_
