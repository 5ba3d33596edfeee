#include "ir/text_parser.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/lexer.h"
#include "ir/tensor_text.h"
#include "support/status.h"

namespace kiln::ir {
namespace {

// Bounds on attacker-controlled nesting (blocks inside blocks, types inside
// types), so that neither parsing nor destroying the result recurses deeply.
constexpr int kMaxBlockDepth = 256;
constexpr int kMaxTypeDepth = 64;

bool IsFloatText(absl::string_view num) {
  for (char c : num) {
    if (c == '.' || c == 'e' || c == 'E' || c == 'i' || c == 'n') return true;
  }
  return false;
}

class Parser {
 public:
  explicit Parser(absl::string_view text) : lex_(text), graph_(std::make_unique<Graph>()) {
    // Printed graphs take roughly 50 bytes per value; reserving up front
    // avoids rehashing a large table repeatedly.
    constexpr size_t kMaxReserve = size_t{1} << 21;
    GraphInternals::ReserveNames(graph_.get(), std::min(text.size() / 48, kMaxReserve));
  }

  absl::StatusOr<std::unique_ptr<Graph>> Run() {
    RETURN_IF_ERROR(ParseGraph());
    GraphInternals::FinishNaming(graph_.get());
    return std::move(graph_);
  }

 private:
  // An output written before `=`; named only once its node is complete, since
  // a node's outputs are not in scope inside its own blocks.
  struct PendingName {
    absl::string_view name;
    TextPosition at;
  };

  absl::Status ParseGraph() {
    lex_.SkipWhitespaceAndComments();
    if (lex_.ReadIdentifier().empty()) return lex_.Expected("'graph('");
    Block* top = graph_->block();
    RETURN_IF_ERROR(ParseParams(top));
    RETURN_IF_ERROR(ExpectChar(':'));
    RETURN_IF_ERROR(ParseStatements(top, 0));
    // `return (%a, %b)`
    lex_.Advance(6);  // ParseStatements stopped at `return`
    lex_.SkipBlanks();
    RETURN_IF_ERROR(ParseOutputList(top));
    lex_.SkipWhitespaceAndComments();
    if (!lex_.AtEnd()) return lex_.Expected("end of input");
    return absl::OkStatus();
  }

  absl::Status ExpectChar(char c) {
    if (!lex_.TryConsume(c)) return lex_.Expected(absl::StrCat("'", absl::string_view(&c, 1), "'"));
    return absl::OkStatus();
  }

  // `(%a : T, %b, ...)` defining block inputs; newlines allowed.
  absl::Status ParseParams(Block* b) {
    RETURN_IF_ERROR(ExpectChar('('));
    lex_.SkipWhitespaceAndComments();
    if (lex_.TryConsume(')')) return absl::OkStatus();
    while (true) {
      const TextPosition at = lex_.position();
      if (!lex_.TryConsume('%')) return lex_.Expected("'%' and a value name");
      absl::string_view name = lex_.ReadValueName();
      if (name.empty()) return lex_.Expected("a value name");
      Value* v = b->addInput();
      lex_.SkipBlanks();
      if (lex_.TryConsume(':')) {
        lex_.SkipBlanks();
        ASSIGN_OR_RETURN(TypePtr type, ParseType(0));
        v->setType(std::move(type));
      }
      RETURN_IF_ERROR(Define(v, name, at));
      lex_.SkipWhitespaceAndComments();
      if (lex_.TryConsume(')')) return absl::OkStatus();
      if (!lex_.TryConsume(',')) return lex_.Expected("',' or ')'");
      lex_.SkipWhitespaceAndComments();
    }
  }

  // `(%a, %b)` registering block outputs.
  absl::Status ParseOutputList(Block* b) {
    RETURN_IF_ERROR(ExpectChar('('));
    lex_.SkipBlanks();
    if (lex_.TryConsume(')')) return absl::OkStatus();
    while (true) {
      ASSIGN_OR_RETURN(Value * v, ParseUse(b));
      b->registerOutput(v);
      lex_.SkipBlanks();
      if (lex_.TryConsume(')')) return absl::OkStatus();
      if (!lex_.TryConsume(',')) return lex_.Expected("',' or ')'");
      lex_.SkipBlanks();
    }
  }

