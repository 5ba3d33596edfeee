// kiln::attention extern lines (passes/fuse_attention.h, requested by
// CudaCodegen::PreLoweringPipeline) turned into launches of generated
// flash-attention kernels (attention_kernel.h) before the program is
// resolved: each line becomes a KernelDefinitionLine + KernelCallLine
// (args q, kt, v, [mask], out), so the kernel is an ordinary launch step
// (CUDA graph capture, `--profile` rows, the channels-last plan's view of
// generated kernels). A line the kernel does not take stays an extern (it
// then runs on the host) and the note says why.
#ifndef KILN_BACKENDS_CUDA_ATTENTION_LINES_H_
#define KILN_BACKENDS_CUDA_ATTENTION_LINES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/kernel_codegen.h"
#include "ir/ir.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::backends::cuda {

// Whether CudaCodegen requests the fusion for `graph`: KILN_CUDA_ATTENTION=1
// for every graph, =0 for none (cuBLAS GEMMs + a softmax kernel, as
// before); unset, only graphs with a 16-bit matmul
// (an exported bf16/fp16 model or --precision bf16|fp16). Measured on an
// NVIDIA H200 at batch 32, fused / GEMMs + softmax, ms: bfloat16 vit_b_16
// 5.56 / 6.00, bert_base 2.43 / 2.74, gpt2 2.50 / 2.65; float32 30.44 /
// 29.79, 17.78 / 17.56, 17.75 / 17.59 (the float32 kernel's FMA path loses
// to cuBLAS's exact-float32 GEMMs there).
bool FuseAttentionIn(const ir::Graph& graph);

struct AttentionLowering {
  wrapper::WrapperProgram program;
  std::map<std::string, CudaKernelSource> kernels;  // by the definition line's kernel name
  int fused = 0;
  std::vector<std::string> refused;  // "<output>: <reason>" for lines left as externs
};

// The report's line: "attention: N kiln::attention calls as generated
// flash-attention kernels", and those left on the host with the first
// reason; empty without any call.
std::string AttentionSummary(const AttentionLowering& lowering);

absl::StatusOr<AttentionLowering> LowerAttentionExterns(const wrapper::WrapperProgram& program,
                                                       const CudaTarget& target = CudaTarget());

}  // namespace kiln::backends::cuda

#endif  // KILN_BACKENDS_CUDA_ATTENTION_LINES_H_
