// Structural checks of a WrapperProgram, so that planners and printers can
// trust what they read even when it came from an untrusted proto.
#ifndef KILN_WRAPPER_VALIDATE_H_
#define KILN_WRAPPER_VALIDATE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {

inline constexpr size_t kMaxNameLength = 256;
inline constexpr int kMaxDeviceContextDepth = 16;
inline constexpr size_t kMaxMultiOutputIndices = 16;

// [A-Za-z_][A-Za-z0-9_]*, at most kMaxNameLength characters: buffer and
// kernel names go into generated C++ and Python as they are.
bool IsIdentifier(absl::string_view name);
// `ns::name` or `ns::name.overload`, each part an identifier.
bool IsQualifiedOpName(absl::string_view op);

// Checks, in line order, that:
//  * names are identifiers; every buffer has exactly one layout entry, and
//    every layout is valid (wrapper/layout_math.h);
//  * inputs and constants are defined at entry; constants' tensors have data
//    and match their layout's dtype and sizes;
//  * every buffer is defined once (Allocate, Reuse's new buffer, Reinterpret,
//    ExternKernelAlloc output, MultiOutput result) before it is used, and
//    used only while its storage is live: a view dies with its base's
//    storage, a reused buffer's old name dies at the ReuseLine when
//    delete_old is set; inputs, constants and outputs are never handed to a
//    FreeIfNotReusedLine or a ReuseLine; outputs are live at the end;
//  * kernels are defined once, before their calls; device contexts balance.
// Errors are InvalidArgument naming the line index and kind.
absl::Status ValidateWrapperProgram(const WrapperProgram& program);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_VALIDATE_H_
