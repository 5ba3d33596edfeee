// Reference kernels of the nn family (see kernels_nn.h).
#include "runtime/kernels_nn.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "runtime/tensor_ops.h"
#include "support/dtype.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::runtime::nn {
namespace {

// Results larger than this many elements are refused: attacker-chosen
// sizes must not exhaust memory (the reference kernels hold doubles).
constexpr int64_t kMaxElements = int64_t{1} << 28;
// Likewise for the multiply-adds of one call (about a minute of work).
constexpr double kMaxWork = static_cast<double>(int64_t{1} << 36);

absl::Status Invalid(const std::string& op, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", what));
}

int64_t Prod(const std::vector<int64_t>& v, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < v.size() && i < to; ++i) p *= v[i];
  return p;
}

// Product with an overflow / size cap; the error names `op`.
absl::StatusOr<int64_t> CheckedNumel(const std::string& op, const std::vector<int64_t>& sizes) {
  int64_t p = 1;
  for (int64_t s : sizes) {
    if (s < 0) return Invalid(op, absl::StrCat("negative size in ", ShapeToString(sizes)));
    if (s != 0 && p > kMaxElements / s) {
      return Invalid(op, absl::StrCat("result shape ", ShapeToString(sizes), " is too large"));
    }
    p *= s;
  }
  return p;
}

absl::Status CheckData(const std::string& op, const Tensor& t, absl::string_view name) {
  if (!t.defined() || !t.has_data()) {
    return Invalid(op, absl::StrCat(name, " has no data"));
  }
  if (!IsStorableDType(t.dtype())) {
    return absl::UnimplementedError(
        absl::StrCat(op, ": unsupported dtype ", DTypeName(t.dtype()), " for ", name));
  }
  return absl::OkStatus();
}

// The elements in logical row-major order.
std::vector<double> ToDoubles(const Tensor& t) {
  const int64_t n = t.numel();
  std::vector<double> v(static_cast<size_t>(n));
  if (t.is_contiguous() && t.dtype() == DType::kFloat32) {
    const float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) v[i] = p[i];
  } else if (t.is_contiguous() && t.dtype() == DType::kFloat64) {
    const double* p = t.data<double>();
    for (int64_t i = 0; i < n; ++i) v[i] = p[i];
  } else {
    for (int64_t i = 0; i < n; ++i) v[i] = t.GetDouble(i);
  }
  return v;
}

std::vector<int64_t> ToInts(const Tensor& t) {
  const int64_t n = t.numel();
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = t.GetInt(i);
  return v;
}

absl::StatusOr<Tensor> FromDoubles(const std::string& op, DType dtype,
                                   std::vector<int64_t> sizes, const std::vector<double>& v) {
  ASSIGN_OR_RETURN(int64_t n, CheckedNumel(op, sizes));
  if (n != static_cast<int64_t>(v.size())) {
    return absl::InternalError(absl::StrCat(op, ": result size mismatch"));
  }
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  if (dtype == DType::kFloat32) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(v[i]);
  } else if (dtype == DType::kFloat64) {
    double* p = t.data<double>();
    for (int64_t i = 0; i < n; ++i) p[i] = v[i];
  } else {
    for (int64_t i = 0; i < n; ++i) RETURN_IF_ERROR(SetDouble(t, i, v[i]));
  }
  return t;
}

absl::StatusOr<Tensor> FromInts(const std::string& op, DType dtype, std::vector<int64_t> sizes,
                                const std::vector<int64_t>& v) {
  ASSIGN_OR_RETURN(int64_t n, CheckedNumel(op, sizes));
  Tensor t = Tensor::Empty(dtype, std::move(sizes));
  for (int64_t i = 0; i < n; ++i) RETURN_IF_ERROR(SetInt(t, i, v[i]));
  return t;
}

// A per-channel parameter: `n` values, or `def` when absent.
absl::StatusOr<std::vector<double>> ChannelVector(const std::string& op,
                                                  const std::optional<Tensor>& t,
                                                  absl::string_view name, int64_t n,
                                                  double def) {
  if (!t || !t->defined()) return std::vector<double>(static_cast<size_t>(n), def);
  RETURN_IF_ERROR(CheckData(op, *t, name));
  if (t->numel() != n) {
    return Invalid(op, absl::StrCat(name, " must have ", n, " elements, got shape ",
                                    ShapeToString(t->sizes())));
  }
  return ToDoubles(*t);
}

// floor(v) as an index; NaN and huge values become far-out-of-range
// indices (callers bounds-check) instead of undefined conversions.
int64_t FloorIndex(double v) {
  constexpr double kFar = static_cast<double>(int64_t{1} << 40);
  if (std::isnan(v)) return -(int64_t{1} << 40);
  return static_cast<int64_t>(std::floor(std::min(std::max(v, -kFar), kFar)));
}

// Steps `pos` through the box [0, extent) in row-major order; false at the end.
bool Next(std::vector<int64_t>& pos, const std::vector<int64_t>& extent) {
  for (size_t d = pos.size(); d-- > 0;) {
    if (++pos[d] < extent[d]) return true;
    pos[d] = 0;
  }
  return false;
}

