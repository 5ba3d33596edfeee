// Round trips over the TorchScript corpus (testdata/torchscript):
//  * raw `str(graph)` files and synthetic graphs: print(parse(text)) == text,
//    byte for byte (synthetic files without their leading `#` lines);
//  * `*.parseable.graph.txt`: the same, after writing zero-output nodes back
//    in PyTorch's printed form `  = op(...)`;
//  * parse(print(g)) is structurally equal to g.
#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "ir/graph_equal.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"

namespace kiln::ir {
namespace {

constexpr char kCorpusDir[] = "testdata/torchscript";

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  if (DIR* dir = opendir(kCorpusDir)) {
    while (dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      if (absl::EndsWith(name, ".graph.txt")) files.push_back(name);
    }
    closedir(dir);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& name) {
  std::ifstream in(std::string(kCorpusDir) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string StripLeadingCommentLines(const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && text[pos] == '#') {
    const size_t nl = text.find('\n', pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
  }
  return text.substr(pos);
}

// `    prim::If(...)` -> `     = prim::If(...)`: the parseable files drop
// the ` = ` that PyTorch prints before zero-output nodes.
std::string RestoreZeroOutputEquals(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t indent = 0;
    while (indent < line.size() && line[indent] == ' ') ++indent;
    absl::string_view rest = line.substr(indent);
    const size_t colons = rest.find("::");
    const bool op_first = !rest.empty() && rest[0] != '%' && rest[0] != '-' &&
                          colons != absl::string_view::npos &&
                          rest.substr(0, colons).find_first_of(" (=") == absl::string_view::npos;
    out.append(line.data(), indent);
    if (op_first) out.append(" = ");
    out.append(rest.data(), rest.size());
    out.push_back('\n');
  }
  out.pop_back();  // StrSplit yields a final empty piece after the last '\n'
  return out;
}

TEST(TextRoundTripTest, CorpusIsPresent) {
  const std::vector<std::string> files = CorpusFiles();
  EXPECT_GE(files.size(), 20u);
  int parseable = 0;
  for (const std::string& f : files) parseable += absl::EndsWith(f, ".parseable.graph.txt");
  EXPECT_GE(parseable, 6);
}

TEST(TextRoundTripTest, PrintOfParseIsByteIdentical) {
  for (const std::string& file : CorpusFiles()) {
    SCOPED_TRACE(file);
    const std::string raw = ReadFile(file);
    ASSERT_FALSE(raw.empty());
    auto graph = ParseGraph(raw);
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::string expected = StripLeadingCommentLines(raw);
    if (absl::EndsWith(file, ".parseable.graph.txt")) {
      expected = RestoreZeroOutputEquals(expected);
    }
    const std::string printed = PrintGraph(**graph);
    if (printed != expected) {
      // Report the first differing line rather than two whole graphs.
      std::vector<std::string> a = absl::StrSplit(printed, '\n');
      std::vector<std::string> b = absl::StrSplit(expected, '\n');
      for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        if (a[i] != b[i]) {
          ADD_FAILURE() << "line " << i + 1 << "\n printed: " << a[i] << "\nexpected: " << b[i];
          break;
        }
      }
      ADD_FAILURE() << "printed " << printed.size() << " bytes, expected " << expected.size();
    }
  }
}

TEST(TextRoundTripTest, ParseOfPrintIsStructurallyEqual) {
  for (const std::string& file : CorpusFiles()) {
    SCOPED_TRACE(file);
    auto graph = ParseGraph(ReadFile(file));
    ASSERT_TRUE(graph.ok()) << graph.status();
    const std::string printed = PrintGraph(**graph);
    auto again = ParseGraph(printed);
    ASSERT_TRUE(again.ok()) << again.status();
    std::string diff;
    EXPECT_TRUE(GraphsStructurallyEqual(**graph, **again, &diff)) << diff;
    EXPECT_EQ(PrintGraph(**again), printed);
    // A copy made through the IR API compares equal as well.
    std::unique_ptr<Graph> copy = (*graph)->copy();
    EXPECT_TRUE(GraphsStructurallyEqual(**graph, *copy, &diff)) << diff;
  }
}

TEST(TextRoundTripTest, InlineTensorLiteralKeepsItsValues) {
  auto graph = ParseGraph(ReadFile("small_cnn.frozen.graph.txt"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  Value* bias = (*graph)->findValue("self.fc.bias");
  ASSERT_NE(bias, nullptr);
  const Tensor& t = bias->node()->t(sym::kValue);
  ASSERT_TRUE(t.has_data());
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  ASSERT_EQ(t.sizes(), std::vector<int64_t>{10});
  EXPECT_NEAR(t.GetDouble(0), 0.016205, 1e-9);
  EXPECT_NEAR(t.GetDouble(9), -0.021730, 1e-9);
}

// Small tensors print inline through at::print's format; reading them back
// gives the same text again, for every rank and scale.
TEST(TextRoundTripTest, InlineTensorsOfEveryRankRoundTrip) {
  const std::vector<std::vector<int64_t>> shapes = {{2}, {3, 2}, {2, 1, 3}, {1, 2, 2, 2}, {2, 5}};
  const std::vector<double> scales = {1.0, 0.001, 12345.0};
  for (const auto& shape : shapes) {
    for (double scale : scales) {
      Graph g;
      Node* c = g.create(sym::kConstant, 1);
      g.block()->appendNode(c);
      Tensor t = Tensor::Empty(DType::kFloat32, shape);
      for (int64_t i = 0; i < t.numel(); ++i) {
        t.data<float>()[i] = static_cast<float>(scale * ((i * 7 % 11) - 4.5) / 3.0);
      }
      c->t_(sym::kValue, t);
      g.registerOutput(c->output());
      const std::string text = PrintGraph(g);
      SCOPED_TRACE(text);
      auto parsed = ParseGraph(text);
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(PrintGraph(**parsed), text);
      const Tensor& back = (*parsed)->block()->front()->t(sym::kValue);
      ASSERT_EQ(back.sizes(), shape);
      for (int64_t i = 0; i < t.numel(); ++i) {
        EXPECT_NEAR(back.GetDouble(i), t.GetDouble(i), 1e-4 * std::abs(scale) + 1e-12);
      }
    }
  }
}

TEST(TextRoundTripTest, DetectsStructuralDifferences) {
  const std::string file = "resnet18.frozen.graph.txt";
  auto a = ParseGraph(ReadFile(file));
  ASSERT_TRUE(a.ok());
  std::string text = ReadFile(file);
  const size_t at = text.find("aten::relu_");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 11, "aten::relu6");
  auto b = ParseGraph(text);
  ASSERT_TRUE(b.ok()) << b.status();
  std::string diff;
  EXPECT_FALSE(GraphsStructurallyEqual(**a, **b, &diff));
  EXPECT_NE(diff.find("kinds differ"), std::string::npos) << diff;
}

}  // namespace
}  // namespace kiln::ir
