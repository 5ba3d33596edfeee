// What each op row provides, read from the rows themselves: a column is
// empty when it is spelled `none`. For checks of the table as a whole (the
// completeness test, testing/op_completeness.h); each layer still expands
// its own column, so a non-empty column always names code that compiles.
#ifndef KILN_OPS_ROW_FACTS_H_
#define KILN_OPS_ROW_FACTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "ops/row.h"

namespace kiln::ops {

struct RowFacts {
  std::string name;         // "aten::add.Tensor"
  std::string kiln_schema;  // the row's own schema; empty for PyTorch's (aten_schema)
  bool kernel = false;
  bool shape = false;
  bool decomposition = false;
  bool lowering = false;
  ExternForm extern_form;
  std::string note;

  bool library_extern() const { return extern_form.library != Library::kNone; }
  // Decomposition, bespoke loop lowering or library call: a way into
  // compiled code other than an extern call of the reference kernel.
  bool compiled_path() const { return decomposition || lowering || library_extern(); }
};

namespace row {
inline std::string SchemaText(AtenSchema) { return ""; }
inline std::string SchemaText(const char* schema) { return schema; }
inline ExternForm ExternOf(None) { return {}; }
inline constexpr ExternForm ExternOf(ExternForm e) { return e; }
}  // namespace row

// One row's facts; expand a row set with it (inside a scope that has
// `using namespace ::kiln::ops::row;`):
//   #define KILN_OP(...) rows.push_back(KILN_ROW_FACTS(__VA_ARGS__));
#define KILN_ROW_FACTS(name, schema, traits, kernel, shape, decomp, lower, ext, note)        \
  ::kiln::ops::RowFacts {                                                                    \
    name, ::kiln::ops::row::SchemaText(schema), std::string_view(#kernel) != "none",         \
        std::string_view(#shape) != "none", std::string_view(#decomp) != "none",             \
        std::string_view(#lower) != "none", ::kiln::ops::row::ExternOf(ext), note            \
  }

// Every row of ops/all.def, in file order.
std::vector<RowFacts> AllRowFacts();

}  // namespace kiln::ops

#endif  // KILN_OPS_ROW_FACTS_H_