  // Statements up to `return` (top level, depth 0) or `->` (inside a block);
  // leaves the lexer on that keyword.
  absl::Status ParseStatements(Block* b, int depth) {
    while (true) {
      lex_.SkipWhitespaceAndComments();
      const char c = lex_.Peek();
      if (depth == 0) {
        if (c == 'r' && lex_.text().substr(lex_.position().offset, 6) == "return" &&
            !IsIdentChar(lex_.Peek(6))) {
          return absl::OkStatus();
        }
      } else if (c == '-' && lex_.Peek(1) == '>') {
        return absl::OkStatus();
      } else if (c == 'r' && lex_.text().substr(lex_.position().offset, 6) == "return" &&
                 !IsIdentChar(lex_.Peek(6))) {
        return lex_.Expected("a node or '->'");
      }
      if (c == '%' || c == '=' || IsIdentStart(c)) {
        RETURN_IF_ERROR(ParseNode(b, depth));
        continue;
      }
      return lex_.Expected(depth == 0 ? "a node or 'return'" : "a node or '->'");
    }
  }

  absl::Status ParseNode(Block* b, int depth) {
    const size_t pending_start = pending_.size();
    types_scratch_.resize(pending_start);
    // Outputs.
    if (lex_.Peek() == '%') {
      while (true) {
        const TextPosition at = lex_.position();
        lex_.Advance(1);
        absl::string_view name = lex_.ReadValueName();
        if (name.empty()) return lex_.Expected("a value name");
        lex_.SkipBlanks();
        TypePtr type = Type::Tensor();
        if (lex_.TryConsume(':')) {
          lex_.SkipBlanks();
          ASSIGN_OR_RETURN(type, ParseType(0));
          lex_.SkipBlanks();
        }
        pending_.push_back(PendingName{name, at});
        types_scratch_.push_back(std::move(type));
        if (!lex_.TryConsume(',')) break;
        lex_.SkipBlanks();
        if (lex_.Peek() != '%') return lex_.Expected("'%' and a value name");
      }
      if (!lex_.TryConsume('=')) return lex_.Expected("',' or '='");
    } else {
      lex_.TryConsume('=');  // `  = prim::If(...)` or `  prim::If(...)`
    }
    lex_.SkipBlanks();
    ASSIGN_OR_RETURN(Symbol kind, ParseKind());

    const TypePtr& out_type =
        types_scratch_.size() > pending_start ? types_scratch_[pending_start] : Type::Tensor();
    attrs_scratch_.clear();
    if (lex_.Peek() == '[') RETURN_IF_ERROR(ParseAttributes(out_type));
    inputs_scratch_.clear();
    RETURN_IF_ERROR(ParseInputs(b));

    // Created only now, with its inputs at once (one allocation), and appended
    // straight away so that the graph owns it if the rest of the line fails.
    Node* n = graph_->create(kind, inputs_scratch_, 0);
    b->appendNode(n);
    for (size_t i = pending_start; i < pending_.size(); ++i) {
      n->addOutput()->setType(std::move(types_scratch_[i]));
    }
    types_scratch_.resize(pending_start);
    for (Attribute& a : attrs_scratch_) n->setAttribute(a.name, std::move(a.value));
    RETURN_IF_ERROR(ParseNodeTrailer(n));

    // Blocks: `block0(%i : int):` ... `-> (%o)`.
    while (true) {
      lex_.SkipWhitespaceAndComments();
      const TextPosition save = lex_.position();
      absl::string_view ident = lex_.ReadIdentifier();
      if (ident.empty() || lex_.Peek() != '(' || ident == "return") {
        lex_.Restore(save);
        break;
      }
      if (depth + 1 > kMaxBlockDepth) return Lexer::ErrorAt(save, "blocks are nested too deeply");
      Block* blk = n->addBlock();
      RETURN_IF_ERROR(ParseParams(blk));
      RETURN_IF_ERROR(ExpectChar(':'));
      RETURN_IF_ERROR(ParseStatements(blk, depth + 1));
      lex_.Advance(2);  // `->`
      lex_.SkipBlanks();
      RETURN_IF_ERROR(ParseOutputList(blk));
    }

    for (size_t i = pending_start; i < pending_.size(); ++i) {
      RETURN_IF_ERROR(Define(n->output(i - pending_start), pending_[i].name, pending_[i].at));
    }
    pending_.resize(pending_start);
    return absl::OkStatus();
  }

