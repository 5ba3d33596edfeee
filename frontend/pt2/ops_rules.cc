// Export-only ops mapped onto the ops kiln has kernels and lowerings for.
// Every other aten op passes through as the op the file names (with the
// schema's defaults filled in).
//
//   _assert_tensor_metadata, _assert_scalar, sym_constrain_range*  dropped
//     (metadata and range facts the signature already carries)
//   sym_size.int / sym_numel       aten::size / aten::numel
//   _softmax / _log_softmax        softmax / log_softmax (half_to_float: Float)
//   _safe_softmax                  softmax, rows of -inf give 0
//   _to_copy, to.*                 aten::to(x, dtype) or a clone / the input
//   lift_fresh_copy                clone;  lift_fresh, alias, detach: the input
//   copy, fill.Tensor, fill.Scalar expand_as + clone; full_like
//   slice_scatter, select_scatter  cat of the base's slices around src
//   as_strided                     reshape when the strides are the row-major
//                                  ones of a contiguous input, else an
//                                  index_select of the flattened input
//   scaled_dot_product_attention   softmax(q k^T * scale + mask) v
//   unflatten.int, _unsafe_view    reshape;  squeeze.dims: squeeze per dim
//   native_layer_norm, _native_batch_norm_legit*  layer_norm / batch_norm
//                                  when the saved statistics are unused
//   scalar_tensor                  aten::full([], s, dtype)
//   __and__/__or__/__xor__.Tensor  bitwise_and / bitwise_or / bitwise_xor
//   split*, unbind.int             one slice / select per piece
//   matmul, linear                 mm / addmm / bmm (ops_linalg.cc)
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/pt2/importer_internal.h"
#include "ir/constants.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {
namespace {

using ir::IValue;
using ir::Value;
using Values = std::vector<Value*>;
using Result = absl::StatusOr<Values>;

// Constants a rule builds (index and mask tensors) stay below this many
// elements (a hostile file's sizes must not allocate without bound).
constexpr int64_t kMaxConstantElements = int64_t{1} << 22;

Values Drop(NodeContext& ctx) { return Values(ctx.schema().returns.size(), nullptr); }

// The element count, or nullopt for a negative size or an overflow.
std::optional<int64_t> Numel(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0 || __builtin_mul_overflow(n, s, &n)) return std::nullopt;
  }
  return n;
}

Result Softmax(NodeContext& ctx, const char* kind) {
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  ASSIGN_OR_RETURN(Value* dim, ctx.Arg("dim"));
  Value* dtype = ctx.builder().None();
  if (ctx.schema().ArgumentIndex("half_to_float") >= 0) {
    std::optional<bool> half = ctx.ConstBool("half_to_float");
    if (!half) return ctx.Error("half_to_float must be a constant");
    if (*half) dtype = ctx.builder().ScalarType(DType::kFloat32);
  } else if (ctx.schema().ArgumentIndex("dtype") >= 0) {
    ASSIGN_OR_RETURN(dtype, ctx.Arg("dtype"));
  }
  ASSIGN_OR_RETURN(Value* y, ctx.Op(kind, {x, dim, dtype}));
  return Values{y};
}

// `x` as `dtype` (a copy when asked, else possibly `x` itself).
Result Cast(NodeContext& ctx, Value* x, std::optional<int64_t> dtype, bool copy) {
  const std::optional<DType> from = NodeContext::DTypeOf(x);
  if (!dtype || (from && DTypeCode(*from) == *dtype)) {
    if (!copy) return Values{x};
    ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::clone", {x, ctx.builder().None()}));
    return Values{y};
  }
  if (!DTypeFromCode(*dtype)) return ctx.Error(absl::StrCat("unsupported dtype code ", *dtype));
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::to", {x, ctx.builder().Int(*dtype)}));
  return Values{y};
}

