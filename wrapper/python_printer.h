// Wrapper lines -> Inductor-style Python output code (PythonWrapperCodegen's
// shape): imports and header aliases, kernel definitions, `def call(args):`
// with allocations (`empty_strided_cpu`), views (`reinterpret_tensor`),
// reuses, `del`, kernel and extern calls (`extern_kernels.mm`,
// `aten.foo.default`), `return (...)`, and a benchmark harness. Meant for
// people to read, and to run under PyTorch 2.x where it exists: with
// `constants_dir` set, large constants load from files next to the wrapper
// (PythonWrapperConstantFiles lists them), kernels compile through the
// device's DeviceOpOverrides::KernelDefinition (the CPU's binds them for
// Inductor's cpp_pybinding), and extern calls are torch calls that exist in
// torch 2.x; kiln-only ops and interpreter islands raise NotImplementedError
// when call() reaches them.
#ifndef KILN_WRAPPER_PYTHON_PRINTER_H_
#define KILN_WRAPPER_PYTHON_PRINTER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wrapper/debug_printer.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {

struct PythonPrinterOptions {
  std::string module_name = "kiln_module";
  bool size_asserts = true;       // assert_size_stride on every input
  bool benchmark_harness = true;  // benchmark_compiled_module + __main__
  // Constants with at most this many elements are printed as values;
  // larger ones load from `constants_dir` (below) or, when it is empty,
  // become uninitialized placeholders (with a comment).
  int64_t max_inline_constant_elements = 256;
  // A folder name relative to the wrapper's own directory ("constants"):
  // letters, digits, '_', '-' and '.', not "." or "..". Each large constant
  // is read from <constants_dir>/<file> with torch.from_file when the
  // module is imported; PythonWrapperConstantFiles gives the files.
  std::string constants_dir;
  DebugPrinterConfig debug;       // level OFF: no debug calls
};

// Validates `program` first (wrapper/validate.h). Names reach the output
// only as identifiers; strings and comments are escaped.
absl::StatusOr<std::string> PrintPythonWrapper(const WrapperProgram& program,
                                               const PythonPrinterOptions& options = {});

// One constant the printed wrapper loads from a file.
struct PythonConstantFile {
  std::string constant;   // the buffer name
  std::string file_name;  // within constants_dir: "<index>_<name>.bin", [A-Za-z0-9_.] only
  std::string contents;   // the elements in row-major order, raw little-endian
};
// The files the wrapper that PrintPythonWrapper(program, options) prints
// reads, in program order (empty when options.constants_dir is empty).
// The caller writes them to <wrapper dir>/<constants_dir>/<file_name>.
absl::StatusOr<std::vector<PythonConstantFile>> PythonWrapperConstantFiles(
    const WrapperProgram& program, const PythonPrinterOptions& options);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_PYTHON_PRINTER_H_
