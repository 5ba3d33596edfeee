#include "passes/decompositions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "ops/row.h"
#include "passes/shape_functions.h"
#include "passes/shape_propagation.h"
#include "support/status.h"

namespace kiln::passes {
namespace {

using ir::IValue;
using ir::Node;
using ir::Symbol;
using ir::Type;
using ir::TypeKind;
using ir::TypePtr;
using ir::Value;
using Values = std::vector<Value*>;

constexpr double kSqrtHalf = 0.70710678118654752440;  // 1/sqrt(2)
constexpr double kSqrtTwoOverPi = 0.79788456080286535588;

// Reads a node's arguments (falling back to schema defaults) and emits new
// nodes before it, with its source location and scope.
class Emitter {
 public:
  Emitter(Node& node, const ir::FunctionSchema& schema)
      : node_(node), schema_(schema), graph_(*node.owningGraph()) {}

  // The constant value of argument i: the node's input or the default.
  std::optional<IValue> Const(size_t i) const {
    if (i < node_.inputs().size()) return ConstantValueOf(*node_.input(i));
    if (i < schema_.arguments.size()) return schema_.arguments[i].default_value;
    return std::nullopt;
  }
  bool IsConstFalse(size_t i) const {
    std::optional<IValue> c = Const(i);
    return c && ((c->isBool() && !c->toBool()) || (c->isInt() && c->toInt() == 0));
  }
  // Optional tensor argument: 1 = statically present, 0 = None, -1 = unknown.
  int Presence(size_t i) const {
    std::optional<IValue> c = Const(i);
    if (c && c->isNone()) return 0;
    if (i < node_.inputs().size() && node_.input(i)->type()->is_tensor()) return 1;
    return -1;
  }
  std::optional<DType> InputDType(size_t i) const {
    if (i >= node_.inputs().size() || !node_.input(i)->type()->is_tensor()) return std::nullopt;
    return node_.input(i)->type()->tensor().dtype;
  }
  // Input i's sizes when every dim is known.
  std::optional<std::vector<int64_t>> InputSizes(size_t i) const {
    if (i >= node_.inputs().size() || !node_.input(i)->type()->is_tensor()) return std::nullopt;
    const ir::TensorInfo& t = node_.input(i)->type()->tensor();
    if (!t.HasCompleteSizes()) return std::nullopt;
    return t.ConcreteSizes();
  }
  std::optional<size_t> InputRank(size_t i) const {
    if (i >= node_.inputs().size() || !node_.input(i)->type()->is_tensor()) return std::nullopt;
    const auto& sizes = node_.input(i)->type()->tensor().sizes;
    if (!sizes) return std::nullopt;
    return sizes->size();
  }
  // Length of an int[] argument (constant or ListConstruct).
  std::optional<size_t> ListLength(size_t i) const {
    if (i < node_.inputs().size() &&
        node_.input(i)->node()->kind() == ir::sym::kListConstruct) {
      return node_.input(i)->node()->inputs().size();
    }
    std::optional<IValue> c = Const(i);
    if (c && c->isList()) return c->elements().size();
    return std::nullopt;
  }

  // Argument i as a value: the node's input, or the default as a constant.
  Value* Arg(size_t i) {
    if (i < node_.inputs().size()) return node_.input(i);
    return Constant(*schema_.arguments[i].default_value);
  }

  Value* Op(absl::string_view kind, std::initializer_list<Value*> inputs,
            const TypePtr& type = nullptr) {
    std::vector<Value*> in(inputs);
    Node* n = graph_.create(Symbol::FromQualString(kind), in, 1);
    Place(n);
    if (type) n->output()->setType(type);
    return n->output();
  }