  // `ns::name`
  absl::StatusOr<Symbol> ParseKind() {
    const TextPosition at = lex_.position();
    absl::string_view ns = lex_.ReadIdentifier();
    if (ns.empty()) return lex_.Expected("an operator name such as 'aten::add'");
    if (!lex_.TryConsume("::")) return lex_.Expected("'::'");
    absl::string_view name = lex_.ReadIdentifier();
    if (name.empty()) return lex_.Expected("an operator name after '::'");
    absl::string_view qual = lex_.text().substr(at.offset, lex_.position().offset - at.offset);
    auto it = kinds_.find(qual);
    if (it != kinds_.end()) return it->second;
    Symbol s = Symbol::FromQualString(qual);
    kinds_.emplace(qual, s);
    return s;
  }

  // `(%a, %b)`
  absl::Status ParseInputs(Block* b) {
    RETURN_IF_ERROR(ExpectChar('('));
    lex_.SkipBlanks();
    if (lex_.TryConsume(')')) return absl::OkStatus();
    while (true) {
      ASSIGN_OR_RETURN(Value * v, ParseUse(b));
      inputs_scratch_.push_back(v);
      lex_.SkipBlanks();
      if (lex_.TryConsume(')')) return absl::OkStatus();
      if (!lex_.TryConsume(',')) return lex_.Expected("',' or ')'");
      lex_.SkipBlanks();
    }
  }

  // `, scope: a/b` and ` # file:line:col`, then the end of the line.
  absl::Status ParseNodeTrailer(Node* n) {
    lex_.SkipBlanks();
    if (lex_.TryConsume(',')) {
      lex_.SkipBlanks();
      if (!lex_.TryConsume("scope:")) return lex_.Expected("'scope:'");
      lex_.SkipBlanks();
      const size_t start = lex_.position().offset;
      absl::string_view text = lex_.text();
      size_t end = start;
      while (end < text.size() && text[end] != '\n' &&
             !(text[end] == '#' && end > start && text[end - 1] == ' ')) {
        ++end;
      }
      size_t trimmed = end;
      while (trimmed > start && (text[trimmed - 1] == ' ' || text[trimmed - 1] == '\r' ||
                                 text[trimmed - 1] == '\t')) {
        --trimmed;
      }
      n->setScope(text.substr(start, trimmed - start));
      lex_.Advance(end - start);
    }
    if (lex_.TryConsume('#')) {
      lex_.TryConsume(' ');
      n->setSourceLocation(lex_.ReadRestOfLine());
    }
    const char c = lex_.Peek();
    if (c != '\n' && c != '\0') return lex_.Expected("end of line");
    return absl::OkStatus();
  }

  // `%name`, which must be defined and in scope.
  absl::StatusOr<Value*> ParseUse(Block* b) {
    const TextPosition at = lex_.position();
    if (!lex_.TryConsume('%')) return lex_.Expected("'%' and a value name");
    absl::string_view name = lex_.ReadValueName();
    if (name.empty()) return lex_.Expected("a value name");
    // The graph's name table is the symbol table: every parsed value is
    // named, and a value's block is its producer's block.
    Value* v = graph_->findValue(name);
    if (v == nullptr) {
      return Lexer::ErrorAt(at, absl::StrCat("cannot find a variable named '%", name, "'"));
    }
    // Visible: defined in this block or an enclosing one.
    const Block* def = v->node()->owningBlock();
    for (const Block* x = b; x != def;) {
      const Node* owner = x->owningNode();
      if (owner == nullptr) {
        return Lexer::ErrorAt(
            at, absl::StrCat("'%", name, "' is defined in another block and not in scope here"));
      }
      x = owner->owningBlock();
    }
    return v;
  }

