#include "testing/op_completeness.h"

#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "ir/op_registry.h"
#include "ir/schema_parser.h"

namespace kiln::testing {
namespace {

// The line without its '#' comment, trimmed.
absl::string_view Content(absl::string_view line) {
  const size_t hash = line.find('#');
  if (hash != absl::string_view::npos) line = line.substr(0, hash);
  return absl::StripAsciiWhitespace(line);
}

// "aten::add_.Tensor" -> "aten::add.Tensor"; other names unchanged.
std::string FunctionalName(const std::string& op) {
  const size_t dot = op.find('.');
  std::string base = op.substr(0, dot);
  if (!absl::EndsWith(base, "_") || absl::EndsWith(base, "__")) return op;
  base.pop_back();
  return dot == std::string::npos ? base : base + op.substr(dot);
}

bool ContainsTensor(const ir::TypePtr& t) {
  if (!t) return false;
  if (t->is_tensor()) return true;
  for (const ir::TypePtr& c : t->contained()) {
    if (ContainsTensor(c)) return true;
  }
  return false;
}

std::optional<bool> SchemaReturnsTensors(const ir::FunctionSchema& schema) {
  if (schema.is_varret) return std::nullopt;
  for (const ir::Argument& r : schema.returns) {
    if (ContainsTensor(r.type)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseGaps(const std::string& text) {
  std::map<std::string, std::string> gaps;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    absl::string_view content = Content(line);
    if (content.empty()) continue;
    const size_t space = content.find_first_of(" \t");
    const std::string op(content.substr(0, space));
    const std::string reason(
        space == absl::string_view::npos ? "" : absl::StripAsciiWhitespace(content.substr(space)));
    if (reason.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("gaps line ", line_number, ": '", op, "' needs a reason"));
    }
    if (!gaps.emplace(op, reason).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("gaps line ", line_number, ": '", op, "' is listed twice"));
    }
  }
  return gaps;
}

std::vector<std::string> ParseOpList(const std::string& text) {
  std::vector<std::string> ops;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::string_view content = Content(line);
    if (!content.empty()) ops.emplace_back(content);
  }
  return ops;
}

std::vector<std::string> CheckRows(const std::vector<ops::RowFacts>& rows) {
  std::vector<std::string> findings;
  std::set<std::string> seen;
  for (const ops::RowFacts& row : rows) {
    if (!seen.insert(row.name).second) {
      findings.push_back(absl::StrCat(row.name, ": two rows"));
    }
    if (!row.shape) {
      findings.push_back(absl::StrCat(row.name, ": no shape function (SHAPE is none)"));
    }
    if (row.decomposition && (row.lowering || row.library_extern()) && row.note.empty()) {
      findings.push_back(absl::StrCat(
          row.name, ": a decomposition and a ", row.lowering ? "bespoke lowering" : "library extern",
          " without a note naming the benchmark where the bespoke path wins"));
    }
  }
  return findings;
}

std::vector<std::string> CheckRequired(const std::vector<ops::RowFacts>& rows,
                                       const std::vector<RequiredOp>& required,
                                       const std::map<std::string, std::string>& gaps,
                                       const ReturnsTensors& returns_tensors) {
  std::map<std::string, const ops::RowFacts*> by_name;
  for (const ops::RowFacts& row : rows) by_name.emplace(row.name, &row);
  std::vector<std::string> findings;
  std::set<std::string> checked;
  for (const RequiredOp& req : required) {
    const std::string op = FunctionalName(req.op);
    if (!checked.insert(op).second) continue;
    const bool gap = gaps.count(op) > 0;
    auto it = by_name.find(op);
    if (it == by_name.end()) {
      if (!gap) findings.push_back(absl::StrCat(op, " (", req.why, "): no op row"));
      continue;
    }
    const ops::RowFacts& row = *it->second;
    if (!row.shape) {
      findings.push_back(absl::StrCat(op, " (", req.why, "): no shape function"));
    }
    const bool needs_path = returns_tensors(row).value_or(true);
    if (row.compiled_path() || !needs_path) {
      if (gap) {
        findings.push_back(absl::StrCat(op, " is listed in ops/compiled_path_gaps.txt but ",
                                        row.compiled_path() ? "has a compiled path"
                                                            : "returns no tensor",
                                        ": remove it from the list"));
      }
      continue;
    }
    if (!gap) {
      findings.push_back(absl::StrCat(
          op, " (", req.why,
          "): no compiled path (a decomposition, a loop lowering or a library extern); "
          "its reference kernel is not one"));
    }
  }
  return findings;
}

std::optional<bool> RegistryReturnsTensors(const ops::RowFacts& row) {
  if (const ir::Operator* op = ir::BuiltinOps().Find(row.name)) return SchemaReturnsTensors(op->schema);
  if (row.kiln_schema.empty()) return std::nullopt;
  absl::StatusOr<ir::FunctionSchema> schema = ir::ParseSchema(row.kiln_schema);
  if (!schema.ok()) return std::nullopt;
  return SchemaReturnsTensors(*schema);
}

}  // namespace kiln::testing
