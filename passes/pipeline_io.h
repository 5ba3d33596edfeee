// The real IR writers for the pass manager: text via ir::PrintGraph and
// binary proto via ir::SerializeGraph. Kept out of //passes:pass_manager so
// that passes do not depend on protobuf.
#ifndef KILN_PASSES_PIPELINE_IO_H_
#define KILN_PASSES_PIPELINE_IO_H_

#include "passes/pipeline.h"

namespace kiln::passes {

IrWriters DefaultIrWriters();

// Sets options->writers to DefaultIrWriters() and makes KILN_LOG dumps print
// graphs with ir::PrintGraph.
void UseDefaultIo(PipelineOptions* options);

}  // namespace kiln::passes

#endif  // KILN_PASSES_PIPELINE_IO_H_
