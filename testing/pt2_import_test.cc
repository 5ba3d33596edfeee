// torch.export programs across layers: imported (frontend/pt2), run by the
// interpreter and compiled, at the traced shapes and at others.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "driver/specializing_program.h"
#include "frontend/pt2/importer.h"
#include "frontend/pt2/test_archive.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/op_registry.h"
#include "runtime/interpreter.h"
#include "support/status.h"

namespace kiln::testing {
namespace {

using ::testing::HasSubstr;
using ir::IValue;
namespace pt2 = frontend::pt2;

void RegisterBackends() {
  if (const char* tmp = std::getenv("TEST_TMPDIR")) {
    setenv("KILN_CACHE_DIR", (std::string(tmp) + "/kiln_cache").c_str(), 1);
  }
  ASSERT_TRUE(driver::Initialize().ok());
  ASSERT_TRUE(backends::cpu::RegisterCpuBackend().ok());
}

absl::StatusOr<pt2::ImportedProgram> ImportJson(const std::string& json) {
  ASSIGN_OR_RETURN(std::unique_ptr<pt2::Archive> a, pt2::Archive::FromBytes(pt2::testing::MakePt2(json), "t.pt2"));
  return pt2::ImportPt2Archive(*a);
}

std::vector<IValue> Interpret(const ir::Graph& g, const std::vector<IValue>& in) {
  absl::StatusOr<std::vector<IValue>> out = runtime::RunGraph(g, in);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<IValue>{};
}

Tensor Floats(std::vector<int64_t> sizes, const std::vector<float>& values) {
  return *Tensor::FromBytes(DType::kFloat32, std::move(sizes), values.data(), values.size() * sizeof(float));
}

std::string T(const std::string& n) { return absl::StrCat(R"({"as_tensor": {"name": ")", n, R"("}})"); }
std::string In(const std::string& a, const std::string& v) {
  return absl::StrCat(R"({"name": ")", a, R"(", "arg": )", v, R"(, "kind": 1})");
}
std::string Node(const std::string& target, const std::string& name, const std::vector<std::string>& inputs,
                 const std::string& out) {
  return absl::StrCat(R"({"target": ")", target, R"(", "name": ")", name, R"(", "inputs": [)",
                      absl::StrJoin(inputs, ", "), R"(], "outputs": [)", T(out), R"(], "metadata": {}})");
}

pt2::testing::ProgramJson Program(const std::vector<std::string>& inputs, const std::string& nodes,
                                  const std::string& out, const std::string& metas) {
  pt2::testing::ProgramJson p;
  std::vector<std::string> specs, args;
  for (const std::string& i : inputs) {
    specs.push_back(absl::StrCat(R"({"user_input": {"arg": )", T(i), "}}"));
    args.push_back(T(i));
  }
  p.input_specs = absl::StrJoin(specs, ", ");
  p.graph_inputs = absl::StrJoin(args, ", ");
  p.nodes = nodes;
  p.graph_outputs = T(out);
  p.output_specs = absl::StrCat(R"({"user_output": {"arg": )", T(out), "}}");
  p.tensor_values = metas;
  return p;
}

// fill_ and add_ through a slice of a fresh tensor, then a read of the base.
TEST(Pt2ImportTest, FunctionalizedWritesThroughViewsComputeEagerValues) {
  RegisterBackends();
  using pt2::testing::Meta;
  const std::string nodes =
      Node("torch.ops.aten.new_zeros.default", "z", {In("self", T("x")), In("size", R"({"as_ints": [4, 3]})")}, "z") +
      ", " +
      Node("torch.ops.aten.slice.Tensor", "s",
           {In("self", T("z")), In("dim", R"({"as_int": 0})"), In("start", R"({"as_int": 1})"),
            In("end", R"({"as_int": 3})")},
           "s") +
      ", " + Node("torch.ops.aten.fill_.Scalar", "f", {In("self", T("s")), In("value", R"({"as_float": 5.0})")}, "f") +
      ", " + Node("torch.ops.aten.add_.Tensor", "a", {In("self", T("s")), In("other", T("x"))}, "a") + ", " +
      Node("torch.ops.aten.mul.Tensor", "y", {In("self", T("z")), In("other", R"({"as_int": 2})")}, "y");
  const std::string metas = absl::StrJoin(
      {Meta("x", 7, {"2", "3"}), Meta("z", 7, {"4", "3"}), Meta("s", 7, {"2", "3"}), Meta("f", 7, {"2", "3"}),
       Meta("a", 7, {"2", "3"}), Meta("y", 7, {"4", "3"})},
      ", ");
  absl::StatusOr<pt2::ImportedProgram> p = ImportJson(Program({"x"}, nodes, "y", metas).ToString());
  ASSERT_TRUE(p.ok()) << p.status();
  const Tensor x = Floats({2, 3}, {1, 2, 3, 4, 5, 6});
  std::vector<IValue> out = Interpret(*p->graph, {IValue::FromTensor(x)});
  ASSERT_EQ(out.size(), 1u);
  const std::vector<float> want = {0, 0, 0, 12, 14, 16, 18, 20, 22, 0, 0, 0};
  const Tensor& y = out[0].toTensor();
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{4, 3}));
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(y.GetDouble(i), want[i]) << i;
}

