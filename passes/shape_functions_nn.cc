#include "passes/shape_functions_internal.h"

#include <algorithm>

#include "support/status.h"

namespace kiln::passes::shape_internal {

// ------------------------------------------------------------ linear algebra

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
  // Known operands always broadcast to known sizes; value_or (rather than *)
  // keeps gcc -O2 from a false -Wmaybe-uninitialized now that Matmul is
  // not internal to one file.
  Dims out = batch.value_or(Dims());
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

// ------------------------------------------------------------ conv / pool

namespace {

int64_t FloorDiv(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

// A per-spatial-dim parameter list: k entries, or one broadcast to k.
std::optional<std::vector<int64_t>> SpatialParam(const Args& a, size_t arg, size_t k) {
  std::optional<std::vector<int64_t>> v = a.IntList(arg);
  if (!v) return std::nullopt;
  if (v->size() == 1 && k != 1) return std::vector<int64_t>(k, (*v)[0]);
  if (v->size() != k) return std::nullopt;
  return v;
}

}  // namespace

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

}  // namespace kiln::passes::shape_internal
