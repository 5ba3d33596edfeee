// mm, bmm and matmul (naive loops).
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels.h"
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

// a: [B, n, k], b: [B, k, m] (any strides) -> [B, n, m].
absl::StatusOr<Tensor> BatchedProduct(const Tensor& a, const Tensor& b) {
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
