#include "tools/cli.h"

#include <algorithm>
#include <cstdio>
#include <new>
#include <string>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tools/version.h"

// Why not absl::ParseCommandLine: it knows nothing of subcommands (every flag
// of every command would be accepted everywhere), exits with status 1 on an
// unknown flag and prints multi-line diagnostics, while kiln promises exit
// status 2 and a one-line error. The flags themselves are still ordinary
// ABSL_FLAGs, set through absl's own parsers (CommandLineFlag::ParseFrom).

namespace kiln::tools {
namespace {

bool IsHelpArg(absl::string_view arg) {
  return arg == "--help" || arg == "-help" || arg == "-h" || arg == "--helpfull";
}

const Command* FindCommand(absl::Span<const Command> commands, absl::string_view name) {
  for (const Command& command : commands) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

void PrintTopLevelHelp(absl::Span<const Command> commands, FILE* out) {
  std::string text =
      "kiln: command-line driver of the kiln tensor compiler.\n\n"
      "usage: kiln <command> [flags] [args]\n\ncommands:\n";
  size_t width = 0;
  for (const Command& command : commands) width = std::max(width, command.name.size());
  for (const Command& command : commands) {
    absl::StrAppend(&text, "  ", command.name, std::string(width + 3 - command.name.size(), ' '),
                    command.summary, "\n");
  }
  absl::StrAppend(&text,
                  "\nRun `kiln <command> --help` for a command's arguments and flags;\n"
                  "`kiln --version` for the version.\n"
                  "Graph files: TorchScript text (.txt), binary GraphProto (.pb), text "
                  "GraphProto (.pbtxt).\n"
                  "Exit status: 0 success; 1 the input was read and is wrong (verify or a\n"
                  "pass failed, outputs differ from the reference, tests failed); 2 usage\n"
                  "error or an input kiln cannot read, import or run.\n");
  std::fputs(text.c_str(), out);
}

std::string FlagSynopsis(const absl::CommandLineFlag& flag) {
  const std::string name(flag.Name());
  if (flag.IsOfType<bool>()) return absl::StrCat("--[no]", name);
  if (name.size() == 1) return absl::StrCat("-", name, " VALUE");
  return absl::StrCat("--", name, "=VALUE");
}

void PrintCommandHelp(const Command& command) {
  std::string text =
      absl::StrCat("usage: kiln ", command.name, " ", command.usage, "\n\n", command.summary, "\n");
  if (!command.details.empty()) absl::StrAppend(&text, "\n", command.details, "\n");
  if (!command.flags.empty()) {
    absl::StrAppend(&text, "\nflags:\n");
    for (const std::string& name : command.flags) {
      const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
      if (flag == nullptr) continue;
      absl::StrAppend(&text, "  ", FlagSynopsis(*flag), "\n      ", flag->Help());
      const std::string default_value = flag->DefaultValue();
      if (!default_value.empty()) absl::StrAppend(&text, " (default: ", default_value, ")");
      absl::StrAppend(&text, "\n");
    }
  }
  std::fputs(text.c_str(), stdout);
}

// Sets the flag named in `arg` (at argv[*i]); may consume the next argument
// as its value. Returns false after reporting an error.
bool ParseFlag(const Command& command, int argc, char** argv, int* i) {
  absl::string_view body(argv[*i]);
  body.remove_prefix(absl::StartsWith(body, "--") ? 2 : 1);
  std::string name(body);
  absl::string_view value;
  bool has_value = false;
  if (const size_t eq = body.find('='); eq != absl::string_view::npos) {
    name = std::string(body.substr(0, eq));
    value = body.substr(eq + 1);
    has_value = true;
  }
  // --compile-to is --compile_to: flags are ABSL_FLAGs, whose names cannot
  // hold a dash.
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  auto allowed = [&](absl::string_view n) {
    return std::find(command.flags.begin(), command.flags.end(), n) != command.flags.end();
  };
  const absl::CommandLineFlag* flag = nullptr;
  if (allowed(name)) {
    flag = absl::FindCommandLineFlag(name);
  } else if (absl::StartsWith(name, "no") && !has_value && allowed(absl::string_view(name).substr(2))) {
    flag = absl::FindCommandLineFlag(name.substr(2));
    if (flag != nullptr && flag->IsOfType<bool>()) {
      value = "false";
      has_value = true;
    } else {
      flag = nullptr;
    }
  }
  if (flag == nullptr) {
    ReportError(absl::StrCat(command.name, ": unknown flag '", argv[*i], "' (see kiln ",
                             command.name, " --help)"));
    return false;
  }
  std::string owned_value;
  if (!has_value) {
    if (flag->IsOfType<bool>()) {
      value = "true";
    } else if (*i + 1 < argc) {
      owned_value = argv[++*i];
      value = owned_value;
    } else {
      ReportError(absl::StrCat(command.name, ": flag '", argv[*i], "' needs a value"));
      return false;
    }
  }
  std::string error;
  // ParseFrom is non-const on a flag found through the const registry API.
  if (!const_cast<absl::CommandLineFlag*>(flag)->ParseFrom(value, &error)) {
    ReportError(absl::StrCat(command.name, ": invalid value '", value, "' for flag --",
                             flag->Name(), ": ", error));
    return false;
  }
  return true;
}

}  // namespace

int RunCli(absl::Span<const Command> commands, int argc, char** argv) {
  if (argc < 2) {
    PrintTopLevelHelp(commands, stderr);
    return kExitUsageError;
  }
  const absl::string_view first = argv[1];
  if (first == "--version" || first == "-version" || first == "version") {
    std::printf("%s\n", VersionLine().c_str());
    return kExitOk;
  }
  if (IsHelpArg(first) || first == "help") {
    if (first == "help" && argc >= 3) {
      const Command* command = FindCommand(commands, argv[2]);
      if (command == nullptr) {
        return ReportError(absl::StrCat("unknown command '", argv[2], "' (see kiln --help)"));
      }
      PrintCommandHelp(*command);
      return kExitOk;
    }
    PrintTopLevelHelp(commands, stdout);
    return kExitOk;
  }
  const Command* command = FindCommand(commands, first);
  if (command == nullptr) {
    if (absl::StartsWith(first, "-")) {
      return ReportError(absl::StrCat("expected a command before '", first, "' (see kiln --help)"));
    }
    return ReportError(absl::StrCat("unknown command '", first, "' (see kiln --help)"));
  }

  // --help (and --version) anywhere before "--" wins over everything else.
  for (int i = 2; i < argc && absl::string_view(argv[i]) != "--"; ++i) {
    if (IsHelpArg(argv[i])) {
      PrintCommandHelp(*command);
      return kExitOk;
    }
    if (absl::string_view(argv[i]) == "--version") {
      std::printf("%s\n", VersionLine().c_str());
      return kExitOk;
    }
  }
  std::vector<std::string> positional;
  bool flags_ended = false;
  for (int i = 2; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (flags_ended || arg == "-" || !absl::StartsWith(arg, "-")) {
      positional.emplace_back(arg);
    } else if (arg == "--") {
      flags_ended = true;
    } else if (!ParseFlag(*command, argc, argv, &i)) {
      return kExitUsageError;
    }
  }
  absl::Status status;
  try {
    status = command->run(positional);
  } catch (const std::bad_alloc&) {
    // A backstop: inputs and compiled programs are checked against
    // --max_memory before they allocate, but an interpreted model can still
    // build a huge intermediate tensor.
    status = absl::ResourceExhaustedError(absl::StrCat(
        command->name, ": out of memory (an allocation failed; a tensor of the model is "
        "larger than this machine can hold)"));
  }
  if (!status.ok()) ReportError(status.message());
  return ExitCodeOf(status);
}

}  // namespace kiln::tools
