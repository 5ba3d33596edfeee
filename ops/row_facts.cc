#include "ops/row_facts.h"

namespace kiln::ops {

std::vector<RowFacts> AllRowFacts() {
  using namespace ::kiln::ops::row;  // NOLINT: the rows' vocabulary
  std::vector<RowFacts> rows;
#define KILN_OP(...) rows.push_back(KILN_ROW_FACTS(__VA_ARGS__));
#include "ops/all.def"
  return rows;
}

}  // namespace kiln::ops
