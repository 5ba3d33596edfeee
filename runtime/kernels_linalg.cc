// mm, bmm and matmul (naive loops).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
#include "runtime/kernels_math.h"
#include "support/promotion.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::runtime {
namespace {

absl::Status CheckPair(const char* op, const Tensor& a, const Tensor& b) {
  for (const Tensor* t : {&a, &b}) {
    if (!t->defined() || !t->has_data()) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": input tensor has no data"));
    }
    if (!IsStorableDType(t->dtype()) || t->dtype() == DType::kBool) {
      return absl::UnimplementedError(absl::StrCat("reference kernel ", op,
                                                   " does not support dtype ",
                                                   DTypeName(t->dtype())));
    }
  }
  if (a.dtype() != b.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": expected both inputs of one dtype, got ",
                                                   DTypeName(a.dtype()), " and ",
                                                   DTypeName(b.dtype())));
  }
  return absl::OkStatus();
}

// The float32/float64 case of BatchedProduct: the same sums in the same
// order (r ascending, double accumulation, one rounding to T), read from a
// contiguous a and a contiguous b^T so both walk unit stride. Bit-identical
// to the element-wise loop below and hundreds of times faster: the oracle
// checks a bert-sized model in seconds instead of minutes.
template <typename T>
absl::StatusOr<Tensor> ContiguousFloatProduct(const Tensor& a, const Tensor& b) {
  const int64_t batch = a.sizes()[0], n = a.sizes()[1], k = a.sizes()[2], m = b.sizes()[2];
  const Tensor ac = a.Contiguous();
  ASSIGN_OR_RETURN(Tensor b_t, Transpose(b, 1, 2));
  const Tensor bt = b_t.Contiguous();
  Tensor out = Tensor::Empty(a.dtype(), {batch, n, m});
  const T* ap = ac.data<T>();
  const T* bp = bt.data<T>();
  T* op = out.data<T>();
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < n; ++i) {
      const T* row = ap + (p * n + i) * k;
      for (int64_t j = 0; j < m; ++j) {
        const T* col = bp + (p * m + j) * k;
        double acc = 0;
        for (int64_t r = 0; r < k; ++r) acc += static_cast<double>(row[r]) * static_cast<double>(col[r]);
        op[(p * n + i) * m + j] = static_cast<T>(acc);
      }
    }
  }
  return out;
}

// a: [B, n, k], b: [B, k, m] (any strides) -> [B, n, m].
absl::StatusOr<Tensor> BatchedProduct(const Tensor& a, const Tensor& b) {
  if (a.dtype() == DType::kFloat32) return ContiguousFloatProduct<float>(a, b);
  if (a.dtype() == DType::kFloat64) return ContiguousFloatProduct<double>(a, b);
  const int64_t batch = a.sizes()[0], n = a.sizes()[1], k = a.sizes()[2], m = b.sizes()[2];
  Tensor out = Tensor::Empty(a.dtype(), {batch, n, m});
  const bool is_float = IsFloatingPoint(a.dtype());
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        uint64_t iacc = 0;
        for (int64_t r = 0; r < k; ++r) {
          const int64_t ai = (p * n + i) * k + r, bi = (p * k + r) * m + j;
          if (is_float) acc += a.GetDouble(ai) * b.GetDouble(bi);
          else iacc += static_cast<uint64_t>(a.GetInt(ai)) * static_cast<uint64_t>(b.GetInt(bi));
        }
        const int64_t oi = (p * n + i) * m + j;
        if (is_float) {
          RETURN_IF_ERROR(SetDouble(out, oi, acc));
        } else {
          RETURN_IF_ERROR(SetInt(out, oi, static_cast<int64_t>(iacc)));
        }
      }
    }
  }
  return out;
}

absl::Status ShapeError(const char* op, const Tensor& a, const Tensor& b) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": shapes ", ShapeToString(a.sizes()),
                                                 " and ", ShapeToString(b.sizes()),
                                                 " cannot be multiplied"));
}

}  // namespace

absl::StatusOr<Tensor> Mm(const Tensor& a, const Tensor& b) {
  RETURN_IF_ERROR(CheckPair("mm", a, b));
  if (a.dim() != 2 || b.dim() != 2 || a.sizes()[1] != b.sizes()[0]) {
    return ShapeError("mm", a, b);
  }
  ASSIGN_OR_RETURN(Tensor a3, Unsqueeze(a, 0));
  ASSIGN_OR_RETURN(Tensor b3, Unsqueeze(b, 0));
  ASSIGN_OR_RETURN(Tensor out, BatchedProduct(a3, b3));
  return Squeeze(out, 0);
}

