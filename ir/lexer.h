// A cursor over IR text for the hand-written TorchScript IR parser.
//
// The IR grammar is simple enough that the parser pulls characters and small
// lexemes (identifiers, numbers, value names, string literals) straight from
// the buffer; nothing is copied except decoded string literals. Lexemes are
// string_views into the original text, so the text must outlive them.
// Positions are 1-based lines and byte columns, as error messages show them.
#ifndef KILN_IR_LEXER_H_
#define KILN_IR_LEXER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kiln::ir {

struct TextPosition {
  size_t offset = 0;
  uint32_t line = 1;
  size_t line_start = 0;  // offset of the first byte of `line`
  uint32_t column() const { return static_cast<uint32_t>(offset - line_start + 1); }
};

class Lexer {
 public:
  explicit Lexer(absl::string_view text) : text_(text) {}

  // Skips blanks, newlines and `#` comments (which run to the end of line).
  void SkipWhitespaceAndComments();
  // Skips spaces, tabs and carriage returns, staying on the current line.
  void SkipBlanks() {
    while (pos_.offset < text_.size()) {
      const char c = text_[pos_.offset];
      if (c != ' ' && c != '\t' && c != '\r') break;
      ++pos_.offset;
    }
  }

  bool AtEnd() const { return pos_.offset >= text_.size(); }
  // The character `ahead` bytes on, or '\0' past the end.
  char Peek(size_t ahead = 0) const {
    const size_t i = pos_.offset + ahead;
    return i < text_.size() ? text_[i] : '\0';
  }
  bool TryConsume(char c) {
    if (Peek() != c) return false;
    ++pos_.offset;
    return true;
  }
  bool TryConsume(absl::string_view s);
  void Advance(size_t n) { pos_.offset += n; }

  // [A-Za-z_][A-Za-z0-9_]*, or empty (nothing consumed).
  absl::string_view ReadIdentifier();
  // A value name after `%`: runs of [A-Za-z0-9_] joined by single dots
  // (`x`, `x.1`, `self.layer1.0.conv1.weight`, `3948`); empty if none.
  absl::string_view ReadValueName();
  // `-`? then digits[.digits][e[+-]digits], or `.` forms like `1.`, or
  // `inf` / `nan`. Empty (nothing consumed) if there is no number here.
  absl::string_view ReadNumber();
  // A single- or double-quoted literal with Python-style escapes, decoded
  // into `out`. On failure returns an error and leaves the position at the
  // offending byte.
  absl::Status ReadStringLiteral(std::string* out);
  // The text up to (not including) the end of the line; consumes it.
  absl::string_view ReadRestOfLine();

  const TextPosition& position() const { return pos_; }
  void Restore(const TextPosition& p) { pos_ = p; }
  absl::string_view text() const { return text_; }

  // "line L, column C: expected <what> but found <current lexeme>".
  absl::Status Expected(absl::string_view what) const;
  absl::Status ExpectedAt(const TextPosition& at, absl::string_view what) const;
  // "line L, column C: <message>".
  static absl::Status ErrorAt(const TextPosition& at, absl::string_view message);
  // A short quoted description of the lexeme at `at` ("'='", "end of input").
  std::string Describe(const TextPosition& at) const;

 private:
  absl::string_view text_;
  TextPosition pos_;
};

inline bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

}  // namespace kiln::ir

#endif  // KILN_IR_LEXER_H_
