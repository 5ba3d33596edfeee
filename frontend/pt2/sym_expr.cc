#include "frontend/pt2/sym_expr.h"

#include <algorithm>
#include <cctype>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status.h"

namespace kiln::frontend::pt2 {

// Recursive descent over sympy's str() and srepr() forms.
class SymExprParser {
 public:
  using NodePtr = std::shared_ptr<const SymExpr::Node>;
  explicit SymExprParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<SymExpr> Run() {
    ASSIGN_OR_RETURN(NodePtr n, Additive());
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text");
    return SymExpr(std::move(n));
  }

 private:
  static constexpr int kMaxDepth = 64;

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("symbolic expression '", text_.substr(0, 200),
                                                   "': ", what, " at character ", pos_));
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Eat(absl::string_view token) {
    SkipSpace();
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  bool Peek(absl::string_view token) {
    SkipSpace();
    return text_.substr(pos_, token.size()) == token;
  }

  static NodePtr Make(SymExpr::Op op, std::vector<NodePtr> args, int64_t value = 0,
                      std::string name = "") {
    auto n = std::make_shared<SymExpr::Node>();
    n->op = op;
    n->value = value;
    n->name = std::move(name);
    for (const NodePtr& a : args) n->depth = std::max(n->depth, a->depth + 1);
    n->args = std::move(args);
    return n;
  }
  static NodePtr Negate(NodePtr n) {
    return Make(SymExpr::Op::kMul, {Make(SymExpr::Op::kConstant, {}, -1), std::move(n)});
  }

  struct DepthGuard {
    explicit DepthGuard(int* d) : depth(d) { ++*depth; }
    ~DepthGuard() { --*depth; }
    int* depth;
  };

  absl::StatusOr<NodePtr> Additive() {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) return Error("nested too deeply");
    ASSIGN_OR_RETURN(NodePtr lhs, Multiplicative());
    std::vector<NodePtr> terms = {lhs};
    for (;;) {
      if (Eat("+")) {
        ASSIGN_OR_RETURN(NodePtr t, Multiplicative());
        terms.push_back(std::move(t));
      } else if (Eat("-")) {
        ASSIGN_OR_RETURN(NodePtr t, Multiplicative());
        terms.push_back(Negate(std::move(t)));
      } else {
        break;
      }
    }
    return terms.size() == 1 ? terms[0] : Make(SymExpr::Op::kAdd, std::move(terms));
  }

  absl::StatusOr<NodePtr> Multiplicative() {
    ASSIGN_OR_RETURN(NodePtr lhs, Unary());
    for (;;) {
      if (Peek("**")) break;  // handled by Power
      SymExpr::Op op;
      if (Eat("//")) op = SymExpr::Op::kFloorDiv;
      else if (Eat("*")) op = SymExpr::Op::kMul;
      else if (Eat("/")) op = SymExpr::Op::kExactDiv;
      else if (Eat("%")) op = SymExpr::Op::kMod;
      else break;
      ASSIGN_OR_RETURN(NodePtr rhs, Unary());
      lhs = Make(op, {std::move(lhs), std::move(rhs)});
      if (lhs->depth > kMaxDepth) return Error("nested too deeply");
    }
    return lhs;
  }