absl::StatusOr<Tensor> Bmm(const Tensor& a, const Tensor& b) {
  RETURN_IF_ERROR(CheckPair("bmm", a, b));
  if (a.dim() != 3 || b.dim() != 3 || a.sizes()[0] != b.sizes()[0] ||
      a.sizes()[2] != b.sizes()[1]) {
    return ShapeError("bmm", a, b);
  }
  return BatchedProduct(a, b);
}

absl::StatusOr<Tensor> Matmul(const Tensor& a_in, const Tensor& b_in) {
  RETURN_IF_ERROR(CheckPair("matmul", a_in, b_in));
  if (a_in.dim() == 0 || b_in.dim() == 0) return ShapeError("matmul", a_in, b_in);
  Tensor a = a_in, b = b_in;
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  if (a_vec) {
    ASSIGN_OR_RETURN(a, Unsqueeze(a, 0));
  }
  if (b_vec) {
    ASSIGN_OR_RETURN(b, Unsqueeze(b, 1));
  }
  const int64_t n = a.sizes()[a.dim() - 2], k = a.sizes()[a.dim() - 1];
  const int64_t k2 = b.sizes()[b.dim() - 2], m = b.sizes()[b.dim() - 1];
  if (k != k2) return ShapeError("matmul", a_in, b_in);
  std::vector<int64_t> a_batch(a.sizes().begin(), a.sizes().end() - 2);
  std::vector<int64_t> b_batch(b.sizes().begin(), b.sizes().end() - 2);
  ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastShapes(a_batch, b_batch));
  int64_t batch_numel = 1;
  for (int64_t s : batch) batch_numel *= s;
  std::vector<int64_t> a_full = batch, b_full = batch;
  a_full.insert(a_full.end(), {n, k});
  b_full.insert(b_full.end(), {k, m});
  ASSIGN_OR_RETURN(Tensor ae, Expand(a, a_full));
  ASSIGN_OR_RETURN(Tensor be, Expand(b, b_full));
  // Flatten the batch dims (Reshape copies the stride-0 broadcast views).
  ASSIGN_OR_RETURN(Tensor a3, Reshape(ae, {batch_numel, n, k}));
  ASSIGN_OR_RETURN(Tensor b3, Reshape(be, {batch_numel, k, m}));
  ASSIGN_OR_RETURN(Tensor out, BatchedProduct(a3, b3));
  std::vector<int64_t> out_shape = batch;
  if (!a_vec) out_shape.push_back(n);
  if (!b_vec) out_shape.push_back(m);
  return Reshape(out, out_shape);
}

}  // namespace kiln::runtime

// ----------------------------------------------------------------- math family
// addmm / baddbmm / linear / dot / mv / outer, einsum and det.
namespace kiln::runtime {
namespace {

absl::Status NoData(const char* op) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": input tensor has no data"));
}

// beta * self + alpha * product, self broadcast to the product's shape;
// beta == 0 ignores self entirely (NaN included), as ATen.
absl::StatusOr<Tensor> ScaleAdd(const char* op, const Tensor& self, const Tensor& product,
                                double beta, double alpha) {
  if (!self.defined() || !self.has_data()) return NoData(op);
  absl::StatusOr<Tensor> es = Expand(self, product.sizes());
  if (!es.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(op, ": self of shape ",
                                                   ShapeToString(self.sizes()),
                                                   " does not broadcast to ",
                                                   ShapeToString(product.sizes())));
  }
  Tensor out = Tensor::Empty(product.dtype(), product.sizes());
  const int64_t n = out.numel();
  const bool is_float = IsFloatingPoint(product.dtype());
  for (int64_t i = 0; i < n; ++i) {
    if (is_float) {
      const double s = beta == 0 ? 0.0 : beta * es->GetDouble(i);
      RETURN_IF_ERROR(SetDouble(out, i, s + alpha * product.GetDouble(i)));
    } else {
      const uint64_t s = beta == 0 ? 0
                                   : static_cast<uint64_t>(static_cast<int64_t>(beta)) *
                                         static_cast<uint64_t>(es->GetInt(i));
      const uint64_t p = static_cast<uint64_t>(static_cast<int64_t>(alpha)) *
                         static_cast<uint64_t>(product.GetInt(i));
      RETURN_IF_ERROR(SetInt(out, i, static_cast<int64_t>(s + p)));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> Addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, double beta,
                             double alpha) {
  ASSIGN_OR_RETURN(Tensor p, Mm(m1, m2));
  return ScaleAdd("addmm", self, p, beta, alpha);
}

absl::StatusOr<Tensor> Baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2,
                               double beta, double alpha) {
  ASSIGN_OR_RETURN(Tensor p, Bmm(b1, b2));
  return ScaleAdd("baddbmm", self, p, beta, alpha);
}

