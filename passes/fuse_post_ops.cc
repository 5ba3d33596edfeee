#include "passes/fuse_post_ops.h"

#include "passes/fusion_match.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/constants.h"
#include "ir/ivalue.h"
#include "ir/post_ops.h"
#include "support/status.h"
#include "support/tensor.h"

namespace kiln::passes {
namespace {

using ir::IValue;
using ir::Node;
using ir::PostOp;
using ir::PostOpKind;
using ir::Type;
using ir::Value;
using fusion_match::BroadcastsTo;
using fusion_match::DestroyWithUnusedConstants;
using fusion_match::FloatConstant;
using fusion_match::Int;
using fusion_match::IntList;
using fusion_match::IsNone;
using fusion_match::Number;
using fusion_match::OnlyUsedBy;
using fusion_match::StaticFloat;

// The dim of `sizes` along which constant `t` varies, when it varies along
// at most that one dim (right-aligned broadcasting); -1 otherwise.
int64_t VaryingDim(const Tensor& t, const std::vector<int64_t>& sizes) {
  if (t.dim() > static_cast<int64_t>(sizes.size())) return -1;
  const int64_t shift = static_cast<int64_t>(sizes.size()) - t.dim();
  int64_t dim = -2;  // none yet
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (t.size(i) == 1) continue;
    if (t.size(i) != sizes[static_cast<size_t>(shift + i)] || dim != -2) return -1;
    dim = shift + i;
  }
  return dim;
}

// ------------------------------------------------------------------ chains

bool AcceptedDType(DType t, const FusePostOpsOptions& o) {
  return t == DType::kFloat32 || (o.narrow_floats && (t == DType::kBFloat16 || t == DType::kFloat16));
}

// A tensor value with static sizes and a dtype the options accept (float32
// only by default: the CPU's library calls run float32 epilogues).
const ir::TensorInfo* StaticAccepted(const ir::Value* v, const FusePostOpsOptions& o) {
  const ir::TypePtr& t = v->type();
  if (!t || !t->is_tensor()) return nullptr;
  const ir::TensorInfo& info = t->tensor();
  if (!info.dtype || !AcceptedDType(*info.dtype, o) || !info.HasCompleteSizes()) return nullptr;
  return &info;
}

enum class AnchorKind { kConv, kLinear };

// An anchor and the steps fused into it so far.
struct Chain {
  const FusePostOpsOptions* options = nullptr;
  AnchorKind kind = AnchorKind::kConv;
  Node* anchor = nullptr;
  Value* x = nullptr;
  Value* w = nullptr;  // null when `w_tensor` replaces it
  Value* b = nullptr;  // null: no bias (unless `b_tensor`)
  std::optional<Tensor> w_tensor, b_tensor;  // folded constants
  std::vector<int64_t> stride, pads, dilation;
  int64_t groups = 1;
  std::vector<PostOp> post;
  std::vector<Value*> operands;
  std::vector<Node*> consumed;  // steps, in order
  Value* result = nullptr;      // the running value
  bool folded = false;
  // A GEMM's result reshaped before its elementwise tail (the ONNX
  // exporters' [M, N] -> [B, S, N] around transformer MLPs): the fused op
  // keeps the GEMM's shape and this reshape moves after it.
  Node* reshape = nullptr;
};

// Reads the convolution parameters of `n` (x, w, b, then per-dim lists).
bool ReadConv(Node* n, Chain* c) {
  const std::string kind(n->kind().qualString());
  const size_t in = n->inputs().size();
  if (in < 2) return false;
  c->x = n->input(0);
  c->w = n->input(1);
  const ir::TensorInfo* w = StaticAccepted(c->w, *c->options);
  if (w == nullptr || w->sizes->size() < 3) return false;
  const size_t k = w->sizes->size() - 2;
  if (in > 2 && !IsNone(n->input(2))) c->b = n->input(2);
  auto per_dim = [&](size_t i, int64_t dflt) -> std::optional<std::vector<int64_t>> {
    if (i >= in) return std::vector<int64_t>(k, dflt);
    std::optional<std::vector<int64_t>> v = IntList(n->input(i));
    if (v && v->size() == 1 && k > 1) v = std::vector<int64_t>(k, (*v)[0]);
    if (!v || v->size() != k) return std::nullopt;
    return v;
  };
  std::optional<std::vector<int64_t>> stride, pads, dilation;
  std::optional<int64_t> groups = int64_t{1};
  if (kind == "aten::convolution") {
    if (in != 9) return false;
    std::optional<IValue> transposed = ir::ConstantValue(n->input(6));
    if (!transposed || !transposed->isBool() || transposed->toBool()) return false;
    stride = per_dim(3, 1);
    pads = per_dim(4, 0);
    dilation = per_dim(5, 1);
    groups = Int(n->input(8));
  } else if (kind == "aten::conv1d" || kind == "aten::conv2d" || kind == "aten::conv3d") {
    stride = per_dim(3, 1);
    pads = per_dim(4, 0);
    dilation = per_dim(5, 1);
    if (in > 6) groups = Int(n->input(6));
  } else if (kind == "kiln::conv_nd" || kind == "kiln::conv_post_ops") {
    if (in < 7) return false;
    stride = per_dim(3, 1);
    pads = IntList(n->input(4));
    dilation = per_dim(5, 1);
    groups = Int(n->input(6));
    if (pads && pads->size() != 2 * k) return false;
  } else {
    return false;
  }
  if (!stride || !pads || !dilation || !groups) return false;
  if (pads->size() == k) pads->insert(pads->end(), pads->begin(), pads->end());  // symmetric
  c->kind = AnchorKind::kConv;
  c->stride = *stride;
  c->pads = *pads;
  c->dilation = *dilation;
  c->groups = *groups;
  return true;
}

// An existing fused op's epilogue (the pass extends it).
bool ReadExistingPostOps(Node* n, size_t first, Chain* c) {
  if (n->inputs().size() != first + 3) return false;
  std::optional<IValue> names = ir::ConstantValue(n->input(first));
  std::optional<IValue> scalars = ir::ConstantValue(n->input(first + 1));
  Node* list = n->input(first + 2)->node();
  if (!names || !scalars || list->kind() != ir::sym::kListConstruct || !names->isList() || !scalars->isList()) {
    return false;
  }
  std::vector<std::string> n_list;
  std::vector<double> s_list;
  for (const IValue& e : names->elements()) {
    if (!e.isString()) return false;
    n_list.push_back(e.toString());
  }
  for (const IValue& e : scalars->elements()) {
    if (!e.isNumber()) return false;
    s_list.push_back(e.toNumberAsDouble());
  }
  absl::StatusOr<std::vector<PostOp>> post = ir::ParsePostOps(n_list, s_list, list->inputs().size());
  if (!post.ok()) return false;
  c->post = *std::move(post);
  for (Value* v : list->inputs()) c->operands.push_back(v);
  return true;
}

// A transposed copy of a constant 2-D float matrix.
std::optional<Tensor> Transposed(const Tensor& m) {
  if (m.dim() != 2) return std::nullopt;
  const int64_t r = m.size(0), k = m.size(1);
  // Every element is written below: no zero fill first (BERT-base's
  // exported Linear weights are 340 MB of transposed constants).
  absl::StatusOr<Tensor> made = Tensor::FromStorage(
      Storage::AllocateCpuUninitialized(static_cast<size_t>(r * k) * sizeof(float)), DType::kFloat32, {k, r},
      Tensor::ContiguousStrides({k, r}), 0);
  if (!made.ok()) return std::nullopt;
  Tensor t = *std::move(made);
  const float* src = m.data<float>();
  float* dst = t.data<float>();
  // In tiles: a row-by-row transpose of a large weight strides through
  // memory and showed in compile profiles (swin_t, vit).
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < r; i0 += kTile) {
    for (int64_t j0 = 0; j0 < k; j0 += kTile) {
      const int64_t i1 = std::min(r, i0 + kTile), j1 = std::min(k, j0 + kTile);
      for (int64_t i = i0; i < i1; ++i) {
        for (int64_t j = j0; j < j1; ++j) dst[j * r + i] = src[i * k + j];
      }
    }
  }
  return t;
}

