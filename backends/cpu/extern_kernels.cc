#include "backends/cpu/extern_kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/ivalue.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"
#include "wrapper/host_fallback.h"

namespace kiln::backends::cpu {
namespace {

// libgomp's idle workers spin (~300k iterations) after every parallel region
// of a generated kernel. On a 2-core machine they then steal the cores that
// extern kernels (OpenBLAS's own threads, convolutions, reference kernels)
// and the next kernel need: squeezenet1_1 ran 5x slower that way. Passive
// waiting costs a futex wake per region (microseconds, against kernels of
// hundreds of microseconds). libgomp reads the variable once, when it is
// loaded (the first generated program's dlopen, after main starts), so a
// static initializer sets it; an explicit setting by the user wins.
const bool kOpenMpWaitPolicySet = [] {
  ::setenv("OMP_WAIT_POLICY", "passive", /*overwrite=*/0);
  return true;
}();

std::string BaseName(const std::string& op) { return op.substr(0, op.find('.')); }

std::string Shape(const Tensor& t) { return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]"); }

// A 2-D float matrix as cblas sees it (row-major).
struct GemmOperand {
  const float* data = nullptr;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int ld = 1;
  Tensor keep;  // a contiguous copy when the strides do not fit
};

bool FitsInt(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

// `m` is [rows, cols] given by sizes/strides/pointer.
GemmOperand AsGemm(const Tensor& m) {
  GemmOperand g;
  const int64_t rows = m.size(0), cols = m.size(1);
  const int64_t s0 = m.strides()[0], s1 = m.strides()[1];
  if ((s1 == 1 || cols == 1) && (s0 >= std::max<int64_t>(cols, 1) || rows == 1) && FitsInt(s0)) {
    g.data = m.data<float>();
    g.ld = static_cast<int>(rows == 1 ? std::max<int64_t>(cols, 1) : s0);
    return g;
  }
  if ((s0 == 1 || rows == 1) && (s1 >= std::max<int64_t>(rows, 1) || cols == 1) && FitsInt(s1)) {
    g.data = m.data<float>();
    g.trans = CblasTrans;
    g.ld = static_cast<int>(cols == 1 ? std::max<int64_t>(rows, 1) : s1);
    return g;
  }
  g.keep = m.Contiguous();
  g.data = g.keep.data<float>();
  g.ld = static_cast<int>(std::max<int64_t>(cols, 1));
  return g;
}

Tensor Matrix(const Tensor& t, int64_t batch) {
  if (t.dim() == 2) return t;
  return Tensor::View(t, {t.size(1), t.size(2)}, {t.strides()[1], t.strides()[2]},
                      t.storage_offset() + batch * t.strides()[0]);
}

// out[M,N] = beta_init + a[M,K] @ b[K,N] (b_transposed: b is [N,K]).
absl::Status Gemm(const Tensor& a, const Tensor& b, bool b_transposed, Tensor& out, float alpha,
                  bool accumulate) {
  const int64_t m = a.size(0), k = a.size(1);
  const int64_t n = b_transposed ? b.size(0) : b.size(1);
  const int64_t kb = b_transposed ? b.size(1) : b.size(0);
  if (kb != k || out.size(0) != m || out.size(1) != n) {
    return absl::InvalidArgumentError(absl::StrCat("sgemm: shapes ", Shape(a), " x ", Shape(b),
                                                   " -> ", Shape(out), " do not match"));
  }
  if (!FitsInt(m) || !FitsInt(n) || !FitsInt(k)) return absl::InvalidArgumentError("sgemm: sizes past int32");
  if (m == 0 || n == 0) return absl::OkStatus();
  const bool out_fits = (out.strides()[1] == 1 || n == 1) && (out.strides()[0] >= n || m == 1) &&
                        FitsInt(out.strides()[0]);
  Tensor c = out;
  if (!out_fits) {
    c = Tensor::Empty(DType::kFloat32, {m, n});
    if (accumulate) RETURN_IF_ERROR(runtime::CopyInto(out, c));
  }
  const int ldc = static_cast<int>(m == 1 ? std::max<int64_t>(n, 1) : c.strides()[0]);
  if (k == 0) {
    if (!accumulate) {
      for (int64_t i = 0; i < m; ++i) std::memset(c.data<float>() + i * ldc, 0, sizeof(float) * n);
    }
  } else {
    GemmOperand ga = AsGemm(a);
    GemmOperand gb = AsGemm(b);
    CBLAS_TRANSPOSE tb = gb.trans;
    if (b_transposed) tb = tb == CblasNoTrans ? CblasTrans : CblasNoTrans;
    cblas_sgemm(CblasRowMajor, ga.trans, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
                alpha, ga.data, ga.ld, gb.data, gb.ld, accumulate ? 1.0f : 0.0f, c.data<float>(), ldc);
  }
  if (!out_fits) RETURN_IF_ERROR(runtime::CopyInto(c, out));
  return absl::OkStatus();
}

// out[i, j] = beta * bias broadcast to [M, N].
absl::Status FillBias(const Tensor& bias, double beta, Tensor& out) {
  const int64_t m = out.size(0), n = out.size(1);
  if (bias.dim() > 2) return absl::InvalidArgumentError("bias of rank > 2");
  const int64_t bm = bias.dim() == 2 ? bias.size(0) : 1;
  const int64_t bn = bias.dim() >= 1 ? bias.size(bias.dim() - 1) : 1;
  if ((bm != 1 && bm != m) || (bn != 1 && bn != n)) {
    return absl::InvalidArgumentError(absl::StrCat("bias ", Shape(bias), " does not broadcast to [", m, ", ", n, "]"));
  }
  const int64_t sm = bias.dim() == 2 ? bias.strides()[0] : 0;
  const int64_t sn = bias.dim() >= 1 ? bias.strides()[bias.dim() - 1] : 0;
  const float* b = bias.data<float>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const float v = b[(bm == 1 ? 0 : i * sm) + (bn == 1 ? 0 : j * sn)];
      o[i * out.strides()[0] + j * out.strides()[1]] = static_cast<float>(beta * v);
    }
  }
  return absl::OkStatus();
}

std::optional<double> NumberOr(const std::vector<ir::IValue>& v, size_t i, double dflt) {
  if (i >= v.size() || v[i].isNone()) return dflt;
  if (!v[i].isNumber()) return std::nullopt;
  return v[i].toNumberAsDouble();
}

// The BLAS path; nullopt when the call does not fit it (then the reference
// kernel runs).
std::optional<absl::Status> TryBlas(const std::string& op, const std::vector<ir::IValue>& args,
                                    std::vector<Tensor>& outputs) {
  const std::string base = BaseName(op);
  if (outputs.size() != 1 || outputs[0].dtype() != DType::kFloat32) return std::nullopt;
  auto tensor = [&](size_t i) -> const Tensor* {
    if (i >= args.size() || !args[i].isTensor()) return nullptr;
    const Tensor& t = args[i].toTensor();
    return t.has_data() && t.dtype() == DType::kFloat32 ? &t : nullptr;
  };
  Tensor& out = outputs[0];
  if (base == "aten::mm" || base == "aten::matmul" || base == "aten::bmm") {
    const Tensor* a = tensor(0);
    const Tensor* b = tensor(1);
    if (a == nullptr || b == nullptr || args.size() != 2 || a->dim() != b->dim()) return std::nullopt;
    if (a->dim() == 2 && out.dim() == 2) return Gemm(*a, *b, false, out, 1.0f, false);
    if (a->dim() == 3 && out.dim() == 3 && a->size(0) == b->size(0) && out.size(0) == a->size(0)) {
      for (int64_t i = 0; i < a->size(0); ++i) {
        Tensor o = Matrix(out, i);
        RETURN_IF_ERROR(Gemm(Matrix(*a, i), Matrix(*b, i), false, o, 1.0f, false));
      }
      return absl::OkStatus();
    }
    return std::nullopt;
  }
  if (base == "aten::linear") {
    const Tensor* x = tensor(0);
    const Tensor* w = tensor(1);
    if (x == nullptr || w == nullptr || x->dim() != 2 || w->dim() != 2 || out.dim() != 2) return std::nullopt;
    const bool has_bias = args.size() > 2 && !args[2].isNone();
    if (has_bias) {
      const Tensor* bias = tensor(2);
      if (bias == nullptr) return std::nullopt;
      RETURN_IF_ERROR(FillBias(*bias, 1.0, out));
    }
    return Gemm(*x, *w, true, out, 1.0f, has_bias);
  }
  if (base == "aten::addmm") {
    const Tensor* self = tensor(0);
    const Tensor* a = tensor(1);
    const Tensor* b = tensor(2);
    std::optional<double> beta = NumberOr(args, 3, 1.0), alpha = NumberOr(args, 4, 1.0);
    if (self == nullptr || a == nullptr || b == nullptr || !beta || !alpha || a->dim() != 2 || b->dim() != 2 ||
        out.dim() != 2) {
      return std::nullopt;
    }
    // beta == 0 ignores `self` (NaNs included), as torch does.
    if (*beta != 0) RETURN_IF_ERROR(FillBias(*self, *beta, out));
    return Gemm(*a, *b, false, out, static_cast<float>(*alpha), *beta != 0);
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- convolution
// Float32 forward convolutions with one or two spatial dims (1-D runs as
// 2-D with H = 1): depthwise ones as a direct loop, the rest as im2col +
// cblas_sgemm per (image, group); 1x1/stride-1/unpadded convolutions feed the
// input to sgemm directly. Anything else (transposed, 3-D, other dtypes,
// malformed arguments) goes to the reference kernel, which reports errors.

struct ConvParams {
  int64_t n = 0, cin = 0, ih = 0, iw = 0;
  int64_t cout = 0, kh = 0, kw = 0;
  int64_t oh = 0, ow = 0;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t groups = 1;
};

// An int list of `n` values, or of one value repeated (torch's int[2] args).
std::optional<std::vector<int64_t>> IntListArg(const std::vector<ir::IValue>& args, size_t i, size_t n) {
  if (i >= args.size()) return std::nullopt;
  std::vector<int64_t> v;
  if (args[i].isInt()) {
    v.assign(n, args[i].toInt());
    return v;
  }
  if (!args[i].isList() && !args[i].isTuple()) return std::nullopt;
  for (const ir::IValue& e : args[i].elements()) {
    if (!e.isInt()) return std::nullopt;
    v.push_back(e.toInt());
  }
  if (v.size() == 1 && n > 1) v.assign(n, v[0]);
  if (v.size() != n) return std::nullopt;
  return v;
}

// Runs fn(begin, end) over [0, total) on up to hardware_concurrency threads
// when the work is large enough to pay for starting them.
template <typename Fn>
void ParallelRange(int64_t total, int64_t work_per_item, Fn fn) {
  static const int64_t threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t useful = std::min<int64_t>(threads, total);
  if (useful <= 1 || total * work_per_item < (int64_t{1} << 17)) {
    fn(int64_t{0}, total);
    return;
  }
  std::vector<std::thread> pool;
  const int64_t chunk = (total + useful - 1) / useful;
  for (int64_t t = 1; t < useful; ++t) {
    const int64_t b = t * chunk, e = std::min(total, b + chunk);
    if (b < e) pool.emplace_back([=] { fn(b, e); });
  }
  fn(int64_t{0}, std::min(total, chunk));
  for (std::thread& th : pool) th.join();
}

// Output index range [lo, hi) whose input position o*s - p + k*d is in [0, in).
void ValidRange(int64_t out, int64_t in, int64_t s, int64_t p, int64_t kd, int64_t* lo, int64_t* hi) {
  // o*s >= p - kd  and  o*s <= in - 1 + p - kd
  const int64_t a = p - kd;
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  const int64_t b = in - 1 + p - kd;
  *hi = b < 0 ? 0 : std::min(out, b / s + 1);
  if (*lo > *hi) *lo = *hi;
}

void DepthwiseConv(const ConvParams& c, const float* x, const float* w, const float* bias, float* y) {
  const int64_t planes = c.n * c.cout;
  const int64_t mult = c.cout / c.cin;  // output channels per input channel
  ParallelRange(planes, c.oh * c.ow * c.kh * c.kw, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t img = plane / c.cout, oc = plane % c.cout, ic = oc / mult;
      const float* xp = x + (img * c.cin + ic) * c.ih * c.iw;
      const float* wp = w + oc * c.kh * c.kw;
      float* yp = y + plane * c.oh * c.ow;
      const float b0 = bias != nullptr ? bias[oc] : 0.0f;
      for (int64_t i = 0; i < c.oh * c.ow; ++i) yp[i] = b0;
      for (int64_t ky = 0; ky < c.kh; ++ky) {
        int64_t oy_lo, oy_hi;
        ValidRange(c.oh, c.ih, c.sh, c.ph, ky * c.dh, &oy_lo, &oy_hi);
        for (int64_t kx = 0; kx < c.kw; ++kx) {
          int64_t ox_lo, ox_hi;
          ValidRange(c.ow, c.iw, c.sw, c.pw, kx * c.dw, &ox_lo, &ox_hi);
          const float wv = wp[ky * c.kw + kx];
          for (int64_t oy = oy_lo; oy < oy_hi; ++oy) {
            const int64_t row = (oy * c.sh - c.ph + ky * c.dh) * c.iw + (kx * c.dw - c.pw);
            float* yr = yp + oy * c.ow;
            if (c.sw == 1) {
              const float* xr = xp + row + ox_lo;
              float* yo = yr + ox_lo;
              for (int64_t i = 0; i < ox_hi - ox_lo; ++i) yo[i] += wv * xr[i];
            } else {
              for (int64_t ox = ox_lo; ox < ox_hi; ++ox) yr[ox] += wv * xp[row + ox * c.sw];
            }
          }
        }
      }
    }
  });
}

// cols[(ci, ky, kx), (oy, ox)] of one image and group.
void Im2Col(const ConvParams& c, const float* x, int64_t cin_g, float* cols) {
  const int64_t rows = cin_g * c.kh * c.kw, spatial = c.oh * c.ow;
  ParallelRange(rows, spatial, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t ci = r / (c.kh * c.kw), ky = (r / c.kw) % c.kh, kx = r % c.kw;
      const float* xp = x + ci * c.ih * c.iw;
      float* dst = cols + r * spatial;
      int64_t oy_lo, oy_hi, ox_lo, ox_hi;
      ValidRange(c.oh, c.ih, c.sh, c.ph, ky * c.dh, &oy_lo, &oy_hi);
      ValidRange(c.ow, c.iw, c.sw, c.pw, kx * c.dw, &ox_lo, &ox_hi);
      std::memset(dst, 0, sizeof(float) * static_cast<size_t>(oy_lo * c.ow));
      for (int64_t oy = oy_lo; oy < oy_hi; ++oy) {
        float* d = dst + oy * c.ow;
        const int64_t row = (oy * c.sh - c.ph + ky * c.dh) * c.iw + (kx * c.dw - c.pw);
        for (int64_t ox = 0; ox < ox_lo; ++ox) d[ox] = 0.0f;
        if (c.sw == 1) {
          if (ox_hi > ox_lo) {
            std::memcpy(d + ox_lo, xp + row + ox_lo, sizeof(float) * static_cast<size_t>(ox_hi - ox_lo));
          }
        } else {
          for (int64_t ox = ox_lo; ox < ox_hi; ++ox) d[ox] = xp[row + ox * c.sw];
        }
        for (int64_t ox = ox_hi; ox < c.ow; ++ox) d[ox] = 0.0f;
      }
      std::memset(dst + oy_hi * c.ow, 0, sizeof(float) * static_cast<size_t>((c.oh - oy_hi) * c.ow));
    }
  });
}

