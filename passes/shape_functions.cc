#include "passes/shape_functions.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "passes/type_promotion.h"
#include "support/status.h"

namespace kiln::passes {
namespace {

using ir::IValue;
using ir::Node;
using ir::TensorInfo;
using ir::Type;
using ir::TypeKind;
using ir::TypePtr;
using ir::Value;
using Dim = std::optional<int64_t>;
using Dims = std::vector<Dim>;
using Types = std::vector<TypePtr>;

TypePtr TensorOf(std::optional<DType> dtype, SymbolicSizes sizes, std::optional<ir::Device> device) {
  TensorInfo info;
  info.dtype = dtype;
  info.sizes = std::move(sizes);
  info.device = std::move(device);
  return Type::TensorWith(std::move(info));
}

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

// The arguments of one shape-function call: node inputs, falling back to
// schema defaults for trailing arguments the node leaves out.
class Args {
 public:
  Args(const Node& node, const ir::FunctionSchema& schema, absl::Span<const TypePtr> types,
       absl::Span<const IValue* const> constants)
      : node_(node), schema_(schema), types_(types), constants_(constants) {}

  const Node& node() const { return node_; }
  size_t size() const { return types_.size(); }

  const Type* TypeAt(size_t i) const { return i < types_.size() ? types_[i].get() : nullptr; }
  const TypePtr* TypePtrAt(size_t i) const { return i < types_.size() ? &types_[i] : nullptr; }
  // Null unless input i is a tensor.
  const TensorInfo* Tensor(size_t i) const {
    const Type* t = TypeAt(i);
    return t && t->is_tensor() ? &t->tensor() : nullptr;
  }
  SymbolicSizes Sizes(size_t i) const {
    const TensorInfo* t = Tensor(i);
    return t ? t->sizes : SymbolicSizes();
  }
  std::optional<DType> DTypeOf(size_t i) const {
    const TensorInfo* t = Tensor(i);
    return t ? t->dtype : std::nullopt;
  }
  std::optional<ir::Device> DeviceOf(size_t i) const {
    const TensorInfo* t = Tensor(i);
    return t ? t->device : std::nullopt;
  }

  // The constant for argument i (a node constant or the schema default).
  const IValue* Const(size_t i) const {
    if (i < constants_.size()) return constants_[i];
    if (i < types_.size()) return nullptr;
    if (i < schema_.arguments.size() && schema_.arguments[i].default_value) {
      return &*schema_.arguments[i].default_value;
    }
    return nullptr;
  }
  Dim Int(size_t i) const {
    if (const IValue* c = Const(i)) return c->isInt() ? Dim(c->toInt()) : std::nullopt;
    // Not a constant, but perhaps aten::size of a known dim.
    if (i < node_.inputs().size()) return KnownInt(node_.input(i));
    return std::nullopt;
  }
  std::optional<bool> Bool(size_t i) const {
    const IValue* c = Const(i);
    if (c && c->isBool()) return c->toBool();
    if (c && c->isInt()) return c->toInt() != 0;
    return std::nullopt;
  }
  std::optional<double> Double(size_t i) const {
    const IValue* c = Const(i);
    if (c && c->isNumber()) return c->toNumberAsDouble();
    return std::nullopt;
  }
  const std::string* Str(size_t i) const {
    const IValue* c = Const(i);
    return c && c->isString() ? &c->toString() : nullptr;
  }
  bool IsNone(size_t i) const {
    const IValue* c = Const(i);
    if (c && c->isNone()) return true;
    const Type* t = TypeAt(i);
    return t && t->kind() == TypeKind::kNone;
  }
  // A tensor argument that is statically present (not None-typed).
  bool IsDefinedTensor(size_t i) const { return Tensor(i) != nullptr; }

  // An int[] argument whose length is known, elements possibly unknown:
  // a constant list, a single int for a fixed-size list (`int[2] stride=1`),
  // or a prim::ListConstruct.
  SymbolicSizes IntListElements(size_t i) const {
    if (i < node_.inputs().size()) {
      const Node* producer = node_.input(i)->node();
      if (producer->kind() == ir::sym::kListConstruct) {
        Dims out;
        out.reserve(producer->inputs().size());
        for (const Value* e : producer->inputs()) out.push_back(KnownInt(e));
        return out;
      }
    }
    const IValue* c = Const(i);
    if (!c) return std::nullopt;
    if (c->isInt()) {
      size_t n = 1;
      if (i < schema_.arguments.size() && schema_.arguments[i].fixed_list_size) {
        n = static_cast<size_t>(*schema_.arguments[i].fixed_list_size);
      }
      return Dims(n, c->toInt());
    }
    if (!c->isList()) return std::nullopt;
    Dims out;
    for (const IValue& e : c->elements()) {
      if (!e.isInt()) return std::nullopt;
      out.push_back(e.toInt());
    }
    return out;
  }
  // All elements known.
  std::optional<std::vector<int64_t>> IntList(size_t i) const {
    SymbolicSizes e = IntListElements(i);
    if (!e) return std::nullopt;
    std::vector<int64_t> out;
    out.reserve(e->size());
    for (const Dim& d : *e) {
      if (!d) return std::nullopt;
      out.push_back(*d);
    }
    return out;
  }
  // The types of a Tensor[] argument built by prim::ListConstruct.
  std::optional<std::vector<const Type*>> ListElementTypes(size_t i) const {
    if (i >= node_.inputs().size()) return std::nullopt;
    const Node* producer = node_.input(i)->node();
    if (producer->kind() != ir::sym::kListConstruct) return std::nullopt;
    std::vector<const Type*> out;
    for (const Value* e : producer->inputs()) out.push_back(e->type().get());
    return out;
  }

