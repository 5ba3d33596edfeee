// Wrapper lines -> Inductor-style Python output code (PythonWrapperCodegen's
// shape): imports and header aliases, kernel definitions, `def call(args):`
// with allocations (`empty_strided_cpu`), views (`reinterpret_tensor`),
// reuses, `del`, kernel and extern calls (`extern_kernels.mm`,
// `aten.foo.default`), `return (...)`, and a benchmark harness. Meant for
// people to read, and to run under PyTorch where it exists.
#ifndef KILN_WRAPPER_PYTHON_PRINTER_H_
#define KILN_WRAPPER_PYTHON_PRINTER_H_

#include <string>

#include "absl/status/statusor.h"
#include "wrapper/debug_printer.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {

struct PythonPrinterOptions {
  std::string module_name = "kiln_module";
  bool size_asserts = true;       // assert_size_stride on every input
  bool benchmark_harness = true;  // benchmark_compiled_module + __main__
  // Constants with at most this many elements are printed as values;
  // larger ones become uninitialized placeholders (with a comment).
  int64_t max_inline_constant_elements = 256;
  DebugPrinterConfig debug;       // level OFF: no debug calls
};

// Validates `program` first (wrapper/validate.h). Names reach the output
// only as identifiers; strings and comments are escaped.
absl::StatusOr<std::string> PrintPythonWrapper(const WrapperProgram& program,
                                               const PythonPrinterOptions& options = {});

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_PYTHON_PRINTER_H_
