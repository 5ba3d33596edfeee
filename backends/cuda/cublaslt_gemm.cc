#include "backends/cuda/cublaslt_gemm.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/cublas_matmul.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_loader.h"
#include "support/status.h"

namespace kiln::backends::cuda {
namespace {

bool FitsInt(int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); }

// The largest power of two (at most 256, cuBLASLt's default assumption)
// dividing the address: the heuristic must not pick an algorithm that
// needs more.
uint32_t Alignment(CUdeviceptr p) {
  uint32_t a = 256;
  while (a > 1 && p % a != 0) a /= 2;
  return a;
}

// Descriptors and the chosen algorithm of one shape; they hold no device
// memory and live for the process.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  CublasLtMatmulAlgo algo = {};
  size_t workspace = 0;
};

struct LtPlans {
  std::mutex mu;
  // Null: no algorithm takes that key (remembered, cuBLAS runs it).
  std::map<std::string, std::unique_ptr<LtPlan>> plans;
  LtPlanCounts counts;
};

LtPlans& Plans() {
  static LtPlans* plans = new LtPlans();  // never destroyed: cuBLASLt may be gone at exit
  return *plans;
}

void Destroy(const CublasLtApi& api, LtPlan& plan) {
  if (plan.a != nullptr) api.cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b != nullptr) api.cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.d != nullptr) api.cublasLtMatrixLayoutDestroy(plan.d);
  if (plan.desc != nullptr) api.cublasLtMatmulDescDestroy(plan.desc);
}

absl::Status Layout(const CublasLtApi& api, cublasLtMatrixLayout_t* layout, int type, int64_t rows, int64_t cols,
                    int64_t ld, int64_t batch, int64_t stride, const char* what) {
  RETURN_IF_ERROR(CublasCheck(api.cublasLtMatrixLayoutCreate(layout, type, static_cast<uint64_t>(rows),
                                                             static_cast<uint64_t>(cols), ld),
                              what));
  if (batch == 1) return absl::OkStatus();
  const int32_t count = static_cast<int32_t>(batch);
  RETURN_IF_ERROR(CublasCheck(api.cublasLtMatrixLayoutSetAttribute(*layout, kLtLayoutBatchCount, &count, sizeof(count)),
                              what));
  return CublasCheck(api.cublasLtMatrixLayoutSetAttribute(*layout, kLtLayoutStridedBatchOffset, &stride, sizeof(stride)),
                     what);
}

absl::Status SetBias(const CublasLtApi& api, cublasLtMatmulDesc_t desc, CUdeviceptr bias) {
  const void* p = reinterpret_cast<const void*>(bias);
  return CublasCheck(api.cublasLtMatmulDescSetAttribute(desc, kLtDescBiasPointer, &p, sizeof(p)),
                     "cublasLtMatmulDescSetAttribute(bias)");
}

cublasStatus_t Matmul(const GemmContext& ctx, const LtGemmCall& c, const LtPlan& plan, const CublasLtMatmulAlgo& algo,
                      size_t workspace) {
  const float beta = 0.0f;
  return LoadCudaLibraries().cublaslt.cublasLtMatmul(
      ctx.lt, plan.desc, &c.alpha, reinterpret_cast<const void*>(c.a), plan.a, reinterpret_cast<const void*>(c.b),
      plan.b, &beta, reinterpret_cast<const void*>(c.d), plan.d, reinterpret_cast<void*>(c.d), plan.d, &algo,
      reinterpret_cast<void*>(ctx.workspace), workspace, ctx.stream);
}

// Milliseconds of the best of kLtTimedRuns calls of one candidate (after a
// warm-up call), or nullopt when it fails to run.
std::optional<float> TimeCandidate(const GemmContext& ctx, const LtGemmCall& c, const LtPlan& plan,
                                   const CublasLtHeuristicResult& r, CUevent start, CUevent stop) {
  const CudaDriverApi& drv = LoadCudaLibraries().driver;
  if (Matmul(ctx, c, plan, r.algo, r.workspace_size) != kCublasSuccess) return std::nullopt;
  float best = std::numeric_limits<float>::infinity();
  for (int i = 0; i < kLtTimedRuns; ++i) {
    if (drv.cuEventRecord(start, ctx.stream) != 0) return std::nullopt;
    if (Matmul(ctx, c, plan, r.algo, r.workspace_size) != kCublasSuccess) return std::nullopt;
    float ms = 0;
    if (drv.cuEventRecord(stop, ctx.stream) != 0 || drv.cuEventSynchronize(stop) != 0 ||
        drv.cuEventElapsedTime(&ms, start, stop) != 0) {
      return std::nullopt;
    }
    best = std::min(best, ms);
  }
  return best;
}

