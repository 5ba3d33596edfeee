#include "benchmarks/synth_graph.h"

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace kiln::bench {
namespace {

std::string ReadTestFile(const std::string& name) {
  std::ifstream in("testdata/torchscript/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// The files were written by `synth_graph.py N --seed 0`.
TEST(SynthGraphTest, MatchesThePythonGeneratorAt1e3) {
  EXPECT_EQ(SynthGraphText(1000, 0), ReadTestFile("synth_1e3.graph.txt"));
}

TEST(SynthGraphTest, MatchesThePythonGeneratorAt1e4) {
  EXPECT_EQ(SynthGraphText(10000, 0), ReadTestFile("synth_1e4.graph.txt"));
}

TEST(SynthGraphTest, IsDeterministicAndSeedDependent) {
  EXPECT_EQ(SynthGraphText(500, 3), SynthGraphText(500, 3));
  EXPECT_NE(SynthGraphText(500, 3), SynthGraphText(500, 4));
}

TEST(SynthGraphTest, HeaderReportsTheRequestedSize) {
  const std::string text = SynthGraphText(200, 1);
  EXPECT_EQ(text.rfind("# synthetic TorchScript graph: generate(n_nodes=200, seed=1, "
                       "shared_frac=0.5) from gen/synth_graph.py\n",
                       0),
            0u);
  EXPECT_NE(text.find("\ngraph(%x0 : Tensor,\n"), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 2), ")\n");
}

}  // namespace
}  // namespace kiln::bench