absl::Status CheckCpu(NodeContext& ctx, absl::string_view arg) {
  if (ctx.schema().ArgumentIndex(arg) < 0 || ctx.IsNone(arg)) return absl::OkStatus();
  ASSIGN_OR_RETURN(Value* d, ctx.Arg(arg));
  std::optional<IValue> v = ir::ConstantValue(d);
  if (v && v->isDevice() && v->toDevice().type != "cpu") {
    return ctx.Error(absl::StrCat("moves to device ", v->toDevice().ToString(),
                                  "; kiln imports CPU programs (compile for a device instead)"));
  }
  return absl::OkStatus();
}

Result ToCopy(NodeContext& ctx) {
  RETURN_IF_ERROR(CheckCpu(ctx, "device"));
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  std::optional<int64_t> dtype;
  if (!ctx.IsNone("dtype")) {
    dtype = ctx.ConstInt("dtype");
    if (!dtype) return ctx.Error("dtype must be a constant");
  }
  return Cast(ctx, x, dtype, /*copy=*/true);
}

Result To(NodeContext& ctx) {
  RETURN_IF_ERROR(CheckCpu(ctx, "device"));
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  std::optional<int64_t> dtype;
  if (ctx.schema().ArgumentIndex("other") >= 0) {
    ASSIGN_OR_RETURN(Value* other, ctx.Arg("other"));
    std::optional<DType> d = NodeContext::DTypeOf(other);
    if (!d) return ctx.Error("the dtype of 'other' is unknown");
    dtype = DTypeCode(*d);
  } else if (ctx.schema().ArgumentIndex("dtype") >= 0 && !ctx.IsNone("dtype")) {
    dtype = ctx.ConstInt("dtype");
    if (!dtype) return ctx.Error("dtype must be a constant");
  }
  const bool copy = ctx.ConstBool("copy").value_or(false);
  return Cast(ctx, x, dtype, copy);
}

Result Identity(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  return Values{x};
}

Result Clone(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::clone", {x, ctx.builder().None()}));
  return Values{y};
}

// `value` broadcast to `like`'s shape with its dtype, as a new tensor.
absl::StatusOr<Value*> FilledLike(NodeContext& ctx, Value* like, Value* value) {
  const std::optional<DType> want = NodeContext::DTypeOf(like);
  if (want && NodeContext::DTypeOf(value) != want) {
    ASSIGN_OR_RETURN(value, ctx.Op("aten::to", {value, ctx.builder().ScalarType(*want)}));
  }
  const auto like_sizes = NodeContext::StaticSizes(like);
  if (!like_sizes || NodeContext::StaticSizes(value) != like_sizes) {
    ASSIGN_OR_RETURN(value, ctx.Op("aten::expand_as", {value, like}));
  }
  return ctx.Op("aten::clone", {value, ctx.builder().None()});
}

// copy(self, src), fill.Tensor(self, value): argument `source` filled into
// a new tensor shaped like self.
RuleFn FillLikeSelf(const char* source) {
  return [source](NodeContext& ctx) -> Result {
    ASSIGN_OR_RETURN(Value* self, ctx.Arg("self"));
    ASSIGN_OR_RETURN(Value* value, ctx.Arg(source));
    ASSIGN_OR_RETURN(Value* y, FilledLike(ctx, self, value));
    return Values{y};
  };
}

Result SliceScatter(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* base, ctx.Arg("self"));
  ASSIGN_OR_RETURN(Value* src, ctx.Arg("src"));
  const std::optional<int64_t> dim = ctx.ConstInt("dim");
  const std::optional<int64_t> step = ctx.ConstInt("step");
  std::optional<int64_t> start, end;
  if (!ctx.IsNone("start")) {
    start = ctx.ConstInt("start");
    if (!start) return ctx.Error("a symbolic start is not supported");
  }
  if (!ctx.IsNone("end")) {
    end = ctx.ConstInt("end");
    if (!end) return ctx.Error("a symbolic end is not supported");
  }
  if (!dim || !step) return ctx.Error("dim and step must be constants");
  ASSIGN_OR_RETURN(Value* y, EmitSliceScatter(ctx, base, src, *dim, start, end, *step));
  return Values{y};
}

