#include "backends/cuda/conv_fusion_policy.h"

#include <optional>
#include <string>

#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "ir/constants.h"
#include "ir/ir.h"
#include "ir/op_registry.h"

namespace kiln::backends::cuda {
namespace {

// Convolutions kiln runs through cuDNN.
bool IsCudnnConvolution(const std::string& kind) {
  return kind == "aten::convolution" || kind == "aten::_convolution" || kind == "aten::conv1d" ||
         kind == "aten::conv2d" || kind == "aten::conv3d" || kind == "kiln::conv_nd";
}

// The node's constant groups, read where its schema has the argument
// (absent: the schema's default, else 1); nullopt when it is not a
// constant or the node matches no registered schema.
std::optional<int64_t> Groups(const ir::Node& n) {
  const ir::Operator* op = ir::BuiltinOps().Match(n);
  if (op == nullptr) return std::nullopt;
  const int at = op->schema.ArgumentIndex("groups");
  if (at < 0) return 1;
  if (static_cast<size_t>(at) >= n.inputs().size()) {
    const std::optional<ir::IValue>& d = op->schema.arguments[static_cast<size_t>(at)].default_value;
    if (!d) return 1;
    return d->isInt() ? std::optional<int64_t>(d->toInt()) : std::nullopt;
  }
  const std::optional<ir::IValue> groups = ir::ConstantValue(n.input(static_cast<size_t>(at)));
  if (!groups || !groups->isInt()) return std::nullopt;
  return groups->toInt();
}

// A 2-D convolution of one group over at least kChannelsLastMinBatch
// images, float32 or (through the graph API) 16-bit.
bool MeasuredFasterChannelsLast(const ir::Node& n) {
  if (n.inputs().empty()) return false;
  const ir::TypePtr& t = n.input(0)->type();
  if (!t || !t->is_tensor()) return false;
  const ir::TensorInfo& x = t->tensor();
  const bool narrow = x.dtype == DType::kBFloat16 || x.dtype == DType::kFloat16;
  if (!(x.dtype == DType::kFloat32 || (narrow && CudnnGraphApiEnabled())) || !x.HasCompleteSizes()) return false;
  const std::vector<int64_t> sizes = x.ConcreteSizes();
  if (sizes.size() != 4 || sizes[0] < kChannelsLastMinBatch) return false;
  return Groups(n) == std::optional<int64_t>(1);
}

}  // namespace

bool FuseConvolutionEpilogues(const ir::Graph& graph) {
  const ChannelsLastMode mode = ChannelsLastSetting();
  if (mode == ChannelsLastMode::kOff) return false;
  bool any = false;
  for (const ir::Node* n : graph.nodes()) {
    if (!IsCudnnConvolution(std::string(n->kind().qualString()))) continue;
    any = true;
    if (mode == ChannelsLastMode::kWhereFaster && !MeasuredFasterChannelsLast(*n)) return false;
  }
  return any;
}

}  // namespace kiln::backends::cuda
