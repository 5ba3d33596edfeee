// The lowering table: the op rows' LOWER column (ops/defs/*.def), keyed by
// the overload's qualified name.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "lowering/lower.h"
#include "lowering/lower_context.h"
#include "lowering/lowerings.h"
#include "ops/row.h"

namespace kiln::lowering {
namespace {

struct TableBuilder {
  LoweringTable* table;
  void Add(const char*, ops::row::None) {}
  void Add(const char* name, LoweringFn fn) { (*table)[name] = std::move(fn); }
};

}  // namespace

const LoweringTable& RowLowerings() {
  static const LoweringTable* table = [] {
    using namespace ::kiln::ops::row;  // NOLINT: the rows' vocabulary
    auto* t = new LoweringTable();
    TableBuilder b{t};
#define KILN_OP(name, schema, traits, kernel, shape, decomp, lower, ext, note) b.Add(name, lower);
#include "ops/all.def"
    return t;
  }();
  return *table;
}

std::vector<std::string> LoweredOverloads() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : RowLowerings()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace kiln::lowering
