/* kiln's C API: the compiler as a shared library (libkiln_c.so), for
 * languages that load C (Python's ctypes, the `kiln` package).
 *
 *   kilnc_model* m = NULL;
 *   if (kilnc_compile_file("model.onnx", NULL, NULL, 0, &m) != KILNC_OK) {
 *     fprintf(stderr, "%s\n", kilnc_last_error());
 *   }
 *   DLManagedTensor* out[1];
 *   kilnc_model_run(m, inputs, 1, out, 1);   // inputs: const DLTensor* [1]
 *   ... out[0]->dl_tensor ...; out[0]->deleter(out[0]);
 *   kilnc_model_free(m);
 *
 * Tensors are DLPack (dlpack/dlpack.h, version 0.6). Inputs are read in
 * place (CPU memory; a pointer that is not aligned to its element size, or
 * whose element 0 cannot start a 64-byte aligned view, is copied); outputs
 * are handed out without a copy as DLManagedTensors that the caller owns and
 * releases through their deleter. Nothing is retained from an input after
 * the call returns.
 *
 * Devices: a model compiled for "cpu" takes and returns host memory (kDLCPU;
 * kDLCUDAHost is read as host memory). A model compiled for "cuda[:i]" takes
 * kDLCUDA tensors of device i, read in place on the device (no host copy;
 * strides that differ from the compiled layout are copied on the device),
 * and returns kDLCUDA tensors of device i in memory from kiln's caching
 * allocator, which the deleter returns (safe from any thread, also after
 * kilnc_model_free: the allocator lives as long as the process). Host
 * tensors given to a CUDA model are accepted and copied to the device (an
 * input whose values decide shapes, such as an ONNX Reshape's shape, must
 * come this way); a CUDA tensor of another index, or any device tensor given
 * to a CPU model, is KILNC_INVALID_ARGUMENT. kilnc_model_run_stream says
 * which stream the work goes on. Constants passed to kilnc_compile_export_json are kept
 * (read in place) for the model's lifetime: the caller keeps them alive and
 * unchanged until kilnc_model_free.
 *
 * Names start with kilnc_ / KILNC_: this is the compiler's API; a deployed
 * model's library (deploy/kiln_model.h: kiln_model_*, KILN_*) can be loaded
 * into the same process.
 *
 * Errors: every fallible call returns a kilnc_status (absl's status codes;
 * KILNC_OK is 0) and leaves a message for the calling thread in
 * kilnc_last_error(). No C++ exception crosses this boundary. The library
 * has no dependency on Python.
 */
#ifndef KILN_PYTHON_KILN_C_H_
#define KILN_PYTHON_KILN_C_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a declaration below changes incompatibly. */
#define KILNC_API_VERSION 2

/* DLPack 0.8's boolean type code (Debian's 0.6 header lacks it). */
#define KILNC_DL_BOOL 6

/* absl::StatusCode's values. */
typedef enum kilnc_status {
  KILNC_OK = 0,
  KILNC_CANCELLED = 1,
  KILNC_UNKNOWN = 2,
  KILNC_INVALID_ARGUMENT = 3,
  KILNC_DEADLINE_EXCEEDED = 4,
  KILNC_NOT_FOUND = 5,
  KILNC_ALREADY_EXISTS = 6,
  KILNC_PERMISSION_DENIED = 7,
  KILNC_RESOURCE_EXHAUSTED = 8,
  KILNC_FAILED_PRECONDITION = 9,
  KILNC_ABORTED = 10,
  KILNC_OUT_OF_RANGE = 11,
  KILNC_UNIMPLEMENTED = 12,
  KILNC_INTERNAL = 13,
  KILNC_UNAVAILABLE = 14,
  KILNC_DATA_LOSS = 15,
  KILNC_UNAUTHENTICATED = 16
} kilnc_status;

typedef struct kilnc_model kilnc_model;