absl::Status CheckPerDim(const std::string& op, const std::vector<int64_t>& v, size_t n,
                         absl::string_view name, int64_t min) {
  if (v.size() != n) {
    return Invalid(op, absl::StrCat(name, " must have ", n, " values, got ", v.size()));
  }
  constexpr int64_t kLimit = int64_t{1} << 31;
  for (int64_t e : v) {
    if (e < min) return Invalid(op, absl::StrCat(name, " values must be >= ", min, ", got ", e));
    if (e > kLimit || e < -kLimit) {
      return Invalid(op, absl::StrCat(name, " value ", e, " is out of range"));
    }
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ convolution

struct ConvGeometry {
  int64_t batch = 0, cin = 0, cout = 0, groups = 1;
  std::vector<int64_t> in, kernel, out;
  bool unbatched = false;
};

absl::StatusOr<ConvGeometry> CheckConv(const std::string& op, const Tensor& x, const Tensor& w,
                                       int64_t bias_numel, const ConvOptions& o) {
  ConvGeometry g;
  if (w.dim() < 3) {
    return Invalid(op, absl::StrCat("weight must have at least 3 dims, got shape ",
                                    ShapeToString(w.sizes())));
  }
  const size_t nsp = static_cast<size_t>(w.dim() - 2);
  if (x.dim() == w.dim() - 1) {
    g.unbatched = true;
  } else if (x.dim() != w.dim()) {
    return Invalid(op, absl::StrCat("input shape ", ShapeToString(x.sizes()),
                                    " does not match weight shape ", ShapeToString(w.sizes())));
  }
  const int64_t off = g.unbatched ? 0 : 1;
  g.batch = g.unbatched ? 1 : x.size(0);
  g.cin = x.size(off);
  g.groups = o.groups;
  if (o.groups <= 0) return Invalid(op, absl::StrCat("groups must be positive, got ", o.groups));
  RETURN_IF_ERROR(CheckPerDim(op, o.stride, nsp, "stride", 1));
  RETURN_IF_ERROR(CheckPerDim(op, o.dilation, nsp, "dilation", 1));
  RETURN_IF_ERROR(CheckPerDim(op, o.pad_begin, nsp, "padding", o.transposed ? INT64_MIN : 0));
  RETURN_IF_ERROR(CheckPerDim(op, o.pad_end, nsp, "padding", o.transposed ? INT64_MIN : 0));
  if (!o.output_padding.empty()) {
    RETURN_IF_ERROR(CheckPerDim(op, o.output_padding, nsp, "output_padding", 0));
  }
  for (size_t d = 0; d < nsp; ++d) {
    g.in.push_back(x.size(off + 1 + static_cast<int64_t>(d)));
    g.kernel.push_back(w.size(2 + static_cast<int64_t>(d)));
    if (g.kernel.back() <= 0) {
      return Invalid(op, absl::StrCat("kernel sizes must be positive, got weight shape ",
                                      ShapeToString(w.sizes())));
    }
  }
  if (g.cin % o.groups != 0) {
    return Invalid(op, absl::StrCat("input channels ", g.cin, " not divisible by groups ",
                                    o.groups));
  }
  if (!o.transposed) {
    g.cout = w.size(0);
    if (w.size(1) * o.groups != g.cin) {
      return Invalid(op, absl::StrCat("weight shape ", ShapeToString(w.sizes()), " expects ",
                                      w.size(1) * o.groups, " input channels, got ", g.cin,
                                      " (groups ", o.groups, ")"));
    }
    if (g.cout % o.groups != 0) {
      return Invalid(op, absl::StrCat("output channels ", g.cout, " not divisible by groups ",
                                      o.groups));
    }
  } else {
    if (w.size(0) != g.cin) {
      return Invalid(op, absl::StrCat("transposed weight shape ", ShapeToString(w.sizes()),
                                      " expects ", w.size(0), " input channels, got ", g.cin));
    }
    g.cout = w.size(1) * o.groups;
  }
  if (bias_numel >= 0 && bias_numel != g.cout) {
    return Invalid(op, absl::StrCat("bias must have ", g.cout, " elements, got ", bias_numel));
  }
  for (size_t d = 0; d < nsp; ++d) {
    const int64_t span = o.dilation[d] * (g.kernel[d] - 1) + 1;
    int64_t out;
    if (!o.transposed) {
      const int64_t num = g.in[d] + o.pad_begin[d] + o.pad_end[d] - span;
      if (num < 0) {
        return Invalid(op, absl::StrCat("kernel extent ", span, " exceeds padded input size ",
                                        g.in[d] + o.pad_begin[d] + o.pad_end[d], " in dim ",
                                        d));
      }
      out = num / o.stride[d] + 1;
    } else {
      const int64_t op_pad = o.output_padding.empty() ? 0 : o.output_padding[d];
      out = (g.in[d] - 1) * o.stride[d] - o.pad_begin[d] - o.pad_end[d] + span + op_pad;
      if (g.in[d] == 0 || out <= 0) {
        return Invalid(op, absl::StrCat("transposed output size ", out, " in dim ", d,
                                        " is not positive"));
      }
    }
    g.out.push_back(out);
  }
  std::vector<int64_t> out_shape = {g.batch, g.cout};
  out_shape.insert(out_shape.end(), g.out.begin(), g.out.end());
  RETURN_IF_ERROR(CheckedNumel(op, out_shape).status());
  // Every weight element meets every output (transposed: input) position.
  const double work = static_cast<double>(g.batch) * static_cast<double>(w.numel()) *
                      static_cast<double>(o.transposed ? Prod(g.in) : Prod(g.out));
  if (work > kMaxWork) return Invalid(op, "convolution is too large for the reference kernel");
  return g;
}

std::vector<int64_t> ConvOutShape(const ConvGeometry& g) {
  std::vector<int64_t> s;
  if (!g.unbatched) s.push_back(g.batch);
  s.push_back(g.cout);
  s.insert(s.end(), g.out.begin(), g.out.end());
  return s;
}

// offsets[k]: the flat offset in a plane of `extent` that position `pos`
// reaches through kernel tap k (pos * stride - pad + tap * dilation), -1
// outside it (padding). `kpos` is scratch of the spatial rank.
void TapOffsets(const ConvGeometry& g, const ConvOptions& o, const std::vector<int64_t>& pos,
                const std::vector<int64_t>& extent, std::vector<int64_t>& kpos, std::vector<int64_t>& offsets) {
  std::fill(kpos.begin(), kpos.end(), 0);
  for (int64_t& offset : offsets) {
    offset = 0;
    for (size_t d = 0; d < pos.size() && offset >= 0; ++d) {
      const int64_t i = pos[d] * o.stride[d] - o.pad_begin[d] + kpos[d] * o.dilation[d];
      offset = (i < 0 || i >= extent[d]) ? -1 : offset * extent[d] + i;
    }
    Next(kpos, g.kernel);
  }
}

// y (zeroed, [batch, cout, *out]) += conv(x, w).
void ConvForward(const ConvGeometry& g, const ConvOptions& o, const std::vector<double>& x,
                 const std::vector<double>& w, std::vector<double>& y) {
  const size_t nsp = g.in.size();
  const int64_t in_sp = Prod(g.in), out_sp = Prod(g.out), k_sp = Prod(g.kernel);
  const int64_t cin_g = g.cin / g.groups, cout_g = g.cout / g.groups;
  if (in_sp == 0 || out_sp == 0) return;
  std::vector<int64_t> offsets(static_cast<size_t>(k_sp));
  std::vector<int64_t> opos(nsp, 0), kpos(nsp, 0);
  for (int64_t p = 0; p < out_sp; ++p) {
    // Input offsets of every kernel tap for this output position (-1: padding).
    TapOffsets(g, o, opos, g.in, kpos, offsets);
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t oc = 0; oc < g.cout; ++oc) {
        const int64_t grp = oc / cout_g;
        double acc = 0;
        for (int64_t ic = 0; ic < cin_g; ++ic) {
          const double* xp = x.data() + (((n * g.cin) + grp * cin_g + ic) * in_sp);
          const double* wp = w.data() + ((oc * cin_g + ic) * k_sp);
          for (int64_t k = 0; k < k_sp; ++k) {
            if (offsets[k] >= 0) acc += xp[offsets[k]] * wp[k];
          }
        }
        y[(n * g.cout + oc) * out_sp + p] += acc;
      }
    }
    Next(opos, g.out);
  }
}

void ConvTransposedForward(const ConvGeometry& g, const ConvOptions& o,
                           const std::vector<double>& x, const std::vector<double>& w,
                           std::vector<double>& y) {
  const size_t nsp = g.in.size();
  const int64_t in_sp = Prod(g.in), out_sp = Prod(g.out), k_sp = Prod(g.kernel);
  const int64_t cin_g = g.cin / g.groups, cout_g = g.cout / g.groups;
  if (in_sp == 0 || out_sp == 0) return;
  std::vector<int64_t> offsets(static_cast<size_t>(k_sp));
  std::vector<int64_t> ipos(nsp, 0), kpos(nsp, 0);
  for (int64_t q = 0; q < in_sp; ++q) {
    // Output offsets this input position reaches through every tap.
    TapOffsets(g, o, ipos, g.out, kpos, offsets);
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t ic = 0; ic < g.cin; ++ic) {
        const double xv = x[(n * g.cin + ic) * in_sp + q];
        if (xv == 0) continue;
        const int64_t grp = ic / cin_g;
        for (int64_t ocl = 0; ocl < cout_g; ++ocl) {
          const int64_t oc = grp * cout_g + ocl;
          const double* wp = w.data() + ((ic * cout_g + ocl) * k_sp);
          double* yp = y.data() + ((n * g.cout + oc) * out_sp);
          for (int64_t k = 0; k < k_sp; ++k) {
            if (offsets[k] >= 0) yp[offsets[k]] += xv * wp[k];
          }
        }
      }
    }
    Next(ipos, g.in);
  }
}

// Convolution over already-decoded values; `bias` has cout values or is empty.
std::vector<double> ConvValues(const ConvGeometry& g, const ConvOptions& o,
                               const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& bias) {
  const int64_t out_sp = Prod(g.out);
  std::vector<double> y(static_cast<size_t>(g.batch * g.cout * out_sp), 0.0);
  if (o.transposed) {
    ConvTransposedForward(g, o, x, w, y);
  } else {
    ConvForward(g, o, x, w, y);
  }
  if (!bias.empty()) {
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t c = 0; c < g.cout; ++c) {
        double* yp = y.data() + ((n * g.cout + c) * out_sp);
        for (int64_t i = 0; i < out_sp; ++i) yp[i] += bias[c];
      }
    }
  }
  return y;
}

// ------------------------------------------------------------------ pooling

absl::StatusOr<int64_t> PoolOutSize(const std::string& op, int64_t in, int64_t k, int64_t s,
                                    int64_t pb, int64_t pe, int64_t d, bool ceil_mode) {
  const int64_t num = in + pb + pe - d * (k - 1) - 1;
  if (num < 0) {
    return Invalid(op, absl::StrCat("kernel extent ", d * (k - 1) + 1,
                                    " exceeds padded input size ", in + pb + pe));
  }
  int64_t out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

}  // namespace

// ============================================================ convolution

absl::StatusOr<Tensor> Convolution(const std::string& op, const Tensor& x, const Tensor& w,
                                   const std::optional<Tensor>& bias, const ConvOptions& o) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  RETURN_IF_ERROR(CheckData(op, w, "weight"));
  const bool has_bias = bias && bias->defined();
  if (has_bias) RETURN_IF_ERROR(CheckData(op, *bias, "bias"));
  ASSIGN_OR_RETURN(ConvGeometry g, CheckConv(op, x, w, has_bias ? bias->numel() : -1, o));
  std::vector<double> b = has_bias ? ToDoubles(*bias) : std::vector<double>();
  std::vector<double> y = ConvValues(g, o, ToDoubles(x), ToDoubles(w), b);
  return FromDoubles(op, x.dtype(), ConvOutShape(g), y);
}

namespace {

// Zero points: a scalar, or one value per `n` (per-channel).
absl::StatusOr<std::vector<double>> ZeroPoints(const std::string& op,
                                               const std::optional<Tensor>& t,
                                               absl::string_view name, int64_t n) {
  if (!t || !t->defined()) return std::vector<double>(static_cast<size_t>(n), 0.0);
  RETURN_IF_ERROR(CheckData(op, *t, name));
  if (t->numel() == 1) return std::vector<double>(static_cast<size_t>(n), t->GetDouble(0));
  if (t->numel() != n) {
    return Invalid(op, absl::StrCat(name, " must be a scalar or have ", n,
                                    " elements, got shape ", ShapeToString(t->sizes())));
  }
  return ToDoubles(*t);
}

// Subtracts per-output-channel values from a [cout, ...] weight.
void SubtractPerChannel(std::vector<double>& w, const std::vector<double>& zp) {
  const size_t per = zp.empty() ? 0 : w.size() / zp.size();
  for (size_t i = 0; i < w.size() && per > 0; ++i) w[i] -= zp[i / per];
}

}  // namespace

