// Parameters, buffers and tensor constants of a .pt2 archive as Tensors.
// `data/weights/<model>_weights_config.json` (and the constants' config)
// map each FQN to a storage file and its dtype, sizes, strides and offset;
// several FQNs may share one file. A file stored at an aligned offset
// becomes the tensor's storage without a copy (the archive's mapping stays
// alive as long as the tensor). Pickled payloads (older archives, custom
// objects) are refused, never unpickled.
#ifndef KILN_FRONTEND_PT2_WEIGHTS_H_
#define KILN_FRONTEND_PT2_WEIGHTS_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontend/pt2/archive.h"
#include "frontend/pt2/program.h"
#include "support/tensor.h"

namespace kiln::frontend::pt2 {

struct Payloads {
  absl::flat_hash_map<std::string, Tensor> tensors;  // by FQN
  int zero_copy_files = 0;  // storage files used in place
  int copied_files = 0;
  uint64_t bytes = 0;  // of the storage files loaded
};

// Loads the payloads named in `wanted` (FQNs) from the weights and constants
// configs of `model`. A wanted FQN in neither config is an error naming it.
absl::StatusOr<Payloads> LoadPayloads(const Archive& archive, absl::string_view model,
                                      const std::set<std::string>& wanted);

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_WEIGHTS_H_
