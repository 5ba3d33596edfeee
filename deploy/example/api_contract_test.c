/* kiln_model.h's contract, checked from C against a compiled model with one
 * or more inputs and a float32 output (//tools:deploy_test passes a compiled
 * bert_mask):
 *
 *   api_contract_test DIR
 *
 * Bad arguments, dtypes, shapes and devices are statuses with messages;
 * outputs written through strides and inputs read from unaligned memory give
 * the results of compact, aligned tensors. Exit status 0 when every check
 * holds; each failure is printed. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_model.h"

static int failures = 0;

#define CHECK(cond, what)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      fprintf(stderr, "FAIL line %d: %s\n", __LINE__, what); \
      ++failures;                                           \
    }                                                       \
  } while (0)

static KilnLastErrorFn last_error;

/* `status` is `want` and the thread's message contains `needle`. */
static void Expect(KilnStatus status, KilnStatus want, const char* needle, const char* what) {
  if (status != want) {
    fprintf(stderr, "FAIL %s: status %d, want %d (%s)\n", what, (int)status, (int)want, last_error());
    ++failures;
  } else if (needle != NULL && strstr(last_error(), needle) == NULL) {
    fprintf(stderr, "FAIL %s: message \"%s\" lacks \"%s\"\n", what, last_error(), needle);
    ++failures;
  }
}

static size_t Bytes(const KilnTensorInfo* info) {
  size_t n = info->dtype.bits / 8;
  for (int32_t d = 0; d < info->ndim; ++d) n *= (size_t)info->shape[d];
  return n;
}