absl::Status GemmConv(const ConvParams& c, const float* x, const float* w, const float* bias, float* y) {
  const int64_t cin_g = c.cin / c.groups, cout_g = c.cout / c.groups;
  const int64_t k = cin_g * c.kh * c.kw, spatial = c.oh * c.ow;
  if (!FitsInt(k) || !FitsInt(spatial) || !FitsInt(cout_g)) return absl::InvalidArgumentError("conv: sizes past int32");
  const bool direct = c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && c.ph == 0 && c.pw == 0;
  std::vector<float> cols(direct ? 0 : static_cast<size_t>(k * spatial));
  for (int64_t img = 0; img < c.n; ++img) {
    for (int64_t g = 0; g < c.groups; ++g) {
      const float* xg = x + (img * c.cin + g * cin_g) * c.ih * c.iw;
      float* yg = y + (img * c.cout + g * cout_g) * spatial;
      const float* b = xg;
      if (!direct) {
        Im2Col(c, xg, cin_g, cols.data());
        b = cols.data();
      }
      if (bias != nullptr) {
        for (int64_t o = 0; o < cout_g; ++o) std::fill(yg + o * spatial, yg + (o + 1) * spatial, bias[g * cout_g + o]);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(cout_g), static_cast<int>(spatial),
                  static_cast<int>(k), 1.0f, w + g * cout_g * k, static_cast<int>(k), b,
                  static_cast<int>(spatial), bias != nullptr ? 1.0f : 0.0f, yg, static_cast<int>(spatial));
    }
  }
  return absl::OkStatus();
}

