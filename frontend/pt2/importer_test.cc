// IR text out for small torch.export programs in, and the importer's errors.
#include "frontend/pt2/importer.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "frontend/pt2/test_archive.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/text_printer.h"
#include "ir/verifier.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {
namespace {

using ::testing::HasSubstr;
using testing::FloatBytes;
using testing::MakePt2;
using testing::Meta;
using testing::ProgramJson;
using testing::TestTensor;

absl::StatusOr<ImportedProgram> Import(const std::string& json, const std::vector<TestTensor>& weights = {},
                                       const std::vector<std::string>& skip = {}) {
  ASSIGN_OR_RETURN(std::unique_ptr<Archive> a, Archive::FromBytes(MakePt2(json, weights, skip), "t.pt2"));
  return ImportPt2Archive(*a);
}

std::string Text(const std::string& json, const std::vector<TestTensor>& weights = {}) {
  absl::StatusOr<ImportedProgram> p = Import(json, weights);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return "";
  absl::Status verified = ir::Verify(*p->graph);
  EXPECT_TRUE(verified.ok()) << verified;
  return ir::PrintGraph(*p->graph);
}

[[maybe_unused]] std::string ErrorOf(const std::string& json, const std::vector<TestTensor>& weights = {},
                    const std::vector<std::string>& skip = {}) {
  absl::StatusOr<ImportedProgram> p = Import(json, weights, skip);
  EXPECT_FALSE(p.ok());
  return std::string(p.status().message());
}

std::string Tensor(const std::string& name) {
  return absl::StrCat(R"({"as_tensor": {"name": ")", name, R"("}})");
}
std::string In(const std::string& arg, const std::string& value) {
  return absl::StrCat(R"({"name": ")", arg, R"(", "arg": )", value, R"(, "kind": 1})");
}
std::string Node(const std::string& target, const std::string& name, const std::vector<std::string>& inputs,
                 const std::string& outputs) {
  return absl::StrCat(R"({"target": ")", target, R"(", "name": ")", name, R"(", "inputs": [)",
                      absl::StrJoin(inputs, ", "), R"(], "outputs": [)", outputs, R"(], "metadata": {}})");
}

// x -> <nodes> -> `out`, with x: float32[2, 3] and the given extra metas.
ProgramJson UnaryProgram(const std::string& nodes, const std::string& out, const std::string& metas) {
  ProgramJson p;
  p.input_specs = R"({"user_input": {"arg": {"as_tensor": {"name": "x"}}}})";
  p.graph_inputs = Tensor("x");
  p.nodes = nodes;
  p.graph_outputs = Tensor(out);
  p.output_specs = absl::StrCat(R"({"user_output": {"arg": )", Tensor(out), "}}");
  p.tensor_values = Meta("x", 7, {"2", "3"}) + (metas.empty() ? "" : ", " + metas);
  return p;
}

TEST(ImporterTest, PythonNumbersAndDefaults) {
  // add.Tensor(x, 1): a Python int where the schema takes a Tensor; gelu's
  // `approximate` left out (its default).
  ProgramJson p = UnaryProgram(
      Node("torch.ops.aten.add.Tensor", "add", {In("self", Tensor("x")), In("other", R"({"as_int": 1})")},
           Tensor("add")) +
          ", " + Node("torch.ops.aten.gelu.default", "gelu", {In("self", Tensor("add"))}, Tensor("gelu")),
      "gelu", Meta("add", 7, {"2", "3"}) + ", " + Meta("gelu", 7, {"2", "3"}));
  EXPECT_EQ(Text(p.ToString()),
            "graph(%x : Float(2, 3)):\n"
            "  %1 : int = prim::Constant[value=1]()\n"
            "  %2 : int = prim::Constant[value=1]()\n"
            "  %add : Float(2, 3) = aten::add(%x, %1, %2)\n"
            "  %4 : str = prim::Constant[value=\"none\"]()\n"
            "  %gelu : Float(2, 3) = aten::gelu(%add, %4)\n"
            "  return (%gelu)\n");
}

TEST(ImporterTest, ParametersBecomeConstants) {
  ProgramJson p;
  p.input_specs = R"({"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}},
                     {"user_input": {"arg": {"as_tensor": {"name": "x"}}}})";
  p.graph_inputs = Tensor("p_w") + ", " + Tensor("x");
  p.nodes = Node("torch.ops.aten.mul.Tensor", "mul", {In("self", Tensor("x")), In("other", Tensor("p_w"))},
                 Tensor("mul"));
  p.graph_outputs = Tensor("mul");
  p.output_specs = R"({"user_output": {"arg": {"as_tensor": {"name": "mul"}}}})";
  p.tensor_values = Meta("x", 7, {"2", "3"}) + ", " + Meta("p_w", 7, {"3"}) + ", " + Meta("mul", 7, {"2", "3"});
  absl::StatusOr<ImportedProgram> imported = Import(p.ToString(), {{"w", 7, {3}, FloatBytes({1, 2, 3})}});
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(ir::PrintGraph(*imported->graph),
            "graph(%x : Float(2, 3)):\n"
            "  %p_w : Float(3, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value= 1  2  3 [ CPUFloatType{3} ]]()\n"
            "  %mul : Float(2, 3) = aten::mul(%x, %p_w)\n"
            "  return (%mul)\n");
  EXPECT_EQ(imported->stats.constants, 1);
  EXPECT_EQ(imported->stats.zero_copy_files + imported->stats.copied_files, 1);
  ASSERT_EQ(imported->signature.inputs.size(), 1u);
  EXPECT_EQ(imported->signature.inputs[0].name, "x");
  EXPECT_EQ(imported->signature.outputs, std::vector<std::string>{"mul"});
  // Sizes that disagree with the bytes, a pickled payload, missing entries.
  EXPECT_THAT(ErrorOf(p.ToString(), {{"w", 7, {3}, FloatBytes({1, 2})}}),
              HasSubstr("'w' does not fit entry 'model/data/weights/weight_0': Float tensor reaches byte 12 "
                        "of a storage of 8 bytes"));
  EXPECT_THAT(ErrorOf(p.ToString(), {{"w", 7, {3}, FloatBytes({1, 2, 3}), /*pickled=*/true}}),
              HasSubstr("'w' is a pickled payload"));
  EXPECT_THAT(ErrorOf(p.ToString(), {{"w", 7, {3}, FloatBytes({1, 2, 3})}}, {"data/weights/weight_0"}),
              HasSubstr("t.pt2: entry 'model/data/weights/weight_0' is missing"));
  EXPECT_THAT(ErrorOf(p.ToString(), {}), HasSubstr("'w' is in no weights or constants config"));
  EXPECT_THAT(ErrorOf(p.ToString(), {{"w", 7, {4}, FloatBytes({1, 2, 3, 4})}}),
              HasSubstr("'w' holds a Float tensor of 1 dims, but the graph's 'p_w' has other metadata"));
  EXPECT_THAT(ErrorOf(p.ToString(), {}, {"models/model.json"}),
              HasSubstr("no models/<name>.json entries"));
}

