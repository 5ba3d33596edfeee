#include "ir/lexer.h"

#include "absl/strings/str_cat.h"

namespace kiln::ir {

void Lexer::SkipWhitespaceAndComments() {
  const size_t n = text_.size();
  size_t i = pos_.offset;
  while (i < n) {
    const char c = text_[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '\n') {
      ++i;
      ++pos_.line;
      pos_.line_start = i;
    } else if (c == '#') {
      while (i < n && text_[i] != '\n') ++i;
    } else {
      break;
    }
  }
  pos_.offset = i;
}

bool Lexer::TryConsume(absl::string_view s) {
  if (text_.size() - pos_.offset < s.size()) return false;
  if (text_.substr(pos_.offset, s.size()) != s) return false;
  pos_.offset += s.size();
  return true;
}

absl::string_view Lexer::ReadIdentifier() {
  const size_t start = pos_.offset;
  const size_t n = text_.size();
  if (start >= n || !IsIdentStart(text_[start])) return {};
  size_t i = start + 1;
  while (i < n && IsIdentChar(text_[i])) ++i;
  pos_.offset = i;
  return text_.substr(start, i - start);
}

absl::string_view Lexer::ReadValueName() {
  const size_t start = pos_.offset;
  const size_t n = text_.size();
  size_t i = start;
  while (true) {
    const size_t seg = i;
    while (i < n && IsIdentChar(text_[i])) ++i;
    if (i == seg) {
      // An empty segment: back off the dot that introduced it, if any.
      if (seg > start) i = seg - 1;
      break;
    }
    if (i < n && text_[i] == '.') {
      ++i;
      continue;
    }
    break;
  }
  pos_.offset = i;
  return text_.substr(start, i - start);
}

absl::string_view Lexer::ReadNumber() {
  const size_t start = pos_.offset;
  const size_t n = text_.size();
  size_t i = start;
  if (i < n && text_[i] == '-') ++i;
  auto word_at = [&](size_t at, absl::string_view w) {
    return n - at >= w.size() && text_.substr(at, w.size()) == w &&
           (at + w.size() >= n || !IsIdentChar(text_[at + w.size()]));
  };
  if (word_at(i, "inf") || word_at(i, "nan")) {
    pos_.offset = i + 3;
    return text_.substr(start, pos_.offset - start);
  }
  const size_t digits_start = i;
  while (i < n && IsDigit(text_[i])) ++i;
  if (i == digits_start) return {};
  if (i < n && text_[i] == '.') {
    ++i;
    while (i < n && IsDigit(text_[i])) ++i;
  }
  if (i < n && (text_[i] == 'e' || text_[i] == 'E')) {
    size_t j = i + 1;
    if (j < n && (text_[j] == '+' || text_[j] == '-')) ++j;
    const size_t exp_start = j;
    while (j < n && IsDigit(text_[j])) ++j;
    if (j > exp_start) i = j;  // otherwise the `e` is not part of the number
  }
  pos_.offset = i;
  return text_.substr(start, i - start);
}

absl::Status Lexer::ReadStringLiteral(std::string* out) {
  out->clear();
  const char quote = Peek();
  if (quote != '"' && quote != '\'') return Expected("a string literal");
  const TextPosition open = pos_;
  ++pos_.offset;
  const size_t n = text_.size();
  while (true) {
    if (pos_.offset >= n || text_[pos_.offset] == '\n') {
      return ErrorAt(open, "unterminated string literal");
    }
    const char c = text_[pos_.offset];
    if (c == quote) {
      ++pos_.offset;
      return absl::OkStatus();
    }
    if (c != '\\') {
      out->push_back(c);
      ++pos_.offset;
      continue;
    }
    const TextPosition escape = pos_;
    ++pos_.offset;
    if (pos_.offset >= n) return ErrorAt(open, "unterminated string literal");
    const char e = text_[pos_.offset++];
    switch (e) {
      case '\\': out->push_back('\\'); break;
      case '\'': out->push_back('\''); break;
      case '"': out->push_back('"'); break;
      case 'a': out->push_back('\a'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'v': out->push_back('\v'); break;
      default: {
        // Three octal digits, as c10::printQuotedString writes
        // non-printable bytes.
        if (e >= '0' && e <= '7' && pos_.offset + 1 < n) {
          const char d1 = text_[pos_.offset];
          const char d2 = text_[pos_.offset + 1];
          if (d1 >= '0' && d1 <= '7' && d2 >= '0' && d2 <= '7') {
            const int value = (e - '0') * 64 + (d1 - '0') * 8 + (d2 - '0');
            if (value < 256) {
              out->push_back(static_cast<char>(value));
              pos_.offset += 2;
              break;
            }
          }
        }
        return ErrorAt(escape, "invalid escape sequence in string literal");
      }
    }
  }
}

absl::string_view Lexer::ReadRestOfLine() {
  const size_t start = pos_.offset;
  size_t i = start;
  const size_t n = text_.size();
  while (i < n && text_[i] != '\n') ++i;
  size_t end = i;
  if (end > start && text_[end - 1] == '\r') --end;
  pos_.offset = i;
  return text_.substr(start, end - start);
}

std::string Lexer::Describe(const TextPosition& at) const {
  const size_t n = text_.size();
  size_t i = at.offset;
  if (i >= n) return "end of input";
  const char c = text_[i];
  if (c == '\n' || c == '\r') return "end of line";
  size_t end = i + 1;
  if (IsIdentChar(c)) {
    while (end < n && IsIdentChar(text_[end]) && end - i < 40) ++end;
  }
  if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    return absl::StrCat("byte 0x", absl::Hex(static_cast<unsigned char>(c),
                                             absl::kZeroPad2));
  }
  return absl::StrCat("'", text_.substr(i, end - i), "'");
}

absl::Status Lexer::ErrorAt(const TextPosition& at, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("line ", at.line, ", column ", at.column(), ": ", message));
}

absl::Status Lexer::ExpectedAt(const TextPosition& at, absl::string_view what) const {
  return ErrorAt(at, absl::StrCat("expected ", what, " but found ", Describe(at)));
}

absl::Status Lexer::Expected(absl::string_view what) const {
  return ExpectedAt(pos_, what);
}

}  // namespace kiln::ir
