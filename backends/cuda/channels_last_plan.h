// The CUDA program's layout plan (issue 15): a value that convolutions (or
// 2-D pooling) write and only convolutions (their input, or a fused
// epilogue's residual / gate operand) and pooling read lives channels-last (NHWC strides over
// the same bytes: a buffer's planned size holds it) instead of NCHW, so
// chains of convolutions run cuDNN's NHWC kernels without a transpose per
// call. A convolution that reads or writes such a value computes
// channels-last: its constant weight is permuted to KRSC once at program
// load (CudaProgram::Create), and a plain input or output at the chain's
// boundary (the program input, a generated kernel, a view, a host
// fallback, the caller) is converted by one transpose kernel inside the
// call. Decided on the host from the resolved steps alone (tested without a
// GPU): slot layouts are rewritten, the convolutions marked.
// Which programs get it: conv_fusion_policy.h (where it measured faster);
// KILN_CUDA_CHANNELS_LAST=0 turns the plan off, =1 plans every program.
#ifndef KILN_BACKENDS_CUDA_CHANNELS_LAST_PLAN_H_
#define KILN_BACKENDS_CUDA_CHANNELS_LAST_PLAN_H_

#include <string>
#include <vector>

#include "lowering/loop_ir.h"

namespace kiln::backends::cuda {

struct ResolvedProgram;

// kOff: no plan; kWhereFaster: programs whose convolutions the device fused
// (conv_fusion_policy.h); kAlways: every program (tests, measurements).
enum class ChannelsLastMode { kOff, kWhereFaster, kAlways };

struct ChannelsLastPlan {
  std::vector<int> slots;    // slots whose layouts now have NHWC strides
  std::vector<int> externs;  // convolutions computing channels-last
  // Conversions at the chain's boundaries, per call: a plain input
  // transposed to NHWC, an NHWC result transposed to a plain output.
  int input_transposes = 0;
  int output_transposes = 0;
  // Why kWhereFaster planned nothing ("" when it planned).
  std::string skipped;
};

// KILN_CUDA_CHANNELS_LAST: 0 = kOff, 1 = kAlways, unset = kWhereFaster.
ChannelsLastMode ChannelsLastSetting();

// Plans `program` (rewriting its slot layouts and ExternStep::channels_last).
ChannelsLastPlan PlanChannelsLast(ResolvedProgram& program, ChannelsLastMode mode);

// [N, C, H, W] with NHWC strides {HWC, 1, WC, C} (dims of size 1 ignored).
bool IsChannelsLastLayout(const lowering::Layout& l);
lowering::Layout ChannelsLastLayout(const lowering::Layout& l);

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_CHANNELS_LAST_PLAN_H_
