// Shared by the lazy tests: backend set-up and tensor helpers.
#ifndef KILN_LAZY_TEST_UTIL_H_
#define KILN_LAZY_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "support/tensor.h"

namespace kiln::lazy::testing {

// "cpu" unless KILN_LAZY_DEVICE names another device type ("cuda").
std::string TestDeviceName();

// Registers the CPU device (its codegen), the devices of
// RegisterTestDevices(), the reference kernels and the kiln lazy backend for
// TestDeviceName().
absl::Status SetUpBackend();

// Defined by the device library the test links: :test_devices_cpu (nothing
// more than the CPU) or :test_devices_cuda (backends/cuda's
// RegisterCudaBackend()).
absl::Status RegisterTestDevices();

// Deterministic float32 values in [-scale, scale].
Tensor RandomTensor(std::vector<int64_t> sizes, uint32_t seed, float scale = 1.0f);

// Largest |a - b| over the elements; +inf if the shapes or dtypes differ.
double MaxAbsDiff(const Tensor& a, const Tensor& b);

}  // namespace kiln::lazy::testing

#endif  // KILN_LAZY_TEST_UTIL_H_
