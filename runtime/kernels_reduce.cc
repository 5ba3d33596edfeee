// Reductions over dims and softmax / log_softmax.
#include <cmath>
#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
#include "runtime/kernels_math.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "sum";
    case ReduceOp::kMean: return "mean";
    case ReduceOp::kProd: return "prod";
    case ReduceOp::kAmax: return "amax";
    case ReduceOp::kAmin: return "amin";
    case ReduceOp::kArgmax: return "argmax";
    case ReduceOp::kArgmin: return "argmin";
    case ReduceOp::kVar: return "var";
    case ReduceOp::kLogsumexp: return "logsumexp";
  }
  return "?";
}

namespace {

absl::Status Unsupported(const char* op, DType t) {
  return absl::UnimplementedError(
      absl::StrCat("reference kernel ", op, " does not support dtype ", DTypeName(t)));
}

// -0 and +0 compare equal, so the extreme of values with both zeros depends
// on the order they are met in; PyTorch's own result varies with its
// vectorization (torch 1.13: amin([+0, -0]) is +0, amin over 33 or more
// mixed zeros may be either). kiln orders -0 below +0 (IEEE 754-2019
// minimum/maximum), an order no reduction order changes, so the
// interpreter, the CPU backend's threaded/vectorized loops and CUDA's warp
// trees agree: `extreme` (the max or min of `n` values, read through `at`)
// gets the sign of the preferred zero when it is a zero.
template <typename At>
double SignedZeroExtreme(double extreme, int64_t n, At at, bool is_max) {
  if (extreme != 0) return extreme;
  for (int64_t i = 0; i < n; ++i) {
    const double x = at(i);
    if (x == 0 && std::signbit(x) != is_max) return x;  // -0 for min, +0 for max
  }
  return extreme;
}

// Reduces the values of one group (the reduced elements of one output).
double ReduceGroup(ReduceOp op, const std::vector<double>& v, double correction) {
  const double n = static_cast<double>(v.size());
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: {
      double s = 0;
      for (double x : v) s += x;
      return op == ReduceOp::kSum ? s : s / n;
    }
    case ReduceOp::kProd: {
      double p = 1;
      for (double x : v) p *= x;
      return p;
    }
    case ReduceOp::kAmax:
    case ReduceOp::kAmin: {
      double m = v[0];
      for (double x : v) {
        if (std::isnan(x)) return x;
        if (op == ReduceOp::kAmax ? x > m : x < m) m = x;
      }
      return SignedZeroExtreme(
          m, static_cast<int64_t>(v.size()), [&](int64_t i) { return v[static_cast<size_t>(i)]; },
          op == ReduceOp::kAmax);
    }
    case ReduceOp::kArgmax:
    case ReduceOp::kArgmin: {
      size_t best = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        if (std::isnan(v[best])) break;
        if (std::isnan(v[i]) || (op == ReduceOp::kArgmax ? v[i] > v[best] : v[i] < v[best])) {
          best = i;
        }
      }
      return static_cast<double>(best);
    }
    case ReduceOp::kVar: {
      double mean = 0;
      for (double x : v) mean += x;
      mean /= n;
      double ss = 0;
      for (double x : v) ss += (x - mean) * (x - mean);
      const double denom = n - correction;
      return denom <= 0 ? (denom == 0 && ss != 0 ? INFINITY : NAN) : ss / denom;
    }
    case ReduceOp::kLogsumexp: {
      double m = -INFINITY;
      for (double x : v) m = std::max(m, x);
      // An infinite shift would make exp(inf - inf) NaN. Unshifted, a row
      // holding +inf sums to inf and one of only -inf to 0 (log: -inf), as
      // PyTorch 1.13's logsumexp([inf, 1]) = inf and ([-inf, -inf]) = -inf.
      if (std::isinf(m)) m = 0;
      double s = 0;
      for (double x : v) s += std::exp(x - m);
      return std::log(s) + m;
    }
  }
  return 0;
}

}  // namespace

