// Test helpers: .pt2-shaped zip archives built in memory with libzip, and
// the JSON of small ExportedPrograms. Test-only.
#ifndef KILN_FRONTEND_PT2_TEST_ARCHIVE_H_
#define KILN_FRONTEND_PT2_TEST_ARCHIVE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::frontend::pt2::testing {

struct ZipEntry {
  std::string name;  // full name, root folder included
  std::string data;
  bool deflate = false;
};

// A zip archive of `entries`, in order.
std::string MakeZip(const std::vector<ZipEntry>& entries);

// A parameter, buffer or constant: raw little-endian bytes of a contiguous
// tensor. `dtype` is the export schema's ScalarType code (7 = float32).
struct TestTensor {
  std::string fqn;
  int dtype = 7;
  std::vector<int64_t> sizes;
  std::string bytes;
  bool pickled = false;
};

// The boilerplate around a model: archive_format, archive_version,
// byteorder, .data/version, models/model.json and the weights config and
// files, all under root folder "model". Entries in `skip` (relative names)
// are left out; `extra` entries are added as they are.
std::string MakePt2(const std::string& model_json, const std::vector<TestTensor>& weights = {},
                    const std::vector<std::string>& skip = {},
                    const std::vector<ZipEntry>& extra = {});

// float32 values as raw bytes.
std::string FloatBytes(const std::vector<float>& values);

// An ExportedProgram's JSON: `input_specs`, `outputs` (graph output
// arguments), `output_specs`, `nodes` and `tensor_values` are JSON text
// (arrays / objects without their brackets); the graph's inputs follow the
// input specs.
struct ProgramJson {
  std::string input_specs;      // e.g. {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}
  std::string graph_inputs;     // e.g. {"as_tensor": {"name": "x"}}
  std::string nodes;
  std::string graph_outputs;    // e.g. {"as_tensor": {"name": "y"}}
  std::string output_specs;     // e.g. {"user_output": {"arg": {"as_tensor": {"name": "y"}}}}
  std::string tensor_values;    // e.g. "x": {...}
  std::string sym_int_values;
  std::string range_constraints;
  int schema_major = 8;
  std::string ToString() const;
};

// A tensor_values entry: `"name": {dtype, sizes, strides...}` with
// contiguous strides; a size given as a string is a symbolic expression.
std::string Meta(const std::string& name, int dtype, const std::vector<std::string>& sizes);

}  // namespace kiln::frontend::pt2::testing

#endif  // KILN_FRONTEND_PT2_TEST_ARCHIVE_H_
