// The ABI between a loaded program and the host (this process). The
// generated translation unit declares the same struct (prelude.cc); the
// version number changes with any change to either.
//
// Entry point of a generated library:
//   extern "C" int kiln_run(const KilnHostApi* api, void* const* inputs,
//                           void* const* constants, void** outputs);
// returning 0 on success; on failure the host's context holds the message.
// Every buffer pointer is the base of its storage: element `offset + sum
// index*stride` of a buffer's layout lives at base[that].
#ifndef KILN_BACKENDS_CPU_HOST_API_H_
#define KILN_BACKENDS_CPU_HOST_API_H_

#include <cstdint>

namespace kiln::backends::cpu {

inline constexpr int64_t kHostAbiVersion = 3;

extern "C" {
// Row-major float32 GEMM, BLAS sgemm's arguments: c = alpha * op(a) op(b) +
// beta * c, op a transpose for 'T'. 0 on success. oneDNN's sgemm behind it
// (inside a parallel region it runs on the calling thread).
typedef int (*KilnSgemmFn)(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

struct KilnHostApi {
  int64_t abi_version;
  void* ctx;
  // A 64-byte aligned block for `nbytes` bytes of `dtype_code` (a kiln DType
  // code) elements, contents unspecified (pooled across runs); null on
  // failure.
  void* (*alloc)(void* ctx, int64_t nbytes, int64_t dtype_code);
  void (*release)(void* ctx, void* ptr);
  // Runs extern call `index` of the program; `buffers` are its buffer
  // arguments, then its outputs. Nonzero on failure.
  int (*extern_call)(void* ctx, int64_t index, void* const* buffers);
  // Records a failure message (for failures the generated code detects).
  void (*fail)(void* ctx, const char* message);
  // Profiling (`kiln run --profile`): called before (end = 0) and after
  // (end = 1) step `step` of the program (a kernel or extern call, in
  // GeneratedProgram::steps order); null when not profiling.
  void (*step)(void* ctx, int64_t step, int64_t end);
  // Library code that generated kernels call directly (no ctx, no extern
  // index: usable inside their parallel loops). Generated code reaches
  // oneDNN only through this table and extern_call, so the program library
  // names no oneDNN symbol and loads the same in `kiln run` and in a
  // deployed artifact (deploy/, whose runtime exports no oneDNN symbol).
  KilnSgemmFn sgemm;
};
typedef int (*KilnRunFn)(const KilnHostApi* api, void* const* inputs, void* const* constants,
                         void** outputs);
typedef int64_t (*KilnAbiVersionFn)();
}

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_HOST_API_H_
