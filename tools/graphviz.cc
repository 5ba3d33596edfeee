#include "tools/graphviz.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/terminal.h"

extern char** environ;

namespace kiln::tools {
namespace {

constexpr char kHeader[] =
    "  graph [fontname=\"Helvetica\", fontsize=12, rankdir=TB];\n"
    "  node [fontname=\"Helvetica\", fontsize=10];\n"
    "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];\n";

constexpr size_t kMaxTitleBytes = 300;

std::string TypeText(const ir::Value* value) { return value->type()->ToString(); }

std::string LayoutText(const lowering::Layout& layout) {
  std::string text = absl::StrCat(DTypeName(layout.dtype), "[");
  for (size_t i = 0; i < layout.sizes.size(); ++i) {
    absl::StrAppend(&text, i ? ", " : "", layout.sizes[i]);
  }
  return text + "]";
}

}  // namespace

std::string DotLabel(absl::string_view text, size_t max_bytes) {
  std::string printable = Printable(text);
  if (printable.size() > max_bytes) {
    size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(printable[cut]) & 0xC0) == 0x80) --cut;
    printable = absl::StrCat(printable.substr(0, cut), "...");
  }
  std::string out;
  for (char c : printable) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string GraphToDot(const ir::Graph& graph, absl::string_view title) {
  std::string dot = absl::StrCat("digraph kiln_ir {\n", kHeader, "  label=\"", DotLabel(title, kMaxTitleBytes),
                                 "\";\n  labelloc=t;\n");
  // The picture's node of each value: its producer, or the graph input.
  absl::flat_hash_map<const ir::Value*, std::string> source;
  int next_id = 0;
  const ir::Block* block = graph.block();
  for (const ir::Value* input : block->inputs()) {
    const std::string id = absl::StrCat("n", next_id++);
    source[input] = id;
    absl::StrAppend(&dot, "  ", id, " [shape=ellipse, style=filled, fillcolor=\"#d8e8ff\", label=\"",
                    DotLabel(input->debugName()), "\\n", DotLabel(TypeText(input)), "\"];\n");
  }
  for (const ir::Node* node : block->nodes()) {
    if (node->kind() == ir::sym::kConstant) continue;
    const std::string id = absl::StrCat("n", next_id++);
    for (const ir::Value* out : node->outputs()) source[out] = id;
    std::string label = DotLabel(node->kind().qualString());
    if (!node->outputs().empty()) {
      absl::StrAppend(&label, "\\n", DotLabel(TypeText(node->outputs()[0])));
    }
    if (!node->blocks().empty()) {
      size_t inner = 0;
      for (const ir::Block* sub : node->blocks()) {
        for (const ir::Node* n : sub->nodes()) {
          (void)n;
          ++inner;
        }
      }
      absl::StrAppend(&label, "\\n(", node->blocks().size(), " blocks, ", inner, " nodes)");
    }
    absl::StrAppend(&dot, "  ", id, " [shape=box, style=\"rounded,filled\", fillcolor=\"#fff4d6\", label=\"",
                    label, "\"");
    if (!node->scope().empty()) absl::StrAppend(&dot, ", tooltip=\"", DotLabel(node->scope()), "\"");
    absl::StrAppend(&dot, "];\n");
    absl::flat_hash_set<std::string> drawn;  // one edge per producer
    for (const ir::Value* in : node->inputs()) {
      auto it = source.find(in);
      if (it == source.end() || !drawn.insert(it->second).second) continue;
      absl::StrAppend(&dot, "  ", it->second, " -> ", id, ";\n");
    }
  }
  for (size_t i = 0; i < block->outputs().size(); ++i) {
    const std::string id = absl::StrCat("n", next_id++);
    absl::StrAppend(&dot, "  ", id, " [shape=ellipse, style=filled, fillcolor=\"#d8f5d0\", label=\"output ",
                    i, "\\n", DotLabel(TypeText(block->outputs()[i])), "\"];\n");
    auto it = source.find(block->outputs()[i]);
    if (it != source.end()) absl::StrAppend(&dot, "  ", it->second, " -> ", id, ";\n");
  }
  absl::StrAppend(&dot, "}\n");
  return dot;
}