  absl::Status Define(Value* v, absl::string_view name, const TextPosition& at) {
    if (graph_->findValue(name) != nullptr) {
      return Lexer::ErrorAt(at, absl::StrCat("redefinition of '%", name, "'"));
    }
    GraphInternals::SetNameUnchecked(v, name);
    return absl::OkStatus();
  }

  // ------------------------------------------------------------ types

  absl::StatusOr<TypePtr> ParseType(int depth) {
    if (depth > kMaxTypeDepth) return lex_.Expected("a less deeply nested type");
    const TextPosition at = lex_.position();
    TypePtr t;
    bool is_tensor = false;
    if (lex_.TryConsume('(')) {
      std::vector<TypePtr> elems;
      lex_.SkipBlanks();
      if (!lex_.TryConsume(')')) {
        while (true) {
          ASSIGN_OR_RETURN(TypePtr e, ParseType(depth + 1));
          elems.push_back(std::move(e));
          lex_.SkipBlanks();
          if (lex_.TryConsume(')')) break;
          if (!lex_.TryConsume(',')) return lex_.Expected("',' or ')'");
          lex_.SkipBlanks();
        }
      }
      t = Type::Tuple(std::move(elems));
    } else {
      absl::string_view ident = lex_.ReadIdentifier();
      if (ident.empty()) return lex_.Expected("a type");
      if (lex_.Peek() == '.' && IsIdentStart(lex_.Peek(1))) {
        // A qualified class name such as __torch__.models.MLP.
        while (lex_.Peek() == '.' && IsIdentStart(lex_.Peek(1))) {
          lex_.Advance(1);
          lex_.ReadIdentifier();
        }
        t = Type::Class(std::string(
            lex_.text().substr(at.offset, lex_.position().offset - at.offset)));
      } else {
        ASSIGN_OR_RETURN(t, ParseNamedType(ident, at, depth, &is_tensor));
      }
    }
    // Postfix `[]` (list) and `?` (optional), counted against the depth.
    int postfix = depth;
    while (true) {
      const char c = lex_.Peek();
      if (c == '[' && lex_.Peek(1) == ']') {
        lex_.Advance(2);
        t = Type::List(std::move(t));
      } else if (c == '?') {
        lex_.Advance(1);
        t = Type::Optional(std::move(t));
      } else if (c == '[' && is_tensor && lex_.TryConsume("[Undefined]")) {
        TensorInfo info = t->tensor();
        info.undefined = true;
        t = Type::TensorWith(std::move(info));
        is_tensor = false;
        continue;
      } else {
        break;
      }
      is_tensor = false;
      if (++postfix > kMaxTypeDepth) return lex_.Expected("a less deeply nested type");
    }
    return t;
  }

