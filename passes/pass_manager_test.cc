// Pipelines end to end: checks around passes, bisection, dumps, reproducers,
// statistics. Uses the test registry (test_passes.h).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_log.h"
#include "passes/pipeline.h"
#include "passes/reproducer.h"
#include "passes/test_passes.h"

namespace kiln::passes {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::CountMarkers;
using testing::MakeSmallGraph;
using testing::MakeTestRegistry;

PipelineOptions TestOptions() {
  PipelineOptions o;
  o.check_changed_bit = true;
  o.verifier = testing::TestVerifier;
  o.writers.text = testing::TestPrintGraph;
  return o;
}

std::unique_ptr<Pipeline> MustCreate(absl::string_view text, const PassRegistry& r,
                                     PipelineOptions options = TestOptions()) {
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create(text, r, std::move(options));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool FileExists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// A fresh directory under TEST_TMPDIR per test.
std::string TempDir(absl::string_view name) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(base ? base : "/tmp", "/", name);
  std::string cmd = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

TEST(Pipeline, RunsPassesInOrderAndReportsChange) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  auto p = MustCreate("nop,add_marker,add_marker,remove_marker", r);
  EXPECT_EQ(p->ToString(), "noop,add_marker,add_marker,remove_marker");
  absl::StatusOr<bool> changed = p->Run(*g);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(CountMarkers(*g), 1u);

  auto quiet = MustCreate("noop,count_nodes", r);
  changed = quiet->Run(*g);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

TEST(Pipeline, UnknownPassesAreClearErrors) {
  PassRegistry r = MakeTestRegistry();
  absl::StatusOr<std::unique_ptr<Pipeline>> p = Pipeline::Create("noop,dcee", r);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("unknown pass 'dcee'; known passes: "));

  PipelineOptions o;
  o.disabled_passes = {"nope"};
  p = Pipeline::Create("noop", r, o);
  EXPECT_THAT(std::string(p.status().message()), StartsWith("--disable-pass: unknown pass 'nope'"));

  p = Pipeline::Create("noop,,", r);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("column 6"));

  // Presets name the production passes; the test registry lacks them.
  p = Pipeline::Create("-O2", r);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("unknown pass 'constant_propagation'"));
  // -O0 needs nothing.
  EXPECT_TRUE(Pipeline::Create("-O0", r).ok());
}

TEST(Pipeline, ChangedBitCheckCatchesLyingPasses) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  auto p = MustCreate("noop,lie_unchanged", r);
  absl::StatusOr<bool> changed = p->Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(changed.status().message(),
            "pass 'lie_unchanged' returned changed=false but modified the graph "
            "(fingerprint check)");

  // Claiming a change that did not happen is only an error when asked for.
  auto lax = MustCreate("lie_changed", r);
  EXPECT_TRUE(lax->Run(*g).ok());
  PipelineOptions strict = TestOptions();
  strict.check_reported_change = true;
  auto p2 = MustCreate("lie_changed", r, strict);
  changed = p2->Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()),
              HasSubstr("pass 'lie_changed' returned changed=true but the graph is unchanged"));

  // Off: the lie goes through.
  PipelineOptions off = TestOptions();
  off.check_changed_bit = false;
  auto p3 = MustCreate("lie_unchanged", r, off);
  EXPECT_TRUE(p3->Run(*g).ok());
}

TEST(Pipeline, VerifierFailureNamesThePass) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  auto p = MustCreate("noop,add_marker,make_invalid,noop", r);
  absl::StatusOr<bool> changed = p->Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(changed.status().message(),
            "pass 'make_invalid' produced an invalid graph: node 3 (test::invalid) is not "
            "allowed");
  // An invalid input is not blamed on a pass.
  changed = MustCreate("noop", r)->Run(*g);
  EXPECT_THAT(std::string(changed.status().message()),
              StartsWith("the input graph is invalid (before any pass): node 3"));
}

