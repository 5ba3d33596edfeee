// Reference kernels of the special op family (see kernels_special.h).
#include "runtime/kernels_special.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

constexpr double kPi = 3.14159265358979323846;

absl::Status Invalid(const char* op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

absl::Status RequireData(const Tensor& t, const char* op, const char* what) {
  if (!t.defined() || !t.has_data()) {
    return Invalid(op, absl::StrCat(what, " has no data"));
  }
  return absl::OkStatus();
}

absl::Status RequireFloat(const Tensor& t, const char* op, const char* what) {
  RETURN_IF_ERROR(RequireData(t, op, what));
  if (!IsFloatingPoint(t.dtype())) {
    return Invalid(op, absl::StrCat(what, " must be a floating-point tensor, got ",
                                    DTypeName(t.dtype())));
  }
  if (!IsStorableDType(t.dtype())) {
    return absl::UnimplementedError(
        absl::StrCat(op, ": dtype ", DTypeName(t.dtype()), " is not supported"));
  }
  return absl::OkStatus();
}

absl::Status RequireInteger(const Tensor& t, const char* op, const char* what) {
  RETURN_IF_ERROR(RequireData(t, op, what));
  if (!IsIntegral(t.dtype(), /*include_bool=*/false)) {
    return Invalid(op, absl::StrCat(what, " must be an integer tensor, got ",
                                    DTypeName(t.dtype())));
  }
  return absl::OkStatus();
}

absl::Status RequireStorable(DType dtype, const char* op) {
  if (!IsStorableDType(dtype)) {
    return absl::UnimplementedError(
        absl::StrCat(op, ": dtype ", DTypeName(dtype), " is not supported"));
  }
  return absl::OkStatus();
}

int64_t Product(absl::Span<const int64_t> sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Guards allocations driven by attacker-controlled sizes.
constexpr int64_t kMaxElements = int64_t{1} << 28;
// Bounds the naive O(n^2) transforms (multiply-adds).
constexpr double kMaxTransformWork = 4e9;

absl::Status CheckSizes(absl::Span<const int64_t> sizes, const char* op) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (s < 0) return Invalid(op, absl::StrCat("negative size in ", ShapeToString(sizes)));
    if (s != 0 && n > kMaxElements / s) {
      return Invalid(op, absl::StrCat("shape ", ShapeToString(sizes), " is too large"));
    }
    n *= s;
  }
  return absl::OkStatus();
}

// Values of a tensor of any strides as doubles, in logical order.
std::vector<double> ReadDoubles(const Tensor& t) {
  const int64_t n = t.numel();
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = t.GetDouble(i);
  return v;
}

// Integer range of a quantized dtype.
absl::StatusOr<std::pair<int64_t, int64_t>> IntRange(DType dtype, const char* op) {
  switch (dtype) {
    case DType::kUInt8: return std::make_pair(int64_t{0}, int64_t{255});
    case DType::kInt8: return std::make_pair(int64_t{-128}, int64_t{127});
    case DType::kUInt16: return std::make_pair(int64_t{0}, int64_t{65535});
    case DType::kInt16: return std::make_pair(int64_t{-32768}, int64_t{32767});
    case DType::kInt32:
      return std::make_pair(int64_t{std::numeric_limits<int32_t>::min()},
                            int64_t{std::numeric_limits<int32_t>::max()});
    default:
      return absl::UnimplementedError(
          absl::StrCat(op, ": quantized dtype ", DTypeName(dtype), " is not supported"));
  }
}

int64_t Saturate(double v, std::pair<int64_t, int64_t> range) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(range.first)) return range.first;
  if (v >= static_cast<double>(range.second)) return range.second;
  return static_cast<int64_t>(v);
}

// Round half to even (the default floating-point rounding mode).
double RoundHalfEven(double v) { return std::nearbyint(v); }

}  // namespace

// ------------------------------------------------------------------ helpers

absl::StatusOr<double> ScalarDoubleOf(const Tensor& t, const char* op, const char* what) {
  RETURN_IF_ERROR(RequireData(t, op, what));
  if (t.numel() != 1) {
    return Invalid(op, absl::StrCat(what, " must hold one element, got shape ",
                                    ShapeToString(t.sizes())));
  }
  return t.GetDouble(0);
}

absl::StatusOr<int64_t> ScalarIntOf(const Tensor& t, const char* op, const char* what) {
  RETURN_IF_ERROR(RequireData(t, op, what));
  if (t.numel() != 1) {
    return Invalid(op, absl::StrCat(what, " must hold one element, got shape ",
                                    ShapeToString(t.sizes())));
  }
  if (IsFloatingPoint(t.dtype())) {
    const double v = t.GetDouble(0);
    if (!std::isfinite(v) || v != std::floor(v)) {
      return Invalid(op, absl::StrCat(what, " must be an integer, got ", v));
    }
  }
  return t.GetInt(0);
}

// ------------------------------------------------------------------- losses

absl::StatusOr<LossReduction> LossReductionFromCode(int64_t code, const char* op) {
  if (code < 0 || code > 2) {
    return Invalid(op, absl::StrCat("reduction must be 0 (none), 1 (mean) or 2 (sum), got ",
                                    code));
  }
  return static_cast<LossReduction>(code);
}

namespace {

// The (N, C, D) view of a loss input: input (C) or (N, C, d1, ...).
struct LossGeometry {
  int64_t n = 1, c = 0, d = 1;
  std::vector<int64_t> target_sizes;  // expected target shape
};

absl::StatusOr<LossGeometry> LossShapes(const Tensor& input, const char* op) {
  LossGeometry g;
  if (input.dim() == 0) return Invalid(op, "input must have at least one dimension");
  if (input.dim() == 1) {
    g.c = input.size(0);
    return g;
  }
  g.n = input.size(0);
  g.c = input.size(1);
  g.target_sizes.push_back(g.n);
  for (int64_t i = 2; i < input.dim(); ++i) {
    g.d *= input.size(i);
    g.target_sizes.push_back(input.size(i));
  }
  return g;
}

absl::StatusOr<std::vector<double>> LossWeights(const std::optional<Tensor>& weight, int64_t c,
                                                const char* op) {
  if (!weight) return std::vector<double>(static_cast<size_t>(c), 1.0);
  RETURN_IF_ERROR(RequireFloat(*weight, op, "weight"));
  if (weight->dim() != 1 || weight->size(0) != c) {
    return Invalid(op, absl::StrCat("weight must have shape [", c, "], got ",
                                    ShapeToString(weight->sizes())));
  }
  return ReadDoubles(*weight);
}

// Per-position class index of `target` (validated), or -1 when ignored.
absl::StatusOr<std::vector<int64_t>> LossTargets(const Tensor& target, const LossGeometry& g,
                                                 int64_t ignore_index, const char* op) {
  RETURN_IF_ERROR(RequireInteger(target, op, "target"));
  if (target.sizes() != g.target_sizes) {
    return Invalid(op, absl::StrCat("target shape ", ShapeToString(target.sizes()),
                                    " does not match the expected ",
                                    ShapeToString(g.target_sizes)));
  }
  std::vector<int64_t> classes(static_cast<size_t>(target.numel()));
  for (int64_t i = 0; i < target.numel(); ++i) {
    const int64_t t = target.GetInt(i);
    if (t == ignore_index) {
      classes[static_cast<size_t>(i)] = -1;
      continue;
    }
    if (t < 0 || t >= g.c) {
      return Invalid(op, absl::StrCat("target ", t, " is out of bounds for ", g.c, " classes"));
    }
    classes[static_cast<size_t>(i)] = t;
  }
  return classes;
}

// Per-position losses -> the reduced result in `dtype`.
absl::StatusOr<Tensor> ReduceLoss(const std::vector<double>& losses, double weight_sum,
                                  const std::vector<int64_t>& sizes, LossReduction reduction,
                                  DType dtype) {
  if (reduction == LossReduction::kNone) {
    Tensor out = Tensor::Empty(dtype, sizes);
    for (size_t i = 0; i < losses.size(); ++i) {
      RETURN_IF_ERROR(SetDouble(out, static_cast<int64_t>(i), losses[i]));
    }
    return out;
  }
  double total = 0;
  for (double l : losses) total += l;
  if (reduction == LossReduction::kMean) total /= weight_sum;  // 0/0 is NaN, as in PyTorch
  Tensor out = Tensor::Empty(dtype, {});
  RETURN_IF_ERROR(SetDouble(out, 0, total));
  return out;
}

}  // namespace

