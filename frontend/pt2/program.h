// The serialized ExportedProgram (torch/_export/serde/schema.py, version 8)
// as typed C++: what the importer reads. Parsing checks every field it keeps
// and names the JSON path of the first problem. Unions are one-member
// objects; enums are integers (ScalarType, Layout and MemoryFormat are
// mapped to kiln's c10 codes here).
#ifndef KILN_FRONTEND_PT2_PROGRAM_H_
#define KILN_FRONTEND_PT2_PROGRAM_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "frontend/pt2/sym_expr.h"
#include "ir/type.h"
#include "support/dtype.h"

namespace kiln::frontend::pt2 {

// The major version of the export schema this reader follows.
inline constexpr int kSchemaMajorVersion = 8;

// A size, stride or offset: an integer or a symbolic expression (with the
// example value torch traced with, when it kept one).
struct SymSize {
  std::optional<int64_t> value;
  std::optional<SymExpr> expr;
  std::optional<int64_t> hint;
};

// The values of sizes (strides, ...) that are all constants; nullopt when
// one is symbolic.
std::optional<std::vector<int64_t>> StaticValues(const std::vector<SymSize>& sizes);

struct TensorMeta {
  DType dtype = DType::kFloat32;
  std::vector<SymSize> sizes;
  std::vector<SymSize> strides;
  SymSize storage_offset;
  ir::Device device;
};

struct Graph;

// One argument or output of a node (schema.py's Argument union), or one
// element of a list argument.
struct Argument {
  enum class Kind {
    kNone,
    kTensor,      // name
    kSymInt,      // name (a symbolic int value)
    kSymFloat,    // name
    kSymBool,     // name
    kInt,
    kFloat,
    kBool,
    kString,
    kScalarType,    // int_value: kiln's dtype code
    kMemoryFormat,  // int_value: c10 code
    kLayout,        // int_value: c10 code
    kDevice,
    kList,    // elements; list_kind says which union member ("as_ints", ...)
    kGraph,   // graph (a higher-order op's subgraph), name
    kCustomObj,
    kOperator,  // name: an operator passed as an argument
  };
  Kind kind = Kind::kNone;
  std::string name;
  int64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  ir::Device device;
  std::string list_kind;
  std::vector<Argument> elements;
  std::shared_ptr<const Graph> graph;
  std::string path;  // JSON path, for messages
};

struct NamedArgument {
  std::string name;  // the schema's argument name ("" for higher-order ops)
  Argument arg;
  bool keyword = false;
};

struct Node {
  std::string target;  // "torch.ops.aten.conv2d.default", "_operator.mul"
  std::string name;    // the FX node name (may be empty in old archives)
  std::vector<NamedArgument> inputs;
  std::vector<Argument> outputs;
  std::string path;
};

struct Graph {
  std::vector<Argument> inputs;
  std::vector<Argument> outputs;
  std::vector<Node> nodes;
  absl::flat_hash_map<std::string, TensorMeta> tensor_values;
  absl::flat_hash_map<std::string, SymSize> sym_int_values;
  bool is_single_tensor_return = false;
};

struct InputSpec {
  enum class Kind { kUserInput, kParameter, kBuffer, kTensorConstant, kCustomObj, kToken, kConstantInput };
  Kind kind = Kind::kUserInput;
  Argument arg;        // the graph input it describes
  std::string target;  // parameter / buffer / constant FQN
  Argument constant;   // kConstantInput: the value
};

struct OutputSpec {
  enum class Kind {
    kUserOutput,
    kLossOutput,
    kBufferMutation,
    kGradientToParameter,
    kGradientToUserInput,
    kUserInputMutation,
    kToken,
    kParameterMutation,
  };
  Kind kind = Kind::kUserOutput;
  Argument arg;
  std::string target;
};

struct RangeConstraint {
  std::optional<int64_t> min;  // nullopt: unbounded
  std::optional<int64_t> max;
};

struct ExportedProgram {
  Graph graph;
  std::vector<InputSpec> input_specs;
  std::vector<OutputSpec> output_specs;
  std::map<std::string, RangeConstraint> range_constraints;
  int schema_major = 0;
  int schema_minor = 0;
  std::string torch_version;
  std::vector<std::string> verifiers;  // "TRAINING", "ATEN"
};

// How a parameter, buffer or constant is stored (schema.py's PayloadMeta).
struct PayloadMeta {
  std::string path_name;  // file under data/weights/ or data/constants/
  bool is_param = false;
  bool use_pickle = false;
  std::optional<TensorMeta> tensor_meta;
};

// `origin` names the entry in error messages.
absl::StatusOr<ExportedProgram> ParseExportedProgram(absl::string_view json_text,
                                                     absl::string_view origin);
absl::StatusOr<std::map<std::string, PayloadMeta>> ParsePayloadConfig(absl::string_view json_text,
                                                                      absl::string_view origin);

// schema.py's enums -> kiln (c10) codes; nullopt for values kiln lacks.
std::optional<DType> DTypeFromSerialized(int64_t code);
std::optional<int64_t> LayoutFromSerialized(int64_t code);
std::optional<int64_t> MemoryFormatFromSerialized(int64_t code);

}  // namespace kiln::frontend::pt2

#endif  // KILN_FRONTEND_PT2_PROGRAM_H_
