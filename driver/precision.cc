#include "driver/precision.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "devices/device_registry.h"
#include "ir/constants.h"
#include "passes/pass.h"
#include "passes/shape_propagation.h"
#include "runtime/tensor_ops.h"
#include "support/status.h"

namespace kiln::driver {
namespace {

// torch.autocast's CUDA lists (aten/src/ATen/autocast_mode.cpp), for the
// ops kiln's importers produce; kiln::conv_nd is ONNX's Conv.
const absl::flat_hash_set<std::string>& LowerPrecisionOps() {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "aten::_convolution", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution",
      "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d", "kiln::conv_nd",
      "kiln::conv_transpose_nd", "aten::prelu", "aten::addmm", "aten::addmv", "aten::addr", "aten::matmul",
      "aten::einsum", "aten::mm", "aten::mv", "aten::linear", "aten::addbmm", "aten::baddbmm", "aten::bmm",
      "aten::chain_matmul", "aten::scaled_dot_product_attention"};
  return *ops;
}

const absl::flat_hash_set<std::string>& Float32Ops() {
  static const auto* ops = new absl::flat_hash_set<std::string>{
      "aten::acos", "aten::asin", "aten::cosh", "aten::erfinv", "aten::exp", "aten::expm1", "aten::log",
      "aten::log10", "aten::log2", "aten::log1p", "aten::reciprocal", "aten::rsqrt", "aten::sinh", "aten::tan",
      "aten::pow", "aten::softplus", "aten::layer_norm", "aten::native_layer_norm", "aten::group_norm",
      "aten::frobenius_norm", "aten::nuclear_norm", "aten::cosine_similarity", "aten::dist", "aten::pdist",
      "aten::cdist", "aten::renorm", "aten::logsumexp", "aten::norm", "aten::softmax", "aten::log_softmax",
      "aten::_softmax", "aten::_log_softmax", "aten::sum", "aten::prod", "aten::cumsum", "aten::cumprod",
      "aten::mse_loss", "aten::l1_loss", "aten::smooth_l1_loss", "aten::nll_loss", "aten::kl_div",
      "aten::binary_cross_entropy_with_logits", "aten::upsample_nearest1d", "aten::upsample_nearest2d",
      "aten::upsample_nearest3d", "aten::upsample_linear1d", "aten::upsample_bilinear2d",
      "aten::upsample_trilinear3d", "aten::upsample_bicubic2d"};
  return *ops;
}

std::optional<DType> DTypeOf(const ir::Value* v) {
  const ir::TypePtr& t = v->type();
  if (!t || !t->is_tensor()) return std::nullopt;
  return t->tensor().dtype;
}

bool IsNarrow(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// Ops that only reinterpret their first operand's shape or layout (the
// others are sizes or dims): a cast commutes with them.
bool IsShapeOnlyView(const ir::Node& n) {
  const std::string kind(n.kind().qualString());
  return kind == "aten::reshape" || kind == "aten::view" || kind == "aten::flatten" || kind == "aten::transpose" ||
         kind == "aten::permute" || kind == "aten::t" || kind == "aten::squeeze" || kind == "aten::unsqueeze";
}

class Autocaster {
 public:
  Autocaster(ir::Graph& graph, DType narrow) : graph_(graph), narrow_(narrow) {}

  // One pass over the nodes; the number of operands recast.
  absl::StatusOr<int> Round() {
    int changed = 0;
    std::vector<ir::Node*> nodes;
    for (ir::Node* n : graph_.nodes()) nodes.push_back(n);
    for (ir::Node* n : nodes) {
      const std::string kind(n->kind().qualString());
      const bool lower = LowerPrecisionOps().contains(kind);
      const bool fp32 = !lower && Float32Ops().contains(kind);
      if (!lower && !fp32) continue;
      bool counted = false;
      for (size_t i = 0; i < n->inputs().size(); ++i) {
        ir::Value* in = n->input(i);
        const std::optional<DType> t = DTypeOf(in);
        if (!t) continue;
        const bool recast = lower ? *t == DType::kFloat32 : IsNarrow(*t);
        if (!recast) continue;
        ASSIGN_OR_RETURN(ir::Value* cast, CastOf(in, lower ? narrow_ : DType::kFloat32, n));
        n->replaceInput(i, cast);
        ++changed;
        if (!counted) {
          ++(lower ? stats_.lower_ops : stats_.fp32_ops);
          counted = true;
        }
      }
    }
    return changed;
  }

  // Drops the dtype of every value downstream of a recast operand, so that
  // shape propagation computes it again (sizes are kept).
  void ForgetDownstreamDtypes() {
    std::vector<ir::Value*> work(dirty_.begin(), dirty_.end());
    std::set<ir::Value*> seen(dirty_.begin(), dirty_.end());
    dirty_.clear();
    while (!work.empty()) {
      ir::Value* v = work.back();
      work.pop_back();
      for (const ir::Use& use : v->uses()) {
        ir::Node* user = use.user;
        if (user == graph_.return_node()) continue;
        for (ir::Value* out : user->outputs()) {
          if (!seen.insert(out).second) continue;
          const ir::TypePtr& t = out->type();
          if (t && t->is_tensor() && t->tensor().dtype) {
            ir::TensorInfo info = t->tensor();
            info.dtype.reset();
            info.strides.reset();
            out->setType(ir::Type::TensorWith(std::move(info)));
          }
          work.push_back(out);
        }
      }
    }
  }

  const AutocastStats& stats() const { return stats_; }

 private:
  // `out`'s type: `like`'s sizes in `dtype` (strides left to propagation).
  static void SetTypeAs(ir::Value* out, const ir::Value* like, DType dtype) {
    ir::TensorInfo info;
    if (like->type() && like->type()->is_tensor()) info = like->type()->tensor();
    info.dtype = dtype;
    info.strides.reset();
    out->setType(ir::Type::TensorWith(std::move(info)));
  }

  // `v` as `dtype`: a converted constant for a tensor constant (the weights,
  // converted once), else an aten::to node; placed before `user`, the first
  // node that needs it.
  absl::StatusOr<ir::Value*> CastOf(ir::Value* v, DType dtype, ir::Node* user) {
    auto key = std::make_pair(v, dtype);
    auto it = casts_.find(key);
    if (it != casts_.end()) return it->second;
    ir::Value* out = nullptr;
    std::optional<ir::IValue> c = ir::ConstantValue(v);
    if (c && c->isTensor() && c->toTensor().has_data()) {
      ASSIGN_OR_RETURN(Tensor converted, runtime::CastTo(c->toTensor(), dtype));
      ir::WithInsertPoint guard(user);
      ASSIGN_OR_RETURN(out, ir::InsertConstant(graph_, ir::IValue::FromTensor(std::move(converted))));
      ++stats_.constants_converted;
    } else if (ir::Node* view = v->node(); view != nullptr && IsShapeOnlyView(*view) && view->outputs().size() == 1 &&
                                           !view->inputs().empty()) {
      // A reshape of a float32 value: the reshape of its cast (the same
      // values), so the cast joins the producer's kernel (a layer norm's
      // normalize before the reshape feeding a matmul) and the reshape
      // stays a view.
      ASSIGN_OR_RETURN(ir::Value* inner, CastOf(view->input(0), dtype, user));
      std::vector<ir::Value*> inputs = {inner};
      for (size_t i = 1; i < view->inputs().size(); ++i) inputs.push_back(view->input(i));
      ir::WithInsertPoint guard(user);
      ir::Node* again = graph_.create(view->kind(), inputs);
      graph_.insertNode(again);
      out = again->output();
      SetTypeAs(out, v, dtype);
    } else {
      // Before its first user (nodes are visited in order: later users
      // that share it come after).
      ir::WithInsertPoint guard(user);
      ASSIGN_OR_RETURN(ir::Value* dt, ir::InsertConstant(graph_, ir::IValue::Int(static_cast<int64_t>(dtype))));
      ASSIGN_OR_RETURN(ir::Value* no, ir::InsertConstant(graph_, ir::IValue::Bool(false)));
      ASSIGN_OR_RETURN(ir::Value* none, ir::InsertConstant(graph_, ir::IValue::None()));
      ir::Node* to = graph_.create(ir::Symbol::FromQualString("aten::to"), {v, dt, no, no, none});
      graph_.insertNode(to);
      out = to->output();
      SetTypeAs(out, v, dtype);
      ++stats_.casts_inserted;
    }
    casts_.emplace(key, out);
    dirty_.insert(out);
    return out;
  }

  ir::Graph& graph_;
  DType narrow_;
  std::map<std::pair<ir::Value*, DType>, ir::Value*> casts_;
  std::set<ir::Value*> dirty_;
  AutocastStats stats_;
};

}  // namespace

absl::StatusOr<Precision> ParsePrecision(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "fp32" || n == "float32") return Precision::kFp32;
  if (n == "tf32") return Precision::kTf32;
  if (n == "bf16" || n == "bfloat16") return Precision::kBf16;
  if (n == "fp16" || n == "float16" || n == "half") return Precision::kFp16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", name, "' (expected fp32, tf32, bf16 or fp16)"));
}

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp16: return "fp16";
  }
  return "?";
}