absl::StatusOr<Tensor> NllLoss(const Tensor& input, const Tensor& target,
                               const std::optional<Tensor>& weight, LossReduction reduction,
                               int64_t ignore_index) {
  const char* op = "nll_loss";
  RETURN_IF_ERROR(RequireFloat(input, op, "input"));
  ASSIGN_OR_RETURN(LossGeometry g, LossShapes(input, op));
  ASSIGN_OR_RETURN(std::vector<double> w, LossWeights(weight, g.c, op));
  ASSIGN_OR_RETURN(std::vector<int64_t> classes, LossTargets(target, g, ignore_index, op));
  std::vector<double> losses(classes.size(), 0.0);
  double weight_sum = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t d = 0; d < g.d; ++d) {
      const size_t pos = static_cast<size_t>(n * g.d + d);
      const int64_t cls = classes[pos];
      if (cls < 0) continue;
      const double wc = w[static_cast<size_t>(cls)];
      losses[pos] = -wc * input.GetDouble((n * g.c + cls) * g.d + d);
      weight_sum += wc;
    }
  }
  return ReduceLoss(losses, weight_sum, g.target_sizes, reduction, input.dtype());
}

absl::StatusOr<Tensor> CrossEntropyLoss(const Tensor& input, const Tensor& target,
                                        const std::optional<Tensor>& weight,
                                        LossReduction reduction, int64_t ignore_index,
                                        double label_smoothing) {
  const char* op = "cross_entropy_loss";
  RETURN_IF_ERROR(RequireFloat(input, op, "input"));
  RETURN_IF_ERROR(RequireData(target, op, "target"));
  if (!(label_smoothing >= 0.0 && label_smoothing <= 1.0)) {
    return Invalid(op, absl::StrCat("label_smoothing must lie in [0, 1], got ", label_smoothing));
  }
  ASSIGN_OR_RETURN(LossGeometry g, LossShapes(input, op));
  ASSIGN_OR_RETURN(std::vector<double> w, LossWeights(weight, g.c, op));
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  ASSIGN_OR_RETURN(Tensor logp, Softmax(input, class_dim, std::nullopt, /*log=*/true));
  auto lp = [&](int64_t n, int64_t c, int64_t d) { return logp.GetDouble((n * g.c + c) * g.d + d); };
  const double cdouble = static_cast<double>(g.c);
  std::vector<double> losses(static_cast<size_t>(g.n * g.d), 0.0);

  if (IsFloatingPoint(target.dtype())) {
    // Class probabilities: -sum_c w_c * p_c * log q_c; the mean divides by
    // the number of positions.
    if (target.sizes() != input.sizes()) {
      return Invalid(op, absl::StrCat("probability target shape ", ShapeToString(target.sizes()),
                                      " must equal the input shape ",
                                      ShapeToString(input.sizes())));
    }
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t d = 0; d < g.d; ++d) {
        double l = 0;
        for (int64_t c = 0; c < g.c; ++c) {
          double p = target.GetDouble((n * g.c + c) * g.d + d);
          p = p * (1 - label_smoothing) + label_smoothing / cdouble;
          l -= w[static_cast<size_t>(c)] * p * lp(n, c, d);
        }
        losses[static_cast<size_t>(n * g.d + d)] = l;
      }
    }
    return ReduceLoss(losses, static_cast<double>(g.n * g.d), g.target_sizes, reduction,
                      input.dtype());
  }

  ASSIGN_OR_RETURN(std::vector<int64_t> classes, LossTargets(target, g, ignore_index, op));
  double weight_sum = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t d = 0; d < g.d; ++d) {
      const size_t pos = static_cast<size_t>(n * g.d + d);
      const int64_t cls = classes[pos];
      if (cls < 0) continue;
      const double wc = w[static_cast<size_t>(cls)];
      double l = -wc * lp(n, cls, d);
      if (label_smoothing > 0) {
        // PyTorch mixes in the uniform-target loss, weighted per class.
        double smooth = 0;
        for (int64_t c = 0; c < g.c; ++c) smooth -= w[static_cast<size_t>(c)] * lp(n, c, d);
        l = (1 - label_smoothing) * l + label_smoothing / cdouble * smooth;
      }
      losses[pos] = l;
      weight_sum += wc;
    }
  }
  return ReduceLoss(losses, weight_sum, g.target_sizes, reduction, input.dtype());
}

// ---------------------------------------------------------------- detection

namespace {

struct Box {
  double y1, x1, y2, x2;
  double Area() const { return (y2 - y1) * (x2 - x1); }
};

Box ReadBox(const Tensor& boxes, int64_t base, bool center_point_box) {
  const double a = boxes.GetDouble(base), b = boxes.GetDouble(base + 1);
  const double c = boxes.GetDouble(base + 2), d = boxes.GetDouble(base + 3);
  if (center_point_box) {
    // (x_center, y_center, width, height)
    return {b - d / 2, a - c / 2, b + d / 2, a + c / 2};
  }
  return {std::min(a, c), std::min(b, d), std::max(a, c), std::max(b, d)};
}

double Iou(const Box& p, const Box& q) {
  const double area_p = p.Area(), area_q = q.Area();
  if (area_p <= 0 || area_q <= 0) return 0;
  const double ih = std::min(p.y2, q.y2) - std::max(p.y1, q.y1);
  const double iw = std::min(p.x2, q.x2) - std::max(p.x1, q.x1);
  if (ih <= 0 || iw <= 0) return 0;
  const double inter = ih * iw;
  return inter / (area_p + area_q - inter);
}

}  // namespace

