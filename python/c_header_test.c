/* kiln_c.h is C: this file is compiled as C99 and links against the C API.
 * It compiles an ONNX model, runs it on zeros, and checks an error path. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdio.h>
#include <stdlib.h>

#include "python/kiln_c.h"

int main(void) {
  kilnc_model* model = NULL;
  int64_t shape[4] = {1, 3, 32, 32};
  float* x = calloc(3 * 32 * 32, sizeof(float));
  DLTensor in;
  const DLTensor* inputs[1];
  DLManagedTensor* outputs[1];
  kilnc_compile_options options = {"cpu", "-O2", 0};
  const char* tmp = getenv("TEST_TMPDIR");
  char cache[4096];
  if (tmp != NULL) {
    snprintf(cache, sizeof(cache), "%s/kiln_cache", tmp);
    setenv("KILN_CACHE_DIR", cache, 1);
  }
  if (kilnc_compile_file("/no/such.onnx", &options, NULL, 0, &model) == KILNC_OK || kilnc_last_error()[0] == '\0') {
    fprintf(stderr, "a missing file compiled\n");
    return 1;
  }
  if (kilnc_compile_file("testdata/onnx_models/small_cnn/model.onnx", &options, NULL, 0, &model) != KILNC_OK) {
    fprintf(stderr, "compile: %s\n", kilnc_last_error());
    return 1;
  }
  in.data = x;
  in.device.device_type = kDLCPU;
  in.device.device_id = 0;
  in.ndim = 4;
  in.dtype.code = kDLFloat;
  in.dtype.bits = 32;
  in.dtype.lanes = 1;
  in.shape = shape;
  in.strides = NULL;
  in.byte_offset = 0;
  inputs[0] = &in;
  if (kilnc_model_run(model, inputs, 1, outputs, 1) != KILNC_OK) {
    fprintf(stderr, "run: %s\n", kilnc_last_error());
    return 1;
  }
  if (outputs[0]->dl_tensor.ndim < 1 || outputs[0]->dl_tensor.shape[0] != 1) {
    fprintf(stderr, "unexpected output shape\n");
    return 1;
  }
  outputs[0]->deleter(outputs[0]);
  kilnc_model_free(model);
  free(x);
  printf("kiln %s from C: ok\n", kilnc_version());
  return 0;
}
