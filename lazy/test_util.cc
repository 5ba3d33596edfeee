#include "lazy/test_util.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "lazy/kiln_backend.h"

namespace kiln::lazy::testing {

std::string TestDeviceName() {
  const char* env = std::getenv("KILN_LAZY_DEVICE");
  return env != nullptr && env[0] != '\0' ? std::string(env) : std::string("cpu");
}

absl::Status SetUpBackend() {
  // Compiled programs go to the test's own directory, not the user's cache
  // (under Bazel's sandbox the home directory is read-only).
  if (const char* tmp = std::getenv("TEST_TMPDIR"); tmp != nullptr && std::getenv("KILN_CACHE_DIR") == nullptr) {
    ::setenv("KILN_CACHE_DIR", (std::string(tmp) + "/kiln_cache").c_str(), 1);
  }
  absl::Status s = backends::cpu::RegisterCpuBackend();
  if (s.ok()) s = RegisterTestDevices();
  if (!s.ok()) return s;
  KilnBackendOptions options;
  options.device = TestDeviceName();
  return RegisterKilnLazyBackend(options);
}

Tensor RandomTensor(std::vector<int64_t> sizes, uint32_t seed, float scale) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(sizes));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.dtype() != b.dtype() || a.sizes() != b.sizes()) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(a.GetDouble(i) - b.GetDouble(i));
    if (std::isnan(d)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, d);
  }
  return worst;
}

}  // namespace kiln::lazy::testing
