// Test binaries that link only the CPU device.
#include "lazy/test_util.h"

namespace kiln::lazy::testing {

absl::Status RegisterTestDevices() { return absl::OkStatus(); }

}  // namespace kiln::lazy::testing