// A write into a slice of a fresh tensor (swin's attention mask): the
// in-place fill_ becomes a functional fill and the slice is scattered back
// into its base, which later reads see.
TEST(ImporterTest, InPlaceWritesThroughViewsAreFunctionalized) {
  ProgramJson p = UnaryProgram(
      Node("torch.ops.aten.new_zeros.default", "zeros",
           {In("self", Tensor("x")), In("size", R"({"as_ints": [4, 3]})")}, Tensor("zeros")) + ", " +
          Node("torch.ops.aten.slice.Tensor", "slice_1",
               {In("self", Tensor("zeros")), In("dim", R"({"as_int": 0})"), In("start", R"({"as_int": 1})"),
                In("end", R"({"as_int": 3})")},
               Tensor("slice_1")) + ", " +
          Node("torch.ops.aten.fill_.Scalar", "fill_", {In("self", Tensor("slice_1")), In("value", R"({"as_float": 5.0})")},
               Tensor("fill_")) + ", " +
          Node("torch.ops.aten.add_.Tensor", "add_", {In("self", Tensor("slice_1")), In("other", Tensor("x"))},
               Tensor("add_")) + ", " +
          Node("torch.ops.aten.mul.Tensor", "out", {In("self", Tensor("zeros")), In("other", R"({"as_int": 2})")},
               Tensor("out")),
      "out",
      Meta("zeros", 7, {"4", "3"}) + ", " + Meta("slice_1", 7, {"2", "3"}) + ", " + Meta("fill_", 7, {"2", "3"}) +
          ", " + Meta("add_", 7, {"2", "3"}) + ", " + Meta("out", 7, {"4", "3"}));
  // fill_ -> full_like (%13) scattered into zeros as cat(zeros[0:1], %13,
  // zeros[3:]) (%30); add_ reads the filled slice (%32) and scatters again
  // (%49); the later read of zeros sees both writes. (The unused constants
  // are the slice's arguments re-read for the scatter; DCE drops them.)
  EXPECT_EQ(Text(p.ToString()),
            "graph(%x : Float(2, 3)):\n"
            "  %1 : int[] = prim::Constant[value=[4, 3]]()\n"
            "  %2 : NoneType = prim::Constant()\n"
            "  %3 : NoneType = prim::Constant()\n"
            "  %4 : NoneType = prim::Constant()\n"
            "  %5 : NoneType = prim::Constant()\n"
            "  %zeros : Float(4, 3) = aten::new_zeros(%x, %1, %2, %3, %4, %5)\n"
            "  %7 : int = prim::Constant[value=0]()\n"
            "  %8 : int = prim::Constant[value=1]()\n"
            "  %9 : int = prim::Constant[value=3]()\n"
            "  %10 : int = prim::Constant[value=1]()\n"
            "  %slice_1 : Float(2, 3) = aten::slice(%zeros, %7, %8, %9, %10)\n"
            "  %12 : float = prim::Constant[value=5.]()\n"
            "  %13 : Float(2, 3) = aten::full_like(%slice_1, %12)\n"
            "  %14 : int = prim::Constant[value=0]()\n"
            "  %15 : int = prim::Constant[value=1]()\n"
            "  %16 : int = prim::Constant[value=3]()\n"
            "  %17 : int = prim::Constant[value=1]()\n"
            "  %18 : int = prim::Constant[value=0]()\n"
            "  %19 : int = prim::Constant[value=0]()\n"
            "  %20 : int = prim::Constant[value=1]()\n"
            "  %21 : int = prim::Constant[value=1]()\n"
            "  %22 : Float(1, 3) = aten::slice(%zeros, %18, %19, %20, %21)\n"
            "  %23 : int = prim::Constant[value=0]()\n"
            "  %24 : int = prim::Constant[value=3]()\n"
            "  %25 : int = prim::Constant[value=9223372036854775807]()\n"
            "  %26 : int = prim::Constant[value=1]()\n"
            "  %27 : Float(1, 3) = aten::slice(%zeros, %23, %24, %25, %26)\n"
            "  %28 : Tensor[] = prim::ListConstruct(%22, %13, %27)\n"
            "  %29 : int = prim::Constant[value=0]()\n"
            "  %30 : Float(4, 3) = aten::cat(%28, %29)\n"
            "  %31 : int = prim::Constant[value=1]()\n"
            "  %32 : Float(2, 3) = aten::add(%13, %x, %31)\n"
            "  %33 : int = prim::Constant[value=0]()\n"
            "  %34 : int = prim::Constant[value=1]()\n"
            "  %35 : int = prim::Constant[value=3]()\n"
            "  %36 : int = prim::Constant[value=1]()\n"
            "  %37 : int = prim::Constant[value=0]()\n"
            "  %38 : int = prim::Constant[value=0]()\n"
            "  %39 : int = prim::Constant[value=1]()\n"
            "  %40 : int = prim::Constant[value=1]()\n"
            "  %41 : Float(1, 3) = aten::slice(%30, %37, %38, %39, %40)\n"
            "  %42 : int = prim::Constant[value=0]()\n"
            "  %43 : int = prim::Constant[value=3]()\n"
            "  %44 : int = prim::Constant[value=9223372036854775807]()\n"
            "  %45 : int = prim::Constant[value=1]()\n"
            "  %46 : Float(1, 3) = aten::slice(%30, %42, %43, %44, %45)\n"
            "  %47 : Tensor[] = prim::ListConstruct(%41, %32, %46)\n"
            "  %48 : int = prim::Constant[value=0]()\n"
            "  %49 : Float(4, 3) = aten::cat(%47, %48)\n"
            "  %50 : int = prim::Constant[value=2]()\n"
            "  %out : Float(4, 3) = aten::mul(%49, %50)\n"
            "  return (%out)\n");
}

