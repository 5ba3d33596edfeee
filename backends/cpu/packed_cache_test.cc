// The packed weights' entry format (packed_cache.h): what a head describes
// parses back, every prefix and a lying header are rejected, and every
// field of a slot is part of the key.
#include "backends/cpu/packed_cache.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kiln::backends::cpu {
namespace {

std::vector<PackedSlot> Slots() {
  PackedSlot a;
  a.constant = 3;
  a.source_offset = 128;
  a.offset = 0;
  a.bytes = 100;
  a.user = "t3 d4,5 p4,5";
  a.packed = "t3 d4,5 p16,5 b16 i0";
  PackedSlot b = a;
  b.constant = 7;
  b.offset = 128;
  b.bytes = 64;
  return {a, b};
}

std::string Entry(const std::vector<PackedSlot>& slots, uint64_t data_bytes) {
  std::string e = PackedEntryHead(slots, data_bytes);
  for (uint64_t i = 0; i < data_bytes; ++i) e.push_back(static_cast<char>(i * 7));
  return e;
}

TEST(PackedCacheTest, HeadRoundTrips) {
  const std::string entry = Entry(Slots(), 192);
  EXPECT_EQ(entry.size() % kPackedDataAlignment, 192u);
  absl::StatusOr<PackedEntry> parsed = ParsePackedEntry(entry, "e");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->slots, Slots());
  EXPECT_EQ(parsed->data_offset, kPackedDataAlignment);
  EXPECT_EQ(parsed->data_bytes, 192u);
  // No slots is an entry too.
  EXPECT_TRUE(ParsePackedEntry(Entry({}, 0), "e").ok());
}

TEST(PackedCacheTest, RejectsPrefixesAndLies) {
  const std::string entry = Entry(Slots(), 192);
  for (size_t n = 0; n < entry.size(); ++n) {
    EXPECT_FALSE(ParsePackedEntry(entry.substr(0, n), "e").ok()) << n;
  }
  // Data past the end of the slots' bytes, a slot past the data.
  EXPECT_FALSE(ParsePackedEntry(entry + "x", "e").ok());
  std::vector<PackedSlot> outside = Slots();
  outside[1].bytes = 65;
  EXPECT_FALSE(ParsePackedEntry(Entry(outside, 192), "e").ok());
  std::vector<PackedSlot> unaligned = Slots();
  unaligned[1].offset = 100;
  unaligned[1].bytes = 4;
  EXPECT_FALSE(ParsePackedEntry(Entry(unaligned, 192), "e").ok());
  // A slot count larger than the header could hold.
  std::string lying = entry;
  lying[16] = '\x7f';
  EXPECT_FALSE(ParsePackedEntry(lying, "e").ok());
  std::string magic = entry;
  magic[0] = 'X';
  EXPECT_FALSE(ParsePackedEntry(magic, "e").ok());
}

TEST(PackedCacheTest, EveryFieldIsInTheKey) {
  const std::string base = PackedEntryKey("id", "2.6.3", Slots(), 192);
  EXPECT_EQ(base, PackedEntryKey("id", "2.6.3", Slots(), 192));
  EXPECT_NE(base, PackedEntryKey("id2", "2.6.3", Slots(), 192));
  EXPECT_NE(base, PackedEntryKey("id", "2.7.0", Slots(), 192));
  EXPECT_NE(base, PackedEntryKey("id", "2.6.3", Slots(), 256));
  for (int field = 0; field < 6; ++field) {
    std::vector<PackedSlot> s = Slots();
    switch (field) {
      case 0: s[0].constant++; break;
      case 1: s[0].source_offset++; break;
      case 2: s[0].offset += 64; break;
      case 3: s[0].bytes++; break;
      case 4: s[0].user += "x"; break;
      case 5: s[0].packed += "x"; break;
    }
    EXPECT_NE(base, PackedEntryKey("id", "2.6.3", s, 192)) << field;
  }
}

}  // namespace
}  // namespace kiln::backends::cpu
