// Layout arithmetic the CPU backend needs, kept local so the backend links
// against the loop IR's header contract alone.
#ifndef KILN_BACKENDS_CPU_LAYOUT_UTIL_H_
#define KILN_BACKENDS_CPU_LAYOUT_UTIL_H_

#include <cstdint>
#include <string>

#include "lowering/loop_ir.h"

namespace kiln::backends::cpu {

// offset + extent in elements (0 for an empty layout); -1 when the layout
// is malformed (rank mismatch, negative sizes/strides/offset, overflow).
int64_t StorageElementsOf(const lowering::Layout& l);
int64_t StorageBytesOf(const lowering::Layout& l);
bool IsContiguousLayout(const lowering::Layout& l);
std::string LayoutString(const lowering::Layout& l);
// graph.Find without linking the loop IR's .cc (linear; graphs are small
// next to the C++ compile).
const lowering::Buffer* FindBuffer(const lowering::LoopGraph& graph, const std::string& name);

}  // namespace kiln::backends::cpu

#endif  // KILN_BACKENDS_CPU_LAYOUT_UTIL_H_
