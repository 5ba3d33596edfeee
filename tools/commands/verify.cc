#include "tools/commands/verify.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "support/status.h"
#include "tools/common_flags.h"
#include "tools/graph_io.h"

ABSL_FLAG(bool, check_schemas, true,
          "Also check every node against the registered operator schemas (an operator "
          "outside prim:: that has none is an error)");

namespace kiln::tools {
namespace {

// The verifier checks nodes against the schemas of their kind when the kind
// has any; a kind with none passes it (passes and lowering add kiln::
// helper ops of their own). A graph read from a file must only use
// operators kiln knows: prim:: ops are structural (the verifier checks
// them itself), everything else needs a registered schema.
absl::Status CheckOperatorsKnown(const ir::Graph& graph) {
  const ir::OpRegistry& ops = ir::BuiltinOps();
  std::vector<const ir::Block*> pending = {graph.block()};
  while (!pending.empty()) {
    const ir::Block* block = pending.back();
    pending.pop_back();
    for (const ir::Node* node : block->nodes()) {
      if (!node->kind().is_prim() && ops.Overloads(node->kind()).empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown operator ", node->kind().qualString(),
                         " (no schema is registered for it) in `", ir::DescribeNode(*node), "`"));
      }
      for (const ir::Block* sub : node->blocks()) pending.push_back(sub);
    }
  }
  return absl::OkStatus();
}

absl::Status RunVerify(const std::vector<std::string>& args) {
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "verify", "one graph file"));
  ASSIGN_OR_RETURN(const GraphFormat format, ChooseGraphFormat(args[0], absl::GetFlag(FLAGS_format)));
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadGraph(args[0], format));

  ir::VerifyOptions options;
  options.check_schemas = absl::GetFlag(FLAGS_check_schemas);
  absl::Status verified = ir::Verify(*graph, options);
  if (verified.ok() && options.check_schemas) verified = CheckOperatorsKnown(*graph);
  if (!verified.ok()) {
    // The file was read fine but breaks an IR invariant: exit 1, not 2.
    return InputRejected(absl::StrCat(args[0], ": verification failed: ", verified.message()));
  }
  std::printf("ok\n");
  return absl::OkStatus();
}

}  // namespace

Command VerifyCommand() {
  Command command;
  command.name = "verify";
  command.summary = "Parse a graph and check the IR invariants (the verifier).";
  command.usage = "FILE [--format=text|pb|pbtxt] [--nocheck_schemas]";
  command.details =
      "Prints `ok` and exits 0 when the graph is well formed; exits 1 with the\n"
      "verifier's message when it is not (an operator without a registered schema\n"
      "included), and 2 when the file cannot be read or parsed.";
  command.flags = {"format", "check_schemas"};
  command.run = RunVerify;
  return command;
}

}  // namespace kiln::tools
