#include "wrapper/proto_convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ir/text_parser.h"
#include "ir/text_printer.h"
#include "wrapper/codegen.h"
#include "wrapper/memory_planning.h"
#include "wrapper/test_fixtures.h"

namespace kiln::wrapper {
namespace {

using ::testing::HasSubstr;
using testing::F32;

WrapperProgram PlannedSample() {
  testing::FakeCodegen codegen;
  auto p = GenerateWrapper(testing::SampleGraph(), testing::SampleSchedule(), codegen);
  EXPECT_TRUE(p.ok());
  EXPECT_TRUE(PlanBufferReuse(*p).ok());
  return *std::move(p);
}

// Every line kind, and extern constants of every kind.
WrapperProgram EveryLineKind() {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf3"};
  Tensor small = Tensor::Empty(DType::kInt64, {2});
  small.data<int64_t>()[1] = -7;
  ir::Device dev;
  dev.type = "cpu";
  p.layouts = {{"arg0", F32({16})}, {"buf0", F32({16})}, {"buf1", F32({4, 4})},
               {"buf2", F32({16})}, {"buf3", F32({16})}, {"buf4", F32({3})}, {"buf5", F32({3})}};
  p.lines = {
      KernelDefinitionLine{"k", "cpu", "void k() {}\n// '''\n"},
      AllocateLine{"buf0", F32({16})},
      KernelCallLine{"k", "cpu", {"arg0", "buf0"}},
      ReinterpretLine{"buf1", "buf0", F32({4, 4})},
      FreeIfNotReusedLine{"buf0", true},
      ExternKernelAllocLine{"aten::topk",
                            {{"arg0", {}},
                             {"", ir::IValue::Int(3)},
                             {"", ir::IValue::Double(-0.0)},
                             {"", ir::IValue::String(std::string("a\0b", 3))},
                             {"", ir::IValue::FromTensor(small)},
                             {"", ir::IValue::FromDevice(dev)},
                             {"", ir::IValue::Tuple({ir::IValue::Bool(true),
                                                     ir::IValue::List({ir::IValue::None()})})},
                             {"", std::nullopt}},
                            {"buf4", ""},
                            {F32({3}), F32({3})}},
      MultiOutputLine{"buf5", "buf4", {0, 2}},
      EnterDeviceContextManagerLine{"cuda", 1},
      CommentLine{"hi"},
      ExitDeviceContextManagerLine{},
      NullLine{},
      AllocateLine{"buf2", F32({16})},
      ExternKernelLine{"aten::mm", {{"buf1", {}}, {"buf1", {}}}, {"buf2"}},
      FreeIfNotReusedLine{"buf2", true},
      ReuseLine{"buf2", "buf3", F32({16}), false},
      FreeLine{"arg0"},
  };
  return p;
}

TEST(ProtoConvertTest, RoundTripsEveryLineKind) {
  for (const WrapperProgram& program : {PlannedSample(), EveryLineKind()}) {
    auto bytes = SerializeWrapperProgram(program);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    auto back = DeserializeWrapperProgram(*bytes);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->ToString(), program.ToString());
    ASSERT_EQ(back->lines.size(), program.lines.size());
    for (size_t i = 0; i < program.lines.size(); ++i) {
      EXPECT_EQ(LineToString(back->lines[i]), LineToString(program.lines[i])) << i;
    }
    // Saving again gives the same bytes (deterministic).
    EXPECT_EQ(*SerializeWrapperProgram(*back), *bytes);
    auto text = WrapperProgramToTextProto(program);
    ASSERT_TRUE(text.ok());
    auto from_text = WrapperProgramFromTextProto(*text);
    ASSERT_TRUE(from_text.ok()) << from_text.status();
    EXPECT_EQ(from_text->ToString(), program.ToString());
  }
  auto back = DeserializeWrapperProgram(*SerializeWrapperProgram(EveryLineKind()));
  const auto& alloc = std::get<ExternKernelAllocLine>(back->lines[5]);
  EXPECT_EQ(alloc.args[3].constant->toString(), std::string("a\0b", 3));
  EXPECT_EQ(alloc.args[4].constant->toTensor().GetInt(1), -7);
  EXPECT_EQ(alloc.args[5].constant->toDevice().type, "cpu");
  EXPECT_FALSE(alloc.args[7].constant.has_value());
  EXPECT_FALSE(std::get<ReuseLine>(back->lines[14]).delete_old);
  EXPECT_EQ(PlannedSample().constants.size(), 1);
  auto sample = DeserializeWrapperProgram(*SerializeWrapperProgram(PlannedSample()));
  EXPECT_TRUE(sample->constants[0].second.ValueEquals(PlannedSample().constants[0].second));
}

std::shared_ptr<const ir::Graph> IslandGraph() {
  auto g = ir::ParseGraph(R"IR(graph(%x : Float(3)):
  %n : int = aten::numel(%x)
  %y : Tensor = aten::mul(%x, %n)
  return (%y)
)IR");
  EXPECT_TRUE(g.ok()) << g.status();
  return std::shared_ptr<const ir::Graph>(std::move(*g));
}

TEST(ProtoConvertTest, RoundTripsIslands) {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf0"};
  p.layouts = {{"arg0", F32({3})}, {"buf0", F32({3})}};
  p.islands = {IslandGraph()};
  ExternKernelAllocLine call{"kiln::interpret", {{"arg0", {}}}, {"buf0"}, {F32({3})}};
  call.island = 0;
  p.lines = {call};
  auto bytes = SerializeWrapperProgram(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto back = DeserializeWrapperProgram(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->islands.size(), 1u);
  EXPECT_EQ(ir::PrintGraph(*back->islands[0]), ir::PrintGraph(*p.islands[0]));
  EXPECT_EQ(std::get<ExternKernelAllocLine>(back->lines[0]).island, 0);

  // A line naming an island the program does not hold is rejected.
  proto::WrapperProgramProto bad = *WrapperToProto(p);
  bad.mutable_lines(0)->mutable_extern_kernel_alloc()->set_island(1);
  EXPECT_FALSE(WrapperFromProto(bad).ok());
  // Version 1 cannot hold islands.
  proto::WrapperProgramProto v1 = *WrapperToProto(p);
  v1.set_format_version(1);
  EXPECT_THAT(WrapperFromProto(v1).status().message(), HasSubstr("cannot hold islands"));
}

TEST(ProtoConvertTest, RoundTripsAWholeGraphIsland) {
  WrapperProgram p;
  p.interpreted_graph = IslandGraph();
  auto back = DeserializeWrapperProgram(*SerializeWrapperProgram(p));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_NE(back->interpreted_graph, nullptr);
  EXPECT_EQ(ir::PrintGraph(*back->interpreted_graph), ir::PrintGraph(*p.interpreted_graph));
}

TEST(ProtoConvertTest, RoundTripsBufferListsAndExternalConstants) {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf0"};
  Tensor c = Tensor::Empty(DType::kFloat32, {2});
  c.data<float>()[1] = 4.5f;
  p.constants = {{"const0", c}};
  p.layouts = {{"arg0", F32({2})}, {"const0", F32({2})}, {"buf0", F32({4})}};
  lowering::ExternArg list{"", std::nullopt, true, {"arg0", "const0"}};
  lowering::ExternArg empty_list{"", std::nullopt, true, {}};
  p.lines = {ExternKernelAllocLine{"aten::cat", {list, {"", ir::IValue::Int(0)}, empty_list}, {"buf0"}, {F32({4})}}};
  auto back = DeserializeWrapperProgram(*SerializeWrapperProgram(p));
  ASSERT_TRUE(back.ok()) << back.status();
  const auto& args = std::get<ExternKernelAllocLine>(back->lines[0]).args;
  ASSERT_EQ(args.size(), 3u);
  EXPECT_TRUE(args[0].is_buffer_list);
  EXPECT_THAT(args[0].buffer_list, ::testing::ElementsAre("arg0", "const0"));
  EXPECT_FALSE(args[1].is_buffer_list);
  EXPECT_TRUE(args[2].is_buffer_list);
  EXPECT_TRUE(args[2].buffer_list.empty());

  // Without constant data: the constants come from the caller, by name.
  auto bytes = SerializeWrapperProgramWithoutConstantData(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_FALSE(DeserializeWrapperProgram(*bytes).ok());  // no data, none supplied
  auto missing = DeserializeWrapperProgram(*bytes, std::map<std::string, Tensor>{});
  EXPECT_THAT(missing.status().message(), HasSubstr("'const0'"));
  auto supplied = DeserializeWrapperProgram(*bytes, std::map<std::string, Tensor>{{"const0", c}});
  ASSERT_TRUE(supplied.ok()) << supplied.status();
  EXPECT_EQ(supplied->constants[0].second.storage(), c.storage());  // not copied
}

proto::WrapperProgramProto SampleProto() { return *WrapperToProto(PlannedSample()); }

absl::Status Load(const proto::WrapperProgramProto& p) { return WrapperFromProto(p).status(); }

TEST(ProtoConvertTest, LoaderRejectsBadInput) {
  EXPECT_FALSE(DeserializeWrapperProgram("\xff\xff\xff garbage").ok());
  {
    auto p = SampleProto();
    p.set_format_version(kWrapperProtoVersion + 1);
    EXPECT_THAT(Load(p).message(), HasSubstr("format_version 3"));
  }
  {
    auto p = SampleProto();
    p.mutable_layouts(0)->mutable_layout()->set_dtype(99);
    EXPECT_THAT(Load(p).message(), HasSubstr("unknown dtype code 99"));
  }
  {
    auto p = SampleProto();
    p.mutable_layouts(0)->mutable_layout()->add_sizes(-1);
    p.mutable_layouts(0)->mutable_layout()->add_strides(1);
    EXPECT_FALSE(Load(p).ok());
  }
  {
    auto p = SampleProto();
    auto* l = p.mutable_layouts(0)->mutable_layout();
    l->set_sizes(0, int64_t{1} << 62);
    l->set_strides(0, 16);
    EXPECT_THAT(Load(p).message(), HasSubstr("overflow"));
  }
  {
    auto p = SampleProto();
    p.mutable_constants(0)->mutable_tensor()->mutable_raw_data()->pop_back();
    EXPECT_THAT(Load(p).message(), HasSubstr("bytes of data"));
  }
  {
    auto p = SampleProto();
    p.mutable_lines(3)->Clear();  // no kind
    EXPECT_THAT(Load(p).message(), HasSubstr("line 3: line has no kind"));
  }
  {
    auto p = SampleProto();
    p.mutable_lines(4)->mutable_kernel_call()->set_args(0, "ghost");
    EXPECT_THAT(Load(p).message(), HasSubstr("'ghost' used before definition"));
  }
  {
    auto p = SampleProto();
    p.mutable_lines(4)->mutable_kernel_call()->set_kernel_name("x(); import os");
    EXPECT_FALSE(Load(p).ok());
  }
  {
    // Deep nesting is refused, not recursed into.
    auto p = SampleProto();
    proto::ExternArgProto* arg = p.mutable_lines(7)->mutable_extern_kernel()->add_args();
    proto::ValueProto* v = arg->mutable_constant();
    for (int i = 0; i < 40; ++i) v = v->mutable_list()->add_values();
    v->set_int_value(1);
    EXPECT_THAT(Load(p).message(), HasSubstr("deeper than 32"));
  }
  {
    auto p = SampleProto();
    p.add_outputs("buf0");  // freed before the end
    EXPECT_FALSE(Load(p).ok());
  }
}

}  // namespace
}  // namespace kiln::wrapper
