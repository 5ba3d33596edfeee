#include "passes/shape_functions.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "passes/shape_functions_internal.h"
#include "passes/type_promotion.h"
#include "support/status.h"

namespace kiln::passes {
namespace shape_internal {

// Helpers several op families share (declared in shape_functions_internal.h).

// A value known to be an int: a constant, or aten::size.int(x, d) on a dim
// that x's type knows.
Dim KnownInt(const Value* v) {
  const Node* n = v->node();
  if (n->kind() == ir::sym::kConstant) {
    std::optional<IValue> c = ConstantValueOf(*v);
    if (c && c->isInt()) return c->toInt();
    return std::nullopt;
  }
  static const ir::Symbol kSize = ir::Symbol::FromQualString("aten::size");
  if (n->kind() == kSize && n->inputs().size() == 2 && n->input(0)->type()->is_tensor()) {
    const TensorInfo& t = n->input(0)->type()->tensor();
    Dim d = KnownInt(n->input(1));
    if (!d || !t.sizes) return std::nullopt;
    int64_t rank = static_cast<int64_t>(t.sizes->size());
    int64_t i = *d < 0 ? *d + rank : *d;
    if (i < 0 || i >= rank) return std::nullopt;
    return (*t.sizes)[static_cast<size_t>(i)];
  }
  return std::nullopt;
}

// Normalizes a possibly negative dim against `rank`.
absl::StatusOr<size_t> WrapDim(const Args& a, int64_t dim, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  // A 0-dim tensor accepts dims -1 and 0, as PyTorch does.
  int64_t effective = r == 0 ? 1 : r;
  if (dim < -effective || dim >= effective) {
    return a.Error(absl::StrCat("dim ", dim, " is out of range for a tensor of rank ", rank));
  }
  return static_cast<size_t>(dim < 0 ? dim + effective : dim);
}

std::optional<DType> ApplyRule(DTypeRule rule, std::optional<DType> in) {
  switch (rule) {
    case DTypeRule::kSame: return in;
    case DTypeRule::kBool: return DType::kBool;
    case DTypeRule::kLong: return DType::kInt64;
    case DTypeRule::kIntToFloat:
      if (in && IsIntegral(*in, /*include_bool=*/true)) return DType::kFloat32;
      return in;
    case DTypeRule::kIntToLong:
      if (in && IsIntegral(*in, /*include_bool=*/true)) return DType::kInt64;
      return in;
  }
  return in;
}

absl::StatusOr<SymbolicSizes> BroadcastOrError(const Args& a, const SymbolicSizes& x,
                                               const SymbolicSizes& y) {
  absl::StatusOr<SymbolicSizes> r = BroadcastSizes(x, y);
  if (!r.ok()) return a.Error(r.status().message());
  return r;
}

std::optional<DType> PromoteInputs(const Args& a, std::initializer_list<size_t> inputs) {
  absl::InlinedVector<PromotionOperand, 4> ops;
  for (size_t i : inputs) {
    const Type* t = a.TypeAt(i);
    if (!t) return std::nullopt;
    std::optional<PromotionOperand> op = PromotionOperandFor(*t);
    if (!op) return std::nullopt;
    ops.push_back(*op);
  }
  return ResultType(ops);
}

absl::Status CheckDimsEqual(const Args& a, Dim x, Dim y, absl::string_view what) {
  if (x && y && *x != *y) return a.Error(absl::StrCat(what, ": ", *x, " vs ", *y));
  return absl::OkStatus();
}

namespace {

// ------------------------------------------------------------ scalars

// Ops whose outputs are fully described by the schema (size -> int[], ...).
ShapeImpl SchemaReturns(const ir::FunctionSchema* schema) {
  return [schema](const Args&) -> absl::StatusOr<Types> {
    Types out;
    for (const ir::Argument& r : schema->returns) out.push_back(r.type);
    return out;
  };
}

// ------------------------------------------------------------ the table

struct Entry {
  const char* name;
  ShapeImpl impl;  // null: SchemaReturns
};

std::vector<Entry> BuildTable() {
  std::vector<Entry> t;
  auto add = [&](std::initializer_list<const char*> names, const ShapeImpl& impl) {
    for (const char* n : names) t.push_back({n, impl});
  };
  add({"aten::relu", "aten::relu_", "aten::relu6", "aten::relu6_", "aten::hardtanh",
       "aten::hardtanh_", "aten::gelu", "aten::silu", "aten::silu_", "aten::hardswish",
       "aten::hardswish_", "aten::hardsigmoid", "aten::hardsigmoid_", "aten::elu", "aten::elu_",
       "aten::leaky_relu", "aten::leaky_relu_", "aten::selu", "aten::selu_", "aten::celu",
       "aten::mish", "aten::mish_", "aten::softplus", "aten::log_sigmoid", "aten::neg",
       "aten::neg_", "aten::abs", "aten::abs_", "aten::clamp", "aten::clamp_",
       "aten::clamp_min", "aten::clamp_min_", "aten::clamp_max", "aten::clamp_max_",
       "aten::threshold", "aten::threshold_", "aten::ceil", "aten::ceil_", "aten::floor",
       "aten::floor_", "aten::round", "aten::round_", "aten::trunc", "aten::trunc_",
       "aten::sign", "aten::sign_", "aten::frac", "aten::square", "aten::dropout",
       "aten::dropout_", "aten::feature_dropout", "aten::alpha_dropout",
       "aten::feature_alpha_dropout", "aten::contiguous", "aten::clone", "aten::detach",
       "aten::zero_", "aten::fill_.Scalar", "aten::masked_fill.Scalar",
       "aten::masked_fill.Tensor", "aten::masked_fill_.Scalar", "aten::masked_fill_.Tensor",
       "aten::bitwise_not", "aten::nan_to_num", "aten::cumsum", "aten::cumprod", "aten::flip",
       "aten::glu"},
      Unary(DTypeRule::kSame));
  // glu halves a dim; keep only the dtype.
  t.back().impl = [](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    return Types{x ? TensorOf(x->dtype, std::nullopt, x->device) : Type::Tensor()};
  };
  add({"aten::tanh", "aten::tanh_", "aten::sigmoid", "aten::sigmoid_", "aten::exp",
       "aten::exp_", "aten::exp2", "aten::expm1", "aten::log", "aten::log_", "aten::log2",
       "aten::log10", "aten::log1p", "aten::sqrt", "aten::sqrt_", "aten::rsqrt",
       "aten::rsqrt_", "aten::erf", "aten::erf_", "aten::erfc", "aten::reciprocal",
       "aten::reciprocal_", "aten::sin", "aten::sin_", "aten::cos", "aten::cos_", "aten::tan",
       "aten::asin", "aten::acos", "aten::atan", "aten::sinh", "aten::cosh"},
      Unary(DTypeRule::kIntToFloat));
  add({"aten::isnan", "aten::isinf", "aten::isfinite", "aten::logical_not"},
      Unary(DTypeRule::kBool));
  add({"aten::softmax.int", "aten::log_softmax.int"}, SoftmaxLike);
  add({"aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor", "aten::sub.Scalar",
       "aten::mul.Tensor", "aten::mul.Scalar", "aten::rsub.Tensor", "aten::rsub.Scalar",
       "aten::maximum", "aten::minimum", "aten::max.other", "aten::min.other",
       "aten::pow.Tensor_Tensor", "aten::pow.Tensor_Scalar", "aten::remainder.Tensor",
       "aten::remainder.Scalar", "aten::fmod.Tensor", "aten::fmod.Scalar",
       "aten::floor_divide", "aten::floor_divide.Scalar", "aten::bitwise_and.Tensor",
       "aten::bitwise_and.Scalar", "aten::bitwise_or.Tensor", "aten::bitwise_or.Scalar",
       "aten::bitwise_xor.Tensor", "aten::bitwise_xor.Scalar", "aten::__and__.Tensor",
       "aten::__or__.Tensor", "aten::__xor__.Tensor", "aten::clamp.Tensor"},
      Binary(BinaryRule::kPromote));
  add({"aten::div.Tensor", "aten::div.Scalar", "aten::true_divide.Tensor",
       "aten::true_divide.Scalar", "aten::atan2"},
      Binary(BinaryRule::kTrueDivide));
  add({"aten::div.Tensor_mode", "aten::div.Scalar_mode"}, Binary(BinaryRule::kDivMode));
  add({"aten::eq.Tensor", "aten::eq.Scalar", "aten::ne.Tensor", "aten::ne.Scalar",
       "aten::lt.Tensor", "aten::lt.Scalar", "aten::le.Tensor", "aten::le.Scalar",
       "aten::gt.Tensor", "aten::gt.Scalar", "aten::ge.Tensor", "aten::ge.Scalar",
       "aten::logical_and", "aten::logical_or", "aten::logical_xor"},
      Binary(BinaryRule::kBool));
  add({"aten::add_.Tensor", "aten::add_.Scalar", "aten::sub_.Tensor", "aten::sub_.Scalar",
       "aten::mul_.Tensor", "aten::mul_.Scalar", "aten::div_.Tensor", "aten::div_.Scalar",
       "aten::div_.Tensor_mode", "aten::div_.Scalar_mode", "aten::pow_.Tensor",
       "aten::pow_.Scalar", "aten::clamp_.Tensor", "aten::eq_.Tensor", "aten::eq_.Scalar",
       "aten::ne_.Tensor", "aten::ne_.Scalar", "aten::lt_.Tensor", "aten::lt_.Scalar",
       "aten::gt_.Tensor", "aten::gt_.Scalar", "aten::le_.Tensor", "aten::le_.Scalar",
       "aten::ge_.Tensor", "aten::ge_.Scalar", "aten::copy_"},
      Binary(BinaryRule::kInplace));
  add({"aten::where.self"}, Where);
  add({"aten::type_as", "aten::to.other"}, SizesOf0DTypeOf1);
  add({"aten::to.dtype"}, ToDType);

  // Reductions. Argument positions follow the 1.13 schemas.
  add({"aten::mean.dim", "aten::sum.dim_IntList"},
      Reduce({/*dims*/ 1, false, /*keepdim*/ 2, /*dtype*/ 3,
              DTypeRule::kSame, false}));
  t[t.size() - 1].impl = Reduce({1, false, 2, 3, DTypeRule::kIntToLong, false});  // sum
  add({"aten::mean"}, Reduce({std::nullopt, false, std::nullopt, 1, DTypeRule::kSame, false}));
  add({"aten::sum"}, Reduce({std::nullopt, false, std::nullopt, 1, DTypeRule::kIntToLong, false}));
  add({"aten::prod"}, Reduce({std::nullopt, false, std::nullopt, 1, DTypeRule::kIntToLong, false}));
  add({"aten::prod.dim_int"}, Reduce({1, true, 2, 3, DTypeRule::kIntToLong, false}));
  add({"aten::amax", "aten::amin", "aten::logsumexp"},
      Reduce({1, false, 2, std::nullopt, DTypeRule::kSame, false}));
  t[t.size() - 1].impl = Reduce({1, false, 2, std::nullopt, DTypeRule::kIntToFloat, false});
  add({"aten::argmax", "aten::argmin"}, Reduce({1, true, 2, std::nullopt, DTypeRule::kLong, false}));
  add({"aten::max.dim", "aten::min.dim"}, Reduce({1, true, 2, std::nullopt, DTypeRule::kSame, true}));
  add({"aten::max", "aten::min"}, Reduce({std::nullopt, false, std::nullopt, std::nullopt, DTypeRule::kSame, false}));
  add({"aten::all", "aten::any"}, Reduce({std::nullopt, false, std::nullopt, std::nullopt, DTypeRule::kBool, false}));
  add({"aten::all.dim", "aten::any.dim"}, Reduce({1, true, 2, std::nullopt, DTypeRule::kBool, false}));
  add({"aten::var.dim", "aten::std.dim"}, Reduce({1, false, 3, std::nullopt, DTypeRule::kSame, false}));

  add({"aten::linear"}, Linear);
  add({"aten::matmul"}, Matmul);
  add({"aten::mm"}, Mm);
  add({"aten::bmm"}, Bmm);
  add({"aten::addmm"}, Addmm);
  add({"aten::t"}, TransposeLast2);
  add({"aten::transpose.int"}, Transpose);
  add({"aten::permute"}, Permute);
  add({"aten::flatten.using_ints"}, Flatten);
  add({"aten::view", "aten::reshape"}, View);
  add({"aten::view_as", "aten::reshape_as", "aten::expand_as"}, SizesOf1);
  add({"aten::expand"}, Expand);
  add({"aten::unsqueeze"}, Unsqueeze);
  add({"aten::squeeze", "aten::squeeze.dim"}, Squeeze);
  add({"aten::select.int"}, Select);
  add({"aten::cat", "aten::concat"}, Cat);
  add({"aten::stack"}, Stack);

  // conv{1,2,3}d(input, weight, bias, stride, padding, dilation, groups)
  add({"aten::conv1d", "aten::conv2d", "aten::conv3d"}, Conv({3, 4, 5, 6}));
  ConvSpec string_padding{3, 4, 5, 6};
  string_padding.string_padding = true;
  add({"aten::conv1d.padding", "aten::conv2d.padding", "aten::conv3d.padding"},
      Conv(string_padding));
  // convolution(input, weight, bias, stride, padding, dilation, transposed,
  //             output_padding, groups); _convolution adds flags after.
  ConvSpec general{3, 4, 5, 8};
  general.transposed_arg = 6;
  general.output_padding = 7;
  general.allow_unbatched = false;
  add({"aten::convolution", "aten::_convolution", "aten::_convolution.deprecated"},
      Conv(general));
  // conv_transposeNd(input, weight, bias, stride, padding, output_padding,
  //                  groups, dilation)
  ConvSpec transposed{3, 4, 7, 6};
  transposed.transposed = true;
  transposed.output_padding = 5;
  add({"aten::conv_transpose1d", "aten::conv_transpose2d.input", "aten::conv_transpose3d.input"},
      Conv(transposed));

  // max_poolNd(self, kernel_size, stride, padding, dilation, ceil_mode)
  for (size_t k = 1; k <= 3; ++k) {
    PoolSpec max{k, 1, 2, 3, 4, 5, false};
    const char* names[] = {"aten::max_pool1d", "aten::max_pool2d", "aten::max_pool3d"};
    add({names[k - 1]}, Pool(max));
    // avg_poolNd(self, kernel_size, stride, padding, ceil_mode, ...)
    PoolSpec avg{k, 1, 2, 3, std::nullopt, 4, false};
    const char* avg_names[] = {"aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d"};
    add({avg_names[k - 1]}, Pool(avg));
    const char* adaptive[] = {"aten::adaptive_avg_pool1d", "aten::adaptive_avg_pool2d",
                              "aten::adaptive_avg_pool3d"};
    add({adaptive[k - 1]}, AdaptivePool(k, false));
  }
  add({"aten::max_pool2d_with_indices"}, Pool(PoolSpec{2, 1, 2, 3, 4, 5, true}));
  add({"aten::adaptive_max_pool1d"}, AdaptivePool(1, true));
  add({"aten::adaptive_max_pool2d"}, AdaptivePool(2, true));

  add({"aten::layer_norm"}, LayerNorm);
  add({"aten::batch_norm", "aten::instance_norm"}, ChannelNorm);
  add({"aten::group_norm"}, Unary(DTypeRule::kSame));

  add({"aten::size", "aten::size.int", "aten::len.t", "aten::len.Tensor", "aten::dim",
       "aten::numel", "aten::gt.int", "aten::gt.float", "aten::lt.int", "aten::lt.float",
       "aten::ge.int", "aten::ge.float", "aten::le.int", "aten::le.float", "aten::eq.int",
       "aten::eq.float", "aten::ne.int", "aten::ne.float"},
      nullptr);
  for (auto& [name, impl] : OnnxShapeEntries()) t.push_back({name, std::move(impl)});
  for (auto& [name, impl] : IndexingShapeEntries()) t.push_back({name, std::move(impl)});
  return t;
}

const std::vector<Entry>& Table() {
  static const std::vector<Entry>* table = new std::vector<Entry>(BuildTable());
  return *table;
}

}  // namespace
}  // namespace shape_internal

using ir::IValue;
using ir::Node;
using ir::TensorInfo;
using ir::Type;
using ir::TypeKind;
using ir::TypePtr;
using ir::Value;
using shape_internal::Args;
using shape_internal::Dim;
using shape_internal::Dims;
using shape_internal::Entry;
using shape_internal::SchemaReturns;
using shape_internal::ShapeImpl;
using shape_internal::Table;

std::optional<std::vector<TypePtr>> ListUnpackElementTypes(const Node& unpack) {
  if (unpack.inputs().size() != 1) return std::nullopt;
  return shape_internal::ListUnpackTypes(*unpack.input(0)->node(), unpack.outputs().size());
}

std::vector<std::string> ShapeFunctionOverloads() {
  std::vector<std::string> out;
  for (const Entry& e : Table()) out.emplace_back(e.name);
  return out;
}

absl::Status RegisterShapeFunctionsInto(ir::OpRegistry& ops) {
  for (const Entry& e : Table()) {
    const ir::Operator* op = ops.Find(e.name);
    if (!op) return absl::NotFoundError(absl::StrCat("shape function for unknown op ", e.name));
    const ir::FunctionSchema* schema = &op->schema;
    ShapeImpl impl = e.impl ? e.impl : SchemaReturns(schema);
    RETURN_IF_ERROR(ops.SetShapeFn(
        e.name, [schema, impl](const Node& node, absl::Span<const TypePtr> types,
                               absl::Span<const IValue* const> constants) {
          return impl(Args(node, *schema, types, constants));
        }));
  }
  return absl::OkStatus();
}

absl::Status RegisterShapeFunctions() {
  static const absl::Status* status = new absl::Status([] {
    absl::Status s = ir::BuiltinOpsStatus();
    if (!s.ok()) return s;
    return RegisterShapeFunctionsInto(ir::BuiltinOps());
  }());
  return *status;
}

std::optional<IValue> ConstantValueOf(const Value& v) {
  const Node* n = v.node();
  if (n->kind() != ir::sym::kConstant) return std::nullopt;
  const Type& type = *v.type();
  const ir::AttributeValue* a = n->findAttribute(ir::sym::kValue);
  if (!a) {
    if (type.kind() == TypeKind::kNone || type.kind() == TypeKind::kOptional) return IValue::None();
    return std::nullopt;
  }
  switch (ir::KindOf(*a)) {
    case ir::AttributeKind::i: {
      int64_t i = std::get<int64_t>(*a);
      if (type.kind() == TypeKind::kBool) return IValue::Bool(i != 0);
      if (type.kind() == TypeKind::kInt) return IValue::Int(i);
      return std::nullopt;
    }
    case ir::AttributeKind::f:
      if (type.kind() != TypeKind::kFloat) return std::nullopt;
      return IValue::Double(std::get<double>(*a));
    case ir::AttributeKind::s:
      if (type.kind() != TypeKind::kStr) return std::nullopt;
      return IValue::String(std::get<std::string>(*a));
    case ir::AttributeKind::is: {
      if (type.kind() != TypeKind::kList) return std::nullopt;
      const auto& v = std::get<std::vector<int64_t>>(*a);
      bool bools = !type.contained().empty() && type.contained()[0]->kind() == TypeKind::kBool;
      std::vector<IValue> elems;
      elems.reserve(v.size());
      for (int64_t e : v) elems.push_back(bools ? IValue::Bool(e != 0) : IValue::Int(e));
      return IValue::List(std::move(elems));
    }
    case ir::AttributeKind::fs: {
      if (type.kind() != TypeKind::kList) return std::nullopt;
      std::vector<IValue> elems;
      for (double e : std::get<std::vector<double>>(*a)) elems.push_back(IValue::Double(e));
      return IValue::List(std::move(elems));
    }
    case ir::AttributeKind::ss: {
      if (type.kind() != TypeKind::kList) return std::nullopt;
      std::vector<IValue> elems;
      for (const std::string& e : std::get<std::vector<std::string>>(*a)) {
        elems.push_back(IValue::String(e));
      }
      return IValue::List(std::move(elems));
    }
    default:
      return std::nullopt;
  }
}

absl::StatusOr<TypePtr> RefineType(const TypePtr& existing, const TypePtr& inferred, bool strict) {
  if (!existing) return inferred;
  if (!inferred || existing == inferred) return existing;
  if (!existing->is_tensor()) {
    if (existing->kind() == TypeKind::kAny) return inferred;
    return existing;
  }
  if (!inferred->is_tensor()) return existing;
  const TensorInfo& have = existing->tensor();
  const TensorInfo& got = inferred->tensor();
  // Fast path (most calls): nothing to add and nothing to contradict.
  if ((!got.dtype || have.dtype == got.dtype) && (!got.device || have.device == got.device) &&
      (!got.sizes || have.sizes == got.sizes)) {
    return existing;
  }
  TensorInfo out = have;
  bool added = false;
  auto conflict = [&](absl::string_view what) -> absl::Status {
    return absl::InvalidArgumentError(absl::StrCat("inferred ", inferred->ToString(),
                                                   " contradicts the annotated ",
                                                   existing->ToString(), " (", what, ")"));
  };
  if (got.dtype) {
    if (!have.dtype) {
      out.dtype = got.dtype;
      added = true;
    } else if (*have.dtype != *got.dtype && strict) {
      return conflict("dtype");
    }
  }
  if (got.sizes) {
    if (!have.sizes) {
      out.sizes = got.sizes;
      added = true;
    } else if (have.sizes->size() != got.sizes->size()) {
      if (strict) return conflict("rank");
    } else {
      for (size_t i = 0; i < have.sizes->size(); ++i) {
        const Dim& h = (*have.sizes)[i];
        const Dim& g = (*got.sizes)[i];
        if (!g) continue;
        if (!h) {
          (*out.sizes)[i] = g;
          added = true;
        } else if (*h != *g && strict) {
          return conflict("sizes");
        }
      }
    }
  }
  if (got.device) {
    if (!have.device) {
      out.device = got.device;
      added = true;
    } else if (*have.device != *got.device && strict) {
      return conflict("device");
    }
  }
  if (!added) return existing;
  return Type::TensorWith(std::move(out));
}

TypePtr JoinTypes(const TypePtr& a, const TypePtr& b) {
  if (a == b) return a;
  if (!a || !b) return nullptr;
  if (!a->is_tensor() || !b->is_tensor()) return ir::TypeEquals(*a, *b) ? a : nullptr;
  const TensorInfo& x = a->tensor();
  const TensorInfo& y = b->tensor();
  TensorInfo out;
  if (x.dtype == y.dtype) out.dtype = x.dtype;
  if (x.device == y.device) out.device = x.device;
  if (x.requires_grad == y.requires_grad) out.requires_grad = x.requires_grad;
  if (x.undefined == y.undefined) out.undefined = x.undefined;
  if (x.sizes && y.sizes && x.sizes->size() == y.sizes->size()) {
    Dims s(x.sizes->size());
    for (size_t i = 0; i < s.size(); ++i) {
      if ((*x.sizes)[i] == (*y.sizes)[i]) s[i] = (*x.sizes)[i];
    }
    out.sizes = std::move(s);
    if (x.strides == y.strides) out.strides = x.strides;
  }
  return Type::TensorWith(std::move(out));
}

std::string NodeLabel(const Node& node) {
  std::string s(node.kind().qualString());
  s += " node";
  if (!node.outputs().empty()) absl::StrAppend(&s, " %", node.output(0)->debugName());
  absl::string_view loc = node.sourceLocation();
  if (!loc.empty()) absl::StrAppend(&s, " (", loc, ")");
  return s;
}

}  // namespace kiln::passes