  absl::StatusOr<TypePtr> ParseNamedType(absl::string_view ident, const TextPosition& at,
                                         int depth, bool* is_tensor) {
    switch (ident[0]) {
      case 'i':
        if (ident == "int") return Type::Int();
        break;
      case 'f':
        if (ident == "float") return Type::Float();
        break;
      case 'b':
        if (ident == "bool") return Type::Bool();
        break;
      case 'c':
        if (ident == "complex") return Type::Complex();
        break;
      case 's':
        if (ident == "str") return Type::Str();
        break;
      case 'N':
        if (ident == "NoneType") return Type::None();
        if (ident == "Number") return Type::Number();
        break;
      case 'S':
        if (ident == "Scalar") return Type::Number();
        if (ident == "ScalarType") return Type::ScalarType();
        break;
      case 'D':
        if (ident == "Device") return Type::DeviceType();
        if (ident == "Dict") {
          RETURN_IF_ERROR(ExpectChar('('));
          lex_.SkipBlanks();
          ASSIGN_OR_RETURN(TypePtr key, ParseType(depth + 1));
          lex_.SkipBlanks();
          RETURN_IF_ERROR(ExpectChar(','));
          lex_.SkipBlanks();
          ASSIGN_OR_RETURN(TypePtr value, ParseType(depth + 1));
          lex_.SkipBlanks();
          RETURN_IF_ERROR(ExpectChar(')'));
          return Type::Dict(std::move(key), std::move(value));
        }
        break;
      case 'L':
        if (ident == "Layout") return Type::Layout();
        break;
      case 'M':
        if (ident == "MemoryFormat") return Type::MemoryFormat();
        break;
      case 'G':
        if (ident == "Generator") return Type::Generator();
        break;
      case 'A':
        if (ident == "Any") return Type::Any();
        break;
      default:
        break;
    }
    // Tensor types: Tensor, Float(...), FloatTensor, FloatTensor(...).
    std::optional<DType> dtype;
    bool rank_known = true;
    if (ident == "Tensor") {
      rank_known = false;
    } else {
      dtype = DTypeFromName(ident);
      if (!dtype && ident.size() > 6 && ident.substr(ident.size() - 6) == "Tensor") {
        dtype = DTypeFromName(ident.substr(0, ident.size() - 6));
        rank_known = false;
      }
      if (!dtype) {
        if (ident.substr(0, 9) == "__torch__") return Type::Class(std::string(ident));
        return Lexer::ErrorAt(at, absl::StrCat("unknown type '", ident, "'"));
      }
    }
    *is_tensor = true;
    if (lex_.Peek() != '(') {
      if (!dtype) return Type::Tensor();
      TensorInfo info;
      info.dtype = dtype;
      if (rank_known) info.sizes.emplace();  // `Float` alone: rank 0
      return Type::TensorWith(std::move(info));
    }
    // A cache keyed by the exact text: real graphs repeat a few tensor types
    // many times.
    const size_t open = lex_.position().offset;
    const size_t close = lex_.text().find(')', open);
    if (close != absl::string_view::npos) {
      auto it = tensor_types_.find(lex_.text().substr(at.offset, close + 1 - at.offset));
      if (it != tensor_types_.end()) {
        lex_.Advance(close + 1 - open);
        return it->second;
      }
    }
    ASSIGN_OR_RETURN(TypePtr t, ParseTensorDetails(dtype, ident == "Tensor", rank_known));
    tensor_types_.emplace(
        lex_.text().substr(at.offset, lex_.position().offset - at.offset), t);
    return t;
  }

