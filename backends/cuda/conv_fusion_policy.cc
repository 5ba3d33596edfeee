#include "backends/cuda/conv_fusion_policy.h"

#include <optional>
#include <string>

#include "backends/cuda/channels_last_plan.h"
#include "backends/cuda/cudnn_graph_conv.h"
#include "ir/constants.h"
#include "ir/ir.h"

namespace kiln::backends::cuda {
namespace {

// The input index of a convolution node's groups; -1: not a convolution
// kiln runs through cuDNN (0: no groups argument, so 1).
int GroupsInput(const std::string& kind) {
  if (kind == "aten::convolution" || kind == "aten::_convolution") return 8;
  if (kind == "aten::conv1d" || kind == "aten::conv2d" || kind == "aten::conv3d" || kind == "kiln::conv_nd") return 6;
  return -1;
}

// A 2-D convolution of one group over at least kChannelsLastMinBatch
// images, float32 or (through the graph API) 16-bit.
bool MeasuredFasterChannelsLast(const ir::Node& n, int groups_input) {
  if (n.inputs().empty()) return false;
  const ir::TypePtr& t = n.input(0)->type();
  if (!t || !t->is_tensor()) return false;
  const ir::TensorInfo& x = t->tensor();
  const bool narrow = x.dtype == DType::kBFloat16 || x.dtype == DType::kFloat16;
  if (!(x.dtype == DType::kFloat32 || (narrow && CudnnGraphApiEnabled())) || !x.HasCompleteSizes()) return false;
  const std::vector<int64_t> sizes = x.ConcreteSizes();
  if (sizes.size() != 4 || sizes[0] < kChannelsLastMinBatch) return false;
  if (static_cast<size_t>(groups_input) >= n.inputs().size()) return true;  // default: 1
  const std::optional<ir::IValue> groups = ir::ConstantValue(n.input(static_cast<size_t>(groups_input)));
  return groups && groups->isInt() && groups->toInt() == 1;
}

}  // namespace

bool FuseConvolutionEpilogues(const ir::Graph& graph) {
  const ChannelsLastMode mode = ChannelsLastSetting();
  if (mode == ChannelsLastMode::kOff) return false;
  bool any = false;
  for (const ir::Node* n : graph.nodes()) {
    const int groups_input = GroupsInput(std::string(n->kind().qualString()));
    if (groups_input < 0) continue;
    any = true;
    if (mode == ChannelsLastMode::kWhereFaster && !MeasuredFasterChannelsLast(*n, groups_input)) return false;
  }
  return any;
}

}  // namespace kiln::backends::cuda
