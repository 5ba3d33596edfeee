// Fuzzes the wrapper proto loader, then everything downstream of it: a
// program that loads must survive planning, reports and printing.
#include <cstddef>
#include <cstdint>

#include "wrapper/memory_planning.h"
#include "wrapper/proto_convert.h"
#include "wrapper/python_printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto program = kiln::wrapper::DeserializeWrapperProgram(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!program.ok()) return 0;
  (void)program->ToString();
  (void)kiln::wrapper::PrintPythonWrapper(*program);
  auto pool = kiln::wrapper::PlanMemoryPool(*program);
  (void)kiln::wrapper::ReportMemory(*program, pool.ok() ? &*pool : nullptr);
  if (kiln::wrapper::PlanBufferReuse(*program).ok()) {
    (void)kiln::wrapper::PrintPythonWrapper(*program);
    (void)kiln::wrapper::SerializeWrapperProgram(*program);
  }
  return 0;
}