Result SelectScatter(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* base, ctx.Arg("self"));
  ASSIGN_OR_RETURN(Value* src, ctx.Arg("src"));
  const std::optional<int64_t> dim = ctx.ConstInt("dim");
  const std::optional<int64_t> index = ctx.ConstInt("index");
  if (!dim || !index) return ctx.Error("dim and index must be constants");
  ASSIGN_OR_RETURN(Value* y, EmitSelectScatter(ctx, base, src, *dim, *index));
  return Values{y};
}

Result AsStrided(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  const std::optional<std::vector<int64_t>> size = ctx.ConstIntList("size");
  const std::optional<std::vector<int64_t>> stride = ctx.ConstIntList("stride");
  const int64_t offset = ctx.IsNone("storage_offset") ? 0 : ctx.ConstInt("storage_offset").value_or(-1);
  if (!size || !stride || size->size() != stride->size() || offset < 0) {
    return ctx.Error("as_strided needs constant sizes, strides and offset");
  }
  // as_strided reads the input's storage: it is the input's row-major order
  // only when the traced input was contiguous.
  const TensorMeta* in = ctx.InputMeta("self");
  std::optional<std::vector<int64_t>> in_sizes, in_strides;
  if (in != nullptr) {
    in_sizes = StaticValues(in->sizes);
    in_strides = StaticValues(in->strides);
  }
  if (!in_sizes || !in_strides || !IsRowMajor(*in_sizes, *in_strides) ||
      in->storage_offset.value.value_or(-1) != 0) {
    return ctx.Error("as_strided of an input that was not contiguous when traced");
  }
  const std::optional<int64_t> in_count = Numel(*in_sizes);
  const std::optional<int64_t> out_count = Numel(*size);
  for (int64_t st : *stride) {
    if (st < 0) return ctx.Error("as_strided with a negative stride");
  }
  if (!in_count || !out_count) return ctx.Error("as_strided with negative or overflowing sizes");
  const int64_t in_numel = *in_count, out_numel = *out_count;
  if (offset == 0 && out_numel == in_numel && IsRowMajor(*size, *stride)) {
    ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::reshape", {x, ctx.builder().IntList(*size)}));
    return Values{y};
  }
  // General case: gather the flattened input at each output's storage index.
  if (out_numel > kMaxConstantElements) return ctx.Error("as_strided gather index too large");
  std::vector<int64_t> index(static_cast<size_t>(out_numel));
  for (int64_t flat = 0; flat < out_numel; ++flat) {
    int64_t rest = flat, pos = offset;
    for (size_t d = size->size(); d-- > 0;) {
      int64_t step = 0;
      if (__builtin_mul_overflow(rest % (*size)[d], (*stride)[d], &step) ||
          __builtin_add_overflow(pos, step, &pos)) {
        return ctx.Error("as_strided reaches outside its input");
      }
      rest /= (*size)[d];
    }
    if (pos < 0 || pos >= in_numel) return ctx.Error("as_strided reaches outside its input");
    index[static_cast<size_t>(flat)] = pos;
  }
  absl::StatusOr<Tensor> idx = Tensor::FromBytes(DType::kInt64, {out_numel}, index.data(),
                                                 index.size() * sizeof(int64_t));
  if (!idx.ok()) return ctx.Error(idx.status().message());
  ASSIGN_OR_RETURN(Value* flat, ctx.Op("aten::reshape", {x, ctx.builder().IntList({-1})}));
  ASSIGN_OR_RETURN(Value* picked, ctx.Op("aten::index_select", {flat, ctx.builder().Int(0),
                                                                ctx.builder().TensorConstant(*idx)}));
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::reshape", {picked, ctx.builder().IntList(*size)}));
  return Values{y};
}

