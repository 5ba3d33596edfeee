#include "passes/fuse_attention.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ir/constants.h"
#include "ir/ivalue.h"
#include "passes/fusion_match.h"
#include "support/status.h"

namespace kiln::passes {
namespace {

using fusion_match::BroadcastsTo;
using fusion_match::DestroyWithUnusedConstants;
using fusion_match::Int;
using fusion_match::IsNone;
using fusion_match::Number;
using fusion_match::OnlyUsedBy;
using ir::IValue;
using ir::Node;
using ir::Value;

bool Is(const Node* n, const char* kind) { return n != nullptr && n->kind().qualString() == kind; }

// The single user of `v`, or null.
Node* SoleUser(const Value* v) { return v->uses().size() == 1 ? v->uses()[0].user : nullptr; }

struct Match {
  Node* qk = nullptr;  // matmul(q, kt)
  Value* q = nullptr;
  Value* kt = nullptr;
  Value* v = nullptr;
  Value* mask = nullptr;
  double scale = 1.0;
  std::vector<Node*> nodes;  // to remove, in order (the last one's output is the result)
  // torch.export's form: bmm over [B*H, S, D] with the scores reshaped to
  // `split` ([B, H, S, T]) for the mask and softmax and back: the fused op
  // runs over views of q, kt, v in split's leading dims.
  std::vector<int64_t> split;
};

// A constant mul/div of `x` by a number: the factor, else nullopt.
std::optional<double> ScaleOf(const Node* n, const Value* x) {
  if ((!Is(n, "aten::mul") && !Is(n, "aten::div")) || n->inputs().size() != 2) return std::nullopt;
  const bool first = n->input(0) == x;
  if (!first && !(Is(n, "aten::mul") && n->input(1) == x)) return std::nullopt;
  std::optional<double> c = Number(first ? n->input(1) : n->input(0));
  if (!c || *c == 0.0) return std::nullopt;
  return Is(n, "aten::div") ? 1.0 / *c : *c;
}

// A tensor of a floating dtype kiln::attention takes (float32, float16,
// bfloat16) with static sizes, else null.
const ir::TensorInfo* StaticFloating(const Value* v) {
  const ir::TypePtr& t = v->type();
  if (!t || !t->is_tensor()) return nullptr;
  const ir::TensorInfo& info = t->tensor();
  if (!info.dtype || !info.HasCompleteSizes()) return nullptr;
  const DType d = *info.dtype;
  return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16 ? &info : nullptr;
}

DType DTypeOf(const ir::TensorInfo* t) { return *t->dtype; }

// `n` = aten::to(x, dtype, ...) casting `x` (its only use) to `want`.
bool IsCastTo(const Node* n, const Value* x, DType want) {
  if (!Is(n, "aten::to") || n->inputs().size() < 2 || n->input(0) != x || !Int(n->input(1))) return false;
  const ir::TensorInfo* o = StaticFloating(n->output());
  return o != nullptr && DTypeOf(o) == want;
}

// `n` = aten::reshape/view of `x` to static sizes of the same dtype.
bool IsReshapeOf(const Node* n, const Value* x) {
  return (Is(n, "aten::reshape") || Is(n, "aten::view")) && n->inputs().size() == 2 && n->input(0) == x &&
         StaticFloating(n->output()) != nullptr && StaticFloating(x) != nullptr &&
         DTypeOf(StaticFloating(n->output())) == DTypeOf(StaticFloating(x));
}

// aten::dropout(x, p, train=False): the identity.
bool IsEvalDropoutOf(const Node* n, const Value* x) {
  if (!Is(n, "aten::dropout") || n->inputs().size() != 3 || n->input(0) != x) return false;
  std::optional<IValue> train = ir::ConstantValue(n->input(2));
  return train && train->isBool() && !train->toBool();
}

// An identity between the softmax and the product with v: an eval-mode
// dropout (torch.export keeps it) or, in core-ATen programs, the clone that
// replaces it (values unchanged whatever its memory format; like every
// intermediate of the chain it must have no other use).
bool IsIdentityOf(const Node* n, const Value* x) {
  if (IsEvalDropoutOf(n, x)) return true;
  return Is(n, "aten::clone") && !n->inputs().empty() && n->inputs().size() <= 2 && n->input(0) == x;
}

// c10::ScalarType::Float, softmax's dtype argument for float32.
constexpr int64_t kFloat32ScalarType = 6;

int64_t Product(const std::vector<int64_t>& v, size_t end) {
  int64_t p = 1;
  for (size_t i = 0; i < end; ++i) p *= v[i];
  return p;
}

std::optional<Match> MatchAt(Node* qk, const FuseAttentionOptions& options) {
  if ((!Is(qk, "aten::matmul") && !(options.bmm_form && Is(qk, "aten::bmm"))) || qk->inputs().size() != 2) {
    return std::nullopt;
  }
  Match m;
  m.qk = qk;
  m.q = qk->input(0);
  m.kt = qk->input(1);
  m.nodes.push_back(qk);
  const ir::TensorInfo* q = StaticFloating(m.q);
  const ir::TensorInfo* kt = StaticFloating(m.kt);
  const ir::TensorInfo* s = StaticFloating(qk->output());
  if (q == nullptr || kt == nullptr || s == nullptr || q->sizes->size() < 2 || q->sizes->size() != kt->sizes->size()) {
    return std::nullopt;
  }
  // One dtype for q, kt, v and the result; with 16-bit operands the chain
  // may leave it for float32 around the softmax (autocast's casts, or a
  // float32 mask's promotion) and must come back before the product with v.
  const DType dtype = DTypeOf(q);
  if (DTypeOf(kt) != dtype || DTypeOf(s) != dtype) return std::nullopt;
  const std::vector<int64_t> qs = q->ConcreteSizes(), ks = kt->ConcreteSizes(), ss = s->ConcreteSizes();
  const size_t r = qs.size();
  for (size_t i = 0; i + 2 < r; ++i) {
    if (qs[i] != ks[i]) return std::nullopt;  // no broadcast batch dims
  }
  Value* cur = qk->output();
  Node* next = SoleUser(cur);
  // `next` joins the chain; its sole user is the next candidate.
  auto take = [&] {
    m.nodes.push_back(next);
    cur = next->output();
    next = SoleUser(cur);
  };
  // The shape the mask and softmax see: the product's, or a split of its
  // batch dim (torch.export's bmm over [B*H, S, T] viewed as [B, H, S, T]).
  std::vector<int64_t> scores = ss;
  if (options.bmm_form && IsReshapeOf(next, cur)) {
    const std::vector<int64_t> os = StaticFloating(next->output())->ConcreteSizes();
    const size_t n = os.size();
    if (n < 2 || os[n - 1] != ss[r - 1] || os[n - 2] != ss[r - 2] || Product(os, n - 2) != Product(ss, r - 2)) {
      return std::nullopt;
    }
    m.split = os;
    scores = os;
    take();
  }
  if (std::optional<double> c = ScaleOf(next, cur)) {
    const ir::TensorInfo* so = StaticFloating(next->output());
    if (so == nullptr || DTypeOf(so) != dtype) return std::nullopt;
    m.scale *= *c;
    take();
  }
  if (Is(next, "aten::add") && next->inputs().size() <= 3) {
    std::optional<double> alpha = next->inputs().size() == 3 ? Number(next->input(2)) : 1.0;
    Value* other = next->input(0) == cur ? next->input(1) : next->input(0);
    const ir::TensorInfo* oi = StaticFloating(other);
    const ir::TensorInfo* sum = StaticFloating(next->output());
    // The mask is float32 or the operands' dtype (float32 promotes the sum).
    const bool dtypes_ok = oi != nullptr && sum != nullptr &&
                           (DTypeOf(oi) == dtype || DTypeOf(oi) == DType::kFloat32) &&
                           DTypeOf(sum) == (DTypeOf(oi) == DType::kFloat32 ? DType::kFloat32 : dtype);
    if (alpha == std::optional<double>(1.0) && other != cur && dtypes_ok && BroadcastsTo(*oi, scores) &&
        (next->input(0) == cur || next->input(1) == cur)) {
      m.mask = other;
      take();
    }
  }
  if (dtype != DType::kFloat32 && IsCastTo(next, cur, DType::kFloat32)) take();
  if (!Is(next, "aten::softmax") || next->inputs().size() < 2) return std::nullopt;
  std::optional<int64_t> dim = Int(next->input(1));
  if (!dim || (*dim != -1 && *dim != static_cast<int64_t>(scores.size()) - 1)) return std::nullopt;
  // softmax(x, -1, dtype=float32) (Hugging Face's llama) computes in
  // float32 like a cast before it: the fused op's meaning.
  if (next->inputs().size() > 2 && !IsNone(next->input(2)) &&
      Int(next->input(2)) != std::optional<int64_t>(kFloat32ScalarType)) {
    return std::nullopt;
  }
  const ir::TensorInfo* probs = StaticFloating(next->output());
  if (probs == nullptr) return std::nullopt;
  take();
  // A dropout or clone (IsIdentityOf) before or after the cast.
  if (IsIdentityOf(next, cur)) take();
  if (DTypeOf(probs) != dtype) {
    if (!IsCastTo(next, cur, dtype)) return std::nullopt;
    take();
  }
  if (IsIdentityOf(next, cur)) take();
  if (!m.split.empty()) {
    // Back to the product's shape for the bmm with v.
    if (!IsReshapeOf(next, cur) || StaticFloating(next->output())->ConcreteSizes() != ss) return std::nullopt;
    take();
  }
  if ((!Is(next, "aten::matmul") && !(options.bmm_form && Is(next, "aten::bmm"))) || next->input(0) != cur) {
    return std::nullopt;
  }
  m.v = next->input(1);
  const ir::TensorInfo* v = StaticFloating(m.v);
  const ir::TensorInfo* o = StaticFloating(next->output());
  if (v == nullptr || o == nullptr || v->sizes->size() != r || DTypeOf(v) != dtype || DTypeOf(o) != dtype) {
    return std::nullopt;
  }
  const std::vector<int64_t> vs = v->ConcreteSizes();
  for (size_t i = 0; i + 2 < r; ++i) {
    if (vs[i] != qs[i]) return std::nullopt;
  }
  if (vs[r - 2] != ks[r - 1]) return std::nullopt;
  m.nodes.push_back(next);
  // A constant scale of q just before (its only use) folds in too.
  Node* qp = m.q->node();
  if (OnlyUsedBy(m.q, qk) && qp->inputs().size() == 2) {
    for (Value* x : {qp->input(0), qp->input(1)}) {
      std::optional<double> c = ScaleOf(qp, x);
      const ir::TensorInfo* xi = StaticFloating(x);
      if (c && xi != nullptr && DTypeOf(xi) == dtype && xi->ConcreteSizes() == qs) {
        m.scale *= *c;
        m.q = x;
        m.nodes.insert(m.nodes.begin(), qp);
        break;
      }
    }
  }
  return m;
}

ir::TypePtr WithSizes(const ir::TensorInfo& like, const std::vector<int64_t>& sizes) {
  ir::TensorInfo info = like;
  info.sizes = std::vector<std::optional<int64_t>>(sizes.begin(), sizes.end());
  info.strides.reset();
  return ir::Type::TensorWith(std::move(info));
}

// aten::reshape(x, sizes) at the insert point, typed.
absl::StatusOr<Value*> Reshape(ir::Graph& g, Value* x, const std::vector<int64_t>& sizes) {
  ASSIGN_OR_RETURN(Value * shape, ir::InsertConstant(g, IValue::IntList(sizes)));
  Node* n = g.create(ir::Symbol::FromQualString("aten::reshape"), {x, shape}, 1);
  g.insertNode(n);
  n->output()->setType(WithSizes(x->type()->tensor(), sizes));
  return n->output();
}

absl::Status Rewrite(ir::Graph& g, const Match& m) {
  Node* last = m.nodes.back();
  ir::WithInsertPoint at(last);
  Value* mask = m.mask;
  if (mask == nullptr) {
    ASSIGN_OR_RETURN(mask, ir::InsertConstant(g, IValue::None()));
  }
  ASSIGN_OR_RETURN(Value * scale, ir::InsertConstant(g, IValue::Double(m.scale)));
  Value* q = m.q;
  Value* kt = m.kt;
  Value* v = m.v;
  Value* result = nullptr;
  Node* fused = nullptr;
  if (m.split.empty()) {
    fused = g.create(ir::Symbol::FromQualString("kiln::attention"), {q, kt, v, mask, scale}, 1);
    g.insertNode(fused);
    fused->output()->setType(last->output()->type());
    result = fused->output();
  } else {
    // Views of q, kt, v in the split's batch dims; the result viewed back.
    const std::vector<int64_t> lead(m.split.begin(), m.split.end() - 2);
    auto view = [&](Value* x) -> absl::StatusOr<Value*> {
      std::vector<int64_t> sizes = lead;
      const std::vector<int64_t> xs = x->type()->tensor().ConcreteSizes();
      sizes.insert(sizes.end(), xs.end() - 2, xs.end());
      return Reshape(g, x, sizes);
    };
    ASSIGN_OR_RETURN(q, view(q));
    ASSIGN_OR_RETURN(kt, view(kt));
    ASSIGN_OR_RETURN(v, view(v));
    fused = g.create(ir::Symbol::FromQualString("kiln::attention"), {q, kt, v, mask, scale}, 1);
    g.insertNode(fused);
    std::vector<int64_t> out_sizes = lead;
    const std::vector<int64_t> os = last->output()->type()->tensor().ConcreteSizes();
    out_sizes.insert(out_sizes.end(), os.end() - 2, os.end());
    fused->output()->setType(WithSizes(last->output()->type()->tensor(), out_sizes));
    ASSIGN_OR_RETURN(result, Reshape(g, fused->output(), os));
  }
  const std::string name = last->output()->hasDebugName() ? last->output()->debugName() : "";
  last->output()->replaceAllUsesWith(result);
  DestroyWithUnusedConstants(std::vector<Node*>(m.nodes.rbegin(), m.nodes.rend()));
  if (!name.empty()) result->setDebugName(name);
  return absl::OkStatus();
}

absl::StatusOr<bool> FuseBlock(ir::Graph& g, ir::Block* block, PassStatistics& stats,
                               const FuseAttentionOptions& options) {
  bool changed = false;
  std::vector<Node*> candidates;
  for (Node* n : block->nodes()) {
    for (ir::Block* sub : n->blocks()) {
      ASSIGN_OR_RETURN(bool c, FuseBlock(g, sub, stats, options));
      changed |= c;
    }
    if (Is(n, "aten::matmul") || Is(n, "aten::bmm")) candidates.push_back(n);
  }
  std::vector<Node*> removed;
  for (Node* n : candidates) {
    if (std::find(removed.begin(), removed.end(), n) != removed.end()) continue;
    std::optional<Match> m = MatchAt(n, options);
    if (!m) continue;
    removed.insert(removed.end(), m->nodes.begin(), m->nodes.end());
    RETURN_IF_ERROR(Rewrite(g, *m));
    stats.Add("attention_fused");
    changed = true;
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> FuseAttention(ir::Graph& graph, PassStatistics& stats, const FuseAttentionOptions& options) {
  return FuseBlock(graph, graph.block(), stats, options);
}

absl::Status RegisterFuseAttentionPass(PassRegistry& registry) {
  RETURN_IF_ERROR(registry.RegisterFunction(
      "fuse_attention", {},
      "Fuses matmul(q, kt) [* scale] [+ mask] -> softmax(-1) -> matmul(., v) into kiln::attention for a "
      "device's tiled attention kernel",
      [](ir::Graph& g, PassStatistics& stats) { return FuseAttention(g, stats); }));
  return registry.RegisterFunction(
      "fuse_attention_with_bmm", {},
      "fuse_attention, also over torch.export's form (bmm over [B*H, S, D], the scores viewed as [B, H, S, T])",
      [](ir::Graph& g, PassStatistics& stats) {
        FuseAttentionOptions options;
        options.bmm_form = true;
        return FuseAttention(g, stats, options);
      });
}

}  // namespace kiln::passes
