#include "frontend/pt2/test_archive.h"

#include <zip.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::frontend::pt2::testing {

std::string MakeZip(const std::vector<ZipEntry>& entries) {
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* buffer = zip_source_buffer_create(nullptr, 0, 0, &error);
  zip_source_keep(buffer);
  zip_t* z = zip_open_from_source(buffer, ZIP_TRUNCATE, &error);
  if (z == nullptr) std::abort();
  std::deque<std::string> keep;  // libzip reads entry data at zip_close
  for (const ZipEntry& e : entries) {
    keep.push_back(e.data);
    zip_source_t* s = zip_source_buffer(z, keep.back().data(), keep.back().size(), 0);
    const zip_int64_t index = zip_file_add(z, e.name.c_str(), s, ZIP_FL_ENC_UTF_8);
    if (index < 0) std::abort();
    zip_set_file_compression(z, static_cast<zip_uint64_t>(index), e.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) std::abort();
  std::string out;
  if (zip_source_open(buffer) != 0) std::abort();
  char chunk[4096];
  for (;;) {
    const zip_int64_t n = zip_source_read(buffer, chunk, sizeof(chunk));
    if (n <= 0) break;
    out.append(chunk, static_cast<size_t>(n));
  }
  zip_source_close(buffer);
  zip_source_free(buffer);
  zip_error_fini(&error);
  return out;
}

std::string FloatBytes(const std::vector<float>& values) {
  std::string out(values.size() * sizeof(float), '\0');
  if (!values.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

namespace {

std::string SymInts(const std::vector<std::string>& sizes) {
  std::vector<std::string> parts;
  for (const std::string& s : sizes) {
    int64_t v = 0;
    if (absl::SimpleAtoi(s, &v)) {
      parts.push_back(absl::StrCat("{\"as_int\": ", v, "}"));
    } else {
      parts.push_back(absl::StrCat("{\"as_expr\": {\"expr_str\": \"", s, "\", \"hint\": null}}"));
    }
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string TensorMetaJson(int dtype, const std::vector<std::string>& sizes) {
  // Contiguous strides when every size is a number; else 1s (unused).
  std::vector<std::string> strides(sizes.size(), "1");
  int64_t stride = 1;
  bool numeric = true;
  for (size_t i = sizes.size(); i-- > 0;) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(sizes[i], &v)) numeric = false;
    if (numeric) {
      strides[i] = absl::StrCat(stride);
      stride *= std::max<int64_t>(v, 1);
    }
  }
  return absl::StrCat("{\"dtype\": ", dtype, ", \"sizes\": ", SymInts(sizes),
                      ", \"requires_grad\": false, \"device\": {\"type\": \"cpu\", \"index\": null}, "
                      "\"strides\": ",
                      SymInts(strides), ", \"storage_offset\": {\"as_int\": 0}, \"layout\": 7}");
}

}  // namespace

std::string Meta(const std::string& name, int dtype, const std::vector<std::string>& sizes) {
  return absl::StrCat("\"", name, "\": ", TensorMetaJson(dtype, sizes));
}

std::string MakePt2(const std::string& model_json, const std::vector<TestTensor>& weights,
                    const std::vector<std::string>& skip, const std::vector<ZipEntry>& extra) {
  std::vector<ZipEntry> entries;
  auto add = [&](const std::string& relative, const std::string& data) {
    if (std::find(skip.begin(), skip.end(), relative) != skip.end()) return;
    entries.push_back({"model/" + relative, data});
  };
  std::vector<std::string> config;
  for (size_t i = 0; i < weights.size(); ++i) {
    const TestTensor& w = weights[i];
    std::vector<std::string> sizes;
    for (int64_t s : w.sizes) sizes.push_back(absl::StrCat(s));
    config.push_back(absl::StrCat("\"", w.fqn, "\": {\"path_name\": \"weight_", i,
                                  "\", \"is_param\": true, \"use_pickle\": ", w.pickled ? "true" : "false",
                                  ", \"tensor_meta\": ", TensorMetaJson(w.dtype, sizes), "}"));
    add(absl::StrCat("data/weights/weight_", i), w.bytes);
  }
  add("data/weights/model_weights_config.json",
      absl::StrCat("{\"config\": {", absl::StrJoin(config, ", "), "}}"));
  add("data/constants/model_constants_config.json", "{\"config\": {}}");
  add("models/model.json", model_json);
  add("archive_format", "pt2");
  add("archive_version", "0");
  add(".data/version", "1");
  add("byteorder", "little");
  for (const ZipEntry& e : extra) entries.push_back(e);
  return MakeZip(entries);
}

std::string ProgramJson::ToString() const {
  return absl::StrCat(
      "{\"graph_module\": {\"graph\": {\"inputs\": [", graph_inputs, "], \"outputs\": [", graph_outputs,
      "], \"nodes\": [", nodes, "], \"tensor_values\": {", tensor_values, "}, \"sym_int_values\": {",
      sym_int_values,
      "}, \"sym_bool_values\": {}, \"is_single_tensor_return\": false, \"custom_obj_values\": {}, "
      "\"sym_float_values\": {}}, \"signature\": {\"input_specs\": [",
      input_specs, "], \"output_specs\": [", output_specs,
      "]}, \"module_call_graph\": [], \"metadata\": {}}, \"opset_version\": {\"aten\": 10}, "
      "\"range_constraints\": {",
      range_constraints, "}, \"schema_version\": {\"major\": ", schema_major,
      ", \"minor\": 17}, \"verifiers\": [\"TRAINING\"], \"torch_version\": \"2.11.0\"}");
}

}  // namespace kiln::frontend::pt2::testing
