// kiln's passes against PyTorch 1.13 on the TorchScript corpus: for each
// graph and pass, the recursive node count (ir::CountNodes) after running
// the pass alone on a fresh parse (followed by DCE for the passes whose
// PyTorch version runs it internally: Column::then) must be at most
// PyTorch's.
//
// PyTorch's counts are copied from the shared corpus's BASELINE.md:
//  * model graphs: table "Model graphs, fresh parse_ir of the corpus text"
//    (`<name>.traced.graph.txt` raw, `<name>.frozen.parseable.graph.txt`),
//    cell "[before -> after]";
//  * synth_1e3 / synth_1e4: table "Synthetic graphs: details", column
//    "nodes after" (rows N=1000 and N=10000).
// One column per pass, by canonical registry name; a pass that is not
// registered (yet), or a cell left empty, is skipped.
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "ir/text_parser.h"
#include "passes/all_passes.h"

namespace kiln::passes {
namespace {

constexpr char kCorpusDir[] = "testdata/torchscript";

struct Row {
  const char* file;
  int before;
  // PyTorch's node count after each pass; nullopt = not measured.
  std::optional<int> dce, cse, constprop, peephole, pooling;
};

// clang-format off
// constprop / peephole: PyTorch's passes run DCE internally when they
// changed something (BASELINE.md notes), so kiln's columns run
// dead_code_elimination after the pass (Column::then) for a like-for-like
// count.
const Row kRows[] = {
  // file                                        before  dce   cse   constprop peephole pooling
  {"squeezenet1_1.traced.graph.txt",              596,   596,   86,   362,      596,     199},
  {"squeezenet1_1.frozen.parseable.graph.txt",    122,   122,  122,   122,      122,     122},
  {"mobilenet_v2.traced.graph.txt",              1436,  1436,  175,  1018,     1436,     381},
  {"mobilenet_v2.frozen.parseable.graph.txt",     228,   228,  228,   228,      228,     228},
  {"resnet18.traced.graph.txt",                   555,   555,   83,   385,      555,     164},
  {"resnet18.frozen.parseable.graph.txt",         106,   106,  106,   106,      106,     106},
  {"mlp.traced.graph.txt",                          6,     6,    6,     6,        6,       6},
  {"mlp.frozen.parseable.graph.txt",               12,    12,   12,    12,       12,      12},
  {"small_cnn.traced.graph.txt",                   82,    82,   21,    50,       82,      34},
  {"small_cnn.frozen.parseable.graph.txt",         20,    20,   20,    20,       20,      20},
  {"ln_gelu_softmax.traced.graph.txt",             13,    13,   13,    12,       13,      13},
  {"ln_gelu_softmax.frozen.parseable.graph.txt",   16,    16,   16,    16,       16,      16},
  {"synth_1e3.graph.txt",                        1002,   798,  609,   674,      619,     822},
  {"synth_1e4.graph.txt",                       10000,  8033, 5869,  7031,     6396,    8290},
};
// clang-format on

struct Column {
  const char* pass;
  std::optional<int> Row::*count;
  // Run after `pass` when PyTorch's pass includes it (null: nothing).
  const char* then = nullptr;
};

const Column kColumns[] = {
    {"dead_code_elimination", &Row::dce},
    {"common_subexpression_elimination", &Row::cse},
    {"constant_propagation", &Row::constprop, "dead_code_elimination"},
    {"constant_pooling", &Row::pooling},
    {"peephole", &Row::peephole, "dead_code_elimination"},
};

std::string ReadFile(const std::string& name) {
  std::ifstream in(absl::StrCat(kCorpusDir, "/", name), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(CorpusBaseline, KilnRemovesAtLeastAsMuchAsPyTorch) {
  const PassRegistry& registry = DefaultPassRegistry();
  int checked = 0;
  for (const Row& row : kRows) {
    const std::string text = ReadFile(row.file);
    ASSERT_FALSE(text.empty()) << row.file;
    for (const Column& col : kColumns) {
      const std::optional<int>& pytorch = row.*col.count;
      if (!pytorch || !registry.Contains(col.pass)) continue;
      if (col.then != nullptr && !registry.Contains(col.then)) continue;
      auto graph = ir::ParseGraph(text);
      ASSERT_TRUE(graph.ok()) << row.file << ": " << graph.status();
      ASSERT_EQ(ir::CountNodes((*graph)->block()), static_cast<size_t>(row.before)) << row.file;
      auto pass = registry.Create(col.pass);
      ASSERT_TRUE(pass.ok()) << pass.status();
      auto changed = (*pass)->Run(**graph);
      ASSERT_TRUE(changed.ok()) << row.file << " " << col.pass << ": " << changed.status();
      if (col.then != nullptr) {
        auto then = registry.Create(col.then);
        ASSERT_TRUE(then.ok()) << then.status();
        auto then_changed = (*then)->Run(**graph);
        ASSERT_TRUE(then_changed.ok()) << row.file << " " << col.then << ": "
                                       << then_changed.status();
      }
      const size_t after = ir::CountNodes((*graph)->block());
      EXPECT_LE(after, static_cast<size_t>(*pytorch))
          << row.file << " " << col.pass << ": kiln " << after << ", PyTorch " << *pytorch;
      // Printed for the record (kiln vs PyTorch per graph and pass).
      std::printf("%-44s %-34s before %6d  kiln %6zu  pytorch %6d\n", row.file, col.pass,
                  row.before, after, *pytorch);
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace kiln::passes
