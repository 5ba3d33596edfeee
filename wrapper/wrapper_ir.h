// Wrapper IR (Inductor's wrapper.py line classes, in C++): the structured list
// of lines a compiled graph runs, and the only interface between kiln's core
// and its backends. Every line holds structured fields; the only code a line
// carries is a generated kernel's body (KernelDefinitionLine), which the
// device backend produced.
//
//   KernelDefinitionLine cpp_fused_add_tanh_0      (body from backends/cpu)
//   AllocateLine buf0 Float[1024]
//   KernelCallLine cpp_fused_add_tanh_0(arg0, buf0)
//   ExternKernelAllocLine buf1 = aten::mm(buf0, const0)
//   FreeIfNotReusedLine buf0
//   ...
// Memory planning (memory_planning.h) rewrites Allocate/FreeIfNotReused pairs
// into ReuseLines (and NullLines) over the same list.
#ifndef KILN_WRAPPER_WRAPPER_IR_H_
#define KILN_WRAPPER_WRAPPER_IR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "lowering/loop_ir.h"

namespace kiln::wrapper {

using lowering::Layout;

struct AllocateLine { std::string buffer; Layout layout; };
// Frees `buffer` unless memory planning handed its storage to a later buffer.
struct FreeIfNotReusedLine { std::string buffer; bool is_reused = false; };
// `new_buffer` takes `old_buffer`'s storage (same device, dtype, size).
struct ReuseLine { std::string old_buffer; std::string new_buffer; Layout layout; bool delete_old = true; };
// Frees a buffer that may never be reused (a graph input the graph owns).
struct FreeLine { std::string buffer; };
// `buffer` is a view of `base` with `layout` (no allocation).
struct ReinterpretLine { std::string buffer; std::string base; Layout layout; };
struct KernelDefinitionLine { std::string kernel_name; std::string device; std::string kernel_body; };
struct KernelCallLine {
  std::string kernel_name;
  std::string device;
  std::vector<std::string> args;  // buffer names, in the kernel's parameter order
};
// An extern kernel writing into already-allocated outputs (`out=`).
struct ExternKernelLine {
  std::string op;
  std::vector<lowering::ExternArg> args;
  std::vector<std::string> outputs;
  int island = -1;  // as in ExternKernelAllocLine (GenerateWrapper never emits it)
};
// An extern kernel that allocates its own outputs (buffer = op(args)).
// `island` >= 0: op is lowering::kIslandOp and the call runs
// WrapperProgram::islands[island] in the interpreter (args: its inputs,
// outputs: its outputs).
struct ExternKernelAllocLine {
  std::string op;
  std::vector<lowering::ExternArg> args;
  std::vector<std::string> outputs;
  std::vector<Layout> layouts;
  int island = -1;
};
// result = source[indices...] (a multi-output extern's element).
struct MultiOutputLine { std::string result; std::string source; std::vector<int64_t> indices; };
struct CommentLine { std::string text; };
struct EnterDeviceContextManagerLine { std::string device; int device_index = 0; };
struct ExitDeviceContextManagerLine {};
// Left where planning removed a line (keeps indices stable).
struct NullLine {};

using Line = std::variant<AllocateLine, FreeIfNotReusedLine, ReuseLine, FreeLine, ReinterpretLine,
                          KernelDefinitionLine, KernelCallLine, ExternKernelLine,
                          ExternKernelAllocLine, MultiOutputLine, CommentLine,
                          EnterDeviceContextManagerLine, ExitDeviceContextManagerLine, NullLine>;

const char* LineKindName(const Line& line);  // "AllocateLine", ...
std::string LineToString(const Line& line);  // one line, for dumps and tests

// A compiled graph as wrapper lines.
struct WrapperProgram {
  std::vector<std::string> inputs;   // graph input buffer names, in order
  std::vector<std::string> outputs;  // graph output buffer names, in order
  // Layouts of every buffer the lines name (inputs, constants, computed,
  // views, extern outputs).
  std::vector<std::pair<std::string, Layout>> layouts;
  std::vector<std::pair<std::string, Tensor>> constants;
  std::vector<Line> lines;
  // Interpreter islands (lowering::ExternCall::island), referenced by index
  // from extern lines. The proto dump carries them as kiln IR protos.
  std::vector<std::shared_ptr<const ir::Graph>> islands;
  // The whole graph runs in the interpreter (lowering::LoopGraph::
  // interpreted_graph); the lines are then empty.
  std::shared_ptr<const ir::Graph> interpreted_graph;
  // An identity of the constants' bytes (equal identities, equal bytes),
  // where one is known without hashing them: the driver's program cache key.
  // A device may key what it derives from the constants with it (the CPU's
  // packed weights, backends/cpu/packed_cache.h). Empty: none. Not
  // serialized.
  std::string constants_identity;

  std::string ToString() const;  // one line per Line
};

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_WRAPPER_IR_H_
