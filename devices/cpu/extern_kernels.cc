#include "devices/cpu/extern_kernels.h"

#include <cblas.h>

#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/cpu/identifiers.h"
#include "ir/ivalue.h"
#include "ir/op_registry.h"
#include "runtime/register_kernels.h"
#include "support/status.h"

namespace kiln::devices::cpu {
namespace {

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
    if (accumulate) RETURN_IF_ERROR(CopyInto(out, c));
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
  if (!out_fits) RETURN_IF_ERROR(CopyInto(c, out));
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

absl::Status EnsureReferenceKernels() {
  static const absl::Status* status =
      new absl::Status(runtime::RegisterReferenceKernels(ir::BuiltinOps()));
  return *status;
}

}  // namespace

bool IsBlasOp(const std::string& op) {
  const std::string base = BaseName(op);
  return base == "aten::mm" || base == "aten::bmm" || base == "aten::matmul" || base == "aten::linear" ||
         base == "aten::addmm";
}

absl::Status CopyInto(const Tensor& src, Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.sizes() != dst.sizes()) {
    return absl::InvalidArgumentError(absl::StrCat("copy: ", DTypeName(src.dtype()), Shape(src), " into ",
                                                   DTypeName(dst.dtype()), Shape(dst)));
  }
  const int64_t n = src.numel();
  if (n == 0) return absl::OkStatus();
  if (!src.has_data() || !dst.has_data()) return absl::InvalidArgumentError("copy: tensor without data");
  const size_t es = src.element_size();
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memmove(dst.raw_data(), src.raw_data(), static_cast<size_t>(n) * es);
    return absl::OkStatus();
  }
  const char* s = static_cast<const char*>(src.raw_data());
  char* d = static_cast<char*>(dst.raw_data());
  const int64_t rank = src.dim();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t so = 0, doff = 0;
    for (int64_t i = 0; i < rank; ++i) {
      so += idx[i] * src.strides()[i];
      doff += idx[i] * dst.strides()[i];
    }
    std::memcpy(d + doff * static_cast<int64_t>(es), s + so * static_cast<int64_t>(es), es);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[i] < src.size(i)) break;
      idx[i] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status RunExternKernel(const std::string& op, const std::vector<lowering::ExternArg>& args,
                             const std::vector<Tensor>& buffer_args, std::vector<Tensor>& outputs) {
  std::vector<ir::IValue> values;
  size_t next_buffer = 0;
  for (const lowering::ExternArg& a : args) {
    if (!a.buffer.empty()) {
      if (next_buffer >= buffer_args.size()) return absl::InternalError("extern: too few buffer arguments");
      values.push_back(ir::IValue::FromTensor(buffer_args[next_buffer++]));
    } else {
      values.push_back(a.constant.has_value() ? *a.constant : ir::IValue::None());
    }
  }
  if (std::optional<absl::Status> blas = TryBlas(op, values, outputs)) return *blas;

  RETURN_IF_ERROR(EnsureReferenceKernels());
  const ir::Operator* overload = ir::BuiltinOps().Find(op);
  if (overload == nullptr || !overload->kernel) {
    return absl::UnimplementedError(
        absl::StrCat("extern kernel '", SanitizeComment(op), "' has no reference kernel"));
  }
  absl::StatusOr<std::vector<ir::IValue>> results = overload->kernel(values);
  if (!results.ok()) {
    return absl::Status(results.status().code(),
                        absl::StrCat("extern ", SanitizeComment(op), ": ", results.status().message()));
  }
  std::vector<Tensor> tensors;
  for (const ir::IValue& r : *results) {
    if (r.isTensor()) {
      tensors.push_back(r.toTensor());
    } else if ((r.isList() || r.isTuple())) {
      for (const ir::IValue& e : r.elements()) {
        if (e.isTensor()) tensors.push_back(e.toTensor());
      }
    }
  }
  if (tensors.size() != outputs.size()) {
    return absl::InternalError(absl::StrCat("extern ", SanitizeComment(op), " returned ", tensors.size(),
                                            " tensors for ", outputs.size(), " outputs"));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    absl::Status s = CopyInto(tensors[i], outputs[i]);
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat("extern ", SanitizeComment(op), " output ", i, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace kiln::devices::cpu