absl::StatusOr<Tensor> ConvInteger(const std::string& op, const Tensor& x, const Tensor& w,
                                   const std::optional<Tensor>& x_zero_point,
                                   const std::optional<Tensor>& w_zero_point,
                                   const ConvOptions& o) {
  RETURN_IF_ERROR(CheckData(op, x, "x"));
  RETURN_IF_ERROR(CheckData(op, w, "w"));
  if (IsFloatingPoint(x.dtype()) || IsFloatingPoint(w.dtype())) {
    return Invalid(op, "x and w must be integer tensors");
  }
  if (o.transposed) return Invalid(op, "transposed integer convolution is not supported");
  ASSIGN_OR_RETURN(ConvGeometry g, CheckConv(op, x, w, -1, o));
  ASSIGN_OR_RETURN(std::vector<double> xzp, ZeroPoints(op, x_zero_point, "x_zero_point", 1));
  ASSIGN_OR_RETURN(std::vector<double> wzp, ZeroPoints(op, w_zero_point, "w_zero_point", g.cout));
  std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w);
  for (double& v : xv) v -= xzp[0];
  SubtractPerChannel(wv, wzp);
  std::vector<double> y = ConvValues(g, o, xv, wv, {});
  return FromDoubles(op, DType::kInt32, ConvOutShape(g), y);
}

absl::StatusOr<Tensor> QLinearConv(const std::string& op, const QLinearConvInputs& in,
                                   const ConvOptions& o) {
  for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{&in.x, "x"},
                                {&in.x_scale, "x_scale"}, {&in.x_zero_point, "x_zero_point"},
                                {&in.w, "w"}, {&in.w_scale, "w_scale"},
                                {&in.w_zero_point, "w_zero_point"}, {&in.y_scale, "y_scale"},
                                {&in.y_zero_point, "y_zero_point"}}) {
    RETURN_IF_ERROR(CheckData(op, *t, name));
  }
  if (o.transposed) return Invalid(op, "transposed quantized convolution is not supported");
  const bool has_bias = in.bias && in.bias->defined();
  if (has_bias) RETURN_IF_ERROR(CheckData(op, *in.bias, "B"));
  ASSIGN_OR_RETURN(ConvGeometry g, CheckConv(op, in.x, in.w, has_bias ? in.bias->numel() : -1, o));
  if (in.x_scale.numel() != 1 || in.y_scale.numel() != 1 || in.x_zero_point.numel() != 1 ||
      in.y_zero_point.numel() != 1) {
    return Invalid(op, "x/y scales and zero points must be scalars");
  }
  const DType out_dtype = in.y_zero_point.dtype();
  if (out_dtype != DType::kUInt8 && out_dtype != DType::kInt8) {
    return Invalid(op, "y_zero_point must be uint8 or int8");
  }
  ASSIGN_OR_RETURN(std::vector<double> wzp,
                   ZeroPoints(op, in.w_zero_point, "w_zero_point", g.cout));
  ASSIGN_OR_RETURN(std::vector<double> wscale, ZeroPoints(op, in.w_scale, "w_scale", g.cout));
  std::vector<double> xv = ToDoubles(in.x), wv = ToDoubles(in.w);
  const double xzp = in.x_zero_point.GetDouble(0);
  for (double& v : xv) v -= xzp;
  SubtractPerChannel(wv, wzp);
  std::vector<double> bias = has_bias ? ToDoubles(*in.bias) : std::vector<double>();
  std::vector<double> y = ConvValues(g, o, xv, wv, bias);
  const double xs = in.x_scale.GetDouble(0), ys = in.y_scale.GetDouble(0);
  const double yzp = in.y_zero_point.GetDouble(0);
  if (ys == 0) return Invalid(op, "y_scale must be nonzero");
  const double lo = out_dtype == DType::kUInt8 ? 0 : -128;
  const double hi = out_dtype == DType::kUInt8 ? 255 : 127;
  const int64_t out_sp = Prod(g.out);
  for (size_t i = 0; i < y.size(); ++i) {
    const int64_t oc = static_cast<int64_t>(i) / out_sp % g.cout;
    // The accumulator is exact in int32; the requantisation runs in float as
    // ONNX's reference does.
    const float scaled = static_cast<float>(y[i]) *
                         (static_cast<float>(xs) * static_cast<float>(wscale[oc]) /
                          static_cast<float>(ys));
    y[i] = std::clamp(std::nearbyint(static_cast<double>(scaled)) + yzp, lo, hi);
  }
  return FromDoubles(op, out_dtype, ConvOutShape(g), y);
}

// ================================================================ pooling

absl::StatusOr<PoolResult> Pool(const std::string& op, PoolKind kind, const Tensor& x,
                                const PoolOptions& o) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  const size_t nsp = o.kernel.size();
  if (nsp == 0) return Invalid(op, "kernel_size must not be empty");
  RETURN_IF_ERROR(CheckPerDim(op, o.kernel, nsp, "kernel_size", 1));
  RETURN_IF_ERROR(CheckPerDim(op, o.stride, nsp, "stride", 1));
  RETURN_IF_ERROR(CheckPerDim(op, o.dilation, nsp, "dilation", 1));
  RETURN_IF_ERROR(CheckPerDim(op, o.pad_begin, nsp, "padding", 0));
  RETURN_IF_ERROR(CheckPerDim(op, o.pad_end, nsp, "padding", 0));
  if (x.dim() < static_cast<int64_t>(nsp) + 1) {
    return Invalid(op, absl::StrCat("input of shape ", ShapeToString(x.sizes()), " needs at least ",
                                    nsp + 1, " dims"));
  }
  if (o.divisor_override && *o.divisor_override == 0) {
    return Invalid(op, "divisor_override must be nonzero");
  }
  const size_t lead = static_cast<size_t>(x.dim()) - nsp;
  std::vector<int64_t> in(x.sizes().begin() + lead, x.sizes().end());
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().begin() + lead);
  std::vector<int64_t> out(nsp);
  for (size_t d = 0; d < nsp; ++d) {
    ASSIGN_OR_RETURN(out[d], PoolOutSize(op, in[d], o.kernel[d], o.stride[d], o.pad_begin[d],
                                         o.pad_end[d], o.dilation[d], o.ceil_mode));
    if (out[d] <= 0) return Invalid(op, "output size is not positive");
    out_shape.push_back(out[d]);
  }
  ASSIGN_OR_RETURN(int64_t total, CheckedNumel(op, out_shape));
  ASSIGN_OR_RETURN(int64_t k_sp, CheckedNumel(op, o.kernel));
  if (static_cast<double>(total) * static_cast<double>(k_sp) > kMaxWork) {
    return Invalid(op, "pooling is too large for the reference kernel");
  }
  const int64_t planes = Prod(x.sizes(), 0, lead);
  const int64_t in_sp = Prod(in), out_sp = Prod(out);
  // Column-major strides within a plane (ONNX storage_order 1).
  std::vector<int64_t> col_stride(nsp, 1);
  for (size_t d = 1; d < nsp; ++d) col_stride[d] = col_stride[d - 1] * in[d - 1];

  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> y(static_cast<size_t>(total));
  std::vector<int64_t> idx(kind == PoolKind::kMax ? static_cast<size_t>(total) : 0);
  std::vector<int64_t> opos(nsp, 0), kpos(nsp, 0);
  for (int64_t p = 0; p < out_sp; ++p) {
    // The window's taps: in-plane offsets (-1 for padding), and how many taps
    // lie inside the begin + end padding (avg's count_include_pad divisor).
    std::vector<int64_t> taps;
    int64_t padded_count = 0;
    std::fill(kpos.begin(), kpos.end(), 0);
    do {
      int64_t offset = 0;
      bool in_padded = true;
      for (size_t d = 0; d < nsp; ++d) {
        const int64_t i = opos[d] * o.stride[d] - o.pad_begin[d] + kpos[d] * o.dilation[d];
        if (i >= in[d] + o.pad_end[d]) in_padded = false;
        if (offset >= 0) offset = (i < 0 || i >= in[d]) ? -1 : offset * in[d] + i;
      }
      if (in_padded) ++padded_count;
      taps.push_back(offset);
    } while (Next(kpos, o.kernel));
    for (int64_t pl = 0; pl < planes; ++pl) {
      const double* xp = xv.data() + (pl * in_sp);
      const int64_t out_i = pl * out_sp + p;
      if (kind == PoolKind::kMax) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t best_off = -1;
        for (int64_t t : taps) {
          if (t < 0) continue;
          const double v = xp[t];
          if (best_off < 0 || v > best || std::isnan(v)) {
            if (!(std::isnan(best) && best_off >= 0)) {
              best = v;
              best_off = t;
            }
          }
        }
        y[out_i] = best;
        int64_t index = best_off;
        if (best_off >= 0 && o.index_style == IndexStyle::kFlatColMajor) {
          int64_t rem = best_off, col = 0;
          for (size_t d = nsp; d-- > 0;) {
            col += (rem % in[d]) * col_stride[d];
            rem /= in[d];
          }
          index = col;
        }
        if (best_off >= 0 && o.index_style != IndexStyle::kPlane) index += pl * in_sp;
        idx[out_i] = index;
      } else if (kind == PoolKind::kAvg) {
        double sum = 0;
        int64_t valid = 0;
        for (int64_t t : taps) {
          if (t < 0) continue;
          sum += xp[t];
          ++valid;
        }
        const double divisor = o.divisor_override ? static_cast<double>(*o.divisor_override)
                               : o.count_include_pad ? static_cast<double>(padded_count)
                                                     : static_cast<double>(valid);
        y[out_i] = sum / divisor;
      } else {
        double sum = 0;
        for (int64_t t : taps) {
          if (t >= 0) sum += std::pow(std::fabs(xp[t]), o.p);
        }
        y[out_i] = std::pow(sum, 1.0 / o.p);
      }
    }
    Next(opos, out);
  }
  PoolResult r;
  ASSIGN_OR_RETURN(r.values, FromDoubles(op, x.dtype(), out_shape, y));
  if (kind == PoolKind::kMax) {
    ASSIGN_OR_RETURN(r.indices, FromInts(op, DType::kInt64, out_shape, idx));
  }
  return r;
}

absl::StatusOr<PoolResult> AdaptivePool(const std::string& op, bool max, const Tensor& x,
                                        const std::vector<int64_t>& output_size) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  const size_t nsp = output_size.size();
  if (nsp == 0 || x.dim() < static_cast<int64_t>(nsp) + 1) {
    return Invalid(op, absl::StrCat("input of shape ", ShapeToString(x.sizes()),
                                    " does not fit output_size of ", nsp, " dims"));
  }
  RETURN_IF_ERROR(CheckPerDim(op, output_size, nsp, "output_size", 0));
  const size_t lead = static_cast<size_t>(x.dim()) - nsp;
  std::vector<int64_t> in(x.sizes().begin() + lead, x.sizes().end());
  for (size_t d = 0; d < nsp; ++d) {
    if (in[d] <= 0 && output_size[d] > 0) {
      return Invalid(op, absl::StrCat("input of shape ", ShapeToString(x.sizes()),
                                      " has an empty spatial dim"));
    }
  }
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().begin() + lead);
  out_shape.insert(out_shape.end(), output_size.begin(), output_size.end());
  ASSIGN_OR_RETURN(int64_t total, CheckedNumel(op, out_shape));
  const int64_t planes = Prod(x.sizes(), 0, lead);
  const int64_t in_sp = Prod(in), out_sp = Prod(output_size);
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> y(static_cast<size_t>(total));
  std::vector<int64_t> idx(static_cast<size_t>(total));
  std::vector<int64_t> opos(nsp, 0);
  for (int64_t p = 0; p < out_sp; ++p) {
    std::vector<int64_t> start(nsp), extent(nsp);
    for (size_t d = 0; d < nsp; ++d) {
      start[d] = opos[d] * in[d] / output_size[d];
      const int64_t end = ((opos[d] + 1) * in[d] + output_size[d] - 1) / output_size[d];
      extent[d] = end - start[d];
    }
    std::vector<int64_t> taps;
    std::vector<int64_t> k(nsp, 0);
    do {
      int64_t offset = 0;
      for (size_t d = 0; d < nsp; ++d) offset = offset * in[d] + start[d] + k[d];
      taps.push_back(offset);
    } while (Next(k, extent));
    for (int64_t pl = 0; pl < planes; ++pl) {
      const double* xp = xv.data() + (pl * in_sp);
      const int64_t out_i = pl * out_sp + p;
      if (max) {
        double best = xp[taps[0]];
        int64_t best_off = taps[0];
        for (int64_t t : taps) {
          if (std::isnan(best)) break;
          if (xp[t] > best || std::isnan(xp[t])) {
            best = xp[t];
            best_off = t;
          }
        }
        y[out_i] = best;
        idx[out_i] = best_off;
      } else {
        double sum = 0;
        for (int64_t t : taps) sum += xp[t];
        y[out_i] = sum / static_cast<double>(taps.size());
      }
    }
    Next(opos, output_size);
  }
  PoolResult r;
  ASSIGN_OR_RETURN(r.values, FromDoubles(op, x.dtype(), out_shape, y));
  if (max) {
    ASSIGN_OR_RETURN(r.indices, FromInts(op, DType::kInt64, out_shape, idx));
  }
  return r;
}

absl::StatusOr<Tensor> MaxUnpool(const std::string& op, const Tensor& x, const Tensor& indices,
                                 const std::vector<int64_t>& output_spatial, IndexStyle style,
                                 const std::vector<int64_t>& padded_spatial) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  RETURN_IF_ERROR(CheckData(op, indices, "indices"));
  if (IsFloatingPoint(indices.dtype())) return Invalid(op, "indices must be an integer tensor");
  const size_t nsp = output_spatial.size();
  if (x.dim() < static_cast<int64_t>(nsp) + 1 || x.sizes() != indices.sizes()) {
    return Invalid(op, absl::StrCat("input shape ", ShapeToString(x.sizes()),
                                    " and indices shape ", ShapeToString(indices.sizes()),
                                    " must match and have more than ", nsp, " dims"));
  }
  RETURN_IF_ERROR(CheckPerDim(op, output_spatial, nsp, "output_size", 0));
  const size_t lead = static_cast<size_t>(x.dim()) - nsp;
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().begin() + lead);
  out_shape.insert(out_shape.end(), output_spatial.begin(), output_spatial.end());
  ASSIGN_OR_RETURN(int64_t total, CheckedNumel(op, out_shape));
  const int64_t planes = Prod(x.sizes(), 0, lead);
  const int64_t in_sp = Prod(x.sizes(), lead), out_sp = Prod(output_spatial);
  const std::vector<double> xv = ToDoubles(x);
  const std::vector<int64_t> iv = ToInts(indices);
  std::vector<double> y(static_cast<size_t>(total), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl) {
    for (int64_t i = 0; i < in_sp; ++i) {
      int64_t target = iv[pl * in_sp + i];
      const int64_t limit = style == IndexStyle::kPlane ? out_sp : total;
      if (target < 0 || target >= limit) {
        return Invalid(op, absl::StrCat("index ", target, " is out of range [0, ", limit, ")"));
      }
      if (style == IndexStyle::kPlane) target += pl * out_sp;
      y[target] = xv[pl * in_sp + i];
    }
  }
  if (padded_spatial.empty() || padded_spatial == output_spatial) {
    return FromDoubles(op, x.dtype(), out_shape, y);
  }
  if (padded_spatial.size() != nsp) {
    return Invalid(op, absl::StrCat("output shape must have ", nsp, " spatial dims"));
  }
  std::vector<int64_t> padded_shape(x.sizes().begin(), x.sizes().begin() + lead);
  for (size_t d = 0; d < nsp; ++d) {
    if (padded_spatial[d] < output_spatial[d]) {
      return Invalid(op, absl::StrCat("output_shape ", ShapeToString(padded_spatial),
                                      " is smaller than the unpooled shape ",
                                      ShapeToString(output_spatial)));
    }
    padded_shape.push_back(padded_spatial[d]);
  }
  ASSIGN_OR_RETURN(int64_t padded_total, CheckedNumel(op, padded_shape));
  const int64_t padded_sp = Prod(padded_spatial);
  std::vector<double> z(static_cast<size_t>(padded_total), 0.0);
  std::vector<int64_t> pos(nsp, 0);
  for (int64_t i = 0; i < out_sp; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < nsp; ++d) offset = offset * padded_spatial[d] + pos[d];
    for (int64_t pl = 0; pl < planes; ++pl) z[pl * padded_sp + offset] = y[pl * out_sp + i];
    Next(pos, output_spatial);
  }
  return FromDoubles(op, x.dtype(), padded_shape, z);
}

// ========================================================== normalization

absl::StatusOr<NormResult> BatchNorm(const std::string& op, const Tensor& x,
                                     const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias,
                                     const std::optional<Tensor>& running_mean,
                                     const std::optional<Tensor>& running_var, bool training,
                                     double eps) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  if (x.dim() < 2) {
    return Invalid(op, absl::StrCat("input must have at least 2 dims, got shape ",
                                    ShapeToString(x.sizes())));
  }
  const int64_t n = x.size(0), c = x.size(1), sp = Prod(x.sizes(), 2);
  ASSIGN_OR_RETURN(std::vector<double> w, ChannelVector(op, weight, "weight", c, 1.0));
  ASSIGN_OR_RETURN(std::vector<double> b, ChannelVector(op, bias, "bias", c, 0.0));
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> mean(static_cast<size_t>(c)), rstd(static_cast<size_t>(c));
  if (training) {
    const int64_t count = n * sp;
    if (count == 0) return Invalid(op, "training needs at least one value per channel");
    for (int64_t ch = 0; ch < c; ++ch) {
      double s = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < sp; ++j) s += xv[(i * c + ch) * sp + j];
      }
      const double m = s / static_cast<double>(count);
      double v = 0;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < sp; ++j) {
          const double dlt = xv[(i * c + ch) * sp + j] - m;
          v += dlt * dlt;
        }
      }
      mean[ch] = m;
      rstd[ch] = 1.0 / std::sqrt(v / static_cast<double>(count) + eps);
    }
  } else {
    if (!running_mean || !running_var || !running_mean->defined() || !running_var->defined()) {
      return Invalid(op, "running_mean and running_var are required when not training");
    }
    ASSIGN_OR_RETURN(mean, ChannelVector(op, running_mean, "running_mean", c, 0.0));
    ASSIGN_OR_RETURN(std::vector<double> var, ChannelVector(op, running_var, "running_var", c, 1.0));
    for (int64_t ch = 0; ch < c; ++ch) rstd[ch] = 1.0 / std::sqrt(var[ch] + eps);
  }
  std::vector<double> y(xv.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t j = 0; j < sp; ++j) {
        const int64_t k = (i * c + ch) * sp + j;
        y[k] = (xv[k] - mean[ch]) * rstd[ch] * w[ch] + b[ch];
      }
    }
  }
  NormResult r;
  ASSIGN_OR_RETURN(r.y, FromDoubles(op, x.dtype(), x.sizes(), y));
  if (training) {
    ASSIGN_OR_RETURN(r.mean, FromDoubles(op, x.dtype(), {c}, mean));
    ASSIGN_OR_RETURN(r.rstd, FromDoubles(op, x.dtype(), {c}, rstd));
  } else {
    r.mean = Tensor::Empty(x.dtype(), {0});
    r.rstd = Tensor::Empty(x.dtype(), {0});
  }
  return r;
}

absl::StatusOr<BatchNormTrainingResult> BatchNormOnnxTraining(
    const std::string& op, const Tensor& x, const Tensor& scale, const Tensor& bias,
    const Tensor& mean, const Tensor& var, double momentum, double eps) {
  ASSIGN_OR_RETURN(NormResult r, BatchNorm(op, x, scale, bias, std::nullopt, std::nullopt,
                                           /*training=*/true, eps));
  const int64_t c = x.size(1);
  ASSIGN_OR_RETURN(std::vector<double> m0, ChannelVector(op, mean, "input_mean", c, 0));
  ASSIGN_OR_RETURN(std::vector<double> v0, ChannelVector(op, var, "input_var", c, 0));
  const std::vector<double> bm = ToDoubles(r.mean), br = ToDoubles(r.rstd);
  std::vector<double> m1(static_cast<size_t>(c)), v1(static_cast<size_t>(c));
  for (int64_t ch = 0; ch < c; ++ch) {
    const double batch_var = 1.0 / (br[ch] * br[ch]) - eps;
    m1[ch] = m0[ch] * momentum + bm[ch] * (1 - momentum);
    v1[ch] = v0[ch] * momentum + batch_var * (1 - momentum);
  }
  BatchNormTrainingResult out;
  out.y = r.y;
  ASSIGN_OR_RETURN(out.running_mean, FromDoubles(op, mean.dtype(), mean.sizes(), m1));
  ASSIGN_OR_RETURN(out.running_var, FromDoubles(op, var.dtype(), var.sizes(), v1));
  return out;
}

namespace {

// `t` broadcast to `shape` (numpy rules), as values in row-major order.
absl::StatusOr<std::vector<double>> BroadcastValues(const std::string& op, const Tensor& t,
                                                    absl::string_view name,
                                                    const std::vector<int64_t>& shape) {
  RETURN_IF_ERROR(CheckData(op, t, name));
  absl::StatusOr<Tensor> e = Expand(t, shape);
  if (!e.ok()) {
    return Invalid(op, absl::StrCat(name, " of shape ", ShapeToString(t.sizes()),
                                    " does not broadcast to ", ShapeToString(shape)));
  }
  if (e->sizes() != shape) {
    return Invalid(op, absl::StrCat(name, " of shape ", ShapeToString(t.sizes()),
                                    " does not broadcast to ", ShapeToString(shape)));
  }
  return ToDoubles(*e);
}

}  // namespace

absl::StatusOr<NormResult> LayerNorm(const std::string& op, const Tensor& x, int64_t axis,
                                     const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias, double eps) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  const int64_t rank = x.dim();
  if (axis < -rank || axis > rank) {
    return Invalid(op, absl::StrCat("axis ", axis, " out of range for rank ", rank));
  }
  if (axis < 0) axis += rank;
  const std::vector<int64_t> norm_shape(x.sizes().begin() + axis, x.sizes().end());
  const int64_t m = Prod(x.sizes(), 0, static_cast<size_t>(axis)), k = Prod(norm_shape);
  std::vector<double> w(static_cast<size_t>(k), 1.0), b(static_cast<size_t>(k), 0.0);
  if (weight && weight->defined()) {
    ASSIGN_OR_RETURN(w, BroadcastValues(op, *weight, "weight", norm_shape));
  }
  if (bias && bias->defined()) {
    ASSIGN_OR_RETURN(b, BroadcastValues(op, *bias, "bias", norm_shape));
  }
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> y(xv.size()), mean(static_cast<size_t>(m)), rstd(static_cast<size_t>(m));
  for (int64_t r = 0; r < m; ++r) {
    const double* xp = xv.data() + (r * k);
    double s = 0;
    for (int64_t i = 0; i < k; ++i) s += xp[i];
    const double mu = k > 0 ? s / static_cast<double>(k) : 0;
    double v = 0;
    for (int64_t i = 0; i < k; ++i) v += (xp[i] - mu) * (xp[i] - mu);
    const double rs = 1.0 / std::sqrt((k > 0 ? v / static_cast<double>(k) : 0) + eps);
    mean[r] = mu;
    rstd[r] = rs;
    for (int64_t i = 0; i < k; ++i) y[r * k + i] = (xp[i] - mu) * rs * w[i] + b[i];
  }
  std::vector<int64_t> stat_shape(x.sizes().begin(), x.sizes().begin() + axis);
  stat_shape.resize(static_cast<size_t>(rank), 1);
  NormResult res;
  ASSIGN_OR_RETURN(res.y, FromDoubles(op, x.dtype(), x.sizes(), y));
  ASSIGN_OR_RETURN(res.mean, FromDoubles(op, x.dtype(), stat_shape, mean));
  ASSIGN_OR_RETURN(res.rstd, FromDoubles(op, x.dtype(), stat_shape, rstd));
  return res;
}

absl::StatusOr<NormResult> GroupNorm(const std::string& op, const Tensor& x, int64_t groups,
                                     const std::optional<Tensor>& weight,
                                     const std::optional<Tensor>& bias, double eps) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  if (x.dim() < 2) {
    return Invalid(op, absl::StrCat("input must have at least 2 dims, got shape ",
                                    ShapeToString(x.sizes())));
  }
  const int64_t n = x.size(0), c = x.size(1), sp = Prod(x.sizes(), 2);
  if (groups <= 0 || c % groups != 0) {
    return Invalid(op, absl::StrCat("channels ", c, " not divisible into ", groups, " groups"));
  }
  ASSIGN_OR_RETURN(std::vector<double> w, ChannelVector(op, weight, "weight", c, 1.0));
  ASSIGN_OR_RETURN(std::vector<double> b, ChannelVector(op, bias, "bias", c, 0.0));
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> y(xv.size()), mean(static_cast<size_t>(n * groups)),
      rstd(static_cast<size_t>(n * groups));
  const int64_t cg = c / groups, k = cg * sp;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (i * c + g * cg) * sp;
      double s = 0;
      for (int64_t j = 0; j < k; ++j) s += xv[base + j];
      const double mu = k > 0 ? s / static_cast<double>(k) : 0;
      double v = 0;
      for (int64_t j = 0; j < k; ++j) v += (xv[base + j] - mu) * (xv[base + j] - mu);
      const double rs = 1.0 / std::sqrt((k > 0 ? v / static_cast<double>(k) : 0) + eps);
      mean[i * groups + g] = mu;
      rstd[i * groups + g] = rs;
      for (int64_t j = 0; j < k; ++j) {
        const int64_t ch = g * cg + j / std::max<int64_t>(sp, 1);
        y[base + j] = (xv[base + j] - mu) * rs * w[ch] + b[ch];
      }
    }
  }
  NormResult r;
  ASSIGN_OR_RETURN(r.y, FromDoubles(op, x.dtype(), x.sizes(), y));
  ASSIGN_OR_RETURN(r.mean, FromDoubles(op, x.dtype(), {n, groups}, mean));
  ASSIGN_OR_RETURN(r.rstd, FromDoubles(op, x.dtype(), {n, groups}, rstd));
  return r;
}

