#include "deploy/weights_file.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace kiln::deploy {
namespace {

// `bytes` in 64-byte aligned memory, as a mapping would be.
absl::StatusOr<WeightsContents> Parse(const std::string& bytes) {
  void* copy = std::aligned_alloc(kWeightsAlignment, (bytes.size() / kWeightsAlignment + 1) * kWeightsAlignment);
  if (!bytes.empty()) std::memcpy(copy, bytes.data(), bytes.size());
  std::shared_ptr<const void> owner(copy, [](const void* p) { std::free(const_cast<void*>(p)); });
  return ParseWeights(copy, bytes.size(), owner, "test.weights");
}

std::vector<std::pair<std::string, Tensor>> SampleTensors() {
  Tensor w = Tensor::Empty(DType::kFloat32, {3, 5});
  for (int i = 0; i < 15; ++i) w.data<float>()[i] = static_cast<float>(i) - 7.5f;
  // A transposed view: written contiguous.
  Tensor t = Tensor::View(w, {5, 3}, {1, 5}, 0);
  Tensor ids = Tensor::Empty(DType::kInt64, {3});
  ids.data<int64_t>()[2] = -4;
  return {{"w", w}, {"wt", t}, {"ids", ids}, {"empty", Tensor::Empty(DType::kFloat32, {0, 2})}};
}

TEST(WeightsFile, RoundTripsTensorsAndMetadata) {
  auto bytes = SerializeWeights(SampleTensors(), {{"kiln.version", "v"}, {"input.0", "x"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_EQ(bytes->size() % kWeightsAlignment, 0u);
  auto contents = Parse(*bytes);
  ASSERT_TRUE(contents.ok()) << contents.status();
  ASSERT_EQ(contents->tensors.size(), 4u);
  for (const auto& [name, tensor] : SampleTensors()) {
    const Tensor& got = contents->tensors.at(name);
    EXPECT_TRUE(got.ValueEquals(tensor)) << name;
    EXPECT_TRUE(got.is_contiguous()) << name;
    if (got.numel() > 0) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(got.raw_data()) % kWeightsAlignment, 0u) << name;
    }
  }
  EXPECT_EQ(contents->metadata.at("kiln.version"), "v");
  EXPECT_EQ(contents->metadata.at("input.0"), "x");
}

TEST(WeightsFile, RefusesRepeatedNames) {
  auto tensors = SampleTensors();
  tensors.push_back(tensors[0]);
  EXPECT_FALSE(SerializeWeights(tensors, {}).ok());
  EXPECT_FALSE(SerializeWeights({{"w", tensors[0].second}}, {{"w", "clash"}}).ok());
}

TEST(WeightsFile, EveryTruncationIsAnError) {
  auto bytes = SerializeWeights(SampleTensors(), {{"kiln.version", "v"}});
  ASSERT_TRUE(bytes.ok());
  for (size_t n = 0; n < bytes->size(); ++n) {
    auto contents = Parse(bytes->substr(0, n));
    ASSERT_FALSE(contents.ok()) << "accepted a file cut to " << n << " bytes";
    EXPECT_TRUE(absl::StrContains(contents.status().message(), "test.weights")) << contents.status();
  }
  // Extended too.
  EXPECT_FALSE(Parse(*bytes + std::string(64, '\0')).ok());
}

TEST(WeightsFile, HeaderAndTableCorruptionIsAnError) {
  auto bytes = SerializeWeights(SampleTensors(), {{"kiln.version", "v"}});
  ASSERT_TRUE(bytes.ok());
  uint64_t table_bytes = 0;
  std::memcpy(&table_bytes, bytes->data() + 24, 8);
  // Every byte of the header and table, flipped: never accepted as is
  // (the checksum covers the table; the header's fields are each checked).
  for (size_t i = 0; i < 64 + table_bytes; ++i) {
    if (i >= 56 && i < 64) continue;  // reserved, checked to be zero below
    std::string bad = *bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    EXPECT_FALSE(Parse(bad).ok()) << "byte " << i;
  }
  std::string reserved = *bytes;
  reserved[60] = 1;
  EXPECT_FALSE(Parse(reserved).ok());
}

TEST(WeightsFile, MapsAFileReadOnly) {
  auto bytes = SerializeWeights(SampleTensors(), {});
  ASSERT_TRUE(bytes.ok());
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/model.weights";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  }
  auto contents = MapWeightsFile(path);
  ASSERT_TRUE(contents.ok()) << contents.status();
  EXPECT_TRUE(contents->tensors.at("wt").ValueEquals(SampleTensors()[1].second));
  // The tensors keep the mapping alive after the contents are gone.
  Tensor kept = contents->tensors.at("w");
  contents = absl::InternalError("dropped");
  EXPECT_EQ(kept.data<float>()[14], 6.5f);

  ASSERT_EQ(truncate(path.c_str(), 100), 0);
  auto truncated = MapWeightsFile(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_TRUE(absl::StrContains(truncated.status().message(), "model.weights")) << truncated.status();
  EXPECT_TRUE(absl::IsNotFound(MapWeightsFile(path + ".missing").status()));
}

}  // namespace
}  // namespace kiln::deploy