// scaled_dot_product_attention's decomposition against the definition,
// computed here with loops: causal, with a boolean mask, grouped heads.
TEST(Pt2ImportTest, ScaledDotProductAttentionMatchesItsDefinition) {
  RegisterBackends();
  using pt2::testing::Meta;
  // q: [1, 4, 3, 2] (4 heads), k/v: [1, 2, 5, 2] (2 heads, enable_gqa), mask [3, 5].
  const int64_t hq = 4, hk = 2, l = 3, s = 5, e = 2;
  const std::string nodes = Node("torch.ops.aten.scaled_dot_product_attention.default", "y",
                                 {In("query", T("q")), In("key", T("k")), In("value", T("v")),
                                  In("attn_mask", T("m")), In("scale", R"({"as_float": 0.7})"),
                                  In("enable_gqa", R"({"as_bool": true})")},
                                 "y");
  const std::string metas = absl::StrJoin(
      {Meta("q", 7, {"1", "4", "3", "2"}), Meta("k", 7, {"1", "2", "5", "2"}), Meta("v", 7, {"1", "2", "5", "2"}),
       Meta("m", 12, {"3", "5"}), Meta("y", 7, {"1", "4", "3", "2"})},
      ", ");
  absl::StatusOr<pt2::ImportedProgram> p = ImportJson(Program({"q", "k", "v", "m"}, nodes, "y", metas).ToString());
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<float> qv(hq * l * e), kv(hk * s * e), vv(hk * s * e);
  for (size_t i = 0; i < qv.size(); ++i) qv[i] = std::sin(0.3 * i);
  for (size_t i = 0; i < kv.size(); ++i) kv[i] = std::cos(0.2 * i);
  for (size_t i = 0; i < vv.size(); ++i) vv[i] = 0.1f * i - 1;
  Tensor mask = Tensor::Empty(DType::kBool, {l, s});
  for (int64_t i = 0; i < l * s; ++i) mask.data<bool>()[i] = (i % 4) != 1;
  std::vector<IValue> out =
      Interpret(*p->graph, {IValue::FromTensor(Floats({1, hq, l, e}, qv)), IValue::FromTensor(Floats({1, hk, s, e}, kv)),
                      IValue::FromTensor(Floats({1, hk, s, e}, vv)), IValue::FromTensor(mask)});
  ASSERT_EQ(out.size(), 1u);
  const Tensor& y = out[0].toTensor();
  for (int64_t h = 0; h < hq; ++h) {
    const int64_t g = h / (hq / hk);
    for (int64_t i = 0; i < l; ++i) {
      std::vector<double> w(s);
      double top = -1e300, sum = 0;
      for (int64_t j = 0; j < s; ++j) {
        double d = 0;
        for (int64_t c = 0; c < e; ++c) d += qv[(h * l + i) * e + c] * kv[(g * s + j) * e + c];
        w[j] = mask.data<bool>()[i * s + j] ? d * 0.7 : -INFINITY;
        top = std::max(top, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - top));
      for (int64_t c = 0; c < e; ++c) {
        double want = 0;
        for (int64_t j = 0; j < s; ++j) want += w[j] / sum * vv[(g * s + j) * e + c];
        EXPECT_NEAR(y.GetDouble((h * l + i) * e + c), want, 1e-5) << h << " " << i << " " << c;
      }
    }
  }
}