Result ScaledDotProductAttention(NodeContext& ctx) {
  GraphBuilder& b = ctx.builder();
  ASSIGN_OR_RETURN(Value* q, ctx.Arg("query"));
  ASSIGN_OR_RETURN(Value* k, ctx.Arg("key"));
  ASSIGN_OR_RETURN(Value* v, ctx.Arg("value"));
  const std::optional<double> dropout = ctx.ConstDouble("dropout_p");
  if (!dropout || *dropout != 0.0) return ctx.Error("dropout_p must be the constant 0 (inference)");
  const std::optional<bool> causal = ctx.ConstBool("is_causal");
  const std::optional<bool> gqa = ctx.ConstBool("enable_gqa");
  if (!causal || !gqa) return ctx.Error("is_causal and enable_gqa must be constants");
  const TensorMeta* qm = ctx.InputMeta("query");
  const TensorMeta* km = ctx.InputMeta("key");
  if (qm == nullptr || km == nullptr || qm->sizes.size() < 2 || km->sizes.size() != qm->sizes.size()) {
    return ctx.Error("query and key need known ranks");
  }
  const size_t rank = qm->sizes.size();
  double scale;
  if (ctx.IsNone("scale")) {
    const std::optional<int64_t> e = qm->sizes.back().value;
    if (!e || *e <= 0) return ctx.Error("the query's last dim must be static");
    scale = 1.0 / std::sqrt(static_cast<double>(*e));
  } else {
    const std::optional<double> s = ctx.ConstDouble("scale");
    if (!s) return ctx.Error("scale must be a constant");
    scale = *s;
  }
  if (*gqa) {
    // Repeat each key/value head for its group of query heads.
    if (rank < 3) return ctx.Error("enable_gqa needs a head dim");
    const std::optional<int64_t> hq = qm->sizes[rank - 3].value;
    const std::optional<int64_t> hk = km->sizes[rank - 3].value;
    if (!hq || !hk || *hk <= 0 || *hq % *hk != 0) return ctx.Error("enable_gqa needs static head counts");
    const int64_t group = *hq / *hk;
    std::optional<std::vector<int64_t>> ks = StaticValues(km->sizes);
    const TensorMeta* vm = ctx.InputMeta("value");
    std::optional<std::vector<int64_t>> vs = vm ? StaticValues(vm->sizes) : std::nullopt;
    if (group > 1 && (!ks || !vs || vs->size() != rank)) {
      return ctx.Error("enable_gqa needs static key and value shapes");
    }
    if (group > 1) {
      // [..., Hk, S, E] -> [..., Hk, 1, S, E] -> [..., Hk, g, S, E] -> [..., Hk*g, S, E]
      for (auto [t, sizes] : {std::make_pair(&k, *ks), std::make_pair(&v, *vs)}) {
        std::vector<int64_t> expanded = sizes;
        expanded.insert(expanded.end() - 2, group);
        std::vector<int64_t> merged = sizes;
        merged[rank - 3] *= group;
        const std::optional<DType> dt = NodeContext::DTypeOf(*t);
        ASSIGN_OR_RETURN(Value* u, ctx.Op("aten::unsqueeze", {*t, b.Int(static_cast<int64_t>(rank) - 2)}));
        ASSIGN_OR_RETURN(Value* e, ctx.Op("aten::expand", {u, b.IntList(expanded), b.Bool(false)}));
        ASSIGN_OR_RETURN(*t, ctx.Op("aten::reshape", {e, b.IntList(merged)}));
        if (dt) SetStaticType(*t, *dt, merged);
      }
    }
  }
  ASSIGN_OR_RETURN(Value* kt, ctx.Op("aten::transpose", {k, b.Int(-2), b.Int(-1)}));
  // Typed where the shapes are static, so that the products run as bmm.
  if (std::optional<std::vector<int64_t>> ks = NodeContext::StaticSizes(k)) {
    std::swap((*ks)[ks->size() - 1], (*ks)[ks->size() - 2]);
    SetStaticType(kt, *NodeContext::DTypeOf(k), *ks);
  }
  auto same_type = [](Value* v, const Value* like) {
    if (NodeContext::StaticSizes(like) && NodeContext::DTypeOf(like)) v->setType(like->type());
  };
  ASSIGN_OR_RETURN(Value* scores, EmitMatmul(ctx, q, kt));
  Value* raw = scores;
  ASSIGN_OR_RETURN(scores, ctx.Op("aten::mul", {scores, b.Double(scale)}));
  same_type(scores, raw);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  if (*causal) {
    const std::optional<int64_t> l = qm->sizes[rank - 2].value;
    const std::optional<int64_t> s = km->sizes[rank - 2].value;
    if (!l || !s) return ctx.Error("is_causal needs static sequence lengths");
    if (*l < 0 || *s < 0 || (*s > 0 && *l > kMaxConstantElements / *s)) {
      return ctx.Error("causal mask too large");
    }
    Tensor mask = Tensor::Empty(DType::kBool, {*l, *s});
    for (int64_t i = 0; i < *l; ++i) {
      for (int64_t j = 0; j < *s; ++j) mask.data<bool>()[i * *s + j] = j > i;
    }
    ASSIGN_OR_RETURN(scores, ctx.Op("aten::masked_fill", {scores, b.TensorConstant(mask), b.Double(neg_inf)}));
    same_type(scores, raw);
  }
  if (!ctx.IsNone("attn_mask")) {
    ASSIGN_OR_RETURN(Value* mask, ctx.Arg("attn_mask"));
    const std::optional<DType> mt = NodeContext::DTypeOf(mask);
    if (!mt) return ctx.Error("the attention mask's dtype is unknown");
    if (*mt == DType::kBool) {
      ASSIGN_OR_RETURN(Value* keep_not, ctx.Op("aten::logical_not", {mask}));
      ASSIGN_OR_RETURN(scores, ctx.Op("aten::masked_fill", {scores, keep_not, b.Double(neg_inf)}));
      same_type(scores, raw);
    } else {
      ASSIGN_OR_RETURN(scores, ctx.Op("aten::add", {scores, mask, b.Int(1)}));  // may broadcast up
    }
  }
  ASSIGN_OR_RETURN(Value* probs, ctx.Op("aten::softmax", {scores, b.Int(-1), b.None()}));
  same_type(probs, scores);
  ASSIGN_OR_RETURN(Value* out, EmitMatmul(ctx, probs, v));
  return Values{out};
}

