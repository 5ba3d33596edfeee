// Decompositions are numerically exact rewrites: the interpreter gives the
// same outputs before and after `decompose` (within float rounding), on
// random inputs.
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/text_parser.h"
#include "passes/decompositions.h"
#include "passes/pass.h"
#include "runtime/interpreter.h"

namespace kiln {
namespace {

using ir::IValue;

Tensor Random(std::vector<int64_t> sizes, std::mt19937* gen) {
  Tensor t = Tensor::Empty(DType::kFloat32, std::move(sizes));
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(*gen);
  return t;
}

struct Case {
  const char* name;
  const char* graph;
  std::vector<std::vector<int64_t>> input_sizes;
};

class DecompositionsNumericTest : public ::testing::TestWithParam<Case> {};

TEST_P(DecompositionsNumericTest, SameOutputsAsTheOriginalOp) {
  const Case& c = GetParam();
  auto original = ir::ParseGraph(c.graph);
  ASSERT_TRUE(original.ok()) << original.status();
  auto decomposed = ir::ParseGraph(c.graph);
  ASSERT_TRUE(decomposed.ok());
  passes::PassStatistics stats;
  absl::StatusOr<bool> changed = passes::Decompose(**decomposed, stats);
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed) << c.name << " was not decomposed";
  std::mt19937 gen(7);
  std::vector<IValue> inputs;
  for (const auto& sizes : c.input_sizes) inputs.push_back(IValue::FromTensor(Random(sizes, &gen)));
  auto want = runtime::RunGraph(**original, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  auto got = runtime::RunGraph(**decomposed, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(want->size(), got->size());
  for (size_t k = 0; k < want->size(); ++k) {
    const Tensor& a = (*want)[k].toTensor();
    const Tensor& b = (*got)[k].toTensor();
    ASSERT_EQ(a.sizes(), b.sizes()) << c.name;
    ASSERT_EQ(a.dtype(), b.dtype()) << c.name;
    for (int64_t i = 0; i < a.numel(); ++i) {
      EXPECT_NEAR(a.GetDouble(i), b.GetDouble(i), 1e-5 + 1e-5 * std::fabs(a.GetDouble(i)))
          << c.name << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllDecompositions, DecompositionsNumericTest,
    ::testing::Values(
        Case{"addmm", R"(graph(%b : Float(3), %x : Float(2, 4), %w : Float(4, 3)):
  %beta : float = prim::Constant[value=0.5]()
  %alpha : float = prim::Constant[value=2.]()
  %y : Tensor = aten::addmm(%b, %x, %w, %beta, %alpha)
  return (%y))",
             {{3}, {2, 4}, {4, 3}}},
        Case{"linear", R"(graph(%x : Float(2, 4), %w : Float(3, 4), %b : Float(3)):
  %y : Tensor = aten::linear(%x, %w, %b)
  return (%y))",
             {{2, 4}, {3, 4}, {3}}},
        Case{"layer_norm", R"(graph(%x : Float(2, 3, 4), %w : Float(4), %b : Float(4)):
  %n : int = prim::Constant[value=4]()
  %shape : int[] = prim::ListConstruct(%n)
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %w, %b, %eps, %cudnn)
  return (%y))",
             {{2, 3, 4}, {4}, {4}}},
        Case{"batch_norm", R"(graph(%x : Float(2, 3, 4), %w : Float(3), %b : Float(3), %m : Float(3), %v : Float(3)):
  %training : bool = prim::Constant[value=0]()
  %momentum : float = prim::Constant[value=0.10000000000000001]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %vv : Tensor = aten::abs(%v)
  %y : Tensor = aten::batch_norm(%x, %w, %b, %m, %vv, %training, %momentum, %eps, %cudnn)
  return (%y))",
             {{2, 3, 4}, {3}, {3}, {3}, {3}}},
        Case{"group_norm", R"(graph(%x : Float(2, 4, 3), %w : Float(4), %b : Float(4)):
  %groups : int = prim::Constant[value=2]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %cudnn : bool = prim::Constant[value=1]()
  %y : Tensor = aten::group_norm(%x, %groups, %w, %b, %eps, %cudnn)
  return (%y))",
             {{2, 4, 3}, {4}, {4}}},
        Case{"gelu_erf", R"(graph(%x : Float(5)):
  %mode : str = prim::Constant[value="none"]()
  %y : Tensor = aten::gelu(%x, %mode)
  return (%y))",
             {{5}}},
        Case{"gelu_tanh", R"(graph(%x : Float(5)):
  %mode : str = prim::Constant[value="tanh"]()
  %y : Tensor = aten::gelu(%x, %mode)
  return (%y))",
             {{5}}},
        Case{"silu", R"(graph(%x : Float(5)):
  %y : Tensor = aten::silu(%x)
  return (%y))",
             {{5}}},
        Case{"hardswish", R"(graph(%x : Float(7)):
  %y : Tensor = aten::hardswish(%x)
  return (%y))",
             {{7}}},
        Case{"softmax", R"(graph(%x : Float(3, 4)):
  %dim : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::softmax(%x, %dim, %none)
  return (%y))",
             {{3, 4}}},
        Case{"native_layer_norm", R"(graph(%x : Float(2, 3, 4), %w : Float(3, 4), %b : Float(3, 4)):
  %shape : int[] = prim::Constant[value=[3, 4]]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %y : Tensor, %m : Tensor, %r : Tensor = aten::native_layer_norm(%x, %shape, %w, %b, %eps)
  return (%y, %m, %r))",
             {{2, 3, 4}, {3, 4}, {3, 4}}},
        Case{"onnx_layer_norm", R"(graph(%x : Float(2, 3, 4), %w : Float(4), %b : Float(4)):
  %axis : int = prim::Constant[value=-1]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %y : Tensor, %m : Tensor, %r : Tensor = kiln::layer_norm(%x, %axis, %w, %b, %eps)
  return (%y, %m, %r))",
             {{2, 3, 4}, {4}, {4}}},
        Case{"onnx_arg_extreme", R"(graph(%x : Float(3, 5)):
  %d : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %y : Tensor = kiln::arg_extreme(%x, %d, %t, %f, %f)
  return (%y))",
             {{3, 5}}},
        Case{"onnx_flat_softmax", R"(graph(%x : Float(2, 3, 4)):
  %axis : int = prim::Constant[value=1]()
  %soft : int = prim::Constant[value=0]()
  %logsoft : int = prim::Constant[value=1]()
  %y : Tensor = kiln::flat_softmax(%x, %axis, %soft)
  %z : Tensor = kiln::flat_softmax(%x, %axis, %logsoft)
  return (%y, %z))",
             {{2, 3, 4}}},
        Case{"onnx_shrink", R"(graph(%x : Float(9)):
  %bias : float = prim::Constant[value=0.25]()
  %lambd : float = prim::Constant[value=0.5]()
  %y : Tensor = kiln::shrink(%x, %bias, %lambd)
  return (%y))",
             {{9}}},
        Case{"celu", R"(graph(%x : Float(3, 4)):
  %alpha : float = prim::Constant[value=0.75]()
  %y : Tensor = aten::celu(%x, %alpha)
  return (%y))",
             {{3, 4}}},
        Case{"isinf", R"(graph(%x : Float(16)):
  %f : Float(16) = aten::floor(%x)
  %r : Float(16) = aten::reciprocal(%f)
  %y : Tensor = aten::isinf(%r)
  return (%y))",
             {{16}}},
        Case{"log_softmax", R"(graph(%x : Float(3, 4)):
  %dim : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::log_softmax(%x, %dim, %none)
  return (%y))",
             {{3, 4}}},
        Case{"underscore_softmax", R"(graph(%x : Float(3, 4)):
  %dim : int = prim::Constant[value=1]()
  %half_to_float : bool = prim::Constant[value=0]()
  %y : Tensor = aten::_softmax(%x, %dim, %half_to_float)
  %z : Tensor = aten::_log_softmax(%x, %dim, %half_to_float)
  return (%y, %z))",
             {{3, 4}}},
        Case{"copy", R"(graph(%x : Float(2, 3, 4), %src : Float(3, 1)):
  %false : bool = prim::Constant[value=0]()
  %double : int = prim::Constant[value=7]()
  %none : NoneType = prim::Constant()
  %xd : Double(2, 3, 4) = aten::to(%x, %double, %false, %false, %none)
  %y : Tensor = aten::copy(%xd, %src, %false)
  return (%y))",
             {{2, 3, 4}, {3, 1}}},
        Case{"eval_dropout", R"(graph(%x : Float(3, 4)):
  %p : float = prim::Constant[value=0.5]()
  %train : bool = prim::Constant[value=0]()
  %y : Tensor = aten::dropout(%x, %p, %train)
  return (%y))",
             {{3, 4}}}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln
