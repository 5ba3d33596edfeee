#include "backends/cuda/cuda_expr_emitter.h"

#include <algorithm>
#include <cstdint>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/kernel_identifiers.h"
#include "lowering/expr_rewrite.h"
#include "lowering/index_math.h"
#include "support/status.h"

namespace kiln::backends::cuda {

using lowering::Expr;
using lowering::ExprOp;
using lowering::ExprPtr;

namespace {

// Index analysis only looks this deep, and at this many nodes (index trees
// are small; a DAG that shares subtrees could otherwise take exponential
// time). Past either limit the answer is the conservative one: the scalar
// path.
constexpr int kMaxIndexDepth = 64;
constexpr int kMaxIndexNodes = 4096;

bool DependsOnVarAt(const Expr* e, int var, int depth, int* budget) {
  if (e == nullptr) return false;
  if (depth > kMaxIndexDepth || --*budget < 0) return true;  // conservative
  if (e->op == ExprOp::kIndexVar) return e->var == var;
  for (const ExprPtr& a : e->args) {
    if (DependsOnVarAt(a.get(), var, depth + 1, budget)) return true;
  }
  return false;
}

bool DependsOnVarAt(const Expr* e, int var, int depth) {
  int budget = kMaxIndexNodes;
  return DependsOnVarAt(e, var, depth, &budget);
}

// Flattens a tree of kAdd into its terms; false when too deep or large.
bool AddTerms(const Expr* e, std::vector<const Expr*>* terms, int depth) {
  if (e == nullptr || depth > kMaxIndexDepth || terms->size() > 64) return false;
  if (e->op == ExprOp::kAdd && e->args.size() == 2) {
    return AddTerms(e->args[0].get(), terms, depth + 1) && AddTerms(e->args[1].get(), terms, depth + 1);
  }
  terms->push_back(e);
  return true;
}

bool IsIntConst(const Expr* e, int64_t v) {
  return e != nullptr && e->op == ExprOp::kIntConst && e->dtype == DType::kInt64 && e->int_value == v;
}

bool IsVar(const Expr* e, int var) { return e != nullptr && e->op == ExprOp::kIndexVar && e->var == var; }

// The largest of 1, 2, 4, 8 that always divides `e` (an int64 index value).
int64_t Divisibility(const Expr* e, int depth, int* budget) {
  if (e == nullptr || depth > kMaxIndexDepth || --*budget < 0 || e->dtype != DType::kInt64) return 1;
  switch (e->op) {
    case ExprOp::kIntConst: {
      const uint64_t v = static_cast<uint64_t>(e->int_value);
      if (v % 8 == 0) return 8;
      if (v % 4 == 0) return 4;
      return v % 2 == 0 ? 2 : 1;
    }
    case ExprOp::kAdd:
    case ExprOp::kSub:
      if (e->args.size() != 2) return 1;
      return std::min(Divisibility(e->args[0].get(), depth + 1, budget),
                      Divisibility(e->args[1].get(), depth + 1, budget));
    case ExprOp::kMul:
      if (e->args.size() != 2) return 1;
      return std::min<int64_t>(8, Divisibility(e->args[0].get(), depth + 1, budget) *
                                      Divisibility(e->args[1].get(), depth + 1, budget));
    case ExprOp::kNeg:
      return e->args.size() == 1 ? Divisibility(e->args[0].get(), depth + 1, budget) : 1;
    default:
      return 1;
  }
}

// The unit-stride term of `index` in `var` and the other terms.
bool SplitUnitStride(const ExprPtr& index, int var, std::vector<const Expr*>* others) {
  std::vector<const Expr*> terms;
  if (!AddTerms(index.get(), &terms, 0)) return false;
  int unit = 0;
  int budget = kMaxIndexNodes;
  for (const Expr* t : terms) {
    if (!DependsOnVarAt(t, var, 0, &budget)) {
      others->push_back(t);
      continue;
    }
    const bool is_unit =
        IsVar(t, var) || (t->op == ExprOp::kMul && t->args.size() == 2 &&
                          ((IsVar(t->args[0].get(), var) && IsIntConst(t->args[1].get(), 1)) ||
                           (IsVar(t->args[1].get(), var) && IsIntConst(t->args[0].get(), 1))));
    if (!is_unit) return false;
    ++unit;
  }
  return unit == 1;
}

class CudaDialectImpl : public codegen::CDialect {
 public:
  const char* label() const override { return "cuda codegen"; }
  absl::StatusOr<std::string> TypeName(DType dtype) const override { return CudaTypeName(dtype); }
  absl::StatusOr<std::string> StorageTypeName(DType dtype) const override { return CudaStorageTypeName(dtype); }
  std::string LoadValue(const std::string& element, DType storage) const override {
    return CudaLoadValue(element, storage);
  }
  std::string StoreValue(const std::string& value, DType storage) const override {
    return CudaStoreValue(value, storage);
  }
  std::string IntLiteral(int64_t v) const override { return CudaIntLiteral(v); }
  std::string FloatLiteral(double v, DType dtype) const override { return CudaFloatLiteral(v, dtype); }
  std::string UnaryMath(ExprOp op, const std::string& x, DType t) const override {
    // libdevice: rint (half to even, like nearbyint) and rsqrt.
    if (op == ExprOp::kRound) return absl::StrCat(codegen::CMathFunction("rint", t), "(", x, ")");
    if (op == ExprOp::kRsqrt) return absl::StrCat(codegen::CMathFunction("rsqrt", t), "(", x, ")");
    return codegen::CDialect::UnaryMath(op, x, t);
  }
};

}  // namespace

const codegen::CDialect& CudaDialect() {
  static const CudaDialectImpl* dialect = new CudaDialectImpl();
  return *dialect;
}

bool DependsOnVar(const ExprPtr& e, int var) { return DependsOnVarAt(e.get(), var, 0); }

bool HasUnitStride(const ExprPtr& index, int var) {
  std::vector<const Expr*> others;
  return SplitUnitStride(index, var, &others);
}

bool IsVectorIndex(const ExprPtr& index, int var, int lanes) {
  std::vector<const Expr*> others;
  if (!SplitUnitStride(index, var, &others)) return false;
  int budget = kMaxIndexNodes;
  for (const Expr* t : others) {
    if (Divisibility(t, 0, &budget) % lanes != 0) return false;
  }
  return true;
}

bool IsGroupContiguous(const ExprPtr& index, int var, int lanes, int64_t extent) {
  if (index == nullptr || var < 0 || lanes < 1 || extent < lanes || lowering::ExprTreeSize(index, 512) >= 512) {
    return false;
  }
  int max_var = var;
  std::vector<const Expr*> stack = {index.get()};
  while (!stack.empty()) {
    const Expr* e = stack.back();
    stack.pop_back();
    if (e->op == ExprOp::kIndexVar) max_var = std::max(max_var, e->var);
    if (e->op == ExprOp::kLoad) return false;  // gathers: never contiguous by analysis
    for (const ExprPtr& a : e->args) stack.push_back(a.get());
  }
  const int g = max_var + 1, l = max_var + 2;
  std::vector<ExprPtr> values;
  for (int k = 0; k <= var; ++k) values.push_back(lowering::Var(k));
  values[static_cast<size_t>(var)] = lowering::Binary(
      ExprOp::kAdd, lowering::Binary(ExprOp::kMul, lowering::Var(g), lowering::IntConst(lanes)), lowering::Var(l));
  std::vector<int64_t> ranges(static_cast<size_t>(l) + 1, -1);
  ranges[static_cast<size_t>(g)] = (extent + lanes - 1) / lanes;
  ranges[static_cast<size_t>(l)] = lanes;
  const ExprPtr split = lowering::SimplifyIndex(lowering::SubstituteVars(index, values, ranges), ranges);
  return IsVectorIndex(split, l, lanes);
}

bool CollectLoadNodes(const ExprPtr& root, std::vector<const Expr*>* loads) {
  // Iterative walk: the DAG may be deep; the emitter rejects deep trees
  // anyway, so stop at the same depth.
  std::unordered_set<const Expr*> seen;
  std::vector<std::pair<const Expr*, int>> stack = {{root.get(), 0}};
  while (!stack.empty()) {
    auto [e, depth] = stack.back();
    stack.pop_back();
    if (e == nullptr || !seen.insert(e).second) continue;
    if (depth > kCudaMaxExprDepth) return false;
    if (e->op == ExprOp::kLoad) loads->push_back(e);
    for (const ExprPtr& a : e->args) stack.push_back({a.get(), depth + 1});
  }
  return true;
}

bool CudaExprEmitter::IndexText(const Expr* e, int depth, std::string* out) const {
  if (e == nullptr || depth > 16 || e->dtype != DType::kInt64) return false;
  switch (e->op) {
    case ExprOp::kIndexVar:
      if (e->var < 0 || e->var >= static_cast<int>(vars().size())) return false;
      absl::StrAppend(out, vars()[static_cast<size_t>(e->var)]);
      return true;
    case ExprOp::kIntConst:
      absl::StrAppend(out, e->int_value);
      return true;
    case ExprOp::kAdd:
    case ExprOp::kSub:
    case ExprOp::kMul:
    case ExprOp::kFloorDiv:
    case ExprOp::kMod: {
      if (e->args.size() != 2) return false;
      absl::StrAppend(out, "(");
      if (!IndexText(e->args[0].get(), depth + 1, out)) return false;
      absl::StrAppend(out, " ", lowering::ExprOpName(e->op), " ");
      if (!IndexText(e->args[1].get(), depth + 1, out)) return false;
      absl::StrAppend(out, ")");
      return true;
    }
    default:
      return false;
  }
}

bool CudaExprEmitter::ValueKey(const Expr* e, int depth, std::string* out) const {
  if (e == nullptr || depth > kMaxIndexDepth || out->size() > 4096) return false;
  absl::StrAppend(out, lowering::ExprOpName(e->op), ":", DTypeName(e->dtype));
  switch (e->op) {
    case ExprOp::kIndexVar:
      if (e->var < 0 || e->var >= static_cast<int>(vars().size())) return false;
      absl::StrAppend(out, "=", vars()[static_cast<size_t>(e->var)]);
      return true;
    case ExprOp::kIntConst:
      absl::StrAppend(out, "=", e->int_value);
      return true;
    case ExprOp::kFloatConst:
      absl::StrAppend(out, "=", absl::StrFormat("%a", e->float_value));
      return true;
    case ExprOp::kLoad: {
      auto ref = refs_->find(e->buffer);
      if (ref == refs_->end() || e->args.size() != 1) return false;
      if (!ref->second.scalar.empty()) {
        absl::StrAppend(out, "=", ref->second.scalar);
        return true;
      }
      absl::StrAppend(out, "=", ref->second.identifier);
      break;
    }
    default:
      break;
  }
  absl::StrAppend(out, "(");
  for (const ExprPtr& a : e->args) {
    if (!ValueKey(a.get(), depth + 1, out)) return false;
    absl::StrAppend(out, ",");
  }
  absl::StrAppend(out, ")");
  return true;
}

bool CudaExprEmitter::IsVectorLoad(const Expr& e) const {
  return vector_loads_ && e.args.size() == 1 &&
         (IsVectorIndex(e.args[0], lane_var(), lanes_) ||
          (lane_extent_ > 0 && IsGroupContiguous(e.args[0], lane_var(), lanes_, lane_extent_)));
}

std::string CudaExprEmitter::KeptValueKey(const Expr& e, int lane) const {
  if (cache_ == nullptr || lane < 0) return "";
  // Expensive values, and element loads of read-only buffers (rows whose
  // groups are not vector loads: odd lengths) read again by later passes.
  // Vector loads have their own arrays (EmitLoad).
  const bool keep =
      lowering::IsExpensiveOp(e.op) ||
      (e.op == ExprOp::kLoad && cache_->buffers.count(e.buffer) != 0 && !IsVectorLoad(e) &&
       refs_->count(e.buffer) != 0 && refs_->at(e.buffer).scalar.empty());
  if (!keep) return "";
  std::string key;
  if (!ValueKey(&e, 0, &key)) return "";
  return key;
}

std::optional<std::string> CudaExprEmitter::Reused(const Expr& e, int lane, int) {
  if (auto staged = staged_.find(&e); staged != staged_.end()) {
    auto type = dialect().TypeName(e.dtype);
    if (type.ok()) return Temp(*type, staged->second);
  }
  const std::string key = KeptValueKey(e, lane);
  if (key.empty()) return std::nullopt;
  auto it = cache_->values.find(key);
  // Only values an earlier pass kept: this pass's own slots are not yet
  // filled for every lane.
  if (it == cache_->values.end() || own_arrays_.count(it->second) != 0) return std::nullopt;
  auto type = dialect().TypeName(e.dtype);
  if (!type.ok()) return std::nullopt;
  cache_->read.insert(it->second);
  return Temp(*type, absl::StrCat(it->second, "[l_j][", lane, "]"));
}

void CudaExprEmitter::Emitted(const Expr& e, int lane, const std::string& value) {
  const std::string key = KeptValueKey(e, lane);
  if (key.empty()) return;
  auto type = dialect().TypeName(e.dtype);
  if (!type.ok()) return;
  auto it = cache_->values.find(key);
  if (it == cache_->values.end()) {
    const std::string array = absl::StrCat("l_c", cache_->count++);
    absl::StrAppend(&cache_->declarations, *type, " ", array, "[", cache_->trips, "][", cache_->lanes, "];\n");
    it = cache_->values.emplace(key, array).first;
    own_arrays_.insert(array);
  }
  if (own_arrays_.count(it->second) == 0) return;
  AppendStatement(absl::StrCat(indent(), it->second, "[l_j][", lane, "] = ", value, ";\n"));
}

absl::StatusOr<std::string> CudaExprEmitter::EmitLoad(const Expr& e, const CudaBufferRef& ref, int lane,
                                                     int depth) {
  if (ref.scalar.empty() && lane >= 0 && IsVectorLoad(e)) {
    ASSIGN_OR_RETURN(const std::string storage_type, dialect().StorageTypeName(ref.dtype));
    auto v = vector_memo_.find(&e);
    std::string vec;
    if (v != vector_memo_.end()) {
      vec = v->second;
    } else {
      const std::string vec_type = absl::StrCat("kiln_vec", lanes_, "<", storage_type, ">");
      std::string key;
      const bool cacheable = cache_ != nullptr && cache_->buffers.count(e.buffer) != 0 &&
                             IndexText(e.args[0].get(), 0, &key);
      if (cacheable) key = absl::StrCat(e.buffer, "|", key);
      auto cached = cacheable ? cache_->arrays.find(key) : std::map<std::string, std::string>::iterator();
      if (cacheable && cached != cache_->arrays.end()) {
        vec = Temp(vec_type, absl::StrCat(cached->second, "[l_j]"));
        cache_->read.insert(cached->second);
      } else {
        ASSIGN_OR_RETURN(std::string index, EmitAt(e.args[0], 0, depth + 1));
        vec = Temp(vec_type, absl::StrCat("kiln_load", lanes_, "(", ref.identifier, " + ", index, ")"));
        if (cacheable) {
          const std::string array = absl::StrCat("l_c", cache_->count++);
          absl::StrAppend(&cache_->declarations, vec_type, " ", array, "[", cache_->trips, "];\n");
          AppendStatement(absl::StrCat(indent(), array, "[l_j] = ", vec, ";\n"));
          cache_->arrays.emplace(key, array);
        }
      }
      vector_memo_.emplace(&e, vec);
      vector_buffers_.insert(e.buffer);
    }
    return LoadTemp(absl::StrCat(vec, ".v[", lane, "]"), ref.dtype, e.dtype);
  }
  return codegen::CExprEmitter::EmitLoad(e, ref, lane, depth);
}


}  // namespace kiln::backends::cuda
