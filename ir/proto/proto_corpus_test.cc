// Every graph of the TorchScript corpus survives text -> Graph -> proto
// (binary and text) -> Graph unchanged: the printed IR is byte-identical and
// the graphs are structurally equal.
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "ir/graph_equal.h"
#include "ir/proto/graph_compare.h"
#include "ir/proto/proto_convert.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"

namespace kiln::ir {
namespace {

constexpr char kCorpusDir[] = "testdata/torchscript";

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  if (DIR* dir = opendir(kCorpusDir)) {
    while (dirent* e = readdir(dir)) {
      if (absl::EndsWith(e->d_name, ".graph.txt")) files.push_back(e->d_name);
    }
    closedir(dir);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void ExpectSame(const Graph& original, const Graph& loaded, const std::string& what) {
  EXPECT_EQ(PrintGraph(original), PrintGraph(loaded)) << what;
  std::string diff;
  EXPECT_TRUE(GraphsStructurallyEqual(original, loaded, &diff)) << what << ": " << diff;
  EXPECT_EQ(testing::GraphDifference(original, loaded), "") << what;
}

TEST(ProtoCorpusTest, EveryCorpusGraphRoundTrips) {
  const std::vector<std::string> files = CorpusFiles();
  ASSERT_GE(files.size(), 20) << "corpus missing from runfiles";
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    auto parsed = ParseGraph(ReadFile(std::string(kCorpusDir) + "/" + file));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    const Graph& g = **parsed;

    auto bytes = SerializeGraph(g);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    auto from_binary = DeserializeGraph(*bytes);
    ASSERT_TRUE(from_binary.ok()) << from_binary.status();
    ExpectSame(g, **from_binary, "binary");

    auto text = GraphToTextProto(g);
    ASSERT_TRUE(text.ok()) << text.status();
    auto from_text = GraphFromTextProto(*text);
    ASSERT_TRUE(from_text.ok()) << from_text.status();
    ExpectSame(g, **from_text, "text proto");

    // Saving the loaded graph reproduces the same bytes.
    auto again = SerializeGraph(**from_binary);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(*again == *bytes);
  }
}

}  // namespace
}  // namespace kiln::ir
