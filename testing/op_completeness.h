// The completeness rules of the op table (ops/README.md, issue 12):
//
//   * every row has a shape and dtype function;
//   * a row with a decomposition and also a bespoke lowering or a library
//     extern says in its note which benchmark shows the bespoke path wins;
//   * every required op (torch 2.11's core ATen set, ops/core_aten_ops.txt;
//     every op the ONNX importer emits, and what the compile pipeline
//     decomposes those into) has a row, and, when it returns tensors, a way
//     into compiled code other than its reference kernel: a decomposition, a
//     loop lowering or a library extern (BLAS, convolution).
//
// The known gaps are listed in ops/compiled_path_gaps.txt with a reason;
// an op leaves that list once it has a path (a listed op that has one is a
// finding), so the list only shrinks. An op added without a shape function
// or a compiled path is a finding.
#ifndef KILN_TESTING_OP_COMPLETENESS_H_
#define KILN_TESTING_OP_COMPLETENESS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/row_facts.h"

namespace kiln::testing {

// An op some source needs, and which source ("core ATen", a model path).
struct RequiredOp {
  std::string op;  // qualified overload name
  std::string why;
};

// ops/compiled_path_gaps.txt: "QUALIFIED_NAME  reason..." per line, '#'
// comments. A repeated op is an error.
absl::StatusOr<std::map<std::string, std::string>> ParseGaps(const std::string& text);

// ops/core_aten_ops.txt: one qualified name per line, '#' comments.
std::vector<std::string> ParseOpList(const std::string& text);

// Whether a row's op returns tensors (so needs a compiled path); nullopt
// when unknown (treated as yes).
using ReturnsTensors = std::function<std::optional<bool>(const ops::RowFacts&)>;

// Findings about the rows alone: duplicate names, missing shape
// functions, decomposition next to a bespoke path without a note.
std::vector<std::string> CheckRows(const std::vector<ops::RowFacts>& rows);

// Findings about the required ops (an in-place overload is checked through
// its functional row, "aten::add_.Tensor" through "aten::add.Tensor"),
// including stale gap entries among them.
std::vector<std::string> CheckRequired(const std::vector<ops::RowFacts>& rows,
                                       const std::vector<RequiredOp>& required,
                                       const std::map<std::string, std::string>& gaps,
                                       const ReturnsTensors& returns_tensors);

// From the registry (ir::BuiltinOps()) when the op is there, else from the
// row's own schema.
std::optional<bool> RegistryReturnsTensors(const ops::RowFacts& row);

}  // namespace kiln::testing

#endif  // KILN_TESTING_OP_COMPLETENESS_H_
