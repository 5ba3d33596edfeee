// kiln: the command-line driver. Subcommands live in tools/commands/, one
// file each; register a new one with one line in the table below.
#include <string>
#include <vector>

#include "backends/cuda/cuda_backend.h"
#include "support/allocator.h"
#include "tools/cli.h"
#include "tools/commands/compile.h"
#include "tools/commands/conformance.h"
#include "tools/commands/convert.h"
#include "tools/commands/import.h"
#include "tools/commands/opt.h"
#include "tools/commands/parse.h"
#include "tools/commands/print.h"
#include "tools/commands/run.h"
#include "tools/commands/verify.h"

int main(int argc, char** argv) {
  kiln::KeepFreedMemoryInProcess();
  // Devices beyond the CPU are linked and registered here, in the binary's
  // main, never in core code. CUDA registers also without a GPU (it then
  // reports no devices, and compiling for it says why).
  (void)kiln::backends::cuda::RegisterCudaBackend();
  using namespace kiln::tools;  // NOLINT(build/namespaces): the table reads better.
  const Command commands[] = {
      ParseCommand(),  PrintCommand(),  VerifyCommand(),      ConvertCommand(),
      OptCommand(),    ImportCommand(), RunCommand(),         ConformanceCommand(),
      CompileCommand(),
  };
  // `kiln opt` spellings the generic flag parser does not know (-O2,
  // --dump-dir, a repeated --disable-pass).
  std::vector<std::string> args = NormalizeOptArguments(argc, argv);
  std::vector<char*> arg_pointers;
  for (std::string& arg : args) arg_pointers.push_back(arg.data());
  return RunCli(commands, static_cast<int>(arg_pointers.size()), arg_pointers.data());
}