  // `(2, *, strides=[..], requires_grad=0, device=cpu)`. For `Tensor(...)`,
  // the rank is known only when dims are written or the list is empty.
  absl::StatusOr<TypePtr> ParseTensorDetails(std::optional<DType> dtype, bool plain_tensor,
                                             bool rank_known) {
    lex_.Advance(1);  // '('
    TensorInfo info;
    info.dtype = dtype;
    std::vector<std::optional<int64_t>> sizes;
    bool any_item = false;
    bool keywords_started = false;
    lex_.SkipBlanks();
    while (!lex_.TryConsume(')')) {
      if (any_item) {
        if (!lex_.TryConsume(',')) return lex_.Expected("',' or ')'");
        lex_.SkipBlanks();
      }
      any_item = true;
      const TextPosition at = lex_.position();
      if (lex_.TryConsume('*')) {
        if (keywords_started || !(rank_known || plain_tensor)) return lex_.ExpectedAt(at, "a keyword");
        sizes.emplace_back();
      } else if (IsDigit(lex_.Peek())) {
        if (keywords_started || !(rank_known || plain_tensor)) return lex_.ExpectedAt(at, "a keyword");
        absl::string_view num = lex_.ReadNumber();
        int64_t d = 0;
        if (!absl::SimpleAtoi(num, &d) || d < 0) return lex_.ExpectedAt(at, "a dimension size");
        sizes.emplace_back(d);
      } else {
        absl::string_view key = lex_.ReadIdentifier();
        keywords_started = true;
        if (!lex_.TryConsume('=')) return lex_.ExpectedAt(at, "'strides=', 'requires_grad=' or 'device='");
        if (key == "strides") {
          RETURN_IF_ERROR(ExpectChar('['));
          std::vector<int64_t> strides;
          while (!lex_.TryConsume(']')) {
            if (!strides.empty()) {
              if (!lex_.TryConsume(',')) return lex_.Expected("',' or ']'");
              lex_.SkipBlanks();
            }
            const TextPosition s_at = lex_.position();
            absl::string_view num = lex_.ReadNumber();
            int64_t s = 0;
            if (!absl::SimpleAtoi(num, &s)) return lex_.ExpectedAt(s_at, "a stride");
            strides.push_back(s);
          }
          if (strides.size() != sizes.size() || sizes.empty()) {
            return Lexer::ErrorAt(at, "strides must have one entry per dimension");
          }
          info.strides = std::move(strides);
        } else if (key == "requires_grad") {
          const char c = lex_.Peek();
          if (c != '0' && c != '1') return lex_.Expected("0 or 1");
          lex_.Advance(1);
          info.requires_grad = c == '1';
        } else if (key == "device") {
          const TextPosition d_at = lex_.position();
          absl::string_view dev = lex_.ReadIdentifier();
          if (dev.empty()) return lex_.ExpectedAt(d_at, "a device such as 'cpu' or 'cuda:0'");
          Device device;
          device.type = std::string(dev);
          if (lex_.TryConsume(':')) {
            const TextPosition i_at = lex_.position();
            absl::string_view idx = lex_.ReadNumber();
            if (!absl::SimpleAtoi(idx, &device.index) || device.index < 0) {
              return lex_.ExpectedAt(i_at, "a device index");
            }
          }
          info.device = std::move(device);
        } else {
          return lex_.ExpectedAt(at, "'strides=', 'requires_grad=' or 'device='");
        }
      }
      lex_.SkipBlanks();
    }
    if (rank_known || (plain_tensor && (!sizes.empty() || !any_item))) {
      info.sizes = std::move(sizes);
    }
    return Type::TensorWith(std::move(info));
  }

  // ------------------------------------------------------------ attributes

  absl::Status ParseAttributes(const TypePtr& out_type) {
    lex_.Advance(1);  // '['
    while (true) {
      lex_.SkipBlanks();
      const TextPosition at = lex_.position();
      absl::string_view name = lex_.ReadIdentifier();
      if (name.empty()) return lex_.Expected("an attribute name");
      Symbol sym;
      auto it = attr_names_.find(name);
      if (it != attr_names_.end()) {
        sym = it->second;
      } else {
        sym = Symbol::Attr(name);
        attr_names_.emplace(name, sym);
      }
      for (const Attribute& a : attrs_scratch_) {
        if (a.name == sym) {
          return Lexer::ErrorAt(at, absl::StrCat("duplicate attribute '", name, "'"));
        }
      }
      RETURN_IF_ERROR(ExpectChar('='));
      ASSIGN_OR_RETURN(AttributeValue value, ParseAttributeValue(out_type));
      attrs_scratch_.push_back(Attribute{sym, std::move(value)});
      lex_.SkipBlanks();
      if (lex_.TryConsume(']')) return absl::OkStatus();
      if (!lex_.TryConsume(',')) return lex_.Expected("',' or ']'");
    }
  }