absl::StatusOr<Tensor> LocalResponseNorm(const std::string& op, const Tensor& x, int64_t size,
                                         double alpha, double beta, double bias) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  if (x.dim() < 3) {
    return Invalid(op, absl::StrCat("input must have at least 3 dims, got shape ",
                                    ShapeToString(x.sizes())));
  }
  if (size <= 0) return Invalid(op, absl::StrCat("size must be positive, got ", size));
  const int64_t n = x.size(0), c = x.size(1), sp = Prod(x.sizes(), 2);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> y(xv.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t lo = std::max<int64_t>(0, ch - before), hi = std::min(c - 1, ch + after);
      for (int64_t j = 0; j < sp; ++j) {
        double sq = 0;
        for (int64_t cc = lo; cc <= hi; ++cc) {
          const double v = xv[(i * c + cc) * sp + j];
          sq += v * v;
        }
        const int64_t k = (i * c + ch) * sp + j;
        y[k] = xv[k] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
      }
    }
  }
  return FromDoubles(op, x.dtype(), x.sizes(), y);
}

namespace {

// For each element (row-major), the index of its group when `reduced` dims
// are collapsed; also the number of groups.
std::vector<int64_t> GroupIndex(const std::vector<int64_t>& shape,
                                const std::vector<bool>& reduced, int64_t* num_groups) {
  const int64_t n = Prod(shape);
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::vector<int64_t> pos(shape.size(), 0);
  int64_t groups = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) groups *= shape[d];
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t g = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!reduced[d]) g = g * shape[d] + pos[d];
    }
    out[i] = g;
    Next(pos, shape);
  }
  *num_groups = groups;
  return out;
}

}  // namespace

absl::StatusOr<Tensor> LpNormalize(const std::string& op, const Tensor& x, int64_t axis,
                                   int64_t p) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  if (p != 1 && p != 2) return Invalid(op, absl::StrCat("p must be 1 or 2, got ", p));
  ASSIGN_OR_RETURN(int64_t dim, NormalizeDim(axis, std::max<int64_t>(x.dim(), 1), op.c_str()));
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), false);
  if (x.dim() > 0) reduced[dim] = true;
  int64_t groups = 0;
  const std::vector<int64_t> gi = GroupIndex(x.sizes(), reduced, &groups);
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> norm(static_cast<size_t>(groups), 0.0);
  for (size_t i = 0; i < xv.size(); ++i) {
    norm[gi[i]] += p == 1 ? std::fabs(xv[i]) : xv[i] * xv[i];
  }
  if (p == 2) {
    for (double& v : norm) v = std::sqrt(v);
  }
  std::vector<double> y(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) y[i] = xv[i] / norm[gi[i]];
  return FromDoubles(op, x.dtype(), x.sizes(), y);
}

absl::StatusOr<Tensor> MeanVarianceNorm(const std::string& op, const Tensor& x,
                                        const std::vector<int64_t>& axes) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), false);
  for (int64_t a : axes) {
    ASSIGN_OR_RETURN(int64_t d, NormalizeDim(a, x.dim(), op.c_str()));
    reduced[d] = true;
  }
  int64_t groups = 0;
  const std::vector<int64_t> gi = GroupIndex(x.sizes(), reduced, &groups);
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> sum(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0),
      count(static_cast<size_t>(groups), 0.0);
  for (size_t i = 0; i < xv.size(); ++i) {
    sum[gi[i]] += xv[i];
    sq[gi[i]] += xv[i] * xv[i];
    count[gi[i]] += 1;
  }
  std::vector<double> y(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const double mean = sum[gi[i]] / count[gi[i]];
    const double var = std::max(0.0, sq[gi[i]] / count[gi[i]] - mean * mean);
    y[i] = (xv[i] - mean) / (std::sqrt(var) + 1e-9);
  }
  return FromDoubles(op, x.dtype(), x.sizes(), y);
}

// ============================================================ resampling

namespace {

struct Tap {
  int64_t index;
  double weight;
};

// How output index `o` of one dim reads the input: weighted taps, or the
// extrapolation value.
struct AxisPlan {
  std::vector<std::vector<Tap>> taps;
  std::vector<bool> extrapolate;
};

double CubicWeight(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

int64_t Clamp(int64_t i, int64_t n) { return std::min(std::max<int64_t>(i, 0), n - 1); }

absl::StatusOr<AxisPlan> PlanAxis(const std::string& op, int64_t in, int64_t out, double scale,
                                  double roi_start, double roi_end, const ResizeOptions& o) {
  AxisPlan plan;
  plan.taps.resize(static_cast<size_t>(out));
  plan.extrapolate.assign(static_cast<size_t>(out), false);
  const double din = static_cast<double>(in), dout = static_cast<double>(out);
  // PyTorch's scale: 1/scale_factor when given, else in/out (as float).
  const float torch_scale =
      scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(din / dout);
  for (int64_t i = 0; i < out; ++i) {
    const double x = static_cast<double>(i);
    double src = 0;
    switch (o.coord) {
      case CoordMode::kHalfPixel: src = (x + 0.5) / scale - 0.5; break;
      case CoordMode::kPytorchHalfPixel:
        src = dout > 1 ? (x + 0.5) / scale - 0.5 : -0.5;
        break;
      case CoordMode::kAlignCorners: {
        const double width = scale * din;
        src = width == 1 ? 0 : x * (din - 1) / (width - 1);
        break;
      }
      case CoordMode::kAsymmetric: src = x / scale; break;
      case CoordMode::kTfHalfPixelForNn: src = (x + 0.5) / scale; break;
      case CoordMode::kHalfPixelSymmetric: {
        // Resize-19: half_pixel recentred for the integer output size.
        const double adjustment = dout / (scale * din);
        const double offset = din / 2 * (1 - adjustment);
        src = offset + (x + 0.5) / scale - 0.5;
        break;
      }
      case CoordMode::kTfCropAndResize: {
        const double width = scale * din;
        src = width == 1 ? (roi_end - roi_start) * (din - 1) / 2
                         : x * (roi_end - roi_start) * (din - 1) / (width - 1);
        src += roi_start * (din - 1);
        if (src < 0 || src > din - 1) {
          plan.extrapolate[i] = true;
          continue;
        }
        break;
      }
      case CoordMode::kTorchNearest: {
        const int64_t s = FloorIndex(static_cast<float>(i) * torch_scale);
        plan.taps[i] = {{std::min(s, in - 1), 1.0}};
        continue;
      }
      case CoordMode::kTorchNearestExact: {
        const int64_t s =
            FloorIndex((static_cast<float>(i) + 0.5f) * torch_scale);
        plan.taps[i] = {{std::min(s, in - 1), 1.0}};
        continue;
      }
      case CoordMode::kTorchLinear:
      case CoordMode::kTorchLinearAlignCorners: {
        if (o.coord == CoordMode::kTorchLinearAlignCorners) {
          const float s = out > 1 ? static_cast<float>(din - 1) / static_cast<float>(dout - 1) : 0.f;
          src = static_cast<double>(s * static_cast<float>(i));
        } else {
          src = static_cast<double>(torch_scale * (static_cast<float>(i) + 0.5f) - 0.5f);
          // Linear modes clamp negative sources; bicubic does not.
          if (o.mode != ResizeMode::kCubic && src < 0) src = 0;
        }
        if (o.mode == ResizeMode::kLinear) {
          const int64_t i0 = std::min(FloorIndex(src), in - 1);
          const int64_t i1 = i0 + (i0 < in - 1 ? 1 : 0);
          const double l1 = std::min(std::max(src - static_cast<double>(i0), 0.0), 1.0);
          plan.taps[i] = {{i0, 1.0 - l1}, {i1, l1}};
          continue;
        }
        break;  // cubic: shared below (index clamping = PyTorch's access clamp)
      }
    }
    const double base = std::floor(src);
    const double t = src - base;
    const int64_t b = FloorIndex(base);
    std::vector<Tap> taps;
    switch (o.mode) {
      case ResizeMode::kNearest: {
        int64_t pick = b;
        if (t != 0) {
          switch (o.nearest) {
            case NearestMode::kRoundPreferFloor: pick = t <= 0.5 ? b : b + 1; break;
            case NearestMode::kRoundPreferCeil: pick = t < 0.5 ? b : b + 1; break;
            case NearestMode::kFloor: pick = b; break;
            case NearestMode::kCeil: pick = b + 1; break;
            case NearestMode::kSimple: pick = scale < 1 ? b + 1 : b; break;
          }
        }
        taps = {{Clamp(pick, in), 1.0}};
        break;
      }
      case ResizeMode::kLinear:
        taps = {{Clamp(b, in), 1 - t}, {Clamp(b + 1, in), t}};
        break;
      case ResizeMode::kCubic: {
        double total = 0;
        for (int64_t k = -1; k <= 2; ++k) {
          double wgt = CubicWeight(t - static_cast<double>(k), o.cubic_a);
          if (o.exclude_outside && (b + k < 0 || b + k >= in)) wgt = 0;
          total += wgt;
          taps.push_back({Clamp(b + k, in), wgt});
        }
        if (o.exclude_outside && total != 0) {
          for (Tap& tp : taps) tp.weight /= total;
        }
        break;
      }
    }
    plan.taps[i] = std::move(taps);
  }
  return plan;
}

// Resamples dim `d` of a row-major buffer of `shape` to `out` entries.
std::vector<double> ApplyAxis(const std::vector<double>& v, const std::vector<int64_t>& shape,
                              size_t d, const AxisPlan& plan, double extrapolation) {
  const int64_t outer = Prod(shape, 0, d), inner = Prod(shape, d + 1);
  const int64_t in = shape[d], out = static_cast<int64_t>(plan.taps.size());
  std::vector<double> r(static_cast<size_t>(outer * out * inner));
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t o = 0; o < out; ++o) {
      double* rp = r.data() + ((a * out + o) * inner);
      if (plan.extrapolate[o]) {
        std::fill(rp, rp + inner, extrapolation);
        continue;
      }
      for (int64_t c = 0; c < inner; ++c) rp[c] = 0;
      for (const Tap& t : plan.taps[o]) {
        if (t.weight == 0) continue;
        const double* vp = v.data() + ((a * in + t.index) * inner);
        for (int64_t c = 0; c < inner; ++c) rp[c] += t.weight * vp[c];
      }
    }
  }
  return r;
}

}  // namespace

