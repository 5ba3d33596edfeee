#include "backends/cpu/extern_kernels.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/ivalue.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"
#include "wrapper/host_fallback.h"

namespace kiln::backends::cpu {
namespace {

std::string BaseName(const std::string& op) { return op.substr(0, op.find('.')); }

std::string Shape(const Tensor& t) { return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]"); }

// A 2-D float matrix as a row-major sgemm sees it.
struct GemmOperand {
  const float* data = nullptr;
  bool trans = false;
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
    g.trans = true;
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
    const bool tb = gb.trans != b_transposed;
    // oneDNN's row-major sgemm, on the same OpenMP pool as everything else.
    const int st = HostSgemm(ga.trans ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, ga.data, ga.ld, gb.data, gb.ld,
                             accumulate ? 1.0f : 0.0f, c.data<float>(), ldc);
    if (st != 0) return absl::InternalError(absl::StrCat("sgemm: oneDNN status ", st));
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

}  // namespace

int HostSgemm(char transa, char transb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
              const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  return static_cast<int>(dnnl_sgemm(transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}

bool IsBlasOp(const std::string& op) {
  const std::string base = BaseName(op);
  return base == "aten::mm" || base == "aten::bmm" || base == "aten::matmul" || base == "aten::linear" ||
         base == "aten::addmm";
}

absl::Status RunExternKernel(const std::string& op, const std::vector<lowering::ExternArg>& args,
                             const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs) {
  ASSIGN_OR_RETURN(std::vector<ir::IValue> values, wrapper::ExternArgumentValues(args, buffer_args));
  if (std::optional<absl::Status> blas = TryBlas(op, values, outputs)) return *blas;
  return wrapper::RunReferenceKernel(op, values, outputs);
}

}  // namespace kiln::backends::cpu