  absl::StatusOr<NodePtr> Unary() {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) return Error("nested too deeply");
    if (Eat("-")) {
      ASSIGN_OR_RETURN(NodePtr n, Unary());
      return Negate(std::move(n));
    }
    if (Eat("+")) return Unary();
    return Power();
  }

  absl::StatusOr<NodePtr> Power() {
    ASSIGN_OR_RETURN(NodePtr base, Atom());
    if (Eat("**")) {
      ASSIGN_OR_RETURN(NodePtr exponent, Unary());
      return Make(SymExpr::Op::kPow, {std::move(base), std::move(exponent)});
    }
    return base;
  }

  absl::StatusOr<std::string> Identifier() {
    SkipSpace();
    const size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    if (start == pos_) return Error("expected a name or a number");
    return std::string(text_.substr(start, pos_ - start));
  }

  absl::StatusOr<std::string> StringLiteral() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return Error("expected a quoted name");
    }
    const char quote = text_[pos_++];
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) ++pos_;
    if (pos_ >= text_.size()) return Error("unterminated string");
    return std::string(text_.substr(start, pos_++ - start));
  }

  // Arguments of a call, after '('; keyword arguments (`positive=True`) are
  // skipped.
  absl::StatusOr<std::vector<NodePtr>> Arguments() {
    std::vector<NodePtr> args;
    if (Eat(")")) return args;
    for (;;) {
      const size_t save = pos_;
      absl::StatusOr<std::string> name = Identifier();
      if (name.ok() && Eat("=")) {
        RETURN_IF_ERROR(Identifier().status());
      } else {
        pos_ = save;
        ASSIGN_OR_RETURN(NodePtr a, Additive());
        args.push_back(std::move(a));
      }
      if (Eat(")")) return args;
      if (!Eat(",")) return Error("expected ',' or ')'");
    }
  }

  absl::StatusOr<NodePtr> Call(const std::string& fn) {
    if (fn == "Symbol") {
      ASSIGN_OR_RETURN(std::string name, StringLiteral());
      while (Eat(",")) {  // assumptions: positive=True, integer=True
        RETURN_IF_ERROR(Identifier().status());
        if (!Eat("=")) return Error("expected '=' in a Symbol assumption");
        RETURN_IF_ERROR(Identifier().status());
      }
      if (!Eat(")")) return Error("expected ')'");
      return Make(SymExpr::Op::kSymbol, {}, 0, std::move(name));
    }
    ASSIGN_OR_RETURN(std::vector<NodePtr> args, Arguments());
    auto arity = [&](size_t n) -> absl::Status {
      if (args.size() != n) return Error(absl::StrCat(fn, " takes ", n, " arguments"));
      return absl::OkStatus();
    };
    if (fn == "Integer") {
      RETURN_IF_ERROR(arity(1));
      if (args[0]->op != SymExpr::Op::kConstant &&
          !(args[0]->op == SymExpr::Op::kMul && args[0]->args[1]->op == SymExpr::Op::kConstant)) {
        return Error("Integer() takes a number");
      }
      return args[0];
    }
    if (fn == "Add" || fn == "Mul" || fn == "Min" || fn == "Max") {
      if (args.empty()) return Error(absl::StrCat(fn, "() needs arguments"));
      const SymExpr::Op op = fn == "Add"   ? SymExpr::Op::kAdd
                             : fn == "Mul" ? SymExpr::Op::kMul
                             : fn == "Min" ? SymExpr::Op::kMin
                                           : SymExpr::Op::kMax;
      return args.size() == 1 ? args[0] : Make(op, std::move(args));
    }
    if (fn == "Pow") {
      RETURN_IF_ERROR(arity(2));
      return Make(SymExpr::Op::kPow, std::move(args));
    }
    if (fn == "FloorDiv") {
      RETURN_IF_ERROR(arity(2));
      return Make(SymExpr::Op::kFloorDiv, std::move(args));
    }
    if (fn == "Mod" || fn == "PythonMod") {
      RETURN_IF_ERROR(arity(2));
      return Make(SymExpr::Op::kMod, std::move(args));
    }
    if (fn == "CleanDiv") {
      RETURN_IF_ERROR(arity(2));
      return Make(SymExpr::Op::kExactDiv, std::move(args));
    }
    return Error(absl::StrCat("unsupported function '", fn, "'"));
  }

  absl::StatusOr<NodePtr> Atom() {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxDepth) return Error("nested too deeply");
    SkipSpace();
    if (Eat("(")) {
      ASSIGN_OR_RETURN(NodePtr n, Additive());
      if (!Eat(")")) return Error("expected ')'");
      return n;
    }
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e')) {
        return Error("non-integer numbers are not supported");
      }
      int64_t v = 0;
      if (!absl::SimpleAtoi(text_.substr(start, pos_ - start), &v)) return Error("integer too large");
      return Make(SymExpr::Op::kConstant, {}, v);
    }
    ASSIGN_OR_RETURN(std::string name, Identifier());
    if (std::isdigit(static_cast<unsigned char>(name[0]))) return Error("malformed name");
    if (Eat("(")) return Call(name);
    if (name == "oo" || name == "zoo" || name == "nan" || name == "True" || name == "False") {
      return Error(absl::StrCat("'", name, "' is not an integer"));
    }
    return Make(SymExpr::Op::kSymbol, {}, 0, std::move(name));
  }

  absl::string_view text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

absl::StatusOr<SymExpr> SymExpr::Parse(absl::string_view text) { return SymExprParser(text).Run(); }

SymExpr SymExpr::Constant(int64_t v) {
  auto n = std::make_shared<Node>();
  n->op = Op::kConstant;
  n->value = v;
  return SymExpr(std::move(n));
}

SymExpr SymExpr::Symbol(std::string name) {
  auto n = std::make_shared<Node>();
  n->op = Op::kSymbol;
  n->name = std::move(name);
  return SymExpr(std::move(n));
}

std::optional<int64_t> SymExpr::AsConstant() const {
  if (!symbols().empty()) return std::nullopt;
  absl::StatusOr<int64_t> v = Eval(*node_, {});
  if (!v.ok()) return std::nullopt;
  return *v;
}

std::optional<std::string> SymExpr::AsSymbol() const {
  if (node_->op == Op::kSymbol) return node_->name;
  return std::nullopt;
}

std::set<std::string> SymExpr::symbols() const {
  std::set<std::string> out;
  std::vector<const Node*> stack = {node_.get()};
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    if (n->op == Op::kSymbol) out.insert(n->name);
    for (const auto& a : n->args) stack.push_back(a.get());
  }
  return out;
}

