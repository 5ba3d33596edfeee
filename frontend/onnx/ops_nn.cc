// ONNX converters of the nn family.
#include "frontend/onnx/ops_families.h"

namespace kiln::frontend::onnx_import {

void RegisterNnConverters(ConverterRegistry& r) { (void)r; }

}  // namespace kiln::frontend::onnx_import