absl::StatusOr<Tensor> Linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) {
  if (!w.defined() || !w.has_data()) return NoData("linear");
  if (w.dim() > 2) {
    return absl::InvalidArgumentError(absl::StrCat("linear: weight must be 1-D or 2-D, got ",
                                                   ShapeToString(w.sizes())));
  }
  Tensor wt = w;
  if (w.dim() == 2) {
    ASSIGN_OR_RETURN(wt, Transpose(w, 0, 1));
  }
  ASSIGN_OR_RETURN(Tensor p, Matmul(x, wt));
  if (!b) return p;
  return ScaleAdd("linear", *b, p, 1.0, 1.0);
}

absl::StatusOr<Tensor> Dot(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return NoData("dot");
  if (a.dim() != 1 || b.dim() != 1 || a.sizes()[0] != b.sizes()[0]) {
    return absl::InvalidArgumentError(absl::StrCat("dot: expected 1-D tensors of one size, got ",
                                                   ShapeToString(a.sizes()), " and ",
                                                   ShapeToString(b.sizes())));
  }
  return Matmul(a, b);
}

absl::StatusOr<Tensor> Mv(const Tensor& m, const Tensor& v) {
  if (!m.defined() || !v.defined()) return NoData("mv");
  if (m.dim() != 2 || v.dim() != 1 || m.sizes()[1] != v.sizes()[0]) {
    return absl::InvalidArgumentError(absl::StrCat("mv: shapes ", ShapeToString(m.sizes()),
                                                   " and ", ShapeToString(v.sizes()),
                                                   " cannot be multiplied"));
  }
  return Matmul(m, v);
}

absl::StatusOr<Tensor> Outer(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || !a.has_data() || !b.has_data()) return NoData("outer");
  if (a.dim() != 1 || b.dim() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("outer: expected 1-D tensors, got ",
                                                   ShapeToString(a.sizes()), " and ",
                                                   ShapeToString(b.sizes())));
  }
  ASSIGN_OR_RETURN(Tensor col, Unsqueeze(a, 1));
  ASSIGN_OR_RETURN(Tensor row, Unsqueeze(b, 0));
  return Binary(BinaryOp::kMul, Operand::FromTensor(col), Operand::FromTensor(row));
}

namespace {

// One einsum term: each dim's label ("..." expanded to ellipsis labels).
struct EinsumTerm {
  std::vector<char> letters;  // in order; '.' marks where "..." sits
  bool has_ellipsis = false;
};

absl::StatusOr<EinsumTerm> ParseTerm(absl::string_view eq, absl::string_view t) {
  EinsumTerm term;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '.') {
      if (term.has_ellipsis || t.substr(i, 3) != "...") {
        return absl::InvalidArgumentError(
            absl::StrCat("einsum: malformed ellipsis in '", eq, "'"));
      }
      term.has_ellipsis = true;
      term.letters.push_back('.');
      i += 2;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      term.letters.push_back(c);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("einsum: invalid character '", std::string(1, c), "' in '", eq, "'"));
    }
  }
  return term;
}

}  // namespace

