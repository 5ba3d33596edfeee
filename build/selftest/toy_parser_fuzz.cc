// Fuzz target for a toy s-expression evaluator (proof for kiln_cc_fuzz_test).
#include <cstddef>
#include <cstdint>
#include <string>

namespace {

struct Parser {
  const std::string& s;
  size_t pos = 0;
  int depth = 0;

  void Skip() {
    while (pos < s.size() && s[pos] == ' ') ++pos;
  }
  // expr := int | '(' op expr* ')'
  bool Expr(long long* out) {
    Skip();
    if (pos >= s.size() || ++depth > 64) return false;
    if (s[pos] == '(') {
      ++pos;
      size_t start = pos;
      while (pos < s.size() && s[pos] >= 'a' && s[pos] <= 'z') ++pos;
      std::string op = s.substr(start, pos - start);
      long long acc = op == "mul" ? 1 : 0, v = 0;
      bool first = true;
      for (;;) {
        Skip();
        if (pos >= s.size()) return false;
        if (s[pos] == ')') break;
        if (!Expr(&v)) return false;
        if (op == "add") acc += v % 1000000;
        else if (op == "mul") acc = (acc * (v % 1000)) % 1000000;
        else if (op == "sub") acc = first ? v : acc - v % 1000000;
        else if (op == "neg") acc = -(v % 1000000);
        else return false;
        first = false;
      }
      ++pos;
      --depth;
      *out = acc;
      return true;
    }
    long long v = 0;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - start < 9) {
      v = v * 10 + (s[pos++] - '0');
    }
    --depth;
    *out = v;
    return pos > start;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  Parser p{input};
  long long v = 0;
  p.Expr(&v);
  return 0;
}
