// kiln: the command-line driver. Subcommands live in tools/commands/, one
// file each; register a new one with one line in the table below.
#include <string>
#include <vector>

#include <cstdio>

#include "backends/builtin.h"
#include "driver/initialize.h"
#include "support/allocator.h"
#include "support/disk_cache.h"
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
  // Start-up registration, once for every subcommand: the per-op facts, then
  // the devices (in the binary's main, never in core code). CUDA registers
  // also without a GPU (it then reports no devices, and compiling for it
  // says why).
  absl::Status ready = kiln::driver::Initialize();
  if (ready.ok()) ready = kiln::backends::RegisterBuiltinBackends();
  if (!ready.ok()) {
    std::fprintf(stderr, "kiln: start-up failed: %s\n", ready.ToString().c_str());
    return 1;
  }
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
  const int code = RunCli(commands, static_cast<int>(arg_pointers.size()), arg_pointers.data());
  // The compile caches write their entries in the background: say so when
  // they could not (every later run would compile again without a word).
  const kiln::BackgroundPublishReport cache = kiln::WaitForBackgroundPublishes();
  if (cache.failed > 0) {
    std::fprintf(stderr, "kiln: warning: %d cache entr%s not written (%s); later runs compile again\n", cache.failed,
                 cache.failed == 1 ? "y was" : "ies were", cache.first_failure.c_str());
  }
  return code;
}