absl::StatusOr<Tensor> Reduce(ReduceOp op, const Tensor& input, const ReduceOptions& options) {
  const char* name = ReduceOpName(op);
  if (!input.defined() || !input.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": input tensor has no data"));
  }
  Tensor x = input;
  if (options.dtype) {
    ASSIGN_OR_RETURN(x, To(x, *options.dtype));
  }
  const DType in = x.dtype();
  if (!IsStorableDType(in)) return Unsupported(name, in);
  const bool is_float = IsFloatingPoint(in);
  DType out_dtype = in;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kProd:
      if (!is_float) out_dtype = DType::kInt64;
      break;
    case ReduceOp::kMean:
    case ReduceOp::kVar:
      if (!is_float) return Unsupported(name, in);
      break;
    case ReduceOp::kLogsumexp:
      if (!is_float) out_dtype = DType::kFloat32;
      break;
    case ReduceOp::kArgmax:
    case ReduceOp::kArgmin: out_dtype = DType::kInt64; break;
    default: break;
  }
  // Which dims reduce.
  const int64_t rank = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  const bool all = !options.dims || options.dims->empty();
  if ((op == ReduceOp::kArgmax || op == ReduceOp::kArgmin) && options.dims &&
      options.dims->size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": takes at most one dim"));
  }
  if (all) {
    std::fill(reduced.begin(), reduced.end(), true);
  } else {
    for (int64_t d : *options.dims) {
      ASSIGN_OR_RETURN(int64_t nd, NormalizeDim(d, rank, name));
      if (rank == 0) continue;
      if (reduced[nd]) return absl::InvalidArgumentError(absl::StrCat(name, ": repeated dim"));
      reduced[nd] = true;
    }
  }
  // Permute the reduced dims last: element (o, r) is flat index o * inner + r.
  std::vector<int64_t> perm, out_shape;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) continue;
    perm.push_back(d);
    outer *= x.sizes()[d];
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) continue;
    perm.push_back(d);
    inner *= x.sizes()[d];
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) out_shape.push_back(x.sizes()[d]);
    else if (options.keepdim) out_shape.push_back(1);
  }
  if (inner == 0 && (op == ReduceOp::kAmax || op == ReduceOp::kAmin || op == ReduceOp::kArgmax ||
                     op == ReduceOp::kArgmin)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": reduction over an empty dim"));
  }
  ASSIGN_OR_RETURN(Tensor xp, Permute(x, perm));
  Tensor out = Tensor::Empty(out_dtype, out_shape);
  std::vector<double> group(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const bool exact_int = !IsFloatingPoint(out_dtype) &&
                           (op == ReduceOp::kSum || op == ReduceOp::kProd ||
                            op == ReduceOp::kAmax || op == ReduceOp::kAmin);
    if (exact_int) {
      // Integer sums/products/extremes in int64 (doubles lose precision).
      int64_t acc = op == ReduceOp::kProd ? 1 : 0;
      for (int64_t r = 0; r < inner; ++r) {
        const int64_t v = xp.GetInt(o * inner + r);
        const uint64_t ua = static_cast<uint64_t>(acc), uv = static_cast<uint64_t>(v);
        if (op == ReduceOp::kSum) acc = static_cast<int64_t>(ua + uv);
        else if (op == ReduceOp::kProd) acc = static_cast<int64_t>(ua * uv);
        else if (r == 0) acc = v;
        else acc = op == ReduceOp::kAmax ? std::max(acc, v) : std::min(acc, v);
      }
      RETURN_IF_ERROR(SetInt(out, o, acc));
      continue;
    }
    for (int64_t r = 0; r < inner; ++r) group[r] = xp.GetDouble(o * inner + r);
    RETURN_IF_ERROR(SetDouble(out, o, ReduceGroup(op, group, options.correction)));
  }
  return out;
}