  Value* Constant(const IValue& v) {
    Node* n = graph_.create(ir::sym::kConstant, 1);
    Value* out = n->output();
    switch (v.tag()) {
      case IValue::Tag::kNone: out->setType(Type::None()); break;
      case IValue::Tag::kBool:
        n->i_(ir::sym::kValue, v.toBool() ? 1 : 0);
        out->setType(Type::Bool());
        break;
      case IValue::Tag::kInt:
        n->i_(ir::sym::kValue, v.toInt());
        out->setType(Type::Int());
        break;
      case IValue::Tag::kDouble:
        n->f_(ir::sym::kValue, v.toDouble());
        out->setType(Type::Float());
        break;
      case IValue::Tag::kString:
        n->s_(ir::sym::kValue, v.toString());
        out->setType(Type::Str());
        break;
      case IValue::Tag::kTensor:
        n->t_(ir::sym::kValue, v.toTensor());
        out->setType(v.type());
        break;
      case IValue::Tag::kList: {
        std::vector<int64_t> ints;
        for (const IValue& e : v.elements()) ints.push_back(e.isInt() ? e.toInt() : 0);
        n->is_(ir::sym::kValue, std::move(ints));
        out->setType(Type::List(Type::Int()));
        break;
      }
      default:
        out->setType(v.type());
        break;
    }
    Place(n);
    return out;
  }
  Value* Int(int64_t v) { return Constant(IValue::Int(v)); }
  Value* Float(double v) { return Constant(IValue::Double(v)); }
  Value* Bool(bool v) { return Constant(IValue::Bool(v)); }
  Value* None() { return Constant(IValue::None()); }
  Value* IntList(const std::vector<int64_t>& v) { return Constant(IValue::IntList(v)); }
  Value* ListOf(std::initializer_list<Value*> elems) {
    return Op("prim::ListConstruct", elems, Type::List(Type::Int()));
  }

  // Shape for viewing a per-channel [C] tensor against an input of `rank`
  // dims with channels at dim 1: [-1, 1, ..., 1].
  Value* ChannelView(Value* param, size_t rank) {
    if (rank <= 2) return param;
    std::vector<int64_t> shape(rank - 1, 1);
    shape[0] = -1;
    return Op("aten::view", {param, IntList(shape)});
  }

 private:
  void Place(Node* n) {
    n->insertBefore(&node_);
    if (!node_.sourceLocation().empty()) n->setSourceLocation(node_.sourceLocation());
    if (!node_.scope().empty()) n->setScope(node_.scope());
  }

  Node& node_;
  const ir::FunctionSchema& schema_;
  ir::Graph& graph_;
};

bool IsOne(const std::optional<IValue>& v) {
  return v && v->isNumber() && v->toNumberAsDouble() == 1.0;
}
bool IsZero(const std::optional<IValue>& v) {
  return v && v->isNumber() && v->toNumberAsDouble() == 0.0;
}

// addmm(self, mat1, mat2, *, beta=1, alpha=1)
absl::StatusOr<Values> DecomposeAddmm(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<IValue> beta = e.Const(3);
  std::optional<IValue> alpha = e.Const(4);
  if (!beta || !beta->isNumber() || !alpha || !alpha->isNumber()) return Values{};
  Value* product = e.Op("aten::mm", {e.Arg(1), e.Arg(2)});
  if (!IsOne(alpha)) product = e.Op("aten::mul", {product, e.Arg(4)});
  if (IsZero(beta)) return Values{product};
  Value* self = e.Arg(0);
  if (!IsOne(beta)) self = e.Op("aten::mul", {self, e.Arg(3)});
  return Values{e.Op("aten::add", {self, product, e.Int(1)})};
}

// linear(input, weight, bias=None)
absl::StatusOr<Values> DecomposeLinear(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  int bias = e.Presence(2);
  if (bias < 0) return Values{};
  Value* out = e.Op("aten::matmul", {e.Arg(0), e.Op("aten::t", {e.Arg(1)})});
  if (bias == 1) out = e.Op("aten::add", {out, e.Arg(2), e.Int(1)});
  return Values{out};
}

struct Normalized {
  Value* y;     // (x - mean) * rstd
  Value* mean;  // keepdim
  Value* rstd;  // 1 / sqrt(var + eps), keepdim
};

// (x - mean) * rsqrt(var + eps) over `dims` (keepdim), the biased variance.
Normalized NormalizeWithStats(Emitter& e, Value* x, Value* dims, Value* eps) {
  Value* mean = e.Op("aten::mean", {x, dims, e.Bool(true), e.None()});
  Value* centered = e.Op("aten::sub", {x, mean, e.Int(1)});
  Value* squared = e.Op("aten::mul", {centered, centered});
  Value* var = e.Op("aten::mean", {squared, dims, e.Bool(true), e.None()});
  Value* rstd = e.Op("aten::rsqrt", {e.Op("aten::add", {var, eps, e.Int(1)})});
  return {e.Op("aten::mul", {centered, rstd}), mean, rstd};
}

Value* Normalize(Emitter& e, Value* x, Value* dims, Value* eps) {
  return NormalizeWithStats(e, x, dims, eps).y;
}

// The trailing k dims as negative indices: [-k, ..., -1].
std::vector<int64_t> TrailingDims(size_t k) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < k; ++i) dims.push_back(-static_cast<int64_t>(k - i));
  return dims;
}

// layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable)
absl::StatusOr<Values> DecomposeLayerNorm(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<size_t> k = e.ListLength(1);
  int weight = e.Presence(2);
  int bias = e.Presence(3);
  if (!k || *k == 0 || weight < 0 || bias < 0) return Values{};
  Value* y = Normalize(e, e.Arg(0), e.IntList(TrailingDims(*k)), e.Arg(4));
  if (weight) y = e.Op("aten::mul", {y, e.Arg(2)});
  if (bias) y = e.Op("aten::add", {y, e.Arg(3), e.Int(1)});
  return Values{y};
}

// native_layer_norm(input, normalized_shape, weight?, bias?, eps):
// (y, mean, rstd), the statistics keepdim.
absl::StatusOr<Values> DecomposeNativeLayerNorm(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<size_t> k = e.ListLength(1);
  int weight = e.Presence(2);
  int bias = e.Presence(3);
  if (!k || *k == 0 || weight < 0 || bias < 0) return Values{};
  Normalized r = NormalizeWithStats(e, e.Arg(0), e.IntList(TrailingDims(*k)), e.Arg(4));
  Value* y = r.y;
  if (weight) y = e.Op("aten::mul", {y, e.Arg(2)});
  if (bias) y = e.Op("aten::add", {y, e.Arg(3), e.Int(1)});
  return Values{y, r.mean, r.rstd};
}

// kiln::layer_norm(x, axis, scale?, bias?, eps) (ONNX LayerNormalization):
// (y, mean, inv_std_dev) over dims >= axis; the input rank must be known.
absl::StatusOr<Values> DecomposeOnnxLayerNorm(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<size_t> rank = e.InputRank(0);
  std::optional<IValue> axis = e.Const(1);
  int scale = e.Presence(2);
  int bias = e.Presence(3);
  if (!rank || !axis || !axis->isInt() || scale < 0 || bias < 0) return Values{};
  const int64_t r = static_cast<int64_t>(*rank);
  int64_t a = axis->toInt();
  if (a < 0) a += r;
  if (a < 0 || a >= r) return Values{};
  Normalized stats = NormalizeWithStats(e, e.Arg(0), e.IntList(TrailingDims(static_cast<size_t>(r - a))),
                                        e.Arg(4));
  Value* y = stats.y;
  if (scale) y = e.Op("aten::mul", {y, e.Arg(2)});
  if (bias) y = e.Op("aten::add", {y, e.Arg(3), e.Int(1)});
  return Values{y, stats.mean, stats.rstd};
}

// batch_norm(input, weight, bias, running_mean, running_var, training,
//            momentum, eps, cudnn_enabled), inference mode only.
absl::StatusOr<Values> DecomposeBatchNorm(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<size_t> rank = e.InputRank(0);
  int weight = e.Presence(1);
  int bias = e.Presence(2);
  if (!e.IsConstFalse(5) || e.Presence(3) != 1 || e.Presence(4) != 1 || weight < 0 ||
      bias < 0 || !rank || *rank < 2) {
    return Values{};
  }
  // Per-channel scale and shift, computed on [C] tensors so that constant
  // propagation folds them for frozen models.
  Value* scale = e.Op("aten::rsqrt", {e.Op("aten::add", {e.Arg(4), e.Arg(7), e.Int(1)})});
  if (weight) scale = e.Op("aten::mul", {scale, e.Arg(1)});
  Value* shift = e.Op("aten::neg", {e.Op("aten::mul", {e.Arg(3), scale})});
  if (bias) shift = e.Op("aten::add", {shift, e.Arg(2), e.Int(1)});
  Value* y = e.Op("aten::mul", {e.Arg(0), e.ChannelView(scale, *rank)});
  return Values{e.Op("aten::add", {y, e.ChannelView(shift, *rank), e.Int(1)})};
}

