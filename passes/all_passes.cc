#include "passes/all_passes.h"

#include <cstdio>
#include <cstdlib>

#include "passes/constant_pooling.h"
#include "passes/constant_propagation.h"
#include "passes/cse.h"
#include "passes/dce.h"
#include "passes/peephole.h"
#include "passes/canonicalize.h"
#include "passes/decompositions.h"
#include "passes/fuse_attention.h"
#include "passes/fuse_post_ops.h"
#include "passes/library_channel_ops.h"
#include "passes/shape_propagation.h"
#include "passes/shape_resolution.h"
#include "support/status.h"

// A new pass library adds its include and one Register*Pass line below.
// Each registers its canonical name and aliases itself (`kiln opt
// --list-passes` shows them); the -O presets (pipeline_spec.cc) name passes
// by canonical name, so renaming one means changing the presets too.

namespace kiln::passes {

absl::Status RegisterAllPasses(PassRegistry& registry) {
  RETURN_IF_ERROR(RegisterDeadCodeEliminationPass(registry));
  RETURN_IF_ERROR(RegisterCommonSubexpressionEliminationPass(registry));
  RETURN_IF_ERROR(RegisterConstantPoolingPass(registry));
  RETURN_IF_ERROR(RegisterConstantPropagationPass(registry));
  RETURN_IF_ERROR(RegisterPeepholePass(registry));
  RETURN_IF_ERROR(RegisterShapePropagationPass(registry));
  RETURN_IF_ERROR(RegisterShapeResolutionPass(registry));
  RETURN_IF_ERROR(RegisterDecomposePass(registry));
  RETURN_IF_ERROR(RegisterCanonicalizePass(registry));
  RETURN_IF_ERROR(RegisterFusePostOpsPass(registry));
  RETURN_IF_ERROR(RegisterFuseAttentionPass(registry));
  RETURN_IF_ERROR(RegisterLibraryChannelOpsPass(registry));
  return absl::OkStatus();
}

const PassRegistry& DefaultPassRegistry() {
  static const PassRegistry* registry = [] {
    auto* r = new PassRegistry();
    absl::Status s = RegisterAllPasses(*r);
    if (!s.ok()) {
      std::fprintf(stderr, "kiln: pass registration failed: %s\n",
                   std::string(s.message()).c_str());
      std::abort();
    }
    return r;
  }();
  return *registry;
}

}  // namespace kiln::passes