absl::StatusOr<Tensor> NonMaxSuppression(const Tensor& boxes, const Tensor& scores,
                                         int64_t max_output_boxes_per_class,
                                         double iou_threshold, double score_threshold,
                                         bool center_point_box) {
  const char* op = "NonMaxSuppression";
  RETURN_IF_ERROR(RequireFloat(boxes, op, "boxes"));
  RETURN_IF_ERROR(RequireFloat(scores, op, "scores"));
  if (boxes.dim() != 3 || boxes.size(2) != 4) {
    return Invalid(op, absl::StrCat("boxes must be [batch, boxes, 4], got ",
                                    ShapeToString(boxes.sizes())));
  }
  if (scores.dim() != 3 || scores.size(0) != boxes.size(0) || scores.size(2) != boxes.size(1)) {
    return Invalid(op, absl::StrCat("scores must be [batch, classes, boxes] matching boxes ",
                                    ShapeToString(boxes.sizes()), ", got ",
                                    ShapeToString(scores.sizes())));
  }
  if (!(iou_threshold >= 0 && iou_threshold <= 1)) {
    return Invalid(op, absl::StrCat("iou_threshold must lie in [0, 1], got ", iou_threshold));
  }
  const int64_t batches = boxes.size(0), num_boxes = boxes.size(1), classes = scores.size(1);
  std::vector<int64_t> selected;  // triples
  if (max_output_boxes_per_class > 0) {
    for (int64_t b = 0; b < batches; ++b) {
      std::vector<Box> bx(static_cast<size_t>(num_boxes));
      for (int64_t i = 0; i < num_boxes; ++i) {
        bx[static_cast<size_t>(i)] = ReadBox(boxes, (b * num_boxes + i) * 4, center_point_box);
      }
      for (int64_t c = 0; c < classes; ++c) {
        std::vector<std::pair<double, int64_t>> candidates;
        for (int64_t i = 0; i < num_boxes; ++i) {
          const double s = scores.GetDouble((b * classes + c) * num_boxes + i);
          if (s > score_threshold) candidates.emplace_back(s, i);
        }
        // Highest score first; ties keep the lower box index first.
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const auto& l, const auto& r) { return l.first > r.first; });
        std::vector<int64_t> kept;
        for (const auto& [s, i] : candidates) {
          if (static_cast<int64_t>(kept.size()) >= max_output_boxes_per_class) break;
          bool suppressed = false;
          for (int64_t k : kept) {
            if (Iou(bx[static_cast<size_t>(k)], bx[static_cast<size_t>(i)]) > iou_threshold) {
              suppressed = true;
              break;
            }
          }
          if (!suppressed) kept.push_back(i);
        }
        for (int64_t k : kept) selected.insert(selected.end(), {b, c, k});
      }
    }
  }
  const int64_t rows = static_cast<int64_t>(selected.size() / 3);
  Tensor out = Tensor::Empty(DType::kInt64, {rows, 3});
  for (size_t i = 0; i < selected.size(); ++i) {
    RETURN_IF_ERROR(SetInt(out, static_cast<int64_t>(i), selected[i]));
  }
  return out;
}

// ------------------------------------------------------------- quantization

namespace {

// Which scale / zero-point element applies to each flat index of `x`.
struct QuantParams {
  std::vector<double> scale;
  std::vector<int64_t> zero_point;
  int64_t inner = 1;  // elements per step along the axis
  int64_t axis_size = 1;
  size_t Index(int64_t flat) const {
    return scale.size() == 1 ? 0 : static_cast<size_t>((flat / inner) % axis_size);
  }
};

absl::StatusOr<QuantParams> ReadQuantParams(const Tensor& x, const Tensor& scale,
                                            const std::optional<Tensor>& zero_point,
                                            int64_t axis, const char* op) {
  RETURN_IF_ERROR(RequireFloat(scale, op, "scale"));
  QuantParams q;
  q.scale = ReadDoubles(scale);
  if (scale.numel() != 1) {
    if (scale.dim() != 1) {
      return Invalid(op, absl::StrCat("scale must be a scalar or 1-D, got shape ",
                                      ShapeToString(scale.sizes())));
    }
    ASSIGN_OR_RETURN(int64_t a, NormalizeDim(axis, x.dim(), op));
    if (x.size(a) != scale.size(0)) {
      return Invalid(op, absl::StrCat("scale has ", scale.size(0), " elements but axis ", a,
                                      " of input ", ShapeToString(x.sizes()), " has ",
                                      x.size(a)));
    }
    q.axis_size = x.size(a);
    q.inner = Product(absl::MakeConstSpan(x.sizes()).subspan(static_cast<size_t>(a + 1)));
  } else if (scale.numel() == 0) {
    return Invalid(op, "scale is empty");
  }
  if (zero_point) {
    RETURN_IF_ERROR(RequireInteger(*zero_point, op, "zero_point"));
    if (zero_point->numel() != scale.numel()) {
      return Invalid(op, absl::StrCat("zero_point shape ", ShapeToString(zero_point->sizes()),
                                      " does not match scale shape ",
                                      ShapeToString(scale.sizes())));
    }
    for (int64_t i = 0; i < zero_point->numel(); ++i) q.zero_point.push_back(zero_point->GetInt(i));
  } else {
    q.zero_point.assign(q.scale.size(), 0);
  }
  return q;
}

}  // namespace

absl::StatusOr<Tensor> QuantizeLinear(const Tensor& x, const Tensor& scale,
                                      const std::optional<Tensor>& zero_point, int64_t axis,
                                      DType out_dtype) {
  const char* op = "QuantizeLinear";
  RETURN_IF_ERROR(RequireData(x, op, "x"));
  if (!IsFloatingPoint(x.dtype()) && x.dtype() != DType::kInt32) {
    return Invalid(op, absl::StrCat("x must be float or int32, got ", DTypeName(x.dtype())));
  }
  ASSIGN_OR_RETURN(QuantParams q, ReadQuantParams(x, scale, zero_point, axis, op));
  const DType dtype = zero_point ? zero_point->dtype() : out_dtype;
  ASSIGN_OR_RETURN(auto range, IntRange(dtype, op));
  // Float inputs divide in float, as the ONNX reference does: a quotient that
  // lands on .5 must round the same way.
  const bool in_float = x.dtype() == DType::kFloat32 && scale.dtype() == DType::kFloat32;
  Tensor out = Tensor::Empty(dtype, x.sizes());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t k = q.Index(i);
    if (q.scale[k] == 0) return Invalid(op, "scale must be non-zero");
    double v = in_float ? static_cast<double>(static_cast<float>(x.GetDouble(i)) /
                                              static_cast<float>(q.scale[k]))
                        : x.GetDouble(i) / q.scale[k];
    v = RoundHalfEven(v) + static_cast<double>(q.zero_point[k]);
    RETURN_IF_ERROR(SetInt(out, i, Saturate(v, range)));
  }
  return out;
}