// group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled)
absl::StatusOr<Values> DecomposeGroupNorm(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<size_t> rank = e.InputRank(0);
  int weight = e.Presence(2);
  int bias = e.Presence(3);
  if (weight < 0 || bias < 0 || ((weight || bias) && (!rank || *rank < 2))) return Values{};
  Value* x = e.Arg(0);
  Value* batch = e.Op("aten::size", {x, e.Int(0)}, Type::Int());
  Value* grouped = e.Op("aten::reshape", {x, e.ListOf({batch, e.Arg(1), e.Int(-1)})});
  Value* normalized = Normalize(e, grouped, e.IntList({-1}), e.Arg(4));
  Value* y = e.Op("aten::reshape_as", {normalized, x});
  if (weight) y = e.Op("aten::mul", {y, e.ChannelView(e.Arg(2), *rank)});
  if (bias) y = e.Op("aten::add", {y, e.ChannelView(e.Arg(3), *rank), e.Int(1)});
  return Values{y};
}

// gelu(self, *, approximate='none')
absl::StatusOr<Values> DecomposeGelu(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<IValue> mode = e.Const(1);
  if (!mode || !mode->isString()) return Values{};
  Value* x = e.Arg(0);
  if (mode->toString() == "none") {
    Value* erf = e.Op("aten::erf", {e.Op("aten::mul", {x, e.Float(kSqrtHalf)})});
    Value* gate = e.Op("aten::add", {erf, e.Float(1.0), e.Int(1)});
    return Values{e.Op("aten::mul", {e.Op("aten::mul", {x, gate}), e.Float(0.5)})};
  }
  if (mode->toString() == "tanh") {
    Value* cube = e.Op("aten::mul", {e.Op("aten::mul", {x, x}), x});
    Value* inner = e.Op("aten::add", {x, e.Op("aten::mul", {cube, e.Float(0.044715)}), e.Int(1)});
    Value* t = e.Op("aten::tanh", {e.Op("aten::mul", {inner, e.Float(kSqrtTwoOverPi)})});
    Value* gate = e.Op("aten::add", {t, e.Float(1.0), e.Int(1)});
    return Values{e.Op("aten::mul", {e.Op("aten::mul", {x, gate}), e.Float(0.5)})};
  }
  return Values{};
}

absl::StatusOr<Values> DecomposeSilu(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  Value* x = e.Arg(0);
  return Values{e.Op("aten::mul", {x, e.Op("aten::sigmoid", {x})})};
}

// x * (clamp(x + 3, 0, 6) / 6): x times hardsigmoid(x). (ATen rounds
// (x * clamp) / 6 instead, at most an ulp apart; this order compiles to a
// shorter dependency chain: BM_Activation/hardswish 11.1 ms against 12.0 ms
// of CPU time.)
absl::StatusOr<Values> DecomposeHardswish(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  Value* x = e.Arg(0);
  Value* shifted = e.Op("aten::add", {x, e.Float(3.0), e.Int(1)});
  Value* clamped = e.Op("aten::clamp", {shifted, e.Float(0.0), e.Float(6.0)});
  return Values{e.Op("aten::mul", {x, e.Op("aten::div", {clamped, e.Float(6.0)})})};
}

// softmax.int / log_softmax.int(self, dim, dtype=None)
// softmax.int / log_softmax.int (dtype None) and torch 2.x's _softmax /
// _log_softmax (half_to_float False): argument 2 says the result keeps the
// input's dtype.
absl::StatusOr<Values> DecomposeSoftmax(Node& n, const ir::FunctionSchema& s, bool log) {
  Emitter e(n, s);
  std::optional<IValue> dtype = e.Const(2);
  if (!dtype || !(dtype->isNone() || (dtype->isBool() && !dtype->toBool()))) return Values{};
  Value* x = e.Arg(0);
  Value* dims = e.ListOf({e.Arg(1)});
  Value* max = e.Op("aten::amax", {x, dims, e.Bool(true)});
  Value* shifted = e.Op("aten::sub", {x, max, e.Int(1)});
  Value* exp = e.Op("aten::exp", {shifted});
  Value* sum = e.Op("aten::sum", {exp, dims, e.Bool(true), e.None()});
  if (!log) return Values{e.Op("aten::div", {exp, sum})};
  return Values{e.Op("aten::sub", {shifted, e.Op("aten::log", {sum}), e.Int(1)})};
}

absl::StatusOr<Values> DecomposeSoftmaxInt(Node& n, const ir::FunctionSchema& s) {
  return DecomposeSoftmax(n, s, /*log=*/false);
}

