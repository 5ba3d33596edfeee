#include "passes/pipeline_io.h"

#include <string>

#include "ir/proto/proto_convert.h"
#include "ir/text_printer.h"
#include "passes/pass_log.h"

namespace kiln::passes {

IrWriters DefaultIrWriters() {
  IrWriters writers;
  writers.text = [](const ir::Graph& g) { return ir::PrintGraph(g); };
  writers.proto = [](const ir::Graph& g) { return ir::SerializeGraph(g); };
  return writers;
}

void UseDefaultIo(PipelineOptions* options) {
  options->writers = DefaultIrWriters();
  SetLogGraphPrinter([](const ir::Graph& g) { return ir::PrintGraph(g); });
}

}  // namespace kiln::passes
