// Reproducers for failing or crashing passes, and the files of --dump-dir.
//
// A reproducer is IR text (the graph just before the failing pass) preceded
// by `#` comment lines that the IR parser skips:
//
//   # kiln reproducer: pass 'cse' produced an invalid graph: ...
//   # kiln-pipeline: cse,fixpoint(dead_code_elimination,cse),canonicalize
//   graph(%x : Tensor):
//     ...
//
// so `kiln opt --passes="$(sed -n 's/^# kiln-pipeline: //p' r.txt)" r.txt`
// replays the failure.
#ifndef KILN_PASSES_REPRODUCER_H_
#define KILN_PASSES_REPRODUCER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::passes {

constexpr char kReproducerFileName[] = "reproducer.txt";
constexpr char kReproducerPipelinePrefix[] = "# kiln-pipeline: ";

std::string FormatReproducer(absl::string_view reason, absl::string_view pipeline,
                             absl::string_view ir_text);
// The `# kiln-pipeline:` line of a reproducer; NotFound if there is none.
absl::StatusOr<std::string> ReproducerPipeline(absl::string_view reproducer);

// Creates `dir` (and parents) if needed.
absl::Status EnsureDirectory(absl::string_view dir);
absl::Status WriteFile(absl::string_view path, absl::string_view contents);
// Writes <dir>/reproducer.txt and returns its path.
absl::StatusOr<std::string> WriteReproducer(absl::string_view dir, absl::string_view reason,
                                            absl::string_view pipeline,
                                            absl::string_view ir_text);

// While alive, a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT)
// writes the armed reproducer, then re-raises the signal with the previous
// handler restored. Best effort: the file is prepared before the pass runs,
// so the handler only calls open/write/close. Scopes nest (the innermost
// wins); they are not thread-safe, like the graph they protect.
class CrashReproducerScope {
 public:
  CrashReproducerScope();
  ~CrashReproducerScope();
  CrashReproducerScope(const CrashReproducerScope&) = delete;
  CrashReproducerScope& operator=(const CrashReproducerScope&) = delete;

  // What to write, and where, if the process dies before the next Arm.
  void Arm(std::string path, std::string contents, absl::string_view pass);

  struct State;  // defined in reproducer.cc; public for the signal handler

 private:
  State* state_;
  State* previous_;
};

}  // namespace kiln::passes

#endif  // KILN_PASSES_REPRODUCER_H_
