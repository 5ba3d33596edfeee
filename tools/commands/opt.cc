#include "tools/commands/opt.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "passes/all_passes.h"
#include "passes/pass_log.h"
#include "passes/pipeline.h"
#include "passes/pipeline_io.h"
#include "passes/pipeline_spec.h"
#include "passes/reproducer.h"
#include "tools/common_flags.h"
#include "tools/file_io.h"
#include "support/status.h"
#include "tools/graph_io.h"
#include "tools/json_output.h"

ABSL_FLAG(std::string, passes, "",
          "Pipeline to run, e.g. 'dce,cse' or 'constprop,fixpoint(dce,cse)' (aliases work). "
          "Empty: the -O level");
ABSL_FLAG(int, opt_level, -1,
          "Preset pipeline 0, 1 or 2 (also -O0, -O1, -O2); -1: -O2 "
          "unless --passes is given");
ABSL_FLAG(bool, stats, false, "Print per-pass statistics (time, runs, nodes, counters) to stderr");
ABSL_FLAG(std::vector<std::string>, disable_pass, {},
          "Skip these passes (names or aliases; repeatable or a comma list; also "
          "--disable-pass)");
ABSL_FLAG(int64_t, stop_after, -1,
          "Run only the first N pass executions, counted as in the dump file names; -1: all "
          "(also --stop-after)");
ABSL_FLAG(std::string, reproducer_dir, "",
          "On a pass failure or crash write reproducer.txt (IR + remaining pipeline) here "
          "(also --reproducer-dir)");
ABSL_FLAG(bool, list_passes, false,
          "List the registered passes and presets, then exit "
          "(also --list-passes)");
ABSL_FLAG(bool, verify, true,
          "Verify the graph after every pass that changed it; with --noverify only the input "
          "and the final graph are verified (passes never see invalid input)");

