#include "backends/cuda/channels_last_plan.h"

#include <string>


#include "backends/cuda/cuda_conv.h"
#include "backends/cuda/cuda_env.h"
#include "backends/cuda/cuda_pool.h"
#include "backends/cuda/cuda_program.h"

namespace kiln::backends::cuda {
namespace {

using lowering::Layout;

bool FloatType(DType t) { return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kBFloat16; }

// The argument index each of `e`'s buffer slots comes from (the resolver's order).
std::vector<size_t> BufferArgIndex(const ExternStep& e) {
  std::vector<size_t> out;
  for (size_t i = 0; i < e.args.size(); ++i) {
    const lowering::ExternArg& a = e.args[i];
    const size_t n = !a.buffer.empty() ? 1 : a.buffer_list.size();
    out.insert(out.end(), n, i);
  }
  return out;
}

// A planned NCHW layout the plan may restride: 4-D, float, dense from offset 0.
bool Restridable(const Layout& l) {
  return l.sizes.size() == 4 && FloatType(l.dtype) && l.offset == 0 && l.IsContiguous();
}

// A 2-D convolution cuDNN may run channels-last: a constant 4-D weight of
// x's dtype, not transposed. (Whether cuDNN takes it is known only at run
// time; a refusal runs the plain path over the same strided buffers.)
bool ChannelsLastConv(const ResolvedProgram& p, const ExternStep& e, const std::vector<int>& constant_of) {
  if (e.island || !IsConvOp(e.op) || e.output_slots.size() != 1 || e.buffer_slots.size() < 2) return false;
  const std::vector<size_t> arg = BufferArgIndex(e);
  if (arg.size() != e.buffer_slots.size() || arg[0] != 0 || arg[1] != 1) return false;
  if (e.op.rfind("aten::convolution", 0) == 0 || e.op.rfind("aten::_convolution", 0) == 0) {
    if (e.args.size() < 9 || !e.args[6].constant || !e.args[6].constant->isBool() || e.args[6].constant->toBool()) {
      return false;
    }
  }
  const int w = e.buffer_slots[1];
  if (constant_of[static_cast<size_t>(w)] < 0) return false;
  const Layout& wl = p.slot_layouts[static_cast<size_t>(w)];
  const Layout& xl = p.slot_layouts[static_cast<size_t>(e.buffer_slots[0])];
  const Layout& yl = p.slot_layouts[static_cast<size_t>(e.output_slots[0])];
  return Restridable(wl) && xl.sizes.size() == 4 && yl.sizes.size() == 4 && xl.dtype == wl.dtype &&
         yl.dtype == wl.dtype;
}

// kWhereFaster plans the programs whose convolutions the device fused
// (conv_fusion_policy.h chose them before lowering: where channels-last
// measured faster); the others keep their generated epilogues, NCHW.
bool HasFusedConvolutions(const ResolvedProgram& p) {
  for (const ExternStep& e : p.externs) {
    if (!e.island && e.op == "kiln::conv_post_ops") return true;
  }
  return false;
}

}  // namespace

ChannelsLastMode ChannelsLastSetting() {
  switch (env::ChannelsLast()) {
    case env::Force::kOff: return ChannelsLastMode::kOff;
    case env::Force::kOn: return ChannelsLastMode::kAlways;
    case env::Force::kDefault: break;
  }
  return ChannelsLastMode::kWhereFaster;
}

bool IsChannelsLastLayout(const Layout& l) {
  const auto& s = l.sizes;
  if (s.size() != 4 || l.strides.size() != 4) return false;
  const int64_t expect[4] = {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  for (int d = 0; d < 4; ++d) {
    if (s[d] != 1 && l.strides[d] != expect[d]) return false;
  }
  return true;
}

Layout ChannelsLastLayout(const Layout& l) {
  Layout out = l;
  const auto& s = l.sizes;
  out.strides = {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
  return out;
}

ChannelsLastPlan PlanChannelsLast(ResolvedProgram& p, ChannelsLastMode mode) {
  ChannelsLastPlan plan;
  if (mode == ChannelsLastMode::kOff) return plan;
  if (mode == ChannelsLastMode::kWhereFaster && !HasFusedConvolutions(p)) {
    plan.skipped = "convolutions measured faster NCHW with generated epilogues (conv_fusion_policy.h)";
    return plan;
  }
  const size_t slots = p.slot_layouts.size();
  std::vector<int> constant_of(slots, -1);
  for (size_t i = 0; i < p.constants.size(); ++i) constant_of[static_cast<size_t>(p.constants[i].first)] = static_cast<int>(i);
  std::vector<bool> conv(p.externs.size(), false);
  for (size_t i = 0; i < p.externs.size(); ++i) conv[i] = ChannelsLastConv(p, p.externs[i], constant_of);

  // A slot may go NHWC when a channels-last convolution writes it, nothing
  // else writes or aliases it, and every reader takes any strides.
  std::vector<bool> written(slots, false), plain(slots, false);
  for (int s : p.input_slots) plain[static_cast<size_t>(s)] = true;
  for (int s : p.output_slots) plain[static_cast<size_t>(s)] = true;
  for (size_t s = 0; s < slots; ++s) {
    if (constant_of[s] >= 0 || !Restridable(p.slot_layouts[s])) plain[s] = true;
  }
  for (const ProgramStep& step : p.steps) {
    if (step.kind == ProgramStep::Kind::kLaunch) {
      // Generated kernels index NCHW (their layouts are baked into the source).
      for (int a : step.args) plain[static_cast<size_t>(a)] = true;
    } else if (step.kind == ProgramStep::Kind::kAlias && step.view) {
      plain[static_cast<size_t>(step.src)] = true;
      plain[static_cast<size_t>(step.dst)] = true;
    }
  }
  for (size_t i = 0; i < p.externs.size(); ++i) {
    const ExternStep& e = p.externs[i];
    const std::vector<size_t> arg = BufferArgIndex(e);
    const bool pool = !e.island && IsPoolOp(e.op);
    for (size_t k = 0; k < e.buffer_slots.size(); ++k) {
      // Readers that take any strides: a convolution's input and its
      // epilogue's operands (arg 9 of kiln::conv_post_ops), pooling's input.
      const size_t a = k < arg.size() ? arg[k] : 0;
      const bool strided_reader =
          (conv[i] && (a == 0 || (e.op == "kiln::conv_post_ops" && a == 9))) || (pool && a == 0 && k == 0);
      if (!strided_reader) plain[static_cast<size_t>(e.buffer_slots[k])] = true;
    }
    for (int o : e.output_slots) {
      written[static_cast<size_t>(o)] = true;
      // Convolutions and 2-D pooling write NHWC (cuda_pool.h's y_channels_last).
      if (!conv[i] && !pool) plain[static_cast<size_t>(o)] = true;
    }
  }
  std::vector<bool> nhwc(slots, false);
  for (size_t s = 0; s < slots; ++s) {
    if (!written[s] || plain[s]) continue;
    nhwc[s] = true;
    p.slot_layouts[s] = ChannelsLastLayout(p.slot_layouts[s]);
    plan.slots.push_back(static_cast<int>(s));
  }
  // A convolution next to an NHWC value computes channels-last.
  for (size_t i = 0; i < p.externs.size(); ++i) {
    ExternStep& e = p.externs[i];
    if (!conv[i]) continue;
    const bool x_nhwc = nhwc[static_cast<size_t>(e.buffer_slots[0])];
    const bool y_nhwc = nhwc[static_cast<size_t>(e.output_slots[0])];
    if (!x_nhwc && !y_nhwc) continue;
    e.channels_last = true;
    e.weight_constant = constant_of[static_cast<size_t>(e.buffer_slots[1])];
    plan.externs.push_back(static_cast<int>(i));
    // A plain value already in NHWC order ([N, C, 1, 1], one channel) needs no transpose.
    plan.input_transposes += IsChannelsLastLayout(p.slot_layouts[static_cast<size_t>(e.buffer_slots[0])]) ? 0 : 1;
    plan.output_transposes += IsChannelsLastLayout(p.slot_layouts[static_cast<size_t>(e.output_slots[0])]) ? 0 : 1;
  }
  return plan;
}

}  // namespace kiln::backends::cuda