  // `out_type`, the node's first output type, decides how `<Tensor>`, `{N}`
  // and `[]` are read.
  absl::StatusOr<AttributeValue> ParseAttributeValue(const TypePtr& out_type) {
    lex_.SkipBlanks();
    const TextPosition at = lex_.position();
    const char c = lex_.Peek();
    if (c == '"' || c == '\'') {
      std::string s;
      RETURN_IF_ERROR(lex_.ReadStringLiteral(&s));
      return AttributeValue(std::move(s));
    }
    if (c == '<') {
      if (!lex_.TryConsume("<Tensor>")) return lex_.Expected("'<Tensor>'");
      ASSIGN_OR_RETURN(Tensor t, PlaceholderFor(out_type, at));
      return AttributeValue(std::move(t));
    }
    if (c == '{') {
      lex_.Advance(1);
      lex_.SkipBlanks();
      const TextPosition num_at = lex_.position();
      absl::string_view num = lex_.ReadNumber();
      if (num.empty()) return lex_.Expected("a number");
      lex_.SkipBlanks();
      RETURN_IF_ERROR(ExpectChar('}'));
      const TensorInfo& info = out_type->tensor();
      DType dtype = info.dtype ? *info.dtype : (IsFloatText(num) ? DType::kFloat32 : DType::kInt64);
      std::vector<int64_t> sizes;
      if (info.HasCompleteSizes()) {
        sizes = info.ConcreteSizes();
        bool single = true;
        for (int64_t s : sizes) single = single && s == 1;
        if (!single) sizes.clear();
      }
      auto t = MakeSingleElementTensor(dtype, std::move(sizes), num);
      if (!t.ok()) return Lexer::ErrorAt(num_at, t.status().message());
      return AttributeValue(*std::move(t));
    }
    if (c == '[') return ParseListValue(out_type);
    if (c == '-' || IsDigit(c) || c == 'i' || c == 'n') {
      absl::string_view num = lex_.ReadNumber();
      if (!num.empty()) {
        const TextPosition after = lex_.position();
        lex_.SkipBlanks();
        const char next = lex_.Peek();
        if (next != ',' && next != ']') {
          // More numbers follow: an inline tensor literal.
          lex_.Restore(at);
          auto t = ParseInlineTensor(lex_);
          if (!t.ok()) return t.status();
          return AttributeValue(*std::move(t));
        }
        lex_.Restore(after);
        return NumberValue(num, at);
      }
      if (c == '-') return lex_.Expected("a number");
    }
    if ((c == 'C' && lex_.text().substr(at.offset, 8) == "Columns ") ||
        (c == '(' && IsDigit(lex_.Peek(1)))) {
      // A wide (`Columns 1 to 6 ...`) or n-d (`(1,.,.) = ...`) inline tensor.
      auto t = ParseInlineTensor(lex_);
      if (!t.ok()) return t.status();
      return AttributeValue(*std::move(t));
    }
    if (IsIdentStart(c) || c == '(') {
      ASSIGN_OR_RETURN(TypePtr t, ParseType(0));
      return AttributeValue(std::move(t));
    }
    return lex_.Expected("an attribute value");
  }

  absl::StatusOr<AttributeValue> NumberValue(absl::string_view num, const TextPosition& at) {
    if (IsFloatText(num)) {
      double d = 0;
      if (num == "nan" || num == "-nan") {
        d = std::numeric_limits<double>::quiet_NaN();
      } else if (!absl::SimpleAtod(num, &d)) {
        return Lexer::ErrorAt(at, absl::StrCat("invalid number '", num, "'"));
      }
      return AttributeValue(d);
    }
    int64_t i = 0;
    if (!absl::SimpleAtoi(num, &i)) {
      return Lexer::ErrorAt(at, absl::StrCat("integer '", num, "' is out of range"));
    }
    return AttributeValue(i);
  }