std::string KernelsToDot(const lowering::LoopGraph& graph, const lowering::Schedule& schedule,
                         absl::string_view title) {
  absl::flat_hash_map<std::string, std::string> buffer_ids;
  std::string nodes;
  std::string edges;
  int constants = 0;
  int next_id = 0;
  // The picture's node of a buffer, drawn on first use; "" for constants.
  std::function<std::string(const std::string&)> buffer_node =
      [&](const std::string& name) -> std::string {
    if (auto it = buffer_ids.find(name); it != buffer_ids.end()) return it->second;
    const lowering::Buffer* buffer = graph.Find(name);
    if (buffer != nullptr && buffer->kind == lowering::BufferKind::kConstant) {
      ++constants;
      buffer_ids[name] = "";
      return "";
    }
    const std::string id = absl::StrCat("b", next_id++);
    buffer_ids[name] = id;
    const char* fill = "#eeeeee";
    if (buffer != nullptr && buffer->kind == lowering::BufferKind::kInput) fill = "#d8e8ff";
    absl::StrAppend(&nodes, "  ", id, " [shape=ellipse, style=filled, fillcolor=\"", fill,
                    "\", label=\"", DotLabel(name), "\\n",
                    buffer ? DotLabel(LayoutText(buffer->layout)) : "", "\"];\n");
    if (buffer != nullptr && buffer->kind == lowering::BufferKind::kView) {
      const std::string base = buffer_node(buffer->view_of);
      if (!base.empty()) {
        absl::StrAppend(&edges, "  ", base, " -> ", id, " [style=dashed, label=\"view\"];\n");
      }
    }
    return id;
  };
  int step_index = 0;
  for (const lowering::ScheduleStep& step : schedule.steps) {
    const std::string id = absl::StrCat("k", step_index++);
    std::vector<std::string> reads;
    std::vector<std::string> writes;
    std::string label;
    if (step.kind == lowering::ScheduleStep::Kind::kKernel) {
      label = DotLabel(step.kernel.name);
      reads = step.kernel.reads;
      writes = step.kernel.buffers;
      absl::StrAppend(&nodes, "  ", id, " [shape=box, style=\"rounded,filled\", fillcolor=\"#ffe0b3\", label=\"",
                      label, "\"];\n");
    } else {
      const lowering::Buffer* holder = graph.Find(step.buffer);
      const lowering::ExternCall* call = holder ? &*holder->extern_call : nullptr;
      label = DotLabel(call ? call->op : "extern");
      if (call != nullptr) {
        for (const lowering::ExternArg& arg : call->args) {
          if (!arg.buffer.empty()) reads.push_back(arg.buffer);
          for (const std::string& b : arg.buffer_list) reads.push_back(b);
        }
      }
      writes.push_back(step.buffer);
      for (const lowering::Buffer& b : graph.buffers) {
        if (b.extern_source == step.buffer) writes.push_back(b.name);
      }
      absl::StrAppend(&nodes, "  ", id, " [shape=box, style=filled, fillcolor=\"#e3d6f5\", label=\"", label,
                      "\"];\n");
    }
    for (const std::string& r : reads) {
      const std::string b = buffer_node(r);
      if (!b.empty()) absl::StrAppend(&edges, "  ", b, " -> ", id, ";\n");
    }
    for (const std::string& w : writes) {
      const std::string b = buffer_node(w);
      if (!b.empty()) absl::StrAppend(&edges, "  ", id, " -> ", b, ";\n");
    }
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const std::string b = buffer_node(graph.outputs[i]);
    if (b.empty()) continue;
    const std::string id = absl::StrCat("o", i);
    absl::StrAppend(&nodes, "  ", id, " [shape=plaintext, label=\"output ", i, "\"];\n");
    absl::StrAppend(&edges, "  ", b, " -> ", id, ";\n");
  }
  std::string full_title(title);
  if (constants > 0) absl::StrAppend(&full_title, " (", constants, " constant buffers not shown)");
  return absl::StrCat("digraph kiln_kernels {\n", kHeader, "  label=\"", DotLabel(full_title, kMaxTitleBytes),
                      "\";\n  labelloc=t;\n", nodes, edges, "}\n");
}

namespace {

// The first executable `name` on $PATH, or "".
std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

absl::Status RenderSvg(const std::string& dot_path, const std::string& svg_path) {
  const std::string dot = FindOnPath("dot");
  if (dot.empty()) {
    return absl::NotFoundError("Graphviz's `dot` is not on the PATH (Debian: apt-get install graphviz)");
  }
  // No shell: the paths are arguments, whatever they contain.
  std::vector<std::string> args = {dot, "-Tsvg", "-o", svg_path, dot_path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (const int err = posix_spawn(&pid, dot.c_str(), nullptr, nullptr, argv.data(), environ);
      err != 0) {
    return absl::InternalError(absl::StrCat("cannot run ", dot, ": ", std::strerror(err)));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waiting for ", dot, ": ", std::strerror(errno)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(dot, " failed on ", dot_path, " (status ", status, ")"));
  }
  return absl::OkStatus();
}

}  // namespace kiln::tools