TEST(Pipeline, VerifyOnlyInputAndResult) {
  PassRegistry r = MakeTestRegistry();
  PipelineOptions options = TestOptions();
  options.verify_each_pass = false;
  auto g = MakeSmallGraph();
  absl::StatusOr<bool> changed =
      MustCreate("add_marker,make_invalid,noop", r, options)->Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()),
              StartsWith("the pipeline produced an invalid graph (rerun with verification "
                         "after each pass to find the pass): node 3"));
  // The input is still checked before any pass runs.
  changed = MustCreate("noop", r, options)->Run(*g);
  EXPECT_THAT(std::string(changed.status().message()),
              StartsWith("the input graph is invalid (before any pass)"));
}

TEST(Pipeline, PassErrorsNameThePass) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  absl::StatusOr<bool> changed = MustCreate("noop,fail", r)->Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(changed.status().message(), "pass 'fail' failed: test failure");
}

TEST(Pipeline, FixpointGroups) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  auto p = MustCreate("add_marker,add_marker,fixpoint(noop,remove_marker)", r);
  absl::StatusOr<bool> changed = p->Run(*g);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(CountMarkers(*g), 0u);
  const FixpointStats& f = p->statistics().fixpoints().at(0);
  EXPECT_EQ(f.label, "fixpoint(noop,remove_marker)");
  EXPECT_EQ(f.iterations, 3);

  // Cap reached: a warning, or an error when asked.
  auto capped = MustCreate("fixpoint<3>(add_marker)", r);
  ASSERT_TRUE(capped->Run(*g).ok());
  EXPECT_EQ(CountMarkers(*g), 3u);
  ASSERT_EQ(capped->statistics().warnings.size(), 1u);
  EXPECT_EQ(capped->statistics().warnings[0],
            "fixpoint<3>(add_marker) stopped at its cap of 3 iterations while still changing "
            "the graph");
  PipelineOptions strict = TestOptions();
  strict.fail_at_fixpoint_cap = true;
  absl::StatusOr<bool> failed = MustCreate("fixpoint<3>(add_marker)", r, strict)->Run(*g);
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("no fixed point after 3 iterations"));
}

TEST(Pipeline, FixpointCycleDetectionNamesThePasses) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  absl::StatusOr<bool> changed = MustCreate("noop,fixpoint(noop,toggle_marker)", r)->Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()),
              StartsWith("fixpoint(noop,toggle_marker): cycle detected"));
}

TEST(Pipeline, DisablePass) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  PipelineOptions o = TestOptions();
  o.disabled_passes = {"fail", "remove_marker"};
  auto p = MustCreate("add_marker,fail,fixpoint(remove_marker)", r, o);
  absl::StatusOr<bool> changed = p->Run(*g);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(CountMarkers(*g), 1u);
  EXPECT_EQ(p->statistics().FindPass("fail")->skipped, 1);
  EXPECT_EQ(p->statistics().FindPass("fail")->runs, 0);
  EXPECT_EQ(p->statistics().executions, 1);
}

TEST(Pipeline, StopAfterCountsExecutionsIncludingFixpoints) {
  PassRegistry r = MakeTestRegistry();
  for (int n : {0, 1, 2, 4}) {
    auto g = MakeSmallGraph();
    PipelineOptions o = TestOptions();
    o.stop_after = n;
    // Executions: add(1) fixpoint[add_marker... capped at 5] ...
    auto p = MustCreate("add_marker,fixpoint<5>(add_marker),fail", r, o);
    absl::StatusOr<bool> changed = p->Run(*g);
    ASSERT_TRUE(changed.ok()) << "n=" << n << ": " << changed.status();
    EXPECT_EQ(CountMarkers(*g), static_cast<size_t>(n)) << n;
    EXPECT_EQ(p->statistics().executions, n);
    EXPECT_EQ(p->statistics().stopped_after, n);
    EXPECT_THAT(p->FormatStats(), HasSubstr(absl::StrCat("stopped after ", n)));
  }
  PipelineOptions bad = TestOptions();
  bad.stop_after = -2;
  EXPECT_FALSE(Pipeline::Create("noop", r, bad).ok());
}

