// The real path into the wrapper: IR text -> shape propagation and
// decomposition (PrepareForLowering) -> LowerGraph -> ScheduleGraph ->
// GenerateWrapper (fake device codegen) -> planning, Python printing and
// proto round trip. Checks that lowering's output meets the wrapper's
// contract, not lowering's own choices.
#include <iostream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/op_registry.h"
#include "ir/text_parser.h"
#include "lowering/lower.h"
#include "lowering/schedule.h"
#include "passes/decompositions.h"
#include "passes/pass.h"
#include "passes/shape_functions.h"
#include "passes/shape_propagation.h"
#include "runtime/register_kernels.h"
#include "wrapper/codegen.h"
#include "wrapper/memory_planning.h"
#include "wrapper/proto_convert.h"
#include "wrapper/python_printer.h"
#include "wrapper/test_fixtures.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<WrapperProgram> Compile(const std::string& text) {
  static const bool registered = [] {
    return passes::RegisterShapeFunctions().ok() &&
           runtime::RegisterReferenceKernels(ir::BuiltinOps()).ok();
  }();
  if (!registered) return absl::InternalError("registration failed");
  auto graph = ir::ParseGraph(text);
  if (!graph.ok()) return graph.status();
  passes::PassStatistics stats;
  if (auto s = passes::PrepareForLowering(**graph, stats); !s.ok()) return s.status();
  auto loops = lowering::LowerGraph(**graph);
  if (!loops.ok()) return loops.status();
  auto schedule = lowering::ScheduleGraph(*loops);
  if (!schedule.ok()) return schedule.status();
  testing::FakeCodegen codegen;
  return GenerateWrapper(*loops, *schedule, codegen);
}

std::string Lines(const WrapperProgram& p) {
  std::string out;
  for (const Line& line : p.lines) {
    if (std::holds_alternative<KernelDefinitionLine>(line)) continue;
    out += LineToString(line) + "\n";
  }
  return out;
}

// Everything downstream of GenerateWrapper accepts what it produced.
void CheckDownstream(WrapperProgram program) {
  ASSERT_TRUE(ValidateWrapperProgram(program).ok()) << ValidateWrapperProgram(program);
  auto stats = PlanBufferReuse(program);
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto pool = PlanMemoryPool(program);
  ASSERT_TRUE(pool.ok()) << pool.status();
  auto report = ReportMemory(program, &*pool);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_LE(report->peak_bytes, report->total_buffer_bytes);
  auto python = PrintPythonWrapper(program);
  ASSERT_TRUE(python.ok()) << python.status();
  auto bytes = SerializeWrapperProgram(program);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto back = DeserializeWrapperProgram(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToString(), program.ToString());
}

TEST(PipelineTest, MatmulTransposeAndEpilogue) {
  auto p = Compile(R"(graph(%x : Float(8, 8), %w : Float(8, 8)):
  %r : Tensor = aten::relu(%x)
  %m : Tensor = aten::mm(%r, %w)
  %t : Tensor = aten::t(%m)
  %e : Tensor = aten::exp(%t)
  %one : int = prim::Constant[value=1]()
  %s : Tensor = aten::add(%e, %x, %one)
  return (%s))");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string lines = Lines(*p);
  EXPECT_THAT(lines, HasSubstr("ExternKernelLine aten::mm("));
  EXPECT_THAT(lines, HasSubstr("KernelCallLine cpp_fused_relu_0("));
  CheckDownstream(*p);
}

TEST(PipelineTest, ReductionsNormsAndFallbacks) {
  const char* graphs[] = {
      R"(graph(%x : Float(4, 8)):
  %d : int = prim::Constant[value=1]()
  %n : NoneType = prim::Constant()
  %s : Tensor = aten::softmax(%x, %d, %n)
  return (%s))",
      R"(graph(%x : Float(4, 8), %w : Float(8), %b : Float(8)):
  %shape : int[] = prim::Constant[value=[8]]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %f)
  return (%y))",
      R"(graph(%x : Float(2, 3), %y : Float(2, 3)):
  %l : Tensor[] = prim::ListConstruct(%x, %y)
  %d : int = prim::Constant[value=0]()
  %c : Tensor = aten::cat(%l, %d)
  %r : Tensor = aten::relu_(%c)
  %s : Tensor = aten::sin(%c)
  %m : Tensor = aten::cumsum(%s, %d)
  return (%m, %r, %x))",
      R"(graph(%x : Float(4, 6)):
  %a : Tensor = aten::t(%x)
  %one : int = prim::Constant[value=1]()
  %b : Tensor = aten::add(%a, %a, %one)
  %c : Tensor = aten::sigmoid(%b)
  %d : Tensor = aten::tanh(%c)
  return (%d, %a))",
  };
  for (const char* text : graphs) {
    auto p = Compile(text);
    ASSERT_TRUE(p.ok()) << p.status() << "\n" << text;
    CheckDownstream(*p);
    if (::testing::Test::HasFailure()) std::cerr << text << "\n" << p->ToString();
  }
}

TEST(PipelineTest, LongChainPlansReuse) {
  std::string text = "graph(%x : Float(64, 64)):\n";
  std::string prev = "%x";
  for (int i = 0; i < 6; ++i) {
    const std::string m = "%m" + std::to_string(i);
    const std::string w = "%w" + std::to_string(i);
    text += "  " + w + " : Tensor = aten::exp(" + prev + ")\n";
    text += "  " + m + " : Tensor = aten::mm(" + w + ", " + w + ")\n";
    prev = m;
  }
  text += "  return (" + prev + ")";
  auto p = Compile(text);
  ASSERT_TRUE(p.ok()) << p.status();
  auto report_before = ReportMemory(*p);
  ASSERT_TRUE(report_before.ok());
  auto stats = PlanBufferReuse(*p);
  ASSERT_TRUE(stats.ok()) << stats.status();
  // Two storages ping-pong through the whole chain.
  EXPECT_EQ(stats->reused, 10) << Lines(*p);
  auto report = ReportMemory(*p);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->total_buffer_bytes, 12 * 64 * 64 * 4);
  EXPECT_LE(report->peak_bytes, report_before->peak_bytes);
  EXPECT_EQ(report->peak_bytes, 2 * 64 * 64 * 4);
}

}  // namespace
}  // namespace kiln::wrapper
