// Pictures of a compile as Graphviz DOT (`kiln compile --dot`): the kiln IR
// graph, and the fused kernels with the buffers they read and write. SVGs
// come from Graphviz's `dot` when it is installed (Debian: graphviz).
//
// Names from the model only ever appear inside quoted, escaped labels:
// node identifiers are generated ("n12"), so a model cannot inject DOT.
#ifndef KILN_TOOLS_GRAPHVIZ_H_
#define KILN_TOOLS_GRAPHVIZ_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "ir/ir.h"
#include "lowering/loop_ir.h"
#include "lowering/schedule.h"

namespace kiln::tools {

// `text` as the inside of a DOT double-quoted string: control bytes escaped
// (tools/terminal.h), backslashes and quotes escaped, cut to `max_bytes`.
std::string DotLabel(absl::string_view text, size_t max_bytes = 80);

// The top-level nodes of `graph` (prim::Constant left out: weights would
// drown the picture) as boxes labelled with the op and its first output's
// type; graph inputs and outputs as ellipses; an edge per value use. A node
// with blocks (prim::If, prim::Loop) is one box saying how many nodes its
// blocks hold.
std::string GraphToDot(const ir::Graph& graph, absl::string_view title);

// The schedule: each fused kernel and each extern call as a box (kernel
// name, or op), each buffer it reads or writes as an ellipse (name, dtype
// and shape); views hang off their base with a dashed edge. Constant
// buffers are left out (counted in the title).
std::string KernelsToDot(const lowering::LoopGraph& graph, const lowering::Schedule& schedule,
                         absl::string_view title);

// Runs `dot -Tsvg -o svg_path dot_path`. NotFound when no `dot` is on the
// PATH; Internal when it fails.
absl::Status RenderSvg(const std::string& dot_path, const std::string& svg_path);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_GRAPHVIZ_H_