// The index of the fastest candidate (0 when timing is not possible).
size_t Fastest(const GemmContext& ctx, const LtGemmCall& c, const LtPlan& plan,
               const std::vector<CublasLtHeuristicResult>& candidates, std::string* log) {
  const CudaDriverApi& drv = LoadCudaLibraries().driver;
  CUevent start = nullptr, stop = nullptr;
  if (drv.cuEventCreate(&start, kEventDefault) != 0) return 0;
  if (drv.cuEventCreate(&stop, kEventDefault) != 0) {
    drv.cuEventDestroy(start);
    return 0;
  }
  size_t best = 0;
  float best_ms = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::optional<float> ms = TimeCandidate(ctx, c, plan, candidates[i], start, stop);
    if (log != nullptr) absl::StrAppend(log, " ", ms ? absl::StrCat(*ms * 1e3f) : std::string("failed"));
    if (ms && *ms < best_ms) best = i, best_ms = *ms;
  }
  drv.cuEventDestroy(start);
  drv.cuEventDestroy(stop);
  return best;
}

// Creates `plan`'s descriptor (operations, epilogue, bias) and the three
// matrix layouts for `c`; what it created before an error stays in `plan`
// for Destroy.
absl::Status Describe(const CublasLtApi& api, const LtGemmCall& c, LtPlan* plan) {
  RETURN_IF_ERROR(CublasCheck(api.cublasLtMatmulDescCreate(&plan->desc, c.compute_type, kCudaR32F),
                              "cublasLtMatmulDescCreate"));
  const int32_t trans_a = c.op_a, trans_b = c.op_b;
  const uint32_t epilogue = c.bias != 0 ? kLtEpilogueBias : kLtEpilogueDefault;
  RETURN_IF_ERROR(CublasCheck(api.cublasLtMatmulDescSetAttribute(plan->desc, kLtDescTransA, &trans_a, sizeof(trans_a)),
                              "cublasLtMatmulDescSetAttribute(transa)"));
  RETURN_IF_ERROR(CublasCheck(api.cublasLtMatmulDescSetAttribute(plan->desc, kLtDescTransB, &trans_b, sizeof(trans_b)),
                              "cublasLtMatmulDescSetAttribute(transb)"));
  RETURN_IF_ERROR(
      CublasCheck(api.cublasLtMatmulDescSetAttribute(plan->desc, kLtDescEpilogue, &epilogue, sizeof(epilogue)),
                  "cublasLtMatmulDescSetAttribute(epilogue)"));
  if (c.bias != 0) RETURN_IF_ERROR(SetBias(api, plan->desc, c.bias));
  // Stored shapes: op(A) is m x k, so A is m x k (N) or k x m (T).
  const bool a_n = c.op_a == kCublasOpN, b_n = c.op_b == kCublasOpN;
  RETURN_IF_ERROR(Layout(api, &plan->a, c.data_type, a_n ? c.m : c.k, a_n ? c.k : c.m, c.lda, c.batch, c.stride_a,
                         "cublasLtMatrixLayoutCreate(A)"));
  RETURN_IF_ERROR(Layout(api, &plan->b, c.data_type, b_n ? c.k : c.n, b_n ? c.n : c.k, c.ldb, c.batch, c.stride_b,
                         "cublasLtMatrixLayoutCreate(B)"));
  return Layout(api, &plan->d, c.data_type, c.m, c.n, c.ldd, c.batch, c.stride_d, "cublasLtMatrixLayoutCreate(D)");
}

