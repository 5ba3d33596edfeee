#include "backends/cuda/cublas_matmul.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "backends/cuda/cublaslt_gemm.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_loader.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

// A (batch of) row-major-indexed matrices: element (b, i, j) at
// ptr + (b*bs + i*s0 + j*s1) elements of `dtype`.
struct Mat {
  CUdeviceptr ptr = 0;
  int64_t batch = 1, rows = 0, cols = 0;
  int64_t bs = 0, s0 = 0, s1 = 0;
  DType dtype = DType::kFloat32;
};

bool GemmDType(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

int CudaDataType(DType t) {
  return t == DType::kFloat16 ? kCudaR16F : t == DType::kBFloat16 ? kCudaR16BF : kCudaR32F;
}

bool FitsInt(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

std::string BaseName(const std::string& op) { return op.substr(0, op.find('.')); }

// A view of rank 2 or 3 (3: batch first) as a Mat; N-D views whose leading
// dims fold into rows (contiguous over them) when `fold_leading`.
std::optional<Mat> AsMat(const DeviceView& v, bool fold_leading) {
  const lowering::Layout& l = v.layout;
  if (!GemmDType(l.dtype) || l.sizes.size() != l.strides.size()) return std::nullopt;
  const size_t r = l.sizes.size();
  Mat m;
  m.dtype = l.dtype;
  m.ptr = v.base + static_cast<CUdeviceptr>(l.offset) * DTypeSize(l.dtype);
  if (r == 2) {
    m.rows = l.sizes[0], m.cols = l.sizes[1], m.s0 = l.strides[0], m.s1 = l.strides[1];
    return m;
  }
  if (r == 3 && !fold_leading) {
    m.batch = l.sizes[0], m.bs = l.strides[0];
    m.rows = l.sizes[1], m.cols = l.sizes[2], m.s0 = l.strides[1], m.s1 = l.strides[2];
    return m;
  }
  if (r >= 3 && fold_leading) {
    // rows = prod(sizes[0..r-2]) when each leading dim steps over the next.
    int64_t rows = l.sizes[r - 2];
    for (size_t d = r - 2; d-- > 0;) {
      if (l.sizes[d] != 1 && l.strides[d] != l.sizes[d + 1] * l.strides[d + 1]) return std::nullopt;
      rows *= l.sizes[d];
    }
    m.rows = rows, m.cols = l.sizes[r - 1], m.s0 = l.strides[r - 2], m.s1 = l.strides[r - 1];
    return m;
  }
  return std::nullopt;
}

// An operand of a batched N-D matmul over the output's batch dims
// `batch_sizes`, split at `inner_from`: the batch dims from there on
// collapse into the Mat's one batch stride (the operand's dims, left-padded
// with ones, either all broadcast there or all follow the output's,
// row-major), and each outer dim has its own stride (0: broadcast), walked
// by the caller with one GEMM per outer index. nullopt when the inner dims
// do not collapse.
struct BatchedOperand {
  Mat mat;
  std::vector<int64_t> outer_strides;  // elements, per dim before inner_from
};

std::optional<BatchedOperand> AsBatchedMat(const DeviceView& v, const std::vector<int64_t>& batch_sizes,
                                           size_t inner_from) {
  const lowering::Layout& l = v.layout;
  const size_t r = l.sizes.size();
  if (!GemmDType(l.dtype) || r < 2 || l.strides.size() != r || r - 2 > batch_sizes.size()) return std::nullopt;
  BatchedOperand out;
  Mat& m = out.mat;
  m.dtype = l.dtype;
  m.ptr = v.base + static_cast<CUdeviceptr>(l.offset) * DTypeSize(l.dtype);
  m.rows = l.sizes[r - 2], m.cols = l.sizes[r - 1], m.s0 = l.strides[r - 2], m.s1 = l.strides[r - 1];
  const size_t pad = batch_sizes.size() - (r - 2);
  auto dim = [&](size_t d, int64_t* size, int64_t* stride) {
    *size = d < pad ? 1 : l.sizes[d - pad];
    *stride = d < pad ? 0 : l.strides[d - pad];
  };
  for (size_t d = 0; d < inner_from; ++d) {
    int64_t size, stride;
    dim(d, &size, &stride);
    if (size != 1 && size != batch_sizes[d]) return std::nullopt;
    out.outer_strides.push_back(size == 1 ? 0 : stride);
  }
  bool broadcast = false, follows = false;
  int64_t stride = 0, expect = -1;
  m.batch = 1;
  for (size_t d = batch_sizes.size(); d-- > inner_from;) {
    m.batch *= batch_sizes[d];
    if (batch_sizes[d] == 1) continue;
    int64_t size, st;
    dim(d, &size, &st);
    if (size == 1) {
      broadcast = true;
      continue;
    }
    if (size != batch_sizes[d]) return std::nullopt;
    if (!follows) {
      stride = st;  // the innermost batch dim's
    } else if (st != expect) {
      return std::nullopt;
    }
    follows = true;
    expect = st * size;
  }
  if (broadcast && follows) return std::nullopt;
  m.bs = follows ? stride : 0;
  return out;
}

// The first batch dim from which a, b and c all collapse (0: one call).
std::optional<size_t> CollapsibleFrom(const DeviceView& a, const DeviceView& b, const DeviceView& c,
                                      const std::vector<int64_t>& batch) {
  for (size_t k = 0; k <= batch.size(); ++k) {
    if (AsBatchedMat(a, batch, k) && AsBatchedMat(b, batch, k) && AsBatchedMat(c, batch, k)) return k;
  }
  return std::nullopt;
}

// Batched N-D matmul c = a @ b over `batch`: one strided-batched GEMM per
// index of the dims that do not collapse (none, for contiguous operands).
std::optional<absl::Status> BatchedNdGemm(const GemmContext& ctx, const DeviceView& a, const DeviceView& b,
                                          const DeviceView& c, const std::vector<int64_t>& batch);

std::optional<absl::Status> LtGemm(const GemmContext& ctx, const Mat& a, const Mat& b, const Mat& c, CUdeviceptr bias,
                                   float alpha);

Mat Transposed(Mat m) {
  std::swap(m.rows, m.cols);
  std::swap(m.s0, m.s1);
  return m;
}

// X^T as cuBLAS's op(stored column-major matrix).
bool Operand(const Mat& x, cublasOperation_t* op, int64_t* ld) {
  if ((x.s1 == 1 || x.cols == 1) && (x.s0 >= std::max<int64_t>(x.cols, 1) || x.rows == 1)) {
    *op = kCublasOpN;
    *ld = x.rows == 1 ? std::max<int64_t>(x.cols, 1) : x.s0;
    return FitsInt(*ld);
  }
  if ((x.s0 == 1 || x.rows == 1) && (x.s1 >= std::max<int64_t>(x.rows, 1) || x.cols == 1)) {
    *op = kCublasOpT;
    *ld = x.cols == 1 ? std::max<int64_t>(x.rows, 1) : x.s1;
    return FitsInt(*ld);
  }
  return false;
}

// C = alpha * A @ B + beta * C, row-major C; nullopt when the strides do not
// fit cuBLAS.
std::optional<absl::Status> Gemm(const GemmContext& ctx, const Mat& a, const Mat& b, const Mat& c, float alpha,
                                 float beta) {
  const int64_t m = a.rows, k = a.cols, n = b.cols;
  if (b.rows != k || c.rows != m || c.cols != n) return std::nullopt;
  if (a.dtype != c.dtype || b.dtype != c.dtype) return std::nullopt;
  if (!FitsInt(m) || !FitsInt(n) || !FitsInt(k) || k == 0) return std::nullopt;
  if (m == 0 || n == 0) return absl::OkStatus();
  const int64_t batch = c.batch;
  if ((a.batch != batch && a.batch != 1) || (b.batch != batch && b.batch != 1) || !FitsInt(batch)) {
    return std::nullopt;
  }
  if (!((c.s1 == 1 || n == 1) && (c.s0 >= n || m == 1))) return std::nullopt;
  const int64_t ldc = m == 1 ? std::max<int64_t>(n, 1) : c.s0;
  cublasOperation_t op_a, op_b;
  int64_t lda, ldb;
  if (!FitsInt(ldc) || !Operand(a, &op_a, &lda) || !Operand(b, &op_b, &ldb)) return std::nullopt;
  // GEMMs without a bias go through cuBLASLt too (its algorithms timed per
  // shape, cublaslt_gemm.h) before cuBLAS's own, unless KILN_CUDA_LT_GEMM=0.
  if (beta == 0.0f && !env::LtGemmOff()) {
    if (std::optional<absl::Status> done = LtGemm(ctx, a, b, c, 0, alpha)) return done;
  }
  const CublasApi& api = LoadCudaLibraries().cublas;
  if (c.dtype != DType::kFloat32) {
    const int t = CudaDataType(c.dtype);
    const auto* A = reinterpret_cast<const void*>(a.ptr);
    const auto* B = reinterpret_cast<const void*>(b.ptr);
    auto* C = reinterpret_cast<void*>(c.ptr);
    if (batch == 1) {
      return CublasCheck(api.cublasGemmEx(ctx.handle, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                                          static_cast<int>(k), &alpha, B, t, static_cast<int>(ldb), A, t,
                                          static_cast<int>(lda), &beta, C, t, static_cast<int>(ldc),
                                          kCublasCompute32F, kCublasGemmDefault),
                         "cublasGemmEx");
    }
    return CublasCheck(api.cublasGemmStridedBatchedEx(
                           ctx.handle, op_b, op_a, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                           &alpha, B, t, static_cast<int>(ldb), b.batch == 1 ? 0 : b.bs, A, t, static_cast<int>(lda),
                           a.batch == 1 ? 0 : a.bs, &beta, C, t, static_cast<int>(ldc), c.bs, static_cast<int>(batch),
                           kCublasCompute32F, kCublasGemmDefault),
                       "cublasGemmStridedBatchedEx");
  }
  const auto* A = reinterpret_cast<const float*>(a.ptr);
  const auto* B = reinterpret_cast<const float*>(b.ptr);
  auto* C = reinterpret_cast<float*>(c.ptr);
  if (batch == 1) {
    return CublasCheck(api.cublasSgemm(ctx.handle, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                                       static_cast<int>(k), &alpha, B, static_cast<int>(ldb), A,
                                       static_cast<int>(lda), &beta, C, static_cast<int>(ldc)),
                       "cublasSgemm");
  }
  return CublasCheck(
      api.cublasSgemmStridedBatched(ctx.handle, op_b, op_a, static_cast<int>(n), static_cast<int>(m),
                                    static_cast<int>(k), &alpha, B, static_cast<int>(ldb), b.batch == 1 ? 0 : b.bs,
                                    A, static_cast<int>(lda), a.batch == 1 ? 0 : a.bs, &beta, C,
                                    static_cast<int>(ldc), c.bs, static_cast<int>(batch)),
      "cublasSgemmStridedBatched");
}

// C = alpha * A @ B (+ bias[n] added to every row of C when `bias` is not 0) through
// cuBLASLt (cublaslt_gemm.h); nullopt when it does not take the call.
std::optional<absl::Status> LtGemm(const GemmContext& ctx, const Mat& a, const Mat& b, const Mat& c, CUdeviceptr bias,
                                   float alpha) {
  const int64_t m = a.rows, k = a.cols, n = b.cols, batch = c.batch;
  if (b.rows != k || c.rows != m || c.cols != n || a.dtype != c.dtype || b.dtype != c.dtype) return std::nullopt;
  if ((a.batch != batch && a.batch != 1) || (b.batch != batch && b.batch != 1)) return std::nullopt;
  if (!((c.s1 == 1 || n == 1) && (c.s0 >= n || m == 1))) return std::nullopt;
  cublasOperation_t op_a, op_b;
  int64_t lda, ldb;
  if (!Operand(a, &op_a, &lda) || !Operand(b, &op_b, &ldb)) return std::nullopt;
  // Column-major view, as Gemm's cuBLAS calls: D (n x m) = op(B) (n x k) @ op(A) (k x m).
  LtGemmCall call;
  call.data_type = CudaDataType(c.dtype);
  call.compute_type = c.dtype == DType::kFloat32 && ctx.tf32 ? kCublasCompute32FFastTf32 : kCublasCompute32F;
  call.m = n, call.n = m, call.k = k, call.batch = batch;
  call.op_a = op_b, call.op_b = op_a;
  call.a = b.ptr, call.lda = ldb, call.stride_a = b.batch == 1 ? 0 : b.bs;
  call.b = a.ptr, call.ldb = lda, call.stride_b = a.batch == 1 ? 0 : a.bs;
  call.d = c.ptr, call.ldd = m == 1 ? std::max<int64_t>(n, 1) : c.s0, call.stride_d = c.bs;
  call.bias = bias;
  call.alpha = alpha;
  return RunLtGemm(ctx, call);
}

// The address of a bias of `n` elements along the output's columns
// ([n] or [1, n], unit stride), or nullopt.
std::optional<CUdeviceptr> ColumnBias(const DeviceView& bias, const Mat& out) {
  const lowering::Layout& l = bias.layout;
  if (l.dtype != out.dtype || l.sizes.empty() || l.sizes.size() > 2 || l.sizes.size() != l.strides.size()) {
    return std::nullopt;
  }
  if (l.sizes.back() != out.cols || (l.sizes.size() == 2 && l.sizes[0] != 1)) return std::nullopt;
  if (out.cols > 1 && l.strides.back() != 1) return std::nullopt;
  return bias.base + static_cast<CUdeviceptr>(l.offset) * DTypeSize(l.dtype);
}

// out[M, N] = scale * bias broadcast (bias: [N], [1, N], [M, 1] or [M, N]
// with a unit... any strides), as the rank-1 product u[M,1] @ v[1,N] where a
// broadcast side is a vector of ones. nullopt when the bias is scalar-like
// on both sides or a full matrix.
std::optional<absl::Status> FillBias(const GemmContext& ctx, const DeviceView& bias, const Mat& out, float scale) {
  const lowering::Layout& l = bias.layout;
  if (l.dtype != out.dtype || l.sizes.size() > 2 || l.sizes.size() != l.strides.size()) return std::nullopt;
  const int64_t bm = l.sizes.size() == 2 ? l.sizes[0] : 1;
  const int64_t bn = l.sizes.empty() ? 1 : l.sizes.back();
  const int64_t sm = l.sizes.size() == 2 ? l.strides[0] : 0;
  const int64_t sn = l.sizes.empty() ? 0 : l.strides.back();
  const int64_t m = out.rows, n = out.cols;
  if ((bm != 1 && bm != m) || (bn != 1 && bn != n)) return std::nullopt;
  const bool rows_vary = bm == m && m > 1, cols_vary = bn == n && n > 1;
  if (rows_vary && cols_vary) return std::nullopt;
  if (!rows_vary && !cols_vary && !(m == 1 && n == 1)) return std::nullopt;
  const CUdeviceptr p = bias.base + static_cast<CUdeviceptr>(l.offset) * DTypeSize(l.dtype);
  absl::StatusOr<CUdeviceptr> ones = ctx.ones(std::max(m, n), l.dtype);
  if (!ones.ok()) return ones.status();
  Mat u, v;
  u.dtype = v.dtype = l.dtype;
  u.rows = m, u.cols = 1, v.rows = 1, v.cols = n;
  if (rows_vary) {
    u.ptr = p, u.s0 = sm, u.s1 = 1;
    v.ptr = *ones, v.s0 = n, v.s1 = 1;
  } else {
    u.ptr = *ones, u.s0 = 1, u.s1 = 1;
    v.ptr = p, v.s0 = std::max<int64_t>(n, 1), v.s1 = n == 1 ? 1 : sn;
    if (v.s1 <= 0) return std::nullopt;
  }
  if (u.s0 <= 0) return std::nullopt;
  // k == 1: scale * u @ v overwrites out (beta 0).
  if (!FitsInt(m) || !FitsInt(n)) return std::nullopt;
  cublasOperation_t op_u, op_v;
  int64_t ldu, ldv;
  if (!Operand(u, &op_u, &ldu) || !Operand(v, &op_v, &ldv)) return std::nullopt;
  if (!((out.s1 == 1 || n == 1) && (out.s0 >= n || m == 1))) return std::nullopt;
  const int64_t ldc = m == 1 ? std::max<int64_t>(n, 1) : out.s0;
  const float zero = 0.0f;
  const CublasApi& api = LoadCudaLibraries().cublas;
  if (out.dtype != DType::kFloat32) {
    const int t = CudaDataType(out.dtype);
    return CublasCheck(api.cublasGemmEx(ctx.handle, op_v, op_u, static_cast<int>(n), static_cast<int>(m), 1, &scale,
                                        reinterpret_cast<const void*>(v.ptr), t, static_cast<int>(ldv),
                                        reinterpret_cast<const void*>(u.ptr), t, static_cast<int>(ldu), &zero,
                                        reinterpret_cast<void*>(out.ptr), t, static_cast<int>(ldc), kCublasCompute32F,
                                        kCublasGemmDefault),
                       "cublasGemmEx (bias)");
  }
  return CublasCheck(api.cublasSgemm(ctx.handle, op_v, op_u, static_cast<int>(n), static_cast<int>(m), 1, &scale,
                                     reinterpret_cast<const float*>(v.ptr), static_cast<int>(ldv),
                                     reinterpret_cast<const float*>(u.ptr), static_cast<int>(ldu), &zero,
                                     reinterpret_cast<float*>(out.ptr), static_cast<int>(ldc)),
                     "cublasSgemm (bias)");
}

std::optional<absl::Status> BatchedNdGemm(const GemmContext& ctx, const DeviceView& a, const DeviceView& b,
                                          const DeviceView& c, const std::vector<int64_t>& batch) {
  std::optional<size_t> from = CollapsibleFrom(a, b, c, batch);
  // Operands whose batch dims do not collapse (the heads of a transposed
  // [B, S, H, D] view) are copied contiguous when that saves calls.
  std::optional<DeviceView> ca, cb;
  if ((!from || *from > 0) && ctx.contiguous) {
    if (!AsBatchedMat(a, batch, 0)) {
      absl::StatusOr<DeviceView> copy = ctx.contiguous(a);
      if (!copy.ok()) return copy.status();
      ca = *std::move(copy);
    }
    if (!AsBatchedMat(b, batch, 0)) {
      absl::StatusOr<DeviceView> copy = ctx.contiguous(b);
      if (!copy.ok()) return copy.status();
      cb = *std::move(copy);
    }
    std::optional<size_t> copied = CollapsibleFrom(ca ? *ca : a, cb ? *cb : b, c, batch);
    if (copied && (!from || *copied < *from)) {
      from = copied;
    } else {
      ca.reset();
      cb.reset();
    }
  }
  if (!from) return std::nullopt;
  std::optional<BatchedOperand> oa = AsBatchedMat(ca ? *ca : a, batch, *from);
  std::optional<BatchedOperand> ob = AsBatchedMat(cb ? *cb : b, batch, *from);
  std::optional<BatchedOperand> oc = AsBatchedMat(c, batch, *from);
  if (!oa || !ob || !oc || (oc->mat.bs == 0 && oc->mat.batch > 1)) return std::nullopt;
  int64_t outer = 1;
  for (size_t d = 0; d < *from; ++d) outer *= batch[d];
  const int64_t elem = static_cast<int64_t>(DTypeSize(oc->mat.dtype));
  std::vector<int64_t> index(*from, 0);
  for (int64_t i = 0; i < outer; ++i) {
    Mat ma = oa->mat, mb = ob->mat, mc = oc->mat;
    for (size_t d = 0; d < *from; ++d) {
      ma.ptr += static_cast<CUdeviceptr>(index[d] * oa->outer_strides[d] * elem);
      mb.ptr += static_cast<CUdeviceptr>(index[d] * ob->outer_strides[d] * elem);
      mc.ptr += static_cast<CUdeviceptr>(index[d] * oc->outer_strides[d] * elem);
    }
    std::optional<absl::Status> done = Gemm(ctx, ma, mb, mc, 1.0f, 0.0f);
    if (!done) return std::nullopt;
    RETURN_IF_ERROR(*done);
    for (size_t d = *from; d-- > 0;) {  // next outer index, row-major
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

std::optional<double> Number(const std::vector<lowering::ExternArg>& args, size_t i, double dflt) {
  if (i >= args.size()) return dflt;
  const lowering::ExternArg& a = args[i];
  if (!a.buffer.empty() || a.is_buffer_list) return std::nullopt;
  if (!a.constant.has_value() || a.constant->isNone()) return dflt;
  if (!a.constant->isNumber()) return std::nullopt;
  return a.constant->toNumberAsDouble();
}

}  // namespace

absl::Status SgemmRowMajor(cublasHandle_t handle, int64_t m, int64_t n, int64_t k, float alpha, CUdeviceptr a,
                           int64_t lda, int64_t stride_a, CUdeviceptr b, int64_t ldb, int64_t stride_b, float beta,
                           CUdeviceptr c, int64_t ldc, int64_t stride_c, int64_t batch) {
  for (int64_t v : {m, n, k, lda, ldb, ldc, batch}) {
    if (!FitsInt(v)) return absl::InvalidArgumentError("sgemm: sizes past int32");
  }
  const CublasApi& api = LoadCudaLibraries().cublas;
  return CublasCheck(api.cublasSgemmStridedBatched(
                         handle, kCublasOpN, kCublasOpN, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                         &alpha, reinterpret_cast<const float*>(b), static_cast<int>(ldb), stride_b,
                         reinterpret_cast<const float*>(a), static_cast<int>(lda), stride_a, &beta,
                         reinterpret_cast<float*>(c), static_cast<int>(ldc), stride_c, static_cast<int>(batch)),
                     "cublasSgemmStridedBatched");
}

bool IsCublasOp(const std::string& op) {
  const std::string base = BaseName(op);
  return base == "aten::mm" || base == "aten::bmm" || base == "aten::matmul" || base == "aten::linear" ||
         base == "aten::addmm";
}

std::optional<absl::Status> TryCublasExtern(const std::string& op, const std::vector<lowering::ExternArg>& args,
                                            const std::vector<DeviceView>& buffer_args,
                                            const std::vector<DeviceView>& outputs, const GemmContext& ctx) {
  if (!IsCublasOp(op) || outputs.size() != 1 || ctx.handle == nullptr) return std::nullopt;
  const std::string base = BaseName(op);
  // Which arguments are buffers, in order.
  std::vector<int> buffer_index(args.size(), -1);
  int next = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_buffer_list) return std::nullopt;
    if (!args[i].buffer.empty()) buffer_index[i] = next++;
  }
  if (static_cast<size_t>(next) != buffer_args.size()) return std::nullopt;
  auto buffer = [&](size_t i) -> const DeviceView* {
    if (i >= args.size() || buffer_index[i] < 0) return nullptr;
    return &buffer_args[static_cast<size_t>(buffer_index[i])];
  };
  const DeviceView& out = outputs[0];
  if (base == "aten::mm" || base == "aten::matmul" || base == "aten::bmm") {
    const DeviceView* a = buffer(0);
    const DeviceView* b = buffer(1);
    if (a == nullptr || b == nullptr || args.size() != 2) return std::nullopt;
    const size_t ra = a->layout.sizes.size(), rb = b->layout.sizes.size(), ro = out.layout.sizes.size();
    std::optional<Mat> ma, mb, mc;
    if (ra == 2 && rb == 2 && ro == 2) {
      ma = AsMat(*a, false), mb = AsMat(*b, false), mc = AsMat(out, false);
    } else if (ra == 3 && rb == 3 && ro == 3) {
      ma = AsMat(*a, false), mb = AsMat(*b, false), mc = AsMat(out, false);
    } else if (ra >= 3 && rb == 2 && ro == ra && base == "aten::matmul") {
      ma = AsMat(*a, true), mb = AsMat(*b, false), mc = AsMat(out, true);
    }
    if ((!ma || !mb || !mc) && base == "aten::matmul" && ro >= 3 && ra >= 2 && rb >= 2 && ro == std::max(ra, rb)) {
      // Batched N-D (attention's [B, H, S, D] @ [B, H, D, S]).
      const std::vector<int64_t> batch(out.layout.sizes.begin(), out.layout.sizes.end() - 2);
      return BatchedNdGemm(ctx, *a, *b, out, batch);
    }
    if (!ma || !mb || !mc) return std::nullopt;
    return Gemm(ctx, *ma, *mb, *mc, 1.0f, 0.0f);
  }
  if (base == "aten::linear") {
    const DeviceView* x = buffer(0);
    const DeviceView* w = buffer(1);
    if (x == nullptr || w == nullptr || w->layout.sizes.size() != 2) return std::nullopt;
    std::optional<Mat> mx = AsMat(*x, x->layout.sizes.size() > 2);
    std::optional<Mat> mw = AsMat(*w, false);
    std::optional<Mat> mc = AsMat(out, out.layout.sizes.size() > 2);
    if (!mx || !mw || !mc || mx->batch != 1 || mc->batch != 1) return std::nullopt;
    const DeviceView* bias = buffer(2);
    const bool has_bias = args.size() > 2 && (bias != nullptr || (args[2].constant && !args[2].constant->isNone()));
    if (has_bias) {
      if (bias == nullptr) return std::nullopt;
      if (std::optional<CUdeviceptr> column = ColumnBias(*bias, *mc)) {
        if (std::optional<absl::Status> done = LtGemm(ctx, *mx, Transposed(*mw), *mc, *column, 1.0f)) return done;
      }
      std::optional<absl::Status> filled = FillBias(ctx, *bias, *mc, 1.0f);
      if (!filled) return std::nullopt;
      RETURN_IF_ERROR(*filled);
    }
    return Gemm(ctx, *mx, Transposed(*mw), *mc, 1.0f, has_bias ? 1.0f : 0.0f);
  }
  if (base == "aten::addmm") {
    const DeviceView* self = buffer(0);
    const DeviceView* a = buffer(1);
    const DeviceView* b = buffer(2);
    std::optional<double> beta = Number(args, 3, 1.0), alpha = Number(args, 4, 1.0);
    if (self == nullptr || a == nullptr || b == nullptr || !beta || !alpha) return std::nullopt;
    std::optional<Mat> ma = AsMat(*a, false), mb = AsMat(*b, false), mc = AsMat(out, false);
    if (!ma || !mb || !mc || a->layout.sizes.size() != 2 || b->layout.sizes.size() != 2 ||
        out.layout.sizes.size() != 2) {
      return std::nullopt;
    }
    if (*beta == 1) {
      if (std::optional<CUdeviceptr> column = ColumnBias(*self, *mc)) {
        if (std::optional<absl::Status> done = LtGemm(ctx, *ma, *mb, *mc, *column, static_cast<float>(*alpha))) {
          return done;
        }
      }
    }
    if (*beta != 0) {
      std::optional<absl::Status> filled = FillBias(ctx, *self, *mc, static_cast<float>(*beta));
      if (!filled) return std::nullopt;
      RETURN_IF_ERROR(*filled);
    }
    return Gemm(ctx, *ma, *mb, *mc, static_cast<float>(*alpha), *beta != 0 ? 1.0f : 0.0f);
  }
  return std::nullopt;
}

}  // namespace kiln::backends::cuda