typedef struct kilnc_compile_options {
  /* "cpu" (NULL or "" means "cpu"), "cuda", "cuda:1", or any registered
   * device. */
  const char* device;
  /* A pass pipeline spec: "-O2" (NULL), "-O0", "dce,cse", ... */
  const char* pipeline;
  /* Versions kept for calls with other input shapes (0: 8). */
  int max_specializations;
} kilnc_compile_options;

int kilnc_api_version(void);
/* kiln's version string (what `kiln --version` prints). */
const char* kilnc_version(void);
/* The message of the calling thread's last failed call; "" when the last
 * call succeeded. Valid until the thread's next kiln call. */
const char* kilnc_last_error(void);

/* 1 when kiln's operator registry has the schema `qualified_name`
 * ("aten::convolution", "aten::add.Tensor"), else 0 (also on errors).
 * Frontends use it to decide which ops to decompose before handing a graph
 * over; a known schema is no promise that every device compiles it. */
int kilnc_has_operator(const char* qualified_name);

/* Compiles an ONNX model (.onnx) or a torch.export archive (.pt2).
 * `example_inputs` (may be NULL, data may be NULL: only dtypes and shapes
 * are read) gives the shapes to compile for first; without them a model is
 * compiled for its declared shapes (a .pt2 with symbolic sizes: the traced
 * ones). */
kilnc_status kilnc_compile_file(const char* path, const kilnc_compile_options* options,
                              const DLTensor* const* example_inputs, int num_example_inputs,
                              kilnc_model** out);

/* Compiles a program in torch.export's serialized JSON form (the
 * models/<name>.json of a .pt2 archive, schema version 8): what the `kiln`
 * Python package writes for an FX graph. Its parameters, buffers and tensor
 * constants are given by name (FQN) as CPU DLTensors. `origin` names the
 * program in error messages (NULL: "<program>"). */
kilnc_status kilnc_compile_export_json(const char* json, size_t json_size, const char* origin,
                                     const char* const* constant_names,
                                     const DLTensor* const* constants, int num_constants,
                                     const kilnc_compile_options* options, kilnc_model** out);

/* The graph's tensor inputs and outputs. -1 for a NULL model. */
int kilnc_model_num_inputs(const kilnc_model* model);
int kilnc_model_num_outputs(const kilnc_model* model);

/* Runs the model. A call whose input shapes differ from the compiled ones
 * compiles (once) a version for them. On success `outputs[i]` are new
 * DLManagedTensors (in the model's memory: CPU, or CUDA for a CUDA model)
 * that the caller releases with their deleter. Same as
 * kilnc_model_run_stream(model, NULL, ...). */
kilnc_status kilnc_model_run(kilnc_model* model, const DLTensor* const* inputs, int num_inputs,
                           DLManagedTensor** outputs, int num_outputs);

/* Runs a CUDA model's work on `stream`, a CUstream the caller owns (torch:
 * torch.cuda.current_stream().cuda_stream), in the device's primary context
 * (shared with torch). NULL (0) is the legacy default stream, which is also
 * torch's default stream. The call returns once the work is queued, without
 * synchronizing: outputs are ready in stream order, so the caller's later
 * work on the same stream needs no synchronize. The caller keeps inputs
 * alive and unchanged until the stream has run the call, and synchronizes
 * before using an output on another stream (or freeing it while another
 * stream still reads it: its memory is reused in `stream`'s order). A host
 * fallback inside the program (an op kiln runs on the host) synchronizes
 * `stream` itself. A CPU model takes NULL only. CUDA graph replay
 * (`kiln run --device cuda`) is not used here. */
kilnc_status kilnc_model_run_stream(kilnc_model* model, void* stream, const DLTensor* const* inputs,
                                  int num_inputs, DLManagedTensor** outputs, int num_outputs);

/* What the first compile did, as a JSON object: kernels, externs (library
 * and reference-kernel calls), interpreter islands, the ops that ran
 * uncompiled ("not_compiled_ops"), compile times. Valid until
 * kilnc_model_free. */
const char* kilnc_model_summary(const kilnc_model* model);

void kilnc_model_free(kilnc_model* model);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* KILN_PYTHON_KILN_C_H_ */