absl::StatusOr<Values> DecomposeLogSoftmaxInt(Node& n, const ir::FunctionSchema& s) {
  return DecomposeSoftmax(n, s, /*log=*/true);
}

// dropout-like(input, p, train): identity when train is the constant False
// or p the constant 0.
absl::StatusOr<Values> DecomposeDropout(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<IValue> p = e.Const(1);
  const bool drops_nothing = p && p->isNumber() && p->toNumberAsDouble() == 0;
  if (!e.IsConstFalse(2) && !drops_nothing) return Values{};
  return Values{n.input(0)};
}

// kiln::dropout (ONNX Dropout, opset 12+) that drops nothing: in inference
// (training_mode absent or a constant false scalar), or with a constant
// ratio of 0 (torchvision 0.14's swin exports its attention dropout so, in
// training mode). The output is the input and the mask all true, as ONNX
// defines both cases.
absl::StatusOr<Values> DecomposeOnnxDropout(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  auto constant_zero = [&](size_t i) {
    const Tensor* t = i < n.inputs().size() ? ConstantTensorOf(*n.input(i)) : nullptr;
    return t != nullptr && t->numel() == 1 && t->GetDouble(0) == 0;
  };
  if (e.Presence(2) != 0 && !constant_zero(2) && !constant_zero(1)) return Values{};
  // An unused mask (the usual case) needs no node: any value stands in for
  // an output nothing reads.
  if (!n.output(1)->hasUses()) return Values{n.input(0), n.input(0)};
  Value* mask = e.Op("aten::ones_like", {e.Arg(0), e.Int(DTypeCode(DType::kBool)), e.None(), e.None(), e.None(), e.None()});
  return Values{n.input(0), mask};
}

// kiln::arg_extreme(self, dim, keepdim, select_last_index, largest) without
// select_last_index: aten::argmax / argmin.
absl::StatusOr<Values> DecomposeArgExtreme(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<IValue> last = e.Const(3);
  std::optional<IValue> largest = e.Const(4);
  if (!last || !last->isBool() || last->toBool() || !largest || !largest->isBool()) return Values{};
  return Values{e.Op(largest->toBool() ? "aten::argmax" : "aten::argmin", {e.Arg(0), e.Arg(1), e.Arg(2)})};
}

// kiln::flat_softmax(self, axis, kind) (ONNX Softmax / LogSoftmax before
// opset 13): softmax over the input viewed as [prod(dims < axis), -1].
// Hardmax (kind 2) stays.
absl::StatusOr<Values> DecomposeFlatSoftmax(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<IValue> axis = e.Const(1);
  std::optional<IValue> kind = e.Const(2);
  std::optional<std::vector<int64_t>> sizes = e.InputSizes(0);
  if (!axis || !axis->isInt() || !kind || !kind->isInt() || kind->toInt() > 1 || !sizes) return Values{};
  const int64_t rank = static_cast<int64_t>(sizes->size());
  int64_t a = axis->toInt() < 0 ? axis->toInt() + rank : axis->toInt();
  if (a < 0 || a > rank) return Values{};
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < a ? outer : inner) *= (*sizes)[static_cast<size_t>(d)];
  Value* flat = e.Op("aten::reshape", {e.Arg(0), e.IntList({outer, inner})});
  Value* y = e.Op(kind->toInt() == 0 ? "aten::softmax" : "aten::log_softmax", {flat, e.Int(1), e.None()});
  return Values{e.Op("aten::reshape", {y, e.IntList(*sizes)})};
}

// celu(x, alpha) = where(x > 0, x, alpha * expm1(x / alpha)) for floating
// x and a constant alpha.
absl::StatusOr<Values> DecomposeCelu(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<DType> dtype = e.InputDType(0);
  std::optional<IValue> alpha = e.Const(1);
  if (!dtype || !IsFloatingPoint(*dtype) || !alpha || !alpha->isNumber()) return Values{};
  const double a = alpha->toNumberAsDouble();
  if (a == 0) return Values{};
  Value* x = e.Arg(0);
  Value* negative = e.Op("aten::mul", {e.Op("aten::expm1", {e.Op("aten::div", {x, e.Float(a)})}),
                                       e.Float(a)});
  return Values{e.Op("aten::where", {e.Op("aten::gt", {x, e.Float(0.0)}), x, negative})};
}

