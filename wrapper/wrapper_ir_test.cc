#include "wrapper/wrapper_ir.h"

#include <gtest/gtest.h>

#include "wrapper/layout_math.h"
#include "wrapper/test_fixtures.h"
#include "wrapper/validate.h"

namespace kiln::wrapper {
namespace {

using testing::F32;

TEST(WrapperIrTest, EveryLineKindPrintsOneLine) {
  Layout view = F32({4, 2});
  view.strides = {1, 4};
  const std::vector<std::pair<Line, std::string>> cases = {
      {AllocateLine{"buf0", F32({2, 3})},
       "AllocateLine buf0 Float[2, 3] strides [3, 1] offset 0 cpu"},
      {FreeIfNotReusedLine{"buf0", false}, "FreeIfNotReusedLine buf0"},
      {FreeIfNotReusedLine{"buf0", true}, "FreeIfNotReusedLine buf0 (reused)"},
      {ReuseLine{"buf0", "buf2", F32({6}), true},
       "ReuseLine buf2 <- buf0 Float[6] strides [1] offset 0 cpu"},
      {ReuseLine{"buf0", "buf2", F32({6}), false},
       "ReuseLine buf2 <- buf0 Float[6] strides [1] offset 0 cpu (keep old)"},
      {FreeLine{"arg0"}, "FreeLine arg0"},
      {ReinterpretLine{"buf1", "buf0", view},
       "ReinterpretLine buf1 = view of buf0 Float[4, 2] strides [1, 4] offset 0 cpu"},
      {KernelDefinitionLine{"k0", "cpu", "a\nb"}, "KernelDefinitionLine k0 cpu <3 bytes, 2 lines>"},
      {KernelCallLine{"k0", "cpu", {"arg0", "buf0"}}, "KernelCallLine k0(arg0, buf0) cpu"},
      {ExternKernelLine{"aten::mm", {{"buf0", {}}, {"", ir::IValue::Int(2)}}, {"buf1"}},
       "ExternKernelLine aten::mm(buf0, 2, out=[buf1])"},
      {ExternKernelAllocLine{"aten::topk",
                             {{"buf0", {}}, {"", ir::IValue::IntList({3})}, {"", std::nullopt}},
                             {"buf1", ""},
                             {F32({3}), F32({3})}},
       "ExternKernelAllocLine buf1, _ = aten::topk(buf0, [3], None) : Float[3] strides [1] "
       "offset 0 cpu; Float[3] strides [1] offset 0 cpu"},
      {MultiOutputLine{"buf5", "buf4", {0, 1}}, "MultiOutputLine buf5 = buf4[0][1]"},
      {CommentLine{"two\nlines"}, "CommentLine # two lines"},
      {EnterDeviceContextManagerLine{"cuda", 1}, "EnterDeviceContextManagerLine cuda:1"},
      {ExitDeviceContextManagerLine{}, "ExitDeviceContextManagerLine"},
      {NullLine{}, "NullLine"},
  };
  for (const auto& [line, expected] : cases) {
    EXPECT_EQ(LineToString(line), expected);
    EXPECT_EQ(LineToString(line).find('\n'), std::string::npos);
  }
  EXPECT_STREQ(LineKindName(Line(NullLine{})), "NullLine");
  EXPECT_STREQ(LineKindName(Line(ExternKernelAllocLine{})), "ExternKernelAllocLine");
}

TEST(WrapperIrTest, ProgramToString) {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf0"};
  p.layouts = {{"arg0", F32({4})}, {"buf0", F32({4})}, {"const0", F32({2})}};
  p.constants = {{"const0", Tensor::Empty(DType::kFloat32, {2})}};
  p.lines = {KernelDefinitionLine{"k", "cpu", "x"}, AllocateLine{"buf0", F32({4})},
             KernelCallLine{"k", "cpu", {"arg0", "const0", "buf0"}}};
  EXPECT_EQ(p.ToString(),
            "inputs: [arg0]\n"
            "outputs: [buf0]\n"
            "constant const0 Float[2]\n"
            "KernelDefinitionLine k cpu <1 bytes, 1 lines>\n"
            "AllocateLine buf0 Float[4] strides [1] offset 0 cpu\n"
            "KernelCallLine k(arg0, const0, buf0) cpu\n");
  EXPECT_TRUE(ValidateWrapperProgram(p).ok());
}

TEST(LayoutMathTest, StorageBytesAndOverflow) {
  Layout l = F32({2, 3});
  EXPECT_EQ(*StorageBytesChecked(l), 24);
  l.strides = {1, 2};  // transposed view of a [3, 2]
  EXPECT_EQ(*StorageElementsChecked(l), 6);
  l.offset = 4;
  EXPECT_EQ(*StorageElementsChecked(l), 10);
  EXPECT_EQ(*StorageBytesChecked(F32({0, 5})), 0);
  Layout huge = F32({int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_FALSE(StorageBytesChecked(huge).ok());
  EXPECT_FALSE(ValidateLayout(huge, "x").ok());
  Layout bad = F32({2});
  bad.strides = {};
  EXPECT_FALSE(ValidateLayout(bad, "x").ok());
  bad = F32({2});
  bad.dtype = static_cast<DType>(100);
  EXPECT_FALSE(ValidateLayout(bad, "x").ok());
  EXPECT_TRUE(IsContiguousLayout(F32({3, 1, 2})));
}

TEST(ValidateTest, CatchesUseAfterFreeAndViewOfFreedBase) {
  WrapperProgram p;
  p.inputs = {"arg0"};
  p.outputs = {"buf1"};
  p.layouts = {{"arg0", F32({4})}, {"buf0", F32({4})}, {"v0", F32({4})}, {"buf1", F32({4})}};
  p.lines = {KernelDefinitionLine{"k", "cpu", ""},
             AllocateLine{"buf0", F32({4})},
             ReinterpretLine{"v0", "buf0", F32({4})},
             KernelCallLine{"k", "cpu", {"arg0", "buf0"}},
             FreeIfNotReusedLine{"buf0"},
             AllocateLine{"buf1", F32({4})},
             KernelCallLine{"k", "cpu", {"v0", "buf1"}}};
  absl::Status s = ValidateWrapperProgram(p);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("line 6 (KernelCallLine): 'v0' used after its storage was freed"),
            std::string::npos)
      << s;
  // Inputs and outputs never go to the reuse pool.
  p.lines.resize(4);
  p.lines.push_back(FreeIfNotReusedLine{"arg0"});
  EXPECT_FALSE(ValidateWrapperProgram(p).ok());
  p.lines.back() = FreeLine{"arg0"};  // a graph input the program owns may be freed
  p.lines.push_back(AllocateLine{"buf1", F32({4})});
  p.lines.push_back(KernelCallLine{"k", "cpu", {"v0", "buf1"}});
  EXPECT_TRUE(ValidateWrapperProgram(p).ok()) << ValidateWrapperProgram(p);
}

TEST(ValidateTest, Names) {
  EXPECT_TRUE(IsIdentifier("buf_0"));
  EXPECT_FALSE(IsIdentifier("0buf"));
  EXPECT_FALSE(IsIdentifier("a-b"));
  EXPECT_FALSE(IsIdentifier(""));
  EXPECT_FALSE(IsIdentifier("x\"); system(\"rm"));
  EXPECT_TRUE(IsQualifiedOpName("aten::add.Tensor"));
  EXPECT_TRUE(IsQualifiedOpName("aten::mm"));
  EXPECT_FALSE(IsQualifiedOpName("mm"));
  EXPECT_FALSE(IsQualifiedOpName("aten::a.b.c"));
  EXPECT_FALSE(IsQualifiedOpName("aten::"));
}

}  // namespace
}  // namespace kiln::wrapper
