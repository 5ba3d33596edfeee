// Reductions over dims and softmax / log_softmax.
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
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
      return m;
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
    if (std::isinf(m)) m = 0;
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
