// Test helpers: TorchScript IR text -> shapes and decompositions -> LoopGraph
// (-> Schedule), with readable summaries to compare against.
#ifndef KILN_LOWERING_LOWER_TEST_UTIL_H_
#define KILN_LOWERING_LOWER_TEST_UTIL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/ir.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"

namespace kiln::lowering::testing {

// Parses `text`, runs passes::PrepareForLowering (as the compile pipeline) and lowers. Reference kernels and
// shape functions are registered in ir::BuiltinOps() first.
absl::StatusOr<LoopGraph> LowerText(const std::string& text);
// Parses `text` and runs shape propagation (registering as LowerText does).
absl::StatusOr<std::unique_ptr<ir::Graph>> ParsePropagated(const std::string& text);

// LowerText's LoopGraph as text (LoopGraph::ToString), or the error message.
std::string LowerTextDump(const std::string& text);

// One line per step: "kernel NAME [buffers] reads [reads]" or "extern BUF".
std::string ScheduleToString(const Schedule& schedule);

}  // namespace kiln::lowering::testing

#endif  // KILN_LOWERING_LOWER_TEST_UTIL_H_