TEST(ImporterTest, SymbolicSizes) {
  ProgramJson p;
  p.input_specs = R"({"user_input": {"arg": {"as_tensor": {"name": "x"}}}})";
  p.graph_inputs = Tensor("x");
  p.nodes = Node("torch.ops.aten.sym_size.int", "n", {In("self", Tensor("x")), In("dim", R"({"as_int": 0})")},
                 R"({"as_sym_int": {"as_name": "n"}})") + ", " +
            Node("_operator.mul", "n2", {In("a", R"({"as_sym_int": {"as_name": "n"}})"), In("b", R"({"as_int": 3})")},
                 R"({"as_sym_int": {"as_name": "n2"}})") + ", " +
            Node("torch.ops.aten.view.default", "flat",
                 {In("self", Tensor("x")), In("size", R"({"as_sym_ints": [{"as_name": "n2"}]})")}, Tensor("flat"));
  p.graph_outputs = Tensor("flat");
  p.output_specs = R"({"user_output": {"arg": {"as_tensor": {"name": "flat"}}}})";
  p.tensor_values = Meta("x", 7, {"s0", "3"}) + ", " + Meta("flat", 7, {"3*s0"});
  p.sym_int_values = R"("n": {"as_expr": {"expr_str": "s0", "hint": {"as_int": 5}}},
                        "n2": {"as_expr": {"expr_str": "3*s0", "hint": {"as_int": 15}}})";
  p.range_constraints = R"("s0": {"min_val": 2, "max_val": 10})";
  absl::StatusOr<ImportedProgram> imported = Import(p.ToString());
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(ir::PrintGraph(*imported->graph),
            "graph(%x : Float(*, 3)):\n"
            "  %1 : int = prim::Constant[value=0]()\n"
            "  %n : int = aten::size(%x, %1)\n"
            "  %3 : int = prim::Constant[value=3]()\n"
            "  %n2 : int = aten::mul(%n, %3)\n"
            "  %5 : int[] = prim::ListConstruct(%n2)\n"
            "  %flat : Float(*) = aten::view(%x, %5)\n"
            "  return (%flat)\n");
  const Signature& sig = imported->signature;
  EXPECT_TRUE(sig.HasSymbolicSizes());
  EXPECT_EQ(sig.symbolic_values.count("flat"), 1u);
  auto input = [](std::vector<int64_t> sizes, DType dtype = DType::kFloat32) {
    return std::vector<ir::IValue>{ir::IValue::FromTensor(kiln::Tensor::Empty(dtype, sizes))};
  };
  EXPECT_TRUE(sig.CheckInputs(input({4, 3})).ok());
  EXPECT_THAT(std::string(sig.CheckInputs(input({11, 3})).message()),
              HasSubstr("input 'x' dim 0 (s0) is 11, outside the exported range [2, 10]"));
  EXPECT_THAT(std::string(sig.CheckInputs(input({4, 2})).message()),
              HasSubstr("input 'x' dim 1 is 2, the program takes 3"));
  EXPECT_THAT(std::string(sig.CheckInputs(input({4})).message()), HasSubstr("has 1 dims, the program takes 2"));
  EXPECT_THAT(std::string(sig.CheckInputs(input({4, 3}, DType::kInt64)).message()),
              HasSubstr("input 'x' is Long, the program takes Float"));
  // Specialized at x: [4, 3], the view's unknown size becomes 12.
  std::unique_ptr<ir::Graph> g = imported->graph->copy();
  g->inputs()[0]->setType(ir::Type::TensorWith(ir::TensorInfo{DType::kFloat32, {{4, 3}}, {}, {}, {}, {}}));
  ASSERT_TRUE(sig.Specialize(*g, input({4, 3})).ok());
  EXPECT_THAT(ir::PrintGraph(*g), HasSubstr("%flat : Float(12) = aten::view"));
}


}  // namespace
}  // namespace kiln::frontend::pt2