TEST(Pipeline, ReproducerOnPassFailure) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  PipelineOptions o = TestOptions();
  o.reproducer_dir = TempDir("repro_fail");
  auto p = MustCreate("add_marker,fixpoint(noop,fail,remove_marker),noop", r, o);
  absl::StatusOr<bool> changed = p->Run(*g);
  ASSERT_FALSE(changed.ok());
  std::string path = o.reproducer_dir + "/reproducer.txt";
  EXPECT_EQ(changed.status().message(),
            absl::StrCat("pass 'fail' failed: test failure [reproducer: ", path, "]"));
  std::string text = ReadFile(path);
  EXPECT_EQ(text,
            "# kiln reproducer: pass 'fail' failed: test failure\n"
            "# kiln-pipeline: fail,remove_marker,fixpoint(noop,fail,remove_marker),noop\n"
            "graph:\n"
            "  aten::relu(%x)\n"
            "  aten::add(%1, %x)\n"
            "  test::marker()\n");
  EXPECT_EQ(ReproducerPipeline(text).value(),
            "fail,remove_marker,fixpoint(noop,fail,remove_marker),noop");
}

TEST(Pipeline, ReproducerOnVerifierAndChangedBitFailures) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  PipelineOptions o = TestOptions();
  o.reproducer_dir = TempDir("repro_verify");
  absl::StatusOr<bool> changed = MustCreate("noop,make_invalid", r, o)->Run(*g);
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("[reproducer: "));
  std::string text = ReadFile(o.reproducer_dir + "/reproducer.txt");
  EXPECT_THAT(text, StartsWith("# kiln reproducer: pass 'make_invalid' produced an invalid"));
  EXPECT_THAT(text, HasSubstr("# kiln-pipeline: make_invalid\n"));
  // The IR is the graph before the pass.
  EXPECT_THAT(text.substr(text.find("\ngraph:")), Not(HasSubstr("test::invalid")));

  // Cycles: the reproducer starts at the group, with the IR at its entry.
  auto g2 = MakeSmallGraph();
  changed = MustCreate("fixpoint(toggle_marker),noop", r, o)->Run(*g2);
  ASSERT_FALSE(changed.ok());
  text = ReadFile(o.reproducer_dir + "/reproducer.txt");
  EXPECT_THAT(text, HasSubstr("cycle detected"));
  EXPECT_THAT(text, HasSubstr("# kiln-pipeline: fixpoint(toggle_marker),noop\n"));
}

TEST(Pipeline, ReproducerNeedsATextWriter) {
  PassRegistry r = MakeTestRegistry();
  PipelineOptions o;
  o.reproducer_dir = "/tmp/unused";
  EXPECT_EQ(Pipeline::Create("noop", r, o).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(PipelineDeathTest, CrashWritesReproducer) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  PassRegistry r = MakeTestRegistry();
  PipelineOptions o = TestOptions();
  o.reproducer_dir = TempDir("repro_crash");
  auto p = MustCreate("add_marker,crash,noop", r, o);
  auto g = MakeSmallGraph();
  EXPECT_DEATH((void)p->Run(*g), "fatal signal in pass 'crash'; reproducer written to");
  std::string text = ReadFile(o.reproducer_dir + "/reproducer.txt");
  EXPECT_THAT(text, StartsWith("# kiln reproducer: fatal signal in pass 'crash'\n"
                               "# kiln-pipeline: crash,noop\n"));
  EXPECT_THAT(text, HasSubstr("test::marker()"));
}

TEST(Pipeline, DumpDirWritesNumberedFilesForChangedPasses) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  PipelineOptions o = TestOptions();
  o.dump_dir = TempDir("dumps");
  o.writers.proto = [](const ir::Graph& g) -> absl::StatusOr<std::string> {
    return absl::StrCat("proto:", g.numNodes());
  };
  auto p = MustCreate("noop,add_marker,noop,fixpoint(remove_marker)", r, o);
  ASSERT_TRUE(p->Run(*g).ok());
  const std::string& d = o.dump_dir;
  EXPECT_TRUE(FileExists(d + "/000_input.txt"));
  EXPECT_EQ(ReadFile(d + "/000_input.pb"), "proto:2");
  EXPECT_FALSE(FileExists(d + "/001_noop.txt"));
  EXPECT_THAT(ReadFile(d + "/002_add_marker.txt"), HasSubstr("test::marker()"));
  EXPECT_EQ(ReadFile(d + "/002_add_marker.pb"), "proto:3");
  EXPECT_FALSE(FileExists(d + "/003_noop.txt"));
  EXPECT_EQ(ReadFile(d + "/004_remove_marker.pb"), "proto:2");
  EXPECT_FALSE(FileExists(d + "/005_remove_marker.txt"));  // second iteration: no change
}

