// ONNX converters of the math family.
#include "frontend/onnx/ops_families.h"

namespace kiln::frontend::onnx_import {

void RegisterMathConverters(ConverterRegistry& r) { (void)r; }

}  // namespace kiln::frontend::onnx_import
