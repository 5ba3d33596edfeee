// Writes the seeds of //deploy:weights_fuzz into the directory given:
//   ./bazelw run //deploy:make_weights_seeds -- $PWD/deploy/testdata/weights_fuzz
#include <cstdio>
#include <fstream>
#include <string>

#include "deploy/weights_file.h"

namespace {

bool Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_weights_seeds DIR\n");
    return 2;
  }
  using kiln::DType;
  using kiln::Tensor;
  Tensor w = Tensor::Empty(DType::kFloat32, {3, 4});
  for (int i = 0; i < 12; ++i) w.data<float>()[i] = 0.5f * static_cast<float>(i);
  Tensor ids = Tensor::Empty(DType::kInt64, {5});
  for (int i = 0; i < 5; ++i) ids.data<int64_t>()[i] = i - 2;
  const Tensor scalar = Tensor::ScalarDouble(2.5, DType::kFloat64);
  const Tensor empty = Tensor::Empty(DType::kFloat32, {0, 3});
  const Tensor flags = Tensor::Empty(DType::kBool, {2, 1});
  struct Seed {
    const char* name;
    std::vector<std::pair<std::string, Tensor>> tensors;
    std::map<std::string, std::string> metadata;
  };
  const Seed seeds[] = {
      {"empty", {}, {}},
      {"metadata_only", {}, {{"kiln.version", "kiln 0.1.0"}, {"input.0", "x"}}},
      {"one_tensor", {{"const0", w}}, {}},
      {"model_like",
       {{"const0", w}, {"const1", ids}, {"const2", scalar}, {"const3", empty}, {"const4", flags}},
       {{"kiln.version", "kiln 0.1.0"},
        {"kiln.source_xxh3_128", "0123456789abcdef0123456789abcdef"},
        {"input.0", "ids"},
        {"output.0", "logits"}}},
  };
  for (const Seed& seed : seeds) {
    auto bytes = kiln::deploy::SerializeWeights(seed.tensors, seed.metadata);
    if (!bytes.ok() || !Write(argv[1], std::string(seed.name) + ".weights", *bytes)) {
      std::fprintf(stderr, "make_weights_seeds: %s failed\n", seed.name);
      return 1;
    }
  }
  return 0;
}