absl::StatusOr<Tensor> DequantizeLinear(const Tensor& x, const Tensor& scale,
                                        const std::optional<Tensor>& zero_point, int64_t axis) {
  const char* op = "DequantizeLinear";
  RETURN_IF_ERROR(RequireInteger(x, op, "x"));
  ASSIGN_OR_RETURN(QuantParams q, ReadQuantParams(x, scale, zero_point, axis, op));
  Tensor out = Tensor::Empty(scale.dtype(), x.sizes());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t k = q.Index(i);
    RETURN_IF_ERROR(SetDouble(
        out, i, static_cast<double>(x.GetInt(i) - q.zero_point[k]) * q.scale[k]));
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> DynamicQuantizeLinear(const Tensor& x) {
  const char* op = "DynamicQuantizeLinear";
  RETURN_IF_ERROR(RequireFloat(x, op, "x"));
  // The reference works in float32 throughout; so does this.
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = static_cast<float>(x.GetDouble(i));
    if (std::isnan(v)) return Invalid(op, "x contains NaN");
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const float scale = (hi - lo) / 255.0f;
  const std::pair<int64_t, int64_t> range{0, 255};
  int64_t zp = 0;
  if (scale > 0) zp = Saturate(RoundHalfEven(static_cast<double>((0.0f - lo) / scale)), range);
  Tensor y = Tensor::Empty(DType::kUInt8, x.sizes());
  for (int64_t i = 0; i < x.numel(); ++i) {
    double v = 0;
    if (scale > 0) v = RoundHalfEven(static_cast<double>(static_cast<float>(x.GetDouble(i)) / scale));
    RETURN_IF_ERROR(SetInt(y, i, Saturate(v + static_cast<double>(zp), range)));
  }
  Tensor s = Tensor::Empty(DType::kFloat32, {});
  RETURN_IF_ERROR(SetDouble(s, 0, static_cast<double>(scale)));
  Tensor z = Tensor::Empty(DType::kUInt8, {});
  RETURN_IF_ERROR(SetInt(z, 0, zp));
  return std::vector<Tensor>{y, s, z};
}

absl::StatusOr<Tensor> QLinearMatMul(const Tensor& a, const Tensor& a_scale,
                                     const Tensor& a_zero_point, const Tensor& b,
                                     const Tensor& b_scale, const Tensor& b_zero_point,
                                     const Tensor& y_scale, const Tensor& y_zero_point) {
  const char* op = "QLinearMatMul";
  RETURN_IF_ERROR(RequireInteger(a, op, "a"));
  RETURN_IF_ERROR(RequireInteger(b, op, "b"));
  ASSIGN_OR_RETURN(double sa, ScalarDoubleOf(a_scale, op, "a_scale"));
  ASSIGN_OR_RETURN(double sb, ScalarDoubleOf(b_scale, op, "b_scale"));
  ASSIGN_OR_RETURN(double sy, ScalarDoubleOf(y_scale, op, "y_scale"));
  ASSIGN_OR_RETURN(int64_t za, ScalarIntOf(a_zero_point, op, "a_zero_point"));
  ASSIGN_OR_RETURN(int64_t zb, ScalarIntOf(b_zero_point, op, "b_zero_point"));
  ASSIGN_OR_RETURN(int64_t zy, ScalarIntOf(y_zero_point, op, "y_zero_point"));
  if (sy == 0) return Invalid(op, "y_scale must be non-zero");
  ASSIGN_OR_RETURN(auto range, IntRange(y_zero_point.dtype(), op));
  // Shift by the zero points (exact in int64), multiply as integers, then
  // requantize with the real multiplier sa * sb / sy.
  auto shifted = [](const Tensor& t, int64_t z) {
    Tensor s = Tensor::Empty(DType::kInt64, t.sizes());
    for (int64_t i = 0; i < t.numel(); ++i) (void)SetInt(s, i, t.GetInt(i) - z);
    return s;
  };
  ASSIGN_OR_RETURN(Tensor acc, Matmul(shifted(a, za), shifted(b, zb)));
  const double multiplier = static_cast<double>(static_cast<float>(sa) * static_cast<float>(sb) /
                                                static_cast<float>(sy));
  Tensor out = Tensor::Empty(y_zero_point.dtype(), acc.sizes());
  for (int64_t i = 0; i < acc.numel(); ++i) {
    const double v = RoundHalfEven(static_cast<double>(acc.GetInt(i)) * multiplier) +
                     static_cast<double>(zy);
    RETURN_IF_ERROR(SetInt(out, i, Saturate(v, range)));
  }
  return out;
}

// -------------------------------------------------------- signal processing

absl::StatusOr<Tensor> Window(const CosineWindow& w, int64_t length, bool periodic,
                              DType dtype, const char* op) {
  if (length < 0) return Invalid(op, absl::StrCat("window length must be >= 0, got ", length));
  RETURN_IF_ERROR(CheckSizes({length}, op));
  if (!IsFloatingPoint(dtype) && !IsIntegral(dtype, /*include_bool=*/false)) {
    return Invalid(op, absl::StrCat("unsupported window dtype ", DTypeName(dtype)));
  }
  RETURN_IF_ERROR(RequireStorable(dtype, op));
  Tensor out = Tensor::Empty(dtype, {length});
  if (length == 1) {
    RETURN_IF_ERROR(SetDouble(out, 0, 1.0));
    return out;
  }
  const double m = static_cast<double>(periodic ? length : length - 1);
  for (int64_t n = 0; n < length; ++n) {
    const double t = 2 * kPi * static_cast<double>(n) / m;
    RETURN_IF_ERROR(SetDouble(out, n, w.a0 - w.a1 * std::cos(t) + w.a2 * std::cos(2 * t)));
  }
  return out;
}

absl::StatusOr<Tensor> MelWeightMatrix(int64_t num_mel_bins, int64_t dft_length,
                                       int64_t sample_rate, double lower_edge_hertz,
                                       double upper_edge_hertz, DType dtype) {
  const char* op = "MelWeightMatrix";
  if (num_mel_bins <= 0 || dft_length <= 0 || sample_rate <= 0) {
    return Invalid(op, "num_mel_bins, dft_length and sample_rate must be positive");
  }
  if (!(lower_edge_hertz >= 0 && lower_edge_hertz < upper_edge_hertz &&
        std::isfinite(upper_edge_hertz))) {
    return Invalid(op, absl::StrCat("need 0 <= lower_edge_hertz < upper_edge_hertz, got ",
                                    lower_edge_hertz, " and ", upper_edge_hertz));
  }
  const int64_t bins = dft_length / 2 + 1;
  RETURN_IF_ERROR(CheckSizes({bins, num_mel_bins}, op));
  RETURN_IF_ERROR(RequireStorable(dtype, op));
  auto hz_to_mel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  const double low_mel = hz_to_mel(lower_edge_hertz);
  const double high_mel = hz_to_mel(upper_edge_hertz);
  const double step = (high_mel - low_mel) / static_cast<double>(num_mel_bins + 2);
  // Edge points (in spectrogram bins) of the triangular filters.
  std::vector<int64_t> points(static_cast<size_t>(num_mel_bins + 2));
  for (int64_t i = 0; i < num_mel_bins + 2; ++i) {
    const double mel = static_cast<double>(i) * step + low_mel;
    const double hz = 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
    const double bin = std::floor(static_cast<double>(dft_length + 1) * hz /
                                  static_cast<double>(sample_rate));
    points[static_cast<size_t>(i)] = std::clamp<int64_t>(static_cast<int64_t>(bin), 0, bins - 1);
  }
  std::vector<double> m(static_cast<size_t>(bins * num_mel_bins), 0.0);
  auto at = [&](int64_t row, int64_t col) -> double& {
    return m[static_cast<size_t>(row * num_mel_bins + col)];
  };
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t left = points[static_cast<size_t>(i)];
    const int64_t center = points[static_cast<size_t>(i + 1)];
    const int64_t right = points[static_cast<size_t>(i + 2)];
    if (center == left) {
      at(center, i) = 1;
    } else {
      for (int64_t j = left; j <= center; ++j) {
        at(j, i) = static_cast<double>(j - left) / static_cast<double>(center - left);
      }
    }
    for (int64_t j = center; j < right; ++j) {
      at(j, i) = static_cast<double>(right - j) / static_cast<double>(right - center);
    }
  }
  Tensor out = Tensor::Empty(dtype, {bins, num_mel_bins});
  for (size_t i = 0; i < m.size(); ++i) RETURN_IF_ERROR(SetDouble(out, static_cast<int64_t>(i), m[i]));
  return out;
}

