#include "devices/cpu/identifiers.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "support/hash.h"

namespace kiln::devices::cpu {
namespace {

bool IsKeyword(const std::string& s) {
  static const std::set<std::string>* keywords = new std::set<std::string>{
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
  return keywords->count(s) != 0;
}

}  // namespace

std::string SanitizeIdentifier(absl::string_view name) {
  std::string out;
  out.reserve(name.size());
  bool truncated = false;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    const bool ok = absl::ascii_isalnum(u) && u < 128;
    const char mapped = ok ? c : '_';
    if (mapped == '_' && !out.empty() && out.back() == '_') continue;
    if (out.size() >= 64) {
      truncated = true;
      break;
    }
    out.push_back(mapped);
  }
  // Long names differing only past the cut (kernel names end in their
  // index) must stay distinct: replace the tail by a hash of the whole name.
  if (truncated) {
    out.resize(48);
    absl::StrAppend(&out, "_h", absl::Hex(HashString(name), absl::kZeroPad16));
  }
  if (out.empty() || out[0] == '_' || absl::ascii_isdigit(static_cast<unsigned char>(out[0])) ||
      IsKeyword(out) || out.rfind("l_", 0) == 0 || out.rfind("kiln", 0) == 0) {
    out = out.empty() || out[0] == '_' ? "b" + out : "b_" + out;
  }
  // A prefix may have created "b__"; keep identifiers free of "__".
  std::string dedup;
  for (char c : out) {
    if (c == '_' && !dedup.empty() && dedup.back() == '_') continue;
    dedup.push_back(c);
  }
  return dedup;
}

const std::string& IdentifierTable::Get(const std::string& name) {
  auto it = ids_.find(name);
  if (it != ids_.end()) return it->second;
  std::string base = SanitizeIdentifier(name);
  std::string id = base;
  for (int n = 1; taken_.count(id) != 0; ++n) id = absl::StrCat(base, "_", n);
  taken_.insert(id);
  return ids_.emplace(name, id).first->second;
}

std::string SanitizeComment(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (out.size() >= 120) break;
    const unsigned char u = static_cast<unsigned char>(c);
    out.push_back(u >= 32 && u < 127 && c != '\\' ? c : '?');
  }
  return out;
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

}  // namespace kiln::devices::cpu
