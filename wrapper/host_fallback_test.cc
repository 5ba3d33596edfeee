#include "wrapper/host_fallback.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/text_parser.h"

namespace kiln::wrapper {
namespace {

Tensor Ramp() {
  Tensor t = Tensor::Empty(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) t.data<float>()[i] = static_cast<float>(i) - 2.0f;
  return t;
}

TEST(HostFallbackTest, ExternRunsTheReferenceKernelIntoStridedOutputs) {
  lowering::ExternArg x;
  x.buffer = "x";
  Tensor storage = Tensor::Empty(DType::kFloat32, {6});
  std::vector<Tensor> outs = {Tensor::View(storage, {2, 3}, {1, 2}, 0)};  // transposed
  ASSERT_TRUE(RunHostExtern("aten::relu", {x}, {Ramp()}, outs).ok());
  EXPECT_EQ(storage.data<float>()[0], 0.0f);  // relu(-2)
  EXPECT_EQ(storage.data<float>()[5], 3.0f);  // (1, 2) at offset 5
  absl::Status missing = RunHostExtern("aten::no_such_op", {x}, {Ramp()}, outs);
  EXPECT_TRUE(absl::IsUnimplemented(missing)) << missing;
  EXPECT_FALSE(RunHostExtern("aten::relu", {x}, {}, outs).ok());  // too few buffers
}

TEST(HostFallbackTest, ArgumentValuesKeepBufferListsAndConstants) {
  lowering::ExternArg list;
  list.is_buffer_list = true;
  list.buffer_list = {"a", "b"};
  lowering::ExternArg dim;
  dim.constant = ir::IValue::Int(1);
  lowering::ExternArg absent;
  auto values = ExternArgumentValues({list, dim, absent}, {Ramp(), Ramp()});
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), 3u);
  EXPECT_EQ((*values)[0].elements().size(), 2u);
  EXPECT_EQ((*values)[1].toInt(), 1);
  EXPECT_TRUE((*values)[2].isNone());
  EXPECT_FALSE(ExternArgumentValues({list}, {Ramp()}).ok());
}

TEST(HostFallbackTest, IslandRunsInTheInterpreter) {
  auto island = ir::ParseGraph(R"IR(graph(%x : Float(2, 3)):
  %y : Tensor = aten::neg(%x)
  return (%y)
)IR");
  ASSERT_TRUE(island.ok()) << island.status();
  std::vector<Tensor> outs = {Tensor::Empty(DType::kFloat32, {2, 3})};
  ASSERT_TRUE(RunHostIsland(**island, {Ramp()}, outs).ok());
  EXPECT_EQ(outs[0].data<float>()[0], 2.0f);
  absl::Status arity = RunHostIsland(**island, {}, outs);
  EXPECT_TRUE(absl::IsInvalidArgument(arity)) << arity;
}

}  // namespace
}  // namespace kiln::wrapper