absl::StatusOr<Tensor> Resize(const std::string& op, const Tensor& x,
                              const std::vector<int64_t>& out_sizes,
                              const std::vector<double>& scales, const ResizeOptions& o) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  const size_t rank = static_cast<size_t>(x.dim());
  if (out_sizes.size() != rank || scales.size() != rank) {
    return Invalid(op, absl::StrCat("expected ", rank, " sizes and scales, got ",
                                    out_sizes.size(), " and ", scales.size()));
  }
  if (o.coord == CoordMode::kTfCropAndResize && o.roi.size() != 2 * rank) {
    return Invalid(op, absl::StrCat("roi must have ", 2 * rank, " values, got ", o.roi.size()));
  }
  RETURN_IF_ERROR(CheckedNumel(op, out_sizes).status());
  std::vector<int64_t> shape = x.sizes();
  std::vector<double> v = ToDoubles(x);
  for (size_t d = 0; d < rank; ++d) {
    const bool torch_mode = o.coord == CoordMode::kTorchNearest ||
                            o.coord == CoordMode::kTorchNearestExact ||
                            o.coord == CoordMode::kTorchLinear ||
                            o.coord == CoordMode::kTorchLinearAlignCorners;
    if (out_sizes[d] == shape[d] && o.coord != CoordMode::kTfCropAndResize &&
        (torch_mode || scales[d] == 1.0)) {
      continue;  // identity along this dim
    }
    if (out_sizes[d] < 0) return Invalid(op, "output sizes must be non-negative");
    if (shape[d] <= 0) {
      if (out_sizes[d] == 0) {
        shape[d] = 0;
        v.clear();
        continue;
      }
      return Invalid(op, absl::StrCat("cannot resize empty dim ", d));
    }
    if (!torch_mode && !(scales[d] > 0)) {
      return Invalid(op, absl::StrCat("scale of dim ", d, " must be positive, got ", scales[d]));
    }
    const double rs = o.roi.empty() ? 0 : o.roi[d];
    const double re = o.roi.empty() ? 1 : o.roi[rank + d];
    ASSIGN_OR_RETURN(AxisPlan plan, PlanAxis(op, shape[d], out_sizes[d], scales[d], rs, re, o));
    v = ApplyAxis(v, shape, d, plan, o.extrapolation_value);
    shape[d] = out_sizes[d];
  }
  if (!IsFloatingPoint(x.dtype())) {
    for (double& e : v) e = std::nearbyint(e);
  }
  return FromDoubles(op, x.dtype(), shape, v);
}

namespace {

double Unnormalize(double coord, int64_t size, bool align_corners) {
  return align_corners ? (coord + 1) / 2 * static_cast<double>(size - 1)
                       : ((coord + 1) * static_cast<double>(size) - 1) / 2;
}

// Reflects `x` into [lo, hi] given as twice the bounds (PyTorch's
// reflect_coordinates).
double Reflect(double x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return 0;
  const double mn = static_cast<double>(twice_low) / 2;
  const double span = static_cast<double>(twice_high - twice_low) / 2;
  x = std::fabs(x - mn);
  const double extra = std::fmod(x, span);
  const int64_t flips = FloorIndex(x / span);
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}

double ApplyPadding(double x, int64_t size, int64_t padding, bool align_corners) {
  if (padding == 1) {
    x = std::min(std::max(x, 0.0), static_cast<double>(size - 1));
  } else if (padding == 2) {
    x = align_corners ? Reflect(x, 0, 2 * (size - 1)) : Reflect(x, -1, 2 * size - 1);
    x = std::min(std::max(x, 0.0), static_cast<double>(size - 1));
  }
  return x;
}

}  // namespace

absl::StatusOr<Tensor> GridSample2d(const std::string& op, const Tensor& x, const Tensor& grid,
                                    int64_t interpolation, int64_t padding,
                                    bool align_corners) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  RETURN_IF_ERROR(CheckData(op, grid, "grid"));
  if (x.dim() != 4 || grid.dim() != 4 || grid.size(3) != 2 || grid.size(0) != x.size(0)) {
    return Invalid(op, absl::StrCat("expected input [N, C, H, W] and grid [N, H, W, 2], got ",
                                    ShapeToString(x.sizes()), " and ",
                                    ShapeToString(grid.sizes())));
  }
  if (interpolation < 0 || interpolation > 2 || padding < 0 || padding > 2) {
    return Invalid(op, absl::StrCat("unknown interpolation ", interpolation, " or padding ",
                                    padding));
  }
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t oh = grid.size(1), ow = grid.size(2);
  if ((h <= 0 || w <= 0) && oh * ow > 0) return Invalid(op, "input has an empty spatial dim");
  ASSIGN_OR_RETURN(int64_t total, CheckedNumel(op, {n, c, oh, ow}));
  const std::vector<double> xv = ToDoubles(x), gv = ToDoubles(grid);
  std::vector<double> y(static_cast<size_t>(total));
  auto at = [&](int64_t b, int64_t ch, int64_t yy, int64_t xx) -> double {
    if (yy < 0 || yy >= h || xx < 0 || xx >= w) return 0;
    return xv[((b * c + ch) * h + yy) * w + xx];
  };
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        const double gx = gv[((b * oh + i) * ow + j) * 2];
        const double gy = gv[((b * oh + i) * ow + j) * 2 + 1];
        double ix = Unnormalize(gx, w, align_corners);
        double iy = Unnormalize(gy, h, align_corners);
        for (int64_t ch = 0; ch < c; ++ch) {
          double val = 0;
          if (interpolation == 2) {
            const double fx = std::floor(ix), fy = std::floor(iy);
            const double tx = ix - fx, ty = iy - fy;
            for (int64_t r = -1; r <= 2; ++r) {
              const double wy = CubicWeight(ty - static_cast<double>(r), -0.75);
              for (int64_t s = -1; s <= 2; ++s) {
                const double wx = CubicWeight(tx - static_cast<double>(s), -0.75);
                // Padding applies per tap for bicubic (as PyTorch).
                const double px = ApplyPadding(fx + static_cast<double>(s), w, padding,
                                               align_corners);
                const double py = ApplyPadding(fy + static_cast<double>(r), h, padding,
                                               align_corners);
                val += wx * wy * at(b, ch, FloorIndex(py), FloorIndex(px));
              }
            }
          } else {
            const double px = ApplyPadding(ix, w, padding, align_corners);
            const double py = ApplyPadding(iy, h, padding, align_corners);
            if (interpolation == 1) {
              val = at(b, ch, FloorIndex(std::nearbyint(py)), FloorIndex(std::nearbyint(px)));
            } else {
              const double x0 = std::floor(px), y0 = std::floor(py);
              const double tx = px - x0, ty = py - y0;
              const int64_t xi = FloorIndex(x0), yi = FloorIndex(y0);
              val = at(b, ch, yi, xi) * (1 - tx) * (1 - ty) + at(b, ch, yi, xi + 1) * tx * (1 - ty) +
                    at(b, ch, yi + 1, xi) * (1 - tx) * ty + at(b, ch, yi + 1, xi + 1) * tx * ty;
            }
          }
          y[((b * c + ch) * oh + i) * ow + j] = val;
        }
      }
    }
  }
  return FromDoubles(op, x.dtype(), {n, c, oh, ow}, y);
}