// A new plan for `c` with the heuristic's (and, when timed, the fastest)
// algorithm; a null plan when no algorithm takes the shape.
absl::StatusOr<std::unique_ptr<LtPlan>> MakePlan(const GemmContext& ctx, const LtGemmCall& c, LtPlanCounts* counts) {
  const CublasLtApi& api = LoadCudaLibraries().cublaslt;
  auto plan = std::make_unique<LtPlan>();
  auto fail = [&](absl::Status s) {
    Destroy(api, *plan);
    return s;
  };
  absl::Status s = Describe(api, c, plan.get());
  if (!s.ok()) return fail(s);
  cublasLtMatmulPreference_t pref = nullptr;
  s = CublasCheck(api.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  if (!s.ok()) return fail(s);
  const uint64_t limit = static_cast<uint64_t>(kLtWorkspaceBytes);
  s = CublasCheck(api.cublasLtMatmulPreferenceSetAttribute(pref, kLtPrefMaxWorkspaceBytes, &limit, sizeof(limit)),
                  "cublasLtMatmulPreferenceSetAttribute(workspace)");
  const uint32_t align[4] = {Alignment(c.a), Alignment(c.b), Alignment(c.d), Alignment(c.d)};
  for (int i = 0; i < 4 && s.ok(); ++i) {
    s = CublasCheck(
        api.cublasLtMatmulPreferenceSetAttribute(pref, kLtPrefMinAlignmentABytes + i, &align[i], sizeof(align[i])),
        "cublasLtMatmulPreferenceSetAttribute(alignment)");
  }
  const bool timed = GemmAutotune() && !ctx.capturing;
  std::vector<CublasLtHeuristicResult> results(timed ? kLtCandidates : 1);
  int found = 0;
  if (s.ok()) {
    s = CublasCheck(api.cublasLtMatmulAlgoGetHeuristic(ctx.lt, plan->desc, plan->a, plan->b, plan->d, plan->d, pref,
                                                       static_cast<int>(results.size()), results.data(), &found),
                    "cublasLtMatmulAlgoGetHeuristic");
  }
  api.cublasLtMatmulPreferenceDestroy(pref);
  // No algorithm for this shape is not an error: cuBLAS takes it.
  results.resize(s.ok() ? static_cast<size_t>(std::max(found, 0)) : 0);
  std::vector<CublasLtHeuristicResult> usable;
  for (const CublasLtHeuristicResult& r : results) {
    if (r.state == kCublasSuccess) usable.push_back(r);
  }
  if (usable.empty()) {
    Destroy(api, *plan);
    return std::unique_ptr<LtPlan>();
  }
  const bool log = env::GemmLog();
  std::string times;
  const bool time_them = timed && usable.size() > 1;
  const size_t pick = time_them ? Fastest(ctx, c, *plan, usable, log ? &times : nullptr) : 0;
  if (log) {
    std::fprintf(stderr, "kiln cublasLt: type %d m %lld n %lld k %lld batch %lld ops %d%d bias %d: %zu candidates%s%s, pick %zu\n",
                 c.data_type, static_cast<long long>(c.m), static_cast<long long>(c.n), static_cast<long long>(c.k),
                 static_cast<long long>(c.batch), c.op_a, c.op_b, c.bias != 0 ? 1 : 0, usable.size(),
                 times.empty() ? "" : ", us:", times.c_str(), pick);
  }
  counts->plans += 1;
  counts->timed += time_them ? 1 : 0;
  plan->algo = usable[pick].algo;
  plan->workspace = usable[pick].workspace_size;
  return plan;
}

}  // namespace

bool GemmAutotune() { return !env::GemmAutotuneOff(); }

LtPlanCounts LtPlansMade() {
  LtPlans& plans = Plans();
  std::lock_guard<std::mutex> lock(plans.mu);
  return plans.counts;
}

std::optional<absl::Status> RunLtGemm(const GemmContext& ctx, const LtGemmCall& c) {
  if (ctx.lt == nullptr || ctx.workspace == 0) return std::nullopt;  // null without cuBLASLt (GemmContext)
  if (!FitsInt(c.m) || !FitsInt(c.n) || !FitsInt(c.k) || !FitsInt(c.batch) || c.batch < 1 || c.k == 0) {
    return std::nullopt;
  }
  if (c.batch > 1 && (c.stride_a <= 0 || c.stride_b <= 0 || c.stride_d <= 0)) return std::nullopt;
  if (c.m == 0 || c.n == 0) return absl::OkStatus();
  const bool batched = c.batch > 1;
  const std::string key =
      absl::StrCat(c.data_type, "|", c.compute_type, "|", c.m, "|", c.n, "|", c.k, "|", c.batch, "|", c.op_a, ",",
                   c.lda, ",", batched ? c.stride_a : 0, "|", c.op_b, ",", c.ldb, ",", batched ? c.stride_b : 0, "|",
                   c.ldd, ",", batched ? c.stride_d : 0, "|", c.bias != 0, "|", Alignment(c.a), ",", Alignment(c.b),
                   ",", Alignment(c.d), ",", c.bias != 0 ? Alignment(c.bias) : 0);
  const CublasLtApi& api = LoadCudaLibraries().cublaslt;
  LtPlans& plans = Plans();
  std::lock_guard<std::mutex> lock(plans.mu);
  auto it = plans.plans.find(key);
  if (it == plans.plans.end()) {
    absl::StatusOr<std::unique_ptr<LtPlan>> made = MakePlan(ctx, c, &plans.counts);
    if (!made.ok()) return made.status();
    it = plans.plans.emplace(key, *std::move(made)).first;
  }
  if (it->second == nullptr) return std::nullopt;  // no algorithm: remembered
  const LtPlan& plan = *it->second;
  // The bias pointer is part of the descriptor: set it for this call.
  if (c.bias != 0) RETURN_IF_ERROR(SetBias(api, plan.desc, c.bias));
  return CublasCheck(Matmul(ctx, c, plan, plan.algo, plan.workspace), "cublasLtMatmul");
}

}  // namespace kiln::backends::cuda