// copy(self, src) (torch 2.x core ATen): src cast to self's dtype and
// expanded to self's static sizes, as a fresh tensor.
absl::StatusOr<Values> DecomposeCopy(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<std::vector<int64_t>> sizes = e.InputSizes(0);
  std::optional<DType> dtype = e.InputDType(0);
  std::optional<DType> src_dtype = e.InputDType(1);
  if (!sizes || !dtype || !src_dtype) return Values{};
  Value* src = e.Arg(1);
  if (*src_dtype != *dtype) {
    src = e.Op("aten::to", {src, e.Int(DTypeCode(*dtype)), e.Bool(false), e.Bool(false),
                            e.None()});
  }
  Value* expanded = e.Op("aten::expand", {src, e.IntList(*sizes), e.Bool(false)});
  return Values{e.Op("aten::clone", {expanded, e.None()})};
}

// isinf(x) = abs(x) == inf for floating x.
absl::StatusOr<Values> DecomposeIsinf(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<DType> dtype = e.InputDType(0);
  if (!dtype || !IsFloatingPoint(*dtype)) return Values{};
  return Values{e.Op("aten::eq", {e.Op("aten::abs", {e.Arg(0)}),
                                  e.Float(std::numeric_limits<double>::infinity())})};
}

// kiln::shrink(self, bias, lambd) (ONNX Shrink) for floating inputs:
// x + bias below -lambd, x - bias above lambd, 0 between.
absl::StatusOr<Values> DecomposeShrink(Node& n, const ir::FunctionSchema& s) {
  Emitter e(n, s);
  std::optional<DType> dtype = e.InputDType(0);
  std::optional<IValue> bias = e.Const(1);
  std::optional<IValue> lambd = e.Const(2);
  if (!dtype || !IsFloatingPoint(*dtype) || !bias || !bias->isNumber() || !lambd || !lambd->isNumber()) {
    return Values{};
  }
  Value* x = e.Arg(0);
  Value* low = e.Op("aten::lt", {x, e.Float(-lambd->toNumberAsDouble())});
  Value* high = e.Op("aten::gt", {x, e.Arg(2)});
  Value* zero = e.Op("aten::mul", {x, e.Float(0.0)});
  Value* above = e.Op("aten::where", {high, e.Op("aten::sub", {x, e.Arg(1), e.Int(1)}), zero});
  return Values{e.Op("aten::where", {low, e.Op("aten::add", {x, e.Arg(1), e.Int(1)}), above})};
}

// The op rows' DECOMP column (ops/all.def). A row that also names a bespoke
// lowering or a library extern keeps its decomposition for the `decompose`
// pass, but the compile pipeline lowers it the bespoke way (the row's NOTE
// names the benchmark that shows why).
bool HasExtern(ops::row::None) { return false; }
bool HasExtern(const ops::ExternForm& e) { return e.library != ops::Library::kNone; }

struct TableBuilder {
  DecompositionTable* table;
  void Add(const char*, ops::row::None, bool) {}
  void Add(const char* name, DecompositionFn fn, bool bespoke) {
    table->Add(name, std::move(fn), bespoke);
  }
};

DecompositionTable* BuildTable() {
  using namespace ::kiln::ops::row;  // NOLINT: the rows' vocabulary
  auto* t = new DecompositionTable();
  TableBuilder b{t};
  // A layer can see whether another layer's column is empty from its
  // spelling, without compiling it: LOWER is lowering's expression.
#define KILN_OP(name, schema, traits, kernel, shape, decomp, lower, ext, note) \
  b.Add(name, decomp, absl::string_view(#lower) != "none" || HasExtern(ext));
#include "ops/all.def"
  return t;
}

// True when v is defined by a node strictly between `first_new`'s
// predecessor range [after, end).
bool DefinedInRange(const Value* v, const Node* after, const Node* end) {
  for (const Node* n = after->next(); n != end; n = n->next()) {
    if (v->node() == n) return true;
  }
  return false;
}

}  // namespace

void DecompositionTable::Add(absl::string_view qualified_name, DecompositionFn fn, bool bespoke) {
  by_name_[std::string(qualified_name)] = Entry{std::move(fn), bespoke};
  absl::string_view base = qualified_name.substr(0, qualified_name.find('.'));
  kinds_.insert(Symbol::FromQualString(base));
}

const DecompositionTable::Entry* DecompositionTable::Find(absl::string_view qualified_name) const {
  auto it = by_name_.find(qualified_name);
  return it == by_name_.end() ? nullptr : &it->second;
}

std::vector<std::string> DecompositionTable::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, fn] : by_name_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

