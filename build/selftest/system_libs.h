#ifndef KILN_BUILD_SELFTEST_SYSTEM_LIBS_H_
#define KILN_BUILD_SELFTEST_SYSTEM_LIBS_H_

#include <string>

namespace kiln::selftest {

// Parses an (empty) serialized onnx::ModelProto; returns its ir_version or -1.
long long ParseOnnxModel(const std::string& bytes);

// re2 full match.
bool Re2Matches(const std::string& text, const std::string& pattern);

// cblas_ddot of two length-3 vectors.
double Dot3(const double* a, const double* b);

// dlsym(RTLD_DEFAULT, name) != nullptr.
bool HasSymbol(const char* name);

}  // namespace kiln::selftest

#endif  // KILN_BUILD_SELFTEST_SYSTEM_LIBS_H_
