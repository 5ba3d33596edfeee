#include "passes/shape_functions_internal.h"

#include <algorithm>
#include <map>
#include <string>

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

absl::StatusOr<Types> Attention(const Args& a) {
  const TensorInfo* q = a.Tensor(0);
  const TensorInfo* kt = a.Tensor(1);
  const TensorInfo* v = a.Tensor(2);
  if (!q || !kt || !v) return Types{Type::Tensor()};
  std::optional<DType> dtype = PromoteInputs(a, {0, 1, 2});
  if (!q->sizes || !kt->sizes || !v->sizes) {
    return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  }
  const Dims& qs = *q->sizes;
  const Dims& ks = *kt->sizes;
  const Dims& vs = *v->sizes;
  if (qs.size() < 2 || ks.size() < 2 || vs.size() < 2) {
    return a.Error("attention operands need at least 2 dims");
  }
  RETURN_IF_ERROR(CheckDimsEqual(a, qs.back(), ks[ks.size() - 2], "q and kt inner dimensions differ"));
  RETURN_IF_ERROR(CheckDimsEqual(a, ks.back(), vs[vs.size() - 2], "kt and v inner dimensions differ"));
  ASSIGN_OR_RETURN(SymbolicSizes batch, BroadcastOrError(a, Dims(qs.begin(), qs.end() - 2),
                                                         Dims(ks.begin(), ks.end() - 2)));
  ASSIGN_OR_RETURN(batch, BroadcastOrError(a, batch, Dims(vs.begin(), vs.end() - 2)));
  Dims out = batch.value_or(Dims());
  out.push_back(qs[qs.size() - 2]);
  out.push_back(vs.back());
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

// baddbmm(self, batch1 [b, n, m], batch2 [b, m, p], *, beta, alpha) -> [b, n, p].
absl::StatusOr<Types> Baddbmm(const Args& a) {
  const TensorInfo* x = a.Tensor(1);
  const TensorInfo* y = a.Tensor(2);
  if (!x || !y) return Types{Type::Tensor()};
  std::optional<DType> dtype = PromoteInputs(a, {0, 1, 2});
  if (!x->sizes || !y->sizes) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  if (x->sizes->size() != 3 || y->sizes->size() != 3) return a.Error("baddbmm expects 3-D batches");
  const Dims& xs = *x->sizes;
  const Dims& ys = *y->sizes;
  RETURN_IF_ERROR(CheckDimsEqual(a, xs[0], ys[0], "batch sizes differ"));
  RETURN_IF_ERROR(CheckDimsEqual(a, xs[2], ys[1], "inner dimensions differ"));
  return Types{TensorOf(dtype, Dims{xs[0] ? xs[0] : ys[0], xs[1], ys[2]}, a.CommonDevice())};
}

// dot(a [n], b [n]) -> [].
absl::StatusOr<Types> Dot(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* y = a.Tensor(1);
  if (x && y && x->sizes && y->sizes) {
    if (x->sizes->size() != 1 || y->sizes->size() != 1) return a.Error("dot expects 1-D operands");
    RETURN_IF_ERROR(CheckDimsEqual(a, (*x->sizes)[0], (*y->sizes)[0], "sizes differ"));
  }
  return Types{TensorOf(PromoteInputs(a, {0, 1}), Dims(), a.CommonDevice())};
}

// mv(m [n, k], v [k]) -> [n].
absl::StatusOr<Types> Mv(const Args& a) {
  const TensorInfo* m = a.Tensor(0);
  const TensorInfo* v = a.Tensor(1);
  std::optional<DType> dtype = PromoteInputs(a, {0, 1});
  if (!m || !v || !m->sizes || !v->sizes) return Types{TensorOf(dtype, Dims(1), a.CommonDevice())};
  if (m->sizes->size() != 2 || v->sizes->size() != 1) return a.Error("mv expects a matrix and a vector");
  RETURN_IF_ERROR(CheckDimsEqual(a, (*m->sizes)[1], (*v->sizes)[0], "inner dimensions differ"));
  return Types{TensorOf(dtype, Dims{(*m->sizes)[0]}, a.CommonDevice())};
}

// outer(a [n], b [m]) -> [n, m].
absl::StatusOr<Types> Outer(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* y = a.Tensor(1);
  Dims out(2);
  if (x && x->sizes && x->sizes->size() == 1) out[0] = (*x->sizes)[0];
  if (y && y->sizes && y->sizes->size() == 1) out[1] = (*y->sizes)[0];
  return Types{TensorOf(PromoteInputs(a, {0, 1}), out, a.CommonDevice())};
}

// einsum(equation, tensors, path?): each output label's size from the
// operand that has it; "..." takes the broadcast of the operands' ellipsis
// dims. Implicit form: the labels used once, in alphabetical order.
absl::StatusOr<Types> EinsumShape(const Args& a) {
  const std::string* eq = a.Str(0);
  std::optional<std::vector<const Type*>> operands = a.ListElementTypes(1);
  std::optional<DType> dtype;
  if (operands && !operands->empty() && (*operands)[0]->is_tensor()) {
    dtype = (*operands)[0]->tensor().dtype;
  }
  if (!eq || !operands) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  std::string e;
  for (char c : *eq) {
    if (c != ' ') e += c;
  }
  const size_t arrow = e.find("->");
  const std::string lhs = e.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands->size()) return a.Error("einsum: one term per operand");
  std::map<char, Dim> label_size;
  std::map<char, int> label_count;
  SymbolicSizes ellipsis = Dims();
  for (size_t i = 0; i < terms.size(); ++i) {
    const Type* t = (*operands)[i];
    if (!t->is_tensor() || !t->tensor().sizes) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
    const Dims& sizes = *t->tensor().sizes;
    const std::string& term = terms[i];
    const size_t dots = term.find("...");
    const size_t labels = term.size() - (dots == std::string::npos ? 0 : 3);
    if (labels > sizes.size() || (dots == std::string::npos && labels != sizes.size())) {
      return a.Error(absl::StrCat("einsum: term '", term, "' does not fit operand of sizes ",
                                  SizesToString(t->tensor().sizes)));
    }
    const size_t ell = sizes.size() - labels;
    size_t dim = 0;
    for (size_t c = 0; c < term.size(); ++c) {
      if (c == dots) {
        ASSIGN_OR_RETURN(ellipsis, BroadcastOrError(a, ellipsis, Dims(sizes.begin() + dim,
                                                                      sizes.begin() + dim + ell)));
        dim += ell;
        c += 2;
        continue;
      }
      const char l = term[c];
      ++label_count[l];
      Dim& known = label_size[l];
      const Dim d = sizes[dim++];
      if (known && d && *known != *d && *known != 1 && *d != 1) {
        return a.Error(absl::StrCat("einsum: label '", std::string(1, l), "' has sizes ", *known,
                                    " and ", *d));
      }
      if (!known || (d && *known == 1)) known = d;
    }
  }
  std::string out_labels;
  bool out_ellipsis = false;
  if (arrow != std::string::npos) {
    out_labels = e.substr(arrow + 2);
    size_t dots = out_labels.find("...");
    if (dots != std::string::npos) {
      out_ellipsis = true;
      out_labels.erase(dots, 3);
      // Only the common "...ij" placement is kept exact.
      if (dots != 0) return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
    }
  } else {
    out_ellipsis = true;
    for (const auto& [l, n] : label_count) {
      if (n == 1) out_labels += l;
    }
  }
  Dims out;
  if (out_ellipsis && ellipsis) out = *ellipsis;
  for (char l : out_labels) {
    auto it = label_size.find(l);
    if (it == label_size.end()) return a.Error(absl::StrCat("einsum: output label '", std::string(1, l), "' is unknown"));
    out.push_back(it->second);
  }
  return Types{TensorOf(dtype, out, a.CommonDevice())};
}

