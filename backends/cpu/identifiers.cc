#include "backends/cpu/identifiers.h"

#include "absl/strings/str_cat.h"

namespace kiln::backends::cpu {

const devices::IdentifierRules& CppIdentifierRules() {
  static const devices::IdentifierRules* rules = [] {
    auto* r = new devices::IdentifierRules;
    r->reserved_words = {
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
        "case", "catch", "char", "char16_t", "char32_t", "class", "compl", "const", "constexpr",
        "const_cast", "continue", "decltype", "default", "delete", "do", "double", "dynamic_cast",
        "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
        "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
        "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
        "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_assert",
        "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
        "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
        "volatile", "wchar_t", "while", "xor", "xor_eq", "main", "std", "NAN", "INFINITY",
        // Names the prelude and the wrapper define.
        "api", "inputs", "outputs", "constants", "kiln_run", "kiln_abi_version"};
    // "Kiln": the prelude's types (KilnHostApi, KilnSgemmFn).
    r->reserved_prefixes = {"l_", "kiln", "Kiln"};
    return r;
  }();
  return *rules;
}

absl::StatusOr<std::string> CTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return std::string("float");
    case DType::kFloat64: return std::string("double");
    case DType::kInt64: return std::string("int64_t");
    case DType::kInt32: return std::string("int32_t");
    case DType::kInt16: return std::string("int16_t");
    case DType::kInt8: return std::string("int8_t");
    case DType::kUInt8: return std::string("uint8_t");
    case DType::kUInt16: return std::string("uint16_t");
    case DType::kUInt32: return std::string("uint32_t");
    case DType::kUInt64: return std::string("uint64_t");
    case DType::kBool: return std::string("bool");
    default: break;
  }
  return absl::UnimplementedError(
      absl::StrCat("cpu codegen: dtype ", DTypeName(dtype), " is not supported in generated kernels"));
}

}  // namespace kiln::backends::cpu