// sizes[..dim) + `sizes` + sizes(dim..] of `x` as an int[] value.
Result Unflatten(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  const TensorMeta* out = ctx.OutputMeta(0);
  if (out != nullptr) {
    if (std::optional<std::vector<int64_t>> sizes = StaticValues(out->sizes)) {
      ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::reshape", {x, ctx.builder().IntList(*sizes)}));
      return Values{y};
    }
  }
  const TensorMeta* in = ctx.InputMeta("self");
  const std::optional<int64_t> dim = ctx.ConstInt("dim");
  if (in == nullptr || !dim) return ctx.Error("unflatten needs a known rank and a constant dim");
  const int64_t rank = static_cast<int64_t>(in->sizes.size());
  const int64_t d = *dim < 0 ? *dim + rank : *dim;
  if (d < 0 || d >= rank) return ctx.Error("dim out of range");
  std::vector<Value*> dims;
  GraphBuilder& b = ctx.builder();
  for (int64_t i = 0; i < rank; ++i) {
    if (i == d) {
      std::optional<std::vector<int64_t>> c = ctx.ConstIntList("sizes");
      if (!c) return ctx.Error("sizes must be constants");
      for (int64_t s : *c) dims.push_back(b.Int(s));
      continue;
    }
    ASSIGN_OR_RETURN(Value* s, ctx.Op("aten::size", {x, b.Int(i)}));
    dims.push_back(s);
  }
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::reshape", {x, b.List(ir::Type::Int(), dims)}));
  return Values{y};
}