absl::StatusOr<Tensor> Einsum(absl::string_view equation, absl::Span<const Tensor> operands) {
  std::string eq;
  for (char c : equation) {
    if (c != ' ' && c != '\t') eq.push_back(c);
  }
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    ASSIGN_OR_RETURN(EinsumTerm t,
                     ParseTerm(eq, absl::string_view(lhs).substr(
                                       start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size()) {
    return absl::InvalidArgumentError(absl::StrCat("einsum: '", eq, "' has ", terms.size(),
                                                   " operand terms but ", operands.size(),
                                                   " operands were given"));
  }
  std::vector<DTypeOperand> classes;
  for (const Tensor& t : operands) {
    if (!t.defined() || !t.has_data()) return NoData("einsum");
    if (!IsStorableDType(t.dtype())) {
      return absl::UnimplementedError(absl::StrCat("reference kernel einsum does not support dtype ",
                                                   DTypeName(t.dtype())));
    }
    classes.push_back({t.dtype(), OperandClass::kDimensioned});
  }
  if (operands.empty()) return absl::InvalidArgumentError("einsum: no operands");
  ASSIGN_OR_RETURN(DType out_dtype, ResultType(classes));
  // Labels: ellipsis dims are 0..E-1 (right-aligned across operands), then
  // one id per letter.
  int64_t ellipsis = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t named = static_cast<int64_t>(terms[k].letters.size()) -
                          (terms[k].has_ellipsis ? 1 : 0);
    const int64_t rank = operands[k].dim();
    if (terms[k].has_ellipsis ? rank < named : rank != named) {
      return absl::InvalidArgumentError(absl::StrCat("einsum: operand ", k, " has rank ", rank,
                                                     " but its term names ", named, " dims"));
    }
    if (terms[k].has_ellipsis) ellipsis = std::max(ellipsis, rank - named);
  }
  auto letter_id = [ellipsis](char c) -> int64_t {
    const int64_t base = c >= 'a' ? 26 + (c - 'a') : (c - 'A');
    return ellipsis + base;
  };
  const int64_t num_labels = ellipsis + 52;
  std::vector<int64_t> label_size(static_cast<size_t>(num_labels), -1);
  std::vector<int> uses(static_cast<size_t>(num_labels), 0);
  std::vector<std::vector<int64_t>> dim_labels(terms.size());
  for (size_t k = 0; k < terms.size(); ++k) {
    const int64_t rank = operands[k].dim();
    const int64_t named = static_cast<int64_t>(terms[k].letters.size()) -
                          (terms[k].has_ellipsis ? 1 : 0);
    for (char c : terms[k].letters) {
      if (c == '.') {
        for (int64_t e = 0; e < rank - named; ++e) {
          dim_labels[k].push_back(ellipsis - (rank - named) + e);
        }
      } else {
        dim_labels[k].push_back(letter_id(c));
      }
    }
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t l = dim_labels[k][d];
      const int64_t s = operands[k].sizes()[d];
      ++uses[l];
      if (label_size[l] == -1 || label_size[l] == 1) {
        label_size[l] = s;
      } else if (s != 1 && s != label_size[l]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "einsum: operand ", k, " dim ", d, " has size ", s, " but the label has size ",
            label_size[l], " elsewhere"));
      }
    }
  }
  std::vector<int64_t> out_labels;
  if (arrow != std::string::npos) {
    ASSIGN_OR_RETURN(EinsumTerm out, ParseTerm(eq, absl::string_view(eq).substr(arrow + 2)));
    std::vector<bool> seen(static_cast<size_t>(num_labels), false);
    for (char c : out.letters) {
      if (c == '.') {
        for (int64_t e = 0; e < ellipsis; ++e) out_labels.push_back(e);
        continue;
      }
      const int64_t l = letter_id(c);
      if (uses[l] == 0 || seen[l]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "einsum: output label '", std::string(1, c),
            seen[l] ? "' appears twice" : "' does not appear in any input", " in '", eq, "'"));
      }
      seen[l] = true;
      out_labels.push_back(l);
    }
  } else {
    for (int64_t e = 0; e < ellipsis; ++e) out_labels.push_back(e);
    for (int64_t l = ellipsis; l < num_labels; ++l) {
      if (uses[l] == 1) out_labels.push_back(l);
    }
  }
  std::vector<int64_t> out_shape;
  for (int64_t l : out_labels) out_shape.push_back(label_size[l] < 0 ? 1 : label_size[l]);
  // Every label that occurs, output labels first: the loop nest.
  std::vector<int64_t> loop = out_labels;
  for (int64_t l = 0; l < num_labels; ++l) {
    if (uses[l] > 0 && std::find(out_labels.begin(), out_labels.end(), l) == out_labels.end()) {
      loop.push_back(l);
    }
  }
  int64_t total = 1;
  for (int64_t l : loop) {
    const int64_t s = label_size[l] < 0 ? 1 : label_size[l];
    if (s != 0 && total > (int64_t{1} << 40) / s) {
      return absl::InvalidArgumentError("einsum: the iteration space is too large");
    }
    total *= s;
  }
  // Per operand, the contiguous stride each label contributes (0 where the
  // dim broadcasts).
  std::vector<Tensor> contig;
  std::vector<std::vector<int64_t>> label_stride(terms.size(),
                                                 std::vector<int64_t>(static_cast<size_t>(num_labels), 0));
  for (size_t k = 0; k < terms.size(); ++k) {
    contig.push_back(operands[k].Contiguous());
    const std::vector<int64_t> strides = Tensor::ContiguousStrides(operands[k].sizes());
    for (int64_t d = 0; d < operands[k].dim(); ++d) {
      if (operands[k].sizes()[d] == 1) continue;
      label_stride[k][dim_labels[k][d]] += strides[d];
    }
  }
  const bool is_float = IsFloatingPoint(out_dtype);
  int64_t out_numel = 1;
  for (int64_t s : out_shape) out_numel *= s;
  std::vector<double> acc(static_cast<size_t>(out_numel), 0.0);
  std::vector<uint64_t> iacc(static_cast<size_t>(out_numel), 0);
  std::vector<int64_t> idx(loop.size(), 0);
  for (int64_t it = 0; it < total; ++it) {
    int64_t rem = it;
    for (size_t j = loop.size(); j-- > 0;) {
      const int64_t s = label_size[loop[j]] < 0 ? 1 : label_size[loop[j]];
      idx[j] = rem % s;
      rem /= s;
    }
    int64_t o = 0;
    for (size_t j = 0; j < out_labels.size(); ++j) o = o * out_shape[j] + idx[j];
    double p = 1;
    uint64_t ip = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      int64_t off = 0;
      for (size_t j = 0; j < loop.size(); ++j) off += idx[j] * label_stride[k][loop[j]];
      if (is_float) p *= contig[k].GetDouble(off);
      else ip *= static_cast<uint64_t>(contig[k].GetInt(off));
    }
    if (is_float) acc[o] += p;
    else iacc[o] += ip;
  }
  Tensor out = Tensor::Empty(out_dtype, out_shape);
  for (int64_t i = 0; i < out_numel; ++i) {
    if (is_float) {
      RETURN_IF_ERROR(SetDouble(out, i, acc[i]));
    } else {
      RETURN_IF_ERROR(SetInt(out, i, static_cast<int64_t>(iacc[i])));
    }
  }
  return out;
}