absl::StatusOr<AutocastStats> AutocastGraph(ir::Graph& graph, DType dtype) {
  if (!IsNarrow(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("autocast to ", DTypeName(dtype), ": expected Half or BFloat16"));
  }
  Autocaster a(graph, dtype);
  passes::PassStatistics stats;
  // Each round recasts operands whose dtype the previous round changed; a
  // value settles once its producer's operands did, so rounds are bounded
  // by the depth of alternating narrow/float32 chains (a guard ends it).
  const size_t max_rounds = graph.numNodes() + 2;
  for (size_t round = 0;; ++round) {
    ASSIGN_OR_RETURN(int changed, a.Round());
    if (changed == 0) break;
    if (round == max_rounds) return absl::InternalError("autocast did not settle");
    a.ForgetDownstreamDtypes();
    ASSIGN_OR_RETURN(bool refined, passes::PropagateShapes(graph, stats));
    (void)refined;
  }
  return a.stats();
}

absl::StatusOr<AutocastStats> ApplyPrecision(ir::Graph& graph, Precision precision, const std::string& device) {
  switch (precision) {
    case Precision::kBf16: return AutocastGraph(graph, DType::kBFloat16);
    case Precision::kFp16: return AutocastGraph(graph, DType::kFloat16);
    case Precision::kFp32:
    case Precision::kTf32: {
      // A type-wide setting: `kiln compile --device cuda` needs no GPU present.
      ASSIGN_OR_RETURN(devices::DeviceInterface * d, devices::DeviceRegistry::Global().FindType(device));
      RETURN_IF_ERROR(d->SetFloat32MatmulPrecision(precision == Precision::kTf32 ? "high" : "highest"));
      return AutocastStats();
    }
  }
  return absl::InvalidArgumentError("precision: unknown value");
}

}  // namespace kiln::driver