namespace kiln::frontend::pt2 {
namespace {

std::string OneNode(const std::string& node, const std::string& out_meta) {
  return UnaryProgram(node, "y", out_meta).ToString();
}

TEST(ImporterTest, NodeErrorsNameTheNode) {
  const std::string y = Meta("y", 7, {"2", "3"});
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.aten.frobnicate.default", "f", {In("self", Tensor("x"))}, Tensor("y")), y)),
              HasSubstr("t.pt2: model/models/model.json: node 'f' (torch.ops.aten.frobnicate.default): unknown "
                        "operator aten::frobnicate (not among kiln's builtin schemas)"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.mylib.op.default", "f", {In("self", Tensor("x"))}, Tensor("y")), y)),
              HasSubstr("node 'f' (torch.ops.mylib.op.default): unknown operator mylib::op"));
  EXPECT_THAT(ErrorOf(OneNode(Node("builtins.getattr", "f", {In("self", Tensor("x"))}, Tensor("y")), y)),
              HasSubstr("node 'f' (builtins.getattr): unsupported operator"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.aten.relu.default", "f", {In("input", Tensor("x"))}, Tensor("y")), y)),
              HasSubstr("node 'f' (torch.ops.aten.relu.default): argument 'input' is not in the schema"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.aten.transpose.int", "f", {In("self", Tensor("x"))}, Tensor("y")), y)),
              HasSubstr("node 'f' (torch.ops.aten.transpose.int): missing argument 'dim0'"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.aten.relu.default", "f", {In("self", Tensor("nope"))}, Tensor("y")), y)),
              HasSubstr("node 'f' (torch.ops.aten.relu.default): uses 'nope', which nothing before it defines"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.aten.relu.default", "f", {In("self", Tensor("x"))}, Tensor("x")), y)),
              HasSubstr("defines 'x' a second time"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.aten.relu.default", "f", {In("self", R"({"as_ints": [1]})")}, Tensor("y")), y)),
              HasSubstr("node 'f' (torch.ops.aten.relu.default): graph_module.graph.nodes[0].inputs[0].arg: a list "
                        "where the schema takes Tensor"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.higher_order.map_impl", "f", {}, Tensor("y")), y)),
              HasSubstr("node 'f' (torch.ops.higher_order.map_impl): the higher-order op 'map_impl' is not supported"));
  EXPECT_THAT(ErrorOf(OneNode(Node("torch.ops.higher_order.while_loop", "f", {}, Tensor("y")), y)),
              HasSubstr("node 'f' (torch.ops.higher_order.while_loop): expected while_loop(cond_fn, body_fn"));
  // A write through a broadcast view has no functional form.
  EXPECT_THAT(ErrorOf(UnaryProgram(
                  Node("torch.ops.aten.expand.default", "e", {In("self", Tensor("x")), In("size", R"({"as_ints": [4, 2, 3]})")},
                       Tensor("e")) + ", " +
                      Node("torch.ops.aten.relu_.default", "y", {In("self", Tensor("e"))}, Tensor("y")),
                  "y", Meta("e", 7, {"4", "2", "3"}) + ", " + Meta("y", 7, {"4", "2", "3"}))
                          .ToString()),
              HasSubstr("node 'y' (torch.ops.aten.relu_.default): writes 'e' in place: cannot write through a view "
                        "made by aten::expand (node 'e')"));
}

TEST(ImporterTest, ExportOnlyOpsMapOntoKilnOps) {
  const std::string meta = Meta("y", 7, {"2", "3"});
  // native_layer_norm whose statistics nothing reads: layer_norm.
  std::string text = Text(UnaryProgram(
      Node("torch.ops.aten.native_layer_norm.default", "ln",
           {In("input", Tensor("x")), In("normalized_shape", R"({"as_ints": [3]})"), In("weight", R"({"as_none": true})"),
            In("bias", R"({"as_none": true})"), In("eps", R"({"as_float": 1e-05})")},
           Tensor("y") + ", " + Tensor("mean") + ", " + Tensor("rstd")),
      "y", meta).ToString());
  EXPECT_THAT(text, HasSubstr("%y : Float(2, 3) = aten::layer_norm(%x, %1, %2, %3, %4, %5)"));
  // native_batch_norm in inference whose statistics nothing reads:
  // batch_norm; max_pool2d_with_indices whose indices nothing reads:
  // max_pool2d (what torch 1.13's make_fx writes for torchvision's CNNs).
  const std::string w = In("weight", R"({"as_none": true})");
  text = Text(UnaryProgram(
      Node("torch.ops.aten.native_batch_norm.default", "bn",
           {In("input", Tensor("x")), w, In("bias", R"({"as_none": true})"), In("running_mean", Tensor("x")),
            In("running_var", Tensor("x")), In("training", R"({"as_bool": false})"),
            In("momentum", R"({"as_float": 0.1})"), In("eps", R"({"as_float": 1e-05})")},
           Tensor("y") + ", " + Tensor("mean") + ", " + Tensor("rstd")),
      "y", meta).ToString());
  EXPECT_THAT(text, HasSubstr("= aten::batch_norm(%x, %"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("native_batch_norm")));
  text = Text(UnaryProgram(
      Node("torch.ops.aten.max_pool2d_with_indices.default", "mp",
           {In("self", Tensor("x")), In("kernel_size", R"({"as_ints": [1, 2]})")},
           Tensor("y") + ", " + Tensor("indices")),
      "y", Meta("y", 7, {"2", "2"})).ToString());
  EXPECT_THAT(text, HasSubstr("%y : Float(2, 2) = aten::max_pool2d(%x, %"));
  // ... and when the indices are read, the op itself.
  ProgramJson with_indices = UnaryProgram(
      Node("torch.ops.aten.max_pool2d_with_indices.default", "mp",
           {In("self", Tensor("x")), In("kernel_size", R"({"as_ints": [1, 2]})")},
           Tensor("y") + ", " + Tensor("indices")),
      "indices", Meta("y", 7, {"2", "2"}) + ", " + Meta("indices", 5, {"2", "2"}));
  text = Text(with_indices.ToString());
  EXPECT_THAT(text, HasSubstr("aten::max_pool2d_with_indices(%x, %"));
  // _to_copy to float64 is aten::to; _softmax is softmax.
  text = Text(UnaryProgram(Node("torch.ops.aten._to_copy.default", "y", {In("self", Tensor("x")), In("dtype", R"({"as_scalar_type": 8})")},
                                Tensor("y")),
                           "y", Meta("y", 8, {"2", "3"})).ToString());
  EXPECT_THAT(text, HasSubstr("%7 : int = prim::Constant[value=7]()\n  %y : Double(2, 3) = aten::to(%x, %7)"));
  text = Text(UnaryProgram(Node("torch.ops.aten._softmax.default", "y",
                                {In("self", Tensor("x")), In("dim", R"({"as_int": -1})"), In("half_to_float", R"({"as_bool": false})")},
                                Tensor("y")),
                           "y", meta).ToString());
  EXPECT_THAT(text, HasSubstr("%y : Float(2, 3) = aten::softmax(%x, %1, %3)"));
  // split into slices, read directly (no list unpacking).
  text = Text(UnaryProgram(Node("torch.ops.aten.split.Tensor", "split",
                                {In("self", Tensor("x")), In("split_size", R"({"as_int": 2})"), In("dim", R"({"as_int": 1})")},
                                R"({"as_tensors": [{"name": "a"}, {"name": "b"}]})") + ", " +
                               Node("torch.ops.aten.mul.Tensor", "y", {In("self", Tensor("b")), In("other", Tensor("b"))}, Tensor("y")),
                           "y", Meta("a", 7, {"2", "2"}) + ", " + Meta("b", 7, {"2", "1"}) + ", " + Meta("y", 7, {"2", "1"}))
                  .ToString());
  EXPECT_THAT(text, HasSubstr("%b : Float(2, 1) = aten::slice(%x, %8, %9, %10, %11)"));
  EXPECT_THAT(text, HasSubstr("%y : Float(2, 1) = aten::mul(%b, %b)"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("ListUnpack")));
  // as_strided over a contiguous input in its own row-major order: a reshape.
  text = Text(UnaryProgram(Node("torch.ops.aten.as_strided.default", "y",
                                {In("self", Tensor("x")), In("size", R"({"as_ints": [3, 2]})"),
                                 In("stride", R"({"as_ints": [2, 1]})")},
                                Tensor("y")),
                           "y", Meta("y", 7, {"3", "2"})).ToString());
  EXPECT_THAT(text, HasSubstr("%y : Float(3, 2) = aten::reshape(%x, %"));
  // ... and a transposing one: a gather.
  text = Text(UnaryProgram(Node("torch.ops.aten.as_strided.default", "y",
                                {In("self", Tensor("x")), In("size", R"({"as_ints": [3, 2]})"),
                                 In("stride", R"({"as_ints": [1, 3]})")},
                                Tensor("y")),
                           "y", Meta("y", 7, {"3", "2"})).ToString());
  EXPECT_THAT(text, HasSubstr("aten::index_select"));
  // scaled_dot_product_attention: softmax(q k^T * scale) v.
  text = Text(UnaryProgram(Node("torch.ops.aten.scaled_dot_product_attention.default", "y",
                                {In("query", Tensor("x")), In("key", Tensor("x")), In("value", Tensor("x"))}, Tensor("y")),
                           "y", meta).ToString());
  EXPECT_EQ(text,
            "graph(%x : Float(2, 3)):\n"
            "  %1 : NoneType = prim::Constant()\n"
            "  %2 : float = prim::Constant[value=0.]()\n"
            "  %3 : bool = prim::Constant[value=0]()\n"
            "  %4 : NoneType = prim::Constant()\n"
            "  %5 : bool = prim::Constant[value=0]()\n"
            "  %6 : int = prim::Constant[value=-2]()\n"
            "  %7 : int = prim::Constant[value=-1]()\n"
            "  %8 : Float(3, 2) = aten::transpose(%x, %6, %7)\n"
            "  %9 : Float(2, 2) = aten::mm(%x, %8)\n"
            "  %10 : float = prim::Constant[value=0.57735026918962584]()\n"  // 1/sqrt(3)
            "  %11 : Float(2, 2) = aten::mul(%9, %10)\n"
            "  %12 : int = prim::Constant[value=-1]()\n"
            "  %13 : NoneType = prim::Constant()\n"
            "  %14 : Float(2, 2) = aten::softmax(%11, %12, %13)\n"
            "  %y : Float(2, 3) = aten::mm(%14, %x)\n"
            "  return (%y)\n");
  // Runtime assertions are dropped.
  text = Text(UnaryProgram(Node("torch.ops.aten._assert_tensor_metadata.default", "a",
                                {In("a", Tensor("x")), In("dtype", R"({"as_scalar_type": 7})")}, "") + ", " +
                               Node("torch.ops.aten.relu.default", "y", {In("self", Tensor("x"))}, Tensor("y")),
                           "y", meta).ToString());
  EXPECT_THAT(text, ::testing::Not(HasSubstr("assert")));
}

// Higher-order ops: a grad-mode wrapper is inlined; cond becomes prim::If.
TEST(ImporterTest, HigherOrderOps) {
  const std::string sub = absl::StrCat(
      R"({"inputs": [{"as_tensor": {"name": "a"}}], "outputs": [{"as_tensor": {"name": "r"}}], "nodes": [)",
      Node("torch.ops.aten.relu.default", "r", {In("self", Tensor("a"))}, Tensor("r")),
      R"(], "tensor_values": {)", Meta("a", 7, {"2", "3"}), ", ", Meta("r", 7, {"2", "3"}),
      R"(}, "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false})");
  const std::string neg_sub = absl::StrReplaceAll(sub, {{"aten.relu.default", "aten.neg.default"}});
  std::string text = Text(UnaryProgram(
      absl::StrCat(R"({"target": "torch.ops.higher_order.wrap_with_set_grad_enabled", "name": "w", "inputs": [)",
                   In("", R"({"as_bool": false})"), ", ", In("", absl::StrCat(R"({"as_graph": {"name": "g", "graph": )", sub, "}}")),
                   ", ", In("", Tensor("x")), R"(], "outputs": [)", Tensor("y"), R"(], "metadata": {}})"),
      "y", Meta("y", 7, {"2", "3"})).ToString());
  EXPECT_THAT(text, HasSubstr("%r : Float(2, 3) = aten::relu(%x)\n  return (%r)"));
  ProgramJson p = UnaryProgram(
      Node("torch.ops.aten.gt.Scalar", "p", {In("self", Tensor("x")), In("other", R"({"as_int": 0})")}, Tensor("p")) + ", " +
          Node("torch.ops.aten.any.default", "q", {In("self", Tensor("p"))}, Tensor("q")) + ", " +
          absl::StrCat(R"({"target": "torch.ops.higher_order.cond", "name": "c", "inputs": [)",
                       In("pred", Tensor("q")), ", ",
                       In("true_fn", absl::StrCat(R"({"as_graph": {"name": "t", "graph": )", sub, "}}")), ", ",
                       In("false_fn", absl::StrCat(R"({"as_graph": {"name": "f", "graph": )", neg_sub, "}}")), ", ",
                       In("operands", R"({"as_tensors": [{"name": "x"}]})"), R"(], "outputs": [)", Tensor("y"),
                       R"(], "metadata": {}})"),
      "y", Meta("p", 12, {"2", "3"}) + ", " + Meta("q", 12, {}) + ", " + Meta("y", 7, {"2", "3"}));
  text = Text(p.ToString());
  EXPECT_THAT(text, HasSubstr(" = aten::Bool(%q)"));
  EXPECT_THAT(text, HasSubstr("%y : Float(2, 3) = prim::If("));
  EXPECT_THAT(text, HasSubstr("aten::relu(%x)"));
  EXPECT_THAT(text, HasSubstr("aten::neg(%x)"));
}

}  // namespace
}  // namespace kiln::frontend::pt2

namespace kiln::frontend::pt2 {
namespace {

// The fuzz target's seeds import (so that mutations start from programs
// that reach every stage).
TEST(ImporterTest, FuzzSeedsImport) {
  const std::string dir = "frontend/pt2/testdata/fuzz/";
  for (const char* seed : {"json_add_param", "json_inplace_slice", "json_dynamic", "json_cond",
                           "json_sdpa_split", "json_while_loop", "zip_add_param"}) {
    std::ifstream in(dir + seed, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string bytes = buf.str();
    ASSERT_FALSE(bytes.empty()) << seed;
    std::string rest = bytes.substr(1);
    if (bytes[0] & 1) rest = MakePt2(rest, {{"w", 7, {3}, FloatBytes({1, 2, 3})}});
    absl::StatusOr<std::unique_ptr<Archive>> a = Archive::FromBytes(rest, seed);
    ASSERT_TRUE(a.ok()) << seed << ": " << a.status();
    absl::StatusOr<ImportedProgram> p = ImportPt2Archive(**a);
    ASSERT_TRUE(p.ok()) << seed << ": " << p.status();
    EXPECT_TRUE(ir::Verify(*p->graph).ok()) << seed;
  }
}

}  // namespace
}  // namespace kiln::frontend::pt2

namespace kiln::frontend::pt2 {
namespace {

// matmul and linear of the training IR become the products run_decompositions
// writes: batch dims broadcast and flattened into one bmm; rows into addmm.
TEST(ImporterTest, MatmulAndLinearBecomeBlasProducts) {
  ProgramJson p;
  p.input_specs = R"({"user_input": {"arg": {"as_tensor": {"name": "a"}}}},
                     {"user_input": {"arg": {"as_tensor": {"name": "b"}}}})";
  p.graph_inputs = Tensor("a") + ", " + Tensor("b");
  p.nodes = Node("torch.ops.aten.matmul.default", "y", {In("self", Tensor("a")), In("other", Tensor("b"))}, Tensor("y"));
  p.graph_outputs = Tensor("y");
  p.output_specs = R"({"user_output": {"arg": {"as_tensor": {"name": "y"}}}})";
  p.tensor_values = Meta("a", 7, {"2", "1", "3", "4"}) + ", " + Meta("b", 7, {"5", "4", "2"}) + ", " +
                    Meta("y", 7, {"2", "5", "3", "2"});
  EXPECT_EQ(Text(p.ToString()),
            "graph(%a : Float(2, 1, 3, 4),\n"
            "      %b : Float(5, 4, 2)):\n"
            "  %2 : int[] = prim::Constant[value=[2, 5, 3, 4]]()\n"
            "  %3 : bool = prim::Constant[value=0]()\n"
            "  %4 : Float(2, 5, 3, 4) = aten::expand(%a, %2, %3)\n"
            "  %5 : int[] = prim::Constant[value=[10, 3, 4]]()\n"
            "  %6 : Float(10, 3, 4) = aten::reshape(%4, %5)\n"
            "  %7 : int[] = prim::Constant[value=[2, 5, 4, 2]]()\n"
            "  %8 : bool = prim::Constant[value=0]()\n"
            "  %9 : Float(2, 5, 4, 2) = aten::expand(%b, %7, %8)\n"
            "  %10 : int[] = prim::Constant[value=[10, 4, 2]]()\n"
            "  %11 : Float(10, 4, 2) = aten::reshape(%9, %10)\n"
            "  %12 : Float(10, 3, 2) = aten::bmm(%6, %11)\n"
            "  %13 : int[] = prim::Constant[value=[2, 5, 3, 2]]()\n"
            "  %y : Float(2, 5, 3, 2) = aten::reshape(%12, %13)\n"
            "  return (%y)\n");
  p.input_specs = R"({"parameter": {"arg": {"name": "p_w"}, "parameter_name": "w"}},
                     {"user_input": {"arg": {"as_tensor": {"name": "a"}}}})";
  p.graph_inputs = Tensor("p_w") + ", " + Tensor("a");
  p.nodes = Node("torch.ops.aten.linear.default", "y", {In("input", Tensor("a")), In("weight", Tensor("p_w"))},
                 Tensor("y"));
  p.tensor_values = Meta("a", 7, {"2", "3", "4"}) + ", " + Meta("p_w", 7, {"5", "4"}) + ", " +
                    Meta("y", 7, {"2", "3", "5"});
  const std::string text =
      Text(p.ToString(), {{"w", 7, {5, 4}, FloatBytes(std::vector<float>(20, 0.5f))}});
  EXPECT_EQ(text,
            "graph(%a : Float(2, 3, 4)):\n"
            "  %p_w : Float(5, 4, strides=[4, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()\n"
            "  %2 : NoneType = prim::Constant()\n"
            "  %3 : int[] = prim::Constant[value=[6, 4]]()\n"
            "  %4 : Float(6, 4) = aten::reshape(%a, %3)\n"
            "  %5 : Float(4, 5) = aten::t(%p_w)\n"
            "  %6 : Float(6, 5) = aten::mm(%4, %5)\n"
            "  %7 : int[] = prim::Constant[value=[2, 3, 5]]()\n"
            "  %y : Float(2, 3, 5) = aten::reshape(%6, %7)\n"
            "  return (%y)\n");
}

}  // namespace
}  // namespace kiln::frontend::pt2

namespace kiln::frontend::pt2 {
namespace {

// With a symbolic batch, matmul still becomes one bmm: its reshapes take
// aten::size values (constants once the program is specialized).
TEST(ImporterTest, SymbolicMatmulBecomesABmm) {
  ProgramJson p;
  p.input_specs = R"({"user_input": {"arg": {"as_tensor": {"name": "a"}}}},
                     {"user_input": {"arg": {"as_tensor": {"name": "b"}}}})";
  p.graph_inputs = Tensor("a") + ", " + Tensor("b");
  p.nodes = Node("torch.ops.aten.matmul.default", "y", {In("self", Tensor("a")), In("other", Tensor("b"))}, Tensor("y"));
  p.graph_outputs = Tensor("y");
  p.output_specs = R"({"user_output": {"arg": {"as_tensor": {"name": "y"}}}})";
  p.tensor_values = Meta("a", 7, {"s0", "2", "3", "4"}) + ", " + Meta("b", 7, {"s0", "2", "4", "5"}) + ", " +
                    Meta("y", 7, {"s0", "2", "3", "5"});
  EXPECT_EQ(Text(p.ToString()),
            "graph(%a : Float(*, 2, 3, 4),\n"
            "      %b : Float(*, 2, 4, 5)):\n"
            "  %2 : int = prim::Constant[value=3]()\n"
            "  %3 : int = prim::Constant[value=4]()\n"
            "  %4 : int = prim::Constant[value=5]()\n"
            "  %5 : int = prim::Constant[value=-1]()\n"
            "  %6 : int[] = prim::ListConstruct(%5, %2, %3)\n"
            "  %7 : int = prim::Constant[value=-1]()\n"
            "  %8 : int[] = prim::ListConstruct(%7, %3, %4)\n"
            "  %9 : Tensor = aten::reshape(%a, %6)\n"
            "  %10 : Tensor = aten::reshape(%b, %8)\n"
            "  %11 : Tensor = aten::bmm(%9, %10)\n"
            "  %12 : int = prim::Constant[value=0]()\n"
            "  %13 : int = aten::size(%a, %12)\n"
            "  %14 : int = prim::Constant[value=2]()\n"
            "  %15 : int[] = prim::ListConstruct(%13, %14, %2, %4)\n"
            "  %y : Float(*, 2, 3, 5) = aten::reshape(%11, %15)\n"
            "  return (%y)\n");
}

}  // namespace
}  // namespace kiln::frontend::pt2
