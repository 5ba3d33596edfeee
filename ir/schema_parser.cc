#include "ir/schema_parser.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace kiln::ir {
namespace {

// Deep enough for any real schema, shallow enough for any stack.
constexpr int kMaxDepth = 32;

bool IsIdentStart(char c) {
  return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool IsIdentChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
}

struct ParsedType {
  TypePtr type;
  std::optional<AliasInfo> alias;
  std::optional<int64_t> fixed_list_size;
};

// Identifiers usable as enum default values, with their c10 codes.
std::optional<int64_t> EnumDefault(absl::string_view id) {
  static const std::pair<const char*, int64_t> kEnums[] = {
      // MemoryFormat
      {"contiguous_format", 0}, {"preserve_format", 1}, {"channels_last", 2},
      {"channels_last_3d", 3},
      // Layout
      {"strided", 0}, {"sparse_coo", 1}, {"sparse_csr", 2}, {"mkldnn", 3},
      // at::Reduction
      {"Mean", 1}, {"Sum", 2},
      // ScalarType (torch.<name>)
      {"uint8", 0}, {"int8", 1}, {"int16", 2}, {"short", 2}, {"int32", 3},
      {"int", 3}, {"int64", 4}, {"long", 4}, {"float16", 5}, {"half", 5},
      {"float32", 6}, {"float", 6}, {"float64", 7}, {"double", 7},
      {"complex64", 9}, {"cfloat", 9}, {"bool", 11}, {"bfloat16", 15},
      // QScheme
      {"per_tensor_affine", 0}, {"per_channel_affine", 1},
      {"per_tensor_symmetric", 2}, {"per_channel_symmetric", 3},
  };
  for (const auto& [name, code] : kEnums) {
    if (id == name) return code;
  }
  return std::nullopt;
}

TypePtr SimpleType(absl::string_view id) {
  if (id == "Tensor") return Type::Tensor();
  if (id == "int" || id == "SymInt") return Type::Int();
  if (id == "float") return Type::Float();
  if (id == "bool") return Type::Bool();
  if (id == "str" || id == "Dimname") return Type::Str();
  if (id == "Scalar" || id == "number") return Type::Number();
  if (id == "complex") return Type::Complex();
  if (id == "ScalarType") return Type::ScalarType();
  if (id == "Layout") return Type::Layout();
  if (id == "Device") return Type::DeviceType();
  if (id == "MemoryFormat") return Type::MemoryFormat();
  if (id == "Generator") return Type::Generator();
  if (id == "NoneType") return Type::None();
  // Opaque to kiln: accepted so real schemas parse, typed as Any.
  if (id == "Any" || id == "Storage" || id == "Stream" || id == "QScheme" ||
      id == "Capsule" || id == "AnyEnumType" || id == "AnyClassType" ||
      id == "AnyTupleType" || id == "AnyListType" || id == "ConstQuantizerPtr") {
    return Type::Any();
  }
  return nullptr;
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<FunctionSchema> Schema() {
    FunctionSchema s;
    ASSIGN_OR_RETURN(std::string ns, Ident("an operator namespace"));
    RETURN_IF_ERROR(ExpectRaw("::"));
    ASSIGN_OR_RETURN(std::string name, Ident("an operator name"));
    s.name = absl::StrCat(ns, "::", name);
    if (PeekRaw('.')) {
      ++pos_;
      ASSIGN_OR_RETURN(s.overload_name, Ident("an overload name"));
    }
    RETURN_IF_ERROR(Expect('('));
    RETURN_IF_ERROR(Arguments(&s));
    RETURN_IF_ERROR(Expect("->"));
    RETURN_IF_ERROR(Returns(&s));
    SkipSpace();
    if (pos_ != text_.size()) return Error("end of schema");
    return s;
  }

  absl::StatusOr<TypePtr> TypeOnly() {
    ASSIGN_OR_RETURN(ParsedType t, ParseType(0));
    SkipSpace();
    if (pos_ != text_.size()) return Error("end of type");
    return t.type;
  }

 private:
  // ---- lexing helpers

  void SkipSpace() {
    while (pos_ < text_.size() && absl::ascii_isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  bool PeekRaw(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool Peek(char c) {
    SkipSpace();
    return PeekRaw(c);
  }
  bool Peek(absl::string_view s) {
    SkipSpace();
    return text_.substr(pos_, s.size()) == s;
  }
  bool Consume(absl::string_view s) {
    if (!Peek(s)) return false;
    pos_ += s.size();
    return true;
  }
  absl::Status ExpectRaw(absl::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return Error(absl::StrCat("'", s, "'"));
    pos_ += s.size();
    return absl::OkStatus();
  }
  absl::Status Expect(absl::string_view s) {
    SkipSpace();
    return ExpectRaw(s);
  }
  absl::Status Expect(char c) { return Expect(absl::string_view(&c, 1)); }

  absl::StatusOr<std::string> Ident(absl::string_view what) {
    SkipSpace();
    if (pos_ >= text_.size() || !IsIdentStart(text_[pos_])) return Error(what);
    size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // What the parser is looking at, for messages.
  std::string Got() const {
    if (pos_ >= text_.size()) return "end of input";
    size_t end = pos_ + 1;
    if (IsIdentChar(text_[pos_])) {
      while (end < text_.size() && IsIdentChar(text_[end])) ++end;
    }
    return absl::StrCat("'", text_.substr(pos_, std::min<size_t>(end - pos_, 24)), "'");
  }

  absl::Status ErrorAt(size_t pos, absl::string_view message) const {
    size_t line = 1;
    size_t col = 1;
    for (size_t i = 0; i < pos && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(line, ":", col, ": ", message));
  }
  absl::Status Error(absl::string_view expected) const {
    return ErrorAt(pos_, absl::StrCat("expected ", expected, ", got ", Got()));
  }

  // ---- schema parts

  absl::Status Arguments(FunctionSchema* s) {
    if (Consume(")")) return absl::OkStatus();
    bool kwarg_only = false;
    while (true) {
      if (Consume("...")) {
        s->is_vararg = true;
        return Expect(')');  // varargs come last
      }
      if (Consume("*")) {
        if (kwarg_only) return ErrorAt(pos_ - 1, "duplicate '*' in arguments");
        kwarg_only = true;
      } else {
        ASSIGN_OR_RETURN(Argument a, ArgumentDecl(/*is_return=*/false));
        a.kwarg_only = kwarg_only;
        s->arguments.push_back(std::move(a));
      }
      if (Consume(")")) return absl::OkStatus();
      if (!Consume(",")) return Error("',' or ')' in argument list");
    }
  }

  absl::Status Returns(FunctionSchema* s) {
    if (Consume("...")) {
      s->is_varret = true;
      return absl::OkStatus();
    }
    if (Peek('(')) {
      // `(A a, B b)` is a list of returns; `()` is none.
      ++pos_;
      if (Consume(")")) return absl::OkStatus();
      while (true) {
        if (Consume("...")) {
          s->is_varret = true;
          return Expect(')');
        }
        ASSIGN_OR_RETURN(Argument r, ArgumentDecl(/*is_return=*/true));
        s->returns.push_back(std::move(r));
        if (Consume(")")) return absl::OkStatus();
        if (!Consume(",")) return Error("',' or ')' in return list");
      }
    }
    ASSIGN_OR_RETURN(Argument r, ArgumentDecl(/*is_return=*/true));
    s->returns.push_back(std::move(r));
    return absl::OkStatus();
  }

  absl::StatusOr<Argument> ArgumentDecl(bool is_return) {
    Argument a;
    ASSIGN_OR_RETURN(ParsedType t, ParseType(0));
    a.type = std::move(t.type);
    a.alias_info = std::move(t.alias);
    a.fixed_list_size = t.fixed_list_size;
    SkipSpace();
    if (pos_ < text_.size() && IsIdentStart(text_[pos_])) {
      ASSIGN_OR_RETURN(a.name, Ident("a name"));
    } else if (!is_return) {
      return Error("an argument name");
    }
    if (!is_return && Consume("=")) {
      size_t at = pos_;
      ASSIGN_OR_RETURN(IValue v, ParseValue(0));
      ASSIGN_OR_RETURN(a.default_value, CoerceDefault(std::move(v), a, at));
    }
    return a;
  }

  // ---- types

  absl::StatusOr<ParsedType> ParseType(int depth) {
    if (depth > kMaxDepth) return Error("a less deeply nested type");
    ParsedType out;
    SkipSpace();
    size_t start = pos_;
    if (Consume("(")) {
      std::vector<TypePtr> elems;
      if (!Consume(")")) {
        while (true) {
          ASSIGN_OR_RETURN(ParsedType e, ParseType(depth + 1));
          elems.push_back(std::move(e.type));
          if (Consume(")")) break;
          if (!Consume(",")) return Error("',' or ')' in tuple type");
        }
      }
      out.type = Type::Tuple(std::move(elems));
    } else {
      ASSIGN_OR_RETURN(std::string id, Ident("a type"));
      if (id == "Dict") {
        RETURN_IF_ERROR(Expect('('));
        ASSIGN_OR_RETURN(ParsedType k, ParseType(depth + 1));
        RETURN_IF_ERROR(Expect(','));
        ASSIGN_OR_RETURN(ParsedType v, ParseType(depth + 1));
        RETURN_IF_ERROR(Expect(')'));
        out.type = Type::Dict(std::move(k.type), std::move(v.type));
      } else if (id == "Future" || id == "RRef" || id == "Await") {
        RETURN_IF_ERROR(Expect('('));
        ASSIGN_OR_RETURN(ParsedType inner, ParseType(depth + 1));
        RETURN_IF_ERROR(Expect(')'));
        out.type = Type::Any();
      } else if (PeekRaw('.')) {
        // A qualified class name: __torch__.torch.classes.quantized.X
        std::string qual = id;
        while (PeekRaw('.')) {
          ++pos_;
          ASSIGN_OR_RETURN(std::string part, Ident("a class name component"));
          absl::StrAppend(&qual, ".", part);
        }
        out.type = Type::Class(std::move(qual));
      } else if (TypePtr simple = SimpleType(id)) {
        out.type = std::move(simple);
      } else if (absl::ascii_islower(static_cast<unsigned char>(id[0]))) {
        out.type = Type::Any();  // a type variable
      } else {
        return ErrorAt(start, absl::StrCat("expected a type, got unknown type '", id, "'"));
      }
    }
    // Suffixes: alias annotation, `[N]` lists, `?` optionals, in any order
    // PyTorch uses (`Tensor(a)[]`, `t[](*)`, `t(a)?`, `int[2]?`).
    while (true) {
      if (PeekRaw('(')) {
        if (out.alias) return Error("one alias annotation per type");
        ASSIGN_OR_RETURN(AliasInfo alias, Alias());
        out.alias = std::move(alias);
      } else if (PeekRaw('[')) {
        ++pos_;
        SkipSpace();
        std::optional<int64_t> size;
        if (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
          size_t begin = pos_;
          while (pos_ < text_.size() && absl::ascii_isdigit(static_cast<unsigned char>(text_[pos_]))) {
            ++pos_;
          }
          int64_t n = 0;
          if (!absl::SimpleAtoi(text_.substr(begin, pos_ - begin), &n)) {
            return ErrorAt(begin, "expected a list size, got an out-of-range number");
          }
          size = n;
        }
        RETURN_IF_ERROR(Expect(']'));
        out.type = Type::List(std::move(out.type));
        out.fixed_list_size = size;
        if (out.alias) {
          AliasInfo list_alias;
          list_alias.contained.push_back(std::move(*out.alias));
          out.alias = std::move(list_alias);
        }
        // A list's own annotation may follow: `t[](a!)`.
        if (PeekRaw('(')) {
          ASSIGN_OR_RETURN(AliasInfo own, Alias());
          AliasInfo merged = std::move(own);
          if (out.alias) merged.contained = std::move(out.alias->contained);
          out.alias = std::move(merged);
        }
      } else if (PeekRaw('?')) {
        ++pos_;
        out.type = Type::Optional(std::move(out.type));
      } else {
        break;
      }
    }
    return out;
  }

  absl::StatusOr<AliasInfo> Alias() {
    RETURN_IF_ERROR(Expect('('));
    AliasInfo a;
    ASSIGN_OR_RETURN(a.before_sets, AliasSets());
    if (Consume("!")) a.is_write = true;
    if (Consume("->")) {
      ASSIGN_OR_RETURN(a.after_sets, AliasSets());
    }
    RETURN_IF_ERROR(Expect(')'));
    return a;
  }

  absl::StatusOr<std::vector<std::string>> AliasSets() {
    std::vector<std::string> sets;
    do {
      if (Consume("*")) {
        sets.emplace_back("*");
      } else {
        ASSIGN_OR_RETURN(std::string s, Ident("an alias set name or '*'"));
        sets.push_back(std::move(s));
      }
    } while (Consume("|"));
    return sets;
  }

  // ---- default values

  absl::StatusOr<IValue> ParseValue(int depth) {
    if (depth > kMaxDepth) return Error("a less deeply nested default value");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("a default value");
    const char c = text_[pos_];
    if (c == '[') {
      ++pos_;
      std::vector<IValue> elems;
      if (!Consume("]")) {
        while (true) {
          ASSIGN_OR_RETURN(IValue e, ParseValue(depth + 1));
          elems.push_back(std::move(e));
          if (Consume("]")) break;
          if (!Consume(",")) return Error("',' or ']' in list value");
        }
      }
      return IValue::List(std::move(elems));
    }
    if (c == '"' || c == '\'') return String();
    if (c == '-' || c == '+' || absl::ascii_isdigit(static_cast<unsigned char>(c))) return Number();
    if (IsIdentStart(c)) {
      size_t start = pos_;
      ASSIGN_OR_RETURN(std::string id, Ident("a default value"));
      if (id == "None") return IValue::None();
      if (id == "True") return IValue::Bool(true);
      if (id == "False") return IValue::Bool(false);
      if (id == "inf") return IValue::Double(std::numeric_limits<double>::infinity());
      if (id == "nan") return IValue::Double(std::numeric_limits<double>::quiet_NaN());
      if (std::optional<int64_t> code = EnumDefault(id)) return IValue::Int(*code);
      return ErrorAt(start, absl::StrCat("expected a default value, got unknown name '", id, "'"));
    }
    return Error("a default value");
  }

  absl::StatusOr<IValue> Number() {
    size_t start = pos_;
    bool negative = false;
    if (text_[pos_] == '-' || text_[pos_] == '+') {
      negative = text_[pos_] == '-';
      ++pos_;
    }
    if (text_.substr(pos_, 3) == "inf") {
      pos_ += 3;
      double inf = std::numeric_limits<double>::infinity();
      return IValue::Double(negative ? -inf : inf);
    }
    bool is_float = false;
    size_t digits_begin = pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (absl::ascii_isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_float = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && pos_ < text_.size() &&
            (text_[pos_] == '-' || text_[pos_] == '+')) {
          ++pos_;
        }
      } else {
        break;
      }
    }
    if (pos_ == digits_begin) return Error("digits");
    absl::string_view token = text_.substr(start, pos_ - start);
    if (is_float) {
      // "1." is a valid double for strtod, not for SimpleAtod on all versions.
      std::string s(token);
      char* end = nullptr;
      double d = std::strtod(s.c_str(), &end);
      if (end != s.c_str() + s.size()) return ErrorAt(start, absl::StrCat("expected a number, got '", token, "'"));
      return IValue::Double(d);
    }
    int64_t v = 0;
    if (!absl::SimpleAtoi(token, &v)) {
      return ErrorAt(start, absl::StrCat("expected an int64 number, got '", token, "'"));
    }
    return IValue::Int(v);
  }

  absl::StatusOr<IValue> String() {
    const char quote = text_[pos_];
    size_t start = pos_++;
    std::string s;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_++];
      if (c != '\\') {
        s.push_back(c);
        continue;
      }
      if (pos_ >= text_.size()) break;
      char e = text_[pos_++];
      switch (e) {
        case 'n': s.push_back('\n'); break;
        case 't': s.push_back('\t'); break;
        case 'r': s.push_back('\r'); break;
        case 'f': s.push_back('\f'); break;
        case 'v': s.push_back('\v'); break;
        case '0': s.push_back('\0'); break;
        case '\\': case '"': case '\'': s.push_back(e); break;
        default:
          return ErrorAt(pos_ - 2, absl::StrCat("expected a string escape (\\n \\t \\\\ ...), got '\\",
                                                absl::string_view(&e, 1), "'"));
      }
    }
    if (pos_ >= text_.size()) return ErrorAt(start, "expected a closing quote, got end of input");
    ++pos_;
    return IValue::String(std::move(s));
  }

  // Makes a default agree with its declared type: ints for float arguments
  // become doubles, a scalar for a fixed-size list is broadcast.
  absl::StatusOr<IValue> CoerceDefault(IValue v, const Argument& a, size_t at) {
    TypePtr t = a.type;
    if (v.isNone()) {
      if (t->kind() != TypeKind::kOptional && t->kind() != TypeKind::kNone &&
          t->kind() != TypeKind::kAny) {
        return ErrorAt(at, absl::StrCat("expected a default of type ", t->ToString(),
                                        ", got None (the type is not optional)"));
      }
      return v;
    }
    if (t->kind() == TypeKind::kOptional) t = t->contained()[0];
    auto to_float = [](IValue x) { return x.isInt() ? IValue::Double(static_cast<double>(x.toInt())) : x; };
    if (t->kind() == TypeKind::kFloat) return to_float(std::move(v));
    if (t->kind() == TypeKind::kList) {
      const bool float_elems = t->contained()[0]->kind() == TypeKind::kFloat;
      if (!v.isList()) {
        if (!a.fixed_list_size) {
          return ErrorAt(at, absl::StrCat("expected a list default for ", t->ToString(),
                                          ", got ", v.DebugString()));
        }
        if (*a.fixed_list_size > 64) return ErrorAt(at, "expected a list size of at most 64");
        std::vector<IValue> elems(static_cast<size_t>(*a.fixed_list_size),
                                  float_elems ? to_float(v) : v);
        return IValue::List(std::move(elems));
      }
      if (float_elems) {
        for (IValue& e : v.mutableElements()) e = to_float(std::move(e));
      }
    }
    return v;
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<FunctionSchema> ParseSchema(absl::string_view text) {
  return Parser(text).Schema();
}

absl::StatusOr<TypePtr> ParseSchemaType(absl::string_view text) {
  return Parser(text).TypeOnly();
}

}  // namespace kiln::ir
