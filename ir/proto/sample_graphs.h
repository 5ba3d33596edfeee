// Graphs built with the C++ API for the proto tests, seeds and benchmark.
#ifndef KILN_IR_PROTO_SAMPLE_GRAPHS_H_
#define KILN_IR_PROTO_SAMPLE_GRAPHS_H_

#include <cstddef>
#include <memory>

#include "ir/ir.h"

namespace kiln::ir::testing {

// Every feature the format carries: all attribute kinds (NaN payloads, -0.0,
// non-UTF-8 strings, tensors with data of several dtypes, placeholders with
// strides, an undefined tensor), every type kind (nested, refined tensors),
// numeric and unnamed values with gaps in their numbers, source locations,
// scopes, and prim::If / prim::Loop blocks nested two deep.
std::unique_ptr<Graph> MakeFeatureGraph();

// A straight-line graph of about `num_nodes` nodes shaped like the synthetic
// corpus: named values, Tensor/int types, constants and aten arithmetic.
std::unique_ptr<Graph> MakeChainGraph(size_t num_nodes);

// One prim::If and one prim::Loop, unnamed values only.
std::unique_ptr<Graph> MakeControlFlowGraph();

}  // namespace kiln::ir::testing

#endif  // KILN_IR_PROTO_SAMPLE_GRAPHS_H_
