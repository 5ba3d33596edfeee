#include "frontend/pt2/archive.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "frontend/pt2/test_archive.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::frontend::pt2 {
namespace {

using ::testing::HasSubstr;
using testing::MakePt2;
using testing::MakeZip;
using testing::ZipEntry;

const char kFixture[] = "testdata/pt2_models/gpt2/model.pt2";

std::string Message(const absl::Status& s) { return std::string(s.message()); }

absl::StatusOr<std::unique_ptr<Archive>> Open(const std::string& bytes) {
  return Archive::FromBytes(bytes, "test.pt2");
}

TEST(ArchiveTest, ReadsEntriesUnderTheRootFolder) {
  absl::StatusOr<std::unique_ptr<Archive>> a = Open(MakePt2("{}"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)->root(), "model");
  EXPECT_EQ((*a)->format_version(), "0");
  EXPECT_TRUE((*a)->Has("models/model.json"));
  EXPECT_FALSE((*a)->Has("model/models/model.json"));
  EXPECT_EQ(*(*a)->ReadText("models/model.json"), "{}");
  EXPECT_THAT((*a)->List("data/"), ::testing::ElementsAre("data/constants/model_constants_config.json",
                                                         "data/weights/model_weights_config.json"));
  EXPECT_EQ(*(*a)->Size("archive_format"), 3u);
}

TEST(ArchiveTest, BadArchivesNameTheProblem) {
  EXPECT_THAT(Message(Open("not a zip file at all").status()), HasSubstr("not a readable zip archive"));
  EXPECT_THAT(Message(Open("").status()), HasSubstr("test.pt2"));
  EXPECT_THAT(Message(Open(MakePt2("{}", {}, {"archive_format"})).status()),
              HasSubstr("entry 'model/archive_format' is missing"));
  EXPECT_THAT(Message(Open(MakeZip({{"model/archive_format", "zip"}})).status()),
              HasSubstr("expected 'pt2'"));
  EXPECT_THAT(Message(Open(MakeZip({{"model/archive_format", "pt2"}, {"other/x", "1"}})).status()),
              HasSubstr("two root folders"));
  EXPECT_THAT(Message(Open(MakeZip({{"archive_format", "pt2"}})).status()),
              HasSubstr("not under a root folder"));
  EXPECT_THAT(Message(Open(MakePt2("{}", {}, {"byteorder"}, {{"model/byteorder", "big"}})).status()),
              HasSubstr("only little-endian"));
  EXPECT_THAT(Message(Open(MakePt2("{}", {}, {"archive_version"}, {{"model/archive_version", "x"}})).status()),
              HasSubstr("not a version number"));
  // A truncated archive loses its central directory.
  const std::string whole = MakePt2("{}");
  EXPECT_FALSE(Open(whole.substr(0, whole.size() - 30)).ok());
  absl::StatusOr<std::unique_ptr<Archive>> a = Open(whole);
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(Message((*a)->ReadText("models/other.json").status()),
              HasSubstr("test.pt2: entry 'model/models/other.json' is missing"));
}

TEST(ArchiveTest, CompressedEntriesAreCopied) {
  std::string payload(10000, 'x');
  absl::StatusOr<std::unique_ptr<Archive>> a =
      Open(MakePt2("{}", {}, {}, {{"model/data/weights/big", payload, /*deflate=*/true}}));
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<EntryBytes> b = (*a)->Bytes("data/weights/big");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->zero_copy);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b->data), b->size), payload);
}

std::string ReadFixture() {
  std::ifstream in(kFixture, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ArchiveTest, AlignedStoredEntriesAreReadInPlace) {
  absl::StatusOr<std::unique_ptr<Archive>> a = Archive::OpenFile(kFixture);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<EntryBytes> w = (*a)->Bytes("data/weights/weight_0");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->zero_copy);
  EXPECT_EQ(w->size, 131072u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data) % 64, 0u);
  // The bytes outlive the archive.
  std::string first(reinterpret_cast<const char*>(w->data), 64);
  a->reset();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(w->data), 64), first);
}

// Where an entry's data starts, from its local header (test-side only, to
// corrupt a byte the directory's CRC covers).
size_t DataOffset(const std::string& zip, const std::string& name) {
  const size_t header = zip.find(name) - 30;
  uint16_t name_len = 0, extra_len = 0;
  std::memcpy(&name_len, zip.data() + header + 26, 2);
  std::memcpy(&extra_len, zip.data() + header + 28, 2);
  return header + 30 + name_len + extra_len;
}

TEST(ArchiveTest, BytesThatDisagreeWithTheDirectoryAreRejected) {
  std::string bytes = ReadFixture();
  ASSERT_FALSE(bytes.empty());
  bytes[DataOffset(bytes, "model/data/weights/weight_0") + 100] ^= 0x40;
  absl::StatusOr<std::unique_ptr<Archive>> a = Open(bytes);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::Status s = (*a)->Bytes("data/weights/weight_0").status();
  EXPECT_THAT(Message(s), HasSubstr("entry 'model/data/weights/weight_0': CRC-32 mismatch"));
  ArchiveOptions lax;
  lax.verify_crc = false;
  a = Archive::FromBytes(bytes, "test.pt2", lax);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE((*a)->Bytes("data/weights/weight_0").ok());
}

TEST(ArchiveTest, TextLargerThanTheLimitIsRefused) {
  ArchiveOptions small;
  small.max_text_bytes = 10;
  absl::StatusOr<std::unique_ptr<Archive>> a =
      Archive::FromBytes(MakePt2(std::string(100, ' ')), "test.pt2", small);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Message((*a)->ReadText("models/model.json").status()), HasSubstr("more than the limit"));
}

}  // namespace
}  // namespace kiln::frontend::pt2