absl::StatusOr<Tensor> RoiAlign(const std::string& op, const Tensor& x, const Tensor& rois,
                                const Tensor& batch_indices, const RoiAlignOptions& o) {
  RETURN_IF_ERROR(CheckData(op, x, "X"));
  RETURN_IF_ERROR(CheckData(op, rois, "rois"));
  RETURN_IF_ERROR(CheckData(op, batch_indices, "batch_indices"));
  if (x.dim() != 4 || rois.dim() != 2 || rois.size(1) != 4 || batch_indices.dim() != 1 ||
      batch_indices.size(0) != rois.size(0)) {
    return Invalid(op, absl::StrCat("expected X [N, C, H, W], rois [R, 4], batch_indices [R]; got ",
                                    ShapeToString(x.sizes()), ", ", ShapeToString(rois.sizes()),
                                    ", ", ShapeToString(batch_indices.sizes())));
  }
  if (o.output_height <= 0 || o.output_width <= 0 || o.sampling_ratio < 0) {
    return Invalid(op, "output sizes must be positive and sampling_ratio non-negative");
  }
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const int64_t r = rois.size(0), ph = o.output_height, pw = o.output_width;
  ASSIGN_OR_RETURN(int64_t total, CheckedNumel(op, {r, c, ph, pw}));
  const std::vector<double> xv = ToDoubles(x), rv = ToDoubles(rois);
  const std::vector<int64_t> bi = ToInts(batch_indices);
  std::vector<double> y(static_cast<size_t>(total));
  const double offset = o.half_pixel ? 0.5 : 0.0;
  for (int64_t k = 0; k < r; ++k) {
    const int64_t b = bi[k];
    if (b < 0 || b >= n) {
      return Invalid(op, absl::StrCat("batch index ", b, " out of range [0, ", n, ")"));
    }
    const double x1 = rv[k * 4] * o.spatial_scale - offset;
    const double y1 = rv[k * 4 + 1] * o.spatial_scale - offset;
    const double x2 = rv[k * 4 + 2] * o.spatial_scale - offset;
    const double y2 = rv[k * 4 + 3] * o.spatial_scale - offset;
    double rw = x2 - x1, rh = y2 - y1;
    if (!o.half_pixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bin_h = rh / static_cast<double>(ph), bin_w = rw / static_cast<double>(pw);
    // Adaptive sampling: ceil(roi size / bins) points per bin and axis.
    const double gh_d = o.sampling_ratio > 0 ? static_cast<double>(o.sampling_ratio)
                                             : std::ceil(rh / static_cast<double>(ph));
    const double gw_d = o.sampling_ratio > 0 ? static_cast<double>(o.sampling_ratio)
                                             : std::ceil(rw / static_cast<double>(pw));
    if (!(gh_d <= 4096) || !(gw_d <= 4096)) {
      return Invalid(op, "rois must be finite with a sampling grid of at most 4096 per axis");
    }
    const int64_t gh = static_cast<int64_t>(std::max(gh_d, 0.0));
    const int64_t gw = static_cast<int64_t>(std::max(gw_d, 0.0));
    const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
    for (int64_t ch = 0; ch < c; ++ch) {
      const double* plane = xv.data() + ((b * c + ch) * h * w);
      for (int64_t i = 0; i < ph; ++i) {
        for (int64_t j = 0; j < pw; ++j) {
          double acc = o.max_mode ? -std::numeric_limits<double>::infinity() : 0.0;
          bool any = false;
          for (int64_t iy = 0; iy < gh; ++iy) {
            double yy = y1 + static_cast<double>(i) * bin_h +
                        (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              double xx = x1 + static_cast<double>(j) * bin_w +
                          (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(gw);
              double v = 0;
              double cand = 0;
              if (!(yy < -1.0 || yy > static_cast<double>(h) || xx < -1.0 ||
                    xx > static_cast<double>(w)) && std::isfinite(yy) && std::isfinite(xx) &&
                  h > 0 && w > 0) {
                double sy = std::max(yy, 0.0), sx = std::max(xx, 0.0);
                int64_t y_lo = static_cast<int64_t>(sy), x_lo = static_cast<int64_t>(sx);
                int64_t y_hi, x_hi;
                if (y_lo >= h - 1) {
                  y_hi = y_lo = h - 1;
                  sy = static_cast<double>(y_lo);
                } else {
                  y_hi = y_lo + 1;
                }
                if (x_lo >= w - 1) {
                  x_hi = x_lo = w - 1;
                  sx = static_cast<double>(x_lo);
                } else {
                  x_hi = x_lo + 1;
                }
                const double ly = sy - static_cast<double>(y_lo), lx = sx - static_cast<double>(x_lo);
                const double hy = 1 - ly, hx = 1 - lx;
                const double w1 = hy * hx, w2 = hy * lx, w3 = ly * hx, w4 = ly * lx;
                const double v1 = plane[y_lo * w + x_lo], v2 = plane[y_lo * w + x_hi];
                const double v3 = plane[y_hi * w + x_lo], v4 = plane[y_hi * w + x_hi];
                v = w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4;
                cand = std::max(std::max(w1 * v1, w2 * v2), std::max(w3 * v3, w4 * v4));
              }
              if (o.max_mode) {
                acc = any ? std::max(acc, cand) : cand;
              } else {
                acc += v;
              }
              any = true;
            }
          }
          y[((k * c + ch) * ph + i) * pw + j] = o.max_mode ? (any ? acc : 0.0) : acc / count;
        }
      }
    }
  }
  return FromDoubles(op, x.dtype(), {r, c, ph, pw}, y);
}

namespace {

absl::StatusOr<Tensor> Rearrange(const std::string& op, const Tensor& x, int64_t block, bool dcr,
                                 bool to_space) {
  RETURN_IF_ERROR(CheckData(op, x, "input"));
  if (x.dim() < 3) {
    return Invalid(op, absl::StrCat("input must have at least 3 dims, got shape ",
                                    ShapeToString(x.sizes())));
  }
  if (block <= 0) return Invalid(op, absl::StrCat("block size must be positive, got ", block));
  const int64_t rank = x.dim();
  const int64_t c = x.size(rank - 3), h = x.size(rank - 2), w = x.size(rank - 1);
  const int64_t planes = Prod(x.sizes(), 0, static_cast<size_t>(rank - 3));
  const int64_t bb = block * block;
  std::vector<int64_t> out_shape(x.sizes().begin(), x.sizes().end() - 3);
  int64_t oc, oh, ow;
  if (to_space) {
    if (c % bb != 0) {
      return Invalid(op, absl::StrCat("channels ", c, " not divisible by block size squared ", bb));
    }
    oc = c / bb;
    oh = h * block;
    ow = w * block;
  } else {
    if (h % block != 0 || w % block != 0) {
      return Invalid(op, absl::StrCat("spatial dims ", h, "x", w, " not divisible by block size ",
                                      block));
    }
    oc = c * bb;
    oh = h / block;
    ow = w / block;
  }
  out_shape.insert(out_shape.end(), {oc, oh, ow});
  ASSIGN_OR_RETURN(int64_t total, CheckedNumel(op, out_shape));
  const std::vector<double> xv = ToDoubles(x);
  std::vector<double> y(static_cast<size_t>(total));
  // Channel of the deep tensor holding (shallow channel cs, block offsets i, j).
  const int64_t cs_count = to_space ? oc : c;
  auto deep_channel = [&](int64_t cs, int64_t i, int64_t j) {
    return dcr ? (i * block + j) * cs_count + cs : cs * bb + i * block + j;
  };
  const int64_t hs = to_space ? h : oh, ws = to_space ? w : ow;  // deep spatial dims
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t cs = 0; cs < cs_count; ++cs) {
      for (int64_t i = 0; i < block; ++i) {
        for (int64_t j = 0; j < block; ++j) {
          const int64_t cd = deep_channel(cs, i, j);
          for (int64_t yy = 0; yy < hs; ++yy) {
            for (int64_t xx = 0; xx < ws; ++xx) {
              const int64_t deep = ((p * cs_count * bb + cd) * hs + yy) * ws + xx;
              const int64_t shallow =
                  ((p * cs_count + cs) * hs * block + yy * block + i) * ws * block + xx * block + j;
              if (to_space) {
                y[shallow] = xv[deep];
              } else {
                y[deep] = xv[shallow];
              }
            }
          }
        }
      }
    }
  }
  return FromDoubles(op, x.dtype(), out_shape, y);
}

}  // namespace

absl::StatusOr<Tensor> DepthToSpace(const std::string& op, const Tensor& x, int64_t block,
                                    bool dcr) {
  return Rearrange(op, x, block, dcr, /*to_space=*/true);
}

absl::StatusOr<Tensor> SpaceToDepth(const std::string& op, const Tensor& x, int64_t block,
                                    bool dcr) {
  return Rearrange(op, x, block, dcr, /*to_space=*/false);
}

}  // namespace kiln::runtime::nn