// The [N, K] weight of a GEMM whose right operand `m` is [K, N]: the operand
// of aten::t / transpose(0, 1) over a 2-D value, or a constant transposed
// here.
bool LinearWeightOf(Value* m, Chain* c) {
  Node* p = m->node();
  const std::string kind(p->kind().qualString());
  const ir::TensorInfo* mi = StaticFloat(m);
  if (mi == nullptr || mi->sizes->size() != 2) return false;
  if ((kind == "aten::t" || kind == "aten::numpy_T") && p->inputs().size() == 1) {
    c->w = p->input(0);
    return true;
  }
  if (kind == "aten::transpose" && p->inputs().size() == 3) {
    std::optional<int64_t> d0 = Int(p->input(1)), d1 = Int(p->input(2));
    if (d0 && d1 && ((*d0 == 0 && *d1 == 1) || (*d0 == 1 && *d1 == 0) || (*d0 == -2 && *d1 == -1) ||
                     (*d0 == -1 && *d1 == -2))) {
      c->w = p->input(0);
      return true;
    }
    return false;
  }
  std::optional<Tensor> constant = FloatConstant(m);
  if (!constant) return false;
  c->w_tensor = Transposed(*constant);
  c->w = nullptr;
  return c->w_tensor.has_value();
}

bool ReadLinear(Node* n, Chain* c) {
  const std::string kind(n->kind().qualString());
  const size_t in = n->inputs().size();
  c->kind = AnchorKind::kLinear;
  if (kind == "aten::linear" || kind == "kiln::linear_post_ops") {
    if (in < 2) return false;
    c->x = n->input(0);
    c->w = n->input(1);
    if (in > 2 && !IsNone(n->input(2))) c->b = n->input(2);
  } else if (kind == "aten::addmm") {
    if (in < 3) return false;
    std::optional<double> beta = in > 3 ? Number(n->input(3)) : 1.0;
    std::optional<double> alpha = in > 4 ? Number(n->input(4)) : 1.0;
    if (!beta || !alpha || *beta != 1.0 || *alpha != 1.0) return false;
    const ir::TensorInfo* bias = StaticFloat(n->input(0));
    if (bias == nullptr || bias->sizes->size() != 1) return false;
    c->b = n->input(0);
    c->x = n->input(1);
    if (!LinearWeightOf(n->input(2), c)) return false;
  } else if (kind == "aten::matmul" || kind == "aten::mm") {
    if (in != 2) return false;
    c->x = n->input(0);
    // Only a constant weight: a GEMM by activations stays a matmul.
    if (!FloatConstant(n->input(1)) || !LinearWeightOf(n->input(1), c)) return false;
  } else {
    return false;
  }
  const ir::TensorInfo* x = StaticFloat(c->x);
  if (x == nullptr || x->sizes->size() < 2) return false;
  if (c->w != nullptr) {
    const ir::TensorInfo* w = StaticFloat(c->w);
    if (w == nullptr || w->sizes->size() != 2) return false;
  }
  if (c->b != nullptr) {
    const ir::TensorInfo* b = StaticFloat(c->b);
    if (b == nullptr || b->sizes->size() != 1) return false;
  }
  return true;
}

