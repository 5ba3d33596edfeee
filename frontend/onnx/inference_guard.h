// Decides whether libonnx's shape inference may run on an untrusted model.
//
// libonnx 1.12's per-op inference functions assume a node already passed the
// ONNX checker: Scan's dereferences getAttribute("num_scan_inputs") without a
// null check, others index inputs the schema says exist. A model that breaks
// those assumptions crashes the process (SIGSEGV, which no try/catch stops).
// The importer therefore runs inference only when every node, subgraphs
// included, passes its schema's own check (OpSchema::Verify: input/output
// counts, required inputs non-empty, required attributes present, attribute
// types) and has positive values in the integer attributes inference
// divides by (strides, dilations, kernel_shape, group, blocksize: a Conv
// with a 0 stride is a SIGFPE); otherwise it imports without libonnx's
// facts, as when inference throws.
#ifndef KILN_FRONTEND_ONNX_INFERENCE_GUARD_H_
#define KILN_FRONTEND_ONNX_INFERENCE_GUARD_H_

#include "absl/status/status.h"
#include "onnx/onnx_pb.h"

namespace kiln::frontend::onnx_import {

// OK when libonnx's InferShapes may run on `model`; otherwise the first
// node that fails its schema's check, named by graph, index, op type and
// name, with libonnx's reason.
absl::Status CheckSafeForOnnxInference(const onnx::ModelProto& model);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_FRONTEND_ONNX_INFERENCE_GUARD_H_