absl::StatusOr<Tensor> Softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype,
                               bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  if (!input.defined() || !input.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": input tensor has no data"));
  }
  Tensor x = input;
  if (dtype) {
    ASSIGN_OR_RETURN(x, To(x, *dtype));
  }
  if (!IsFloatingPoint(x.dtype()) || !IsStorableDType(x.dtype())) {
    return Unsupported(name, x.dtype());
  }
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), name));
  if (x.dim() == 0) {
    Tensor out = Tensor::Empty(x.dtype(), {});
    RETURN_IF_ERROR(SetDouble(out, 0, log ? 0.0 : 1.0));
    return out;
  }
  ASSIGN_OR_RETURN(Tensor xt, Transpose(x, d, x.dim() - 1));
  const int64_t inner = xt.sizes().back();
  const int64_t outer = inner == 0 ? 0 : xt.numel() / inner;
  Tensor out_t = Tensor::Empty(x.dtype(), xt.sizes());
  for (int64_t o = 0; o < outer; ++o) {
    double m = -INFINITY;
    for (int64_t r = 0; r < inner; ++r) m = std::max(m, xt.GetDouble(o * inner + r));
    if (m == -INFINITY) m = 0;  // all -inf: exp(-inf - 0) = 0; +inf stays (NaN row, as ATen)
    double s = 0;
    for (int64_t r = 0; r < inner; ++r) s += std::exp(xt.GetDouble(o * inner + r) - m);
    for (int64_t r = 0; r < inner; ++r) {
      const double v = xt.GetDouble(o * inner + r) - m;
      RETURN_IF_ERROR(SetDouble(out_t, o * inner + r, log ? v - std::log(s) : std::exp(v) / s));
    }
  }
  ASSIGN_OR_RETURN(Tensor back, Transpose(out_t, d, x.dim() - 1));
  return back.Contiguous();
}

}  // namespace kiln::runtime

// ----------------------------------------------------------------- math family
// Reductions with indices, norms, boolean reductions, cumulative ops and the
// ONNX-semantics reductions of kernels_math.h.
namespace kiln::runtime {
namespace {

// The input regrouped so that output element o reduces the flat elements
// [o * inner, (o + 1) * inner) of `permuted`.
struct Groups {
  Tensor permuted;
  std::vector<int64_t> out_shape;
  int64_t outer = 1;
  int64_t inner = 1;
};

absl::Status CheckData(absl::string_view op, const Tensor& x) {
  if (!x.defined() || !x.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": input tensor has no data"));
  }
  if (!IsStorableDType(x.dtype())) {
    return absl::UnimplementedError(absl::StrCat("reference kernel ", op,
                                                 " does not support dtype ",
                                                 DTypeName(x.dtype())));
  }
  return absl::OkStatus();
}

// `dims` nullopt or empty: every dim.
absl::StatusOr<Groups> GroupByDims(const char* op, const Tensor& x,
                                   const std::optional<std::vector<int64_t>>& dims,
                                   bool keepdim) {
  const int64_t rank = x.dim();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  if (!dims || dims->empty()) {
    std::fill(reduced.begin(), reduced.end(), true);
  } else {
    for (int64_t d : *dims) {
      ASSIGN_OR_RETURN(int64_t nd, NormalizeDim(d, rank, op));
      if (rank == 0) continue;
      if (reduced[nd]) {
        return absl::InvalidArgumentError(absl::StrCat(op, ": dim ", d, " appears twice"));
      }
      reduced[nd] = true;
    }
  }
  Groups g;
  std::vector<int64_t> perm;
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d] != (pass == 1)) continue;
      perm.push_back(d);
      (pass == 0 ? g.outer : g.inner) *= x.sizes()[d];
    }
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[d]) g.out_shape.push_back(x.sizes()[d]);
    else if (keepdim) g.out_shape.push_back(1);
  }
  ASSIGN_OR_RETURN(g.permuted, Permute(x, perm));
  return g;
}

