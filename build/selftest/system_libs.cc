#include "build/selftest/system_libs.h"

#include <cblas.h>
#include <dlfcn.h>

#include "onnx/onnx_pb.h"
#include "re2/re2.h"

namespace kiln::selftest {

long long ParseOnnxModel(const std::string& bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return -1;
  return model.ir_version();
}

bool Re2Matches(const std::string& text, const std::string& pattern) {
  return RE2::FullMatch(text, pattern);
}

double Dot3(const double* a, const double* b) { return cblas_ddot(3, a, 1, b, 1); }

bool HasSymbol(const char* name) { return dlsym(RTLD_DEFAULT, name) != nullptr; }

}  // namespace kiln::selftest