// ------------------------------------------------------------------- steps

// Folds a per-output-channel constant into the anchor's weight and bias:
// y * s -> W * s, b * s; y + t -> b + t. Only for anchors whose weight and
// bias are constants, before any other step.
bool FoldChannelConstant(Chain& c, bool is_mul, const Tensor& t, const std::vector<int64_t>& sizes) {
  if (!c.post.empty()) return false;
  const int64_t channel_dim = c.kind == AnchorKind::kConv ? 1 : static_cast<int64_t>(sizes.size()) - 1;
  const int64_t vary = VaryingDim(t, sizes);
  if (vary != channel_dim && vary != -2) return false;
  const int64_t channels = sizes[static_cast<size_t>(channel_dim)];
  std::optional<Tensor> w = c.w_tensor ? c.w_tensor : (c.w ? FloatConstant(c.w) : std::nullopt);
  if (!w) return false;
  std::optional<Tensor> b;
  if (c.b_tensor) {
    b = c.b_tensor;
  } else if (c.b != nullptr) {
    b = FloatConstant(c.b);
    if (!b) return false;
  }
  if (w->size(0) != channels) return false;
  auto value = [&](int64_t ch) { return t.GetDouble(t.numel() == 1 ? 0 : ch); };
  Tensor nb = Tensor::Empty(DType::kFloat32, {channels});
  for (int64_t ch = 0; ch < channels; ++ch) {
    const double old = b ? b->GetDouble(ch) : 0.0;
    nb.data<float>()[ch] = static_cast<float>(is_mul ? old * value(ch) : old + value(ch));
  }
  if (is_mul) {
    Tensor nw = Tensor::Empty(DType::kFloat32, w->sizes());
    const int64_t per = w->numel() / std::max<int64_t>(channels, 1);
    const float* src = w->data<float>();
    for (int64_t ch = 0; ch < channels; ++ch) {
      const double s = value(ch);
      for (int64_t i = 0; i < per; ++i) {
        nw.data<float>()[ch * per + i] = static_cast<float>(src[ch * per + i] * s);
      }
    }
    c.w_tensor = nw;
  } else if (!c.w_tensor) {
    c.w_tensor = *w;
  }
  c.b_tensor = nb;
  c.folded = true;
  return true;
}

// aten::batch_norm(y, weight, bias, mean, var, training=False, momentum,
// eps, cudnn) with constant parameters, folded into a convolution.
bool FoldBatchNorm(Chain& c, Node* u, const std::vector<int64_t>& sizes) {
  if (c.kind != AnchorKind::kConv || !c.post.empty() || u->inputs().size() != 9) return false;
  std::optional<IValue> training = ir::ConstantValue(u->input(5));
  std::optional<double> eps = Number(u->input(7));
  if (!training || !training->isBool() || training->toBool() || !eps) return false;
  const int64_t channels = sizes[1];
  std::optional<Tensor> mean = FloatConstant(u->input(3)), var = FloatConstant(u->input(4));
  if (!mean || !var || mean->numel() != channels || var->numel() != channels) return false;
  std::optional<Tensor> gamma, beta;
  if (!IsNone(u->input(1)) && !(gamma = FloatConstant(u->input(1)))) return false;
  if (!IsNone(u->input(2)) && !(beta = FloatConstant(u->input(2)))) return false;
  if ((gamma && gamma->numel() != channels) || (beta && beta->numel() != channels)) return false;
  // [C, 1, ...]: varies along the channel dim of the result.
  std::vector<int64_t> channel_shape(sizes.size() - 1, 1);
  channel_shape[0] = channels;
  Tensor scale = Tensor::Empty(DType::kFloat32, channel_shape);
  Tensor shift = Tensor::Empty(DType::kFloat32, channel_shape);
  for (int64_t ch = 0; ch < channels; ++ch) {
    const double s = (gamma ? gamma->GetDouble(ch) : 1.0) / std::sqrt(var->GetDouble(ch) + *eps);
    scale.data<float>()[ch] = static_cast<float>(s);
    shift.data<float>()[ch] = static_cast<float>((beta ? beta->GetDouble(ch) : 0.0) - mean->GetDouble(ch) * s);
  }
  // Both folds or neither: check the mul fold's preconditions first.
  Chain trial = c;
  if (!FoldChannelConstant(trial, true, scale, sizes)) return false;
  if (!FoldChannelConstant(trial, false, shift, sizes)) return false;
  c = std::move(trial);
  return true;
}

PostOp Op(PostOpKind kind, std::vector<double> scalars = {}) {
  PostOp p;
  p.kind = kind;
  p.scalars = std::move(scalars);
  return p;
}

