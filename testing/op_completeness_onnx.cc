// The ops the ONNX importer reaches: imports every model under each --root
// (model.onnx per test directory, as `kiln conformance` runs them), collects
// the overload of every node, then runs the compile pipeline's decomposition
// step (passes::PrepareForLowering) and collects what the composite ops
// became. Each must have an op row with a shape function and, when it
// returns tensors, a compiled path, or be listed in --gaps
// (testing/op_completeness.h). Prints every finding; exits 1 on any.
//
//   op_completeness_onnx --root=DIR [--root=DIR...] --gaps=FILE [--list]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "driver/initialize.h"
#include "frontend/onnx/importer.h"
#include "ir/ir.h"
#include "ir/op_registry.h"
#include "ops/row_facts.h"
#include "passes/decompositions.h"
#include "passes/pass.h"
#include "support/status.h"
#include "testing/op_completeness.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

// Node kinds the lowering driver handles itself (constants, containers) or
// that are control flow (an interpreter island): no op row describes them.
bool IsStructural(const ir::Node& node) {
  static const std::set<std::string> kStructural = {
      "prim::Constant",    "prim::ListConstruct", "prim::ListUnpack", "prim::TupleConstruct",
      "prim::TupleUnpack", "prim::If",            "prim::Loop",
  };
  return kStructural.count(std::string(node.kind().qualString())) > 0;
}

void Collect(const ir::Block* block, const std::string& why,
             std::map<std::string, std::string>* ops) {
  for (const ir::Node* n : block->nodes()) {
    for (const ir::Block* b : n->blocks()) Collect(b, why, ops);
    if (IsStructural(*n)) continue;
    const ir::Operator* op = ir::BuiltinOps().Match(*n);
    std::string name = op != nullptr ? op->schema.QualifiedName()
                                     : std::string(n->kind().qualString());
    ops->emplace(std::move(name), why);  // the first model that reaches it
  }
}

int Main(int argc, char** argv) {
  std::vector<std::string> roots;
  std::string gaps_file;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--root=")) roots.emplace_back(arg);
    else if (absl::ConsumePrefix(&arg, "--gaps=")) gaps_file = std::string(arg);
    else if (arg == "--list") list = true;
  }
  if (roots.empty() || gaps_file.empty()) {
    std::fprintf(stderr, "usage: op_completeness_onnx --root=DIR... --gaps=FILE [--list]\n");
    return 2;
  }
  if (absl::Status s = driver::Initialize(); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::ifstream in(gaps_file);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<std::map<std::string, std::string>> gaps = ParseGaps(text.str());
  if (!in.good() || !gaps.ok()) {
    std::fprintf(stderr, "%s: %s\n", gaps_file.c_str(),
                 gaps.ok() ? "cannot read" : std::string(gaps.status().message()).c_str());
    return 1;
  }

  std::map<std::string, std::string> imported, decomposed;
  int models = 0, not_imported = 0;
  for (const std::string& root : roots) {
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    }
    if (ec || dirs.empty()) {
      std::fprintf(stderr, "%s: no test directories\n", root.c_str());
      return 1;
    }
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path& d : dirs) {
      const std::string name = d.filename().string();
      absl::StatusOr<onnx::ModelProto> model =
          frontend::onnx_import::LoadModelFile((d / "model.onnx").string());
      absl::StatusOr<std::unique_ptr<ir::Graph>> graph =
          model.ok() ? frontend::onnx_import::ImportModel(*model)
                     : absl::StatusOr<std::unique_ptr<ir::Graph>>(model.status());
      if (!graph.ok()) {  // the importer's conformance tests count these
        ++not_imported;
        continue;
      }
      ++models;
      Collect((*graph)->block(), "imported by " + name, &imported);
      passes::PassStatistics stats;
      if (passes::PrepareForLowering(**graph, stats).ok()) {
        Collect((*graph)->block(), "decomposed from " + name, &decomposed);
      }
    }
  }
  std::vector<RequiredOp> required;
  for (const auto& [op, why] : imported) required.push_back({op, why});
  for (const auto& [op, why] : decomposed) {
    if (imported.count(op) == 0) required.push_back({op, why});
  }
  if (list) {
    for (const RequiredOp& r : required) std::printf("%s\t%s\n", r.op.c_str(), r.why.c_str());
  }
  const std::vector<ops::RowFacts> rows = ops::AllRowFacts();
  std::vector<std::string> findings = CheckRequired(rows, required, *gaps, RegistryReturnsTensors);
  for (const std::string& f : findings) std::printf("FINDING %s\n", f.c_str());
  std::printf("op completeness: %d models imported (%d not), %zu ops reached (%zu after "
              "decomposition only), %zu findings\n",
              models, not_imported, required.size(), required.size() - imported.size(),
              findings.size());
  return findings.empty() ? 0 : 1;
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) { return kiln::testing::Main(argc, argv); }