TEST(Pipeline, StatisticsTable) {
  PassRegistry r = MakeTestRegistry();
  auto g = MakeSmallGraph();
  PipelineOptions o = TestOptions();
  o.disabled_passes = {"nop"};
  auto p = MustCreate("count_nodes,add_marker,add_marker,fixpoint(remove_marker),noop", r, o);
  ASSERT_TRUE(p->Run(*g).ok());
  const PipelineStatistics& s = p->statistics();
  const PassRunStats* add = s.FindPass("add_marker");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->runs, 2);
  EXPECT_EQ(add->changed, 2);
  EXPECT_EQ(add->nodes_in, 2);
  EXPECT_EQ(add->nodes_out, 4);
  EXPECT_EQ(add->counters.Get("markers_added"), 2);  // summed over both instances
  const PassRunStats* remove = s.FindPass("remove_marker");
  EXPECT_EQ(remove->runs, 3);
  EXPECT_EQ(remove->changed, 2);
  EXPECT_EQ(s.FindPass("count_nodes")->counters.Get("nodes_seen"), 2);
  EXPECT_EQ(s.executions, 6);

  std::string table = p->FormatStats();
  EXPECT_THAT(table, StartsWith("=== kiln pass statistics: 6 pass executions, 4 changed, "));
  EXPECT_THAT(table, HasSubstr("pass                                   runs  changed   "
                               "time(ms)  nodes in nodes out\n"));
  EXPECT_THAT(table, HasSubstr("\nadd_marker                                2        2 "));
  EXPECT_THAT(table, HasSubstr("\n    markers_added                         2\n"));
  EXPECT_THAT(table, HasSubstr("noop                                      0        0      "
                               "0.000         -         -  (disabled, skipped 1)\n"));
  EXPECT_THAT(table, HasSubstr("fixpoint(remove_marker): entered 1, 3 iterations\n"));
}

TEST(Pipeline, LogsDumpsAndPipelineDebugLines) {
  PassRegistry r = MakeTestRegistry();
  std::string log;
  SetLogSink([&](absl::string_view line) { log.append(line.data(), line.size()); });
  SetLogGraphPrinter(testing::TestPrintGraph);
  ASSERT_TRUE(SetLogLevels("add_marker:>>pipeline").ok());
  auto g = MakeSmallGraph();
  ASSERT_TRUE(MustCreate("noop,add_marker", r)->Run(*g).ok());
  ASSERT_TRUE(SetLogLevels("").ok());
  SetLogSink(nullptr);
  SetLogGraphPrinter(nullptr);
  EXPECT_THAT(log, HasSubstr("[DUMP add_marker] graph before add_marker:\n"
                             "[DUMP add_marker] graph:\n"
                             "[DUMP add_marker]   aten::relu(%x)\n"));
  EXPECT_THAT(log, HasSubstr("[DUMP add_marker]   test::marker()\n"));
  EXPECT_THAT(log, HasSubstr("[DEBUG pipeline] #1 noop: changed=0, nodes 2 -> 2, "));
  EXPECT_THAT(log, HasSubstr("[DEBUG pipeline] #2 add_marker: changed=1, nodes 2 -> 3, "));
  EXPECT_THAT(log, Not(HasSubstr("[DUMP noop]")));
}

}  // namespace
}  // namespace kiln::passes