// x * sigmoid(x) and x * (erf(x / sqrt(2)) + 1) * 0.5, whose first nodes
// both read the running value `v` (two uses). Returns the pattern's last
// node and sets *kind, or null.
Node* MatchTwoUsePattern(Value* v, PostOpKind* kind, std::vector<Node*>* nodes) {
  if (v->uses().size() != 2) return nullptr;
  Node* a = v->uses()[0].user;
  Node* b = v->uses()[1].user;
  // The other operand of a binary op (add's alpha is input 2).
  auto other_input = [](Node* n, const Value* not_this) -> Value* {
    if (n->inputs().size() < 2 || n->inputs().size() > 3) return nullptr;
    return n->input(0) == not_this ? n->input(1) : (n->input(1) == not_this ? n->input(0) : nullptr);
  };
  for (int order = 0; order < 2; ++order) {
    Node* first = order == 0 ? a : b;
    Node* mul = order == 0 ? b : a;
    if (mul->kind().qualString() != "aten::mul" || first == mul) continue;
    Value* gate = other_input(mul, v);
    if (gate == nullptr || gate->node() == nullptr) continue;
    const std::string fk(first->kind().qualString());
    // silu: first = sigmoid(v), mul = v * first.
    if (fk == "aten::sigmoid" && gate == first->output() && OnlyUsedBy(first->output(), mul)) {
      *kind = PostOpKind::kSilu;
      *nodes = {first, mul};
      return mul;
    }
    // gelu: first = div(v, sqrt2) | mul(v, 1/sqrt2); erf; add 1; mul = v * that; * 0.5.
    if ((fk == "aten::div" || fk == "aten::mul") && first->inputs().size() == 2 && first->input(0) == v) {
      std::optional<double> c = Number(first->input(1));
      const double want = fk == "aten::div" ? std::sqrt(2.0) : std::sqrt(0.5);
      if (!c || std::fabs(*c - want) > 1e-6 || first->output()->uses().size() != 1) continue;
      Node* erf = first->output()->uses()[0].user;
      if (erf->kind().qualString() != "aten::erf" || erf->output()->uses().size() != 1) continue;
      Node* add = erf->output()->uses()[0].user;
      if (add->kind().qualString() != "aten::add" || add->output() != gate || !OnlyUsedBy(gate, mul)) continue;
      Value* one = other_input(add, erf->output());
      std::optional<double> alpha = add->inputs().size() > 2 ? Number(add->input(2)) : 1.0;
      if (one == nullptr || Number(one) != std::optional<double>(1.0) || alpha != std::optional<double>(1.0)) {
        continue;
      }
      if (mul->output()->uses().size() != 1) continue;
      Node* half = mul->output()->uses()[0].user;
      if (half->kind().qualString() != "aten::mul") continue;
      Value* h = other_input(half, mul->output());
      if (h == nullptr || Number(h) != std::optional<double>(0.5)) continue;
      *kind = PostOpKind::kGelu;
      *nodes = {first, erf, add, mul, half};
      return half;
    }
  }
  return nullptr;
}

// ------------------------------------------------------ gelu, tanh form

