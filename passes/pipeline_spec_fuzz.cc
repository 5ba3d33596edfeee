// Fuzzes the two strings users hand to the pass manager: pipeline strings
// (`--passes=...`) and KILN_LOG_LEVEL specs. Any input must give a result or
// an error, never a crash; a parsed pipeline must print to a string that
// parses to the same pipeline.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "passes/pass_log.h"
#include "passes/pipeline_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  auto steps = kiln::passes::ParsePipeline(text);
  if (steps.ok()) {
    const std::string printed = kiln::passes::PipelineToString(*steps);
    auto again = kiln::passes::ParsePipeline(printed);
    if (!again.ok() || kiln::passes::PipelineToString(*again) != printed) std::abort();
  }
  (void)kiln::passes::PresetPipeline(text);
  (void)kiln::passes::SetLogLevels(text);
  (void)kiln::passes::SetLogLevels("");
  return 0;
}