// gpt2 exported with dynamic batch and sequence sizes: compiled (no
// interpreter island) at shapes other than the traced ones, each matching
// the interpreter; shapes outside the exported ranges are refused.
TEST(Pt2ImportTest, DynamicProgramSpecializesAtEachCallsShapes) {
  RegisterBackends();
  absl::StatusOr<pt2::ImportedProgram> p = pt2::LoadPt2File("testdata/pt2_models/gpt2_dynamic/model.pt2");
  ASSERT_TRUE(p.ok()) << p.status();
  const pt2::Signature& sig = p->signature;
  ASSERT_TRUE(sig.HasSymbolicSizes());
  ASSERT_EQ(*sig.ExampleShapes(), (std::vector<std::vector<int64_t>>{{2, 32}}));
  ASSERT_TRUE(driver::RunPipeline(*p->graph, "-O2").ok());
  auto ids = [](int64_t b, int64_t t) {
    Tensor x = Tensor::Empty(DType::kInt64, {b, t});
    for (int64_t i = 0; i < b * t; ++i) x.data<int64_t>()[i] = (i * 37) % 500;
    return std::vector<IValue>{IValue::FromTensor(x)};
  };
  const driver::GraphRefiner refine = [&sig](ir::Graph& g, const std::vector<IValue>& in) {
    return sig.Specialize(g, in);
  };
  driver::CompiledGraph stats;
  const std::vector<IValue> first = ids(1, 7);
  auto program = driver::SpecializingProgram::Create(*p->graph, {}, 4, &stats, refine, &first);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(stats.num_islands, 0);
  for (auto [b, t] : {std::pair<int64_t, int64_t>{1, 7}, {3, 16}, {1, 7}}) {
    const std::vector<IValue> in = ids(b, t);
    ASSERT_TRUE(sig.CheckInputs(in).ok());
    absl::StatusOr<std::vector<IValue>> got = (*program)->RunValues(in);
    ASSERT_TRUE(got.ok()) << got.status();
    const std::vector<IValue> want = Interpret(*p->graph, in);
    ASSERT_EQ(got->size(), 1u);
    const Tensor& g = (*got)[0].toTensor();
    const Tensor& w = want[0].toTensor();
    ASSERT_EQ(g.sizes(), (std::vector<int64_t>{b, t, 64}));
    ASSERT_EQ(w.sizes(), g.sizes());
    for (int64_t i = 0; i < g.numel(); ++i) ASSERT_NEAR(g.GetDouble(i), w.GetDouble(i), 1e-4) << i;
  }
  EXPECT_EQ((*program)->num_compiles(), 2);
  EXPECT_THAT(std::string(sig.CheckInputs(ids(2, 65)).message()), HasSubstr("outside the exported range"));
}

// Weights are used where they lie in the mapped archive.
TEST(Pt2ImportTest, WeightsAreReadWithoutCopies) {
  absl::StatusOr<pt2::ImportedProgram> p = pt2::LoadPt2File("testdata/pt2_models/gpt2/model.pt2");
  ASSERT_TRUE(p.ok()) << p.status();
  // data/weights/weight_0 .. weight_27 and a 4-byte constant; one empty
  // constant file is copied (zero bytes).
  EXPECT_EQ(p->stats.zero_copy_files, 29);
  EXPECT_EQ(p->stats.copied_files, 1);
  EXPECT_EQ(p->stats.weight_bytes, 547844u);
}

}  // namespace
}  // namespace kiln::testing

