// The driver's whole-model compile cache (driver/program_cache.h) end to
// end on the CPU: a hit runs exactly the program a cold compile made (and
// both match the interpreter), a changed weight, input shape or option
// misses, and a damaged entry is recompiled and replaced, never trusted.
#include "driver/program_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "driver/initialize.h"
#include "driver/model.h"
#include "frontend/onnx/importer.h"
#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "support/atomic_file.h"
#include "support/disk_cache.h"
#include "support/status.h"
#include "testing/onnx_conformance.h"

namespace kiln {
namespace {

constexpr char kModelDir[] = "testdata/onnx_models/small_cnn";

class ProgramCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(driver::Initialize().ok());
    ASSERT_TRUE(backends::cpu::RegisterCpuBackend().ok());
    const char* tmp = std::getenv("TEST_TMPDIR");
    root_ = absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/program_cache_test_",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_", ::getpid());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf '", root_, "' && mkdir -p '", root_, "'").c_str()), 0);
    ::chmod(root_.c_str(), 0700);
    ::setenv("KILN_CACHE_DIR", absl::StrCat(root_, "/cache").c_str(), 1);
    model_ = absl::StrCat(root_, "/model.onnx");
    absl::StatusOr<std::string> bytes = ReadFile(absl::StrCat(kModelDir, "/model.onnx"));
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_TRUE(WriteFile(model_, *bytes).ok());
  }

  // The test input, read with the model's declared type.
  static absl::StatusOr<std::vector<ir::IValue>> Inputs(const driver::ImportedModel& m) {
    std::vector<ir::IValue> inputs;
    const auto runtime_inputs = frontend::onnx_import::RuntimeInputs(*m.onnx);
    for (size_t k = 0; k < runtime_inputs.size(); ++k) {
      ASSIGN_OR_RETURN(ir::IValue v, testing::ReadTestValue(absl::StrCat(kModelDir, "/test_data_set_0/input_", k, ".pb"),
                                                            &runtime_inputs[k]->type()));
      inputs.push_back(std::move(v));
    }
    return inputs;
  }

  driver::ModelCompileOptions Options() const {
    driver::ModelCompileOptions o;
    o.program_cache = true;
    o.inputs_for = Inputs;
    return o;
  }

  // Compiles through the cache and runs once on the test input.
  struct Result {
    driver::ProgramCacheUse cache;
    std::vector<std::string> report;  // the device program's ReportLines
    std::vector<Tensor> outputs;
    bool has_graph = false;
  };
  Result CompileAndRun(const driver::ModelCompileOptions& options) {
    Result r;
    absl::StatusOr<driver::CompiledModel> m = driver::CompileModelFile(model_, options);
    // The entries are written in the background; the tests read them.
    WaitForBackgroundPublishes();
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return r;
    r.cache = m->cache;
    r.has_graph = m->model.graph != nullptr;
    r.report = m->compiled.compiled->ReportLines();
    std::vector<Tensor> inputs;
    for (const ir::IValue& v : m->inputs) inputs.push_back(v.toTensor());
    absl::StatusOr<std::vector<Tensor>> outs = m->compiled.compiled->Run(inputs);
    EXPECT_TRUE(outs.ok()) << outs.status();
    if (outs.ok()) {
      for (const Tensor& t : *outs) r.outputs.push_back(t.Contiguous());
    }
    return r;
  }

  std::string EntryPath(const std::string& key) const { return absl::StrCat(root_, "/cache/programs/", key, ".entry"); }

  std::string root_;
  std::string model_;
};

void ExpectSameOutputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].ValueEquals(b[i])) << "output " << i;
}

