// Checks kiln's own shape propagation (the op rows' shape functions) on
// imported ONNX models, against what the reference kernels produce:
//
//   for every test directory under --root (model.onnx + test_data_set_0):
//     import; forget every inferred type (only graph inputs and constants
//     keep theirs); run shape propagation from the inputs alone;
//     run the interpreter on the test inputs with every top-level tensor
//     value made a graph output, and compare each value with its inferred
//     dtype, rank and dims.
//
// A contradiction (shape propagation failing, or an inferred fact the
// kernels do not produce) fails the check. The number of models whose every
// tensor value gets a complete static type is a floor (--floor FILE) that
// may only rise, like the conformance floors.
//
//   shape_inference_check --root DIR [--filter REGEX] [--floor FILE] [--verbose]
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "driver/initialize.h"
#include "frontend/onnx/importer.h"
#include "ir/ir.h"
#include "passes/pass.h"
#include "passes/shape_propagation.h"
#include "re2/re2.h"
#include "runtime/interpreter.h"
#include "support/status.h"
#include "testing/onnx_conformance.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;

struct ModelResult {
  std::string name;
  bool skipped = false;   // the interpreter cannot run it (not a shape question)
  std::string error;      // a contradiction
  int values = 0;         // top-level tensor values
  int fully_typed = 0;    // of them, with dtype and every dim known
  // Ops whose outputs are not fully typed although all their tensor inputs
  // are: where static typing stops.
  std::vector<std::string> stops;
};

bool FullyTyped(const ir::Value* v) {
  const ir::TypePtr& t = v->type();
  return t && t->is_tensor() && t->tensor().dtype && t->tensor().HasCompleteSizes();
}

void Forget(ir::Block* block) {
  for (ir::Node* n : block->nodes()) {
    for (ir::Block* b : n->blocks()) Forget(b);
    if (n->kind() == ir::sym::kConstant) continue;
    for (ir::Value* v : n->outputs()) {
      const ir::TypePtr& t = v->type();
      if (t && t->is_tensor()) {
        v->setType(ir::Type::Tensor());
      } else if (t && t->kind() == ir::TypeKind::kList && t->contained()[0]->is_tensor()) {
        v->setType(ir::Type::List(ir::Type::Tensor()));
      }
    }
  }
}

// "" when the inferred type fits the value.
std::string Mismatch(const ir::TensorInfo& inferred, const Tensor& actual) {
  if (inferred.dtype && *inferred.dtype != actual.dtype()) {
    return absl::StrCat("dtype ", DTypeName(*inferred.dtype), " inferred, ",
                        DTypeName(actual.dtype()), " computed");
  }
  if (!inferred.sizes) return "";
  const auto& s = *inferred.sizes;
  bool ok = s.size() == actual.sizes().size();
  for (size_t i = 0; ok && i < s.size(); ++i) ok = !s[i] || *s[i] == actual.sizes()[i];
  if (ok) return "";
  std::string dims;
  for (const auto& d : s) absl::StrAppend(&dims, dims.empty() ? "" : ", ", d ? absl::StrCat(*d) : "?");
  std::string got;
  for (int64_t d : actual.sizes()) absl::StrAppend(&got, got.empty() ? "" : ", ", d);
  return absl::StrCat("sizes [", dims, "] inferred, [", got, "] computed");
}

