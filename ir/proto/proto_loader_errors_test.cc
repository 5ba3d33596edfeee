// The loader on hostile input: every malformed graph is rejected with an
// error that says where and what was expected; nothing crashes.
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/proto/proto_convert.h"
#include "ir/proto/sample_graphs.h"

namespace kiln::ir {
namespace {

constexpr char kTypes[] = R"pb(
  format_version: 1
  types { kind: TYPE_TENSOR }
  types { kind: TYPE_INT }
  types { kind: TYPE_BOOL }
)pb";

// Loads `types` + `block { ... }` and returns the error ("" when it loads).
std::string LoadError(const std::string& block, const std::string& types = kTypes) {
  auto g = GraphFromTextProto(absl::StrCat(types, " block { ", block, " }"));
  return g.ok() ? "" : std::string(g.status().message());
}

MATCHER_P(HasError, substring, "") {
  if (arg.find(substring) != std::string::npos) return true;
  *result_listener << "error is \"" << arg << "\"";
  return false;
}

constexpr char kValid[] = R"pb(
  inputs { id: 0 name: "x" type: 0 }
  nodes { kind: "aten::relu" input_ids: 0 outputs { id: 1 type: 0 } }
  output_ids: 1
)pb";

TEST(ProtoLoaderErrorsTest, ValidBaseLoads) { EXPECT_EQ(LoadError(kValid), ""); }

TEST(ProtoLoaderErrorsTest, FormatVersion) {
  auto newer = GraphFromTextProto("format_version: 2");
  ASSERT_FALSE(newer.ok());
  EXPECT_THAT(std::string(newer.status().message()), HasError("newer kiln"));
  auto missing = GraphFromTextProto("");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasError("format_version 0"));
}

TEST(ProtoLoaderErrorsTest, UndefinedInput) {
  EXPECT_THAT(LoadError(R"pb(nodes { kind: "aten::relu" input_ids: 5 })pb"),
              HasError("node 0 (aten::relu): input 0 refers to undefined value id 5"));
}

TEST(ProtoLoaderErrorsTest, UseBeforeDefinition) {
  EXPECT_THAT(LoadError(R"pb(
                nodes { kind: "aten::relu" input_ids: 1 outputs { id: 2 type: 0 } }
                nodes { kind: "aten::neg" outputs { id: 1 type: 0 } }
              )pb"),
              HasError("undefined value id 1"));
}

TEST(ProtoLoaderErrorsTest, DefinedTwice) {
  EXPECT_THAT(LoadError(R"pb(
                inputs { id: 0 type: 0 }
                nodes { kind: "aten::neg" outputs { id: 0 type: 0 } }
              )pb"),
              HasError("node 0 (aten::neg): value id 0 is defined twice"));
}

TEST(ProtoLoaderErrorsTest, NegativeId) {
  EXPECT_THAT(LoadError(R"pb(inputs { id: -3 type: 0 })pb"), HasError("negative"));
}

TEST(ProtoLoaderErrorsTest, HugeSparseIdsWork) {
  EXPECT_EQ(LoadError(R"pb(
              inputs { id: 9000000000000 type: 0 }
              nodes { kind: "aten::neg" input_ids: 9000000000000 outputs { id: 77 type: 0 } }
              output_ids: 77
            )pb"),
            "");
}

TEST(ProtoLoaderErrorsTest, InnerValueUsedOutsideItsBlock) {
  EXPECT_THAT(LoadError(R"pb(
                inputs { id: 0 type: 2 }
                nodes {
                  kind: "prim::If"
                  input_ids: 0
                  blocks { nodes { kind: "aten::neg" outputs { id: 5 type: 0 } } }
                  blocks {}
                }
                output_ids: 5
              )pb"),
              HasError("block output 0 uses value id 5 outside the block defining it"));
}

TEST(ProtoLoaderErrorsTest, NodeOutputUsedInsideItsOwnBlock) {
  EXPECT_THAT(
      LoadError(R"pb(
        inputs { id: 0 type: 2 }
        nodes {
          kind: "prim::If"
          input_ids: 0
          outputs { id: 1 type: 0 }
          blocks { nodes { kind: "aten::neg" input_ids: 1 } output_ids: 0 }
          blocks { output_ids: 0 }
        }
      )pb"),
      HasError("node 0 (prim::If) block 0 > node 0 (aten::neg): input 0 uses value id 1, an "
               "output of a node enclosing this block"));
}

