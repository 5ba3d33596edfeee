// What kiln prints for people: names from a model made safe for a terminal,
// and a progress line for long work when stderr is a terminal.
#ifndef KILN_TOOLS_TERMINAL_H_
#define KILN_TOOLS_TERMINAL_H_

#include <chrono>
#include <string>

#include "absl/strings/string_view.h"

namespace kiln::tools {

// `text` with every byte a terminal could act on escaped: C0 controls and
// DEL as \xNN (so "\x1b[2J" cannot clear the screen), C1 controls
// (U+0080..U+009F, e.g. the 8-bit CSI) as \u00NN, and bytes that are not
// UTF-8 as \xNN. Everything else, including valid UTF-8, is unchanged.
// Names in a model are untrusted: they go through this before any output.
std::string Printable(absl::string_view text);

// Whether stderr is a terminal (and so wants progress lines).
bool StderrIsTerminal();

// "[12/930] test_add_bcast": one line on stderr, rewritten in place, at most
// every 100 ms; cleared when done. Silent when stderr is not a terminal (a
// log, a pipe, CI) or when `enabled` is false.
class Progress {
 public:
  Progress(std::string what, int total, bool enabled = true);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Item `done` + 1 of total is starting; `item` names it.
  void Update(int done, absl::string_view item);
  // Clears the line (also done by the destructor).
  void Done();

 private:
  std::string what_;
  int total_;
  bool active_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace kiln::tools

#endif  // KILN_TOOLS_TERMINAL_H_