absl::Status Check(const fs::path& dir, ModelResult* r) {
  ASSIGN_OR_RETURN(onnx::ModelProto model, frontend::onnx_import::LoadModelFile((dir / "model.onnx").string()));
  absl::StatusOr<std::unique_ptr<ir::Graph>> imported = frontend::onnx_import::ImportModel(model);
  if (!imported.ok()) {
    r->skipped = true;
    return absl::OkStatus();
  }
  ir::Graph& graph = **imported;
  Forget(graph.block());
  passes::PassStatistics stats;
  absl::StatusOr<bool> changed = passes::PropagateShapes(graph, stats);
  if (!changed.ok()) {
    r->error = absl::StrCat("shape propagation: ", changed.status().message());
    return absl::OkStatus();
  }
  // Every top-level tensor value becomes an output, so the run shows it.
  std::vector<const ir::Value*> checked;
  const size_t declared = graph.outputs().size();
  for (ir::Node* n : graph.block()->nodes()) {
    for (ir::Value* v : n->outputs()) {
      if (!v->type() || !v->type()->is_tensor()) continue;
      ++r->values;
      if (FullyTyped(v)) {
        ++r->fully_typed;
      } else {
        bool inputs_typed = true;
        for (const ir::Value* in : n->inputs()) {
          if (in->type() && in->type()->is_tensor() && !FullyTyped(in)) inputs_typed = false;
        }
        if (inputs_typed) r->stops.push_back(std::string(n->kind().qualString()));
      }
      if (n->kind() == ir::sym::kConstant) continue;
      graph.registerOutput(v);
      checked.push_back(v);
    }
  }
  const std::vector<const onnx::ValueInfoProto*> inputs = frontend::onnx_import::RuntimeInputs(model);
  std::vector<ir::IValue> in;
  const fs::path set = dir / "test_data_set_0";
  for (size_t k = 0;; ++k) {
    const fs::path p = set / absl::StrCat("input_", k, ".pb");
    if (!fs::exists(p)) break;
    const onnx::TypeProto* type = k < inputs.size() && inputs[k]->has_type() ? &inputs[k]->type() : nullptr;
    absl::StatusOr<ir::IValue> v = ReadTestValue(p.string(), type);
    if (!v.ok()) {
      r->skipped = true;
      return absl::OkStatus();
    }
    in.push_back(*std::move(v));
  }
  runtime::Interpreter interp(graph);
  absl::StatusOr<std::vector<ir::IValue>> out = interp.Run(in);
  if (!out.ok()) {
    r->skipped = true;  // the conformance suites report kernel failures
    return absl::OkStatus();
  }
  for (size_t i = 0; i < checked.size(); ++i) {
    const ir::IValue& v = (*out)[declared + i];
    if (!v.isTensor()) continue;
    std::string m = Mismatch(checked[i]->type()->tensor(), v.toTensor());
    if (!m.empty()) {
      r->error = absl::StrCat(checked[i]->node()->kind().qualString(), " %",
                              checked[i]->debugName(), ": ", m);
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  std::string root, filter, floor_file;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (absl::ConsumePrefix(&arg, "--root=")) root = std::string(arg);
    else if (absl::ConsumePrefix(&arg, "--filter=")) filter = std::string(arg);
    else if (absl::ConsumePrefix(&arg, "--floor=")) floor_file = std::string(arg);
    else if (arg == "--verbose") verbose = true;
  }
  if (root.empty()) {
    std::fprintf(stderr, "usage: shape_inference_check --root=DIR [--filter=RE] [--floor=FILE]\n");
    return 2;
  }
  if (absl::Status s = driver::Initialize(); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  std::vector<fs::path> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory() || !fs::exists(e.path() / "model.onnx")) continue;
    if (!filter.empty() && !RE2::PartialMatch(e.path().filename().string(), filter)) continue;
    dirs.push_back(e.path());
  }
  if (ec || dirs.empty()) {
    std::fprintf(stderr, "%s: no test directories\n", root.c_str());
    return 1;
  }
  std::sort(dirs.begin(), dirs.end());
  int checked = 0, skipped = 0, contradictions = 0, fully = 0;
  int64_t values = 0, typed_values = 0;
  for (const fs::path& d : dirs) {
    ModelResult r;
    r.name = d.filename().string();
    absl::Status s = Check(d, &r);
    if (!s.ok() || r.skipped) {
      ++skipped;
      continue;
    }
    ++checked;
    values += r.values;
    typed_values += r.fully_typed;
    if (!r.error.empty()) {
      ++contradictions;
      std::printf("CONTRADICTION %s: %s\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    if (r.values == r.fully_typed) ++fully;
    if (verbose && r.values != r.fully_typed) {
      std::string stops;
      for (const std::string& k : r.stops) absl::StrAppend(&stops, " ", k);
      std::printf("PARTIAL %s: %d of %d values typed; typing stops at:%s\n", r.name.c_str(),
                  r.fully_typed, r.values, stops.c_str());
    }
  }
  std::printf("shape inference: %d models checked (%d skipped), %d fully typed from their inputs, "
              "%lld of %lld tensor values typed, %d contradictions\n",
              checked, skipped, fully, static_cast<long long>(typed_values),
              static_cast<long long>(values), contradictions);
  int rc = contradictions > 0 ? 1 : 0;
  if (!floor_file.empty()) {
    std::ifstream f(floor_file);
    std::string line;
    int floor = 0;
    if (!std::getline(f, line) || !absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &floor)) {
      std::fprintf(stderr, "%s: expected the floor (an int) on the first line\n", floor_file.c_str());
      return 1;
    }
    if (fully < floor) {
      std::printf("FAILED: %d fully typed models is below the floor of %d\n", fully, floor);
      rc = 1;
    } else if (fully > floor) {
      std::printf("note: %d fully typed models is above the floor of %d; raise it\n", fully, floor);
    }
  }
  return rc;
}

}  // namespace
}  // namespace kiln::testing

int main(int argc, char** argv) { return kiln::testing::Main(argc, argv); }