static DLTensor Tensor(const KilnTensorInfo* info, void* data) {
  DLTensor t;
  memset(&t, 0, sizeof(t));
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = info->ndim;
  t.dtype = info->dtype;
  t.shape = (int64_t*)info->shape;
  return t;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: api_contract_test DIR\n");
    return 2;
  }
  char path[4096];
  snprintf(path, sizeof(path), "%s/libmodel.so", argv[1]);
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  last_error = (KilnLastErrorFn)dlsym(lib, "kiln_last_error");
  KilnModelCreateFn create = (KilnModelCreateFn)dlsym(lib, "kiln_model_create");
  KilnModelDestroyFn destroy = (KilnModelDestroyFn)dlsym(lib, "kiln_model_destroy");
  KilnModelCountFn num_inputs = (KilnModelCountFn)dlsym(lib, "kiln_model_num_inputs");
  KilnModelCountFn num_outputs = (KilnModelCountFn)dlsym(lib, "kiln_model_num_outputs");
  KilnModelInfoFn input_info = (KilnModelInfoFn)dlsym(lib, "kiln_model_input_info");
  KilnModelInfoFn output_info = (KilnModelInfoFn)dlsym(lib, "kiln_model_output_info");
  KilnModelRunFn run = (KilnModelRunFn)dlsym(lib, "kiln_model_run");
  if (!last_error || !create || !destroy || !num_inputs || !num_outputs || !input_info || !output_info || !run) {
    fprintf(stderr, "libmodel.so lacks part of the API\n");
    return 2;
  }
  /* Only the API is exported. */
  CHECK(dlsym(lib, "_ZN4kiln6deploy13DeployedModel4LoadERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE") == NULL,
        "kiln's C++ symbols are hidden");

  KilnModel* model = (KilnModel*)1;
  Expect(create(NULL, &model), KILN_INVALID_ARGUMENT, "null", "create(NULL dir)");
  CHECK(model == NULL, "create clears *model on failure");
  Expect(create(argv[1], NULL), KILN_INVALID_ARGUMENT, "null", "create(NULL out)");
  Expect(create("/nonexistent/kiln/model", &model), KILN_INVALID_MODEL, "model.weights", "create(missing dir)");
  Expect(destroy(NULL), KILN_OK, NULL, "destroy(NULL)");

  Expect(create(argv[1], &model), KILN_OK, NULL, "create");
  CHECK(strcmp(last_error(), "") == 0, "a successful call clears the message");
  if (model == NULL) return 1;

  size_t n_in = 0, n_out = 0;
  Expect(num_inputs(model, &n_in), KILN_OK, NULL, "num_inputs");
  Expect(num_outputs(model, &n_out), KILN_OK, NULL, "num_outputs");
  Expect(num_inputs(NULL, &n_in), KILN_INVALID_ARGUMENT, NULL, "num_inputs(NULL)");
  CHECK(n_in >= 1 && n_in <= 8 && n_out >= 1 && n_out <= 8, "input and output counts");
  KilnTensorInfo info;
  Expect(input_info(model, n_in, &info), KILN_INVALID_ARGUMENT, "out of range", "input_info(past the end)");
  Expect(output_info(model, 0, NULL), KILN_INVALID_ARGUMENT, NULL, "output_info(NULL info)");

  KilnTensorInfo in_info[8], out_info[8];
  void* in_data[8];
  void* out_data[8];
  DLTensor in[8], out[8];
  for (size_t i = 0; i < n_in; ++i) {
    Expect(input_info(model, i, &in_info[i]), KILN_OK, NULL, "input_info");
    in_data[i] = calloc(1, Bytes(&in_info[i]) + 64);
    in[i] = Tensor(&in_info[i], in_data[i]);
  }
  for (size_t i = 0; i < n_out; ++i) {
    Expect(output_info(model, i, &out_info[i]), KILN_OK, NULL, "output_info");
    out_data[i] = calloc(1, Bytes(&out_info[i]));
    out[i] = Tensor(&out_info[i], out_data[i]);
  }
  CHECK(out_info[0].dtype.code == kDLFloat && out_info[0].dtype.bits == 32 && out_info[0].ndim == 3,
        "output 0 is a float32 tensor of rank 3");

  /* Compact, aligned (calloc: 16 bytes at least; either path is fine). */
  Expect(run(model, in, n_in, out, n_out), KILN_OK, NULL, "run");

  /* Wrong counts, null model, dtype, shape, device, data. */
  Expect(run(NULL, in, n_in, out, n_out), KILN_INVALID_ARGUMENT, "null", "run(NULL model)");
  Expect(run(model, in, n_in - 1, out, n_out), KILN_INVALID_ARGUMENT, "inputs", "run(too few inputs)");
  DLTensor bad = in[0];
  bad.dtype.bits = (uint8_t)(bad.dtype.bits == 32 ? 64 : 32);
  DLTensor saved = in[0];
  in[0] = bad;
  Expect(run(model, in, n_in, out, n_out), KILN_INVALID_ARGUMENT, "dtype", "run(wrong dtype)");
  int64_t other_shape[8];
  memcpy(other_shape, saved.shape, sizeof(int64_t) * (size_t)saved.ndim);
  other_shape[0] += 1;
  in[0] = saved;
  in[0].shape = other_shape;
  Expect(run(model, in, n_in, out, n_out), KILN_INVALID_ARGUMENT, "shape", "run(wrong shape)");
  in[0] = saved;
  in[0].device.device_type = kDLCUDA;
  Expect(run(model, in, n_in, out, n_out), KILN_INVALID_ARGUMENT, "device", "run(wrong device)");
  in[0] = saved;
  in[0].data = NULL;
  Expect(run(model, in, n_in, out, n_out), KILN_INVALID_ARGUMENT, "null data", "run(null data)");
  in[0] = saved;
  DLTensor out_saved = out[0];
  out[0].ndim = 2;
  Expect(run(model, in, n_in, out, n_out), KILN_INVALID_ARGUMENT, "output 0", "run(wrong output rank)");
  out[0] = out_saved;

  /* Output 0 through strides (its dims reversed in memory), input 0 read
   * from memory 8 bytes off alignment via byte_offset: the same values. */
  const int64_t* s = out_info[0].shape;
  int64_t strides[3] = {1, s[0], s[0] * s[1]};
  float* strided = (float*)calloc(1, Bytes(&out_info[0]));
  out[0].data = strided;
  out[0].strides = strides;
  char* shifted = (char*)calloc(1, Bytes(&in_info[0]) + 72);
  memcpy(shifted + 8, in_data[0], Bytes(&in_info[0]));
  in[0].data = shifted;
  in[0].byte_offset = 8;
  Expect(run(model, in, n_in, out, n_out), KILN_OK, NULL, "run(strided output, offset input)");
  const float* compact = (const float*)out_data[0];
  int same = 1;
  for (int64_t i = 0; i < s[0]; ++i) {
    for (int64_t j = 0; j < s[1]; ++j) {
      for (int64_t k = 0; k < s[2]; ++k) {
        if (compact[(i * s[1] + j) * s[2] + k] != strided[i * strides[0] + j * strides[1] + k * strides[2]]) same = 0;
      }
    }
  }
  CHECK(same, "strided output and offset input give the compact results");

  Expect(destroy(model), KILN_OK, NULL, "destroy");
  free(strided);
  free(shifted);
  for (size_t i = 0; i < n_in; ++i) free(in_data[i]);
  for (size_t i = 0; i < n_out; ++i) free(out_data[i]);
  if (failures == 0) printf("api_contract_test: every check passed\n");
  return failures == 0 ? 0 : 1;
}