std::optional<absl::Status> TryConv(const std::string& op, const std::vector<ir::IValue>& args,
                                    std::vector<Tensor>& outputs) {
  const bool torch_conv = op == "aten::convolution" || op == "aten::_convolution" ||
                          op == "aten::_convolution.deprecated";
  const bool conv_nd = op == "aten::conv1d" || op == "aten::conv2d";
  const bool onnx_conv = op == "kiln::conv_nd";
  if (!torch_conv && !conv_nd && !onnx_conv) return std::nullopt;
  // KILN_CPU_REFERENCE_CONV=1 sends every convolution to the reference
  // kernel (before/after timings, differential checks).
  static const bool reference_only = [] {
    const char* v = std::getenv("KILN_CPU_REFERENCE_CONV");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  if (reference_only) return std::nullopt;
  if (outputs.size() != 1 || outputs[0].dtype() != DType::kFloat32 || args.size() < 7) return std::nullopt;
  auto tensor = [&](size_t i) -> const Tensor* {
    if (i >= args.size() || !args[i].isTensor()) return nullptr;
    const Tensor& t = args[i].toTensor();
    return t.has_data() && t.dtype() == DType::kFloat32 ? &t : nullptr;
  };
  const Tensor* x = tensor(0);
  const Tensor* w = tensor(1);
  if (x == nullptr || w == nullptr || (w->dim() != 3 && w->dim() != 4) || x->dim() != w->dim()) return std::nullopt;
  const size_t nd = static_cast<size_t>(w->dim() - 2);
  const Tensor* bias = nullptr;
  if (!args[2].isNone()) {
    bias = tensor(2);
    if (bias == nullptr || bias->dim() != 1 || bias->size(0) != w->size(0)) return std::nullopt;
  }
  std::optional<std::vector<int64_t>> stride = IntListArg(args, 3, nd);
  std::optional<std::vector<int64_t>> dilation = IntListArg(args, 5, nd);
  std::optional<std::vector<int64_t>> pad;
  std::optional<int64_t> groups;
  if (onnx_conv) {
    std::optional<std::vector<int64_t>> pads = IntListArg(args, 4, 2 * nd);
    if (!pads) return std::nullopt;
    for (size_t d = 0; d < nd; ++d) {
      if ((*pads)[d] != (*pads)[d + nd]) return std::nullopt;  // asymmetric: reference
    }
    pad = std::vector<int64_t>(pads->begin(), pads->begin() + static_cast<int64_t>(nd));
    if (args[6].isInt()) groups = args[6].toInt();
  } else {
    pad = IntListArg(args, 4, nd);
    const size_t gi = torch_conv ? 8 : 6;
    if (torch_conv && (args.size() < 9 || !args[6].isBool() || args[6].toBool())) return std::nullopt;
    if (gi < args.size() && args[gi].isInt()) groups = args[gi].toInt();
  }
  if (!stride || !dilation || !pad || !groups) return std::nullopt;
  ConvParams c;
  const Tensor& out = outputs[0];
  c.n = x->size(0);
  c.cin = x->size(1);
  c.cout = w->size(0);
  c.groups = *groups;
  c.ih = nd == 2 ? x->size(2) : 1;
  c.iw = x->size(static_cast<int64_t>(nd) + 1);
  c.kh = nd == 2 ? w->size(2) : 1;
  c.kw = w->size(static_cast<int64_t>(nd) + 1);
  c.sh = nd == 2 ? (*stride)[0] : 1;
  c.sw = stride->back();
  c.ph = nd == 2 ? (*pad)[0] : 0;
  c.pw = pad->back();
  c.dh = nd == 2 ? (*dilation)[0] : 1;
  c.dw = dilation->back();
  if (c.groups <= 0 || c.sh <= 0 || c.sw <= 0 || c.dh <= 0 || c.dw <= 0 || c.ph < 0 || c.pw < 0 ||
      c.cin % c.groups != 0 || c.cout % c.groups != 0 || w->size(1) * c.groups != c.cin) {
    return std::nullopt;
  }
  const int64_t eh = c.ih + 2 * c.ph - c.dh * (c.kh - 1) - 1;
  const int64_t ew = c.iw + 2 * c.pw - c.dw * (c.kw - 1) - 1;
  if (eh < 0 || ew < 0) return std::nullopt;
  c.oh = eh / c.sh + 1;
  c.ow = ew / c.sw + 1;
  const std::vector<int64_t> expect =
      nd == 2 ? std::vector<int64_t>{c.n, c.cout, c.oh, c.ow} : std::vector<int64_t>{c.n, c.cout, c.ow};
  if (out.sizes() != expect) return std::nullopt;
  if (out.numel() == 0) return absl::OkStatus();
  Tensor xc = x->is_contiguous() ? *x : x->Contiguous();
  Tensor wc = w->is_contiguous() ? *w : w->Contiguous();
  Tensor bc;
  if (bias != nullptr) bc = bias->is_contiguous() ? *bias : bias->Contiguous();
  Tensor y = out.is_contiguous() ? out : Tensor::Empty(DType::kFloat32, out.sizes());
  const float* bp = bias != nullptr ? bc.data<float>() : nullptr;
  if (c.groups == c.cin && w->size(1) == 1) {
    DepthwiseConv(c, xc.data<float>(), wc.data<float>(), bp, y.data<float>());
  } else {
    RETURN_IF_ERROR(GemmConv(c, xc.data<float>(), wc.data<float>(), bp, y.data<float>()));
  }
  if (!out.is_contiguous()) {
    Tensor o = outputs[0];
    RETURN_IF_ERROR(runtime::CopyInto(y, o));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsBlasOp(const std::string& op) {
  const std::string base = BaseName(op);
  return base == "aten::mm" || base == "aten::bmm" || base == "aten::matmul" || base == "aten::linear" ||
         base == "aten::addmm";
}

absl::Status RunExternKernel(const std::string& op, const std::vector<lowering::ExternArg>& args,
                             const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs) {
  ASSIGN_OR_RETURN(std::vector<ir::IValue> values, wrapper::ExternArgumentValues(args, buffer_args));
  if (std::optional<absl::Status> blas = TryBlas(op, values, outputs)) return *blas;
  if (std::optional<absl::Status> conv = TryConv(op, values, outputs)) return *conv;
  return wrapper::RunReferenceKernel(op, values, outputs);
}

}  // namespace kiln::backends::cpu
