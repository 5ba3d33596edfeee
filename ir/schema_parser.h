// Parses TorchScript schema strings into FunctionSchema:
//
//   aten::conv2d(Tensor input, Tensor weight, Tensor? bias=None,
//                int[2] stride=1, ...) -> Tensor
//   aten::relu_(Tensor(a!) self) -> Tensor(a!)
//   aten::max.dim(Tensor self, int dim, bool keepdim=False)
//       -> (Tensor values, Tensor indices)
//   prim::ListUnpack(...) -> ...
//
// Type mapping: Scalar -> Number, SymInt -> int, Dimname -> str, type
// variables (t, t1, tVal: any identifier starting lower-case that is not a
// known type) -> Any, Storage/Stream/Any*Type/Capsule/QScheme -> Any,
// Future(T)/RRef(T)/Await(T) -> Any, `__torch__.x.Y` -> a class type.
// Enum defaults (contiguous_format, Mean, strided, long, ...) become their
// c10 integer codes; a scalar default of a fixed-size list (`int[2] s=1`) is
// broadcast to the list.
//
// Errors are InvalidArgumentError "line:col: expected ..., got ...". Bad
// input never crashes; nesting is capped.
#ifndef KILN_IR_SCHEMA_PARSER_H_
#define KILN_IR_SCHEMA_PARSER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/schema.h"

namespace kiln::ir {

absl::StatusOr<FunctionSchema> ParseSchema(absl::string_view text);

// Parses a type in schema syntax: "int[]", "Tensor?", "(int, str)".
absl::StatusOr<TypePtr> ParseSchemaType(absl::string_view text);

}  // namespace kiln::ir

#endif  // KILN_IR_SCHEMA_PARSER_H_