TEST_F(ProgramCacheTest, HitRunsTheColdProgramWithoutImportAndMatchesTheInterpreter) {
  const Result cold = CompileAndRun(Options());
  ASSERT_TRUE(cold.cache.used) << cold.cache.note;
  EXPECT_FALSE(cold.cache.hit);
  EXPECT_TRUE(cold.cache.note.empty()) << cold.cache.note;
  EXPECT_TRUE(cold.has_graph);
  const Result warm = CompileAndRun(Options());
  EXPECT_TRUE(warm.cache.hit) << warm.cache.note;
  EXPECT_EQ(warm.cache.key, cold.cache.key);
  EXPECT_FALSE(warm.has_graph);  // not imported
  ExpectSameOutputs(warm.outputs, cold.outputs);

  // Both against the interpreter on the model as imported.
  absl::StatusOr<driver::ImportedModel> fresh = driver::ImportModelFile(model_);
  ASSERT_TRUE(fresh.ok());
  absl::StatusOr<std::vector<ir::IValue>> inputs = Inputs(*fresh);
  ASSERT_TRUE(inputs.ok());
  absl::StatusOr<std::vector<ir::IValue>> want = runtime::RunGraph(*fresh->graph, *inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(want->size(), warm.outputs.size());
  for (size_t i = 0; i < warm.outputs.size(); ++i) {
    const Tensor& w = (*want)[i].toTensor();
    ASSERT_EQ(w.numel(), warm.outputs[i].numel());
    for (int64_t j = 0; j < w.numel(); ++j) {
      EXPECT_NEAR(warm.outputs[i].GetDouble(j), w.GetDouble(j), 1e-4 + 1e-3 * std::fabs(w.GetDouble(j)));
    }
  }
}

TEST_F(ProgramCacheTest, ChangedWeightOptionOrShapeMisses) {
  const Result first = CompileAndRun(Options());
  ASSERT_TRUE(first.cache.used);

  // Another pass pipeline, or no memory planning: other programs.
  driver::ModelCompileOptions no_passes = Options();
  no_passes.pipeline = "";
  const Result other_pipeline = CompileAndRun(no_passes);
  EXPECT_FALSE(other_pipeline.cache.hit);
  EXPECT_NE(other_pipeline.cache.key, first.cache.key);
  driver::ModelCompileOptions unplanned = Options();
  unplanned.compile.plan_memory = false;
  EXPECT_FALSE(CompileAndRun(unplanned).cache.hit);
  // ... each of which now hits by itself.
  EXPECT_TRUE(CompileAndRun(no_passes).cache.hit);

  // Input shapes and small integer values are part of the key.
  absl::StatusOr<std::string> model_key = driver::ModelCacheKey(model_);
  ASSERT_TRUE(model_key.ok());
  const std::vector<ir::IValue> a = {ir::IValue::FromTensor(Tensor::Empty(DType::kFloat32, {1, 3, 8, 8}))};
  const std::vector<ir::IValue> b = {ir::IValue::FromTensor(Tensor::Empty(DType::kFloat32, {2, 3, 8, 8}))};
  const std::vector<ir::IValue> c = {ir::IValue::FromTensor(Tensor::ScalarInt(1))};
  const std::vector<ir::IValue> d = {ir::IValue::FromTensor(Tensor::ScalarInt(2))};
  const driver::ModelCompileOptions o = Options();
  EXPECT_EQ(*driver::ProgramCacheKey(*model_key, o, &a), *driver::ProgramCacheKey(*model_key, o, &a));
  EXPECT_NE(*driver::ProgramCacheKey(*model_key, o, &a), *driver::ProgramCacheKey(*model_key, o, &b));
  EXPECT_NE(*driver::ProgramCacheKey(*model_key, o, &c), *driver::ProgramCacheKey(*model_key, o, &d));
  EXPECT_NE(*driver::ProgramCacheKey(*model_key, o, &a), *driver::ProgramCacheKey(*model_key, o, nullptr));

  // One weight changed: another model, other outputs.
  absl::StatusOr<std::string> bytes = ReadFile(model_);
  ASSERT_TRUE(bytes.ok());
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(*bytes));
  bool changed = false;
  for (onnx::TensorProto& init : *proto.mutable_graph()->mutable_initializer()) {
    if (init.data_type() != onnx::TensorProto::FLOAT) continue;
    if (init.raw_data().size() >= 4) {
      float v;
      std::memcpy(&v, init.raw_data().data(), 4);
      v += 1.0f;
      std::memcpy(&(*init.mutable_raw_data())[0], &v, 4);
      changed = true;
    } else if (init.float_data_size() > 0) {
      init.set_float_data(0, init.float_data(0) + 1.0f);
      changed = true;
    }
    if (changed) break;
  }
  ASSERT_TRUE(changed);
  ASSERT_TRUE(WriteFile(model_, proto.SerializeAsString()).ok());
  const Result reweighted = CompileAndRun(Options());
  EXPECT_FALSE(reweighted.cache.hit);
  EXPECT_NE(reweighted.cache.key, first.cache.key);
  ASSERT_EQ(reweighted.outputs.size(), first.outputs.size());
  EXPECT_FALSE(reweighted.outputs[0].ValueEquals(first.outputs[0]));
}