Result SqueezeDims(NodeContext& ctx) {
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  const TensorMeta* in = ctx.InputMeta("self");
  std::optional<std::vector<int64_t>> dims = ctx.ConstIntList("dim");
  if (in == nullptr || !dims) return ctx.Error("squeeze.dims needs a known rank and constant dims");
  const int64_t rank = static_cast<int64_t>(in->sizes.size());
  for (int64_t& d : *dims) {
    if (d < 0) d += rank;
    if (d < 0 || d >= std::max<int64_t>(rank, 1)) return ctx.Error("dim out of range");
  }
  std::sort(dims->begin(), dims->end());
  dims->erase(std::unique(dims->begin(), dims->end()), dims->end());
  for (auto it = dims->rbegin(); it != dims->rend(); ++it) {
    ASSIGN_OR_RETURN(x, ctx.Op("aten::squeeze", {x, ctx.builder().Int(*it)}));
  }
  return Values{x};
}

// Outputs [first, last] of the node are unused by the program.
bool Unused(NodeContext& ctx, size_t first, size_t last) {
  for (size_t i = first; i <= last && i < ctx.node().outputs.size(); ++i) {
    const Argument& o = ctx.node().outputs[i];
    if (o.kind == Argument::Kind::kTensor && ctx.importer().IsUsed(o.name)) return false;
  }
  return true;
}

Result NativeLayerNorm(NodeContext& ctx) {
  std::vector<Value*> a = ctx.args();  // input, normalized_shape, weight, bias, eps
  if (!Unused(ctx, 1, 2)) {
    absl::StatusOr<std::vector<Value*>> outs = ctx.builder().OpN("aten::native_layer_norm", a, 3);
    if (!outs.ok()) return ctx.Error(outs.status().message());
    return outs;
  }
  a.push_back(ctx.builder().Bool(false));  // cudnn_enable
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::layer_norm", a));
  return Values{y, nullptr, nullptr};
}

// _native_batch_norm_legit_no_training(input, weight, bias, mean, var,
// momentum, eps) and the functional/legit forms in inference mode.
Result NativeBatchNorm(NodeContext& ctx) {
  const bool has_training = ctx.schema().ArgumentIndex("training") >= 0;
  if (has_training) {
    const std::optional<bool> training = ctx.ConstBool("training");
    if (!training || *training) {
      return ctx.Error("batch norm in training mode (kiln imports inference programs)");
    }
  }
  if (!Unused(ctx, 1, 2)) return ctx.Error("uses batch norm's saved statistics");
  GraphBuilder& b = ctx.builder();
  ASSIGN_OR_RETURN(Value* input, ctx.Arg("input"));
  ASSIGN_OR_RETURN(Value* weight, ctx.Arg("weight"));
  ASSIGN_OR_RETURN(Value* bias, ctx.Arg("bias"));
  ASSIGN_OR_RETURN(Value* mean, ctx.Arg("running_mean"));
  ASSIGN_OR_RETURN(Value* var, ctx.Arg("running_var"));
  ASSIGN_OR_RETURN(Value* momentum, ctx.Arg("momentum"));
  ASSIGN_OR_RETURN(Value* eps, ctx.Arg("eps"));
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::batch_norm", {input, weight, bias, mean, var, b.Bool(false),
                                                         momentum, eps, b.Bool(false)}));
  Values out(ctx.schema().returns.size(), nullptr);
  out[0] = y;
  if (out.size() == 5) {  // the functional form returns the (unchanged) running stats
    out[3] = mean;
    out[4] = var;
  }
  return out;
}

// native_batch_norm (torch 1.13's tracers and AOTAutograd's training graphs
// name it): batch_norm in inference when nothing reads its statistics, else
// the op itself (its kernel computes them).
Result NativeBatchNormOrSelf(NodeContext& ctx) {
  const std::optional<bool> training = ctx.ConstBool("training");
  if (training && !*training && Unused(ctx, 1, 2)) return NativeBatchNorm(ctx);
  absl::StatusOr<std::vector<Value*>> outs = ctx.builder().OpN("aten::native_batch_norm", ctx.args(), 3);
  if (!outs.ok()) return ctx.Error(outs.status().message());
  return outs;
}