absl::StatusOr<Tensor> Det(const Tensor& a) {
  if (!a.defined() || !a.has_data()) return NoData("det");
  if (!IsFloatingPoint(a.dtype()) || !IsStorableDType(a.dtype())) {
    return absl::UnimplementedError(absl::StrCat("reference kernel det does not support dtype ",
                                                 DTypeName(a.dtype())));
  }
  if (a.dim() < 2 || a.sizes()[a.dim() - 1] != a.sizes()[a.dim() - 2]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "det: expected a batch of square matrices, got shape ", ShapeToString(a.sizes())));
  }
  const int64_t n = a.sizes().back();
  std::vector<int64_t> batch_shape(a.sizes().begin(), a.sizes().end() - 2);
  Tensor out = Tensor::Empty(a.dtype(), batch_shape);
  const int64_t batch = out.numel();
  std::vector<double> m(static_cast<size_t>(n * n));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < n * n; ++i) m[i] = a.GetDouble(b * n * n + i);
    double det = 1;
    for (int64_t c = 0; c < n; ++c) {
      int64_t piv = c;
      for (int64_t r = c + 1; r < n; ++r) {
        if (std::fabs(m[r * n + c]) > std::fabs(m[piv * n + c])) piv = r;
      }
      if (m[piv * n + c] == 0) {
        det = 0;
        break;
      }
      if (piv != c) {
        for (int64_t k = 0; k < n; ++k) std::swap(m[c * n + k], m[piv * n + k]);
        det = -det;
      }
      det *= m[c * n + c];
      for (int64_t r = c + 1; r < n; ++r) {
        const double f = m[r * n + c] / m[c * n + c];
        for (int64_t k = c; k < n; ++k) m[r * n + k] -= f * m[c * n + k];
      }
    }
    RETURN_IF_ERROR(SetDouble(out, b, det));
  }
  return out;
}

}  // namespace kiln::runtime
