#include "passes/pipeline_spec.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/fixed_point.h"

namespace kiln::passes {
namespace {

struct Preset {
  const char* name;
  const char* pipeline;
};

// Presets name passes by canonical name, so they do not depend on which
// aliases a pass chose.
constexpr Preset kPresets[] = {
    {"-O0", ""},
    // Cheap clean-ups that never grow the graph.
    {"-O1",
     "constant_propagation,constant_pooling,common_subexpression_elimination,"
     "dead_code_elimination"},
    {"-O2",
     "constant_propagation,peephole,"
     "fixpoint(dead_code_elimination,common_subexpression_elimination,"
     "constant_propagation,peephole,constant_pooling),"
     "canonicalize"},
};

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<PipelineStep>> ParseAll() {
    SkipSpace();
    std::vector<PipelineStep> steps;
    if (AtEnd()) return steps;  // the empty pipeline
    if (absl::Status s = ParseList(0, &steps); !s.ok()) return s;
    SkipSpace();
    if (!AtEnd()) return Error("expected ',' or end of pipeline");
    return steps;
  }

 private:
  absl::Status ParseList(int depth, std::vector<PipelineStep>* out) {
    while (true) {
      PipelineStep step;
      if (absl::Status s = ParseItem(depth, &step); !s.ok()) return s;
      out->push_back(std::move(step));
      SkipSpace();
      if (AtEnd() || Peek() != ',') return absl::OkStatus();
      ++pos_;
      SkipSpace();
    }
  }

  absl::Status ParseItem(int depth, PipelineStep* out) {
    SkipSpace();
    size_t start = pos_;
    absl::string_view name = ParseIdentifier();
    if (name.empty()) return Error("expected a pass name or fixpoint(...)");
    SkipSpace();
    bool group = name == "fixpoint" && !AtEnd() && (Peek() == '(' || Peek() == '<');
    if (!group) {
      *out = PipelineStep::Pass(std::string(name));
      return absl::OkStatus();
    }
    if (depth + 1 > kMaxPipelineNesting) {
      pos_ = start;
      return Error(absl::StrCat("fixpoint groups nest deeper than ", kMaxPipelineNesting));
    }
    int cap = kDefaultFixedPointIterations;
    if (Peek() == '<') {
      ++pos_;
      SkipSpace();
      if (absl::Status s = ParseCap(&cap); !s.ok()) return s;
      SkipSpace();
      if (AtEnd() || Peek() != '>') return Error("expected '>' after the iteration cap");
      ++pos_;
      SkipSpace();
    }
    if (AtEnd() || Peek() != '(') return Error("expected '(' after fixpoint");
    ++pos_;
    SkipSpace();
    if (!AtEnd() && Peek() == ')') return Error("expected a pass name: fixpoint group is empty");
    std::vector<PipelineStep> body;
    if (absl::Status s = ParseList(depth + 1, &body); !s.ok()) return s;
    SkipSpace();
    if (AtEnd() || Peek() != ')') return Error("expected ',' or ')' to close fixpoint(");
    ++pos_;
    *out = PipelineStep::Fixpoint(std::move(body), cap);
    return absl::OkStatus();
  }

  absl::Status ParseCap(int* cap) {
    size_t start = pos_;
    int64_t value = 0;
    while (!AtEnd() && absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
      value = value * 10 + (Peek() - '0');
      ++pos_;
      if (value > kMaxFixedPointIterations) {
        pos_ = start;
        return Error(absl::StrCat("iteration cap must be at most ", kMaxFixedPointIterations));
      }
    }
    if (pos_ == start) return Error("expected an iteration cap (a positive integer)");
    if (value < 1) {
      pos_ = start;
      return Error("iteration cap must be at least 1");
    }
    *cap = static_cast<int>(value);
    return absl::OkStatus();
  }

  absl::string_view ParseIdentifier() {
    size_t start = pos_;
    if (AtEnd()) return {};
    unsigned char c = static_cast<unsigned char>(Peek());
    if (!absl::ascii_isalpha(c) && c != '_') return {};
    while (!AtEnd()) {
      c = static_cast<unsigned char>(Peek());
      if (!absl::ascii_isalnum(c) && c != '_') break;
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  void SkipSpace() {
    while (!AtEnd() && absl::ascii_isspace(static_cast<unsigned char>(Peek()))) ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }

  absl::Status Error(absl::string_view expected) const {
    std::string got = AtEnd() ? std::string("end of pipeline")
                              : absl::StrCat("'", text_.substr(pos_, 1), "'");
    return absl::InvalidArgumentError(absl::StrCat("pipeline '", text_, "': column ",
                                                   pos_ + 1, ": ", expected, ", got ", got));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

void AppendSteps(const std::vector<PipelineStep>& steps, std::string* out) {
  for (size_t i = 0; i < steps.size(); ++i) {
    if (i > 0) out->push_back(',');
    const PipelineStep& s = steps[i];
    if (s.kind == PipelineStep::Kind::kPass) {
      absl::StrAppend(out, s.pass);
      continue;
    }
    absl::StrAppend(out, "fixpoint");
    if (s.max_iterations != kDefaultFixedPointIterations) {
      absl::StrAppend(out, "<", s.max_iterations, ">");
    }
    out->push_back('(');
    AppendSteps(s.body, out);  // depth bounded by kMaxPipelineNesting
    out->push_back(')');
  }
}

}  // namespace

PipelineStep PipelineStep::Pass(std::string name) {
  PipelineStep s;
  s.kind = Kind::kPass;
  s.pass = std::move(name);
  return s;
}

PipelineStep PipelineStep::Fixpoint(std::vector<PipelineStep> body, int max_iterations) {
  PipelineStep s;
  s.kind = Kind::kFixpoint;
  s.body = std::move(body);
  s.max_iterations = max_iterations;
  return s;
}

absl::StatusOr<std::vector<PipelineStep>> ParsePipeline(absl::string_view text) {
  absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (!trimmed.empty() && trimmed[0] == '-') {
    absl::StatusOr<std::string> preset = PresetPipeline(trimmed);
    if (!preset.ok()) return absl::InvalidArgumentError(preset.status().message());
    return Parser(*preset).ParseAll();
  }
  return Parser(text).ParseAll();
}

std::string PipelineToString(const std::vector<PipelineStep>& steps) {
  std::string out;
  AppendSteps(steps, &out);
  return out;
}

absl::StatusOr<std::string> PresetPipeline(absl::string_view preset) {
  for (const Preset& p : kPresets) {
    if (preset == p.name) return std::string(p.pipeline);
  }
  return absl::NotFoundError(absl::StrCat("unknown preset '", preset, "'; known presets: ",
                                          absl::StrJoin(PresetNames(), ", ")));
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return names;
}

}  // namespace kiln::passes
