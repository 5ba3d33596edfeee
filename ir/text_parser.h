// Parses TorchScript's IR text format (what `str(graph)` prints) into a Graph.
//
// Accepts everything PyTorch prints for real models: `<Tensor>` and inline
// tensor constants, module-typed inputs, scopes, `# file:line:col` comments,
// zero-output nodes written with or without a leading ` = `, and leading
// `#` comment lines. Errors are absl::InvalidArgumentError with
// "line:column: expected ..., got ...". It never crashes on bad input.
#ifndef KILN_IR_TEXT_PARSER_H_
#define KILN_IR_TEXT_PARSER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"

namespace kiln::ir {

absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text);

}  // namespace kiln::ir

#endif  // KILN_IR_TEXT_PARSER_H_
