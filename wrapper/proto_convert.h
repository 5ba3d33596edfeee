// WrapperProgram <-> wrapper.proto (the wrapper stage boundary: `kiln compile`
// writes DIR/wrapper.pb, and --compile-to=wrapper stops there).
//
// The loaders treat their input as untrusted: dtypes, ranks, sizes, byte
// counts, nesting depth and every name are checked, the result must pass
// ValidateWrapperProgram, errors are InvalidArgument naming the line (or
// field) and what was expected, and no input crashes them.
#ifndef KILN_WRAPPER_PROTO_CONVERT_H_
#define KILN_WRAPPER_PROTO_CONVERT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "wrapper/wrapper.pb.h"
#include "wrapper/wrapper_ir.h"

namespace kiln::wrapper {

// 2: islands and the whole-graph island travel as kiln IR (ir/proto).
inline constexpr int32_t kWrapperProtoVersion = 2;
// Deepest list/tuple nesting of an extern argument constant.
inline constexpr int kMaxProtoValueDepth = 32;

absl::StatusOr<proto::WrapperProgramProto> WrapperToProto(const WrapperProgram& program);
absl::StatusOr<WrapperProgram> WrapperFromProto(const proto::WrapperProgramProto& proto);

absl::StatusOr<std::string> SerializeWrapperProgram(const WrapperProgram& program);
absl::StatusOr<WrapperProgram> DeserializeWrapperProgram(absl::string_view bytes);

// A program whose constants' bytes live elsewhere (deploy/: a mapped weights
// file). The serialized form names each constant and leaves its tensor out;
// the loader takes those constants from `constants` by name (a name it lacks
// is an error) and validates the program as usual.
absl::StatusOr<std::string> SerializeWrapperProgramWithoutConstantData(const WrapperProgram& program);
absl::StatusOr<WrapperProgram> DeserializeWrapperProgram(absl::string_view bytes,
                                                         const std::map<std::string, Tensor>& constants);

absl::StatusOr<std::string> WrapperProgramToTextProto(const WrapperProgram& program);
absl::StatusOr<WrapperProgram> WrapperProgramFromTextProto(absl::string_view text);

}  // namespace kiln::wrapper

#endif  // KILN_WRAPPER_PROTO_CONVERT_H_