TEST(ProtoLoaderErrorsTest, OuterValuesAreVisibleInBlocks) {
  EXPECT_EQ(LoadError(R"pb(
              inputs { id: 0 type: 2 }
              nodes {
                kind: "prim::If"
                input_ids: 0
                outputs { id: 1 type: 2 }
                blocks { output_ids: 0 }
                blocks { inputs { id: 2 type: 1 } output_ids: 0 }
              }
              output_ids: 1
            )pb"),
            "");
}

TEST(ProtoLoaderErrorsTest, Kinds) {
  EXPECT_THAT(LoadError(R"pb(nodes { kind: "relu" })pb"),
              HasError("kind \"relu\" is not a qualified name"));
  EXPECT_THAT(LoadError(R"pb(nodes { kind: "aten::" })pb"), HasError("not a qualified name"));
  EXPECT_THAT(LoadError(R"pb(nodes { kind: "::x" })pb"), HasError("not a qualified name"));
  EXPECT_THAT(LoadError(R"pb(nodes { kind: "prim::Return" })pb"), HasError("sentinels"));
  EXPECT_THAT(LoadError(R"pb(nodes { kind: "prim::Param" })pb"), HasError("sentinels"));
}

TEST(ProtoLoaderErrorsTest, TypeTable) {
  EXPECT_THAT(LoadError(R"pb(inputs { id: 0 type: 3 })pb"),
              HasError("type index 3 out of range (the graph has 3 types)"));
  EXPECT_THAT(LoadError("", "format_version: 1 types { kind: TYPE_LIST contained: 0 }"),
              HasError("type 0: contained type index 0 must refer to an earlier type"));
  EXPECT_THAT(LoadError("", "format_version: 1 types { kind: TYPE_INT } "
                            "types { kind: TYPE_DICT contained: 0 }"),
              HasError("needs 2 contained types, got 1"));
  EXPECT_THAT(LoadError("", "format_version: 1 types { kind: 99 }"),
              HasError("unknown type kind 99"));
  EXPECT_THAT(LoadError("", "format_version: 1 types { kind: TYPE_INT tensor { dtype: 6 } }"),
              HasError("tensor info on a non-tensor type"));
  EXPECT_THAT(LoadError("", "format_version: 1 types { kind: TYPE_INT class_name: \"A\" }"),
              HasError("class name on a non-class type"));
  EXPECT_THAT(LoadError("", "format_version: 1 types { kind: TYPE_TENSOR tensor { dtype: 8 } }"),
              HasError("unknown dtype code 8"));
  EXPECT_THAT(LoadError("", R"pb(format_version: 1
                                 types {
                                   kind: TYPE_TENSOR
                                   tensor { sizes { dims: 1 dims: 2 } strides { values: 1 } }
                                 })pb"),
              HasError("1 strides but 2 dims"));
  EXPECT_THAT(LoadError("", R"pb(format_version: 1
                                 types {
                                   kind: TYPE_TENSOR
                                   tensor { sizes { dims: 1 unknown_dims: 1 } }
                                 })pb"),
              HasError("unknown_dims must ascend"));
  EXPECT_THAT(LoadError("", R"pb(format_version: 1
                                 types {
                                   kind: TYPE_TENSOR
                                   tensor { device { type: "cuda" index: -2 } }
                                 })pb"),
              HasError("device index -2"));
}

TEST(ProtoLoaderErrorsTest, TypeDepthIsCapped) {
  std::string types = "format_version: 1 types { kind: TYPE_INT }";
  for (int i = 0; i < kMaxProtoTypeDepth; ++i) {
    absl::StrAppend(&types, " types { kind: TYPE_LIST contained: ", i, " }");
  }
  EXPECT_THAT(LoadError("", types), HasError("nested deeper than"));
}

TEST(ProtoLoaderErrorsTest, BlockDepthIsCapped) {
  std::string block;
  std::string close;
  for (int i = 0; i <= kMaxProtoBlockDepth; ++i) {
    absl::StrAppend(&block, "nodes { kind: \"prim::If\" blocks { ");
    absl::StrAppend(&close, "} } ");
  }
  auto text = absl::StrCat(kTypes, " block { ", block, close, " }");
  auto g = GraphFromTextProto(text);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasError("deeper than"));
}