absl::StatusOr<int64_t> SymExpr::Evaluate(
    const absl::flat_hash_map<std::string, int64_t>& bindings) const {
  return Eval(*node_, bindings);
}

namespace {

absl::Status Overflow() { return absl::InvalidArgumentError("symbolic expression overflows int64"); }

int64_t FloorDivide(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

absl::StatusOr<int64_t> SymExpr::Eval(const Node& n,
                                      const absl::flat_hash_map<std::string, int64_t>& bindings) {
  switch (n.op) {
    case Op::kConstant:
      return n.value;
    case Op::kSymbol: {
      auto it = bindings.find(n.name);
      if (it == bindings.end()) return absl::NotFoundError(absl::StrCat("symbol ", n.name, " is unbound"));
      return it->second;
    }
    default:
      break;
  }
  std::vector<int64_t> v;
  v.reserve(n.args.size());
  for (const auto& a : n.args) {
    ASSIGN_OR_RETURN(int64_t x, Eval(*a, bindings));
    v.push_back(x);
  }
  switch (n.op) {
    case Op::kAdd: {
      int64_t s = 0;
      for (int64_t x : v) {
        if (__builtin_add_overflow(s, x, &s)) return Overflow();
      }
      return s;
    }
    case Op::kMul: {
      int64_t p = 1;
      for (int64_t x : v) {
        if (__builtin_mul_overflow(p, x, &p)) return Overflow();
      }
      return p;
    }
    case Op::kPow: {
      if (v[1] < 0) return absl::InvalidArgumentError("symbolic expression: negative exponent");
      if (v[0] == 0) return v[1] == 0 ? 1 : 0;
      if (v[0] == 1) return 1;
      if (v[0] == -1) return v[1] % 2 ? -1 : 1;
      int64_t p = 1;  // |base| >= 2: overflows within 63 steps
      for (int64_t i = 0; i < v[1]; ++i) {
        if (__builtin_mul_overflow(p, v[0], &p)) return Overflow();
      }
      return p;
    }
    case Op::kFloorDiv:
    case Op::kMod:
    case Op::kExactDiv: {
      if (v[1] == 0) return absl::InvalidArgumentError("symbolic expression divides by zero");
      if (v[0] == INT64_MIN && v[1] == -1) return Overflow();
      const int64_t q = FloorDivide(v[0], v[1]);
      const int64_t r = v[0] - q * v[1];
      if (n.op == Op::kMod) return r;
      if (n.op == Op::kExactDiv && r != 0) {
        return absl::InvalidArgumentError("symbolic expression: inexact division");
      }
      return q;
    }
    case Op::kMin:
    case Op::kMax: {
      int64_t r = v[0];
      for (int64_t x : v) r = n.op == Op::kMin ? std::min(r, x) : std::max(r, x);
      return r;
    }
    default:
      return absl::InternalError("bad symbolic expression node");
  }
}

namespace {

// Binding strength in sympy's str() form.
int Precedence(SymExpr::Op op) {
  switch (op) {
    case SymExpr::Op::kAdd: return 1;
    case SymExpr::Op::kMul:
    case SymExpr::Op::kFloorDiv:
    case SymExpr::Op::kExactDiv: return 2;
    case SymExpr::Op::kPow: return 3;
    default: return 4;  // constants, symbols, calls
  }
}

}  // namespace

void SymExpr::Print(const Node& n, std::string* out) {
  const int mine = Precedence(n.op);
  // Children of associative ops need parentheses when they bind more
  // loosely; of //, / and ** also when they bind the same.
  const bool strict = n.op != Op::kAdd && n.op != Op::kMul;
  auto child = [&](const Node& c) {
    const int theirs = Precedence(c.op);
    const bool parens = (theirs < mine || (strict && theirs == mine)) ||
                        (c.op == Op::kConstant && c.value < 0 && mine >= 2);
    if (parens) out->push_back('(');
    Print(c, out);
    if (parens) out->push_back(')');
  };
  auto join = [&](absl::string_view sep) {
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (i) out->append(sep.data(), sep.size());
      child(*n.args[i]);
    }
  };
  auto call = [&](absl::string_view name) {
    out->append(name.data(), name.size());
    out->push_back('(');
    for (size_t i = 0; i < n.args.size(); ++i) {
      if (i) out->append(", ");
      Print(*n.args[i], out);
    }
    out->push_back(')');
  };
  switch (n.op) {
    case Op::kConstant: absl::StrAppend(out, n.value); return;
    case Op::kSymbol: out->append(n.name); return;
    case Op::kAdd: join(" + "); return;
    case Op::kMul: join("*"); return;
    case Op::kPow: join("**"); return;
    case Op::kFloorDiv: join("//"); return;
    case Op::kExactDiv: join("/"); return;
    case Op::kMod: call("Mod"); return;
    case Op::kMin: call("Min"); return;
    case Op::kMax: call("Max"); return;
  }
}

std::string SymExpr::ToString() const {
  std::string out;
  Print(*node_, &out);
  return out;
}

}  // namespace kiln::frontend::pt2