absl::Status NeedsFloat(absl::string_view op, DType t) {
  if (IsFloatingPoint(t)) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      "reference kernel ", op, " does not support dtype ", DTypeName(t),
      " (it needs a floating-point input)"));
}

// Whether `v` replaces the running extreme `best` (NaN wins and sticks).
bool Beats(double v, double best, bool is_max, bool ties) {
  if (std::isnan(best)) return false;
  if (std::isnan(v)) return true;
  if (ties && v == best) return true;
  return is_max ? v > best : v < best;
}

}  // namespace

absl::StatusOr<std::pair<Tensor, Tensor>> MaxMinDim(const Tensor& x, int64_t dim, bool keepdim,
                                                    bool is_max) {
  const char* op = is_max ? "max.dim" : "min.dim";
  RETURN_IF_ERROR(CheckData(op, x));
  ASSIGN_OR_RETURN(Groups g, GroupByDims(op, x, std::vector<int64_t>{dim}, keepdim));
  if (g.inner == 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": reduction over an empty dim"));
  }
  Tensor values = Tensor::Empty(x.dtype(), g.out_shape);
  Tensor indices = Tensor::Empty(DType::kInt64, g.out_shape);
  const bool is_float = IsFloatingPoint(x.dtype());
  for (int64_t o = 0; o < g.outer; ++o) {
    int64_t best = 0;
    for (int64_t r = 1; r < g.inner; ++r) {
      const int64_t i = o * g.inner + r, b = o * g.inner + best;
      const bool better =
          is_float ? Beats(g.permuted.GetDouble(i), g.permuted.GetDouble(b), is_max, false)
                   : (is_max ? g.permuted.GetInt(i) > g.permuted.GetInt(b)
                             : g.permuted.GetInt(i) < g.permuted.GetInt(b));
      if (better) best = r;
    }
    const int64_t b = o * g.inner + best;
    if (is_float) {
      // The value keeps the zero order of amax/amin (SignedZeroExtreme); the
      // index is the first extreme's.
      const double value = SignedZeroExtreme(
          g.permuted.GetDouble(b), g.inner, [&](int64_t r) { return g.permuted.GetDouble(o * g.inner + r); },
          is_max);
      RETURN_IF_ERROR(SetDouble(values, o, value));
    } else {
      RETURN_IF_ERROR(SetInt(values, o, g.permuted.GetInt(b)));
    }
    RETURN_IF_ERROR(SetInt(indices, o, best));
  }
  return std::make_pair(values, indices);
}

absl::StatusOr<std::pair<Tensor, Tensor>> VarStdMean(
    const Tensor& x, const std::optional<std::vector<int64_t>>& dims, double correction,
    bool keepdim, bool take_sqrt) {
  const char* op = take_sqrt ? "std" : "var";
  RETURN_IF_ERROR(CheckData(op, x));
  RETURN_IF_ERROR(NeedsFloat(op, x.dtype()));
  ASSIGN_OR_RETURN(Groups g, GroupByDims(op, x, dims, keepdim));
  Tensor spread = Tensor::Empty(x.dtype(), g.out_shape);
  Tensor mean = Tensor::Empty(x.dtype(), g.out_shape);
  const double n = static_cast<double>(g.inner);
  for (int64_t o = 0; o < g.outer; ++o) {
    double m = 0;
    for (int64_t r = 0; r < g.inner; ++r) m += g.permuted.GetDouble(o * g.inner + r);
    m /= n;
    double ss = 0;
    for (int64_t r = 0; r < g.inner; ++r) {
      const double d = g.permuted.GetDouble(o * g.inner + r) - m;
      ss += d * d;
    }
    const double denom = std::max(n - correction, 0.0);
    double v = ss / denom;  // 0/0 = NaN, as ATen
    if (take_sqrt) v = std::sqrt(v);
    RETURN_IF_ERROR(SetDouble(spread, o, v));
    RETURN_IF_ERROR(SetDouble(mean, o, m));
  }
  return std::make_pair(spread, mean);
}