  // The device shared by the tensor inputs whose device is known; 0-dim
  // tensors do not count (a CPU scalar tensor may join a CUDA op).
  std::optional<ir::Device> CommonDevice() const {
    std::optional<ir::Device> found;
    for (size_t i = 0; i < types_.size(); ++i) {
      const TensorInfo* t = Tensor(i);
      if (!t || !t->device) continue;
      if (t->sizes && t->sizes->empty()) continue;
      if (found && *found != *t->device) return std::nullopt;
      found = t->device;
    }
    return found;
  }

  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(NodeLabel(node_), ": ", message));
  }

 private:
  const Node& node_;
  const ir::FunctionSchema& schema_;
  absl::Span<const TypePtr> types_;
  absl::Span<const IValue* const> constants_;
};

using ShapeImpl = std::function<absl::StatusOr<Types>(const Args&)>;

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

std::optional<int64_t> Product(const Dims& dims) {
  int64_t p = 1;
  for (const Dim& d : dims) {
    if (!d) return std::nullopt;
    p *= *d;
  }
  return p;
}

// ------------------------------------------------------------ elementwise

enum class DTypeRule : uint8_t {
  kSame,        // the input's dtype
  kIntToFloat,  // integral and bool inputs give the default float dtype
  kBool,        // always bool
  kIntToLong,   // integral and bool inputs give int64 (sum, prod)
  kLong,        // always int64 (argmax)
};

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

ShapeImpl Unary(DTypeRule rule) {
  return [rule](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types{Type::Tensor()};
    return Types{TensorOf(ApplyRule(rule, t->dtype), t->sizes, t->device)};
  };
}

// softmax(self, dim, dtype=None): a constant dtype overrides.
absl::StatusOr<Types> SoftmaxLike(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<DType> dtype = t->dtype;
  if (!a.IsNone(2)) {
    Dim code = a.Int(2);
    dtype = code ? DTypeFromCode(*code) : std::nullopt;
  }
  return Types{TensorOf(dtype, t->sizes, t->device)};
}

enum class BinaryRule : uint8_t {
  kPromote,     // result_type
  kTrueDivide,  // result_type, integral results become the default float
  kDivMode,     // div with rounding_mode (input 2): None -> true divide
  kBool,        // comparisons and logical ops
  kInplace,     // self's type; the other operand must broadcast into it
};

absl::StatusOr<SymbolicSizes> BroadcastOrError(const Args& a, const SymbolicSizes& x,
                                               const SymbolicSizes& y) {
  absl::StatusOr<SymbolicSizes> r = BroadcastSizes(x, y);
  if (!r.ok()) return a.Error(r.status().message());
  return r;
}

