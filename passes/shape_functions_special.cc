// Shape functions of the special, sequence and shape-query rows
// (ops/defs/special.def, sequence.def, scalar.def).
#include <algorithm>

#include "passes/shape_functions_internal.h"
#include "support/status.h"

namespace kiln::passes::shape_internal {
namespace {

std::optional<DType> DTypeArg(const Args& a, size_t i, std::optional<DType> fallback) {
  if (a.IsNone(i)) return fallback;
  Dim code = a.Int(i);
  return code ? DTypeFromCode(*code) : std::nullopt;
}

TypePtr Like(const Args& a, size_t i) {
  const TensorInfo* t = a.Tensor(i);
  return t ? TensorOf(t->dtype, t->sizes, t->device) : Type::Tensor();
}

}  // namespace

// nll_loss*(self, target, weight?, reduction, ...) / cross_entropy_loss:
// reduction 0 (none) keeps the target's sizes, else a 0-dim result.
absl::StatusOr<Types> Loss(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  std::optional<DType> dtype = x ? x->dtype : std::nullopt;
  Dim reduction = a.Int(3);
  SymbolicSizes out;
  if (reduction && *reduction != 0) out = Dims();
  if (reduction && *reduction == 0) out = a.Sizes(1);
  return Types{TensorOf(dtype, out, a.CommonDevice())};
}

// *_window(window_length, ..., dtype?): [window_length], float32 by default.
absl::StatusOr<Types> TorchWindow(const Args& a) {
  std::optional<size_t> dtype_arg = a.ArgIndex("dtype");
  return Types{TensorOf(dtype_arg ? DTypeArg(a, *dtype_arg, DType::kFloat32) : DType::kFloat32,
                        Dims{a.Int(0)}, std::nullopt)};
}

// kiln::window(size, kind, periodic, dtype): [size].
absl::StatusOr<Types> OnnxWindow(const Args& a) {
  return Types{TensorOf(DTypeArg(a, 3, DType::kFloat32), Dims{a.ConstTensorInt(0)}, std::nullopt)};
}

// kiln::mel_weight_matrix(num_mel_bins, dft_length, ...):
// [dft_length / 2 + 1, num_mel_bins].
absl::StatusOr<Types> MelWeightMatrix(const Args& a) {
  Dim bins = a.ConstTensorInt(0);
  Dim length = a.ConstTensorInt(1);
  return Types{TensorOf(DTypeArg(a, 5, DType::kFloat32),
                        Dims{length ? Dim(*length / 2 + 1) : std::nullopt, bins}, std::nullopt)};
}

// kiln::dft(input [..., 1|2], dft_length?, axis, inverse, onesided): the
// axis dim becomes dft_length (or n / 2 + 1 bins), the last dim 2.
absl::StatusOr<Types> Dft(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  if (!x->sizes) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
  Dims out = *x->sizes;
  if (out.size() < 2) return a.Error("DFT input must be [..., 1] or [..., 2]");
  Dim axis = a.Int(2);
  std::optional<bool> onesided = a.Bool(4);
  out.back() = 2;
  if (!axis) {
    for (size_t i = 0; i + 1 < out.size(); ++i) out[i] = std::nullopt;
    return Types{TensorOf(x->dtype, out, x->device)};
  }
  const int64_t rank = static_cast<int64_t>(out.size());
  const int64_t ax = *axis < 0 ? *axis + rank : *axis;
  if (ax < 0 || ax >= rank - 1) return a.Error("DFT axis must name a signal dim");
  Dim n = a.IsNone(1) ? out[static_cast<size_t>(ax)] : a.ConstTensorInt(1);
  out[static_cast<size_t>(ax)] = n && onesided ? Dim(*onesided ? *n / 2 + 1 : *n) : std::nullopt;
  return Types{TensorOf(x->dtype, out, x->device)};
}

// kiln::stft(signal [B, L, 1|2], frame_step, window?, frame_length?, onesided):
// [B, frames, bins, 2].
absl::StatusOr<Types> Stft(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  Dim batch, frames, bins;
  // Plain ints (-1: unknown) keep gcc -O2 from a false -Wmaybe-uninitialized.
  const int64_t hop = a.ConstTensorInt(1).value_or(-1);
  int64_t frame = -1;
  if (!a.IsNone(3)) {
    frame = a.ConstTensorInt(3).value_or(-1);
  } else if (const TensorInfo* w = a.Tensor(2); w && w->sizes && w->sizes->size() == 1) {
    frame = (*w->sizes)[0].value_or(-1);
  }
  std::optional<bool> onesided = a.Bool(4);
  if (x->sizes && x->sizes->size() == 3) {
    batch = (*x->sizes)[0];
    const int64_t len = (*x->sizes)[1].value_or(-1);
    if (len >= 0 && frame > 0 && hop > 0 && len >= frame) frames = (len - frame) / hop + 1;
  }
  if (frame > 0 && onesided) bins = *onesided ? frame / 2 + 1 : frame;
  return Types{TensorOf(x->dtype, Dims{batch, frames, bins, Dim(2)}, x->device)};
}

// kiln::non_max_suppression: [selected, 3] int64.
absl::StatusOr<Types> NonMaxSuppression(const Args& a) {
  return Types{TensorOf(DType::kInt64, Dims{std::nullopt, Dim(3)}, a.CommonDevice())};
}

// kiln::quantize_linear(x, scale, zero_point?, axis, dtype): the zero
// point's dtype, else `dtype`.
absl::StatusOr<Types> QuantizeLinear(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  std::optional<DType> dtype = a.IsNone(2) ? DTypeArg(a, 4, DType::kUInt8) : a.DTypeOf(2);
  return Types{TensorOf(dtype, x ? x->sizes : std::nullopt, a.CommonDevice())};
}

// kiln::dequantize_linear(x, scale, zero_point?, axis): scale's dtype.
absl::StatusOr<Types> DequantizeLinear(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  return Types{TensorOf(a.DTypeOf(1), x ? x->sizes : std::nullopt, a.CommonDevice())};
}

// kiln::dynamic_quantize_linear(x): (uint8 y, float32 scale [], uint8 zero point []).
absl::StatusOr<Types> DynamicQuantizeLinear(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  std::optional<ir::Device> device = a.CommonDevice();
  return Types{TensorOf(DType::kUInt8, x ? x->sizes : std::nullopt, device),
               TensorOf(DType::kFloat32, Dims(), device), TensorOf(DType::kUInt8, Dims(), device)};
}

// kiln::tfidf_vectorizer(input [C] or [N, C], ..., ngram_indexes, ...):
// [V] or [N, V], V = max(ngram_indexes) + 1, float32.
absl::StatusOr<Types> TfIdfVectorizer(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  Dim width;
  if (std::optional<std::vector<int64_t>> idx = a.IntList(6)) {
    int64_t w = 0;
    for (int64_t i : *idx) w = std::max(w, i + 1);
    width = w;
  }
  SymbolicSizes out;
  if (x && x->sizes && x->sizes->size() == 2) out = Dims{(*x->sizes)[0], width};
  if (x && x->sizes && x->sizes->size() == 1) out = Dims{width};
  return Types{TensorOf(DType::kFloat32, out, a.CommonDevice())};
}

// kiln::strings_to_tensor(input, dtype): sizes travel with the strings.
absl::StatusOr<Types> StringsToTensor(const Args& a) {
  return Types{TensorOf(DTypeArg(a, 1, std::nullopt), std::nullopt, std::nullopt)};
}

// multinomial(self [*, k], num_samples, ...) -> [*, num_samples] int64.
absl::StatusOr<Types> Multinomial(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  SymbolicSizes out;
  if (t && t->sizes && !t->sizes->empty()) {
    Dims o = *t->sizes;
    o.back() = a.Int(1);
    out = std::move(o);
  }
  return Types{TensorOf(DType::kInt64, out, a.CommonDevice())};
}

// native_dropout / kiln::dropout: (output, bool mask), both the input's sizes.
absl::StatusOr<Types> DropoutPair(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types(2, Type::Tensor());
  return Types{TensorOf(t->dtype, t->sizes, t->device), TensorOf(DType::kBool, t->sizes, t->device)};
}

// kiln::random_uniform / random_normal(shape, a, b, dtype, seed?).
absl::StatusOr<Types> OnnxRandom(const Args& a) {
  return Types{TensorOf(DTypeArg(a, 3, DType::kFloat32), a.IntListElements(0), std::nullopt)};
}

// kiln::random_*_like / kiln::bernoulli(input, ..., dtype?, seed?): the input's sizes.
absl::StatusOr<Types> OnnxRandomLike(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  if (!t) return Types{Type::Tensor()};
  std::optional<size_t> dtype_arg = a.ArgIndex("dtype");
  return Types{TensorOf(dtype_arg ? DTypeArg(a, *dtype_arg, t->dtype) : t->dtype, t->sizes, t->device)};
}

// kiln::multinomial(input [batch, classes], sample_size, dtype, seed?) -> [batch, sample_size].
absl::StatusOr<Types> OnnxMultinomial(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  Dim batch;
  if (t && t->sizes && t->sizes->size() == 2) batch = (*t->sizes)[0];
  return Types{TensorOf(DTypeArg(a, 2, DType::kInt32), Dims{batch, a.Int(1)}, a.CommonDevice())};
}

ShapeImpl SameAsInputs(std::vector<size_t> inputs) {
  return [inputs](const Args& a) -> absl::StatusOr<Types> {
    Types out;
    for (size_t i : inputs) out.push_back(Like(a, i));
    return out;
  };
}

// kiln::lstm / gru / rnn(X, W, R, ...): Y [seq, dirs, batch, hidden]
// (layout 1: [batch, seq, dirs, hidden]), Y_h and Y_c [dirs, batch, hidden]
// (layout 1: [batch, dirs, hidden]). dirs from W; hidden_size 0 takes R's.
ShapeImpl Recurrent(size_t outputs, size_t hidden_arg, size_t layout_arg) {
  return [outputs, hidden_arg, layout_arg](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    if (!x) return Types(outputs, Type::Tensor());
    Dim layout = a.Int(layout_arg);
    Dim hidden = a.Int(hidden_arg);
    if (hidden && *hidden == 0) hidden = std::nullopt;
    Dim dirs;
    if (const TensorInfo* w = a.Tensor(1); w && w->sizes && w->sizes->size() == 3) dirs = (*w->sizes)[0];
    if (!hidden) {
      if (const TensorInfo* r = a.Tensor(2); r && r->sizes && r->sizes->size() == 3) hidden = (*r->sizes)[2];
    }
    Dim seq, batch;
    if (x->sizes && x->sizes->size() == 3 && layout) {
      seq = (*x->sizes)[*layout == 0 ? 0 : 1];
      batch = (*x->sizes)[*layout == 0 ? 1 : 0];
    }
    SymbolicSizes y, state;
    if (layout) {
      y = *layout == 0 ? Dims{seq, dirs, batch, hidden} : Dims{batch, seq, dirs, hidden};
      state = *layout == 0 ? Dims{dirs, batch, hidden} : Dims{batch, dirs, hidden};
    }
    Types out{TensorOf(x->dtype, y, x->device)};
    for (size_t i = 1; i < outputs; ++i) out.push_back(TensorOf(x->dtype, state, x->device));
    return out;
  };
}

// kiln::sequence_at / concat_from_sequence(seq, ...): the elements' dtype
// (a concatenation's rank may change).
absl::StatusOr<Types> SequenceElement(const Args& a) {
  const Type* seq = a.TypeAt(0);
  if (seq && seq->kind() == TypeKind::kList && seq->contained()[0]->is_tensor()) {
    const TensorInfo& e = seq->contained()[0]->tensor();
    return Types{TensorOf(e.dtype, std::nullopt, e.device)};
  }
  return Types{Type::Tensor()};
}

// kiln::stack_scan_outputs(seq, axis, dtype, element_shape?).
absl::StatusOr<Types> StackScanOutputs(const Args& a) {
  Dim code = a.Int(2);
  std::optional<DType> dtype = code && *code >= 0 ? DTypeFromCode(*code) : std::nullopt;
  if (!dtype) {
    const Type* seq = a.TypeAt(0);
    if (seq && seq->kind() == TypeKind::kList && seq->contained()[0]->is_tensor()) {
      dtype = seq->contained()[0]->tensor().dtype;
    }
  }
  return Types{TensorOf(dtype, std::nullopt, std::nullopt)};
}

// kiln::optional_get_element(input): the optional's element type.
absl::StatusOr<Types> OptionalElement(const Args& a) {
  const Type* t = a.TypeAt(0);
  if (t && t->kind() == TypeKind::kOptional) return Types{t->contained()[0]};
  if (t && t->kind() != TypeKind::kNone) return Types{*a.TypePtrAt(0)};
  return Types{Type::Any()};
}

ShapeImpl ScalarTensorOf(DType dtype) {
  return [dtype](const Args& a) -> absl::StatusOr<Types> {
    return Types{TensorOf(dtype, Dims(), std::nullopt)};
  };
}

// kiln::shape(self, start=0, end=None): [len], dims [start, end) clamped.
absl::StatusOr<Types> OnnxShape(const Args& a) {
  const TensorInfo* t = a.Tensor(0);
  Dim len;
  if (t && t->sizes) {
    const int64_t r = static_cast<int64_t>(t->sizes->size());
    Dim start = a.Int(1);
    Dim end = a.IsNone(2) ? Dim(r) : a.Int(2);
    if (start && end) {
      auto clamp = [r](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + r : i, 0, r); };
      len = std::max<int64_t>(clamp(*end) - clamp(*start), 0);
    }
  }
  return Types{TensorOf(DType::kInt64, Dims{len}, std::nullopt)};
}

}  // namespace kiln::passes::shape_internal
