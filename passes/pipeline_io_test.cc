// The pass manager with the real IR writers and verifier: dumps and
// reproducers must be readable by the text parser and the proto loader.
#include "passes/pipeline_io.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/proto/proto_convert.h"
#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "passes/reproducer.h"
#include "passes/test_passes.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempDir(absl::string_view name) {
  const char* base = std::getenv("TEST_TMPDIR");
  return absl::StrCat(base ? base : "/tmp", "/", name);
}

constexpr char kGraph[] = R"(graph(%x : Float(2, 3)):
  %r : Float(2, 3) = aten::relu(%x)
  return (%r)
)";

// Adds a prim::If without blocks: invalid control flow.
absl::StatusOr<bool> BreakIf(ir::Graph& g, PassStatistics&) {
  g.insertNode(g.create(ir::sym::kIf, {g.inputs()[0]}, 0));
  return true;
}

TEST(PipelineIo, DumpsAndReproducersAreReadable) {
  PassRegistry r = testing::MakeTestRegistry();
  ASSERT_TRUE(r.RegisterFunction("break_if", {}, "", BreakIf).ok());
  absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(kGraph);
  ASSERT_TRUE(g.ok()) << g.status();

  PipelineOptions o;  // the default verifier: ir::Verify
  UseDefaultIo(&o);
  o.dump_dir = TempDir("io_dumps");
  o.reproducer_dir = TempDir("io_repro");
  absl::StatusOr<std::unique_ptr<Pipeline>> p =
      Pipeline::Create("noop,add_marker,break_if,noop", r, o);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<bool> changed = (*p)->Run(**g);
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()),
              StartsWith("pass 'break_if' produced an invalid graph: "));

  // The input dump round-trips through both formats.
  EXPECT_EQ(ReadFile(o.dump_dir + "/000_input.txt"), kGraph);
  absl::StatusOr<std::unique_ptr<ir::Graph>> from_pb =
      ir::DeserializeGraph(ReadFile(o.dump_dir + "/000_input.pb"));
  ASSERT_TRUE(from_pb.ok()) << from_pb.status();
  EXPECT_EQ(ir::PrintGraph(**from_pb), kGraph);
  EXPECT_THAT(ReadFile(o.dump_dir + "/002_add_marker.txt"), HasSubstr("test::marker()"));

  // The reproducer parses and names the rest of the pipeline.
  std::string repro = ReadFile(o.reproducer_dir + "/" + kReproducerFileName);
  EXPECT_EQ(ReproducerPipeline(repro).value(), "break_if,noop");
  absl::StatusOr<std::unique_ptr<ir::Graph>> replay = ir::ParseGraph(repro);
  ASSERT_TRUE(replay.ok()) << replay.status() << "\n" << repro;
  EXPECT_THAT(ir::PrintGraph(**replay), HasSubstr("test::marker()"));
}

}  // namespace
}  // namespace kiln::passes
