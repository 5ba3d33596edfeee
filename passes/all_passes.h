// The production pass registry.
#ifndef KILN_PASSES_ALL_PASSES_H_
#define KILN_PASSES_ALL_PASSES_H_

#include "absl/status/status.h"
#include "passes/pass_registry.h"

namespace kiln::passes {

// Registers every pass kiln ships. Fails if two passes claim a name.
absl::Status RegisterAllPasses(PassRegistry& registry);

// A process-wide registry filled by RegisterAllPasses on first use. A
// registration error there is a programming error and aborts with a
// message naming the clash.
const PassRegistry& DefaultPassRegistry();

}  // namespace kiln::passes

#endif  // KILN_PASSES_ALL_PASSES_H_