TEST_F(ProgramCacheTest, DamagedEntriesAreRecompiledAndReplaced) {
  const Result cold = CompileAndRun(Options());
  ASSERT_TRUE(cold.cache.used);
  const std::string entry = EntryPath(cold.cache.key);
  absl::StatusOr<std::string> good = ReadFile(entry);
  ASSERT_TRUE(good.ok()) << good.status();

  std::string flipped = *good;
  flipped[flipped.size() / 2] ^= 0x40;  // in the constants
  std::string header_flipped = *good;
  header_flipped[20] ^= 0x01;
  for (const std::string& damaged : {flipped, header_flipped, good->substr(0, good->size() / 3), std::string()}) {
    ASSERT_TRUE(WriteFile(entry, damaged).ok());
    const Result r = CompileAndRun(Options());
    EXPECT_FALSE(r.cache.hit);
    EXPECT_TRUE(absl::StrContains(r.cache.note, "cache entry")) << r.cache.note;
    ExpectSameOutputs(r.outputs, cold.outputs);
    // Replaced by the recompile: the next compile hits.
    const Result again = CompileAndRun(Options());
    EXPECT_TRUE(again.cache.hit) << again.cache.note;
    ExpectSameOutputs(again.outputs, cold.outputs);
  }

  // A damaged model record: imported again.
  absl::StatusOr<std::string> model_key = driver::ModelCacheKey(model_);
  ASSERT_TRUE(model_key.ok());
  const std::string record = absl::StrCat(root_, "/cache/models/", *model_key, ".entry");
  ASSERT_TRUE(WriteFile(record, "KILNMOD1 garbage").ok());
  const Result r = CompileAndRun(Options());
  EXPECT_FALSE(r.cache.hit);
  EXPECT_TRUE(r.has_graph);
  ExpectSameOutputs(r.outputs, cold.outputs);
  EXPECT_TRUE(CompileAndRun(Options()).cache.hit);
}

// The CPU's packed weights (backends/cpu/packed_cache.h): stored by the
// cold compile, mapped by a hit (the same outputs, bit for bit), and a
// damaged entry is packed again and replaced.
std::string PackedCacheLine(const std::vector<std::string>& report) {
  for (const std::string& line : report) {
    if (absl::StartsWith(line, "packed weights")) return line;
  }
  return "";
}