  // `[1, 2]`, `[1.5, 2.]`, `["a", "b"]`, `[int, float]`, `[]`, or an empty
  // inline tensor `[ CPUFloatType{0} ]`.
  absl::StatusOr<AttributeValue> ParseListValue(const TypePtr& out_type) {
    const TextPosition at = lex_.position();
    lex_.Advance(1);
    lex_.SkipBlanks();
    if (lex_.TryConsume(']')) {
      if (out_type->kind() == TypeKind::kList) {
        const TypeKind elem = out_type->contained()[0]->kind();
        if (elem == TypeKind::kFloat) return AttributeValue(std::vector<double>());
        if (elem == TypeKind::kStr) return AttributeValue(std::vector<std::string>());
      }
      return AttributeValue(std::vector<int64_t>());
    }
    if (lex_.Peek() == 'C' && lex_.Peek(1) == 'P' && lex_.Peek(2) == 'U') {
      lex_.Restore(at);
      auto t = ParseInlineTensor(lex_);
      if (!t.ok()) return t.status();
      return AttributeValue(*std::move(t));
    }
    enum class Elem { kNone, kInt, kFloat, kString, kType } kind = Elem::kNone;
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<std::string> strings;
    std::vector<TypePtr> types;
    while (true) {
      const TextPosition e_at = lex_.position();
      const char c = lex_.Peek();
      Elem this_kind;
      if (c == '"' || c == '\'') {
        std::string s;
        RETURN_IF_ERROR(lex_.ReadStringLiteral(&s));
        strings.push_back(std::move(s));
        this_kind = Elem::kString;
      } else if (absl::string_view num = lex_.ReadNumber(); !num.empty()) {
        ASSIGN_OR_RETURN(AttributeValue v, NumberValue(num, e_at));
        if (std::holds_alternative<double>(v)) {
          floats.push_back(std::get<double>(v));
          this_kind = Elem::kFloat;
        } else {
          ints.push_back(std::get<int64_t>(v));
          floats.push_back(static_cast<double>(std::get<int64_t>(v)));
          this_kind = Elem::kInt;
        }
      } else if (IsIdentStart(c) || c == '(') {
        ASSIGN_OR_RETURN(TypePtr t, ParseType(0));
        types.push_back(std::move(t));
        this_kind = Elem::kType;
      } else {
        return lex_.Expected("a list element");
      }
      const bool numeric = (this_kind == Elem::kInt || this_kind == Elem::kFloat) &&
                           (kind == Elem::kInt || kind == Elem::kFloat);
      if (kind == Elem::kNone || numeric) {
        if (kind != Elem::kFloat) kind = this_kind;
      } else if (kind != this_kind) {
        return Lexer::ErrorAt(e_at, "list elements must all have the same kind");
      }
      lex_.SkipBlanks();
      if (lex_.TryConsume(']')) break;
      if (!lex_.TryConsume(',')) return lex_.Expected("',' or ']'");
      lex_.SkipBlanks();
    }
    switch (kind) {
      case Elem::kInt: return AttributeValue(std::move(ints));
      case Elem::kFloat: return AttributeValue(std::move(floats));
      case Elem::kString: return AttributeValue(std::move(strings));
      default: return AttributeValue(std::move(types));
    }
  }

  static absl::StatusOr<Tensor> PlaceholderFor(const TypePtr& type, const TextPosition& at) {
    const TensorInfo& info = type->tensor();
    const DType dtype = info.dtype ? *info.dtype : DType::kFloat32;
    if (!info.HasCompleteSizes()) return Tensor::Placeholder(dtype, {});
    std::vector<int64_t> sizes = info.ConcreteSizes();
    if (!NumelFits(sizes)) return Lexer::ErrorAt(at, "tensor shape is too large");
    return Tensor::Placeholder(dtype, std::move(sizes),
                               info.strides ? *info.strides : std::vector<int64_t>());
  }

  // The element count (and so every contiguous stride) fits in int64.
  static bool NumelFits(const std::vector<int64_t>& sizes) {
    int64_t n = 1;
    for (int64_t s : sizes) {
      if (__builtin_mul_overflow(n, s, &n)) return false;
    }
    return true;
  }

  Lexer lex_;
  std::unique_ptr<Graph> graph_;
  std::vector<PendingName> pending_;
  std::vector<TypePtr> types_scratch_;
  absl::flat_hash_map<absl::string_view, Symbol> kinds_;
  absl::flat_hash_map<absl::string_view, Symbol> attr_names_;
  absl::flat_hash_map<absl::string_view, TypePtr> tensor_types_;
  // Every defined value by name (views into the text); the graph's own name
  // table gets the same names.
  // The defining block is kept here so that checking scope on each use does
  // not have to touch the producing node.
  std::vector<Value*> inputs_scratch_;
  std::vector<Attribute> attrs_scratch_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text) {
  return Parser(text).Run();
}

}  // namespace kiln::ir
