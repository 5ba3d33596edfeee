// The sim device's kernel launch convention (its "driver API"): a kernel
// (sim_isa.h) is launched on a stream with a grid of blocks of threads and
// one argument per parameter (a device pointer plus its extent). Thread g
// of the grid computes elements g, g + grid size, ... of each section (a
// grid-stride loop), and sections run one after another with a grid-wide
// barrier between them, so a section may read what an earlier one wrote.
//
//   ASSIGN_OR_RETURN(Grid grid, GridFor(*kernel, props));
//   RETURN_IF_ERROR(Launch(stream, kernel, grid, {{x_ptr, 1024}, {y_ptr, 1024}}));
//   RETURN_IF_ERROR(stream.Synchronize());  // the launch runs here
#ifndef KILN_SIM_SIM_LAUNCH_H_
#define KILN_SIM_SIM_LAUNCH_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/device_interface.h"
#include "sim/sim_device.h"
#include "sim/sim_isa.h"

namespace kiln_sim {

// A kernel argument: device memory holding `elements` elements of the
// parameter's dtype (loads and stores outside it are errors, not crashes).
struct KernelArg {
  void* data = nullptr;
  int64_t elements = 0;
};

struct Grid {
  int64_t blocks = 1;
  int threads_per_block = 1;
};

// Enough blocks of max_threads_per_block threads to give every element of
// the largest section its own thread, capped at 64 blocks per
// multiprocessor (the rest is covered by the grid-stride loop).
Grid GridFor(const Kernel& kernel, const kiln::devices::DeviceProperties& props);

// Queues the launch on `stream` (it runs when the stream runs).
absl::Status Launch(SimStream& stream, std::shared_ptr<const Kernel> kernel, Grid grid,
                    std::vector<KernelArg> args);

// Runs a launch immediately (what queued launches do).
absl::Status Execute(const Kernel& kernel, Grid grid, const std::vector<KernelArg>& args);

}  // namespace kiln_sim

#endif  // KILN_SIM_SIM_LAUNCH_H_