namespace {

// Naive DFT of `n` complex points; `out` gets `bins` of them. The angle uses
// (k * j) mod n so that large indices keep their precision.
void NaiveDft(const std::vector<double>& re, const std::vector<double>& im, int64_t n,
              int64_t bins, bool inverse, std::vector<double>* out_re,
              std::vector<double>* out_im) {
  out_re->assign(static_cast<size_t>(bins), 0.0);
  out_im->assign(static_cast<size_t>(bins), 0.0);
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t k = 0; k < bins; ++k) {
    double sr = 0, si = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double angle = sign * 2 * kPi * static_cast<double>((k * j) % n) / static_cast<double>(n);
      const double c = std::cos(angle), s = std::sin(angle);
      const double xr = re[static_cast<size_t>(j)], xi = im[static_cast<size_t>(j)];
      sr += xr * c - xi * s;
      si += xr * s + xi * c;
    }
    if (inverse) {
      sr /= static_cast<double>(n);
      si /= static_cast<double>(n);
    }
    (*out_re)[static_cast<size_t>(k)] = sr;
    (*out_im)[static_cast<size_t>(k)] = si;
  }
}

}  // namespace

absl::StatusOr<Tensor> Dft(const Tensor& x, std::optional<int64_t> dft_length, int64_t axis,
                           bool inverse, bool onesided) {
  const char* op = "DFT";
  RETURN_IF_ERROR(RequireFloat(x, op, "input"));
  const int64_t rank = x.dim();
  if (rank < 2 || (x.size(rank - 1) != 1 && x.size(rank - 1) != 2)) {
    return Invalid(op, absl::StrCat("input must be [..., 1] (real) or [..., 2] (complex), got ",
                                    ShapeToString(x.sizes())));
  }
  const bool complex_in = x.size(rank - 1) == 2;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank - 1) {
    return Invalid(op, absl::StrCat("axis must name a signal dim of input ",
                                    ShapeToString(x.sizes())));
  }
  const int64_t len = x.size(axis);
  const int64_t n = dft_length.value_or(len);
  if (n <= 0) return Invalid(op, absl::StrCat("dft_length must be positive, got ", n));
  if (onesided && complex_in) return Invalid(op, "onesided needs a real input");
  const int64_t bins = onesided ? n / 2 + 1 : n;
  std::vector<int64_t> out_sizes = x.sizes();
  out_sizes[static_cast<size_t>(axis)] = bins;
  out_sizes.back() = 2;
  RETURN_IF_ERROR(CheckSizes(out_sizes, op));
  // Index as [outer, len, inner, channels].
  const int64_t outer = Product(absl::MakeConstSpan(x.sizes()).subspan(0, static_cast<size_t>(axis)));
  const int64_t inner = Product(absl::MakeConstSpan(x.sizes())
                                    .subspan(static_cast<size_t>(axis + 1),
                                             static_cast<size_t>(rank - 2 - axis)));
  const int64_t ch = complex_in ? 2 : 1;
  if (static_cast<double>(outer) * static_cast<double>(inner) * static_cast<double>(bins) *
          static_cast<double>(n) > kMaxTransformWork) {
    return absl::UnimplementedError(
        absl::StrCat(op, ": a ", n, "-point transform of ", ShapeToString(x.sizes()),
                     " is too large for the reference kernel"));
  }
  Tensor out = Tensor::Empty(x.dtype(), out_sizes);
  std::vector<double> re(static_cast<size_t>(n)), im(static_cast<size_t>(n)), ore, oim;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double r = 0, m = 0;
        if (j < len) {
          const int64_t base = ((o * len + j) * inner + i) * ch;
          r = x.GetDouble(base);
          if (complex_in) m = x.GetDouble(base + 1);
        }
        re[static_cast<size_t>(j)] = r;
        im[static_cast<size_t>(j)] = m;
      }
      NaiveDft(re, im, n, bins, inverse, &ore, &oim);
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t base = ((o * bins + k) * inner + i) * 2;
        RETURN_IF_ERROR(SetDouble(out, base, ore[static_cast<size_t>(k)]));
        RETURN_IF_ERROR(SetDouble(out, base + 1, oim[static_cast<size_t>(k)]));
      }
    }
  }
  return out;
}

