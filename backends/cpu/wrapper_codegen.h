// The C++ wrapper: Wrapper IR lines -> the `kiln_run` entry of the one
// translation unit per program (kernels first, then the wrapper). Extern
// kernels are not code: the wrapper calls back into the host with an index
// into `externs`, so op names and constant arguments from a model never
// reach generated source.
#ifndef KILN_BACKENDS_CPU_WRAPPER_CODEGEN_H_
#define KILN_BACKENDS_CPU_WRAPPER_CODEGEN_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "lowering/loop_ir.h"
#include "support/tensor.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::backends::cpu {

// One extern call as the host runs it: `buffers` are the pointers the
// wrapper passes (buffer arguments in argument order, then outputs).
struct ExternCallSpec {
  std::string op;
  std::vector<std::string> outputs;  // the output buffers' names
  std::vector<lowering::ExternArg> args;
  std::vector<lowering::Layout> buffer_arg_layouts;  // one per buffer argument
  std::vector<lowering::Layout> output_layouts;
  // Set for an interpreter island (WrapperProgram::islands): the host runs
  // it with wrapper::RunHostIsland instead of RunExternKernel.
  std::shared_ptr<const ir::Graph> island;
  // Per buffer argument: the index in GeneratedProgram::constants of the
  // program constant it reads (directly or through a view), else -1.
  std::vector<int> buffer_arg_constants;
  // The values (GeneratedProgram::value_needs_plain) of the buffer
  // arguments and the outputs: names that share content (views, multi-output
  // aliases) are one value; storage reused by a later buffer is another.
  std::vector<int> buffer_arg_values;
  std::vector<int> output_values;
};

// A step of kiln_run that `kiln run --profile` times: a generated kernel
// (extern_index -1) or an extern call.
struct ProgramStep {
  std::string name;  // the kernel's name, or the extern's op
  int extern_index = -1;
};

struct GeneratedProgram {
  std::string source;  // the whole program as one translation unit (to read)
  // What is compiled: the same program as translation units that compile
  // in parallel and link into one library: kernel shards, then the wrapper
  // (the last unit, which only calls kernels: CompilerConfig::glue_flags).
  // Just `source` when the kernels are small.
  std::vector<std::string> units;
  std::vector<ExternCallSpec> externs;
  // Output buffers of the extern lines emitted as generated code instead
  // (kiln::attention's kernel): not in `externs`.
  std::vector<std::string> generated_extern_outputs;
  std::vector<lowering::Layout> input_layouts;
  std::vector<Tensor> constants;  // in the `constants` array order
  std::string constants_identity;  // WrapperProgram::constants_identity
  std::vector<lowering::Layout> constant_layouts;
  std::vector<lowering::Layout> output_layouts;
  // By value id: whether something other than an extern call reads or
  // writes the value (a generated kernel, a view, the caller as an input,
  // output or constant), so its buffer must hold it in the planned layout.
  // Values only extern calls touch may be kept in a library's own layout
  // (library_calls.h).
  std::vector<bool> value_needs_plain;
  // kiln_run's kernel and extern calls in order (KILN_STEP marks).
  std::vector<ProgramStep> steps;
};

absl::StatusOr<GeneratedProgram> GenerateProgramSource(const wrapper::WrapperProgram& program);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_WRAPPER_CODEGEN_H_