TEST_F(ProgramCacheTest, PackedWeightsAreStoredMappedAndReplacedWhenDamaged) {
  const Result cold = CompileAndRun(Options());
  ASSERT_TRUE(cold.cache.used);
  EXPECT_TRUE(absl::StrContains(PackedCacheLine(cold.report), ": stored;")) << PackedCacheLine(cold.report);
  const Result warm = CompileAndRun(Options());
  ASSERT_TRUE(warm.cache.hit);
  EXPECT_TRUE(absl::StrContains(PackedCacheLine(warm.report), ": hit;")) << PackedCacheLine(warm.report);
  ExpectSameOutputs(warm.outputs, cold.outputs);

  const std::string dir = absl::StrCat(root_, "/cache/cpu_packed");
  std::vector<std::string> entries;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".entry") entries.push_back(e.path().string());
  }
  ASSERT_EQ(entries.size(), 1u);
  absl::StatusOr<std::string> good = ReadFile(entries[0]);
  ASSERT_TRUE(good.ok()) << good.status();
  std::string flipped = *good;
  flipped[flipped.size() - 5] ^= 0x40;  // in the packed data
  for (const std::string& damaged : {flipped, good->substr(0, good->size() / 2)}) {
    ASSERT_TRUE(WriteFile(entries[0], damaged).ok());
    const Result r = CompileAndRun(Options());
    EXPECT_TRUE(r.cache.hit);  // the program entry is fine
    EXPECT_TRUE(absl::StrContains(PackedCacheLine(r.report), ": replaced:")) << PackedCacheLine(r.report);
    ExpectSameOutputs(r.outputs, cold.outputs);
    const Result again = CompileAndRun(Options());
    EXPECT_TRUE(absl::StrContains(PackedCacheLine(again.report), ": hit;")) << PackedCacheLine(again.report);
    ExpectSameOutputs(again.outputs, cold.outputs);
  }

  // Compiles outside the program cache have no constants' identity: packed
  // at load, never stored.
  driver::ModelCompileOptions uncached = Options();
  uncached.program_cache = false;
  const Result plain = CompileAndRun(uncached);
  EXPECT_TRUE(absl::StrContains(PackedCacheLine(plain.report), "not cached")) << PackedCacheLine(plain.report);
  ExpectSameOutputs(plain.outputs, cold.outputs);
}

// The model key is remembered per file version (device, inode, size, mtime,
// ctime) once the version is older than the racy window; any write makes
// another version.
TEST_F(ProgramCacheTest, RememberedModelKeysFollowTheFile) {
  absl::StatusOr<std::string> hashed = driver::ModelCacheKey(model_);
  ASSERT_TRUE(hashed.ok());
  const std::string memo_dir = absl::StrCat(root_, "/cache/model_hashes");
  EXPECT_NE(::access(memo_dir.c_str(), F_OK), 0);  // too new to remember
  ::sleep(3);
  EXPECT_EQ(*driver::ModelCacheKey(model_), *hashed);  // hashed again, remembered
  EXPECT_EQ(::access(memo_dir.c_str(), F_OK), 0);
  EXPECT_EQ(*driver::ModelCacheKey(model_), *hashed);  // from the memo
  // Same size, one byte changed.
  std::string bytes = *ReadFile(model_);
  bytes[bytes.size() - 1] ^= 1;
  ASSERT_TRUE(WriteFile(model_, bytes).ok());
  absl::StatusOr<std::string> changed = driver::ModelCacheKey(model_);
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(*changed, *hashed);
}

// The parser alone, on every prefix and on flipped header bytes of a real
// entry (the checksum is bypassed): errors, never crashes.
TEST_F(ProgramCacheTest, ParserRejectsTruncatedAndGarbledEntries) {
  const Result cold = CompileAndRun(Options());
  ASSERT_TRUE(cold.cache.used);
  absl::StatusOr<std::string> good = ReadFile(EntryPath(cold.cache.key));
  ASSERT_TRUE(good.ok());
  auto parse = [](const std::string& bytes) {
    std::shared_ptr<char> aligned(static_cast<char*>(std::aligned_alloc(64, (bytes.size() / 64 + 1) * 64)), std::free);
    if (!bytes.empty()) std::memcpy(aligned.get(), bytes.data(), bytes.size());
    return driver::ParseProgramEntry(absl::string_view(aligned.get(), bytes.size()), aligned, "entry").status();
  };
  ASSERT_TRUE(parse(*good).ok()) << parse(*good);
  for (size_t cut = 0; cut < good->size(); cut += 1 + cut / 8) {
    EXPECT_FALSE(parse(good->substr(0, cut)).ok()) << cut;
  }
  const uint64_t header = [&] {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>((*good)[8 + i])) << (8 * i);
    return v;
  }();
  for (size_t i = 0; i < 16 + header; i += 1 + i / 64) {
    std::string bad = *good;
    bad[i] ^= 0xff;
    (void)parse(bad);  // may parse (a changed name or count): must not crash
  }
  EXPECT_FALSE(driver::ParseModelRecord("garbage", "m.onnx").ok());
}

}  // namespace
}  // namespace kiln