const DecompositionTable& Decompositions() {
  static const DecompositionTable* table = BuildTable();
  return *table;
}

namespace {

absl::StatusOr<bool> Run(ir::Graph& graph, PassStatistics& stats, bool skip_bespoke) {
  const DecompositionTable& table = Decompositions();
  const ir::OpRegistry& ops = ir::BuiltinOps();
  bool changed = false;
  int64_t decomposed = 0;
  // Each decomposition makes a bounded number of simpler nodes.
  const int64_t budget = 64 * static_cast<int64_t>(graph.numNodes()) + 1024;
  // Iterative over blocks: nesting depth cannot exhaust the stack.
  std::vector<ir::Block*> blocks{graph.block()};
  while (!blocks.empty()) {
    ir::Block* b = blocks.back();
    blocks.pop_back();
    for (Node* n = b->front(); n != b->return_node();) {
      Node* next = n->next();
      for (ir::Block* sub : n->blocks()) blocks.push_back(sub);
      if (!table.HasKind(n->kind())) {
        n = next;
        continue;
      }
      const ir::Operator* op = ops.Match(*n);
      const DecompositionTable::Entry* entry = op ? table.Find(op->schema.QualifiedName()) : nullptr;
      if (!entry || (skip_bespoke && entry->bespoke)) {
        n = next;
        continue;
      }
      Node* before = n->prev();
      const Symbol kind = n->kind();
      ASSIGN_OR_RETURN(Values outs, entry->fn(*n, op->schema));
      if (outs.empty()) {
        n = next;
        continue;
      }
      if (outs.size() != n->outputs().size()) {
        return absl::InternalError(absl::StrCat("decomposition of ", NodeLabel(*n), " returned ",
                                                outs.size(), " values for ",
                                                n->outputs().size(), " outputs"));
      }
      for (size_t i = 0; i < outs.size(); ++i) {
        Value* old = n->output(i);
        // A fresh result takes over the type and name; an existing value
        // (dropout's input) keeps its own.
        if (DefinedInRange(outs[i], before, n)) outs[i]->copyMetadata(old);
        old->replaceAllUsesWith(outs[i]);
      }
      n->destroy();
      changed = true;
      // The new nodes may have decompositions of their own (flat_softmax
      // becomes softmax.int): visit them next. A decomposition that kept
      // re-creating its own op would not end; the budget says so.
      if (++decomposed > budget) {
        return absl::InternalError(absl::StrCat(
            "decompositions did not converge after ", decomposed, " rewrites (last: ",
            std::string(kind.qualString()), ")"));
      }
      n = before->next();
    }
  }
  if (decomposed > 0) stats.Add("nodes_decomposed", decomposed);
  return changed;
}

}  // namespace

absl::StatusOr<bool> Decompose(ir::Graph& graph, PassStatistics& stats) {
  return Run(graph, stats, /*skip_bespoke=*/false);
}

absl::StatusOr<bool> DecomposeForLowering(ir::Graph& graph, PassStatistics& stats) {
  return Run(graph, stats, /*skip_bespoke=*/true);
}

absl::StatusOr<bool> PrepareForLowering(ir::Graph& graph, PassStatistics& stats) {
  ASSIGN_OR_RETURN(bool typed, PropagateShapes(graph, stats));
  ASSIGN_OR_RETURN(bool decomposed, DecomposeForLowering(graph, stats));
  if (!decomposed) return typed;
  // The new nodes' types, and what decomposition exposed.
  ASSIGN_OR_RETURN(bool retyped, PropagateShapes(graph, stats));
  (void)retyped;
  return true;
}

absl::Status RegisterDecomposePass(PassRegistry& registry) {
  RETURN_IF_ERROR(registry.RegisterFunction(
      "decompose", {}, "rewrites composite ops (linear, layer_norm, gelu, ...) into simpler ones",
      Decompose));
  return registry.RegisterFunction(
      "decompose_for_lowering", {},
      "the decompositions the compile pipeline runs: those of ops without a bespoke lowering "
      "or library extern",
      DecomposeForLowering);
}

}  // namespace kiln::passes