// Sizes an operand contributes to broadcasting: a scalar is 0-dim.
const SymbolicSizes& OperandSizes(const Args& a, size_t i) {
  static const SymbolicSizes* const kScalar = new SymbolicSizes(Dims());
  const Type* t = a.TypeAt(i);
  if (t && t->is_tensor()) return t->tensor().sizes;
  return *kScalar;
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

ShapeImpl Binary(BinaryRule rule) {
  return [rule](const Args& a) -> absl::StatusOr<Types> {
    ASSIGN_OR_RETURN(SymbolicSizes sizes,
                     BroadcastOrError(a, OperandSizes(a, 0), OperandSizes(a, 1)));
    if (rule == BinaryRule::kInplace) {
      const TensorInfo* self = a.Tensor(0);
      if (!self) return Types{Type::Tensor()};
      if (sizes && self->sizes && sizes->size() != self->sizes->size()) {
        return a.Error(absl::StrCat("in-place result of sizes ", SizesToString(sizes),
                                    " does not fit self of sizes ", SizesToString(self->sizes)));
      }
      if (sizes && self->sizes) {
        for (size_t i = 0; i < sizes->size(); ++i) {
          const Dim& s = (*self->sizes)[i];
          const Dim& b = (*sizes)[i];
          if (s && b && *s != *b) {
            return a.Error(absl::StrCat("in-place result of sizes ", SizesToString(sizes),
                                        " does not fit self of sizes ",
                                        SizesToString(self->sizes)));
          }
        }
      }
      return Types{TensorOf(self->dtype, self->sizes, self->device)};
    }
    std::optional<DType> dtype;
    bool true_divide = rule == BinaryRule::kTrueDivide;
    if (rule == BinaryRule::kDivMode) {
      if (a.IsNone(2)) {
        true_divide = true;
      } else if (!a.Str(2)) {
        return Types{TensorOf(std::nullopt, sizes, a.CommonDevice())};
      }
    }
    if (rule == BinaryRule::kBool) {
      dtype = DType::kBool;
    } else {
      dtype = PromoteInputs(a, {0, 1});
      if (true_divide) dtype = ApplyRule(DTypeRule::kIntToFloat, dtype);
    }
    return Types{TensorOf(dtype, sizes, a.CommonDevice())};
  };
}

// where.self(condition, self, other).
absl::StatusOr<Types> Where(const Args& a) {
  ASSIGN_OR_RETURN(SymbolicSizes s, BroadcastOrError(a, OperandSizes(a, 0), OperandSizes(a, 1)));
  ASSIGN_OR_RETURN(s, BroadcastOrError(a, s, OperandSizes(a, 2)));
  return Types{TensorOf(PromoteInputs(a, {1, 2}), s, a.CommonDevice())};
}

// Sizes of input 0, dtype of input 1 (type_as, to.other).
absl::StatusOr<Types> SizesOf0DTypeOf1(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  return Types{TensorOf(a.DTypeOf(1), t->sizes, t->device)};
}

// to.dtype(self, ScalarType dtype, ...).
absl::StatusOr<Types> ToDType(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim code = a.Int(1);
  return Types{TensorOf(code ? DTypeFromCode(*code) : std::nullopt, t->sizes, t->device)};
}

// ------------------------------------------------------------ reductions

struct ReduceSpec {
  std::optional<size_t> dims_arg;     // int[]? or int; none: full reduction
  bool dims_is_single_int = false;    // `int dim` rather than `int[] dim`
  std::optional<size_t> keepdim_arg;
  std::optional<size_t> dtype_arg;
  DTypeRule rule = DTypeRule::kSame;
  bool with_indices = false;          // (values, indices) like max.dim
};

ShapeImpl Reduce(ReduceSpec spec) {
  return [spec](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* t = a.Tensor(0);
    if (!t) return Types(spec.with_indices ? 2 : 1, Type::Tensor());
    std::optional<DType> dtype = ApplyRule(spec.rule, t->dtype);
    if (spec.dtype_arg && !a.IsNone(*spec.dtype_arg)) {
      Dim code = a.Int(*spec.dtype_arg);
      dtype = code ? DTypeFromCode(*code) : std::nullopt;
    }
    std::optional<bool> keepdim = false;
    if (spec.keepdim_arg) keepdim = a.Bool(*spec.keepdim_arg);

    // Which dims: nullopt list = all dims.
    bool all_dims = !spec.dims_arg;
    std::optional<std::vector<int64_t>> dims;
    bool dims_known = true;
    if (spec.dims_arg) {
      if (a.IsNone(*spec.dims_arg)) {
        all_dims = true;
      } else if (spec.dims_is_single_int) {
        Dim d = a.Int(*spec.dims_arg);
        if (d) dims = std::vector<int64_t>{*d};
        dims_known = d.has_value();
      } else {
        dims = a.IntList(*spec.dims_arg);
        dims_known = dims.has_value();
        if (dims && dims->empty()) all_dims = true;  // sum(dim=[]) reduces everything
      }
    }
    SymbolicSizes out;
    if (t->sizes && keepdim) {
      const Dims& in = *t->sizes;
      if (all_dims) {
        out = *keepdim ? Dims(in.size(), Dim(1)) : Dims();
      } else if (dims_known) {
        std::vector<bool> reduced(in.size(), false);
        for (int64_t d : *dims) {
          ASSIGN_OR_RETURN(size_t w, WrapDim(a, d, in.size()));
          if (w < reduced.size()) reduced[w] = true;
        }
        Dims o;
        for (size_t i = 0; i < in.size(); ++i) {
          if (!reduced[i]) {
            o.push_back(in[i]);
          } else if (*keepdim) {
            o.push_back(1);
          }
        }
        out = std::move(o);
      } else if (*keepdim) {
        out = Dims(in.size(), std::nullopt);
      }
    }
    Types result{TensorOf(dtype, out, t->device)};
    if (spec.with_indices) result.push_back(TensorOf(DType::kInt64, out, t->device));
    return result;
  };
}

// ------------------------------------------------------------ linear algebra

absl::Status CheckDimsEqual(const Args& a, Dim x, Dim y, absl::string_view what) {
  if (x && y && *x != *y) return a.Error(absl::StrCat(what, ": ", *x, " vs ", *y));
  return absl::OkStatus();
}

// linear(input [*, in], weight [out, in] or [in], bias? [out]).
absl::StatusOr<Types> Linear(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* w = a.Tensor(1);
  if (!x) return Types{Type::Tensor()};
  std::optional<DType> dtype = x->dtype ? x->dtype : (w ? w->dtype : std::nullopt);
  if (!x->sizes || !w || !w->sizes) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  const Dims& xs = *x->sizes;
  const Dims& ws = *w->sizes;
  if (xs.empty()) return a.Error("linear input must have at least one dimension");
  if (ws.size() != 1 && ws.size() != 2) {
    return a.Error(absl::StrCat("linear weight must be 1-D or 2-D, got sizes ",
                                SizesToString(w->sizes)));
  }
  RETURN_IF_ERROR(CheckDimsEqual(a, xs.back(), ws.back(),
                                 "input features do not match the weight's in-features"));
  Dims out(xs.begin(), xs.end() - 1);
  if (ws.size() == 2) out.push_back(ws[0]);
  if (const TensorInfo* b = a.Tensor(2); b && b->sizes && ws.size() == 2 && !b->sizes->empty()) {
    RETURN_IF_ERROR(CheckDimsEqual(a, b->sizes->back(), ws[0],
                                   "bias size does not match the weight's out-features"));
  }
  return Types{TensorOf(dtype, out, a.CommonDevice())};
}

// mm(a [n, m], b [m, p]) -> [n, p].
absl::StatusOr<Types> Mm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* y = a.Tensor(1);
  if (!x || !y) return Types{Type::Tensor()};
  std::optional<DType> dtype = PromoteInputs(a, {0, 1});
  if (!x->sizes || !y->sizes) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  if (x->sizes->size() != 2 || y->sizes->size() != 2) {
    return a.Error(absl::StrCat("mm expects 2-D operands, got ", SizesToString(x->sizes), " and ",
                                SizesToString(y->sizes)));
  }
  RETURN_IF_ERROR(CheckDimsEqual(a, (*x->sizes)[1], (*y->sizes)[0], "inner dimensions differ"));
  return Types{TensorOf(dtype, Dims{(*x->sizes)[0], (*y->sizes)[1]}, a.CommonDevice())};
}

