#include "ir/schema.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/schema_parser.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

FunctionSchema Parse(absl::string_view text) {
  absl::StatusOr<FunctionSchema> s = ParseSchema(text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *std::move(s) : FunctionSchema();
}

TEST(SchemaParserTest, AddTensorWithKwargOnlyAlpha) {
  FunctionSchema s = Parse("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.name, "aten::add");
  EXPECT_EQ(s.overload_name, "Tensor");
  EXPECT_EQ(s.symbol(), Symbol::FromQualString("aten::add"));
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_EQ(s.arguments[0].name, "self");
  EXPECT_EQ(s.arguments[0].type->kind(), TypeKind::kTensor);
  EXPECT_FALSE(s.arguments[1].kwarg_only);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_EQ(s.arguments[2].type->kind(), TypeKind::kNumber);
  EXPECT_EQ(s.arguments[2].default_value, IValue::Int(1));
  ASSERT_EQ(s.returns.size(), 1u);
  EXPECT_EQ(s.returns[0].type->kind(), TypeKind::kTensor);
  EXPECT_EQ(s.NumRequiredArguments(), 2u);
  EXPECT_FALSE(s.is_vararg);
  EXPECT_FALSE(s.IsMutable());
}

TEST(SchemaParserTest, Conv2dFixedSizeListsBroadcastScalarDefaults) {
  FunctionSchema s = Parse(
      "aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
      "int[2] padding=0, int[2] dilation=1, int groups=1) -> Tensor");
  ASSERT_EQ(s.arguments.size(), 7u);
  EXPECT_EQ(s.arguments[2].type->ToString(), "Tensor?");
  EXPECT_EQ(s.arguments[2].default_value, IValue::None());
  EXPECT_EQ(s.arguments[3].type->ToString(), "int[]");
  EXPECT_EQ(s.arguments[3].fixed_list_size, 2);
  EXPECT_EQ(s.arguments[3].default_value, IValue::IntList({1, 1}));
  EXPECT_EQ(s.arguments[4].default_value, IValue::IntList({0, 0}));
  EXPECT_EQ(s.arguments[6].default_value, IValue::Int(1));
  EXPECT_EQ(s.NumRequiredArguments(), 2u);
}

TEST(SchemaParserTest, InplaceWriteAnnotation) {
  FunctionSchema s = Parse("aten::relu_(Tensor(a!) self) -> Tensor(a!)");
  ASSERT_TRUE(s.arguments[0].alias_info.has_value());
  EXPECT_TRUE(s.arguments[0].alias_info->is_write);
  EXPECT_EQ(s.arguments[0].alias_info->before_sets, std::vector<std::string>{"a"});
  ASSERT_TRUE(s.returns[0].alias_info.has_value());
  EXPECT_TRUE(s.returns[0].alias_info->is_write);
  EXPECT_TRUE(s.IsMutable());
}

TEST(SchemaParserTest, ChunkAliasIntoListElements) {
  FunctionSchema s = Parse("aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]");
  const AliasInfo& in = *s.arguments[0].alias_info;
  EXPECT_EQ(in.before_sets, std::vector<std::string>{"a"});
  EXPECT_EQ(in.after_sets, std::vector<std::string>{"*"});
  EXPECT_FALSE(in.is_write);
  EXPECT_EQ(s.returns[0].type->ToString(), "Tensor[]");
  const AliasInfo& out = *s.returns[0].alias_info;
  EXPECT_TRUE(out.before_sets.empty());
  ASSERT_EQ(out.contained.size(), 1u);
  EXPECT_EQ(out.contained[0].before_sets, std::vector<std::string>{"a"});
}

TEST(SchemaParserTest, ListOwnAnnotationAndOptionalAnnotation) {
  FunctionSchema s = Parse("aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)");
  EXPECT_EQ(s.arguments[0].type->ToString(), "Any[]");
  EXPECT_TRUE(s.arguments[0].alias_info->is_write);
  EXPECT_TRUE(s.IsMutable());
  FunctionSchema o = Parse("aten::_unwrap_optional(t(a)? optional) -> t(a)");
  EXPECT_EQ(o.arguments[0].type->ToString(), "Any?");
  EXPECT_EQ(o.arguments[0].alias_info->before_sets, std::vector<std::string>{"a"});
  FunctionSchema w = Parse("aten::split(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]");
  EXPECT_EQ(w.returns[0].alias_info->contained.size(), 1u);
}

TEST(SchemaParserTest, IntOverloadAndVarargs) {
  FunctionSchema s = Parse("aten::size.int(Tensor self, int dim) -> int");
  EXPECT_EQ(s.returns[0].type->kind(), TypeKind::kInt);
  FunctionSchema v = Parse("prim::ListUnpack(...) -> ...");
  EXPECT_TRUE(v.is_vararg);
  EXPECT_TRUE(v.is_varret);
  EXPECT_TRUE(v.arguments.empty());
  FunctionSchema f = Parse("aten::format(str self, ...) -> str");
  EXPECT_TRUE(f.is_vararg);
  EXPECT_EQ(f.arguments.size(), 1u);
  FunctionSchema none = Parse("prim::RaiseException(str msg, str? cls=None) -> ()");
  EXPECT_TRUE(none.returns.empty());
  EXPECT_FALSE(none.is_varret);
}

TEST(SchemaParserTest, NamedTupleReturns) {
  FunctionSchema s = Parse(
      "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  ASSERT_EQ(s.returns.size(), 2u);
  EXPECT_EQ(s.returns[0].name, "values");
  EXPECT_EQ(s.returns[1].name, "indices");
  EXPECT_EQ(s.arguments[2].default_value, IValue::Bool(false));
}

TEST(SchemaParserTest, DefaultsOfEveryKind) {
  FunctionSchema s = Parse(
      "test::defaults(float a=1, float b=1.0000000000000001e-05, float c=-inf, bool d=True, "
      "str e=\"none\", str f=' \\n\\t\"', int[] g=[], int[] h=[-2, -1], float[] i=[1, 2.5], "
      "MemoryFormat m=contiguous_format, int reduction=Mean, ScalarType dt=long, "
      "Layout l=strided, Scalar s=2., int? n=None, float? p=0.5) -> ()");
  const auto& a = s.arguments;
  EXPECT_EQ(a[0].default_value, IValue::Double(1.0));  // int literal for a float
  EXPECT_EQ(a[1].default_value, IValue::Double(1.0000000000000001e-05));
  EXPECT_TRUE(std::isinf(a[2].default_value->toDouble()));
  EXPECT_LT(a[2].default_value->toDouble(), 0);
  EXPECT_EQ(a[3].default_value, IValue::Bool(true));
  EXPECT_EQ(a[4].default_value, IValue::String("none"));
  EXPECT_EQ(a[5].default_value, IValue::String(" \n\t\""));
  EXPECT_EQ(a[6].default_value, IValue::List({}));
  EXPECT_EQ(a[7].default_value, IValue::IntList({-2, -1}));
  EXPECT_EQ(a[8].default_value, IValue::List({IValue::Double(1), IValue::Double(2.5)}));
  EXPECT_EQ(a[9].default_value, IValue::Int(0));
  EXPECT_EQ(a[10].default_value, IValue::Int(1));
  EXPECT_EQ(a[11].default_value, IValue::Int(4));
  EXPECT_EQ(a[12].default_value, IValue::Int(0));
  EXPECT_EQ(a[13].default_value, IValue::Double(2.0));
  EXPECT_EQ(a[14].default_value, IValue::None());
  EXPECT_EQ(a[15].default_value, IValue::Double(0.5));
  EXPECT_EQ(a[15].type->ToString(), "float?");
}

TEST(SchemaParserTest, TypesOfEveryKind) {
  struct Case {
    const char* text;
    const char* printed;
  };
  const Case cases[] = {
      {"Tensor", "Tensor"},         {"int", "int"},
      {"SymInt", "int"},            {"float", "float"},
      {"bool", "bool"},             {"str", "str"},
      {"Dimname", "str"},           {"Scalar", "Scalar"},
      {"ScalarType", "ScalarType"}, {"Layout", "Layout"},
      {"Device", "Device"},         {"MemoryFormat", "MemoryFormat"},
      {"Generator?", "Generator?"}, {"int[]", "int[]"},
      {"int[2]", "int[]"},          {"Tensor[]", "Tensor[]"},
      {"Tensor?[]", "Tensor?[]"},   {"int[1]?", "int[]?"},
      {"(int, Tensor)", "(int, Tensor)"}, {"()", "()"},
      {"Any", "Any"},               {"t", "Any"},
      {"tVal", "Any"},              {"complex", "complex"},
      {"Storage", "Any"},           {"Future(t)", "Any"},
      {"Dict(str, t)", "Dict(str, Any)"},
      {"NoneType", "NoneType"},
      {"__torch__.torch.classes.quantized.LinearPackedParamsBase",
       "__torch__.torch.classes.quantized.LinearPackedParamsBase"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<TypePtr> t = ParseSchemaType(c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.status();
    EXPECT_EQ((*t)->ToString(), c.printed) << c.text;
  }
}

TEST(SchemaParserTest, ErrorsSayWhereAndWhat) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"add(Tensor self) -> Tensor", "1:4: expected '::'"},
      {"aten::add(Tensor self -> Tensor", "1:23: expected ',' or ')' in argument list, got '-'"},
      {"aten::add(Tensor) -> Tensor", "1:17: expected an argument name, got ')'"},
      {"aten::add(Blob self) -> Tensor", "1:11: expected a type, got unknown type 'Blob'"},
      {"aten::add(Tensor self)", "1:23: expected '->', got end of input"},
      {"aten::add(Tensor self) -> Tensor x y", "1:36: expected end of schema, got 'y'"},
      {"aten::f(int x=[1, ) -> ()", "expected a default value, got ')'"},
      {"aten::f(int x=Bogus) -> ()", "unknown name 'Bogus'"},
      {"aten::f(int x=None) -> ()", "not optional"},
      {"aten::f(int[] x=3) -> ()", "expected a list default"},
      {"aten::f(str x=\"abc) -> ()", "expected a closing quote"},
      {"aten::f(int x=99999999999999999999) -> ()", "expected an int64 number"},
      {"aten::f(Tensor(a x) -> ()", "expected ')'"},
      {"aten::f(Tensor(a)(b) x) -> ()", "one alias annotation per type"},
      {"aten::f(*, *, int x) -> ()", "duplicate '*'"},
      {"aten::f(int x) -> (int, ", "expected a type, got end of input"},
      {"aten::f(int x)\n  -> Blah", "2:6: expected a type, got unknown type 'Blah'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<FunctionSchema> s = ParseSchema(c.text);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.message)) << c.text;
  }
}

TEST(SchemaParserTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "aten::f(" + std::string(10000, '(') + "int" + std::string(10000, ')') + " x) -> ()";
  EXPECT_FALSE(ParseSchema(deep).ok());
  std::string deep_list = "aten::f(int x=" + std::string(10000, '[') + ") -> ()";
  EXPECT_FALSE(ParseSchema(deep_list).ok());
}

TEST(SchemaTest, ToStringRoundTrips) {
  const char* schemas[] = {
      "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
      "aten::relu_(Tensor(a!) self) -> Tensor(a!)",
      "aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]",
      "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
      "prim::ListUnpack(...) -> ...",
      "aten::format(str self, ...) -> str",
      "aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
      "aten::to.prim_Device(Tensor(a) self, Device? device, int? dtype=None, bool non_blocking=False, bool copy=False) -> Tensor(b|a)",
      "aten::gelu(Tensor self, *, str approximate=\"none\") -> Tensor",
      "aten::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor",
      "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> Tensor",
      "prim::RaiseException(str msg, str? cls=None) -> ()",
      "aten::_set_item.str(Dict(str, t)(a!) l, str(b -> *) idx, t(c -> *) v) -> ()",
  };
  for (const char* text : schemas) {
    FunctionSchema s = Parse(text);
    std::string printed = s.ToString();
    FunctionSchema again = Parse(printed);
    EXPECT_TRUE(s == again) << text << "\n  printed: " << printed;
  }
  // Simple ones print exactly as PyTorch does.
  EXPECT_EQ(Parse(schemas[0]).ToString(), schemas[0]);
  EXPECT_EQ(Parse(schemas[1]).ToString(), schemas[1]);
  EXPECT_EQ(Parse(schemas[3]).ToString(), schemas[3]);
  EXPECT_EQ(Parse(schemas[2]).ToString(), schemas[2]);
}

TEST(SchemaTest, ArgumentIndex) {
  FunctionSchema s = Parse("aten::dropout(Tensor input, float p, bool train) -> Tensor");
  EXPECT_EQ(s.ArgumentIndex("train"), 2);
  EXPECT_EQ(s.ArgumentIndex("nope"), -1);
  EXPECT_EQ(s.QualifiedName(), "aten::dropout");
}

}  // namespace
}  // namespace kiln::ir