absl::StatusOr<Tensor> VectorNorm(const Tensor& input, double ord,
                                  const std::optional<std::vector<int64_t>>& dims, bool keepdim,
                                  std::optional<DType> dtype) {
  const char* op = "linalg_vector_norm";
  RETURN_IF_ERROR(CheckData(op, input));
  Tensor x = input;
  if (dtype) {
    ASSIGN_OR_RETURN(x, To(x, *dtype));
  }
  RETURN_IF_ERROR(NeedsFloat(op, x.dtype()));
  ASSIGN_OR_RETURN(Groups g, GroupByDims(op, x, dims, keepdim));
  if (g.inner == 0 && ord < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": a negative order norm of an empty set is undefined"));
  }
  Tensor out = Tensor::Empty(x.dtype(), g.out_shape);
  for (int64_t o = 0; o < g.outer; ++o) {
    double acc = ord == -INFINITY ? INFINITY : 0.0;
    bool nan = false;
    for (int64_t r = 0; r < g.inner; ++r) {
      const double a = std::fabs(g.permuted.GetDouble(o * g.inner + r));
      if (std::isnan(a)) nan = true;
      if (ord == INFINITY) acc = std::max(acc, a);
      else if (ord == -INFINITY) acc = std::min(acc, a);
      else if (ord == 0) acc += a != 0 ? 1.0 : 0.0;
      else if (ord == 1) acc += a;
      else if (ord == 2) acc += a * a;
      else acc += std::pow(a, ord);
    }
    double v = acc;
    if (std::isfinite(ord) && ord != 0 && ord != 1) v = ord == 2 ? std::sqrt(acc) : std::pow(acc, 1.0 / ord);
    if (nan) v = NAN;
    RETURN_IF_ERROR(SetDouble(out, o, v));
  }
  return out;
}

absl::StatusOr<Tensor> AllAny(const Tensor& x, const std::optional<std::vector<int64_t>>& dims,
                              bool keepdim, bool is_all) {
  const char* op = is_all ? "all" : "any";
  RETURN_IF_ERROR(CheckData(op, x));
  ASSIGN_OR_RETURN(Groups g, GroupByDims(op, x, dims, keepdim));
  Tensor out =
      Tensor::Empty(x.dtype() == DType::kUInt8 ? DType::kUInt8 : DType::kBool, g.out_shape);
  for (int64_t o = 0; o < g.outer; ++o) {
    bool acc = is_all;
    for (int64_t r = 0; r < g.inner; ++r) {
      const bool nz = g.permuted.GetDouble(o * g.inner + r) != 0;
      if (is_all ? !nz : nz) {
        acc = !is_all;
        break;
      }
    }
    RETURN_IF_ERROR(SetInt(out, o, acc ? 1 : 0));
  }
  return out;
}

absl::StatusOr<Tensor> CountNonzero(const Tensor& x,
                                    const std::optional<std::vector<int64_t>>& dims) {
  RETURN_IF_ERROR(CheckData("count_nonzero", x));
  ASSIGN_OR_RETURN(Groups g, GroupByDims("count_nonzero", x, dims, false));
  Tensor out = Tensor::Empty(DType::kInt64, g.out_shape);
  for (int64_t o = 0; o < g.outer; ++o) {
    int64_t c = 0;
    for (int64_t r = 0; r < g.inner; ++r) c += g.permuted.GetDouble(o * g.inner + r) != 0;
    RETURN_IF_ERROR(SetInt(out, o, c));
  }
  return out;
}