// bmm(a [b, n, m], b [b, m, p]) -> [b, n, p].
absl::StatusOr<Types> Bmm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* y = a.Tensor(1);
  if (!x || !y) return Types{Type::Tensor()};
  std::optional<DType> dtype = PromoteInputs(a, {0, 1});
  if (!x->sizes || !y->sizes) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  if (x->sizes->size() != 3 || y->sizes->size() != 3) {
    return a.Error(absl::StrCat("bmm expects 3-D operands, got ", SizesToString(x->sizes),
                                " and ", SizesToString(y->sizes)));
  }
  const Dims& xs = *x->sizes;
  const Dims& ys = *y->sizes;
  RETURN_IF_ERROR(CheckDimsEqual(a, xs[0], ys[0], "batch sizes differ"));
  RETURN_IF_ERROR(CheckDimsEqual(a, xs[2], ys[1], "inner dimensions differ"));
  return Types{TensorOf(dtype, Dims{xs[0] ? xs[0] : ys[0], xs[1], ys[2]}, a.CommonDevice())};
}

// matmul with NumPy semantics: 1-D operands gain and then lose a dim, batch
// dims broadcast.
absl::StatusOr<Types> Matmul(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* y = a.Tensor(1);
  if (!x || !y) return Types{Type::Tensor()};
  std::optional<DType> dtype = PromoteInputs(a, {0, 1});
  if (!x->sizes || !y->sizes) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  Dims xs = *x->sizes;
  Dims ys = *y->sizes;
  if (xs.empty() || ys.empty()) return a.Error("matmul operands must not be 0-dim");
  bool x_vec = xs.size() == 1;
  bool y_vec = ys.size() == 1;
  if (x_vec) xs.insert(xs.begin(), Dim(1));
  if (y_vec) ys.push_back(Dim(1));
  RETURN_IF_ERROR(CheckDimsEqual(a, xs.back(), ys[ys.size() - 2], "inner dimensions differ"));
  SymbolicSizes xb = Dims(xs.begin(), xs.end() - 2);
  SymbolicSizes yb = Dims(ys.begin(), ys.end() - 2);
  ASSIGN_OR_RETURN(SymbolicSizes batch, BroadcastOrError(a, xb, yb));
  Dims out = *batch;
  if (!x_vec) out.push_back(xs[xs.size() - 2]);
  if (!y_vec) out.push_back(ys.back());
  return Types{TensorOf(dtype, out, a.CommonDevice())};
}

// addmm(self, mat1, mat2, *, beta, alpha): mm's shape, self must broadcast.
absl::StatusOr<Types> Addmm(const Args& a) {
  const TensorInfo* x = a.Tensor(1);
  const TensorInfo* y = a.Tensor(2);
  if (!x || !y) return Types{Type::Tensor()};
  std::optional<DType> dtype = PromoteInputs(a, {0, 1, 2});
  if (!x->sizes || !y->sizes) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  if (x->sizes->size() != 2 || y->sizes->size() != 2) {
    return a.Error("addmm expects 2-D matrices");
  }
  RETURN_IF_ERROR(CheckDimsEqual(a, (*x->sizes)[1], (*y->sizes)[0], "inner dimensions differ"));
  SymbolicSizes out = Dims{(*x->sizes)[0], (*y->sizes)[1]};
  ASSIGN_OR_RETURN(SymbolicSizes b, BroadcastOrError(a, a.Sizes(0), out));
  if (b && b->size() != 2) return a.Error("addmm input does not broadcast to the product");
  return Types{TensorOf(dtype, out, a.CommonDevice())};
}

// ------------------------------------------------------------ shape ops

