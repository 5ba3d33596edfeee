// Writes serialized sample graphs as the seed corpus of proto_loader_fuzz:
//   ./bazelw run //ir/proto:make_fuzz_seeds -- $PWD/ir/proto/testdata/fuzz_seeds
#include <cstdio>
#include <fstream>
#include <string>

#include "ir/proto/proto_convert.h"
#include "ir/proto/sample_graphs.h"

namespace {

bool Write(const std::string& dir, const char* name, const kiln::ir::Graph& g) {
  auto bytes = kiln::ir::SerializeGraph(g);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s: %s\n", name, std::string(bytes.status().message()).c_str());
    return false;
  }
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  namespace t = kiln::ir::testing;
  const std::string dir = argv[1];
  bool ok = Write(dir, "feature_graph.pb", *t::MakeFeatureGraph());
  ok = Write(dir, "control_flow.pb", *t::MakeControlFlowGraph()) && ok;
  ok = Write(dir, "chain_20.pb", *t::MakeChainGraph(20)) && ok;
  kiln::ir::Graph empty;
  ok = Write(dir, "empty.pb", empty) && ok;
  return ok ? 0 : 1;
}