TEST(ProtoLoaderErrorsTest, Attributes) {
  auto node = [](const std::string& attr) {
    return absl::StrCat("nodes { kind: \"prim::Constant\" attributes { ", attr, " } }");
  };
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: ATTR_I f: 1.5")),
              HasError("node 0 (prim::Constant): attribute \"attr::value\": kind ATTR_I does "
                       "not match the value set"));
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: ATTR_I")), HasError("no value"));
  EXPECT_THAT(LoadError(node("name: \"value\" kind: ATTR_I i: 1")),
              HasError("attribute 0 name \"value\" is not a qualified name"));
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: 42 i: 1")),
              HasError("unknown attribute kind 42"));
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: ATTR_TY ty: 7")),
              HasError("type index 7 out of range"));
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: ATTR_F f: nan")),
              HasError("more NaNs than nan_bits entries"));
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: ATTR_F f: 1 nan_bits: 1")),
              HasError("1 nan_bits entries for 0 NaN values"));
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: ATTR_F f: nan nan_bits: 1")),
              HasError("is not a NaN"));
  EXPECT_THAT(LoadError(node("name: \"attr::value\" kind: ATTR_CS cs { values: 1 }")),
              HasError("odd number"));
  EXPECT_THAT(LoadError(absl::StrCat(
                  "nodes { kind: \"prim::Constant\" ",
                  "attributes { name: \"attr::value\" kind: ATTR_I i: 1 } ",
                  "attributes { name: \"attr::value\" kind: ATTR_I i: 2 } }")),
              HasError("attribute \"attr::value\" appears twice"));
}

TEST(ProtoLoaderErrorsTest, Tensors) {
  auto tensor = [](const std::string& t) {
    return absl::StrCat("nodes { kind: \"prim::Constant\" attributes { name: \"attr::value\" ",
                        "kind: ATTR_T t { ", t, " } } }");
  };
  EXPECT_EQ(LoadError(tensor("dtype: 6 sizes: 2 raw_data: \"\\000\\000\\200?\\000\\000\\000@\"")),
            "");
  EXPECT_THAT(LoadError(tensor("dtype: 6 sizes: 2 raw_data: \"abc\"")),
              HasError("tensor of Float with 2 elements needs 8 bytes of raw_data, got 3"));
  EXPECT_THAT(LoadError(tensor("dtype: 6 sizes: -2")), HasError("negative size -2 in dim 0"));
  EXPECT_THAT(LoadError(tensor("dtype: 99 sizes: 2")), HasError("unknown dtype code 99"));
  EXPECT_THAT(LoadError(tensor("dtype: 6 sizes: 4611686018427387904 sizes: 4")),
              HasError("overflows"));
  EXPECT_THAT(LoadError(tensor("dtype: 6 sizes: 4611686018427387904 placeholder: true")), "");
  EXPECT_THAT(LoadError(tensor("dtype: 11 sizes: 2 raw_data: \"\\001\\002\"")),
              HasError("bool tensor byte 2"));
  EXPECT_THAT(LoadError(tensor("dtype: 6 sizes: 1 strides: 1 raw_data: \"abcd\"")),
              HasError("has strides"));
  EXPECT_THAT(LoadError(tensor("dtype: 6 sizes: 1 placeholder: true raw_data: \"abcd\"")),
              HasError("placeholder tensor with data"));
  EXPECT_THAT(LoadError(tensor("dtype: 6 sizes: 1 sizes: 2 placeholder: true strides: 1")),
              HasError("1 strides for 2 dims"));
  EXPECT_THAT(LoadError(tensor("undefined: true dtype: 6")), HasError("undefined tensor with"));
}

TEST(ProtoLoaderErrorsTest, DuplicateNames) {
  EXPECT_THAT(LoadError(R"pb(
                inputs { id: 0 name: "a" type: 0 }
                inputs { id: 1 name: "a" type: 0 }
              )pb"),
              HasError("value name \"a\" is used twice"));
}

TEST(ProtoLoaderErrorsTest, GarbageBytes) {
  for (const std::string& bytes :
       {std::string("\xff\xff\xff\xff"), std::string("garbage"), std::string("\x1a\x05\x12")}) {
    auto g = DeserializeGraph(bytes);
    EXPECT_FALSE(g.ok());
  }
  auto text = GraphFromTextProto("format_version: 1 bogus_field: 3");
  ASSERT_FALSE(text.ok());
  EXPECT_THAT(std::string(text.status().message()), HasError("1:"));
}

TEST(ProtoLoaderErrorsTest, EveryTruncationOfAValidGraphFailsCleanly) {
  auto bytes = SerializeGraph(*testing::MakeFeatureGraph());
  ASSERT_TRUE(bytes.ok());
  for (size_t n = 0; n < bytes->size(); n += 7) {
    auto g = DeserializeGraph(absl::string_view(*bytes).substr(0, n));
    (void)g;  // may or may not parse; must not crash
  }
}

}  // namespace
}  // namespace kiln::ir
