// Standalone driver for kiln_cc_fuzz_test (see //build:fuzz.bzl).
//
// In the normal (gcc, non --config=fuzz) build every fuzz target is linked
// with this main() instead of libFuzzer's, which makes it a deterministic
// "short fuzz smoke run" that works without libFuzzer:
//
//   1. every corpus input given on the command line is replayed as is
//      (directories are expanded one level), plus the empty input;
//   2. then --iterations deterministic pseudo-random mutations of the corpus
//      inputs are executed (bit flips, byte overwrites with interesting
//      values, inserts, deletes, duplicated chunks, truncation, splicing).
//
// A crash, sanitizer report or abort fails the test. Flags:
//   --iterations=N   number of mutated inputs (default 1000; env
//                    KILN_FUZZ_ITERATIONS overrides)
//   --seed=S         PRNG seed (default 1)
//   --max_len=N      maximum input length (default 4096)
//   --max_seconds=N  stop mutating after N seconds (default 20), still passes
//   -anything        libFuzzer-style flags are ignored
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv)
    __attribute__((weak));

namespace {

using Bytes = std::vector<uint8_t>;

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform-ish in [0, n); n > 0.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

bool ReadFile(const std::string& path, Bytes* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in),
              std::istreambuf_iterator<char>());
  return true;
}

void AddPath(const std::string& path, std::vector<Bytes>* corpus) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "fuzz_driver: cannot stat %s\n", path.c_str());
    std::exit(2);
  }
  if (S_ISDIR(st.st_mode)) {
    DIR* dir = opendir(path.c_str());
    if (dir == nullptr) return;
    std::vector<std::string> names;
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(dir);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      Bytes b;
      if (ReadFile(path + "/" + n, &b)) corpus->push_back(std::move(b));
    }
    return;
  }
  Bytes b;
  if (!ReadFile(path, &b)) {
    std::fprintf(stderr, "fuzz_driver: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  corpus->push_back(std::move(b));
}

void RunOne(const Bytes& input) {
  // Copy into an exactly-sized heap buffer so ASan catches overreads.
  uint8_t* buf = new uint8_t[input.empty() ? 1 : input.size()];
  if (!input.empty()) std::memcpy(buf, input.data(), input.size());
  LLVMFuzzerTestOneInput(input.empty() ? nullptr : buf, input.size());
  delete[] buf;
}

const uint8_t kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x20,
                                0x0a, '0',  '9',  '"',  '\\', '{',
                                '}',  '[',  ']',  '(',  ')',  '%'};

Bytes Mutate(const std::vector<Bytes>& corpus, SplitMix64& rng,
             size_t max_len) {
  Bytes b = corpus[rng.Below(corpus.size())];
  const int rounds = 1 + static_cast<int>(rng.Below(4));
  for (int r = 0; r < rounds; ++r) {
    switch (rng.Below(8)) {
      case 0:  // flip a bit
        if (!b.empty()) b[rng.Below(b.size())] ^= 1u << rng.Below(8);
        break;
      case 1:  // overwrite with an interesting byte
        if (!b.empty())
          b[rng.Below(b.size())] = kInteresting[rng.Below(sizeof kInteresting)];
        break;
      case 2:  // random byte
        if (!b.empty()) b[rng.Below(b.size())] = static_cast<uint8_t>(rng.Next());
        break;
      case 3:  // insert a byte
        b.insert(b.begin() + static_cast<long>(rng.Below(b.size() + 1)),
                 kInteresting[rng.Below(sizeof kInteresting)]);
        break;
      case 4:  // delete a range
        if (!b.empty()) {
          size_t pos = rng.Below(b.size());
          size_t len = 1 + rng.Below(std::min<size_t>(8, b.size() - pos));
          b.erase(b.begin() + static_cast<long>(pos),
                  b.begin() + static_cast<long>(pos + len));
        }
        break;
      case 5:  // duplicate a chunk
        if (!b.empty()) {
          size_t pos = rng.Below(b.size());
          size_t len = 1 + rng.Below(std::min<size_t>(16, b.size() - pos));
          Bytes chunk(b.begin() + static_cast<long>(pos),
                      b.begin() + static_cast<long>(pos + len));
          b.insert(b.begin() + static_cast<long>(rng.Below(b.size() + 1)),
                   chunk.begin(), chunk.end());
        }
        break;
      case 6:  // truncate
        if (!b.empty()) b.resize(rng.Below(b.size()));
        break;
      case 7: {  // splice with another corpus entry
        const Bytes& other = corpus[rng.Below(corpus.size())];
        size_t cut = rng.Below(b.size() + 1);
        size_t from = rng.Below(other.size() + 1);
        b.resize(cut);
        b.insert(b.end(), other.begin() + static_cast<long>(from), other.end());
        break;
      }
    }
  }
  if (b.size() > max_len) b.resize(max_len);
  return b;
}

bool ParseFlag(const char* arg, const char* name, long* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = std::strtol(arg + n + 1, nullptr, 10);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);

  long iterations = 1000, seed = 1, max_len = 4096, max_seconds = 20;
  if (const char* env = std::getenv("KILN_FUZZ_ITERATIONS")) {
    iterations = std::strtol(env, nullptr, 10);
  }
  std::vector<Bytes> corpus;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (ParseFlag(a, "--iterations", &iterations) ||
        ParseFlag(a, "--seed", &seed) || ParseFlag(a, "--max_len", &max_len) ||
        ParseFlag(a, "--max_seconds", &max_seconds)) {
      continue;
    }
    if (a[0] == '-') continue;  // libFuzzer flags etc.
    AddPath(a, &corpus);
  }

  RunOne(Bytes());
  for (const Bytes& b : corpus) RunOne(b);
  const size_t replayed = corpus.size();
  if (corpus.empty()) corpus.push_back(Bytes{'k', 'i', 'l', 'n'});

  SplitMix64 rng(static_cast<uint64_t>(seed));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(max_seconds);
  long done = 0;
  for (; done < iterations; ++done) {
    if ((done & 63) == 0 && std::chrono::steady_clock::now() > deadline) break;
    RunOne(Mutate(corpus, rng, static_cast<size_t>(max_len)));
  }
  std::printf("fuzz_driver: replayed %zu corpus inputs, ran %ld mutations (seed %ld)\n",
              replayed, done, seed);
  return 0;
}
