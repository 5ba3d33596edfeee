// Prints a graph in TorchScript's text format, byte-identical to PyTorch's
// `str(graph)` (torch/csrc/jit/ir/ir.cpp, default type verbosity).
#ifndef KILN_IR_TEXT_PRINTER_H_
#define KILN_IR_TEXT_PRINTER_H_

#include <string>

#include "ir/ir.h"

namespace kiln::ir {

struct PrintOptions {
  // Print ` # file:line:col` source locations.
  bool source_locations = true;
};

std::string PrintGraph(const Graph& g, const PrintOptions& options = {});
// Appends to `out` (avoids a copy for large graphs).
void PrintGraphTo(const Graph& g, std::string* out, const PrintOptions& options = {});
// One node (without its blocks' contents), for error messages and logs:
// `%y : Tensor = aten::relu(%x)`.
std::string PrintNode(const Node& n);

}  // namespace kiln::ir

#endif  // KILN_IR_TEXT_PRINTER_H_