namespace kiln::testing {
namespace {

// while_loop(cond_fn, body_fn, (i, acc), (x,)): while i < 3: i += 1; acc = acc * 2 + x.
TEST(Pt2ImportTest, WhileLoopBecomesAKilnLoop) {
  RegisterBackends();
  using pt2::testing::Meta;
  auto graph = [](const std::string& nodes, const std::vector<std::string>& outs, const std::string& metas) {
    std::vector<std::string> o;
    for (const std::string& n : outs) o.push_back(T(n));
    return absl::StrCat(R"({"inputs": [)", T("i"), ", ", T("acc"), ", ", T("xx"), R"(], "outputs": [)",
                        absl::StrJoin(o, ", "), R"(], "nodes": [)", nodes, R"(], "tensor_values": {)", metas,
                        R"(}, "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": false})");
  };
  const std::string loop_metas = absl::StrJoin({Meta("i", 5, {}), Meta("acc", 7, {"2"}), Meta("xx", 7, {"2"})}, ", ");
  const std::string cond_fn = graph(
      Node("torch.ops.aten.lt.Scalar", "c", {In("self", T("i")), In("other", R"({"as_int": 3})")}, "c"), {"c"},
      loop_metas + ", " + Meta("c", 12, {}));
  const std::string body_fn = graph(
      Node("torch.ops.aten.add.Tensor", "i2", {In("self", T("i")), In("other", R"({"as_int": 1})")}, "i2") + ", " +
          Node("torch.ops.aten.mul.Tensor", "m", {In("self", T("acc")), In("other", R"({"as_int": 2})")}, "m") + ", " +
          Node("torch.ops.aten.add.Tensor", "a2", {In("self", T("m")), In("other", T("xx"))}, "a2"),
      {"i2", "a2"}, loop_metas + ", " + Meta("i2", 5, {}) + ", " + Meta("m", 7, {"2"}) + ", " + Meta("a2", 7, {"2"}));
  const std::string nodes =
      Node("torch.ops.aten.zeros_like.default", "acc0", {In("self", T("x"))}, "acc0") + ", " +
      absl::StrCat(R"({"target": "torch.ops.higher_order.while_loop", "name": "w", "inputs": [)",
                   In("", absl::StrCat(R"({"as_graph": {"name": "cond", "graph": )", cond_fn, "}}")), ", ",
                   In("", absl::StrCat(R"({"as_graph": {"name": "body", "graph": )", body_fn, "}}")), ", ",
                   In("", R"({"as_tensors": [{"name": "i0"}, {"name": "acc0"}]})"), ", ",
                   In("", R"({"as_tensors": [{"name": "x"}]})"), R"(], "outputs": [)", T("n"), ", ", T("y"),
                   R"(], "metadata": {}})");
  const std::string metas = absl::StrJoin(
      {Meta("i0", 5, {}), Meta("x", 7, {"2"}), Meta("acc0", 7, {"2"}), Meta("n", 5, {}), Meta("y", 7, {"2"})}, ", ");
  absl::StatusOr<pt2::ImportedProgram> p = ImportJson(Program({"i0", "x"}, nodes, "y", metas).ToString());
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<IValue> out = Interpret(*p->graph, {IValue::FromTensor(Tensor::ScalarInt(0)),
                                                  IValue::FromTensor(Floats({2}, {1, -2}))});
  ASSERT_EQ(out.size(), 1u);
  // acc: 0 -> x -> 3x -> 7x.
  EXPECT_EQ(out[0].toTensor().GetDouble(0), 7);
  EXPECT_EQ(out[0].toTensor().GetDouble(1), -14);
}

}  // namespace
}  // namespace kiln::testing
