// The report of what did not become generated kernels (CompiledGraph's
// not_compiled), for `kiln compile`'s report.md, `kiln run` and the
// conformance runner.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "driver/compile_graph.h"

namespace kiln::driver {
namespace {

// Table cells: no line breaks, no column separators.
std::string Cell(const std::string& s) {
  std::string out = absl::StrReplaceAll(s, {{"|", "\\|"}, {"\n", " "}, {"\r", " "}});
  constexpr size_t kMax = 400;
  if (out.size() > kMax) out = out.substr(0, kMax) + "...";
  return out;
}

}  // namespace

const char* NotCompiledKindName(NotCompiledNode::Kind kind) {
  switch (kind) {
    case NotCompiledNode::Kind::kIsland: return "island";
    case NotCompiledNode::Kind::kReferenceExtern: return "reference extern";
    case NotCompiledNode::Kind::kLibraryExtern: return "library call";
    case NotCompiledNode::Kind::kGeneratedExtern: return "generated kernel";
  }
  return "?";
}

std::vector<std::string> NotCompiledOps(const CompiledGraph& c) {
  std::map<std::string, std::pair<int, int>> by_op;  // op -> (island nodes, externs)
  for (const NotCompiledNode& n : c.not_compiled) {
    if (n.kind == NotCompiledNode::Kind::kIsland) ++by_op[n.op].first;
    if (n.kind == NotCompiledNode::Kind::kReferenceExtern) ++by_op[n.op].second;
  }
  std::vector<std::string> out;
  for (const auto& [op, counts] : by_op) {
    std::string line = absl::StrCat(op, " (");
    if (counts.first > 0) absl::StrAppend(&line, "island ", counts.first);
    if (counts.second > 0) absl::StrAppend(&line, counts.first > 0 ? ", " : "", "extern ", counts.second);
    out.push_back(line + ")");
  }
  return out;
}

std::string NotCompiledReport(const CompiledGraph& c) {
  int library = 0;
  std::map<std::string, int> library_ops, generated_ops;
  std::string table;
  for (const NotCompiledNode& n : c.not_compiled) {
    if (n.kind == NotCompiledNode::Kind::kLibraryExtern) {
      ++library;
      ++library_ops[n.op];
      continue;
    }
    if (n.kind == NotCompiledNode::Kind::kGeneratedExtern) {
      ++generated_ops[n.op];
      continue;
    }
    absl::StrAppend(&table, "| ", NotCompiledKindName(n.kind),
                    n.kind == NotCompiledNode::Kind::kIsland ? absl::StrCat(" ", n.island) : "",
                    " | ", Cell(n.op), " | ", Cell(n.node), " | ", Cell(n.reason), " |\n");
  }
  std::string r;
  if (c.whole_graph_interpreted) {
    absl::StrAppend(&r, "The whole graph runs in the interpreter (", c.num_island_nodes, " nodes).\n");
  } else {
    absl::StrAppend(&r, c.num_islands, " interpreter island", c.num_islands == 1 ? "" : "s", " (",
                    c.num_island_nodes, " nodes), ", c.num_reference_externs,
                    " reference-kernel extern call", c.num_reference_externs == 1 ? "" : "s",
                    ", ", library, " library call", library == 1 ? "" : "s", ".\n");
  }
  if (!table.empty()) {
    absl::StrAppend(&r, "\n| kind | op | node | reason |\n|---|---|---|---|\n", table);
  }
  if (!library_ops.empty()) {
    absl::StrAppend(&r, "\nLibrary calls:");
    for (const auto& [op, n] : library_ops) absl::StrAppend(&r, " ", op, " x", n);
    absl::StrAppend(&r, "\n");
  }
  if (!generated_ops.empty()) {
    absl::StrAppend(&r, "\nExterns the device generated code for:");
    for (const auto& [op, n] : generated_ops) absl::StrAppend(&r, " ", op, " x", n);
    absl::StrAppend(&r, "\n");
  }
  return r;
}

}  // namespace kiln::driver