// max_pool2d_with_indices whose indices nothing reads: max_pool2d, which
// lowers; with them, the op itself.
Result MaxPool2dWithIndices(NodeContext& ctx) {
  if (!Unused(ctx, 1, 1)) {
    absl::StatusOr<std::vector<Value*>> outs = ctx.builder().OpN("aten::max_pool2d_with_indices", ctx.args(), 2);
    if (!outs.ok()) return ctx.Error(outs.status().message());
    return outs;
  }
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::max_pool2d", ctx.args()));  // same arguments
  return Values{y, nullptr};
}

Result ScalarTensor(NodeContext& ctx) {
  RETURN_IF_ERROR(CheckCpu(ctx, "device"));
  GraphBuilder& b = ctx.builder();
  ASSIGN_OR_RETURN(Value* s, ctx.Arg("s"));
  Value* dtype = b.ScalarType(DType::kFloat32);  // torch's default dtype
  if (!ctx.IsNone("dtype")) {
    ASSIGN_OR_RETURN(dtype, ctx.Arg("dtype"));
  }
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::full", {b.IntList({}), s, dtype}));
  return Values{y};
}

RuleFn Rename(const char* kind) {
  return [kind](NodeContext& ctx) -> Result {
    ASSIGN_OR_RETURN(Value* y, ctx.Op(kind, ctx.args()));
    return Values{y};
  };
}

// split / split_with_sizes / unbind as one slice (select) per piece, so
// that each piece is a view lowering can follow; returned as one list.
Result SplitIntoSlices(NodeContext& ctx) {
  GraphBuilder& b = ctx.builder();
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  const std::string name = ctx.schema().QualifiedName();
  const std::optional<int64_t> dim = ctx.ConstInt("dim");
  if (!dim) return ctx.Error("dim must be a constant");
  if (ctx.node().outputs.size() != 1 || ctx.node().outputs[0].kind != Argument::Kind::kList) {
    return ctx.Error("expected one list of outputs");
  }
  const size_t pieces = ctx.node().outputs[0].elements.size();
  std::vector<Value*> out;
  int64_t start = 0;
  std::optional<std::vector<int64_t>> sizes;
  std::optional<int64_t> split_size;
  if (name == "aten::split.Tensor") {
    split_size = ctx.ConstInt("split_size");
    if (!split_size || *split_size <= 0) return ctx.Error("split_size must be a positive constant");
  } else if (name != "aten::unbind.int") {
    sizes = ctx.ConstIntList(name == "aten::split.sizes" ? "split_size" : "split_sizes");
    if (!sizes || sizes->size() != pieces) return ctx.Error("split sizes must be constants, one per output");
  }
  for (size_t k = 0; k < pieces; ++k) {
    Value* piece;
    if (name == "aten::unbind.int") {
      ASSIGN_OR_RETURN(piece, ctx.Op("aten::select", {x, b.Int(*dim), b.Int(static_cast<int64_t>(k))}));
    } else {
      const int64_t length = split_size ? *split_size : (*sizes)[k];
      int64_t end = 0;
      if (length < 0 || __builtin_add_overflow(start, length, &end)) return ctx.Error("bad split sizes");
      ASSIGN_OR_RETURN(piece, ctx.Op("aten::slice", {x, b.Int(*dim), b.Int(start), b.Int(end), b.Int(1)}));
      start = end;
    }
    out.push_back(piece);
  }
  return Values{b.List(ir::Type::Tensor(), out)};
}

