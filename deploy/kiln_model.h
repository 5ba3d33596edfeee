/* kiln_model.h: the C API of a model compiled by
 *
 *     kiln compile MODEL.pt2|MODEL.onnx --device cpu -o DIR
 *
 * DIR holds libmodel.so (this API), model_kernels.so (the model's compiled
 * kernels), model_program.pb (its program), model.weights (every weight, in
 * one file, mapped read-only at load) and this header. Load libmodel.so with
 * dlopen (or link against it) and call kiln_model_create(DIR). Nothing of
 * kiln's build is needed: this header, DLPack's dlpack.h (Debian:
 * libdlpack-dev) and the C library.
 *
 * Conventions:
 *   - Every call returns a KilnStatus; KILN_OK is 0. No call throws, aborts
 *     or exits on bad input.
 *   - kiln_last_error() is the message of the calling thread's latest call
 *     ("" after a call that succeeded), valid until that thread's next call.
 *   - Tensors are DLPack DLTensors on the CPU (kDLCPU), one lane; strides may
 *     be NULL (compact row-major). bool is {KILN_DL_BOOL, 8, 1} (DLPack 0.8's
 *     kDLBool, which Debian's 0.6 header lacks; torch uses it).
 *   - kiln_model_run may be called from several threads at once on one
 *     model; create and destroy may not race with other calls on the model.
 *   - Shapes are fixed at compile time. A .pt2 program with symbolic sizes is
 *     compiled at the sizes torch traced it with; other shapes are refused
 *     with KILN_INVALID_ARGUMENT.
 */
#ifndef KILN_MODEL_H_
#define KILN_MODEL_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define KILN_MODEL_EXPORT __attribute__((visibility("default")))
#else
#define KILN_MODEL_EXPORT
#endif

/* DLPack 0.8's bool type code. */
#define KILN_DL_BOOL 6

/* Changes with any incompatible change to this header. */
#define KILN_MODEL_API_VERSION 1

typedef enum KilnStatus {
  KILN_OK = 0,
  /* A bad argument: a null pointer, an index out of range, a tensor of the
   * wrong dtype, shape or device. */
  KILN_INVALID_ARGUMENT = 1,
  /* DIR is not a complete, intact artifact of this kiln (a missing,
   * truncated or corrupt file, or files of different compiles). */
  KILN_INVALID_MODEL = 2,
  KILN_OUT_OF_MEMORY = 3,
  /* Anything else (a failure inside the compiled program). */
  KILN_INTERNAL = 4
} KilnStatus;

/* A loaded model (opaque). */
typedef struct KilnModel KilnModel;

/* One input or output. The pointers are owned by the model and stay valid
 * until kiln_model_destroy. */
typedef struct KilnTensorInfo {
  const char* name;     /* the model's name for it (NUL-terminated) */
  DLDataType dtype;
  int32_t ndim;
  const int64_t* shape; /* ndim sizes */
} KilnTensorInfo;

/* KILN_MODEL_API_VERSION of the library (compare with the header's). */
KILN_MODEL_EXPORT uint32_t kiln_model_api_version(void);

/* The calling thread's latest error message ("" if its latest call
 * succeeded). Never NULL. */
KILN_MODEL_EXPORT const char* kiln_last_error(void);

/* Loads the model in `model_dir` (maps its weights, loads its kernels). On
 * success *model is a new handle; on failure *model is NULL. */
KILN_MODEL_EXPORT KilnStatus kiln_model_create(const char* model_dir, KilnModel** model);

/* Frees the model (NULL is a no-op). No call on it may be in progress. */
KILN_MODEL_EXPORT KilnStatus kiln_model_destroy(KilnModel* model);

KILN_MODEL_EXPORT KilnStatus kiln_model_num_inputs(const KilnModel* model, size_t* count);
KILN_MODEL_EXPORT KilnStatus kiln_model_num_outputs(const KilnModel* model, size_t* count);
KILN_MODEL_EXPORT KilnStatus kiln_model_input_info(const KilnModel* model, size_t index,
                                                   KilnTensorInfo* info);
KILN_MODEL_EXPORT KilnStatus kiln_model_output_info(const KilnModel* model, size_t index,
                                                    KilnTensorInfo* info);

/* Runs the model. `inputs` and `outputs` are in the model's order (see
 * *_info); each must have the dtype and shape its info gives. Inputs are read
 * only. Outputs are written into the caller's memory (any strides). Safe to
 * call from several threads at once on one model. */
KILN_MODEL_EXPORT KilnStatus kiln_model_run(KilnModel* model, const DLTensor* inputs, size_t num_inputs,
                                            DLTensor* outputs, size_t num_outputs);

/* Function pointer types, for callers that resolve the API with dlsym. */
typedef uint32_t (*KilnModelApiVersionFn)(void);
typedef const char* (*KilnLastErrorFn)(void);
typedef KilnStatus (*KilnModelCreateFn)(const char*, KilnModel**);
typedef KilnStatus (*KilnModelDestroyFn)(KilnModel*);
typedef KilnStatus (*KilnModelCountFn)(const KilnModel*, size_t*);
typedef KilnStatus (*KilnModelInfoFn)(const KilnModel*, size_t, KilnTensorInfo*);
typedef KilnStatus (*KilnModelRunFn)(KilnModel*, const DLTensor*, size_t, DLTensor*, size_t);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* KILN_MODEL_H_ */
