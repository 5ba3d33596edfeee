// Registration of the converter families (ops_<family>.cc).
#ifndef KILN_FRONTEND_ONNX_OPS_FAMILIES_H_
#define KILN_FRONTEND_ONNX_OPS_FAMILIES_H_

#include "frontend/onnx/converter.h"

namespace kiln::frontend::onnx_import {

void RegisterNnConverters(ConverterRegistry& r);
void RegisterShapeConverters(ConverterRegistry& r);
void RegisterMathConverters(ConverterRegistry& r);
void RegisterSpecialConverters(ConverterRegistry& r);
void RegisterControlConverters(ConverterRegistry& r);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_FRONTEND_ONNX_OPS_FAMILIES_H_