absl::StatusOr<Tensor> Stft(const Tensor& signal, int64_t frame_step,
                            const std::optional<Tensor>& window,
                            std::optional<int64_t> frame_length, bool onesided) {
  const char* op = "STFT";
  RETURN_IF_ERROR(RequireFloat(signal, op, "signal"));
  if (signal.dim() != 3 || (signal.size(2) != 1 && signal.size(2) != 2)) {
    return Invalid(op, absl::StrCat("signal must be [batch, length, 1|2], got ",
                                    ShapeToString(signal.sizes())));
  }
  const bool complex_in = signal.size(2) == 2;
  if (frame_step <= 0) return Invalid(op, absl::StrCat("frame_step must be positive, got ", frame_step));
  std::vector<double> win;
  if (window) {
    RETURN_IF_ERROR(RequireFloat(*window, op, "window"));
    if (window->dim() != 1) {
      return Invalid(op, absl::StrCat("window must be 1-D, got ", ShapeToString(window->sizes())));
    }
    if (frame_length && *frame_length != window->size(0)) {
      return Invalid(op, absl::StrCat("frame_length ", *frame_length,
                                      " does not match the window length ", window->size(0)));
    }
    win = ReadDoubles(*window);
  } else if (frame_length) {
    if (*frame_length <= 0) {
      return Invalid(op, absl::StrCat("frame_length must be positive, got ", *frame_length));
    }
    RETURN_IF_ERROR(CheckSizes({*frame_length}, op));
    win.assign(static_cast<size_t>(*frame_length), 1.0);
  } else {
    return Invalid(op, "needs a window or a frame_length");
  }
  const int64_t fl = static_cast<int64_t>(win.size());
  if (fl == 0) return Invalid(op, "frame length must be positive");
  if (onesided && complex_in) return Invalid(op, "onesided needs a real signal");
  const int64_t batch = signal.size(0), len = signal.size(1);
  if (len < fl) {
    return Invalid(op, absl::StrCat("signal length ", len, " is shorter than the frame length ", fl));
  }
  const int64_t frames = (len - fl) / frame_step + 1;
  const int64_t bins = onesided ? fl / 2 + 1 : fl;
  RETURN_IF_ERROR(CheckSizes({batch, frames, bins, 2}, op));
  if (static_cast<double>(batch) * static_cast<double>(frames) * static_cast<double>(bins) *
          static_cast<double>(fl) > kMaxTransformWork) {
    return absl::UnimplementedError(
        absl::StrCat(op, ": ", frames, " frames of ", fl, " points are too many for the "
                     "reference kernel"));
  }
  Tensor out = Tensor::Empty(signal.dtype(), {batch, frames, bins, 2});
  const int64_t ch = complex_in ? 2 : 1;
  std::vector<double> re(static_cast<size_t>(fl)), im(static_cast<size_t>(fl)), ore, oim;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < fl; ++j) {
        const int64_t base = (b * len + f * frame_step + j) * ch;
        const double w = win[static_cast<size_t>(j)];
        re[static_cast<size_t>(j)] = signal.GetDouble(base) * w;
        im[static_cast<size_t>(j)] = complex_in ? signal.GetDouble(base + 1) * w : 0.0;
      }
      NaiveDft(re, im, fl, bins, /*inverse=*/false, &ore, &oim);
      for (int64_t k = 0; k < bins; ++k) {
        const int64_t base = ((b * frames + f) * bins + k) * 2;
        RETURN_IF_ERROR(SetDouble(out, base, ore[static_cast<size_t>(k)]));
        RETURN_IF_ERROR(SetDouble(out, base + 1, oim[static_cast<size_t>(k)]));
      }
    }
  }
  return out;
}

// --------------------------------------------------------------------- text

absl::StatusOr<Tensor> TfIdfVectorize(const Tensor& x, const TfIdfOptions& o) {
  const char* op = "TfIdfVectorizer";
  RETURN_IF_ERROR(RequireInteger(x, op, "input"));
  if (x.dim() != 1 && x.dim() != 2) {
    return Invalid(op, absl::StrCat("input must be [C] or [N, C], got ", ShapeToString(x.sizes())));
  }
  if (o.mode != "TF" && o.mode != "IDF" && o.mode != "TFIDF") {
    return Invalid(op, absl::StrCat("mode must be TF, IDF or TFIDF, got '", o.mode, "'"));
  }
  if (o.min_gram_length < 1 || o.max_gram_length < o.min_gram_length || o.max_skip_count < 0) {
    return Invalid(op, "need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  }
  // Pool layout: ngram_counts[i] is where the (i + 1)-grams start.
  const int64_t pool = static_cast<int64_t>(o.pool_int64s.size());
  const int64_t levels = static_cast<int64_t>(o.ngram_counts.size());
  std::map<std::vector<int64_t>, int64_t> ngram_position;  // ngram -> position in pool order
  int64_t position = 0;
  for (int64_t lvl = 0; lvl < levels; ++lvl) {
    const int64_t start = o.ngram_counts[static_cast<size_t>(lvl)];
    const int64_t end = lvl + 1 < levels ? o.ngram_counts[static_cast<size_t>(lvl + 1)] : pool;
    const int64_t gram = lvl + 1;
    if (start < 0 || end < start || end > pool || (end - start) % gram != 0) {
      return Invalid(op, absl::StrCat("ngram_counts ", lvl, " does not split pool_int64s into ",
                                      gram, "-grams"));
    }
    for (int64_t p = start; p < end; p += gram) {
      std::vector<int64_t> key(o.pool_int64s.begin() + p, o.pool_int64s.begin() + p + gram);
      ngram_position.emplace(std::move(key), position++);
    }
  }
  if (static_cast<int64_t>(o.ngram_indexes.size()) != position) {
    return Invalid(op, absl::StrCat("ngram_indexes has ", o.ngram_indexes.size(),
                                    " entries for ", position, " n-grams"));
  }
  if (!o.weights.empty() && static_cast<int64_t>(o.weights.size()) != position) {
    return Invalid(op, absl::StrCat("weights has ", o.weights.size(), " entries for ", position,
                                    " n-grams"));
  }
  int64_t width = 0;
  for (int64_t idx : o.ngram_indexes) {
    if (idx < 0 || idx >= kMaxElements) return Invalid(op, "ngram_indexes must be non-negative");
    width = std::max(width, idx + 1);
  }
  const int64_t rows = x.dim() == 2 ? x.size(0) : 1;
  const int64_t cols = x.dim() == 2 ? x.size(1) : x.size(0);
  std::vector<int64_t> out_sizes = x.dim() == 2 ? std::vector<int64_t>{rows, width}
                                                : std::vector<int64_t>{width};
  RETURN_IF_ERROR(CheckSizes(out_sizes, op));
  Tensor out = Tensor::Empty(DType::kFloat32, out_sizes);
  std::vector<int64_t> key;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> counts(static_cast<size_t>(position), 0);
    for (int64_t n = o.min_gram_length; n <= std::min(o.max_gram_length, levels); ++n) {
      // Unigrams have no gaps to skip: count them once.
      // Skips wider than the row match nothing.
      const int64_t max_skip = n == 1 ? 0 : std::min(o.max_skip_count, cols);
      for (int64_t skip = 0; skip <= max_skip; ++skip) {
        const int64_t stride = skip + 1;
        for (int64_t i = 0; i + (n - 1) * stride < cols; ++i) {
          key.clear();
          for (int64_t k = 0; k < n; ++k) key.push_back(x.GetInt(r * cols + i + k * stride));
          auto it = ngram_position.find(key);
          if (it != ngram_position.end()) ++counts[static_cast<size_t>(it->second)];
        }
      }
    }
    for (int64_t p = 0; p < position; ++p) {
      const int64_t c = counts[static_cast<size_t>(p)];
      if (c == 0) continue;
      const double w = o.weights.empty() ? 1.0 : o.weights[static_cast<size_t>(p)];
      double v = static_cast<double>(c);
      if (o.mode == "IDF") v = w;
      else if (o.mode == "TFIDF") v = static_cast<double>(c) * w;
      const int64_t flat = r * width + o.ngram_indexes[static_cast<size_t>(p)];
      RETURN_IF_ERROR(SetDouble(out, flat, out.GetDouble(flat) + v));
    }
  }
  return out;
}

absl::StatusOr<StringTensor> StringNormalize(const StringTensor& x,
                                             const std::vector<std::string>& stopwords,
                                             bool case_sensitive,
                                             const std::string& case_change_action) {
  const char* op = "StringNormalizer";
  if (case_change_action != "NONE" && case_change_action != "LOWER" &&
      case_change_action != "UPPER") {
    return Invalid(op, absl::StrCat("case_change_action must be NONE, LOWER or UPPER, got '",
                                    case_change_action, "'"));
  }
  const bool two_dim = x.sizes.size() == 2;
  if (!(x.sizes.size() == 1 || (two_dim && x.sizes[0] == 1)) ||
      Product(x.sizes) != static_cast<int64_t>(x.data.size())) {
    return Invalid(op, absl::StrCat("input must be [C] or [1, C] strings, got shape ",
                                    ShapeToString(x.sizes), " with ", x.data.size(),
                                    " elements"));
  }
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  auto upper = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
  };
  std::vector<std::string> stops;
  for (const std::string& s : stopwords) stops.push_back(case_sensitive ? s : lower(s));
  StringTensor out;
  for (const std::string& s : x.data) {
    const std::string probe = case_sensitive ? s : lower(s);
    if (std::find(stops.begin(), stops.end(), probe) != stops.end()) continue;
    if (case_change_action == "LOWER") out.data.push_back(lower(s));
    else if (case_change_action == "UPPER") out.data.push_back(upper(s));
    else out.data.push_back(s);
  }
  // An empty result is one empty string, as ONNX specifies.
  if (out.data.empty()) out.data.push_back("");
  const int64_t c = static_cast<int64_t>(out.data.size());
  out.sizes = two_dim ? std::vector<int64_t>{1, c} : std::vector<int64_t>{c};
  return out;
}