namespace {

// Runs `fn(src, dst)` over every line along `dim`: src is the input line
// (a strided view), dst the matching flat offsets of a contiguous output.
template <typename Fn>
absl::Status ForEachLine(const char* op, const Tensor& x, int64_t dim, Fn fn) {
  ASSIGN_OR_RETURN(int64_t d, NormalizeDim(dim, x.dim(), op));
  if (x.dim() == 0) return fn(x, std::vector<int64_t>{0});
  const int64_t rank = x.dim();
  const int64_t len = x.sizes()[d];
  if (len == 0) return absl::OkStatus();
  const int64_t lines = x.numel() / len;
  const std::vector<int64_t> out_strides = Tensor::ContiguousStrides(x.sizes());
  std::vector<int64_t> dst(static_cast<size_t>(len));
  for (int64_t l = 0; l < lines; ++l) {
    // Decompose l over every dim but d (row-major), giving the line's start.
    int64_t rem = l, src_off = x.storage_offset(), dst_base = 0;
    for (int64_t k = rank - 1; k >= 0; --k) {
      if (k == d) continue;
      const int64_t c = rem % x.sizes()[k];
      rem /= x.sizes()[k];
      src_off += c * x.strides()[k];
      dst_base += c * out_strides[k];
    }
    for (int64_t j = 0; j < len; ++j) dst[j] = dst_base + j * out_strides[d];
    const Tensor src = Tensor::View(x, {len}, {x.strides()[d]}, src_off);
    RETURN_IF_ERROR(fn(src, dst));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::pair<Tensor, Tensor>> CumMaxMin(const Tensor& x, int64_t dim, bool is_max) {
  const char* op = is_max ? "cummax" : "cummin";
  RETURN_IF_ERROR(CheckData(op, x));
  Tensor values = Tensor::Empty(x.dtype(), x.sizes());
  Tensor indices = Tensor::Empty(DType::kInt64, x.sizes());
  const bool is_float = IsFloatingPoint(x.dtype());
  RETURN_IF_ERROR(ForEachLine(op, x, dim, [&](const Tensor& src,
                                               const std::vector<int64_t>& dst) -> absl::Status {
    int64_t best = 0;
    for (size_t j = 0; j < dst.size(); ++j) {
      const int64_t jj = static_cast<int64_t>(j);
      if (j > 0) {
        // Ties move to the later index (as ATen).
        const bool better =
            is_float ? Beats(src.GetDouble(jj), src.GetDouble(best), is_max, true)
                     : (is_max ? src.GetInt(jj) >= src.GetInt(best)
                               : src.GetInt(jj) <= src.GetInt(best));
        if (better) best = jj;
      }
      if (is_float) {
        RETURN_IF_ERROR(SetDouble(values, dst[j], src.GetDouble(best)));
      } else {
        RETURN_IF_ERROR(SetInt(values, dst[j], src.GetInt(best)));
      }
      RETURN_IF_ERROR(SetInt(indices, dst[j], best));
    }
    return absl::OkStatus();
  }));
  return std::make_pair(values, indices);
}

absl::StatusOr<Tensor> LogCumSumExp(const Tensor& x, int64_t dim) {
  RETURN_IF_ERROR(CheckData("logcumsumexp", x));
  RETURN_IF_ERROR(NeedsFloat("logcumsumexp", x.dtype()));
  Tensor out = Tensor::Empty(x.dtype(), x.sizes());
  RETURN_IF_ERROR(ForEachLine("logcumsumexp", x, dim,
                              [&](const Tensor& src, const std::vector<int64_t>& dst) -> absl::Status {
    double acc = -INFINITY;
    for (size_t j = 0; j < dst.size(); ++j) {
      const double v = src.GetDouble(static_cast<int64_t>(j));
      const double m = std::max(acc, v);
      if (std::isnan(v) || std::isnan(acc)) acc = NAN;
      else if (m == -INFINITY) acc = -INFINITY;
      else if (m == INFINITY) acc = INFINITY;
      else acc = m + std::log(std::exp(acc - m) + std::exp(v - m));
      RETURN_IF_ERROR(SetDouble(out, dst[j], acc));
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::StatusOr<Tensor> OnnxReduce(absl::string_view kind, const Tensor& x,
                                  const std::optional<std::vector<int64_t>>& axes,
                                  bool keepdims, bool noop_with_empty_axes) {
  const std::string op = absl::StrCat("reduce(", kind, ")");
  RETURN_IF_ERROR(CheckData(op, x));
  enum K { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };
  K k;
  if (kind == "sum") k = kSum;
  else if (kind == "mean") k = kMean;
  else if (kind == "max") k = kMax;
  else if (kind == "min") k = kMin;
  else if (kind == "prod") k = kProd;
  else if (kind == "l1") k = kL1;
  else if (kind == "l2") k = kL2;
  else if (kind == "log_sum") k = kLogSum;
  else if (kind == "log_sum_exp") k = kLogSumExp;
  else if (kind == "sum_square") k = kSumSquare;
  else return absl::InvalidArgumentError(absl::StrCat("reduce: unknown kind '", kind, "'"));
  if ((!axes || axes->empty()) && noop_with_empty_axes) return x.Contiguous();
  ASSIGN_OR_RETURN(Groups g, GroupByDims(op.c_str(), x, axes, keepdims));
  const DType dt = x.dtype();
  Tensor out = Tensor::Empty(dt, g.out_shape);
  const bool exact_int = !IsFloatingPoint(dt) && (k == kSum || k == kMax || k == kMin ||
                                                   k == kProd || k == kL1 || k == kSumSquare);
  for (int64_t o = 0; o < g.outer; ++o) {
    if (exact_int) {
      uint64_t acc = k == kProd ? 1 : 0;
      int64_t ext = 0;
      for (int64_t r = 0; r < g.inner; ++r) {
        const int64_t v = g.permuted.GetInt(o * g.inner + r);
        const uint64_t u = static_cast<uint64_t>(v);
        if (k == kSum) acc += u;
        else if (k == kProd) acc *= u;
        else if (k == kL1) acc += static_cast<uint64_t>(v < 0 ? -v : v);
        else if (k == kSumSquare) acc += u * u;
        else if (r == 0) ext = v;
        else ext = k == kMax ? std::max(ext, v) : std::min(ext, v);
      }
      if (k == kMax || k == kMin) {
        if (g.inner == 0) {
          // The identity of max/min over an empty set: the dtype's extremes.
          Tensor probe = Tensor::Empty(dt, {1});
          const double lim = k == kMax ? -1.8446744073709552e19 : 1.8446744073709552e19;
          RETURN_IF_ERROR(SetDouble(probe, 0, IsUnsigned(dt) && k == kMax ? 0.0 : lim));
          ext = probe.GetInt(0);
        }
        RETURN_IF_ERROR(SetInt(out, o, ext));
      } else {
        RETURN_IF_ERROR(SetInt(out, o, static_cast<int64_t>(acc)));
      }
      continue;
    }
    double acc = 0;
    switch (k) {
      case kProd: acc = 1; break;
      case kMax: acc = -INFINITY; break;
      case kMin: acc = INFINITY; break;
      default: break;
    }
    double m = -INFINITY;  // log_sum_exp's shift
    if (k == kLogSumExp) {
      for (int64_t r = 0; r < g.inner; ++r) m = std::max(m, g.permuted.GetDouble(o * g.inner + r));
      if (std::isinf(m)) m = 0;  // as ReduceGroup's logsumexp: +inf rows give inf, not NaN
    }
    for (int64_t r = 0; r < g.inner; ++r) {
      const double v = g.permuted.GetDouble(o * g.inner + r);
      switch (k) {
        case kSum:
        case kMean:
        case kLogSum: acc += v; break;
        case kProd: acc *= v; break;
        case kMax: acc = (std::isnan(v) || std::isnan(acc)) ? NAN : std::max(acc, v); break;
        case kMin: acc = (std::isnan(v) || std::isnan(acc)) ? NAN : std::min(acc, v); break;
        case kL1: acc += std::fabs(v); break;
        case kL2:
        case kSumSquare: acc += v * v; break;
        case kLogSumExp: acc += std::exp(v - m); break;
      }
    }
    switch (k) {
      case kMean: acc /= static_cast<double>(g.inner); break;
      case kL2: acc = std::sqrt(acc); break;
      case kLogSum: acc = std::log(acc); break;
      case kLogSumExp: acc = std::log(acc) + m; break;
      default: break;
    }
    RETURN_IF_ERROR(SetDouble(out, o, acc));
  }
  return out;
}

absl::StatusOr<Tensor> ArgExtreme(const Tensor& x, int64_t dim, bool keepdim, bool select_last,
                                  bool largest) {
  const char* op = largest ? "argmax" : "argmin";
  RETURN_IF_ERROR(CheckData(op, x));
  ASSIGN_OR_RETURN(Groups g, GroupByDims(op, x, std::vector<int64_t>{dim}, keepdim));
  if (g.inner == 0) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": reduction over an empty dim"));
  }
  Tensor out = Tensor::Empty(DType::kInt64, g.out_shape);
  const bool is_float = IsFloatingPoint(x.dtype());
  for (int64_t o = 0; o < g.outer; ++o) {
    int64_t best = 0;
    for (int64_t r = 1; r < g.inner; ++r) {
      const int64_t i = o * g.inner + r, b = o * g.inner + best;
      bool better;
      if (is_float) {
        const double v = g.permuted.GetDouble(i), bv = g.permuted.GetDouble(b);
        better = std::isnan(bv) ? (select_last && std::isnan(v))
                                : Beats(v, bv, largest, select_last);
      } else {
        const int64_t v = g.permuted.GetInt(i), bv = g.permuted.GetInt(b);
        better = (select_last && v == bv) || (largest ? v > bv : v < bv);
      }
      if (better) best = r;
    }
    RETURN_IF_ERROR(SetInt(out, o, best));
  }
  return out;
}

absl::StatusOr<Tensor> Hardmax(const Tensor& x, int64_t dim) {
  RETURN_IF_ERROR(CheckData("hardmax", x));
  Tensor out = Tensor::Empty(x.dtype(), x.sizes());
  RETURN_IF_ERROR(ForEachLine("hardmax", x, dim,
                              [&](const Tensor& src, const std::vector<int64_t>& dst) -> absl::Status {
    int64_t best = 0;
    for (size_t j = 1; j < dst.size(); ++j) {
      if (src.GetDouble(static_cast<int64_t>(j)) > src.GetDouble(best)) {
        best = static_cast<int64_t>(j);
      }
    }
    return SetInt(out, dst[best], 1);
  }));
  return out;
}

absl::StatusOr<Tensor> FlatSoftmax(const Tensor& x, int64_t axis, int64_t kind) {
  RETURN_IF_ERROR(CheckData("softmax", x));
  if (kind < 0 || kind > 2) {
    return absl::InvalidArgumentError(absl::StrCat("flat_softmax: unknown kind ", kind));
  }
  const int64_t rank = x.dim();
  if (axis < -rank || axis > rank) {
    return absl::InvalidArgumentError(absl::StrCat("flat_softmax: axis ", axis,
                                                   " out of range for rank ", rank));
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= x.sizes()[d];
  ASSIGN_OR_RETURN(Tensor flat, Reshape(x, {outer, inner}));
  Tensor r;
  if (kind == 2) {
    ASSIGN_OR_RETURN(r, Hardmax(flat, 1));
  } else {
    ASSIGN_OR_RETURN(r, Softmax(flat, 1, std::nullopt, kind == 1));
  }
  return Reshape(r, x.sizes());
}

}  // namespace kiln::runtime
