#include "tools/terminal.h"

#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::tools {
namespace {

// The length of the UTF-8 sequence starting at text[i] and its code point,
// or 0 when the bytes there are not valid UTF-8.
size_t Utf8Sequence(absl::string_view text, size_t i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinimum[length] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 0;
  *code_point = cp;
  return length;
}

}  // namespace

std::string Printable(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t length = Utf8Sequence(text, i, &cp);
    if (length == 0) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
      ++i;
    } else if (cp <= 0x9F) {
      absl::StrAppendFormat(&out, "\\u%04x", cp);
      i += length;
    } else {
      out.append(text.data() + i, length);
      i += length;
    }
  }
  return out;
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

Progress::Progress(std::string what, int total, bool enabled)
    : what_(std::move(what)), total_(total), active_(enabled && StderrIsTerminal()) {}

Progress::~Progress() { Done(); }

void Progress::Update(int done, absl::string_view item) {
  if (!active_) return;
  const auto now = std::chrono::steady_clock::now();
  if (shown_ && now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  shown_ = true;
  // \r and "erase to the end of the line": the line is rewritten in place.
  std::string line = absl::StrCat("\r\x1b[K", what_, " [", done + 1, "/", total_, "] ",
                                  Printable(item));
  // Keep it on one line of a narrow terminal; cut between UTF-8 sequences.
  constexpr size_t kMaxBytes = 100;
  if (line.size() > kMaxBytes) {
    size_t cut = kMaxBytes;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line.resize(cut);
  }
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Progress::Done() {
  if (!shown_) return;
  std::fputs("\r\x1b[K", stderr);
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace kiln::tools
