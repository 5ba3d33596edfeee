#include "support/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace kiln {
namespace {

std::string FreshDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = absl::StrCat(base != nullptr ? base : "/tmp", "/atomic_file_test_", ::getpid(), "_", name);
  EXPECT_TRUE(MakeDirectories(dir).ok());
  return dir;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  return names;
}

TEST(AtomicFile, WritesReplacesAndLeavesNoTemporary) {
  const std::string dir = FreshDir("replace");
  const std::string path = dir + "/out.txt";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second, longer").ok());
  EXPECT_EQ(*ReadFile(path), "second, longer");
  EXPECT_EQ(Entries(dir), std::vector<std::string>{"out.txt"});
}

TEST(AtomicFile, PermissionsAreThoseAsked) {
  const std::string dir = FreshDir("mode");
  FileWriteOptions options;
  options.permissions = 0600;
  options.sync = true;
  ASSERT_TRUE(WriteFileAtomically(dir + "/private", "x", options).ok());
  struct stat st;
  ASSERT_EQ(::stat((dir + "/private").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(AtomicFile, FailedWriteNamesThePathAndLeavesNothing) {
  const std::string dir = FreshDir("fail");
  const absl::Status s = WriteFileAtomically(dir + "/missing/out.txt", "x");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), dir + "/missing/out.txt")) << s;
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(AtomicFile, ReadErrorsSayWhy) {
  const std::string dir = FreshDir("read");
  EXPECT_TRUE(absl::IsNotFound(ReadFile(dir + "/nope").status()));
  const absl::StatusOr<std::string> is_dir = ReadFile(dir);
  ASSERT_FALSE(is_dir.ok());
  EXPECT_TRUE(absl::StrContains(is_dir.status().message(), dir)) << is_dir.status();
}

TEST(AtomicFile, MappedFileViewsTheWholeFileAndSaysWhyNot) {
  const std::string dir = FreshDir("map");
  ASSERT_TRUE(WriteFile(dir + "/data", std::string("abc\0def", 7)).ok());
  absl::StatusOr<MappedFile> m = MappedFile::Open(dir + "/data");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->bytes(), absl::string_view("abc\0def", 7));
  MappedFile moved = *std::move(m);
  EXPECT_EQ(moved.bytes().size(), 7u);
  ASSERT_TRUE(WriteFile(dir + "/empty", "").ok());
  absl::StatusOr<MappedFile> empty = MappedFile::Open(dir + "/empty");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->bytes().empty());
  EXPECT_TRUE(absl::IsNotFound(MappedFile::Open(dir + "/nope").status()));
  const absl::Status is_dir = MappedFile::Open(dir).status();
  EXPECT_FALSE(is_dir.ok());
  EXPECT_TRUE(absl::StrContains(is_dir.message(), dir)) << is_dir;
  // Not a regular file (a character device): InvalidArgument, callers read it instead.
  EXPECT_TRUE(absl::IsInvalidArgument(MappedFile::Open("/dev/null").status()));
  // A symbolic link is followed unless the caller refuses links (the caches).
  ASSERT_EQ(::symlink((dir + "/data").c_str(), (dir + "/link").c_str()), 0);
  absl::StatusOr<MappedFile> followed = MappedFile::Open(dir + "/link");
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_EQ(followed->bytes().size(), 7u);
  MapOptions no_links;
  no_links.no_follow = true;
  const absl::Status refused = MappedFile::Open(dir + "/link", no_links).status();
  EXPECT_TRUE(absl::IsInvalidArgument(refused)) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "symbolic link")) << refused;
}

TEST(AtomicFile, MakeDirectoriesCreatesParentsAndRejectsFiles) {
  const std::string dir = FreshDir("dirs");
  ASSERT_TRUE(MakeDirectories(dir + "/a/b/c").ok());
  EXPECT_TRUE(MakeDirectories(dir + "/a/b/c").ok());
  ASSERT_TRUE(WriteFile(dir + "/file", "x").ok());
  EXPECT_FALSE(MakeDirectories(dir + "/file").ok());
}

TEST(AtomicFile, ExclusiveLockExcludesOtherHolders) {
  const std::string dir = FreshDir("lock");
  const std::string path = dir + "/entry.lock";
  const int other = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(other, 0);
  {
    ExclusiveFileLock lock(path);
    EXPECT_TRUE(lock.locked());
    EXPECT_NE(::flock(other, LOCK_EX | LOCK_NB), 0);
  }
  EXPECT_EQ(::flock(other, LOCK_EX | LOCK_NB), 0);
  ::close(other);
}

}  // namespace
}  // namespace kiln