// det / linalg_det: the last two (square) dims go.
absl::StatusOr<Types> Det(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  if (!x->sizes) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
  if (x->sizes->size() < 2) return a.Error("det expects at least 2 dims");
  RETURN_IF_ERROR(CheckDimsEqual(a, (*x->sizes)[x->sizes->size() - 2], x->sizes->back(),
                                 "det expects square matrices"));
  return Types{TensorOf(x->dtype, Dims(x->sizes->begin(), x->sizes->end() - 2), x->device)};
}

// kiln::qlinear_matmul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
// matmul's sizes of inputs 0 and 3, y_zero_point's dtype.
absl::StatusOr<Types> QLinearMatMul(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  const TensorInfo* y = a.Tensor(3);
  std::optional<DType> dtype = a.DTypeOf(7);
  if (!x || !y || !x->sizes || !y->sizes || x->sizes->empty() || y->sizes->empty()) {
    return Types{TensorOf(dtype, std::nullopt, a.CommonDevice())};
  }
  Dims xs = *x->sizes;
  Dims ys = *y->sizes;
  const bool x_vec = xs.size() == 1, y_vec = ys.size() == 1;
  if (x_vec) xs.insert(xs.begin(), Dim(1));
  if (y_vec) ys.push_back(Dim(1));
  RETURN_IF_ERROR(CheckDimsEqual(a, xs.back(), ys[ys.size() - 2], "inner dimensions differ"));
  ASSIGN_OR_RETURN(SymbolicSizes batch, BroadcastOrError(a, Dims(xs.begin(), xs.end() - 2),
                                                         Dims(ys.begin(), ys.end() - 2)));
  Dims out = batch.value_or(Dims());
  if (!x_vec) out.push_back(xs[xs.size() - 2]);
  if (!y_vec) out.push_back(ys.back());
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

// ------------------------------------------------------------ ONNX conv / pool

namespace {

// An ONNX per-spatial-dim list: k values, or defaults when empty.
std::optional<std::vector<int64_t>> OnnxList(const Args& a, size_t arg, size_t k, int64_t def) {
  std::optional<std::vector<int64_t>> v = a.IntList(arg);
  if (!v) return std::nullopt;
  if (v->empty()) return std::vector<int64_t>(k, def);
  if (v->size() == 1 && k > 1) return std::vector<int64_t>(k, (*v)[0]);
  if (v->size() != k) return std::nullopt;
  return v;
}

struct OnnxConvArgs {
  size_t x, w, stride, pads, dilation, groups;
  std::optional<size_t> output_padding;  // transposed only
  bool transposed = false;
};

absl::StatusOr<Types> OnnxConvShape(const Args& a, const OnnxConvArgs& c,
                                    std::optional<DType> dtype) {
  const TensorInfo* x = a.Tensor(c.x);
  const TensorInfo* w = a.Tensor(c.w);
  std::optional<ir::Device> device = a.CommonDevice();
  if (!x || !w || !x->sizes || !w->sizes) return Types{TensorOf(dtype, std::nullopt, device)};
  const Dims& xs = *x->sizes;
  const Dims& ws = *w->sizes;
  if (ws.size() < 3 || xs.size() != ws.size()) {
    return a.Error(absl::StrCat("convolution input of sizes ", SizesToString(x->sizes),
                                " does not fit a weight of sizes ", SizesToString(w->sizes)));
  }
  const size_t k = ws.size() - 2;
  Dim groups = a.Int(c.groups);
  Dims out{xs[0]};
  if (c.transposed) {
    out.push_back(groups && ws[1] ? Dim(*ws[1] * *groups) : std::nullopt);
  } else {
    if (groups && ws[1] && xs[1]) {
      RETURN_IF_ERROR(CheckDimsEqual(a, xs[1], Dim(*ws[1] * *groups),
                                     "input channels do not match weight channels * group"));
    }
    out.push_back(ws[0]);
  }
  std::optional<std::vector<int64_t>> stride = OnnxList(a, c.stride, k, 1);
  std::optional<std::vector<int64_t>> dilation = OnnxList(a, c.dilation, k, 1);
  std::optional<std::vector<int64_t>> pads = a.IntList(c.pads);
  if (pads && pads->empty()) pads = std::vector<int64_t>(2 * k, 0);
  if (pads && pads->size() != 2 * k) return a.Error(absl::StrCat("pads must have ", 2 * k, " values"));
  std::optional<std::vector<int64_t>> output_padding;
  if (c.transposed) {
    output_padding = c.output_padding ? OnnxList(a, *c.output_padding, k, 0) : std::vector<int64_t>(k, 0);
  }
  for (size_t i = 0; i < k; ++i) {
    Dim in = xs[2 + i], kernel = ws[2 + i];
    if (!in || !kernel || !stride || !dilation || !pads || (c.transposed && !output_padding)) {
      out.push_back(std::nullopt);
      continue;
    }
    const int64_t s = (*stride)[i], d = (*dilation)[i];
    const int64_t pb = (*pads)[i], pe = (*pads)[k + i];
    if (s <= 0 || d <= 0) return a.Error("stride and dilation must be positive");
    int64_t o;
    if (c.transposed) {
      o = (*in - 1) * s - pb - pe + d * (*kernel - 1) + (*output_padding)[i] + 1;
    } else {
      o = FloorDiv(*in + pb + pe - d * (*kernel - 1) - 1, s) + 1;
    }
    if (o < 1) return a.Error(absl::StrCat("convolution output size ", o, " is too small"));
    out.push_back(o);
  }
  return Types{TensorOf(dtype, out, device)};
}

std::optional<DType> DTypeOfFirst(const Args& a, size_t i, size_t j) {
  std::optional<DType> d = a.DTypeOf(i);
  return d ? d : a.DTypeOf(j);
}

}  // namespace

absl::StatusOr<Types> OnnxConv(const Args& a) {
  return OnnxConvShape(a, {0, 1, 3, 4, 5, 6}, DTypeOfFirst(a, 0, 1));
}

absl::StatusOr<Types> OnnxConvTranspose(const Args& a) {
  OnnxConvArgs c{0, 1, 3, 4, 5, 7, 6, true};
  return OnnxConvShape(a, c, DTypeOfFirst(a, 0, 1));
}

absl::StatusOr<Types> OnnxConvInteger(const Args& a) {
  return OnnxConvShape(a, {0, 1, 4, 5, 6, 7}, DType::kInt32);
}

absl::StatusOr<Types> OnnxQLinearConv(const Args& a) {
  return OnnxConvShape(a, {0, 3, 9, 10, 11, 12}, a.DTypeOf(7));
}

// kiln::{max,avg,lp}_pool_nd(x, kernel, stride, pads, dilation, ceil_mode, ...).
ShapeImpl OnnxPool(bool with_indices) {
  return [with_indices](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    if (!x) return Types(with_indices ? 2 : 1, Type::Tensor());
    auto result = [&](SymbolicSizes s) {
      Types r{TensorOf(x->dtype, s, x->device)};
      if (with_indices) r.push_back(TensorOf(DType::kInt64, s, x->device));
      return r;
    };
    std::optional<std::vector<int64_t>> kernel = a.IntList(1);
    if (!x->sizes || !kernel) {
      return result(x->sizes ? SymbolicSizes(Dims(x->sizes->size())) : std::nullopt);
    }
    const Dims& xs = *x->sizes;
    const size_t k = kernel->size();
    if (k == 0 || xs.size() != k + 2) {
      return a.Error(absl::StrCat("kernel of ", k, " dims does not fit input of sizes ",
                                  SizesToString(x->sizes)));
    }
    std::optional<std::vector<int64_t>> stride = OnnxList(a, 2, k, 1);
    std::optional<std::vector<int64_t>> dilation = OnnxList(a, 4, k, 1);
    std::optional<std::vector<int64_t>> pads = a.IntList(3);
    if (pads && pads->empty()) pads = std::vector<int64_t>(2 * k, 0);
    std::optional<bool> ceil_mode = a.Bool(5);
    Dims out{xs[0], xs[1]};
    for (size_t i = 0; i < k; ++i) {
      Dim in = xs[2 + i];
      if (!in || !stride || !dilation || !pads || pads->size() != 2 * k || !ceil_mode) {
        out.push_back(std::nullopt);
        continue;
      }
      const int64_t kk = (*kernel)[i], s = (*stride)[i], d = (*dilation)[i];
      const int64_t pb = (*pads)[i], pe = (*pads)[k + i];
      if (kk <= 0 || s <= 0 || d <= 0) return a.Error("kernel, stride and dilation must be positive");
      const int64_t span = *in + pb + pe - d * (kk - 1) - 1;
      int64_t o = FloorDiv(span + (*ceil_mode ? s - 1 : 0), s) + 1;
      // The last window must start inside the input or its begin padding.
      if (*ceil_mode && (o - 1) * s >= *in + pb) --o;
      if (o < 1) return a.Error(absl::StrCat("pooling output size ", o, " is too small"));
      out.push_back(o);
    }
    return result(out);
  };
}

// kiln::global_lp_pool(x, p): [N, C, 1, ...].
absl::StatusOr<Types> GlobalPool(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  SymbolicSizes out;
  if (x->sizes) {
    if (x->sizes->size() < 3) return a.Error("global pooling expects at least 3 dims");
    Dims o{(*x->sizes)[0], (*x->sizes)[1]};
    o.resize(x->sizes->size(), Dim(1));
    out = std::move(o);
  }
  return Types{TensorOf(x->dtype, out, x->device)};
}

// max_unpool{2,3}d(self, indices, output_size, ...): [*lead, *output_size].
ShapeImpl MaxUnpool(size_t k) {
  return [k](const Args& a) -> absl::StatusOr<Types> {
    const TensorInfo* x = a.Tensor(0);
    if (!x) return Types{Type::Tensor()};
    if (!x->sizes) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
    if (x->sizes->size() != k + 1 && x->sizes->size() != k + 2) {
      return a.Error(absl::StrCat("max_unpool expects ", k + 1, " or ", k + 2, " dims"));
    }
    SymbolicSizes size = a.IntListElements(2);
    Dims out(x->sizes->begin(), x->sizes->end() - k);
    for (size_t i = 0; i < k; ++i) out.push_back(size && size->size() == k ? (*size)[i] : std::nullopt);
    return Types{TensorOf(x->dtype, out, x->device)};
  };
}

// kiln::max_unpool_nd(x, indices, kernel, stride, pads, output_shape?):
// (in - 1) * stride - pads + kernel, or output_shape's spatial sizes.
absl::StatusOr<Types> OnnxMaxUnpool(const Args& a) {
  const TensorInfo* x = a.Tensor(0);
  if (!x) return Types{Type::Tensor()};
  std::optional<std::vector<int64_t>> kernel = a.IntList(2);
  if (!x->sizes || !kernel) return Types{TensorOf(x->dtype, std::nullopt, x->device)};
  const size_t k = kernel->size();
  const Dims& xs = *x->sizes;
  if (k == 0 || xs.size() != k + 2) return a.Error("kernel does not fit the input");
  Dims out{xs[0], xs[1]};
  if (!a.IsNone(5)) {
    std::optional<std::vector<int64_t>> shape = a.ConstTensorInts(5);
    for (size_t i = 0; i < k; ++i) {
      out.push_back(shape && shape->size() == k + 2 ? Dim((*shape)[i + 2]) : std::nullopt);
    }
    return Types{TensorOf(x->dtype, out, x->device)};
  }
  std::optional<std::vector<int64_t>> stride = OnnxList(a, 3, k, 1);
  std::optional<std::vector<int64_t>> pads = a.IntList(4);
  if (pads && pads->empty()) pads = std::vector<int64_t>(2 * k, 0);
  for (size_t i = 0; i < k; ++i) {
    if (!xs[2 + i] || !stride || !pads || pads->size() != 2 * k) {
      out.push_back(std::nullopt);
      continue;
    }
    out.push_back((*xs[2 + i] - 1) * (*stride)[i] - (*pads)[i] - (*pads)[k + i] + (*kernel)[i]);
  }
  return Types{TensorOf(x->dtype, out, x->device)};
}

}  // namespace kiln::passes::shape_internal