// The element count of static sizes; -1 when it overflows.
int64_t Elements(const std::vector<int64_t>& sizes) {
  int64_t n = 1;
  for (int64_t d : sizes) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

// The operands of a binary node of `kind` (add only with alpha 1), or
// {null, null}.
std::pair<Value*, Value*> Operands(Node* n, const char* kind) {
  if (n == nullptr || n->kind().qualString() != kind || n->outputs().size() != 1) return {nullptr, nullptr};
  const size_t in = n->inputs().size();
  if (in != 2 && !(in == 3 && std::string(kind) == "aten::add" && Number(n->input(2)) == std::optional<double>(1.0))) {
    return {nullptr, nullptr};
  }
  return {n->input(0), n->input(1)};
}

bool IsNumber(const Value* v, double want) {
  std::optional<double> x = Number(v);
  // The exporters store the constants as float32 (sqrt(2/pi) = 0.7978846).
  return x && std::fabs(*x - want) <= 1e-6 * std::max(1.0, std::fabs(want));
}

// `x` (a node output) is `kind`(v, number) or `kind`(number, v) with the
// number `want`, for a commutative `kind`.
bool IsScaled(Value* x, Value* v, const char* kind, double want, std::vector<Node*>* nodes) {
  auto [a, b] = Operands(x->node(), kind);
  if (a == nullptr || !((a == v && IsNumber(b, want)) || (b == v && IsNumber(a, want)))) return false;
  nodes->push_back(x->node());
  return true;
}

// v^3: pow(v, 3), v * (v * v) or (v * v) * v.
bool IsCube(Value* x, Value* v, std::vector<Node*>* nodes) {
  Node* n = x->node();
  if (n == nullptr) return false;
  if (n->kind().qualString() == "aten::pow" && n->inputs().size() == 2 && n->input(0) == v &&
      IsNumber(n->input(1), 3.0)) {
    nodes->push_back(n);
    return true;
  }
  auto [a, b] = Operands(n, "aten::mul");
  if (a == nullptr) return false;
  Value* square = a == v ? b : (b == v ? a : nullptr);
  if (square == nullptr) return false;
  auto [s0, s1] = Operands(square->node(), "aten::mul");
  if (s0 != v || s1 != v) return false;
  nodes->push_back(square->node());
  nodes->push_back(n);
  return true;
}

// sqrt(2/pi) * (v + 0.044715 * v^3), factors in any order.
bool IsTanhArgument(Value* z, Value* v, std::vector<Node*>* nodes) {
  auto [z0, z1] = Operands(z->node(), "aten::mul");
  if (z0 == nullptr) return false;
  const double k = std::sqrt(2.0 / M_PI);
  Value* inner = IsNumber(z1, k) ? z0 : (IsNumber(z0, k) ? z1 : nullptr);
  if (inner == nullptr) return false;
  auto [y0, y1] = Operands(inner->node(), "aten::add");
  if (y0 == nullptr) return false;
  Value* w = y0 == v ? y1 : (y1 == v ? y0 : nullptr);
  if (w == nullptr) return false;
  auto [w0, w1] = Operands(w->node(), "aten::mul");
  if (w0 == nullptr) return false;
  Value* cube = IsNumber(w1, 0.044715) ? w0 : (IsNumber(w0, 0.044715) ? w1 : nullptr);
  if (cube == nullptr || !IsCube(cube, v, nodes)) return false;
  nodes->insert(nodes->end(), {w->node(), inner->node(), z->node()});
  return true;
}

// 1 + tanh(sqrt(2/pi) * (v + 0.044715 * v^3)).
bool IsOnePlusTanh(Value* p, Value* v, std::vector<Node*>* nodes) {
  auto [p0, p1] = Operands(p->node(), "aten::add");
  if (p0 == nullptr) return false;
  Value* t = IsNumber(p1, 1.0) ? p0 : (IsNumber(p0, 1.0) ? p1 : nullptr);
  if (t == nullptr || t->node() == nullptr || t->node()->kind().qualString() != "aten::tanh" ||
      t->node()->inputs().size() != 1 ||
      !IsTanhArgument(t->node()->input(0), v, nodes)) {
    return false;
  }
  nodes->insert(nodes->end(), {t->node(), p->node()});
  return true;
}

// GELU's tanh form over `v` ending at `last`, as the ONNX exporters write it
// out: (0.5 * v) * (1 + tanh(...)) or (v * (1 + tanh(...))) * 0.5, with
// v^3 as pow(v, 3) or products, commutative operands in either order.
// Fills *nodes (producers before users) on a match.
bool IsGeluTanh(Node* last, Value* v, std::vector<Node*>* nodes) {
  auto [a, b] = Operands(last, "aten::mul");
  if (a == nullptr) return false;
  for (int order = 0; order < 2; ++order) {
    Value* x = order == 0 ? a : b;
    Value* y = order == 0 ? b : a;
    std::vector<Node*> found;
    // (0.5 * v) * (1 + tanh(...)) or (v / 2) * (1 + tanh(...)).
    bool half = IsScaled(x, v, "aten::mul", 0.5, &found);
    if (!half) {
      auto [d0, d1] = Operands(x->node(), "aten::div");
      if (d0 == v && IsNumber(d1, 2.0)) {
        found.push_back(x->node());
        half = true;
      }
    }
    if (half && IsOnePlusTanh(y, v, &found)) {
      found.push_back(last);
      *nodes = std::move(found);
      return true;
    }
    // (v * (1 + tanh(...))) * 0.5.
    found.clear();
    if (IsNumber(y, 0.5)) {
      auto [m0, m1] = Operands(x->node(), "aten::mul");
      Value* p = m0 == v ? m1 : (m1 == v ? m0 : nullptr);
      if (p != nullptr && IsOnePlusTanh(p, v, &found)) {
        found.insert(found.end(), {x->node(), last});
        *nodes = std::move(found);
        return true;
      }
    }
  }
  return false;
}

// The tanh-form GELU of the running value `v`: its pattern's last node, or
// null. Every node of the pattern but the last is used only inside it, and
// so is `v`.
Node* MatchGeluTanh(Value* v, std::vector<Node*>* nodes) {
  // The last node is a user of v or at most two single-use steps after one.
  std::vector<Node*> candidates;
  for (const ir::Use& u : v->uses()) {
    Node* n = u.user;
    for (int depth = 0; depth < 3 && n != nullptr; ++depth) {
      if (std::find(candidates.begin(), candidates.end(), n) == candidates.end()) candidates.push_back(n);
      n = n->outputs().size() == 1 && n->output()->uses().size() == 1 ? n->output()->uses()[0].user : nullptr;
    }
  }
  for (Node* last : candidates) {
    std::vector<Node*> found;
    if (!IsGeluTanh(last, v, &found)) continue;
    auto inside = [&](const Value* x) {
      for (const ir::Use& u : x->uses()) {
        if (std::find(found.begin(), found.end(), u.user) == found.end()) return false;
      }
      return true;
    };
    bool closed = inside(v);
    for (Node* n : found) {
      if (n != last) closed = closed && inside(n->output());
    }
    if (!closed) continue;
    *nodes = std::move(found);
    return last;
  }
  return nullptr;
}

// Tries to fuse the node that consumes the running value; returns whether
// the chain grew.
bool Extend(Chain& c) {
  Value* v = c.result;
  const ir::TensorInfo* vi = StaticAccepted(v, *c.options);
  if (vi == nullptr) return false;
  const std::vector<int64_t> sizes = vi->ConcreteSizes();
  // A step keeps the running value's dtype (a narrow value added to a
  // float32 one would promote) and shape.
  auto same_type = [&](const Value* out) {
    const ir::TensorInfo* oi = StaticAccepted(out, *c.options);
    return oi != nullptr && oi->dtype == vi->dtype && oi->ConcreteSizes() == sizes;
  };
  // A GEMM's result reshaped (same elements, another shape) before an
  // elementwise step: the step applies before the reshape just the same.
  if (c.kind == AnchorKind::kLinear && c.reshape == nullptr && v->uses().size() == 1) {
    Node* r = v->uses()[0].user;
    const std::string rk(r->kind().qualString());
    const ir::TensorInfo* ri = r->outputs().size() == 1 ? StaticFloat(r->output()) : nullptr;
    if ((rk == "aten::reshape" || rk == "aten::view") && r->input(0) == v && ri != nullptr &&
        ri->ConcreteSizes() != sizes && Elements(sizes) >= 0 &&
        Elements(ri->ConcreteSizes()) == Elements(sizes)) {
      Chain trial = c;
      trial.reshape = r;
      trial.consumed.push_back(r);
      trial.result = r->output();
      if (Extend(trial)) {
        c = std::move(trial);
        return true;
      }
    }
  }
  std::vector<Node*> nodes;
  if (Node* last = MatchGeluTanh(v, &nodes)) {
    if (!same_type(last->output())) return false;
    c.post.push_back(Op(PostOpKind::kGeluTanh));
    c.consumed.insert(c.consumed.end(), nodes.begin(), nodes.end());
    c.result = last->output();
    return true;
  }
  PostOpKind two_use_kind;
  if (Node* last = MatchTwoUsePattern(v, &two_use_kind, &nodes)) {
    if (!same_type(last->output())) return false;
    c.post.push_back(Op(two_use_kind));
    c.consumed.insert(c.consumed.end(), nodes.begin(), nodes.end());
    c.result = last->output();
    return true;
  }
  if (v->uses().size() != 1) return false;
  Node* u = v->uses()[0].user;
  if (u->outputs().size() != 1 || !same_type(u->output())) {
    // batch_norm has one output; native forms with several are not folded.
    return false;
  }
  const std::string k(u->kind().qualString());
  const size_t in = u->inputs().size();
  auto accept = [&](std::optional<PostOp> p) {
    if (p && p->kind == PostOpKind::kLinear && !c.post.empty() && c.post.back().kind == PostOpKind::kLinear) {
      // a2 * (a1 * y + b1) + b2 as one step.
      std::vector<double>& prev = c.post.back().scalars;
      prev = {p->scalars[0] * prev[0], p->scalars[0] * prev[1] + p->scalars[1]};
    } else if (p) {
      c.post.push_back(*std::move(p));
    }
    c.consumed.push_back(u);
    c.result = u->output();
    return true;
  };
  // Unary steps: the running value is the first input.
  if (u->input(0) == v) {
    struct Simple { const char* name; PostOpKind kind; };
    static constexpr Simple kSimple[] = {
        {"aten::relu", PostOpKind::kRelu},           {"aten::sigmoid", PostOpKind::kSigmoid},
        {"aten::tanh", PostOpKind::kTanh},           {"aten::hardswish", PostOpKind::kHardswish},
        {"aten::hardsigmoid", PostOpKind::kHardsigmoid}, {"aten::silu", PostOpKind::kSilu},
    };
    for (const Simple& s : kSimple) {
      if (k == s.name && in == 1) return accept(Op(s.kind));
    }
    if (k == "aten::gelu") {
      std::string mode = "none";
      if (in > 1) {
        std::optional<IValue> m = ir::ConstantValue(u->input(1));
        if (!m || !m->isString()) return false;
        mode = m->toString();
      }
      if (mode == "none") return accept(Op(PostOpKind::kGelu));
      if (mode == "tanh") return accept(Op(PostOpKind::kGeluTanh));
      return false;
    }
    if (k == "aten::leaky_relu") {
      std::optional<double> slope = in > 1 ? Number(u->input(1)) : 0.01;
      return slope && accept(Op(PostOpKind::kLeakyRelu, {*slope}));
    }
    if (k == "aten::elu") {
      std::optional<double> alpha = in > 1 ? Number(u->input(1)) : 1.0;
      std::optional<double> scale = in > 2 ? Number(u->input(2)) : 1.0;
      std::optional<double> input_scale = in > 3 ? Number(u->input(3)) : 1.0;
      if (!alpha || scale != std::optional<double>(1.0) || input_scale != std::optional<double>(1.0)) return false;
      return accept(Op(PostOpKind::kElu, {*alpha}));
    }
    if (k == "aten::relu6" && in == 1) return accept(Op(PostOpKind::kClamp, {0.0, 6.0}));
    if (k == "aten::hardtanh") {
      std::optional<double> lo = in > 1 ? Number(u->input(1)) : -1.0;
      std::optional<double> hi = in > 2 ? Number(u->input(2)) : 1.0;
      return lo && hi && accept(Op(PostOpKind::kClamp, {*lo, *hi}));
    }
    if (k == "aten::clamp" && in == 3) {
      const bool no_min = IsNone(u->input(1)), no_max = IsNone(u->input(2));
      std::optional<double> lo = Number(u->input(1)), hi = Number(u->input(2));
      if (!no_min && !lo) return false;
      if (!no_max && !hi) return false;
      if (no_min && no_max) return false;
      if (no_min) return accept(Op(PostOpKind::kClampMax, {*hi}));
      if (no_max) return accept(Op(PostOpKind::kClampMin, {*lo}));
      return accept(Op(PostOpKind::kClamp, {*lo, *hi}));
    }
    if ((k == "aten::clamp_min" || k == "aten::clamp_max") && in == 2) {
      std::optional<double> bound = Number(u->input(1));
      if (!bound) return false;
      return accept(Op(k == "aten::clamp_min" ? PostOpKind::kClampMin : PostOpKind::kClampMax, {*bound}));
    }
    if (k == "aten::batch_norm") return c.reshape == nullptr && FoldBatchNorm(c, u, sizes) && accept(std::nullopt);
  }
  // Binary steps: add / sub / mul / div.
  if ((k != "aten::add" && k != "aten::sub" && k != "aten::mul" && k != "aten::div") || in < 2 || in > 3) {
    return false;
  }
  const bool v_first = u->input(0) == v;
  Value* other = v_first ? u->input(1) : u->input(0);
  if (other == v) return false;
  std::optional<double> alpha = in == 3 ? Number(u->input(2)) : 1.0;
  if (!alpha) return false;
  if (std::optional<double> num = Number(other)) {
    const double cst = *num;
    if (k == "aten::add") return accept(Op(PostOpKind::kLinear, v_first ? std::vector<double>{1.0, *alpha * cst}
                                                                        : std::vector<double>{*alpha, cst}));
    if (k == "aten::sub") return accept(Op(PostOpKind::kLinear, v_first ? std::vector<double>{1.0, -*alpha * cst}
                                                                        : std::vector<double>{-*alpha, cst}));
    if (k == "aten::mul") return accept(Op(PostOpKind::kLinear, {cst, 0.0}));
    if (k == "aten::div" && v_first && cst != 0.0) return accept(Op(PostOpKind::kLinear, {1.0 / cst, 0.0}));
    return false;
  }
  if (k != "aten::add" && k != "aten::mul") return false;
  // A tensor operand broadcasts against the reshaped value, not the GEMM's.
  if (c.reshape != nullptr) return false;
  if (*alpha != 1.0 || !other->type() || !other->type()->is_tensor()) return false;
  const ir::TensorInfo& oi = other->type()->tensor();
  if (!oi.dtype || *oi.dtype != *vi->dtype || !BroadcastsTo(oi, sizes)) return false;
  if (std::optional<Tensor> t = FloatConstant(other)) {
    if (FoldChannelConstant(c, k == "aten::mul", *t, sizes)) return accept(std::nullopt);
  }
  c.operands.push_back(other);
  PostOp p = Op(k == "aten::add" ? PostOpKind::kAdd : PostOpKind::kMul);
  p.operand = static_cast<int>(c.operands.size() - 1);
  return accept(std::move(p));
}

absl::StatusOr<Value*> ConstantOrValue(ir::Graph& g, const std::optional<Tensor>& t, Value* v) {
  if (t) return ir::InsertConstant(g, IValue::FromTensor(*t));
  if (v != nullptr) return v;
  return ir::InsertConstant(g, IValue::None());
}

absl::Status Rewrite(ir::Graph& g, Chain& c) {
  Node* last = c.consumed.empty() ? c.anchor : c.consumed.back();
  ir::WithInsertPoint guard(last);
  std::vector<Value*> inputs;
  inputs.push_back(c.x);
  ASSIGN_OR_RETURN(Value * w, ConstantOrValue(g, c.w_tensor, c.w));
  ASSIGN_OR_RETURN(Value * b, ConstantOrValue(g, c.b_tensor, c.b));
  inputs.push_back(w);
  inputs.push_back(b);
  if (c.kind == AnchorKind::kConv) {
    ASSIGN_OR_RETURN(Value * stride, ir::InsertConstant(g, IValue::IntList(c.stride)));
    ASSIGN_OR_RETURN(Value * pads, ir::InsertConstant(g, IValue::IntList(c.pads)));
    ASSIGN_OR_RETURN(Value * dilation, ir::InsertConstant(g, IValue::IntList(c.dilation)));
    ASSIGN_OR_RETURN(Value * groups, ir::InsertConstant(g, IValue::Int(c.groups)));
    inputs.insert(inputs.end(), {stride, pads, dilation, groups});
  }
  std::vector<std::string> names;
  std::vector<double> scalars;
  for (const PostOp& p : c.post) ir::AppendPostOp(p, &names, &scalars);
  std::vector<IValue> name_values, scalar_values;
  for (const std::string& n : names) name_values.push_back(IValue::String(n));
  for (double s : scalars) scalar_values.push_back(IValue::Double(s));
  ASSIGN_OR_RETURN(Value * names_v, ir::InsertConstant(g, IValue::List(std::move(name_values)),
                                                       Type::List(Type::Str())));
  ASSIGN_OR_RETURN(Value * scalars_v, ir::InsertConstant(g, IValue::List(std::move(scalar_values)),
                                                         Type::List(Type::Float())));
  Node* list = g.create(ir::sym::kListConstruct, c.operands, 1);
  list->output()->setType(Type::List(Type::Tensor()));
  g.insertNode(list);
  inputs.insert(inputs.end(), {names_v, scalars_v, list->output()});
  const char* kind = c.kind == AnchorKind::kConv ? "kiln::conv_post_ops" : "kiln::linear_post_ops";
  Node* fused = g.create(ir::Symbol::FromQualString(kind), inputs, 1);
  g.insertNode(fused);
  Value* out = fused->output();
  if (c.reshape != nullptr) {
    // The fused op has the GEMM's shape; the reshape follows it.
    fused->output()->setType(c.anchor->output()->type());
    ASSIGN_OR_RETURN(Value * sizes,
                     ir::InsertConstant(g, IValue::IntList(c.result->type()->tensor().ConcreteSizes())));
    Node* reshape = g.create(ir::Symbol::FromQualString("aten::reshape"), {fused->output(), sizes}, 1);
    g.insertNode(reshape);
    out = reshape->output();
  }
  out->setType(c.result->type());
  const std::string name = c.result->hasDebugName() ? c.result->debugName() : "";
  c.result->replaceAllUsesWith(out);
  // The steps (last first), then the anchor; their constants if now unused.
  std::vector<Node*> doomed(c.consumed.rbegin(), c.consumed.rend());
  doomed.push_back(c.anchor);
  DestroyWithUnusedConstants(doomed);
  // The fused value takes the chain's last name (its value is gone).
  if (!name.empty()) out->setDebugName(name);
  return absl::OkStatus();
}

bool IsAnchorKind(absl::string_view k) {
  return k == "aten::convolution" || k == "aten::conv1d" || k == "aten::conv2d" || k == "aten::conv3d" ||
         k == "kiln::conv_nd" || k == "kiln::conv_post_ops" || k == "aten::linear" || k == "aten::addmm" ||
         k == "aten::matmul" || k == "aten::mm" || k == "kiln::linear_post_ops";
}

// FusePostOpsOptions::bias_only_convs: a convolution with a bias and no
// step, whose result only convolutions or the adds / muls that become their
// residual / gate operands read.
bool BiasOnly(const Chain& c, const FusePostOpsOptions& options) {
  if (!options.bias_only_convs || c.kind != AnchorKind::kConv || (c.b == nullptr && !c.b_tensor)) return false;
  const std::string k(c.anchor->kind().qualString());
  if (k == "kiln::conv_post_ops") return false;
  for (const ir::Use& u : c.anchor->output()->uses()) {
    const std::string uk(u.user->kind().qualString());
    bool conv_reader = uk.find("conv") != std::string::npos && IsAnchorKind(uk);
    if (u.user->kind() == ir::sym::kListConstruct) {
      // A fused op's operand list.
      conv_reader = !u.user->output()->uses().empty();
      for (const ir::Use& lu : u.user->output()->uses()) {
        conv_reader = conv_reader && lu.user->kind().qualString() == std::string("kiln::conv_post_ops");
      }
    }
    if (!conv_reader && uk != "aten::add" && uk != "aten::mul") return false;
  }
  return !c.anchor->output()->uses().empty();
}

absl::StatusOr<bool> FuseBlock(ir::Graph& g, ir::Block* block, const FusePostOpsOptions& options,
                               PassStatistics& stats) {
  std::vector<Node*> anchors;
  for (Node* n : block->nodes()) {
    for (ir::Block* sub : n->blocks()) {
      ASSIGN_OR_RETURN(bool changed, FuseBlock(g, sub, options, stats));
      (void)changed;
    }
    if (n->outputs().size() == 1 && IsAnchorKind(n->kind().qualString())) anchors.push_back(n);
  }
  bool changed = false;
  for (Node* n : anchors) {
    if (!StaticAccepted(n->output(), options)) continue;
    Chain c;
    c.options = &options;
    c.anchor = n;
    c.result = n->output();
    const std::string k(n->kind().qualString());
    const bool conv = k.find("conv") != std::string::npos;
    if (!conv && !options.gemms) continue;
    // GEMMs stay float32-only: their weight transposes and reshapes are float32 code.
    if (!conv && *n->output()->type()->tensor().dtype != DType::kFloat32) continue;
    if (conv ? !ReadConv(n, &c) : !ReadLinear(n, &c)) continue;
    if (k == "kiln::conv_post_ops" && !ReadExistingPostOps(n, 7, &c)) continue;
    if (k == "kiln::linear_post_ops" && !ReadExistingPostOps(n, 3, &c)) continue;
    const size_t before = c.post.size();
    while (Extend(c)) {
    }
    if (c.consumed.empty() && !BiasOnly(c, options)) continue;
    stats.Add("ops_fused");
    stats.Add("post_ops_fused", static_cast<int64_t>(c.post.size() - before));
    if (c.folded) stats.Add("constants_folded");
    RETURN_IF_ERROR(Rewrite(g, c));
    changed = true;
  }
  return changed;
}

}  // namespace

absl::StatusOr<bool> FusePostOps(ir::Graph& graph, PassStatistics& stats, const FusePostOpsOptions& options) {
  return FuseBlock(graph, graph.block(), options, stats);
}

absl::Status RegisterFusePostOpsPass(PassRegistry& registry) {
  absl::Status s = registry.RegisterFunction(
      "fuse_post_ops", {},
      "Fuses the elementwise tail of a convolution or GEMM (bias, batch norm, activations, residual "
      "adds) into kiln::conv_post_ops / kiln::linear_post_ops for a device's library",
      [](ir::Graph& g, PassStatistics& stats) { return FusePostOps(g, stats); });
  RETURN_IF_ERROR(s);
  FusePostOpsOptions conv_only;
  conv_only.gemms = false;
  conv_only.narrow_floats = true;
  conv_only.bias_only_convs = true;
  return registry.RegisterFunction(
      "fuse_conv_post_ops", {},
      "fuse_post_ops for convolutions only, float32/float16/bfloat16 (a device whose convolution library "
      "runs the epilogue and whose GEMMs stay plain ops)",
      [conv_only](ir::Graph& g, PassStatistics& stats) { return FusePostOps(g, stats, conv_only); });
}

}  // namespace kiln::passes