// ----------------------------------------------------------- random/dropout

std::mt19937_64 MakeGenerator(std::optional<double> seed) {
  if (seed) {
    uint64_t bits = 0;
    const double s = *seed;
    static_assert(sizeof(bits) == sizeof(s), "double is 64-bit");
    std::memcpy(&bits, &s, sizeof(bits));
    return std::mt19937_64(bits);
  }
  static std::atomic<uint64_t> sequence{std::random_device{}()};
  return std::mt19937_64(sequence.fetch_add(0x9E3779B97F4A7C15ull));
}

namespace {

absl::Status CheckRandomDType(DType dtype, const char* op) {
  if (!IsFloatingPoint(dtype)) {
    return Invalid(op, absl::StrCat("dtype must be floating-point, got ", DTypeName(dtype)));
  }
  return RequireStorable(dtype, op);
}

}  // namespace

absl::StatusOr<Tensor> RandomUniform(absl::Span<const int64_t> sizes, double low, double high,
                                     DType dtype, std::mt19937_64& gen) {
  const char* op = "RandomUniform";
  RETURN_IF_ERROR(CheckSizes(sizes, op));
  RETURN_IF_ERROR(CheckRandomDType(dtype, op));
  if (!(low <= high)) return Invalid(op, absl::StrCat("need low <= high, got ", low, " and ", high));
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  Tensor out = Tensor::Empty(dtype, std::vector<int64_t>(sizes.begin(), sizes.end()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    // Clamp: rounding to a narrow dtype may not reach `high` exactly.
    double v = low + (high - low) * dist(gen);
    RETURN_IF_ERROR(SetDouble(out, i, std::min(v, high)));
  }
  return out;
}

absl::StatusOr<Tensor> RandomNormal(absl::Span<const int64_t> sizes, double mean, double stddev,
                                    DType dtype, std::mt19937_64& gen) {
  const char* op = "RandomNormal";
  RETURN_IF_ERROR(CheckSizes(sizes, op));
  RETURN_IF_ERROR(CheckRandomDType(dtype, op));
  if (!(stddev >= 0)) return Invalid(op, absl::StrCat("scale must be >= 0, got ", stddev));
  std::normal_distribution<double> dist(0.0, 1.0);
  Tensor out = Tensor::Empty(dtype, std::vector<int64_t>(sizes.begin(), sizes.end()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    RETURN_IF_ERROR(SetDouble(out, i, mean + stddev * dist(gen)));
  }
  return out;
}

absl::StatusOr<Tensor> Bernoulli(const Tensor& p, DType dtype, std::mt19937_64& gen) {
  const char* op = "Bernoulli";
  RETURN_IF_ERROR(RequireFloat(p, op, "probabilities"));
  RETURN_IF_ERROR(RequireStorable(dtype, op));
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  Tensor out = Tensor::Empty(dtype, p.sizes());
  for (int64_t i = 0; i < p.numel(); ++i) {
    const double prob = p.GetDouble(i);
    if (!(prob >= 0 && prob <= 1)) {
      return Invalid(op, absl::StrCat("probability ", prob, " is outside [0, 1]"));
    }
    RETURN_IF_ERROR(SetInt(out, i, dist(gen) < prob ? 1 : 0));
  }
  return out;
}

absl::StatusOr<Tensor> MultinomialFromWeights(const Tensor& weights, int64_t num_samples,
                                              bool replacement, DType dtype,
                                              std::mt19937_64& gen) {
  const char* op = "multinomial";
  RETURN_IF_ERROR(RequireFloat(weights, op, "weights"));
  if (weights.dim() != 1 && weights.dim() != 2) {
    return Invalid(op, absl::StrCat("weights must be 1-D or 2-D, got ",
                                    ShapeToString(weights.sizes())));
  }
  if (dtype != DType::kInt64 && dtype != DType::kInt32) {
    return Invalid(op, absl::StrCat("dtype must be int32 or int64, got ", DTypeName(dtype)));
  }
  if (num_samples < 0) return Invalid(op, "num_samples must be >= 0");
  const int64_t rows = weights.dim() == 2 ? weights.size(0) : 1;
  const int64_t classes = weights.sizes().back();
  if (!replacement && num_samples > classes) {
    return Invalid(op, "cannot draw more samples than classes without replacement");
  }
  std::vector<int64_t> out_sizes = weights.dim() == 2 ? std::vector<int64_t>{rows, num_samples}
                                                      : std::vector<int64_t>{num_samples};
  RETURN_IF_ERROR(CheckSizes(out_sizes, op));
  Tensor out = Tensor::Empty(dtype, out_sizes);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> w(static_cast<size_t>(classes));
    double total = 0;
    for (int64_t c = 0; c < classes; ++c) {
      const double v = weights.GetDouble(r * classes + c);
      if (!(v >= 0) || std::isinf(v)) {
        return Invalid(op, "weights must be finite and non-negative");
      }
      w[static_cast<size_t>(c)] = v;
      total += v;
    }
    if (!(total > 0)) return Invalid(op, "each row of weights needs a positive sum");
    std::discrete_distribution<int64_t> dist(w.begin(), w.end());
    for (int64_t s = 0; s < num_samples; ++s) {
      // Without replacement the weights change after every draw.
      if (!replacement && s > 0) dist = std::discrete_distribution<int64_t>(w.begin(), w.end());
      const int64_t c = dist(gen);
      RETURN_IF_ERROR(SetInt(out, r * num_samples + s, c));
      if (!replacement) w[static_cast<size_t>(c)] = 0;
      if (!replacement && s + 1 < num_samples &&
          std::all_of(w.begin(), w.end(), [](double v) { return v == 0; })) {
        return Invalid(op, "not enough classes with non-zero weight to sample without replacement");
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<Tensor>> Dropout(const Tensor& x, double ratio, bool train,
                                            std::mt19937_64& gen) {
  const char* op = "Dropout";
  RETURN_IF_ERROR(RequireData(x, op, "input"));
  if (!(ratio >= 0 && ratio <= 1)) {
    return Invalid(op, absl::StrCat("ratio must lie in [0, 1], got ", ratio));
  }
  Tensor mask = Tensor::Empty(DType::kBool, x.sizes());
  if (!train || ratio == 0) {
    for (int64_t i = 0; i < mask.numel(); ++i) RETURN_IF_ERROR(SetInt(mask, i, 1));
    return std::vector<Tensor>{x, mask};
  }
  RETURN_IF_ERROR(RequireFloat(x, op, "input"));
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  Tensor y = Tensor::Empty(x.dtype(), x.sizes());
  const double scale = ratio < 1 ? 1.0 / (1.0 - ratio) : 0.0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool keep = dist(gen) >= ratio;
    RETURN_IF_ERROR(SetInt(mask, i, keep ? 1 : 0));
    RETURN_IF_ERROR(SetDouble(y, i, keep ? x.GetDouble(i) * scale : 0.0));
  }
  return std::vector<Tensor>{y, mask};
}

// ------------------------------------------------------------------ training

namespace {

absl::Status SameShape(const Tensor& a, const Tensor& b, const char* op, const char* what) {
  RETURN_IF_ERROR(RequireFloat(b, op, what));
  if (a.sizes() != b.sizes()) {
    return Invalid(op, absl::StrCat(what, " shape ", ShapeToString(b.sizes()),
                                    " does not match X's ", ShapeToString(a.sizes())));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> AdagradStep(double r, int64_t t, const Tensor& x,
                                                const Tensor& g, const Tensor& h,
                                                double decay_factor, double epsilon,
                                                double norm_coefficient) {
  const char* op = "Adagrad";
  RETURN_IF_ERROR(RequireFloat(x, op, "X"));
  RETURN_IF_ERROR(SameShape(x, g, op, "G"));
  RETURN_IF_ERROR(SameShape(x, h, op, "H"));
  const double rate = r / (1 + static_cast<double>(t) * decay_factor);
  Tensor x_new = Tensor::Empty(x.dtype(), x.sizes());
  Tensor h_new = Tensor::Empty(h.dtype(), h.sizes());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double gr = norm_coefficient * x.GetDouble(i) + g.GetDouble(i);
    const double hn = h.GetDouble(i) + gr * gr;
    RETURN_IF_ERROR(SetDouble(h_new, i, hn));
    RETURN_IF_ERROR(SetDouble(x_new, i, x.GetDouble(i) - rate * gr / (std::sqrt(hn) + epsilon)));
  }
  return std::vector<Tensor>{x_new, h_new};
}

absl::StatusOr<std::vector<Tensor>> AdamStep(double r, int64_t t, const Tensor& x,
                                             const Tensor& g, const Tensor& v, const Tensor& h,
                                             double alpha, double beta, double epsilon,
                                             double norm_coefficient,
                                             double norm_coefficient_post) {
  const char* op = "Adam";
  RETURN_IF_ERROR(RequireFloat(x, op, "X"));
  RETURN_IF_ERROR(SameShape(x, g, op, "G"));
  RETURN_IF_ERROR(SameShape(x, v, op, "V"));
  RETURN_IF_ERROR(SameShape(x, h, op, "H"));
  double rate = r;
  if (t > 0) {
    const double td = static_cast<double>(t);
    rate = r * std::sqrt(1 - std::pow(beta, td)) / (1 - std::pow(alpha, td));
  }
  Tensor x_new = Tensor::Empty(x.dtype(), x.sizes());
  Tensor v_new = Tensor::Empty(v.dtype(), v.sizes());
  Tensor h_new = Tensor::Empty(h.dtype(), h.sizes());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = x.GetDouble(i);
    const double gr = norm_coefficient * xi + g.GetDouble(i);
    const double vn = alpha * v.GetDouble(i) + (1 - alpha) * gr;
    const double hn = beta * h.GetDouble(i) + (1 - beta) * gr * gr;
    const double xn = xi - rate * vn / (std::sqrt(hn) + epsilon);
    RETURN_IF_ERROR(SetDouble(v_new, i, vn));
    RETURN_IF_ERROR(SetDouble(h_new, i, hn));
    RETURN_IF_ERROR(SetDouble(x_new, i, (1 - norm_coefficient_post) * xn));
  }
  return std::vector<Tensor>{x_new, v_new, h_new};
}

absl::StatusOr<std::vector<Tensor>> MomentumStep(double r, int64_t t, const Tensor& x,
                                                 const Tensor& g, const Tensor& v, double alpha,
                                                 double beta, double norm_coefficient,
                                                 bool nesterov) {
  const char* op = "Momentum";
  RETURN_IF_ERROR(RequireFloat(x, op, "X"));
  RETURN_IF_ERROR(SameShape(x, g, op, "G"));
  RETURN_IF_ERROR(SameShape(x, v, op, "V"));
  // The first step (t == 0) takes the whole gradient.
  const double b = t > 0 ? beta : 1.0;
  Tensor x_new = Tensor::Empty(x.dtype(), x.sizes());
  Tensor v_new = Tensor::Empty(v.dtype(), v.sizes());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double xi = x.GetDouble(i);
    const double gr = norm_coefficient * xi + g.GetDouble(i);
    const double vn = alpha * v.GetDouble(i) + b * gr;
    RETURN_IF_ERROR(SetDouble(v_new, i, vn));
    RETURN_IF_ERROR(SetDouble(x_new, i, nesterov ? xi - r * (gr + alpha * vn) : xi - r * vn));
  }
  return std::vector<Tensor>{x_new, v_new};
}

}  // namespace kiln::runtime