namespace kiln::tools {
namespace {

// Flags of `kiln opt` that take a value (so the next argument may be one).
bool TakesValue(absl::string_view name) {
  return name == "o" || name == "format" || name == "passes" || name == "opt_level" ||
         name == "dump_dir" || name == "disable_pass" || name == "stop_after" ||
         name == "reproducer_dir";
}

// "-O2" -> 2; -1 if `arg` is not such a flag.
int OptLevelArgument(absl::string_view arg) {
  if (arg.size() == 3 && arg[0] == '-' && arg[1] == 'O' && arg[2] >= '0' && arg[2] <= '9') {
    return arg[2] - '0';
  }
  return -1;
}

absl::Status ListPasses() {
  const passes::PassRegistry& registry = passes::DefaultPassRegistry();
  std::string text = "passes (name, aliases: description):\n";
  for (const passes::PassInfo* info : registry.List()) {
    absl::StrAppend(&text, "  ", info->name);
    if (!info->aliases.empty())
      absl::StrAppend(&text, " (", absl::StrJoin(info->aliases, ", "), ")");
    absl::StrAppend(&text, ": ", info->description, "\n");
  }
  absl::StrAppend(&text, "\npresets:\n");
  for (const std::string& preset : passes::PresetNames()) {
    const absl::StatusOr<std::string> pipeline = passes::PresetPipeline(preset);
    absl::StrAppend(&text, "  ", preset, ": ",
                    pipeline.ok() ? (pipeline->empty() ? "(no passes)" : *pipeline) : "?", "\n");
  }
  std::fputs(text.c_str(), stdout);
  return absl::OkStatus();
}

// The pipeline string: --passes, or the preset of the -O level (default -O2).
absl::StatusOr<std::string> ChoosePipeline() {
  const std::string passes = absl::GetFlag(FLAGS_passes);
  const int level = absl::GetFlag(FLAGS_opt_level);
  if (!passes.empty() && level >= 0) {
    return absl::InvalidArgumentError("opt: give either --passes or -O<level>, not both");
  }
  if (!passes.empty()) return passes;
  return passes::PresetPipeline(absl::StrCat("-O", level < 0 ? 2 : level));
}

// KILN_LOG_LEVEL, read now rather than at the first log statement, so that a
// malformed value is a usage error instead of a warning in the middle of a
// run. Called after the registry exists, so pass aliases resolve.
absl::Status InitLoggingFromEnvironment() {
  const char* spec = std::getenv("KILN_LOG_LEVEL");
  const absl::Status status = passes::SetLogLevels(spec == nullptr ? "" : spec);
  if (status.ok() || absl::StrContains(status.message(), "KILN_LOG_LEVEL")) return status;
  return absl::InvalidArgumentError(absl::StrCat("KILN_LOG_LEVEL: ", status.message()));
}

std::string Milliseconds(absl::Duration d) {
  return absl::StrFormat("%.1f ms", absl::ToDoubleMilliseconds(d));
}

// `kiln opt --stats --json`: the pipeline statistics as a document
// (docs/cli_json.schema.json, "opt").
Json StatsJson(const std::string& input, const passes::Pipeline& pipeline, size_t nodes_in,
               size_t nodes_out, absl::Duration read, absl::Duration passes,
               const absl::Status& result) {
  const passes::PipelineStatistics& stats = pipeline.statistics();
  Json doc = JsonDocument("opt");
  doc["input"] = input;
  doc["ok"] = result.ok();
  if (!result.ok()) doc["error"] = std::string(result.message());
  doc["pipeline"] = pipeline.ToString();
  doc["executions"] = stats.executions;
  if (stats.stopped_after >= 0) doc["stopped_after"] = stats.stopped_after;
  doc["nodes_in"] = nodes_in;
  doc["nodes_out"] = nodes_out;
  doc["read_ms"] = absl::ToDoubleMilliseconds(read);
  doc["passes_ms"] = absl::ToDoubleMilliseconds(passes);
  Json rows = Json::array();
  for (const passes::PassRunStats& p : stats.passes()) {
    Json counters = Json::object();
    for (const auto& [name, value] : p.counters.counters()) counters[name] = value;
    rows.push_back({{"name", p.name},
                    {"runs", p.runs},
                    {"changed", p.changed},
                    {"skipped", p.skipped},
                    {"ms", p.seconds * 1e3},
                    {"nodes_in", p.nodes_in},
                    {"nodes_out", p.nodes_out},
                    {"counters", std::move(counters)}});
  }
  doc["passes"] = std::move(rows);
  Json fixpoints = Json::array();
  for (const passes::FixpointStats& f : stats.fixpoints()) {
    fixpoints.push_back({{"label", f.label},
                         {"entries", f.entries},
                         {"iterations", f.iterations},
                         {"hit_cap", f.hit_cap}});
  }
  doc["fixpoints"] = std::move(fixpoints);
  doc["warnings"] = stats.warnings;
  return doc;
}

absl::Status RunOpt(const std::vector<std::string>& args) {
  if (absl::GetFlag(FLAGS_list_passes)) {
    if (!args.empty()) return absl::InvalidArgumentError("opt: --list-passes takes no graph file");
    return ListPasses();
  }
  RETURN_IF_ERROR(ExpectArgCount(args, 1, "opt", "one input graph file"));
  const passes::PassRegistry& registry = passes::DefaultPassRegistry();
  RETURN_IF_ERROR(InitLoggingFromEnvironment());

  // Everything about the command line is checked before reading the input.
  ASSIGN_OR_RETURN(const GraphFormat in_format,
                   ChooseGraphFormat(args[0], absl::GetFlag(FLAGS_format)));
  std::string out = absl::GetFlag(FLAGS_o);
  if (out.empty()) out = "-";
  const bool json = absl::GetFlag(FLAGS_json);
  const bool print_stats = absl::GetFlag(FLAGS_stats);
  if (json && !print_stats) {
    return absl::InvalidArgumentError("opt: --json prints the --stats; give --stats too");
  }
  if (json && out == "-") {
    return absl::InvalidArgumentError(
        "opt: --json prints the statistics on stdout; write the graph with -o FILE");
  }
  ASSIGN_OR_RETURN(const GraphFormat out_format, ChooseGraphFormat(out, ""));
  ASSIGN_OR_RETURN(const std::string pipeline_text, ChoosePipeline());

  passes::PipelineOptions options;
  passes::UseDefaultIo(&options);
  if (!absl::GetFlag(FLAGS_verify)) options.verify_each_pass = false;
  for (const std::string& name : absl::GetFlag(FLAGS_disable_pass)) {
    if (!name.empty()) options.disabled_passes.push_back(name);
  }
  options.stop_after = absl::GetFlag(FLAGS_stop_after);
  options.dump_dir = absl::GetFlag(FLAGS_dump_dir);
  options.reproducer_dir = absl::GetFlag(FLAGS_reproducer_dir);
  for (std::string* dir : {&options.dump_dir, &options.reproducer_dir}) {
    if (dir->empty()) continue;
    *dir = ResolveUserPath(*dir);
    RETURN_IF_ERROR(passes::EnsureDirectory(*dir));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<passes::Pipeline> pipeline,
                   passes::Pipeline::Create(pipeline_text, registry, std::move(options)));

  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, LoadGraph(args[0], in_format));
  const size_t nodes_in = graph->numNodes();
  const absl::Time loaded = absl::Now();
  const absl::StatusOr<bool> changed = pipeline->Run(*graph);
  const absl::Time optimized = absl::Now();
  absl::Status result = changed.status();
  if (!result.ok()) {
    // The input was read; a pass (or the input's verification) failed.
    std::string message(result.message());
    if (pipeline->options().reproducer_dir.empty() &&
        !absl::StrContains(message, "the input graph is invalid")) {
      absl::StrAppend(&message, " (rerun with --reproducer-dir=DIR to save a reproducer)");
    }
    result = InputRejected(absl::StrCat(args[0], ": ", message));
  }
  if (print_stats && json) {
    RETURN_IF_ERROR(PrintJson(StatsJson(args[0], *pipeline, nodes_in, graph->numNodes(),
                                        loaded - start, optimized - loaded, result)));
  } else if (print_stats) {
    std::fprintf(stderr, "pipeline: %s\n%s", pipeline->ToString().c_str(),
                 pipeline->FormatStats().c_str());
  }
  RETURN_IF_ERROR(result);
  RETURN_IF_ERROR(SaveGraph(*graph, out, out_format));
  if (print_stats && !json) {
    std::fprintf(stderr, "nodes %zu -> %zu; read %s, passes %s, write %s\n", nodes_in,
                 graph->numNodes(), Milliseconds(loaded - start).c_str(),
                 Milliseconds(optimized - loaded).c_str(),
                 Milliseconds(absl::Now() - optimized).c_str());
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> NormalizeOptArguments(int argc, char** argv) {
  std::vector<std::string> result(argv, argv + argc);
  if (argc < 2 || absl::string_view(argv[1]) != "opt") return result;
  result.resize(2);
  std::vector<std::string> disabled;
  size_t disabled_at = 0;  // where the merged --disable_pass goes
  for (int i = 2; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") {
      result.insert(result.end(), argv + i, argv + argc);
      break;
    }
    if (const int level = OptLevelArgument(arg); level >= 0) {
      result.push_back(absl::StrCat("--opt_level=", level));
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      result.emplace_back(arg);
      continue;
    }
    const absl::string_view dashes = arg.substr(0, arg[1] == '-' ? 2 : 1);
    absl::string_view body = arg.substr(dashes.size());
    const size_t eq = body.find('=');
    std::string name(body.substr(0, eq));
    for (char& c : name) {
      if (c == '-') c = '_';
    }
    const bool inline_value = eq != absl::string_view::npos;
    if (name == "disable_pass") {
      if (disabled.empty()) disabled_at = result.size();
      if (inline_value) {
        disabled.emplace_back(body.substr(eq + 1));
      } else if (i + 1 < argc) {
        disabled.emplace_back(argv[++i]);
      } else {
        result.emplace_back(arg);  // cli.cc reports the missing value
      }
      continue;
    }
    result.push_back(absl::StrCat(dashes, name, inline_value ? body.substr(eq) : ""));
    // `--passes -O2`: the value is not a flag.
    if (!inline_value && TakesValue(name) && i + 1 < argc) result.emplace_back(argv[++i]);
  }
  if (!disabled.empty()) {
    result.insert(result.begin() + static_cast<std::ptrdiff_t>(disabled_at),
                  absl::StrCat("--disable_pass=", absl::StrJoin(disabled, ",")));
  }
  return result;
}

Command OptCommand() {
  Command command;
  command.name = "opt";
  command.summary = "Run optimization passes over a graph (default -O2).";
  command.usage =
      "IN [-o OUT] [--passes=PIPELINE | -O0|-O1|-O2] [--stats] [--dump-dir=DIR]\n"
      "           [--disable-pass=NAME]... [--stop-after=N] [--reproducer-dir=DIR]\n"
      "           [--noverify] [--format=text|pb|pbtxt] [--json] | --list-passes";
  command.details =
      "PIPELINE is a comma list of passes (names or aliases) with fixpoint(...) groups,\n"
      "e.g. 'constprop,fixpoint(dce,cse),canonicalize'; -O0/-O1/-O2 are presets\n"
      "(--list-passes shows them). OUT's format comes from its extension (.txt, .pb,\n"
      ".pbtxt); without -o the text goes to stdout. Flag names may be written with\n"
      "'-' or '_' (--dump-dir = --dump_dir). KILN_LOG_LEVEL=\">>dce:>cse\" enables\n"
      "per-pass logging on stderr. --stats --json prints the statistics as JSON on\n"
      "stdout instead (docs/cli_json.md; the graph then needs -o FILE).\n"
      "Exit status: 0 success; 1 a pass failed (or the input graph is invalid): the\n"
      "message names the pass and the reproducer file; 2 usage or read error.";
  command.flags = {"format",         "o",           "passes",       "opt_level",
                   "stats",          "dump_dir",    "disable_pass", "stop_after",
                   "reproducer_dir", "list_passes", "verify",       "json"};
  command.run = RunOpt;
  return command;
}

}  // namespace kiln::tools