Result SafeSoftmax(NodeContext& ctx) {
  GraphBuilder& b = ctx.builder();
  ASSIGN_OR_RETURN(Value* x, ctx.Arg("self"));
  ASSIGN_OR_RETURN(Value* dim, ctx.Arg("dim"));
  ASSIGN_OR_RETURN(Value* dtype, ctx.Arg("dtype"));
  ASSIGN_OR_RETURN(Value* y, ctx.Op("aten::softmax", {x, dim, dtype}));
  ASSIGN_OR_RETURN(Value* is_masked, ctx.Op("aten::eq", {x, b.Double(-std::numeric_limits<double>::infinity())}));
  ASSIGN_OR_RETURN(Value* unmasked, ctx.Op("aten::logical_not", {is_masked}));
  ASSIGN_OR_RETURN(Value* any_kept, ctx.Op("aten::any", {unmasked, dim, b.Bool(true)}));
  ASSIGN_OR_RETURN(Value* zero, ctx.Op("aten::zeros_like", {y}));
  ASSIGN_OR_RETURN(Value* out, ctx.Op("aten::where", {any_kept, y, zero}));
  return Values{out};
}

absl::flat_hash_map<std::string, RuleFn> MakeRules() {
  absl::flat_hash_map<std::string, RuleFn> r;
  for (const char* dropped : {"aten::_assert_tensor_metadata", "aten::_assert_scalar",
                              "aten::sym_constrain_range", "aten::sym_constrain_range_for_size"}) {
    r[dropped] = [](NodeContext& ctx) -> Result { return Drop(ctx); };
  }
  r["aten::sym_size.int"] = Rename("aten::size");
  r["aten::sym_numel"] = Rename("aten::numel");
  r["aten::_softmax"] = [](NodeContext& ctx) { return Softmax(ctx, "aten::softmax"); };
  r["aten::_log_softmax"] = [](NodeContext& ctx) { return Softmax(ctx, "aten::log_softmax"); };
  r["aten::_safe_softmax"] = SafeSoftmax;
  r["aten::_to_copy"] = ToCopy;
  for (const char* to : {"aten::to.dtype", "aten::to.device", "aten::to.dtype_layout", "aten::to.other"}) {
    r[to] = To;
  }
  r["aten::lift_fresh_copy"] = Clone;
  for (const char* same : {"aten::lift_fresh", "aten::alias", "aten::detach"}) r[same] = Identity;
  r["aten::copy"] = FillLikeSelf("src");
  r["aten::fill.Tensor"] = FillLikeSelf("value");
  r["aten::fill.Scalar"] = Rename("aten::full_like");  // (self, value)
  r["aten::slice_scatter"] = SliceScatter;
  r["aten::select_scatter"] = SelectScatter;
  r["aten::as_strided"] = AsStrided;
  r["aten::scaled_dot_product_attention"] = ScaledDotProductAttention;
  r["aten::unflatten.int"] = Unflatten;
  r["aten::_unsafe_view"] = Rename("aten::reshape");  // (self, size)
  r["aten::squeeze.dims"] = SqueezeDims;
  r["aten::native_layer_norm"] = NativeLayerNorm;
  r["aten::_native_batch_norm_legit_no_training"] = NativeBatchNorm;
  r["aten::_native_batch_norm_legit_functional"] = NativeBatchNorm;
  r["aten::_native_batch_norm_legit"] = NativeBatchNorm;
  r["aten::native_batch_norm"] = NativeBatchNormOrSelf;
  r["aten::max_pool2d_with_indices"] = MaxPool2dWithIndices;
  r["aten::scalar_tensor"] = ScalarTensor;
  for (const char* split : {"aten::split.Tensor", "aten::split_with_sizes", "aten::split.sizes",
                            "aten::unbind.int"}) {
    r[split] = SplitIntoSlices;
  }
  AddLinearAlgebraRules(r);
  r["aten::__and__.Tensor"] = Rename("aten::bitwise_and");
  r["aten::__or__.Tensor"] = Rename("aten::bitwise_or");
  r["aten::__xor__.Tensor"] = Rename("aten::bitwise_xor");
  return r;
}

}  // namespace

const absl::flat_hash_map<std::string, RuleFn>& Rules() {
  static const auto* rules = new absl::flat_hash_map<std::string, RuleFn>(MakeRules());
  return *rules;
}

}  // namespace kiln::frontend::pt2