absl::StatusOr<Types> TransposeLast2(const Args& a) {  // aten::t
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (t->sizes->size() > 2) {
    return a.Error(absl::StrCat("t expects a tensor of at most 2 dims, got ",
                                SizesToString(t->sizes)));
  }
  Dims out(t->sizes->rbegin(), t->sizes->rend());
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Transpose(const Args& a) {  // transpose.int(self, dim0, dim1)
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim d0 = a.Int(1);
  Dim d1 = a.Int(2);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  if (!d0 || !d1) return Types{TensorOf(t->dtype, Dims(out.size(), std::nullopt), t->device)};
  ASSIGN_OR_RETURN(size_t i, WrapDim(a, *d0, out.size()));
  ASSIGN_OR_RETURN(size_t j, WrapDim(a, *d1, out.size()));
  if (!out.empty()) std::swap(out[i], out[j]);
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Permute(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> perm = a.IntList(1);
  if (!t->sizes || !perm) return Types{TensorOf(t->dtype, t->sizes ? SymbolicSizes(Dims(t->sizes->size())) : std::nullopt, t->device)};
  if (perm->size() != t->sizes->size()) {
    return a.Error(absl::StrCat("permute of ", perm->size(), " dims on a tensor of rank ",
                                t->sizes->size()));
  }
  Dims out;
  for (int64_t p : *perm) {
    ASSIGN_OR_RETURN(size_t i, WrapDim(a, p, t->sizes->size()));
    out.push_back((*t->sizes)[i]);
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// flatten.using_ints(self, start_dim=0, end_dim=-1).
absl::StatusOr<Types> Flatten(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim start = a.Int(1);
  Dim end = a.Int(2);
  if (!t->sizes || !start || !end) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  if (in.empty()) return Types{TensorOf(t->dtype, Dims{1}, t->device)};
  ASSIGN_OR_RETURN(size_t s, WrapDim(a, *start, in.size()));
  ASSIGN_OR_RETURN(size_t e, WrapDim(a, *end, in.size()));
  if (s > e) return a.Error("flatten: start_dim comes after end_dim");
  Dims out(in.begin(), in.begin() + s);
  out.push_back(Product(Dims(in.begin() + s, in.begin() + e + 1)));
  out.insert(out.end(), in.begin() + e + 1, in.end());
  return Types{TensorOf(t->dtype, out, t->device)};
}

// view/reshape(self, size): at most one -1, inferred from the element count.
absl::StatusOr<Types> View(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes requested = a.IntListElements(1);
  if (!requested) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *requested;
  std::optional<size_t> infer;
  int64_t known_product = 1;
  bool all_known = true;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i]) {
      all_known = false;
      continue;
    }
    if (*out[i] == -1) {
      if (infer) return a.Error("only one dimension can be inferred (-1)");
      infer = i;
      continue;
    }
    if (*out[i] < 0) return a.Error(absl::StrCat("invalid size ", *out[i]));
    known_product *= *out[i];
  }
  std::optional<int64_t> maybe_numel = t->sizes ? Product(*t->sizes) : std::nullopt;
  const bool numel_known = maybe_numel.has_value();
  const int64_t numel = maybe_numel.value_or(0);
  if (infer) {
    out[*infer] = std::nullopt;
    if (all_known && numel_known) {
      if (known_product == 0 || numel % known_product != 0) {
        return a.Error(absl::StrCat("shape ", SizesToString(requested), " is invalid for input of ",
                                    numel, " elements"));
      }
      out[*infer] = numel / known_product;
    }
  } else if (all_known && numel_known && numel != known_product) {
    return a.Error(absl::StrCat("shape ", SizesToString(requested), " is invalid for input of ",
                                numel, " elements"));
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

// view_as / reshape_as / expand_as: input 1's sizes.
absl::StatusOr<Types> SizesOf1(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  return Types{TensorOf(t->dtype, a.Sizes(1), t->device)};
}

// expand(self, size, *, implicit): -1 keeps the input's dim.
absl::StatusOr<Types> Expand(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  SymbolicSizes requested = a.IntListElements(1);
  if (!requested) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *requested;
  if (t->sizes && t->sizes->size() > out.size()) {
    return a.Error("expand: the number of sizes is smaller than the tensor's rank");
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] && *out[i] == -1) {
      size_t lead = out.size() - (t->sizes ? t->sizes->size() : 0);
      out[i] = (t->sizes && i >= lead) ? (*t->sizes)[i - lead] : std::nullopt;
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Unsqueeze(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim d = a.Int(1);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  Dims out = *t->sizes;
  if (!d) return Types{TensorOf(t->dtype, Dims(out.size() + 1), t->device)};
  int64_t r = static_cast<int64_t>(out.size()) + 1;
  if (*d < -r || *d >= r) return a.Error(absl::StrCat("unsqueeze dim ", *d, " is out of range"));
  size_t at = static_cast<size_t>(*d < 0 ? *d + r : *d);
  out.insert(out.begin() + at, Dim(1));
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Squeeze(const Args& a) {  // squeeze(self) and squeeze.dim
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  const Dims& in = *t->sizes;
  Dims out;
  if (a.size() >= 2) {
    Dim d = a.Int(1);
    if (!d) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, *d, in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      if (i == w) {
        if (!in[i]) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
        if (*in[i] == 1) continue;
      }
      out.push_back(in[i]);
    }
  } else {
    for (const Dim& d : in) {
      if (!d) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
      if (*d != 1) out.push_back(d);
    }
  }
  return Types{TensorOf(t->dtype, out, t->device)};
}

absl::StatusOr<Types> Select(const Args& a) {  // select.int(self, dim, index)
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  Dim d = a.Int(1);
  if (!t->sizes) return Types{TensorOf(t->dtype, std::nullopt, t->device)};
  if (t->sizes->empty()) return a.Error("select on a 0-dim tensor");
  if (!d) return Types{TensorOf(t->dtype, Dims(t->sizes->size() - 1), t->device)};
  ASSIGN_OR_RETURN(size_t w, WrapDim(a, *d, t->sizes->size()));
  Dims out = *t->sizes;
  out.erase(out.begin() + w);
  return Types{TensorOf(t->dtype, out, t->device)};
}

// cat(tensors, dim=0): other dims must agree; legacy 1-D empty tensors are
// skipped, as PyTorch does.
absl::StatusOr<Types> Cat(const Args& a) {
  std::optional<std::vector<const Type*>> elems = a.ListElementTypes(0);
  if (!elems || elems->empty()) return Types{Type::Tensor()};
  Dim dim = a.Int(1);
  std::vector<PromotionOperand> ops;
  std::optional<Dims> out;
  bool rank_unknown = false;
  std::optional<ir::Device> device;
  bool device_conflict = false;
  for (const Type* t : *elems) {
    if (!t->is_tensor()) return Types{Type::Tensor()};
    const TensorInfo& info = t->tensor();
    PromotionOperand op;
    op.dtype = info.dtype;
    op.rank = 1;  // cat promotes all inputs as dimensioned tensors
    ops.push_back(op);
    if (info.device) {
      if (device && *device != *info.device) device_conflict = true;
      device = info.device;
    }
    if (!info.sizes) {
      rank_unknown = true;
      continue;
    }
    const Dims& s = *info.sizes;
    if (s.size() == 1 && s[0] && *s[0] == 0) continue;  // legacy empty
    if (!out) {
      out = s;
      continue;
    }
    if (s.size() != out->size()) {
      return a.Error(absl::StrCat("cat of tensors with different ranks: ",
                                  SizesToString(*out), " and ", SizesToString(s)));
    }
    if (!dim) {
      for (size_t i = 0; i < s.size(); ++i) (*out)[i] = std::nullopt;
      continue;
    }
    ASSIGN_OR_RETURN(size_t w, WrapDim(a, *dim, s.size()));
    for (size_t i = 0; i < s.size(); ++i) {
      Dim& o = (*out)[i];
      if (i == w) {
        o = (o && s[i]) ? Dim(*o + *s[i]) : std::nullopt;
      } else if (o && s[i] && *o != *s[i]) {
        return a.Error(absl::StrCat("cat along dim ", *dim, ": sizes ", SizesToString(*out),
                                    " and ", SizesToString(s), " differ at dim ", i));
      } else if (!o) {
        o = s[i];
      }
    }
  }
  std::optional<DType> dtype = ResultType(ops);
  if (device_conflict) device.reset();
  if (rank_unknown || !out) return Types{TensorOf(dtype, std::nullopt, device)};
  if (!dim) return Types{TensorOf(dtype, *out, device)};
  // Only the first tensor was seen along `dim` when there is just one.
  return Types{TensorOf(dtype, *out, device)};
}

// stack(tensors, dim=0): all sizes equal; a new dim of length n.
absl::StatusOr<Types> Stack(const Args& a) {
  std::optional<std::vector<const Type*>> elems = a.ListElementTypes(0);
  if (!elems || elems->empty()) return Types{Type::Tensor()};
  std::vector<PromotionOperand> ops;
  SymbolicSizes common;
  bool first = true;
  for (const Type* t : *elems) {
    if (!t->is_tensor()) return Types{Type::Tensor()};
    PromotionOperand op;
    op.dtype = t->tensor().dtype;
    op.rank = 1;
    ops.push_back(op);
    const SymbolicSizes& s = t->tensor().sizes;
    if (first) {
      common = s;
      first = false;
      continue;
    }
    if (!common || !s) {
      common.reset();
      continue;
    }
    if (s->size() != common->size()) return a.Error("stack of tensors with different ranks");
    for (size_t i = 0; i < s->size(); ++i) {
      Dim& c = (*common)[i];
      if (c && (*s)[i] && *c != *(*s)[i]) {
        return a.Error(absl::StrCat("stack expects equal sizes, got ", SizesToString(common),
                                    " and ", SizesToString(s)));
      }
      if (!c) c = (*s)[i];
    }
  }
  std::optional<DType> dtype = ResultType(ops);
  Dim dim = a.Int(1);
  if (!common || !dim) return Types{TensorOf(dtype, std::nullopt, std::nullopt)};
  int64_t r = static_cast<int64_t>(common->size()) + 1;
  if (*dim < -r || *dim >= r) return a.Error("stack dim is out of range");
  size_t at = static_cast<size_t>(*dim < 0 ? *dim + r : *dim);
  Dims out = *common;
  out.insert(out.begin() + at, Dim(static_cast<int64_t>(elems->size())));
  return Types{TensorOf(dtype, out, std::nullopt)};
}

// ------------------------------------------------------------ conv / pool

int64_t FloorDiv(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

// Argument positions of a convolution overload.
struct ConvSpec {
  size_t stride, padding, dilation, groups;
  std::optional<size_t> transposed_arg;  // _convolution / convolution
  bool transposed = false;               // conv_transposeNd
  std::optional<size_t> output_padding;
  bool string_padding = false;  // conv2d.padding: 'same' / 'valid'
  bool allow_unbatched = true;
};

// A per-spatial-dim parameter list: k entries, or one broadcast to k.
std::optional<std::vector<int64_t>> SpatialParam(const Args& a, size_t arg, size_t k) {
  std::optional<std::vector<int64_t>> v = a.IntList(arg);
  if (!v) return std::nullopt;
  if (v->size() == 1 && k != 1) return std::vector<int64_t>(k, (*v)[0]);
  if (v->size() != k) return std::nullopt;
  return v;
}

ShapeImpl Conv(ConvSpec spec) {
  return [spec](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    const TensorInfo* w = a.Tensor(1);
    if (!x) return Types{Type::Tensor()};
    std::optional<DType> dtype = x->dtype ? x->dtype : (w ? w->dtype : std::nullopt);
    std::optional<ir::Device> device = a.CommonDevice();
    if (!w || !w->sizes || !x->sizes) return Types{TensorOf(dtype, std::nullopt, device)};
    const Dims& ws = *w->sizes;
    const Dims& xs = *x->sizes;
    if (ws.size() < 3) return a.Error("convolution weight must have at least 3 dims");
    size_t k = ws.size() - 2;
    bool batched = xs.size() == k + 2;
    if (!batched && !(spec.allow_unbatched && xs.size() == k + 1)) {
      return a.Error(absl::StrCat("convolution input of sizes ", SizesToString(x->sizes),
                                  " does not fit a weight of sizes ", SizesToString(w->sizes)));
    }
    bool transposed = spec.transposed;
    if (spec.transposed_arg) {
      std::optional<bool> t = a.Bool(*spec.transposed_arg);
      if (!t) return Types{TensorOf(dtype, std::nullopt, device)};
      transposed = *t;
    }
    Dim groups = a.Int(spec.groups);
    size_t c_at = batched ? 1 : 0;
    Dim in_channels = xs[c_at];
    Dim out_channels;
    if (!transposed) {
      if (groups && ws[1]) {
        RETURN_IF_ERROR(CheckDimsEqual(a, in_channels, Dim(*ws[1] * *groups),
                                       "input channels do not match weight channels * groups"));
      }
      out_channels = ws[0];
    } else {
      RETURN_IF_ERROR(CheckDimsEqual(a, in_channels, ws[0],
                                     "input channels do not match the transposed weight"));
      out_channels = (groups && ws[1]) ? Dim(*ws[1] * *groups) : std::nullopt;
    }
    if (const TensorInfo* b = a.Tensor(2); b && b->sizes && b->sizes->size() == 1) {
      RETURN_IF_ERROR(CheckDimsEqual(a, (*b->sizes)[0], out_channels,
                                     "bias size does not match the output channels"));
    }
    Dims out;
    if (batched) out.push_back(xs[0]);
    out.push_back(out_channels);
    std::optional<std::vector<int64_t>> stride = SpatialParam(a, spec.stride, k);
    std::optional<std::vector<int64_t>> dilation = SpatialParam(a, spec.dilation, k);
    std::optional<std::vector<int64_t>> padding;
    bool same = false;
    if (spec.string_padding) {
      const std::string* mode = a.Str(spec.padding);
      if (mode && *mode == "valid") padding = std::vector<int64_t>(k, 0);
      if (mode && *mode == "same") same = true;
    } else {
      padding = SpatialParam(a, spec.padding, k);
    }
    std::optional<std::vector<int64_t>> output_padding;
    if (transposed) {
      output_padding = spec.output_padding ? SpatialParam(a, *spec.output_padding, k)
                                           : std::vector<int64_t>(k, 0);
    }
    for (size_t i = 0; i < k; ++i) {
      Dim in = xs[c_at + 1 + i];
      Dim kernel = ws[2 + i];
      if (same) {
        out.push_back(in);
        continue;
      }
      if (!in || !kernel || !stride || !dilation || !padding ||
          (transposed && !output_padding)) {
        out.push_back(std::nullopt);
        continue;
      }
      int64_t s = (*stride)[i], p = (*padding)[i], d = (*dilation)[i];
      if (s <= 0 || d <= 0) return a.Error("stride and dilation must be positive");
      int64_t o;
      if (transposed) {
        o = (*in - 1) * s - 2 * p + d * (*kernel - 1) + (*output_padding)[i] + 1;
      } else {
        o = FloorDiv(*in + 2 * p - d * (*kernel - 1) - 1, s) + 1;
      }
      if (o < 0 || (!transposed && o < 1)) {
        return a.Error(absl::StrCat("convolution output size ", o, " is too small (input ",
                                    SizesToString(x->sizes), ", kernel ",
                                    SizesToString(w->sizes), ")"));
      }
      out.push_back(o);
    }
    return Types{TensorOf(dtype, out, device)};
  };
}

struct PoolSpec {
  size_t k;  // spatial dims
  size_t kernel = 1, stride = 2, padding = 3;
  std::optional<size_t> dilation;
  size_t ceil_mode;
  bool with_indices = false;
};

ShapeImpl Pool(PoolSpec spec) {
  return [spec](const Args& a) -> absl::StatusOr<Types> {
    size_t outputs = spec.with_indices ? 2 : 1;
    const TensorInfo* x = a.Tensor(0);
    if (!x) return Types(outputs, Type::Tensor());
    auto result = [&](SymbolicSizes s) {
      Types r{TensorOf(x->dtype, s, x->device)};
      if (spec.with_indices) r.push_back(TensorOf(DType::kInt64, s, x->device));
      return r;
    };
    if (!x->sizes) return result(std::nullopt);
    const Dims& xs = *x->sizes;
    if (xs.size() != spec.k + 1 && xs.size() != spec.k + 2) {
      return a.Error(absl::StrCat("pooling expects ", spec.k + 1, " or ", spec.k + 2,
                                  "-dim input, got ", SizesToString(x->sizes)));
    }
    std::optional<std::vector<int64_t>> kernel = SpatialParam(a, spec.kernel, spec.k);
    std::optional<std::vector<int64_t>> stride = a.IntList(spec.stride);
    if (stride && stride->empty()) {
      stride = kernel;  // PyTorch's default: the kernel size
    } else {
      stride = SpatialParam(a, spec.stride, spec.k);
    }
    std::optional<std::vector<int64_t>> padding = SpatialParam(a, spec.padding, spec.k);
    std::optional<std::vector<int64_t>> dilation =
        spec.dilation ? SpatialParam(a, *spec.dilation, spec.k) : std::vector<int64_t>(spec.k, 1);
    std::optional<bool> ceil_mode = a.Bool(spec.ceil_mode);
    size_t lead = xs.size() - spec.k;
    Dims out(xs.begin(), xs.begin() + lead);
    for (size_t i = 0; i < spec.k; ++i) {
      Dim in = xs[lead + i];
      if (!in || !kernel || !stride || !padding || !dilation || !ceil_mode) {
        out.push_back(std::nullopt);
        continue;
      }
      int64_t kk = (*kernel)[i], s = (*stride)[i], p = (*padding)[i], d = (*dilation)[i];
      if (kk <= 0 || s <= 0 || d <= 0) return a.Error("kernel, stride and dilation must be positive");
      if (p < 0 || p > kk / 2) return a.Error("pad should be at most half of the kernel size");
      int64_t o = FloorDiv(*in + 2 * p - d * (kk - 1) - 1 + (*ceil_mode ? s - 1 : 0), s) + 1;
      // The last window must start inside the input or its left padding.
      if (*ceil_mode && (o - 1) * s >= *in + p) --o;
      if (o < 1) {
        return a.Error(absl::StrCat("pooling output size ", o, " is too small for input ",
                                    SizesToString(x->sizes)));
      }
      out.push_back(o);
    }
    return result(out);
  };
}

ShapeImpl AdaptivePool(size_t k, bool with_indices) {
  return [k, with_indices](const Args& a) -> absl::StatusOr<Types> {
    size_t outputs = with_indices ? 2 : 1;
    const TensorInfo* x = a.Tensor(0);
    if (!x) return Types(outputs, Type::Tensor());
    SymbolicSizes out;
    if (x->sizes) {
      const Dims& xs = *x->sizes;
      if (xs.size() != k + 1 && xs.size() != k + 2) {
        return a.Error(absl::StrCat("adaptive pooling expects ", k + 1, " or ", k + 2,
                                    "-dim input, got ", SizesToString(x->sizes)));
      }
      SymbolicSizes size = a.IntListElements(1);
      if (size && size->size() == 1 && k > 1) size = Dims(k, (*size)[0]);
      Dims o(xs.begin(), xs.end() - k);
      for (size_t i = 0; i < k; ++i) o.push_back(size && size->size() == k ? (*size)[i] : std::nullopt);
      out = std::move(o);
    }
    Types r{TensorOf(x->dtype, out, x->device)};
    if (with_indices) r.push_back(TensorOf(DType::kInt64, out, x->device));
    return r;
  };
}

// ------------------------------------------------------------ normalization

// layer_norm(input, normalized_shape, weight?, bias?, eps, cudnn_enable).
absl::StatusOr<Types> LayerNorm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  SymbolicSizes shape = a.IntListElements(1);
  if (x->sizes && shape) {
    const Dims& xs = *x->sizes;
    if (shape->size() > xs.size()) {
      return a.Error(absl::StrCat("normalized_shape ", SizesToString(shape),
                                  " has more dims than the input ", SizesToString(x->sizes)));
    }
    size_t lead = xs.size() - shape->size();
    for (size_t i = 0; i < shape->size(); ++i) {
      RETURN_IF_ERROR(CheckDimsEqual(a, xs[lead + i], (*shape)[i],
                                     "input's trailing sizes do not match normalized_shape"));
    }
    for (size_t arg : {size_t{2}, size_t{3}}) {
      const TensorInfo* p = a.Tensor(arg);
      if (p && p->sizes && p->sizes->size() == shape->size()) {
        for (size_t i = 0; i < shape->size(); ++i) {
          RETURN_IF_ERROR(CheckDimsEqual(a, (*p->sizes)[i], (*shape)[i],
                                         "weight/bias sizes do not match normalized_shape"));
        }
      }
    }
  }
  return Types{TensorOf(x->dtype, x->sizes, x->device)};
}

// batch_norm / instance_norm: per-channel parameters must match dim 1.
absl::StatusOr<Types> ChannelNorm(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  if (x->sizes && x->sizes->size() >= 2) {
    Dim channels = (*x->sizes)[1];
    for (size_t arg : {size_t{1}, size_t{2}, size_t{3}, size_t{4}}) {
      const TensorInfo* p = a.Tensor(arg);
      if (p && p->sizes && p->sizes->size() == 1) {
        RETURN_IF_ERROR(CheckDimsEqual(a, (*p->sizes)[0], channels,
                                       "per-channel parameter does not match the channels"));
      }
    }
  }
  return Types{TensorOf(x->dtype, x->sizes, x->device)};
}

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
  return t;
}

const std::vector<Entry>& Table() {
  static const std::vector<Entry>* table = new std::vector<Entry>(BuildTable());
  return *table;
}

}  // namespace

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
